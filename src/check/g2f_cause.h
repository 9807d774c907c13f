/* g2f_cause: what explains a stage that does not match. One code table
 * (each code's name as reports print it, its words, its parameter) and one
 * cause type for every stage (the FFN's, the block's, the model's ends),
 * formatted by one set of functions for text, JSON and HTML. Adding a code
 * is an entry here plus, where it is tried, its recompute (the stage's
 * hypotheses: g2f_diagnose.c for the FFN, g2f_block.c for the block's
 * stages, g2f_forward.c for the ends). Codes: README / docs, Diagnosis. */
#ifndef G2F_CAUSE_H
#define G2F_CAUSE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_compare.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_stage.h"
#include "g2f_tensor.h"

/* Diagnosis codes, as they appear in reports (docs/diagnosis.md). */
typedef enum g2f_diag {
    G2F_DIAG_GELU_ERF,            /* reference used exact erf GELU where another form was asked */
    G2F_DIAG_GELU_TANH,           /* reference used the tanh GELU where another form was asked */
    G2F_DIAG_FC_BIAS_MISSING,
    G2F_DIAG_PROJ_BIAS_MISSING,
    G2F_DIAG_RESIDUAL_INCLUDED,   /* expected = x + FFN(x) */
    G2F_DIAG_WEIGHTS_FROM_LAYER,  /* "weights_from_layer:K" */
    G2F_DIAG_WEIGHTS_F16_ROUNDED,
    G2F_DIAG_WEIGHTS_BF16_ROUNDED,
    G2F_DIAG_LAYOUT_MISREAD,      /* "layout_misread:c_fc" / ":c_proj" / ":both" */
    G2F_DIAG_GELU_SIGMOID,        /* x sigmoid(1.702 x): HF quick_gelu */
    G2F_DIAG_GELU_MLX_APPROX,     /* MLX's former gelu_approx */
    G2F_DIAG_GELU_F16_TABLE,      /* ggml's float16 GELU table (llama.cpp's CPU GELU) */
    G2F_DIAG_GELU_CLIPPED,        /* the GELU's result clipped to [-10, 10] (HF gelu_10) */
    G2F_DIAG_TF32_MATMUL,         /* both products' inputs rounded to TF32 (an Ampere+ GPU with TF32 on) */
    G2F_DIAG_F16_MATMUL,          /* ggml's F16 path: F16 weights, every product's input rounded to F16,
                                     float32 accumulation and biases */
    G2F_DIAG_ACT_F16_ROUNDED,     /* pre and act stored in float16 between the stages */
    G2F_DIAG_ACT_BF16_ROUNDED,    /* ... in bfloat16 */
    G2F_DIAG_AUTOCAST_F16,        /* the whole FFN as torch.autocast(float16) runs it */
    G2F_DIAG_AUTOCAST_BF16,       /* ... autocast(bfloat16) */
    G2F_DIAG_WEIGHTS_QUANTIZED,   /* "weights_quantized:Q8_0": ggml-quantized weights on one side */
    G2F_DIAG_LN2_INPUT_CAPTURED,  /* the recorded in is ln_2's input (the residual stream) */
    /* the block's stages (g2f_block) */
    G2F_DIAG_ATTN_MASK_MISSING,   /* attended to later positions (no causal mask) */
    G2F_DIAG_ATTN_SCALE_MISSING,  /* scores not divided by sqrt(d_head) */
    G2F_DIAG_ATTN_SCALE_LAYER_IDX, /* scores also divided by layer + 1 (HF scale_attn_by_inverse_layer_idx) */
    G2F_DIAG_ATTN_SCALE,          /* "attn_scale:1/sqrt(n_embd)", ":1/d_head", ":0.0884": another constant
                                     multiplier of the scores (llm.c-style ports use 1/sqrt(n_embd)) */
    G2F_DIAG_QKV_ORDER,           /* "qkv_order:kqv": c_attn's output split in another order */
    G2F_DIAG_HEADS_INTERLEAVED,   /* heads split as [d_head, n_head] */
    G2F_DIAG_ATTN_BIAS_MISSING,   /* "attn_bias_missing:c_attn" / ":c_proj" */
    G2F_DIAG_LN_EPS,              /* "ln_eps:1e-12": another LayerNorm epsilon */
    G2F_DIAG_LN_BIAS_MISSING,
    G2F_DIAG_LN_WEIGHT_MISSING,
    G2F_DIAG_RESIDUAL_MISSING,    /* "residual_missing:mid" / ":out" */
    /* the model's ends (g2f_forward) */
    G2F_DIAG_WPE_MISSING,         /* embed = wte[ids]: no position embedding */
    G2F_DIAG_WPE_OFFSET,          /* "wpe_offset:K": positions K .. K+T-1 */
    G2F_DIAG_LN_F_MISSING,        /* ln_f skipped */
    G2F_DIAG_LM_HEAD_UNTIED,      /* logits made with wte where the checkpoint has its own head */
    G2F_DIAG_EMBED_SCALED,        /* wte[ids] multiplied by sqrt(n_embd) before wpe is added (the embed_scale
                                     of fairseq-style and Gemma-style decoders, which GPT-2 does not have) */
    G2F_DIAG_PROPAGATED,          /* "propagated:h.2.attn": a chained stage after the first divergence,
                                     which it follows from (its own recorded input matches) */
    G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT, /* "weights_quant_inconsistent:Q8_0": the checkpoint's quantized
                                    blocks are not ones ggml's reference quantizer writes (g2f_quant_consistent),
                                    so their error bound is not used; never accepted */
    /* a generation (g2f_genverify) */
    G2F_DIAG_TIE_FLIP,            /* the port chose another token where the reference's two are within the
                                     logits' tolerance: expected, not a failure (reported with the gap) */
    G2F_DIAG_CACHE_POSITION_RESET, /* positions restarted at 0 for each decode step */
    G2F_DIAG_CACHE_NOT_APPENDED,  /* a decode step's keys and values never stored in the cache */
    G2F_DIAG_CACHE_OFFSET,        /* "cache_offset:K": the past length off by K (positions and cache rows) */
    G2F_DIAG_CACHE_K_SCALED,      /* keys cached after the attention scale (a cached key scaled twice) */
    G2F_DIAG_CACHE_KV_BEFORE_BIAS, /* keys and values cached before c_attn's bias is added */
    G2F_DIAG_CACHE_KV_SWAPPED,    /* the key cache holds the values, the value cache the keys */
    G2F_DIAG_PADDING_POSITIONS,   /* positions counted through a batch's left padding (not from the
                                     attention mask's cumulative sum) */
    G2F_DIAG_NONFINITE,           /* NaN or Inf in the reference or the computation */
    G2F_DIAG_UNEXPLAINED,         /* none of the hypotheses reproduces the reference */
    G2F_DIAG_COUNT
} g2f_diag;
_Static_assert(G2F_DIAG_COUNT <= 64, "codes are bits of a g2f_diag_set");

