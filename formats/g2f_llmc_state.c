/* g2f_llmc_state: validating reader for llm.c's debug state; see the
 * checklist in the header. Like the checkpoint (g2f_llmc.c) the file has no
 * directory: every offset follows from B, T and the caller's V, Vp, P, so
 * those are range-checked and the layout computed with checked arithmetic
 * before any view is made. */
#include "g2f_llmc_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bytes.h"
#include "g2f_file.h"

struct g2f_llmc_state {
    g2f_mapping map;
    g2f_table table; /* views into map, or into cut */
    float *cut;      /* padded logits cut to V, or NULL */
};

g2f_status g2f_llmc_state_dims_for_model(uint64_t vocab, uint64_t max_seq_len, uint64_t n_layer, uint64_t n_embd,
                                         g2f_llmc_state_dims *out, g2f_error *err) {
    const uint64_t m = G2F_LLMC_PAD_MULTIPLE, C = n_embd;
    uint64_t vp = 0, cc = 0, per_layer = 0, a = 0, b = 0, p = 0;
    int ok = vocab >= 1 && g2f_add_u64(vocab, m - 1, &vp);
    vp = vp / m * m;
    /* P = Vp C + maxT C + L (12 C^2 + 13 C) + 2 C */
    ok = ok && g2f_mul_u64(C, C, &cc) && g2f_mul_u64(cc, 12, &per_layer) && g2f_mul_u64(C, 13, &a) &&
         g2f_add_u64(per_layer, a, &per_layer) && g2f_mul_u64(per_layer, n_layer, &p) && g2f_mul_u64(vp, C, &a) &&
         g2f_add_u64(p, a, &p) && g2f_mul_u64(max_seq_len, C, &b) && g2f_add_u64(p, b, &p) &&
         g2f_mul_u64(C, 2, &a) && g2f_add_u64(p, a, &p);
    if (!ok || p == 0)
        return g2f_error_set(err, G2F_ERR_USAGE,
                             "llm.c state sizes: vocab %llu, max_seq_len %llu, n_layer %llu, n_embd %llu give no "
                             "parameter count (zero or overflow)",
                             (unsigned long long)vocab, (unsigned long long)max_seq_len, (unsigned long long)n_layer,
                             (unsigned long long)n_embd);
    *out = (g2f_llmc_state_dims){vocab, vp, p};
    return G2F_OK;
}

/* A decimal metadata value of an llm.c table, or 0 when absent / not one. */
static uint64_t meta_u64(const g2f_table *t, const char *key) {
    const char *v = g2f_table_meta(t, key);
    uint64_t x = 0;
    if (!v || !*v) return 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || !g2f_mul_u64(x, 10, &x) || !g2f_add_u64(x, (uint64_t)(*v - '0'), &x)) return 0;
    }
    return x;
}

g2f_status g2f_llmc_state_dims_from_llmc(const g2f_table *llmc, g2f_llmc_state_dims *out, g2f_error *err) {
    const char *fmt = g2f_table_meta(llmc, "format");
    uint64_t V = meta_u64(llmc, "vocab_size"), Vp = meta_u64(llmc, "padded_vocab_size"), P = 0;
    for (size_t i = 0; i < llmc->count; i++) P += llmc->tensors[i].numel; /* views of one file: no overflow */
    if (!fmt || strcmp(fmt, "llm.c") != 0 || V == 0 || Vp < V || P == 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "not an llm.c checkpoint's table (format, vocab_size, "
                                                 "padded_vocab_size)");
    *out = (g2f_llmc_state_dims){V, Vp, P};
    return G2F_OK;
}

