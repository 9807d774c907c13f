/* g2f_torch: torch.save zip -> tensor table; see the checklist in the header.
 * The zip and pickle modules validate the containers; this file ties a
 * pickled tensor to its storage member and checks the tensor fits in it. */
#include "g2f_torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_names.h"
#include "g2f_pickle.h"
#include "g2f_zip.h"

/* Legacy torch.save begins by pickling its magic number as LONG1. */
static const unsigned char legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                             0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

int g2f_torch_is_legacy(const unsigned char *buf, uint64_t size) {
    return size >= sizeof legacy_magic && memcmp(buf, legacy_magic, sizeof legacy_magic) == 0;
}

typedef struct walker {
    const char *label;
    const g2f_zip *zip;
    const char *root;             /* "<root>/" */
    g2f_table *table;
    size_t cap;                   /* of table->tensors */
    unsigned char *checked;       /* per zip member (by index): its CRC was checked */
    char path[G2F_TORCH_MAX_NAME + 1];
    size_t path_len;
    uint64_t visits, budget;
    g2f_error *err;
} walker;


/* Checks the storage member once: stored, CRC-32, size of its typed storage. */
static g2f_status check_storage(walker *w, const g2f_zip_member *m, const g2f_pickle_storage *s,
                                const unsigned char **bytes) {
    uint64_t need;
    if (!g2f_mul_u64(s->numel, g2f_dtype_size(s->dtype), &need) || need != m->size)
        return g2f_error_set(w->err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': storage '%s' holds %llu bytes but its %s of %llu elements needs %llu",
                             w->label, w->path, m->name, (unsigned long long)m->size, s->type_name,
                             (unsigned long long)s->numel, (unsigned long long)need);
    if (w->checked[m->index]) { /* storages may be shared: one CRC check each, found in O(1) */
        *bytes = m->data;
        return G2F_OK;
    }
    g2f_status st = g2f_zip_stored_view(w->zip, m, bytes, w->err);
    if (st == G2F_OK) w->checked[m->index] = 1;
    return st;
}

/* Contiguous row-major strides, ignoring size-1 dimensions as torch does. */
static g2f_status check_contiguous(walker *w, const g2f_pickle_tensor *t, uint64_t *numel) {
    uint64_t expect = 1;
    int ok = 1;
    for (size_t d = t->ndim; d-- > 0;) {
        if (t->shape[d] != 1 && t->stride[d] != expect) ok = 0;
        if (!g2f_mul_u64(expect, t->shape[d], &expect))
            return g2f_error_set(w->err, G2F_ERR_FORMAT, "%s: tensor '%s': element count overflows 64 bits", w->label,
                                 w->path);
    }
    *numel = expect;
    if (ok) return G2F_OK;
    char sh[160] = "[", st[160] = "(";
    for (size_t d = 0; d < t->ndim; d++) {
        size_t a = strlen(sh), b = strlen(st);
        snprintf(sh + a, sizeof sh - a, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
        snprintf(st + b, sizeof st - b, "%s%llu", d ? ", " : "", (unsigned long long)t->stride[d]);
    }
    return g2f_error_set(w->err, G2F_ERR_FORMAT,
                         "%s: tensor '%s' is not contiguous: shape %s], strides %s) are not row-major "
                         "(a transposed or sliced view was saved; re-save it with .contiguous())",
                         w->label, w->path, sh, st);
}

static g2f_status add_tensor(walker *w, const g2f_pickle_tensor *t) {
    char member[2 * G2F_TORCH_MAX_NAME + 16];
    int n = snprintf(member, sizeof member, "%sdata/%s", w->root, t->storage.key);
    const g2f_zip_member *m = n > 0 && (size_t)n < sizeof member ? g2f_zip_find(w->zip, member) : NULL;
    if (!m)
        return g2f_error_set(w->err, G2F_ERR_FORMAT, "%s: tensor '%s': storage '%sdata/%.64s' is missing from the archive",
                             w->label, w->path, w->root, t->storage.key);
    const unsigned char *bytes;
    uint64_t numel = 0, end, esz = g2f_dtype_size(t->storage.dtype);
    g2f_status st = check_storage(w, m, &t->storage, &bytes);
    if (st == G2F_OK) st = check_contiguous(w, t, &numel);
    if (st != G2F_OK) return st;
    if (!g2f_add_u64(t->offset, numel, &end) || end > t->storage.numel)
        return g2f_error_set(w->err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': storage offset %llu + %llu elements runs past the end of storage '%s' "
                             "(%llu elements)",
                             w->label, w->path, (unsigned long long)t->offset, (unsigned long long)numel, m->name,
                             (unsigned long long)t->storage.numel);
    if (w->table->count == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 64;
        g2f_tensor *q = realloc(w->table->tensors, ncap * sizeof *q);
        if (!q) return g2f_error_set(w->err, G2F_ERR_NOMEM, "%s: out of memory", w->label);
        w->table->tensors = q;
        w->cap = ncap;
    }
    g2f_tensor *out = &w->table->tensors[w->table->count];
    memset(out, 0, sizeof *out);
    if (!(out->name = g2f_strdup(w->path))) return g2f_error_set(w->err, G2F_ERR_NOMEM, "%s: out of memory", w->label);
    w->table->count++;
    out->dtype = t->storage.dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof out->shape);
    out->numel = numel;
    out->nbytes = numel * esz;              /* <= storage bytes: no overflow */
    out->data = bytes + t->offset * esz;    /* offset <= storage numel */
    return G2F_OK;
}

