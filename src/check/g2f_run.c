/* g2f_run: see g2f_run.h. Layers are computed and written one at a time. */
#include "g2f_run.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPT2FFN_VERSION
#define GPT2FFN_VERSION "unknown"
#endif

static int selected(const g2f_run_params *p, const g2f_fixture *f, size_t L) {
    return g2f_fixture_has_input(f, L) && (!p->select || p->select[L]);
}

/* Tokens go through in chunks of at most CHUNK_BYTES of buffers (x and out
 * (C, d), pre and act (C, h)), at least 16 tokens, so memory is bounded by
 * the weights plus a chunk whatever the token count. */
#define CHUNK_BYTES ((size_t)48 << 20)

static size_t work_width(size_t d, size_t h) {
    size_t w;
    if (__builtin_add_overflow(h, d, &w) || __builtin_mul_overflow(w, (size_t)2, &w)) return SIZE_MAX;
    return w;
}

static size_t chunk_tokens(size_t T, size_t d, size_t h) {
    size_t w = work_width(d, h), c = w == SIZE_MAX || w > CHUNK_BYTES / 4 / 16 ? 16 : CHUNK_BYTES / 4 / w;
    return c < T ? c : T;
}

g2f_status g2f_run_check(const g2f_model *m, const g2f_fixture *inputs, const g2f_run_params *p, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner, w = work_width(d, h);
    g2f_status st = g2f_fixture_check_inputs(inputs, mi->n_layer, d, err);
    if (st != G2F_OK) return st;
    uint64_t phys = g2f_physical_memory();
    for (size_t L = 0; L < mi->n_layer; L++) {
        if (!selected(p, inputs, L)) continue;
        size_t T = (size_t)(g2f_fixture_input(inputs, L)->numel / d), C = chunk_tokens(T, d, h), n;
        if (__builtin_mul_overflow(C, w, &n) || __builtin_mul_overflow(n, sizeof(float), &n) || (uint64_t)n > phys) {
            char what[96];
            snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens at a time", L, C);
            g2f_alloc_work(C, w, sizeof(float), what, err); /* fails, with the message */
            return err ? err->status : G2F_ERR_NOMEM;
        }
    }
    return G2F_OK;
}

/* The metadata's checkpoint_sha256: the digest as given, or a placeholder
 * for the one hashed beside the work (put_digest fills it in). */
#define DIGEST_PLACEHOLDER "0000000000000000000000000000000000000000000000000000000000000000"
static g2f_out_meta digest_meta(const g2f_run_params *p) {
    if (p->checkpoint_digest) return (g2f_out_meta){"checkpoint_sha256", DIGEST_PLACEHOLDER};
    return (g2f_out_meta){"checkpoint_sha256", p->checkpoint_sha256 ? p->checkpoint_sha256 : ""};
}

static g2f_status put_digest(g2f_writer *w, const g2f_run_params *p, g2f_error *err) {
    g2f_digest_job *j = p->checkpoint_digest;
    if (!j) return G2F_OK;
    if (g2f_digest_job_finish(j) != G2F_OK) return g2f_error_set(err, j->st, "%s", j->err.msg);
    return g2f_writer_set_meta(w, "checkpoint_sha256", j->hex, err);
}

/* One layer, one output tensor after the other (the file holds each whole):
 * in, out, then pre and act when asked, through x, the work buffers of
 * chunk_tokens(T) tokens (work_buffers). A layer that fits in one chunk is
 * computed once; otherwise each pass recomputes what it writes, chunk by
 * chunk. Every product is a GEMM (never the one-row GEMV), so the values
 * equal verify's whatever the chunking. */
