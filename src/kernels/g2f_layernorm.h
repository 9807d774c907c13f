/* g2f_layernorm: LayerNorm over the last dimension, as torch.nn.LayerNorm
 * computes GPT-2's ln_1, ln_2 and ln_f.
 *
 * Per row x (d floats) of x (n_rows, d):
 *   mean = sum_j x_j / d
 *   var  = sum_j (x_j - mean)^2 / d        (biased, as torch)
 *   rstd = 1 / sqrt(var + eps)
 *   y_j  = (x_j - mean) rstd w_j + b_j
 * w (d) or b (d) may be NULL, meaning 1 and 0: a port that left the gain or
 * the bias out. eps is GPT-2's layer_norm_epsilon (1e-5) unless a port
 * used another.
 *
 * The pair (same arguments but the thread count):
 *   g2f_ln_forward      the statistics summed in double (the mean first,
 *                       then the centred squares: no cancellation between
 *                       sum x^2 and mean^2), y evaluated in double and
 *                       rounded once to float; OpenMP over rows, each row by
 *                       one thread in a fixed order (four interleaved
 *                       partial sums), so bitwise identical for any thread
 *                       count. More accurate than PyTorch's float32
 *                       LayerNorm, whose error the tolerance bounds.
 *   g2f_ln_forward_ref  plain loops in double, one thread: the oracle.
 * The two differ only in the order of the double sums: y within one float
 * ulp of each other plus about d 2^-53 of the row's scale (test_layernorm).
 *
 * Shapes and ownership: x and y (n_rows, d) row-major floats, y may equal x
 * (each row is read before it is written); mean and rstd (n_rows) doubles,
 * each may be NULL (the tolerance derivation needs them). All buffers are
 * the caller's. A row of d = 0 has mean 0 and var 0. Nothing is allocated,
 * so nothing fails; NaN or Inf in a row gives NaN in its outputs.
 *
 *     double mean[T], rstd[T];
 *     g2f_ln_forward(x, T, d, ln_w, ln_b, 1e-5, y, mean, rstd, 0);
 */
#ifndef G2F_LAYERNORM_H
#define G2F_LAYERNORM_H

#include <stddef.h>

/* y (n_rows, d) = LayerNorm(x (n_rows, d)) with gain w (d) and bias b (d),
 * each may be NULL; mean and rstd (n_rows) may be NULL. n_threads <= 0
 * means the OpenMP default. */
void g2f_ln_forward(const float *x, size_t n_rows, size_t d, const float *w, const float *b, double eps, float *y,
                    double *mean, double *rstd, int n_threads);

/* The same in plain double loops on one thread (the oracle in tests). */
void g2f_ln_forward_ref(const float *x, size_t n_rows, size_t d, const float *w, const float *b, double eps, float *y,
                        double *mean, double *rstd);

#endif
