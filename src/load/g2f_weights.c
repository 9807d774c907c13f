/* g2f_weights: a layer's, a LayerNorm's and a block's weights as floats
 * (views into the mapping, or converted copies), the stored tensors of a
 * layer by role, and every other tensor; see g2f_model.h. */
#define _DEFAULT_SOURCE /* madvise(MADV_HUGEPAGE) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "g2f_file.h"
#include "g2f_model_impl.h"
#include "g2f_quant.h"

/* ---- the layer reader (g2f_layer_reader, g2f_model.h) ---- */

#define PROBE_MIN ((uint64_t)8 << 20) /* a layer's float32 bytes before the reader measures */
#define PROBE_PIECE ((uint64_t)1 << 20)
#define PROBE_ROUNDS 4
#define PROBE_BYTES (2 * PROBE_ROUNDS * PROBE_PIECE) /* of the tensor measured */
#define BUF_ALIGN ((size_t)2 << 20) /* whole huge pages where the kernel gives them */

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A float32 tensor's place in the reader's buffer: whole cache lines. */
static uint64_t slot_bytes(const g2f_tensor *x) { return (x->nbytes + 63) / 64 * 64; }

static void reader_drop_buf(g2f_layer_reader *rd) {
    free(rd->buf);
    rd->buf = NULL;
    rd->cap = 0;
}

/* rd's buffer of at least bytes; 0 when it cannot be had (then the views). */
static int reader_reserve(g2f_layer_reader *rd, uint64_t bytes) {
    if (rd->cap >= bytes) return 1;
    free(rd->buf);
    rd->cap = 0;
    rd->buf = NULL;
    if (bytes > SIZE_MAX - BUF_ALIGN) return 0;
    size_t n = ((size_t)bytes + BUF_ALIGN - 1) / BUF_ALIGN * BUF_ALIGN;
    rd->buf = aligned_alloc(BUF_ALIGN, n);
    if (!rd->buf) return 0;
#ifdef MADV_HUGEPAGE
    madvise(rd->buf, n, MADV_HUGEPAGE); /* fewer first-touch faults and TLB misses; only advice */
#endif
    rd->cap = n;
    return 1;
}

/* Which way reads x faster: PROBE_PIECE bytes copied out of the mapping
 * (populated first, as the views are) against as many read with pread,
 * alternating, PROBE_ROUNDS times, into dst (the buffer the reads would
 * fill anyway); each the fastest of its rounds, so that a round the host
 * interrupted decides nothing (with two rounds, a verify of GPT-2 XL run
 * under perf spent a third of its time copying from the mapping). Reading
 * wins only by a clear margin (1.5x): where the two are close the views
 * save the buffer. */
static int probe_mode(const g2f_mapping *map, const g2f_tensor *x, unsigned char *dst) {
    double t_map = 1e30, t_read = 1e30;
    for (int r = 0; r < PROBE_ROUNDS; r++) {
        uint64_t a = (uint64_t)(2 * r) * PROBE_PIECE, b = a + PROBE_PIECE;
        double t0 = seconds_now();
        g2f_mapping_populate(x->data + a, PROBE_PIECE);
        memcpy(dst + a, x->data + a, PROBE_PIECE);
        double t1 = seconds_now();
        if (!g2f_mapping_read(map, x->data + b, PROBE_PIECE, dst + b, 1)) return G2F_READ_MAP;
        double t2 = seconds_now();
        t_map = t1 - t0 < t_map ? t1 - t0 : t_map;
        t_read = t2 - t1 < t_read ? t2 - t1 : t_read;
    }
    g2f_mapping_release(x->data, PROBE_BYTES);
    return 1.5 * t_read < t_map ? G2F_READ_PREAD : G2F_READ_MAP;
}

/* rd->mode once decided: GPT2FFN_WEIGHTS, else probe_mode on the largest
 * float32 tensor of the first layer with PROBE_MIN bytes of them. */
