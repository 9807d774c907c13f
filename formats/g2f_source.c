/* g2f_source: format dispatch and shard indexes; see g2f_source.h. */
#include "g2f_source.h"
#include "g2f_file.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "g2f_gguf.h"
#include "g2f_llmc.h"
#include "g2f_npy.h"
#include "g2f_safetensors.h"
#include "g2f_torch.h"

#define INDEX_MAX_BYTES (64u << 20)
#define MAX_SHARDS 4096
/* Real indexes map hundreds to a few thousand tensors. */
#define MAX_INDEX_ENTRIES 1000000

/* One opened data file, whatever its reader. */
typedef struct part {
    g2f_format format;
    g2f_safetensors *st; /* exactly one reader handle is set */
    g2f_npz *npz;
    g2f_torch *torch;
    g2f_gguf *gguf;
    g2f_llmc *llmc;
} part;

struct g2f_source {
    char *path;
    char description[96];
    g2f_format format;
    part *parts;
    size_t n_parts;
    g2f_table merged;          /* sharded: own copy of the entries */
    g2f_path_list shards;      /* sharded: the shard files opened, by name */
    const g2f_table *table;    /* the table handed out */
};






static g2f_status part_open(const char *path, part *p, g2f_error *err) {
    if (g2f_path_is_dir(path)) { /* a folder of .npy files */
        p->format = G2F_FORMAT_NPY;
        return g2f_npz_open(path, &p->npz, err);
    }
    g2f_mapping map;
    g2f_status s = g2f_mapping_open(path, &map, err);
    if (s != G2F_OK) return s;
    p->format = g2f_format_probe(map.data, map.size);
    if (p->format == G2F_FORMAT_ZIP && g2f_npz_probe_members(map.data, map.size)) p->format = G2F_FORMAT_NPZ;
    int legacy = p->format == G2F_FORMAT_PICKLE && g2f_torch_is_legacy(map.data, map.size);
    g2f_mapping_close(&map);
    switch (p->format) {
    case G2F_FORMAT_NPZ: return g2f_npz_open(path, &p->npz, err);
    case G2F_FORMAT_ZIP: return g2f_torch_open(path, &p->torch, err);
    case G2F_FORMAT_GGUF: return g2f_gguf_open(path, &p->gguf, err);
    case G2F_FORMAT_LLMC: return g2f_llmc_open(path, &p->llmc, err);
    case G2F_FORMAT_PICKLE:
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: is %s; %s", path, g2f_format_describe(p->format),
                             legacy ? "the legacy (pre-1.6) torch.save format is not supported; re-save it with "
                                      "torch>=1.6 (the zip format)"
                                    : "gpt2ffn reads torch.save zip files, safetensors, GGUF, llm.c and NumPy files");
    case G2F_FORMAT_NPY:
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: is a single .npy array; put the arrays in an .npz or a folder",
                             path);
    default: /* safetensors, or nothing we know: the safetensors reader says what is wrong */
        p->format = G2F_FORMAT_SAFETENSORS;
        return g2f_safetensors_open(path, &p->st, err);
    }
}

static const g2f_table *part_table(const part *p) {
    if (p->npz) return g2f_npz_table(p->npz);
    if (p->torch) return g2f_torch_table(p->torch);
    if (p->gguf) return g2f_gguf_table(p->gguf);
    if (p->llmc) return g2f_llmc_table(p->llmc);
    return g2f_safetensors_table(p->st);
}

static void part_close(part *p) {
    g2f_safetensors_close(p->st);
    g2f_npz_close(p->npz);
    g2f_torch_close(p->torch);
    g2f_gguf_close(p->gguf);
    g2f_llmc_close(p->llmc);
}

/* A folder that is a fixture: .npy files and no checkpoint file. */
static int has_npy(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        found = n > 4 && !strcmp(e->d_name + n - 4, ".npy");
    }
    closedir(d);
    return found;
}

