/* Attention kernels: a worked example; the fast kernel against the double
 * reference within a bound derived below, bitwise the same for 1 and 2
 * threads; every option (mask off, scale, qkv order, interleaved heads)
 * against this file's own straightforward attention and against the
 * default path on permuted inputs; probabilities; causality; sizes and
 * arguments refused; workspace reuse and sequences. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_attn.h"
#include "test_util.h"

#define U 0x1p-24 /* float's unit roundoff */

static float *rand_qkv(size_t T, size_t d, uint64_t seed) {
    float *x = malloc(T * 3 * d * sizeof(float));
    for (size_t t = 0; t < T; t++)
        for (size_t c = 0; c < 3 * d; c++) /* q and k of amplitude 2: scores spread over a few units */
            x[t * 3 * d + c] = rnd_unit(&seed) * (c < 2 * d ? 2.0f : 1.0f);
    return x;
}

/* ---- this file's own attention: long double, straight from the
 * definition (a qkv row is [3][d]; a d-vector is [n_head][d_head], or
 * [d_head][n_head] interleaved; masked scores are -inf). */
static long double feature(const float *qkv, size_t d, size_t H, const g2f_attn_opts *o, size_t t, int role,
                           size_t h, size_t c) {
    size_t dh = d / H;
    const float *part = qkv + t * 3 * d + (size_t)o->qkv_order[role] * d;
    return o->heads_interleaved ? part[c * H + h] : part[h * dh + c];
}

static void naive_attn(const float *qkv, size_t T, size_t d, size_t H, const g2f_attn_opts *o, float *z, float *p) {
    size_t dh = d / H;
    long double *s = malloc(T * sizeof(long double));
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++) {
            long double m = -INFINITY, sum = 0;
            for (size_t j = 0; j < T; j++) {
                long double dot = 0;
                for (size_t c = 0; c < dh; c++) dot += feature(qkv, d, H, o, i, 0, h, c) * feature(qkv, d, H, o, j, 1, h, c);
                s[j] = o->causal && j > i ? -INFINITY : dot * o->scale;
                if (s[j] > m) m = s[j];
            }
            for (size_t j = 0; j < T; j++) sum += s[j] = expl(s[j] - m); /* exp(-inf) = 0 */
            for (size_t j = 0; j < T; j++) p[(h * T + i) * T + j] = (float)(s[j] / sum);
            for (size_t c = 0; c < dh; c++) {
                long double acc = 0;
                for (size_t j = 0; j < T; j++) acc += s[j] / sum * feature(qkv, d, H, o, j, 2, h, c);
                z[i * d + (o->heads_interleaved ? c * H + h : h * dh + c)] = (float)acc;
            }
        }
    free(s);
}

/* ---- the bound.
 * The fast kernel against exact arithmetic, per query i of head h, over
 * the len keys it sees:
 *  - score s_ij: a float dot product of d_head terms (FMA, any order) then
 *    times scale, rounded once: |err| <= eps_ij = |scale| gamma(d_head)
 *    A_ij + u |s_ij|, with A_ij = sum_c |q_ic k_jc|, gamma(n) = n u/(1-n u);
 *  - the exponent x_ij = float(s_ij - m), m the row max (any common shift
 *    cancels in the normalization): rounding adds u |s_ij - m|; exp in
 *    double rounded to float adds a relative u (and 7e-12 of the
 *    polynomial, 1e-4 u): so p_ij is proportional to exp(s_ij + eta_ij) with
 *    |eta_ij| <= eps_ij + u |s_ij - m| + 1.01 u;
 *  - normalizing with the perturbed exponents moves p_ij by a factor within
 *    exp(+-2 max_j |eta_ij|); the double sum and the multiplication by its
 *    inverse add (len + 2) 2^-52, the final rounding u:
 *      |p~ - p| <= rho_i p,  rho_i = exp(2 eta_i) - 1 + u + (len + 2) 2^-52;
 *  - z = sum_j p~_j v_j in float over the len nonzero terms (the masked ones
 *    are exact zeros, which add nothing), plus one rounding per 256-deep
 *    block of the GEMM (and at most 8 lanes combined on the one-row path):
 *      |z~ - z| <= (gamma(L)(1 + rho_i) + rho_i) W_ic,
 *    L = len + len/256 + 10, W_ic = sum_j p_j |v_jc| (the size of the sum,
 *    which z itself may cancel to nothing).
 * The expected values are the double reference's (or the long double
 * attention's) rounded to float: another u |z| and u p, and 2^-40 of their
 * own double error. Subnormal probabilities get 2^-148 absolute. */