static void reader_decide(const g2f_model *m, g2f_layer_reader *rd, const g2f_tensor *const *x, uint64_t bytes) {
    const char *e = getenv("GPT2FFN_WEIGHTS");
    if (e && (!strcmp(e, "map") || !strcmp(e, "read"))) {
        rd->mode = !strcmp(e, "map") ? G2F_READ_MAP : G2F_READ_PREAD;
        return;
    }
    if (bytes < PROBE_MIN) return; /* small layers cost little either way: views, decided later */
    const g2f_tensor *big = NULL;
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (x[k] && g2f_model_in_place(x[k]) && (!big || x[k]->nbytes > big->nbytes)) big = x[k];
    const g2f_mapping *map = NULL;
    if (big && big->nbytes >= PROBE_BYTES) map = g2f_source_mapping_of(m->src, big->data, big->nbytes);
    rd->mode = map && reader_reserve(rd, PROBE_BYTES) ? probe_mode(map, big, rd->buf) : G2F_READ_MAP;
    if (rd->mode == G2F_READ_MAP) reader_drop_buf(rd);
}

/* Reads the float32 tensors of x into rd's buffer (each 64-byte aligned),
 * views[k] pointing there; a tensor that cannot be read keeps views[k]
 * NULL. Returns the bits of the tensors read. */
static int reader_fill(const g2f_model *m, g2f_layer_reader *rd, const g2f_tensor *const *x, uint64_t bytes,
                       const float *views[]) {
    if (!reader_reserve(rd, bytes)) return 0;
    int bits = 0;
    uint64_t at = 0;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        if (!x[k] || !g2f_model_in_place(x[k])) continue;
        const g2f_mapping *map = g2f_source_mapping_of(m->src, x[k]->data, x[k]->nbytes);
        if (map && g2f_mapping_read(map, x[k]->data, x[k]->nbytes, rd->buf + at, rd->n_threads)) {
            views[k] = (const float *)(const void *)(rd->buf + at);
            bits |= 1 << k;
        }
        at += slot_bytes(x[k]);
    }
    return bits;
}

void g2f_layer_reader_free(g2f_layer_reader *rd) {
    if (!rd) return;
    reader_drop_buf(rd);
    rd->mode = G2F_READ_UNDECIDED;
}

g2f_status g2f_model_layer_load(const g2f_model *m, size_t layer, g2f_layer *out, g2f_error *err) {
    return g2f_model_layer_read(m, layer, NULL, out, err);
}

/* The float32 tensors of x in place in the mapping, read into rd's buffer
 * when rd (may be NULL) decides reading is faster (views[k] set for each);
 * none when one of them is over G2F_POPULATE_MAX (as g2f_mapping_populate:
 * a hostile file's huge, sparse tensor is never read, nor a buffer for it
 * allocated, ahead of the checks on the work it asks for). Returns the bits
 * of the tensors read. */
static int reader_take(const g2f_model *m, g2f_layer_reader *rd, const g2f_tensor *const *x, const float *views[]) {
    uint64_t in_place = 0;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        if (!x[k] || !g2f_model_in_place(x[k])) continue;
        if (x[k]->nbytes > G2F_POPULATE_MAX) return 0;
        in_place += slot_bytes(x[k]);
    }
    if (!rd || !in_place) return 0;
    if (rd->mode == G2F_READ_UNDECIDED) reader_decide(m, rd, x, in_place);
    return rd->mode == G2F_READ_PREAD ? reader_fill(m, rd, x, in_place, views) : 0;
}

void g2f_model_release(const g2f_model *m, const g2f_tensor *t) {
    if (t && t->nbytes && g2f_source_mapping_of(m->src, t->data, t->nbytes)) g2f_mapping_release(t->data, t->nbytes);
}

const float *g2f_model_tensor_read(const g2f_model *m, const g2f_tensor *t, g2f_layer_reader *rd) {
    const g2f_tensor *x[G2F_FFN_TENSORS] = {t};
    const float *views[G2F_FFN_TENSORS] = {0};
    return t && reader_take(m, rd, x, views) ? views[0] : NULL;
}

