/* g2f_cause: the code table and the one formatter of causes; see g2f_cause.h. */
#include "g2f_cause.h"

#include <stdio.h>
#include <string.h>

#include "g2f_model.h"
#include "g2f_quant.h"

/* How a code's parameter is written after its name ("name:param"). */
typedef enum param {
    P_NONE,
    P_LAYER,    /* :from_layer */
    P_MISREAD,  /* the FFN's :c_fc / :c_proj / :both, attention's :c_attn / :attn.c_proj */
    P_PART,     /* :c_attn / :attn.c_proj */
    P_RESIDUAL, /* :mid / :out */
    P_EPS,      /* :%g */
    P_SCALE,    /* :1/sqrt(n_embd), :1/d_head, or the value */
    P_QKV,      /* the thirds in the port's order: :kqv */
    P_QUANT,    /* :Q8_0 */
    P_OFFSET    /* :offset */
} param;

typedef struct code_entry {
    const char *name;  /* as reports print it */
    const char *words; /* for the sentence of a failing layer */
    param p;
    int gelu;          /* names a GELU form used instead of the asked one */
} code_entry;

static const code_entry code_table[G2F_DIAG_COUNT] = {
    [G2F_DIAG_GELU_ERF] = {"gelu_erf", "exact erf GELU (torch F.gelu default, HF 'gelu')", P_NONE, 1},
    [G2F_DIAG_GELU_TANH] = {"gelu_tanh", "the tanh GELU approximation ('gelu_new')", P_NONE, 1},
    [G2F_DIAG_FC_BIAS_MISSING] = {"fc_bias_missing", "no c_fc bias", P_NONE, 0},
    [G2F_DIAG_PROJ_BIAS_MISSING] = {"proj_bias_missing", "no c_proj bias", P_NONE, 0},
    [G2F_DIAG_RESIDUAL_INCLUDED] = {"residual_included", "the residual added (out = x + FFN(x))", P_NONE, 0},
    [G2F_DIAG_WEIGHTS_FROM_LAYER] = {"weights_from_layer", "the weights of layer %ld", P_LAYER, 0},
    [G2F_DIAG_WEIGHTS_F16_ROUNDED] = {"weights_f16_rounded", "weights rounded to float16", P_NONE, 0},
    [G2F_DIAG_WEIGHTS_BF16_ROUNDED] = {"weights_bf16_rounded", "weights rounded to bfloat16", P_NONE, 0},
    [G2F_DIAG_LAYOUT_MISREAD] = {"layout_misread",
                                 "Conv1D [in, out] weights read as Linear [out, in] without a transpose (%s)",
                                 P_MISREAD, 0},
    [G2F_DIAG_GELU_SIGMOID] = {"gelu_sigmoid", "the sigmoid GELU x sigmoid(1.702 x) (HF 'quick_gelu')", P_NONE, 1},
    [G2F_DIAG_GELU_MLX_APPROX] = {"gelu_mlx_approx",
                                  "MLX's former gelu_approx x sigmoid(1.60033 x (1 + 0.0433603 x^2))", P_NONE, 1},
    [G2F_DIAG_GELU_F16_TABLE] = {"gelu_f16_table", "ggml's float16 GELU table (llama.cpp's CPU GELU)", P_NONE, 1},
    [G2F_DIAG_GELU_CLIPPED] = {"gelu_clipped", "the GELU's output clipped to [-10, 10] (HF 'gelu_10')", P_NONE, 0},
    [G2F_DIAG_TF32_MATMUL] = {"tf32_matmul",
                              "both matmuls with inputs rounded to TF32 (PyTorch on an Ampere+ GPU with TF32 on)",
                              P_NONE, 0},
    [G2F_DIAG_F16_MATMUL] = {"f16_matmul",
                             "matmuls as ggml's F16 path runs them (F16 weights, inputs rounded to F16, float32 "
                             "accumulation)",
                             P_NONE, 0},
    [G2F_DIAG_ACT_F16_ROUNDED] = {"act_f16_rounded", "pre and act stored in float16 between the stages", P_NONE, 0},
    [G2F_DIAG_ACT_BF16_ROUNDED] = {"act_bf16_rounded", "pre and act stored in bfloat16 between the stages", P_NONE,
                                   0},
    [G2F_DIAG_AUTOCAST_F16] = {"autocast_f16",
                               "the FFN under torch.autocast(float16): inputs, weights, pre, act and out in float16",
                               P_NONE, 0},
    [G2F_DIAG_AUTOCAST_BF16] = {"autocast_bf16", "the FFN under torch.autocast(bfloat16)", P_NONE, 0},
    [G2F_DIAG_WEIGHTS_QUANTIZED] = {"weights_quantized", "weights quantized to %s (ggml's reference rounding)",
                                    P_QUANT, 0},
    [G2F_DIAG_LN2_INPUT_CAPTURED] = {"ln2_input_captured",
                                     "in recorded before ln_2 (the residual stream): out = FFN(ln_2(in))", P_NONE, 0},
    [G2F_DIAG_ATTN_MASK_MISSING] = {"attn_mask_missing", "no causal mask", P_NONE, 0},
    [G2F_DIAG_ATTN_SCALE_MISSING] = {"attn_scale_missing", "scores not divided by sqrt(d_head)", P_NONE, 0},
    [G2F_DIAG_ATTN_SCALE_LAYER_IDX] = {"attn_scale_layer_idx", "scores also divided by the layer index + 1", P_NONE,
                                       0},
    [G2F_DIAG_ATTN_SCALE] = {"attn_scale", "scores multiplied by another constant", P_SCALE, 0},
    [G2F_DIAG_QKV_ORDER] = {"qkv_order", "c_attn's output split in another order", P_QKV, 0},
    [G2F_DIAG_HEADS_INTERLEAVED] = {"heads_interleaved", "heads split as [d_head, n_head]", P_NONE, 0},
    [G2F_DIAG_ATTN_BIAS_MISSING] = {"attn_bias_missing", "an attention bias left out", P_PART, 0},
    [G2F_DIAG_LN_EPS] = {"ln_eps", "another LayerNorm epsilon", P_EPS, 0},
    [G2F_DIAG_LN_BIAS_MISSING] = {"ln_bias_missing", "no LayerNorm bias", P_NONE, 0},
    [G2F_DIAG_LN_WEIGHT_MISSING] = {"ln_weight_missing", "no LayerNorm gain", P_NONE, 0},
    [G2F_DIAG_RESIDUAL_MISSING] = {"residual_missing", "a residual add left out", P_RESIDUAL, 0},
    [G2F_DIAG_WPE_MISSING] = {"wpe_missing", "no position embedding (embed = wte[ids])", P_NONE, 0},
    [G2F_DIAG_WPE_OFFSET] = {"wpe_offset", "positions shifted", P_OFFSET, 0},
    [G2F_DIAG_LN_F_MISSING] = {"ln_f_missing", "no final LayerNorm (ln_f skipped)", P_NONE, 0},
    [G2F_DIAG_LM_HEAD_UNTIED] = {"lm_head_untied",
                                 "the logits made with wte although the checkpoint has its own lm_head", P_NONE, 0},
    [G2F_DIAG_EMBED_SCALED] = {"embed_scaled", "the token embedding multiplied by sqrt(n_embd)", P_NONE, 0},
    [G2F_DIAG_PROPAGATED] = {"propagated", "the first divergence upstream, carried here", P_NONE, 0},
    [G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT] = {"weights_quant_inconsistent",
                                             "%s weights with a %s block %llu (elements [%llu, %llu)) ggml's "
                                             "reference quantizer cannot write",
                                             P_QUANT, 0},
    [G2F_DIAG_TIE_FLIP] = {"tie_flip", "a near-tie: the two tokens' logits within their tolerance (expected)",
                           P_NONE, 0},
    [G2F_DIAG_CACHE_POSITION_RESET] = {"cache_position_reset", "positions restarted at 0 for each decode step",
                                       P_NONE, 0},
    [G2F_DIAG_CACHE_NOT_APPENDED] = {"cache_not_appended",
                                     "a decode step's keys and values not appended to the cache", P_NONE, 0},
    [G2F_DIAG_CACHE_OFFSET] = {"cache_offset", "the cache's past length (and the positions) off by %ld", P_OFFSET,
                               0},
    [G2F_DIAG_CACHE_K_SCALED] = {"cache_k_scaled",
                                 "keys cached after the attention scale (a cached key scaled twice)", P_NONE, 0},
    [G2F_DIAG_CACHE_KV_BEFORE_BIAS] = {"cache_kv_before_bias", "keys and values cached before c_attn's bias",
                                       P_NONE, 0},
    [G2F_DIAG_CACHE_KV_SWAPPED] = {"cache_kv_swapped", "the cached keys and values swapped", P_NONE, 0},
    [G2F_DIAG_PADDING_POSITIONS] = {"padding_positions",
                                    "positions counted through the left padding, not from the attention mask",
                                    P_NONE, 0},
    [G2F_DIAG_NONFINITE] = {"nonfinite", "non-finite values", P_NONE, 0},
    [G2F_DIAG_UNEXPLAINED] = {"unexplained", "no known cause", P_NONE, 0},
};