static g2f_status run_layer(const g2f_ffn_weights *wt, const g2f_tensor *in, const g2f_run_params *p, float *x,
                            g2f_writer *w, g2f_ffn_ws *ws, size_t *tokens, g2f_error *err) {
    size_t d = wt->n_embd, h = wt->n_inner, T = (size_t)(in->numel / d), C = chunk_tokens(T, d, h);
    float *out = x + C * d, *pre = out + C * d, *act = pre + C * h;
    g2f_status st = G2F_OK;
    int whole = C == T; /* computed once, every tensor written from the buffers */
    for (int pass = 0; pass < 4 && st == G2F_OK; pass++) {
        if ((pass == 2 && !p->save_pre) || (pass == 3 && !p->save_act)) continue;
        for (size_t t0 = 0; t0 < T && st == G2F_OK; t0 += C) {
            size_t n = T - t0 < C ? T - t0 : C;
            if (!whole || pass == 0) g2f_tensor_read_f32(in, (uint64_t)t0 * d, (uint64_t)n * d, x);
            if ((!whole && pass > 0) || (whole && pass == 0)) {
                g2f_ffn_fc_gelu_sq(wt, x, n, p->gelu, pre, act, NULL, p->n_threads, ws);
                if (pass == 1 || whole) g2f_ffn_proj_sq(wt, act, NULL, n, out, NULL, p->n_threads, ws);
            }
            const float *src = pass == 0 ? x : pass == 1 ? out : pass == 2 ? pre : act;
            st = g2f_writer_put_part(w, src, n * (pass < 2 ? d : h), err);
        }
    }
    *tokens = T;
    return st;
}

/* The work buffers of the largest chunk of the selected layers, one
 * allocation for the run: a fresh one per layer touched every page again
 * (GPT-2 XL x 1024 tokens: 48 MiB a layer, and under a hypervisor that
 * shadows page tables each first touch traps into it: 8 s of system time).
 * g2f_run_check has checked the sizes. */
static float *work_buffers(const g2f_model *m, const g2f_fixture *inputs, const g2f_run_params *p, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner, C = 0;
    for (size_t L = 0; L < mi->n_layer; L++) {
        if (!selected(p, inputs, L)) continue;
        size_t c = chunk_tokens((size_t)(g2f_fixture_input(inputs, L)->numel / d), d, h);
        C = c > C ? c : C;
    }
    char what[96];
    snprintf(what, sizeof what, "the work buffers for %zu tokens at a time", C);
    return g2f_alloc_work(C ? C : 1, work_width(d, h), sizeof(float), what, err);
}

g2f_status g2f_run(const g2f_model *m, const g2f_fixture *inputs, const char *out_path, const g2f_run_params *p,
                   g2f_run_result *r, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    memset(r, 0, sizeof *r);
    g2f_status st = g2f_run_check(m, inputs, p, err);
    if (st != G2F_OK) return st;
    size_t per = 2 + (p->save_pre != 0) + (p->save_act != 0), n = 0;
    for (size_t L = 0; L < mi->n_layer; L++) n += selected(p, inputs, L) ? per : 0;
    if (n == 0) return g2f_error_set(err, G2F_ERR_USAGE, "%s: holds inputs for none of the selected layers",
                                     g2f_fixture_path(inputs));
    g2f_out_spec *specs = calloc(n, sizeof *specs);
    char (*names)[96] = calloc(n, sizeof *names);
    if (!specs || !names) {
        free(specs);
        free(names);
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t L = 0; L < mi->n_layer; L++) {
        if (!selected(p, inputs, L)) continue;
        const g2f_tensor *in = g2f_fixture_input(inputs, L);
        g2f_act kinds[4] = {G2F_ACT_MLP_IN, G2F_ACT_MLP_OUT, G2F_ACT_MLP_PRE, G2F_ACT_MLP_ACT};
        for (int i = 0; i < 4; i++) {
            if ((kinds[i] == G2F_ACT_MLP_PRE && !p->save_pre) || (kinds[i] == G2F_ACT_MLP_ACT && !p->save_act)) continue;
            g2f_fixture_name_for(inputs, L, kinds[i], names[k], sizeof names[k]);
            specs[k].name = names[k];
            specs[k].ndim = in->ndim;
            memcpy(specs[k].shape, in->shape, sizeof in->shape);
            specs[k].shape[in->ndim - 1] = kinds[i] == G2F_ACT_MLP_PRE || kinds[i] == G2F_ACT_MLP_ACT ? h : d;
            k++;
        }
    }
    const g2f_out_meta meta[6] = {
        {"producer", "gpt2ffn run"},
        {"tool", "gpt2ffn " GPT2FFN_VERSION},
        {"gelu", g2f_gelu_name(p->gelu)},
        {"gelu_source", p->gelu_source ? p->gelu_source : ""},
        {"checkpoint", p->checkpoint_label ? p->checkpoint_label : mi->path},
        digest_meta(p),
    };
    g2f_writer *w = NULL;
    st = g2f_writer_open(out_path, p->format, specs, n, meta, 6, &w, err);
    free(specs);
    free(names);
    if (st != G2F_OK) return st;
    g2f_ffn_ws ws = {0}; /* kept across layers */
    g2f_layer_reader rd = {0}; /* each layer's weights, read where that beats the mapping */
    rd.n_threads = p->n_threads;
    float *x = work_buffers(m, inputs, p, err);
    if (!x) st = err ? err->status : G2F_ERR_NOMEM;
    for (size_t L = 0; L < mi->n_layer && st == G2F_OK; L++) {
        if (!selected(p, inputs, L)) continue;
        g2f_layer lw;
        if ((st = g2f_model_layer_read(m, L, &rd, &lw, err)) != G2F_OK) break;
        st = run_layer(&lw.w, g2f_fixture_input(inputs, L), p, x, w, &ws, &r->tokens, err);
        g2f_layer_free(&lw);
        r->layers++;
        r->tensors += per;
    }
    free(x);
    g2f_ffn_ws_free(&ws);
    g2f_layer_reader_free(&rd);
    if (st == G2F_OK) st = put_digest(w, p, err);
    g2f_status cs = g2f_writer_close(w, st == G2F_OK, st == G2F_OK ? err : NULL);
    return st != G2F_OK ? st : cs;
}

