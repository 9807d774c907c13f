/* g2f_amx: the sums of squares (g2f_matmul_sq's second product) on the AMX
 * tile unit; see g2f_simd.h. Compiled with -mamx-tile -mamx-bf16 -mavx512f;
 * called only when g2f_cpu_features()->amx_bf16.
 *
 * Each factor is rounded up to bfloat16 (never down: a bound stays a bound)
 * and TDPBF16PS sums the exact products in float: every term lies in
 * [t, t (1 + 2^-7)^2] of its float value t, so the tolerance, a square root
 * of such sums, grows by at most 0.8% (measured: 0.2-0.4%). The tile unit
 * treats bfloat16 subnormals (below 2^-126) as zero, as float squares that
 * small underflow anyway. Its own summation order is fixed by the tiles:
 * each element is one chain over k in 32-term steps, whatever the number of
 * rows, columns or threads. */
#include "g2f_simd.h"

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bf16_up.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define KSTEP 32 /* bfloat16 terms per tile row: 64 bytes */
#define TROWS 16

typedef struct tile_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Row i of A2 (a2, or a squared) as bfloat16, rounded up: kp wide,
 * zero-padded (zero past row m). */
static void pack_a2_row(const float *a, const float *a2, size_t m, size_t k, size_t kp, size_t i, uint16_t *dst) {
    uint16_t *row = dst + i * kp;
    size_t done = i < m ? k : 0;
    for (size_t kk = 0; kk < done; kk += 16) {
        __mmask16 mk = k - kk >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (k - kk)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(mk, (a2 ? a2 : a) + i * k + kk);
        if (!a2) x = _mm512_mul_ps(x, x);
        _mm512_mask_cvtepi32_storeu_epi16(row + kk, mk, g2f_bf16_up(x));
    }
    memset(row + done, 0, (kp - done) * sizeof(uint16_t));
}

/* B's squares at depth steps [k0, k0 + kb) (kb even) for the column
 * groups [g0, g0 + ng) (32 columns each), as two 16-column halves of pairs
 * of depth steps: the tiles' layout, dword p * 16 + j of half t of group g
 * holding rows k0 + 2p and k0 + 2p + 1 of column 32 g + 16 t + j; zero past
 * k and n. Row by row across the groups, so a Conv1D row is read as one run
 * of ng * 128 bytes, not 128 bytes a page. */
