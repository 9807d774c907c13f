/* g2f_simd_dpbf: the sums of squares (g2f_matmul_sq's second product) with
 * AVX-512 BF16's VDPBF16PS; see g2f_simd.h. Compiled with -mavx512f
 * -mavx512bf16; called only when g2f_cpu_features()->dpbf16.
 *
 * Each factor is rounded up to bfloat16 (never down: a bound stays a bound,
 * as on the AMX path, g2f_amx.c), two depth steps a 32-bit lane; one
 * VDPBF16PS adds two exact products to 16 float sums, where an FMA adds one:
 * twice the terms per instruction at the same rate (AMD Zen 5: 6.8 against
 * 7.1 G instructions/s per core). Every term lies in [t, t (1 + 2^-7)^2] of
 * its float value t. Subnormal bfloat16 factors count as zero, as float
 * squares that small underflow anyway. Each element is one chain over the
 * depth block's pairs from zero, then added to C, as the float tile does:
 * the same for any number of rows, columns or threads. */
#include "g2f_simd.h"

#include <immintrin.h>

#include "g2f_bf16_up.h"

#define MR G2F_MR512
#define NR G2F_NR512

void g2f_dpbf_pairs(const float *src, size_t kc, size_t width, int square, float *dst) {
    for (size_t p = 0; 2 * p < kc; p++) {
        const float *r0 = src + 2 * p * width, *r1 = r0 + width;
        int odd = 2 * p + 1 == kc; /* the last pair's second step is zero */
        for (size_t c = 0; c < width; c += 16) {
            __mmask16 m = width - c >= 16 ? 0xffff : (__mmask16)((1u << (width - c)) - 1);
            __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + c), x1 = odd ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, r1 + c);
            if (square) x0 = _mm512_mul_ps(x0, x0), x1 = _mm512_mul_ps(x1, x1);
            __m512i v = _mm512_or_si512(g2f_bf16_up(x0), _mm512_slli_epi32(g2f_bf16_up(x1), 16));
            _mm512_mask_storeu_epi32(dst + p * width + c, m, v);
        }
    }
}

void g2f_dpbf_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first) {
    __m512 acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (size_t p = 0; 2 * p < kc; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_ps(bp + p * NR), b1 = (__m512bh)_mm512_loadu_ps(bp + p * NR + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512bh a = (__m512bh)_mm512_set1_ps(ap[p * MR + r]); /* a move: the pair's bits as they are */
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
        }
    }
    /* rows past mr and columns past nr are the panels' zero padding: not stored */
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (size_t r = 0; r < mr; r++) {
        float *row = c + r * ldc;
        __m512 v0 = acc[r][0], v1 = acc[r][1];
        if (!first) v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, row), v0), v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), v1);
        _mm512_mask_storeu_ps(row, m0, v0);
        _mm512_mask_storeu_ps(row + 16, m1, v1);
    }
}
