/* g2f_writer: see g2f_writer.h. */
#include "g2f_writer.h"
#include "g2f_bytes.h"
#include "g2f_file.h"
#include "g2f_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct member {
    char *name;      /* npz member name */
    uint32_t crc;
    uint64_t size, offset;
} member;

struct g2f_writer {
    g2f_out_format format;
    char *path;
    g2f_outfile *out;  /* the temporary file (g2f_file: atomic, removed on signals) */
    FILE *fp;          /* its stream */
    g2f_out_spec *specs;
    char **names;     /* owned copies of spec names */
    unsigned char *i64; /* per tensor: 1 when it holds int64 (token ids), else float32 */
    size_t n, next;
    member *members;  /* npz: n tensors + metadata */
    size_t n_members;
    char *meta_json;  /* npz metadata */
    g2f_out_meta *meta; /* a copy of the metadata, its strings owned (meta_strs), for g2f_writer_set_meta */
    char **meta_strs;
    size_t n_meta;
    size_t meta_text_len; /* of the safetensors header's JSON, or of meta_json */
    int failed;
    /* the tensor being put in parts (g2f_writer_put_part) */
    uint64_t part_done;   /* floats of specs[next] written so far */
    uLong part_crc;       /* npz: CRC-32 of the member so far */
    long part_header;     /* npz: file offset of the member's local header */
};


static g2f_status io_fail(g2f_writer *w, g2f_error *err) {
    w->failed = 1;
    return g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", w->path, strerror(errno ? errno : EIO));
}

static uint64_t numel_of(const g2f_out_spec *s) {
    uint64_t n = 1;
    for (size_t d = 0; d < s->ndim; d++) n *= s->shape[d]; /* shapes come from validated inputs */
    return n;
}

/* A .npy v1 header for a float32 array (or uint8 for metadata), padded so
 * the data starts at a multiple of 64. */
static size_t npy_header(unsigned char *buf, size_t cap, const char *descr, const uint64_t *shape, size_t ndim) {
    char dict[512];
    size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (size_t d = 0; d < ndim && n < sizeof dict; d++)
        n += (size_t)snprintf(dict + n, sizeof dict - n, "%llu,%s", (unsigned long long)shape[d],
                              d + 1 < ndim ? " " : "");
    if (n < sizeof dict) n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
    size_t total = 10 + n + 1, pad = (64 - total % 64) % 64, hl = n + pad + 1;
    if (10 + hl > cap) return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    g2f_store_le(buf + 8, hl, 2);
    memcpy(buf + 10, dict, n);
    memset(buf + 10 + n, ' ', pad);
    buf[10 + hl - 1] = '\n';
    return 10 + hl;
}

/* npz: local header, then the member's bytes (header + data). */
static g2f_status npz_member(g2f_writer *w, const char *name, const unsigned char *hdr, size_t hlen, const void *data,
                             uint64_t dlen, g2f_error *err) {
    member *m = &w->members[w->n_members];
    uint64_t size = hlen + dlen;
    if (size > 0xffffffffu)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: member %s is %llu bytes; .npz output is limited "
                                            "to 4 GiB per array (use safetensors)", w->path, name, (unsigned long long)size);
    /* the name is kept (for the central directory) only once the member is written */
    m->name = NULL;
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, hdr, (uInt)hlen);
    for (uint64_t off = 0; off < dlen;) { /* crc32 takes uInt lengths */
        uInt chunk = dlen - off > (1u << 30) ? (1u << 30) : (uInt)(dlen - off);
        crc = crc32(crc, (const Bytef *)data + off, chunk);
        off += chunk;
    }
    long pos = ftell(w->fp);
    if (pos < 0) return io_fail(w, err);
    m->crc = (uint32_t)crc;
    m->size = size;
    m->offset = (uint64_t)pos;
    if (m->offset > 0xffffffffu)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: .npz output larger than 4 GiB is not supported",
                                            w->path);
    size_t nl = strlen(name);
    unsigned char lh[30] = {0};
    g2f_store_le(lh, 0x04034b50, 4);
    g2f_store_le(lh + 4, 20, 2);
    g2f_store_le(lh + 14, m->crc, 4);
    g2f_store_le(lh + 18, size, 4);
    g2f_store_le(lh + 22, size, 4);
    g2f_store_le(lh + 26, nl, 2);
    if (fwrite(lh, 1, 30, w->fp) != 30 || fwrite(name, 1, nl, w->fp) != nl || fwrite(hdr, 1, hlen, w->fp) != hlen ||
        (dlen && fwrite(data, 1, (size_t)dlen, w->fp) != dlen))
        return io_fail(w, err);
    if (!(m->name = g2f_strdup(name))) return w->failed = 1, g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    w->n_members++;
    return G2F_OK;
}

