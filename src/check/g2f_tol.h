/* g2f_tol: per-element tolerances derived from the computation itself.
 *
 * Two correct float32 implementations of the FFN (ours and PyTorch's) differ
 * only by rounding. We model each rounding as an independent error of at
 * most u = 2^-24 relative to the value rounded, and bound the difference by
 * lambda standard deviations (lambda = 6: under the model a false alarm has
 * probability ~2e-9 per element, and the bound is not tuned to any fixture).
 *
 * A dot product s = sum_{i<n} p_i accumulated in fp32 rounds every partial
 * sum s_i; the variance of its error is about u^2 sum_i s_i^2, and for terms
 * in no particular order sum_i s_i^2 ~ n/2 sum p_i^2 + n/3 s^2 (random-walk
 * part plus drift). Counting both implementations' errors (2 u^2/3 each for
 * uniform rounding) is covered by taking u^2 per rounding. Per token:
 *
 *   V_pre[k]  = u^2 (n_embd/2 sum_i x_i^2 W_fc[i,k]^2 + n_embd/3 pre_k^2)
 *               + u_in^2 sum_i x_i^2 W_fc[i,k]^2          (fixture input rounding)
 *   V_act[k]  = GELU'(pre_k)^2 V_pre[k] + (2 u (|act_k| + |pre_k|))^2   (GELU formula, either form)
 *   V_out[j]  = sum_k W_proj[k,j]^2 (u^2 n_inner/2 act_k^2 + V_act[k]) + u^2 n_inner/3 out_j^2
 *   tol       = lambda sqrt(V) + u_store |expected|     (the fixture dtype's own rounding)
 *
 * When the weights themselves are uncertain by a relative u_w (a checkpoint
 * rounded to F16/BF16 while the reference used the originals: a diagnosis
 * hypothesis), u_w^2 sum_i x_i^2 W_fc[i,k]^2 joins V_pre and
 * u_w^2 sum_k act_k^2 W_proj[k,j]^2 joins V_out.
 *
 * u_in / u_store are 2^-11 for F16 and 2^-8 for BF16 fixture tensors, 0 for
 * F32 and F64 (an F64 input rounded to float adds u, folded into u_in). The
 * sums of squares are two extra matmuls (x^2 W_fc^2 and c W_proj^2) over
 * squared weights made once per layer (g2f_tol_squares). A hypothesis that
 * rounds the weights to F16/BF16 reuses the unrounded squares: they are
 * magnitudes, and rounding changes them by 2^-8 at most.
 *
 * With user rtol/atol the model is replaced by atol + rtol |expected|, like
 * torch.isclose.
 */
#ifndef G2F_TOL_H
#define G2F_TOL_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_tensor.h"

#define G2F_TOL_LAMBDA 6.0

typedef struct g2f_tol_params {
    int user;           /* 1: use atol + rtol |expected| */
    double rtol, atol;
    double lambda;      /* standard deviations, G2F_TOL_LAMBDA by default */
} g2f_tol_params;

/* Element-wise squares of a layer's two weight matrices (same layouts), made
 * once per layer and shared by every tolerance computed for it. */
typedef struct g2f_tol_squares {
    float *w_fc_sq, *w_proj_sq; /* owned */
    size_t cap;                 /* floats in each */
} g2f_tol_squares;

/* Fills sq from w (OpenMP), reusing its buffers when they are large enough
 * (start from {0}; keep one across layers: two fresh 80 MB buffers per GPT-2
 * XL layer cost 40 000 page faults). Fails only on allocation. */
g2f_status g2f_tol_squares_init(const g2f_ffn_weights *w, g2f_tol_squares *sq, int n_threads, g2f_error *err);
void g2f_tol_squares_free(g2f_tol_squares *sq);

typedef struct g2f_tol_request {
    const g2f_ffn_weights *w;
    const float *x;                 /* (T, n_embd) */
    size_t n_tokens;
    const float *pre, *act, *out;   /* our computation: (T, n_inner), (T, n_inner), (T, n_embd) */
    const double *exp_out;          /* (T, n_embd) expected */
    const double *exp_pre, *exp_act;/* optional expected (T, n_inner) */
    g2f_dtype dtype_in, dtype_out, dtype_pre, dtype_act;
    double weight_roundoff;         /* u_w, 0 normally */
    const g2f_tol_squares *squares; /* of w's matrices (layouts follow w) */
    g2f_ffn_ws *ws;                 /* for the two matmuls; NULL: their own */
} g2f_tol_request;

/* Fills tol_out (T, n_embd) and, when non-NULL, tol_pre / tol_act
 * (T, n_inner). Fails only on allocation. */
g2f_status g2f_tol_compute(const g2f_tol_request *r, const g2f_tol_params *p, float *tol_out, float *tol_pre,
                           float *tol_act, int n_threads, g2f_error *err);

#endif
