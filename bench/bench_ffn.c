/* bench_ffn: gpt2ffn's FFN kernel against an OpenBLAS-built FFN, the
 * machine's FMA peak and memory bandwidth, and g2f_model_open against cat.
 * Benchmark only: the tool never needs OpenBLAS. Run through scripts/bench,
 * which builds this file as
 *   cc -O2 -fopenmp -Isrc -Isrc/base -Iformats -Isrc/kernels -Isrc/load -Isrc/check -Isrc/report bench/bench_ffn.c build-bench/libgpt2ffn.a -lopenblas -lcjson -lz -lm
 *
 * Modes:
 *   bench_ffn write FILE LAYERS D     a safetensors file of LAYERS GPT-2 FFN layers (F32, Conv1D)
 *   bench_ffn open FILE REPS          median seconds of g2f_model_open + g2f_model_close
 *   bench_ffn e2e-data DIR LAYERS D TOKENS
 *                                     DIR/model.safetensors (distinct FFN layers, trained-like magnitudes)
 *                                     and DIR/inputs_TOKENS.safetensors (h.N.mlp.in), for whole-process timings
 *   bench_ffn time CMD ARGS...        runs CMD (stdout to /dev/null): "sec=S maxrss_mib=M exit=E"
 *   bench_ffn f16-copy CHECKPOINT OUT the FFN tensors of CHECKPOINT rounded to F16 (a port for
 *                                     timing `gpt2ffn diff` on converted weights)
 *   bench_ffn ffn [--torch FILE] [--open-s S --cat-s S --file-bytes N] [--quick]
 *                                     the FFN tables (markdown) and the summary of targets
 *   bench_ffn attn [T]                causal attention (g2f_attn_forward) and LayerNorm on
 *                                     GPT-2 124M and 1.5B shapes at T tokens (default 1024):
 *                                     median ms on 1 and all threads, and the CPU seconds of
 *                                     the 1-thread calls (robust to other load on the host)
 *
 * Shapes are synthesized: GPT-2 124M (d 768), 355M (d 1024), 1.5B (d 1600),
 * n_inner 4d, Conv1D layout, magnitudes as scripts/export_fixtures.py synth
 * (c_fc std 2/sqrt(d), c_fc bias N(-0.3, 0.3), c_proj std 0.5/sqrt(4d), c_proj
 * bias std 0.02; x ~ N(0, 1) like an ln_2 output), tanh GELU.
 * Each shape is held in several copies (>= 256 MiB in all) and the timed calls
 * rotate through them, as a model walks its layers: the weights are never
 * warm in the 32 MiB L3 (GPT-2 small's 19 MB would otherwise fit).
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "g2f_attn.h"
#include "g2f_ffn.h"
#include "g2f_layernorm.h"
#include "g2f_model.h"
#include "g2f_tol.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_ffn: cannot allocate %zu bytes\n", bytes);
        exit(2);
    }
    return p;
}

/* ---- other load on the machine: CPU seconds used by everything but this
 * process (from /proc/stat minus getrusage), and steal time (the hypervisor) ---- */
typedef struct cpu_snap {
    double busy, steal, own, wall;
} cpu_snap;

static cpu_snap cpu_snapshot(void) {
    cpu_snap c = {0, 0, 0, now()};
    double tick = (double)sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]) == 8) {
            c.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / tick;
            c.steal = (double)v[7] / tick;
        }
        fclose(f);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    c.own = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
            1e-6 * (double)ru.ru_stime.tv_usec;
    return c;
}

/* Fraction of the machine's CPUs used by other processes since snap,
 * beyond the CPUs a run on `threads` threads leaves free (threads 0: all). */
static double other_load_since_t(cpu_snap a, int threads) {
    cpu_snap b = cpu_snapshot();
    double wall = b.wall - a.wall, ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double other = (b.busy - a.busy) - (b.own - a.own);
    if (threads > 0 && threads < ncpu) other -= (ncpu - threads) * wall;
    return wall > 0 && other > 0 ? other / (wall * ncpu) : 0.0;
}
static double other_load_since(cpu_snap a) { return other_load_since_t(a, 0); }

/* Other processes (tests, builds of other sessions) share the 2 cores: a
 * measurement they disturb is redone after waiting for quiet, within an
 * overall waiting budget so the run still ends. */
#define QUIET 0.05 /* other processes' share of the CPUs below which a measurement counts as undisturbed */
static double wait_budget = 60.0;
static void wait_quiet(void) {
    for (;;) {
        cpu_snap a = cpu_snapshot();
        usleep(300000); /* also lets OpenBLAS's and libgomp's spinning workers go to sleep */
        double l = other_load_since(a);
        if (l < QUIET || wait_budget <= 0) return;
        wait_budget -= 0.3;
    }
}

/* ---- random numbers: splitmix64, Box-Muller ---- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1.0p-53; }
static void fill_normal(float *v, size_t n, double mean, double std) {
    for (size_t i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(rng_unit())), t = 6.283185307179586 * rng_unit();
        v[i] = (float)(mean + std * r * cos(t));
        if (i + 1 < n) v[i + 1] = (float)(mean + std * r * sin(t));
    }
}

/* ---- one GPT-2 FFN shape, in nl copies ---- */
typedef struct shape {
    const char *name;
    size_t d, h, nl;
    float *mem;            /* nl layers, each w_fc | b_fc | w_proj | b_proj */
    g2f_ffn_weights *w;    /* nl views */
} shape;

static size_t layer_floats(size_t d, size_t h) { return d * h + h + h * d + d; }

static void shape_make(shape *s, const char *name, size_t d, size_t min_bytes) {
    s->name = name;
    s->d = d;
    s->h = 4 * d;
    size_t lf = layer_floats(d, s->h);
    s->nl = (min_bytes + lf * 4 - 1) / (lf * 4);
    if (s->nl < 2) s->nl = 2;
    s->mem = xalloc(s->nl * lf * sizeof(float));
    s->w = calloc(s->nl, sizeof *s->w);
    float *l0 = s->mem;
    fill_normal(l0, d * s->h, 0.0, 2.0 / sqrt((double)d));
    fill_normal(l0 + d * s->h, s->h, -0.3, 0.3);
    fill_normal(l0 + d * s->h + s->h, s->h * d, 0.0, 0.5 / sqrt((double)s->h));
    fill_normal(l0 + 2 * d * s->h + s->h, d, 0.0, 0.02);
    for (size_t l = 0; l < s->nl; l++) {
        float *p = s->mem + l * lf;
        if (l) memcpy(p, l0, lf * sizeof(float));
        s->w[l] = (g2f_ffn_weights){d, s->h, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, p, p + d * s->h,
                                    p + d * s->h + s->h, p + 2 * d * s->h + s->h};
    }
}

static void shape_free(shape *s) {
    free(s->mem);
    free(s->w);
}

/* ---- the two FFNs ---- */
enum { IMPL_G2F, IMPL_BLAS };

static void add_bias(float *c, size_t m, size_t n, const float *bias, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < (long)m; i++)
        for (size_t j = 0; j < n; j++) c[(size_t)i * n + j] += bias[j];
}

