/* g2f_bf16_up: floats rounded up to bfloat16 for the sums of squares on
 * bfloat16 factors (g2f_amx.c, g2f_simd_dpbf.c), so that both paths bound
 * the float32 sums the same way. Internal to the kernels layer; only for
 * translation units compiled with -mavx512f and called on such CPUs. */
#ifndef G2F_BF16_UP_H
#define G2F_BF16_UP_H

#include <immintrin.h>

/* x rounded up to bfloat16 (its upper 16 bits after adding 0xffff: the
 * carry makes any nonzero lower half round away from zero), in the low half
 * of each 32-bit lane; NaN stays a quiet NaN (the add could carry a NaN's
 * payload into its sign). */
static inline __m512i g2f_bf16_up(__m512 x) {
    __m512i bits = _mm512_castps_si512(x);
    __m512i up = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0xffff)), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_epi32(up, nan, _mm512_set1_epi32(0x7fc0));
}

#endif
