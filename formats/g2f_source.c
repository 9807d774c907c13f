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
#include "g2f_json.h"
#include "g2f_llmc.h"
#include "g2f_llmc_state.h"
#include "g2f_names.h"
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
    g2f_llmc_state *llmc_state;
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






/* JSON text (a config.json, a tokenizer file) where a tensor file was
 * expected: its first byte after whitespace opens an object or an array.
 * Only asked when no reader recognises the bytes (a safetensors header
 * length never makes a valid header of this kind). */
static int looks_like_json(const unsigned char *b, uint64_t n) {
    uint64_t i = 0;
    while (i < n && i < 4096 && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
    return i < n && (b[i] == '{' || b[i] == '[');
}

static g2f_status part_open(const char *path, part *p, const g2f_source_hints *hints, g2f_error *err) {
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
    int json = p->format == G2F_FORMAT_UNKNOWN && looks_like_json(map.data, map.size);
    g2f_mapping_close(&map);
    if (json)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: is a JSON file, not a file of tensors (safetensors, torch.save, GGUF, llm.c, "
                             "NumPy); a model config is given with --config FILE",
                             path);
    switch (p->format) {
    case G2F_FORMAT_NPZ: return g2f_npz_open(path, &p->npz, err);
    case G2F_FORMAT_ZIP: return g2f_torch_open(path, &p->torch, err);
    case G2F_FORMAT_GGUF: return g2f_gguf_open(path, &p->gguf, err);
    case G2F_FORMAT_LLMC: return g2f_llmc_open(path, &p->llmc, err);
    case G2F_FORMAT_LLMC_STATE:
        return g2f_llmc_state_open(path, hints ? hints->llmc_state : NULL, &p->llmc_state, err);
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
    if (p->llmc_state) return g2f_llmc_state_table(p->llmc_state);
    return g2f_safetensors_table(p->st);
}

static void part_close(part *p) {
    g2f_safetensors_close(p->st);
    g2f_npz_close(p->npz);
    g2f_torch_close(p->torch);
    g2f_gguf_close(p->gguf);
    g2f_llmc_close(p->llmc);
    g2f_llmc_state_close(p->llmc_state);
}

static int looks_like_index(const char *path) {
    size_t n = strlen(path);
    return n > 11 && strcmp(path + n - 11, ".index.json") == 0;
}

/* ---- which file of a folder is meant ------------------------------------ */

/* The names HF gives a checkpoint, in order of precedence (an HF folder
 * often holds both model.safetensors and pytorch_model.bin). */
static const char *const hf_names[] = {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                                       "pytorch_model.bin.index.json"};

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0; /* at least one byte before the suffix */
}

/* "model-00001-of-00003.safetensors": a shard by HF's naming. */
static int looks_like_shard(const char *name) {
    const char *of = strstr(name, "-of-");
    if (!of || of - name < 6 || of[-6] != '-') return 0;
    for (int i = 1; i <= 5; i++)
        if (of[-i] < '0' || of[-i] > '9') return 0;
    for (int i = 4; i < 9; i++)
        if (of[i] < '0' || of[i] > '9') return 0;
    return of[9] == '.';
}

/* What a *.bin holds, from its first bytes: a torch.save zip, an llm.c
 * checkpoint or debug state, or neither. Only a regular file is read (a FIFO would block):
 * anything else, or a file that cannot be read, is a candidate, refused by
 * name when it is opened. */
typedef enum bin_kind { BIN_TORCH, BIN_LLMC, BIN_LLMC_STATE, BIN_OTHER, BIN_UNREADABLE } bin_kind;

static bin_kind probe_bin(const char *path) {
    g2f_mapping map;
    if (g2f_mapping_open(path, &map, NULL) != G2F_OK) return BIN_UNREADABLE;
    g2f_format f = g2f_format_probe(map.data, map.size);
    g2f_mapping_close(&map);
    return f == G2F_FORMAT_ZIP ? BIN_TORCH : f == G2F_FORMAT_LLMC ? BIN_LLMC
                                          : f == G2F_FORMAT_LLMC_STATE ? BIN_LLMC_STATE : BIN_OTHER;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Appends "a, b, c" (at most 8 names, then "and N more") to buf. */
static void list_names(char *buf, size_t n, char **names, size_t count) {
    size_t used = strlen(buf);
    for (size_t i = 0; i < count && used < n; i++) {
        if (i == 8) {
            snprintf(buf + used, n - used, ", and %zu more", count - i);
            return;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
    }
}

/* The file a folder stands for (docs/formats.md: Folders):
 *   1. the first HF name that exists and is not a folder;
 *   2. for a fixture, the folder itself when it holds *.npy files;
 *   3. else exactly one checkpoint / fixture file by its name and, for
 *      *.bin, its bytes: *.safetensors, *.pt, *.pth, *.bin holding a
 *      torch.save zip, (checkpoint) an llm.c file or (fixture) an llm.c
 *      debug state, *.gguf (checkpoint),
 *      *.npz (fixture), a shard index *.safetensors.index.json /
 *      *.bin.index.json (whose shards, named like HF's
 *      NAME-00001-of-00002.EXT, are then not candidates of their own).
 * None, or several: an error naming what the folder holds. The folder is
 * read once and its names sorted (n log n). */
static g2f_status find_in_folder(const char *dir, g2f_source_role role, char **out, g2f_error *err) {
    *out = NULL;
    for (size_t i = 0; i < sizeof hf_names / sizeof hf_names[0]; i++) {
        char *p = g2f_path_join(dir, hf_names[i]);
        if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        /* anything but a folder: a FIFO named model.safetensors is refused
         * by name when opened, not skipped */
        if (g2f_path_exists(p) && !g2f_path_is_dir(p)) {
            *out = p;
            return G2F_OK;
        }
        free(p);
    }
    int ckpt = role != G2F_SOURCE_FIXTURE, fixture = role != G2F_SOURCE_CHECKPOINT;
    DIR *d = opendir(dir);
    if (!d) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot read the folder", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    g2f_status st = G2F_OK;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            char **q = realloc(names, ncap * sizeof *q);
            if (!q) {
                st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
                break;
            }
            names = q;
            cap = ncap;
        }
        if (!(names[n] = g2f_strdup(e->d_name))) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (st != G2F_OK) goto done;
    if (n > 1) qsort(names, n, sizeof *names, name_cmp); /* names is NULL for an empty folder */
    int has_npy = 0, has_index = 0;
    for (size_t i = 0; i < n; i++) {
        has_npy |= ends_with(names[i], ".npy");
        has_index |= ends_with(names[i], ".safetensors.index.json") || ends_with(names[i], ".bin.index.json");
    }
    if (fixture && has_npy) { /* a folder of .npy files is a fixture */
        if (!(*out = g2f_strdup(dir))) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* candidates[0..nc) and the other entries, with a note for *.bin */
    char **cand = calloc(n ? n : 1, sizeof *cand), **other = calloc(n ? n : 1, sizeof *other);
    size_t nc = 0, no = 0;
    if (!cand || !other) {
        free(cand);
        free(other);
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i];
        int is = 0;
        char *p = g2f_path_join(dir, nm);
        if (!p) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            break;
        }
        if (g2f_path_is_dir(p)) {
            is = -1;
        } else if (has_index && looks_like_shard(nm)) {
            is = -1; /* the index's */
        } else if (ends_with(nm, ".safetensors") || ends_with(nm, ".pt") || ends_with(nm, ".pth")) {
            is = 1;
        } else if (ends_with(nm, ".safetensors.index.json") || ends_with(nm, ".bin.index.json")) {
            is = ckpt;
        } else if (ends_with(nm, ".gguf")) {
            is = ckpt;
        } else if (ends_with(nm, ".npz")) {
            is = fixture;
        } else if (ends_with(nm, ".bin")) {
            bin_kind k = probe_bin(p);
            is = k == BIN_UNREADABLE || k == BIN_TORCH || (ckpt && k == BIN_LLMC) ||
                 (fixture && k == BIN_LLMC_STATE);
            if (!is) {
                char *note = malloc(strlen(nm) + 64);
                if (note)
                    sprintf(note, "%s (%s)", nm,
                            k == BIN_LLMC         ? "an llm.c checkpoint, not a fixture"
                            : k == BIN_LLMC_STATE ? "an llm.c debug state, not a checkpoint"
                                                  : "neither a torch.save zip nor an llm.c file");
                free(names[i]);
                names[i] = note ? note : g2f_strdup("?");
                nm = names[i];
            }
        }
        free(p);
        if (is > 0) cand[nc++] = names[i];
        else if (is == 0 && nm) other[no++] = names[i];
    }
    const char *what = role == G2F_SOURCE_CHECKPOINT ? "checkpoint" : role == G2F_SOURCE_FIXTURE ? "fixture"
                                                                                                : "checkpoint or fixture";
    const char *kinds = role == G2F_SOURCE_CHECKPOINT
                            ? "*.safetensors, *.pt, *.pth, *.gguf, a *.bin that is a torch.save zip or an llm.c "
                              "file, a *.index.json shard index"
                        : role == G2F_SOURCE_FIXTURE
                            ? "*.safetensors, *.npz, *.pt, *.pth, a *.bin that is a torch.save zip or an llm.c "
                              "debug state, *.npy files"
                            : "*.safetensors, *.npz, *.pt, *.pth, *.gguf, a *.bin that is a torch.save zip or an "
                              "llm.c file, a *.index.json shard index, *.npy files";
    if (st == G2F_OK && nc == 1) {
        if (!(*out = g2f_path_join(dir, cand[0]))) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    } else if (st == G2F_OK && nc == 0) {
        char msg[G2F_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", no ? "it holds " : "it is empty");
        list_names(msg, sizeof msg, other, no);
        st = g2f_error_set(err, G2F_ERR_IO,
                           "%s: folder holds none of model.safetensors, model.safetensors.index.json, "
                           "pytorch_model.bin, pytorch_model.bin.index.json, nor any other %s file (%s); %s",
                           dir, what, kinds, msg);
    } else if (st == G2F_OK) {
        char msg[G2F_ERROR_MSG_MAX] = "";
        list_names(msg, sizeof msg, cand, nc);
        st = g2f_error_set(err, G2F_ERR_USAGE,
                           "%s: folder holds %zu %s files, so which one is meant is not clear: %s; name the file "
                           "instead of the folder",
                           dir, nc, what, msg);
    }
    free(cand);
    free(other);
done:
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* A shard: its name in the index, and the part (opened file) holding it. */
typedef struct shard {
    g2f_file_identity id;
    int known;      /* id was read (stat succeeded) */
    size_t part;    /* index into s->parts */
    size_t first;   /* the first shard (in name order) naming the same file */
} shard;

typedef struct id_ref {
    g2f_file_identity id;
    size_t k; /* the shard */
} id_ref;

static int id_ref_cmp(const void *a, const void *b) {
    const id_ref *x = a, *y = b;
    if (x->id.dev != y->id.dev) return x->id.dev < y->id.dev ? -1 : 1;
    if (x->id.ino != y->id.ino) return x->id.ino < y->id.ino ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Links: several shard names may reach one file (hard links, symlinks). Sets
 * sh[k].first to the first shard (in name order) naming the same file, by
 * device and inode, sorted (n log n), so each file is opened and mapped once. */
static g2f_status group_links(shard *sh, size_t n, g2f_error *err) {
    id_ref *order = g2f_alloc_array(n ? n : 1, sizeof *order);
    size_t m = 0;
    if (!order) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        sh[k].first = k;
        if (sh[k].known) order[m++] = (id_ref){sh[k].id, k};
    }
    qsort(order, m, sizeof *order, id_ref_cmp);
    for (size_t i = 1; i < m; i++)
        if (order[i].id.dev == order[i - 1].id.dev && order[i].id.ino == order[i - 1].id.ino)
            sh[order[i].k].first = sh[order[i - 1].k].first;
    free(order);
    return G2F_OK;
}

/* The tensors of the parts that weight_map does not name (mapped[part][i]
 * 0): a loader that reads whole shards (transformers does) holds them too,
 * so they join the table, compared like any other; one whose name the
 * table already has (a second copy of a mapped tensor, or the same name in
 * two shards) is ambiguous, and refused. */
static g2f_status merge_unmapped(g2f_source *s, const unsigned char *const *mapped, const char *path,
                                 g2f_error *err) {
    size_t extra = 0, n = s->merged.count;
    for (size_t k = 0; k < s->n_parts; k++)
        for (size_t i = 0; i < part_table(&s->parts[k])->count; i++) extra += !mapped[k][i];
    if (!extra) return G2F_OK;
    g2f_tensor *t = realloc(s->merged.tensors, (n + extra) * sizeof *t);
    if (!t) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    s->merged.tensors = t;
    for (size_t k = 0; k < s->n_parts; k++) {
        const g2f_table *pt = part_table(&s->parts[k]);
        for (size_t i = 0; i < pt->count; i++) {
            if (mapped[k][i]) continue;
            g2f_tensor *m = &s->merged.tensors[s->merged.count];
            *m = pt->tensors[i];
            if (!(m->name = g2f_strdup(pt->tensors[i].name))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            s->merged.count++;
        }
    }
    g2f_name_ref *r = g2f_names_of_table(&s->merged);
    if (!r) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    size_t d = g2f_names_find_dup(r, s->merged.count);
    g2f_status st = d ? g2f_error_set(err, G2F_ERR_FORMAT,
                                      "%s: tensor '%.120s' is in the shards twice, once where weight_map does not "
                                      "list it: which one a loader reads is not defined",
                                      path, s->merged.tensors[r[d].index].name)
                      : G2F_OK;
    free(r);
    return st;
}

static g2f_status open_index(g2f_source *s, const char *path, g2f_error *err) {
    char *text = NULL, *dir = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    g2f_name_ref *names = NULL;   /* the distinct shard names, sorted */
    shard *sh = NULL;
    g2f_name_ref **by_name = NULL; /* per part, its tensors sorted by name */
    unsigned char **mapped = NULL; /* per part, which of its tensors weight_map names */
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
    /* No key twice in any object: weight_map's keys are the tensor names,
     * so each tensor is mapped to one shard (Python would keep the last). */
    const cJSON *dup_obj;
    const char *dup_key;
    if ((st = g2f_json_find_duplicate_key(root, &dup_obj, &dup_key, path, err)) != G2F_OK) goto done;
    if (dup_obj) {
        st = dup_obj == map ? g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%.120s' appears twice in weight_map",
                                            path, dup_key)
                            : g2f_error_set(err, G2F_ERR_FORMAT, "%s: key \"%.120s\" appears twice in one object",
                                            path, dup_key);
        goto done;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *total = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "total_size") : NULL;
    uint64_t total_size = 0;
    if (meta && !cJSON_IsObject(meta)) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"metadata\" is not an object", path);
        goto done;
    }
    if (total && !g2f_json_u64(total, &total_size)) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: metadata.total_size is not a non-negative integer below 2^53",
                           path);
        goto done;
    }
    /* The distinct shard names, sorted (n log n, whatever the counts). */
    dir = g2f_path_dir(path);
    names = g2f_alloc_array(n_entries ? n_entries : 1, sizeof *names);
    if (!dir || !names) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next, n_shards++) names[n_shards] = g2f_name_ref_of(e->valuestring, 0);
    g2f_names_sort(names, n_shards);
    size_t u = 0;
    for (size_t i = 0; i < n_shards; i++)
        if (!u || names[u - 1].len != names[i].len || memcmp(names[u - 1].s, names[i].s, names[i].len))
            names[u++] = names[i];
    n_shards = u;
    if (n_shards > MAX_SHARDS) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: more than %d shard files", path, MAX_SHARDS);
        goto done;
    }
    sh = calloc(n_shards ? n_shards : 1, sizeof *sh);
    s->parts = calloc(n_shards ? n_shards : 1, sizeof *s->parts);
    by_name = calloc(n_shards ? n_shards : 1, sizeof *by_name);
    mapped = calloc(n_shards ? n_shards : 1, sizeof *mapped);
    s->merged.tensors = calloc(n_entries ? n_entries : 1, sizeof *s->merged.tensors);
    if (!sh || !s->parts || !by_name || !mapped || !s->merged.tensors) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n_shards; k++) {
        names[k].index = k;
        char *sp = g2f_path_join(dir, names[k].s);
        if (!sp) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
        sh[k].known = g2f_file_id(sp, &sh[k].id, NULL) == G2F_OK; /* else part_open says why */
        free(sp);
    }
    if ((st = group_links(sh, n_shards, err)) != G2F_OK) goto done;
    for (size_t k = 0; k < n_shards; k++) {
        if (sh[k].first != k) { /* another name of a file already open */
            sh[k].part = sh[sh[k].first].part;
            continue;
        }
        char *sp = g2f_path_join(dir, names[k].s);
        if (!sp) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
        st = part_open(sp, &s->parts[s->n_parts], NULL, err);
        if (st == G2F_OK) st = g2f_path_list_add(&s->shards, sp, err);
        free(sp);
        if (st != G2F_OK) goto done;
        sh[k].part = s->n_parts++;
        size_t cnt = part_table(&s->parts[sh[k].part])->count;
        if (!(mapped[sh[k].part] = calloc(cnt ? cnt : 1, 1)) ||
            !(by_name[sh[k].part] = g2f_names_of_table(part_table(&s->parts[sh[k].part])))) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    uint64_t bytes = 0;
    for (const cJSON *e = map->child; e; e = e->next) {
        const g2f_name_ref *sk = g2f_names_find(names, n_shards, e->valuestring, strlen(e->valuestring));
        const shard *k = &sh[sk->index];
        const g2f_table *pt = part_table(&s->parts[k->part]);
        const g2f_name_ref *hit = g2f_names_find(by_name[k->part], pt->count, e->string, strlen(e->string));
        if (!hit) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%.120s' is mapped to %s but that shard does not hold it",
                               path, e->string, sk->s);
            goto done;
        }
        const g2f_tensor *t = &pt->tensors[hit->index];
        mapped[k->part][hit->index] = 1;
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
    /* Tensor names are unique: they are weight_map's keys, checked above;
     * then the shards' tensors it does not list (merge_unmapped). */
    if (total && total_size != bytes) {
        st = g2f_error_set(err, G2F_ERR_FORMAT,
                           "%s: metadata.total_size is %llu but the mapped tensors hold %llu bytes", path,
                           (unsigned long long)total_size, (unsigned long long)bytes);
        goto done;
    }
    if ((st = merge_unmapped(s, (const unsigned char *const *)mapped, path, err)) != G2F_OK) goto done;
    s->format = s->n_parts ? s->parts[0].format : G2F_FORMAT_SAFETENSORS;
    if (s->n_parts == n_shards)
        snprintf(s->description, sizeof s->description, "%s, %zu shard%s", g2f_format_describe(s->format),
                 s->n_parts, s->n_parts == 1 ? "" : "s");
    else
        snprintf(s->description, sizeof s->description, "%s, %zu shard%s under %zu names",
                 g2f_format_describe(s->format), s->n_parts, s->n_parts == 1 ? "" : "s", n_shards);
    s->table = &s->merged;
