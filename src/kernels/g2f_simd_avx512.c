/* g2f_simd_avx512: the AVX-512 micro-kernel; see g2f_simd.h. Compiled with
 * -mavx512f -mavx2 -mfma; called only when the CPU has AVX-512 F and the OS
 * saves the ZMM registers (g2f_cpu_features()->avx512f).
 *
 * A 12 x 32 tile: 24 accumulators of 16 lanes (of the 32 ZMM registers),
 * two B vectors per depth step and each A value broadcast from memory into
 * its FMA, so a depth step is 24 FMAs against 2 loads and 12 broadcasts:
 * the two FMA ports stay busy with the load ports half used. Every C element
 * is the same chain of fused multiply-adds, in the same k order from zero,
 * as in the 6 x 16 AVX2 tile (g2f_simd_tile), then the same float adds of
 * C's previous value and the bias, and the same GELU (on the stored sums,
 * g2f_simd512_gelu: g2f_simd_gelu's operations on 8 doubles a vector):
 * bitwise the AVX2 path's results. */
#include "g2f_simd.h"

#include <immintrin.h>
#include <string.h>

#include "g2f_gelu_math.h"

#define MR G2F_MR512
#define NR G2F_NR512

/* ---- GELU in double, 8 lanes a vector: g2f_simd_avx2.c's gelu_tanh_pdn and
 * gelu_erf_pdn operation for operation (the same roundings, no FMA; erf's
 * two branches apart, below), on GELU_NV vectors of 8 doubles: bitwise
 * g2f_simd_gelu's results. The Horner
 * and Clenshaw recurrences are chains of dependent operations (a multiply
 * and an add a step: no contraction into FMAs): 12 independent chains keep
 * the FP units busy where fewer wait on latency. One thread, 384 or 3072
 * values in L1, built as the library is (AMD EPYC Zen 5): tanh 0.98 -> 0.61
 * ns a value against 8 chains (16: 0.73, 24: 0.83), erf 2.55 -> 2.36;
 * earlier, 8 against 2 chains: erf 6.3 -> 4.0, tanh 1.63 -> 1.37 (Xeon). */

#define GELU_NV 12
#define LANES for (int v = 0; v < GELU_NV; v++)

static inline void exp_pdn(__m512d x[GELU_NV]) {
    static const double inv_fact[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                        1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                        1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                                        1.0};
    __m512d n[GELU_NV], r[GELU_NV], p[GELU_NV];
    LANES {
        x[v] = _mm512_max_pd(_mm512_set1_pd(-700.0), _mm512_min_pd(_mm512_set1_pd(700.0), x[v]));
        n[v] = _mm512_roundscale_pd(_mm512_mul_pd(x[v], _mm512_set1_pd(G2F_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r[v] = _mm512_sub_pd(_mm512_sub_pd(x[v], _mm512_mul_pd(n[v], _mm512_set1_pd(G2F_LN2_HI))),
                             _mm512_mul_pd(n[v], _mm512_set1_pd(G2F_LN2_LO)));
        p[v] = _mm512_set1_pd(1.0 / 6227020800.0);
    }
    for (int i = 0; i < 13; i++) LANES p[v] = _mm512_add_pd(_mm512_mul_pd(p[v], r[v]), _mm512_set1_pd(inv_fact[i]));
    LANES {
        __m512i e = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(n[v]));
        e = _mm512_slli_epi64(_mm512_add_epi64(e, _mm512_set1_epi64(1023)), 52);
        x[v] = _mm512_mul_pd(p[v], _mm512_castsi512_pd(e));
    }
}

static inline void erfcx_pdn(__m512d z[GELU_NV]) {
    const __m512d k = _mm512_set1_pd(G2F_ERFCX_K);
    __m512d u[GELU_NV], two_u[GELU_NV], b1[GELU_NV], b2[GELU_NV];
    LANES {
        __m512d zz = _mm512_min_pd(z[v], _mm512_set1_pd(12.0));
        __m512d t = _mm512_div_pd(_mm512_sub_pd(zz, k), _mm512_add_pd(zz, k));
        u[v] = _mm512_div_pd(_mm512_sub_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), t), _mm512_set1_pd(G2F_ERFCX_TSUM)),
                             _mm512_set1_pd(G2F_ERFCX_TSPAN));
        two_u[v] = _mm512_mul_pd(_mm512_set1_pd(2.0), u[v]);
        b1[v] = b2[v] = _mm512_setzero_pd();
    }
    for (int i = G2F_ERFCX_N - 1; i >= 1; i--) {
        LANES {
            __m512d b0 = _mm512_add_pd(_mm512_sub_pd(_mm512_mul_pd(two_u[v], b1[v]), b2[v]),
                                       _mm512_set1_pd(g2f_erfcx_cheb[i]));
            b2[v] = b1[v];
            b1[v] = b0;
        }
    }
    LANES z[v] = _mm512_add_pd(_mm512_sub_pd(_mm512_mul_pd(u[v], b1[v]), b2[v]), _mm512_set1_pd(g2f_erfcx_cheb[0]));
}

