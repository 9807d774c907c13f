/* g2f_model: GPT-2 FFN discovery over a tensor table; see g2f_model.h. */
#include "g2f_model.h"
#include "g2f_file.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "g2f_json.h"
#include "g2f_sha256.h"
#include "g2f_quant.h"
#include "g2f_names.h"
#include "g2f_source.h"
#include "g2f_torch.h"

#define MAX_LAYERS 4096
#define CONFIG_MAX_BYTES (1u << 20)

static const char *const roles[] = {"c_fc.weight",        "c_fc.bias",          "c_proj.weight",
                                    "c_proj.bias",        "ln_1.weight",        "ln_1.bias",
                                    "attn.c_attn.weight", "attn.c_attn.bias",   "attn.c_proj.weight",
                                    "attn.c_proj.bias",   "ln_2.weight",        "ln_2.bias"};
_Static_assert(sizeof roles / sizeof roles[0] == G2F_LAYER_TENSORS, "one name per tensor");

const char *g2f_model_tensor_role(int k) { return (unsigned)k < G2F_LAYER_TENSORS ? roles[k] : "?"; }

/* The naming schemes of GPT-2 FFN tensors in the wild. A tensor name is
 * [containers.]<block>.<N>.<middle><suffix>, where containers are the
 * wrappers training code adds (a checkpoint dict's "model.", torch.compile's
 * "_orig_mod.", DDP's "module.", HF's "transformer."). */
typedef struct scheme {
    const char *name;      /* for reports */
    const char *block;     /* "h", "blocks", "blk" */
    const char *middle;    /* "mlp." or "" */
    const char *suffix[G2F_FFN_TENSORS];
    const char *ln2;       /* ln_2 weight after "<block>.0.", gives n_embd */
    const char *ln[2][2];  /* ln_1 and ln_2: weight and bias after "<block>.N." */
    const char *ln_f[2];   /* the final LayerNorm after the prefix */
    const char *attn[4];   /* c_attn weight, bias, c_proj weight, bias after "<block>.N." (TL: NULL) */
} scheme;

enum { S_HF, S_MINGPT, S_TLENS, S_GGUF, S_COUNT };
static const scheme schemes[] = {
    {"HF GPT-2 (h.N.mlp.c_fc)", "h", "mlp.", {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"}, "ln_2.weight",
     {{"ln_1.weight", "ln_1.bias"}, {"ln_2.weight", "ln_2.bias"}}, {"ln_f.weight", "ln_f.bias"},
     {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"}},
    {"minGPT (blocks.N.mlp.c_fc)", "blocks", "mlp.", {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"},
     "ln_2.weight", {{"ln_1.weight", "ln_1.bias"}, {"ln_2.weight", "ln_2.bias"}}, {"ln_f.weight", "ln_f.bias"},
     {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"}},
    {"TransformerLens (blocks.N.mlp.W_in)", "blocks", "mlp.", {"W_in", "b_in", "W_out", "b_out"}, "ln2.w",
     {{"ln1.w", "ln1.b"}, {"ln2.w", "ln2.b"}}, {"ln_final.w", "ln_final.b"}, {NULL, NULL, NULL, NULL}},
    {"GGUF (blk.N.ffn_up)", "blk", "", {"ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"},
     "ffn_norm.weight", {{"attn_norm.weight", "attn_norm.bias"}, {"ffn_norm.weight", "ffn_norm.bias"}},
     {"output_norm.weight", "output_norm.bias"},
     {"attn_qkv.weight", "attn_qkv.bias", "attn_output.weight", "attn_output.bias"}},
};
_Static_assert(sizeof schemes / sizeof schemes[0] == S_COUNT, "one entry per scheme");

static const char *const containers[] = {"model.", "model_state.", "state_dict.", "module.", "_orig_mod.",
                                         "transformer."};

struct g2f_model {
    g2f_model_info info;
    g2f_source *src;
    char *path;
    char *config_path;
    char *prefix;
    char *activation;
    int scheme;
    char layout_why[160];
    const g2f_tensor *(*layers)[G2F_FFN_TENSORS]; /* n_layer entries */
    g2f_name_ref *by_name;                        /* the table's names, sorted: lookups in log n */
    char config_why[400];                         /* info.config_source */
};

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






/* Matches name against the schemes: returns the tensor slot (G2F_FFN_*), or -1 when
 * it is not an FFN tensor, -2 when its layer index is absurd. *prefix_len is
 * the length of the container prefix. */
static int match_ffn_name(const char *name, int *scheme_out, size_t *layer, size_t *prefix_len) {
    const char *p = name;
    for (int again = 1; again;) {
        again = 0;
        for (size_t c = 0; c < sizeof containers / sizeof containers[0]; c++) {
            size_t n = strlen(containers[c]);
            if (!strncmp(p, containers[c], n)) {
                p += n;
                again = 1;
            }
        }
    }
    for (int sc = 0; sc < S_COUNT; sc++) {
        const scheme *S = &schemes[sc];
        size_t bl = strlen(S->block);
        if (strncmp(p, S->block, bl) || p[bl] != '.') continue;
        const char *q = p + bl + 1;
        if (*q < '0' || *q > '9' || (q[0] == '0' && q[1] >= '0' && q[1] <= '9')) continue;
        size_t v = 0;
        while (*q >= '0' && *q <= '9') {
            v = v * 10 + (size_t)(*q - '0');
            if (v >= MAX_LAYERS) return -2;
            q++;
        }
        if (*q++ != '.') continue;
        size_t ml = strlen(S->middle);
        if (strncmp(q, S->middle, ml)) continue;
        q += ml;
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            if (!strcmp(q, S->suffix[k])) {
                *scheme_out = sc;
                *layer = v;
                *prefix_len = (size_t)(p - name);
                return k;
            }
        }
    }
    return -1;
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

/* Reads config.json and cross-checks it against the shapes found. */
static g2f_status check_config(g2f_model *m, g2f_error *err) {
    char *text = NULL;
    size_t len = 0;
    const char *cfg = m->config_path;
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
    long n_layer, n_embd, n_inner;
    g2f_model_info *in = &m->info;
    if ((s = json_size_field(root, "n_layer", "num_hidden_layers", cfg, &n_layer, err)) != G2F_OK ||
        (s = json_size_field(root, "n_embd", "hidden_size", cfg, &n_embd, err)) != G2F_OK ||
        (s = json_size_field(root, "n_inner", NULL, cfg, &n_inner, err)) != G2F_OK)
        goto done;
    if (n_embd > 0 && n_inner < 0) n_inner = 4 * n_embd; /* HF: n_inner null means 4 * n_embd */
    if (n_layer > 0 && (size_t)n_layer != in->n_layer) {
        s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_layer is %ld but %s holds FFN weights for %zu layers", cfg,
                          n_layer, in->path, in->n_layer);
        goto done;
    }
    if (n_embd > 0 && (size_t)n_embd != in->n_embd) {
        s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_embd is %ld but the FFN weights in %s have n_embd %zu", cfg,
                          n_embd, in->path, in->n_embd);
        goto done;
    }
    if (n_inner > 0 && (size_t)n_inner != in->n_inner) {
        s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_inner is %ld but the FFN weights in %s have n_inner %zu", cfg,
                          n_inner, in->path, in->n_inner);
        goto done;
    }
    long n_head = -1;
    if ((s = json_size_field(root, "n_head", "num_attention_heads", cfg, &n_head, err)) != G2F_OK) goto done;
    if (n_head > 0) {
        if ((size_t)n_head > in->n_embd || in->n_embd % (size_t)n_head) {
            s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_head %ld does not divide n_embd %zu", cfg, n_head,
                              in->n_embd);
            goto done;
        }
        in->n_head = (size_t)n_head;
        in->n_head_source = "config.json n_head";
    }
    long vocab = -1, n_pos = -1;
    if ((s = json_size_field(root, "vocab_size", NULL, cfg, &vocab, err)) != G2F_OK ||
        (s = json_size_field(root, "n_positions", "max_position_embeddings", cfg, &n_pos, err)) != G2F_OK)
        goto done;
    in->config_vocab = vocab;
    in->config_n_positions = n_pos;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    if (eps && !cJSON_IsNull(eps)) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0 && eps->valuedouble < 1)) {
            s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"layer_norm_epsilon\" must be a number in (0, 1)", cfg);
            goto done;
        }
        in->ln_eps = eps->valuedouble;
        in->config_has_ln_eps = 1;
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) {
            s = g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"activation_function\" must be a string", cfg);
            goto done;
        }
        if (!g2f_activation_to_gelu(act->valuestring, &in->config_gelu)) {
            s = g2f_error_set(err, G2F_ERR_FORMAT,
                              "%s: activation_function \"%.40s\" is not a GELU (expected gelu_new, "
                              "gelu_pytorch_tanh, gelu_fast or gelu)",
                              cfg, act->valuestring);
            goto done;
        }
        m->activation = g2f_strdup(act->valuestring);
        if (!m->activation) {
            s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
        in->config_has_gelu = 1;
        in->config_activation = m->activation;
    }
