/* g2f_safetensors: validating reader; see the checklist in the header. */
#include "g2f_safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t load_u64le(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Returns the offset of the first invalid byte, or len when the text is valid
 * UTF-8 without control characters other than tab, LF and CR. */
static size_t utf8_check(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
            i++;
            continue;
        }
        size_t n;
        unsigned min;
        if ((c & 0xe0) == 0xc0) { n = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { n = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { n = 3; min = 0x10000; c &= 0x07; }
        else return i;
        if (len - i <= n) return i;
        unsigned cp = c;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += n + 1;
    }
    return len;
}

/* JSON numbers arrive as doubles: accept only exact non-negative integers,
 * below 2^53 (2^53 + 1 reads as 2^53, so 2^53 itself cannot be trusted). */
static int json_u64(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0) || d >= 9007199254740992.0 || floor(d) != d) return 0;
    *out = (uint64_t)d;
    return 1;
}

typedef struct span {
    uint64_t begin, end;
    size_t index;
} span;

static int tensor_name_cmp(const void *a, const void *b) {
    return strcmp((*(const g2f_tensor *const *)a)->name, (*(const g2f_tensor *const *)b)->name);
}

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}


static g2f_status parse_metadata(const cJSON *meta, const char *label, g2f_table *t, g2f_error *err) {
    if (!cJSON_IsObject(meta))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: __metadata__ must be an object of strings", label);
    size_t n = (size_t)cJSON_GetArraySize(meta);
    t->meta = calloc(n ? n : 1, sizeof *t->meta);
    if (!t->meta) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for metadata", label);
    for (const cJSON *e = meta->child; e; e = e->next) {
        if (!cJSON_IsString(e))
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: __metadata__ value for key '%s' is not a string", label,
                                 e->string);
        g2f_meta_entry *m = &t->meta[t->meta_count];
        m->key = g2f_strdup(e->string);
        m->value = g2f_strdup(e->valuestring);
        t->meta_count++;
        if (!m->key || !m->value) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
    }
    return G2F_OK;
}

static g2f_status parse_tensor(const cJSON *e, const char *label, g2f_tensor *t, g2f_error *err) {
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': entry is not an object", label, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': missing or non-string \"dtype\"", label, name);
    if (!g2f_dtype_from_name(dtype->valuestring, &t->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': unknown dtype \"%.32s\"", label, name,
                             dtype->valuestring);
    if (!cJSON_IsArray(shape))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': missing or non-array \"shape\"", label, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > G2F_MAX_DIMS)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape has %d dimensions, at most %d supported",
                             label, name, ndim, G2F_MAX_DIMS);
    t->ndim = (size_t)ndim;
    t->numel = 1;
    size_t d = 0;
    for (const cJSON *s = shape->child; s; s = s->next, d++) {
        uint64_t v;
        if (!json_u64(s, &v))
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: tensor '%s': shape[%zu] is not a non-negative integer below 2^53",
                                 label, name, d);
        t->shape[d] = v;
        if (!g2f_mul_u64(t->numel, v, &t->numel))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': element count overflows 64 bits",
                                 label, name);
    }
    if (!g2f_mul_u64(t->numel, g2f_dtype_size(t->dtype), &t->nbytes))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': byte size overflows 64 bits", label, name);
    uint64_t b, en;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_u64(offs->child, &b) ||
        !json_u64(offs->child->next, &en))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': \"data_offsets\" must be two non-negative integers", label, name);
    if (b > en)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': data_offsets begin %llu > end %llu", label,
                             name, (unsigned long long)b, (unsigned long long)en);
    if (en - b != t->nbytes) {
        char sh[128];
        g2f_shape_format(t, sh, sizeof sh);
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': shape %s of %s needs %llu bytes but data_offsets span %llu",
                             label, name, sh, g2f_dtype_name(t->dtype), (unsigned long long)t->nbytes,
                             (unsigned long long)(en - b));
    }
    /* Offsets are kept in data until the buffer base is known. */
    t->data = (const unsigned char *)(uintptr_t)b;
    return G2F_OK;
}

int g2f_safetensors_probe(const unsigned char *buf, uint64_t size) {
    if (size < 10) return 0;
    uint64_t n = load_u64le(buf);
    return n >= 2 && n <= G2F_SAFETENSORS_MAX_HEADER && n <= size - 8 && buf[8] == '{';
}

