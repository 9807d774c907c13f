/* g2f_block: the block's stages; see g2f_block.h. */
#include "g2f_block.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_attn.h"
#include "g2f_ffn.h"
#include "g2f_ffn_eval.h"
#include "g2f_layernorm.h"


#define U 0x1p-24


/* ---- one sequence's buffers ------------------------------------------ */

typedef struct seq {
    size_t T, d, H;
    /* (T, d) each: values and absolute variances */
    float *x, *vx, *a, *va, *merged, *vmerged, *ao, *vao, *mid, *vmid, *l2, *vl2, *mo, *vmo, *out, *vout, *tmp;
    float *qkv, *vqkv;            /* (T, 3d) */
    float *probs;                 /* (H, T, T): only a values-only chain that keeps them (run --save) */
    float *hq, *hk, *hv, *hvq, *hvk, *hvv, *hz, *hk2, *hv2; /* per head (T, dh) */
    float *a2, *ar;               /* scratch: A2 operands (T, 3d), rounded product inputs (T, d) */
    /* one block of G2F_ATTN_QB queries of one head, (QB, T): probabilities,
     * their variance, the scores' products, the recorded rows and the
     * tolerance: memory QB T per sequence, never (n_head, T, T) */
    float *pb, *vpb, *sb, *s2b, *s3b, *tb;
    double *eb;
    float *pre, *act, *vpre, *vact; /* (T, n_inner): the chained FFN's, with their variances */
    float *th;                    /* (T, n_inner) scratch: their comparisons' tolerances */
    double *e1, *e2;              /* expected values (T, max width) */
    double *rstd;                 /* (T) */
} seq;

static size_t max2(size_t a, size_t b) { return a > b ? a : b; }

/* One allocation for a sequence's buffers. values_only (the forward's run:
 * nothing compared) leaves out the variances and the scratch of the
 * variances and comparisons, and with no_probs the attention probabilities:
 * those pointers stay NULL (GPT-2 small at 1024 tokens: 60 MB, or 110 MB
 * with the probabilities, instead of 313 MB). */
static g2f_status seq_alloc(seq *s, size_t layer, size_t T, size_t d, size_t H, size_t h, int values_only,
                            int no_probs, void **block, g2f_error *err) {
    memset(s, 0, sizeof *s);
    s->T = T, s->d = d, s->H = H;
    size_t dh = H ? d / H : d, w = max2(3 * d, h), qb = G2F_ATTN_QB;
    /* floats per token; var: left out by values_only (and the probabilities
     * kept only by a values-only chain that wants them) */
    const struct { double **p; size_t n; int var; } dbl[] = {
        {&s->e1, w, 1}, {&s->e2, w, 1}, {&s->rstd, 1, 0}, {&s->eb, qb, 1}};
    const struct { float **p; size_t n; int var; } flt[] = {
        {&s->x, d, 0},      {&s->vx, d, 1},     {&s->a, d, 0},      {&s->va, d, 1},         {&s->merged, d, 0},
        {&s->vmerged, d, 1}, {&s->ao, d, 0},    {&s->vao, d, 1},    {&s->mid, d, 0},        {&s->vmid, d, 1},
        {&s->l2, d, 0},     {&s->vl2, d, 1},    {&s->mo, d, 0},     {&s->vmo, d, 1},        {&s->out, d, 0},
        {&s->vout, d, 1},   {&s->tmp, d, 1},    {&s->qkv, 3 * d, 0}, {&s->vqkv, 3 * d, 1},
        {&s->probs, H * T, !values_only || no_probs},
        {&s->hq, dh, 1},    {&s->hk, dh, 1},    {&s->hv, dh, 1},    {&s->hvq, dh, 1},       {&s->hvk, dh, 1},
        {&s->hvv, dh, 1},   {&s->hz, dh, 1},    {&s->hk2, dh, 1},   {&s->hv2, dh, 1},       {&s->a2, 3 * d, 1},
        {&s->ar, d, 1},
        {&s->pb, qb, 1},    {&s->vpb, qb, 1},   {&s->sb, qb, 1},    {&s->s2b, qb, 1},       {&s->s3b, qb, 1},
        {&s->tb, qb, 1},    {&s->pre, h, 0},    {&s->act, h, 0},    {&s->vpre, h, 1},       {&s->vact, h, 1},
        {&s->th, h, 1}};
    size_t per = 0; /* floats per token (a double counts two) */
    /* a probabilities entry's var flag says it is left out in either mode */
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++) per += values_only && dbl[i].var ? 0 : 2 * dbl[i].n;
    for (size_t i = 0; i < sizeof flt / sizeof flt[0]; i++)
        per += (flt[i].p == &s->probs ? flt[i].var : values_only && flt[i].var) ? 0 : flt[i].n;
    char what[96];
    snprintf(what, sizeof what, "layer %zu: the block's buffers for a sequence of %zu tokens", layer, T);
    float *p = g2f_alloc_work(T ? T : 1, per, sizeof(float), what, err);
    if (!p) return err ? err->status : G2F_ERR_NOMEM;
    *block = p;
    double *dp = (double *)(void *)p; /* the doubles first: aligned as the allocation is */
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++)
        if (!(values_only && dbl[i].var)) *dbl[i].p = dp, dp += T * dbl[i].n;
    p = (float *)(void *)dp;
    for (size_t i = 0; i < sizeof flt / sizeof flt[0]; i++)
        if (!(flt[i].p == &s->probs ? flt[i].var : values_only && flt[i].var)) *flt[i].p = p, p += T * flt[i].n;
    return G2F_OK;
}

/* ---- the computations, each with its variance ------------------------- */
/* Each takes NULL for its variances (the forward's run: nothing compared)
 * and then computes the values alone, by the same calls: the same bits. */

/* How a stage is computed: the checkpoint's weights, or a porting bug. */
typedef struct how {
    const g2f_block *b;
    g2f_attn_opts attn;
    int no_attn_b, no_proj_b, misread; /* misread: bit 1 c_attn, bit 2 attn.c_proj */
    double eps1, eps2;
    int no_w1, no_b1, no_w2, no_b2;
    int no_res_mid, no_res_out;
    size_t n_head;
    int n_threads;
    /* the weights known only to within a rounding of this relative size (a
     * BF16 / F16 checkpoint against a reference made with the float
     * originals, which cannot be recovered): each product's variance gains
     * uw^2 sum a^2 W^2 (and uw^2 bias^2), a LayerNorm's uw^2 ((w z)^2 + b^2) */
    double uw;
    /* every product's input rounded so (ggml's F16 matmul: F16, with the
     * weights F16 too, in b and mlp), a flip's second moment joining the
     * input's variance (g2f_round_flip_var); G2F_ROUND_NONE normally */
    g2f_round gemm_in;
    const g2f_ffn_weights *mlp; /* the FFN's weights for the chained pass (b's own, or rounded) */
} how;

/* y = LayerNorm(x) with its variance: the LayerNorm's own rounding
 * (g2f_tol_layernorm_var) and x's variance through the normalization's
 * Jacobian, dy_j/dx_k = w_j r (delta_jk - 1/d - z_j z_k / d) with z the
 * normalized x: var_j = w_j^2 r^2 (v_j (1 - 2 (1 + z_j^2) / d) + (A + 2 z_j B
 * + z_j^2 C) / d^2), A, B, C = sum_k v_k, z_k v_k, z_k^2 v_k (an outlier
 * channel moves every output through the mean and the scale). */
static void ln_stage(const float *x, const float *vx, size_t T, size_t d, const g2f_ln *ln, double eps, int no_w,
                     int no_b, double uw, float *y, float *vy, double *rstd, int n_threads) {
    const float *w = no_w ? NULL : ln->w, *b = no_b ? NULL : ln->b;
    if (ln->roundoff <= 0) uw = 0; /* stored exactly (an F16 GGUF keeps its LayerNorms F32): nothing uncertain */
    g2f_ln_forward(x, T, d, w, b, eps, y, NULL, rstd, n_threads);
    if (!vy) return;
    g2f_tol_layernorm_var(x, y, T, d, w, b, eps, 0.0, 0.0, vy, n_threads);
    double n = (double)d;
    for (size_t t = 0; t < T; t++) {
        const float *xr = x + t * d, *vr = vx + t * d;
        double mu = 0, A = 0, B = 0, C = 0, r = rstd[t];
        for (size_t k = 0; k < d; k++) mu += xr[k];
        mu /= n;
        for (size_t k = 0; k < d; k++) {
            double z = ((double)xr[k] - mu) * r;
            A += vr[k], B += z * vr[k], C += z * z * vr[k];
        }
        for (size_t j = 0; j < d; j++) {
            double wj = w ? w[j] : 1.0, z = ((double)xr[j] - mu) * r;
            double v = vr[j] * (1 - 2 * (1 + z * z) / n) + (A + 2 * z * B + z * z * C) / (n * n);
            vy[t * d + j] += (float)(wj * wj * r * r * (v > 0 ? v : 0));
        }
    }
    if (uw > 0) /* uncertain weights: y = w z + b, each of w and b within uw of its own size */
        for (size_t t = 0; t < T; t++)
            for (size_t j = 0; j < d; j++) {
                double bj = b ? b[j] : 0.0, wz = (double)y[t * d + j] - bj;
                vy[t * d + j] += (float)(uw * uw * (wz * wz + bj * bj));
            }
}