typedef struct bound_stats {
    double p_rel, z_rel; /* max |p~ - p| / p, max |z~ - z| / W */
    double ratio;        /* max error / bound over p and z: must be <= 1 */
} bound_stats;

static double gamma_n(double n) { return n * U / (1 - n * U); }

static void check_within_bound(const float *qkv, size_t T, size_t d, size_t H, const g2f_attn_opts *o,
                               const float *z, const float *p, const float *z_want, const float *p_want,
                               bound_stats *st) {
    size_t dh = d / H;
    double *s = malloc(T * sizeof(double)), *eps = malloc(T * sizeof(double));
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T; i++) {
            size_t len = o->causal ? i + 1 : T;
            double m = -INFINITY, eta = 0;
            for (size_t j = 0; j < len; j++) {
                double dot = 0, a = 0;
                for (size_t c = 0; c < dh; c++) {
                    double t = (double)feature(qkv, d, H, o, i, 0, h, c) * (double)feature(qkv, d, H, o, j, 1, h, c);
                    dot += t;
                    a += fabs(t);
                }
                s[j] = dot * o->scale;
                eps[j] = fabs(o->scale) * gamma_n((double)dh) * a + U * fabs(s[j]);
                m = fmax(m, s[j]);
            }
            double eps_max = 0;
            for (size_t j = 0; j < len; j++) eps_max = fmax(eps_max, eps[j]);
            for (size_t j = 0; j < len; j++)
                eta = fmax(eta, eps[j] + U * (fabs(s[j] - m) + eps[j] + eps_max) + 1.01 * U);
            double rho = expm1(2 * eta) + U + (len + 2) * 0x1p-52;
            const float *pr = p + (h * T + i) * T, *pw = p_want + (h * T + i) * T;
            for (size_t j = 0; j < len; j++) {
                double err = fabs((double)pr[j] - pw[j]);
                double bound = (rho + U + 0x1p-40) * (1 + 2 * U) * pw[j] + 0x1p-148;
                st->p_rel = fmax(st->p_rel, err / (pw[j] + DBL_MIN));
                st->ratio = fmax(st->ratio, err / bound);
            }
            for (size_t j = len; j < T; j++) st->ratio = fmax(st->ratio, pr[j] != 0.0f ? INFINITY : 0);
            double L = (double)len + (double)(len / 256) + 10;
            for (size_t c = 0; c < dh; c++) {
                double w = 0;
                for (size_t j = 0; j < len; j++) w += pw[j] * fabs((double)feature(qkv, d, H, o, j, 2, h, c));
                w *= 1 + 2 * U;
                size_t at = i * d + (o->heads_interleaved ? c * H + h : h * dh + c);
                double err = fabs((double)z[at] - z_want[at]);
                double bound = (gamma_n(L) * (1 + rho) + rho + 0x1p-40) * w + U * fabs(z_want[at]) + 0x1p-148;
                st->z_rel = fmax(st->z_rel, err / (w + DBL_MIN));
                st->ratio = fmax(st->ratio, err / bound);
            }
        }
    free(s);
    free(eps);
}

/* T 2, d 2, one head, scale 1/sqrt(2):
 *   q0 = (1, 0) k0 = (1, 0) v0 = (1, 2)
 *   q1 = (0, 1) k1 = (1, 1) v1 = (3, -1)
 * causal row 0 sees key 0 only: p = (1, 0), z0 = v0. Row 1: scores (0,
 * 1/sqrt 2); e^0.7071068 = 2.0281150, p = (1, 2.0281150) / 3.0281150 =
 * (0.3302385, 0.6697615), z1 = (0.3302385 + 3 * 0.6697615, 2 * 0.3302385
 * - 0.6697615) = (2.3395231, -0.0092846). Without the mask row 0 has equal
 * scores (1, 1): p = (0.5, 0.5), z0 = (2, 0.5). */
