/* g2f_npy: see g2f_npy.h. The header parser is a small hand-written
 * scanner for the one dict literal numpy writes; nothing is evaluated. */
#include "g2f_npy.h"
#include "g2f_file.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bytes.h"
#include "g2f_json.h"
#include "g2f_names.h"
#include "g2f_zip.h"


/* A bounded cursor over the header text. */
typedef struct cur {
    const char *p, *end;
} cur;

static void skip_ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r')) c->p++;
}

static int eat(cur *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes, copied into buf. */
static int quoted(cur *c, char *buf, size_t n) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    char q = *c->p++;
    size_t len = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || len + 1 >= n) return 0;
        buf[len++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    buf[len] = '\0';
    return 1;
}

static int word(cur *c, const char *w) {
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && !strncmp(c->p, w, n)) {
        c->p += n;
        return 1;
    }
    return 0;
}

static int number(cur *c, uint64_t *v) {
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    uint64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (!g2f_mul_u64(x, 10, &x) || !g2f_add_u64(x, (uint64_t)(*c->p - '0'), &x)) return 0;
        c->p++;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
    *v = x;
    return 1;
}

static int descr_dtype(const char *d, g2f_dtype *out) {
    static const struct { const char *code; g2f_dtype dt; } map[] = {
        {"f2", G2F_DTYPE_F16}, {"f4", G2F_DTYPE_F32}, {"f8", G2F_DTYPE_F64}, {"i1", G2F_DTYPE_I8},
        {"i2", G2F_DTYPE_I16}, {"i4", G2F_DTYPE_I32}, {"i8", G2F_DTYPE_I64}, {"u1", G2F_DTYPE_U8},
        {"u2", G2F_DTYPE_U16}, {"u4", G2F_DTYPE_U32}, {"u8", G2F_DTYPE_U64}, {"b1", G2F_DTYPE_BOOL},
    };
    if (d[0] != '<' && d[0] != '|' && d[0] != '=') return 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(d + 1, map[i].code)) {
            /* '|' only makes sense for one-byte types; numpy writes '<' otherwise */
            if (d[0] == '|' && g2f_dtype_size(map[i].dt) != 1) return 0;
            *out = map[i].dt;
            return 1;
        }
    return 0;
}

g2f_status g2f_npy_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_tensor *t,
                         g2f_error *err) {
    memset(t, 0, sizeof *t);
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a .npy array (no \\x93NUMPY magic)", label);
    unsigned major = buf[6];
    if (major < 1 || major > 3)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy version %u.%u is not 1, 2 or 3", label, major, buf[7]);
    uint64_t hlen, start;
    if (major == 1) {
        hlen = g2f_load_u16le(buf + 8);
        start = 10;
    } else {
        if (size < 12) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: truncated .npy header", label);
        hlen = g2f_load_u32le(buf + 8);
        start = 12;
    }
    if (hlen > G2F_NPY_MAX_HEADER || hlen > size - start)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header length %llu runs past the end or the %u-byte limit",
                             label, (unsigned long long)hlen, G2F_NPY_MAX_HEADER);
    const char *h = (const char *)buf + start;
    for (uint64_t i = 0; i < hlen; i++)
        if (((unsigned char)h[i] < 0x20 && h[i] != '\n' && h[i] != '\t' && h[i] != '\r') ||
            (major < 3 && (unsigned char)h[i] >= 0x80))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header byte %llu is not header text", label,
                                 (unsigned long long)i);
    cur c = {h, h + hlen};
    char key[32], descr[16] = "";
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    if (!eat(&c, '{')) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header is not a dict literal", label);
    while (!eat(&c, '}')) {
        if (!quoted(&c, key, sizeof key) || !eat(&c, ':'))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: expected 'key': value", label);
        if (!strcmp(key, "descr") && !have_descr) {
            if (!quoted(&c, descr, sizeof descr))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: 'descr' is not a simple string (structured "
                                     "arrays are not supported)", label);
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_order) {
            if (word(&c, "True")) fortran = 1;
            else if (!word(&c, "False"))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: 'fortran_order' is not True or False", label);
            have_order = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if (!eat(&c, '('))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: 'shape' is not a tuple", label);
            t->numel = 1;
            while (!eat(&c, ')')) {
                uint64_t v;
                if (t->ndim == G2F_MAX_DIMS || !number(&c, &v))
                    return g2f_error_set(err, G2F_ERR_FORMAT,
                                         "%s: .npy header: 'shape' must be at most %d non-negative integers", label,
                                         G2F_MAX_DIMS);
                t->shape[t->ndim++] = v;
                if (!g2f_mul_u64(t->numel, v, &t->numel))
                    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy shape element count overflows", label);
                if (!eat(&c, ',') && (skip_ws(&c), c.p < c.end && *c.p != ')'))
                    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: malformed 'shape' tuple", label);
            }
            have_shape = 1;
        } else {
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: unexpected or repeated key '%s'", label, key);
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}'))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header: expected ',' or '}'", label);
            break;
        }
    }
    skip_ws(&c);
    if (c.p != c.end || !have_descr || !have_order || !have_shape)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header must hold exactly descr, fortran_order and shape",
                             label);
    if (!descr_dtype(descr, &t->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy dtype '%s' is not supported (little-endian f2/f4/f8, "
                             "integers or bool)", label, descr);
    if (fortran && t->ndim > 1)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy array is in Fortran order; re-save it with "
                             "np.ascontiguousarray", label);
    uint64_t data = start + hlen;
    if (!g2f_mul_u64(t->numel, g2f_dtype_size(t->dtype), &t->nbytes) || t->nbytes != size - data)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: .npy header promises %llu x %zu bytes but %llu follow it", label,
                             (unsigned long long)t->numel, g2f_dtype_size(t->dtype), (unsigned long long)(size - data));
    t->data = buf + data;
    return G2F_OK;
}

