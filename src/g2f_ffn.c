/* g2f_ffn: FFN kernels. The fast matmul packs a (KB x NB) panel of B into a
 * per-thread buffer and runs a 4-row x 16-column register-tiled micro-kernel
 * over it; tasks are (row block, column block) pairs, so no thread ever splits
 * the k sum of an element: bitwise identical results for any thread count.
 * Blocking: a packed panel is KB*NB*4 = 64 KiB (L2-resident on any current
 * x86-64 or ARM core), the 4x16 accumulator tile lives in 8 vector registers
 * and one 16-float row of the panel (64 B, one cache line) is read per k. */
#include "g2f_ffn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_tensor.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define KB 256 /* k per packed panel */
#define NB 64  /* columns per task and panel */
#define NR 16  /* columns per micro-tile */
#define MR 4   /* rows per micro-tile */
#define MB 64  /* rows per task */

typedef float v8f __attribute__((vector_size(32)));

static int thread_count(int n_threads) {
#ifdef _OPENMP
    return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
    (void)n_threads;
    return 1;
#endif
}

const char *g2f_gelu_name(g2f_gelu g) { return g == G2F_GELU_ERF ? "erf" : "tanh"; }
g2f_gelu g2f_gelu_other(g2f_gelu g) { return g == G2F_GELU_ERF ? G2F_GELU_TANH : G2F_GELU_ERF; }

const char *g2f_layout_name(g2f_layout l) {
    return l == G2F_LAYOUT_LINEAR ? "Linear [out, in]" : "Conv1D [in, out]";
}

/* Written exactly as HF NewGELUActivation so that float rounding follows the
 * reference's: 0.5*x*(1+tanh(c*(x+0.044715*x^3))). */
float g2f_gelu_tanh(float x) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * (x * x * x))));
}

float g2f_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }

double g2f_gelu_tanh_f64(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double g2f_gelu_erf_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); }

double g2f_gelu_deriv(double x) {
    return 0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x);
}

/* Packs B[k0 : k0+kb, j0 : j0+NB] as NB/NR consecutive (kb x NR) tiles,
 * zero-filling columns past n so the micro-kernel never branches on edges. */
static void pack_b(const float *b, int b_trans, size_t k, size_t n, size_t k0, size_t kb, size_t j0,
                   float *restrict buf) {
    for (size_t s = 0; s < NB / NR; s++) {
        float *tile = buf + s * KB * NR;
        for (size_t kk = 0; kk < kb; kk++) {
            for (size_t jj = 0; jj < NR; jj++) {
                size_t j = j0 + s * NR + jj;
                float v = 0.0f;
                if (j < n) v = b_trans ? b[j * k + k0 + kk] : b[(k0 + kk) * n + j];
                tile[kk * NR + jj] = v;
            }
        }
    }
}

/* c[r][0:NR] (+)= sum_kk a[r][kk] * tile[kk][0:NR] for r < mr, in kk order.
 * first: start from zero instead of the stored partial sums. */
__attribute__((target_clones("avx2", "default"))) static void micro_tile(const float *a, size_t lda, size_t mr, const float *restrict tile, size_t kb,
                       float *c, size_t ldc, size_t nc, int first) {
    v8f acc[MR][2];
    for (size_t r = 0; r < MR; r++) {
        float tmp[NR] = {0};
        if (!first && r < mr) memcpy(tmp, c + r * ldc, nc * sizeof(float));
        memcpy(&acc[r][0], tmp, sizeof(v8f));
        memcpy(&acc[r][1], tmp + 8, sizeof(v8f));
    }
    if (mr == MR) {
        for (size_t kk = 0; kk < kb; kk++) {
            v8f b0, b1;
            memcpy(&b0, tile + kk * NR, sizeof b0);
            memcpy(&b1, tile + kk * NR + 8, sizeof b1);
            for (size_t r = 0; r < MR; r++) {
                float av = a[r * lda + kk];
                acc[r][0] += av * b0;
                acc[r][1] += av * b1;
            }
        }
    } else {
        for (size_t kk = 0; kk < kb; kk++) {
            v8f b0, b1;
            memcpy(&b0, tile + kk * NR, sizeof b0);
            memcpy(&b1, tile + kk * NR + 8, sizeof b1);
            for (size_t r = 0; r < mr; r++) {
                float av = a[r * lda + kk];
                acc[r][0] += av * b0;
                acc[r][1] += av * b1;
            }
        }
    }
    for (size_t r = 0; r < mr; r++) {
        float tmp[NR];
        memcpy(tmp, &acc[r][0], sizeof(v8f));
        memcpy(tmp + 8, &acc[r][1], sizeof(v8f));
        memcpy(c + r * ldc, tmp, nc * sizeof(float));
    }
}

