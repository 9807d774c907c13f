/* g2f_inspect: see g2f_inspect.h. One layer is loaded at a time. */
#include "g2f_inspect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void g2f_stats_compute(const float *v, size_t n, g2f_stats *o) {
    memset(o, 0, sizeof *o);
    o->count = n;
    double mean = 0, m2 = 0;
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        if (isnan(x)) { o->nan++; continue; }
        if (isinf(x)) { o->inf++; continue; }
        if (k == 0 || x < o->min) o->min = x;
        if (k == 0 || x > o->max) o->max = x;
        k++;
        double d = x - mean;
        mean += d / (double)k;
        m2 += d * (x - mean);
    }
    o->mean = mean;
    o->std = k > 1 ? sqrt(m2 / (double)k) : 0;
}

g2f_status g2f_inspect_run(const g2f_model *m, g2f_inspect_result *out, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    memset(out, 0, sizeof *out);
    out->layers = calloc(mi->n_layer ? mi->n_layer : 1, sizeof *out->layers);
    if (!out->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    out->n_layers = mi->n_layer;
    out->ffn_params = g2f_model_ffn_params(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    for (size_t L = 0; L < mi->n_layer; L++) {
        g2f_layer l;
        g2f_status s = g2f_model_layer_load(m, L, &l, err);
        if (s != G2F_OK) {
            g2f_inspect_result_free(out);
            return s;
        }
        g2f_inspect_layer *il = &out->layers[L];
        const float *v[G2F_FFN_TENSORS] = {l.w.w_fc, l.w.b_fc, l.w.w_proj, l.w.b_proj};
        const size_t n[G2F_FFN_TENSORS] = {d * h, h, d * h, d};
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            il->tensor[k] = l.src[k];
            if (v[k]) g2f_stats_compute(v[k], n[k], &il->stats[k]);
        }
        g2f_layer_free(&l);
        /* the block's other tensors, each read whole (at most 3 d^2 floats) */
        const g2f_tensor *all[G2F_LAYER_TENSORS];
        if ((s = g2f_model_layer_tensors_all(m, L, all, &il->attn_split, err)) != G2F_OK) {
            g2f_inspect_result_free(out);
            return s;
        }
        for (int k = G2F_FFN_TENSORS; k < G2F_LAYER_TENSORS; k++) {
            const g2f_tensor *t = all[k];
            if (!t) continue;
            float *buf = g2f_alloc_work((size_t)t->numel, 1, sizeof(float), t->name, err);
            if (!buf) {
                g2f_inspect_result_free(out);
                return err ? err->status : G2F_ERR_NOMEM;
            }
            g2f_tensor_read_f32(t, 0, (size_t)t->numel, buf);
            g2f_stats_compute(buf, (size_t)t->numel, &il->stats[k]);
            free(buf);
            g2f_mapping_release(t->data, t->nbytes);
            il->tensor[k] = t;
        }
    }
    return G2F_OK;
}

void g2f_inspect_result_free(g2f_inspect_result *r) {
    if (!r) return;
    free(r->layers);
    memset(r, 0, sizeof *r);
}