const char *g2f_diag_name(g2f_diag d) {
    return (unsigned)d < G2F_DIAG_COUNT && code_table[d].name ? code_table[d].name : "?";
}

void g2f_diag_set_format(g2f_diag_set set, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++)
        if (set & G2F_DIAG_BIT(d))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", code_table[d].name);
}

g2f_diag g2f_diag_of_gelu(g2f_gelu g) {
    switch (g) {
    case G2F_GELU_ERF: return G2F_DIAG_GELU_ERF;
    case G2F_GELU_SIGMOID: return G2F_DIAG_GELU_SIGMOID;
    case G2F_GELU_MLX: return G2F_DIAG_GELU_MLX_APPROX;
    case G2F_GELU_F16_TABLE: return G2F_DIAG_GELU_F16_TABLE;
    default: return G2F_DIAG_GELU_TANH;
    }
}

g2f_cause g2f_cause_of(g2f_diag_set codes, g2f_stage s) {
    g2f_cause c;
    memset(&c, 0, sizeof c);
    c.codes = codes;
    c.stage = s;
    c.from_layer = -1;
    return c;
}

static const char *const misread_names[] = {"", "c_fc", "c_proj", "both"};

/* Writes code d's parameter of c (":..."), nothing for P_NONE. */
static int put_param(const g2f_cause *c, int d, char *buf, size_t n) {
    static const char letters[] = "qkv";
    static const char *const scale_names[] = {NULL, "1/sqrt(n_embd)", "1/d_head"};
    switch (code_table[d].p) {
    case P_LAYER: return snprintf(buf, n, ":%ld", c->from_layer);
    case P_MISREAD: /* the FFN's three, else attention's two */
        if (c->misread > 0 && c->misread < 4) return snprintf(buf, n, ":%s", misread_names[c->misread]);
        return c->which ? snprintf(buf, n, ":%s", c->which == 1 ? "c_attn" : "attn.c_proj") : 0;
    case P_PART: return snprintf(buf, n, ":%s", c->which == 1 ? "c_attn" : "attn.c_proj");
    case P_RESIDUAL: return snprintf(buf, n, ":%s", c->which == 1 ? "mid" : "out");
    case P_EPS: return snprintf(buf, n, ":%g", c->eps);
    case P_SCALE:
        if (c->scale_name == 1 || c->scale_name == 2) return snprintf(buf, n, ":%s", scale_names[c->scale_name]);
        return snprintf(buf, n, ":%.4g", c->scale);
    case P_QKV: {
        char perm[4] = {0};
        for (int r = 0; r < 3; r++) perm[c->qkv_perm[r] & 3] = letters[r];
        return snprintf(buf, n, ":%s", perm);
    }
    case P_QUANT: return snprintf(buf, n, ":%s", g2f_dtype_name(c->quant));
    case P_OFFSET: return snprintf(buf, n, ":%ld", c->offset);
    default: return 0;
    }
}