/* ---- npz and folders ---- */


struct g2f_npz {
    g2f_table table;
    g2f_mapping zipmap;           /* the .npz */
    g2f_zip *zip;
    unsigned char **inflated;     /* per tensor, NULL when in place */
    g2f_mapping *files;           /* folder: one mapping per .npy */
    size_t n_files;
};

static int npy_name(const char *member, size_t *stem) {
    size_t n = strlen(member);
    if (n <= 4 || strcmp(member + n - 4, ".npy") != 0) return 0;
    *stem = n - 4;
    return 1;
}

int g2f_npz_probe_members(const unsigned char *buf, uint64_t size) {
    g2f_zip *z = NULL;
    if (g2f_zip_open_mapping(buf, size, "probe", &z, NULL) != G2F_OK) return 0;
    size_t n = g2f_zip_count(z), stem;
    int all = n > 0;
    for (size_t i = 0; i < n && all; i++) all = npy_name(g2f_zip_entry(z, i)->name, &stem);
    g2f_zip_close(z);
    return all;
}

static g2f_status add_tensor(g2f_npz *z, const char *name, size_t stem, const unsigned char *buf, uint64_t size,
                             const char *label, g2f_error *err) {
    g2f_tensor *t = &z->table.tensors[z->table.count];
    g2f_status s = g2f_npy_parse(buf, size, label, t, err);
    if (s != G2F_OK) return s;
    char *nm = malloc(stem + 1);
    if (!nm) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    memcpy(nm, name, stem);
    nm[stem] = '\0';
    t->name = nm; /* uniqueness: check_unique, once all are in */
    z->table.count++;
    return G2F_OK;
}

static g2f_status open_zip(g2f_npz *z, const char *path, g2f_error *err) {
    g2f_status s = g2f_mapping_open(path, &z->zipmap, err);
    if (s != G2F_OK) return s;
    if ((s = g2f_zip_open_mapping(z->zipmap.data, z->zipmap.size, path, &z->zip, err)) != G2F_OK) return s;
    size_t n = g2f_zip_count(z->zip);
    z->table.tensors = calloc(n ? n : 1, sizeof *z->table.tensors);
    z->inflated = calloc(n ? n : 1, sizeof *z->inflated);
    if (!z->table.tensors || !z->inflated) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const g2f_zip_member *m = g2f_zip_entry(z->zip, i);
        size_t stem;
        char label[512];
        if (!npy_name(m->name, &stem))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%.200s' is not an .npy array", path, m->name);
        snprintf(label, sizeof label, "%s: %s", path, m->name);
        const unsigned char *bytes;
        if (m->method == G2F_ZIP_STORED) {
            s = g2f_zip_stored_view(z->zip, m, &bytes, err);
        } else {
            s = g2f_zip_extract(z->zip, m, G2F_NPZ_MAX_MEMBER, &z->inflated[i], err);
            bytes = z->inflated[i];
        }
        if (s != G2F_OK || (s = add_tensor(z, m->name, stem, bytes, m->size, label, err)) != G2F_OK) return s;
    }
    return G2F_OK;
}