/* A set of codes: bit G2F_DIAG_BIT(d) per code. */
typedef uint64_t g2f_diag_set;
#define G2F_DIAG_BIT(d) ((g2f_diag_set)1 << (d))

const char *g2f_diag_name(g2f_diag d);
/* The codes of a set without parameters ("weights_f16_rounded,f16_matmul"),
 * comma-separated, "" for the empty set. */
void g2f_diag_set_format(g2f_diag_set set, char *buf, size_t n);
/* The code naming GELU form g (gelu_tanh, gelu_erf, gelu_sigmoid, ...). */
g2f_diag g2f_diag_of_gelu(g2f_gelu g);

/* One explanation: a set of codes, their parameters, and how well its
 * recomputation fits. Fields a code does not use are 0 (from_layer -1). */
typedef struct g2f_cause {
    g2f_diag_set codes;
    g2f_stage stage;      /* where it was found (G2F_STAGE_MLP for the FFN's) */
    int misread;          /* LAYOUT_MISREAD of the FFN: 1 c_fc, 2 c_proj, 3 both */
    int which;            /* attn_bias_missing / layout_misread of attention: 1 c_attn, 2 c_proj;
                             residual_missing: 1 mid, 2 out; ln_*: 1 ln_1, 2 ln_2 */
    long from_layer;      /* WEIGHTS_FROM_LAYER */
    long offset;          /* WPE_OFFSET, CACHE_OFFSET */
    double eps;           /* LN_EPS */
    double scale;         /* ATTN_SCALE: the scores' multiplier used */
    int scale_name;       /* ATTN_SCALE: 1 1/sqrt(n_embd), 2 1/d_head, 0 a fitted value (shown as a number) */
    int qkv_perm[3];      /* QKV_ORDER: which third is read as q, k, v */
    g2f_dtype quant;      /* WEIGHTS_QUANTIZED or WEIGHTS_QUANT_INCONSISTENT: the ggml type */
    int quant_role;       /* WEIGHTS_QUANT_INCONSISTENT: the tensor, G2F_FFN_FC_W or G2F_FFN_PROJ_W */
    uint64_t quant_block; /* ... and its first inconsistent block */
    g2f_gelu asked;       /* the GELU form verify asked for (the words say what was used instead) */
    double margin;        /* max err / tolerance of the recomputation (<= 1); +inf for WEIGHTS_QUANT_INCONSISTENT,
                             which is read from the checkpoint's blocks, not recomputed */
} g2f_cause;

