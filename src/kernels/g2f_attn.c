/* g2f_attn: attention kernels; see g2f_attn.h.
 *
 * The workload: one layer's attention over a fixture's sequences, T up to
 * 1024 (GPT-2's context), d 768-1600, 12-25 heads of 64. Per head the two
 * products, S = Q K^T and Z = P V, are 2 T^2 d_head flops each (half that
 * when causal), against T^2 exps and T d reads of qkv: the GEMMs carry the
 * time, so they go to g2f_matmul; the softmax is vectorized
 * (g2f_simd_softmax); the gather and scatter of heads are memory copies.
 *
 * Parallelism: tasks of (head, block of QB queries), each run by one
 * thread from its scores to its z rows, with g2f_matmul on one thread (a
 * nested team of one) and that thread's own scratch and g2f_ffn_ws. The
 * blocks and the summation order inside each are fixed by T alone, so the
 * thread count changes nothing but the time. Causal blocks only multiply
 * against keys 0..i1-1 (i1 the block's end): the work above the diagonal
 * that is done is inside the block's own QB x QB square, and there the
 * softmax writes exact zeros, so P V adds nothing for keys a query may not
 * see. The largest (last) blocks are handed out first, which balances the
 * triangle's uneven tasks.
 */
#include "g2f_attn.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_cpu.h"
#include "g2f_gelu_math.h"
#include "g2f_simd.h"
#include "g2f_tensor.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define QB G2F_ATTN_QB

g2f_attn_opts g2f_attn_opts_gpt2(size_t d_head) {
    g2f_attn_opts o = {1, d_head ? 1.0 / sqrt((double)d_head) : 1.0, {0, 1, 2}, 0};
    return o;
}

void g2f_attn_ws_free(g2f_attn_ws *ws) {
    if (!ws) return;
    free(ws->heads);
    free(ws->blocks);
    for (size_t t = 0; t < ws->mm_count; t++) g2f_ffn_ws_free(&ws->mm[t]);
    free(ws->mm);
    memset(ws, 0, sizeof *ws);
}

/* The arguments both kernels accept (USAGE otherwise); fills *o. */
static g2f_status check_args(const char *fn, const float *qkv, size_t d, size_t n_head, const g2f_attn_opts *opts,
                             const float *merged, g2f_attn_opts *o, g2f_error *err) {
    if (!qkv || !merged) return g2f_error_set(err, G2F_ERR_USAGE, "%s: qkv and merged must not be NULL", fn);
    if (n_head == 0 || d % n_head != 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: n_head is %zu but must be >= 1 and divide n_embd %zu", fn,
                             n_head, d);
    *o = opts ? *opts : g2f_attn_opts_gpt2(d / n_head);
    int seen = 0;
    for (int r = 0; r < 3; r++)
        if (o->qkv_order[r] >= 0 && o->qkv_order[r] <= 2) seen |= 1 << o->qkv_order[r];
    if (seen != 7)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: qkv_order is {%d, %d, %d} but must be a permutation of 0, 1, 2",
                             fn, o->qkv_order[0], o->qkv_order[1], o->qkv_order[2]);
    return G2F_OK;
}

/* Offset of feature i of head h inside a d-vector. */
static inline size_t head_at(size_t h, size_t i, size_t n_head, size_t d_head, int interleaved) {
    return interleaved ? i * n_head + h : h * d_head + i;
}

/* ---- the fast kernel */

static int thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

void g2f_softmax_row_ref(float *s, size_t n, double scale) {
    float m = -INFINITY;
    for (size_t j = 0; j < n; j++) {
        s[j] = (float)((double)s[j] * scale);
        m = s[j] > m ? s[j] : m;
    }
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        s[j] = (float)g2f_exp_d((double)(s[j] - m));
        sum += s[j];
    }
    double inv = 1.0 / sum;
    for (size_t j = 0; j < n; j++) s[j] = (float)((double)s[j] * inv);
}

/* A buffer of at least rows x cols floats in *buf (capacity *cap), grown
 * through g2f_alloc_work (checked product, the machine's memory). */