/* z = x + y, var = var_x + var_y + (u z)^2. */
/* A residual add's recorded input: its dtype's rounding (g2f_tol_input_var),
 * and for F32 one float32 rounding too. A reference computed wider (float64)
 * and stored as F32 holds its inputs rounded, and an add that cancels
 * magnifies that rounding beyond the add's own (a float32 reference's
 * inputs are exactly what it added: no difference either way). */
static void residual_input_var(const float *x, size_t n, g2f_dtype dt, float *v) {
    g2f_tol_input_var(x, n, dt, v);
    if (dt == G2F_DTYPE_F32)
        for (size_t i = 0; i < n; i++) v[i] += (float)(U * U * (double)x[i] * x[i]);
}

static void add_stage(const float *x, const float *vx, const float *y, const float *vy, size_t n, int no_x, float *z,
                      float *vz) {
    for (size_t i = 0; i < n; i++) z[i] = no_x ? y[i] : x[i] + y[i];
    if (vz)
        for (size_t i = 0; i < n; i++)
            vz[i] = (float)((no_x ? 0.0 : (double)vx[i]) + vy[i] + U * U * (double)z[i] * z[i]);
}

/* c (m, n) = a (m, k) B + bias and its variance: u^2 (k/2 sum a^2 B^2 +
 * k/3 c^2) + sum var_a B^2, one GEMM beside the product (A2 = k/2 a^2 +
 * var_a / u^2, units of u^2). */
static void gemm_var(const float *a, const float *va, size_t m, size_t k, const float *B, int b_trans, size_t n,
                     const float *bias, double uw, g2f_round rin, float *c, float *vc, float *a2, float *ar,
                     int n_threads, g2f_ffn_ws *ws) {
    const float *in = a;
    if (rin != G2F_ROUND_NONE) { /* the product's input rounded (ggml's F16 matmul) into ar */
        g2f_round_span(rin, a, ar, m * k);
        in = ar;
    }
    if (!vc) { /* g2f_matmul_sq still: g2f_matmul's one-row GEMV sums in another order */
        g2f_matmul_sq(in, NULL, m, k, B, b_trans, n, bias, c, NULL, n_threads, ws);
        return;
    }
    const double ka = (double)k / 2 + uw * uw / (U * U); /* uncertain weights: uw^2 sum a^2 B^2 more */
    if (rin == G2F_ROUND_NONE)
        for (size_t i = 0; i < m * k; i++) a2[i] = (float)(ka * a[i] * a[i] + va[i] / (U * U));
    else /* both sides round the same value alike but where a boundary lies within its variance */
        for (size_t i = 0; i < m * k; i++)
            a2[i] = (float)(ka * in[i] * in[i] + g2f_round_flip_var(rin, a[i], va[i], G2F_TOL_LAMBDA) / (U * U));
    g2f_matmul_sq(in, a2, m, k, B, b_trans, n, bias, c, vc, n_threads, ws);
    for (size_t i = 0; i < m * n; i++) vc[i] = (float)(U * U * ((double)vc[i] + (double)k / 3 * c[i] * c[i]));
    if (uw > 0 && bias)
        for (size_t i = 0; i < m * n; i++) vc[i] += (float)(uw * uw * (double)bias[i % n] * bias[i % n]);
}

/* The index in a (T, 3d) qkv row of part r (0 q, 1 k, 2 v) of head h, feature j. */
static size_t qkv_index(const g2f_attn_opts *o, size_t d, size_t H, size_t part, size_t h, size_t j) {
    size_t dh = d / H, third = (size_t)o->qkv_order[part];
    return third * d + (o->heads_interleaved ? j * H + h : h * dh + j);
}

static size_t merged_index(const g2f_attn_opts *o, size_t d, size_t H, size_t h, size_t j) {
    return o->heads_interleaved ? j * H + h : h * (d / H) + j;
}

/* Where the attention stage compares the recorded probabilities (the
 * fixture's (n_seq, H, T, T) tensor, sequence sq), block by block as the
 * variance is computed; t NULL: not recorded. */
typedef struct probs_cmp {
    const g2f_tensor *t;
    size_t sq;
    double lambda;
    g2f_cmp_acc acc;
    int any;
} probs_cmp;

/* rows (mq, n) at the head of buf to stride T, zeros after n (in place,
 * from the last row down). */
static void widen_rows(float *buf, size_t mq, size_t n, size_t T) {
    for (size_t r = mq; r-- > 0;) {
        memmove(buf + r * T, buf + r * n, n * sizeof(float));
        memset(buf + r * T + n, 0, (T - n) * sizeof(float));
    }
}

/* One head's q, k, v of c_attn's output and their variances into the
 * per-head (T, dh) buffers, with A2 = dh/2 q^2 + var_q/u^2 (a2), q^2 (hz),
 * var_k/u^2 (hk2), var_v/u^2 (hv2): the operands of the scores' and P v's
 * products of squares. */
static void gather_head(const g2f_attn_opts *o, seq *s, size_t H, size_t h) {
    size_t T = s->T, d = s->d, dh = d / H;
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < dh; j++) {
            size_t iq = t * 3 * d + qkv_index(o, d, H, 0, h, j), ik = t * 3 * d + qkv_index(o, d, H, 1, h, j),
                   iv = t * 3 * d + qkv_index(o, d, H, 2, h, j), at = t * dh + j;
            s->hq[at] = s->qkv[iq], s->hvq[at] = s->vqkv[iq];
            s->hk[at] = s->qkv[ik], s->hvk[at] = s->vqkv[ik];
            s->hv[at] = s->qkv[iv], s->hvv[at] = s->vqkv[iv];
        }
    for (size_t i = 0; i < T * dh; i++) {
        s->a2[i] = (float)((double)dh / 2 * s->hq[i] * s->hq[i] + s->hvq[i] / (U * U));
        s->hz[i] = s->hq[i] * s->hq[i];
        s->hk2[i] = (float)(s->hvk[i] / (U * U));
        s->hv2[i] = (float)(s->hvv[i] / (U * U));
    }
}

/* The probabilities' variance of a block's rows (mq, stride T): the scores
 * S = q k^T (sb), S2 = (dh/2 q^2 + var_q/u^2) (k^2)^T (s2b), S3 = q^2
 * (var_k/u^2)^T (s3b) give each score's variance, and the softmax carries
 * them: p_ij^2 (var_s_ij + sum_l p_il^2 var_s_il), twice for the
 * correlation, plus the sum's and exp's roundings. */
static void probs_var_rows(const g2f_attn_opts *o, seq *s, size_t dh, size_t i0, size_t mq) {
    size_t T = s->T;
    double sc = o->scale;
    for (size_t r = 0; r < mq; r++) {
        size_t i = i0 + r, nk = o->causal ? i + 1 : T;
        float *S = s->sb + r * T, *P = s->pb + r * T, *VP = s->vpb + r * T;
        double sum_p2 = 0, sum_pv = 0;
        for (size_t j = 0; j < nk; j++) {
            double raw = (double)S[j];
            double vs = sc * sc * U * U * ((double)s->s2b[r * T + j] + s->s3b[r * T + j] + (double)dh / 3 * raw * raw) +
                        U * U * sc * sc * raw * raw;
            S[j] = (float)vs; /* the score's variance, kept in S */
            double p = P[j];
            sum_p2 += p * p;
            sum_pv += p * p * vs;
        }
        for (size_t j = 0; j < T; j++) {
            double p = P[j];
            VP[j] = j < nk ? (float)(2 * p * p * ((double)S[j] + sum_pv) +
                                     p * p * U * U * ((double)nk / 2 * sum_p2 + (double)nk / 3 + 3))
                           : 0.0f;
        }
    }
}

/* One block of head h's queries: its probabilities (the kernel's own bits),
 * their variance, the recorded rows compared (pc), and the variance of its
 * z = P v rows: Z2 = (T/2 p^2 + var_p/u^2) (v^2) into hvq, Z3 = p^2
 * (var_v/u^2) into hvk (rows i0 .. i0 + mq). */