/* ---- the whole forward for any prompt -------------------------------------- */

_Static_assert(G2F_ACT_COUNT <= 32, "--save's words are bits of an unsigned");

int g2f_run_parse_save(const char *spec, unsigned *mask, char *msg, size_t n) {
    *mask = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int a = !strcmp(tok, "all") ? -2 : g2f_act_of_save_word(tok);
        for (int k = 0; a == -2 && k < G2F_ACT_COUNT; k++)
            if (g2f_act_info_of((g2f_act)k)->save) *mask |= 1u << k;
        if (a == -2) continue;
        if (a < 0) {
            char words[300];
            size_t used = 0;
            for (int k = 0; k < G2F_ACT_COUNT && used < sizeof words; k++)
                if (g2f_act_info_of((g2f_act)k)->save)
                    used += (size_t)snprintf(words + used, sizeof words - used, "%s, ", g2f_act_info_of((g2f_act)k)->save);
            snprintf(msg, n, "unknown stage '%.40s' (stages: %sor all)", tok, words);
            return 0;
        }
        *mask |= 1u << a;
    }
    return 1;
}

/* One output tensor: a stage of a layer (layer -1: the model's ends), its
 * part (TransformerLens hook_q/k/v: the third of qkv; hook_embed /
 * hook_pos_embed), and the floats per sequence. */
typedef struct out_t {
    long layer;
    g2f_act stage;  /* what it holds (G2F_ACT_IDS, _LOGITS too) */
    int part;
    size_t per_seq;
    float *buf;     /* a layer's stage for every sequence, written at the layer's end */
} out_t;

typedef struct run_ctx {
    const g2f_model *m;
    const g2f_embed *e;
    const int64_t *ids;
    size_t n_seq, T, d, H;
    g2f_writer *w;
    out_t *outs;
    size_t n_outs;
    int tl;
} run_ctx;

/* The chain's values of a saved stage of one sequence, into dst. */
static void stage_copy(const g2f_block_chain *c, const out_t *o, size_t T, size_t d, float *dst) {
    size_t w;
    const float *v = g2f_block_chain_values(c, o->stage, &w);
    if (o->stage == G2F_ACT_QKV && o->part >= 0) { /* TransformerLens: one third, [T, H, dh] = [T, d] */
        for (size_t t = 0; t < T; t++) memcpy(dst + t * d, v + t * 3 * d + (size_t)o->part * d, d * sizeof *dst);
        return;
    }
    memcpy(dst, v, o->per_seq * sizeof *dst);
}

