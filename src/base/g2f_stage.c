/* g2f_stage: the stage table; see g2f_stage.h. */
#include "g2f_stage.h"

#include <stdio.h>
#include <string.h>

static const char *const stage_names[G2F_STAGE_COUNT] = {"embed", "ln_1", "attn", "mid", "ln_2",
                                                         "mlp",   "out",  "ln_f", "logits"};

int g2f_stage_per_layer(g2f_stage s) { return s >= G2F_BLOCK_FIRST && s <= G2F_BLOCK_LAST; }

int g2f_model_stage_next(int s) {
    do s++;
    while (s < G2F_STAGE_COUNT && g2f_stage_per_layer((g2f_stage)s));
    return s;
}

const char *g2f_stage_name(g2f_stage s) { return (unsigned)s < G2F_STAGE_COUNT ? stage_names[s] : "?"; }

/* One entry per activation: names (HF, HF alias, TransformerLens), the stage
 * it belongs to, its width, run's --save word(s). */
static const g2f_act_info acts[G2F_ACT_COUNT] = {
    [G2F_ACT_IDS] = {"input_ids", NULL, "input_ids", G2F_STAGE_EMBED, G2F_WIDTH_IDS, NULL, NULL},
    [G2F_ACT_EMBED] = {"embed", NULL, NULL, G2F_STAGE_EMBED, G2F_WIDTH_D, "embed", NULL},
    [G2F_ACT_TOK_EMBED] = {NULL, NULL, "hook_embed", G2F_STAGE_EMBED, G2F_WIDTH_D, NULL, NULL},
    [G2F_ACT_POS_EMBED] = {NULL, NULL, "hook_pos_embed", G2F_STAGE_EMBED, G2F_WIDTH_D, NULL, NULL},
    [G2F_ACT_IN] = {"in", NULL, "hook_resid_pre", G2F_STAGE_LN1, G2F_WIDTH_D, "in", NULL},
    [G2F_ACT_LN1] = {"ln_1.out", NULL, "ln1.hook_normalized", G2F_STAGE_LN1, G2F_WIDTH_D, "ln_1.out", NULL},
    [G2F_ACT_QKV] = {"attn.qkv", NULL, NULL, G2F_STAGE_ATTN, G2F_WIDTH_3D, "attn.qkv", NULL},
    [G2F_ACT_Q] = {NULL, NULL, "attn.hook_q", G2F_STAGE_ATTN, G2F_WIDTH_HEADS, NULL, NULL},
    [G2F_ACT_K] = {NULL, NULL, "attn.hook_k", G2F_STAGE_ATTN, G2F_WIDTH_HEADS, NULL, NULL},
    [G2F_ACT_V] = {NULL, NULL, "attn.hook_v", G2F_STAGE_ATTN, G2F_WIDTH_HEADS, NULL, NULL},
    [G2F_ACT_PROBS] = {"attn.probs", NULL, "attn.hook_pattern", G2F_STAGE_ATTN, G2F_WIDTH_PROBS, "attn.probs", NULL},
    [G2F_ACT_MERGED] = {"attn.merged", NULL, NULL, G2F_STAGE_ATTN, G2F_WIDTH_D, "attn.merged", NULL},
    [G2F_ACT_Z] = {NULL, NULL, "attn.hook_z", G2F_STAGE_ATTN, G2F_WIDTH_HEADS, NULL, NULL},
    [G2F_ACT_ATTN_OUT] = {"attn.out", NULL, "hook_attn_out", G2F_STAGE_ATTN, G2F_WIDTH_D, "attn.out", NULL},
    [G2F_ACT_MID] = {"mid", NULL, "hook_resid_mid", G2F_STAGE_MID, G2F_WIDTH_D, "mid", NULL},
    [G2F_ACT_MLP_IN] = {"mlp.in", "ln_2.out", "ln2.hook_normalized", G2F_STAGE_LN2, G2F_WIDTH_D, "mlp.in",
                        "ln_2.out"},
    [G2F_ACT_MLP_PRE] = {"mlp.pre", NULL, "mlp.hook_pre", G2F_STAGE_MLP, G2F_WIDTH_INNER, "mlp.pre", "pre"},
    [G2F_ACT_MLP_ACT] = {"mlp.act", NULL, "mlp.hook_post", G2F_STAGE_MLP, G2F_WIDTH_INNER, "mlp.act", "act"},
    [G2F_ACT_MLP_OUT] = {"mlp.out", NULL, "hook_mlp_out", G2F_STAGE_MLP, G2F_WIDTH_D, "mlp.out", NULL},
    [G2F_ACT_OUT] = {"out", NULL, "hook_resid_post", G2F_STAGE_OUT, G2F_WIDTH_D, "out", NULL},
    [G2F_ACT_LN_F] = {"ln_f.out", NULL, "ln_final.hook_normalized", G2F_STAGE_LN_F, G2F_WIDTH_D, "ln_f.out", NULL},
    [G2F_ACT_LOGITS] = {"logits", NULL, "logits", G2F_STAGE_LOGITS, G2F_WIDTH_VOCAB, NULL, NULL},
    [G2F_ACT_PROMPT_IDS] = {"prompt_ids", NULL, NULL, G2F_STAGE_EMBED, G2F_WIDTH_IDS, NULL, NULL},
    [G2F_ACT_GENERATED_IDS] = {"generated_ids", NULL, NULL, G2F_STAGE_LOGITS, G2F_WIDTH_IDS, NULL, NULL},
    [G2F_ACT_STEP_LOGITS] = {"step_logits", NULL, NULL, G2F_STAGE_LOGITS, G2F_WIDTH_VOCAB, NULL, NULL},
    [G2F_ACT_ATTENTION_MASK] = {"attention_mask", NULL, NULL, G2F_STAGE_EMBED, G2F_WIDTH_IDS, NULL, NULL},
    [G2F_ACT_EOS_ID] = {"eos_token_id", NULL, NULL, G2F_STAGE_LOGITS, G2F_WIDTH_SCALAR, NULL, NULL},
};