g2f_status g2f_safetensors_parse(const unsigned char *buf, uint64_t size, const char *label,
                                 g2f_table *out, g2f_error *err) {
    g2f_table t = {0};
    cJSON *root = NULL;
    span *spans = NULL;
    g2f_status st = G2F_OK;
    memset(out, 0, sizeof *out);

    if (size < 8)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: file is %llu bytes, too short for the 8-byte header length",
                             label, (unsigned long long)size);
    uint64_t n = load_u64le(buf);
    if (n > G2F_SAFETENSORS_MAX_HEADER)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header length %llu exceeds the limit of %llu bytes", label,
                             (unsigned long long)n, G2F_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%llu bytes)",
                             label, (unsigned long long)n, (unsigned long long)size);
    const unsigned char *hdr = buf + 8;
    if (n == 0 || hdr[0] != '{')
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header does not start with '{'", label);
    size_t bad = utf8_check(hdr, (size_t)n);
    if (bad != n)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header byte %zu (0x%02x) is not valid UTF-8 JSON text",
                             label, bad, hdr[bad]);
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts((const char *)hdr, (size_t)n, &end, 0);
    if (!root) {
        size_t at = end ? (size_t)(end - (const char *)hdr) : 0;
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: header is not valid JSON (near byte %zu)", label, at);
    }
    for (const char *p = end; p < (const char *)hdr + n; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: header has trailing bytes after the JSON object (byte %zu)",
                               label, (size_t)(p - (const char *)hdr));
            goto fail;
        }
    }
    if (!cJSON_IsObject(root)) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: header is not a JSON object", label);
        goto fail;
    }
    size_t members = (size_t)cJSON_GetArraySize(root);
    t.tensors = calloc(members ? members : 1, sizeof *t.tensors);
    spans = calloc(members ? members : 1, sizeof *spans);
    if (!t.tensors || !spans) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %zu header entries", label, members);
        goto fail;
    }
    int seen_meta = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (seen_meta++) {
                st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: __metadata__ appears twice", label);
                goto fail;
            }
            if ((st = parse_metadata(e, label, &t, err)) != G2F_OK) goto fail;
            continue;
        }
        g2f_tensor *tt = &t.tensors[t.count];
        if ((st = parse_tensor(e, label, tt, err)) != G2F_OK) goto fail;
        tt->name = g2f_strdup(e->string);
        if (!tt->name) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
            goto fail;
        }
        t.count++;
    }

    /* Names unique: sorted, so a header of a million tensors costs
     * n log n comparisons, not n^2 (a linear scan per tensor hung for minutes
     * on a 17 MB header). */
    if (t.count > 1) {
        const g2f_tensor **byname = g2f_alloc_array(t.count, sizeof *byname);
        if (!byname) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %zu header entries", label, t.count);
            goto fail;
        }
        for (size_t i = 0; i < t.count; i++) byname[i] = &t.tensors[i];
        qsort(byname, t.count, sizeof *byname, tensor_name_cmp);
        for (size_t i = 1; i < t.count; i++) {
            if (strcmp(byname[i - 1]->name, byname[i]->name) == 0) {
                st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' appears twice in the header", label,
                                   byname[i]->name);
                free(byname);
                goto fail;
            }
        }
        free(byname);
    }

    uint64_t data_size = size - 8 - n;
    const unsigned char *data = buf + 8 + n;
    for (size_t i = 0; i < t.count; i++) {
        uint64_t b = (uint64_t)(uintptr_t)t.tensors[i].data;
        uint64_t e2 = b + t.tensors[i].nbytes; /* cannot overflow: both below 2^53 */
        if (e2 > data_size) {
            st = g2f_error_set(err, G2F_ERR_FORMAT,
                               "%s: tensor '%s': data_offsets end %llu is past the data buffer (%llu bytes)", label,
                               t.tensors[i].name, (unsigned long long)e2, (unsigned long long)data_size);
            goto fail;
        }
        spans[i] = (span){b, e2, i};
    }
    qsort(spans, t.count, sizeof *spans, span_cmp);
    uint64_t pos = 0;
    for (size_t i = 0; i < t.count; i++) {
        const char *nm = t.tensors[spans[i].index].name;
        if (spans[i].begin < pos) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu) overlap tensor '%s'",
                               label, nm, (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                               t.tensors[spans[i - 1].index].name);
            goto fail;
        }
        if (spans[i].begin > pos) {
            st = g2f_error_set(err, G2F_ERR_FORMAT,
                               "%s: tensor '%s': gap of %llu uncovered bytes before its data_offsets begin %llu",
                               label, nm, (unsigned long long)(spans[i].begin - pos),
                               (unsigned long long)spans[i].begin);
            goto fail;
        }
        pos = spans[i].end;
    }
    if (pos != data_size) {
        st = g2f_error_set(err, G2F_ERR_FORMAT,
                           "%s: data buffer has %llu bytes but the tensors cover only %llu (trailing bytes)", label,
                           (unsigned long long)data_size, (unsigned long long)pos);
        goto fail;
    }
    for (size_t i = 0; i < t.count; i++)
        t.tensors[i].data = data + (uintptr_t)t.tensors[i].data;
    free(spans);
    cJSON_Delete(root);
    *out = t;
    return G2F_OK;

fail:
    free(spans);
    cJSON_Delete(root);
    g2f_table_free(&t);
    return st;
}

g2f_status g2f_safetensors_open(const char *path, g2f_safetensors **out, g2f_error *err) {
    return g2f_mapped_table_open(path, g2f_safetensors_parse, out, err);
}

const g2f_table *g2f_safetensors_table(const g2f_safetensors *st) { return &st->table; }

void g2f_safetensors_close(g2f_safetensors *st) { g2f_mapped_table_close(st); }