/* A cause of codes found at stage s, every parameter unset. */
g2f_cause g2f_cause_of(g2f_diag_set codes, g2f_stage s);
/* "gelu_erf,layout_misread:c_fc", "qkv_order:kqv", "wpe_offset:1": the codes of a cause with their
 * parameters, comma-separated. */
void g2f_cause_codes(const g2f_cause *c, char *buf, size_t n);
/* The same in words: "exact erf GELU and no c_fc bias". */
void g2f_cause_words(const g2f_cause *c, char *buf, size_t n);
/* Alternatives, " | " between them: "tf32_matmul | f16_matmul" ("" for none). */
void g2f_causes_join(const g2f_cause *cs, size_t n_causes, char *buf, size_t n);

/* One stage's verdict, for every stage (the block's, the model's ends,
 * chained or from its recorded input): the comparison of its recorded
 * tensors, and when it fails, what explains it. */
#define G2F_STAGE_MAX_CAUSES 8
typedef struct g2f_stage_result {
    int checked;                 /* compared: its input and its output recorded (chained: its output) */
    int pass;
    size_t mismatched, total;    /* over the stage's compared tensors */
    double margin;               /* the largest of theirs */
    g2f_cmp worst;               /* the comparison of the tensor with that margin */
    const char *worst_tensor;    /* its name ("attn.probs", "logits", ...) */
    size_t n_causes;             /* failing stages: explanations found, best first (none: unexplained) */
    g2f_cause causes[G2F_STAGE_MAX_CAUSES];
    size_t hypotheses_tried;
    g2f_diag_set accepted;       /* judged on an accepted cause's recomputation (--accept), its codes; the
                                    figures are that recomputation's, causes those of the plain check */
    char propagated[48];         /* a chained stage failing after the model's first divergence: where that
                                    is ("h.2.attn", "embed"), the code propagated:<it>; "" otherwise */
} g2f_stage_result;

/* The search grids, each defined once for every stage that tries it. */
#define G2F_LN_EPS_GRID_N 7
extern const double g2f_ln_eps_grid[G2F_LN_EPS_GRID_N]; /* LayerNorm epsilons ports use */
#define G2F_QKV_PERMS_N 5
extern const int g2f_qkv_perms[G2F_QKV_PERMS_N][3];    /* c_attn's thirds in another order */
#define G2F_WPE_OFFSETS_N 4
extern const long g2f_wpe_offsets[G2F_WPE_OFFSETS_N];  /* positions shifted by K */

/* "Another layer's weights", one walk for every check (the FFN's, the
 * block's stages, diff): try(user, K, &stop, err) for each layer K != self
 * in order, until it sets stop or returns an error (returned). */
typedef g2f_status (*g2f_layer_try)(void *user, size_t K, int *stop, g2f_error *err);
g2f_status g2f_search_other_layers(size_t n_layer, size_t self, g2f_layer_try try_layer, void *user,
                                   g2f_error *err);

/* Adds c to r's causes, kept sorted by margin (the best fit first), at
 * most cap (<= G2F_STAGE_MAX_CAUSES) of them: when full, c replaces the
 * worst if it fits better. */
void g2f_stage_result_add(g2f_stage_result *r, const g2f_cause *c, size_t cap);

/* What verify accepts (--accept): rounding or quantization of the weights
 * that the user ported on purpose. */
#define G2F_ACCEPT_F16 G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED)
#define G2F_ACCEPT_BF16 G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_BF16_ROUNDED)
#define G2F_ACCEPT_QUANTIZED G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_QUANTIZED)
#define G2F_ACCEPT_F16_MATMUL G2F_DIAG_BIT(G2F_DIAG_F16_MATMUL)
#define G2F_ACCEPT_ALL (G2F_ACCEPT_F16 | G2F_ACCEPT_BF16 | G2F_ACCEPT_QUANTIZED | G2F_ACCEPT_F16_MATMUL)
/* The precisions of a block's stages and the model's ends (rounded weights, ggml's F16 matmul):
 * what --accept takes there, and the causes held to the trend test. */
#define G2F_ACCEPT_PRECISION (G2F_ACCEPT_F16 | G2F_ACCEPT_BF16 | G2F_ACCEPT_F16_MATMUL)

#endif
