/* g2f_decode: the cached step and greedy generation; see g2f_decode.h.
 *
 * The workload: one token per step through every block of a loaded model
 * (GPT-2 small: 85M weights in the blocks and 38M in the head, about 0.5 GB
 * of float32 read per token), plus a prompt step of up to the context's
 * length. Products go to g2f_matmul (one row: its GEMV, which streams the
 * weights front to back), attention to g2f_attn_forward for the prompt and
 * g2f_kvattn_forward against the cache.
 */
#include "g2f_decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_attn.h"
#include "g2f_block.h"
#include "g2f_kvattn.h"

/* A step's buffers, max_step rows each (the width in floats). */
enum { B_EMB, B_X, B_A, B_QKV, B_MERGED, B_AO, B_MID, B_L2, B_PRE, B_ACT, B_MO, B_OUT, B_Y, B_COUNT };

struct g2f_decoder {
    const g2f_model *m;
    g2f_decode_params p;
    g2f_embed e;
    g2f_block *blocks;           /* n_layer, every one loaded */
    size_t n_layer, d, H, h, V;
    int th;                      /* the threads of a step's kernels (see g2f_decoder_new) */
    float *kc, *vc;              /* (n_layer, max_tokens, d) each */
    float *b0;                   /* the buffers' one allocation */
    float *buf[B_COUNT];         /* in it (B_X and B_OUT trade places after each layer) */
    float *z;                    /* the logits' rows: (max_step or 1, V) */
    float *probs;                /* (n_head, max_step, max_tokens) with keep_probs */
    double *rstd;
    g2f_attn_ws aws;
    g2f_ffn_ws ws;
    /* the sequence */
    const g2f_decode_how *how;
    g2f_decode_hooks hooks;
    size_t done;                 /* tokens stepped */
    size_t past;                 /* the port's past length: cache rows read by the next step */
    int offset_applied;
    /* the current step, for the hooks */
    size_t n, keys;
    const float *in;             /* the layer's input rows */
};

static size_t width_of(const g2f_decoder *dc, int b) {
    return b == B_QKV ? 3 * dc->d : b == B_PRE || b == B_ACT ? dc->h : dc->d;
}

/* Every block and the ends, checked for what a step needs. */
static g2f_status load_weights(g2f_decoder *dc, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(dc->m);
    g2f_status st = g2f_model_embed_load(dc->m, &dc->e, err);
    if (st != G2F_OK) return st;
    dc->n_layer = mi->n_layer, dc->d = dc->e.d, dc->h = mi->n_inner, dc->V = dc->e.vocab;
    dc->H = dc->p.n_head ? dc->p.n_head : mi->n_head;
    if (!dc->H || dc->d % dc->H)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: n_head %s (config.json n_head, or --n-head N)", mi->path,
                             dc->H ? "does not divide n_embd" : "is unknown");
    char why[512];
    if ((st = g2f_model_forward_ready(dc->m, &dc->e, why, sizeof why, err)) != G2F_OK) return st;
    if (why[0]) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: the model cannot be decoded", why);
    if (dc->e.wpe && dc->p.max_tokens > dc->e.n_pos)
        return g2f_error_set(err, G2F_ERR_USAGE, "%zu tokens in a sequence but %s has %zu positions (wpe)",
                             dc->p.max_tokens, mi->path, dc->e.n_pos);
    if (!(dc->blocks = calloc(dc->n_layer ? dc->n_layer : 1, sizeof *dc->blocks)))
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t L = 0; L < dc->n_layer; L++) {
        if ((st = g2f_model_block_load(dc->m, L, dc->H, &dc->blocks[L], err)) != G2F_OK) return st;
        if (!dc->blocks[L].has_attn)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: layer %zu holds no attention weights: the model cannot be "
                                 "decoded", mi->path, L);
    }
    return G2F_OK;
}

