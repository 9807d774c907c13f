/* g2f_simd_avx2: AVX2 + FMA kernels; see g2f_simd.h. Compiled with
 * -mavx2 -mfma; never called on CPUs without them. */
#include "g2f_simd.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "g2f_gelu_math.h"

/* The tile on B rows at bp + kk * ldb, squared first when sq, with src's
 * fetches ahead (g2f_simd_bsrc; or NULL): g2f_simd_tile (ldb NR,
 * packed) and g2f_simd_tile_b (B in place) are this with constants. */
static inline __attribute__((always_inline)) void tile_body(const float *ap, const float *bp, size_t ldb, int sq,
                                                            const g2f_simd_bsrc *src, size_t kc, float *c,
                                                            size_t ldc,
                                                            size_t mr, size_t nr, int first,
                                                            const g2f_simd_epilogue *ep) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *pf = src ? src->pf : NULL;
#pragma GCC unroll 4
    for (size_t kk = 0; kk < kc; kk++) {
        __m256 b0 = _mm256_loadu_ps(bp + kk * ldb), b1 = _mm256_loadu_ps(bp + kk * ldb + 8);
        if (sq) b0 = _mm256_mul_ps(b0, b0), b1 = _mm256_mul_ps(b1, b1); /* as the packed squares are rounded */
        if (pf) { /* both lines of the row's 64 bytes where they are not 64-byte aligned */
            _mm_prefetch((const char *)(pf + kk * src->pf_ld), _MM_HINT_T1);
            _mm_prefetch((const char *)(pf + kk * src->pf_ld + 15), _MM_HINT_T1);
        }
        const float *a = ap + kk * G2F_MR;
        __m256 a0 = _mm256_broadcast_ss(a + 0), a1 = _mm256_broadcast_ss(a + 1);
        c00 = _mm256_fmadd_ps(a0, b0, c00);
        c01 = _mm256_fmadd_ps(a0, b1, c01);
        c10 = _mm256_fmadd_ps(a1, b0, c10);
        c11 = _mm256_fmadd_ps(a1, b1, c11);
        __m256 a2 = _mm256_broadcast_ss(a + 2), a3 = _mm256_broadcast_ss(a + 3);
        c20 = _mm256_fmadd_ps(a2, b0, c20);
        c21 = _mm256_fmadd_ps(a2, b1, c21);
        c30 = _mm256_fmadd_ps(a3, b0, c30);
        c31 = _mm256_fmadd_ps(a3, b1, c31);
        __m256 a4 = _mm256_broadcast_ss(a + 4), a5 = _mm256_broadcast_ss(a + 5);
        c40 = _mm256_fmadd_ps(a4, b0, c40);
        c41 = _mm256_fmadd_ps(a4, b1, c41);
        c50 = _mm256_fmadd_ps(a5, b0, c50);
        c51 = _mm256_fmadd_ps(a5, b1, c51);
    }
    if (mr == G2F_MR && nr == G2F_NR) { /* the common case: straight from the registers */
        float *r0 = c, *r1 = c + ldc, *r2 = c + 2 * ldc, *r3 = c + 3 * ldc, *r4 = c + 4 * ldc, *r5 = c + 5 * ldc;
        if (!first) {
            c00 = _mm256_add_ps(_mm256_loadu_ps(r0), c00);
            c01 = _mm256_add_ps(_mm256_loadu_ps(r0 + 8), c01);
            c10 = _mm256_add_ps(_mm256_loadu_ps(r1), c10);
            c11 = _mm256_add_ps(_mm256_loadu_ps(r1 + 8), c11);
            c20 = _mm256_add_ps(_mm256_loadu_ps(r2), c20);
            c21 = _mm256_add_ps(_mm256_loadu_ps(r2 + 8), c21);
            c30 = _mm256_add_ps(_mm256_loadu_ps(r3), c30);
            c31 = _mm256_add_ps(_mm256_loadu_ps(r3 + 8), c31);
            c40 = _mm256_add_ps(_mm256_loadu_ps(r4), c40);
            c41 = _mm256_add_ps(_mm256_loadu_ps(r4 + 8), c41);
            c50 = _mm256_add_ps(_mm256_loadu_ps(r5), c50);
            c51 = _mm256_add_ps(_mm256_loadu_ps(r5 + 8), c51);
        }
        if (ep && ep->bias) { /* the same float add as a separate pass, done while in registers */
            __m256 b0 = _mm256_loadu_ps(ep->bias), b1 = _mm256_loadu_ps(ep->bias + 8);
            c00 = _mm256_add_ps(c00, b0);
            c01 = _mm256_add_ps(c01, b1);
            c10 = _mm256_add_ps(c10, b0);
            c11 = _mm256_add_ps(c11, b1);
            c20 = _mm256_add_ps(c20, b0);
            c21 = _mm256_add_ps(c21, b1);
            c30 = _mm256_add_ps(c30, b0);
            c31 = _mm256_add_ps(c31, b1);
            c40 = _mm256_add_ps(c40, b0);
            c41 = _mm256_add_ps(c41, b1);
            c50 = _mm256_add_ps(c50, b0);
            c51 = _mm256_add_ps(c51, b1);
        }
        _mm256_storeu_ps(r0, c00);
        _mm256_storeu_ps(r0 + 8, c01);
        _mm256_storeu_ps(r1, c10);
        _mm256_storeu_ps(r1 + 8, c11);
        _mm256_storeu_ps(r2, c20);
        _mm256_storeu_ps(r2 + 8, c21);
        _mm256_storeu_ps(r3, c30);
        _mm256_storeu_ps(r3 + 8, c31);
        _mm256_storeu_ps(r4, c40);
        _mm256_storeu_ps(r4 + 8, c41);
        _mm256_storeu_ps(r5, c50);
        _mm256_storeu_ps(r5 + 8, c51);
        if (ep && ep->gelu) { /* the whole tile in one call, as the GELU's steps are wide */
            float sums[G2F_MR * G2F_NR], act[G2F_MR * G2F_NR];
            __m256 v[2 * G2F_MR] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
            for (size_t q = 0; q < 2 * G2F_MR; q++) _mm256_storeu_ps(sums + 8 * q, v[q]);
            g2f_simd_gelu(ep->gelu == 2, sums, act, G2F_MR * G2F_NR);
            for (size_t r = 0; r < G2F_MR; r++) memcpy(ep->act + r * ep->ld_act, act + r * G2F_NR, sizeof act / G2F_MR);
        }
        return;
    }
    __m256 acc[G2F_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (size_t r = 0; r < mr; r++) { /* an edge tile: the same sums, partly stored */
        float tmp[G2F_NR];
        _mm256_storeu_ps(tmp, acc[r][0]);
        _mm256_storeu_ps(tmp + 8, acc[r][1]);
        float *row = c + r * ldc;
        for (size_t j = 0; j < nr; j++) row[j] = first ? tmp[j] : row[j] + tmp[j];
        if (ep && ep->bias)
            for (size_t j = 0; j < nr; j++) row[j] += ep->bias[j];
        if (ep && ep->gelu) g2f_simd_gelu(ep->gelu == 2, row, ep->act + r * ep->ld_act, nr);
    }
}

