/* g2f_genrun: run --generate; see g2f_genrun.h. Sequences are generated
 * one after the other; step_logits are written as the steps make them,
 * the ids and the saved stages at the end. */
#include "g2f_genrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_decode.h"
#include "g2f_writer.h"

#ifndef GPT2FFN_VERSION
#define GPT2FFN_VERSION "unknown"
#endif

/* One saved stage (--save) of a layer (-1: embed, ln_f.out): its rows of
 * every sequence, (n_seq, T, width), probs (n_seq, n_head, T, T). */
typedef struct saved {
    long layer;
    g2f_act a;
    size_t per_seq;
    float *buf;
} saved;

typedef struct gen_ctx {
    g2f_writer *w;
    size_t n_seq, T0, N, T, V, H, seq;
    saved *sv;
    size_t n_sv;
} gen_ctx;

/* Stage s's rows of the step into its buffer at the step's positions. */
static void keep_rows(const gen_ctx *c, const g2f_decoder *dc, const saved *s) {
    size_t n, w, first;
    const float *v = g2f_decoder_values(dc, s->a, &n, &w, &first);
    float *dst = s->buf + c->seq * s->per_seq;
    if (!v) return;
    if (s->a != G2F_ACT_PROBS) {
        memcpy(dst + first * w, v, n * w * sizeof *dst);
        return;
    }
    for (size_t h = 0; h < c->H; h++) /* (n_head, n, keys) into (n_head, T, T), zeros after each row's keys */
        for (size_t i = 0; i < n; i++) memcpy(dst + (h * c->T + first + i) * c->T, v + (h * n + i) * w, w * sizeof *dst);
}

static g2f_status on_layer(void *u, size_t L, const g2f_decoder *dc, g2f_error *err) {
    (void)err;
    const gen_ctx *c = u;
    for (size_t i = 0; i < c->n_sv; i++)
        if (c->sv[i].layer == (long)L) keep_rows(c, dc, &c->sv[i]);
    return G2F_OK;
}

static g2f_status on_ends(void *u, const g2f_decoder *dc, g2f_error *err) {
    (void)err;
    const gen_ctx *c = u;
    for (size_t i = 0; i < c->n_sv; i++)
        if (c->sv[i].layer < 0) keep_rows(c, dc, &c->sv[i]);
    return G2F_OK;
}

static g2f_status on_step(void *u, size_t k, const float *z, int64_t token, g2f_error *err) {
    (void)k, (void)token;
    gen_ctx *c = u;
    return g2f_writer_put_part(c->w, z, c->V, err);
}

/* The saved stages in file order (embed, each layer's in table order,
 * ln_f.out), their buffers allocated (zeros: probs after each row's keys). */