static int looks_like_index(const char *path) {
    size_t n = strlen(path);
    return n > 11 && strcmp(path + n - 11, ".index.json") == 0;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int tensor_ptr_cmp(const void *a, const void *b) {
    return strcmp((*(const g2f_tensor *const *)a)->name, (*(const g2f_tensor *const *)b)->name);
}

/* A part's tensors sorted by name, for bsearch: the index may map a million
 * names into shards of a million tensors, where a linear search per entry
 * (g2f_table_find) would never finish. */
static const g2f_tensor **sorted_tensors(const g2f_table *t) {
    const g2f_tensor **v = g2f_alloc_array(t->count ? t->count : 1, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < t->count; i++) v[i] = &t->tensors[i];
    qsort(v, t->count, sizeof *v, tensor_ptr_cmp);
    return v;
}

static const g2f_tensor *find_sorted(const g2f_tensor *const *v, size_t n, const char *name) {
    g2f_tensor key;
    memset(&key, 0, sizeof key);
    key.name = name;
    const g2f_tensor *kp = &key;
    const g2f_tensor *const *hit = bsearch(&kp, v, n, sizeof *v, tensor_ptr_cmp);
    return hit ? *hit : NULL;
}

static g2f_status open_index(g2f_source *s, const char *path, g2f_error *err) {
    char *text = NULL, *dir = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    const char **shards = NULL;
    const g2f_tensor ***sorted = NULL; /* per shard, its tensors by name */
    const g2f_tensor **merged_sorted = NULL;
    size_t n_shards = 0, n_entries = 0;
    g2f_status st = g2f_read_small_file(path, INDEX_MAX_BYTES, &text, &len, err);
    if (st != G2F_OK) return st;
    root = cJSON_ParseWithLength(text, len);
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(root) || !cJSON_IsObject(map)) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a shard index (a JSON object with a \"weight_map\" object)",
                           path);
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next) {
        if (!cJSON_IsString(e)) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: weight_map[\"%.80s\"] is not a file name", path, e->string);
            goto done;
        }
        const char *f = e->valuestring;
        if (!*f || strchr(f, '/') || !strcmp(f, "..") || !strcmp(f, ".")) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: weight_map[\"%.80s\"] = \"%.80s\" is not a plain file name "
                               "in the index's folder", path, e->string, f);
            goto done;
        }
        if (++n_entries > MAX_INDEX_ENTRIES) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: weight_map has more than %d entries", path,
                               MAX_INDEX_ENTRIES);
            goto done;
        }
    }
    /* The distinct shard names, sorted (n log n, whatever the counts). */
    dir = g2f_path_dir(path);
    shards = g2f_alloc_array(n_entries ? n_entries : 1, sizeof *shards);
    if (!dir || !shards) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next) shards[n_shards++] = e->valuestring;
    qsort(shards, n_shards, sizeof *shards, str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n_shards; i++)
        if (!u || strcmp(shards[u - 1], shards[i])) shards[u++] = shards[i];
    n_shards = u;
    if (n_shards > MAX_SHARDS) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: more than %d shard files", path, MAX_SHARDS);
        goto done;
    }
    s->parts = calloc(n_shards ? n_shards : 1, sizeof *s->parts);
    sorted = calloc(n_shards ? n_shards : 1, sizeof *sorted);
    s->merged.tensors = calloc(n_entries ? n_entries : 1, sizeof *s->merged.tensors);
    if (!s->parts || !sorted || !s->merged.tensors) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n_shards; k++) {
        char *sp = g2f_path_join(dir, shards[k]);
        if (!sp) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
        st = part_open(sp, &s->parts[k], err);
        if (st == G2F_OK) st = g2f_path_list_add(&s->shards, sp, err);
        free(sp);
        if (st != G2F_OK) goto done;
        s->n_parts++;
        if (!(sorted[k] = sorted_tensors(part_table(&s->parts[k])))) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    uint64_t bytes = 0;
    for (const cJSON *e = map->child; e; e = e->next) {
        const char *const *sk = bsearch(&e->valuestring, shards, n_shards, sizeof *shards, str_cmp);
        size_t k = (size_t)(sk - shards);
        const g2f_tensor *t = find_sorted(sorted[k], part_table(&s->parts[k])->count, e->string);
        if (!t) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%.120s' is mapped to %s but that shard does not hold it",
                               path, e->string, shards[k]);
            goto done;
        }
        g2f_tensor *m = &s->merged.tensors[s->merged.count];
        *m = *t;
        m->name = g2f_strdup(t->name);
        if (!m->name) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
        s->merged.count++;
        bytes += t->nbytes; /* each below the file size: no overflow */
    }
    if (!(merged_sorted = sorted_tensors(&s->merged))) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 1; i < s->merged.count; i++) {
        if (strcmp(merged_sorted[i - 1]->name, merged_sorted[i]->name) == 0) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%.120s' appears twice in weight_map", path,
                               merged_sorted[i]->name);
            goto done;
        }
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *total = meta ? cJSON_GetObjectItemCaseSensitive(meta, "total_size") : NULL;
    if (cJSON_IsNumber(total) && total->valuedouble != (double)bytes) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: metadata.total_size is %.0f but the mapped tensors hold %llu bytes",
                           path, total->valuedouble, (unsigned long long)bytes);
        goto done;
    }
    s->format = s->n_parts ? s->parts[0].format : G2F_FORMAT_SAFETENSORS;
    snprintf(s->description, sizeof s->description, "%s, %zu shard%s", g2f_format_describe(s->format), s->n_parts,
             s->n_parts == 1 ? "" : "s");
    s->table = &s->merged;