/* Appends ".seg" (or "seg" at the root) to the key path; false when it
 * would be too long or hold a NUL (the path is then left unchanged). */
static int path_push(walker *w, const char *seg, size_t len) {
    size_t dot = w->path_len ? 1 : 0;
    if (len > G2F_TORCH_MAX_NAME - w->path_len - dot || memchr(seg, 0, len)) return 0;
    if (dot) w->path[w->path_len++] = '.';
    memcpy(w->path + w->path_len, seg, len);
    w->path_len += len;
    w->path[w->path_len] = '\0';
    return 1;
}

static g2f_status walk(walker *w, const g2f_pickle_value *v, unsigned depth, const char *unnamed);

/* Walks child under its dict key (or list index when key is NULL). unnamed
 * says why tensors below cannot be named; it is an error only if one is. */
static g2f_status walk_child(walker *w, const g2f_pickle_value *key, size_t index, const g2f_pickle_value *child,
                             unsigned depth, const char *unnamed) {
    char num[32];
    const char *seg = num;
    size_t len;
    if (key && key->kind == G2F_PV_STR) {
        seg = key->u.str.s;
        len = key->u.str.len;
    } else if (key && key->kind == G2F_PV_INT) {
        len = (size_t)snprintf(num, sizeof num, "%lld", (long long)key->u.i);
    } else if (key) {
        len = (size_t)snprintf(num, sizeof num, "<%s>", g2f_pickle_kind_name(key->kind));
        if (!unnamed) unnamed = "a dict key above it is not a str or int";
    } else {
        len = (size_t)snprintf(num, sizeof num, "%zu", index);
    }
    size_t saved = w->path_len;
    if (!path_push(w, seg, len) && !unnamed)
        unnamed = "a key above it is too long (limit G2F_TORCH_MAX_NAME) or holds a NUL";
    g2f_status st = walk(w, child, depth + 1, unnamed);
    w->path_len = saved;
    w->path[saved] = '\0';
    return st;
}

static g2f_status walk(walker *w, const g2f_pickle_value *v, unsigned depth, const char *unnamed) {
    if (++w->visits > w->budget)
        return g2f_error_set(w->err, G2F_ERR_FORMAT, "%s: more than %llu nodes to visit (containers shared too often)",
                             w->label, (unsigned long long)w->budget);
    if (depth > G2F_TORCH_MAX_DEPTH)
        return g2f_error_set(w->err, G2F_ERR_FORMAT, "%s: '%.64s...' is nested deeper than %u levels (or cyclic)",
                             w->label, w->path, G2F_TORCH_MAX_DEPTH);
    g2f_status st = G2F_OK;
    switch (v->kind) {
    case G2F_PV_TENSOR:
        if (unnamed)
            return g2f_error_set(w->err, G2F_ERR_FORMAT, "%s: tensor at '%s' cannot be named: %s", w->label, w->path,
                                 unnamed);
        return add_tensor(w, v->u.tensor);
    case G2F_PV_DICT:
        for (size_t i = 0; i < v->u.dict.count && st == G2F_OK; i++)
            st = walk_child(w, v->u.dict.keys[i], i, v->u.dict.values[i], depth, unnamed);
        return st;
    case G2F_PV_LIST:
    case G2F_PV_TUPLE:
        for (size_t i = 0; i < v->u.seq.count && st == G2F_OK; i++)
            st = walk_child(w, NULL, i, v->u.seq.items[i], depth, unnamed);
        return st;
    default:
        return G2F_OK;
    }
}