static inline void erf_small_pdn(const __m512d z[GELU_NV], __m512d out[GELU_NV]) {
    static const double c[12] = {-1.0 / (39916800.0 * 23), 1.0 / (3628800.0 * 21), -1.0 / (362880.0 * 19),
                                 1.0 / (40320.0 * 17),     -1.0 / (5040.0 * 15),   1.0 / (720.0 * 13),
                                 -1.0 / (120.0 * 11),      1.0 / (24.0 * 9),       -1.0 / (6.0 * 7),
                                 1.0 / (2.0 * 5),          -1.0 / 3.0,             1.0};
    __m512d z2[GELU_NV], sm[GELU_NV];
    LANES {
        z2[v] = _mm512_mul_pd(z[v], z[v]);
        sm[v] = _mm512_setzero_pd();
    }
    for (int i = 0; i < 12; i++) LANES sm[v] = _mm512_add_pd(_mm512_mul_pd(sm[v], z2[v]), _mm512_set1_pd(c[i]));
    LANES out[v] = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(G2F_TWO_OVER_SQRT_PI), z[v]), sm[v]);
}

static inline void gelu_tanh_pdn(const __m512d x[GELU_NV], __m512d y[GELU_NV]) {
    __m512d e[GELU_NV];
    LANES {
        __m512d x3 = _mm512_mul_pd(_mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.044715), x[v]), x[v]), x[v]);
        __m512d u = _mm512_mul_pd(_mm512_set1_pd(G2F_SQRT_2_OVER_PI), _mm512_add_pd(x[v], x3));
        e[v] = _mm512_mul_pd(_mm512_set1_pd(-2.0), u);
    }
    exp_pdn(e);
    LANES y[v] = _mm512_div_pd(x[v], _mm512_add_pd(_mm512_set1_pd(1.0), e[v]));
}

/* 16 floats as two vectors of 8 doubles, and back. */
static inline void widen(__m512 v, __m512d *lo, __m512d *hi) {
    *lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    *hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

static inline __m512 narrow(__m512d lo, __m512d hi) {
    __m512d l = _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)));
    return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}

/* The tanh GELU of GELU_NV / 2 vectors of 16 floats, each value in double
 * (gelu_tanh_pdn); a NaN comes out as it went in (the clamps would hide
 * it). What g2f_simd512_gelu and c_fc's fused epilogue (tile_gelu_tanh)
 * both compute. */
#if GELU_NV % 2 != 0
#error "gelu_tanh_16 takes GELU_NV vectors of 8 doubles as pairs"
#endif
static inline void gelu_tanh_16(const __m512 f[GELU_NV / 2], __m512 g[GELU_NV / 2]) {
    __m512d x[GELU_NV], y[GELU_NV];
    for (int q = 0; q < GELU_NV / 2; q++) widen(f[q], &x[2 * q], &x[2 * q + 1]);
    gelu_tanh_pdn(x, y);
    for (int q = 0; q < GELU_NV / 2; q++)
        g[q] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(f[q], f[q], _CMP_UNORD_Q), narrow(y[2 * q], y[2 * q + 1]), f[q]);
}

/* ---- the erf form by branch: g2f_simd_avx2.c's gelu_erf_pdn computes
 * erfc(z) both ways, by the series (|z| < 0.5) and by erfcx(|z|) exp(-z^2),
 * for every lane, then keeps one. Here a block's values go to two lists by
 * the one they keep (the same tests on the same z), each list through its
 * branch alone, the results back in place: every value the same operations
 * as there, so the same bits (all 2^32 floats compared), less work. One
 * thread, 4M floats drawn N(0, sd): 4.25 -> 2.75 ns a value at sd 1,
 * 4.94 -> 3.56 at sd 2.4 (the e2e bench's pre-activations, 23% of them in
 * the series), 4.32 -> 3.80 at sd 4 (Intel Xeon with AVX-512). */