done:
    cJSON_Delete(root);
    return s;
}

/* n_embd from tensors other than the FFN's, 0 when none says. */
static size_t embd_hint(const g2f_model *m, const g2f_table *t) {
    const scheme *S = &schemes[m->scheme];
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
        int k = match_ffn_name(t->tensors[i].name, &sc, &l, &plen);
        if (k == -2)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': layer index is %d or more", file,
                                 t->tensors[i].name, MAX_LAYERS);
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
        int k = match_ffn_name(t->tensors[i].name, &sc, &l, &plen);
        if (k >= 0 && l + 1 > n_layer) n_layer = l + 1;
    }
    m->layers = calloc(n_layer, sizeof *m->layers);
    if (!m->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->count; i++) {
        int k = match_ffn_name(t->tensors[i].name, &sc, &l, &plen);
        if (k >= 0) m->layers[l][k] = &t->tensors[i];
    }
    m->info.n_layer = n_layer;
    m->info.naming = schemes[m->scheme].name;
    const scheme *S = &schemes[m->scheme];
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

/* The layout a format and naming use by convention: nn.Linear [out, in] for
 * training checkpoints (nanoGPT, minGPT), ggml and llm.c; HF Conv1D
 * [in, out] for HF files and TransformerLens (W_in is (d_model, d_mlp)). */
static g2f_layout conventional_layout(const g2f_model *m, const char **why) {
    g2f_format f = g2f_source_format(m->src);
    if (f == G2F_FORMAT_GGUF) return *why = "the GGUF convention (ffn_up is row-major [n_inner, n_embd])", G2F_LAYOUT_LINEAR;
    if (f == G2F_FORMAT_LLMC) return *why = "the llm.c convention (Linear [out, in])", G2F_LAYOUT_LINEAR;
    if (m->scheme == S_TLENS) return *why = "the TransformerLens convention (W_in is [d_model, d_mlp])", G2F_LAYOUT_CONV1D;
    if (m->scheme == S_MINGPT) return *why = "the minGPT convention (nn.Linear [out, in])", G2F_LAYOUT_LINEAR;
    if (f == G2F_FORMAT_ZIP && (strstr(m->prefix, "_orig_mod.") || !strncmp(m->prefix, "model.", 6)))
        return *why = "the nanoGPT convention (nn.Linear [out, in])", G2F_LAYOUT_LINEAR;
    return *why = "the HF convention (Conv1D [in, out])", G2F_LAYOUT_CONV1D;
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
    g2f_layout conv = conventional_layout(m, &why);
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
static g2f_status head_count_from_file(g2f_model *m, g2f_error *err) {
    const g2f_table *t = g2f_source_table(m->src);
    static const struct { const char *key, *source; } keys[] = {
        {"gpt2.attention.head_count", "GGUF gpt2.attention.head_count"}, {"num_heads", "the llm.c header"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = g2f_table_meta(t, keys[i].key);
        if (!v) continue;
        /* the file's own word: a value that cannot be this model's head
         * count is refused, as config.json's n_head is (never ignored) */
        char *end;
        unsigned long long n = *v == '-' ? 0 : strtoull(v, &end, 10);
        if (!*v || *v == '-' || *end || n == 0 || n > m->info.n_embd || m->info.n_embd % n)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s is %.24s: it must be a positive integer dividing n_embd %zu",
                                 m->path, keys[i].source + (strncmp(keys[i].source, "the ", 4) ? 0 : 4), v,
                                 m->info.n_embd);
        m->info.n_head = (size_t)n;
        m->info.n_head_source = keys[i].source;
        return G2F_OK;
    }
    if (g2f_source_format(m->src) == G2F_FORMAT_ZIP) {
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
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['%s'] must be a positive integer", m->path,
                                     dicts[i].what, h < 0 ? "n_head" : e < 0 ? "n_embd" : "n_layer");
            if (e > 0 && n_embd != m->info.n_embd)
                return g2f_error_set(err, G2F_ERR_FORMAT,
                                     "%s: %s['n_embd'] is %zu but the FFN weights have n_embd %zu", m->path,
                                     dicts[i].what, n_embd, m->info.n_embd);
            if (l > 0 && n_layer != m->info.n_layer)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['n_layer'] is %zu but it holds FFN weights for %zu layers",
                                     m->path, dicts[i].what, n_layer, m->info.n_layer);
            if (!h) continue;
            if (n_head > m->info.n_embd || m->info.n_embd % n_head)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s['n_head'] %zu does not divide n_embd %zu",
                                     m->path, dicts[i].what, n_head, m->info.n_embd);
            m->info.n_head = n_head;
            m->info.n_head_source = dicts[i].source;
            return G2F_OK;
        }
    }
    if (m->scheme == S_TLENS) {
        char name[512];
        snprintf(name, sizeof name, "%sblocks.0.attn.W_Q", m->prefix);
        const g2f_tensor *q = g2f_table_find(t, name);
        if (q && q->ndim == 3 && q->shape[0] > 0 && q->shape[1] == m->info.n_embd &&
            q->shape[0] * q->shape[2] == m->info.n_embd) {
            m->info.n_head = (size_t)q->shape[0];
            m->info.n_head_source = "TransformerLens W_Q's shape";
        }
    }
    return G2F_OK;
}