/* The FFN from OpenBLAS: c_fc GEMM (beta 0), bias, GELU (g2f_ffn_gelu: the
 * same GELU code as gpt2ffn), c_proj GEMM, bias. One token uses sgemv. */
static void blas_ffn(const g2f_ffn_weights *w, const float *x, size_t t, float *pre, float *act, float *out,
                     int threads) {
    int d = (int)w->n_embd, h = (int)w->n_inner;
    if (t == 1)
        cblas_sgemv(CblasRowMajor, CblasTrans, d, h, 1.0f, w->w_fc, h, x, 1, 0.0f, pre, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t, h, d, 1.0f, x, d, w->w_fc, h, 0.0f, pre, h);
    add_bias(pre, t, (size_t)h, w->b_fc, threads);
    g2f_ffn_gelu(G2F_GELU_TANH, pre, t * (size_t)h, act, threads);
    if (t == 1)
        cblas_sgemv(CblasRowMajor, CblasTrans, h, d, 1.0f, w->w_proj, d, act, 1, 0.0f, out, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t, d, h, 1.0f, act, h, w->w_proj, d, 0.0f, out,
                    d);
    add_bias(out, t, (size_t)d, w->b_proj, threads);
}

static void run_ffn(int impl, const g2f_ffn_weights *w, const float *x, size_t t, float *pre, float *act, float *out,
                    int threads, g2f_ffn_ws *ws) {
    if (impl == IMPL_G2F) g2f_ffn_forward(w, x, t, G2F_GELU_TANH, pre, act, out, threads, ws);
    else blas_ffn(w, x, t, pre, act, out, threads);
}

/* Median seconds per FFN call of gpt2ffn and of the OpenBLAS FFN, timed in
 * alternating blocks (4 of each, rotating through the shape's layer copies):
 * a shared host drifts by 10-20% over minutes, and alternating makes both see
 * the same machine. Blocks rather than single calls because both libraries'
 * idle workers spin for a while after a call (OpenBLAS for about 2^28 cycles)
 * and would steal the other's cores: each block starts after a pause that
 * lets them sleep, and with one untimed call. */
typedef struct ffn_bufs {
    float *pre, *act, *out;
    g2f_ffn_ws *ws; /* gpt2ffn's scratch, kept across calls as verify keeps it */
} ffn_bufs;

#define ROUNDS 4
static double fma_peak_n(int threads, long iters, int trials);
/* fma_med (NULL: not measured): the median GFLOP/s of a ~15 ms run of the FMA
 * loop made after each timed gpt2ffn call, so that the FFN's median and the
 * peak's median are taken under the same conditions. */
static void time_pair_once(const shape *s, const float *x, size_t t, ffn_bufs g, ffn_bufs b, int threads,
                           double budget, double *g2f_s, double *blas_s, double *fma_med) {
    openblas_set_num_threads(threads);
    double t0 = now();
    run_ffn(IMPL_G2F, &s->w[s->nl - 1], x, t, g.pre, g.act, g.out, threads, g.ws); /* warm-up */
    run_ffn(IMPL_BLAS, &s->w[0], x, t, b.pre, b.act, b.out, threads, NULL);
    double est = now() - t0;
    if (est < 0.04) /* short calls: warm up on every copy, and estimate again */
        for (size_t l = 0; l < s->nl; l++) {
            if (!l) t0 = now();
            run_ffn(IMPL_G2F, &s->w[l], x, t, g.pre, g.act, g.out, threads, g.ws);
            run_ffn(IMPL_BLAS, &s->w[l], x, t, b.pre, b.act, b.out, threads, NULL);
            if (l + 1 == s->nl) est = (now() - t0) / (double)s->nl;
        }
    int per = (int)(2.0 * budget / est / ROUNDS);
    if (per < 2) per = 2;
    if (per > 50) per = 50;
    double *v[2], *vf = malloc((size_t)(per * ROUNDS) * sizeof(double));
    v[0] = malloc((size_t)(per * ROUNDS) * sizeof(double));
    v[1] = malloc((size_t)(per * ROUNDS) * sizeof(double));
    size_t copy = 0;
    for (int round = 0; round < ROUNDS; round++)
        for (int impl = 0; impl < 2; impl++) {
            ffn_bufs f = impl == IMPL_G2F ? g : b;
            usleep(150000); /* the other library's workers go to sleep */
            run_ffn(impl, &s->w[copy++ % s->nl], x, t, f.pre, f.act, f.out, threads, f.ws); /* wakes this one's */
            for (int r = 0; r < per; r++) {
                double a = now();
                run_ffn(impl, &s->w[copy++ % s->nl], x, t, f.pre, f.act, f.out, threads, f.ws);
                v[impl][round * per + r] = now() - a;
                if (impl == IMPL_G2F && fma_med) vf[round * per + r] = fma_peak_n(threads, 10000000, 1);
            }
        }
    *g2f_s = median(v[IMPL_G2F], per * ROUNDS);
    *blas_s = median(v[IMPL_BLAS], per * ROUNDS);
    if (fma_med) *fma_med = median(vf, per * ROUNDS);
    free(v[0]);
    free(v[1]);
    free(vf);
}

static void time_pair(const shape *s, const float *x, size_t t, ffn_bufs g, ffn_bufs b, int threads, double budget,
                      double *g2f_s, double *blas_s, double *fma_med, double *disturbed) {
    for (int attempt = 0; attempt < 3; attempt++) {
        wait_quiet();
        cpu_snap a = cpu_snapshot();
        time_pair_once(s, x, t, g, b, threads, budget, g2f_s, blas_s, fma_med);
        *disturbed = other_load_since_t(a, threads);
        if (*disturbed < QUIET || wait_budget <= 0) break;
        fprintf(stderr, "bench_ffn: d %zu, %zu tokens, %d threads disturbed (%.0f%% of the CPUs busy elsewhere); again\n",
                s->d, t, threads, 100.0 * *disturbed);
    }
}

/* ---- FMA peak and memory bandwidth ---- */
#define FMA_CHAINS 12
/* Twelve named accumulators (not an array, which -O2 keeps in memory): each
 * a chain of dependent FMAs, 12 chains hide the 4-cycle latency of 2 pipes. */