static g2f_status alloc_buffers(g2f_decoder *dc, g2f_error *err) {
    size_t rows = dc->p.max_step, per = 0, kv;
    for (int b = 0; b < B_COUNT; b++) per += width_of(dc, b);
    if (__builtin_mul_overflow(dc->n_layer, dc->p.max_tokens, &kv)) kv = SIZE_MAX;
    dc->kc = g2f_alloc_work(kv, 2 * dc->d, sizeof(float), "decode: the key and value cache", err);
    float *b0 = dc->kc ? g2f_alloc_work(rows, per, sizeof(float), "decode: a step's buffers", err) : NULL;
    dc->z = b0 ? g2f_alloc_work(dc->p.all_logits ? rows : 1, dc->V, sizeof(float), "decode: a step's logits", err)
               : NULL;
    dc->b0 = b0;
    dc->rstd = dc->z ? g2f_alloc_work(rows, 1, sizeof(double), "decode: LayerNorm statistics", err) : NULL;
    if (dc->rstd && dc->p.keep_probs) {
        size_t hr;
        if (__builtin_mul_overflow(dc->H, rows, &hr)) hr = SIZE_MAX;
        dc->probs = g2f_alloc_work(hr, dc->p.max_tokens, sizeof(float), "decode: the attention probabilities", err);
    }
    if (!dc->rstd || (dc->p.keep_probs && !dc->probs)) return err ? err->status : G2F_ERR_NOMEM;
    memset(dc->kc, 0, kv * 2 * dc->d * sizeof(float)); /* rows never written read as zeros (cache_offset) */
    dc->vc = dc->kc + kv * dc->d;
    for (int b = 0; b < B_COUNT; b++) dc->buf[b] = b ? dc->buf[b - 1] + rows * width_of(dc, b - 1) : b0;
    return G2F_OK;
}

int g2f_decode_threads(const g2f_model *m, int n_threads) {
    /* a layer of fewer than 2^20 weights (n_embd < 296) is microseconds of work a product: a fork and
     * join of threads costs as much, and on a loaded machine far more; the same bits either way */
    size_t d = g2f_model_get_info(m)->n_embd;
    return n_threads <= 0 && 12 * d * d < ((size_t)1 << 20) ? 1 : n_threads;
}

g2f_status g2f_decoder_new(const g2f_model *m, const g2f_decode_params *p, g2f_decoder **out, g2f_error *err) {
    *out = NULL;
    if (!p->max_tokens || !p->max_step || p->max_step > p->max_tokens)
        return g2f_error_set(err, G2F_ERR_USAGE, "decode: %zu tokens a sequence and %zu a step (1 <= step <= "
                             "sequence)", p->max_tokens, p->max_step);
    g2f_decoder *dc = calloc(1, sizeof *dc);
    if (!dc) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    dc->m = m;
    dc->p = *p;
    g2f_status st = load_weights(dc, err);
    if (st == G2F_OK) st = alloc_buffers(dc, err);
    dc->th = g2f_decode_threads(m, p->n_threads);
    if (st != G2F_OK) {
        g2f_decoder_free(dc);
        return st;
    }
    *out = dc;
    return G2F_OK;
}

void g2f_decoder_free(g2f_decoder *dc) {
    if (!dc) return;
    for (size_t L = 0; dc->blocks && L < dc->n_layer; L++) g2f_block_free(&dc->blocks[L]);
    free(dc->blocks);
    g2f_embed_free(&dc->e);
    free(dc->kc);
    free(dc->b0);
    free(dc->z);
    free(dc->probs);
    free(dc->rstd);
    g2f_attn_ws_free(&dc->aws);
    g2f_ffn_ws_free(&dc->ws);
    free(dc);
}

void g2f_decoder_start(g2f_decoder *dc, const g2f_decode_how *how, const g2f_decode_hooks *hooks) {
    static const g2f_decode_how plain = {0};
    static const g2f_decode_hooks none = {0};
    dc->how = how ? how : &plain;
    dc->hooks = hooks ? *hooks : none;
    dc->done = dc->past = 0;
    dc->offset_applied = 0;
    size_t kv = dc->n_layer * dc->p.max_tokens * dc->d;
    memset(dc->kc, 0, 2 * kv * sizeof(float));
}