/* ---- the config and the GELU the file implies ----------------------------- */

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A model config under another name: *config*.json, but not HF's files
 * that are never one, nor a shard index. */
static int config_like(const char *nm) {
    size_t n = strlen(nm);
    return n > 5 && !strcmp(nm + n - 5, ".json") && strstr(nm, "config") && strcmp(nm, "tokenizer_config.json") &&
           strcmp(nm, "generation_config.json") && !(n > 11 && !strcmp(nm + n - 11, ".index.json"));
}

/* The config to read (*out, NULL for none) and info.config_source: the one
 * given; else config.json in dir (anything but a folder: a FIFO named
 * config.json is refused when read, not skipped); else the only
 * *config*.json in dir. Several: none, and config_source lists them. */
static g2f_status find_config(g2f_model *m, const char *dir, const char *given, char **out, g2f_error *err) {
    *out = NULL;
    m->info.config_source = m->config_why;
    if (given) {
        snprintf(m->config_why, sizeof m->config_why, "given with --config");
        return (*out = g2f_strdup(given)) ? G2F_OK : g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    char *cfg = g2f_path_join(dir, "config.json");
    if (!cfg) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (g2f_path_exists(cfg) && !g2f_path_is_dir(cfg)) {
        snprintf(m->config_why, sizeof m->config_why, "config.json beside the checkpoint");
        *out = cfg;
        return G2F_OK;
    }
    free(cfg);
    snprintf(m->config_why, sizeof m->config_why, "none beside the checkpoint");
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
        else snprintf(m->config_why, sizeof m->config_why, "the only *config*.json beside the checkpoint");
    } else if (st == G2F_OK && n > 1) {
        size_t used = (size_t)snprintf(m->config_why, sizeof m->config_why,
                                       "none used: %zu *config*.json files beside the checkpoint (", n);
        for (size_t i = 0; i < n && used < sizeof m->config_why; i++)
            used += (size_t)snprintf(m->config_why + used, sizeof m->config_why - used, "%s%s", i ? ", " : "",
                                     names[i]);
        if (used < sizeof m->config_why)
            snprintf(m->config_why + used, sizeof m->config_why - used, "); name one with --config");
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* A nanoGPT training checkpoint says which GELU its code runs. */
static void note_file_gelu(g2f_model *m, const g2f_table *t) {
    if (g2f_source_format(m->src) == G2F_FORMAT_ZIP && g2f_table_meta(t, G2F_TORCH_META_MODEL_ARGS)) {
        m->info.file_has_gelu = 1;
        m->info.file_gelu = G2F_GELU_ERF;
        m->info.file_gelu_why = "a nanoGPT training checkpoint (model_args beside model), whose model.py runs "
                                "nn.GELU(), exact erf";
    }
}

static void note_ends(g2f_model *m);

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
    char *cfg = NULL;
    if ((s = find_config(m, dir, config_path, &cfg, err)) != G2F_OK) goto fail;
    if (cfg) {
        m->config_path = cfg;
        m->info.config_path = cfg;
        if ((s = check_config(m, err)) != G2F_OK) goto fail;
    }
    if (!m->info.n_head && (s = head_count_from_file(m, err)) != G2F_OK) goto fail;
    note_file_gelu(m, t);
    note_ends(m);
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

static int usable_in_place(const g2f_tensor *x) {
    return x->dtype == G2F_DTYPE_F32 && ((uintptr_t)x->data % _Alignof(float)) == 0;
}

g2f_status g2f_model_layer_load(const g2f_model *m, size_t layer, g2f_layer *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    const g2f_tensor *const *x = m->layers[layer];
    for (int k = 0; k < G2F_FFN_TENSORS; k++) { /* quantized blocks: sizes and finite scales, before any use */
        g2f_status s = x[k] ? g2f_quant_check(x[k], m->path, err) : G2F_OK;
        if (s != G2F_OK) return s;
    }
    uint64_t need = 0;
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (x[k] && !usable_in_place(x[k])) need += x[k]->numel; /* sizes validated against the file */
    if (need) {
        out->owned = g2f_alloc_array((size_t)need, sizeof(float));
        if (!out->owned)
            return g2f_error_set(err, G2F_ERR_NOMEM, "layer %zu: cannot allocate %llu floats for conversion", layer,
                                 (unsigned long long)need);
    }
    const float *views[G2F_FFN_TENSORS] = {0};
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out->src[k] = x[k];
    float *cur = out->owned;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        if (!x[k]) continue;
        if (usable_in_place(x[k])) {
            views[k] = (const float *)(const void *)x[k]->data;
        } else {
            g2f_tensor_read_f32(x[k], 0, x[k]->numel, cur);
            views[k] = cur;
            cur += x[k]->numel;
        }
    }
    out->w = (g2f_ffn_weights){.n_embd = m->info.n_embd, .n_inner = m->info.n_inner,
                               .layout_fc = m->info.layout, .layout_proj = m->info.layout,
                               .w_fc = views[G2F_FFN_FC_W], .b_fc = views[G2F_FFN_FC_B],
                               .w_proj = views[G2F_FFN_PROJ_W], .b_proj = views[G2F_FFN_PROJ_B]};
    return G2F_OK;
}

void g2f_layer_free(g2f_layer *l) {
    if (!l) return;
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (l->src[k]) g2f_mapping_release(l->src[k]->data, l->src[k]->nbytes);
    free(l->owned);
    memset(l, 0, sizeof *l);
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
    g2f_path_list shards = {0};
    g2f_status st = g2f_source_shards(m->src, &shards, err);
    if (st == G2F_OK && shards.count == 0) st = g2f_sha256_file(m->info.path, hex, err);
    if (st == G2F_OK && shards.count) {
        /* sha256sum's output for the shards, in name order, then its digest */
        g2f_sha256 all;
        g2f_sha256_init(&all);
        for (size_t i = 0; i < shards.count && st == G2F_OK; i++) {
            char one[65];
            const char *slash = strrchr(shards.paths[i], '/');
            const char *name = slash ? slash + 1 : shards.paths[i];
            if ((st = g2f_sha256_file(shards.paths[i], one, err)) != G2F_OK) break;
            g2f_sha256_update(&all, one, 64);
            g2f_sha256_update(&all, "  ", 2);
            g2f_sha256_update(&all, name, strlen(name));
            g2f_sha256_update(&all, "\n", 1);
        }
        if (st == G2F_OK) g2f_sha256_final_hex(&all, hex);
    }
    g2f_path_list_free(&shards);
    return st;
}

/* A tensor of the checkpoint by its name after the model's prefix (or at
 * the root: an HF lm_head sits outside "transformer."); NULL when absent. */
static const g2f_tensor *lookup(const g2f_model *m, const char *rest, int layer) {
    const g2f_table *t = g2f_source_table(m->src);
    char name[512];
    for (int root = 0; root < 2; root++) {
        const char *pre = root ? "" : m->prefix;
        if (layer >= 0)
            snprintf(name, sizeof name, "%s%s.%d.%s", pre, schemes[m->scheme].block, layer, rest);
        else
            snprintf(name, sizeof name, "%s%s", pre, rest);
        const g2f_name_ref *r = g2f_names_find(m->by_name, t->count, name, strlen(name));
        if (r) return &t->tensors[r->index];
        if (!*m->prefix) break;
    }
    return NULL;
}

/* Converts (or views) a float vector tensor of n elements into dst / *view. */
static g2f_status vector_view(const g2f_model *m, const g2f_tensor *x, size_t n, const char *role, float **owned,
                              const float **view, g2f_error *err) {
    *view = NULL;
    if (!x) return G2F_OK;
    if (!g2f_dtype_is_float(x->dtype) || x->numel != n)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s, expected %zu floats", m->path, x->name,
                             role, g2f_tensor_type_name(x), n);
    if (x->dtype == G2F_DTYPE_F32 && (uintptr_t)x->data % _Alignof(float) == 0) {
        *view = (const float *)(const void *)x->data;
        return G2F_OK;
    }
    float *buf = g2f_alloc_array(n ? n : 1, sizeof(float));
    if (!buf) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", m->path);
    g2f_tensor_read_f32(x, 0, n, buf);
    *owned = buf;
    *view = buf;
    return G2F_OK;
}