__attribute__((target("avx2,fma"), noinline)) static float fma_loop(long iters, float seed) {
    __m256 c0 = _mm256_set1_ps(seed), c1 = _mm256_set1_ps(seed + 1), c2 = _mm256_set1_ps(seed + 2);
    __m256 c3 = _mm256_set1_ps(seed + 3), c4 = _mm256_set1_ps(seed + 4), c5 = _mm256_set1_ps(seed + 5);
    __m256 c6 = _mm256_set1_ps(seed + 6), c7 = _mm256_set1_ps(seed + 7), c8 = _mm256_set1_ps(seed + 8);
    __m256 c9 = _mm256_set1_ps(seed + 9), c10 = _mm256_set1_ps(seed + 10), c11 = _mm256_set1_ps(seed + 11);
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
        c0 = _mm256_fmadd_ps(c0, m, a);
        c1 = _mm256_fmadd_ps(c1, m, a);
        c2 = _mm256_fmadd_ps(c2, m, a);
        c3 = _mm256_fmadd_ps(c3, m, a);
        c4 = _mm256_fmadd_ps(c4, m, a);
        c5 = _mm256_fmadd_ps(c5, m, a);
        c6 = _mm256_fmadd_ps(c6, m, a);
        c7 = _mm256_fmadd_ps(c7, m, a);
        c8 = _mm256_fmadd_ps(c8, m, a);
        c9 = _mm256_fmadd_ps(c9, m, a);
        c10 = _mm256_fmadd_ps(c10, m, a);
        c11 = _mm256_fmadd_ps(c11, m, a);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

/* The same with 16-wide (AVX-512) FMAs, 32 flops each: the peak of the
 * kernel's AVX-512 path, against which its share is stated. */
__attribute__((target("avx512f"), noinline)) static float fma_loop512(long iters, float seed) {
    __m512 c0 = _mm512_set1_ps(seed), c1 = _mm512_set1_ps(seed + 1), c2 = _mm512_set1_ps(seed + 2);
    __m512 c3 = _mm512_set1_ps(seed + 3), c4 = _mm512_set1_ps(seed + 4), c5 = _mm512_set1_ps(seed + 5);
    __m512 c6 = _mm512_set1_ps(seed + 6), c7 = _mm512_set1_ps(seed + 7), c8 = _mm512_set1_ps(seed + 8);
    __m512 c9 = _mm512_set1_ps(seed + 9), c10 = _mm512_set1_ps(seed + 10), c11 = _mm512_set1_ps(seed + 11);
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
        c0 = _mm512_fmadd_ps(c0, m, a);
        c1 = _mm512_fmadd_ps(c1, m, a);
        c2 = _mm512_fmadd_ps(c2, m, a);
        c3 = _mm512_fmadd_ps(c3, m, a);
        c4 = _mm512_fmadd_ps(c4, m, a);
        c5 = _mm512_fmadd_ps(c5, m, a);
        c6 = _mm512_fmadd_ps(c6, m, a);
        c7 = _mm512_fmadd_ps(c7, m, a);
        c8 = _mm512_fmadd_ps(c8, m, a);
        c9 = _mm512_fmadd_ps(c9, m, a);
        c10 = _mm512_fmadd_ps(c10, m, a);
        c11 = _mm512_fmadd_ps(c11, m, a);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                             _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
    float out[16];
    _mm512_storeu_ps(out, s);
    return out[0];
}

static volatile float sink_f;
static volatile double sink_d;

/* The FMA width of the peak: 16 lanes when gpt2ffn's kernels run the
 * AVX-512 path (g2f_ffn_isa), else 8; set once by cmd_ffn. */
static int peak_lanes = 8;

/* GFLOP/s of FMA_CHAINS independent peak_lanes-wide FMA chains on each of
 * threads threads (2 peak_lanes flops per FMA instruction); best of trials. */
static double fma_peak_n(int threads, long iters, int trials) {
    double best = 0;
    for (int trial = 0; trial < trials; trial++) {
        double t0 = now();
#pragma omp parallel num_threads(threads)
        {
            float r = peak_lanes == 16 ? fma_loop512(iters, (float)omp_get_thread_num())
                                       : fma_loop(iters, (float)omp_get_thread_num());
            if (r == 12345.0f) sink_f = r;
        }
        double dt = now() - t0;
        double g = (double)threads * (double)iters * FMA_CHAINS * 2.0 * peak_lanes / dt * 1e-9;
        if (g > best) best = g;
    }
    return best;
}
static double fma_peak(int threads) { return fma_peak_n(threads, 20000000, 5); }
/* The peak right around a row (best of 3 runs of ~15 ms): what the FMA units
 * could do while that row was timed. */
static double fma_peak_short(int threads) { return fma_peak_n(threads, 10000000, 3); }

__attribute__((target("avx2"))) static double read_sum(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float o[8];
    _mm256_storeu_ps(o, s);
    return (double)o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}

typedef struct bandwidth {
    double read_gbs, copy_gbs;
} bandwidth;

/* Over a 1 GiB buffer (32x the L3): read = a streaming sum of all of it;
 * copy = memcpy of one half into the other, counted as bytes read + written
 * (STREAM's convention). Each thread takes a contiguous slice; best of
 * `trials`. The buffer is made once and kept, so the one-token rows can
 * measure the read bandwidth again right after they are timed. */
#define BW_BYTES ((size_t)1 << 30)
static float *bw_buffer(int threads) {
    const size_t n = BW_BYTES / sizeof(float);
    float *buf = xalloc(BW_BYTES);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < (long)n; i++) buf[i] = 1.0f;
    return buf;
}

static bandwidth measure_bandwidth(float *buf, int threads, int trials, int with_copy) {
    const size_t bytes = BW_BYTES, n = bytes / sizeof(float);
    bandwidth bw = {0, 0};
    for (int trial = 0; trial < trials; trial++) {
        double t0 = now(), total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t per = n / (size_t)nt / 64 * 64;
            total += read_sum(buf + (size_t)tid * per, per);
        }
        double dt = now() - t0;
        sink_d = total;
        if (bytes / dt * 1e-9 > bw.read_gbs) bw.read_gbs = bytes / dt * 1e-9;
        if (!with_copy) continue;
        t0 = now();
#pragma omp parallel num_threads(threads)
        {
            int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t per = n / 2 / (size_t)nt;
            memcpy(buf + n / 2 + (size_t)tid * per, buf + (size_t)tid * per, per * sizeof(float));
        }
        dt = now() - t0;
        if (bytes / dt * 1e-9 > bw.copy_gbs) bw.copy_gbs = bytes / dt * 1e-9;
    }
    return bw;
}

/* ---- accuracy: max |err| and margin (max |err| / tolerance) against the float64 reference ---- */
typedef struct accuracy {
    double max_abs, margin;
    int ok;
} accuracy;

static accuracy check(const g2f_ffn_weights *w, const float *xs, size_t ns, const float *pre, const float *act,
                      const float *out, const float *ref) {
    size_t d = w->n_embd;
    accuracy a = {0, 0, 0};
    double *exp_out = malloc(ns * d * sizeof *exp_out);
    float *tol = malloc(ns * d * sizeof *tol);
    for (size_t i = 0; i < ns * d; i++) exp_out[i] = ref[i];
    g2f_tol_request rq = {.w = w, .x = xs, .n_tokens = ns, .pre = pre, .act = act, .out = out, .exp_out = exp_out,
                          .dtype_in = G2F_DTYPE_F32, .dtype_out = G2F_DTYPE_F32, .dtype_pre = G2F_DTYPE_F32,
                          .dtype_act = G2F_DTYPE_F32};
    g2f_tol_params tp = {.lambda = G2F_TOL_LAMBDA};
    g2f_error err = {0};
    if (g2f_tol_compute(&rq, &tp, tol, NULL, NULL, 2, &err) != G2F_OK) {
        fprintf(stderr, "bench_ffn: %s\n", err.msg);
        exit(2);
    }
    a.ok = 1;
    for (size_t i = 0; i < ns * d; i++) {
        double e = fabs((double)out[i] - exp_out[i]);
        if (!(e <= a.max_abs)) a.max_abs = e; /* NaN sticks */
        double m = e / tol[i];
        if (!(m <= a.margin)) a.margin = m;
    }
    a.ok = a.margin <= 1.0;
    free(exp_out);
    free(tol);
    return a;
}