/* Here as this file is in every build with the x86 kernels. (The AVX2
 * epilogue streaming act too measured 1.00x on AMD EPYC Zen 5: it keeps
 * plain stores.) */
void g2f_simd_stream_fence(void) { _mm_sfence(); }

void g2f_simd_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first, const g2f_simd_epilogue *ep) {
    tile_body(ap, bp, G2F_NR, 0, NULL, kc, c, ldc, mr, nr, first, ep);
}

void g2f_simd_tile_b(const float *ap, const g2f_simd_bsrc *src, int sq, size_t kc, float *c, size_t ldc, size_t mr,
                     size_t nr, int first, const g2f_simd_epilogue *ep) {
    if (sq) tile_body(ap, src->b, src->ldb, 1, src, kc, c, ldc, mr, nr, first, ep);
    else tile_body(ap, src->b, src->ldb, 0, src, kc, c, ldc, mr, nr, first, ep);
}

static inline void transpose8(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

void g2f_simd_pack_cols(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst) {
    size_t kk = 0;
    /* 8 columns at a time, but the very last column is written by the tail
     * (it must not spill lanes 6 and 7 past the panel) */
    for (; kk + 8 < kc || (width >= 8 && kk + 8 <= kc); kk += 8) {
        __m256 r[8];
        for (size_t i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(a + i * lda + kk) : _mm256_setzero_ps();
        transpose8(r);
        for (size_t j = 0; j < 8; j++) _mm256_storeu_ps(dst + (kk + j) * width, r[j]);
    }
    for (; kk < kc; kk++)
        for (size_t i = 0; i < 8 && i < width; i++) dst[kk * width + i] = i < rows ? a[i * lda + kk] : 0.0f;
}

void g2f_simd_pack_cols4(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst) {
    size_t kk = 0;
    for (; kk + 8 <= kc; kk += 8) { /* 4 x 8 -> 8 columns of 4: two 4 x 4 transposes, one per 128-bit half */
        __m256 r[4];
        for (size_t i = 0; i < 4; i++) r[i] = i < rows ? _mm256_loadu_ps(a + i * lda + kk) : _mm256_setzero_ps();
        __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
        __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
        __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
        for (size_t j = 0; j < 4; j++) {
            _mm_storeu_ps(dst + (kk + j) * width, _mm256_castps256_ps128(u[j]));
            _mm_storeu_ps(dst + (kk + j + 4) * width, _mm256_extractf128_ps(u[j], 1));
        }
    }
    for (; kk < kc; kk++)
        for (size_t i = 0; i < 4; i++) dst[kk * width + i] = i < rows ? a[i * lda + kk] : 0.0f;
}

/* ---- GELU in double: the algorithm of g2f_gelu_math.h, on GELU_NV vectors
 * of 4 lanes at a time: the Horner and Clenshaw recurrences are chains of
 * dependent operations, and independent chains keep the FP units busy. */

#define GELU_NV 4 /* erf on this Xeon, one thread: 8.1 ns a value with 2, 6.4 with 4 */
#define LANES for (int v = 0; v < GELU_NV; v++)
#define GELU_STEP (4 * GELU_NV) /* floats a call */

static inline void exp_pdn(__m256d x[GELU_NV]) {
    static const double inv_fact[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                        1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                        1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                                        1.0};
    __m256d n[GELU_NV], r[GELU_NV], p[GELU_NV];
    LANES {
        x[v] = _mm256_max_pd(_mm256_set1_pd(-700.0), _mm256_min_pd(_mm256_set1_pd(700.0), x[v]));
        n[v] = _mm256_round_pd(_mm256_mul_pd(x[v], _mm256_set1_pd(G2F_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[v] = _mm256_sub_pd(_mm256_sub_pd(x[v], _mm256_mul_pd(n[v], _mm256_set1_pd(G2F_LN2_HI))),
                             _mm256_mul_pd(n[v], _mm256_set1_pd(G2F_LN2_LO)));
        p[v] = _mm256_set1_pd(1.0 / 6227020800.0);
    }
    for (int i = 0; i < 13; i++) LANES p[v] = _mm256_add_pd(_mm256_mul_pd(p[v], r[v]), _mm256_set1_pd(inv_fact[i]));
    LANES {
        __m256i e = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n[v]));
        e = _mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52);
        x[v] = _mm256_mul_pd(p[v], _mm256_castsi256_pd(e));
    }
}

static inline void erfcx_pdn(__m256d z[GELU_NV]) {
    const __m256d k = _mm256_set1_pd(G2F_ERFCX_K);
    __m256d u[GELU_NV], two_u[GELU_NV], b1[GELU_NV], b2[GELU_NV];
    LANES {
        __m256d zz = _mm256_min_pd(z[v], _mm256_set1_pd(12.0));
        __m256d t = _mm256_div_pd(_mm256_sub_pd(zz, k), _mm256_add_pd(zz, k));
        u[v] = _mm256_div_pd(_mm256_sub_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), t), _mm256_set1_pd(G2F_ERFCX_TSUM)),
                             _mm256_set1_pd(G2F_ERFCX_TSPAN));
        two_u[v] = _mm256_mul_pd(_mm256_set1_pd(2.0), u[v]);
        b1[v] = b2[v] = _mm256_setzero_pd();
    }
    for (int i = G2F_ERFCX_N - 1; i >= 1; i--) {
        LANES {
            __m256d b0 = _mm256_add_pd(_mm256_sub_pd(_mm256_mul_pd(two_u[v], b1[v]), b2[v]),
                                       _mm256_set1_pd(g2f_erfcx_cheb[i]));
            b2[v] = b1[v];
            b1[v] = b0;
        }
    }
    LANES z[v] = _mm256_add_pd(_mm256_sub_pd(_mm256_mul_pd(u[v], b1[v]), b2[v]), _mm256_set1_pd(g2f_erfcx_cheb[0]));
}