g2f_status g2f_model_ln_load(const g2f_model *m, int which, size_t layer, g2f_ln *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const scheme *S = &schemes[m->scheme];
    out->d = m->info.n_embd;
    out->eps = m->info.ln_eps;
    if (!m->by_name) return G2F_OK; /* set by g2f_model_open */
    const g2f_tensor *w, *b;
    if (which == 0) {
        w = lookup(m, S->ln_f[0], -1);
        b = lookup(m, S->ln_f[1], -1);
    } else {
        if (which != 1 && which != 2)
            return g2f_error_set(err, G2F_ERR_USAGE, "g2f_model_ln_load: which is 0, 1 or 2, not %d", which);
        if (layer >= m->info.n_layer)
            return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
        w = lookup(m, S->ln[which - 1][0], (int)layer);
        b = lookup(m, S->ln[which - 1][1], (int)layer);
    }
    out->found = w != NULL;
    g2f_status st = vector_view(m, w, out->d, "LayerNorm gain", &out->owned[0], &out->w, err);
    if (st == G2F_OK) st = vector_view(m, b, out->d, "LayerNorm bias", &out->owned[1], &out->b, err);
    if (st != G2F_OK) g2f_ln_free(out);
    return st;
}

void g2f_ln_free(g2f_ln *ln) {
    if (!ln) return;
    free(ln->owned[0]);
    free(ln->owned[1]);
    memset(ln, 0, sizeof *ln);
}

/* A 2-D attention weight of the scheme's layout: rows x cols as stored. */
static g2f_status matrix_view(const g2f_model *m, const g2f_tensor *x, uint64_t rows, uint64_t cols, float **owned,
                              const float **view, g2f_error *err) {
    if (x->ndim != 2 || x->shape[0] != rows || x->shape[1] != cols) {
        char sh[64];
        g2f_shape_format(x, sh, sizeof sh);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected [%llu, %llu]", m->path,
                             x->name, sh, (unsigned long long)rows, (unsigned long long)cols);
    }
    return vector_view(m, x, (size_t)(rows * cols), "attention weight", owned, view, err);
}

/* TransformerLens' attention, checked against its own W_Q's n_head: see
 * g2f_model_split_attn in g2f_model.h. */
static const char *const tl_attn_names[8] = {"attn.W_Q", "attn.W_K", "attn.W_V", "attn.b_Q",
                                             "attn.b_K", "attn.b_V", "attn.W_O", "attn.b_O"};

