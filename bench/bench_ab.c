/* bench_ab: two builds of the FFN kernel in one program, their calls
 * alternated, so that a shared host's drift (10-20% over minutes) hits both
 * alike. Built by scripts/bench-ab, which compiles g2f_ffn.c and
 * g2f_simd_avx2.c of two revisions and renames the second's symbols with a
 * B_ prefix.
 *
 *   bench_ab D TOKENS THREADS SECONDS
 *
 * Prints the median GFLOP/s of each, their ratio, the share of call pairs
 * in which B was faster, and whether the two outputs are bitwise equal (a
 * change of blocking order or a part switched off makes them differ). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "g2f_ffn.h"

/* B's g2f_ffn_forward. A revision from before the workspace argument
 * (g2f_ffn_ws) ignores the trailing argument it is passed (x86-64 calling
 * convention), and allocates its own scratch per call. */
void B_g2f_ffn_forward(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                       float *act, float *out, int n_threads, g2f_ffn_ws *ws);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float unit(void) { /* uniform in [-0.5, 0.5) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(rng >> 40) * 0x1p-24f - 0.5f;
}
static float *filled(size_t n, float scale) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_ab: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++) p[i] = scale * unit();
    return p;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_ab D TOKENS THREADS SECONDS\n");
        return 2;
    }
    size_t d = (size_t)atol(argv[1]), t = (size_t)atol(argv[2]), h = 4 * d;
    int th = atoi(argv[3]);
    double secs = atof(argv[4]);
    /* copies of the weights (>= 256 MiB) so that no call finds them in L3 */
    size_t copies = ((size_t)256 << 20) / (2 * d * h * sizeof(float)) + 2;
    g2f_ffn_weights *w = calloc(copies, sizeof *w);
    for (size_t c = 0; c < copies; c++) { /* the same values in every copy */
        rng = 0x9E3779B97F4A7C15ull;
        w[c] = (g2f_ffn_weights){d, h, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, filled(d * h, 0.1f),
                                 filled(h, 0.6f), filled(d * h, 0.05f), filled(d, 0.04f)};
    }
    float *x = filled(t * d, 4.0f), *pre = filled(t * h, 0), *act = filled(t * h, 0);
    float *oa = filled(t * d, 0), *ob = filled(t * d, 0);
    g2f_ffn_ws ws_a = {0}, ws_b = {0}; /* each side's scratch, kept across its calls */
    enum { MAX = 4000 };
    static double ta[MAX], tb[MAX];
    int n = 0, wins = 0, same = 1;
    double end = now() + secs;
    for (size_t it = 0; (now() < end || n < 5) && n < MAX; it++) {
        /* each call on its own copy of the weights (never warm from the
         * other's call), and A and B taking turns at going first */
        const g2f_ffn_weights *wa = &w[(2 * it) % copies], *wb = &w[(2 * it + 1) % copies];
        double da, db;
        if (it % 2) {
            double t0 = now();
            g2f_ffn_forward(wa, x, t, G2F_GELU_TANH, pre, act, oa, th, &ws_a);
            double t1 = now();
            B_g2f_ffn_forward(wb, x, t, G2F_GELU_TANH, pre, act, ob, th, &ws_b);
            da = t1 - t0, db = now() - t1;
        } else {
            double t0 = now();
            B_g2f_ffn_forward(wb, x, t, G2F_GELU_TANH, pre, act, ob, th, &ws_b);
            double t1 = now();
            g2f_ffn_forward(wa, x, t, G2F_GELU_TANH, pre, act, oa, th, &ws_a);
            db = t1 - t0, da = now() - t1;
        }
        same &= !memcmp(oa, ob, t * d * sizeof(float));
        if (it < 2) continue; /* warm-up */
        ta[n] = da, tb[n] = db;
        wins += tb[n] < ta[n];
        n++;
    }
    qsort(ta, (size_t)n, sizeof(double), cmp);
    qsort(tb, (size_t)n, sizeof(double), cmp);
    double flops = 16.0 * (double)d * (double)d * (double)t;
    printf("d %zu, %zu tokens, %d threads, %d call pairs: A %.1f GFLOP/s, B %.1f GFLOP/s, B/A %.3f, "
           "B faster in %.0f%% of pairs; outputs %s\n",
           d, t, th, n, flops / ta[n / 2] * 1e-9, flops / tb[n / 2] * 1e-9, ta[n / 2] / tb[n / 2],
           100.0 * wins / n, same ? "bitwise equal" : "differ");
    free(ws_a.buf);
    free(ws_b.buf);
    return 0;
}
