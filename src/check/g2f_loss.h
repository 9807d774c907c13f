/* g2f_loss: the cross-entropy loss GPT-2's training reports (llm.c's debug
 * state stores it beside the logits: g2f_llmc_state.h), recomputed in double
 * from logits, with a derived bound on how far a reference's float32 value
 * may lie from it.
 *
 *   L = 1/N sum_i l_i,   l_i = lse(z_i) - z_i[y_i],   lse(z) = log sum_j exp(z_j)
 *
 * over N rows of V logits z_i and targets y_i (F.cross_entropy with
 * reduction "mean"; llm.c's crossentropy_forward and its mean).
 *
 * The bound on |L_ref - L| when the reference's logits z_ref lie within a_ij
 * of ours (a: the logits' per-element tolerance; 0 when L is computed from
 * the reference's own logits, the isolated check) and the reference computed
 * L_ref in float32 (u = 2^-24) has three parts.
 *
 * 1. The logits' tolerance. With delta = z_ref - z, |delta_j| <= a_j and p =
 *    softmax(z) (ours: the tolerance never comes from the file under test):
 *      lse(z + delta) - lse(z) = log sum_j p_j e^delta_j, which Jensen's
 *      inequality bounds below by sum_j p_j delta_j, and e^d <= 1 + d +
 *      d^2 e^|d| / 2 with log(1 + t) <= t above by sum_j p_j delta_j +
 *      1/2 sum_j p_j delta_j^2 e^|delta_j|. The target term is linear
 *      (dl/dz_j = p_j - onehot_j, so dL/dz_ij = (p_ij - onehot_ij) / N), hence
 *        |dl_i| <= sum_j |p_ij - onehot_ij| a_ij + 1/2 sum_j p_ij a_ij^2 e^a_ij
 *    and the logits' part is the mean of that over the rows: the first-order
 *    term of the gradient plus a rigorous second-order remainder. The a_ij add
 *    linearly (worst case), not in quadrature.
 * 2. The reference's float32 evaluation of log-softmax and the mean, in
 *    whatever order it sums: in index order, in strided lanes or blocks of
 *    it (a vectorised sum: each lane's partial sums are at most the
 *    sequential ones), or as a tree (pairwise, a GPU's block reduction), or
 *    lanes then a tree. With m = max_j z_j, d_j = z_j - m, t_j = e^d_j, s =
 *    sum_j t_j, p_j = t_j / s, P_j = t_0 + .. + t_j (ours, in double), and
 *    the logits the reference's (ours within a_max: |d_j| + 2 a_max, |m| +
 *    a_max, the t_j within g = e^(2 a_max)(1 + 4u)), a row's l_i gets
 *      deterministic (bounded) errors:
 *        d_j = z_j - m rounded and expf within 1 ulp (glibc, Sleef's u10:
 *        2u): a relative sum_j p_j (u |d_j| + 2u) on s;
 *        adding t_j to a running sum P rounds by at most min(t_j, u P_j)
 *        (the nearest float to P + t is no farther than P); when t_j < 4u P_j
 *        the term is (partly) lost, an error of one sign, counted whole:
 *        lost_i = sum over those j of min(t_j, u P_j);
 *        a tree's levels: u s ceil(log2 V);
 *        so s is off by a relative eps_s = g (sum_j p_j (u|d_j| + 2u) +
 *        lost_i / s + u ceil(log2 V)), and log s by -log(1 - eps_s); logf
 *        within 1 ulp: 2u (log V + eps_s) (1 <= s <= V); the assembly,
 *        either (z_y - m) - log s (PyTorch) or z_y - (m + log s), both
 *        counted: u (|d_y| + |m| + a_max + log V + eps_s) + u (l_i + eps_s);
 *      random errors, modelled as g2f_tol models every rounding (independent,
 *      variance u^2 times the value rounded squared: u^2 rather than u^2/3
 *      covers both implementations): the other additions, u^2 g^2
 *      sum_j P_j^2 / s^2 (t_j >= 4u P_j).
 *    The mean of N rows is summed the same way: the row sums Q_i = l_0 + ..
 *    + l_i, lost rows (l_i < 4u Q_i) min(l_i, u Q_i), the others' variance
 *    u^2 Q_i^2, a tree u Q_N ceil(log2 N), then the division u L. The part
 *    is (sum_i det_i + lost rows + tree + lambda sqrt(sum_i var_i + u^2
 *    sum Q_i^2)) / N + u L. The lost terms are why a model of independent
 *    roundings alone is not enough: a float32 sum in index order of GPT-2's
 *    50257 exp terms drops every term below half an ulp of its running sum,
 *    always the same way (test_loss: 6 standard deviations of that model
 *    missed it by 2x on such sums).
 * 3. Our own double arithmetic: (V + N + 8) 2^-52 (1 + max_i(|m_i| + D_i) +
 *    log V + mean |l_i|) with D_i the row's max - min: negligible beside 2.
 * The bound is the sum of the three. It is NaN when a logit or a tolerance
 * is not finite (or negative): g2f_loss_matches is then false, never a pass.
 *
 * Rows are accumulated in the order given, so the result does not depend on
 * threads or chunking (rows may come a chunk at a time, as the forward's
 * logits do).
 *
 *     g2f_loss_acc acc;
 *     g2f_loss_init(&acc, V, G2F_TOL_LAMBDA);
 *     g2f_loss_add(&acc, z, tol, targets, n, &err);   // per chunk of rows
 *     g2f_loss_result r;
 *     g2f_loss_finish(&acc, &r);
 *     int ok = g2f_loss_matches(&r, file_loss);
 */