/* Checklist 1-4: magic, header, version, B and T. */
static g2f_status parse_header(const unsigned char *buf, uint64_t size, const char *label, int32_t *B, int32_t *T,
                               g2f_error *err) {
    if (size < 4)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: file is %llu bytes, too short for the llm.c state magic",
                             label, (unsigned long long)size);
    int32_t magic = g2f_load_i32le(buf);
    if (magic != G2F_LLMC_STATE_MAGIC)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: bad magic %ld, expected %d (an llm.c debug state)", label,
                             (long)magic, G2F_LLMC_STATE_MAGIC);
    if (size < G2F_LLMC_STATE_HEADER_BYTES)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: file is %llu bytes, too short for the %u-byte llm.c state header", label,
                             (unsigned long long)size, G2F_LLMC_STATE_HEADER_BYTES);
    int32_t version = g2f_load_i32le(buf + 4);
    if (version != G2F_LLMC_STATE_VERSION)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: header[1] version is %ld, expected %d (version 1 predates llm.c's padded "
                             "vocabulary: re-run train_gpt2.py)",
                             label, (long)version, G2F_LLMC_STATE_VERSION);
    *B = g2f_load_i32le(buf + 8);
    *T = g2f_load_i32le(buf + 12);
    if (*B < 1 || *B > G2F_LLMC_STATE_MAX_BATCH)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header[2] batch_size is %ld but must be in [1, %d]", label,
                             (long)*B, G2F_LLMC_STATE_MAX_BATCH);
    if (*T < 1 || *T > G2F_LLMC_MAX_SEQ_LEN)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header[3] seq_len is %ld but must be in [1, %d]", label,
                             (long)*T, G2F_LLMC_MAX_SEQ_LEN);
    return G2F_OK;
}

/* Checklist 5: the caller's sizes. */
static g2f_status check_dims(const g2f_llmc_state_dims *d, const char *label, int32_t B, int32_t T, g2f_error *err) {
    if (!d)
        return g2f_error_set(err, G2F_ERR_USAGE,
                             "%s: an llm.c debug state (B=%ld, T=%ld) is read with its checkpoint: the logits "
                             "(B, T, V) and the gradients after them are sized by the checkpoint's vocabulary and "
                             "parameter count, which the file does not store",
                             label, (long)B, (long)T);
    if (d->vocab < 1 || d->vocab > G2F_LLMC_MAX_VOCAB || d->padded_vocab < d->vocab ||
        d->padded_vocab > G2F_LLMC_MAX_VOCAB || d->n_params < 1 || d->n_params > G2F_LLMC_STATE_MAX_PARAMS)
        return g2f_error_set(err, G2F_ERR_USAGE,
                             "%s: reading an llm.c state with vocab %llu, padded vocab %llu, %llu parameters: "
                             "need V in [1, %d], Vp in [V, %d], P in [1, 2^48]",
                             label, (unsigned long long)d->vocab, (unsigned long long)d->padded_vocab,
                             (unsigned long long)d->n_params, G2F_LLMC_MAX_VOCAB, G2F_LLMC_MAX_VOCAB);
    return G2F_OK;
}

/* The file size with logits of width vl: 1024 + 8BT + 4BT vl + 4 + 4P;
 * false on overflow. */
static int state_size(uint64_t bt, uint64_t vl, uint64_t P, uint64_t *out) {
    uint64_t ids, logits, grads, total;
    return g2f_mul_u64(bt, 8, &ids) && g2f_mul_u64(bt, vl, &logits) && g2f_mul_u64(logits, 4, &logits) &&
           g2f_mul_u64(P, 4, &grads) && g2f_add_u64(G2F_LLMC_STATE_HEADER_BYTES + 4, ids, &total) &&
           g2f_add_u64(total, logits, &total) && g2f_add_u64(total, grads, &total) && (*out = total, 1);
}