static void attn_var_block(const how *hw, seq *s, size_t h, size_t b, g2f_attn_ws *aws, g2f_ffn_ws *ws,
                           probs_cmp *pc) {
    size_t T = s->T, d = s->d, H = hw->n_head, dh = d / H, mq, n, i0 = b * G2F_ATTN_QB;
    g2f_attn_block_probs(aws, T, d, H, &hw->attn, h, b, s->pb, &mq, &n, ws);
    g2f_matmul_sq(s->hq + i0 * dh, s->a2 + i0 * dh, mq, dh, s->hk, 1, n, NULL, s->sb, s->s2b, hw->n_threads, ws);
    g2f_matmul_sq(s->hz + i0 * dh, NULL, mq, dh, s->hk2, 1, n, NULL, s->s3b, NULL, hw->n_threads, ws);
    widen_rows(s->pb, mq, n, T), widen_rows(s->sb, mq, n, T), widen_rows(s->s2b, mq, n, T);
    widen_rows(s->s3b, mq, n, T);
    probs_var_rows(&hw->attn, s, dh, i0, mq);
    if (pc && pc->t) { /* the recorded rows: (n_seq, H, T, T) */
        uint64_t at = (((uint64_t)pc->sq * H + h) * T + i0) * T;
        double us = g2f_dtype_store_roundoff(pc->t->dtype), fl = g2f_dtype_store_floor(pc->t->dtype);
        g2f_tensor_read_f64(pc->t, at, (uint64_t)mq * T, s->eb);
        for (size_t i = 0; i < mq * T; i++)
            s->tb[i] = (float)(pc->lambda * sqrt((double)s->vpb[i]) + us * fabs(s->eb[i]) + fl);
        g2f_cmp_acc_add(&pc->acc, s->eb, s->pb, s->tb, mq * T, (h * T + i0) * T, hw->n_threads);
        pc->any = 1;
    }
    for (size_t i = 0; i < mq * T; i++) {
        double p = s->pb[i];
        s->s2b[i] = (float)((double)T / 2 * p * p + s->vpb[i] / (U * U));
        s->s3b[i] = (float)(p * p);
    }
    g2f_matmul_sq(s->pb, s->s2b, mq, T, s->hv, 0, dh, NULL, s->hz + i0 * dh, s->hvq + i0 * dh, hw->n_threads, ws);
    g2f_matmul_sq(s->s3b, NULL, mq, T, s->hv2, 0, dh, NULL, s->hvk + i0 * dh, NULL, hw->n_threads, ws);
}

/* The attention stage from a (T, d) with variance va: qkv, merged, ao and
 * their variances (va NULL: the values alone, and the probabilities into
 * s->probs when it is kept); with pc, the recorded probabilities are
 * compared as each block's are computed. */
static g2f_status attn_stage(const how *hw, seq *s, const float *a, const float *va, g2f_attn_ws *aws, g2f_ffn_ws *ws,
                             probs_cmp *pc, g2f_error *err) {
    const g2f_block *b = hw->b;
    size_t T = s->T, d = s->d, H = hw->n_head, dh = d / H;
    g2f_layout lay = hw->misread & 1 ? (b->layout_attn == G2F_LAYOUT_CONV1D ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D)
                                     : b->layout_attn;
    gemm_var(a, va, T, d, b->attn_w, lay == G2F_LAYOUT_LINEAR, 3 * d, hw->no_attn_b ? NULL : b->attn_b, hw->uw,
             va ? hw->gemm_in : G2F_ROUND_NONE, s->qkv, va ? s->vqkv : NULL, s->a2, s->ar, hw->n_threads, ws);
    g2f_status st = g2f_attn_forward(s->qkv, T, d, H, &hw->attn, s->merged, va ? NULL : s->probs, hw->n_threads, aws,
                                     err);
    if (st != G2F_OK) return st;
    const g2f_attn_opts *o = &hw->attn;
    /* the variances a block of queries at a time (the kernel kept the split heads in aws) */
    for (size_t h = 0; va && h < H; h++) {
        gather_head(o, s, H, h);
        /* the gather overwrote a2's first T dh with the heads' operands; the blocks read them */
        for (size_t blk = 0; blk * G2F_ATTN_QB < T; blk++) attn_var_block(hw, s, h, blk, aws, ws, pc);
        for (size_t t = 0; t < T; t++)
            for (size_t j = 0; j < dh; j++) {
                size_t mi = t * d + merged_index(o, d, H, h, j);
                double z = s->merged[mi];
                s->vmerged[mi] = (float)(U * U * ((double)s->hvq[t * dh + j] + s->hvk[t * dh + j] + (double)T / 3 * z * z));
            }
    }
    g2f_layout lp = hw->misread & 2 ? (b->layout_aproj == G2F_LAYOUT_CONV1D ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D)
                                    : b->layout_aproj;
    gemm_var(s->merged, s->vmerged, T, d, b->aproj_w, lp == G2F_LAYOUT_LINEAR, d, hw->no_proj_b ? NULL : b->aproj_b,
             hw->uw, va ? hw->gemm_in : G2F_ROUND_NONE, s->ao, va ? s->vao : NULL, s->a2, s->ar, hw->n_threads, ws);
    return G2F_OK;
}

/* ---- comparisons ------------------------------------------------------- */

typedef struct acc {
    size_t mismatched, total;
    double margin;
    double trend;        /* the largest |g2f_cmp.trend| of the comparisons */
    g2f_cmp worst;
    const char *worst_tensor;
    int any;
} acc;

/* One comparison's figures into A: the counts add up, the tensor with the
 * largest margin (or the first non-finite one) is the worst. */
static void acc_take(acc *A, const char *name, const g2f_cmp *r) {
    A->mismatched += r->mismatched;
    A->total += r->total;
    if (!A->any || fabs(r->trend) > A->trend) A->trend = fabs(r->trend);
    if (!A->any || r->margin > A->margin || (r->nonfinite && !A->worst.nonfinite)) {
        A->margin = r->margin;
        A->worst = *r;
        A->worst_tensor = name;
    }
    A->any = 1;
}

/* Compares the expected e with c (n values) into A: the tolerance, formed
 * here alone, is lambda sqrt(var) plus the stored dtype's rounding (tol:
 * scratch). */
static void compare(acc *A, const char *name, const double *e, const float *c, const float *var, size_t n,
                    g2f_dtype dt, double lambda, float *tol) {
    double us = g2f_dtype_store_roundoff(dt), fl = g2f_dtype_store_floor(dt);
    for (size_t i = 0; i < n; i++) tol[i] = (float)(lambda * sqrt((double)var[i]) + us * fabs(e[i]) + fl);
    g2f_cmp r;
    g2f_compare(e, c, tol, n, &r);
    acc_take(A, name, &r);
}

/* The probabilities compared block by block (attn_stage), into A. */
static void probs_take(acc *A, probs_cmp *pc) {
    if (!pc->any) return;
    g2f_cmp r;
    g2f_cmp_acc_finish(&pc->acc, &r);
    acc_take(A, "attn.probs", &r);
}

/* Reads a sequence's rows of a recorded tensor (width values per token). */
static void read_seq(const g2f_tensor *t, size_t s, size_t T, size_t width, float *f, double *dbl) {
    uint64_t at = (uint64_t)s * T * width, n = (uint64_t)T * width;
    if (f) g2f_tensor_read_f32(t, at, n, f);
    if (dbl) g2f_tensor_read_f64(t, at, n, dbl);
}


/* ---- the checks ------------------------------------------------------- */

typedef struct ctx {
    g2f_dtype wdtype;   /* the checkpoint's weights' (an F16 one holds ggml's F16 weights already) */
    const g2f_fixture *f;
    size_t L, n_seq, T, d, H;
    const g2f_block_params *p;
    double lambda;
    seq s;
    g2f_attn_ws aws;
    g2f_ffn_eval_ws ews; /* the chained FFN's chunk, and every product's packed blocks (ews.ffn) */
    g2f_error *err; /* the chained pass's */
} ctx;

static const g2f_tensor *stage_t(const ctx *c, g2f_act k) {
    return c->f ? g2f_fixture_act(c->f, c->L, k) : NULL;
}