static inline void erf_small_pdn(const __m256d z[GELU_NV], __m256d out[GELU_NV]) {
    static const double c[12] = {-1.0 / (39916800.0 * 23), 1.0 / (3628800.0 * 21), -1.0 / (362880.0 * 19),
                                 1.0 / (40320.0 * 17),     -1.0 / (5040.0 * 15),   1.0 / (720.0 * 13),
                                 -1.0 / (120.0 * 11),      1.0 / (24.0 * 9),       -1.0 / (6.0 * 7),
                                 1.0 / (2.0 * 5),          -1.0 / 3.0,             1.0};
    __m256d z2[GELU_NV], s[GELU_NV];
    LANES {
        z2[v] = _mm256_mul_pd(z[v], z[v]);
        s[v] = _mm256_setzero_pd();
    }
    for (int i = 0; i < 12; i++) LANES s[v] = _mm256_add_pd(_mm256_mul_pd(s[v], z2[v]), _mm256_set1_pd(c[i]));
    LANES out[v] = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(G2F_TWO_OVER_SQRT_PI), z[v]), s[v]);
}

static inline void gelu_tanh_pdn(const __m256d x[GELU_NV], __m256d y[GELU_NV]) {
    __m256d e[GELU_NV];
    LANES {
        __m256d x3 = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0.044715), x[v]), x[v]), x[v]);
        __m256d u = _mm256_mul_pd(_mm256_set1_pd(G2F_SQRT_2_OVER_PI), _mm256_add_pd(x[v], x3));
        e[v] = _mm256_mul_pd(_mm256_set1_pd(-2.0), u);
    }
    exp_pdn(e);
    LANES y[v] = _mm256_div_pd(x[v], _mm256_add_pd(_mm256_set1_pd(1.0), e[v]));
}