done:
    for (size_t k = 0; by_name && k < s->n_parts; k++) free(by_name[k]);
    for (size_t k = 0; mapped && k < s->n_parts; k++) free(mapped[k]);
    free(mapped);
    free(by_name);
    free(sh);
    free(names);
    free(dir);
    cJSON_Delete(root);
    free(text);
    return st;
}

g2f_status g2f_source_open(const char *path, g2f_source **out, g2f_error *err) {
    return g2f_source_open_as(path, G2F_SOURCE_ANY, out, err);
}

g2f_status g2f_source_open_as(const char *path, g2f_source_role role, g2f_source **out, g2f_error *err) {
    return g2f_source_open_hinted(path, role, NULL, out, err);
}

g2f_status g2f_source_open_hinted(const char *path, g2f_source_role role, const g2f_source_hints *hints,
                                  g2f_source **out, g2f_error *err) {
    *out = NULL;
    g2f_source *s = calloc(1, sizeof *s);
    if (!s) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    g2f_status st;
    if (g2f_path_is_dir(path)) {
        if ((st = find_in_folder(path, role, &s->path, err)) != G2F_OK) goto fail;
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
        if ((st = part_open(s->path, &s->parts[0], hints, err)) != G2F_OK) goto fail;
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

/* The mapping a reader handle keeps (g2f_mapped_table), or NULL. */
static const g2f_mapping *part_mapping(const part *pt) {
    const g2f_mapped_table *t = pt->st ? pt->st : pt->torch ? pt->torch : pt->gguf ? pt->gguf : pt->llmc;
    return t ? &t->map : NULL;
}

const g2f_mapping *g2f_source_mapping_of(const g2f_source *s, const void *p, uint64_t len) {
    uintptr_t q = (uintptr_t)p;
    for (size_t i = 0; s && p && i < s->n_parts; i++) { /* addresses as integers: p may lie in another object */
        const g2f_mapping *m = part_mapping(&s->parts[i]);
        uintptr_t b = m ? (uintptr_t)m->data : 0;
        if (b && q >= b && len <= m->size && (uint64_t)(q - b) <= m->size - len) return m;
    }
    return NULL;
}
