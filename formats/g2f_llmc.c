/* g2f_llmc: validating llm.c checkpoint reader; see the checklist in the
 * header. The file has no tensor directory: every offset follows from the
 * eight header integers, so those are range-checked first and the whole
 * layout is computed with checked arithmetic before any view is made. */
#include "g2f_llmc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bytes.h"

/* llm.c's parameter order (train_gpt2.c ParameterTensors). */
typedef enum llmc_param {
    LLMC_WTE, LLMC_WPE, LLMC_LN1W, LLMC_LN1B, LLMC_QKVW, LLMC_QKVB, LLMC_ATTPROJW, LLMC_ATTPROJB,
    LLMC_LN2W, LLMC_LN2B, LLMC_FCW, LLMC_FCB, LLMC_FCPROJW, LLMC_FCPROJB, LLMC_LNFW, LLMC_LNFB,
    LLMC_PARAM_COUNT
} llmc_param;

/* Tensors exposed per layer: name pattern, parameter, rows factor and
 * columns factor in units of C (0 columns: a vector). */
static const struct {
    const char *pattern;
    llmc_param param;
    unsigned rows_c, cols_c;
} layer_views[] = {
    {"h.%d.ln_1.weight", LLMC_LN1W, 1, 0},
    {"h.%d.ln_1.bias", LLMC_LN1B, 1, 0},
    {"h.%d.attn.c_attn.weight", LLMC_QKVW, 3, 1}, /* (3C, C) Linear [out, in] */
    {"h.%d.attn.c_attn.bias", LLMC_QKVB, 3, 0},   /* (3C) */
    {"h.%d.attn.c_proj.weight", LLMC_ATTPROJW, 1, 1}, /* (C, C) Linear [out, in] */
    {"h.%d.attn.c_proj.bias", LLMC_ATTPROJB, 1, 0},
    {"h.%d.ln_2.weight", LLMC_LN2W, 1, 0},
    {"h.%d.ln_2.bias", LLMC_LN2B, 1, 0},
    {"h.%d.mlp.c_fc.weight", LLMC_FCW, 4, 1},    /* (4C, C) Linear [out, in] */
    {"h.%d.mlp.c_fc.bias", LLMC_FCB, 4, 0},      /* (4C) */
    {"h.%d.mlp.c_proj.weight", LLMC_FCPROJW, 1, 4}, /* (C, 4C) Linear [out, in] */
    {"h.%d.mlp.c_proj.bias", LLMC_FCPROJB, 1, 0}, /* (C) */
};
#define LAYER_VIEWS (sizeof layer_views / sizeof layer_views[0])

/* Checks lo <= v <= hi for header field index idx. */
static g2f_status check_range(const char *label, int idx, const char *field, int32_t v, long long lo, long long hi,
                              g2f_error *err) {
    if (v < lo || v > hi)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header[%d] %s is %ld but must be in [%lld, %lld]", label, idx,
                             field, (long)v, lo, hi);
    return G2F_OK;
}

static g2f_status add_meta(g2f_table *t, const char *key, long long value) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", value);
    g2f_meta_entry *m = &t->meta[t->meta_count];
    m->key = g2f_strdup(key);
    m->value = g2f_strdup(buf);
    t->meta_count++;
    return m->key && m->value ? G2F_OK : G2F_ERR_NOMEM;
}

static void set_view(g2f_tensor *t, g2f_dtype dtype, const unsigned char *data, size_t ndim, uint64_t d0,
                     uint64_t d1) {
    t->dtype = dtype;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->numel = ndim == 2 ? d0 * d1 : d0; /* bounded by the checked totals */
    t->nbytes = t->numel * g2f_dtype_size(dtype);
    t->data = data;
}