void g2f_matmul(const float *a, size_t m, size_t k, const float *b, int b_trans, size_t n,
                const float *bias, float *c, int n_threads) {
    size_t row_blocks = (m + MB - 1) / MB, col_blocks = (n + NB - 1) / NB;
    long tasks = (long)(row_blocks * col_blocks);
    if (m == 0 || n == 0) return;
#ifdef _OPENMP
#pragma omp parallel num_threads(thread_count(n_threads))
#else
    (void)n_threads;
#endif
    {
        _Alignas(64) float buf[KB * NB];
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long t = 0; t < tasks; t++) {
            size_t i0 = (size_t)t / col_blocks * MB, j0 = (size_t)t % col_blocks * NB;
            size_t mb = m - i0 < MB ? m - i0 : MB;
            size_t nb = n - j0 < NB ? n - j0 : NB;
            if (k == 0)
                for (size_t i = 0; i < mb; i++) memset(c + (i0 + i) * n + j0, 0, nb * sizeof(float));
            for (size_t k0 = 0; k0 < k; k0 += KB) {
                size_t kb = k - k0 < KB ? k - k0 : KB;
                pack_b(b, b_trans, k, n, k0, kb, j0, buf);
                for (size_t s = 0; s * NR < nb; s++) {
                    size_t nc = nb - s * NR < NR ? nb - s * NR : NR;
                    for (size_t i = 0; i < mb; i += MR) {
                        size_t mr = mb - i < MR ? mb - i : MR;
                        micro_tile(a + (i0 + i) * k + k0, k, mr, buf + s * KB * NR, kb,
                                   c + (i0 + i) * n + j0 + s * NR, n, nc, k0 == 0);
                    }
                }
            }
            if (bias)
                for (size_t i = 0; i < mb; i++)
                    for (size_t j = 0; j < nb; j++) c[(i0 + i) * n + j0 + j] += bias[j0 + j];
        }
    }
}

void g2f_ffn_fc(const g2f_ffn_weights *w, const float *x, size_t n_tokens, float *pre, int n_threads) {
    g2f_matmul(x, n_tokens, w->n_embd, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, w->n_inner, w->b_fc, pre,
               n_threads);
}

void g2f_ffn_proj(const g2f_ffn_weights *w, const float *act, size_t n_tokens, float *out, int n_threads) {
    g2f_matmul(act, n_tokens, w->n_inner, w->w_proj, w->layout_proj == G2F_LAYOUT_LINEAR, w->n_embd, w->b_proj,
               out, n_threads);
}

void g2f_ffn_gelu(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads) {
    long n = (long)count;
    (void)n_threads;
    if (g == G2F_GELU_ERF) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(thread_count(n_threads))
#endif
        for (long i = 0; i < n; i++) act[i] = g2f_gelu_erf(pre[i]);
    } else {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(thread_count(n_threads))
#endif
        for (long i = 0; i < n; i++) act[i] = g2f_gelu_tanh(pre[i]);
    }
}

void g2f_ffn_forward(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                     float *act, float *out, int n_threads) {
    g2f_ffn_fc(w, x, n_tokens, pre, n_threads);
    g2f_ffn_gelu(g, pre, n_tokens * w->n_inner, act, n_threads);
    g2f_ffn_proj(w, act, n_tokens, out, n_threads);
}

g2f_status g2f_ffn_forward_ref(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g,
                               float *pre, float *act, float *out, g2f_error *err) {
    size_t d = w->n_embd, h = w->n_inner;
    int lin_fc = w->layout_fc == G2F_LAYOUT_LINEAR, lin_proj = w->layout_proj == G2F_LAYOUT_LINEAR;
    double *hid = g2f_alloc_array(h ? h : 1, sizeof *hid);
    if (!hid) return g2f_error_set(err, G2F_ERR_NOMEM, "reference FFN: cannot allocate %zu hidden units", h);
    for (size_t t = 0; t < n_tokens; t++) {
        const float *xt = x + t * d;
        for (size_t u = 0; u < h; u++) {
            double s = w->b_fc ? w->b_fc[u] : 0.0;
            for (size_t i = 0; i < d; i++) s += (double)xt[i] * (lin_fc ? w->w_fc[u * d + i] : w->w_fc[i * h + u]);
            double a = g == G2F_GELU_ERF ? g2f_gelu_erf_f64(s) : g2f_gelu_tanh_f64(s);
            if (pre) pre[t * h + u] = (float)s;
            if (act) act[t * h + u] = (float)a;
            hid[u] = a;
        }
        for (size_t j = 0; j < d; j++) {
            double acc = w->b_proj ? w->b_proj[j] : 0.0;
            for (size_t u = 0; u < h; u++) acc += hid[u] * (lin_proj ? w->w_proj[j * h + u] : w->w_proj[u * d + j]);
            out[t * d + j] = (float)acc;
        }
    }
    free(hid);
    return G2F_OK;
}