static g2f_status rh_embed(void *u, const float *x, const float *vx, g2f_error *err) {
    (void)vx;
    run_ctx *c = u;
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < c->n_outs && st == G2F_OK; i++) {
        const out_t *o = &c->outs[i];
        if (o->stage != G2F_ACT_EMBED) continue;
        if (!c->tl) {
            st = g2f_writer_put_part(c->w, x, c->n_seq * c->T * c->d, err);
            continue;
        }
        /* hook_embed = wte[ids], hook_pos_embed = wpe[positions]: gathers, exact */
        for (size_t s = 0; s < c->n_seq && st == G2F_OK; s++)
            for (size_t t = 0; t < c->T && st == G2F_OK; t++) {
                const float *row = o->part == 0 ? c->e->wte + (size_t)c->ids[s * c->T + t] * c->d
                                                : c->e->wpe + t * c->d;
                st = g2f_writer_put_part(c->w, row, c->d, err);
            }
    }
    return st;
}

static g2f_status rh_step(void *u, size_t L, size_t seq, const g2f_block_chain *ch, g2f_error *err) {
    (void)err;
    run_ctx *c = u;
    for (size_t i = 0; i < c->n_outs; i++) {
        out_t *o = &c->outs[i];
        if (o->layer == (long)L) stage_copy(ch, o, c->T, c->d, o->buf + seq * o->per_seq);
    }
    return G2F_OK;
}

static g2f_status rh_layer_end(void *u, size_t L, g2f_error *err) {
    run_ctx *c = u;
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < c->n_outs && st == G2F_OK; i++)
        if (c->outs[i].layer == (long)L) st = g2f_writer_put_part(c->w, c->outs[i].buf, c->n_seq * c->outs[i].per_seq, err);
    return st;
}

static g2f_status rh_ln_f(void *u, const float *y, const float *vy, g2f_error *err) {
    (void)vy;
    run_ctx *c = u;
    for (size_t i = 0; i < c->n_outs; i++)
        if (c->outs[i].stage == G2F_ACT_LN_F) return g2f_writer_put_part(c->w, y, c->n_seq * c->T * c->d, err);
    return G2F_OK;
}

static g2f_status rh_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)row0;
    (void)vz;
    run_ctx *c = u;
    return g2f_writer_put_part(c->w, z, n * c->e->vocab, err);
}

/* The output's name in the chosen naming. */
static void out_name(const run_ctx *c, const out_t *o, char *buf, size_t n) {
    g2f_act a = o->stage; /* TransformerLens splits qkv into q, k, v, names merged z, and embed in two */
    if (c->tl && a == G2F_ACT_QKV) a = (g2f_act)(G2F_ACT_Q + o->part);
    else if (c->tl && a == G2F_ACT_MERGED) a = G2F_ACT_Z;
    else if (c->tl && a == G2F_ACT_EMBED) a = o->part ? G2F_ACT_POS_EMBED : G2F_ACT_TOK_EMBED;
    g2f_act_name(a, o->layer, c->tl, buf, n);
}

/* The ids, their count and the model's sizes, checked before any work. */
static g2f_status run_inputs_check(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t N, size_t T,
                                   size_t H, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    for (size_t i = 0; i < N; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= e->vocab)
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "input_ids: token id %lld at position %zu (sequence %zu, token %zu) is outside the "
                                 "vocabulary 0..%zu", (long long)ids[i], i, i / T, i % T, e->vocab - 1);
    if (e->wpe && T > e->n_pos)
        return g2f_error_set(err, G2F_ERR_FORMAT, "input_ids: sequences of %zu tokens but %s has %zu positions (wpe)",
                             T, mi->path, e->n_pos);
    if (!H || e->d % H)
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: n_head %s (config.json n_head, or --n-head N)", mi->path,
                             H ? "does not divide n_embd" : "is unknown");
    char why[512]; /* before the output is opened: nothing is written for a model that cannot be computed */
    g2f_status st = g2f_model_forward_ready(m, e, why, sizeof why, err);
    if (st == G2F_OK && why[0])
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: the whole model cannot be computed", why);
    return st;
}