g2f_status g2f_llmc_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                          g2f_error *err) {
    g2f_table t = {0};
    g2f_status st;
    memset(out, 0, sizeof *out);

    /* 1-2. magic, header */
    if (size < 4)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: file is %llu bytes, too short for the llm.c magic", label,
                             (unsigned long long)size);
    int32_t magic = g2f_load_i32le(buf);
    if (magic != G2F_LLMC_MAGIC)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: bad magic %ld, expected %d (an llm.c checkpoint)", label,
                             (long)magic, G2F_LLMC_MAGIC);
    if (size < G2F_LLMC_HEADER_BYTES)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: file is %llu bytes, too short for the %u-byte llm.c header",
                             label, (unsigned long long)size, G2F_LLMC_HEADER_BYTES);

    /* 3. version */
    int32_t version = g2f_load_i32le(buf + 4);
    if (version != G2F_LLMC_VERSION_F32 && version != G2F_LLMC_VERSION_BF16)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: header[1] version is %ld, expected %d (float32) or %d (bfloat16)", label,
                             (long)version, G2F_LLMC_VERSION_F32, G2F_LLMC_VERSION_BF16);
    const g2f_dtype dtype = version == G2F_LLMC_VERSION_F32 ? G2F_DTYPE_F32 : G2F_DTYPE_BF16;

    /* 4. dimensions */
    int32_t maxT = g2f_load_i32le(buf + 8), V = g2f_load_i32le(buf + 12), L = g2f_load_i32le(buf + 16);
    int32_t NH = g2f_load_i32le(buf + 20), C = g2f_load_i32le(buf + 24), Vp = g2f_load_i32le(buf + 28);
    if ((st = check_range(label, 2, "max_seq_len", maxT, 1, G2F_LLMC_MAX_SEQ_LEN, err)) != G2F_OK) return st;
    if ((st = check_range(label, 3, "vocab_size", V, 1, G2F_LLMC_MAX_VOCAB, err)) != G2F_OK) return st;
    if ((st = check_range(label, 4, "num_layers", L, 1, G2F_LLMC_MAX_LAYERS, err)) != G2F_OK) return st;
    if ((st = check_range(label, 6, "channels", C, 1, G2F_LLMC_MAX_CHANNELS, err)) != G2F_OK) return st;
    if ((st = check_range(label, 5, "num_heads", NH, 1, C, err)) != G2F_OK) return st;
    if (C % NH != 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header[5] num_heads %ld does not divide channels %ld", label,
                             (long)NH, (long)C);
    if ((st = check_range(label, 7, "padded_vocab_size (at least vocab_size)", Vp, V, G2F_LLMC_MAX_VOCAB, err)) !=
        G2F_OK)
        return st;

    /* 5. layout: element count of each parameter, offsets, total */
    const uint64_t c = (uint64_t)C, l = (uint64_t)L;
    uint64_t count[LLMC_PARAM_COUNT];
    int ok = 1;
    ok &= g2f_mul_u64((uint64_t)Vp, c, &count[LLMC_WTE]);
    ok &= g2f_mul_u64((uint64_t)maxT, c, &count[LLMC_WPE]);
    ok &= g2f_mul_u64(l, c, &count[LLMC_LN1W]);
    count[LLMC_LN1B] = count[LLMC_ATTPROJB] = count[LLMC_LN2W] = count[LLMC_LN2B] = count[LLMC_FCPROJB] =
        count[LLMC_LN1W];
    ok &= g2f_mul_u64(count[LLMC_LN1W], 3, &count[LLMC_QKVB]);
    ok &= g2f_mul_u64(count[LLMC_LN1W], 4, &count[LLMC_FCB]);
    ok &= g2f_mul_u64(count[LLMC_LN1W], c, &count[LLMC_ATTPROJW]);
    ok &= g2f_mul_u64(count[LLMC_ATTPROJW], 3, &count[LLMC_QKVW]);
    ok &= g2f_mul_u64(count[LLMC_ATTPROJW], 4, &count[LLMC_FCW]);
    count[LLMC_FCPROJW] = count[LLMC_FCW];
    count[LLMC_LNFW] = count[LLMC_LNFB] = c;
    uint64_t offset[LLMC_PARAM_COUNT]; /* in elements from the end of the header */
    uint64_t total = 0;
    for (int p = 0; p < LLMC_PARAM_COUNT; p++) {
        offset[p] = total;
        ok &= g2f_add_u64(total, count[p], &total);
    }
    const uint64_t esize = g2f_dtype_size(dtype);
    uint64_t expected = 0, data_bytes = 0;
    ok &= g2f_mul_u64(total, esize, &data_bytes);
    ok &= g2f_add_u64(data_bytes, G2F_LLMC_HEADER_BYTES, &expected);
    if (!ok)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: parameter count for L=%ld, C=%ld, Vp=%ld, maxT=%ld overflows",
                             label, (long)L, (long)C, (long)Vp, (long)maxT);

    /* 6. exact size */
    if (size != expected)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: file is %llu bytes but the header (L=%ld, C=%ld, Vp=%ld, maxT=%ld, %s) implies "
                             "%llu bytes (1024 + %llu parameters x %llu bytes): %s",
                             label, (unsigned long long)size, (long)L, (long)C, (long)Vp, (long)maxT,
                             g2f_dtype_name(dtype), (unsigned long long)expected, (unsigned long long)total,
                             (unsigned long long)esize, size < expected ? "truncated" : "trailing bytes");

    /* Views. Counts are small (4 + 12L <= 12292 tensors, 8 metadata entries):
     * wte, wpe, the layers, ln_f. */
    const unsigned char *data = buf + G2F_LLMC_HEADER_BYTES;
    size_t n_tensors = 4 + LAYER_VIEWS * (size_t)L;
    t.tensors = g2f_alloc_array(n_tensors, sizeof *t.tensors);
    t.meta = g2f_alloc_array(8, sizeof *t.meta);
    if (!t.tensors || !t.meta) goto nomem;
    memset(t.tensors, 0, n_tensors * sizeof *t.tensors);

    g2f_tensor *wte = &t.tensors[t.count++];
    set_view(wte, dtype, data + offset[LLMC_WTE] * esize, 2, (uint64_t)Vp, c);
    if (!(wte->name = g2f_strdup("wte.weight"))) goto nomem;
    g2f_tensor *wpe = &t.tensors[t.count++];
    set_view(wpe, dtype, data + offset[LLMC_WPE] * esize, 2, (uint64_t)maxT, c);
    if (!(wpe->name = g2f_strdup("wpe.weight"))) goto nomem;
    for (int32_t layer = 0; layer < L; layer++) {
        for (size_t v = 0; v < LAYER_VIEWS; v++) {
            const uint64_t rows = layer_views[v].rows_c * c, cols = layer_views[v].cols_c * c;
            const uint64_t per_layer = cols ? rows * cols : rows;
            const uint64_t elem = offset[layer_views[v].param] + (uint64_t)layer * per_layer;
            g2f_tensor *tt = &t.tensors[t.count++];
            set_view(tt, dtype, data + elem * esize, cols ? 2 : 1, rows, cols);
            char name[64];
            snprintf(name, sizeof name, layer_views[v].pattern, (int)layer);
            if (!(tt->name = g2f_strdup(name))) goto nomem;
        }
    }
    static const struct { const char *name; llmc_param param; } final_views[] = {
        {"ln_f.weight", LLMC_LNFW}, {"ln_f.bias", LLMC_LNFB}};
    for (size_t v = 0; v < 2; v++) {
        g2f_tensor *tt = &t.tensors[t.count++];
        set_view(tt, dtype, data + offset[final_views[v].param] * esize, 1, c, 0);
        if (!(tt->name = g2f_strdup(final_views[v].name))) goto nomem;
    }

    g2f_meta_entry *fm = &t.meta[t.meta_count];
    fm->key = g2f_strdup("format");
    fm->value = g2f_strdup("llm.c");
    t.meta_count++;
    if (!fm->key || !fm->value) goto nomem;
    if (add_meta(&t, "version", version) != G2F_OK || add_meta(&t, "max_seq_len", maxT) != G2F_OK ||
        add_meta(&t, "vocab_size", V) != G2F_OK || add_meta(&t, "padded_vocab_size", Vp) != G2F_OK ||
        add_meta(&t, "num_layers", L) != G2F_OK || add_meta(&t, "num_heads", NH) != G2F_OK ||
        add_meta(&t, "channels", C) != G2F_OK)
        goto nomem;

    *out = t;
    return G2F_OK;

nomem:
    g2f_table_free(&t);
    return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
}

g2f_status g2f_llmc_open(const char *path, g2f_llmc **out, g2f_error *err) {
    return g2f_mapped_table_open(path, g2f_llmc_parse, out, err);
}

const g2f_table *g2f_llmc_table(const g2f_llmc *m) { return &m->table; }

void g2f_llmc_close(g2f_llmc *m) { g2f_mapped_table_close(m); }
