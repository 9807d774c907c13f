/* g2f_cpu_f16c: half <-> float with F16C, in its own translation unit
 * compiled with -mavx -mf16c and called only when g2f_cpu_features()->f16c. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "g2f_cpu.h"
#include "g2f_tensor.h"

void g2f_cpu_f16_to_f32(const unsigned char *src, float *dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h;
        memcpy(&h, src + 2 * i, sizeof h);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = _cvtsh_ss(h);
    }
}

/* VCVTPS2PH with its rounding in the immediate (nearest even: MXCSR is not
 * read) and VCVTPH2PS, which is exact. */
unsigned short g2f_cpu_f32_to_f16(float v) { return v != v ? g2f_f32_to_f16(v) : (uint16_t)_cvtss_sh(v, 0); }

float g2f_cpu_round_f16(float v) { return v != v ? v : _cvtsh_ss((unsigned short)_cvtss_sh(v, 0)); }

void g2f_cpu_round_f16_span(const float *in, float *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(in + i), 0)));
    for (; i < n; i++) out[i] = g2f_cpu_round_f16(in[i]);
}

void g2f_cpu_f32_to_f16_span(const float *in, unsigned short *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(in + i);
        _mm_storeu_si128((__m128i *)(void *)(out + i), _mm256_cvtps_ph(x, 0));
        int nan = _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        for (int k = 0; nan; k++, nan >>= 1) /* a NaN's half as g2f_f32_to_f16 makes it (its payload) */
            if (nan & 1) out[i + (size_t)k] = g2f_f32_to_f16(in[i + (size_t)k]);
    }
    for (; i < n; i++) out[i] = g2f_cpu_f32_to_f16(in[i]);
}