static g2f_status tl_shapes(const g2f_model *m, const g2f_tensor *const x[8], size_t d, size_t H, g2f_error *err) {
    size_t dh = d / H;
    for (int k = 0; k < 3; k++) {
        const g2f_tensor *W = x[k], *B = x[3 + k];
        if (W->ndim != 3 || W->shape[0] != H || W->shape[1] != d || W->shape[2] != dh ||
            !g2f_dtype_is_float(W->dtype) || (B && (B->numel != d || !g2f_dtype_is_float(B->dtype))))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected %s [%zu, %zu, %zu] (n_head %zu)",
                                 m->path, W->name, g2f_dtype_is_float(W->dtype) ? "shape" : "a float tensor of shape",
                                 H, d, dh, H);
    }
    const g2f_tensor *O = x[6], *BO = x[7];
    if (O->ndim != 3 || O->shape[0] != H || O->shape[1] != dh || O->shape[2] != d || !g2f_dtype_is_float(O->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected [%zu, %zu, %zu]", m->path, O->name, H, dh, d);
    if (BO && (BO->numel != d || !g2f_dtype_is_float(BO->dtype)))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected %zu floats", m->path, BO->name, d);
    return G2F_OK;
}

/* The split attention found with n_head H (0: W_Q's own), into s. */
static g2f_status split_attn(const g2f_model *m, size_t L, size_t H, g2f_split_attn *s, g2f_error *err) {
    memset(s, 0, sizeof *s);
    const size_t d = m->info.n_embd;
    if (m->scheme != S_TLENS || !m->by_name) return G2F_OK;
    for (int k = 0; k < 8; k++) s->src[k] = lookup(m, tl_attn_names[k], (int)L);
    if (!s->src[0] || !s->src[1] || !s->src[2] || !s->src[6]) return G2F_OK; /* no attention */
    const g2f_tensor *q = s->src[0];
    if (!H && (q->ndim != 3 || q->shape[0] == 0 || q->shape[1] != d || q->shape[0] * q->shape[2] != d)) {
        char sh[64];
        g2f_shape_format(q, sh, sizeof sh);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected [n_head, %zu, d_head] with "
                             "n_head d_head = %zu", m->path, q->name, sh, d, d);
    }
    if (!H) H = (size_t)q->shape[0];
    g2f_status st = tl_shapes(m, s->src, d, H, err);
    if (st != G2F_OK) return st;
    size_t dh = d / H, n = 3 * d * d + 3 * d;
    float *buf = g2f_alloc_work(n, 1, sizeof(float), "the attention weights", err);
    float *tmp = buf ? g2f_alloc_work(d * d, 1, sizeof(float), "the attention weights", err) : NULL;
    if (!tmp) {
        free(buf);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *cw = buf, *cb = buf + 3 * d * d;
    for (int k = 0; k < 3; k++) {
        g2f_tensor_read_f32(s->src[k], 0, d * d, tmp); /* [h, i, j]: q_h[j] = sum_i x_i W[h, i, j] */
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < d; i++)
                for (size_t j = 0; j < dh; j++) cw[i * 3 * d + k * d + h * dh + j] = tmp[(h * d + i) * dh + j];
        if (s->src[3 + k]) g2f_tensor_read_f32(s->src[3 + k], 0, d, cb + k * d);
        else memset(cb + k * d, 0, d * sizeof(float));
    }
    free(tmp);
    s->owned = buf;
    s->n_head = H;
    static const char *const names[4] = {"attn.c_attn.weight (W_Q, W_K, W_V)", "attn.c_attn.bias (b_Q, b_K, b_V)",
                                         "attn.c_proj.weight (W_O)", "attn.c_proj.bias (b_O)"};
    s->t[0] = (g2f_tensor){names[0], G2F_DTYPE_F32, 2, {d, 3 * d}, 3 * d * d, (const unsigned char *)cw,
                           3 * d * d * sizeof(float), NULL};
    s->t[1] = (g2f_tensor){names[1], G2F_DTYPE_F32, 1, {3 * d}, 3 * d, (const unsigned char *)cb, 3 * d * sizeof(float),
                           NULL};
    s->t[2] = *s->src[6]; /* [h, j, o]: rows h d_head + j of a Conv1D (d, d) */
    s->t[2].ndim = 2;
    s->t[2].shape[0] = s->t[2].shape[1] = d;
    s->t[2].shape[2] = 0;
    if (s->src[7]) s->t[3] = *s->src[7];
    s->present[0] = s->present[2] = 1;
    s->present[1] = s->src[3] || s->src[4] || s->src[5];
    s->present[3] = s->src[7] != NULL;
    return G2F_OK;
}

g2f_status g2f_model_split_attn(const g2f_model *m, size_t layer, g2f_split_attn *out, g2f_error *err) {
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    return split_attn(m, layer, 0, out, err);
}

void g2f_split_attn_free(g2f_split_attn *s) {
    if (!s) return;
    free(s->owned);
    memset(s, 0, sizeof *s);
}

/* TransformerLens: the split attention (with n_head H) as the block's
 * Conv1D c_attn (d, 3d), c_proj (d, d) and biases. */
static g2f_status tl_attention(const g2f_model *m, size_t L, size_t d, size_t H, g2f_block *b, g2f_error *err) {
    g2f_split_attn sa;
    g2f_status st = split_attn(m, L, H, &sa, err);
    if (st != G2F_OK || !sa.owned) return st; /* an error, or no attention */
    float *buf = g2f_alloc_work(3 * d * d + 3 * d + d * d + d, 1, sizeof(float), "the attention weights", err);
    if (!buf) {
        g2f_split_attn_free(&sa);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *cw = buf, *cb = buf + 3 * d * d, *pw = cb + 3 * d, *pb = pw + d * d;
    memcpy(cw, sa.owned, (3 * d * d + 3 * d) * sizeof(float));
    g2f_tensor_read_f32(&sa.t[2], 0, d * d, pw);
    if (sa.present[3]) g2f_tensor_read_f32(&sa.t[3], 0, d, pb);
    else memset(pb, 0, d * sizeof(float));
    b->owned = buf;
    b->attn_w = cw;
    b->attn_b = sa.src[3] ? cb : NULL;
    b->aproj_w = pw;
    b->aproj_b = sa.present[3] ? pb : NULL;
    b->layout_attn = b->layout_aproj = G2F_LAYOUT_CONV1D;
    b->has_attn = 1;
    b->src[0] = sa.src[0];
    b->src[1] = sa.src[3];
    b->src[2] = sa.src[6];
    b->src[3] = sa.src[7];
    g2f_split_attn_free(&sa);
    return G2F_OK;
}

g2f_status g2f_model_block_load(const g2f_model *m, size_t layer, size_t n_head, g2f_block *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const scheme *S = &schemes[m->scheme];
    size_t d = m->info.n_embd;
    out->n_embd = d;
    out->n_head = n_head ? n_head : m->info.n_head;
    g2f_status st = g2f_model_layer_load(m, layer, &out->mlp, err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 1, layer, &out->ln_1, err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 2, layer, &out->ln_2, err);
    if (st != G2F_OK) goto fail;
    if (!S->attn[0]) {
        if (out->n_head && (st = tl_attention(m, layer, d, out->n_head, out, err)) != G2F_OK) goto fail;
        return G2F_OK;
    }
    const g2f_tensor *x[4];
    for (int k = 0; k < 4; k++) out->src[k] = x[k] = lookup(m, S->attn[k], (int)layer);
    if (!x[0] || !x[2]) return G2F_OK; /* no attention weights: an FFN-only checkpoint */
    g2f_layout lay = m->info.layout;
    float *owned[4] = {0};
    const float *v[4] = {0};
    st = matrix_view(m, x[0], lay == G2F_LAYOUT_CONV1D ? d : 3 * d, lay == G2F_LAYOUT_CONV1D ? 3 * d : d, &owned[0],
                     &v[0], err);
    if (st == G2F_OK) st = matrix_view(m, x[2], d, d, &owned[2], &v[2], err);
    if (st == G2F_OK) st = vector_view(m, x[1], 3 * d, "c_attn bias", &owned[1], &v[1], err);
    if (st == G2F_OK) st = vector_view(m, x[3], d, "attention c_proj bias", &owned[3], &v[3], err);
    if (st == G2F_OK) {
        /* one owned block for whatever was converted */
        size_t need = 0, sizes[4] = {3 * d * d, 3 * d, d * d, d};
        for (int k = 0; k < 4; k++) need += owned[k] ? sizes[k] : 0;
        if (need) {
            out->owned = g2f_alloc_work(need, 1, sizeof(float), "the attention weights", err);
            if (!out->owned) st = err ? err->status : G2F_ERR_NOMEM;
            float *p = out->owned;
            for (int k = 0; st == G2F_OK && k < 4; k++)
                if (owned[k]) {
                    memcpy(p, owned[k], sizes[k] * sizeof(float));
                    v[k] = p;
                    p += sizes[k];
                }
        }
    }
    for (int k = 0; k < 4; k++) free(owned[k]);
    if (st != G2F_OK) goto fail;
    out->attn_w = v[0];
    out->attn_b = v[1];
    out->aproj_w = v[2];
    out->aproj_b = v[3];
    out->layout_attn = out->layout_aproj = lay;
    out->has_attn = 1;
    return G2F_OK;
fail:
    g2f_block_free(out);
    return st;
}

void g2f_block_free(g2f_block *b) {
    if (!b) return;
    for (int k = 0; k < 4; k++)
        if (b->src[k] && !b->owned) g2f_mapping_release(b->src[k]->data, b->src[k]->nbytes);
    g2f_layer_free(&b->mlp);
    g2f_ln_free(&b->ln_1);
    g2f_ln_free(&b->ln_2);
    free(b->owned);
    memset(b, 0, sizeof *b);
}

g2f_status g2f_model_layer_tensors(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_FFN_TENSORS],
                                   g2f_error *err) {
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out[k] = NULL;
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        const g2f_tensor *x = m->layers[layer][k];
        g2f_status s = x ? g2f_quant_check(x, m->path, err) : G2F_OK;
        if (s != G2F_OK) return s;
    }
    for (int k = 0; k < G2F_FFN_TENSORS; k++) out[k] = m->layers[layer][k];
    return G2F_OK;
}