static g2f_status plan_saved(gen_ctx *c, const g2f_model *m, unsigned save, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t cap = 2 + mi->n_layer * (size_t)G2F_ACT_COUNT, d = mi->n_embd, h = mi->n_inner;
    if (!(c->sv = calloc(cap, sizeof *c->sv))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (save & (1u << G2F_ACT_EMBED)) c->sv[c->n_sv++] = (saved){-1, G2F_ACT_EMBED, 0, NULL};
    for (size_t L = 0; L < mi->n_layer; L++)
        for (int k = G2F_ACT_IN; k <= G2F_ACT_OUT; k++)
            if (save & (1u << k)) c->sv[c->n_sv++] = (saved){(long)L, (g2f_act)k, 0, NULL};
    if (save & (1u << G2F_ACT_LN_F)) c->sv[c->n_sv++] = (saved){-1, G2F_ACT_LN_F, 0, NULL};
    for (size_t i = 0; i < c->n_sv; i++) {
        saved *s = &c->sv[i];
        g2f_act_width wd = g2f_act_info_of(s->a)->width;
        size_t w = wd == G2F_WIDTH_3D ? 3 * d : wd == G2F_WIDTH_INNER ? h : wd == G2F_WIDTH_PROBS ? c->H * c->T : d;
        char what[96];
        if (__builtin_mul_overflow(w, c->T, &s->per_seq)) s->per_seq = SIZE_MAX; /* refused below, by size */
        snprintf(what, sizeof what, "run --generate --save: a stage of every step (layer %ld)", s->layer);
        if (!(s->buf = g2f_alloc_work(c->n_seq, s->per_seq, sizeof(float), what, err)))
            return err ? err->status : G2F_ERR_NOMEM;
        memset(s->buf, 0, c->n_seq * s->per_seq * sizeof(float));
    }
    return G2F_OK;
}

/* The file's tensors: prompt_ids, step_logits, generated_ids, then with
 * --save input_ids and the saved stages. names: (n, 96) for the specs. */
static size_t build_specs(const gen_ctx *c, const uint64_t *lead, size_t nl, g2f_out_spec *sp, unsigned char *i64,
                          char (*names)[96]) {
    size_t n = 0;
    const g2f_act top[4] = {G2F_ACT_PROMPT_IDS, G2F_ACT_STEP_LOGITS, G2F_ACT_GENERATED_IDS, G2F_ACT_IDS};
    const size_t len[4] = {c->T0, c->N, c->N, c->T};
    for (int i = 0; i < (c->n_sv ? 4 : 3); i++, n++) {
        g2f_act_name(top[i], -1, 0, names[n], sizeof names[n]);
        sp[n].name = names[n];
        memcpy(sp[n].shape, lead, nl * sizeof *lead);
        sp[n].shape[nl] = len[i];
        sp[n].ndim = nl + 1;
        if (top[i] == G2F_ACT_STEP_LOGITS) sp[n].shape[sp[n].ndim++] = c->V;
        i64[n] = top[i] != G2F_ACT_STEP_LOGITS;
    }
    for (size_t i = 0; i < c->n_sv; i++, n++) {
        const saved *s = &c->sv[i];
        g2f_act_name(s->a, s->layer, 0, names[n], sizeof names[n]);
        sp[n].name = names[n];
        memcpy(sp[n].shape, lead, nl * sizeof *lead);
        size_t k = nl;
        if (s->a == G2F_ACT_PROBS) sp[n].shape[k++] = c->H;
        sp[n].shape[k++] = c->T;
        sp[n].shape[k++] = s->a == G2F_ACT_PROBS ? c->T : s->per_seq / c->T;
        sp[n].ndim = k;
        i64[n] = 0;
    }
    return n;
}

static g2f_status open_out(gen_ctx *c, const g2f_model *m, const char *path, const uint64_t *lead, size_t nl,
                           const g2f_genrun_params *p, g2f_error *err) {
    const g2f_run_params *rp = p->run;
    size_t cap = 4 + c->n_sv;
    g2f_out_spec *sp = calloc(cap, sizeof *sp);
    unsigned char *i64 = calloc(cap, 1);
    char (*names)[96] = calloc(cap, sizeof *names);
    g2f_status st;
    if (!sp || !i64 || !names) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    } else {
        size_t n = build_specs(c, lead, nl, sp, i64, names);
        const g2f_out_meta meta[8] = {
            {"producer", "gpt2ffn run"},
            {"tool", "gpt2ffn " GPT2FFN_VERSION},
            {"kind", "generation"},
            {"gelu", g2f_gelu_name(rp->gelu)},
            {"gelu_source", rp->gelu_source ? rp->gelu_source : ""},
            {"checkpoint", rp->checkpoint_label ? rp->checkpoint_label : g2f_model_get_info(m)->path},
            {"checkpoint_sha256", rp->checkpoint_sha256 ? rp->checkpoint_sha256 : ""},
            {"names", "hf"},
        };
        st = g2f_writer_open_typed(path, rp->format, sp, i64, n, meta, 8, &c->w, err);
    }
    free(sp);
    free(i64);
    free(names);
    return st;
}

/* Every sequence generated, its step logits written as they come. */
static g2f_status generate_all(gen_ctx *c, g2f_decoder *dc, const int64_t *prompt, int64_t *out, g2f_error *err) {
    g2f_decode_hooks dh = {c, on_layer, on_ends};
    g2f_generate_hooks gh = {c, on_step};
    g2f_status st = G2F_OK;
    for (c->seq = 0; c->seq < c->n_seq && st == G2F_OK; c->seq++) {
        g2f_decoder_start(dc, NULL, c->n_sv ? &dh : NULL);
        st = g2f_generate(dc, prompt + c->seq * c->T0, c->T0, c->N, out + c->seq * c->N, &gh, err);
    }
    return st;
}

/* generated_ids, then with --save input_ids and the stages. */
static g2f_status write_rest(gen_ctx *c, const int64_t *prompt, const int64_t *out, g2f_error *err) {
    g2f_status st = g2f_writer_put_i64_part(c->w, out, c->n_seq * c->N, err);
    for (size_t s = 0; c->n_sv && s < c->n_seq && st == G2F_OK; s++) {
        st = g2f_writer_put_i64_part(c->w, prompt + s * c->T0, c->T0, err);
        if (st == G2F_OK && c->N > 1) st = g2f_writer_put_i64_part(c->w, out + s * c->N, c->N - 1, err);
    }
    for (size_t i = 0; i < c->n_sv && st == G2F_OK; i++)
        st = g2f_writer_put_part(c->w, c->sv[i].buf, c->n_seq * c->sv[i].per_seq, err);
    return st;
}