size_t g2f_decoder_vocab(const g2f_decoder *dc) { return dc->V; }
size_t g2f_decoder_tokens(const g2f_decoder *dc) { return dc->done; }

/* The step's positions and past length, checked: *pos0 the first token's
 * position (the others follow it). */
static g2f_status step_plan(g2f_decoder *dc, size_t n, long *pos0, g2f_error *err) {
    const g2f_decode_how *hw = dc->how;
    int decode = dc->done > 0;
    if (decode && !dc->offset_applied) {
        dc->offset_applied = 1;
        if (hw->offset < 0 && (size_t)-hw->offset > dc->past)
            return g2f_error_set(err, G2F_ERR_USAGE, "decode: a past length %ld below 0", (long)dc->past + hw->offset);
        dc->past = (size_t)((long)dc->past + hw->offset);
    }
    long p = decode && hw->position_reset ? 0 : decode && hw->not_appended ? (long)dc->done : (long)dc->past;
    p += hw->pos_shift;
    if (p < 0 || (dc->e.wpe && (size_t)p + n > dc->e.n_pos))
        return g2f_error_set(err, G2F_ERR_USAGE, "decode: positions %ld..%ld outside the checkpoint's %zu (wpe)", p,
                             p + (long)n - 1, dc->e.n_pos);
    if (dc->past + n > dc->p.max_tokens)
        return g2f_error_set(err, G2F_ERR_USAGE, "decode: %zu tokens but the cache holds %zu", dc->past + n,
                             dc->p.max_tokens);
    *pos0 = p;
    return G2F_OK;
}

/* x = wte[id] + wpe[pos0 + i] (the forward's embedding arithmetic). */
static void embed_rows(const g2f_decoder *dc, const int64_t *ids, size_t n, long pos0, float *x) {
    size_t d = dc->d;
    for (size_t i = 0; i < n; i++) {
        const float *w = dc->e.wte + (size_t)ids[i] * d;
        const float *pe = dc->e.wpe ? dc->e.wpe + (size_t)(pos0 + (long)i) * d : NULL;
        for (size_t j = 0; j < d; j++) x[i * d + j] = pe ? w[j] + pe[j] : w[j];
    }
}

/* The new tokens' keys and values into layer L's cache (rows past..), as
 * the how stores them; qkv has no bias yet when kv_unbiased. */
static void store_kv(g2f_decoder *dc, size_t L, const float *qkv, size_t n, double scale) {
    const g2f_decode_how *hw = dc->how;
    size_t d = dc->d, base = L * dc->p.max_tokens * d;
    for (size_t i = 0; i < n; i++) {
        const float *k = qkv + i * 3 * d + d, *v = k + d;
        float *kd = dc->kc + base + (dc->past + i) * d, *vd = dc->vc + base + (dc->past + i) * d;
        if (hw->kv_swapped) {
            const float *t = k;
            k = v, v = t;
        }
        for (size_t j = 0; j < d; j++) kd[j] = hw->k_scaled ? (float)(k[j] * scale) : k[j];
        memcpy(vd, v, d * sizeof *vd);
    }
}