static g2f_status ws_floats(float **buf, size_t *cap, size_t rows, size_t cols, const char *what, g2f_error *err) {
    size_t n;
    if (__builtin_mul_overflow(rows, cols, &n)) n = SIZE_MAX; /* g2f_alloc_work reports it */
    if (*buf && *cap >= n) return G2F_OK;
    free(*buf);
    *buf = NULL;
    *cap = 0;
    *buf = g2f_alloc_work(rows, cols, sizeof(float), what, err);
    if (!*buf) return err ? err->status : G2F_ERR_NOMEM;
    *cap = n;
    return G2F_OK;
}

static g2f_status ws_prepare(g2f_attn_ws *ws, size_t T, size_t d, size_t d_head, size_t threads, g2f_error *err) {
    size_t t3;
    if (__builtin_mul_overflow(T, (size_t)3, &t3)) t3 = SIZE_MAX;
    g2f_status st = ws_floats(&ws->heads, &ws->heads_cap, t3, d, "attention: q, k, v split by head", err);
    if (st != G2F_OK) return st;
    size_t per_thread; /* QB (T + d_head) */
    if (__builtin_add_overflow(T, d_head, &per_thread) || __builtin_mul_overflow(per_thread, (size_t)QB, &per_thread))
        per_thread = SIZE_MAX;
    st = ws_floats(&ws->blocks, &ws->blocks_cap, threads, per_thread, "attention: per-thread score blocks", err);
    if (st != G2F_OK) return st;
    if (ws->mm_count < threads) {
        g2f_ffn_ws *mm = calloc(threads, sizeof *mm);
        if (!mm) return g2f_error_set(err, G2F_ERR_NOMEM, "attention: cannot allocate %zu matmul workspaces", threads);
        for (size_t t = 0; t < ws->mm_count; t++) mm[t] = ws->mm[t];
        free(ws->mm);
        ws->mm = mm;
        ws->mm_count = threads;
    }
    return G2F_OK;
}

/* q, k, v of every head into ws->heads (3, n_head, T, d_head), rows in parallel. */
static void split_heads(const float *qkv, size_t T, size_t d, size_t n_head, const g2f_attn_opts *o, float *heads,
                        int threads) {
    size_t dh = d / n_head;
    long rows = (long)T;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#else
    (void)threads;
#endif
    for (long t = 0; t < rows; t++)
        for (size_t r = 0; r < 3; r++) {
            const float *src = qkv + (size_t)t * 3 * d + (size_t)o->qkv_order[r] * d;
            for (size_t h = 0; h < n_head; h++) {
                float *dst = heads + ((r * n_head + h) * T + (size_t)t) * dh;
                if (!o->heads_interleaved) memcpy(dst, src + h * dh, dh * sizeof(float));
                else
                    for (size_t i = 0; i < dh; i++) dst[i] = src[i * n_head + h];
            }
        }
}

/* The probabilities (mq, n) of queries [i0, i0 + mq) of head h against the
 * n keys the block can see: S = Q K^T by g2f_matmul on one thread, then the
 * softmax row by row, zeros after a causal row's last key. */
static void block_probs(const float *heads, size_t T, size_t d, size_t n_head, const g2f_attn_opts *o, size_t h,
                        size_t i0, size_t mq, size_t n, float *scores, g2f_ffn_ws *mm, int simd) {
    size_t dh = d / n_head;
    const float *q = heads + (0 * n_head + h) * T * dh, *k = heads + (1 * n_head + h) * T * dh;
    g2f_matmul(q + i0 * dh, mq, dh, k, 1, n, NULL, scores, 1, mm); /* S (mq, n) = Q K^T */
    for (size_t r = 0; r < mq; r++) {
        size_t i = i0 + r, len = o->causal ? i + 1 : n;
        float *row = scores + r * n;
        if (simd) g2f_simd_softmax(row, len, o->scale);
        else g2f_softmax_row_ref(row, len, o->scale);
        memset(row + len, 0, (n - len) * sizeof(float));
    }
}

