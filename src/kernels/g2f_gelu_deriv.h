/* g2f_gelu_deriv: the GELU's derivative for error propagation, as a loop
 * with no branches that the compiler vectorizes; instantiated twice, in
 * g2f_ffn.c (baseline x86-64 or any target) and in g2f_simd_deriv_avx2.c
 * (AVX2, 8 floats at a time), with the same float operations in the same
 * order (no FMA contraction in ISO C mode), so both give the same bits.
 * Internal to the kernels layer.
 *
 *   GELU'(x) = Phi(x) + x phi(x),  phi(x) = exp(-x^2/2) / sqrt(2 pi),
 *   Phi(x) = erfc(-x / sqrt 2) / 2, erfc by Numerical Recipes' erfcc
 *   (relative error < 1.2e-7 for every argument), exp by Cody-Waite
 *   reduction and a degree-6 polynomial (relative error < 2e-7).
 * The tolerance model (g2f_tol) needs the derivative to a few percent (it
 * scales a variance), so 1e-6 is ample; it is the exact-erf form's
 * derivative for every GELU form (tanh's differs from it by < 2e-3).
 */
#ifndef G2F_GELU_DERIV_H
#define G2F_GELU_DERIV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* exp(x) for x in [-87, 0]; smaller x gives a tiny normal number. */
static inline float g2f_deriv_expf(float x) {
    x = x < -87.0f ? -87.0f : x;
    float n = __builtin_floorf(x * 1.44269504f + 0.5f);
    float r = (x - n * 0.693145752f) - n * 1.42860677e-06f;
    float p = 1.38888889e-03f;
    p = p * r + 8.33333333e-03f;
    p = p * r + 4.16666667e-02f;
    p = p * r + 1.66666667e-01f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t e = (uint32_t)((int32_t)n + 127) << 23; /* n in [-126, 0]: a normal exponent */
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return p * scale;
}

static inline void g2f_gelu_deriv_loop(const float *restrict x, float *restrict g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        v = v == v ? v : 0.0f;       /* NaN: any finite value (the comparison reports the NaN) */
        v = v < -30.0f ? -30.0f : v; /* beyond, GELU' is 0 or 1 in float */
        v = v > 30.0f ? 30.0f : v;
        float z = v * 0.707106781f, az = __builtin_fabsf(z);
        float t = 1.0f / (1.0f + 0.5f * az);
        float poly = -0.82215223f + t * 0.17087277f;
        poly = 1.48851587f + t * poly;
        poly = -1.13520398f + t * poly;
        poly = 0.27886807f + t * poly;
        poly = -0.18628806f + t * poly;
        poly = 0.09678418f + t * poly;
        poly = 0.37409196f + t * poly;
        poly = 1.00002368f + t * poly;
        poly = -1.26551223f + t * poly;
        float e = g2f_deriv_expf(-az * az);                     /* exp(-x^2 / 2) */
        float erfc_az = t * e * g2f_deriv_expf(poly);           /* erfc(|z|) */
        float half = 0.5f * erfc_az; /* Phi(x) = erfc(-z) / 2: half for z < 0, 1 - half otherwise */
        float phi_cap = 0.5f + __builtin_copysignf(0.5f - half, z);
        g[i] = phi_cap + v * 0.398942280f * e;
    }
}

#endif