g2f_status g2f_model_layer_read(const g2f_model *m, size_t layer, g2f_layer_reader *rd, g2f_layer *out,
                                g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    const g2f_tensor *const *x = m->layers[layer];
    for (int k = 0; k < G2F_FFN_TENSORS; k++) { /* quantized blocks: sizes and finite scales, before any use */
        g2f_status s = x[k] ? g2f_quant_check(x[k], m->path, err) : G2F_OK;
        if (s != G2F_OK) return s;
    }
    uint64_t need = 0;
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (x[k] && !g2f_model_in_place(x[k])) need += x[k]->numel; /* sizes validated against the file */
    if (need) {
        out->owned = g2f_alloc_array((size_t)need, sizeof(float));
        if (!out->owned)
            return g2f_error_set(err, G2F_ERR_NOMEM, "layer %zu: cannot allocate %llu floats for conversion", layer,
                                 (unsigned long long)need);
    }
    const float *views[G2F_FFN_TENSORS] = {0};
    out->read = reader_take(m, rd, x, views);
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out->src[k] = x[k];
    float *cur = out->owned;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        if (!x[k] || views[k]) continue;
        if (g2f_model_in_place(x[k])) {
            views[k] = (const float *)(const void *)x[k]->data;
            g2f_mapping_populate(x[k]->data, x[k]->nbytes);
        } else {
            g2f_tensor_read_f32(x[k], 0, x[k]->numel, cur);
            views[k] = cur;
            cur += x[k]->numel;
        }
    }
    out->w = (g2f_ffn_weights){.n_embd = m->info.n_embd, .n_inner = m->info.n_inner,
                               .layout_fc = m->info.layout, .layout_proj = m->info.layout,
                               .w_fc = views[G2F_FFN_FC_W], .b_fc = views[G2F_FFN_FC_B],
                               .w_proj = views[G2F_FFN_PROJ_W], .b_proj = views[G2F_FFN_PROJ_B]};
    return G2F_OK;
}

void g2f_layer_free(g2f_layer *l) {
    if (!l) return;
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (l->src[k] && !(l->read & (1 << k))) g2f_mapping_release(l->src[k]->data, l->src[k]->nbytes);
    free(l->owned);
    memset(l, 0, sizeof *l);
}

/* Converts (or views) a float vector tensor of n elements into dst / *view. */
static g2f_status vector_view(const g2f_model *m, const g2f_tensor *x, size_t n, const char *role, float **owned,
                              const float **view, g2f_error *err) {
    *view = NULL;
    if (!x) return G2F_OK;
    if (!g2f_dtype_is_float(x->dtype) || x->numel != n)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s, expected %zu floats", m->path, x->name,
                             role, g2f_tensor_type_name(x), n);
    if (g2f_model_in_place(x)) {
        *view = (const float *)(const void *)x->data;
        g2f_mapping_populate(x->data, x->nbytes);
        return G2F_OK;
    }
    float *buf = g2f_alloc_array(n ? n : 1, sizeof(float));
    if (!buf) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", m->path);
    g2f_tensor_read_f32(x, 0, n, buf);
    *owned = buf;
    *view = buf;
    return G2F_OK;
}

g2f_status g2f_model_ln_load(const g2f_model *m, int which, size_t layer, g2f_ln *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const g2f_scheme *S = g2f_model_scheme(m);
    out->d = m->info.n_embd;
    out->eps = m->info.ln_eps;
    if (!m->by_name) return G2F_OK; /* set by g2f_model_open */
    const g2f_tensor *w, *b;
    if (which == 0) {
        w = g2f_model_find(m, S->ln_f[0], -1);
        b = g2f_model_find(m, S->ln_f[1], -1);
    } else {
        if (which != 1 && which != 2)
            return g2f_error_set(err, G2F_ERR_USAGE, "g2f_model_ln_load: which is 0, 1 or 2, not %d", which);
        if (layer >= m->info.n_layer)
            return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
        w = g2f_model_find(m, S->ln[which - 1][0], (int)layer);
        b = g2f_model_find(m, S->ln[which - 1][1], (int)layer);
    }
    out->found = w != NULL;
    for (int k = 0; k < 2; k++) {
        const g2f_tensor *t = k ? b : w;
        double u = t ? g2f_dtype_store_roundoff(t->dtype) : 0;
        if (u > out->roundoff) out->roundoff = u;
    }
    g2f_status st = vector_view(m, w, out->d, "LayerNorm gain", &out->owned[0], &out->w, err);
    if (st == G2F_OK) st = vector_view(m, b, out->d, "LayerNorm bias", &out->owned[1], &out->b, err);
    if (st != G2F_OK) g2f_ln_free(out);
    return st;
}

void g2f_ln_free(g2f_ln *ln) {
    if (!ln) return;
    free(ln->owned[0]);
    free(ln->owned[1]);
    memset(ln, 0, sizeof *ln);
}

/* A 2-D attention weight of the scheme's layout: rows x cols as stored. */
static g2f_status matrix_view(const g2f_model *m, const g2f_tensor *x, uint64_t rows, uint64_t cols, float **owned,
                              const float **view, g2f_error *err) {
    if (x->ndim != 2 || x->shape[0] != rows || x->shape[1] != cols) {
        char sh[64];
        g2f_shape_format(x, sh, sizeof sh);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected [%llu, %llu]", m->path,
                             x->name, sh, (unsigned long long)rows, (unsigned long long)cols);
    }
    return vector_view(m, x, (size_t)(rows * cols), "attention weight", owned, view, err);
}