/* c_attn, the cache and attention of layer L: merged (n, d). */
static g2f_status attention(g2f_decoder *dc, size_t L, size_t n, int store, g2f_error *err) {
    const g2f_block *b = &dc->blocks[L];
    size_t d = dc->d, dh = d / dc->H;
    float *a = dc->buf[B_A], *qkv = dc->buf[B_QKV];
    int nb = dc->how->kv_unbiased && store; /* the product stored before its bias */
    g2f_matmul(a, n, d, b->attn_w, b->layout_attn == G2F_LAYOUT_LINEAR, 3 * d, nb ? NULL : b->attn_b, qkv,
               dc->th, &dc->ws);
    double scale = 1.0 / sqrt((double)dh);
    if (store) store_kv(dc, L, qkv, n, scale);
    if (nb && b->attn_b)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < 3 * d; j++) qkv[i * 3 * d + j] += b->attn_b[j];
    dc->keys = dc->past + n;
    if (dc->past == 0)
        return g2f_attn_forward(qkv, n, d, dc->H, NULL, dc->buf[B_MERGED], dc->probs, dc->th, &dc->aws, err);
    size_t base = L * dc->p.max_tokens * d;
    g2f_kvattn_args ka = {qkv, n, dc->kc + base, dc->vc + base, dc->past, d, d, dc->H, scale};
    return g2f_kvattn_forward(&ka, dc->buf[B_MERGED], dc->probs, dc->th, err);
}

static void add_rows(const float *a, const float *b, size_t n, float *c) {
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

/* Layer L on the step's n rows: buf[B_X] in, buf[B_OUT] out. */
static g2f_status layer(g2f_decoder *dc, size_t L, size_t n, int store, g2f_error *err) {
    const g2f_block *b = &dc->blocks[L];
    size_t d = dc->d;
    float **B = dc->buf;
    int th = dc->th;
    g2f_block_ln_var(B[B_X], NULL, n, d, &b->ln_1, b->ln_1.eps, 0, 0, B[B_A], NULL, dc->rstd, th);
    g2f_status st = attention(dc, L, n, store, err);
    if (st != G2F_OK) return st;
    g2f_matmul(B[B_MERGED], n, d, b->aproj_w, b->layout_aproj == G2F_LAYOUT_LINEAR, d, b->aproj_b, B[B_AO], th,
               &dc->ws);
    add_rows(B[B_X], B[B_AO], n * d, B[B_MID]);
    g2f_block_ln_var(B[B_MID], NULL, n, d, &b->ln_2, b->ln_2.eps, 0, 0, B[B_L2], NULL, dc->rstd, th);
    g2f_ffn_fc_gelu(&b->mlp.w, B[B_L2], n, dc->p.gelu, B[B_PRE], B[B_ACT], th, &dc->ws);
    g2f_ffn_proj(&b->mlp.w, B[B_ACT], n, B[B_MO], th, &dc->ws);
    add_rows(B[B_MID], B[B_MO], n * d, B[B_OUT]);
    return dc->hooks.layer ? dc->hooks.layer(dc->hooks.user, L, dc, err) : G2F_OK;
}

/* ln_f of every row, and the logits of the step's last row (or of each): z. */
static void logits(g2f_decoder *dc, size_t n, float *z) {
    size_t d = dc->d, r0 = dc->p.all_logits ? 0 : n - 1, rows = n - r0;
    const g2f_embed *e = &dc->e;
    g2f_block_ln_var(dc->buf[B_X], NULL, n, d, &e->ln_f, e->ln_f.eps, 0, 0, dc->buf[B_Y], NULL, dc->rstd,
                     dc->th);
    g2f_matmul(dc->buf[B_Y] + r0 * d, rows, d, e->head, !e->head_dv, dc->V, e->head_b, z, dc->th, &dc->ws);
}

g2f_status g2f_decoder_step(g2f_decoder *dc, const int64_t *ids, size_t n, float *z, g2f_error *err) {
    if (n == 0 || n > dc->p.max_step)
        return g2f_error_set(err, G2F_ERR_USAGE, "decode: a step of %zu tokens (1 to %zu)", n, dc->p.max_step);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= dc->V)
            return g2f_error_set(err, G2F_ERR_USAGE, "decode: token id %lld outside the vocabulary 0..%zu",
                                 (long long)ids[i], dc->V - 1);
    long pos0;
    g2f_status st = step_plan(dc, n, &pos0, err);
    if (st != G2F_OK) return st;
    int store = !(dc->done > 0 && dc->how->not_appended);
    dc->n = n;
    embed_rows(dc, ids, n, pos0, dc->buf[B_EMB]);
    memcpy(dc->buf[B_X], dc->buf[B_EMB], n * dc->d * sizeof(float));
    for (size_t L = 0; L < dc->n_layer && st == G2F_OK; L++) {
        dc->in = dc->buf[B_X];
        st = layer(dc, L, n, store, err);
        float *t = dc->buf[B_X]; /* the output is the next layer's input */
        dc->buf[B_X] = dc->buf[B_OUT], dc->buf[B_OUT] = t;
    }
    if (st != G2F_OK) return st;
    logits(dc, n, dc->z);
    memcpy(z, dc->z, (dc->p.all_logits ? n : 1) * dc->V * sizeof *z);
    if (dc->hooks.ends) st = dc->hooks.ends(dc->hooks.user, dc, err);
    if (store) dc->past += n;
    dc->done += n;
    return st;
}

