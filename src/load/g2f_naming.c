/* g2f_naming: the naming schemes' table and the name matching; see g2f_naming.h. */
#include "g2f_naming.h"

#include <string.h>

static const char *const roles[] = {"c_fc.weight",        "c_fc.bias",          "c_proj.weight",
                                    "c_proj.bias",        "ln_1.weight",        "ln_1.bias",
                                    "attn.c_attn.weight", "attn.c_attn.bias",   "attn.c_proj.weight",
                                    "attn.c_proj.bias",   "ln_2.weight",        "ln_2.bias"};
_Static_assert(sizeof roles / sizeof roles[0] == G2F_LAYER_TENSORS, "one name per tensor");

const char *g2f_model_tensor_role(int k) { return (unsigned)k < G2F_LAYER_TENSORS ? roles[k] : "?"; }

static const char *const end_role_names[G2F_END_TENSORS] = {"wte", "wpe", "ln_f.weight", "ln_f.bias", "head",
                                                            "head.bias"};

const char *g2f_model_end_role(int k) { return (unsigned)k < G2F_END_TENSORS ? end_role_names[k] : "?"; }

/* Designated fields: a scheme without TransformerLens' split attention
 * leaves split_attn NULL, TransformerLens leaves attn NULL. */
const g2f_scheme g2f_schemes[G2F_SCHEME_COUNT] = {
    [G2F_SCHEME_HF] = {
        .name = "HF GPT-2 (h.N.mlp.c_fc)", .block = "h", .middle = "mlp.",
        .suffix = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"},
        .ln2 = "ln_2.weight",
        .ln = {{"ln_1.weight", "ln_1.bias"}, {"ln_2.weight", "ln_2.bias"}},
        .ln_f = {"ln_f.weight", "ln_f.bias"},
        .attn = {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"},
        .ends = {{"wte.weight", NULL}, {"wpe.weight", NULL}, {"lm_head.weight", NULL}, {NULL}},
    },
    [G2F_SCHEME_MINGPT] = {
        .name = "minGPT (blocks.N.mlp.c_fc)", .block = "blocks", .middle = "mlp.",
        .suffix = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"},
        .ln2 = "ln_2.weight",
        .ln = {{"ln_1.weight", "ln_1.bias"}, {"ln_2.weight", "ln_2.bias"}},
        .ln_f = {"ln_f.weight", "ln_f.bias"},
        .attn = {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias"},
        .ends = {{"wte.weight", "tok_emb.weight", NULL}, {"wpe.weight", "pos_emb.weight", "pos_emb", NULL},
                 {"lm_head.weight", "head.weight", NULL}, {NULL}},
    },
    [G2F_SCHEME_TLENS] = {
        .name = "TransformerLens (blocks.N.mlp.W_in)", .block = "blocks", .middle = "mlp.",
        .suffix = {"W_in", "b_in", "W_out", "b_out"},
        .ln2 = "ln2.w",
        .ln = {{"ln1.w", "ln1.b"}, {"ln2.w", "ln2.b"}},
        .ln_f = {"ln_final.w", "ln_final.b"},
        .split_attn = {"attn.W_Q", "attn.W_K", "attn.W_V", "attn.b_Q", "attn.b_K", "attn.b_V", "attn.W_O", "attn.b_O"},
        .ends = {{"embed.W_E", NULL}, {"pos_embed.W_pos", NULL}, {"unembed.W_U", NULL}, {"unembed.b_U", NULL}},
    },
    [G2F_SCHEME_GGUF] = {
        .name = "GGUF (blk.N.ffn_up)", .block = "blk", .middle = "",
        .suffix = {"ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"},
        .ln2 = "ffn_norm.weight",
        .ln = {{"attn_norm.weight", "attn_norm.bias"}, {"ffn_norm.weight", "ffn_norm.bias"}},
        .ln_f = {"output_norm.weight", "output_norm.bias"},
        .attn = {"attn_qkv.weight", "attn_qkv.bias", "attn_output.weight", "attn_output.bias"},
        .ends = {{"token_embd.weight", NULL}, {"position_embd.weight", NULL}, {"output.weight", NULL},
                 {"output.bias", NULL}},
    },
};

static const char *const containers[] = {"model.", "model_state.", "state_dict.", "module.", "_orig_mod.",
                                         "transformer."};

const char *g2f_naming_strip_containers(const char *name) {
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

int g2f_naming_match_ffn(const char *name, int *scheme_out, size_t *layer, size_t *prefix_len) {
    const char *p = g2f_naming_strip_containers(name);
    for (int sc = 0; sc < G2F_SCHEME_COUNT; sc++) {
        const g2f_scheme *S = &g2f_schemes[sc];
        size_t bl = strlen(S->block);
        if (strncmp(p, S->block, bl) || p[bl] != '.') continue;
        const char *q = p + bl + 1;
        if (*q < '0' || *q > '9' || (q[0] == '0' && q[1] >= '0' && q[1] <= '9')) continue;
        size_t v = 0;
        while (*q >= '0' && *q <= '9') {
            v = v * 10 + (size_t)(*q - '0');
            if (v >= G2F_NAMING_MAX_LAYERS) return -2;
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

int g2f_naming_is_buffer(const char *key) {
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

const char *g2f_naming_training_container(const char *prefix) {
    static const char *const dicts[] = {"model.", "model_state.", "state_dict."};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(prefix, dicts[i], strlen(dicts[i]))) return dicts[i];
    return NULL;
}

g2f_layout g2f_naming_conventional_layout(g2f_format f, int scheme, const char *prefix, const char **why) {
    if (f == G2F_FORMAT_GGUF)
        return *why = "the GGUF convention (ffn_up is row-major [n_inner, n_embd])", G2F_LAYOUT_LINEAR;
    if (f == G2F_FORMAT_LLMC) return *why = "the llm.c convention (Linear [out, in])", G2F_LAYOUT_LINEAR;
    if (scheme == G2F_SCHEME_TLENS)
        return *why = "the TransformerLens convention (W_in is [d_model, d_mlp])", G2F_LAYOUT_CONV1D;
    if (scheme == G2F_SCHEME_MINGPT) return *why = "the minGPT convention (nn.Linear [out, in])", G2F_LAYOUT_LINEAR;
    if (f == G2F_FORMAT_ZIP && (strstr(prefix, "_orig_mod.") || !strncmp(prefix, "model.", 6)))
        return *why = "the nanoGPT convention (nn.Linear [out, in])", G2F_LAYOUT_LINEAR;
    return *why = "the HF convention (Conv1D [in, out])", G2F_LAYOUT_CONV1D;
}