/* ---- the model's ends: embeddings, ln_f, the head ------------------------ */

enum { E_WTE, E_WPE, E_HEAD, E_HEAD_B, E_COUNT };
/* Candidate names per scheme and role, NULL-terminated. */
static const char *const end_names[S_COUNT][E_COUNT][3] = {
    [S_HF] = {{"wte.weight", NULL}, {"wpe.weight", NULL}, {"lm_head.weight", NULL}, {NULL}},
    [S_MINGPT] = {{"wte.weight", "tok_emb.weight", NULL}, {"wpe.weight", "pos_emb", NULL},
                  {"lm_head.weight", "head.weight", NULL}, {NULL}},
    [S_TLENS] = {{"embed.W_E", NULL}, {"pos_embed.W_pos", NULL}, {"unembed.W_U", NULL}, {"unembed.b_U", NULL}},
    [S_GGUF] = {{"token_embd.weight", NULL}, {"position_embd.weight", NULL}, {"output.weight", NULL},
                {"output.bias", NULL}},
};

/* A top-level tensor after the model's prefix or any shorter one (the
 * prefix cut after one of its dots): nanoGPT's "_orig_mod.lm_head.weight"
 * beside "_orig_mod.transformer.h.0...", HF's "lm_head.weight" at the root. */
static const g2f_tensor *lookup_end(const g2f_model *m, int role) {
    const g2f_table *t = g2f_source_table(m->src);
    size_t plen = strlen(m->prefix);
    char name[512];
    for (size_t cut = plen + 1; cut-- > 0;) {
        if (cut && m->prefix[cut - 1] != '.') continue;
        for (int i = 0; end_names[m->scheme][role][i]; i++) {
            int n = snprintf(name, sizeof name, "%.*s%s", (int)cut, m->prefix, end_names[m->scheme][role][i]);
            if (n < 0 || (size_t)n >= sizeof name) continue;
            const g2f_name_ref *r = g2f_names_find(m->by_name, t->count, name, (size_t)n);
            if (r) return &t->tensors[r->index];
        }
    }
    return NULL;
}

/* Rows of an (rows, d) table, minGPT's pos_emb [1, rows, d] too; 0 when the
 * shape is not that. */
static uint64_t rows_of(const g2f_tensor *x, size_t d) {
    if (x->ndim == 2 && x->shape[1] == d) return x->shape[0];
    if (x->ndim == 3 && x->shape[0] == 1 && x->shape[2] == d) return x->shape[1];
    return 0;
}

/* The vocabulary behind wte's rows: llm.c pads wte to padded_vocab_size. */
static uint64_t vocab_of(const g2f_model *m, uint64_t rows) {
    const char *v = g2f_source_format(m->src) == G2F_FORMAT_LLMC
                        ? g2f_table_meta(g2f_source_table(m->src), "vocab_size") : NULL;
    char *end;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    return v && *v && !*end && n > 0 && n <= rows ? (uint64_t)n : rows;
}

static void note_ends(g2f_model *m) {
    size_t d = m->info.n_embd;
    const g2f_tensor *wte = lookup_end(m, E_WTE), *wpe = lookup_end(m, E_WPE);
    m->info.vocab = wte ? (size_t)vocab_of(m, rows_of(wte, d)) : 0;
    m->info.n_positions = wpe ? (size_t)rows_of(wpe, d) : 0;
    m->info.has_lm_head = lookup_end(m, E_HEAD) != NULL;
    m->info.has_wte = wte != NULL;
}

/* A float view of a whole tensor, or a converted copy in *owned. */
static g2f_status whole_view(const g2f_model *m, const g2f_tensor *x, const char *role, float **owned,
                             const float **view, g2f_error *err) {
    if (!g2f_dtype_is_convertible(x->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): dtype %s is not a float or quantized type",
                             m->path, x->name, role, g2f_tensor_type_name(x));
    g2f_status st = g2f_quant_check(x, m->path, err);
    if (st != G2F_OK) return st;
    if (usable_in_place(x)) {
        *view = (const float *)(const void *)x->data;
        return G2F_OK;
    }
    char what[320];
    snprintf(what, sizeof what, "%s: tensor '%s' converted to float32", m->path, x->name);
    float *buf = g2f_alloc_work((size_t)x->numel ? (size_t)x->numel : 1, 1, sizeof(float), what, err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    g2f_tensor_read_f32(x, 0, x->numel, buf);
    *owned = buf;
    *view = buf;
    return G2F_OK;
}

static g2f_status shape_error(const g2f_model *m, const g2f_tensor *x, const char *role, const char *want,
                              g2f_error *err) {
    char sh[128];
    g2f_shape_format(x, sh, sizeof sh);
    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected %s", m->path, x->name, role, sh,
                         want);
}

/* The shapes of the ends found in x against n_embd, wte and config.json:
 * *rows wte's stored rows (0 without wte), *vocab, *n_pos, *head_dv. */