static inline void gelu_erf_pdn(const __m256d x[GELU_NV], __m256d y[GELU_NV]) {
    __m256d z[GELU_NV], tail[GELU_NV], e[GELU_NV], small[GELU_NV];
    LANES {
        z[v] = _mm256_mul_pd(_mm256_sub_pd(_mm256_setzero_pd(), x[v]), _mm256_set1_pd(G2F_INV_SQRT2));
        tail[v] = _mm256_max_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), z[v]), _mm256_set1_pd(0.5));
        e[v] = _mm256_sub_pd(_mm256_setzero_pd(), _mm256_mul_pd(z[v], z[v]));
    }
    erfcx_pdn(tail);
    exp_pdn(e);
    erf_small_pdn(z, small);
    LANES {
        __m256d t = _mm256_mul_pd(tail[v], e[v]);
        __m256d sm = _mm256_sub_pd(_mm256_set1_pd(1.0), small[v]);
        __m256d neg = _mm256_sub_pd(_mm256_set1_pd(2.0), t);
        __m256d erfc = _mm256_blendv_pd(sm, t, _mm256_cmp_pd(z[v], _mm256_set1_pd(0.5), _CMP_GE_OQ));
        erfc = _mm256_blendv_pd(erfc, neg, _mm256_cmp_pd(z[v], _mm256_set1_pd(-0.5), _CMP_LE_OQ));
        y[v] = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), x[v]), erfc);
    }
}

/* A step's results y as floats into out, NaN where in is NaN (the clamps
 * and max_pd would hide it). */
static inline void store_step(const float *in, const __m256d y[GELU_NV], float *out) {
    for (int q = 0; q < GELU_NV / 2; q++) {
        __m256 f = _mm256_loadu_ps(in + 8 * q);
        __m256 r = _mm256_set_m128(_mm256_cvtpd_ps(y[2 * q + 1]), _mm256_cvtpd_ps(y[2 * q]));
        _mm256_storeu_ps(out + 8 * q, _mm256_blendv_ps(r, f, _mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
    }
}

/* GELU of GELU_STEP floats, in double. */
static inline void gelu_step(int erf, const float *in, float *out) {
    __m256d x[GELU_NV], y[GELU_NV];
    LANES x[v] = _mm256_cvtps_pd(_mm_loadu_ps(in + 4 * v));
    if (erf) gelu_erf_pdn(x, y);
    else gelu_tanh_pdn(x, y);
    store_step(in, y, out);
}

/* f on a tail of fewer than GELU_STEP floats, through a padded step: lanes
 * are independent, so every value gets the same bits as in a full step. */
static void tail_step(int form, const float *in, float *out, size_t n,
                      void (*f)(int form, const float *in, float *out)) {
    float bin[GELU_STEP] = {0}, bout[GELU_STEP];
    memcpy(bin, in, n * sizeof(float));
    f(form, bin, bout);
    memcpy(out, bout, n * sizeof(float));
}

void g2f_simd_gelu(int erf, const float *in, float *out, size_t n) {
    size_t i = 0;
    for (; i + GELU_STEP <= n; i += GELU_STEP) gelu_step(erf, in + i, out + i);
    if (i < n) tail_step(erf, in + i, out + i, n - i, gelu_step);
}

/* x / (1 + exp(-v)) on two vectors of 4 doubles: the operations of
 * g2f_gelu_sigmoid_d / g2f_gelu_mlx_d in the same order, so the same bits. */
static inline void gelu_sigmoid_pdn(int mlx, const __m256d x[GELU_NV], __m256d y[GELU_NV]) {
    __m256d xc[GELU_NV], e[GELU_NV];
    LANES {
        xc[v] = _mm256_max_pd(x[v], _mm256_set1_pd(G2F_GELU_SIGMOID_XMIN));
        __m256d arg;
        if (mlx) {
            __m256d w = _mm256_add_pd(_mm256_set1_pd(1.0),
                                      _mm256_mul_pd(_mm256_set1_pd(G2F_GELU_MLX_C), _mm256_mul_pd(xc[v], xc[v])));
            arg = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(G2F_GELU_MLX_K), xc[v]), w);
        } else {
            arg = _mm256_mul_pd(_mm256_set1_pd(G2F_GELU_SIGMOID_K), xc[v]);
        }
        e[v] = _mm256_sub_pd(_mm256_setzero_pd(), arg);
    }
    exp_pdn(e);
    LANES y[v] = _mm256_div_pd(xc[v], _mm256_add_pd(_mm256_set1_pd(1.0), e[v]));
}

