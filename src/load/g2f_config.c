/* g2f_config: config discovery and cross-checks, n_head from the file, the
 * GELU a file implies; see g2f_config.h. */
#include "g2f_config.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_file.h"
#include "g2f_json.h"
#include "g2f_torch.h"

#define CONFIG_MAX_BYTES (1u << 20)

int g2f_activation_to_gelu(const char *a, g2f_gelu *out) {
    if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh") || !strcmp(a, "gelu_fast")) {
        *out = G2F_GELU_TANH;
        return 1;
    }
    if (!strcmp(a, "gelu")) {
        *out = G2F_GELU_ERF;
        return 1;
    }
    return 0;
}

static g2f_status json_size_field(const cJSON *root, const char *key, const char *alias, const char *cfg,
                                  long *out, g2f_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v && alias) v = cJSON_GetObjectItemCaseSensitive(root, alias);
    *out = -1;
    if (!v || cJSON_IsNull(v)) return G2F_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 1 && d <= 1e9) || (double)(long)d != d)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"%s\" must be a positive integer", cfg, key);
    *out = (long)d;
    return G2F_OK;
}

/* The config's JSON object (the caller deletes it): refused when it is not
 * one, or when an object in it holds a key twice. */
static g2f_status read_config_json(const char *cfg, cJSON **out, g2f_error *err) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    g2f_status s = g2f_read_small_file(cfg, CONFIG_MAX_BYTES, &text, &len, err);
    if (s != G2F_OK) return s;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    free(text);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a JSON object", cfg);
    }
    /* Python's json takes the last of two equal keys, cJSON the first: a
     * config read one way by transformers and another here is refused. */
    const cJSON *dup_obj;
    const char *dup_key;
    if ((s = g2f_json_find_duplicate_key(root, &dup_obj, &dup_key, cfg, err)) == G2F_OK && dup_obj)
        s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: key \"%.80s\" appears twice in one object", cfg, dup_key);
    if (s != G2F_OK) {
        cJSON_Delete(root);
        return s;
    }
    *out = root;
    return G2F_OK;
}

/* n_layer, n_embd and n_inner against the tensors'. */
static g2f_status check_sizes(const cJSON *root, const char *cfg, const g2f_model_info *in, g2f_error *err) {
    long n_layer, n_embd, n_inner;
    g2f_status s;
    if ((s = json_size_field(root, "n_layer", "num_hidden_layers", cfg, &n_layer, err)) != G2F_OK ||
        (s = json_size_field(root, "n_embd", "hidden_size", cfg, &n_embd, err)) != G2F_OK ||
        (s = json_size_field(root, "n_inner", NULL, cfg, &n_inner, err)) != G2F_OK)
        return s;
    if (n_embd > 0 && n_inner < 0) n_inner = 4 * n_embd; /* HF: n_inner null means 4 * n_embd */
    if (n_layer > 0 && (size_t)n_layer != in->n_layer)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_layer is %ld but %s holds FFN weights for %zu layers", cfg,
                             n_layer, in->path, in->n_layer);
    if (n_embd > 0 && (size_t)n_embd != in->n_embd)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_embd is %ld but the FFN weights in %s have n_embd %zu", cfg,
                             n_embd, in->path, in->n_embd);
    if (n_inner > 0 && (size_t)n_inner != in->n_inner)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_inner is %ld but the FFN weights in %s have n_inner %zu", cfg,
                             n_inner, in->path, in->n_inner);
    return G2F_OK;
}

/* n_head (it must divide n_embd), vocab_size and n_positions. */
static g2f_status read_heads_and_ends(const cJSON *root, const char *cfg, g2f_model_info *in, g2f_error *err) {
    long n_head = -1;
    g2f_status s = json_size_field(root, "n_head", "num_attention_heads", cfg, &n_head, err);
    if (s != G2F_OK) return s;
    if (n_head > 0) {
        if ((size_t)n_head > in->n_embd || in->n_embd % (size_t)n_head)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_head %ld does not divide n_embd %zu", cfg, n_head,
                                 in->n_embd);
        in->n_head = (size_t)n_head;
        in->n_head_source = "config.json n_head";
    }
    long vocab = -1, n_pos = -1;
    if ((s = json_size_field(root, "vocab_size", NULL, cfg, &vocab, err)) != G2F_OK ||
        (s = json_size_field(root, "n_positions", "max_position_embeddings", cfg, &n_pos, err)) != G2F_OK)
        return s;
    in->config_vocab = vocab;
    in->config_n_positions = n_pos;
    in->n_positions_said_by = cfg;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    in->config_untied = cJSON_IsFalse(tie);
    in->attn_unscaled = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "scale_attn_weights"));
    in->attn_by_layer = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "scale_attn_by_inverse_layer_idx"));
    return G2F_OK;
}

