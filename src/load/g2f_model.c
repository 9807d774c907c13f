/* g2f_model: opening a checkpoint: its FFN tensors found under one naming
 * scheme, the shapes and layout decided, the config read; see g2f_model.h
 * (API) and g2f_model_impl.h (how the loader's files share the work). */
#include "g2f_model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_config.h"
#include "g2f_digest.h"
#include "g2f_file.h"
#include "g2f_model_impl.h"

/* ---- the FFN tensors, the shapes and the layout ------------------------- */

/* n_embd from tensors other than the FFN's, 0 when none says. */
static size_t embd_hint(const g2f_model *m, const g2f_table *t) {
    const g2f_scheme *S = g2f_model_scheme(m);
    char name[256];
    snprintf(name, sizeof name, "%s%s.0.%s", m->prefix, S->block, S->ln2);
    const g2f_tensor *x = g2f_table_find(t, name);
    if (x && x->ndim == 1) return (size_t)x->shape[0];
    static const char *const embeddings[] = {"wte.weight", "tok_emb.weight", "token_embd.weight", "embed.W_E"};
    for (size_t i = 0; i < sizeof embeddings / sizeof embeddings[0]; i++) {
        snprintf(name, sizeof name, "%s%s", m->prefix, embeddings[i]);
        x = g2f_table_find(t, name);
        if (x && x->ndim == 2) return (size_t)x->shape[1];
    }
    return 0;
}

static g2f_status find_layers(g2f_model *m, const g2f_table *t, g2f_error *err) {
    const char *file = m->path;
    size_t l, plen, first = (size_t)-1;
    int sc;
    for (size_t i = 0; i < t->count; i++) {
        int k = g2f_naming_match_ffn(t->tensors[i].name, &sc, &l, &plen);
        if (k == -2)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': layer index is %d or more", file,
                                 t->tensors[i].name, G2F_NAMING_MAX_LAYERS);
        if (k < 0) continue;
        if (first == (size_t)-1) {
            first = i;
            m->scheme = sc;
            m->prefix = malloc(plen + 1);
            if (!m->prefix) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            memcpy(m->prefix, t->tensors[i].name, plen);
            m->prefix[plen] = '\0';
        } else if (sc != m->scheme || plen != strlen(m->prefix) || strncmp(t->tensors[i].name, m->prefix, plen)) {
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: holds two sets of FFN tensors ('%s' and '%s')", file,
                                 t->tensors[first].name, t->tensors[i].name);
        }
    }
    if (first == (size_t)-1)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: no GPT-2 FFN tensors (h.N.mlp.c_fc.weight, blocks.N.mlp.c_fc.weight, "
                             "blocks.N.mlp.W_in or blk.N.ffn_up.weight) among its %zu tensors",
                             file, t->count);
    size_t n_layer = 0;
    for (size_t i = 0; i < t->count; i++) {
        int k = g2f_naming_match_ffn(t->tensors[i].name, &sc, &l, &plen);
        if (k >= 0 && l + 1 > n_layer) n_layer = l + 1;
    }
    m->layers = calloc(n_layer, sizeof *m->layers);
    if (!m->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->count; i++) {
        int k = g2f_naming_match_ffn(t->tensors[i].name, &sc, &l, &plen);
        if (k >= 0) m->layers[l][k] = &t->tensors[i];
    }
    m->info.n_layer = n_layer;
    m->info.naming = g2f_model_scheme(m)->name;
    const g2f_scheme *S = g2f_model_scheme(m);
    for (size_t L = 0; L < n_layer; L++) {
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            const g2f_tensor *x = m->layers[L][k];
            int is_bias = k == G2F_FFN_FC_B || k == G2F_FFN_PROJ_B;
            if (!x && !is_bias)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s%s.%zu.%s%s' is missing", file, m->prefix,
                                     S->block, L, S->middle, S->suffix[k]);
            if (is_bias && (!x) != (!m->layers[0][k]))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s%s.%zu.%s%s' is %s but layer 0 %s one", file,
                                     m->prefix, S->block, L, S->middle, S->suffix[k], x ? "present" : "missing",
                                     x ? "has no" : "has");
            if (x && !g2f_dtype_is_convertible(x->dtype))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s is not F32, F16, BF16 or F64%s",
                                     file, x->name, g2f_tensor_type_name(x),
                                     x->dtype == G2F_DTYPE_OPAQUE
                                         ? " nor a quantized type gpt2ffn reads (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                                           "Q4_K, Q5_K, Q6_K)"
                                         : "");
            if (x && x->ndim != (is_bias ? 1u : 2u)) {
                char sh[128];
                g2f_shape_format(x, sh, sizeof sh);
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected %s", file, x->name,
                                     sh, is_bias ? "1 dimension" : "2 dimensions");
            }
        }
    }
    return G2F_OK;
}