void g2f_attn_block_probs(const g2f_attn_ws *ws, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                          size_t h, size_t b, float *rows, size_t *mq, size_t *n, g2f_ffn_ws *mm) {
    g2f_attn_opts o = opts ? *opts : g2f_attn_opts_gpt2(d / n_head);
    size_t i0 = b * QB;
    *mq = T - i0 < QB ? T - i0 : QB;
    *n = o.causal ? i0 + *mq : T;
    block_probs(ws->heads, T, d, n_head, &o, h, i0, *mq, *n, rows, mm, g2f_cpu_features()->avx2_fma);
}

/* One task: queries [i0, i0 + mq) of head h, from their scores to merged. */
static void attend_block(const float *heads, size_t T, size_t d, size_t n_head, const g2f_attn_opts *o, size_t h,
                         size_t i0, size_t mq, float *scores, float *z, g2f_ffn_ws *mm, int simd, float *merged,
                         float *probs) {
    size_t dh = d / n_head, n = o->causal ? i0 + mq : T; /* the keys the block can see */
    const float *v = heads + (2 * n_head + h) * T * dh;
    block_probs(heads, T, d, n_head, o, h, i0, mq, n, scores, mm, simd);
    for (size_t r = 0; r < mq; r++) {
        size_t i = i0 + r;
        float *row = scores + r * n;
        if (probs) {
            float *pr = probs + (h * T + i) * T;
            memcpy(pr, row, n * sizeof(float));
            memset(pr + n, 0, (T - n) * sizeof(float));
        }
    }
    g2f_matmul(scores, mq, n, v, 0, dh, NULL, z, 1, mm); /* Z (mq, d_head) = P V */
    for (size_t r = 0; r < mq; r++) {
        float *dst = merged + (i0 + r) * d;
        const float *src = z + r * dh;
        if (!o->heads_interleaved) memcpy(dst + h * dh, src, dh * sizeof(float));
        else
            for (size_t i = 0; i < dh; i++) dst[i * n_head + h] = src[i];
    }
}

g2f_status g2f_attn_forward(const float *qkv, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                            float *merged, float *probs, int n_threads, g2f_attn_ws *ws, g2f_error *err) {
    g2f_attn_opts o = {0};
    g2f_status st = check_args("g2f_attn_forward", qkv, d, n_head, opts, merged, &o, err);
    if (st != G2F_OK) return st;
    if (T == 0 || d == 0) return G2F_OK;
    size_t dh = d / n_head;
    int threads = g2f_threads(n_threads);
    g2f_attn_ws own = {0}, *w = ws ? ws : &own;
    st = ws_prepare(w, T, d, dh, (size_t)threads, err);
    if (st != G2F_OK) {
        g2f_attn_ws_free(&own);
        return st;
    }
    split_heads(qkv, T, d, n_head, &o, w->heads, threads);
    size_t blocks = (T + QB - 1) / QB;
    long tasks = (long)(n_head * blocks);
    int simd = g2f_cpu_features()->avx2_fma;
    const float *heads = w->heads;
    float *scratch = w->blocks;
    size_t per_thread = QB * (T + dh);
    g2f_ffn_ws *mm = w->mm;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (long t = 0; t < tasks; t++) {
        /* the last blocks (the most keys when causal) first, each over all heads */
        size_t b = blocks - 1 - (size_t)t / n_head, h = (size_t)t % n_head, i0 = b * QB;
        size_t mq = T - i0 < QB ? T - i0 : QB;
        size_t me = (size_t)thread_num();
        float *scores = scratch + me * per_thread;
        attend_block(heads, T, d, n_head, &o, h, i0, mq, scores, scores + (size_t)QB * T, &mm[me], simd, merged,
                     probs);
    }
    g2f_attn_ws_free(&own);
    return G2F_OK;
}

/* ---- the reference */