/* The metadata as a JSON object of strings; NULL when any allocation fails
 * (never a partial object). JSON text is UTF-8 (and gpt2ffn's own reader
 * refuses a header that is not): a byte of a key or value that is not UTF-8
 * (a checkpoint path is bytes) becomes U+FFFD; cJSON escapes control
 * characters. */
static cJSON *meta_object(const g2f_out_meta *meta, size_t n_meta) {
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < n_meta; i++) {
        char *k = g2f_utf8_repair_dup(meta[i].key), *v = g2f_utf8_repair_dup(meta[i].value);
        if (!k || !v || !cJSON_AddStringToObject(o, k, v)) {
            cJSON_Delete(o);
            o = NULL;
        }
        free(k);
        free(v);
    }
    return o;
}

/* Appends a number to array a; 0 when it cannot. */
static int add_number(cJSON *a, double v) {
    cJSON *n = cJSON_CreateNumber(v);
    if (n && cJSON_AddItemToArray(a, n)) return 1;
    cJSON_Delete(n);
    return 0;
}

/* The safetensors header's JSON text from w's metadata and specs
 * (malloc'd), or NULL when out of memory. */
static char *safetensors_json(const g2f_writer *w) {
    /* every step checked: a header that lost a tensor to a failed
     * allocation would describe another file */
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    if (ok && w->n_meta) {
        cJSON *m = meta_object(w->meta, w->n_meta);
        ok = m && cJSON_AddItemToObject(root, "__metadata__", m);
        if (m && !ok) cJSON_Delete(m);
    }
    uint64_t off = 0;
    for (size_t i = 0; ok && i < w->n; i++) {
        cJSON *t = cJSON_AddObjectToObject(root, w->specs[i].name);
        cJSON *sh = t && cJSON_AddStringToObject(t, "dtype", w->i64[i] ? "I64" : "F32") ? cJSON_AddArrayToObject(t, "shape")
                                                                                        : NULL;
        ok = sh != NULL;
        for (size_t d = 0; ok && d < w->specs[i].ndim; d++) ok = add_number(sh, (double)w->specs[i].shape[d]);
        uint64_t bytes = numel_of(&w->specs[i]) * (w->i64[i] ? 8 : 4);
        cJSON *o = ok ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        ok = o && add_number(o, (double)off) && add_number(o, (double)(off + bytes));
        off += bytes;
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* An .npz's metadata JSON text (malloc'd), or NULL when out of memory. */
static char *npz_meta_text(const g2f_writer *w) {
    cJSON *root = meta_object(w->meta, w->n_meta);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

static g2f_status safetensors_header(g2f_writer *w, g2f_error *err) {
    char *text = safetensors_json(w);
    if (!text) return w->failed = 1, g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    w->meta_text_len = len;
    unsigned char lb[8];
    g2f_store_le(lb, padded, 8);
    int ok = fwrite(lb, 1, 8, w->fp) == 8 && fwrite(text, 1, len, w->fp) == len;
    for (size_t i = len; ok && i < padded; i++) ok = fputc(' ', w->fp) != EOF;
    free(text);
    return ok ? G2F_OK : io_fail(w, err);
}

/* Copies the metadata (g2f_writer_set_meta changes it later); 0 when out of memory. */
static int meta_copy(g2f_writer *w, const g2f_out_meta *meta, size_t n_meta) {
    w->meta = calloc(n_meta ? n_meta : 1, sizeof *w->meta);
    w->meta_strs = calloc(2 * n_meta + 1, sizeof *w->meta_strs);
    if (!w->meta || !w->meta_strs) return 0;
    for (size_t i = 0; i < n_meta; i++) {
        char *k = g2f_strdup(meta[i].key), *v = g2f_strdup(meta[i].value);
        w->meta_strs[2 * i] = k;
        w->meta_strs[2 * i + 1] = v;
        w->n_meta = i + 1;
        if (!k || !v) return 0;
        w->meta[i] = (g2f_out_meta){k, v};
    }
    return 1;
}

g2f_status g2f_writer_set_meta(g2f_writer *w, const char *key, const char *value, g2f_error *err) {
    size_t i = 0;
    while (i < w->n_meta && strcmp(w->meta[i].key, key) != 0) i++;
    if (w->failed || i == w->n_meta)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: no metadata %s to set", w->path, key);
    char *v = g2f_strdup(value), *old = w->meta_strs[2 * i + 1];
    if (!v) return w->failed = 1, g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    w->meta[i].value = w->meta_strs[2 * i + 1] = v;
    free(old);
    char *text = w->format == G2F_OUT_NPZ ? npz_meta_text(w) : safetensors_json(w);
    if (!text) return w->failed = 1, g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (strlen(text) != w->meta_text_len) {
        free(text);
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: metadata %s: the new value changes the header's "
                                            "length", w->path, key);
    }
    if (w->format == G2F_OUT_NPZ) {
        free(w->meta_json);
        w->meta_json = text;
        return G2F_OK;
    }
    long end = ftell(w->fp);
    int ok = end >= 0 && fseek(w->fp, 8, SEEK_SET) == 0 && fwrite(text, 1, w->meta_text_len, w->fp) == w->meta_text_len &&
             fseek(w->fp, end, SEEK_SET) == 0;
    free(text);
    return ok ? G2F_OK : io_fail(w, err);
}

g2f_status g2f_writer_open(const char *path, g2f_out_format format, const g2f_out_spec *specs, size_t n,
                           const g2f_out_meta *meta, size_t n_meta, g2f_writer **out, g2f_error *err) {
    return g2f_writer_open_typed(path, format, specs, NULL, n, meta, n_meta, out, err);
}

g2f_status g2f_writer_open_typed(const char *path, g2f_out_format format, const g2f_out_spec *specs,
                                 const unsigned char *i64, size_t n, const g2f_out_meta *meta, size_t n_meta,
                                 g2f_writer **out, g2f_error *err) {
    *out = NULL;
    g2f_writer *w = calloc(1, sizeof *w);
    if (!w) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    w->format = format;
    w->n = n;
    w->path = g2f_strdup(path);
    w->specs = calloc(n ? n : 1, sizeof *w->specs);
    w->names = calloc(n ? n : 1, sizeof *w->names);
    w->members = calloc(n + 1, sizeof *w->members);
    w->i64 = calloc(n ? n : 1, 1);
    g2f_status st = G2F_OK;
    if (w->i64 && i64) memcpy(w->i64, i64, n);
    if (!w->path || !w->specs || !w->names || !w->members || !w->i64) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        w->specs[i] = specs[i];
        w->names[i] = g2f_strdup(specs[i].name);
        if (!w->names[i]) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto fail;
        }
        w->specs[i].name = w->names[i];
    }
    if (!meta_copy(w, meta, n_meta)) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = g2f_outfile_open(path, &w->out, err)) != G2F_OK) goto fail;
    w->fp = g2f_outfile_stream(w->out);
    if (format == G2F_OUT_SAFETENSORS) {
        if ((st = safetensors_header(w, err)) != G2F_OK) goto fail;
    } else if (n_meta) {
        w->meta_json = npz_meta_text(w);
        if (!w->meta_json) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto fail;
        }
        w->meta_text_len = strlen(w->meta_json);
    }
    *out = w;
    return G2F_OK;