/* ---- results ---- */
#define MAX_ROWS 32
typedef struct row {
    const char *shape;
    size_t d, tokens;
    int threads;
    double g2f_s, blas_s, torch_gflops; /* torch_gflops 0: not measured */
    double weight_gbs;                  /* 1 token: bytes of both weight matrices / time */
    double peak;                        /* FMA peak on `threads` threads around this row (best) */
    double peak_med;                    /* median of the FMA loop runs interleaved with the calls */
    double read_gbs;                    /* 1 token: read bandwidth measured right after this row */
    double g2f_dist, blas_dist, torch_dist; /* other processes' CPU share while timing */
} row;

typedef struct accrow {
    const char *shape;
    size_t d, tokens, sampled;
    accuracy g2f, blas;
    int identical;
} accrow;

static row rows[MAX_ROWS];
static int n_rows;
static accrow accrows[MAX_ROWS];
static int n_acc;

static double torch_lookup(const char *file, size_t d, size_t tokens, int threads, double *dist) {
    if (!file) return 0;
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[512];
    double found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long dd, tt;
        int th;
        double g, ds = 0;
        if (sscanf(line, "torch d=%lu tokens=%lu threads=%d %*s gflops=%lf disturbed=%lf", &dd, &tt, &th, &g, &ds) >=
                4 &&
            dd == d && tt == tokens && th == threads) {
            found = g;
            *dist = ds;
        }
    }
    fclose(f);
    return found;
}

/* A ratio's note: the measurement behind it was disturbed by other load. */
static const char *disturbed_note(int disturbed) { return disturbed ? " (disturbed)" : ""; }

