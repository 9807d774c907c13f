/* g2f_diffstat, AVX2: see g2f_diffstat.h. Compiled with -mavx2 alone (no
 * FMA: every product and sum is rounded as in the portable code) and called
 * only when the CPU has AVX2. Element i of a group of eight is lane i % 4 of
 * the low or the high half; each lane keeps the serial state of its own
 * elements (its first largest difference, its last NaN, its partial sums),
 * and the lanes are combined into the serial answer at the end. */
#include "g2f_diffstat.h"

#include <immintrin.h>
#include <math.h>

size_t g2f_diffstat_avx2(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                         g2f_diffstat *st) {
    size_t n8 = n & ~(size_t)7;
    if (!n8) return 0;
    const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    const __m256d relv = _mm256_set1_pd(rel), absv = _mm256_set1_pd(abs), four = _mm256_set1_pd(4.0);
    __m256d mx = zero, mx_idx = _mm256_set1_pd(-1.0), nan_idx = _mm256_set1_pd(-1.0), mr = zero;
    __m256d sab = _mm256_loadu_pd(st->sab), saa = _mm256_loadu_pd(st->saa), out = zero, nan = zero;
    __m256 neq = _mm256_setzero_ps();
    __m256d idx = _mm256_set_pd((double)base + 3, (double)base + 2, (double)base + 1, (double)base);
    for (size_t i = 0; i < n8; i += 8) {
        __m256 fa = _mm256_loadu_ps(a + i), fb = _mm256_loadu_ps(b + i);
        neq = _mm256_or_ps(neq, _mm256_cmp_ps(fa, fb, _CMP_NEQ_UQ));
        for (int h = 0; h < 2; h++) {
            __m256d x = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(fa, 1) : _mm256_castps256_ps128(fa));
            __m256d y = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(fb, 1) : _mm256_castps256_ps128(fb));
            __m256d d = _mm256_andnot_pd(sign, _mm256_sub_pd(x, y)), ax = _mm256_andnot_pd(sign, x);
            __m256d gt = _mm256_cmp_pd(d, mx, _CMP_GT_OQ), isnan_d = _mm256_cmp_pd(d, d, _CMP_UNORD_Q);
            mx = _mm256_blendv_pd(mx, d, gt);
            mx_idx = _mm256_blendv_pd(mx_idx, idx, gt);
            nan_idx = _mm256_blendv_pd(nan_idx, idx, isnan_d);
            nan = _mm256_or_pd(nan, isnan_d);
            __m256d den = _mm256_blendv_pd(one, ax, _mm256_cmp_pd(ax, zero, _CMP_GT_OQ));
            mr = _mm256_max_pd(_mm256_div_pd(d, den), mr); /* a NaN quotient keeps mr */
            __m256d lim = _mm256_add_pd(_mm256_mul_pd(relv, ax), absv);
            out = _mm256_or_pd(out, _mm256_cmp_pd(d, lim, _CMP_NLE_UQ));
            sab = _mm256_add_pd(sab, _mm256_mul_pd(x, y));
            saa = _mm256_add_pd(saa, _mm256_mul_pd(x, x));
            idx = _mm256_add_pd(idx, four);
        }
    }
    _mm256_storeu_pd(st->sab, sab);
    _mm256_storeu_pd(st->saa, saa);
    double m[4], mi[4], ni[4], r[4];
    _mm256_storeu_pd(m, mx);
    _mm256_storeu_pd(mi, mx_idx);
    _mm256_storeu_pd(ni, nan_idx);
    _mm256_storeu_pd(r, mr);
    st->neq |= _mm256_movemask_ps(neq) != 0;
    st->out_tol |= _mm256_movemask_pd(out) != 0;
    for (int l = 0; l < 4; l++)
        if (r[l] > st->max_rel) st->max_rel = r[l];
    if (_mm256_movemask_pd(nan)) { /* the serial walk ends on the last NaN */
        double last = -1;
        for (int l = 0; l < 4; l++)
            if (ni[l] > last) last = ni[l];
        st->max_abs = NAN;
        st->worst = (size_t)last;
        st->nan = 1;
    } else if (!st->nan) { /* the first index of the largest, if it beats what came before */
        double best = 0, at = -1;
        for (int l = 0; l < 4; l++)
            if (mi[l] >= 0 && (m[l] > best || (m[l] == best && at >= 0 && mi[l] < at))) best = m[l], at = mi[l];
        if (at >= 0 && best > st->max_abs) {
            st->max_abs = best;
            st->worst = (size_t)at;
        }
    }
    return n8;
}