fail:
    g2f_writer_close(w, 0, NULL);
    return st;
}

/* npz: the member's local header, its CRC-32 patched in once the data is
 * all written (streamed in parts, so it is not known in advance). */
static g2f_status npz_begin(g2f_writer *w, const g2f_out_spec *s, g2f_error *err) {
    unsigned char hdr[640];
    int i64 = w->i64[w->next];
    size_t hl = npy_header(hdr, sizeof hdr, i64 ? "<i8" : "<f4", s->shape, s->ndim);
    uint64_t size = hl + numel_of(s) * (i64 ? 8 : 4);
    size_t nl = strlen(s->name) + 4;
    member *m = &w->members[w->n_members];
    if (size > 0xffffffffu)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: member %s.npy is %llu bytes; .npz output is "
                                            "limited to 4 GiB per array (use safetensors)", w->path, s->name,
                                            (unsigned long long)size);
    m->name = malloc(nl + 1);
    if (!m->name) return w->failed = 1, g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    snprintf(m->name, nl + 1, "%s.npy", s->name);
    w->n_members++; /* owned by the writer from here on, freed by close */
    long pos = ftell(w->fp);
    if (pos < 0) return io_fail(w, err);
    m->size = size;
    m->offset = (uint64_t)pos;
    if (m->offset > 0xffffffffu)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: .npz output larger than 4 GiB is not supported",
                                            w->path);
    unsigned char lh[30] = {0};
    g2f_store_le(lh, 0x04034b50, 4);
    g2f_store_le(lh + 4, 20, 2);
    g2f_store_le(lh + 18, size, 4);
    g2f_store_le(lh + 22, size, 4);
    g2f_store_le(lh + 26, nl, 2);
    if (fwrite(lh, 1, 30, w->fp) != 30 || fwrite(m->name, 1, nl, w->fp) != nl || fwrite(hdr, 1, hl, w->fp) != hl)
        return io_fail(w, err);
    w->part_header = pos;
    w->part_crc = crc32(crc32(0L, Z_NULL, 0), hdr, (uInt)hl);
    return G2F_OK;
}