g2f_status g2f_model_block_load(const g2f_model *m, size_t layer, size_t n_head, g2f_block *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const g2f_scheme *S = g2f_model_scheme(m);
    size_t d = m->info.n_embd;
    out->n_embd = d;
    out->n_head = n_head ? n_head : m->info.n_head;
    g2f_status st = g2f_model_layer_load(m, layer, &out->mlp, err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 1, layer, &out->ln_1, err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 2, layer, &out->ln_2, err);
    if (st != G2F_OK) goto fail;
    if (!S->attn[0]) {
        if (out->n_head && (st = g2f_tlens_block_attention(m, layer, out->n_head, out, err)) != G2F_OK) goto fail;
        return G2F_OK;
    }
    const g2f_tensor *x[4];
    for (int k = 0; k < 4; k++) out->src[k] = x[k] = g2f_model_find(m, S->attn[k], (int)layer);
    if (!x[0] || !x[2]) return G2F_OK; /* no attention weights: an FFN-only checkpoint */
    g2f_layout lay = m->info.layout;
    float *owned[4] = {0};
    const float *v[4] = {0};
    st = matrix_view(m, x[0], lay == G2F_LAYOUT_CONV1D ? d : 3 * d, lay == G2F_LAYOUT_CONV1D ? 3 * d : d, &owned[0],
                     &v[0], err);
    if (st == G2F_OK) st = matrix_view(m, x[2], d, d, &owned[2], &v[2], err);
    if (st == G2F_OK) st = vector_view(m, x[1], 3 * d, "c_attn bias", &owned[1], &v[1], err);
    if (st == G2F_OK) st = vector_view(m, x[3], d, "attention c_proj bias", &owned[3], &v[3], err);
    if (st == G2F_OK) {
        /* one owned block for whatever was converted */
        size_t need = 0, sizes[4] = {3 * d * d, 3 * d, d * d, d};
        for (int k = 0; k < 4; k++) need += owned[k] ? sizes[k] : 0;
        if (need) {
            out->owned = g2f_alloc_work(need, 1, sizeof(float), "the attention weights", err);
            if (!out->owned) st = err ? err->status : G2F_ERR_NOMEM;
            float *p = out->owned;
            for (int k = 0; st == G2F_OK && k < 4; k++)
                if (owned[k]) {
                    memcpy(p, owned[k], sizes[k] * sizeof(float));
                    v[k] = p;
                    p += sizes[k];
                }
        }
    }
    for (int k = 0; k < 4; k++) free(owned[k]);
    if (st != G2F_OK) goto fail;
    out->attn_w = v[0];
    out->attn_b = v[1];
    out->aproj_w = v[2];
    out->aproj_b = v[3];
    out->layout_attn = out->layout_aproj = lay;
    out->has_attn = 1;
    return G2F_OK;
fail:
    g2f_block_free(out);
    return st;
}

void g2f_block_free(g2f_block *b) {
    if (!b) return;
    for (int k = 0; k < 4; k++)
        if (b->src[k] && !b->owned) g2f_mapping_release(b->src[k]->data, b->src[k]->nbytes);
    g2f_layer_free(&b->mlp);
    g2f_ln_free(&b->ln_1);
    g2f_ln_free(&b->ln_2);
    free(b->owned);
    memset(b, 0, sizeof *b);
}

g2f_status g2f_model_layer_tensors(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_FFN_TENSORS],
                                   g2f_error *err) {
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out[k] = NULL;
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        const g2f_tensor *x = m->layers[layer][k];
        g2f_status s = x ? g2f_quant_check(x, m->path, err) : G2F_OK;
        if (s != G2F_OK) return s;
    }
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out[k] = m->layers[layer][k];
    return G2F_OK;
}

/* A stored block tensor of role k against its role's shape: rows x cols as
 * stored (a vector: cols 0, any shape of that many elements). */
