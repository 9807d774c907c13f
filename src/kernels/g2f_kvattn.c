/* g2f_kvattn: attention against a key/value cache; see g2f_kvattn.h.
 *
 * The workload: one decode step, n = 1 query per head against up to 1024
 * keys, d_head 64: the keys and values are read once (L d floats each), so
 * the task is memory-bound like the rest of the step. Tasks are (head,
 * query) pairs; a query's keys are read as strided rows of the cache.
 */
#include "g2f_kvattn.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_attn.h"
#include "g2f_cpu.h"
#include "g2f_tensor.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static g2f_status check_args(const char *fn, const g2f_kvattn_args *a, const float *merged, g2f_error *err) {
    if (!a || !a->qkv || !merged) return g2f_error_set(err, G2F_ERR_USAGE, "%s: qkv and merged must not be NULL", fn);
    if (a->n_head == 0 || a->d % a->n_head != 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: n_head is %zu but must be >= 1 and divide n_embd %zu", fn,
                             a->n_head, a->d);
    if (a->past && (!a->kc || !a->vc || a->ld < a->d))
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: %zu cached tokens need their keys and values in rows of at "
                             "least n_embd %zu floats (given %zu)", fn, a->past, a->d, a->ld);
    return G2F_OK;
}

/* Key j of query i's keys, head h: a cached row, else a new one. */
static const float *key_row(const g2f_kvattn_args *a, size_t j, int value) {
    if (j < a->past) return (value ? a->vc : a->kc) + j * a->ld;
    return a->qkv + (j - a->past) * 3 * a->d + (size_t)(value ? 2 : 1) * a->d;
}

/* q . k over dh features in 8 lanes (feature c in lane c % 8), the lanes
 * then added pairwise in a fixed order. */
static float dot8(const float *q, const float *k, size_t dh) {
    float l[8] = {0};
    size_t c = 0;
    for (; c + 8 <= dh; c += 8)
        for (int r = 0; r < 8; r++) l[r] += q[c + r] * k[c + r];
    for (int r = 0; c < dh; c++, r++) l[r] += q[c] * k[c];
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* One task: query i, head h, with a row of L floats of scratch. */
static void attend(const g2f_kvattn_args *a, size_t h, size_t i, float *s, float *merged, float *probs) {
    size_t d = a->d, dh = d / a->n_head, L = a->past + i + 1, off = h * dh;
    const float *q = a->qkv + i * 3 * d + off;
    for (size_t j = 0; j < L; j++) s[j] = dot8(q, key_row(a, j, 0) + off, dh);
    g2f_softmax_row_ref(s, L, a->scale);
    float *z = merged + i * d + off;
    memset(z, 0, dh * sizeof *z);
    for (size_t j = 0; j < L; j++) {
        const float *v = key_row(a, j, 1) + off;
        for (size_t c = 0; c < dh; c++) z[c] += s[j] * v[c];
    }
    if (probs) {
        size_t W = a->past + a->n;
        float *pr = probs + (h * a->n + i) * W;
        memcpy(pr, s, L * sizeof *pr);
        memset(pr + L, 0, (W - L) * sizeof *pr);
    }
}

g2f_status g2f_kvattn_forward(const g2f_kvattn_args *a, float *merged, float *probs, int n_threads, g2f_error *err) {
    g2f_status st = check_args("g2f_kvattn_forward", a, merged, err);
    if (st != G2F_OK || a->n == 0 || a->d == 0) return st;
    int threads = g2f_threads(n_threads);
    size_t L;
    if (__builtin_add_overflow(a->past, a->n, &L)) L = SIZE_MAX; /* g2f_alloc_work reports it */
    float *scratch = g2f_alloc_work((size_t)threads, L, sizeof(float), "attention: a row of scores per thread", err);
    if (!scratch) return err ? err->status : G2F_ERR_NOMEM;
    long tasks = (long)(a->n_head * a->n);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (long t = 0; t < tasks; t++) {
#ifdef _OPENMP
        size_t me = (size_t)omp_get_thread_num();
#else
        size_t me = 0;
#endif
        /* the last queries (the most keys) first */
        size_t i = a->n - 1 - (size_t)t / a->n_head, h = (size_t)t % a->n_head;
        attend(a, h, i, scratch + me * L, merged, probs);
    }
    free(scratch);
    return G2F_OK;
}

g2f_status g2f_kvattn_forward_ref(const g2f_kvattn_args *a, float *merged, float *probs, g2f_error *err) {
    g2f_status st = check_args("g2f_kvattn_forward_ref", a, merged, err);
    if (st != G2F_OK || a->n == 0 || a->d == 0) return st;
    size_t d = a->d, dh = d / a->n_head, W, n;
    if (__builtin_add_overflow(a->past, a->n, &W) || __builtin_add_overflow(W, dh, &n)) n = SIZE_MAX;
    double *p = g2f_alloc_work(n, 1, sizeof(double), "reference attention: a row of scores", err);
    if (!p) return err ? err->status : G2F_ERR_NOMEM;
    double *z = p + W;
    for (size_t h = 0; h < a->n_head; h++)
        for (size_t i = 0; i < a->n; i++) {
            size_t L = a->past + i + 1, off = h * dh;
            double m = -INFINITY, sum = 0;
            for (size_t j = 0; j < L; j++) {
                const float *q = a->qkv + i * 3 * d + off, *k = key_row(a, j, 0) + off;
                double s = 0;
                for (size_t c = 0; c < dh; c++) s += (double)q[c] * (double)k[c];
                p[j] = s * a->scale;
                m = p[j] > m ? p[j] : m;
            }
            for (size_t j = 0; j < L; j++) sum += (p[j] = exp(p[j] - m));
            for (size_t c = 0; c < dh; c++) z[c] = 0;
            for (size_t j = 0; j < L; j++) {
                const float *v = key_row(a, j, 1) + off;
                for (size_t c = 0; c < dh; c++) z[c] += p[j] / sum * (double)v[c];
            }
            for (size_t c = 0; c < dh; c++) merged[i * d + off + c] = (float)z[c];
            for (size_t j = 0; probs && j < W; j++) probs[(h * a->n + i) * W + j] = j < L ? (float)(p[j] / sum) : 0.0f;
        }
    free(p);
    return G2F_OK;
}