/* Compares the attention stage's outputs with what the fixture records. */
static void compare_attn(ctx *c, acc *A, size_t sq) {
    seq *s = &c->s;
    size_t T = c->T, d = c->d;
    const g2f_tensor *t;
    if ((t = stage_t(c, G2F_ACT_QKV))) {
        read_seq(t, sq, T, 3 * d, NULL, s->e1);
        compare(A, "attn.qkv", s->e1, s->qkv, s->vqkv, T * 3 * d, t->dtype, c->lambda, s->a2);
    }
    static const g2f_act split[3] = {G2F_ACT_Q, G2F_ACT_K, G2F_ACT_V};
    static const char *const split_names[3] = {"attn.hook_q", "attn.hook_k", "attn.hook_v"};
    /* TransformerLens: [T, H, dh] = the GPT-2 third, in place; its values in
     * tmp, its variances in vout (written only at the block's end: vx is the
     * block's input variance, which mid's residual add still reads) */
    for (int part = 0; part < 3; part++) {
        if (!(t = stage_t(c, split[part]))) continue;
        read_seq(t, sq, T, d, NULL, s->e1);
        for (size_t tk = 0; tk < T; tk++)
            for (size_t j = 0; j < d; j++) {
                s->tmp[tk * d + j] = s->qkv[tk * 3 * d + (size_t)part * d + j];
                s->vout[tk * d + j] = s->vqkv[tk * 3 * d + (size_t)part * d + j];
            }
        compare(A, split_names[part], s->e1, s->tmp, s->vout, T * d, t->dtype, c->lambda, s->a2);
    }
    /* attn.probs: compared by attn_stage, a block of queries at a time */
    if ((t = stage_t(c, G2F_ACT_MERGED)) || (t = stage_t(c, G2F_ACT_Z))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(A, t == stage_t(c, G2F_ACT_Z) ? "attn.hook_z" : "attn.merged", s->e1, s->merged, s->vmerged, T * d,
                t->dtype, c->lambda, s->a2);
    }
    if ((t = stage_t(c, G2F_ACT_ATTN_OUT))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(A, "attn.out", s->e1, s->ao, s->vao, T * d, t->dtype, c->lambda, s->a2);
    }
}

/* A probs_cmp for sequence sq of c's layer: t NULL when not recorded. */
static probs_cmp probs_cmp_for(const ctx *c, size_t sq) {
    probs_cmp pc;
    memset(&pc, 0, sizeof pc);
    pc.t = stage_t(c, G2F_ACT_PROBS);
    pc.sq = sq;
    pc.lambda = c->lambda;
    g2f_cmp_acc_init(&pc.acc, 1);
    return pc;
}

static int attn_recorded(const ctx *c) {
    return stage_t(c, G2F_ACT_QKV) || stage_t(c, G2F_ACT_Q) || stage_t(c, G2F_ACT_K) || stage_t(c, G2F_ACT_V) ||
           stage_t(c, G2F_ACT_PROBS) || stage_t(c, G2F_ACT_MERGED) || stage_t(c, G2F_ACT_Z) ||
           stage_t(c, G2F_ACT_ATTN_OUT);
}

/* The isolated check of one stage under hw: every sequence; *A gets the comparisons. */
static g2f_status run_stage(ctx *c, g2f_stage st, const how *hw, acc *A, g2f_error *err) {
    seq *s = &c->s;
    size_t T = c->T, d = c->d;
    const g2f_fixture *f = c->f;
    memset(A, 0, sizeof *A);
    for (size_t sq = 0; sq < c->n_seq; sq++) {
        const g2f_tensor *t;
        switch (st) {
        case G2F_STAGE_LN1:
        case G2F_STAGE_LN2: {
            const g2f_tensor *in = st == G2F_STAGE_LN1 ? stage_t(c, G2F_ACT_IN) : stage_t(c, G2F_ACT_MID);
            t = st == G2F_STAGE_LN1 ? stage_t(c, G2F_ACT_LN1) : g2f_fixture_input(f, c->L);
            read_seq(in, sq, T, d, s->x, NULL);
            g2f_tol_input_var(s->x, T * d, in->dtype, s->vx);
            const g2f_ln *ln = st == G2F_STAGE_LN1 ? &hw->b->ln_1 : &hw->b->ln_2;
            ln_stage(s->x, s->vx, T, d, ln, st == G2F_STAGE_LN1 ? hw->eps1 : hw->eps2,
                     st == G2F_STAGE_LN1 ? hw->no_w1 : hw->no_w2, st == G2F_STAGE_LN1 ? hw->no_b1 : hw->no_b2, hw->uw,
                     s->a, s->va, s->rstd, hw->n_threads);
            read_seq(t, sq, T, d, NULL, s->e1);
            compare(A, st == G2F_STAGE_LN1 ? "ln_1.out" : "ln_2.out", s->e1, s->a, s->va, T * d, t->dtype, c->lambda,
                    s->tmp);
            break;
        }
        case G2F_STAGE_ATTN: {
            t = stage_t(c, G2F_ACT_LN1);
            read_seq(t, sq, T, d, s->a, NULL);
            g2f_tol_input_var(s->a, T * d, t->dtype, s->va);
            probs_cmp pc = probs_cmp_for(c, sq);
            g2f_status e = attn_stage(hw, s, s->a, s->va, &c->aws, &c->ews.ffn, &pc, err);
            if (e != G2F_OK) return e;
            compare_attn(c, A, sq);
            probs_take(A, &pc);
            break;
        }
        case G2F_STAGE_MID:
        case G2F_STAGE_OUT: {
            const g2f_tensor *tx = st == G2F_STAGE_MID ? stage_t(c, G2F_ACT_IN) : stage_t(c, G2F_ACT_MID);
            const g2f_tensor *ty = st == G2F_STAGE_MID ? stage_t(c, G2F_ACT_ATTN_OUT) : f ? NULL : NULL;
            if (st == G2F_STAGE_OUT) {
                g2f_fixture_views fv;
                g2f_error e2 = {0};
                ty = g2f_fixture_layer_views(f, c->L, &fv, &e2) == G2F_OK ? fv.t[G2F_ACT_MLP_OUT] : NULL;
            }
            t = st == G2F_STAGE_MID ? stage_t(c, G2F_ACT_MID) : stage_t(c, G2F_ACT_OUT);
            read_seq(tx, sq, T, d, s->x, NULL);
            residual_input_var(s->x, T * d, tx->dtype, s->vx);
            read_seq(ty, sq, T, d, s->a, NULL);
            residual_input_var(s->a, T * d, ty->dtype, s->va);
            add_stage(s->x, s->vx, s->a, s->va, T * d, st == G2F_STAGE_MID ? hw->no_res_mid : hw->no_res_out, s->mid,
                      s->vmid);
            read_seq(t, sq, T, d, NULL, s->e1);
            compare(A, st == G2F_STAGE_MID ? "mid" : "out", s->e1, s->mid, s->vmid, T * d, t->dtype, c->lambda,
                    s->tmp);
            break;
        }
        default: break;
        }
    }
    return G2F_OK;
}

/* Which stages are recorded with their inputs. */
static int stage_recorded(const ctx *c, g2f_stage st) {
    const g2f_fixture *f = c->f;
    switch (st) {
    case G2F_STAGE_LN1: return stage_t(c, G2F_ACT_IN) && stage_t(c, G2F_ACT_LN1);
    case G2F_STAGE_ATTN: return stage_t(c, G2F_ACT_LN1) && attn_recorded(c);
    case G2F_STAGE_MID: return stage_t(c, G2F_ACT_IN) && stage_t(c, G2F_ACT_ATTN_OUT) && stage_t(c, G2F_ACT_MID);
    case G2F_STAGE_LN2: return stage_t(c, G2F_ACT_MID) && g2f_fixture_input(f, c->L);
    case G2F_STAGE_OUT: return stage_t(c, G2F_ACT_MID) && g2f_fixture_has_layer(f, c->L) && stage_t(c, G2F_ACT_OUT);
    default: return 0;
    }
}

static void fill_stage(g2f_stage_result *r, const acc *A) {
    r->checked = 1;
    r->mismatched = A->mismatched;
    r->total = A->total;
    r->margin = A->margin;
    r->worst = A->worst;
    r->worst_tensor = A->worst_tensor;
    r->pass = A->mismatched == 0;
}

/* ---- diagnosis of a failing stage -------------------------------------- */

/* Rounded copies of a block's weights. */
typedef struct rounded {
    g2f_block b;
    float *buf;
} rounded;

static g2f_status round_block(const g2f_block *src, g2f_round r, rounded *out, g2f_error *err) {
    return g2f_block_round(src, r, 0, &out->b, &out->buf, err);
}

