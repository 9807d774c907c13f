/* LayerNorm kernels: a worked example, the fast kernel against the double
 * reference (with a derived bound), bitwise determinism across thread
 * counts, and the gain/bias left out (NULL) against this file's own
 * straightforward LayerNorm. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_layernorm.h"
#include "test_util.h"

/* x = (1, 2, 3, 4): mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25,
 * rstd = 1/sqrt(1.25) = 0.8944272; y = (-1.5, -0.5, 0.5, 1.5) rstd w + b. */
static void ln_should_reproduce_worked_example(void) {
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, -1}, b[4] = {0, 0, 0, 10};
    float y[4], yr[4];
    double mean, rstd;
    g2f_ln_forward(x, 1, 4, w, b, 0.0, y, &mean, &rstd, 1);
    CHECK(mean == 2.5);
    CHECK_NEAR(rstd, 0.894427191, 1e-9);
    CHECK_NEAR(y[0], -1.341640786, 1e-6);
    CHECK_NEAR(y[1], -0.447213595, 1e-6);
    CHECK_NEAR(y[2], 0.894427191, 1e-6);
    CHECK_NEAR(y[3], 10 - 1.341640786, 1e-6);
    g2f_ln_forward_ref(x, 1, 4, w, b, 0.0, yr, NULL, NULL);
    CHECK(memcmp(y, yr, sizeof y) == 0);
    /* a constant row: var 0, so eps alone sets rstd and y is the bias */
    const float c[3] = {5, 5, 5}, cb[3] = {0.25f, -1, 2};
    g2f_ln_forward(c, 1, 3, NULL, cb, 1e-5, y, &mean, &rstd, 1);
    CHECK(mean == 5 && rstd == 1 / sqrt(1e-5));
    CHECK(y[0] == 0.25f && y[1] == -1 && y[2] == 2);
    /* eps enters under the root: var 1.25 + 0.75 = 2 */
    g2f_ln_forward(x, 1, 4, NULL, NULL, 0.75, y, NULL, &rstd, 1);
    CHECK_NEAR(rstd, 1 / sqrt(2.0), 1e-15);
}

typedef struct ln_case {
    size_t rows, d;
    float offset, spread; /* x = offset + spread * U(-1, 1) */
} ln_case;

/* Fast against reference. Both evaluate the same double formulas and differ
 * only in the order of the two sums of d terms (four partial sums against
 * one running sum), so before the final rounding their y differ by at most
 *   delta_j = (2d + 8) 2^-53 ((max|x| + |x_j - mean|) rstd |w_j| + |b_j|)
 * (the mean's error, 2 gamma_d max|x|, times rstd |w_j|; rstd's relative
 * error, a gamma_d of var's, times |x_j - mean| rstd |w_j|; a few roundings
 * of the products), and two doubles that close round to floats at most
 * 2^-24 (|y| + |y'|) apart: |y_fast - y_ref| <= 2^-23 |y_ref| + delta_j.
 * The offset rows (mean 3, spread 0.01) make max|x| rstd about 500, the
 * conditioning of a residual stream with a large constant component. */
static void ln_should_agree_with_reference_and_be_thread_count_independent(void) {
    const ln_case cases[] = {{1, 1, 0, 1},      {1, 7, 0.5f, 2},   {5, 33, 0, 1},     {64, 768, 0, 1},
                             {13, 1600, 3, 0.01f}, {3, 1023, -2, 4}, {257, 100, 0, 1e-3f}, {2, 768, 3, 0.01f}};
    double worst_ulp = 0, worst_ratio = 0, worst_stat = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        size_t T = cases[ci].rows, d = cases[ci].d;
        uint64_t s = 17 + ci;
        float *x = malloc(T * d * sizeof(float)), *w = malloc(d * sizeof(float)), *b = malloc(d * sizeof(float));
        float *y1 = malloc(T * d * sizeof(float)), *y2 = malloc(T * d * sizeof(float)),
              *yr = malloc(T * d * sizeof(float));
        double *m1 = malloc(T * sizeof(double)), *r1 = malloc(T * sizeof(double)), *m2 = malloc(T * sizeof(double)),
               *r2 = malloc(T * sizeof(double)), *mr = malloc(T * sizeof(double)), *rr = malloc(T * sizeof(double));
        for (size_t i = 0; i < T * d; i++) x[i] = cases[ci].offset + cases[ci].spread * rnd_unit(&s);
        for (size_t j = 0; j < d; j++) w[j] = 1 + 0.3f * rnd_unit(&s), b[j] = 0.1f * rnd_unit(&s);
        for (int variant = 0; variant < 4; variant++) { /* gain and bias present or NULL */
            const float *wv = variant & 1 ? NULL : w, *bv = variant & 2 ? NULL : b;
            g2f_ln_forward(x, T, d, wv, bv, 1e-5, y1, m1, r1, 1);
            g2f_ln_forward(x, T, d, wv, bv, 1e-5, y2, m2, r2, 2);
            CHECK(memcmp(y1, y2, T * d * sizeof(float)) == 0);
            CHECK(memcmp(m1, m2, T * sizeof(double)) == 0 && memcmp(r1, r2, T * sizeof(double)) == 0);
            g2f_ln_forward_ref(x, T, d, wv, bv, 1e-5, yr, mr, rr);
            for (size_t t = 0; t < T; t++) {
                double maxx = 0;
                for (size_t j = 0; j < d; j++) maxx = fmax(maxx, fabs(x[t * d + j]));
                double es = fmax(fabs(m1[t] - mr[t]) / (maxx + DBL_MIN), fabs(r1[t] - rr[t]) / rr[t]);
                worst_stat = fmax(worst_stat, es);
                for (size_t j = 0; j < d; j++) {
                    size_t i = t * d + j;
                    double wj = wv ? fabs(wv[j]) : 1, bj = bv ? fabs(bv[j]) : 0;
                    double delta = (2.0 * d + 8) * 0x1p-53 * ((maxx + fabs(x[i] - mr[t])) * rr[t] * wj + bj);
                    double err = fabs((double)y1[i] - yr[i]), bound = 0x1p-23 * fabs(yr[i]) + delta + 0x1p-149;
                    float ulp = nextafterf(fabsf(yr[i]), INFINITY) - fabsf(yr[i]);
                    worst_ulp = fmax(worst_ulp, err / ulp);
                    worst_ratio = fmax(worst_ratio, err / bound);
                }
            }
        }
        free(x); free(w); free(b); free(y1); free(y2); free(yr);
        free(m1); free(r1); free(m2); free(r2); free(mr); free(rr);
    }
    fprintf(stderr, "  fast vs reference: y within %.2f ulp (%.2f of the bound), mean/rstd within %.2g relative\n",
            worst_ulp, worst_ratio, worst_stat);
    CHECK(worst_ratio <= 1.0);
    CHECK(worst_stat < 1e-12); /* (2d + 8) 2^-53 for d <= 1600 is 3.6e-13 */
}