done:
    for (size_t k = 0; sorted && k < n_shards; k++) free(sorted[k]);
    free(sorted);
    free(merged_sorted);
    free(shards);
    free(dir);
    cJSON_Delete(root);
    free(text);
    return st;
}

g2f_status g2f_source_open(const char *path, g2f_source **out, g2f_error *err) {
    static const char *const candidates[] = {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                                             "pytorch_model.bin.index.json"};
    *out = NULL;
    g2f_source *s = calloc(1, sizeof *s);
    if (!s) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    g2f_status st;
    if (g2f_path_is_dir(path)) {
        for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !s->path; i++) {
            char *p = g2f_path_join(path, candidates[i]);
            if (p && g2f_path_is_file(p)) s->path = p;
            else free(p);
        }
        if (!s->path && has_npy(path)) s->path = g2f_strdup(path);
        if (!s->path) {
            st = g2f_error_set(err, G2F_ERR_IO,
                               "%s: folder holds none of model.safetensors, model.safetensors.index.json, "
                               "pytorch_model.bin, pytorch_model.bin.index.json, *.npy",
                               path);
            goto fail;
        }
    } else {
        s->path = g2f_strdup(path);
        if (!s->path) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    if (looks_like_index(s->path)) {
        if ((st = open_index(s, s->path, err)) != G2F_OK) goto fail;
    } else {
        s->parts = calloc(1, sizeof *s->parts);
        if (!s->parts) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((st = part_open(s->path, &s->parts[0], err)) != G2F_OK) goto fail;
        s->n_parts = 1;
        s->format = s->parts[0].format;
        s->table = part_table(&s->parts[0]);
        snprintf(s->description, sizeof s->description, "%s", g2f_format_describe(s->format));
    }
    *out = s;
    return G2F_OK;
fail:
    g2f_source_close(s);
    return st;
}

const g2f_table *g2f_source_table(const g2f_source *s) { return s->table; }
g2f_format g2f_source_format(const g2f_source *s) { return s->format; }
const char *g2f_source_description(const g2f_source *s) { return s->description; }
const char *g2f_source_path(const g2f_source *s) { return s->path; }

void g2f_source_close(g2f_source *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_parts; i++) part_close(&s->parts[i]);
    free(s->parts);
    g2f_table_free(&s->merged);
    g2f_path_list_free(&s->shards);
    free(s->path);
    free(s);
}

/* ---- the files a source was read from ----------------------------------- */

g2f_status g2f_source_shards(const g2f_source *s, g2f_path_list *out, g2f_error *err) {
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < s->shards.count && st == G2F_OK; i++) st = g2f_path_list_add(out, s->shards.paths[i], err);
    return st;
}

g2f_status g2f_source_files(const g2f_source *s, g2f_path_list *out, g2f_error *err) {
    if (!g2f_path_is_dir(s->path)) {
        g2f_status st = g2f_path_list_add(out, s->path, err);
        return st == G2F_OK ? g2f_source_shards(s, out, err) : st;
    }
    /* a folder of .npy files: every *.npy, as the reader took them */
    DIR *d = opendir(s->path);
    if (!d) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot read the folder", s->path);
    g2f_status st = G2F_OK;
    for (struct dirent *e; st == G2F_OK && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n <= 4 || strcmp(e->d_name + n - 4, ".npy") != 0) continue;
        char *p = g2f_path_join(s->path, e->d_name);
        st = p ? g2f_path_list_add(out, p, err) : g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        free(p);
    }
    closedir(d);
    return st;
}
