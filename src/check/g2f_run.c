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

/* One layer, one output tensor after the other (the file holds each whole):
 * in, out, then pre and act when asked. A layer that fits in one chunk is
 * computed once; otherwise each pass recomputes what it writes, chunk by
 * chunk. Every product is a GEMM (never the one-row GEMV), so the values
 * equal verify's whatever the chunking. */
static g2f_status run_layer(const g2f_ffn_weights *wt, const g2f_tensor *in, size_t L, const g2f_run_params *p,
                            g2f_writer *w, g2f_ffn_ws *ws, size_t *tokens, g2f_error *err) {
    size_t d = wt->n_embd, h = wt->n_inner, T = (size_t)(in->numel / d), C = chunk_tokens(T, d, h);
    char what[96];
    snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens at a time", L, C);
    float *x = g2f_alloc_work(C, work_width(d, h), sizeof(float), what, err);
    if (!x) return err ? err->status : G2F_ERR_NOMEM;
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
    free(x);
    *tokens = T;
    return st;
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
        g2f_fx_kind kinds[4] = {G2F_FX_IN, G2F_FX_OUT, G2F_FX_PRE, G2F_FX_ACT};
        for (int i = 0; i < 4; i++) {
            if ((kinds[i] == G2F_FX_PRE && !p->save_pre) || (kinds[i] == G2F_FX_ACT && !p->save_act)) continue;
            g2f_fixture_name_for(inputs, L, kinds[i], names[k], sizeof names[k]);
            specs[k].name = names[k];
            specs[k].ndim = in->ndim;
            memcpy(specs[k].shape, in->shape, sizeof in->shape);
            specs[k].shape[in->ndim - 1] = kinds[i] == G2F_FX_PRE || kinds[i] == G2F_FX_ACT ? h : d;
            k++;
        }
    }
    const g2f_out_meta meta[6] = {
        {"producer", "gpt2ffn run"},
        {"tool", "gpt2ffn " GPT2FFN_VERSION},
        {"gelu", g2f_gelu_name(p->gelu)},
        {"gelu_source", p->gelu_source ? p->gelu_source : ""},
        {"checkpoint", p->checkpoint_label ? p->checkpoint_label : mi->path},
        {"checkpoint_sha256", p->checkpoint_sha256 ? p->checkpoint_sha256 : ""},
    };
    g2f_writer *w = NULL;
    st = g2f_writer_open(out_path, p->format, specs, n, meta, 6, &w, err);
    free(specs);
    free(names);
    if (st != G2F_OK) return st;
    g2f_ffn_ws ws = {0}; /* kept across layers */
    for (size_t L = 0; L < mi->n_layer && st == G2F_OK; L++) {
        if (!selected(p, inputs, L)) continue;
        g2f_layer lw;
        if ((st = g2f_model_layer_load(m, L, &lw, err)) != G2F_OK) break;
        st = run_layer(&lw.w, g2f_fixture_input(inputs, L), L, p, w, &ws, &r->tokens, err);
        g2f_layer_free(&lw);
        r->layers++;
        r->tensors += per;
    }
    g2f_ffn_ws_free(&ws);
    g2f_status cs = g2f_writer_close(w, st == G2F_OK, st == G2F_OK ? err : NULL);
    return st != G2F_OK ? st : cs;
}