g2f_status g2f_block_round(const g2f_block *src, g2f_round r, int matmul_only, g2f_block *dst, float **owned,
                           g2f_error *err) {
    size_t d = src->n_embd, h = src->mlp.w.n_inner, n = 4 * d * d + 4 * d + 4 * d + 2 * d * h + h + d;
    *dst = *src;
    *owned = g2f_alloc_work(n, 1, sizeof(float), "a rounded copy of the block's weights", err);
    if (!*owned) return err ? err->status : G2F_ERR_NOMEM;
    float *p = *owned;
    g2f_ffn_weights *mw = &dst->mlp.w;
    const float *from[12] = {src->attn_w, src->aproj_w, src->mlp.w.w_fc, src->mlp.w.w_proj, /* the products' */
                             src->attn_b, src->aproj_b, src->ln_1.w, src->ln_1.b, src->ln_2.w, src->ln_2.b,
                             src->mlp.w.b_fc, src->mlp.w.b_proj};
    size_t sizes[12] = {3 * d * d, d * d, d * h, h * d, 3 * d, d, d, d, d, d, h, d};
    const float **to[12] = {&dst->attn_w, &dst->aproj_w, &mw->w_fc, &mw->w_proj, &dst->attn_b, &dst->aproj_b,
                            &dst->ln_1.w, &dst->ln_1.b, &dst->ln_2.w, &dst->ln_2.b, &mw->b_fc, &mw->b_proj};
    for (int k = 0; k < (matmul_only ? 4 : 12); k++) { /* ggml's F16 path rounds the products' weights only */
        if (!from[k]) continue;
        g2f_round_span(r, from[k], p, sizes[k]);
        *to[k] = p;
        p += sizes[k];
    }
    return G2F_OK;
}

/* The block computed with a port's precision (codes: weights_f16_rounded,
 * weights_bf16_rounded, f16_matmul) from base: *hw, its rounded weights in
 * rb (the caller frees rb->buf). A checkpoint stored in that precision is the
 * rounded side already: f16_matmul then rounds nothing, a weights_*_rounded
 * takes the weights as known to within their rounding. 0: nothing to do. */
static g2f_status precision_how(const ctx *c, const how *base, g2f_diag_set codes, how *hw, rounded *rb,
                                g2f_error *err) {
    *hw = *base;
    rb->buf = NULL;
    int mm = (codes & G2F_DIAG_BIT(G2F_DIAG_F16_MATMUL)) != 0;
    g2f_round r = codes & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_BF16_ROUNDED)  ? G2F_ROUND_BF16
                  : codes & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED) ? G2F_ROUND_F16
                                                                        : G2F_ROUND_NONE;
    g2f_dtype rd = r == G2F_ROUND_BF16 ? G2F_DTYPE_BF16 : G2F_DTYPE_F16;
    if (mm) hw->gemm_in = G2F_ROUND_F16;
    if (r != G2F_ROUND_NONE && c->wdtype == rd) {
        hw->uw = g2f_dtype_store_roundoff(rd);
        return G2F_OK;
    }
    if (r == G2F_ROUND_NONE && (!mm || c->wdtype == G2F_DTYPE_F16)) return G2F_OK;
    g2f_status st = round_block(base->b, r != G2F_ROUND_NONE ? r : G2F_ROUND_F16, rb, err);
    if (st == G2F_OK && r == G2F_ROUND_NONE) { /* ggml's F16 path: the products' weights only */
        free(rb->buf);
        st = g2f_block_round(base->b, G2F_ROUND_F16, 1, &rb->b, &rb->buf, err);
    }
    if (st == G2F_OK) hw->b = &rb->b, hw->mlp = &rb->b.mlp.w;
    return st;
}

typedef struct cand {
    how hw;
    g2f_cause cause;
} cand;

static void add_cause(g2f_stage_result *r, const g2f_cause *c) { g2f_stage_result_add(r, c, G2F_STAGE_MAX_CAUSES); }

/* The attention stage's margin with the scores multiplied by scale (inf
 * when not finite): the objective of the scale fit. */
static g2f_status scale_margin(ctx *c, const how *base, double scale, double *margin, g2f_error *err) {
    how hw = *base;
    hw.attn.scale = scale;
    acc A;
    g2f_status e = run_stage(c, G2F_STAGE_ATTN, &hw, &A, err);
    *margin = e == G2F_OK && A.margin == A.margin ? A.margin : INFINITY;
    return e;
}

/* A constant multiplier of the scores other than GPT-2's 1/sqrt(d_head):
 * the attention stage's margin over a log grid of factors (2^-12 .. 2^6 of
 * GPT-2's, in half octaves), refined by golden section around the best,
 * then the fitted scale is a cause only when its recomputation matches
 * within the derived tolerance, as any hypothesis. */
static g2f_status fit_attn_scale(ctx *c, const how *base, g2f_stage_result *r, g2f_error *err) {
    double s0 = 1.0 / sqrt((double)(c->d / c->H)), best = s0, bm = INFINITY, m;
    g2f_status e = G2F_OK;
    for (int k = -24; k <= 12 && e == G2F_OK; k++) {
        double s = s0 * pow(2.0, k / 2.0);
        if ((e = scale_margin(c, base, s, &m, err)) == G2F_OK && m < bm) bm = m, best = s;
        r->hypotheses_tried++;
    }
    const double phi = (sqrt(5.0) - 1) / 2;
    double lo = log(best) - 0.5 * log(2.0), hi = log(best) + 0.5 * log(2.0);
    double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo), m1 = INFINITY, m2 = INFINITY;
    if (e == G2F_OK) e = scale_margin(c, base, exp(x1), &m1, err);
    if (e == G2F_OK) e = scale_margin(c, base, exp(x2), &m2, err);
    for (int it = 0; it < 30 && e == G2F_OK; it++) { /* golden section on log(scale) */
        if (m1 < m2) {
            hi = x2, x2 = x1, m2 = m1, x1 = hi - phi * (hi - lo);
            e = scale_margin(c, base, exp(x1), &m1, err);
        } else {
            lo = x1, x1 = x2, m1 = m2, x2 = lo + phi * (hi - lo);
            e = scale_margin(c, base, exp(x2), &m2, err);
        }
        r->hypotheses_tried++;
    }
    double fit = m1 < m2 ? exp(x1) : exp(x2), fm = m1 < m2 ? m1 : m2;
    if (e != G2F_OK || !(fm <= 1) || fabs(fit / s0 - 1) < 1e-3) return e; /* no fit, or GPT-2's own */
    g2f_cause bc;
    memset(&bc, 0, sizeof bc);
    bc.from_layer = -1;
    bc.codes = G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE);
    bc.scale = fit;
    bc.margin = fm;
    add_cause(r, &bc);
    return e;
}

/* A hypothesis of the block's stages, one table entry each: the stages it
 * acts on (bits of g2f_stage), its code, its variants (a grid's size), and
 * how variant v recomputes: apply sets hw (a copy of the plain computation)
 * and the cause's parameters, and returns 0 when v does not apply here. */
typedef struct block_hyp {
    unsigned stages;
    g2f_diag code;
    int variants;
    int (*apply)(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *cause);
} block_hyp;
#define SB(s) (1u << (s))
#define LN12 (SB(G2F_STAGE_LN1) | SB(G2F_STAGE_LN2))

static int ln_eps(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c;
    int one = st == G2F_STAGE_LN1;
    double *eps = one ? &hw->eps1 : &hw->eps2, e = g2f_ln_eps_grid[v];
    if (fabs(e - *eps) <= 1e-3 * *eps) return 0; /* the model's own */
    k->eps = *eps = e;
    k->which = one ? 1 : 2;
    return 1;
}
static int ln_no_bias(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v;
    k->which = st == G2F_STAGE_LN1 ? 1 : 2;
    *(k->which == 1 ? &hw->no_b1 : &hw->no_b2) = 1;
    return 1;
}
static int ln_no_weight(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v;
    k->which = st == G2F_STAGE_LN1 ? 1 : 2;
    *(k->which == 1 ? &hw->no_w1 : &hw->no_w2) = 1;
    return 1;
}
static int no_mask(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v, (void)st, (void)k;
    hw->attn.causal = 0;
    return 1;
}
static int no_scale(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v, (void)st, (void)k;
    hw->attn.scale = 1.0;
    return 1;
}
static int scale_layer_idx(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)v, (void)st;
    /* the factor kept: where the other layers contradict HF's story, this layer's constant (g2f_verify.c) */
    k->scale = hw->attn.scale = 1.0 / (sqrt((double)(c->d / c->H)) * (double)(c->L + 1));
    return 1;
}
/* the constants ports use instead of 1/sqrt(d_head): llm.c-style 1/sqrt(n_embd), muP's 1/d_head */
static int scale_constant(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)st;
    k->scale = hw->attn.scale = v == 0 ? 1.0 / sqrt((double)c->d) : 1.0 / (double)(c->d / c->H);
    k->scale_name = v + 1;
    return 1;
}
static int qkv_order(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)st;
    memcpy(hw->attn.qkv_order, g2f_qkv_perms[v], sizeof g2f_qkv_perms[v]);
    memcpy(k->qkv_perm, g2f_qkv_perms[v], sizeof g2f_qkv_perms[v]);
    return 1;
}
static int heads_interleaved(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v, (void)st, (void)k;
    hw->attn.heads_interleaved = 1;
    return 1;
}
static int attn_no_bias(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)st;
    k->which = v + 1;
    *(v == 0 ? &hw->no_attn_b : &hw->no_proj_b) = 1;
    return v == 0 ? hw->b->attn_b != NULL : hw->b->aproj_b != NULL;
}
static int attn_misread(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)st;
    hw->misread = k->which = v + 1;
    return 1;
}
static int no_residual(const ctx *c, int v, g2f_stage st, how *hw, g2f_cause *k) {
    (void)c, (void)v;
    k->which = st == G2F_STAGE_MID ? 1 : 2;
    *(k->which == 1 ? &hw->no_res_mid : &hw->no_res_out) = 1;
    return 1;
}