static g2f_status ends_shapes(const g2f_model *m, const g2f_tensor *const x[E_COUNT], uint64_t *rows, size_t *vocab,
                              size_t *n_pos, int *head_dv, g2f_error *err) {
    const g2f_model_info *in = &m->info;
    size_t d = in->n_embd;
    char want[128];
    *rows = 0, *vocab = 0, *n_pos = 0, *head_dv = x[E_HEAD] && m->scheme == S_TLENS;
    if (x[E_WTE]) {
        *rows = rows_of(x[E_WTE], d);
        snprintf(want, sizeof want, "[vocab, %zu] (n_embd %zu)", d, d);
        if (!*rows) return shape_error(m, x[E_WTE], "token embedding", want, err);
        *vocab = (size_t)vocab_of(m, *rows);
        if (in->config_vocab > 0 && (uint64_t)in->config_vocab != *vocab)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: vocab_size is %ld but tensor '%s' has %zu rows",
                                 in->config_path, in->config_vocab, x[E_WTE]->name, *vocab);
    }
    if (x[E_WPE]) {
        uint64_t np = rows_of(x[E_WPE], d);
        snprintf(want, sizeof want, "[n_positions, %zu] (n_embd %zu)", d, d);
        if (!np) return shape_error(m, x[E_WPE], "position embedding", want, err);
        *n_pos = (size_t)np;
        if (in->config_n_positions > 0 && (uint64_t)in->config_n_positions != np)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_positions is %ld but tensor '%s' has %llu rows",
                                 in->config_path, in->config_n_positions, x[E_WPE]->name, (unsigned long long)np);
    }
    const g2f_tensor *h = x[E_HEAD], *hb = x[E_HEAD_B];
    if (h) { /* without wte, the head's own vocabulary */
        uint64_t v = *rows ? *vocab : h->ndim == 2 ? h->shape[*head_dv ? 1 : 0] : 0, r = *rows ? *rows : v;
        int ok = h->ndim == 2 && v && (*head_dv ? h->shape[0] == d && h->shape[1] == v : h->shape[0] == r && h->shape[1] == d);
        if (*head_dv) snprintf(want, sizeof want, "[%zu, %llu] (n_embd, vocab)", d, (unsigned long long)v);
        else snprintf(want, sizeof want, "[%llu, %zu] (vocab, n_embd)", (unsigned long long)r, d);
        if (!ok) return shape_error(m, h, "output head", want, err);
        if (!*rows) *vocab = (size_t)v;
    }
    if (hb && (hb->ndim != 1 || !*vocab || hb->shape[0] != *vocab)) {
        snprintf(want, sizeof want, "[%zu] (vocab)", *vocab);
        return shape_error(m, hb, "output head bias", want, err);
    }
    return G2F_OK;
}

static const char *const end_role_names[G2F_END_TENSORS] = {"wte", "wpe", "ln_f.weight", "ln_f.bias", "head",
                                                            "head.bias"};

const char *g2f_model_end_role(int k) { return (unsigned)k < G2F_END_TENSORS ? end_role_names[k] : "?"; }

g2f_status g2f_model_end_tensors(const g2f_model *m, g2f_model_ends *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (!m->by_name) return G2F_OK;
    const g2f_tensor *x[E_COUNT];
    for (int r = 0; r < E_COUNT; r++) x[r] = lookup_end(m, r);
    uint64_t rows;
    g2f_status st = ends_shapes(m, x, &rows, &out->vocab, &out->n_pos, &out->head_dv, err);
    out->wte_rows = (size_t)rows;
    const scheme *S = &schemes[m->scheme];
    const g2f_tensor *lnf[2] = {lookup(m, S->ln_f[0], -1), lookup(m, S->ln_f[1], -1)};
    for (int k = 0; st == G2F_OK && k < 2; k++)
        if (lnf[k] && (!g2f_dtype_is_float(lnf[k]->dtype) || lnf[k]->numel != m->info.n_embd))
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s, expected %zu floats", m->path,
                               lnf[k]->name, k ? "LayerNorm bias" : "LayerNorm gain", g2f_tensor_type_name(lnf[k]),
                               m->info.n_embd);
    const g2f_tensor *t[G2F_END_TENSORS] = {x[E_WTE], x[E_WPE], lnf[0], lnf[1], x[E_HEAD], x[E_HEAD_B]};
    for (int k = 0; st == G2F_OK && k < G2F_END_TENSORS; k++) {
        if (t[k] && !g2f_dtype_is_convertible(t[k]->dtype))
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): dtype %s is not a float or quantized type",
                               m->path, t[k]->name, end_role_names[k], g2f_tensor_type_name(t[k]));
        if (st == G2F_OK && t[k]) st = g2f_quant_check(t[k], m->path, err);
    }
    if (st != G2F_OK) return st;
    memcpy(out->t, t, sizeof t);
    return G2F_OK;
}

g2f_status g2f_model_embed_load(const g2f_model *m, g2f_embed *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    size_t d = m->info.n_embd;
    out->d = d;
    const g2f_tensor *x[E_COUNT];
    for (int r = 0; r < E_COUNT; r++) out->src[r] = x[r] = m->by_name ? lookup_end(m, r) : NULL;
    if (!x[E_WTE])
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: no token embedding (wte.weight, tok_emb.weight, embed.W_E or token_embd.weight): "
                             "the whole model cannot be computed", m->path);
    uint64_t rows;
    g2f_status sh = ends_shapes(m, x, &rows, &out->vocab, &out->n_pos, &out->head_dv, err);
    if (sh != G2F_OK) return sh;
    static const char *const end_roles[E_COUNT] = {"token embedding", "position embedding", "output head",
                                               "output head bias"};
    const float **views[E_COUNT] = {&out->wte, &out->wpe, &out->head, &out->head_b};
    g2f_status st = G2F_OK;
    for (int r = 0; r < E_COUNT && st == G2F_OK; r++)
        if (x[r]) st = whole_view(m, x[r], end_roles[r], &out->owned[r], views[r], err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 0, 0, &out->ln_f, err);
    if (st != G2F_OK) {
        g2f_embed_free(out);
        return st;
    }
    out->head_stored = x[E_HEAD] != NULL;
    if (!x[E_HEAD]) {
        out->head = out->wte;
        out->tied = 1;
        out->head_desc = "tied to the token embedding (no output head stored)";
    } else {
        /* a stored copy equal to wte value for value is tied (nanoGPT, HF and
         * TransformerLens save the tied weight twice) */
        int same = 1;
        size_t V = out->vocab;
        for (size_t i = 0; out->head_b && same && i < V; i++) same = out->head_b[i] == 0.0f; /* TL's b_U is zeros */
        for (size_t i = 0; same && i < V; i++)
            for (size_t j = 0; same && j < d; j++) {
                float a = out->wte[i * d + j], b = out->head_dv ? out->head[j * V + i] : out->head[i * d + j];
                same = memcmp(&a, &b, sizeof a) == 0;
            }
        out->tied = same;
        out->head_desc = same ? "a stored copy equal to the token embedding (tied)"
                              : "its own output head (untied: not equal to the token embedding)";
    }
    return G2F_OK;
}

void g2f_embed_free(g2f_embed *e) {
    if (!e) return;
    for (int r = 0; r < E_COUNT; r++) {
        if (e->src[r] && !e->owned[r]) g2f_mapping_release(e->src[r]->data, e->src[r]->nbytes);
        free(e->owned[r]);
    }
    g2f_ln_free(&e->ln_f);
    memset(e, 0, sizeof *e);
}