static void attn_should_reproduce_worked_example(void) {
    const float qkv[12] = {1, 0, 1, 0, 1, 2, 0, 1, 1, 1, 3, -1};
    float z[4], p[4];
    for (int ref = 0; ref < 2; ref++) {
        g2f_attn_opts o = g2f_attn_opts_gpt2(2);
        CHECK_NEAR(o.scale, 0.70710678, 1e-8);
        CHECK((ref ? g2f_attn_forward_ref(qkv, 2, 2, 1, &o, z, p, NULL)
                   : g2f_attn_forward(qkv, 2, 2, 1, NULL, z, p, 1, NULL, NULL)) == G2F_OK);
        CHECK(z[0] == 1 && z[1] == 2 && p[0] == 1 && p[1] == 0);
        CHECK_NEAR(p[2], 0.3302385, 1e-7);
        CHECK_NEAR(p[3], 0.6697615, 1e-7);
        CHECK_NEAR(z[2], 2.3395231, 5e-7); /* two float roundings of terms summing to 2.34, two ulps */
        CHECK_NEAR(z[3], -0.0092846, 5e-7);
        o.causal = 0;
        CHECK((ref ? g2f_attn_forward_ref(qkv, 2, 2, 1, &o, z, p, NULL)
                   : g2f_attn_forward(qkv, 2, 2, 1, &o, z, p, 1, NULL, NULL)) == G2F_OK);
        CHECK(p[0] == 0.5f && p[1] == 0.5f && z[0] == 2 && z[1] == 0.5f);
    }
}

typedef struct shape {
    size_t T, d, H;
} shape;

/* T off the 96-query blocks (130, 97, 200; 193 leaves a one-row block, the
 * GEMM's matrix-vector path), T = 1, d_head 64 (GPT-2's, with 12 and 25
 * heads), odd d_head (25, 33), d off 8 and 16 (50, 99), d_head 300 (deeper
 * than one 256-deep block of the GEMM). */
static const shape shapes[] = {{1, 8, 1},   {5, 12, 3},     {37, 64, 1},   {130, 768, 12}, {97, 50, 2},
                               {200, 99, 3}, {20, 1600, 25}, {193, 128, 2}, {30, 300, 1}};

static void attn_should_agree_with_reference_and_be_thread_count_independent(void) {
    bound_stats st = {0};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t T = shapes[si].T, d = shapes[si].d, H = shapes[si].H;
        float *qkv = rand_qkv(T, d, 3 + si);
        float *z1 = malloc(T * d * sizeof(float)), *z2 = malloc(T * d * sizeof(float)),
              *zr = malloc(T * d * sizeof(float));
        float *p1 = malloc(H * T * T * sizeof(float)), *p2 = malloc(H * T * T * sizeof(float)),
              *pr = malloc(H * T * T * sizeof(float));
        for (int causal = 1; causal >= 0; causal--) {
            g2f_attn_opts o = g2f_attn_opts_gpt2(d / H);
            o.causal = causal;
            CHECK(g2f_attn_forward(qkv, T, d, H, &o, z1, p1, 1, NULL, NULL) == G2F_OK);
            CHECK(g2f_attn_forward(qkv, T, d, H, &o, z2, p2, 2, NULL, NULL) == G2F_OK);
            CHECK(memcmp(z1, z2, T * d * sizeof(float)) == 0);
            CHECK(memcmp(p1, p2, H * T * T * sizeof(float)) == 0);
            CHECK(g2f_attn_forward_ref(qkv, T, d, H, &o, zr, pr, NULL) == G2F_OK);
            check_within_bound(qkv, T, d, H, &o, z1, p1, zr, pr, &st);
        }
        free(qkv); free(z1); free(z2); free(zr); free(p1); free(p2); free(pr);
    }
    fprintf(stderr, "  fast vs reference: probs within %.3g relative, merged within %.3g of sum p|v|; %.3f of the bound\n",
            st.p_rel, st.z_rel, st.ratio);
    CHECK(st.ratio <= 1.0);
}