int g2f_act_is_generation(g2f_act a) { return a > G2F_ACT_FORWARD_LAST && a < G2F_ACT_COUNT; }

const g2f_act_info *g2f_act_info_of(g2f_act a) { return (unsigned)a < G2F_ACT_COUNT ? &acts[a] : NULL; }

int g2f_act_per_layer(g2f_act a) { return a >= G2F_ACT_IN && a <= G2F_ACT_OUT; }

int g2f_act_is_ffn(g2f_act a) { return a >= G2F_ACT_MLP_IN && a <= G2F_ACT_MLP_OUT; }

g2f_act g2f_ffn_act(int i) {
    static const g2f_act order[4] = {G2F_ACT_MLP_IN, G2F_ACT_MLP_OUT, G2F_ACT_MLP_PRE, G2F_ACT_MLP_ACT};
    return i >= 0 && i < 4 ? order[i] : G2F_ACT_COUNT;
}

void g2f_act_name(g2f_act a, long layer, int tl, char *buf, size_t n) {
    const g2f_act_info *i = g2f_act_info_of(a);
    const char *name = !i ? "?" : tl ? (i->tl ? i->tl : i->hf) : (i->hf ? i->hf : i->tl);
    if (i && g2f_act_per_layer(a)) snprintf(buf, n, "%s.%ld.%s", tl && i->tl ? "blocks" : "h", layer, name);
    else snprintf(buf, n, "%s", name);
}

long g2f_act_layer_prefix(const char *p, const char *block, const char **rest) {
    size_t bl = strlen(block);
    if (strncmp(p, block, bl) || p[bl] != '.') return -1;
    p += bl + 1;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9')) return -1;
    long v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v >= G2F_STAGE_MAX_LAYERS) return -2;
        p++;
    }
    if (*p != '.') return -1;
    *rest = p + 1;
    return v;
}

/* The activation whose name (HF with its alias, or TransformerLens) is s
 * among the layer's (per 1) or the model's (per 0), or -1. */
static int find(const char *s, int per, int tl) {
    for (int a = 0; a < G2F_ACT_COUNT; a++) {
        const g2f_act_info *i = &acts[a];
        if (g2f_act_per_layer((g2f_act)a) != per) continue;
        if (!tl && ((i->hf && !strcmp(s, i->hf)) || (i->hf_alias && !strcmp(s, i->hf_alias)))) return a;
        if (tl && i->tl && !strcmp(s, i->tl)) return a;
    }
    return -1;
}

int g2f_act_match(const char *name, size_t *layer, int *tl) {
    const char *p = name, *rest;
    *tl = 0;
    if (!strncmp(p, "transformer.", 12)) p += 12;
    long v = g2f_act_layer_prefix(p, "h", &rest);
    if (v == -2) return -2;
    if (v >= 0) {
        *layer = (size_t)v;
        return find(rest, 1, 0);
    }
    if ((v = g2f_act_layer_prefix(name, "blocks", &rest)) == -2) return -2;
    if (v >= 0) {
        *layer = (size_t)v;
        *tl = 1;
        return find(rest, 1, 1);
    }
    int a = find(p, 0, 0);
    if (a < 0 && (a = find(p, 0, 1)) >= 0) *tl = 1; /* a name only TransformerLens writes */
    return a;
}

int g2f_act_of_save_word(const char *word) {
    for (int a = 0; a < G2F_ACT_COUNT; a++)
        if ((acts[a].save && !strcmp(word, acts[a].save)) || (acts[a].save_alias && !strcmp(word, acts[a].save_alias)))
            return a;
    return -1;
}

size_t g2f_act_known_names(int layer_names, int tl, const char **names, size_t max) {
    size_t n = 0;
    for (int a = 0; a < G2F_ACT_COUNT && n < max; a++) {
        const g2f_act_info *i = &acts[a];
        if (g2f_act_per_layer((g2f_act)a) != (layer_names != 0)) continue;
        const char *const cand[3] = {layer_names && tl ? NULL : i->hf, layer_names && tl ? NULL : i->hf_alias,
                                     layer_names && !tl ? NULL : i->tl};
        for (int k = 0; k < 3 && n < max; k++) {
            int dup = 0;
            for (size_t j = 0; cand[k] && j < n; j++) dup |= !strcmp(names[j], cand[k]);
            if (cand[k] && !dup) names[n++] = cand[k];
        }
    }
    return n;
}