static g2f_status check_role(const g2f_model *m, const g2f_tensor *x, int k, uint64_t rows, uint64_t cols,
                             g2f_error *err) {
    if (!g2f_dtype_is_float(x->dtype) && !g2f_dtype_is_quant(x->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s is not a float type", m->path, x->name,
                             g2f_model_tensor_role(k), g2f_tensor_type_name(x));
    int ok = cols ? x->ndim == 2 && x->shape[0] == rows && x->shape[1] == cols : x->numel == rows;
    if (!ok) {
        char sh[64];
        g2f_shape_format(x, sh, sizeof sh);
        if (cols)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected [%llu, %llu]", m->path,
                                 x->name, g2f_model_tensor_role(k), sh, (unsigned long long)rows,
                                 (unsigned long long)cols);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected %llu values", m->path,
                             x->name, g2f_model_tensor_role(k), sh, (unsigned long long)rows);
    }
    return g2f_quant_check(x, m->path, err);
}

g2f_status g2f_model_layer_tensors_all(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_LAYER_TENSORS],
                                       int *attn_split, g2f_error *err) {
    for (int k = 0; k < G2F_LAYER_TENSORS; k++) out[k] = NULL;
    *attn_split = 0;
    g2f_status st = g2f_model_layer_tensors(m, layer, out, err);
    if (st != G2F_OK) return st;
    const g2f_scheme *S = g2f_model_scheme(m);
    const uint64_t d = m->info.n_embd;
    int lin = m->info.layout == G2F_LAYOUT_LINEAR;
    const struct {
        int role;
        const char *name;
        uint64_t rows, cols;
    } want[] = {
        {G2F_BLK_LN1_W, S->ln[0][0], d, 0},
        {G2F_BLK_LN1_B, S->ln[0][1], d, 0},
        {G2F_BLK_ATTN_W, S->attn[0], lin ? 3 * d : d, lin ? d : 3 * d},
        {G2F_BLK_ATTN_B, S->attn[1], 3 * d, 0},
        {G2F_BLK_APROJ_W, S->attn[2], d, d},
        {G2F_BLK_APROJ_B, S->attn[3], d, 0},
        {G2F_BLK_LN2_W, S->ln[1][0], d, 0},
        {G2F_BLK_LN2_B, S->ln[1][1], d, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!want[i].name) continue; /* TransformerLens attention */
        const g2f_tensor *x = g2f_model_find(m, want[i].name, (int)layer);
        if (x && (st = check_role(m, x, want[i].role, want[i].rows, want[i].cols, err)) != G2F_OK) {
            for (int k = 0; k < G2F_LAYER_TENSORS; k++) out[k] = NULL;
            return st;
        }
        out[want[i].role] = x;
    }
    if (!S->attn[0]) *attn_split = g2f_model_find(m, S->split_attn[0], (int)layer) != NULL;
    return G2F_OK;
}

g2f_status g2f_model_forward_ready(const g2f_model *m, const g2f_embed *e, char *why, size_t n, g2f_error *err) {
    const g2f_scheme *S = g2f_model_scheme(m);
    why[0] = '\0';
    if (!e->wpe) {
        snprintf(why, n, "%s: no position embedding (%s)", m->path, S->ends[1][0]);
        return G2F_OK;
    }
    if (!e->ln_f.found) {
        snprintf(why, n, "%s: no final LayerNorm (%s)", m->path, S->ln_f[0]);
        return G2F_OK;
    }
    static const int roles[] = {G2F_BLK_LN1_W, G2F_BLK_LN2_W, G2F_BLK_LN1_B, G2F_BLK_LN2_B, G2F_BLK_ATTN_B,
                                G2F_BLK_APROJ_B};
    const char *names[] = {S->ln[0][0], S->ln[1][0], S->ln[0][1], S->ln[1][1], S->attn[1], S->attn[3]};
    int first[6] = {0};
    for (size_t L = 0; L < m->info.n_layer; L++) {
        const g2f_tensor *ts[G2F_LAYER_TENSORS];
        int split = 0;
        g2f_status st = g2f_model_layer_tensors_all(m, L, ts, &split, err);
        if (st != G2F_OK) return st;
        if (!split && !ts[G2F_BLK_ATTN_W]) {
            snprintf(why, n, "%s: layer %zu holds no attention weights (%s)", m->path, L,
                     S->attn[0] ? S->attn[0] : S->split_attn[0]);
            return G2F_OK;
        }
        for (int k = 0; k < 6; k++) {
            if (!names[k]) continue; /* TransformerLens's attention: its own names */
            int has = ts[roles[k]] != NULL, gain = k < 2;
            if (L == 0) first[k] = has;
            if (gain ? has : has == first[k]) continue;
            snprintf(why, n, "%s: tensor '%s%s.%zu.%s' is %s%s", m->path, m->prefix,
                     S->block, L, names[k], has ? "present but layer 0 has none" : "missing",
                     gain || has ? "" : " but layer 0 has one");
            return G2F_OK;
        }
        if (L == 0 && (first[2] || first[3]) != (e->ln_f.b != NULL)) {
            snprintf(why, n, "%s: the final LayerNorm %s (%s) %s", m->path, e->ln_f.b ? "has a bias" : "has no bias",
                     S->ln_f[1], e->ln_f.b ? "and the blocks' LayerNorms have none" : "but the blocks' LayerNorms have one");
            return G2F_OK;
        }
    }
    return G2F_OK;
}