static g2f_status decide_shapes(g2f_model *m, const g2f_table *t, g2f_error *err) {
    g2f_model_info *in = &m->info;
    const g2f_tensor *fc = m->layers[0][G2F_FFN_FC_W], *pj = m->layers[0][G2F_FFN_PROJ_W];
    uint64_t a = fc->shape[0], b = fc->shape[1];
    char s1[64], s2[64];
    g2f_shape_format(fc, s1, sizeof s1);
    g2f_shape_format(pj, s2, sizeof s2);
    if (pj->shape[0] != b || pj->shape[1] != a || a == 0 || b == 0)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: layer 0: c_fc.weight %s and c_proj.weight %s are not transposes of each other",
                             in->path, s1, s2);
    size_t hint = embd_hint(m, t);
    if (hint && hint != a && hint != b)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: c_fc.weight %s does not match n_embd %zu of ln_2/wte",
                             in->path, s1, hint);
    const char *why;
    g2f_layout conv = g2f_naming_conventional_layout(g2f_source_format(m->src), m->scheme, m->prefix, &why);
    if (a == b) {
        in->layout = conv;
        snprintf(m->layout_why, sizeof m->layout_why, "n_inner == n_embd, so the shapes cannot tell: %s", why);
        in->layout_source = m->layout_why;
    } else if (hint) {
        in->layout = hint == a ? G2F_LAYOUT_CONV1D : G2F_LAYOUT_LINEAR;
        in->layout_source = "from c_fc.weight's shape and n_embd of ln_2.weight/wte.weight";
    } else if (b == 4 * a || a == 4 * b) {
        in->layout = b == 4 * a ? G2F_LAYOUT_CONV1D : G2F_LAYOUT_LINEAR;
        in->layout_source = "from c_fc.weight's shape, taking n_inner = 4 n_embd";
    } else {
        in->layout = conv;
        snprintf(m->layout_why, sizeof m->layout_why, "shapes alone cannot tell: %s", why);
        in->layout_source = m->layout_why;
    }
    in->n_embd = (size_t)(in->layout == G2F_LAYOUT_CONV1D ? a : b);
    in->n_inner = (size_t)(in->layout == G2F_LAYOUT_CONV1D ? b : a);
    in->dtype = fc->dtype;
    in->has_fc_bias = m->layers[0][G2F_FFN_FC_B] != NULL;
    in->has_proj_bias = m->layers[0][G2F_FFN_PROJ_B] != NULL;
    for (size_t L = 0; L < in->n_layer; L++) {
        const g2f_tensor *x;
        if ((x = m->layers[L][G2F_FFN_FC_W])->shape[0] != a || x->shape[1] != b ||
            (x = m->layers[L][G2F_FFN_PROJ_W])->shape[0] != b || x->shape[1] != a ||
            ((x = m->layers[L][G2F_FFN_FC_B]) && x->shape[0] != in->n_inner) ||
            ((x = m->layers[L][G2F_FFN_PROJ_B]) && x->shape[0] != in->n_embd)) {
            char sh[64];
            g2f_shape_format(x, sh, sizeof sh);
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: tensor '%s': shape %s does not match layer 0 (n_embd %zu, n_inner %zu)",
                                 in->path, x->name, sh, in->n_embd, in->n_inner);
        }
    }
    return G2F_OK;
}

