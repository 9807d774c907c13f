/* GELU forms: the seed lesson's values, and the documented tanh/erf gap. */
#include <math.h>

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

int main(void) {
    RUN(gelu_tanh_should_match_lesson_values);
    RUN(gelu_float_should_stay_within_the_tolerance_model);
    RUN(gelu_forms_should_differ_by_at_most_4_7e_4_near_2_7);
    RUN(gelu_deriv_should_match_finite_difference);
    CHECK_EXIT();
}