static g2f_status read_ln_eps(const cJSON *root, const char *cfg, g2f_model_info *in, g2f_error *err) {
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    if (!eps || cJSON_IsNull(eps)) return G2F_OK;
    if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0 && eps->valuedouble < 1))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"layer_norm_epsilon\" must be a number in (0, 1)", cfg);
    in->ln_eps = eps->valuedouble;
    in->config_has_ln_eps = 1;
    return G2F_OK;
}

/* activation_function: a GELU form, the config's default. */
static g2f_status read_activation(const cJSON *root, const char *cfg, g2f_model_info *in, char **activation,
                                  g2f_error *err) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    if (!act || cJSON_IsNull(act)) return G2F_OK;
    if (!cJSON_IsString(act))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"activation_function\" must be a string", cfg);
    if (!g2f_activation_to_gelu(act->valuestring, &in->config_gelu))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: activation_function \"%.40s\" is not a GELU (expected gelu_new, "
                             "gelu_pytorch_tanh, gelu_fast or gelu)",
                             cfg, act->valuestring);
    if (!(*activation = g2f_strdup(act->valuestring))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    in->config_has_gelu = 1;
    in->config_activation = *activation;
    return G2F_OK;
}

g2f_status g2f_config_check(const char *cfg, g2f_model_info *in, char **activation, g2f_error *err) {
    *activation = NULL;
    cJSON *root;
    g2f_status s = read_config_json(cfg, &root, err);
    if (s != G2F_OK) return s;
    if ((s = check_sizes(root, cfg, in, err)) == G2F_OK && (s = read_heads_and_ends(root, cfg, in, err)) == G2F_OK &&
        (s = read_ln_eps(root, cfg, in, err)) == G2F_OK)
        s = read_activation(root, cfg, in, activation, err);
    cJSON_Delete(root);
    return s;
}

/* ---- n_head from the file ---------------------------------------------- */

/* A positive decimal size from the table's metadata: 1 with *out set, 0
 * when absent, -1 when present but not a size. */
static int meta_size(const g2f_table *t, const char *key, size_t *out) {
    const char *v = g2f_table_meta(t, key);
    if (!v) return 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *v == '-' || *end || n == 0 || n > 1000000000ull) return -1;
    *out = (size_t)n;
    return 1;
}

/* n_head when config.json does not say: GGUF's gpt2.attention.head_count,
 * llm.c's header, a torch checkpoint's nanoGPT model_args or config dict,
 * TransformerLens' W_Q shape (n_head, d_model, d_head). The torch dicts are
 * the trainer's own words about this model, so one that contradicts the
 * tensors is an error, as config.json's would be; the GGUF and llm.c
 * readers have validated theirs. */
