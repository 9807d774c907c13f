/* g2f_tol: see the model in g2f_tol.h. Sums of squares are computed in
 * float by the same matmul as the FFN (their own rounding is irrelevant at
 * the 1e-7 relative level), everything else in double. Quantities are kept
 * in units of u^2 so floats neither underflow nor lose range. */
#include "g2f_tol.h"

#include <math.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static double input_roundoff(g2f_dtype d) {
    double r = g2f_dtype_store_roundoff(d);
    return d == G2F_DTYPE_F64 ? ldexp(1.0, -24) : r; /* F64 input is rounded to float here */
}

g2f_status g2f_tol_squares_init(const g2f_ffn_weights *w, g2f_tol_squares *sq, int n_threads, g2f_error *err) {
    size_t n = w->n_embd * w->n_inner;
    if (sq->cap < n || !sq->w_fc_sq) {
        g2f_tol_squares_free(sq);
        sq->w_fc_sq = g2f_alloc_array(n, sizeof(float));
        sq->w_proj_sq = g2f_alloc_array(n, sizeof(float));
        sq->cap = n;
    }
    if (!sq->w_fc_sq || !sq->w_proj_sq) {
        g2f_tol_squares_free(sq);
        return g2f_error_set(err, G2F_ERR_NOMEM, "tolerance: cannot allocate squared weights (%zu floats)", n);
    }
    long count = (long)n;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(n_threads > 0 ? n_threads : omp_get_max_threads())
#endif
    for (long i = 0; i < count; i++) {
        sq->w_fc_sq[i] = w->w_fc[i] * w->w_fc[i];
        sq->w_proj_sq[i] = w->w_proj[i] * w->w_proj[i];
    }
    return G2F_OK;
}

void g2f_tol_squares_free(g2f_tol_squares *sq) {
    if (!sq) return;
    free(sq->w_fc_sq);
    free(sq->w_proj_sq);
    sq->w_fc_sq = sq->w_proj_sq = NULL;
    sq->cap = 0;
}

g2f_status g2f_tol_compute(const g2f_tol_request *r, const g2f_tol_params *p, float *tol_out, float *tol_pre,
                           float *tol_act, int n_threads, g2f_error *err) {
    const g2f_ffn_weights *w = r->w;
    size_t T = r->n_tokens, d = w->n_embd, h = w->n_inner;
    if (p->user) {
        for (size_t i = 0; i < T * d; i++) tol_out[i] = (float)(p->atol + p->rtol * fabs(r->exp_out[i]));
        if (tol_pre && r->exp_pre)
            for (size_t i = 0; i < T * h; i++) tol_pre[i] = (float)(p->atol + p->rtol * fabs(r->exp_pre[i]));
        if (tol_act && r->exp_act)
            for (size_t i = 0; i < T * h; i++) tol_act[i] = (float)(p->atol + p->rtol * fabs(r->exp_act[i]));
        return G2F_OK;
    }
    const double u = ldexp(1.0, -24), lambda = p->lambda > 0 ? p->lambda : G2F_TOL_LAMBDA;
    const double uin = input_roundoff(r->dtype_in) / u; /* in units of u */
    const double uw = r->weight_roundoff / u;
    const float *w1 = r->squares->w_fc_sq, *w2 = r->squares->w_proj_sq;
    float *x2 = g2f_alloc_work(T, d + h, sizeof(float), "tolerance: the buffers", err); /* x2 (T, d), q (T, h) */
    if (!x2) return err ? err->status : G2F_ERR_NOMEM;
    float *q = x2 + T * d;
    for (size_t i = 0; i < T * d; i++) x2[i] = r->x[i] * r->x[i];
    g2f_matmul(x2, T, d, w1, w->layout_fc == G2F_LAYOUT_LINEAR, h, NULL, q, n_threads, r->ws); /* sum_i x_i^2 W_fc[i,k]^2 */
    double upre = g2f_dtype_store_roundoff(r->dtype_pre), uact = g2f_dtype_store_roundoff(r->dtype_act);
    for (size_t i = 0; i < T * h; i++) {
        double hk = r->pre[i], ak = r->act[i];
        double v1 = (double)d / 2 * q[i] + (double)d / 3 * hk * hk + (uin * uin + uw * uw) * q[i]; /* / u^2 */
        double g = g2f_gelu_deriv(hk), ge = 2.0 * (fabs(ak) + fabs(hk));
        double vact = g * g * v1 + ge * ge;
        if (tol_pre && r->exp_pre) tol_pre[i] = (float)(lambda * u * sqrt(v1) + upre * fabs(r->exp_pre[i]));
        if (tol_act && r->exp_act) tol_act[i] = (float)(lambda * u * sqrt(vact) + uact * fabs(r->exp_act[i]));
        q[i] = (float)(((double)h / 2 + uw * uw) * ak * ak + vact); /* coefficient of W_proj[k,j]^2 */
    }
    g2f_matmul(q, T, h, w2, w->layout_proj == G2F_LAYOUT_LINEAR, d, NULL, x2, n_threads, r->ws); /* reuse x2 (T, d) */
    double uout = g2f_dtype_store_roundoff(r->dtype_out);
    for (size_t i = 0; i < T * d; i++) {
        double y = r->out[i];
        double v = (double)x2[i] + (double)h / 3 * y * y;
        tol_out[i] = (float)(lambda * u * sqrt(v) + uout * fabs(r->exp_out[i]));
    }
    free(x2);
    return G2F_OK;
}
