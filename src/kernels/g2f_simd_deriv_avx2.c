/* g2f_simd_deriv_avx2: the GELU derivative loop (g2f_gelu_deriv.h)
 * compiled with -mavx2, 8 floats at a time; called only when the CPU has
 * AVX2 (g2f_cpu_features). The same operations as the baseline instance in
 * g2f_ffn.c, so the same bits. */
#include "g2f_gelu_deriv.h"
#include "g2f_simd.h"

void g2f_simd_gelu_deriv(const float *x, float *g, size_t n) { g2f_gelu_deriv_loop(x, g, n); }
