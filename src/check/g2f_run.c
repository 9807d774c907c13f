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

/* The work buffers of one layer: x and out (T, d), pre and act (T, h). */
static size_t work_width(size_t d, size_t h) {
    size_t w;
    if (__builtin_add_overflow(h, d, &w) || __builtin_mul_overflow(w, (size_t)2, &w)) return SIZE_MAX;
    return w;
}

g2f_status g2f_run_check(const g2f_model *m, const g2f_fixture *inputs, const g2f_run_params *p, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner, w = work_width(d, h);
    g2f_status st = g2f_fixture_check_inputs(inputs, mi->n_layer, d, err);
    if (st != G2F_OK) return st;
    uint64_t phys = g2f_physical_memory();
    for (size_t L = 0; L < mi->n_layer; L++) {
        if (!selected(p, inputs, L)) continue;
        size_t T = (size_t)(g2f_fixture_input(inputs, L)->numel / d), n;
        if (__builtin_mul_overflow(T, w, &n) || __builtin_mul_overflow(n, sizeof(float), &n) || (uint64_t)n > phys) {
            char what[96];
            snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens", L, T);
            g2f_alloc_work(T, w, sizeof(float), what, err); /* fails, with the message */
            return err ? err->status : G2F_ERR_NOMEM;
        }
    }
    return G2F_OK;
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
        const g2f_tensor *in = g2f_fixture_input(inputs, L);
        size_t T = (size_t)(in->numel / d);
        char what[96];
        snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens", L, T);
        /* one block: x and out (T, d), pre and act (T, h); its size checked at once */
        float *x = g2f_alloc_work(T, work_width(d, h), sizeof(float), what, err);
        float *out = x ? x + T * d : NULL, *pre = x ? out + T * d : NULL, *act = x ? pre + T * h : NULL;
        g2f_layer lw;
        if (!x) {
            st = err ? err->status : G2F_ERR_NOMEM;
        } else if ((st = g2f_model_layer_load(m, L, &lw, err)) == G2F_OK) {
            g2f_tensor_read_f32(in, 0, in->numel, x);
            g2f_ffn_forward(&lw.w, x, T, p->gelu, pre, act, out, p->n_threads, &ws);
            g2f_layer_free(&lw);
            if ((st = g2f_writer_put(w, x, err)) == G2F_OK && (st = g2f_writer_put(w, out, err)) == G2F_OK &&
                (!p->save_pre || (st = g2f_writer_put(w, pre, err)) == G2F_OK) && p->save_act)
                st = g2f_writer_put(w, act, err);
            r->layers++;
            r->tensors += per;
            r->tokens = T;
        }
        free(x);
    }
    g2f_ffn_ws_free(&ws);
    g2f_status cs = g2f_writer_close(w, st == G2F_OK, st == G2F_OK ? err : NULL);
    return st != G2F_OK ? st : cs;
}