/* ---- open and close ------------------------------------------------------ */

/* The config (given, or found beside the checkpoint) and what it says;
 * then n_head from the file's own words when the config does not say. */
static g2f_status read_config(g2f_model *m, const char *dir, const char *given, g2f_error *err) {
    m->info.config_source = m->config_why;
    g2f_status s = g2f_config_find(dir, given, m->config_why, sizeof m->config_why, &m->config_path, err);
    if (s == G2F_OK && m->config_path) {
        m->info.config_path = m->config_path;
        s = g2f_config_check(m->config_path, &m->info, &m->activation, err);
    }
    if (s == G2F_OK) s = g2f_config_gguf_words(g2f_source_table(m->src), g2f_source_format(m->src), &m->info, err);
    if (s != G2F_OK) return s;
    const g2f_scheme *S = g2f_model_scheme(m);
    const g2f_tensor *wq = NULL; /* TransformerLens: W_Q's shape tells n_head */
    if (S->split_attn[0]) {
        char name[512];
        snprintf(name, sizeof name, "%s%s.0.%s", m->prefix, S->block, S->split_attn[0]);
        wq = g2f_table_find(g2f_source_table(m->src), name);
    }
    if (!m->info.n_head)
        return g2f_config_head_count(g2f_source_table(m->src), g2f_source_format(m->src), wq, &m->info, err);
    /* config.json says; the file's own word (GGUF, llm.c, a trainer's dict, TransformerLens' shapes) must agree */
    g2f_model_info own = m->info;
    own.n_head = 0;
    if ((s = g2f_config_head_count(g2f_source_table(m->src), g2f_source_format(m->src), wq, &own, err)) != G2F_OK)
        return s;
    if (own.n_head && own.n_head != m->info.n_head)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s is %zu but %s is %zu: which one the model runs is not defined",
                             m->info.path, m->info.n_head_source, m->info.n_head, own.n_head_source, own.n_head);
    return G2F_OK;
}

g2f_status g2f_model_open(const char *path, const char *config_path, g2f_model **out, g2f_error *err) {
    *out = NULL;
    g2f_model *m = calloc(1, sizeof *m);
    if (!m) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    g2f_status s = G2F_OK;
    char *dir = NULL;
    if ((s = g2f_source_open_as(path, G2F_SOURCE_CHECKPOINT, &m->src, err)) != G2F_OK) goto fail;
    m->path = g2f_strdup(g2f_source_path(m->src));
    dir = g2f_path_is_dir(path) ? g2f_strdup(path) : g2f_path_dir(path);
    if (!m->path || !dir) {
        s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto fail;
    }
    m->info.path = m->path;
    m->info.format = g2f_source_description(m->src);
    m->info.ln_eps = 1e-5; /* HF GPT2Config's default, unless config.json says */
    m->info.config_vocab = m->info.config_n_positions = -1;
    const g2f_table *t = g2f_source_table(m->src);
    if ((s = find_layers(m, t, err)) != G2F_OK || (s = decide_shapes(m, t, err)) != G2F_OK) goto fail;
    if (!(m->by_name = g2f_names_of_table(t))) {
        s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto fail;
    }
    m->info.prefix = m->prefix;
    if ((s = read_config(m, dir, config_path, err)) != G2F_OK) goto fail;
    g2f_config_file_gelu(t, g2f_source_format(m->src), &m->info);
    g2f_model_note_ends(m);
    if (m->info.config_untied && m->info.has_wte && !m->info.has_lm_head) { /* HF would make a new, random head */
        s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tie_word_embeddings is false but %s stores no output head "
                          "(lm_head.weight): the model's logits are not defined", m->info.config_path, m->info.path);
        goto fail;
    }
    free(dir);
    *out = m;
    return G2F_OK;
fail:
    free(dir);
    g2f_model_close(m);
    return s;
}

const g2f_model_info *g2f_model_get_info(const g2f_model *m) { return &m->info; }