static g2f_status npz_end(g2f_writer *w, g2f_error *err) {
    member *m = &w->members[w->n_members - 1];
    unsigned char c4[4];
    m->crc = (uint32_t)w->part_crc;
    g2f_store_le(c4, m->crc, 4);
    if (fseek(w->fp, w->part_header + 14, SEEK_SET) != 0 || fwrite(c4, 1, 4, w->fp) != 4 ||
        fseek(w->fp, 0, SEEK_END) != 0)
        return io_fail(w, err);
    return G2F_OK;
}

static g2f_status put_raw(g2f_writer *w, const void *data, size_t count, int i64, g2f_error *err);

g2f_status g2f_writer_put_part(g2f_writer *w, const float *data, size_t count, g2f_error *err) {
    return put_raw(w, data, count, 0, err);
}

g2f_status g2f_writer_put_i64_part(g2f_writer *w, const int64_t *data, size_t count, g2f_error *err) {
    return put_raw(w, data, count, 1, err);
}

static g2f_status put_raw(g2f_writer *w, const void *data, size_t count, int i64, g2f_error *err) {
    if (w->failed || w->next >= w->n) {
        w->failed = 1;
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: more tensors written than declared", w->path);
    }
    const g2f_out_spec *s = &w->specs[w->next];
    uint64_t numel = numel_of(s);
    if (count > numel - w->part_done) {
        w->failed = 1;
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: more values written to %s than its shape holds", w->path,
                             s->name);
    }
    if (w->i64[w->next] != i64) {
        w->failed = 1;
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: tensor %s is %s", w->path, s->name, i64 ? "float32" : "int64");
    }
    g2f_status st;
    if (w->part_done == 0 && w->format == G2F_OUT_NPZ && (st = npz_begin(w, s, err)) != G2F_OK) return st;
    size_t bytes = count * (i64 ? 8 : 4);
    if (bytes && fwrite(data, 1, bytes, w->fp) != bytes) return io_fail(w, err);
    if (w->format == G2F_OUT_NPZ)
        for (size_t off = 0; off < bytes;) { /* crc32 takes uInt lengths */
            uInt chunk = bytes - off > (1u << 30) ? (1u << 30) : (uInt)(bytes - off);
            w->part_crc = crc32(w->part_crc, (const Bytef *)data + off, chunk);
            off += chunk;
        }
    w->part_done += count;
    if (w->part_done < numel) return G2F_OK;
    if (w->format == G2F_OUT_NPZ && (st = npz_end(w, err)) != G2F_OK) return st;
    w->part_done = 0;
    w->next++;
    return G2F_OK;
}

