/* g2f_gguf: validating GGUF reader; see the checklist in the header.
 *
 * Every byte is read through one bounded cursor that knows what it is reading
 * (for the message) and how many bytes remain. Counts are checked against
 * named limits and the bytes remaining before the arrays sized by them are
 * allocated, so a 30-byte file claiming 2^60 tensors costs nothing.
 * Duplicate keys and names are found by sorting (g2f_names, n log n), not
 * pairwise, and overlaps by sorting the spans (g2f_span), so a hostile file
 * with the maximum counts still parses in n log n time. */
#include "g2f_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bytes.h"
#include "g2f_names.h"
#include "g2f_span.h"

/* ---- ggml's type table (ggml.h enum ggml_type; ggml-common.h blocks) ---- */

#define GGML_TYPE_COUNT_KNOWN 40 /* ids 0..39, up to MXFP4 */

typedef struct ggml_type_info {
    const char *name; /* NULL: id removed from ggml (Q4_2, Q4_0_4_4, ...) */
    uint32_t block;   /* elements per block */
    uint32_t size;    /* bytes per block */
    g2f_dtype dtype;  /* G2F_DTYPE_Q* for the types g2f_quant decodes, else OPAQUE */
} ggml_type_info;

#define QK_K 256
static const ggml_type_info ggml_types[GGML_TYPE_COUNT_KNOWN] = {
    [0] = {"F32", 1, 4, G2F_DTYPE_F32},
    [1] = {"F16", 1, 2, G2F_DTYPE_F16},
    [2] = {"Q4_0", 32, 2 + 16, G2F_DTYPE_Q4_0},
    [3] = {"Q4_1", 32, 2 + 2 + 16, G2F_DTYPE_Q4_1},
    [6] = {"Q5_0", 32, 2 + 4 + 16, G2F_DTYPE_Q5_0},
    [7] = {"Q5_1", 32, 2 + 2 + 4 + 16, G2F_DTYPE_Q5_1},
    [8] = {"Q8_0", 32, 2 + 32, G2F_DTYPE_Q8_0},
    /* ggml-common.h: two halves d, s (gguf-py's table still says two floats) */
    [9] = {"Q8_1", 32, 2 + 2 + 32, G2F_DTYPE_OPAQUE},
    [10] = {"Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, G2F_DTYPE_OPAQUE},
    [11] = {"Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, G2F_DTYPE_OPAQUE},
    [12] = {"Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12, G2F_DTYPE_Q4_K},
    [13] = {"Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, G2F_DTYPE_Q5_K},
    [14] = {"Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, G2F_DTYPE_Q6_K},
    [15] = {"Q8_K", QK_K, 4 + QK_K + QK_K / 8, G2F_DTYPE_OPAQUE},
    [16] = {"IQ2_XXS", QK_K, 2 + QK_K / 4, G2F_DTYPE_OPAQUE},
    [17] = {"IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, G2F_DTYPE_OPAQUE},
    [18] = {"IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, G2F_DTYPE_OPAQUE},
    [19] = {"IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, G2F_DTYPE_OPAQUE},
    [20] = {"IQ4_NL", 32, 2 + 16, G2F_DTYPE_OPAQUE},
    [21] = {"IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, G2F_DTYPE_OPAQUE},
    [22] = {"IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, G2F_DTYPE_OPAQUE},
    [23] = {"IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, G2F_DTYPE_OPAQUE},
    [24] = {"I8", 1, 1, G2F_DTYPE_I8},
    [25] = {"I16", 1, 2, G2F_DTYPE_I16},
    [26] = {"I32", 1, 4, G2F_DTYPE_I32},
    [27] = {"I64", 1, 8, G2F_DTYPE_I64},
    [28] = {"F64", 1, 8, G2F_DTYPE_F64},
    [29] = {"IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, G2F_DTYPE_OPAQUE},
    [30] = {"BF16", 1, 2, G2F_DTYPE_BF16},
    [34] = {"TQ1_0", QK_K, 2 + 4 * 13, G2F_DTYPE_OPAQUE},
    [35] = {"TQ2_0", QK_K, 2 + 64, G2F_DTYPE_OPAQUE},
    [39] = {"MXFP4", 32, 1 + 16, G2F_DTYPE_OPAQUE},
};
_Static_assert(sizeof ggml_types / sizeof ggml_types[0] == GGML_TYPE_COUNT_KNOWN, "one entry per ggml type id");

const char *g2f_gguf_type_name(uint32_t ggml_type) {
    return ggml_type < GGML_TYPE_COUNT_KNOWN ? ggml_types[ggml_type].name : NULL;
}

/* ---- GGUF value types ---- */

enum {
    GGUF_UINT8, GGUF_INT8, GGUF_UINT16, GGUF_INT16, GGUF_UINT32, GGUF_INT32, GGUF_FLOAT32,
    GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_UINT64, GGUF_INT64, GGUF_FLOAT64, GGUF_VALUE_TYPE_COUNT
};

static const struct {
    const char *name;
    uint32_t size; /* 0: variable (STRING, ARRAY) */
} value_types[] = {
    {"UINT8", 1}, {"INT8", 1}, {"UINT16", 2}, {"INT16", 2}, {"UINT32", 4}, {"INT32", 4}, {"FLOAT32", 4},
    {"BOOL", 1},  {"STRING", 0}, {"ARRAY", 0}, {"UINT64", 8}, {"INT64", 8}, {"FLOAT64", 8},
};
_Static_assert(sizeof value_types / sizeof value_types[0] == GGUF_VALUE_TYPE_COUNT, "one entry per GGUF value type");

/* Smallest encodings, used to bound counts by the bytes remaining:
 * a KV pair is an 8-byte length, >= 1 key byte, a 4-byte type, >= 1 value
 * byte; a tensor info an 8-byte length, >= 1 name byte, n_dims, type and
 * offset (4 + 4 + 8). */
#define MIN_KV_BYTES 14u
#define MIN_TENSOR_INFO_BYTES 25u

/* ---- bounded cursor ---- */

typedef struct cursor {
    const unsigned char *buf;
    uint64_t size, pos;
    const char *label;
    g2f_error *err;
    char ctx[160]; /* what is being read, e.g. "tensor 'blk.0.ffn_up.weight'" */
} cursor;

static uint64_t remaining(const cursor *c) { return c->size - c->pos; }

static g2f_status need(cursor *c, uint64_t n, const char *what) {
    if (n > remaining(c))
        return g2f_error_set(c->err, G2F_ERR_FORMAT,
                             "%s: %s: %s at byte %llu needs %llu bytes but only %llu remain (truncated file?)",
                             c->label, c->ctx, what, (unsigned long long)c->pos, (unsigned long long)n,
                             (unsigned long long)remaining(c));
    return G2F_OK;
}

static g2f_status read_u32(cursor *c, uint32_t *v, const char *what) {
    g2f_status st = need(c, 4, what);
    if (st != G2F_OK) return st;
    *v = g2f_load_u32le(c->buf + c->pos);
    c->pos += 4;
    return G2F_OK;
}

static g2f_status read_u64(cursor *c, uint64_t *v, const char *what) {
    g2f_status st = need(c, 8, what);
    if (st != G2F_OK) return st;
    *v = g2f_load_u64le(c->buf + c->pos);
    c->pos += 8;
    return G2F_OK;
}

/* A GGUF string: u64 length (<= max, <= bytes remaining), then the bytes,
 * returned as a view into the buffer (not NUL-terminated). */
static g2f_status read_str(cursor *c, uint64_t max, const char *what, const unsigned char **p, uint64_t *len) {
    uint64_t n;
    g2f_status st = read_u64(c, &n, what);
    if (st != G2F_OK) return st;
    if (n > max)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: %s length is %llu but must be in [0, %llu]", c->label,
                             c->ctx, what, (unsigned long long)n, (unsigned long long)max);
    if (n > remaining(c))
        return g2f_error_set(c->err, G2F_ERR_FORMAT,
                             "%s: %s: %s length %llu at byte %llu runs past the end of the file (%llu bytes remain)",
                             c->label, c->ctx, what, (unsigned long long)n, (unsigned long long)(c->pos - 8),
                             (unsigned long long)remaining(c));
    *p = c->buf + c->pos;
    *len = n;
    c->pos += n;
    return G2F_OK;
}

/* Keys and tensor names end up in messages and C strings: refuse NUL and
 * other control bytes rather than print them or cut a name short. */
static g2f_status check_text(cursor *c, const unsigned char *p, uint64_t len, const char *what) {
    if (len == 0) return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: %s is empty", c->label, c->ctx, what);
    for (uint64_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] == 0x7f)
            return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: %s contains control byte 0x%02x at offset %llu",
                                 c->label, c->ctx, what, p[i], (unsigned long long)i);
    return G2F_OK;
}

static char *dup_bytes(const unsigned char *p, uint64_t len) {
    char *s = malloc((size_t)len + 1);
    if (!s) return NULL;
    if (len) memcpy(s, p, (size_t)len);
    s[len] = '\0';
    return s;
}

/* ---- key-value pairs ---- */

/* Formats a scalar as a metadata string; buf holds at least 32 bytes. */
static void format_scalar(uint32_t type, const unsigned char *p, char *buf, size_t size) {
    switch (type) {
    case GGUF_UINT8: snprintf(buf, size, "%u", (unsigned)p[0]); break;
    case GGUF_INT8: snprintf(buf, size, "%d", (int)(int8_t)p[0]); break;
    case GGUF_UINT16: snprintf(buf, size, "%u", (unsigned)g2f_load_u16le(p)); break;
    case GGUF_INT16: snprintf(buf, size, "%d", (int)(int16_t)g2f_load_u16le(p)); break;
    case GGUF_UINT32: snprintf(buf, size, "%lu", (unsigned long)g2f_load_u32le(p)); break;
    case GGUF_INT32: snprintf(buf, size, "%ld", (long)(int32_t)g2f_load_u32le(p)); break;
    case GGUF_UINT64: snprintf(buf, size, "%llu", (unsigned long long)g2f_load_u64le(p)); break;
    case GGUF_INT64: snprintf(buf, size, "%lld", (long long)(int64_t)g2f_load_u64le(p)); break;
    case GGUF_BOOL: snprintf(buf, size, "%s", p[0] ? "true" : "false"); break; /* ggml: nonzero is true */
    case GGUF_FLOAT32: {
        float f;
        memcpy(&f, p, 4);
        snprintf(buf, size, "%.9g", (double)f);
        break;
    }
    case GGUF_FLOAT64: {
        double d;
        memcpy(&d, p, 8);
        snprintf(buf, size, "%.17g", d);
        break;
    }
    default: snprintf(buf, size, "?"); break;
    }
}

static g2f_status check_value_type(cursor *c, uint32_t type, const char *what) {
    if (type >= GGUF_VALUE_TYPE_COUNT)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: %s %lu is unknown, must be in [0, %d]", c->label,
                             c->ctx, what, (unsigned long)type, GGUF_VALUE_TYPE_COUNT - 1);
    return G2F_OK;
}

/* Reads (and skips) an array value after its ARRAY type tag. */
static g2f_status read_array(cursor *c) {
    uint32_t et;
    uint64_t n;
    g2f_status st = read_u32(c, &et, "array element type");
    if (st != G2F_OK) return st;
    if ((st = check_value_type(c, et, "array element type")) != G2F_OK) return st;
    if (et == GGUF_ARRAY)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: arrays of arrays are not supported (ggml refuses them too)",
                             c->label, c->ctx);
    if ((st = read_u64(c, &n, "array count")) != G2F_OK) return st;
    if (n > G2F_GGUF_MAX_ARRAY)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: array count is %llu but must be in [0, %llu]", c->label,
                             c->ctx, (unsigned long long)n, G2F_GGUF_MAX_ARRAY);
    /* Checked before reading any element: strings take at least their
     * 8-byte length each, scalars exactly their size. */
    uint64_t min_each = et == GGUF_STRING ? 8 : value_types[et].size;
    uint64_t min_total = n * min_each; /* n <= 2^30, min_each <= 8: no overflow */
    if (min_total > remaining(c))
        return g2f_error_set(c->err, G2F_ERR_FORMAT,
                             "%s: %s: array of %llu %s needs at least %llu bytes but only %llu remain", c->label,
                             c->ctx, (unsigned long long)n, value_types[et].name, (unsigned long long)min_total,
                             (unsigned long long)remaining(c));
    if (et != GGUF_STRING) {
        c->pos += min_total;
        return G2F_OK;
    }
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *p;
        uint64_t len;
        if ((st = read_str(c, G2F_GGUF_MAX_STRING, "array string", &p, &len)) != G2F_OK) return st;
    }
    return G2F_OK;
}

static g2f_status read_kvs(cursor *c, uint64_t n_kv, g2f_table *t, uint32_t *alignment) {
    g2f_status st = G2F_OK;
    g2f_name_ref *keys = g2f_alloc_array((size_t)n_kv, sizeof *keys);
    if (!keys) return g2f_error_set(c->err, G2F_ERR_NOMEM, "%s: out of memory for %llu keys", c->label,
                                    (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        const unsigned char *kp;
        uint64_t klen;
        uint32_t type;
        snprintf(c->ctx, sizeof c->ctx, "key-value pair %llu", (unsigned long long)i);
        if ((st = read_str(c, G2F_GGUF_MAX_KEY, "key", &kp, &klen)) != G2F_OK) goto done;
        if ((st = check_text(c, kp, klen, "key")) != G2F_OK) goto done;
        keys[i] = (g2f_name_ref){(const char *)kp, (size_t)klen, (size_t)i};
        snprintf(c->ctx, sizeof c->ctx, "key '%.*s'", klen > 100 ? 100 : (int)klen, (const char *)kp);
        if ((st = read_u32(c, &type, "value type")) != G2F_OK) goto done;
        if ((st = check_value_type(c, type, "value type")) != G2F_OK) goto done;

        const int is_alignment = klen == 17 && memcmp(kp, "general.alignment", 17) == 0;
        if (is_alignment && type != GGUF_UINT32) {
            st = g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: must be of type UINT32 but is %s", c->label, c->ctx,
                               value_types[type].name);
            goto done;
        }
        if (type == GGUF_ARRAY) {
            if ((st = read_array(c)) != G2F_OK) goto done;
            continue; /* arrays are validated, not stored */
        }
        char *value;
        if (type == GGUF_STRING) {
            const unsigned char *vp;
            uint64_t vlen;
            if ((st = read_str(c, G2F_GGUF_MAX_STRING, "string value", &vp, &vlen)) != G2F_OK) goto done;
            value = dup_bytes(vp, vlen);
        } else {
            char buf[48];
            if ((st = need(c, value_types[type].size, "value")) != G2F_OK) goto done;
            format_scalar(type, c->buf + c->pos, buf, sizeof buf);
            if (is_alignment) {
                uint32_t a = g2f_load_u32le(c->buf + c->pos);
                if (a == 0 || (a & (a - 1)) != 0 || a > G2F_GGUF_MAX_ALIGNMENT) {
                    st = g2f_error_set(c->err, G2F_ERR_FORMAT,
                                       "%s: %s: alignment %lu is not a power of two in [1, %llu]", c->label, c->ctx,
                                       (unsigned long)a, G2F_GGUF_MAX_ALIGNMENT);
                    goto done;
                }
                *alignment = a;
            }
            c->pos += value_types[type].size;
            value = dup_bytes((const unsigned char *)buf, strlen(buf));
        }
        g2f_meta_entry *m = &t->meta[t->meta_count];
        m->key = dup_bytes(kp, klen);
        m->value = value;
        t->meta_count++; /* counted before the check so g2f_table_free frees both */
        if (!m->key || !m->value) {
            st = g2f_error_set(c->err, G2F_ERR_NOMEM, "%s: out of memory for metadata", c->label);
            goto done;
        }
    }
    g2f_names_sort(keys, (size_t)n_kv);
    size_t dup = g2f_names_find_dup(keys, (size_t)n_kv);
    if (dup) {
        const g2f_name_ref *d = &keys[dup];
        st = g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: duplicate key '%.*s' (key-value pairs %llu and %llu)", c->label,
                           d->len > 100 ? 100 : (int)d->len, d->s, (unsigned long long)keys[dup - 1].index,
                           (unsigned long long)d->index);
    }
done:
    free(keys);
    return st;
}

/* ---- tensor infos ---- */

static g2f_status read_tensor_info(cursor *c, uint64_t i, g2f_tensor *t, g2f_name_ref *ref, uint64_t *offset) {
    const unsigned char *np;
    uint64_t nlen;
    uint32_t n_dims, type;
    uint64_t ne[G2F_GGUF_MAX_DIMS];
    g2f_status st;

    snprintf(c->ctx, sizeof c->ctx, "tensor info %llu", (unsigned long long)i);
    if ((st = read_str(c, G2F_GGUF_MAX_NAME, "tensor name", &np, &nlen)) != G2F_OK) return st;
    if ((st = check_text(c, np, nlen, "tensor name")) != G2F_OK) return st;
    *ref = (g2f_name_ref){(const char *)np, (size_t)nlen, (size_t)i};
    snprintf(c->ctx, sizeof c->ctx, "tensor '%.*s'", (int)nlen, (const char *)np);

    if ((st = read_u32(c, &n_dims, "number of dimensions")) != G2F_OK) return st;
    if (n_dims > G2F_GGUF_MAX_DIMS)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: number of dimensions is %lu but must be in [0, %u]",
                             c->label, c->ctx, (unsigned long)n_dims, G2F_GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < n_dims; d++) {
        if ((st = read_u64(c, &ne[d], "ne")) != G2F_OK) return st;
        if (ne[d] > (uint64_t)INT64_MAX) /* ggml stores ne as int64 */
            return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: ne[%lu] is %llu, must be below 2^63", c->label,
                                 c->ctx, (unsigned long)d, (unsigned long long)ne[d]);
    }
    if ((st = read_u32(c, &type, "ggml type")) != G2F_OK) return st;
    const ggml_type_info *ti = type < GGML_TYPE_COUNT_KNOWN ? &ggml_types[type] : NULL;
    if (!ti || !ti->name)
        return g2f_error_set(c->err, G2F_ERR_FORMAT,
                             "%s: %s: unknown ggml type id %lu (known: 0-3, 6-30, 34, 35, 39)", c->label, c->ctx,
                             (unsigned long)type);
    uint64_t ne0 = n_dims ? ne[0] : 1;
    if (ne0 % ti->block != 0)
        return g2f_error_set(c->err, G2F_ERR_FORMAT,
                             "%s: %s: ne[0] = %llu is not a multiple of the %s block size %lu", c->label, c->ctx,
                             (unsigned long long)ne0, ti->name, (unsigned long)ti->block);
    /* Row-major shape, outermost first: ggml's ne reversed. */
    uint64_t numel = 1;
    uint64_t nbytes = ne0 / ti->block * ti->size; /* < 2^63 / 1 * 292: checked below */
    int ok = ne0 / ti->block <= UINT64_MAX / ti->size;
    for (uint32_t d = 0; d < n_dims; d++) {
        t->shape[n_dims - 1 - d] = ne[d];
        ok = ok && g2f_mul_u64(numel, ne[d], &numel);
        if (d > 0) ok = ok && g2f_mul_u64(nbytes, ne[d], &nbytes);
    }
    if (!ok || numel > (uint64_t)INT64_MAX)
        return g2f_error_set(c->err, G2F_ERR_FORMAT, "%s: %s: element count or byte size overflows", c->label, c->ctx);
    if ((st = read_u64(c, offset, "data offset")) != G2F_OK) return st;

    t->ndim = n_dims;
    t->numel = numel;
    t->nbytes = nbytes;
    t->dtype = ti->dtype;
    t->type_name = ti->dtype == G2F_DTYPE_OPAQUE ? ti->name : NULL; /* the quantized dtypes name themselves */
    t->name = dup_bytes(np, nlen);
    if (!t->name) return g2f_error_set(c->err, G2F_ERR_NOMEM, "%s: out of memory", c->label);
    return G2F_OK;
}

/* ---- the whole file ---- */

g2f_status g2f_gguf_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                          g2f_error *err) {
    g2f_table t = {0};
    g2f_name_ref *names = NULL;
    g2f_span *spans = NULL;
    uint64_t *offsets = NULL;
    g2f_status st = G2F_OK;
    cursor c = {.buf = buf, .size = size, .pos = 0, .label = label, .err = err};
    memset(out, 0, sizeof *out);
    snprintf(c.ctx, sizeof c.ctx, "header");

    /* 1. magic */
    if ((st = need(&c, 4, "magic")) != G2F_OK) return st;
    if (memcmp(buf, "GGUF", 4) != 0) {
        char m[5];
        for (int i = 0; i < 4; i++) m[i] = buf[i] >= 0x20 && buf[i] < 0x7f ? (char)buf[i] : '?';
        m[4] = '\0';
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: bad magic '%s' (0x%02x%02x%02x%02x), expected 'GGUF'", label, m,
                             buf[0], buf[1], buf[2], buf[3]);
    }
    c.pos = 4;

    /* 2. version */
    uint32_t version;
    if ((st = read_u32(&c, &version, "version")) != G2F_OK) return st;
    if (version != 0 && (version & 0xffffu) == 0)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: GGUF version field 0x%08lx looks byte-swapped: a big-endian GGUF file, which this "
                             "reader does not read", label, (unsigned long)version);
    if (version == 1)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: GGUF version 1 is not supported (it used 32-bit counts); convert the model with a "
                             "current llama.cpp", label);
    if (version != 2 && version != 3)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: GGUF version %lu is not supported (2 or 3 expected)", label,
                             (unsigned long)version);

    /* 3. counts: named limits, then what the remaining bytes can hold */
    uint64_t n_tensors, n_kv;
    if ((st = read_u64(&c, &n_tensors, "tensor count")) != G2F_OK) return st;
    if ((st = read_u64(&c, &n_kv, "key-value count")) != G2F_OK) return st;
    if (n_tensors > G2F_GGUF_MAX_TENSORS)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: number of tensors is %llu but must be in [0, %llu]", label,
                             (unsigned long long)n_tensors, G2F_GGUF_MAX_TENSORS);
    if (n_kv > G2F_GGUF_MAX_KV)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: number of key-value pairs is %llu but must be in [0, %llu]",
                             label, (unsigned long long)n_kv, G2F_GGUF_MAX_KV);
    uint64_t rest = remaining(&c);
    if (n_tensors > rest / MIN_TENSOR_INFO_BYTES)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: number of tensors is %llu but the %llu bytes after the header can hold at most %llu "
                             "tensor infos (%u bytes each at least)", label, (unsigned long long)n_tensors,
                             (unsigned long long)rest, (unsigned long long)(rest / MIN_TENSOR_INFO_BYTES),
                             MIN_TENSOR_INFO_BYTES);
    /* both below 10^6, so the products cannot overflow */
    if (n_kv * MIN_KV_BYTES > rest - n_tensors * MIN_TENSOR_INFO_BYTES)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: number of key-value pairs is %llu but the %llu bytes after the header and %llu "
                             "tensor infos can hold at most %llu (%u bytes each at least)", label,
                             (unsigned long long)n_kv, (unsigned long long)rest, (unsigned long long)n_tensors,
                             (unsigned long long)((rest - n_tensors * MIN_TENSOR_INFO_BYTES) / MIN_KV_BYTES),
                             MIN_KV_BYTES);

    /* Allocations sized by the counts, now that the file can hold them. */
    t.meta = g2f_alloc_array(n_kv ? (size_t)n_kv : 1, sizeof *t.meta);
    t.tensors = g2f_alloc_array(n_tensors ? (size_t)n_tensors : 1, sizeof *t.tensors);
    names = g2f_alloc_array(n_tensors ? (size_t)n_tensors : 1, sizeof *names);
    spans = g2f_alloc_array(n_tensors ? (size_t)n_tensors : 1, sizeof *spans);
    offsets = g2f_alloc_array(n_tensors ? (size_t)n_tensors : 1, sizeof *offsets);
    if (!t.meta || !t.tensors || !names || !spans || !offsets) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %llu tensors and %llu keys", label,
                           (unsigned long long)n_tensors, (unsigned long long)n_kv);
        goto fail;
    }
    memset(t.tensors, 0, (size_t)(n_tensors ? n_tensors : 1) * sizeof *t.tensors);

    /* 4-6. key-value pairs */
    uint32_t alignment = G2F_GGUF_DEFAULT_ALIGNMENT;
    if ((st = read_kvs(&c, n_kv, &t, &alignment)) != G2F_OK) goto fail;

    /* 7. tensor infos */
    for (uint64_t i = 0; i < n_tensors; i++) {
        if ((st = read_tensor_info(&c, i, &t.tensors[i], &names[i], &offsets[i])) != G2F_OK) goto fail;
        t.count++;
    }
    g2f_names_sort(names, (size_t)n_tensors);
    size_t dup = g2f_names_find_dup(names, (size_t)n_tensors);
    if (dup) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' appears twice (tensor infos %llu and %llu)", label,
                           t.tensors[names[dup].index].name, (unsigned long long)names[dup - 1].index,
                           (unsigned long long)names[dup].index);
        goto fail;
    }

    /* 8. offsets: aligned and inside the file */
    uint64_t data_start = c.pos % alignment ? c.pos + (alignment - c.pos % alignment) : c.pos; /* pos <= size */
    for (uint64_t i = 0; i < n_tensors; i++) {
        const g2f_tensor *tt = &t.tensors[i];
        uint64_t begin, end;
        if (offsets[i] % alignment != 0) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': offset %llu is not a multiple of the alignment %lu",
                               label, tt->name, (unsigned long long)offsets[i], (unsigned long)alignment);
            goto fail;
        }
        if (!g2f_add_u64(data_start, offsets[i], &begin) || !g2f_add_u64(begin, tt->nbytes, &end) || end > size) {
            st = g2f_error_set(err, G2F_ERR_FORMAT,
                               "%s: tensor '%s': %llu bytes at offset %llu (data section at byte %llu) run past the "
                               "end of the file (%llu bytes)", label, tt->name, (unsigned long long)tt->nbytes,
                               (unsigned long long)offsets[i], (unsigned long long)data_start,
                               (unsigned long long)size);
            goto fail;
        }
        spans[i] = (g2f_span){offsets[i], offsets[i] + tt->nbytes, (size_t)i};
    }

    /* 9. no overlaps (zero-byte tensors occupy nothing) */
    g2f_span_report r;
    if (g2f_spans_check(spans, (size_t)n_tensors, 0, 0, &r) == G2F_SPAN_OVERLAP) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': data [%llu, %llu) overlaps tensor '%s'", label,
                           t.tensors[spans[r.at].index].name, (unsigned long long)spans[r.at].begin,
                           (unsigned long long)spans[r.at].end, t.tensors[spans[r.prev].index].name);
        goto fail;
    }

    for (uint64_t i = 0; i < n_tensors; i++) t.tensors[i].data = buf + data_start + offsets[i];
    free(names);
    free(spans);
    free(offsets);
    *out = t;
    return G2F_OK;

fail:
    free(names);
    free(spans);
    free(offsets);
    g2f_table_free(&t);
    return st;
}

g2f_status g2f_gguf_open(const char *path, g2f_gguf **out, g2f_error *err) {
    return g2f_mapped_table_open(path, g2f_gguf_parse, out, err);
}

const g2f_table *g2f_gguf_table(const g2f_gguf *gg) { return &gg->table; }

void g2f_gguf_close(g2f_gguf *gg) { g2f_mapped_table_close(gg); }