g2f_status g2f_config_head_count(const g2f_table *t, g2f_format f, const g2f_tensor *tl_wq, g2f_model_info *in,
                                 g2f_error *err) {
    static const struct { const char *key, *source; } keys[] = {
        {"gpt2.attention.head_count", "GGUF gpt2.attention.head_count"}, {"num_heads", "the llm.c header"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = g2f_table_meta(t, keys[i].key);
        if (!v) continue;
        /* the file's own word: a value that cannot be this model's head
         * count is refused, as config.json's n_head is (never ignored) */
        char *end;
        unsigned long long n = *v == '-' ? 0 : strtoull(v, &end, 10);
        if (!*v || *v == '-' || *end || n == 0 || n > in->n_embd || in->n_embd % n)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s is %.24s: it must be a positive integer dividing n_embd %zu",
                                 in->path, keys[i].source + (strncmp(keys[i].source, "the ", 4) ? 0 : 4), v,
                                 in->n_embd);
        in->n_head = (size_t)n;
        in->n_head_source = keys[i].source;
        return G2F_OK;
    }
    if (f == G2F_FORMAT_ZIP) {
        static const struct { const char *head, *embd, *layer, *what, *source; } dicts[] = {
            {G2F_TORCH_META_ARGS_N_HEAD, G2F_TORCH_META_ARGS_N_EMBD, G2F_TORCH_META_ARGS_N_LAYER, "model_args",
             "nanoGPT model_args n_head"},
            {G2F_TORCH_META_CONFIG_N_HEAD, G2F_TORCH_META_CONFIG_N_EMBD, G2F_TORCH_META_CONFIG_N_LAYER, "config",
             "the checkpoint's config n_head"}};
        for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
            size_t n_head = 0, n_embd = 0, n_layer = 0;
            int h = meta_size(t, dicts[i].head, &n_head), e = meta_size(t, dicts[i].embd, &n_embd);
            int l = meta_size(t, dicts[i].layer, &n_layer);
            if (h < 0 || e < 0 || l < 0)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['%s'] must be a positive integer", in->path,
                                     dicts[i].what, h < 0 ? "n_head" : e < 0 ? "n_embd" : "n_layer");
            if (e > 0 && n_embd != in->n_embd)
                return g2f_error_set(err, G2F_ERR_FORMAT,
                                     "%s: %s['n_embd'] is %zu but the FFN weights have n_embd %zu", in->path,
                                     dicts[i].what, n_embd, in->n_embd);
            if (l > 0 && n_layer != in->n_layer)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['n_layer'] is %zu but it holds FFN weights for %zu layers",
                                     in->path, dicts[i].what, n_layer, in->n_layer);
            if (!h) continue;
            if (n_head > in->n_embd || in->n_embd % n_head)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['n_head'] %zu does not divide n_embd %zu",
                                     in->path, dicts[i].what, n_head, in->n_embd);
            in->n_head = n_head;
            in->n_head_source = dicts[i].source;
            return G2F_OK;
        }
    }
    const g2f_tensor *q = tl_wq;
    if (q && q->ndim == 3 && q->shape[0] > 0 && q->shape[1] == in->n_embd && q->shape[0] * q->shape[2] == in->n_embd) {
        in->n_head = (size_t)q->shape[0];
        in->n_head_source = "TransformerLens W_Q's shape";
    }
    return G2F_OK;
}

/* A GGUF's own words about the model (llama.cpp builds the model from
 * them): general.architecture gpt2, the sizes the tensors have, and
 * layer_norm_epsilon, which config.json (when it says) must match and
 * which is the model's otherwise. A contradiction is an error: which one
 * the model runs is not defined. */
g2f_status g2f_config_gguf_words(const g2f_table *t, g2f_format f, g2f_model_info *in, g2f_error *err) {
    if (f != G2F_FORMAT_GGUF) return G2F_OK;
    const char *arch = g2f_table_meta(t, "general.architecture");
    if (arch && strcmp(arch, "gpt2"))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: general.architecture is '%.40s', not gpt2", in->path, arch);
    static const struct { const char *key, *what; } sizes[] = {
        {"gpt2.block_count", "layers"}, {"gpt2.embedding_length", "n_embd"}, {"gpt2.feed_forward_length", "n_inner"}};
    const size_t have[3] = {in->n_layer, in->n_embd, in->n_inner};
    for (int i = 0; i < 3; i++) {
        size_t v = 0;
        int k = meta_size(t, sizes[i].key, &v);
        if (k < 0 || (k > 0 && v != have[i]))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s is %.24s but the tensors have %zu %s", in->path,
                                 sizes[i].key, g2f_table_meta(t, sizes[i].key), have[i], sizes[i].what);
    }
    size_t ctx = 0; /* the positions llama.cpp runs: wpe must have that many rows (g2f_ends) */
    int k = meta_size(t, "gpt2.context_length", &ctx);
    if (k < 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: gpt2.context_length is %.24s: not a positive integer", in->path,
                             g2f_table_meta(t, "gpt2.context_length"));
    if (k > 0 && in->config_n_positions > 0 && (size_t)in->config_n_positions != ctx)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: gpt2.context_length is %zu but config.json n_positions is %ld",
                             in->path, ctx, in->config_n_positions);
    if (k > 0) in->config_n_positions = (long)ctx, in->n_positions_said_by = "the GGUF's gpt2.context_length";
    const char *e = g2f_table_meta(t, "gpt2.attention.layer_norm_epsilon");
    if (!e) return G2F_OK;
    char *end;
    double eps = strtod(e, &end);
    if (*end || !(eps > 0 && eps < 1))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: gpt2.attention.layer_norm_epsilon is %.24s: not in (0, 1)",
                             in->path, e);
    if (in->config_has_ln_eps && fabs(in->ln_eps - eps) > 1e-6 * eps) /* the GGUF's is a float32 */
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: config.json layer_norm_epsilon is %g but the GGUF's is %g", in->path,
                             in->ln_eps, eps);
    in->ln_eps = eps, in->config_has_ln_eps = 1;
    return G2F_OK;
}