static int cmd_ffn(int argc, char **argv) {
    const char *torch_file = NULL;
    double open_s = 0, cat_s = 0, file_bytes = 0, budget = 0.6;
    size_t only_d = 0; /* --only D: one shape (for investigating a row) */
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--torch") && i + 1 < argc) torch_file = argv[++i];
        else if (!strcmp(argv[i], "--open-s") && i + 1 < argc) open_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cat-s") && i + 1 < argc) cat_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--file-bytes") && i + 1 < argc) file_bytes = atof(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) budget = 0.15;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only_d = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "bench_ffn ffn: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const int max_threads = 2;
    /* avx512, avx512_bf16 and amx: the values on the AVX-512 tile */
    peak_lanes = strncmp(g2f_ffn_isa(), "avx512", 6) && strcmp(g2f_ffn_isa(), "amx") ? 8 : 16;
    cpu_snap snap0 = cpu_snapshot();
    fprintf(stderr, "bench_ffn: FMA peak and memory bandwidth...\n");
    double peak[3] = {0, 0, 0}, peak_dist = 0, bw_dist = 0;
    bandwidth bw = {0, 0};
    float *bw_buf = bw_buffer(max_threads);
    for (int attempt = 0; attempt < 3; attempt++) {
        wait_quiet();
        cpu_snap a = cpu_snapshot();
        peak[1] = fma_peak(1);
        peak[2] = fma_peak(2);
        peak_dist = other_load_since(a);
        if (peak_dist < QUIET || wait_budget <= 0) break;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        wait_quiet();
        cpu_snap a = cpu_snapshot();
        bw = measure_bandwidth(bw_buf, max_threads, 5, 1);
        bw_dist = other_load_since(a);
        if (bw_dist < QUIET || wait_budget <= 0) break;
    }

    static const struct { const char *name; size_t d; } shapes[] = {{"124M", 768}, {"355M", 1024}, {"1.5B", 1600}};
    static const size_t token_counts[] = {1, 64, 1024};
    const size_t max_t = 1024;
    for (size_t si = 0; si < 3; si++) {
        if (only_d && shapes[si].d != only_d) continue;
        shape s;
        fprintf(stderr, "bench_ffn: shape %s (d %zu)...\n", shapes[si].name, shapes[si].d);
        shape_make(&s, shapes[si].name, shapes[si].d, (size_t)256 << 20);
        size_t d = s.d, h = s.h;
        float *x = xalloc(max_t * d * sizeof(float));
        fill_normal(x, max_t * d, 0.0, 1.0);
        float *pre = xalloc(max_t * h * 4), *act = xalloc(max_t * h * 4), *out = xalloc(max_t * d * 4);
        float *out1 = xalloc(max_t * d * 4), *act1 = xalloc(max_t * h * 4);
        float *bpre = xalloc(max_t * h * 4), *bact = xalloc(max_t * h * 4), *bout = xalloc(max_t * d * 4);
        g2f_ffn_ws ws = {0};
        g2f_error err = {0};
        for (size_t ti = 0; ti < 3; ti++) {
            size_t t = token_counts[ti];
            for (int threads = max_threads; threads >= 1; threads--) {
                if (threads != max_threads && t != 1024) continue;
                row *r = &rows[n_rows++];
                r->shape = s.name;
                r->d = d;
                r->tokens = t;
                r->threads = threads;
                double p0 = fma_peak_short(threads);
                time_pair(&s, x, t, (ffn_bufs){pre, act, out, &ws}, (ffn_bufs){bpre, bact, bout, NULL}, threads, budget,
                          &r->g2f_s, &r->blas_s, t > 1 ? &r->peak_med : NULL, &r->g2f_dist);
                r->blas_dist = r->g2f_dist;
                double p1 = fma_peak_short(threads);
                r->peak = p0 > p1 ? p0 : p1;
                if (t == 1) r->read_gbs = measure_bandwidth(bw_buf, max_threads, 3, 0).read_gbs;
                r->torch_gflops = torch_lookup(torch_file, d, t, threads, &r->torch_dist);
                r->weight_gbs = 2.0 * (double)d * (double)h * 4.0 / r->g2f_s * 1e-9;
            }
            /* accuracy on layer 0, and 1 vs 2 threads bitwise */
            openblas_set_num_threads(max_threads);
            g2f_ffn_forward(&s.w[0], x, t, G2F_GELU_TANH, pre, act, out, max_threads, &ws);
            g2f_ffn_forward(&s.w[0], x, t, G2F_GELU_TANH, pre, act1, out1, 1, &ws);
            blas_ffn(&s.w[0], x, t, bpre, bact, bout, max_threads);
            accrow *a = &accrows[n_acc++];
            a->shape = s.name;
            a->d = d;
            a->tokens = t;
            a->identical = !memcmp(out, out1, t * d * 4) && !memcmp(act, act1, t * h * 4);
            size_t ns = t < 8 ? t : 8;
            a->sampled = ns;
            float *xs = xalloc(ns * d * 4), *ref = xalloc(ns * d * 4);
            float *sp = xalloc(ns * h * 4), *sa = xalloc(ns * h * 4), *so = xalloc(ns * d * 4);
            float *bp = xalloc(ns * h * 4), *ba = xalloc(ns * h * 4), *bo = xalloc(ns * d * 4);
            for (size_t k = 0; k < ns; k++) {
                size_t tok = ns == 1 ? 0 : k * (t - 1) / (ns - 1); /* spread, first and last included */
                memcpy(xs + k * d, x + tok * d, d * 4);
                memcpy(sp + k * h, pre + tok * h, h * 4);
                memcpy(sa + k * h, act + tok * h, h * 4);
                memcpy(so + k * d, out + tok * d, d * 4);
                memcpy(bp + k * h, bpre + tok * h, h * 4);
                memcpy(ba + k * h, bact + tok * h, h * 4);
                memcpy(bo + k * d, bout + tok * d, d * 4);
            }
            if (g2f_ffn_forward_ref(&s.w[0], xs, ns, G2F_GELU_TANH, NULL, NULL, ref, &err) != G2F_OK) {
                fprintf(stderr, "bench_ffn: %s\n", err.msg);
                return 2;
            }
            a->g2f = check(&s.w[0], xs, ns, sp, sa, so, ref);
            a->blas = check(&s.w[0], xs, ns, bp, ba, bo, ref);
            free(xs), free(ref), free(sp), free(sa), free(so), free(bp), free(ba), free(bo);
        }
        free(x), free(pre), free(act), free(out), free(out1), free(act1), free(bpre), free(bact), free(bout);
        g2f_ffn_ws_free(&ws);
        shape_free(&s);
    }
    free(bw_buf);

    cpu_snap snap1 = cpu_snapshot();
    double wall = snap1.wall - snap0.wall, ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double other = (snap1.busy - snap0.busy) - (snap1.own - snap0.own);
    if (other < 0) other = 0;

    /* ---- tables ---- */
    int n_disturbed = 0;
    for (int i = 0; i < n_rows; i++)
        n_disturbed += rows[i].g2f_dist >= QUIET || rows[i].blas_dist >= QUIET || rows[i].torch_dist >= QUIET;
    n_disturbed += peak_dist >= QUIET || bw_dist >= QUIET;
    printf("Other load during the FFN run (%.0f s, waits for quiet included): other processes used %.0f%% of the "
           "%.0f CPUs, hypervisor steal %.0f%%. A measurement during which other processes used >= %.0f%% of the "
           "CPUs (beyond the core a 1-thread row leaves free) is redone after waiting for quiet (up to 2 times, within 60 s of waiting in all); %d still disturbed%s.\n\n",
           wall, 100.0 * other / (wall * ncpu), ncpu, 100.0 * (snap1.steal - snap0.steal) / (wall * ncpu),
           100.0 * QUIET, n_disturbed,
           n_disturbed ? " (marked *: other processes' CPU share while it ran in brackets; treat with care)" : "");
    printf("Machine: gpt2ffn's kernel path %s (g2f_ffn_isa); FMA peak %.1f GFLOP/s on 1 thread, %.1f GFLOP/s on 2 threads "
           "(%d independent %d-wide FMA chains per thread, %d flops per FMA, best of 5: the width of that path); "
           "memory bandwidth on 2 threads, 1 GiB buffer, best of 5: read (streaming sum) %.1f GB/s, "
           "copy (memcpy, read + write bytes) %.1f GB/s.%s%s\n\n",
           g2f_ffn_isa(), peak[1], peak[2], FMA_CHAINS, peak_lanes, 2 * peak_lanes, bw.read_gbs, bw.copy_gbs,
           peak_dist >= QUIET ? " *peak disturbed" : "", bw_dist >= QUIET ? " *bandwidth disturbed" : "");
    printf("OpenBLAS %s, core %s.\n\n", openblas_get_config(), openblas_get_corename());
    printf("FFN = c_fc GEMM + bias + tanh GELU + c_proj GEMM + bias, 16 d^2 flops per token; "
           "median seconds per call after a warm-up, gpt2ffn and OpenBLAS timed in 4 alternating blocks each, so "
           "that both see the same machine (a shared virtual machine can drift by 10-20%% over minutes), each block after a 150 ms "
           "pause that lets the other library's spinning workers sleep, rotating through copies of the "
           "weights (>= 256 MiB, never warm in L3). %% of FMA peak: against the best of the FMA loop run just before "
           "and just after the row (3 x 15 ms each, same thread count; the ratios below use this one), and against "
           "the median of 15 ms FMA loop runs made after each timed gpt2ffn call (the throughput the FMA units "
           "had while the row ran: on a shared virtual machine other guests can take a share of it, and a best-of "
           "hides that); the one-token rows against the read bandwidth measured again right after them "
           "(best of 3).\n\n");
    printf("| shape | tokens | thr | gpt2ffn ms | gpt2ffn GFLOP/s | tokens/s | %% of FMA peak: best around the row / median interleaved | "
           "OpenBLAS GFLOP/s | vs OpenBLAS | PyTorch GFLOP/s | vs PyTorch | weights GB/s (%% of read BW right after) |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        double flops = 16.0 * (double)r->d * (double)r->d * (double)r->tokens;
        double g = flops / r->g2f_s * 1e-9, gb = flops / r->blas_s * 1e-9;
        char torch_g[32] = "n/a", torch_r[32] = "n/a", wbw[64] = "";
        if (r->torch_gflops > 0) {
            snprintf(torch_g, sizeof torch_g, "%.1f", r->torch_gflops);
            if (r->torch_dist >= QUIET)
                snprintf(torch_g + strlen(torch_g), sizeof torch_g - strlen(torch_g), " *(%.0f%%)",
                         100.0 * r->torch_dist);
            snprintf(torch_r, sizeof torch_r, "%.2fx", g / r->torch_gflops);
        }
        if (r->tokens == 1)
            snprintf(wbw, sizeof wbw, "%.1f (%.0f%% of %.1f)", r->weight_gbs, 100.0 * r->weight_gbs / r->read_gbs,
                     r->read_gbs);
        char gd[32] = "", bd[32] = "";
        if (r->g2f_dist >= QUIET) snprintf(gd, sizeof gd, " *(%.0f%%)", 100.0 * r->g2f_dist);
        if (r->blas_dist >= QUIET) snprintf(bd, sizeof bd, " *(%.0f%%)", 100.0 * r->blas_dist);
        char pk[64];
        int pn = snprintf(pk, sizeof pk, "%.0f%% of %.1f", 100.0 * g / r->peak, r->peak);
        if (r->peak_med > 0)
            snprintf(pk + pn, sizeof pk - (size_t)pn, " / %.0f%% of %.1f", 100.0 * g / r->peak_med, r->peak_med);
        printf("| %s (d %zu) | %zu | %d | %.3f%s | %.1f | %.0f | %s | %.1f%s | %.2fx | %s | %s | %s |\n", r->shape,
               r->d, r->tokens, r->threads, r->g2f_s * 1e3, gd, g, (double)r->tokens / r->g2f_s, pk, gb, bd,
               g / gb, torch_g, torch_r, wbw);
    }
    printf("\nAccuracy on the first layer copy, against g2f_ffn_forward_ref (float64 accumulation and GELU): "
           "max |out - ref| over the sampled tokens (spread over the batch, first and last included), and the "
           "margin = max |out - ref| / tolerance, the tolerance being the one `gpt2ffn verify` derives per "
           "element (6 sigma of float32 rounding, src/check/g2f_tol.h; within tolerance = margin <= 1). "
           "Identical: gpt2ffn's act and out with 1 and 2 threads, memcmp over all tokens.\n\n");
    printf("| shape | tokens | sampled | gpt2ffn max abs err | gpt2ffn margin | OpenBLAS max abs err | "
           "OpenBLAS margin | 1 vs 2 threads identical |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    int all_identical = 1, all_ok = 1;
    double worst_margin = 0, worst_blas_margin = 0;
    for (int i = 0; i < n_acc; i++) {
        accrow *a = &accrows[i];
        printf("| %s (d %zu) | %zu | %zu | %.3g | %.3f | %.3g | %.3f | %s |\n", a->shape, a->d, a->tokens, a->sampled,
               a->g2f.max_abs, a->g2f.margin, a->blas.max_abs, a->blas.margin, a->identical ? "yes" : "no");
        all_identical &= a->identical;
        all_ok &= a->g2f.ok;
        if (a->g2f.margin > worst_margin) worst_margin = a->g2f.margin;
        if (a->blas.margin > worst_blas_margin) worst_blas_margin = a->blas.margin;
    }
    if (open_s > 0 && cat_s > 0) {
        printf("\nOpening a %.2f GB safetensors checkpoint (F32 FFN tensors, page cache warm): g2f_model_open + "
               "g2f_model_close %.3f ms (median, in process; validates the header and maps the file); "
               "`cat FILE > /dev/null` %.1f ms (median, including the process start; %.1f GB/s); "
               "open / cat = %.4f.\n",
               file_bytes * 1e-9, open_s * 1e3, cat_s * 1e3, file_bytes / cat_s * 1e-9, open_s / cat_s);
    }

    /* ---- the ratios, measured against the peers and the machine in this run ---- */
    printf("\n### Ratios\n\n");
    printf("| ratio | measured |\n|---|---|\n");
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        if (r->tokens != 1024 || r->threads != 2 || r->d == 1024) continue;
        double flops = 16.0 * (double)r->d * (double)r->d * (double)r->tokens;
        double g = flops / r->g2f_s * 1e-9, gb = flops / r->blas_s * 1e-9;
        int dg = r->g2f_dist >= QUIET;
        printf("| %s, 1024 tokens, 2 threads: gpt2ffn / the OpenBLAS FFN | %.1f vs %.1f GFLOP/s = %.2fx%s |\n",
               r->shape, g, gb, g / gb, disturbed_note(dg || r->blas_dist >= QUIET));
        printf("| %s, 1024 tokens, 2 threads: share of the FMA peak measured around it | %.1f of %.1f GFLOP/s = "
               "%.0f%% (of the median interleaved FMA loop, %.1f: %.0f%%)%s |\n",
               r->shape, g, r->peak, 100.0 * g / r->peak, r->peak_med, 100.0 * g / r->peak_med, disturbed_note(dg));
        if (r->torch_gflops > 0)
            printf("| %s, 1024 tokens, 2 threads: gpt2ffn / PyTorch | %.1f vs %.1f GFLOP/s = %.2fx%s |\n", r->shape,
                   g, r->torch_gflops, g / r->torch_gflops, disturbed_note(dg || r->torch_dist >= QUIET));
        else
            printf("| %s, 1024 tokens, 2 threads: gpt2ffn / PyTorch | PyTorch not available |\n", r->shape);
    }
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        if (r->tokens != 1) continue;
        printf("| %s, 1 token, 2 threads: share of the read bandwidth measured right after | %.1f of %.1f GB/s = "
               "%.0f%%%s |\n",
               r->shape, r->weight_gbs, r->read_gbs, 100.0 * r->weight_gbs / r->read_gbs,
               disturbed_note(r->g2f_dist >= QUIET));
    }
    if (open_s > 0 && cat_s > 0)
        printf("| opening a %.1f GB checkpoint / cat of it | %.3f ms vs %.1f ms = %.4fx |\n", file_bytes * 1e-9,
               open_s * 1e3, cat_s * 1e3, open_s / cat_s);
    else
        printf("| opening a checkpoint / cat of it | not measured |\n");
    printf("| results for 1 and 2 threads | act and out memcmp-equal in all %d shape x token cases: %s |\n", n_acc,
           all_identical ? "yes" : "no");
    printf("| errors against the verify tolerance | gpt2ffn out vs float64 reference, worst margin %.3f "
           "(OpenBLAS FFN: %.3f)%s |\n",
           worst_margin, worst_blas_margin, all_ok ? "" : ", beyond the tolerance");
    return 0;
}