#define ERF_BLOCK 1024 /* floats sorted at a time */

/* z = -x / sqrt 2, as gelu_erf_pdn has it. */
static inline __m512d erf_z(__m512d x) {
    return _mm512_mul_pd(_mm512_sub_pd(_mm512_setzero_pd(), x), _mm512_set1_pd(G2F_INV_SQRT2));
}

/* The lanes of 16 floats that take the tail branch (z >= 0.5 or z <= -0.5;
 * NaN takes the series, as gelu_erf_pdn's blends do). */
static inline __mmask16 erf_tail_lanes(__m512 f) {
    __m512d z[2] = {erf_z(_mm512_cvtps_pd(_mm512_castps512_ps256(f))),
                    erf_z(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))))};
    __mmask8 m[2];
    for (int h = 0; h < 2; h++)
        m[h] = _mm512_cmp_pd_mask(z[h], _mm512_set1_pd(0.5), _CMP_GE_OQ) |
               _mm512_cmp_pd_mask(z[h], _mm512_set1_pd(-0.5), _CMP_LE_OQ);
    return (__mmask16)(m[0] | (unsigned)m[1] << 8);
}

/* gelu_erf_pdn's series branch: erfc = 1 - erf(z). */
static inline void gelu_erf_series_pdn(const __m512d x[GELU_NV], __m512d y[GELU_NV]) {
    __m512d z[GELU_NV], small[GELU_NV];
    LANES z[v] = erf_z(x[v]);
    erf_small_pdn(z, small);
    LANES y[v] = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), x[v]), _mm512_sub_pd(_mm512_set1_pd(1.0), small[v]));
}

/* gelu_erf_pdn's tail branch: erfc = erfcx(|z|) exp(-z^2), or 2 minus that
 * for z <= -0.5. */
static inline void gelu_erf_tail_pdn(const __m512d x[GELU_NV], __m512d y[GELU_NV]) {
    __m512d z[GELU_NV], tail[GELU_NV], e[GELU_NV];
    LANES {
        z[v] = erf_z(x[v]);
        tail[v] = _mm512_max_pd(_mm512_abs_pd(z[v]), _mm512_set1_pd(0.5));
        e[v] = _mm512_sub_pd(_mm512_setzero_pd(), _mm512_mul_pd(z[v], z[v]));
    }
    erfcx_pdn(tail);
    exp_pdn(e);
    LANES {
        __m512d t = _mm512_mul_pd(tail[v], e[v]), neg = _mm512_sub_pd(_mm512_set1_pd(2.0), t);
        __m512d erfc = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(z[v], _mm512_set1_pd(0.5), _CMP_GE_OQ), neg, t);
        y[v] = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(0.5), x[v]), erfc);
    }
}

/* One branch over a list of n floats (zero-padded to whole steps) in place. */
static void erf_list(int tail, float *list, size_t n) {
    for (size_t i = 0; i < n; i += 8 * GELU_NV) {
        __m512d x[GELU_NV], y[GELU_NV];
        LANES x[v] = _mm512_cvtps_pd(_mm256_loadu_ps(list + i + 8 * v));
        if (tail) gelu_erf_tail_pdn(x, y);
        else gelu_erf_series_pdn(x, y);
        LANES _mm256_storeu_ps(list + i + 8 * v, _mm512_cvtpd_ps(y[v]));
    }
}