void g2f_cause_codes(const g2f_cause *c, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++) {
        if (!(c->codes & G2F_DIAG_BIT(d))) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", code_table[d].name);
        if (used < n) used += (size_t)put_param(c, d, buf + used, n - used);
    }
}

/* Code d of c in words, its parameter filled in. */
static int put_words(const g2f_cause *c, int d, char *buf, size_t n) {
    const char *w = code_table[d].words;
    switch (d) {
    case G2F_DIAG_WEIGHTS_FROM_LAYER: return snprintf(buf, n, w, c->from_layer);
    case G2F_DIAG_LAYOUT_MISREAD:
        return snprintf(buf, n, w, c->misread == 3 ? "c_fc and c_proj" : misread_names[c->misread & 3]);
    case G2F_DIAG_WEIGHTS_QUANTIZED: return snprintf(buf, n, w, g2f_dtype_name(c->quant));
    case G2F_DIAG_CACHE_OFFSET: return snprintf(buf, n, w, c->offset);
    case G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT: {
        const g2f_quant_info *qi = g2f_quant_info_of(c->quant);
        unsigned long long b = (unsigned long long)c->quant_block, B = qi ? qi->block : 0;
        return snprintf(buf, n, w, g2f_dtype_name(c->quant), g2f_model_tensor_role(c->quant_role), b, b * B,
                        (b + 1) * B);
    }
    default: return snprintf(buf, n, "%s", w);
    }
}

