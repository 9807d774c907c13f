/* g2f_ffn: the GPT-2 feed-forward block and its GELU forms.
 *
 * Per token x (n_embd floats):
 *   pre = x W_fc + b_fc          (n_inner)
 *   act = GELU(pre)
 *   out = act W_proj + b_proj    (n_embd)
 * GELU_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2, HF "gelu_new")
 * GELU_erf(x)  = 0.5 x (1 + erf(x / sqrt 2))                         (torch F.gelu default, HF "gelu")
 *
 * Weight layouts (both read in place, never transposed into a copy):
 *   G2F_LAYOUT_CONV1D  HF Conv1D [in, out]:  W_fc (n_embd, n_inner), W_proj (n_inner, n_embd)
 *   G2F_LAYOUT_LINEAR  nn.Linear [out, in]:  W_fc (n_inner, n_embd), W_proj (n_embd, n_inner)
 *
 * Kernels come in pairs: g2f_ffn_forward (float32, OpenMP, packed and
 * blocked, AVX2 + FMA when the CPU has them) and g2f_ffn_forward_ref (plain
 * loops, double accumulation, the oracle in tests). Every output element of
 * the fast kernel is accumulated by one thread in a fixed k order, so results
 * are bitwise identical for any thread count (on a given CPU: with FMA the
 * roundings differ from the portable kernel's).
 */
#ifndef G2F_FFN_H
#define G2F_FFN_H

#include <stddef.h>

#include "g2f_error.h"

typedef enum g2f_gelu { G2F_GELU_TANH, G2F_GELU_ERF, G2F_GELU_COUNT } g2f_gelu;

/* "tanh" / "erf" */
const char *g2f_gelu_name(g2f_gelu g);
/* The other form (tanh <-> erf). */
g2f_gelu g2f_gelu_other(g2f_gelu g);

float g2f_gelu_tanh(float x);
float g2f_gelu_erf(float x);
double g2f_gelu_tanh_f64(double x);
double g2f_gelu_erf_f64(double x);
/* d GELU_erf / dx, used to propagate errors through either form (the two
 * derivatives differ by < 2e-3). */
double g2f_gelu_deriv(double x);
/* g[i] = GELU'(x[i]) to about 1e-6 (g2f_gelu_deriv.h), vectorized: what the
 * tolerance uses for every element (the same bits on every CPU). */
void g2f_gelu_deriv_span(const float *x, float *g, size_t n);

typedef enum g2f_layout { G2F_LAYOUT_CONV1D, G2F_LAYOUT_LINEAR, G2F_LAYOUT_COUNT } g2f_layout;
/* "Conv1D [in, out]" / "Linear [out, in]" */
const char *g2f_layout_name(g2f_layout l);

/* Borrowed views of one layer's FFN weights; biases may be NULL (no bias).
 * Each matrix has its own layout so a diagnosis can model one of them being
 * misread; a checkpoint's two are always the same. */
typedef struct g2f_ffn_weights {
    size_t n_embd, n_inner;
    g2f_layout layout_fc, layout_proj;
    const float *w_fc;   /* layout-dependent, see above */
    const float *b_fc;   /* (n_inner) or NULL */
    const float *w_proj; /* layout-dependent */
    const float *b_proj; /* (n_embd) or NULL */
} g2f_ffn_weights;

/* Scratch memory of the matmul kernels (the packed weight blocks, up to
 * 16 MiB), owned by the caller and kept across calls: a fresh buffer per
 * call costs a page fault per 4 KiB (2400 per GPT-2 small FFN call, which
 * made 64-token calls up to 30% slower on the benchmark host). Start from
 * {0} and release with g2f_ffn_ws_free; where a kernel takes ws, NULL means
 * a buffer of its own for the call. Not to be shared by concurrent calls. */
typedef struct g2f_ffn_ws {
    float *buf; /* owned, 64-byte aligned */
    size_t cap; /* floats */
} g2f_ffn_ws;
void g2f_ffn_ws_free(g2f_ffn_ws *ws);

/* C (m, n) = A (m, k) B + bias, where B is (k, n) when b_trans is 0 and
 * stored as (n, k) when b_trans is 1; bias (n) may be NULL. Each C element is
 * sum_{k in order} A[i,k] B[k,j] in float32, then + bias[j].
 * n_threads <= 0 means the OpenMP default. */
void g2f_matmul(const float *a, size_t m, size_t k, const float *b, int b_trans, size_t n,
                const float *bias, float *c, int n_threads, g2f_ffn_ws *ws);

/* g2f_matmul and, in the same pass over B, C2 (m, n) = A2 (B o B): the
 * squares of B's entries are packed beside B and never stored whole (the
 * sums of squares that error bounds need, g2f_tol). a2 (m, k) may be NULL,
 * then A2 = A o A (A squared as it is packed). c2 may be NULL (no second
 * product). Unlike g2f_matmul, one row (m = 1) is not computed by the GEMV,
 * whose summation order differs: each row's results are the same however
 * many rows are computed with it. */
void g2f_matmul_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n,
                   const float *bias, float *c, float *c2, int n_threads, g2f_ffn_ws *ws);
/* g2f_ffn_fc_gelu plus s (n_tokens, n_inner) = (x o x) (W_fc o W_fc), by
 * g2f_matmul_sq (s may be NULL). */
void g2f_ffn_fc_gelu_sq(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                        float *act, float *s, int n_threads, g2f_ffn_ws *ws);
/* g2f_ffn_proj plus v (n_tokens, n_embd) = q (W_proj o W_proj), q
 * (n_tokens, n_inner), by g2f_matmul_sq (q and v may be NULL). */
void g2f_ffn_proj_sq(const g2f_ffn_weights *w, const float *act, const float *q, size_t n_tokens, float *out,
                     float *v, int n_threads, g2f_ffn_ws *ws);

/* pre = x W_fc + b_fc and act = GELU(pre) in one pass: the GELU is applied
 * to each block of pre right after it is computed (fused epilogue). */
void g2f_ffn_fc_gelu(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre, float *act,
                     int n_threads, g2f_ffn_ws *ws);
/* act[i] = GELU(pre[i]) for count elements (act may equal pre), in double
 * precision rounded once (within 1 ulp of the correctly rounded value). */
void g2f_ffn_gelu(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads);
/* out (n_tokens, n_embd) = act (n_tokens, n_inner) W_proj + b_proj */
void g2f_ffn_proj(const g2f_ffn_weights *w, const float *act, size_t n_tokens, float *out, int n_threads,
                  g2f_ffn_ws *ws);

/* The whole FFN. pre and act (n_tokens, n_inner) are caller buffers that
 * receive the intermediates; out is (n_tokens, n_embd). */
void g2f_ffn_forward(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                     float *act, float *out, int n_threads, g2f_ffn_ws *ws);

/* Reference: double accumulation and double GELU, rounded to float at the
 * end; pre and act may be NULL. Single-threaded, for tests and oracles.
 * Fails only when its (n_inner) scratch vector cannot be allocated. */
g2f_status g2f_ffn_forward_ref(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g,
                               float *pre, float *act, float *out, g2f_error *err);

#endif