/* n <= ERF_BLOCK values: sorted by branch, each list computed, put back. */
static void gelu_erf_block(const float *in, float *out, size_t n) {
    _Alignas(64) float list[2][ERF_BLOCK + 8 * GELU_NV];
    __mmask16 tail[ERF_BLOCK / 16];
    size_t len[2] = {0, 0};
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 f = _mm512_maskz_loadu_ps(mk, in + i);
        __mmask16 t = erf_tail_lanes(f) & mk, s = (__mmask16)(~t & mk);
        tail[i / 16] = t;
        _mm512_storeu_ps(list[0] + len[0], _mm512_maskz_compress_ps(s, f));
        _mm512_storeu_ps(list[1] + len[1], _mm512_maskz_compress_ps(t, f));
        len[0] += (size_t)__builtin_popcount(s), len[1] += (size_t)__builtin_popcount(t);
    }
    for (int b = 0; b < 2; b++) {
        size_t whole = (len[b] + 8 * GELU_NV - 1) / (8 * GELU_NV) * (8 * GELU_NV);
        memset(list[b] + len[b], 0, (whole - len[b]) * sizeof(float));
        erf_list(b, list[b], whole);
    }
    size_t at[2] = {0, 0};
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1), t = tail[i / 16];
        __mmask16 s = (__mmask16)(~t & mk);
        __m512 r = _mm512_mask_expand_ps(_mm512_maskz_expand_ps(s, _mm512_loadu_ps(list[0] + at[0])), t,
                                         _mm512_loadu_ps(list[1] + at[1]));
        at[0] += (size_t)__builtin_popcount(s), at[1] += (size_t)__builtin_popcount(t);
        __m512 f = _mm512_maskz_loadu_ps(mk, in + i); /* NaN in, NaN out, as below */
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q), r, f);
        _mm512_mask_storeu_ps(out + i, mk, r);
    }
}

void g2f_simd512_gelu(int erf, const float *in, float *out, size_t n) {
    if (erf) {
        for (size_t i = 0; i < n; i += ERF_BLOCK) gelu_erf_block(in + i, out + i, n - i < ERF_BLOCK ? n - i : ERF_BLOCK);
        return;
    }
    size_t i = 0;
    for (; i + 8 * GELU_NV <= n; i += 8 * GELU_NV) {
        __m512 f[GELU_NV / 2], g[GELU_NV / 2];
        for (int q = 0; q < GELU_NV / 2; q++) f[q] = _mm512_loadu_ps(in + i + 16 * q);
        gelu_tanh_16(f, g);
        for (int q = 0; q < GELU_NV / 2; q++) _mm512_storeu_ps(out + i + 16 * q, g[q]);
    }
    if (i < n) g2f_simd_gelu(0, in + i, out + i, n - i);
}

/* The sums of the tile over kc depth steps, from zero, into acc (MR rows
 * of 2 vectors; only the first `rows`, a constant where inlined, so that
 * an edge tile of 4 or 8 rows does 4 or 8 rows' FMAs), on the B panel bp
 * (row kk at bp + kk * ldb: NR for a packed one), squared first when sq;
 * each row as loaded also stored into pack (kc x NR) unless NULL. */