g2f_status g2f_writer_put(g2f_writer *w, const float *data, g2f_error *err) {
    if (w->failed || w->next >= w->n) {
        w->failed = 1;
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: more tensors written than declared", w->path);
    }
    if (w->part_done) {
        w->failed = 1;
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: tensor %s was begun in parts", w->path, w->specs[w->next].name);
    }
    return g2f_writer_put_part(w, data, (size_t)numel_of(&w->specs[w->next]), err);
}

static g2f_status npz_finish(g2f_writer *w, g2f_error *err) {
    if (w->meta_json) {
        unsigned char hdr[640];
        uint64_t len = strlen(w->meta_json);
        size_t hl = npy_header(hdr, sizeof hdr, "|u1", &len, 1);
        g2f_status st = npz_member(w, "__metadata__.npy", hdr, hl, w->meta_json, len, err);
        if (st != G2F_OK) return st;
    }
    long cd = ftell(w->fp);
    if (cd < 0) return io_fail(w, err);
    for (size_t i = 0; i < w->n_members; i++) {
        const member *m = &w->members[i];
        size_t nl = strlen(m->name);
        unsigned char ch[46] = {0};
        g2f_store_le(ch, 0x02014b50, 4);
        g2f_store_le(ch + 4, 20, 2);
        g2f_store_le(ch + 6, 20, 2);
        g2f_store_le(ch + 16, m->crc, 4);
        g2f_store_le(ch + 20, m->size, 4);
        g2f_store_le(ch + 24, m->size, 4);
        g2f_store_le(ch + 28, nl, 2);
        g2f_store_le(ch + 42, m->offset, 4);
        if (fwrite(ch, 1, 46, w->fp) != 46 || fwrite(m->name, 1, nl, w->fp) != nl) return io_fail(w, err);
    }
    long end = ftell(w->fp);
    if (end < 0) return io_fail(w, err);
    unsigned char eocd[22] = {0};
    g2f_store_le(eocd, 0x06054b50, 4);
    g2f_store_le(eocd + 8, w->n_members, 2);
    g2f_store_le(eocd + 10, w->n_members, 2);
    g2f_store_le(eocd + 12, (uint64_t)(end - cd), 4);
    g2f_store_le(eocd + 16, (uint64_t)cd, 4);
    if (w->n_members > 0xffff)
        return w->failed = 1, g2f_error_set(err, G2F_ERR_USAGE, "%s: more than 65535 arrays for one .npz", w->path);
    return fwrite(eocd, 1, 22, w->fp) == 22 ? G2F_OK : io_fail(w, err);
}

g2f_status g2f_writer_close(g2f_writer *w, int commit, g2f_error *err) {
    if (!w) return G2F_OK;
    g2f_status st = G2F_OK;
    if (commit && !w->failed && w->next != w->n)
        st = g2f_error_set(err, G2F_ERR_USAGE, "%s: %zu of %zu tensors written", w->path, w->next, w->n);
    if (commit && st == G2F_OK && !w->failed && w->format == G2F_OUT_NPZ) st = npz_finish(w, err);
    if (commit && st == G2F_OK && w->failed)
        st = g2f_error_set(err, G2F_ERR_IO, "%s: not written after an earlier error", w->path);
    int keep = commit && st == G2F_OK;
    g2f_status cs = g2f_outfile_close(w->out, keep, keep ? err : NULL); /* rename, or remove the temporary */
    if (keep) st = cs;
    for (size_t i = 0; w->names && i < w->n; i++) free(w->names[i]);
    for (size_t i = 0; w->members && i < w->n_members; i++) free(w->members[i].name);
    free(w->i64);
    free(w->names);
    free(w->members);
    free(w->specs);
    free(w->meta_json);
    for (size_t i = 0; w->meta_strs && i < 2 * w->n_meta; i++) free(w->meta_strs[i]);
    free(w->meta_strs);
    free(w->meta);
    free(w->path);
    free(w);
    return st;
}