/* This file's own LayerNorm: long double, the textbook two passes. */
static void ln_plain(const float *x, size_t d, const float *w, const float *b, double eps, long double *y) {
    long double m = 0, v = 0;
    for (size_t j = 0; j < d; j++) m += x[j];
    m /= d;
    for (size_t j = 0; j < d; j++) v += (x[j] - m) * (x[j] - m);
    v /= d;
    for (size_t j = 0; j < d; j++) y[j] = (x[j] - m) / sqrtl(v + eps) * (w ? w[j] : 1.0L) + (b ? b[j] : 0.0L);
}

/* The gain and bias left out (NULL) model a port that dropped them: the
 * same as a gain of ones / a bias of zeros, and as the plain formula. */
static void ln_missing_gain_or_bias_should_mean_one_or_zero(void) {
    enum { T = 6, D = 50 };
    float x[T * D], w[D], b[D], ones[D], zeros[D], y[T * D], y2[T * D];
    long double want[D];
    uint64_t s = 5;
    for (size_t i = 0; i < T * D; i++) x[i] = 2 * rnd_unit(&s) + 0.5f;
    for (size_t j = 0; j < D; j++) w[j] = 1 + 0.5f * rnd_unit(&s), b[j] = rnd_unit(&s), ones[j] = 1, zeros[j] = 0;
    for (int variant = 0; variant < 4; variant++) {
        const float *wv = variant & 1 ? NULL : w, *bv = variant & 2 ? NULL : b;
        g2f_ln_forward(x, T, D, wv, bv, 1e-5, y, NULL, NULL, 2);
        g2f_ln_forward(x, T, D, wv ? wv : ones, bv ? bv : zeros, 1e-5, y2, NULL, NULL, 2);
        for (size_t i = 0; i < T * D; i++) CHECK(y[i] == y2[i]);
        double worst = 0;
        for (size_t t = 0; t < T; t++) {
            ln_plain(x + t * D, D, wv, bv, 1e-5, want);
            for (size_t j = 0; j < D; j++)
                worst = fmax(worst, (double)fabsl(y[t * D + j] - want[j]) / (fabsl(want[j]) + 1e-30L));
        }
        CHECK(worst < 0x1p-23); /* rounded once from double: half an ulp, and a hair */
    }
    /* in place (y == x) */
    memcpy(y2, x, sizeof x);
    g2f_ln_forward(y2, T, D, w, b, 1e-5, y2, NULL, NULL, 1);
    g2f_ln_forward(x, T, D, w, b, 1e-5, y, NULL, NULL, 1);
    CHECK(memcmp(y, y2, sizeof y) == 0);
}

static void ln_should_propagate_nonfinite_rows_only(void) {
    float x[3 * 4] = {1, 2, 3, 4, 1, NAN, 3, 4, 1, 2, INFINITY, 4}, y[12];
    g2f_ln_forward(x, 3, 4, NULL, NULL, 1e-5, y, NULL, NULL, 1);
    for (int j = 0; j < 4; j++) CHECK(isfinite(y[j]) && isnan(y[4 + j]) && isnan(y[8 + j]));
}

int main(void) {
    RUN(ln_should_reproduce_worked_example);
    RUN(ln_should_agree_with_reference_and_be_thread_count_independent);
    RUN(ln_missing_gain_or_bias_should_mean_one_or_zero);
    RUN(ln_should_propagate_nonfinite_rows_only);
    CHECK_EXIT();
}
