/* g2f_diagnose: why a layer does not match. Each hypothesis is a small
 * transform of the computation (swap the GELU form, drop a bias, add the
 * residual, round the weights, misread a Conv1D buffer as Linear, take
 * another layer's weights), evaluated with the same FFN, tolerance and
 * comparison as verify. A hypothesis is reported only when its recomputation
 * matches the reference within tolerance.
 *
 * Search (runs only for failing layers):
 *   1. single hypotheses on a sample of at most G2F_DIAG_SAMPLE tokens
 *      spread over the fixture, survivors confirmed on every token;
 *   2. if none explains: another layer's weights (screened on 4 tokens by
 *      relative error, since a wrong layer is off by O(1)), alone or with
 *      the other GELU form;
 *   3. if still none: pairs of the cheap hypotheses (GELU forms and clipping,
 *      biases, residual, rounding, layout, precision paths, quantized
 *      weights, the LayerNorm input).
 * The smallest explanations win; when several of the same size match, all
 * are reported and the layer is marked undetermined: the data cannot tell
 * them apart. When none matches, the layer is unexplained and the report
 * says where the error lives (tokens, output channels, first diverging
 * stage and hidden units when the fixture has pre/act).
 */
#ifndef G2F_DIAGNOSE_H
#define G2F_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_ffn_eval.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_tol.h"

/* Diagnosis codes, as they appear in reports (README: Diagnosis codes). */
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
    G2F_DIAG_PROPAGATED,          /* "propagated:h.2.attn": a chained stage after the first divergence,
                                     which it follows from (its own recorded input matches) */
    G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT, /* "weights_quant_inconsistent:Q8_0": the checkpoint's quantized
                                    blocks are not ones ggml's reference quantizer writes (g2f_quant_consistent),
                                    so their error bound is not used; never accepted */
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

#define G2F_DIAG_SAMPLE 16
#define G2F_DIAG_MAX_CAUSES 8

/* One explanation: a set of codes and their details. */
typedef struct g2f_cause {
    g2f_diag_set codes;
    int misread;        /* with LAYOUT_MISREAD: 1 c_fc, 2 c_proj, 3 both */
    long from_layer;    /* with WEIGHTS_FROM_LAYER */
    g2f_dtype quant;    /* with WEIGHTS_QUANTIZED or WEIGHTS_QUANT_INCONSISTENT: the ggml type */
    g2f_gelu asked;     /* the GELU form verify asked for (the words say what was used instead) */
    double margin;      /* max err / tolerance of the recomputation (<= 1); +inf for WEIGHTS_QUANT_INCONSISTENT,
                           which is read from the checkpoint's blocks, not recomputed */
    int quant_role;     /* with WEIGHTS_QUANT_INCONSISTENT: the tensor, G2F_FFN_FC_W or G2F_FFN_PROJ_W */
    uint64_t quant_block; /* ... and its first inconsistent block */
} g2f_cause;

/* "gelu_erf,layout_misread:c_fc": the codes of a cause, comma-separated. */
void g2f_cause_codes(const g2f_cause *c, char *buf, size_t n);
/* The same in words: "exact erf GELU and no c_fc bias". */
void g2f_cause_words(const g2f_cause *c, char *buf, size_t n);

/* What verify accepts (--accept): rounding or quantization of the weights
 * that the user ported on purpose. */
#define G2F_ACCEPT_F16 G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED)
#define G2F_ACCEPT_BF16 G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_BF16_ROUNDED)
#define G2F_ACCEPT_QUANTIZED G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_QUANTIZED)
#define G2F_ACCEPT_F16_MATMUL G2F_DIAG_BIT(G2F_DIAG_F16_MATMUL)
#define G2F_ACCEPT_ALL (G2F_ACCEPT_F16 | G2F_ACCEPT_BF16 | G2F_ACCEPT_QUANTIZED | G2F_ACCEPT_F16_MATMUL)

typedef struct g2f_diag_input {
    const g2f_model *model;
    size_t layer;
    const g2f_ffn_weights *w;       /* the layer's weights */
    const g2f_layer *lw;            /* the layer as loaded (its source tensors: dtypes, quantized blocks) */
    const g2f_fixture_views *fx;    /* the layer's recorded tensors */
    g2f_gelu gelu;                  /* the form asked for */
    const g2f_tol_params *tol;
    int n_threads;
    g2f_ffn_eval_ws *ws;            /* buffers shared with verify */
} g2f_diag_input;

typedef struct g2f_diag_result {
    g2f_cause causes[G2F_DIAG_MAX_CAUSES];
    size_t n_causes;
    int undetermined;            /* more than one explanation fits */
    size_t sample_tokens;        /* tokens in the screening sample */
    size_t hypotheses_tried;
    char where[512];             /* for unexplained layers: where the error lives */
    char quant_why[200];         /* with WEIGHTS_QUANT_INCONSISTENT: what the block fails (g2f_quant_consistent) */
} g2f_diag_result;

g2f_status g2f_diagnose_layer(const g2f_diag_input *in, g2f_diag_result *out, g2f_error *err);

/* The computation a cause describes, for verify to re-run it (an accepted
 * cause, --accept). *how gets the weights to use; the caller frees
 * *owned (rounded or quantized copies, NULL when none) and the g2f_ln in
 * *ln with g2f_ln_free. */
g2f_status g2f_diag_how_of(const g2f_diag_input *in, const g2f_cause *c, g2f_ffn_how *how, g2f_ffn_weights *w,
                           float **owned, g2f_ln *ln, g2f_error *err);

#endif