/* The inputs against the model: sequences, ids, positions. */
static g2f_status check_inputs(gen_ctx *c, const g2f_model *m, const int64_t *prompt, const uint64_t *lead, size_t nl,
                               g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    c->n_seq = 1;
    for (size_t i = 0; i < nl; i++)
        if (__builtin_mul_overflow(c->n_seq, (size_t)lead[i], &c->n_seq))
            return g2f_error_set(err, G2F_ERR_USAGE, "prompt: too many sequences");
    if (nl > G2F_MAX_DIMS - 3 || c->n_seq == 0 || c->T0 == 0 || c->N == 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "run --generate: %zu sequences of %zu prompt tokens, %zu to generate",
                             c->n_seq, c->T0, c->N);
    for (size_t i = 0; i < c->n_seq * c->T0; i++)
        if (prompt[i] < 0 || (uint64_t)prompt[i] >= mi->vocab)
            return g2f_error_set(err, G2F_ERR_FORMAT, "prompt: token id %lld at position %zu (sequence %zu, token %zu) "
                                 "is outside the vocabulary 0..%zu", (long long)prompt[i], i, i / c->T0, i % c->T0,
                                 mi->vocab ? mi->vocab - 1 : 0);
    if (__builtin_add_overflow(c->T0, c->N - 1, &c->T) || (mi->n_positions && c->T > mi->n_positions))
        return g2f_error_set(err, G2F_ERR_USAGE, "run --generate %zu: the prompt's %zu tokens and the %zu generated "
                             "after them that are stepped exceed the %zu positions of %s (wpe)", c->N, c->T0,
                             c->N - 1, mi->n_positions, mi->path);
    return G2F_OK;
}

g2f_status g2f_run_generate(const g2f_model *m, const int64_t *prompt, const uint64_t *lead, size_t lead_ndim,
                            size_t T0, const char *out_path, const g2f_genrun_params *p, g2f_genrun_result *r,
                            g2f_error *err) {
    memset(r, 0, sizeof *r);
    gen_ctx c = {0};
    c.T0 = T0, c.N = p->steps;
    g2f_status st = check_inputs(&c, m, prompt, lead, lead_ndim, err);
    if (st != G2F_OK) return st;
    g2f_decoder *dc = NULL;
    g2f_decode_params dp = {p->n_head, p->run->gelu, p->run->n_threads, c.T, T0, 0,
                            (p->save & (1u << G2F_ACT_PROBS)) != 0};
    if ((st = g2f_decoder_new(m, &dp, &dc, err)) != G2F_OK) return st;
    c.V = g2f_decoder_vocab(dc);
    c.H = p->n_head ? p->n_head : g2f_model_get_info(m)->n_head;
    r->generated = g2f_alloc_work(c.n_seq, c.N, sizeof(int64_t), "run --generate: the generated ids", err);
    if (!r->generated) st = err ? err->status : G2F_ERR_NOMEM;
    if (st == G2F_OK && p->save) st = plan_saved(&c, m, p->save, err);
    if (st == G2F_OK) st = open_out(&c, m, out_path, lead, lead_ndim, p, err);
    if (st == G2F_OK) st = g2f_writer_put_i64_part(c.w, prompt, c.n_seq * T0, err);
    if (st == G2F_OK) st = generate_all(&c, dc, prompt, r->generated, err);
    if (st == G2F_OK) st = write_rest(&c, prompt, r->generated, err);
    if (c.w) {
        g2f_status cs = g2f_writer_close(c.w, st == G2F_OK, st == G2F_OK ? err : NULL);
        if (st == G2F_OK) st = cs;
    }
    r->n_seq = c.n_seq, r->T0 = T0, r->steps = c.N, r->tensors = (c.n_sv ? 4 : 3) + c.n_sv;
    for (size_t i = 0; c.sv && i < c.n_sv; i++) free(c.sv[i].buf);
    free(c.sv);
    g2f_decoder_free(dc);
    if (st != G2F_OK) g2f_genrun_result_free(r);
    return st;
}

void g2f_genrun_result_free(g2f_genrun_result *r) {
    if (!r) return;
    free(r->generated);
    memset(r, 0, sizeof *r);
}