static g2f_status open_dir(g2f_npz *z, const char *path, g2f_error *err) {
    DIR *d = opendir(path);
    if (!d) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot read the folder", path);
    size_t cap = 0;
    g2f_status s = G2F_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && s == G2F_OK) {
        size_t stem;
        if (!npy_name(e->d_name, &stem)) continue;
        if (z->n_files == G2F_NPY_MAX_FILES) {
            s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: more than %u .npy files", path, G2F_NPY_MAX_FILES);
            break;
        }
        if (z->n_files == cap) {
            size_t nc = cap ? 2 * cap : 16;
            g2f_mapping *f = realloc(z->files, nc * sizeof *f);
            g2f_tensor *t = f ? realloc(z->table.tensors, nc * sizeof *t) : NULL;
            if (f) z->files = f;
            if (t) z->table.tensors = t;
            if (!f || !t) {
                s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
                break;
            }
            cap = nc;
        }
        size_t plen = strlen(path), nlen = strlen(e->d_name);
        char *fp = malloc(plen + nlen + 2);
        if (!fp) {
            s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(fp, plen + nlen + 2, "%s/%s", path, e->d_name);
        s = g2f_mapping_open(fp, &z->files[z->n_files], err);
        if (s == G2F_OK) {
            z->n_files++;
            s = add_tensor(z, e->d_name, stem, z->files[z->n_files - 1].data, z->files[z->n_files - 1].size, fp, err);
        }
        free(fp);
    }
    closedir(d);
    if (s == G2F_OK && z->table.count == 0) s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: no .npy files in the folder", path);
    return s;
}

/* Array names are unique (zip member and file names are, so this is a
 * safeguard). Sorted: a million members cost n log n comparisons; the linear
 * search per member it replaces cost n^2. */
static g2f_status check_unique(const g2f_npz *z, const char *path, g2f_error *err) {
    g2f_name_ref *r = g2f_names_of_table(&z->table);
    if (!r) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    size_t d = g2f_names_find_dup(r, z->table.count);
    g2f_status st = d ? g2f_error_set(err, G2F_ERR_FORMAT, "%s: array '%s' appears twice", path,
                                      z->table.tensors[r[d].index].name)
                      : G2F_OK;
    free(r);
    return st;
}

/* A "__metadata__" uint8 array holding a JSON object of strings (as gpt2ffn
 * run writes) becomes the table's metadata; anything else there is ignored,
 * but a key held twice by an object is refused as in every JSON read. */
static g2f_status load_metadata(g2f_npz *z, const char *path, g2f_error *err) {
    const g2f_tensor *m = g2f_table_find(&z->table, "__metadata__");
    if (!m || m->dtype != G2F_DTYPE_U8 || m->ndim != 1 || m->nbytes > (1u << 20)) return G2F_OK;
    cJSON *root = cJSON_ParseWithLength((const char *)m->data, (size_t)m->nbytes);
    const cJSON *dup_obj;
    const char *dup_key;
    g2f_status st = g2f_json_find_duplicate_key(root, &dup_obj, &dup_key, path, err);
    if (st == G2F_OK && dup_obj)
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: __metadata__: key \"%.120s\" appears twice", path, dup_key);
    if (st == G2F_OK && cJSON_IsObject(root)) {
        size_t n = (size_t)cJSON_GetArraySize(root);
        z->table.meta = calloc(n ? n : 1, sizeof *z->table.meta);
        if (!z->table.meta) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        for (const cJSON *e = root->child; e && st == G2F_OK; e = e->next) {
            if (!cJSON_IsString(e)) continue;
            size_t kl = strlen(e->string) + 1, vl = strlen(e->valuestring) + 1;
            g2f_meta_entry *me = &z->table.meta[z->table.meta_count];
            me->key = malloc(kl);
            me->value = malloc(vl);
            z->table.meta_count++;
            if (!me->key || !me->value) {
                st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(me->key, e->string, kl);
            memcpy(me->value, e->valuestring, vl);
        }
    }
    cJSON_Delete(root);
    return st;
}

g2f_status g2f_npz_open(const char *path, g2f_npz **out, g2f_error *err) {
    *out = NULL;
    g2f_npz *z = calloc(1, sizeof *z);
    if (!z) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    DIR *d = opendir(path);
    int is_dir = d != NULL;
    if (d) closedir(d);
    g2f_status s = is_dir ? open_dir(z, path, err) : open_zip(z, path, err);
    if (s == G2F_OK) s = check_unique(z, path, err);
    if (s == G2F_OK) s = load_metadata(z, path, err);
    if (s != G2F_OK) {
        g2f_npz_close(z);
        return s;
    }
    *out = z;
    return G2F_OK;
}

const g2f_table *g2f_npz_table(const g2f_npz *z) { return &z->table; }

void g2f_npz_close(g2f_npz *z) {
    if (!z) return;
    size_t n = z->zip ? g2f_zip_count(z->zip) : 0;
    for (size_t i = 0; z->inflated && i < n; i++) free(z->inflated[i]);
    free(z->inflated);
    g2f_zip_close(z->zip);
    g2f_mapping_close(&z->zipmap);
    for (size_t i = 0; i < z->n_files; i++) g2f_mapping_close(&z->files[i]);
    free(z->files);
    g2f_table_free(&z->table);
    free(z);
}