static inline void sigmoid_step(int mlx, const float *in, float *out) {
    __m256d x[GELU_NV], y[GELU_NV];
    LANES x[v] = _mm256_cvtps_pd(_mm_loadu_ps(in + 4 * v));
    gelu_sigmoid_pdn(mlx, x, y);
    store_step(in, y, out);
}

void g2f_simd_gelu_sigmoid(int mlx, const float *in, float *out, size_t n) {
    size_t i = 0;
    for (; i + GELU_STEP <= n; i += GELU_STEP) sigmoid_step(mlx, in + i, out + i);
    if (i < n) tail_step(mlx, in + i, out + i, n - i, sigmoid_step);
}

/* exp(x) for the softmax's x = s_j - max <= 0, from floats: Cody-Waite
 * reduction with FMA, then a degree-9 Taylor polynomial on |r| <= ln2/2,
 * whose truncation (7e-12 relative) is far below float's 6e-8: rounded to
 * float it is the correctly rounded exp except within 1e-4 ulp of a
 * half-way point. Cheaper than exp_pd2 (which must match the scalar GELU
 * bit for bit, so no FMA, and degree 13 for double accuracy). x is clamped
 * at -200, whose exp already rounds to float 0; NaN stays NaN. */
#define LANES2 for (int v = 0; v < 2; v++)

static inline void exp_neg_pd2(__m256d x[2]) {
    static const double inv_fact[10] = {1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
                                        1.0 / 24.0,     1.0 / 6.0,     0.5,          1.0,         1.0};
    __m256d n[2], r[2], p[2];
    LANES2 {
        x[v] = _mm256_max_pd(_mm256_set1_pd(-200.0), x[v]); /* max_pd returns its second operand for NaN */
        n[v] = _mm256_round_pd(_mm256_mul_pd(x[v], _mm256_set1_pd(G2F_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[v] = _mm256_fnmadd_pd(n[v], _mm256_set1_pd(G2F_LN2_HI), x[v]);
        r[v] = _mm256_fnmadd_pd(n[v], _mm256_set1_pd(G2F_LN2_LO), r[v]);
        p[v] = _mm256_set1_pd(inv_fact[0]);
    }
    for (int i = 1; i < 10; i++) LANES2 p[v] = _mm256_fmadd_pd(p[v], r[v], _mm256_set1_pd(inv_fact[i]));
    LANES2 {
        __m256i e = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n[v]));
        e = _mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52);
        x[v] = _mm256_mul_pd(p[v], _mm256_castsi256_pd(e));
    }
}

static inline __m256 scale8(__m256 f, __m256d sc) {
    __m256d lo = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(f)), sc);
    __m256d hi = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)), sc);
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