/* Each option against this file's long double attention (fast and
 * reference), with the bound above; and the reference against it within
 * the rounding of both to float. */
static void attn_options_should_match_a_straightforward_implementation(void) {
    const size_t T = 41, d = 24, H = 4; /* d_head 6 */
    const int orders[6][3] = {{0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
    float *qkv = rand_qkv(T, d, 77);
    float *z = malloc(T * d * sizeof(float)), *zn = malloc(T * d * sizeof(float)), *zr = malloc(T * d * sizeof(float));
    float *p = malloc(H * T * T * sizeof(float)), *pn = malloc(H * T * T * sizeof(float)),
          *pr = malloc(H * T * T * sizeof(float));
    bound_stats st = {0}, st_ref = {0};
    for (int variant = 0; variant < 12; variant++) {
        g2f_attn_opts o = g2f_attn_opts_gpt2(d / H);
        if (variant < 6) memcpy(o.qkv_order, orders[variant], sizeof o.qkv_order);
        if (variant == 6) o.causal = 0;
        if (variant == 7) o.scale = 1.0;                          /* scale missing */
        if (variant == 8) o.scale = 1.0 / (sqrt(d / H) * (5 + 1)); /* HF scale_attn_by_inverse_layer_idx, layer 5 */
        if (variant == 9) o.heads_interleaved = 1;
        if (variant >= 10) { /* several at once */
            o.heads_interleaved = 1, o.causal = 0, memcpy(o.qkv_order, orders[variant - 6], sizeof o.qkv_order);
            o.scale = variant == 10 ? 0.3 : 1.0;
        }
        naive_attn(qkv, T, d, H, &o, zn, pn);
        CHECK(g2f_attn_forward(qkv, T, d, H, &o, z, p, 2, NULL, NULL) == G2F_OK);
        CHECK(g2f_attn_forward_ref(qkv, T, d, H, &o, zr, pr, NULL) == G2F_OK);
        check_within_bound(qkv, T, d, H, &o, z, p, zn, pn, &st);
        for (size_t i = 0; i < T * d; i++) { /* double vs long double, each rounded once to float */
            float ulp = nextafterf(fabsf(zn[i]), INFINITY) - fabsf(zn[i]);
            st_ref.z_rel = fmax(st_ref.z_rel, fabs((double)zr[i] - zn[i]) / ulp);
        }
        for (size_t i = 0; i < H * T * T; i++) {
            float ulp = nextafterf(fabsf(pn[i]), INFINITY) - fabsf(pn[i]);
            st_ref.p_rel = fmax(st_ref.p_rel, fabs((double)pr[i] - pn[i]) / ulp);
        }
    }
    fprintf(stderr, "  options: fast within %.3f of the bound; reference within %.2f ulp (merged), %.2f ulp (probs)\n",
            st.ratio, st_ref.z_rel, st_ref.p_rel);
    CHECK(st.ratio <= 1.0);
    CHECK(st_ref.z_rel <= 1.0 && st_ref.p_rel <= 1.0);
    free(qkv); free(z); free(zn); free(zr); free(p); free(pn); free(pr);
}

/* The layout options are data movement only: a qkv order is the default
 * path on qkv with its thirds moved, interleaved heads the default path
 * on features permuted within each third and merged permuted back; the
 * same bits, for the fast kernel and the reference. */
static void attn_layout_options_should_equal_permuted_inputs(void) {
    const size_t T = 100, d = 60, H = 5, dh = 12;
    float *qkv = rand_qkv(T, d, 5), *moved = malloc(T * 3 * d * sizeof(float));
    float *z = malloc(T * d * sizeof(float)), *zd = malloc(T * d * sizeof(float));
    float *p = malloc(H * T * T * sizeof(float)), *pd = malloc(H * T * T * sizeof(float));
    const int orders[3][3] = {{1, 0, 2}, {2, 0, 1}, {0, 2, 1}};
    for (int ref = 0; ref < 2; ref++) {
        for (int k = 0; k < 3; k++) {
            g2f_attn_opts o = g2f_attn_opts_gpt2(dh);
            memcpy(o.qkv_order, orders[k], sizeof o.qkv_order);
            for (size_t t = 0; t < T; t++)
                for (int r = 0; r < 3; r++) /* the third read as role r goes to place r */
                    memcpy(moved + t * 3 * d + r * d, qkv + t * 3 * d + orders[k][r] * d, d * sizeof(float));
            CHECK((ref ? g2f_attn_forward_ref(qkv, T, d, H, &o, z, p, NULL)
                       : g2f_attn_forward(qkv, T, d, H, &o, z, p, 2, NULL, NULL)) == G2F_OK);
            CHECK((ref ? g2f_attn_forward_ref(moved, T, d, H, NULL, zd, pd, NULL)
                       : g2f_attn_forward(moved, T, d, H, NULL, zd, pd, 2, NULL, NULL)) == G2F_OK);
            CHECK(memcmp(z, zd, T * d * sizeof(float)) == 0);
            CHECK(memcmp(p, pd, H * T * T * sizeof(float)) == 0);
        }
        g2f_attn_opts o = g2f_attn_opts_gpt2(dh);
        o.heads_interleaved = 1;
        for (size_t t = 0; t < T; t++) /* feature (c, h) at c H + h goes to h dh + c */
            for (int r = 0; r < 3; r++)
                for (size_t h = 0; h < H; h++)
                    for (size_t c = 0; c < dh; c++)
                        moved[t * 3 * d + r * d + h * dh + c] = qkv[t * 3 * d + r * d + c * H + h];
        CHECK((ref ? g2f_attn_forward_ref(qkv, T, d, H, &o, z, p, NULL)
                   : g2f_attn_forward(qkv, T, d, H, &o, z, p, 2, NULL, NULL)) == G2F_OK);
        CHECK((ref ? g2f_attn_forward_ref(moved, T, d, H, NULL, zd, pd, NULL)
                   : g2f_attn_forward(moved, T, d, H, NULL, zd, pd, 2, NULL, NULL)) == G2F_OK);
        int same = 1;
        for (size_t t = 0; t < T; t++)
            for (size_t h = 0; h < H; h++)
                for (size_t c = 0; c < dh; c++) same &= z[t * d + c * H + h] == zd[t * d + h * dh + c];
        CHECK(same);
        CHECK(memcmp(p, pd, H * T * T * sizeof(float)) == 0);
        /* and interleaving does change the result (heads mix features) */
        CHECK(memcmp(z, zd, T * d * sizeof(float)) != 0);
    }
    free(qkv); free(moved); free(z); free(zd); free(p); free(pd);
}

/* Each row of P sums to 1: p~_j = float(e_j inv) with inv the double
 * inverse of the double sum of the e_j, so the row sum is 1 within u (the
 * final roundings, each relative) and (T + 2) 2^-52 (the double sum and
 * products). Causal rows are exactly zero after the diagonal; without the
 * mask no probability is zero here (scores within a few units). */
static void attn_probs_should_sum_to_one_with_causal_zeros(void) {
    const size_t T = 150, d = 128, H = 2;
    float *qkv = rand_qkv(T, d, 9), *z = malloc(T * d * sizeof(float)), *p = malloc(H * T * T * sizeof(float));
    for (int causal = 0; causal < 2; causal++) {
        g2f_attn_opts o = g2f_attn_opts_gpt2(d / H);
        o.causal = causal;
        CHECK(g2f_attn_forward(qkv, T, d, H, &o, z, p, 2, NULL, NULL) == G2F_OK);
        double worst = 0;
        int zeros_ok = 1;
        for (size_t r = 0; r < H * T; r++) {
            size_t i = r % T;
            double sum = 0;
            for (size_t j = 0; j < T; j++) {
                float v = p[r * T + j];
                sum += v;
                zeros_ok &= causal && j > i ? v == 0.0f && !signbit(v) : v > 0.0f;
            }
            worst = fmax(worst, fabs(sum - 1));
        }
        CHECK(worst <= U + (T + 2) * 0x1p-52);
        CHECK(zeros_ok);
    }
    free(qkv); free(z); free(p);
}

/* Causal: a query's outputs do not depend on later tokens, nor on T (the
 * blocks are fixed by position and the masked products add exact zeros). */
static void attn_should_not_depend_on_later_tokens(void) {
    const size_t T = 150, d = 96, H = 3, T2 = 100;
    float *qkv = rand_qkv(T, d, 11);
    float *z = malloc(T * d * sizeof(float)), *z2 = malloc(T * d * sizeof(float));
    float *p = malloc(H * T * T * sizeof(float)), *p2 = malloc(H * T * T * sizeof(float));
    CHECK(g2f_attn_forward(qkv, T, d, H, NULL, z, p, 2, NULL, NULL) == G2F_OK);
    for (size_t c = 0; c < 3 * d; c++) qkv[(T - 1) * 3 * d + c] += 0.5f; /* the last token's q, k, v */
    CHECK(g2f_attn_forward(qkv, T, d, H, NULL, z2, p2, 2, NULL, NULL) == G2F_OK);
    CHECK(memcmp(z, z2, (T - 1) * d * sizeof(float)) == 0);
    CHECK(memcmp(z + (T - 1) * d, z2 + (T - 1) * d, d * sizeof(float)) != 0);
    CHECK(g2f_attn_forward(qkv, T2, d, H, NULL, z2, p2, 1, NULL, NULL) == G2F_OK);
    CHECK(memcmp(z, z2, T2 * d * sizeof(float)) == 0);
    int same = 1;
    for (size_t h = 0; h < H; h++)
        for (size_t i = 0; i < T2; i++) same &= memcmp(p + (h * T + i) * T, p2 + (h * T2 + i) * T2, T2 * sizeof(float)) == 0;
    CHECK(same);
    free(qkv); free(z); free(z2); free(p); free(p2);
}

static void attn_should_refuse_bad_arguments_and_oversized_buffers(void) {
    float qkv[36] = {0}, z[12], p[16];
    g2f_error err = {0};
    g2f_attn_opts o = g2f_attn_opts_gpt2(4);
    CHECK(g2f_attn_forward(qkv, 1, 12, 0, NULL, z, NULL, 1, NULL, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "n_head is 0");
    CHECK(g2f_attn_forward_ref(qkv, 1, 12, 5, NULL, z, NULL, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "divide n_embd 12");
    o.qkv_order[1] = 0;
    CHECK(g2f_attn_forward(qkv, 1, 12, 3, &o, z, NULL, 1, NULL, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "qkv_order is {0, 0, 2}");
    o.qkv_order[1] = 3;
    CHECK(g2f_attn_forward_ref(qkv, 1, 12, 3, &o, z, NULL, &err) == G2F_ERR_USAGE);
    CHECK(g2f_attn_forward(qkv, 1, 12, 3, NULL, NULL, NULL, 1, NULL, &err) == G2F_ERR_USAGE);
    /* sizes: refused before qkv is read (it is far too small here) */
    const size_t huge[] = {SIZE_MAX / 2, SIZE_MAX / 12, (size_t)1 << 40};
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 12; k++) z[k] = -7;
        err.msg[0] = 0;
        CHECK(g2f_attn_forward(qkv, huge[i], 12, 3, NULL, z, NULL, 2, NULL, &err) == G2F_ERR_NOMEM);
        CHECK_CONTAINS(err.msg, "attention");
        CHECK(g2f_attn_forward_ref(qkv, huge[i], 12, 3, NULL, z, NULL, &err) == G2F_ERR_NOMEM);
        CHECK_CONTAINS(err.msg, "reference attention");
        CHECK(z[0] == -7 && z[11] == -7); /* nothing written */
    }
    g2f_attn_ws ws = {0}; /* a workspace that fails to grow stays usable */
    CHECK(g2f_attn_forward(qkv, (size_t)1 << 40, 12, 3, NULL, z, NULL, 2, &ws, &err) == G2F_ERR_NOMEM);
    CHECK(g2f_attn_forward(qkv, 1, 12, 3, NULL, z, p, 2, &ws, &err) == G2F_OK);
    g2f_attn_ws_free(&ws);
    CHECK(g2f_attn_forward_batch(qkv, SIZE_MAX / 4, 8, 12, 3, NULL, z, NULL, 1, NULL, &err) == G2F_ERR_NOMEM);
    CHECK(g2f_attn_forward_batch_ref(qkv, 2, (size_t)1 << 33, 12, 3, NULL, z, p, &err) == G2F_ERR_NOMEM);
    CHECK_CONTAINS(err.msg, "overflow");
    /* nothing to do is not an error */
    CHECK(g2f_attn_forward(qkv, 0, 12, 3, NULL, z, NULL, 1, NULL, &err) == G2F_OK);
}

/* A workspace kept across shapes growing and shrinking and thread counts
 * gives the bits of a call without one; a batch of sequences gives the
 * bits of one call per sequence (each starting at position 0). */
static void attn_workspace_and_batches_should_not_change_results(void) {
    const shape sh[] = {{50, 64, 2}, {300, 96, 4}, {7, 36, 3}, {300, 96, 4}, {1, 8, 2}};
    g2f_attn_ws ws = {0};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        size_t T = sh[i].T, d = sh[i].d, H = sh[i].H;
        float *qkv = rand_qkv(T, d, 40 + i);
        float *z1 = malloc(T * d * sizeof(float)), *z2 = malloc(T * d * sizeof(float));
        float *p1 = malloc(H * T * T * sizeof(float)), *p2 = malloc(H * T * T * sizeof(float));
        CHECK(g2f_attn_forward(qkv, T, d, H, NULL, z1, p1, 2, NULL, NULL) == G2F_OK);
        CHECK(g2f_attn_forward(qkv, T, d, H, NULL, z2, p2, 1 + (int)(i % 2), &ws, NULL) == G2F_OK);
        CHECK(memcmp(z1, z2, T * d * sizeof(float)) == 0 && memcmp(p1, p2, H * T * T * sizeof(float)) == 0);
        free(qkv); free(z1); free(z2); free(p1); free(p2);
    }
    g2f_attn_ws_free(&ws);
    CHECK(ws.heads == NULL && ws.mm == NULL && ws.mm_count == 0);
    g2f_attn_ws_free(NULL);
    const size_t S = 3, T = 40, d = 48, H = 4;
    float *qkv = rand_qkv(S * T, d, 8);
    float *z = malloc(S * T * d * sizeof(float)), *z1 = malloc(T * d * sizeof(float));
    float *p = malloc(S * H * T * T * sizeof(float)), *p1 = malloc(H * T * T * sizeof(float));
    for (int ref = 0; ref < 2; ref++) {
        CHECK((ref ? g2f_attn_forward_batch_ref(qkv, S, T, d, H, NULL, z, p, NULL)
                   : g2f_attn_forward_batch(qkv, S, T, d, H, NULL, z, p, 2, NULL, NULL)) == G2F_OK);
        for (size_t s = 0; s < S; s++) {
            CHECK((ref ? g2f_attn_forward_ref(qkv + s * T * 3 * d, T, d, H, NULL, z1, p1, NULL)
                       : g2f_attn_forward(qkv + s * T * 3 * d, T, d, H, NULL, z1, p1, 1, NULL, NULL)) == G2F_OK);
            CHECK(memcmp(z + s * T * d, z1, T * d * sizeof(float)) == 0);
            CHECK(memcmp(p + s * H * T * T, p1, H * T * T * sizeof(float)) == 0);
        }
    }
    free(qkv); free(z); free(z1); free(p); free(p1);
}

int main(void) {
    RUN(attn_should_reproduce_worked_example);
    RUN(attn_should_agree_with_reference_and_be_thread_count_independent);
    RUN(attn_options_should_match_a_straightforward_implementation);
    RUN(attn_layout_options_should_equal_permuted_inputs);
    RUN(attn_probs_should_sum_to_one_with_causal_zeros);
    RUN(attn_should_not_depend_on_later_tokens);
    RUN(attn_should_refuse_bad_arguments_and_oversized_buffers);
    RUN(attn_workspace_and_batches_should_not_change_results);
    CHECK_EXIT();
}