/* The outputs --save asks for, in file order, into outs (*n of them). */
static g2f_status plan_outputs(const run_ctx *c, const g2f_run_model_params *p, out_t *outs, size_t *n,
                               g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(c->m);
    size_t T = c->T, d = c->d, H = c->H, h = mi->n_inner, k0 = 0;
    outs[k0++] = (out_t){-1, G2F_ACT_IDS, 0, T, NULL};
    if (p->save & (1u << G2F_ACT_EMBED)) {
        outs[k0++] = (out_t){-1, G2F_ACT_EMBED, 0, T * d, NULL};
        if (p->tl_names) outs[k0++] = (out_t){-1, G2F_ACT_EMBED, 1, T * d, NULL};
    }
    for (size_t L = 0; L < mi->n_layer; L++)
        for (int k = G2F_ACT_IN; k <= G2F_ACT_OUT; k++) {
            if (!(p->save & (1u << k))) continue;
            g2f_act_width wd = g2f_act_info_of((g2f_act)k)->width;
            size_t per, w = wd == G2F_WIDTH_3D ? 3 * d : wd == G2F_WIDTH_PROBS ? H * T : wd == G2F_WIDTH_INNER ? h : d;
            if (__builtin_mul_overflow(w, T, &per)) /* T from a file: (n_head T) T can overflow */
                return *n = k0, g2f_error_set(err, G2F_ERR_NOMEM, "run: layer %zu's stages for sequences of %zu "
                                               "tokens are too large", L, T);
            if (k == G2F_ACT_QKV && p->tl_names)
                for (int part = 0; part < 3; part++) outs[k0++] = (out_t){(long)L, (g2f_act)k, part, T * d, NULL};
            else outs[k0++] = (out_t){(long)L, (g2f_act)k, -1, per, NULL};
        }
    if (p->save & (1u << G2F_ACT_LN_F)) outs[k0++] = (out_t){-1, G2F_ACT_LN_F, 0, T * d, NULL};
    outs[k0++] = (out_t){-1, G2F_ACT_LOGITS, 0, T * c->e->vocab, NULL};
    *n = k0;
    return G2F_OK;
}

/* Output i's name, shape (lead dimensions first) and, for a layer's
 * stage, its buffer over every sequence. */
static g2f_status spec_output(const run_ctx *c, out_t *o, const uint64_t *lead, size_t lead_ndim, char *name,
                              size_t name_len, g2f_out_spec *spec, unsigned char *i64, g2f_error *err) {
    size_t T = c->T, H = c->H;
    out_name(c, o, name, name_len);
    spec->name = name;
    memcpy(spec->shape, lead, lead_ndim * sizeof *lead);
    size_t nd = lead_ndim;
    int heads = c->tl && (o->stage == G2F_ACT_QKV || o->stage == G2F_ACT_MERGED);
    if (o->stage == G2F_ACT_PROBS) {
        spec->shape[nd++] = H, spec->shape[nd++] = T, spec->shape[nd++] = T;
    } else {
        spec->shape[nd++] = T;
        if (o->stage == G2F_ACT_IDS) *i64 = 1;
        else if (heads) spec->shape[nd++] = H, spec->shape[nd++] = c->d / H;
        else spec->shape[nd++] = o->per_seq / T;
    }
    spec->ndim = nd;
    if (o->layer < 0) return G2F_OK;
    char what[96];
    snprintf(what, sizeof what, "run: layer %ld's %s for %zu sequences", o->layer, name, c->n_seq);
    if (!(o->buf = g2f_alloc_work(c->n_seq, o->per_seq, sizeof(float), what, err))) return err ? err->status : G2F_ERR_NOMEM;
    return G2F_OK;
}

/* Opens the output file with the run's metadata. */
static g2f_status open_output(run_ctx *c, const char *out_path, const g2f_run_model_params *p,
                              const g2f_out_spec *specs, const unsigned char *i64, size_t n, g2f_error *err) {
    const g2f_run_params *rp = p->run;
    const g2f_out_meta meta[8] = {
        {"producer", "gpt2ffn run"},
        {"tool", "gpt2ffn " GPT2FFN_VERSION},
        {"kind", "model"},
        {"gelu", g2f_gelu_name(rp->gelu)},
        {"gelu_source", rp->gelu_source ? rp->gelu_source : ""},
        {"checkpoint", rp->checkpoint_label ? rp->checkpoint_label : g2f_model_get_info(c->m)->path},
        digest_meta(rp),
        {"names", p->tl_names ? "tl" : "hf"},
    };
    return g2f_writer_open_typed(out_path, rp->format, specs, i64, n, meta, 8, &c->w, err);
}