const float *g2f_decoder_values(const g2f_decoder *dc, g2f_act a, size_t *rows, size_t *width, size_t *first) {
    static const int which[G2F_ACT_COUNT] = {
        [G2F_ACT_LN1] = B_A + 1,      [G2F_ACT_QKV] = B_QKV + 1, [G2F_ACT_MERGED] = B_MERGED + 1,
        [G2F_ACT_ATTN_OUT] = B_AO + 1, [G2F_ACT_MID] = B_MID + 1, [G2F_ACT_MLP_IN] = B_L2 + 1,
        [G2F_ACT_MLP_PRE] = B_PRE + 1, [G2F_ACT_MLP_ACT] = B_ACT + 1, [G2F_ACT_MLP_OUT] = B_MO + 1,
        [G2F_ACT_OUT] = B_OUT + 1,    [G2F_ACT_LN_F] = B_Y + 1};
    *first = dc->done;
    *rows = dc->n;
    *width = dc->d;
    if (a == G2F_ACT_IN) return dc->in;
    if (a == G2F_ACT_EMBED) return dc->buf[B_EMB];
    if (a == G2F_ACT_PROBS) return *width = dc->keys, dc->probs;
    if ((unsigned)a >= G2F_ACT_COUNT || !which[a]) return NULL;
    *width = width_of(dc, which[a] - 1);
    return dc->buf[which[a] - 1];
}

/* ---- greedy generation ------------------------------------------------------ */

size_t g2f_argmax(const float *z, size_t n) {
    size_t best = 0;
    int found = 0;
    for (size_t j = 0; j < n; j++)
        if (z[j] == z[j] && (!found || z[j] > z[best])) best = j, found = 1;
    return best;
}

g2f_status g2f_generate(g2f_decoder *dc, const int64_t *prompt, size_t T0, size_t N, int64_t *out,
                        const g2f_generate_hooks *hooks, g2f_error *err) {
    if (N == 0) return G2F_OK;
    if (dc->p.all_logits) return g2f_error_set(err, G2F_ERR_USAGE, "g2f_generate: a decoder made with all_logits");
    if (T0 == 0 || T0 > dc->p.max_step || T0 + N - 1 > dc->p.max_tokens)
        return g2f_error_set(err, G2F_ERR_USAGE, "generate: a prompt of %zu tokens and %zu to generate (at most %zu "
                             "in a step, %zu in all)", T0, N, dc->p.max_step, dc->p.max_tokens);
    float *z = g2f_alloc_work(1, dc->V, sizeof(float), "generate: a step's logits", err);
    if (!z) return err ? err->status : G2F_ERR_NOMEM;
    g2f_status st = g2f_decoder_step(dc, prompt, T0, z, err);
    for (size_t k = 0; k < N && st == G2F_OK; k++) {
        out[k] = (int64_t)g2f_argmax(z, dc->V);
        if (hooks && hooks->step) st = hooks->step(hooks->user, k, z, out[k], err);
        if (st == G2F_OK && k + 1 < N) st = g2f_decoder_step(dc, &out[k], 1, z, err);
    }
    free(z);
    return st;
}