/* nanoGPT's train.py saves {'model': ..., 'optimizer': ..., 'model_args':
 * ..., ...}: a dict with both keys at the top marks a nanoGPT training
 * checkpoint (g2f_torch.h: G2F_TORCH_META_MODEL_ARGS). The integer sizes of
 * its model_args dict (and of a top-level 'config' dict, which nanoGPT and
 * minGPT-style trainers save too) become metadata; other keys are not read. */
/* The value of a str key; a repeated key gives the last, as Python's
 * unpickler keeps it (g2f_pickle.h keeps both). */
static const g2f_pickle_value *dict_get(const g2f_pickle_value *d, const char *key) {
    size_t n = strlen(key);
    const g2f_pickle_value *found = NULL;
    for (size_t i = 0; i < d->u.dict.count; i++) {
        const g2f_pickle_value *k = d->u.dict.keys[i];
        if (k->kind == G2F_PV_STR && k->u.str.len == n && !memcmp(k->u.str.s, key, n)) found = d->u.dict.values[i];
    }
    return found;
}

static g2f_status add_meta(g2f_table *t, const char *key, const char *value, const char *label, g2f_error *err) {
    g2f_meta_entry *m = &t->meta[t->meta_count];
    m->key = g2f_strdup(key);
    m->value = g2f_strdup(value);
    t->meta_count++; /* freed with the table even when half made */
    return m->key && m->value ? G2F_OK : g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
}

static g2f_status note_model_args(const g2f_pickle_value *root, g2f_table *t, const char *label, g2f_error *err) {
    if (root->kind != G2F_PV_DICT) return G2F_OK;
    static const char *const dicts[] = {"model_args", "config"};
    static const char *const fields[] = {"n_head", "n_embd", "n_layer"};
    enum { MAX_META = 1 + 2 * 3 };
    int nanogpt = dict_get(root, "model") && dict_get(root, "model_args");
    t->meta = calloc(MAX_META, sizeof *t->meta);
    if (!t->meta) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
    g2f_status st = G2F_OK;
    if (nanogpt) st = add_meta(t, G2F_TORCH_META_MODEL_ARGS, "beside model", label, err);
    for (size_t d = 0; d < 2 && st == G2F_OK; d++) {
        const g2f_pickle_value *args = dict_get(root, dicts[d]);
        if (!args || args->kind != G2F_PV_DICT) continue;
        for (size_t f = 0; f < 3 && st == G2F_OK; f++) {
            const g2f_pickle_value *v = dict_get(args, fields[f]);
            if (!v || v->kind != G2F_PV_INT) continue; /* the model validates the value */
            char key[64], value[32];
            snprintf(key, sizeof key, "torch:%s.%s", dicts[d], fields[f]);
            snprintf(value, sizeof value, "%lld", (long long)v->u.i);
            st = add_meta(t, key, value, label, err);
        }
    }
    if (st == G2F_OK && t->meta_count == 0) {
        free(t->meta);
        t->meta = NULL;
    }
    return st;
}

/* Names unique: sorted, n log n. */
static g2f_status check_unique(const g2f_table *t, const char *label, g2f_error *err) {
    g2f_name_ref *r = g2f_names_of_table(t);
    if (!r) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
    size_t d = g2f_names_find_dup(r, t->count);
    g2f_status st = d ? g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' appears twice", label,
                                      t->tensors[r[d].index].name)
                      : G2F_OK;
    free(r);
    return st;
}

/* The single <root>/data.pkl; root is written as "<root>/" into root. */
static g2f_status find_pickle(const g2f_zip *z, const char *label, char *root, size_t rootsz,
                              const g2f_zip_member **out, g2f_error *err) {
    const g2f_zip_member *found = NULL;
    for (size_t i = 0; i < g2f_zip_count(z); i++) {
        const g2f_zip_member *m = g2f_zip_entry(z, i);
        const char *slash = strchr(m->name, '/');
        if (!slash || slash == m->name || strcmp(slash, "/data.pkl") != 0) continue;
        if (found)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: two pickles, '%s' and '%s': not one torch.save object",
                                 label, found->name, m->name);
        found = m;
    }
    if (!found)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: no '<root>/data.pkl' member: a zip archive but not a torch.save checkpoint", label);
    size_t n = (size_t)(strchr(found->name, '/') - found->name) + 1;
    if (n >= rootsz) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: archive root folder name too long", label);
    memcpy(root, found->name, n);
    root[n] = '\0';
    *out = found;
    return G2F_OK;
}