/* A stored block tensor of role k against its role's shape: rows x cols as
 * stored (a vector: cols 0, any shape of that many elements). */
static g2f_status check_role(const g2f_model *m, const g2f_tensor *x, int k, uint64_t rows, uint64_t cols,
                             g2f_error *err) {
    if (!g2f_dtype_is_float(x->dtype) && !g2f_dtype_is_quant(x->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s is not a float type", m->path, x->name,
                             roles[k], g2f_tensor_type_name(x));
    int ok = cols ? x->ndim == 2 && x->shape[0] == rows && x->shape[1] == cols : x->numel == rows;
    if (!ok) {
        char sh[64];
        g2f_shape_format(x, sh, sizeof sh);
        if (cols)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected [%llu, %llu]", m->path,
                                 x->name, roles[k], sh, (unsigned long long)rows, (unsigned long long)cols);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected %llu values", m->path,
                             x->name, roles[k], sh, (unsigned long long)rows);
    }
    return g2f_quant_check(x, m->path, err);
}

g2f_status g2f_model_layer_tensors_all(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_LAYER_TENSORS],
                                       int *attn_split, g2f_error *err) {
    for (int k = 0; k < G2F_LAYER_TENSORS; k++) out[k] = NULL;
    *attn_split = 0;
    g2f_status st = g2f_model_layer_tensors(m, layer, out, err);
    if (st != G2F_OK) return st;
    const scheme *S = &schemes[m->scheme];
    const uint64_t d = m->info.n_embd;
    int lin = m->info.layout == G2F_LAYOUT_LINEAR;
    const struct {
        int role;
        const char *name;
        uint64_t rows, cols;
    } want[] = {
        {G2F_BLK_LN1_W, S->ln[0][0], d, 0},
        {G2F_BLK_LN1_B, S->ln[0][1], d, 0},
        {G2F_BLK_ATTN_W, S->attn[0], lin ? 3 * d : d, lin ? d : 3 * d},
        {G2F_BLK_ATTN_B, S->attn[1], 3 * d, 0},
        {G2F_BLK_APROJ_W, S->attn[2], d, d},
        {G2F_BLK_APROJ_B, S->attn[3], d, 0},
        {G2F_BLK_LN2_W, S->ln[1][0], d, 0},
        {G2F_BLK_LN2_B, S->ln[1][1], d, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!want[i].name) continue; /* TransformerLens attention */
        const g2f_tensor *x = lookup(m, want[i].name, (int)layer);
        if (x && (st = check_role(m, x, want[i].role, want[i].rows, want[i].cols, err)) != G2F_OK) {
            for (int k = 0; k < G2F_LAYER_TENSORS; k++) out[k] = NULL;
            return st;
        }
        out[want[i].role] = x;
    }
    if (!S->attn[0]) *attn_split = lookup(m, "attn.W_Q", (int)layer) != NULL;
    return G2F_OK;
}

/* ---- every other tensor ----------------------------------------------- */

/* name after the container prefixes, as match_ffn_name strips them. */
static const char *after_containers(const char *name) {
    const char *p = name;
    for (int again = 1; again;) {
        again = 0;
        for (size_t c = 0; c < sizeof containers / sizeof containers[0]; c++) {
            size_t n = strlen(containers[c]);
            if (!strncmp(p, containers[c], n)) p += n, again = 1;
        }
    }
    return p;
}

/* <block>.N.attn.{bias, masked_bias, mask, IGNORE}: HF's, minGPT's and
 * TransformerLens' causal-mask buffers, not parameters. */
static int is_buffer(const char *key) {
    static const char *const blocks[] = {"h.", "blocks."}, *const tails[] = {"bias", "masked_bias", "mask", "IGNORE"};
    for (size_t b = 0; b < 2; b++) {
        size_t bl = strlen(blocks[b]);
        if (strncmp(key, blocks[b], bl)) continue;
        const char *q = key + bl;
        if (*q < '0' || *q > '9') continue;
        while (*q >= '0' && *q <= '9') q++;
        if (strncmp(q, ".attn.", 6)) continue;
        for (size_t t = 0; t < 4; t++)
            if (!strcmp(q + 6, tails[t])) return 1;
    }
    return 0;
}

/* The training dict's container holding the model ("model.", ...), or NULL
 * when the checkpoint is not such a dict. */
static const char *training_container(const g2f_model *m) {
    static const char *const dicts[] = {"model.", "model_state.", "state_dict."};
    if (g2f_source_format(m->src) != G2F_FORMAT_ZIP) return NULL;
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(m->prefix, dicts[i], strlen(dicts[i]))) return dicts[i];
    return NULL;
}

static void mark(unsigned char *used, const g2f_table *t, const g2f_tensor *x) {
    if (x) used[x - t->tensors] = 1;
}

g2f_status g2f_model_others(const g2f_model *m, g2f_model_other **out, size_t *n, g2f_error *err) {
    *out = NULL;
    *n = 0;
    const g2f_table *t = g2f_source_table(m->src);
    if (!t->count || !m->by_name) return G2F_OK;
    unsigned char *used = calloc(t->count, 1);
    if (!used) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    const scheme *S = &schemes[m->scheme];
    for (size_t L = 0; L < m->info.n_layer; L++) {
        for (int k = 0; k < G2F_FFN_TENSORS; k++) mark(used, t, m->layers[L][k]);
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < 2; k++) mark(used, t, lookup(m, S->ln[w][k], (int)L));
        for (int k = 0; k < 4; k++)
            if (S->attn[k]) mark(used, t, lookup(m, S->attn[k], (int)L));
        for (int k = 0; m->scheme == S_TLENS && k < 8; k++) mark(used, t, lookup(m, tl_attn_names[k], (int)L));
    }
    for (int r = 0; r < E_COUNT; r++) mark(used, t, lookup_end(m, r));
    for (int k = 0; k < 2; k++) mark(used, t, lookup(m, S->ln_f[k], -1));
    size_t count = 0;
    for (size_t i = 0; i < t->count; i++) count += !used[i];
    g2f_model_other *o = count ? calloc(count, sizeof *o) : NULL;
    if (count && !o) {
        free(used);
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    const char *dict = training_container(m);
    for (size_t i = 0, j = 0; i < t->count; i++) {
        if (used[i]) continue;
        const char *name = t->tensors[i].name;
        o[j].t = &t->tensors[i];
        o[j].key = after_containers(name);
        o[j].kind = dict && strncmp(name, dict, strlen(dict)) ? G2F_OTHER_TRAINING
                    : is_buffer(o[j].key)                   ? G2F_OTHER_BUFFER
                                                            : G2F_OTHER_UNKNOWN;
        j++;
    }
    free(used);
    *out = o;
    *n = count;
    return G2F_OK;
}
