/* GELU forms: the seed lesson's values, and the documented tanh/erf gap. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "g2f_ffn.h"

static void gelu_tanh_should_match_lesson_values(void) {
    CHECK_NEAR(g2f_gelu_tanh(-3.0f), -0.0036, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(-1.0f), -0.1588, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(1.0f), 0.8412, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(2.0f), 1.9546, 5e-5);
    CHECK(g2f_gelu_tanh(0.0f) == 0.0f);
}

/* The tolerance model (g2f_tol.h) allows 2 u (|act| + |pre|) per GELU
 * implementation: check ours stays inside that against double. */
static void gelu_float_should_stay_within_the_tolerance_model(void) {
    double worst_t = 0, worst_e = 0;
    for (int i = -80000; i <= 80000; i++) {
        float x = (float)i / 10000.0f;
        double t = g2f_gelu_tanh_f64(x), e = g2f_gelu_erf_f64(x);
        if (x == 0) continue;
        double et = fabs(g2f_gelu_tanh(x) - t) / (fabs(t) + fabs(x)) / 0x1p-24;
        double ee = fabs(g2f_gelu_erf(x) - e) / (fabs(e) + fabs(x)) / 0x1p-24;
        if (et > worst_t) worst_t = et;
        if (ee > worst_e) worst_e = ee;
    }
    CHECK(worst_t < 2.0);
    CHECK(worst_e < 2.0);
}

static void gelu_forms_should_differ_by_at_most_4_7e_4_near_2_7(void) {
    double worst = 0, at = 0;
    for (int i = -80000; i <= 80000; i++) {
        double x = i / 10000.0;
        double d = fabs(g2f_gelu_tanh_f64(x) - g2f_gelu_erf_f64(x));
        if (d > worst) { worst = d; at = x; }
    }
    CHECK(worst > 4.7e-4 && worst < 4.75e-4);
    CHECK(fabs(fabs(at) - 2.7) < 0.05);
    CHECK(fabs(g2f_gelu_tanh_f64(0.05) - g2f_gelu_erf_f64(0.05)) < 1e-8);
}

static void gelu_deriv_should_match_finite_difference(void) {
    for (double x = -5; x <= 5; x += 0.37) {
        double fd = (g2f_gelu_erf_f64(x + 1e-6) - g2f_gelu_erf_f64(x - 1e-6)) / 2e-6;
        CHECK_NEAR(g2f_gelu_deriv(x), fd, 1e-6);
    }
}

/* ulps of float between a and the exact value e (long double). */
static double ulps(float a, long double e) {
    float r = (float)e;
    float next = nextafterf(fabsf(r), INFINITY);
    double ulp = r != 0 ? (double)(next - fabsf(r)) : 0x1p-149;
    return (double)fabsl((long double)a - e) / ulp;
}

static long double exact_tanh(float x) {
    long double u = 0.7978845608028654L * ((long double)x + 0.044715L * (long double)x * x * x);
    return (long double)x / (1.0L + expl(-2.0L * u)); /* = 0.5 x (1 + tanh u), without cancellation */
}

static long double exact_erf(float x) { return 0.5L * (long double)x * erfcl(-(long double)x / sqrtl(2.0L)); }

/* Issue target: within 2 ulp of the correctly rounded GELU on a dense grid,
 * for the scalar and the vectorized (batch) paths, and never worse than the
 * glibc tanhf/erff formulas (which lose tens of ulp for negative x). */
static void gelu_should_be_within_2_ulp_of_correctly_rounded(void) {
    enum { N = 1600001 };
    float *x = malloc(N * sizeof(float)), *yt = malloc(N * sizeof(float)), *ye = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 50000.0f; /* [-16, 16] step 2e-5 */
    g2f_ffn_gelu(G2F_GELU_TANH, x, N, yt, 2);
    g2f_ffn_gelu(G2F_GELU_ERF, x, N, ye, 2);
    double worst_t = 0, worst_e = 0, glibc_t = 0, glibc_e = 0;
    int same = 1;
    for (int i = 0; i < N; i++) {
        long double et = exact_tanh(x[i]), ee = exact_erf(x[i]);
        double ut = ulps(yt[i], et), ue = ulps(ye[i], ee);
        if (ut > worst_t) worst_t = ut;
        if (ue > worst_e) worst_e = ue;
        same &= yt[i] == g2f_gelu_tanh(x[i]) && ye[i] == g2f_gelu_erf(x[i]);
        float gt = 0.5f * x[i] * (1.0f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
        float ge = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f));
        if (ulps(gt, et) > glibc_t) glibc_t = ulps(gt, et);
        if (ulps(ge, ee) > glibc_e) glibc_e = ulps(ge, ee);
    }
    fprintf(stderr, "  max error: tanh %.3f ulp (glibc tanhf formula %.3g), erf %.3f ulp (glibc erff formula %.3g)\n",
            worst_t, glibc_t, worst_e, glibc_e);
    CHECK(worst_t <= 2.0 && worst_e <= 2.0);
    CHECK(worst_t <= glibc_t && worst_e <= glibc_e);
    CHECK(same); /* batch and scalar paths agree bitwise */
    float nan_in = NAN, out;
    g2f_ffn_gelu(G2F_GELU_ERF, &nan_in, 1, &out, 1);
    CHECK(isnan(out));
    free(x); free(yt); free(ye);
}

int main(void) {
    RUN(gelu_tanh_should_match_lesson_values);
    RUN(gelu_float_should_stay_within_the_tolerance_model);
    RUN(gelu_forms_should_differ_by_at_most_4_7e_4_near_2_7);
    RUN(gelu_deriv_should_match_finite_difference);
    RUN(gelu_should_be_within_2_ulp_of_correctly_rounded);
    CHECK_EXIT();
}
