/* g2f_layernorm: LayerNorm kernels; see g2f_layernorm.h.
 *
 * The workload: a block's two LayerNorms over (tokens, n_embd), up to a few
 * thousand rows of 768-1600 floats, next to matmuls a thousand times
 * costlier, so the fast kernel stays plain C (vectorized by the compiler at
 * -O3): three passes over a row that sits in L1, double arithmetic.
 */
#include "g2f_layernorm.h"

#include "g2f_cpu.h"

#include <math.h>

/* Four interleaved partial sums in double, combined as (s0 + s1) + (s2 + s3):
 * a fixed order that the compiler can keep in vector lanes (a single
 * running sum cannot be vectorized without reassociating it). */
static double sum4(const float *x, size_t d) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0;
    for (; j + 4 <= d; j += 4) {
        s0 += x[j];
        s1 += x[j + 1];
        s2 += x[j + 2];
        s3 += x[j + 3];
    }
    for (; j < d; j++) s0 += x[j];
    return (s0 + s1) + (s2 + s3);
}

static double centred_squares4(const float *x, size_t d, double mean) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0;
    for (; j + 4 <= d; j += 4) {
        double a = x[j] - mean, b = x[j + 1] - mean, c = x[j + 2] - mean, e = x[j + 3] - mean;
        s0 += a * a;
        s1 += b * b;
        s2 += c * c;
        s3 += e * e;
    }
    for (; j < d; j++) {
        double a = x[j] - mean;
        s0 += a * a;
    }
    return (s0 + s1) + (s2 + s3);
}

/* y_j = ((x_j - mean) rstd) w_j + b_j in double, rounded once; the four
 * cases keep the inner loop free of tests. */
static void normalize_row(const float *x, size_t d, double mean, double rstd, const float *w, const float *b,
                          float *y) {
    if (w && b)
        for (size_t j = 0; j < d; j++) y[j] = (float)((x[j] - mean) * rstd * w[j] + b[j]);
    else if (w)
        for (size_t j = 0; j < d; j++) y[j] = (float)((x[j] - mean) * rstd * w[j]);
    else if (b)
        for (size_t j = 0; j < d; j++) y[j] = (float)((x[j] - mean) * rstd + b[j]);
    else
        for (size_t j = 0; j < d; j++) y[j] = (float)((x[j] - mean) * rstd);
}

void g2f_ln_forward(const float *x, size_t n_rows, size_t d, const float *w, const float *b, double eps, float *y,
                    double *mean, double *rstd, int n_threads) {
    long rows = (long)n_rows;
#ifdef _OPENMP
    int threads = g2f_threads(n_threads);
#pragma omp parallel for schedule(static) num_threads(threads)
#else
    (void)n_threads;
#endif
    for (long r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d;
        double m = d ? sum4(xr, d) / (double)d : 0.0;
        double var = d ? centred_squares4(xr, d, m) / (double)d : 0.0;
        double rs = 1.0 / sqrt(var + eps);
        if (mean) mean[r] = m;
        if (rstd) rstd[r] = rs;
        normalize_row(xr, d, m, rs, w, b, y + (size_t)r * d);
    }
}

void g2f_ln_forward_ref(const float *x, size_t n_rows, size_t d, const float *w, const float *b, double eps, float *y,
                        double *mean, double *rstd) {
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * d;
        double s = 0, q = 0;
        for (size_t j = 0; j < d; j++) s += xr[j];
        double m = d ? s / (double)d : 0.0;
        for (size_t j = 0; j < d; j++) q += ((double)xr[j] - m) * ((double)xr[j] - m);
        double var = d ? q / (double)d : 0.0;
        double rs = 1.0 / sqrt(var + eps);
        if (mean) mean[r] = m;
        if (rstd) rstd[r] = rs;
        for (size_t j = 0; j < d; j++) {
            double v = ((double)xr[j] - m) * rs;
            if (w) v *= w[j];
            if (b) v += b[j];
            y[r * d + j] = (float)v;
        }
    }
}