void g2f_simd_softmax(float *s, size_t n, double scale) {
    const __m256d sc = _mm256_set1_pd(scale);
    __m256 mx = _mm256_set1_ps(-INFINITY);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = scale8(_mm256_loadu_ps(s + i), sc);
        _mm256_storeu_ps(s + i, f);
        mx = _mm256_max_ps(mx, f);
    }
    float lanes[8], m;
    _mm256_storeu_ps(lanes, mx);
    m = lanes[0];
    for (int v = 1; v < 8; v++) m = lanes[v] > m ? lanes[v] : m;
    for (; i < n; i++) {
        s[i] = (float)((double)s[i] * scale);
        m = s[i] > m ? s[i] : m;
    }
    /* e_j = exp(s_j - m): the difference in float, as PyTorch forms it */
    const __m256 mv = _mm256_set1_ps(m);
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 t = _mm256_sub_ps(_mm256_loadu_ps(s + i), mv);
        __m256d x[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(t)), _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1))};
        exp_neg_pd2(x);
        __m128 e0 = _mm256_cvtpd_ps(x[0]), e1 = _mm256_cvtpd_ps(x[1]);
        _mm256_storeu_ps(s + i, _mm256_set_m128(e1, e0));
        acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(e0));
        acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(e1));
    }
    double part[4], sum;
    _mm256_storeu_pd(part, _mm256_add_pd(acc0, acc1));
    sum = (part[0] + part[1]) + (part[2] + part[3]);
    for (; i < n; i++) { /* the tail through the vector exp too: every e_j the same function */
        __m256d x[2] = {_mm256_set1_pd((double)(s[i] - m)), _mm256_setzero_pd()};
        exp_neg_pd2(x);
        s[i] = (float)_mm256_cvtsd_f64(x[0]);
        sum += s[i];
    }
    const double inv = 1.0 / sum;
    const __m256d iv = _mm256_set1_pd(inv);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(s + i, scale8(_mm256_loadu_ps(s + i), iv));
    for (; i < n; i++) s[i] = (float)((double)s[i] * inv);
}

/* Eight rows per pass over y: each element still gets its FMAs in kk order
 * (bitwise the same sums), y is loaded and stored an eighth as often, and
 * eight read streams keep more of the weights in flight (scripts/bench-ab,
 * one token, 2 threads: 5-9% faster than one row per pass, 5-11% faster
 * than four, 20% faster than two; sixteen measured the same as eight). */
void g2f_simd_axpy_rows(const float *x, size_t k, const float *b, size_t n, float *y) {
    memset(y, 0, n * sizeof(float));
    size_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 xv[8];
        const float *r[8];
        for (int q = 0; q < 8; q++) xv[q] = _mm256_broadcast_ss(x + kk + q), r[q] = b + (kk + q) * n;
        size_t j = 0;
        for (; j + 16 <= n; j += 16) {
            __m256 y0 = _mm256_loadu_ps(y + j), y1 = _mm256_loadu_ps(y + j + 8);
            for (int q = 0; q < 8; q++) {
                y0 = _mm256_fmadd_ps(xv[q], _mm256_loadu_ps(r[q] + j), y0);
                y1 = _mm256_fmadd_ps(xv[q], _mm256_loadu_ps(r[q] + j + 8), y1);
            }
            _mm256_storeu_ps(y + j, y0);
            _mm256_storeu_ps(y + j + 8, y1);
        }
        for (; j < n; j++) {
            float v = y[j];
            for (int q = 0; q < 8; q++) v = __builtin_fmaf(x[kk + q], r[q][j], v);
            y[j] = v;
        }
    }
    for (; kk < k; kk++) {
        __m256 xv = _mm256_broadcast_ss(x + kk);
        const float *row = b + kk * n;
        size_t j = 0;
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(y + j, _mm256_fmadd_ps(xv, _mm256_loadu_ps(row + j), _mm256_loadu_ps(y + j)));
        for (; j < n; j++) y[j] = __builtin_fmaf(x[kk], row[j], y[j]);
    }
}

void g2f_simd_gemv_dots(const float *x, size_t k, const float *b, size_t j0, size_t j1, float *y) {
    for (size_t j = j0; j < j1; j++) {
        const float *row = b + j * k;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        size_t kk = 0;
        for (; kk + 32 <= k; kk += 32)
            for (int v = 0; v < 4; v++)
                acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 8 * v), _mm256_loadu_ps(row + kk + 8 * v), acc[v]);
        for (; kk + 8 <= k; kk += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk), _mm256_loadu_ps(row + kk), acc[0]);
        __m256 sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        float lanes[8], s = 0;
        _mm256_storeu_ps(lanes, sum);
        for (int v = 0; v < 8; v++) s += lanes[v];
        for (; kk < k; kk++) s = __builtin_fmaf(x[kk], row[kk], s);
        y[j] = s;
    }
}