/* ---- safetensors file for the open benchmark ---- */
static int cmd_write(const char *path, int layers, size_t d) {
    size_t h = 4 * d;
    static const char *names[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
    size_t count[4] = {d * h, h, h * d, d};
    size_t cap = 256 + (size_t)layers * 4 * 160, len = 0;
    char *hdr = malloc(cap);
    len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < 4; k++) {
            char shape[64];
            if (k == 0) snprintf(shape, sizeof shape, "[%zu,%zu]", d, h);
            else if (k == 2) snprintf(shape, sizeof shape, "[%zu,%zu]", h, d);
            else snprintf(shape, sizeof shape, "[%zu]", count[k]);
            len += (size_t)snprintf(hdr + len, cap - len,
                                    ",\"h.%d.mlp.%s\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}", l,
                                    names[k], shape, off, off + count[k] * 4);
            off += count[k] * 4;
        }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((8 + len) % 8) hdr[len++] = ' '; /* data starts 8-aligned */
    float *data = xalloc(count[0] * 4);
    fill_normal(data, count[0], 0.0, 2.0 / sqrt((double)d));
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        perror(tmp);
        return 2;
    }
    uint64_t hl = len;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hl >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    for (int l = 0; l < layers && ok; l++)
        for (int k = 0; k < 4 && ok; k++) ok = fwrite(data, 4, count[k], f) == count[k];
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        perror(path);
        return 2;
    }
    free(hdr);
    free(data);
    return 0;
}

