/* The cached decode step (g2f_decode) and its attention kernel
 * (g2f_kvattn): attention against a cache equals the whole causal
 * attention's rows and the double-precision oracle; on the bundled tiny
 * model every step of a greedy generation gives the logits the full
 * recompute gives at that position, within the derived tolerance (the
 * forward's variances), and its token is the argmax of the full forward's
 * logits there; the steps do not depend on the thread count; positions and
 * ids out of range are refused. argv[1] = fixtures folder. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_attn.h"
#include "g2f_compare.h"
#include "g2f_decode.h"
#include "g2f_forward.h"
#include "g2f_kvattn.h"
#include "test_util.h"

static const char *fixtures;

static void fill(float *x, size_t n, uint64_t seed, float scale) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * rnd_unit(&s) - 1.0f);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
        if (!(e <= m)) m = e;
    }
    return m;
}

/* qkv (T, 3d): the rows after `past` against the first past rows' k and v
 * read in place (ld 3d) equal g2f_attn_forward's rows and the oracle's. */
static void kvattn_should_equal_the_whole_attention_s_rows(void) {
    enum { T = 37, D = 64, H = 4 };
    float *qkv = malloc(sizeof(float) * T * 3 * D), *full = malloc(sizeof(float) * T * D),
          *step = malloc(sizeof(float) * T * D), *ref = malloc(sizeof(float) * T * D),
          *probs = malloc(sizeof(float) * H * T * T), *probs2 = malloc(sizeof(float) * H * T * T);
    fill(qkv, (size_t)T * 3 * D, 7, 1.5f);
    g2f_error err = {0};
    CHECK(g2f_attn_forward(qkv, T, D, H, NULL, full, NULL, 1, NULL, &err) == G2F_OK);
    size_t pasts[] = {0, 1, 20, 36};
    for (size_t k = 0; k < sizeof pasts / sizeof pasts[0]; k++) {
        size_t past = pasts[k], n = T - past;
        g2f_kvattn_args a = {qkv + past * 3 * D, n, qkv + D, qkv + 2 * D, past, 3 * D, D, H, 0.25}; /* 1 / sqrt(d_head 16) */
        CHECK(g2f_kvattn_forward(&a, step, probs, 2, &err) == G2F_OK);
        CHECK(g2f_kvattn_forward_ref(&a, ref, probs2, &err) == G2F_OK);
        /* |z| <= 1.5: float32 sums of up to 37 rounded terms, a few ulps of the partial sums */
        CHECK(max_abs_diff(step, full + past * D, n * D) < 1e-5);
        CHECK(max_abs_diff(step, ref, n * D) < 1e-5);
        CHECK(max_abs_diff(probs, probs2, (size_t)H * n * T) < 1e-6);
        /* each probability row sums to one and is zero after its query */
        double sum = 0;
        for (size_t j = 0; j < T; j++) sum += probs[(2 * n + 0) * T + j];
        CHECK_NEAR(sum, 1.0, 1e-5);
        CHECK(n < 2 || probs[(0 * n + 0) * T + past + 1] == 0.0f);
        /* the same bits on one thread */
        float *one = malloc(sizeof(float) * T * D);
        CHECK(g2f_kvattn_forward(&a, one, NULL, 1, &err) == G2F_OK);
        CHECK(memcmp(one, step, n * D * sizeof(float)) == 0);
        free(one);
    }
    g2f_kvattn_args bad = {qkv, 1, NULL, NULL, 3, 3 * D, D, H, 0.125};
    CHECK(g2f_kvattn_forward(&bad, step, NULL, 1, &err) == G2F_ERR_USAGE);
    bad.kc = bad.vc = qkv, bad.ld = D - 1;
    CHECK(g2f_kvattn_forward(&bad, step, NULL, 1, &err) == G2F_ERR_USAGE);
    bad.ld = D, bad.n_head = 5;
    CHECK(g2f_kvattn_forward_ref(&bad, step, NULL, &err) == G2F_ERR_USAGE);
    free(qkv), free(full), free(step), free(ref), free(probs), free(probs2);
}