static inline __attribute__((always_inline)) void tile_sums(const float *ap, const float *bp, size_t ldb, float *pack,
                                                            int sq, size_t kc, int rows, const g2f_simd_fetch *f,
                                                            __m512 acc[MR][2]) {
    /* f's rows (at most kc) spread over the depth steps by a running count:
     * no burst (a core has few fill buffers), no division in the loop */
    size_t due = 0, done = 0, step_rows = f ? f->rows : 0;
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (size_t kk = 0; kk < kc; kk++) {
        __m512 b0 = _mm512_loadu_ps(bp + kk * ldb), b1 = _mm512_loadu_ps(bp + kk * ldb + 16);
        if (pack) _mm512_storeu_ps(pack + kk * NR, b0), _mm512_storeu_ps(pack + kk * NR + 16, b1);
        if (sq) b0 = _mm512_mul_ps(b0, b0), b1 = _mm512_mul_ps(b1, b1); /* as the packed squares are rounded */
        if (f && (due += step_rows) >= kc) { /* every line of the row's 128 bytes: three where not 64-byte aligned */
            const char *row = f->base + done++ * f->ld;
            due -= kc;
            _mm_prefetch(row, _MM_HINT_T1);
            _mm_prefetch(row + 64, _MM_HINT_T1);
            _mm_prefetch(row + 127, _MM_HINT_T1);
        }
        if (f && f->a_next) _mm_prefetch((const char *)(f->a_next + kk * MR), _MM_HINT_T1);
        const float *a = ap + kk * MR;
#pragma GCC unroll 12
        for (int r = 0; r < rows; r++) {
            const __m512 av = _mm512_set1_ps(a[r]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
}

/* tile_sums for an mr-row tile: an edge tile of at most 4 or 8 rows does
 * only those rows' FMAs (64 tokens are 5 x 12 + 4 rows); acc's other rows
 * stay unset (tile_store reads mr of them). */
static inline __attribute__((always_inline)) void tile_sums_rows(const float *ap, const float *bp, size_t ldb,
                                                                 float *pack, int sq, size_t kc, size_t mr,
                                                                 const g2f_simd_fetch *f, __m512 acc[MR][2]) {
    if (mr <= 4) tile_sums(ap, bp, ldb, pack, sq, kc, 4, f, acc);
    else if (mr <= 8) tile_sums(ap, bp, ldb, pack, sq, kc, 8, f, acc);
    else tile_sums(ap, bp, ldb, pack, sq, kc, MR, f, acc);
}

/* A whole tile's sums into C, then + bias (or NULL), straight from the
 * registers; inlined where there is no epilogue (every depth block but the
 * last), so that the sums do not go through the stack into tile_store. */
static inline __attribute__((always_inline)) void tile_store_whole(__m512 acc[MR][2], float *c, size_t ldc,
                                                                   int first, const float *bias) {
    __m512 b0 = _mm512_setzero_ps(), b1 = b0;
    if (bias) b0 = _mm512_loadu_ps(bias), b1 = _mm512_loadu_ps(bias + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        float *row = c + (size_t)r * ldc;
        __m512 v0 = acc[r][0], v1 = acc[r][1];
        if (!first) v0 = _mm512_add_ps(_mm512_loadu_ps(row), v0), v1 = _mm512_add_ps(_mm512_loadu_ps(row + 16), v1);
        if (bias) v0 = _mm512_add_ps(v0, b0), v1 = _mm512_add_ps(v1, b1);
        _mm512_storeu_ps(row, v0);
        _mm512_storeu_ps(row + 16, v1);
    }
}

/* 16 GELU values into half 0 or 1 of an act row (put_act), and a whole
 * tile's (MR rows of NR in act) into ep's rows (put_act_rows). act is
 * not read again by this product (c_proj packs it after a barrier): a row
 * that starts a 64-byte line is two whole lines, streamed past the caches
 * instead of each line read for ownership first and later written back.
 * bench-ab against memcpy (2 threads, AMD EPYC Zen 5): the FFN 1.02x at
 * d 768, 1.01x at d 1024 and 1600 for 1024 tokens, 1.01-1.03x for 64; with
 * the work buffers aligned (g2f_alloc_work), `gpt2ffn run` of XL's FFN x
 * 1024 tokens 6.6-7.4 s against 7.5-7.7 s, `verify` of 124M's x 1024
 * 0.92-0.96 s against 0.99-1.21 s (whole processes, interleaved).
 * The callers fence the streamed stores before another thread reads act
 * (g2f_simd_stream_fence). */
static inline void put_act(float *row, int half, __m512 v) {
    if ((uintptr_t)row % 64 == 0) _mm512_stream_ps(row + 16 * half, v);
    else _mm512_storeu_ps(row + 16 * half, v);
}

static void put_act_rows(const float *act, const g2f_simd_epilogue *ep) {
    for (int r = 0; r < MR; r++)
        for (int half = 0; half < 2; half++)
            put_act(ep->act + (size_t)r * ep->ld_act, half, _mm512_loadu_ps(act + r * NR + 16 * half));
}

/* The tanh GELU of a whole tile's stored sums (c) into ep's act rows, GELU_ROWS
 * rows (GELU_NV vectors of 8 doubles) at a time: gelu_tanh_16, as in
 * g2f_simd512_gelu, so its bits, but each row loaded as it was
 * stored (16 floats) and the values written from registers, instead of
 * through buffers (sums copied out, loaded 8 floats of each 16 stored, the
 * results stored by 8 and loaded by 16 to be written). */
#define GELU_ROWS (GELU_NV * 8 / NR) /* rows of the tile a step */
#if GELU_ROWS * NR != GELU_NV * 8 || MR % GELU_ROWS != 0
#error "tile_gelu_tanh takes whole rows of the tile, GELU_NV vectors of 8, at a time"
#endif
static void tile_gelu_tanh(const float *c, size_t ldc, const g2f_simd_epilogue *ep) {
    for (int r = 0; r < MR; r += GELU_ROWS) {
        __m512 f[GELU_NV / 2], g[GELU_NV / 2];
        for (int q = 0; q < GELU_NV / 2; q++) f[q] = _mm512_loadu_ps(c + (size_t)(r + q / 2) * ldc + 16 * (q % 2));
        gelu_tanh_16(f, g);
        for (int q = 0; q < GELU_NV / 2; q++) put_act(ep->act + (size_t)(r + q / 2) * ep->ld_act, q % 2, g[q]);
    }
}

/* The tile's stores and epilogue, from its sums. */
static void tile_store(__m512 acc[MR][2], float *c, size_t ldc, size_t mr, size_t nr, int first,
                       const g2f_simd_epilogue *ep) {
    if (mr == MR && nr == NR) { /* the common case: straight from the registers */
        tile_store_whole(acc, c, ldc, first, ep ? ep->bias : NULL);
        if (ep && ep->gelu == 1) tile_gelu_tanh(c, ldc, ep);
        else if (ep && ep->gelu) { /* the whole tile in one call */
            float sums[MR * NR], act[MR * NR];
            for (int r = 0; r < MR; r++) memcpy(sums + r * NR, c + (size_t)r * ldc, sizeof(float) * NR);
            g2f_simd512_gelu(ep->gelu == 2, sums, act, MR * NR);
            put_act_rows(act, ep);
        }
        return;
    }
    for (size_t r = 0; r < mr; r++) { /* an edge tile: the same sums, partly stored */
        float tmp[NR];
        _mm512_storeu_ps(tmp, acc[r][0]);
        _mm512_storeu_ps(tmp + 16, acc[r][1]);
        float *row = c + r * ldc;
        for (size_t j = 0; j < nr; j++) row[j] = first ? tmp[j] : row[j] + tmp[j];
        if (ep && ep->bias)
            for (size_t j = 0; j < nr; j++) row[j] += ep->bias[j];
        if (ep && ep->gelu) g2f_simd512_gelu(ep->gelu == 2, row, ep->act + r * ep->ld_act, nr);
    }
}

/* Whether a tile has anything to fetch (else tile_sums without f). */
static inline int fetches(const g2f_simd_fetch *f) { return f && (f->rows || f->a_next); }

void g2f_simd512_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                      int first, const g2f_simd_epilogue *ep) {
    g2f_simd512_tile_fetch(ap, bp, kc, c, ldc, mr, nr, first, ep, NULL);
}

void g2f_simd512_tile_fetch(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                            int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f) {
    __m512 acc[MR][2];
    if (mr == MR && nr == NR && !ep) {
        if (fetches(f)) tile_sums(ap, bp, NR, NULL, 0, kc, MR, f, acc);
        else tile_sums(ap, bp, NR, NULL, 0, kc, MR, NULL, acc);
        tile_store_whole(acc, c, ldc, first, NULL);
        return;
    }
    if (fetches(f)) tile_sums_rows(ap, bp, NR, NULL, 0, kc, mr, f, acc);
    else tile_sums_rows(ap, bp, NR, NULL, 0, kc, mr, NULL, acc);
    tile_store(acc, c, ldc, mr, nr, first, ep);
}

void g2f_simd512_tile_pack(const float *ap, const float *b, size_t ldb, float *pack, size_t kc, float *c, size_t ldc,
                           size_t mr, size_t nr, int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f) {
    __m512 acc[MR][2];
    if (fetches(f)) tile_sums_rows(ap, b, ldb, pack, 0, kc, mr, f, acc);
    else tile_sums_rows(ap, b, ldb, pack, 0, kc, mr, NULL, acc);
    tile_store(acc, c, ldc, mr, nr, first, ep);
}

void g2f_simd512_tile_sq(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                         int first) {
    __m512 acc[MR][2];
    tile_sums_rows(ap, bp, NR, NULL, 1, kc, mr, NULL, acc);
    tile_store(acc, c, ldc, mr, nr, first, NULL);
}

void g2f_simd512_copy_panel(const float *b, size_t ldb, size_t kc, float *dst) {
    for (size_t kk = 0; kk < kc; kk++) {
        const float *row = b + kk * ldb;
        _mm512_storeu_ps(dst + kk * NR, _mm512_loadu_ps(row));
        _mm512_storeu_ps(dst + kk * NR + 16, _mm512_loadu_ps(row + 16));
    }
}