/* Checklist 6-7: picks the logits' stored width *vl (V or Vp) from the size. */
static g2f_status check_size(uint64_t size, const char *label, int32_t B, int32_t T, const g2f_llmc_state_dims *d,
                             uint64_t *vl, g2f_error *err) {
    const uint64_t bt = (uint64_t)B * (uint64_t)T; /* both <= 2^20 */
    uint64_t with_v = 0, with_vp = 0;
    if (!state_size(bt, d->vocab, d->n_params, &with_v) || !state_size(bt, d->padded_vocab, d->n_params, &with_vp))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: sizes for B=%ld, T=%ld, V=%llu, Vp=%llu overflow", label,
                             (long)B, (long)T, (unsigned long long)d->vocab, (unsigned long long)d->padded_vocab);
    if (size == with_v || size == with_vp) {
        *vl = size == with_v ? d->vocab : d->padded_vocab;
        return G2F_OK;
    }
    char padded[96] = "";
    if (d->padded_vocab != d->vocab)
        snprintf(padded, sizeof padded, " (or %llu with logits (B, T, Vp=%llu))", (unsigned long long)with_vp,
                 (unsigned long long)d->padded_vocab);
    return g2f_error_set(err, G2F_ERR_FORMAT,
                         "%s: file is %llu bytes but B=%ld, T=%ld with the checkpoint's V=%llu and %llu gradient "
                         "floats imply %llu bytes (1024 + x, y (B, T) int32 + logits (B, T, V) + loss + gradients)%s: "
                         "%s",
                         label, (unsigned long long)size, (long)B, (long)T, (unsigned long long)d->vocab,
                         (unsigned long long)d->n_params, (unsigned long long)with_v, padded,
                         size < with_v    ? "truncated"
                         : size > with_vp ? "trailing bytes"
                                          : "more than V's logits and less than Vp's");
}

/* Checklist 8: every id of ids (n of them, (B, T) row-major) in [0, V). */
static g2f_status check_ids(const unsigned char *ids, uint64_t n, int32_t T, uint64_t V, const char *label,
                            const char *what, g2f_error *err) {
    for (uint64_t i = 0; i < n; i++) {
        int32_t v = g2f_load_i32le(ids + 4 * i);
        if (v >= 0 && (uint64_t)v < V) continue;
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: %s [%llu, %llu] is token id %ld, outside the vocabulary 0..%llu", label, what,
                             (unsigned long long)(i / (uint64_t)T), (unsigned long long)(i % (uint64_t)T), (long)v,
                             (unsigned long long)(V - 1));
    }
    return G2F_OK;
}

static void set_view(g2f_tensor *t, g2f_dtype dtype, const unsigned char *data, size_t ndim, const uint64_t *shape) {
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (size_t k = 0; k < ndim; k++) t->numel *= t->shape[k] = shape[k]; /* bounded by the checked size */
    t->nbytes = t->numel * g2f_dtype_size(dtype);
    t->data = data;
}

static int add_meta(g2f_table *t, const char *key, const char *value) {
    g2f_meta_entry *m = &t->meta[t->meta_count++];
    m->key = g2f_strdup(key);
    m->value = g2f_strdup(value);
    return m->key && m->value;
}

static int add_meta_u64(g2f_table *t, const char *key, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return add_meta(t, key, buf);
}

/* The table over a validated image; logits is the file's, or the cut copy. */
static g2f_status make_table(const unsigned char *buf, uint64_t B, uint64_t T, const g2f_llmc_state_dims *d,
                             uint64_t vl, const unsigned char *logits, const char *label, g2f_table *out,
                             g2f_error *err) {
    g2f_table t = {0};
    const uint64_t bt = B * T, bt_shape[2] = {B, T}, z_shape[3] = {B, T, d->vocab};
    const unsigned char *x = buf + G2F_LLMC_STATE_HEADER_BYTES, *y = x + 4 * bt;
    static const char *const names[] = {"input_ids", "targets", "logits", "loss"};
    t.tensors = calloc(4, sizeof *t.tensors);
    t.meta = calloc(8, sizeof *t.meta);
    if (!t.tensors || !t.meta) goto nomem;
    for (size_t i = 0; i < 4; i++)
        if (!(t.tensors[i].name = g2f_strdup(names[i]))) goto nomem;
    t.count = 4;
    set_view(&t.tensors[0], G2F_DTYPE_I32, x, 2, bt_shape);
    set_view(&t.tensors[1], G2F_DTYPE_I32, y, 2, bt_shape);
    set_view(&t.tensors[2], G2F_DTYPE_F32, logits, 3, z_shape);
    set_view(&t.tensors[3], G2F_DTYPE_F32, y + 4 * bt + 4 * bt * vl, 0, NULL);
    if (!add_meta(&t, "format", "llm.c debug state") || !add_meta_u64(&t, "version", G2F_LLMC_STATE_VERSION) ||
        !add_meta_u64(&t, "batch_size", B) || !add_meta_u64(&t, "seq_len", T) ||
        !add_meta_u64(&t, "vocab_size", d->vocab) || !add_meta_u64(&t, "padded_vocab_size", d->padded_vocab) ||
        !add_meta_u64(&t, "logits_vocab", vl) || !add_meta_u64(&t, "gradient_floats", d->n_params))
        goto nomem;
    *out = t;
    return G2F_OK;
nomem:
    g2f_table_free(&t);
    return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
}