/* The full forward's logits and variances of one sequence (rows T, V). */
typedef struct rows_t {
    float *z, *vz;
    size_t V;
} rows_t;

static g2f_status take_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)err;
    rows_t *r = u;
    memcpy(r->z + row0 * r->V, z, n * r->V * sizeof *z);
    memcpy(r->vz + row0 * r->V, vz, n * r->V * sizeof *vz);
    return G2F_OK;
}

/* Step k's logits against the full forward's row at the same position. */
typedef struct gen_t {
    float *steps; /* (N, V) */
    size_t V;
} gen_t;

static g2f_status keep_step(void *u, size_t k, const float *z, int64_t token, g2f_error *err) {
    (void)token, (void)err;
    gen_t *g = u;
    memcpy(g->steps + k * g->V, z, g->V * sizeof *z);
    return G2F_OK;
}

static void generate_on(const char *ck, const int64_t *prompt, size_t T0, size_t N, int threads) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    g2f_decoder *dc = NULL;
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    g2f_decode_params p = {0, G2F_GELU_TANH, threads, T0 + N - 1, T0, 0, 0};
    CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_OK);
    size_t V = dc ? g2f_decoder_vocab(dc) : 1, T = T0 + N - 1;
    int64_t *ids = calloc(T + 1, sizeof *ids);
    gen_t g = {calloc(N * V, sizeof(float)), V};
    g2f_generate_hooks gh = {&g, keep_step};
    if (dc) {
        g2f_decoder_start(dc, NULL, NULL);
        memcpy(ids, prompt, T0 * sizeof *ids);
        CHECK(g2f_generate(dc, prompt, T0, N, ids + T0, &gh, &err) == G2F_OK);
    }
    /* the full recompute of prompt + generated[:-1], with its variances */
    g2f_embed e;
    CHECK(g2f_model_embed_load(m, &e, &err) == G2F_OK);
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_forward_params fp = {0, &tol, G2F_GELU_TANH, threads, 1, 0};
    rows_t r = {calloc(T * V, sizeof(float)), calloc(T * V, sizeof(float)), V};
    g2f_forward_hooks hk = {&r, NULL, NULL, NULL, NULL, take_logits};
    CHECK(g2f_forward_run_var(m, &e, ids, 1, T, &fp, NULL, &hk, &err) == G2F_OK);
    float *tl = malloc(V * sizeof *tl);
    double *ex = malloc(V * sizeof *ex);
    for (size_t k = 0; k < N; k++) {
        const float *full = r.z + (T0 - 1 + k) * V, *vz = r.vz + (T0 - 1 + k) * V;
        for (size_t j = 0; j < V; j++) tl[j] = (float)(G2F_TOL_LAMBDA * sqrt((double)vz[j])), ex[j] = full[j];
        g2f_cmp c;
        g2f_compare(ex, g.steps + k * V, tl, V, &c);
        if (c.mismatched || c.nonfinite) fprintf(stderr, "  step %zu: margin %.3g\n", k, c.margin);
        CHECK(c.mismatched == 0 && c.nonfinite == 0 && c.total == V);
        CHECK(c.margin < 0.5); /* float32 reorderings are far inside the 6-sigma bound */
        CHECK(ids[T0 + k] == (int64_t)g2f_argmax(full, V));
    }
    free(tl), free(ex), free(r.z), free(r.vz), free(g.steps), free(ids);
    g2f_embed_free(&e);
    g2f_decoder_free(dc);
    g2f_model_close(m);
}