static void pack_b2(const float *b, int b_trans, size_t k, size_t n, size_t k0, size_t kb, size_t g0, size_t ng,
                    uint32_t *dst) {
    const size_t per_half = kb / 2 * 16;
    for (size_t p = 0; p < kb / 2; p++)
        for (size_t q = 0; q < 2 * ng; q++) { /* half q % 2 of group g0 + q / 2 */
            size_t c0 = (g0 + q / 2) * 32 + 16 * (q % 2), cols = c0 >= n ? 0 : n - c0 < 16 ? n - c0 : 16;
            __mmask16 mc = (__mmask16)((1u << cols) - 1);
            size_t r0 = k0 + 2 * p, r1 = r0 + 1;
            __m512 x0 = _mm512_setzero_ps(), x1 = _mm512_setzero_ps();
            if (!b_trans) {
                if (r0 < k) x0 = _mm512_maskz_loadu_ps(mc, b + r0 * n + c0);
                if (r1 < k) x1 = _mm512_maskz_loadu_ps(mc, b + r1 * n + c0);
            } else {
                float v0[16] = {0}, v1[16] = {0};
                for (size_t j = 0; j < cols; j++) {
                    if (r0 < k) v0[j] = b[(c0 + j) * k + r0];
                    if (r1 < k) v1[j] = b[(c0 + j) * k + r1];
                }
                x0 = _mm512_loadu_ps(v0), x1 = _mm512_loadu_ps(v1);
            }
            __m512i lo = g2f_bf16_up(_mm512_mul_ps(x0, x0)), hi = g2f_bf16_up(_mm512_mul_ps(x1, x1));
            _mm512_storeu_si512(dst + q * per_half + p * 16, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
}

/* Where the accumulator tiles of c2's rows [i, i + rows) (rows <= 16) and
 * columns [j0, j0 + 32) are stored: in c2 itself, or in tmp (32 wide) when
 * the block is cut by m or n. */
static int whole_block(size_t n, size_t rows, size_t j0) { return rows == TROWS && j0 + 32 <= n; }

/* The two accumulator tiles t (0: tiles 0 and 1, else 2 and 3) into that block. */
static void store_block(int t, float *c2, size_t n, size_t i, size_t rows, size_t j0, float *tmp) {
    int whole = whole_block(n, rows, j0);
    float *dst = whole ? c2 + i * n + j0 : tmp;
    size_t ld = whole ? n * sizeof(float) : 32 * sizeof(float);
    if (t == 0) {
        _tile_stored(0, dst, ld);
        _tile_stored(1, dst + 16, ld);
    } else {
        _tile_stored(2, dst, ld);
        _tile_stored(3, dst + 16, ld);
    }
    if (whole) return;
    size_t cols = n - j0 < 32 ? n - j0 : 32;
    for (size_t r = 0; r < rows; r++) memcpy(c2 + (i + r) * n + j0, tmp + r * 32, cols * sizeof(float));
}

/* The block back into the two accumulator tiles t, as store_block left it
 * (floats in, floats out: exact, so a chain over k split in depth blocks
 * is the same chain). */
static void load_block(int t, const float *c2, size_t n, size_t i, size_t rows, size_t j0, float *tmp) {
    int whole = whole_block(n, rows, j0);
    const float *src = whole ? c2 + i * n + j0 : tmp;
    size_t ld = whole ? n * sizeof(float) : 32 * sizeof(float);
    if (!whole) {
        size_t cols = n - j0 < 32 ? n - j0 : 32;
        memset(tmp, 0, TROWS * 32 * sizeof(float));
        for (size_t r = 0; r < rows; r++) memcpy(tmp + r * 32, c2 + (i + r) * n + j0, cols * sizeof(float));
    }
    if (t == 0) {
        _tile_loadd(0, src, ld);
        _tile_loadd(1, src + 16, ld);
    } else {
        _tile_loadd(2, src, ld);
        _tile_loadd(3, src + 16, ld);
    }
}

/* The 32 columns from j0 for every row over the depth steps [k0, k0 + kb)
 * (bp: pack_b2's group): two row tiles at a time, two column tiles each,
 * in KSTEP steps, from zero at k0 = 0, else from what the earlier depth
 * blocks left in c2. */
static void column_group(const uint16_t *ap, size_t m, size_t kp, size_t k0, size_t kb, const uint32_t *bp,
                         float *c2, size_t n, size_t j0, float *tmp) {
    const uint32_t *b0 = bp, *b1 = bp + (kb / 2) * 16;
    const size_t lda = kp * sizeof(uint16_t);
    for (size_t i = 0; i < m; i += 2 * TROWS) {
        const uint16_t *a0 = ap + i * kp + k0, *a1 = a0 + TROWS * kp;
        size_t rows0 = m - i < TROWS ? m - i : TROWS, rows1 = i + TROWS < m ? m - i - TROWS : 0;
        rows1 = rows1 < TROWS ? rows1 : TROWS;
        if (k0 == 0) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
        } else {
            load_block(0, c2, n, i, rows0, j0, tmp);
            if (rows1) load_block(2, c2, n, i + TROWS, rows1, j0, tmp);
        }
        for (size_t kk = 0; kk < kb; kk += KSTEP) {
            _tile_loadd(4, a0 + kk, lda);
            _tile_loadd(6, b0 + kk / 2 * 16, 64);
            _tile_loadd(7, b1 + kk / 2 * 16, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            if (rows1) {
                _tile_loadd(5, a1 + kk, lda);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
        }
        store_block(0, c2, n, i, rows0, j0, tmp);
        if (rows1) store_block(2, c2, n, i + TROWS, rows1, j0, tmp);
    }
}

uint16_t *g2f_amx_pack_a2(const float *a, const float *a2, size_t m, size_t k, int threads) {
    size_t mp = (m + 2 * TROWS - 1) / (2 * TROWS) * (2 * TROWS), kp = (k + KSTEP - 1) / KSTEP * KSTEP;
    uint16_t *ap = aligned_alloc(64, (mp * kp * sizeof(uint16_t) + 63) / 64 * 64 + 64);
    if (!ap) return NULL;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads < 1 ? 1 : threads)
#else
    (void)threads;
#endif
    for (long i = 0; i < (long)mp; i++) pack_a2_row(a, a2, m, k, kp, (size_t)i, ap);
    return ap;
}

/* A tile configuration of eight 16 x 64-byte tiles, loaded. */
static void tiles_on(void) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = TROWS, cfg.colsb[t] = 64;
    /* GCC 12 does not see LDTILECFG read the configuration: in a tiles_on
     * that was not inlined it dropped the stores of rows and colsb (every
     * tile unconfigured: SIGILL at the first TILEZERO). cfg escapes here. */
    __asm__ volatile("" : : "r"(&cfg) : "memory");
    _tile_loadconfig(&cfg);
}

void g2f_amx_panel(const uint16_t *ap, size_t m, size_t k, size_t k0, size_t kc, const float *panel, size_t ldp,
                   float *c2, size_t n, size_t j0) {
    _Alignas(64) uint32_t bp[256 / 2 * 32]; /* kc <= 256 */
    _Alignas(64) float tmp[TROWS * 32];
    size_t kp = (k + KSTEP - 1) / KSTEP * KSTEP, kb = (kc + KSTEP - 1) / KSTEP * KSTEP;
    for (size_t p = 0; p < kb / 2; p++)
        for (int t = 0; t < 2; t++) {
            size_t r0 = 2 * p, r1 = r0 + 1;
            __m512 x0 = r0 < kc ? _mm512_loadu_ps(panel + r0 * ldp + 16 * t) : _mm512_setzero_ps();
            __m512 x1 = r1 < kc ? _mm512_loadu_ps(panel + r1 * ldp + 16 * t) : _mm512_setzero_ps();
            __m512i lo = g2f_bf16_up(_mm512_mul_ps(x0, x0)), hi = g2f_bf16_up(_mm512_mul_ps(x1, x1));
            _mm512_storeu_si512(bp + (size_t)t * (kb / 2) * 16 + p * 16, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    tiles_on();
    column_group(ap, m, kp, k0, kb, bp, c2, n, j0, tmp);
    _tile_release();
}

/* Depth steps packed at a time (a multiple of KSTEP), and the column groups
 * packed together: 8 x 32 columns x 512 steps of bfloat16 squares is 256 KiB. */
#define DEPTH_BLOCK 512
#define GROUPS_PER_TASK 8

int g2f_amx_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n, float *c2,
               int threads) {
    size_t kp = (k + KSTEP - 1) / KSTEP * KSTEP;
    if (threads < 1) threads = 1;
    /* at least 4 tasks a thread where there are enough groups (the grouping
     * changes no sum: each element is the same chain in any group) */
    size_t groups = (n + 31) / 32, group_words = DEPTH_BLOCK / 2 * 32, per = groups / (4 * (size_t)threads);
    per = per < 1 ? 1 : per > GROUPS_PER_TASK ? GROUPS_PER_TASK : per;
    size_t tasks = (groups + per - 1) / per;
    uint16_t *ap = g2f_amx_pack_a2(a, a2, m, k, threads);
    uint32_t *bp = aligned_alloc(64, ((size_t)threads * per * group_words * sizeof(uint32_t) + 63) / 64 * 64 + 64);
    if (!ap || !bp) {
        free(ap);
        free(bp);
        return 0;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
#ifdef _OPENMP
        int me = omp_get_thread_num();
#else
        int me = 0;
#endif
        tiles_on();
        _Alignas(64) float tmp[TROWS * 32];
        uint32_t *mine = bp + (size_t)me * per * group_words;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long t = 0; t < (long)tasks; t++) {
            size_t g0 = (size_t)t * per, ng = groups - g0 < per ? groups - g0 : per;
            for (size_t k0 = 0; k0 < kp || k0 == 0; k0 += DEPTH_BLOCK) {
                size_t kb = kp - k0 < DEPTH_BLOCK ? kp - k0 : DEPTH_BLOCK;
                pack_b2(b, b_trans, k, n, k0, kb, g0, ng, mine);
                for (size_t g = 0; g < ng; g++)
                    column_group(ap, m, kp, k0, kb, mine + g * (kb / 2 * 32), c2, n, (g0 + g) * 32, tmp);
            }
        }
        _tile_release();
    }
    free(ap);
    free(bp);
    return 1;
}
