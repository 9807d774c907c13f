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
 * C's previous value and the bias, and the same GELU (g2f_simd_gelu on the
 * stored sums): bitwise the AVX2 path's results. */
#include "g2f_simd.h"

#include <immintrin.h>
#include <string.h>

#define MR G2F_MR512
#define NR G2F_NR512

/* The sums of the tile over kc depth steps, from zero, into acc (MR rows
 * of 2 vectors), on B rows at bp + kk * ldb (squared first when sq), the
 * rows of pf (or NULL) fetched into L2 meanwhile. */
static inline __attribute__((always_inline)) void tile_sums(const float *ap, const float *bp, size_t ldb, int sq,
                                                            const float *pf, size_t kc, __m512 acc[MR][2]) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (size_t kk = 0; kk < kc; kk++) {
        __m512 b0 = _mm512_loadu_ps(bp + kk * ldb), b1 = _mm512_loadu_ps(bp + kk * ldb + 16);
        if (sq) b0 = _mm512_mul_ps(b0, b0), b1 = _mm512_mul_ps(b1, b1); /* as the packed squares are rounded */
        if (pf) {
            _mm_prefetch((const char *)(pf + kk * ldb), _MM_HINT_T1);
            _mm_prefetch((const char *)(pf + kk * ldb + 16), _MM_HINT_T1);
        }
        const float *a = ap + kk * MR;
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(a[r]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
}

/* The tile's stores and epilogue, from its sums. */
static void tile_store(__m512 acc[MR][2], float *c, size_t ldc, size_t mr, size_t nr, int first,
                       const g2f_simd_epilogue *ep) {
    if (mr == MR && nr == NR) { /* the common case: straight from the registers */
        __m512 b0 = _mm512_setzero_ps(), b1 = b0;
        if (ep && ep->bias) b0 = _mm512_loadu_ps(ep->bias), b1 = _mm512_loadu_ps(ep->bias + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            float *row = c + (size_t)r * ldc;
            __m512 v0 = acc[r][0], v1 = acc[r][1];
            if (!first) v0 = _mm512_add_ps(_mm512_loadu_ps(row), v0), v1 = _mm512_add_ps(_mm512_loadu_ps(row + 16), v1);
            if (ep && ep->bias) v0 = _mm512_add_ps(v0, b0), v1 = _mm512_add_ps(v1, b1);
            _mm512_storeu_ps(row, v0);
            _mm512_storeu_ps(row + 16, v1);
        }
        if (ep && ep->gelu)
            for (int r = 0; r < MR; r++) g2f_simd_gelu(ep->gelu == 2, c + (size_t)r * ldc, ep->act + (size_t)r * ep->ld_act, NR);
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
        if (ep && ep->gelu) g2f_simd_gelu(ep->gelu == 2, row, ep->act + r * ep->ld_act, nr);
    }
}

void g2f_simd512_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                      int first, const g2f_simd_epilogue *ep) {
    __m512 acc[MR][2];
    tile_sums(ap, bp, NR, 0, NULL, kc, acc);
    tile_store(acc, c, ldc, mr, nr, first, ep);
}

void g2f_simd512_tile_b(const float *ap, const float *b, size_t ldb, int sq, const float *pf, size_t kc, float *c,
                        size_t ldc, size_t mr, size_t nr, int first, const g2f_simd_epilogue *ep) {
    __m512 acc[MR][2];
    if (sq) tile_sums(ap, b, ldb, 1, pf, kc, acc);
    else tile_sums(ap, b, ldb, 0, pf, kc, acc);
    tile_store(acc, c, ldc, mr, nr, first, ep);
}