/* ---- which config ------------------------------------------------------ */

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A model config under another name: *config*.json, but not HF's files
 * that are never one, nor a shard index. */
static int config_like(const char *nm) {
    size_t n = strlen(nm);
    return n > 5 && !strcmp(nm + n - 5, ".json") && strstr(nm, "config") && strcmp(nm, "tokenizer_config.json") &&
           strcmp(nm, "generation_config.json") && !(n > 11 && !strcmp(nm + n - 11, ".index.json"));
}

g2f_status g2f_config_find(const char *dir, const char *given, char *why, size_t why_size, char **out,
                           g2f_error *err) {
    *out = NULL;
    if (given) {
        snprintf(why, why_size, "given with --config");
        return (*out = g2f_strdup(given)) ? G2F_OK : g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    char *cfg = g2f_path_join(dir, "config.json");
    if (!cfg) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (g2f_path_exists(cfg) && !g2f_path_is_dir(cfg)) {
        snprintf(why, why_size, "config.json beside the checkpoint");
        *out = cfg;
        return G2F_OK;
    }
    free(cfg);
    snprintf(why, why_size, "none beside the checkpoint");
    DIR *d = opendir(dir);
    if (!d) return G2F_OK; /* the checkpoint was read from it: nothing more to find */
    char **names = NULL;
    size_t n = 0, cap = 0;
    g2f_status st = G2F_OK;
    for (struct dirent *e; st == G2F_OK && (e = readdir(d)) != NULL;) {
        if (!config_like(e->d_name)) continue;
        if (n == cap) {
            char **q = realloc(names, (cap = cap ? 2 * cap : 8) * sizeof *q);
            if (!q) {
                st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
                break;
            }
            names = q;
        }
        if (!(names[n] = g2f_strdup(e->d_name))) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        else n++;
    }
    closedir(d);
    if (st == G2F_OK && n) qsort(names, n, sizeof *names, name_cmp);
    if (st == G2F_OK && n == 1) {
        if ((*out = g2f_path_join(dir, names[0])) == NULL) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        else snprintf(why, why_size, "the only *config*.json beside the checkpoint");
    } else if (st == G2F_OK && n > 1) {
        size_t used = (size_t)snprintf(why, why_size, "none used: %zu *config*.json files beside the checkpoint (", n);
        for (size_t i = 0; i < n && used < why_size; i++)
            used += (size_t)snprintf(why + used, why_size - used, "%s%s", i ? ", " : "", names[i]);
        if (used < why_size) snprintf(why + used, why_size - used, "); name one with --config");
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* ---- the GELU the file implies ------------------------------------------ */

/* A nanoGPT training checkpoint says which GELU its code runs. */
void g2f_config_file_gelu(const g2f_table *t, g2f_format f, g2f_model_info *in) {
    if (f == G2F_FORMAT_ZIP && g2f_table_meta(t, G2F_TORCH_META_MODEL_ARGS)) {
        in->file_has_gelu = 1;
        in->file_gelu = G2F_GELU_ERF;
        in->file_gelu_why = "a nanoGPT training checkpoint (model_args beside model), whose model.py runs "
                            "nn.GELU(), exact erf";
    }
}