/* Padded logits (B T rows of vl floats) cut to their first V columns. */
static float *cut_logits(const unsigned char *z, uint64_t bt, uint64_t vl, uint64_t V, const char *label,
                         g2f_error *err) {
    char what[300];
    snprintf(what, sizeof what, "%s: logits cut from the padded vocabulary", label);
    float *c = g2f_alloc_work((size_t)bt, (size_t)V, sizeof(float), what, err);
    for (uint64_t r = 0; c && r < bt; r++) memcpy(c + r * V, z + 4 * r * vl, (size_t)V * sizeof(float));
    return c;
}

g2f_status g2f_llmc_state_parse(const unsigned char *buf, uint64_t size, const char *label,
                                const g2f_llmc_state_dims *dims, g2f_table *out, float **cut, g2f_error *err) {
    int32_t B = 0, T = 0;
    uint64_t vl = 0;
    g2f_status st;
    memset(out, 0, sizeof *out);
    *cut = NULL;
    if ((st = parse_header(buf, size, label, &B, &T, err)) != G2F_OK ||
        (st = check_dims(dims, label, B, T, err)) != G2F_OK ||
        (st = check_size(size, label, B, T, dims, &vl, err)) != G2F_OK)
        return st;
    const uint64_t bt = (uint64_t)B * (uint64_t)T;
    const unsigned char *x = buf + G2F_LLMC_STATE_HEADER_BYTES, *z = x + 8 * bt;
    if ((st = check_ids(x, bt, T, dims->vocab, label, "input_ids (x)", err)) != G2F_OK ||
        (st = check_ids(x + 4 * bt, bt, T, dims->vocab, label, "targets (y)", err)) != G2F_OK)
        return st;
    if (vl != dims->vocab && !(*cut = cut_logits(z, bt, vl, dims->vocab, label, err)))
        return err ? err->status : G2F_ERR_NOMEM;
    st = make_table(buf, (uint64_t)B, (uint64_t)T, dims, vl, *cut ? (const unsigned char *)*cut : z, label, out, err);
    if (st != G2F_OK) {
        free(*cut);
        *cut = NULL;
    }
    return st;
}

g2f_status g2f_llmc_state_open(const char *path, const g2f_llmc_state_dims *dims, g2f_llmc_state **out,
                               g2f_error *err) {
    *out = NULL;
    g2f_llmc_state *s = calloc(1, sizeof *s);
    if (!s) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    g2f_status st = g2f_mapping_open(path, &s->map, err);
    if (st == G2F_OK) st = g2f_llmc_state_parse(s->map.data, s->map.size, path, dims, &s->table, &s->cut, err);
    if (st != G2F_OK) {
        g2f_llmc_state_close(s);
        return st;
    }
    *out = s;
    return G2F_OK;
}

const g2f_table *g2f_llmc_state_table(const g2f_llmc_state *s) { return &s->table; }

void g2f_llmc_state_close(g2f_llmc_state *s) {
    if (!s) return;
    g2f_table_free(&s->table);
    free(s->cut);
    g2f_mapping_close(&s->map);
    free(s);
}