size_t g2f_model_ffn_params(const g2f_model *m) {
    const g2f_model_info *in = &m->info;
    return 2 * in->n_embd * in->n_inner + (in->has_fc_bias ? in->n_inner : 0) +
           (in->has_proj_bias ? in->n_embd : 0);
}

void g2f_model_close(g2f_model *m) {
    if (!m) return;
    g2f_source_close(m->src);
    free(m->layers);
    free(m->path);
    free(m->config_path);
    free(m->prefix);
    free(m->activation);
    free(m->by_name);
    free(m);
}

/* ---- the files read, and the checkpoint's digest ----------------------- */

g2f_status g2f_model_files(const g2f_model *m, g2f_path_list *out, g2f_error *err) {
    g2f_status st = g2f_source_files(m->src, out, err);
    if (st == G2F_OK && m->config_path) st = g2f_path_list_add(out, m->config_path, err);
    return st;
}

g2f_status g2f_model_sha256(const g2f_model *m, char hex[65], g2f_error *err) {
    return g2f_digest_checkpoint(m->src, hex, err);
}

/* ---- names looked up --------------------------------------------------- */

/* rest with its last ".weight" / ".bias" as ".gamma" / ".beta" into buf: the legacy LayerNorm names
 * HF's loader renames on load (and nanoGPT-style code that names its own); 0 when rest ends otherwise. */
static int legacy_ln_name(const char *rest, char *buf, size_t n) {
    size_t len = strlen(rest);
    if (len > 7 && !strcmp(rest + len - 7, ".weight")) return snprintf(buf, n, "%.*s.gamma", (int)(len - 7), rest) < (int)n;
    if (len > 5 && !strcmp(rest + len - 5, ".bias")) return snprintf(buf, n, "%.*s.beta", (int)(len - 5), rest) < (int)n;
    return 0;
}

static const g2f_tensor *find_exact(const g2f_model *m, const char *rest, int layer);

const g2f_tensor *g2f_model_find(const g2f_model *m, const char *rest, int layer) {
    const g2f_tensor *x = find_exact(m, rest, layer);
    char legacy[256];
    if (!x && strstr(rest, "ln") && legacy_ln_name(rest, legacy, sizeof legacy)) x = find_exact(m, legacy, layer);
    return x;
}

static const g2f_tensor *find_exact(const g2f_model *m, const char *rest, int layer) {
    const g2f_table *t = g2f_source_table(m->src);
    char name[512];
    for (int root = 0; root < 2; root++) {
        const char *pre = root ? "" : m->prefix;
        if (layer >= 0)
            snprintf(name, sizeof name, "%s%s.%d.%s", pre, g2f_model_scheme(m)->block, layer, rest);
        else
            snprintf(name, sizeof name, "%s%s", pre, rest);
        const g2f_name_ref *r = g2f_names_find(m->by_name, t->count, name, strlen(name));
        if (r) return &t->tensors[r->index];
        if (!*m->prefix) break;
    }
    return NULL;
}

/* A top-level tensor after the model's prefix or any shorter one (the
 * prefix cut after one of its dots): nanoGPT's "_orig_mod.lm_head.weight"
 * beside "_orig_mod.transformer.h.0...", HF's "lm_head.weight" at the root. */
const g2f_tensor *g2f_model_find_end(const g2f_model *m, int role) {
    const g2f_table *t = g2f_source_table(m->src);
    size_t plen = strlen(m->prefix);
    const char *const *names = g2f_model_scheme(m)->ends[role];
    char name[512];
    for (size_t cut = plen + 1; cut-- > 0;) {
        if (cut && m->prefix[cut - 1] != '.') continue;
        for (int i = 0; names[i]; i++) {
            int n = snprintf(name, sizeof name, "%.*s%s", (int)cut, m->prefix, names[i]);
            if (n < 0 || (size_t)n >= sizeof name) continue;
            const g2f_name_ref *r = g2f_names_find(m->by_name, t->count, name, (size_t)n);
            if (r) return &t->tensors[r->index];
        }
    }
    return NULL;
}