/* A training checkpoint's own keys beside the model's state dict (nanoGPT's
 * optimizer, iter_num, best_val_loss, model_args, config; the common
 * trainers' scheduler, scaler, epoch, step, rng state): only these are
 * training state. A flat state dict whose keys carry a wrapper's "model."
 * prefix reads like a nested {"model": ...} dict, so another tensor beside
 * it (a score head) is a parameter, compared. */
static int is_training_key(const char *name) {
    static const char *const keys[] = {"optimizer", "optimizer_state_dict", "optim", "scheduler", "lr_scheduler",
                                       "scaler", "best_val_loss", "iter_num", "epoch", "step", "global_step",
                                       "model_args", "config", "args", "rng_state", "train_state"};
    size_t n = strcspn(name, ".");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i]) == n && !strncmp(name, keys[i], n)) return 1;
    return 0;
}

static void mark(unsigned char *used, const g2f_table *t, const g2f_tensor *x) {
    if (x) used[x - t->tensors] = 1;
}

g2f_status g2f_model_others(const g2f_model *m, g2f_model_other **out, size_t *n, g2f_error *err) {
    *out = NULL;
    *n = 0;
    const g2f_table *t = g2f_source_table(m->src);
    if (!t->count || !m->by_name) return G2F_OK;
    unsigned char *used = calloc(t->count, 1);
    if (!used) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    const g2f_scheme *S = g2f_model_scheme(m);
    for (size_t L = 0; L < m->info.n_layer; L++) {
        for (int k = 0; k < G2F_FFN_TENSORS; k++) mark(used, t, m->layers[L][k]);
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < 2; k++) mark(used, t, g2f_model_find(m, S->ln[w][k], (int)L));
        for (int k = 0; k < 4; k++)
            if (S->attn[k]) mark(used, t, g2f_model_find(m, S->attn[k], (int)L));
        /* TransformerLens' split attention is compared assembled only when W_Q, W_K, W_V and W_O are all
         * there; else its parts are other tensors, compared by name, never silently left out */
        int whole = S->split_attn[0] != NULL;
        for (int k = 0; whole && k < 7; k += k == 2 ? 4 : 1) whole = g2f_model_find(m, S->split_attn[k], (int)L) != NULL;
        for (int k = 0; whole && k < 8; k++) mark(used, t, g2f_model_find(m, S->split_attn[k], (int)L));
    }
    for (int r = 0; r < G2F_EMB_COUNT; r++) mark(used, t, g2f_model_find_end(m, r));
    for (int k = 0; k < 2; k++) mark(used, t, g2f_model_find(m, S->ln_f[k], -1));
    size_t count = 0;
    for (size_t i = 0; i < t->count; i++) count += !used[i];
    g2f_model_other *o = count ? calloc(count, sizeof *o) : NULL;
    if (count && !o) {
        free(used);
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    /* a torch.save dict: the tensors outside the model's container are training state */
    const char *dict = g2f_source_format(m->src) == G2F_FORMAT_ZIP ? g2f_naming_training_container(m->prefix) : NULL;
    for (size_t i = 0, j = 0; i < t->count; i++) {
        if (used[i]) continue;
        const char *name = t->tensors[i].name;
        o[j].t = &t->tensors[i];
        o[j].key = g2f_naming_strip_containers(name);
        o[j].kind = dict && strncmp(name, dict, strlen(dict)) && is_training_key(name) ? G2F_OTHER_TRAINING
                    : g2f_naming_is_buffer(o[j].key)                   ? G2F_OTHER_BUFFER
                                                            : G2F_OTHER_UNKNOWN;
        j++;
    }
    free(used);
    *out = o;
    *n = count;
    return G2F_OK;
}