static const block_hyp block_hyps[] = {
    {LN12, G2F_DIAG_LN_EPS, G2F_LN_EPS_GRID_N, ln_eps},
    {LN12, G2F_DIAG_LN_BIAS_MISSING, 1, ln_no_bias},
    {LN12, G2F_DIAG_LN_WEIGHT_MISSING, 1, ln_no_weight},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_ATTN_MASK_MISSING, 1, no_mask},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_ATTN_SCALE_MISSING, 1, no_scale},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_ATTN_SCALE_LAYER_IDX, 1, scale_layer_idx},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_ATTN_SCALE, 2, scale_constant},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_QKV_ORDER, G2F_QKV_PERMS_N, qkv_order},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_HEADS_INTERLEAVED, 1, heads_interleaved},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_ATTN_BIAS_MISSING, 2, attn_no_bias},
    {SB(G2F_STAGE_ATTN), G2F_DIAG_LAYOUT_MISREAD, 2, attn_misread},
    {SB(G2F_STAGE_MID) | SB(G2F_STAGE_OUT), G2F_DIAG_RESIDUAL_MISSING, 1, no_residual},
};


/* Recomputes stage st under hw; a match becomes cause k (its margin set). A precision (rounded
 * weights, ggml's F16 matmul) matches only without a trend: its tolerance is wide enough to take a
 * gain off by 1%, which rounding noise of either sign does not make (g2f_cmp.trend). */
static g2f_status try_how(ctx *c, g2f_stage st, const how *hw, g2f_cause k, g2f_stage_result *r, g2f_error *err) {
    acc A;
    r->hypotheses_tried++;
    g2f_status e = run_stage(c, st, hw, &A, err);
    if (e == G2F_OK && (k.codes & G2F_ACCEPT_PRECISION) && A.trend > c->lambda) return e;
    if (e == G2F_OK && A.mismatched == 0) {
        k.margin = A.margin;
        add_cause(r, &k);
    }
    return e;
}

/* The table's hypotheses for stage st. */
static g2f_status try_table(ctx *c, g2f_stage st, const how *base, g2f_stage_result *r, g2f_error *err) {
    g2f_status e = G2F_OK;
    for (size_t i = 0; i < sizeof block_hyps / sizeof block_hyps[0] && e == G2F_OK; i++) {
        const block_hyp *y = &block_hyps[i];
        if (!(y->stages & SB(st))) continue;
        for (int v = 0; v < y->variants && e == G2F_OK; v++) {
            how hw = *base;
            g2f_cause k = g2f_cause_of(G2F_DIAG_BIT(y->code), st);
            if (y->apply(c, v, st, &hw, &k)) e = try_how(c, st, &hw, k, r, err);
        }
    }
    return e;
}

/* The stage's weights rounded (the checkpoint the rounded side: known to
 * within their rounding), and ggml's F16 matmul for attention's products. */
static g2f_status try_precisions(ctx *c, g2f_stage st, const how *base, g2f_stage_result *r, g2f_error *err) {
    static const g2f_diag prec[3] = {G2F_DIAG_WEIGHTS_F16_ROUNDED, G2F_DIAG_WEIGHTS_BF16_ROUNDED, G2F_DIAG_F16_MATMUL};
    g2f_status e = G2F_OK;
    for (int k = 0; k < (st == G2F_STAGE_ATTN ? 3 : 2) && e == G2F_OK; k++) {
        rounded rb = {0};
        how hw;
        if ((e = precision_how(c, base, G2F_DIAG_BIT(prec[k]), &hw, &rb, err)) == G2F_OK)
            e = try_how(c, st, &hw, g2f_cause_of(G2F_DIAG_BIT(prec[k]), st), r, err);
        free(rb.buf);
    }
    return e;
}

/* Another layer's weights at stage st: one g2f_search_other_layers walk. */
typedef struct layer_try {
    ctx *c;
    g2f_stage st;
    const how *base;
    const g2f_model *m;
    g2f_stage_result *r;
} layer_try;

static g2f_status try_layer(void *u, size_t K, int *stop, g2f_error *err) {
    layer_try *t = u;
    g2f_block other;
    g2f_status e = g2f_model_block_load(t->m, K, t->c->H, &other, err);
    if (e != G2F_OK) return e;
    if (t->st != G2F_STAGE_ATTN || other.has_attn) {
        how hw = *t->base;
        hw.b = &other;
        g2f_cause k = g2f_cause_of(G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_FROM_LAYER), t->st);
        k.from_layer = (long)K;
        e = try_how(t->c, t->st, &hw, k, t->r, err);
    }
    g2f_block_free(&other);
    *stop = t->r->n_causes > 0;
    return e;
}

/* The hypotheses of stage st, in order: the table's; then, when none
 * explains it, a fitted attention scale, the weights' precision and
 * another layer's weights. */
static g2f_status diagnose_stage(ctx *c, g2f_stage st, const how *base, const g2f_model *m, g2f_stage_result *r,
                                 g2f_error *err) {
    if (r->worst.nonfinite) { /* NaN or Inf: named, as the FFN's; no bug makes one */
        r->causes[r->n_causes++] = (g2f_cause){.codes = G2F_DIAG_BIT(G2F_DIAG_NONFINITE), .stage = st, .margin = INFINITY};
        return G2F_OK;
    }
    g2f_status e = try_table(c, st, base, r, err);
    /* any other constant scale: fitted, then checked like every hypothesis */
    if (e == G2F_OK && !r->n_causes && st == G2F_STAGE_ATTN) e = fit_attn_scale(c, base, r, err);
    if (e != G2F_OK || r->n_causes || !(st == G2F_STAGE_LN1 || st == G2F_STAGE_LN2 || st == G2F_STAGE_ATTN)) return e;
    if ((e = try_precisions(c, st, base, r, err)) != G2F_OK || r->n_causes) return e;
    layer_try t = {c, st, base, m, r};
    return g2f_search_other_layers(g2f_model_get_info(m)->n_layer, c->L, try_layer, &t, err);
}

/* ---- the chained pass -------------------------------------------------- */

/* One sequence through the block from s->x, s->vx (filled by the caller),
 * comparing every stage c->f records for layer c->L (none when c->f is
 * NULL); the output is left in s->out, s->vout. */