static void generation_should_equal_the_full_recompute_at_every_step(void) {
    char ck[512];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    const int64_t prompt[] = {5, 17, 3, 42, 9};
    generate_on(ck, prompt, 5, 20, 2);
    generate_on(ck, prompt, 1, 31, 1); /* one token of prompt to the last position */
    snprintf(ck, sizeof ck, "%s/small", fixtures); /* its own lm_head */
    generate_on(ck, prompt, 3, 10, 2);
    snprintf(ck, sizeof ck, "%s/formats2/tiny_full_f16.gguf", fixtures); /* F16 weights, Linear layout */
    generate_on(ck, prompt, 4, 8, 2);
}

/* Every step's logits, the same bits for one and two threads. */
static void steps_should_not_depend_on_the_thread_count(void) {
    char ck[512];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    const int64_t prompt[] = {1, 2, 3, 4, 5, 6, 7};
    float *z[2];
    int64_t out[2][12];
    for (int t = 0; t < 2; t++) {
        g2f_decoder *dc = NULL;
        g2f_decode_params p = {0, G2F_GELU_TANH, t + 1, 7 + 11, 7, 0, 0};
        CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_OK);
        gen_t g = {calloc(12 * 96, sizeof(float)), 96};
        g2f_generate_hooks gh = {&g, keep_step};
        g2f_decoder_start(dc, NULL, NULL);
        CHECK(dc && g2f_generate(dc, prompt, 7, 12, out[t], &gh, &err) == G2F_OK);
        z[t] = g.steps;
        g2f_decoder_free(dc);
    }
    CHECK(memcmp(z[0], z[1], 12 * 96 * sizeof(float)) == 0 && memcmp(out[0], out[1], sizeof out[0]) == 0);
    free(z[0]), free(z[1]);
    g2f_model_close(m);
}

static void decoder_should_refuse_what_does_not_fit(void) {
    char ck[512];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_decoder *dc = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    g2f_decode_params p = {0, G2F_GELU_TANH, 1, 33, 4, 0, 0}; /* 32 positions */
    CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_ERR_USAGE && !dc);
    CHECK_CONTAINS(err.msg, "32 positions");
    p.max_tokens = 8, p.max_step = 9;
    CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_ERR_USAGE);
    p.max_step = 4, p.n_head = 5;
    CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "n_head");
    p.n_head = 0;
    CHECK(g2f_decoder_new(m, &p, &dc, &err) == G2F_OK);
    float z[96];
    int64_t ids[5] = {1, 2, 96, 3, 4};
    g2f_decoder_start(dc, NULL, NULL);
    CHECK(g2f_decoder_step(dc, ids, 5, z, &err) == G2F_ERR_USAGE); /* more than a step holds */
    CHECK(g2f_decoder_step(dc, ids, 3, z, &err) == G2F_ERR_USAGE); /* 96 is outside the vocabulary */
    CHECK_CONTAINS(err.msg, "96");
    CHECK(g2f_decoder_step(dc, ids, 2, z, &err) == G2F_OK && g2f_decoder_tokens(dc) == 2);
    for (int i = 0; i < 6; i++) CHECK(g2f_decoder_step(dc, ids + 3, 1, z, &err) == G2F_OK);
    CHECK(g2f_decoder_step(dc, ids + 3, 1, z, &err) == G2F_ERR_USAGE); /* the ninth token: the cache holds 8 */
    /* a how that moves positions out of wpe */
    g2f_decode_how far = {0};
    far.offset = 40;
    g2f_decoder_start(dc, &far, NULL);
    CHECK(g2f_decoder_step(dc, ids, 2, z, &err) == G2F_OK);
    CHECK(g2f_decoder_step(dc, ids, 1, z, &err) == G2F_ERR_USAGE);
    g2f_decoder_free(dc);
    g2f_model_close(m);
}

int main(int argc, char **argv) {
    fixtures = argc > 1 ? argv[1] : "fixtures";
    RUN(kvattn_should_equal_the_whole_attention_s_rows);
    RUN(generation_should_equal_the_full_recompute_at_every_step);
    RUN(steps_should_not_depend_on_the_thread_count);
    RUN(decoder_should_refuse_what_does_not_fit);
    CHECK_EXIT();
}
