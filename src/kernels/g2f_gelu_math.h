/* g2f_gelu_math: GELU in double precision, rounded once to float, so the
 * float result is within about 0.5 ulp of the correctly rounded GELU (the
 * float formulas lose up to tens of ulp: 1 + tanh(u) and 1 + erf(x/sqrt 2)
 * cancel for negative x). Internal; the same algorithm is vectorized in
 * g2f_simd_avx2.c.
 *
 *   tanh form: GELU(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)),
 *              u = sqrt(2/pi) (x + 0.044715 x^3)
 *   erf form:  GELU(x) = x Phi(x) = 0.5 x erfc(z), z = -x / sqrt 2, where
 *              erfc(z) = 1 - erf(z) (Taylor series) for |z| < 0.5,
 *                        erfcx(z) exp(-z^2) for z >= 0.5 (Chebyshev fit,
 *                        g2f_gelu_coeffs.h), 2 - erfc(-z) for z <= -0.5.
 *   sigmoid forms: GELU(x) = x sigmoid(v) = x / (1 + exp(-v)), with
 *              v = 1.702 x (HF quick_gelu) or 1.60033 x (1 + 0.0433603 x^2)
 *              (MLX); x is clamped below at -1000 (the float result is -0
 *              from far above that), so -inf gives -0 and not -inf/inf.
 * exp is Cody-Waite reduction plus a degree-13 Taylor polynomial, with the
 * argument clamped to [-700, 700] (beyond, the float result is 0 or x).
 * No fma anywhere (the build is ISO C, which does not contract), so the
 * vector forms compute bitwise the same values as these.
 */
#ifndef G2F_GELU_MATH_H
#define G2F_GELU_MATH_H

#include <stdint.h>
#include <string.h>

#include "g2f_gelu_coeffs.h"

#define G2F_LOG2E 1.4426950408889634
#define G2F_LN2_HI 6.93147180369123816490e-01
#define G2F_LN2_LO 1.90821492927058770002e-10
#define G2F_SQRT_2_OVER_PI 0.7978845608028654
#define G2F_INV_SQRT2 0.70710678118654752440
#define G2F_TWO_OVER_SQRT_PI 1.1283791670955126
#define G2F_GELU_SIGMOID_K 1.702
#define G2F_GELU_MLX_K 1.60033
#define G2F_GELU_MLX_C 0.0433603
#define G2F_GELU_SIGMOID_XMIN -1000.0

static inline double g2f_exp_d(double x) {
    x = x < -700.0 ? -700.0 : x > 700.0 ? 700.0 : x;
    double n = __builtin_nearbyint(x * G2F_LOG2E);
    double r = (x - n * G2F_LN2_HI) - n * G2F_LN2_LO;
    double p = 1.0 / 6227020800.0; /* 1/13! */
    static const double inv_fact[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                        1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                        1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                                        1.0};
    for (int i = 0; i < 13; i++) p = p * r + inv_fact[i];
    uint64_t bits = (uint64_t)((int64_t)n + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* erfcx(z) = erfc(z) exp(z^2) for z >= 0.5 (z is clamped to 12: beyond it
 * the float GELU underflows anyway). */
static inline double g2f_erfcx_d(double z) {
    z = z > 12.0 ? 12.0 : z;
    double t = (z - G2F_ERFCX_K) / (z + G2F_ERFCX_K);
    double u = (2.0 * t - G2F_ERFCX_TSUM) / G2F_ERFCX_TSPAN;
    double b1 = 0, b2 = 0; /* Clenshaw */
    for (int k = G2F_ERFCX_N - 1; k >= 1; k--) {
        double b0 = 2.0 * u * b1 - b2 + g2f_erfcx_cheb[k];
        b2 = b1;
        b1 = b0;
    }
    return u * b1 - b2 + g2f_erfcx_cheb[0];
}

/* erf(z) for |z| < 0.5 by its Taylor series (terms fall below 1e-17). */
static inline double g2f_erf_small_d(double z) {
    double z2 = z * z, s = 0;
    static const double c[12] = {/* (-1)^n / (n! (2n+1)), n = 11 .. 0 */
                                 -1.0 / (39916800.0 * 23), 1.0 / (3628800.0 * 21), -1.0 / (362880.0 * 19),
                                 1.0 / (40320.0 * 17),     -1.0 / (5040.0 * 15),   1.0 / (720.0 * 13),
                                 -1.0 / (120.0 * 11),      1.0 / (24.0 * 9),       -1.0 / (6.0 * 7),
                                 1.0 / (2.0 * 5),          -1.0 / 3.0,             1.0};
    for (int i = 0; i < 12; i++) s = s * z2 + c[i];
    return G2F_TWO_OVER_SQRT_PI * z * s;
}

static inline double g2f_gelu_tanh_d(double x) {
    double u = G2F_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    return x / (1.0 + g2f_exp_d(-2.0 * u));
}

static inline double g2f_gelu_erf_d(double x) {
    double z = -x * G2F_INV_SQRT2, erfc;
    if (z >= 0.5) erfc = g2f_erfcx_d(z) * g2f_exp_d(-z * z);
    else if (z <= -0.5) erfc = 2.0 - g2f_erfcx_d(-z) * g2f_exp_d(-z * z);
    else erfc = 1.0 - g2f_erf_small_d(z);
    return 0.5 * x * erfc;
}

static inline double g2f_gelu_sigmoid_d(double x) {
    double xc = x < G2F_GELU_SIGMOID_XMIN ? G2F_GELU_SIGMOID_XMIN : x;
    return xc / (1.0 + g2f_exp_d(-(G2F_GELU_SIGMOID_K * xc)));
}

static inline double g2f_gelu_mlx_d(double x) {
    double xc = x < G2F_GELU_SIGMOID_XMIN ? G2F_GELU_SIGMOID_XMIN : x;
    double v = (G2F_GELU_MLX_K * xc) * (1.0 + G2F_GELU_MLX_C * (xc * xc));
    return xc / (1.0 + g2f_exp_d(-v));
}

#endif