static g2f_status chain_seq(ctx *c, const how *hw, const g2f_ffn_weights *mlp, size_t sq, acc *A) {
    seq *s = &c->s;
    size_t T = c->T, d = c->d;
    const g2f_fixture *f = c->f;
    g2f_fixture_views fv;
    memset(&fv, 0, sizeof fv);
    for (int i = 0; f && i < 4; i++) fv.t[g2f_ffn_act(i)] = g2f_fixture_act(f, c->L, g2f_ffn_act(i));
    int have_ffn = f != NULL;
    const g2f_tensor *t;
    ln_stage(s->x, s->vx, T, d, &hw->b->ln_1, hw->eps1, 0, 0, hw->uw, s->a, s->va, s->rstd, hw->n_threads);
    if ((t = stage_t(c, G2F_ACT_LN1))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(&A[G2F_STAGE_LN1], "ln_1.out", s->e1, s->a, s->va, T * d, t->dtype, c->lambda, s->tmp);
    }
    probs_cmp pc = probs_cmp_for(c, sq);
    g2f_status e = attn_stage(hw, s, s->a, s->va, &c->aws, &c->ews.ffn, s->va ? &pc : NULL, c->err);
    if (e != G2F_OK) return e;
    if (c->f) compare_attn(c, &A[G2F_STAGE_ATTN], sq);
    probs_take(&A[G2F_STAGE_ATTN], &pc);
    add_stage(s->x, s->vx, s->ao, s->vao, T * d, 0, s->mid, s->vmid);
    if ((t = stage_t(c, G2F_ACT_MID))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(&A[G2F_STAGE_MID], "mid", s->e1, s->mid, s->vmid, T * d, t->dtype, c->lambda, s->tmp);
    }
    ln_stage(s->mid, s->vmid, T, d, &hw->b->ln_2, hw->eps2, 0, 0, hw->uw, s->l2, s->vl2, s->rstd, hw->n_threads);
    if (f && (t = g2f_fixture_input(f, c->L))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(&A[G2F_STAGE_LN2], "ln_2.out", s->e1, s->l2, s->vl2, T * d, t->dtype, c->lambda, s->tmp);
    }
    if (hw->mlp) mlp = hw->mlp; /* rounded weights (a port's precision) */
    g2f_ffn_how fh = {.w = mlp, .gelu = c->p->gelu, .weight_roundoff = hw->uw,
                      .gemm_in = s->vl2 ? hw->gemm_in : G2F_ROUND_NONE};
    g2f_ffn_rows fr = {s->pre, s->act, s->mo, s->vpre, s->vact, s->vmo};
    if ((e = g2f_ffn_eval_rows(&fh, s->l2, s->vl2, T, c->lambda, c->L, hw->n_threads, &c->ews, &fr, c->err)) != G2F_OK)
        return e;
    size_t h = mlp->n_inner;
    if (have_ffn && fv.t[G2F_ACT_MLP_PRE]) {
        read_seq(fv.t[G2F_ACT_MLP_PRE], sq, T, h, NULL, s->e1);
        compare(&A[G2F_STAGE_MLP], "mlp.pre", s->e1, s->pre, s->vpre, T * h, fv.t[G2F_ACT_MLP_PRE]->dtype, c->lambda,
                s->th);
    }
    if (have_ffn && fv.t[G2F_ACT_MLP_ACT]) {
        read_seq(fv.t[G2F_ACT_MLP_ACT], sq, T, h, NULL, s->e1);
        compare(&A[G2F_STAGE_MLP], "mlp.act", s->e1, s->act, s->vact, T * h, fv.t[G2F_ACT_MLP_ACT]->dtype, c->lambda,
                s->th);
    }
    if (have_ffn && fv.t[G2F_ACT_MLP_OUT]) {
        read_seq(fv.t[G2F_ACT_MLP_OUT], sq, T, d, NULL, s->e1);
        compare(&A[G2F_STAGE_MLP], "mlp.out", s->e1, s->mo, s->vmo, T * d, fv.t[G2F_ACT_MLP_OUT]->dtype, c->lambda,
                s->tmp);
    }
    add_stage(s->mid, s->vmid, s->mo, s->vmo, T * d, 0, s->out, s->vout);
    if ((t = stage_t(c, G2F_ACT_OUT))) {
        read_seq(t, sq, T, d, NULL, s->e1);
        compare(&A[G2F_STAGE_OUT], "out", s->e1, s->out, s->vout, T * d, t->dtype, c->lambda, s->tmp);
    }
    return G2F_OK;
}

/* The first stage of A that does not match, into the result's fields. */
static void first_divergence(const acc *A, int *diverged, g2f_stage *stage, const char **tensor, double *margin) {
    for (int st = G2F_BLOCK_FIRST; st <= G2F_BLOCK_LAST; st++) {
        if (!A[st].any || A[st].mismatched == 0) continue;
        *diverged = 1;
        *stage = (g2f_stage)st;
        *tensor = A[st].worst_tensor;
        *margin = A[st].margin;
        return;
    }
}

static g2f_status chained(ctx *c, const how *hw, const g2f_ffn_weights *mlp, g2f_block_result *out, g2f_error *err) {
    seq *s = &c->s;
    size_t T = c->T, d = c->d;
    const g2f_tensor *tin = stage_t(c, G2F_ACT_IN);
    acc A[G2F_STAGE_COUNT];
    memset(A, 0, sizeof A);
    c->err = err;
    for (size_t sq = 0; sq < c->n_seq; sq++) {
        read_seq(tin, sq, T, d, s->x, NULL);
        g2f_tol_input_var(s->x, T * d, tin->dtype, s->vx);
        g2f_status e = chain_seq(c, hw, mlp, sq, A);
        if (e != G2F_OK) return e;
    }
    for (int st = G2F_BLOCK_FIRST; st <= G2F_BLOCK_LAST; st++) out->chained_compared += (size_t)A[st].any;
    first_divergence(A, &out->diverged, &out->first_stage, &out->first_tensor, &out->first_margin);
    return G2F_OK;
}


/* A failing stage whose cause is made of accepted precision codes alone is
 * judged on that cause's recomputation (--accept: the port's precision). */
static g2f_status accept_stage(ctx *c, g2f_stage st, const how *base, g2f_stage_result *r, g2f_error *err) {
    g2f_diag_set ok = c->p->accept & G2F_ACCEPT_PRECISION;
    for (size_t k = 0; ok && k < r->n_causes; k++) {
        if (r->causes[k].codes & ~ok) continue;
        g2f_diag_set codes = r->causes[k].codes;
        how hw;
        rounded rb = {0};
        acc A;
        g2f_status e = precision_how(c, base, codes, &hw, &rb, err);
        if (e == G2F_OK) e = run_stage(c, st, &hw, &A, err);
        free(rb.buf);
        if (e != G2F_OK) return e;
        size_t n_causes = r->n_causes, tried = r->hypotheses_tried;
        g2f_cause causes[G2F_STAGE_MAX_CAUSES];
        memcpy(causes, r->causes, sizeof causes);
        fill_stage(r, &A);
        memcpy(r->causes, causes, sizeof causes);
        r->n_causes = n_causes, r->hypotheses_tried = tried;
        r->accepted = codes;
        return G2F_OK;
    }
    return G2F_OK;
}

/* A stage that fails even with the accepted precision: diagnosed computed
 * that way, so that the port's other bug is named (the attention mask of an
 * F16 port); kept, marked accepted, when that finds a cause. */
static g2f_status diagnose_accepted(ctx *c, g2f_stage st, const how *base, const g2f_model *m, g2f_stage_result *r,
                                    g2f_error *err) {
    g2f_diag_set ok = c->p->accept & G2F_ACCEPT_PRECISION;
    if (!ok || r->accepted) return G2F_OK;
    how hw;
    rounded rb = {0};
    acc A;
    g2f_stage_result found;
    memset(&found, 0, sizeof found);
    g2f_status e = precision_how(c, base, ok, &hw, &rb, err);
    if (e == G2F_OK) e = run_stage(c, st, &hw, &A, err);
    if (e == G2F_OK && A.mismatched) {
        fill_stage(&found, &A);
        e = diagnose_stage(c, st, &hw, m, &found, err);
    }
    free(rb.buf);
    if (e == G2F_OK && found.n_causes) {
        found.hypotheses_tried += r->hypotheses_tried;
        *r = found;
        r->accepted = ok;
    }
    return e;
}

/* A diverging chained pass computed again with the accepted precisions:
 * when that matches every recorded stage, the chain stands so, accepted. */
static g2f_status accept_chain(ctx *c, const how *base, const g2f_ffn_weights *mlp, g2f_block_result *out,
                               g2f_error *err) {
    g2f_diag_set ok = c->p->accept & G2F_ACCEPT_PRECISION;
    if (!ok) return G2F_OK;
    how hw;
    rounded rb = {0};
    g2f_block_result again = *out;
    again.diverged = 0, again.chained_compared = 0;
    g2f_status e = precision_how(c, base, ok, &hw, &rb, err);
    if (e == G2F_OK) e = chained(c, &hw, mlp, &again, err);
    free(rb.buf);
    if (e == G2F_OK && !again.diverged) {
        *out = again;
        out->chain_accepted = ok;
    }
    return e;
}