#ifndef G2F_LOSS_H
#define G2F_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

typedef struct g2f_loss_acc {
    size_t vocab, rows;
    double lambda;      /* standard deviations of part 2's random errors */
    double sum_loss;    /* Q: sum_i l_i, in row order */
    double sum_tol;     /* sum_i of part 1 */
    double sum_det;     /* part 2: sum_i det_i */
    double sum_var;     /* part 2: sum_i var_i */
    double rows_lost;   /* part 2: the mean's lost rows */
    double rows_var;    /* part 2: sum of Q_i^2 over the mean's other rows */
    double max_scale;   /* max_i |m_i| + D_i */
    int nonfinite;      /* a logit or a tolerance was NaN, infinite or negative */
} g2f_loss_acc;

typedef struct g2f_loss_result {
    size_t rows;
    double loss;        /* L, NaN when nothing finite */
    double bound;       /* parts 1 + 2 + 3 */
    double bound_logits, bound_round, bound_own;
} g2f_loss_result;

/* Starts an empty mean over rows of vocab logits; lambda: part 2's
 * standard deviations (G2F_TOL_LAMBDA, the tolerances' own). */
void g2f_loss_init(g2f_loss_acc *a, size_t vocab, double lambda);
/* Adds n rows: z (n, vocab) logits, tol (n, vocab) their tolerances or NULL
 * (zero), targets (n) in [0, vocab): one outside is G2F_ERR_FORMAT naming
 * its row (counted from the first row ever added), and nothing is added. */
g2f_status g2f_loss_add(g2f_loss_acc *a, const float *z, const double *tol, const int64_t *targets, size_t n,
                        g2f_error *err);
/* The mean and its bound (rows 0: loss NaN). */
void g2f_loss_finish(const g2f_loss_acc *a, g2f_loss_result *out);
/* True when reference and r's loss are finite, the bound finite, and
 * |reference - loss| <= bound. */
int g2f_loss_matches(const g2f_loss_result *r, double reference);
/* |reference - loss| / bound (0 / 0 is 0), NaN or infinite when nothing can
 * match: the margin reports print (<= 1 matches). */
double g2f_loss_margin(const g2f_loss_result *r, double reference);

#endif