g2f_status g2f_run_model(const g2f_model *m, const int64_t *ids, const uint64_t *lead, size_t lead_ndim, size_t T,
                         const char *out_path, const g2f_run_model_params *p, g2f_run_result *r, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    memset(r, 0, sizeof *r);
    if (mi->attn_unscaled || mi->attn_by_layer)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: config.json sets %s: the attention is not GPT-2's, which gpt2ffn "
                             "computes", mi->config_path ? mi->config_path : mi->path,
                             mi->attn_unscaled ? "scale_attn_weights false" : "scale_attn_by_inverse_layer_idx true");
    if (lead_ndim > G2F_MAX_DIMS - 3 || T == 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "input_ids: %zu dimensions before the tokens (at most %d), %zu tokens",
                             lead_ndim, G2F_MAX_DIMS - 3, T);
    size_t n_seq = 1;
    for (size_t i = 0; i < lead_ndim; i++)
        if (__builtin_mul_overflow(n_seq, (size_t)lead[i], &n_seq))
            return g2f_error_set(err, G2F_ERR_USAGE, "input_ids: too many sequences");
    if (n_seq == 0) return g2f_error_set(err, G2F_ERR_USAGE, "input_ids: no sequences");
    g2f_embed e;
    g2f_status st = g2f_model_embed_load(m, &e, err);
    if (st != G2F_OK) return st;
    size_t d = e.d, H = p->n_head ? p->n_head : mi->n_head, N = n_seq * T;
    if ((st = run_inputs_check(m, &e, ids, N, T, H, err)) != G2F_OK) {
        g2f_embed_free(&e);
        return st;
    }
    size_t cap = 4 + 2 + (size_t)mi->n_layer * (G2F_ACT_COUNT + 2), n = 0;
    out_t *outs = calloc(cap, sizeof *outs);
    g2f_out_spec *specs = calloc(cap, sizeof *specs);
    unsigned char *i64 = calloc(cap, 1);
    char (*names)[96] = calloc(cap, sizeof *names);
    run_ctx c = {m, &e, ids, n_seq, T, d, H, NULL, outs, 0, p->tl_names};
    if (!outs || !specs || !i64 || !names) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = plan_outputs(&c, p, outs, &n, err)) != G2F_OK) goto done;
    c.n_outs = n;
    for (size_t i = 0; i < n && st == G2F_OK; i++)
        st = spec_output(&c, &outs[i], lead, lead_ndim, names[i], sizeof names[i], &specs[i], &i64[i], err);
    if (st != G2F_OK || (st = open_output(&c, out_path, p, specs, i64, n, err)) != G2F_OK) goto done;
    st = g2f_writer_put_i64_part(c.w, ids, N, err);
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    const g2f_run_params *rp = p->run;
    g2f_forward_params fp = {p->n_head, &tol, rp->gelu, rp->n_threads, !(p->save & (1u << G2F_ACT_PROBS)), 0};
    g2f_forward_hooks hk = {&c, rh_embed, rh_step, rh_layer_end, rh_ln_f, rh_logits};
    if (st == G2F_OK) st = g2f_forward_run(m, &e, ids, n_seq, T, &fp, NULL, NULL, &hk, NULL, err);
    if (st == G2F_OK) st = put_digest(c.w, rp, err);
    g2f_status cs = g2f_writer_close(c.w, st == G2F_OK, st == G2F_OK ? err : NULL);
    if (st == G2F_OK) st = cs;
    r->layers = mi->n_layer;
    r->tensors = n;
    r->tokens = N;
done:
    for (size_t i = 0; outs && i < n; i++) free(outs[i].buf);
    free(outs);
    free(specs);
    free(i64);
    free(names);
    g2f_embed_free(&e);
    return st;
}