static int cmd_open(const char *path, int reps) {
    g2f_error err = {0};
    g2f_model *m = NULL;
    if (g2f_model_open(path, NULL, &m, &err) != G2F_OK) { /* warm-up, and the check that it opens */
        fprintf(stderr, "bench_ffn: %s\n", err.msg);
        return 2;
    }
    const g2f_model_info *info = g2f_model_get_info(m);
    fprintf(stderr, "bench_ffn: %s: %zu layers, n_embd %zu, n_inner %zu, %s\n", path, info->n_layer, info->n_embd,
            info->n_inner, g2f_layout_name(info->layout));
    g2f_model_close(m);
    double *v = malloc((size_t)reps * sizeof *v);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (g2f_model_open(path, NULL, &m, &err) != G2F_OK) {
            fprintf(stderr, "bench_ffn: %s\n", err.msg);
            return 2;
        }
        g2f_model_close(m);
        v[r] = now() - t0;
    }
    printf("%.9f\n", median(v, reps));
    free(v);
    return 0;
}

/* ---- end-to-end data: a checkpoint of distinct FFN layers with the
 * magnitudes of scripts/export_fixtures.py synth, and FFN inputs like an
 * ln_2 output (N(0, 1) with a few larger channels), for timing whole
 * `gpt2ffn run` / `verify` / `diff` processes (scripts/bench e2e) ---- */
static int write_st(const char *path, size_t n, char names[][64], size_t (*shapes)[2], const size_t *ndim,
                    void (*fill)(size_t i, float *buf, size_t count, void *user), void *user) {
    size_t cap = 256 + n * 160, len = 0, off = 0;
    char *hdr = xalloc(cap);
    len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t maxc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t c = shapes[i][0] * (ndim[i] == 2 ? shapes[i][1] : 1);
        char shape[64];
        if (ndim[i] == 2) snprintf(shape, sizeof shape, "[%zu,%zu]", shapes[i][0], shapes[i][1]);
        else snprintf(shape, sizeof shape, "[%zu]", shapes[i][0]);
        len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                                names[i], shape, off, off + c * 4);
        off += c * 4;
        if (c > maxc) maxc = c;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((8 + len) % 8) hdr[len++] = ' ';
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return perror(tmp), 2;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    float *buf = xalloc(maxc * 4);
    for (size_t i = 0; i < n && ok; i++) {
        size_t c = shapes[i][0] * (ndim[i] == 2 ? shapes[i][1] : 1);
        fill(i, buf, c, user);
        ok = fwrite(buf, 4, c, f) == c;
    }
    ok = fclose(f) == 0 && ok;
    free(buf);
    free(hdr);
    if (!ok || rename(tmp, path) != 0) return perror(path), 2;
    return 0;
}

typedef struct e2e_dims {
    size_t d, h;
} e2e_dims;

static void fill_weights(size_t i, float *buf, size_t count, void *user) {
    const e2e_dims *m = user;
    switch (i % 4) {
    case 0: fill_normal(buf, count, 0.0, 2.0 / sqrt((double)m->d)); break;  /* c_fc: pre std near 2 */
    case 1: fill_normal(buf, count, -0.3, 0.3); break;                      /* c_fc bias */
    case 2: fill_normal(buf, count, 0.0, 0.5 / sqrt((double)m->h)); break;  /* c_proj */
    default: fill_normal(buf, count, 0.0, 0.02); break;                     /* c_proj bias */
    }
}

static void fill_inputs(size_t i, float *buf, size_t count, void *user) {
    const e2e_dims *m = user;
    (void)i;
    fill_normal(buf, count, 0.0, 1.0);
    for (size_t t = 0; t < count / m->d; t++) /* a few larger channels, as in an LN output */
        for (size_t j = 0; j < m->d; j += 37) buf[t * m->d + j] *= 4.0f;
}