static g2f_status check_byteorder(const g2f_zip *z, const char *label, const char *root, g2f_error *err) {
    char name[G2F_ZIP_MAX_NAME + 16];
    snprintf(name, sizeof name, "%sbyteorder", root);
    const g2f_zip_member *m = g2f_zip_find(z, name);
    if (!m) return G2F_OK; /* before torch 1.10: always little-endian */
    const unsigned char *b;
    g2f_status st = g2f_zip_stored_view(z, m, &b, err);
    if (st != G2F_OK) return st;
    if (m->size == 6 && !memcmp(b, "little", 6)) return G2F_OK;
    if (m->size == 3 && !memcmp(b, "big", 3))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: big-endian checkpoint (%s says 'big') is not supported", label,
                             name);
    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s is neither 'little' nor 'big'", label, name);
}

g2f_status g2f_torch_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                           g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (g2f_torch_is_legacy(buf, size))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: legacy (pre-1.6) torch.save format is not supported; re-save with torch>=1.6", label);
    if (size < 4 || memcmp(buf, "PK\x03\x04", 4) != 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a zip archive, so not a torch.save (>= 1.6) checkpoint%s",
                             label, size >= 2 && buf[0] == 0x80 ? " (it is a raw pickle)" : "");
    g2f_zip *z = NULL;
    g2f_pickle *pk = NULL;
    unsigned char *owned = NULL;
    walker w = {.label = label, .table = out, .err = err};
    char root[G2F_ZIP_MAX_NAME + 2], pklabel[1024];
    const g2f_zip_member *m = NULL;
    const unsigned char *pkl = NULL;
    g2f_status st = g2f_zip_open_mapping(buf, size, label, &z, err);
    if (st == G2F_OK) st = find_pickle(z, label, root, sizeof root, &m, err);
    if (st == G2F_OK) st = check_byteorder(z, label, root, err);
    if (st != G2F_OK) goto done;
    if (m->method == G2F_ZIP_STORED) {
        st = g2f_zip_stored_view(z, m, &pkl, err);
    } else {
        st = g2f_zip_extract(z, m, G2F_TORCH_MAX_PICKLE, &owned, err);
        pkl = owned;
    }
    if (st != G2F_OK) goto done;
    snprintf(pklabel, sizeof pklabel, "%s: %s", label, m->name);
    /* The machine's memory follows the archive's size, not data.pkl's: a
     * deflated data.pkl may inflate 1000:1, and 64 x that would be far more
     * than a small multiple of the file. Stored: the same cap as usual. */
    uint64_t cap;
    if (!g2f_mul_u64(m->method == G2F_ZIP_STORED ? m->size : m->compressed_size, G2F_PICKLE_ALLOC_FACTOR, &cap) ||
        !g2f_add_u64(cap, G2F_PICKLE_ALLOC_SLACK, &cap))
        cap = UINT64_MAX;
    if ((st = g2f_pickle_parse_capped(pkl, (size_t)m->size, cap, pklabel, &pk, err)) != G2F_OK) goto done;
    w.zip = z;
    w.root = root;
    if (!(w.checked = calloc(g2f_zip_count(z) ? g2f_zip_count(z) : 1, 1))) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
        goto done;
    }
    w.budget = (uint64_t)g2f_pickle_value_count(pk) * G2F_TORCH_VISITS_PER_VALUE + 1024;
    if ((st = walk(&w, g2f_pickle_root(pk), 0, NULL)) != G2F_OK) goto done;
    if ((st = check_unique(out, label, err)) != G2F_OK) goto done;
    st = note_model_args(g2f_pickle_root(pk), out, label, err);
done:
    free(w.checked);
    free(owned);
    g2f_pickle_free(pk);
    g2f_zip_close(z);
    if (st != G2F_OK) g2f_table_free(out);
    return st;
}

g2f_status g2f_torch_open(const char *path, g2f_torch **out, g2f_error *err) {
    return g2f_mapped_table_open(path, g2f_torch_parse, out, err);
}

const g2f_table *g2f_torch_table(const g2f_torch *pt) { return &pt->table; }

void g2f_torch_close(g2f_torch *pt) { g2f_mapped_table_close(pt); }