void g2f_cause_words(const g2f_cause *c, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    int first = 1;
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++) {
        if (!(c->codes & G2F_DIAG_BIT(d))) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s", first ? "" : " and ");
        first = 0;
        if (used < n) used += (size_t)put_words(c, d, buf + used, n - used);
        if (code_table[d].gelu && used < n) {
            const char *instead = c->asked == G2F_GELU_TANH  ? "the tanh approximation ('gelu_new')"
                                  : c->asked == G2F_GELU_ERF ? "exact erf"
                                                             : g2f_gelu_name(c->asked);
            used += (size_t)snprintf(buf + used, n - used, " instead of %s", instead);
        }
    }
}

void g2f_causes_join(const g2f_cause *cs, size_t n_causes, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n_causes && used < n; i++) {
        char one[160];
        g2f_cause_codes(&cs[i], one, sizeof one);
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " | " : "", one);
    }
}

/* 1e-5 is GPT-2's; 1e-6 and 1e-12 other frameworks' defaults; the rest a
 * log grid between them and 1e-3 (an epsilon a port typed wrong). */
const double g2f_ln_eps_grid[G2F_LN_EPS_GRID_N] = {1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3};
/* which third of c_attn's output the port reads as q, k, v (not 0, 1, 2) */
const int g2f_qkv_perms[G2F_QKV_PERMS_N][3] = {{1, 0, 2}, {0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
const long g2f_wpe_offsets[G2F_WPE_OFFSETS_N] = {1, 2, 3, 4};

g2f_status g2f_search_other_layers(size_t n_layer, size_t self, g2f_layer_try try_layer, void *user,
                                   g2f_error *err) {
    int stop = 0;
    g2f_status st = G2F_OK;
    for (size_t K = 0; K < n_layer && !stop && st == G2F_OK; K++)
        if (K != self) st = try_layer(user, K, &stop, err);
    return st;
}

void g2f_stage_result_add(g2f_stage_result *r, const g2f_cause *c, size_t cap) {
    if (cap > G2F_STAGE_MAX_CAUSES) cap = G2F_STAGE_MAX_CAUSES;
    if (cap == 0 || (r->n_causes >= cap && r->causes[cap - 1].margin <= c->margin)) return;
    size_t i = r->n_causes < cap ? r->n_causes++ : cap - 1;
    while (i > 0 && r->causes[i - 1].margin > c->margin) r->causes[i] = r->causes[i - 1], i--;
    r->causes[i] = *c;
}