static int cmd_e2e_data(const char *dir, int layers, size_t d, size_t tokens) {
    e2e_dims m = {d, 4 * d};
    size_t n = 4 * (size_t)layers;
    char (*names)[64] = xalloc(n * 64);
    size_t (*shapes)[2] = xalloc(n * sizeof *shapes), *ndim = xalloc(n * sizeof *ndim);
    static const char *suffix[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
    for (size_t i = 0; i < n; i++) {
        size_t L = i / 4, k = i % 4;
        snprintf(names[i], 64, "h.%zu.mlp.%s", L, suffix[k]);
        ndim[i] = k % 2 ? 1 : 2;
        shapes[i][0] = k == 0 ? d : k == 1 ? m.h : k == 2 ? m.h : d;
        shapes[i][1] = k == 0 ? m.h : d;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = write_st(path, n, names, shapes, ndim, fill_weights, &m);
    for (size_t L = 0; L < (size_t)layers && rc == 0; L++) {
        snprintf(names[L], 64, "h.%zu.mlp.in", L);
        ndim[L] = 2;
        shapes[L][0] = tokens;
        shapes[L][1] = d;
    }
    snprintf(path, sizeof path, "%s/inputs_%zu.safetensors", dir, tokens);
    if (rc == 0) rc = write_st(path, (size_t)layers, names, shapes, ndim, fill_inputs, &m);
    free(names), free(shapes), free(ndim);
    return rc;
}

/* ---- a whole command's wall time and peak resident memory ---- */
static int cmd_time(char **argv) {
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid) return perror("wait4"), 2;
    printf("sec=%.4f maxrss_mib=%.1f exit=%d\n", now() - t0, ru.ru_maxrss / 1024.0,
           WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Attention on one sequence of T tokens (q, k ~ N(0, 1), as after c_attn
 * on an ln_1 output), and the LayerNorm of (T, d). The flops counted are
 * the useful ones: 2 T^2 d for S and P V together, causal halving both. */
static int cmd_attn(size_t T) {
    static const struct { const char *name; size_t d, heads; } shapes[] = {{"124M", 768, 12}, {"1.5B", 1600, 25}};
    int all = omp_get_max_threads(), reps = 9;
    printf("| shape | T | threads | attention ms (median) | GFLOP/s | 1-thread CPU ms | LayerNorm ms |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t si = 0; si < 2; si++) {
        size_t d = shapes[si].d, H = shapes[si].heads;
        float *qkv = xalloc(T * 3 * d * sizeof(float)), *z = xalloc(T * d * sizeof(float)), *y = xalloc(T * d * sizeof(float));
        fill_normal(qkv, T * 3 * d, 0.0, 1.0);
        g2f_attn_ws ws = {0};
        g2f_error err = {0};
        for (int threads = 1; threads <= all; threads = threads == all ? all + 1 : all) {
            double v[9], c[9], l[9];
            if (g2f_attn_forward(qkv, T, d, H, NULL, z, NULL, threads, &ws, &err) != G2F_OK) { /* warm-up */
                fprintf(stderr, "bench_ffn: %s\n", err.msg);
                return 2;
            }
            for (int r = 0; r < reps; r++) {
                wait_quiet();
                double t0 = now(), c0 = cpu_seconds();
                g2f_attn_forward(qkv, T, d, H, NULL, z, NULL, threads, &ws, NULL);
                v[r] = now() - t0;
                c[r] = cpu_seconds() - c0;
                t0 = now();
                g2f_ln_forward(qkv, T, d, NULL, NULL, 1e-5, y, NULL, NULL, threads);
                l[r] = now() - t0;
            }
            double ms = median(v, reps) * 1e3, flops = 2.0 * (double)T * (double)T * (double)d;
            char cpu[32] = "-";
            if (threads == 1) snprintf(cpu, sizeof cpu, "%.1f", median(c, reps) * 1e3);
            printf("| %s | %zu | %d | %.1f | %.1f | %s | %.2f |\n", shapes[si].name, T, threads, ms, flops / ms * 1e-6,
                   cpu, median(l, reps) * 1e3);
        }
        g2f_attn_ws_free(&ws);
        free(qkv);
        free(z);
        free(y);
    }
    return 0;
}

/* ---- an F16 port of a checkpoint, for timing diff on converted weights ---- */
static int cmd_f16_copy(const char *src, const char *dst) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    if (g2f_model_open(src, NULL, &m, &err) != G2F_OK) return fprintf(stderr, "%s\n", err.msg), 2;
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t n = mi->n_layer * G2F_FFN_TENSORS, cap = 256 + n * 200, len = 0, off = 0;
    const g2f_tensor **ts = xalloc(n * sizeof *ts);
    for (size_t L = 0; L < mi->n_layer; L++)
        if (g2f_model_layer_tensors(m, L, ts + L * G2F_FFN_TENSORS, &err) != G2F_OK)
            return fprintf(stderr, "%s\n", err.msg), 2;
    char *hdr = xalloc(cap);
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    for (size_t i = 0; i < n; i++) {
        const g2f_tensor *t = ts[i];
        if (!t) continue;
        char shape[64];
        if (t->ndim == 2) snprintf(shape, sizeof shape, "[%llu,%llu]", (unsigned long long)t->shape[0], (unsigned long long)t->shape[1]);
        else snprintf(shape, sizeof shape, "[%llu]", (unsigned long long)t->shape[0]);
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F16\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                                off ? "," : "", t->name, shape, off, off + (size_t)t->numel * 2);
        off += (size_t)t->numel * 2;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while ((8 + len) % 8) hdr[len++] = ' ';
    FILE *f = fopen(dst, "wb");
    if (!f) return perror(dst), 2;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    enum { CH = 1 << 20 };
    float *buf = xalloc(CH * sizeof(float));
    uint16_t *h = xalloc(CH * sizeof(uint16_t));
    for (size_t i = 0; i < n && ok; i++) {
        const g2f_tensor *t = ts[i];
        for (uint64_t e = 0; t && e < t->numel && ok; e += CH) {
            size_t c = t->numel - e < CH ? (size_t)(t->numel - e) : CH;
            g2f_tensor_read_f32(t, e, c, buf);
            for (size_t k = 0; k < c; k++) h[k] = g2f_f32_to_f16(buf[k]);
            ok = fwrite(h, 2, c, f) == c;
        }
    }
    ok = fclose(f) == 0 && ok;
    free(buf), free(h), free(hdr), free(ts);
    g2f_model_close(m);
    return ok ? 0 : (perror(dst), 2);
}

/* ---- verify's floor: the FFN against the FFN with its sums of squares ----
 * verify's derived tolerance needs, beside every product, the same product
 * on squares ((x o x)(W o W), g2f_ffn_fc_gelu_sq / g2f_ffn_proj_sq): this
 * times both in one process, alternating (medians of 7 blocks), for a shape
 * of width d at T tokens, one layer's weights. Prints the seconds of each
 * and their ratio: the least verify can cost against run. */
static int cmd_floor(size_t d, size_t T, int threads) {
    shape s;
    shape_make(&s, "floor", d, 0);
    size_t h = s.h;
    float *x = xalloc(T * d * sizeof(float)), *pre = xalloc(T * h * sizeof(float)), *act = xalloc(T * h * sizeof(float));
    float *q = xalloc(T * h * sizeof(float)), *out = xalloc(T * d * sizeof(float)), *v = xalloc(T * d * sizeof(float));
    fill_normal(x, T * d, 0.0, 1.0);
    g2f_ffn_ws ws = {0};
    double a[7], b[7];
    for (int r = -1; r < 7; r++) { /* the first round warms up */
        double t0 = now();
        g2f_ffn_forward(&s.w[0], x, T, G2F_GELU_TANH, pre, act, out, threads, &ws);
        double t1 = now();
        g2f_ffn_fc_gelu_sq(&s.w[0], x, T, G2F_GELU_TANH, pre, act, q, threads, &ws);
        g2f_ffn_proj_sq(&s.w[0], act, q, T, out, v, threads, &ws);
        double t2 = now();
        if (r >= 0) a[r] = t1 - t0, b[r] = t2 - t1;
    }
    double fa = median(a, 7), fb = median(b, 7);
    printf("floor d=%zu T=%zu threads=%d ffn_s=%.6f ffn_sq_s=%.6f ratio=%.3f\n", d, T, threads, fa, fb, fb / fa);
    g2f_ffn_ws_free(&ws);
    free(x), free(pre), free(act), free(q), free(out), free(v);
    shape_free(&s);
    return 0;
}

/* The read bandwidth alone (for the decode section's bound): a streaming sum over 1 GiB on THREADS
 * threads (default all), best of 5. */
static int cmd_bandwidth(int threads) {
    if (threads <= 0) threads = omp_get_max_threads();
    float *buf = bw_buffer(threads);
    bandwidth bw = measure_bandwidth(buf, threads, 5, 0);
    printf("read_gbs=%.3f threads=%d\n", bw.read_gbs, threads);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "bandwidth")) return cmd_bandwidth(argc >= 3 ? atoi(argv[2]) : 0);
    if (argc >= 5 && !strcmp(argv[1], "write")) return cmd_write(argv[2], atoi(argv[3]), (size_t)atol(argv[4]));
    if (argc >= 4 && !strcmp(argv[1], "open")) return cmd_open(argv[2], atoi(argv[3]));
    if (argc >= 2 && !strcmp(argv[1], "ffn")) return cmd_ffn(argc - 2, argv + 2);
    if (argc >= 6 && !strcmp(argv[1], "e2e-data"))
        return cmd_e2e_data(argv[2], atoi(argv[3]), (size_t)atol(argv[4]), (size_t)atol(argv[5]));
    if (argc >= 3 && !strcmp(argv[1], "time")) return cmd_time(argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "f16-copy")) return cmd_f16_copy(argv[2], argv[3]);
    if (argc >= 2 && !strcmp(argv[1], "attn")) return cmd_attn(argc >= 3 ? (size_t)atol(argv[2]) : 1024);
    if (argc >= 4 && !strcmp(argv[1], "floor"))
        return cmd_floor((size_t)atol(argv[2]), (size_t)atol(argv[3]), argc >= 5 ? atoi(argv[4]) : 0);
    fprintf(stderr, "usage: bench_ffn write FILE LAYERS D | e2e-data DIR LAYERS D TOKENS | time CMD ARGS... | "
                    "f16-copy CHECKPOINT OUT.safetensors | "
                    "open FILE REPS | ffn [--torch FILE] [--open-s S --cat-s S --file-bytes N] [--quick] [--only D] | "
                    "attn [T] | floor D T [THREADS] | bandwidth [THREADS]\n");
    return 2;
}