g2f_status g2f_block_check(const g2f_model *m, const g2f_fixture *f, size_t layer, const g2f_block_params *p,
                           g2f_block_result *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const g2f_model_info *mi = g2f_model_get_info(m);
    ctx c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.L = layer;
    c.p = p;
    c.d = mi->n_embd;
    c.H = p->n_head ? p->n_head : mi->n_head;
    c.lambda = g2f_tol_lambda(p->tol);
    c.wdtype = mi->dtype;
    g2f_fixture_block_shape(f, layer, &c.n_seq, &c.T);
    if (!c.T) return G2F_OK;
    g2f_block b;
    g2f_status st = g2f_model_block_load(m, layer, c.H, &b, err);
    if (st != G2F_OK) return st;
    void *mem = NULL;
    if ((st = seq_alloc(&c.s, layer, c.T, c.d, c.H ? c.H : 1, mi->n_inner, 0, 0, &mem, err)) != G2F_OK) {
        g2f_block_free(&b);
        return st;
    }
    how base;
    memset(&base, 0, sizeof base);
    base.b = &b;
    base.attn = g2f_attn_opts_gpt2(c.H ? c.d / c.H : 1);
    base.eps1 = b.ln_1.eps;
    base.eps2 = b.ln_2.eps;
    base.n_head = c.H;
    base.n_threads = p->n_threads;
    base.uw = p->weight_roundoff;
    if (attn_recorded(&c) && (!c.H || !b.has_attn)) {
        out->attn_skipped = 1;
        snprintf(out->note, sizeof out->note, "%s",
                 !c.H ? "attention not checked: n_head unknown (config.json n_head, or --n-head N)"
                      : "attention not checked: the checkpoint holds no attention weights");
    }
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST && st == G2F_OK; s++) {
        if (s == G2F_STAGE_MLP || !stage_recorded(&c, (g2f_stage)s)) continue;
        if ((s == G2F_STAGE_ATTN) && out->attn_skipped) continue;
        if ((s == G2F_STAGE_LN1 && !b.ln_1.found) || (s == G2F_STAGE_LN2 && !b.ln_2.found)) continue;
        acc A;
        if ((st = run_stage(&c, (g2f_stage)s, &base, &A, err)) != G2F_OK) break;
        fill_stage(&out->stage[s], &A);
        if (!out->stage[s].pass && p->diagnose)
            st = diagnose_stage(&c, (g2f_stage)s, &base, m, &out->stage[s], err);
        if (st == G2F_OK && !out->stage[s].pass) st = accept_stage(&c, (g2f_stage)s, &base, &out->stage[s], err);
        if (st == G2F_OK && !out->stage[s].pass && p->diagnose)
            st = diagnose_accepted(&c, (g2f_stage)s, &base, m, &out->stage[s], err);
    }
    /* the chain needs attention (every stage after ln_1 follows from it) */
    if (st == G2F_OK && stage_t(&c, G2F_ACT_IN) && b.ln_1.found && b.ln_2.found && c.H && b.has_attn) {
        out->chained = 1;
        st = chained(&c, &base, &b.mlp.w, out, err);
        if (st == G2F_OK && out->diverged) st = accept_chain(&c, &base, &b.mlp.w, out, err);
    }
    free(mem);
    g2f_attn_ws_free(&c.aws);
    g2f_ffn_eval_ws_free(&c.ews);
    g2f_block_free(&b);
    return st;
}

/* ---- the block from values in memory ------------------------------------- */

struct g2f_block_chain {
    ctx c;
    void *mem;
    acc A[G2F_STAGE_COUNT];
    size_t h;
};

g2f_status g2f_block_chain_new(const g2f_model *m, size_t T, const g2f_block_params *p, g2f_block_chain **out,
                               g2f_error *err) {
    *out = NULL;
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t H = p->n_head ? p->n_head : mi->n_head;
    if (!H || mi->n_embd % H)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: n_head %s (config.json n_head, or --n-head N)", mi->path,
                             H ? "does not divide n_embd" : "is unknown");
    g2f_block_chain *c = calloc(1, sizeof *c);
    if (!c) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    c->c.p = p;
    c->c.d = mi->n_embd;
    c->c.H = H;
    c->c.T = T;
    c->c.n_seq = 1;
    c->h = mi->n_inner;
    c->c.lambda = g2f_tol_lambda(p->tol);
    g2f_status st = seq_alloc(&c->c.s, 0, T, c->c.d, H, mi->n_inner, p->values_only, p->no_probs, &c->mem,
                              err);
    if (st != G2F_OK) {
        free(c);
        return st;
    }
    *out = c;
    return G2F_OK;
}

void g2f_block_chain_free(g2f_block_chain *c) {
    if (!c) return;
    free(c->mem);
    g2f_attn_ws_free(&c->c.aws);
    g2f_ffn_eval_ws_free(&c->c.ews);
    free(c);
}

/* A bug of every block (g2f_block_bug) applied to layer L's how. */
static void chain_bug(const g2f_block_bug *bug, size_t L, how *hw) {
    if (bug->scale > 0) hw->attn.scale = bug->scale;
    if (bug->scale_layer_idx) hw->attn.scale /= (double)(L + 1);
    if (bug->qkv) memcpy(hw->attn.qkv_order, bug->qkv_perm, sizeof bug->qkv_perm);
    hw->attn.heads_interleaved |= bug->heads_interleaved;
    if (bug->ln_eps > 0) hw->eps1 = hw->eps2 = bug->ln_eps;
}

g2f_status g2f_block_chain_step(g2f_block_chain *c, const g2f_block *b, size_t L, const g2f_fixture *f, size_t sq,
                                float *x, float *vx, g2f_error *err) {
    ctx *cx = &c->c;
    if (!b->has_attn)
        return g2f_error_set(err, G2F_ERR_FORMAT, "layer %zu: the checkpoint holds no attention weights", L);
    int values_only = cx->p->values_only;
    if (values_only != !vx || (values_only && f))
        return g2f_error_set(err, G2F_ERR_USAGE, "g2f_block_chain_step: %s", values_only
                             ? "a values_only chain takes no variances and no fixture" : "the variances are NULL");
    size_t n = cx->T * cx->d;
    cx->f = f;
    cx->L = L;
    cx->err = err;
    how hw;
    memset(&hw, 0, sizeof hw);
    hw.b = b;
    hw.attn = g2f_attn_opts_gpt2(cx->d / cx->H);
    hw.eps1 = b->ln_1.eps;
    hw.eps2 = b->ln_2.eps;
    hw.n_head = cx->H;
    hw.n_threads = cx->p->n_threads;
    hw.uw = cx->p->weight_roundoff; /* the port's precision, as the block check takes it */
    hw.gemm_in = cx->p->gemm_in;
    if (cx->p->bug) chain_bug(cx->p->bug, L, &hw);
    memcpy(cx->s.x, x, n * sizeof *x);
    if (vx) memcpy(cx->s.vx, vx, n * sizeof *vx);
    g2f_status st = chain_seq(cx, &hw, &b->mlp.w, sq, c->A);
    if (st != G2F_OK) return st;
    memcpy(x, cx->s.out, n * sizeof *x);
    if (vx) memcpy(vx, cx->s.vout, n * sizeof *vx);
    return G2F_OK;
}

void g2f_block_chain_layer_end(g2f_block_chain *c, g2f_chain_verdict *out) {
    memset(out, 0, sizeof *out);
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++)
        if (c->A[s].any) fill_stage(&out->stage[s], &c->A[s]);
    first_divergence(c->A, &out->diverged, &out->first_stage, &out->first_tensor, &out->first_margin);
    memset(c->A, 0, sizeof c->A);
}

const float *g2f_block_chain_values(const g2f_block_chain *c, g2f_act kind, size_t *width) {
    const seq *s = &c->c.s;
    size_t d = c->c.d;
    *width = d;
    switch (kind) {
    case G2F_ACT_MLP_IN: return s->l2;
    case G2F_ACT_MLP_OUT: return s->mo;
    case G2F_ACT_MLP_PRE: return *width = c->h, s->pre;
    case G2F_ACT_MLP_ACT: return *width = c->h, s->act;
    case G2F_ACT_IN: return s->x;
    case G2F_ACT_LN1: return s->a;
    case G2F_ACT_QKV: return *width = 3 * d, s->qkv;
    case G2F_ACT_PROBS: return *width = c->c.T, s->probs;
    case G2F_ACT_MERGED:
    case G2F_ACT_Z: return s->merged;
    case G2F_ACT_ATTN_OUT: return s->ao;
    case G2F_ACT_MID: return s->mid;
    case G2F_ACT_OUT: return s->out;
    default: return NULL;
    }
}

void g2f_block_ln_var(const float *x, const float *vx, size_t T, size_t d, const g2f_ln *ln, double eps, int no_w,
                      int no_b, float *y, float *vy, double *rstd, int n_threads) {
    ln_stage(x, vx, T, d, ln, eps, no_w, no_b, 0.0, y, vy, rstd, n_threads);
}

void g2f_block_gemm_var(const float *a, const float *va, size_t m, size_t k, const float *B, int b_trans, size_t n,
                        const float *bias, double uw, g2f_round rin, float *c, float *vc, float *a2, float *ar,
                        int n_threads, g2f_ffn_ws *ws) {
    gemm_var(a, va, m, k, B, b_trans, n, bias, uw, rin, c, vc, a2, ar, n_threads, ws);
}