g2f_status g2f_attn_forward_ref(const float *qkv, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                                float *merged, float *probs, g2f_error *err) {
    g2f_attn_opts o = {0};
    g2f_status st = check_args("g2f_attn_forward_ref", qkv, d, n_head, opts, merged, &o, err);
    if (st != G2F_OK) return st;
    if (T == 0 || d == 0) return G2F_OK;
    size_t dh = d / n_head, n;
    if (__builtin_add_overflow(T, dh, &n)) n = SIZE_MAX;
    double *p = g2f_alloc_work(n, 1, sizeof(double), "reference attention: a row of scores", err);
    if (!p) return err ? err->status : G2F_ERR_NOMEM;
    double *z = p + T;
    const float *qs = qkv + (size_t)o.qkv_order[0] * d, *ks = qkv + (size_t)o.qkv_order[1] * d,
                *vs = qkv + (size_t)o.qkv_order[2] * d;
    for (size_t h = 0; h < n_head; h++)
        for (size_t i = 0; i < T; i++) {
            size_t len = o.causal ? i + 1 : T;
            double m = -INFINITY, sum = 0;
            for (size_t j = 0; j < len; j++) {
                double s = 0;
                for (size_t c = 0; c < dh; c++) {
                    size_t at = head_at(h, c, n_head, dh, o.heads_interleaved);
                    s += (double)qs[i * 3 * d + at] * (double)ks[j * 3 * d + at];
                }
                p[j] = s * o.scale;
                m = p[j] > m ? p[j] : m;
            }
            for (size_t j = 0; j < len; j++) {
                p[j] = exp(p[j] - m);
                sum += p[j];
            }
            for (size_t j = 0; j < len; j++) p[j] /= sum;
            for (size_t c = 0; c < dh; c++) {
                double acc = 0;
                size_t at = head_at(h, c, n_head, dh, o.heads_interleaved);
                for (size_t j = 0; j < len; j++) acc += p[j] * (double)vs[j * 3 * d + at];
                z[c] = acc;
            }
            for (size_t c = 0; c < dh; c++) merged[i * d + head_at(h, c, n_head, dh, o.heads_interleaved)] = (float)z[c];
            if (probs)
                for (size_t j = 0; j < T; j++) probs[(h * T + i) * T + j] = j < len ? (float)p[j] : 0.0f;
        }
    free(p);
    return G2F_OK;
}

/* ---- sequences */

/* Element counts of one sequence's qkv, merged and probs, and the checks
 * that n_seq of each can be addressed (the caller's buffers hold them). */
static g2f_status seq_sizes(const char *fn, size_t n_seq, size_t T, size_t d, size_t n_head, const float *probs,
                            size_t sz[3], g2f_error *err) {
    size_t total;
    int bad = __builtin_mul_overflow(T, d, &sz[1]) || __builtin_mul_overflow(sz[1], (size_t)3, &sz[0]) ||
              __builtin_mul_overflow(sz[0], n_seq, &total);
    sz[2] = 0;
    if (probs) bad |= __builtin_mul_overflow(T, T, &sz[2]) || __builtin_mul_overflow(sz[2], n_head, &sz[2]) ||
                      __builtin_mul_overflow(sz[2], n_seq, &total);
    if (bad)
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: %zu sequences of %zu tokens x %zu overflow the address space", fn,
                             n_seq, T, d);
    return G2F_OK;
}

g2f_status g2f_attn_forward_batch(const float *qkv, size_t n_seq, size_t T, size_t d, size_t n_head,
                                  const g2f_attn_opts *opts, float *merged, float *probs, int n_threads,
                                  g2f_attn_ws *ws, g2f_error *err) {
    size_t sz[3] = {0};
    g2f_status st = seq_sizes("g2f_attn_forward_batch", n_seq, T, d, n_head, probs, sz, err);
    for (size_t s = 0; st == G2F_OK && s < n_seq; s++)
        st = g2f_attn_forward(qkv + s * sz[0], T, d, n_head, opts, merged + s * sz[1], probs ? probs + s * sz[2] : NULL,
                              n_threads, ws, err);
    return st;
}

g2f_status g2f_attn_forward_batch_ref(const float *qkv, size_t n_seq, size_t T, size_t d, size_t n_head,
                                      const g2f_attn_opts *opts, float *merged, float *probs, g2f_error *err) {
    size_t sz[3] = {0};
    g2f_status st = seq_sizes("g2f_attn_forward_batch_ref", n_seq, T, d, n_head, probs, sz, err);
    for (size_t s = 0; st == G2F_OK && s < n_seq; s++)
        st = g2f_attn_forward_ref(qkv + s * sz[0], T, d, n_head, opts, merged + s * sz[1],
                                  probs ? probs + s * sz[2] : NULL, err);
    return st;
}
