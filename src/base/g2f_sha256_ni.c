/* g2f_sha256_ni: see g2f_sha256_ni.h. The SHA instructions keep the state as
 * two registers, (A, B, E, F) and (C, D, G, H), and do two rounds per
 * sha256rnds2; sha256msg1/msg2 extend the message schedule four words at a
 * time (FIPS 180-4 section 6.2.2, step 1). */
#include "g2f_sha256_ni.h"

#include <immintrin.h>

void g2f_sha256_ni_blocks(uint32_t h[8], const unsigned char *p, size_t n) {
    /* h[0..3] = A B C D, h[4..7] = E F G H (lane 0 first) */
    __m128i dcba = _mm_loadu_si128((const __m128i *)h), hgfe = _mm_loadu_si128((const __m128i *)(h + 4));
    __m128i badc = _mm_shuffle_epi32(dcba, 0xB1);   /* lanes B A D C */
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);   /* lanes H G F E */
    __m128i abef = _mm_alignr_epi8(badc, efgh, 8);  /* lanes F E B A */
    __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xF0); /* lanes H G D C */
    /* message words are big-endian */
    const __m128i bswap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    for (; n > 0; n--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, w[4];
        for (int i = 0; i < 16; i++) { /* rounds 4i .. 4i+3; w[i % 4] holds W[4i .. 4i+3] */
            if (i < 4) {
                w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
            } else { /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] */
                __m128i t = _mm_sha256msg1_epu32(w[i % 4], w[(i + 1) % 4]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4));
                w[i % 4] = _mm_sha256msg2_epu32(t, w[(i + 3) % 4]);
            }
            __m128i wk = _mm_add_epi32(w[i % 4], _mm_loadu_si128((const __m128i *)(g2f_sha256_k + 4 * i)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}
