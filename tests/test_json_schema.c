/* The JSON reports against the schema docs/json.md documents,
 * so that neither can drift from the other:
 *   1. every JSON report the CLI writes over the bundled fixtures (verify on
 *      every fixture, with --gelu erf, --layers, --atol; inspect on every
 *      checkpoint format; diff across formats and sizes) is parsed and
 *      checked field by field: names (no missing required field, no
 *      undocumented one), types, enumerations, and the rules on which
 *      fields appear when;
 *   2. the schema below and docs/json.md name the same things: every
 *      quoted name in the page is a field or an enumerated value here,
 *      and every field and value here is quoted there.
 * argv[1] = fixtures folder (docs/ is beside it), argv[2] = CLI. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

/* ---- the schema ---------------------------------------------------------
 * A field: its key, the JSON types it may take, whether it is required, and
 * for strings an enumeration ("a|b"; "*" = any string), for objects the
 * object's fields, for arrays the items' type (and their fields). */
enum { S = 1, I = 2, N = 4, Z = 8, B = 16, O = 32, A = 64 }; /* string, integer, number, null, bool, object, array */

typedef struct field field;
struct field {
    const char *key;
    int types, required;
    const char *values;   /* strings: "a|b", or a rule name in <...>; NULL: any */
    const field *fields;  /* O, or A of O: the object's fields (ended by a NULL key) */
    int item_types;       /* A: the items' types */
    const char *item_values;
};

#define END {NULL, 0, 0, NULL, NULL, 0, NULL}
#define FLOAT_DTYPES "F32|F16|BF16|F64"
#define QUANT_TYPES "Q4_0|Q4_1|Q5_0|Q5_1|Q8_0|Q4_K|Q5_K|Q6_K"
#define ROLES "c_fc.weight|c_fc.bias|c_proj.weight|c_proj.bias|ln_1.weight|ln_1.bias|attn.c_attn.weight|" \
              "attn.c_attn.bias|attn.c_proj.weight|attn.c_proj.bias|ln_2.weight|ln_2.bias"

static const field model_fields[] = {
    {"path", S, 1, NULL, NULL, 0, NULL},
    {"format", S, 1, NULL, NULL, 0, NULL},
    {"naming", S, 1, NULL, NULL, 0, NULL},
    {"prefix", S, 1, NULL, NULL, 0, NULL},
    {"dtype", S, 1, FLOAT_DTYPES "|" QUANT_TYPES, NULL, 0, NULL},
    {"layout", S, 1, "conv1d|linear", NULL, 0, NULL},
    {"layout_source", S, 1, NULL, NULL, 0, NULL},
    {"n_layer", I, 1, NULL, NULL, 0, NULL},
    {"n_embd", I, 1, NULL, NULL, 0, NULL},
    {"n_inner", I, 1, NULL, NULL, 0, NULL},
    {"fc_bias", B, 1, NULL, NULL, 0, NULL},
    {"proj_bias", B, 1, NULL, NULL, 0, NULL},
    {"config", S | Z, 1, NULL, NULL, 0, NULL},
    {"config_source", S, 1, NULL, NULL, 0, NULL},
    {"activation_function", S, 0, "gelu_new|gelu_pytorch_tanh|gelu_fast|gelu", NULL, 0, NULL},
    {"n_head", I | Z, 1, NULL, NULL, 0, NULL},
    {"n_head_source", S | Z, 1, NULL, NULL, 0, NULL},
    END};

static const field worst_fields[] = {
    {"token", I, 1, NULL, NULL, 0, NULL},    {"index", I, 1, NULL, NULL, 0, NULL},
    {"expected", N | Z, 1, NULL, NULL, 0, NULL}, {"computed", N | Z, 1, NULL, NULL, 0, NULL},
    {"tolerance", N | Z, 1, NULL, NULL, 0, NULL}, END};

/* numbers that can be non-finite are N | Z: JSON writes NaN and Inf as null */
static const field cmp_fields[] = {
    {"max_abs_err", N, 1, NULL, NULL, 0, NULL},  {"max_rel_err", N, 1, NULL, NULL, 0, NULL},
    {"margin", N | Z, 1, NULL, NULL, 0, NULL},   {"mismatched", I, 1, NULL, NULL, 0, NULL},
    {"total", I, 1, NULL, NULL, 0, NULL},        {"nonfinite", I, 1, NULL, NULL, 0, NULL},
    {"cosine", N, 1, NULL, NULL, 0, NULL},       {"sqnr_db", N | Z, 1, NULL, NULL, 0, NULL},
    {"worst", O, 1, NULL, worst_fields, 0, NULL}, END};

static const field compared_fields[] = {
    {"out", O, 1, NULL, cmp_fields, 0, NULL},
    {"out_other_gelu", O, 1, NULL, cmp_fields, 0, NULL},
    {"pre", O, 0, NULL, cmp_fields, 0, NULL},
    {"act", O, 0, NULL, cmp_fields, 0, NULL},
    END};

static const field cause_fields[] = {
    {"codes", A, 1, NULL, NULL, S, "<code>"},
    {"margin", N | Z, 1, NULL, NULL, 0, NULL},
    END};

static const field gelu_margin_fields[] = {
    {"tanh", N | Z, 1, NULL, NULL, 0, NULL},    {"erf", N | Z, 1, NULL, NULL, 0, NULL},
    {"sigmoid", N | Z, 1, NULL, NULL, 0, NULL}, {"mlx_approx", N | Z, 1, NULL, NULL, 0, NULL},
    {"f16_table", N | Z, 1, NULL, NULL, 0, NULL}, END};

static const field gelu_token_fields[] = {
    {"tanh", I, 1, NULL, NULL, 0, NULL},    {"erf", I, 1, NULL, NULL, 0, NULL},
    {"sigmoid", I, 1, NULL, NULL, 0, NULL}, {"mlx_approx", I, 1, NULL, NULL, 0, NULL},
    {"f16_table", I, 1, NULL, NULL, 0, NULL}, END};

static const field stage_worst_fields[] = {
    {"tensor", S, 1, "<stage_tensor>", NULL, 0, NULL}, {"index", I, 1, NULL, NULL, 0, NULL},
    {"expected", N | Z, 1, NULL, NULL, 0, NULL}, {"computed", N | Z, 1, NULL, NULL, 0, NULL},
    {"tolerance", N | Z, 1, NULL, NULL, 0, NULL}, END};

/* a block stage: the figures only when checked */
static const field stage_fields[] = {
    {"stage", S, 1, "ln_1|attn|mid|ln_2|mlp|out", NULL, 0, NULL},
    {"status", S, 1, "pass|fail|not_checked", NULL, 0, NULL},
    {"margin", N | Z, 0, NULL, NULL, 0, NULL},
    {"mismatched", I, 0, NULL, NULL, 0, NULL},
    {"total", I, 0, NULL, NULL, 0, NULL},
    {"cosine", N, 0, NULL, NULL, 0, NULL},
    {"worst", O, 0, NULL, stage_worst_fields, 0, NULL},
    {"diagnosis", A, 0, NULL, NULL, S, "<code>"},
    {"causes", A, 0, NULL, cause_fields, O, NULL},
    {"accepted", A, 0, NULL, NULL, S, "<code>"},
    END};

static const field chained_fields[] = {
    {"diverged", B, 1, NULL, NULL, 0, NULL},
    {"accepted", A, 0, NULL, NULL, S, "<code>"},
    {"first_stage", S | Z, 1, "ln_1|attn|mid|ln_2|mlp|out", NULL, 0, NULL},
    {"tensor", S, 0, "<stage_tensor>", NULL, 0, NULL},
    {"margin", N | Z, 0, NULL, NULL, 0, NULL},
    END};

/* layer: "compared" marks the fields only compared layers have */
static const field layer_fields[] = {
    {"layer", I, 1, NULL, NULL, 0, NULL},
    {"status", S, 1, "pass|fail|skipped", NULL, 0, NULL},
    {"ffn_status", S, 0, "pass|fail", NULL, 0, NULL},
    {"explanation", S, 1, NULL, NULL, 0, NULL},
    {"ffn_compared", B, 0, NULL, NULL, 0, NULL},
    {"stages", A, 0, NULL, stage_fields, O, NULL},
    {"chained", O | Z, 0, NULL, chained_fields, 0, NULL},
    {"attention_note", S, 0, NULL, NULL, 0, NULL},
    {"tokens", I, 0, NULL, NULL, 0, NULL},
    {"max_abs_err", N, 0, NULL, NULL, 0, NULL},
    {"max_rel_err", N, 0, NULL, NULL, 0, NULL},
    {"mismatched", I, 0, NULL, NULL, 0, NULL},
    {"total", I, 0, NULL, NULL, 0, NULL},
    {"margin", N | Z, 0, NULL, NULL, 0, NULL},
    {"best_gelu", S, 0, "tanh|erf|indistinguishable|neither|sigmoid|mlx_approx|f16_table", NULL, 0, NULL},
    {"gelu_verified", B, 0, NULL, NULL, 0, NULL},
    {"sep_out", N | Z, 0, NULL, NULL, 0, NULL},
    {"sep_act", N | Z, 0, NULL, NULL, 0, NULL},
    {"gelu_separation", N | Z, 0, NULL, NULL, 0, NULL},
    {"gelu_margins", O, 0, NULL, gelu_margin_fields, 0, NULL},
    {"gelu_tokens", I, 0, NULL, NULL, 0, NULL},
    {"gelu_margin_tokens", O, 0, NULL, gelu_token_fields, 0, NULL},
    {"gelu_margins_pre_act", O, 0, NULL, gelu_margin_fields, 0, NULL},
    {"diagnosis", A, 0, NULL, NULL, S, "<code>"},
    {"accepted", A, 0, NULL, NULL, S, "<code>"},
    {"causes", A, 0, NULL, cause_fields, O, NULL},
    {"undetermined", B, 0, NULL, NULL, 0, NULL},
    {"where", S, 0, NULL, NULL, 0, NULL},
    {"hypotheses_tried", I, 0, NULL, NULL, 0, NULL},
    {"compared", O, 0, NULL, compared_fields, 0, NULL},
    END};

/* the whole forward ("forward"): a model-level stage, figures only when checked */
static const field mstage_fields[] = {
    {"status", S, 1, "pass|fail|not_checked", NULL, 0, NULL},
    {"tensor", S, 0, NULL, NULL, 0, NULL},
    {"margin", N | Z, 0, NULL, NULL, 0, NULL},
    {"mismatched", I, 0, NULL, NULL, 0, NULL},
    {"total", I, 0, NULL, NULL, 0, NULL},
    {"cosine", N, 0, NULL, NULL, 0, NULL},
    {"worst", O, 0, NULL, worst_fields, 0, NULL},
    {"diagnosis", A, 0, NULL, NULL, S, "<code>"},
    END};
static const field mstages_fields[] = {
    {"embed", O, 1, NULL, mstage_fields, 0, NULL},
    {"ln_f", O, 1, NULL, mstage_fields, 0, NULL},
    {"logits", O, 1, NULL, mstage_fields, 0, NULL},
    END};
static const field first_div_fields[] = {
    {"layer", I | Z, 1, NULL, NULL, 0, NULL},
    {"stage", S, 1, "embed|ln_1|attn|mid|ln_2|mlp|out|ln_f|logits", NULL, 0, NULL},
    {"tensor", S, 1, NULL, NULL, 0, NULL},
    {"margin", N | Z, 1, NULL, NULL, 0, NULL},
    {"codes", A, 1, NULL, NULL, S, "<code>"},
    {"not_diagnosed", S, 0, NULL, NULL, 0, NULL},
    END};
static const field stage_margin_fields[] = {
    {"ln_1", N | Z, 0, NULL, NULL, 0, NULL}, {"attn", N | Z, 0, NULL, NULL, 0, NULL},
    {"mid", N | Z, 0, NULL, NULL, 0, NULL},  {"ln_2", N | Z, 0, NULL, NULL, 0, NULL},
    {"mlp", N | Z, 0, NULL, NULL, 0, NULL},  {"out", N | Z, 0, NULL, NULL, 0, NULL}, END};
static const field forward_layer_fields[] = {
    {"layer", I, 1, NULL, NULL, 0, NULL},
    {"diverged", B, 1, NULL, NULL, 0, NULL},
    {"first_stage", S | Z, 1, "ln_1|attn|mid|ln_2|mlp|out", NULL, 0, NULL},
    {"tensor", S, 0, "<stage_tensor>", NULL, 0, NULL},
    {"margin", N | Z, 0, NULL, NULL, 0, NULL},
    {"margins", O, 1, NULL, stage_margin_fields, 0, NULL},
    {"diagnosis", A, 1, NULL, NULL, S, "<code>"},
    END};
static const field token_fields[] = {
    {"id", I, 1, NULL, NULL, 0, NULL}, {"text", S, 1, NULL, NULL, 0, NULL}, END};
static const field position_fields[] = {
    {"sequence", I, 1, NULL, NULL, 0, NULL}, {"token", I, 1, NULL, NULL, 0, NULL},
    {"reference", O, 0, NULL, token_fields, 0, NULL}, {"ours", O, 0, NULL, token_fields, 0, NULL}, END};
static const field loss_side_fields[] = {
    {"status", S, 1, "pass|fail", NULL, 0, NULL}, {"loss", N, 1, NULL, NULL, 0, NULL},
    {"bound", N, 1, NULL, NULL, 0, NULL},         {"margin", N | Z, 1, NULL, NULL, 0, NULL}, END};
static const field loss_fields[] = {
    {"status", S, 1, "pass|fail|not_checked", NULL, 0, NULL},
    {"why", S | Z, 1, NULL, NULL, 0, NULL},
    {"reference", N, 1, NULL, NULL, 0, NULL},
    {"positions", I, 1, NULL, NULL, 0, NULL},
    {"chained", O | Z, 1, NULL, loss_side_fields, 0, NULL},
    {"isolated", O | Z, 1, NULL, loss_side_fields, 0, NULL},
    {"diagnosis", A, 1, NULL, NULL, S, NULL},
    {"gradients_not_checked", I, 1, NULL, NULL, 0, NULL},
    END};
static const field agreement_fields[] = {
    {"top1_agree", I, 1, NULL, NULL, 0, NULL},
    {"positions", I, 1, NULL, NULL, 0, NULL},
    {"max_kl", N | Z, 1, NULL, NULL, 0, NULL},
    {"max_kl_position", I, 1, NULL, NULL, 0, NULL},
    {"differing_positions", A, 1, NULL, position_fields, O, NULL},
    END};
static const field forward_fields[] = {
    {"status", S, 1, "pass|fail|not_checked", NULL, 0, NULL},
    {"accepted", A, 1, NULL, NULL, S, "<code>"},
    {"compared", I, 1, NULL, NULL, 0, NULL},
    {"failed", I, 1, NULL, NULL, 0, NULL},
    {"chained", B, 1, NULL, NULL, 0, NULL},
    {"chain_note", S | Z, 1, NULL, NULL, 0, NULL},
    {"sequences", I, 1, NULL, NULL, 0, NULL},
    {"tokens", I, 1, NULL, NULL, 0, NULL},
    {"vocab", I, 1, NULL, NULL, 0, NULL},
    {"head", S, 1, "tied|untied", NULL, 0, NULL},
    {"first_divergence", O | Z, 1, NULL, first_div_fields, 0, NULL},
    {"chained_stages", O, 1, NULL, mstages_fields, 0, NULL},
    {"isolated_stages", O, 1, NULL, mstages_fields, 0, NULL},
    {"layers", A, 1, NULL, forward_layer_fields, O, NULL},
    {"logits_agreement", O | Z, 1, NULL, agreement_fields, 0, NULL},
    {"loss", O, 0, NULL, loss_fields, 0, NULL},
    END};

static const field tolerance_fields[] = {
    {"mode", S, 1, "derived|user", NULL, 0, NULL},
    {"sigmas", N, 0, NULL, NULL, 0, NULL},
    {"sums_of_squares", S, 0, "float32|bfloat16_up", NULL, 0, NULL},
    {"rtol", N, 0, NULL, NULL, 0, NULL},
    {"atol", N, 0, NULL, NULL, 0, NULL},
    {"kernels", S, 1, "portable|avx2|avx512|avx512_bf16|amx", NULL, 0, NULL},
    END};

static const field alias_fields[] = {
    {"kept", S, 1, NULL, NULL, 0, NULL},       {"other", S, 1, NULL, NULL, 0, NULL},
    {"same", B, 1, NULL, NULL, 0, NULL},       {"shapes_differ", B, 1, NULL, NULL, 0, NULL},
    {"differing", I, 1, NULL, NULL, 0, NULL},  {"total", I, 1, NULL, NULL, 0, NULL},
    {"max_abs_diff", N | Z, 1, NULL, NULL, 0, NULL}, END};

static const field unknown_fields[] = {
    {"name", S, 1, NULL, NULL, 0, NULL}, {"did_you_mean", S | Z, 1, NULL, NULL, 0, NULL},
    {"why", S, 0, NULL, NULL, 0, NULL}, END};

static const field norm_fields[] = {
    {"tensor", S, 1, NULL, NULL, 0, NULL}, {"reading", S, 1, "after|before|same|undecided", NULL, 0, NULL},
    {"forced", B, 1, NULL, NULL, 0, NULL}, END};

static const field verify_fields[] = {
    {"checkpoint", S, 1, NULL, NULL, 0, NULL},
    {"fixtures", S, 1, NULL, NULL, 0, NULL},
    {"gelu", S, 1, "tanh|erf|sigmoid|mlx_approx|f16_table", NULL, 0, NULL},
    {"gelu_source", S, 1, "<gelu_source>", NULL, 0, NULL},
    {"status", S, 1, "pass|fail", NULL, 0, NULL},
    {"verdict", S, 1, NULL, NULL, 0, NULL},
    {"hint", S | Z, 1, NULL, NULL, 0, NULL},
    {"gelu_verified", B, 1, NULL, NULL, 0, NULL},
    {"fixture_checkpoint_sha256", S | Z, 1, NULL, NULL, 0, NULL},
    {"checkpoint_sha256_match", B | Z, 1, NULL, NULL, 0, NULL},
    {"checkpoint_sha256_cached", B | Z, 1, NULL, NULL, 0, NULL},
    {"model", O, 1, NULL, model_fields, 0, NULL},
    {"tolerance", O, 1, NULL, tolerance_fields, 0, NULL},
    {"fixture_dtype", S, 1, FLOAT_DTYPES, NULL, 0, NULL},
    {"fixture_gelu_claim", S | Z, 1, NULL, NULL, 0, NULL},
    {"aliases", A, 1, NULL, alias_fields, O, NULL},
    {"unknown_tensors", A, 1, NULL, unknown_fields, O, NULL},
    {"unknown_tensors_total", I, 1, NULL, NULL, 0, NULL},
    {"tl_normalized", A, 1, NULL, norm_fields, O, NULL},
    {"first_divergence", I | Z, 1, NULL, NULL, 0, NULL},
    {"first_stage", S | Z, 1, "ln_1|attn|mid|ln_2|mlp|out", NULL, 0, NULL},
    {"layers", A, 1, NULL, layer_fields, O, NULL},
    {"forward", O | Z, 1, NULL, forward_fields, 0, NULL},
    END};

static const field tensor_fields[] = {
    {"role", S, 1, ROLES, NULL, 0, NULL},      {"name", S, 1, NULL, NULL, 0, NULL},
    {"dtype", S, 1, FLOAT_DTYPES, NULL, 0, NULL}, {"shape", A, 1, NULL, NULL, I, NULL},
    {"min", N, 1, NULL, NULL, 0, NULL},        {"max", N, 1, NULL, NULL, 0, NULL},
    {"mean", N, 1, NULL, NULL, 0, NULL},       {"std", N, 1, NULL, NULL, 0, NULL},
    {"nan", I, 1, NULL, NULL, 0, NULL},        {"inf", I, 1, NULL, NULL, 0, NULL},
    END};

static const field inspect_layer_fields[] = {
    {"layer", I, 1, NULL, NULL, 0, NULL}, {"attn_split", B, 0, NULL, NULL, 0, NULL},
    {"tensors", A, 1, NULL, tensor_fields, O, NULL}, END};

static const field inspect_fields[] = {
    {"checkpoint", S, 1, NULL, NULL, 0, NULL},
    {"model", O, 1, NULL, model_fields, 0, NULL},
    {"ffn_params_per_layer", I, 1, NULL, NULL, 0, NULL},
    {"layers", A, 1, NULL, inspect_layer_fields, O, NULL},
    END};

static const field diff_quantized_fields[] = {
    {"type", S, 1, "Q4_0|Q4_1|Q5_0|Q5_1|Q8_0|Q4_K|Q5_K|Q6_K", NULL, 0, NULL},
    {"max_err_steps", N, 1, NULL, NULL, 0, NULL},
    {"max_err_bound_ratio", N, 1, NULL, NULL, 0, NULL},
    END};

#define DIFF_ENTRY_FIELDS                                                        \
    {"verdict", S, 1, "<verdict>", NULL, 0, NULL},                               \
    {"equivalent", B, 1, NULL, NULL, 0, NULL},                                   \
    {"accept_class", S, 0, "weights_quantized", NULL, 0, NULL},                  \
    {"accepted_as", S | Z, 1, "weights_quantized", NULL, 0, NULL},               \
    {"max_abs_err", N, 1, NULL, NULL, 0, NULL},                                  \
    {"max_rel_err", N, 1, NULL, NULL, 0, NULL},                                  \
    {"name_a", S | Z, 1, NULL, NULL, 0, NULL},                                   \
    {"name_b", S | Z, 1, NULL, NULL, 0, NULL},                                   \
    {"held_by", S, 0, "A|B", NULL, 0, NULL},                                     \
    {"quantized", O, 0, NULL, diff_quantized_fields, 0, NULL},                   \
    {"inconsistent", O, 0, NULL, diff_inconsistent_fields, 0, NULL},             \
    {"note", S, 0, NULL, NULL, 0, NULL}

static const field diff_inconsistent_fields[] = {
    {"type", S, 1, "Q4_0|Q4_1|Q5_0|Q5_1|Q8_0|Q4_K|Q5_K|Q6_K", NULL, 0, NULL},
    {"block", I, 1, NULL, NULL, 0, NULL},
    END};

static const field diff_tensor_fields[] = {{"tensor", S, 1, ROLES, NULL, 0, NULL}, DIFF_ENTRY_FIELDS, END};
static const field diff_end_fields[] = {
    {"tensor", S, 1, "wte|wpe|ln_f.weight|ln_f.bias|head|head.bias", NULL, 0, NULL}, DIFF_ENTRY_FIELDS, END};
static const field diff_other_fields[] = {{"tensor", S, 1, NULL, NULL, 0, NULL}, DIFF_ENTRY_FIELDS, END};
static const field diff_held_fields[] = {
    {"tensor", S, 1, NULL, NULL, 0, NULL},
    {"layer", I | Z, 1, NULL, NULL, 0, NULL},
    {"held_by", S, 1, "A|B", NULL, 0, NULL},
    {"name", S, 1, NULL, NULL, 0, NULL},
    END};

static const field diff_layer_fields[] = {
    {"layer", I, 1, NULL, NULL, 0, NULL}, {"tensors", A, 1, NULL, diff_tensor_fields, O, NULL}, END};

static const field diff_fields[] = {
    {"a", O, 1, NULL, model_fields, 0, NULL},
    {"b", O, 1, NULL, model_fields, 0, NULL},
    {"status", S, 1, "equivalent|accepted|different", NULL, 0, NULL},
    {"accept", A, 1, NULL, NULL, S, "weights_quantized"},
    {"only", S | Z, 1, "ffn|block", NULL, 0, NULL},
    {"sizes", S, 0, NULL, NULL, 0, NULL},
    {"config_differs", S, 0, NULL, NULL, 0, NULL},
    {"roundoff", N, 1, NULL, NULL, 0, NULL},
    {"compared", I, 1, NULL, NULL, 0, NULL},
    {"differing", I, 1, NULL, NULL, 0, NULL},
    {"held_by_one", I, 1, NULL, NULL, 0, NULL},
    {"excused", I, 1, NULL, NULL, 0, NULL},
    {"layers", A, 1, NULL, diff_layer_fields, O, NULL},
    {"model_tensors", A, 1, NULL, diff_end_fields, O, NULL},
    {"other_tensors", A, 1, NULL, diff_other_fields, O, NULL},
    {"held_by_one_tensors", A, 1, NULL, diff_held_fields, O, NULL},
    END};

/* verify's report of a generation fixture (kind "generation") */
static const field gen_token_fields[] = {
    {"id", I, 1, NULL, NULL, 0, NULL}, {"text", S, 0, NULL, NULL, 0, NULL}, END};
#define GEN_STEP_FIELDS                                                                                        \
    {"sequence", I, 1, NULL, NULL, 0, NULL}, {"step", I, 1, NULL, NULL, 0, NULL},                               \
        {"reference", O, 1, NULL, gen_token_fields, 0, NULL}, {"port", O, 1, NULL, gen_token_fields, 0, NULL}, \
        {"gap", N | Z, 1, NULL, NULL, 0, NULL}, {"window", N | Z, 1, NULL, NULL, 0, NULL},                     \
        {"rank", I, 1, NULL, NULL, 0, NULL}, {"logits_margin", N | Z, 1, NULL, NULL, 0, NULL},                   \
        {"port_own_top", O | Z, 1, NULL, gen_token_fields, 0, NULL}
static const field gen_step_fields[] = {GEN_STEP_FIELDS, END};
static const field gen_cause_fields[] = {
    {"codes", A, 1, NULL, NULL, S, "<code>"},
    {"words", S, 1, NULL, NULL, 0, NULL},
    {"margin", N | Z, 1, NULL, NULL, 0, NULL},
    END};
static const field gen_divergence_fields[] = {
    GEN_STEP_FIELDS,
    {"rows_diverged", I, 1, NULL, NULL, 0, NULL},
    {"later_steps", I, 1, NULL, NULL, 0, NULL},
    {"hypotheses_tried", I, 1, NULL, NULL, 0, NULL},
    {"diagnosis", A, 1, NULL, NULL, S, "<code>"},
    {"causes", A, 1, NULL, gen_cause_fields, O, NULL},
    END};
static const field gen_logits_fields[] = {
    {"compared_steps", I, 1, NULL, NULL, 0, NULL},
    {"failed_steps", I, 1, NULL, NULL, 0, NULL},
    {"max_margin", N | Z, 1, NULL, NULL, 0, NULL},
    END};
static const field gen_fields[] = {
    {"kind", S, 1, "generation", NULL, 0, NULL},
    {"checkpoint", S, 1, NULL, NULL, 0, NULL},
    {"fixture", S, 1, NULL, NULL, 0, NULL},
    {"gelu", S, 1, "tanh|erf|sigmoid|mlx_approx|f16_table", NULL, 0, NULL},
    {"gelu_source", S, 1, "<gelu_source>", NULL, 0, NULL},
    {"lambda", N, 1, NULL, NULL, 0, NULL},
    {"sequences", I, 1, NULL, NULL, 0, NULL},
    {"steps", I, 1, NULL, NULL, 0, NULL},
    {"vocab", I, 1, NULL, NULL, 0, NULL},
    {"prompt_min", I, 1, NULL, NULL, 0, NULL},
    {"prompt_max", I, 1, NULL, NULL, 0, NULL},
    {"padded_rows", I, 1, NULL, NULL, 0, NULL},
    {"step_logits", S | Z, 1, FLOAT_DTYPES, NULL, 0, NULL},
    {"eos_token_id", I | Z, 1, NULL, NULL, 0, NULL},
    {"compared_steps", I, 1, NULL, NULL, 0, NULL},
    {"same_token", I, 1, NULL, NULL, 0, NULL},
    {"diverged_steps", I, 1, NULL, NULL, 0, NULL},
    {"after_eos", I, 1, NULL, NULL, 0, NULL},
    {"tie_flip_count", I, 1, NULL, NULL, 0, NULL},
    {"tie_flips", A, 1, NULL, gen_step_fields, O, NULL},
    {"logits", O | Z, 1, NULL, gen_logits_fields, 0, NULL},
    {"divergence", O | Z, 1, NULL, gen_divergence_fields, 0, NULL},
    {"verdict", S, 1, NULL, NULL, 0, NULL},
    {"counts", S, 1, NULL, NULL, 0, NULL},
    {"unknown_tensors", A, 1, NULL, unknown_fields, O, NULL},
    {"unknown_tensors_total", I, 1, NULL, NULL, 0, NULL},
    {"teacher_forced", O | Z, 1, NULL, verify_fields, 0, NULL},
    {"teacher_forced_note", S | Z, 1, NULL, NULL, 0, NULL},
    {"status", S, 1, "pass|fail", NULL, 0, NULL},
    END};

/* Enumerations written as rules: the diagnosis codes and diff verdicts
 * carry a parameter; gelu_source is one of three phrasings. */
#define CODES "gelu_erf|gelu_tanh|fc_bias_missing|proj_bias_missing|residual_included|weights_f16_rounded|" \
              "weights_bf16_rounded|gelu_sigmoid|gelu_mlx_approx|gelu_f16_table|gelu_clipped|tf32_matmul|" \
              "act_f16_rounded|act_bf16_rounded|autocast_f16|autocast_bf16|ln2_input_captured|nonfinite|unexplained|" \
              "attn_mask_missing|attn_scale_missing|attn_scale_layer_idx|heads_interleaved|ln_bias_missing|" \
              "ln_weight_missing|attn_bias_missing:c_attn|attn_bias_missing:attn.c_proj|layout_misread:c_attn|" \
              "layout_misread:attn.c_proj|residual_missing:mid|residual_missing:out|wpe_missing|ln_f_missing|" \
              "lm_head_untied|embed_scaled|cache_position_reset|cache_not_appended|cache_k_scaled|"         \
              "cache_kv_before_bias|cache_kv_swapped|padding_positions|not_greedy"
#define STAGE_TENSORS "ln_1.out|attn.qkv|attn.hook_q|attn.hook_k|attn.hook_v|attn.probs|attn.merged|attn.hook_z|" \
                      "attn.out|mid|ln_2.out|mlp.pre|mlp.act|mlp.out|out"
#define VERDICTS "identical|rounded|zero_bias|f16_rounded|bf16_rounded|transposed|missing|different|shape_differs|" \
                 "held_by_one|tied|buffer|training_state|outside_scope"

static int in_list(const char *v, const char *list) {
    size_t n = strlen(v);
    for (const char *p = list; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
        if (!strncmp(p, v, n) && (p[n] == '|' || p[n] == '\0')) return 1;
    return 0;
}

static int is_uint(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static int valid_value(const char *v, const char *values) {
    char *end;
    if (!values) return 1;
    if (!strcmp(values, "<code>"))
        return in_list(v, CODES) || (!strncmp(v, "weights_from_layer:", 19) && is_uint(v + 19)) ||
               (!strncmp(v, "weights_quantized:", 18) && in_list(v + 18, QUANT_TYPES)) ||
               (!strncmp(v, "weights_quant_inconsistent:", 27) && in_list(v + 27, QUANT_TYPES)) ||
               in_list(v, "layout_misread:c_fc|layout_misread:c_proj|layout_misread:both") ||
               (!strncmp(v, "qkv_order:", 10) && strlen(v + 10) == 3 && strchr(v + 10, 'q') && strchr(v + 10, 'k') &&
                strchr(v + 10, 'v')) ||
               (!strncmp(v, "ln_eps:", 7) && (strtod(v + 7, &end), end != v + 7 && !*end)) ||
               (!strncmp(v, "wpe_offset:", 11) && (strtol(v + 11, &end, 10), end != v + 11 && !*end)) ||
               (!strncmp(v, "cache_offset:", 13) && (strtol(v + 13, &end, 10), end != v + 13 && !*end)) ||
               (!strncmp(v, "propagated:", 11) && v[11]) ||
               in_list(v, "attn_scale:1/sqrt(n_embd)|attn_scale:1/d_head") ||
               (!strncmp(v, "attn_scale:", 11) && (strtod(v + 11, &end), end != v + 11 && !*end));
    if (!strcmp(values, "<verdict>")) {
        if (!strncmp(v, "scaled:", 7)) return strtod(v + 7, &end), end != v + 7 && !*end;
        return in_list(v, VERDICTS) || (!strncmp(v, "from_layer:", 11) && is_uint(v + 11)) ||
               (!strncmp(v, "quantized:", 10) && in_list(v + 10, QUANT_TYPES)) ||
               (!strncmp(v, "quant_inconsistent:", 19) && in_list(v + 19, QUANT_TYPES));
    }
    if (!strcmp(values, "<stage_tensor>")) return in_list(v, STAGE_TENSORS);
    if (!strcmp(values, "<gelu_source>"))
        return !strcmp(v, "from --gelu") || !strncmp(v, "from config.json ", 17) ||
               !strncmp(v, "from the checkpoint: ", 21) || !strncmp(v, "default: ", 9);
    return in_list(v, values);
}

static int type_of(const cJSON *v) {
    if (cJSON_IsString(v)) return S;
    if (cJSON_IsNull(v)) return Z;
    if (cJSON_IsBool(v)) return B;
    if (cJSON_IsObject(v)) return O;
    if (cJSON_IsArray(v)) return A;
    if (cJSON_IsNumber(v)) return v->valuedouble == (double)(long long)v->valuedouble ? I | N : N;
    return 0;
}

static int schema_errors;

static void fail(const char *where, const char *what, const char *key) {
    fprintf(stderr, "%s: %s \"%s\"\n", where, what, key);
    schema_errors++;
}

static void check_object(const cJSON *o, const field *fs, const char *where);

static void check_value(const cJSON *v, int types, const char *values, const field *fs, const char *where,
                        const char *key) {
    int t = type_of(v);
    if (!(t & types)) return fail(where, "wrong type for", key);
    if (t == S && !valid_value(v->valuestring, values)) return fail(where, "value not in the enumeration for", key);
    if (t == O && fs) check_object(v, fs, where);
}

static void check_object(const cJSON *o, const field *fs, const char *where) {
    for (const field *f = fs; f->key; f++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, f->key);
        if (!v) {
            if (f->required) fail(where, "missing field", f->key);
            continue;
        }
        char sub[512];
        snprintf(sub, sizeof sub, "%s.%s", where, f->key);
        check_value(v, f->types, f->values, f->fields, sub, f->key);
        if (cJSON_IsArray(v)) {
            int i = 0;
            for (const cJSON *it = v->child; it; it = it->next, i++) {
                char item[600];
                snprintf(item, sizeof item, "%s[%d]", sub, i);
                check_value(it, f->item_types, f->item_values, f->fields, item, f->key);
            }
        }
    }
    for (const cJSON *c = o->child; c; c = c->next) {
        const field *f = fs;
        while (f->key && strcmp(f->key, c->string)) f++;
        if (!f->key) fail(where, "undocumented field", c->string);
    }
}

/* The rules of a verify report beyond each field's own type. */
static void check_verify_rules(const cJSON *root, const char *where) {
    static const char *const compared_only[] = {"tokens", "max_abs_err", "max_rel_err", "mismatched", "total",
                                                "margin", "best_gelu", "gelu_verified", "sep_out", "sep_act",
                                                "gelu_separation", "gelu_margins", "gelu_tokens",
                                                "gelu_margin_tokens", "diagnosis", "causes", "undetermined",
                                                "compared"};
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(tol, "mode");
    int user = cJSON_IsString(mode) && !strcmp(mode->valuestring, "user");
    if (user != (cJSON_HasObjectItem(tol, "rtol") && cJSON_HasObjectItem(tol, "atol")) ||
        user == cJSON_HasObjectItem(tol, "sigmas") || user == cJSON_HasObjectItem(tol, "sums_of_squares"))
        fail(where, "tolerance fields do not follow its mode", "tolerance");
    int any_fail = 0, all_verified = 1, any_ffn = 0;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    for (const cJSON *l = layers ? layers->child : NULL; l; l = l->next) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(l, "status");
        if (!cJSON_IsString(st)) continue;
        int skipped = !strcmp(st->valuestring, "skipped"), failed = !strcmp(st->valuestring, "fail");
        any_fail |= failed;
        if (cJSON_HasObjectItem(l, "ffn_compared") == skipped)
            fail(where, skipped ? "skipped layer has" : "compared layer lacks", "ffn_compared");
        /* the FFN's fields: on layers whose FFN was compared */
        int ffn = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "ffn_compared"));
        for (size_t k = 0; k < sizeof compared_only / sizeof compared_only[0]; k++)
            if (cJSON_HasObjectItem(l, compared_only[k]) != ffn)
                fail(where, ffn ? "compared layer lacks" : "layer without an FFN compared has", compared_only[k]);
        const cJSON *gt = cJSON_GetObjectItemCaseSensitive(l, "gelu_margin_tokens");
        const cJSON *gn = cJSON_GetObjectItemCaseSensitive(l, "gelu_tokens");
        for (const cJSON *t = gt ? gt->child : NULL; t && cJSON_IsNumber(gn); t = t->next)
            if (!cJSON_IsNumber(t) || t->valuedouble > gn->valuedouble)
                fail(where, "a form's tokens beyond gelu_tokens", t->string);
        if (cJSON_HasObjectItem(l, "stages") != cJSON_HasObjectItem(l, "chained"))
            fail(where, "stages and chained come together", "chained");
        const cJSON *stages = cJSON_GetObjectItemCaseSensitive(l, "stages");
        int n_stages = 0, stage_failed = 0;
        for (const cJSON *sg = stages ? stages->child : NULL; sg; sg = sg->next, n_stages++) {
            const cJSON *ss = cJSON_GetObjectItemCaseSensitive(sg, "status");
            int checked = cJSON_IsString(ss) && strcmp(ss->valuestring, "not_checked");
            stage_failed |= cJSON_IsString(ss) && !strcmp(ss->valuestring, "fail");
            static const char *const figures[] = {"margin", "mismatched", "total", "cosine", "worst", "diagnosis",
                                                  "causes"};
            for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++)
                if (cJSON_HasObjectItem(sg, figures[k]) != checked)
                    fail(where, checked ? "checked stage lacks" : "unchecked stage has", figures[k]);
        }
        if (stages && n_stages != 6) fail(where, "stages lists all six stages", "stages");
        if (stage_failed && !failed) fail(where, "a failing stage fails its layer", "stages");
        const cJSON *diag = cJSON_GetObjectItemCaseSensitive(l, "diagnosis");
        int unexplained = 0, nonfinite = 0;
        for (const cJSON *d = diag ? diag->child : NULL; d; d = d->next) {
            unexplained |= cJSON_IsString(d) && !strcmp(d->valuestring, "unexplained");
            nonfinite |= cJSON_IsString(d) && !strcmp(d->valuestring, "nonfinite");
        }
        if (cJSON_HasObjectItem(l, "where") != unexplained) fail(where, "\"where\" is for unexplained layers:", "where");
        if (cJSON_HasObjectItem(l, "hypotheses_tried") != (failed && !nonfinite))
            fail(where, "\"hypotheses_tried\" is for failing layers:", "hypotheses_tried");
        if (ffn && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "gelu_verified"))) all_verified = 0;
        any_ffn |= ffn;
        /* gelu_verified: the data matches exactly one form */
        const cJSON *best = cJSON_GetObjectItemCaseSensitive(l, "best_gelu"), *gv = cJSON_GetObjectItemCaseSensitive(l, "gelu_verified");
        if (ffn && cJSON_IsString(best) &&
            cJSON_IsTrue(gv) != (strcmp(best->valuestring, "indistinguishable") && strcmp(best->valuestring, "neither")))
            fail(where, "gelu_verified disagrees with best_gelu", "gelu_verified");
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "gelu_verified")) != (all_verified && any_ffn))
        fail(where, "gelu_verified is not every compared layer's", "gelu_verified");
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "fixture_checkpoint_sha256")) !=
        cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "checkpoint_sha256_match")))
        fail(where, "checkpoint_sha256_match is null exactly when the fixture records no digest", "checkpoint_sha256_match");
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "fixture_checkpoint_sha256")) !=
        cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "checkpoint_sha256_cached")))
        fail(where, "checkpoint_sha256_cached is null exactly when the fixture records no digest", "checkpoint_sha256_cached");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(root, "first_divergence");
    /* pass: no layer fails and the whole forward (when recorded) passes */
    const cJSON *fwd = cJSON_GetObjectItemCaseSensitive(root, "forward");
    const cJSON *fst = cJSON_GetObjectItemCaseSensitive(fwd, "status");
    int fwd_fail = cJSON_IsObject(fwd) && cJSON_IsString(fst) && strcmp(fst->valuestring, "pass") != 0 &&
                   strcmp(fst->valuestring, "not_checked") != 0;
    int alias_fail = 0; /* a capture whose names for one stage differ: no pass */
    const cJSON *al;
    cJSON_ArrayForEach(al, cJSON_GetObjectItemCaseSensitive(root, "aliases")) alias_fail |=
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(al, "same"));
    if (cJSON_IsString(status) && (strcmp(status->valuestring, "pass") == 0) == (any_fail || fwd_fail || alias_fail))
        fail(where, "status disagrees with the layers and the forward", "status");
    if (cJSON_IsObject(fwd) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fwd, "chained")) &&
        (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fwd, "first_divergence"))) != fwd_fail)
        fail(where, "the forward's first_divergence disagrees with its status", "first_divergence");
    if (cJSON_IsNull(first) == any_fail) fail(where, "first_divergence disagrees with the layers", "first_divergence");
}

/* The rules of a generation report beyond each field's own type: a
 * divergence exactly when a step diverged, a pass only with steps compared
 * and none diverged, the tie flips listed up to 16. */
static void check_gen_rules(const cJSON *root, const char *where) {
    double compared = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(root, "compared_steps"));
    double diverged = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(root, "diverged_steps"));
    double flips = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(root, "tie_flip_count"));
    int listed = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "tie_flips"));
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    int pass = cJSON_IsString(status) && !strcmp(status->valuestring, "pass");
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "divergence")) != (diverged == 0))
        fail(where, "divergence is there exactly when a step diverged", "divergence");
    if (pass && (compared < 1 || diverged > 0)) fail(where, "a pass needs steps compared and none diverged", "status");
    if (listed != (flips < 16 ? flips : 16)) fail(where, "tie_flips lists the first 16 tie flips", "tie_flips");
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(root, "teacher_forced");
    if (cJSON_IsObject(tf)) check_verify_rules(tf, where);
}

/* ---- the reports -------------------------------------------------------- */

typedef enum { K_VERIFY, K_INSPECT, K_DIFF, K_GEN } kind;
static size_t reports_checked;

/* Runs the CLI (args, with --json - for stdout) and checks the report; the
 * verdict (exit 0 or 1) is other tests' business. */
static void check_report(kind k, const char *args) {
    char cmd[2400], path[400];
    snprintf(path, sizeof path, "%s/report.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s %s --json - > '%s' 2> /dev/null", cli, args, k == K_VERIFY || k == K_GEN ? "--threads 1" : "",
             path);
    int st = system(cmd);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (rc != 0 && rc != 1) fprintf(stderr, "exit %d: %s\n", rc, args);
    CHECK(rc == 0 || rc == 1);
    FILE *fp = fopen(path, "rb");
    static char text[1 << 20];
    size_t n = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
    text[n] = '\0';
    if (fp) fclose(fp);
    cJSON *root = cJSON_Parse(text);
    CHECK(cJSON_IsObject(root));
    if (!cJSON_IsObject(root)) fprintf(stderr, "not a JSON object: %s\n", args);
    int before = schema_errors;
    if (root) {
        const field *fs = k == K_VERIFY ? verify_fields : k == K_INSPECT ? inspect_fields
                                                         : k == K_GEN   ? gen_fields
                                                                        : diff_fields;
        check_object(root, fs, args);
        if (k == K_VERIFY) check_verify_rules(root, args);
        if (k == K_GEN) check_gen_rules(root, args);
    }
    CHECK(schema_errors == before);
    reports_checked++;
    cJSON_Delete(root);
}

static void reports_should_follow_the_documented_schema(void) {
    static const char *const fx[] = {
        "tiny_tanh.safetensors", "tiny_erf.safetensors", "tiny_tanh_f16.safetensors", "npz/tiny_tanh.npz",
        "npz/tiny_tanh_compressed.npz", "npz/tiny_tanh_f64.npz", "npz/tiny_tanh_tlens.npz", "npz/tiny_tanh_npy",
        "diag/erf.safetensors", "diag/erf_fc_bias_missing.safetensors", "diag/erf_residual.safetensors",
        "diag/fc_bias_missing.safetensors", "diag/layout_misread_both.safetensors",
        "diag/layout_misread_fc.safetensors", "diag/layout_misread_proj.safetensors", "diag/nonfinite.safetensors",
        "diag/proj_bias_missing.safetensors", "diag/residual_included.safetensors", "diag/unexplained.safetensors",
        "diag/weights_bf16_rounded.safetensors", "diag/weights_f16_rounded.safetensors",
        "diag/weights_from_layer.safetensors"};
    char args[1400];
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/%s'", fixtures, fixtures, fx[i]);
        check_report(K_VERIFY, args);
    }
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --gelu erf", fixtures, fixtures);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --layers 1,3", fixtures, fixtures);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --atol 1e-2", fixtures, fixtures);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/diag/tiny_pre' '%s/diag/tiny_pre_erf.safetensors'", fixtures, fixtures);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/torch/nobias_ckpt.pt' '%s/torch/nobias_ref.safetensors'", fixtures,
             fixtures);
    check_report(K_VERIFY, args);
    /* the block's stages: clean, F16, TransformerLens names, each code, FFN-less layers */
    static const char *const bx[] = {"clean", "clean_f16", "clean_tl", "clean_tl3", "ln_eps_1e-12_tl3", "partial", "attn_mask_missing",
                                     "attn_scale_missing", "qkv_order_kqv", "ln_eps_1e-12", "residual_missing_out",
                                     "weights_from_layer_0"};
    for (size_t i = 0; i < sizeof bx / sizeof bx[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/block/%s.safetensors'", fixtures, fixtures, bx[i]);
        check_report(K_VERIFY, args);
    }
    /* the whole model: each code, clean F32 (tied and untied heads), TransformerLens names with int32 ids */
    static const char *const mx[][2] = {{"tiny", "wpe_offset_1"}, {"tiny", "wpe_missing"}, {"tiny", "ln_f_missing"},
                                        {"tiny", "embed_scaled"},
                                        {"tiny", "attn_scale_missing_layer2"}, {"tiny", "clean"},
                                        {"tiny", "clean_tl_i32"}, {"tiny", "clean_tl3"}, {"small", "small_clean"},
                                        {"small", "lm_head_untied"}};
    for (size_t i = 0; i < sizeof mx / sizeof mx[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/%s' '%s/model/%s.safetensors'", fixtures, mx[i][0], fixtures, mx[i][1]);
        check_report(K_VERIFY, args);
    }
    /* the GELU from a nanoGPT checkpoint; a fixture that records its
     * checkpoint's digest (gpt2ffn run), against that checkpoint and another */
    snprintf(args, sizeof args, "verify '%s/torch/nanogpt_ckpt.pt' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    check_report(K_VERIFY, args);
    /* the loss of llm.c's debug state; the differing top-1 tokens as text (a tokenizer beside the checkpoint) */
    snprintf(args, sizeof args, "verify '%s/formats2/tiny_llmc.bin' '%s/llmc/tiny_debug_state.bin'", fixtures, fixtures);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s/decode/tok_wpe_missing.safetensors'", fixtures, fixtures);
    check_report(K_VERIFY, args);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "'%s' run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/made.safetensors' > /dev/null", cli,
             fixtures, fixtures, dir);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/made.safetensors'", fixtures, dir);
    check_report(K_VERIFY, args);
    snprintf(args, sizeof args, "verify '%s/torch/hf_tiny.bin' '%s/made.safetensors'", fixtures, dir);
    check_report(K_VERIFY, args);
    static const char *const ck[] = {"tiny", "torch/hf_tiny.bin", "torch/mingpt_ckpt.pt", "torch/nanogpt_ckpt.pt",
                                     "torch/nobias_ckpt.pt", "torch/sharded", "formats2/tiny.gguf",
                                     "formats2/tiny_f16.gguf", "formats2/tiny_llmc.bin",
                                     "formats2/tiny_llmc_bf16.bin", "diag/tiny_pre"};
    for (size_t i = 0; i < sizeof ck / sizeof ck[0]; i++) {
        snprintf(args, sizeof args, "inspect '%s/%s'", fixtures, ck[i]);
        check_report(K_INSPECT, args);
        snprintf(args, sizeof args, "diff '%s/tiny' '%s/%s'", fixtures, fixtures, ck[i]);
        check_report(K_DIFF, args);
    }
    /* diff's other fields: the head, TransformerLens, training state, --only, buffers, quantized */
    static const char *const dx[][3] = {{"small", "small_tied", ""},
                                        {"tiny", "formats2/tiny_tl.safetensors", ""},
                                        {"tiny", "torch/nanogpt_full_ckpt.pt", ""},
                                        {"tiny", "formats2/tiny_full.gguf", "--only block"},
                                        {"tiny", "quant/tiny_q8_0.gguf", "--only ffn --accept weights_quantized"},
                                        {"quant/k256", "quant/k256_q6_k.gguf", ""}};
    for (size_t i = 0; i < sizeof dx / sizeof dx[0]; i++) {
        snprintf(args, sizeof args, "diff '%s/%s' '%s/%s' %s", fixtures, dx[i][0], fixtures, dx[i][1], dx[i][2]);
        check_report(K_DIFF, args);
    }
    /* generations: every bundled fixture (each code, tie flips, eos, padding, tokens only), a
     * generation with its steps' stages (teacher-forced beside), token text from a tokenizer */
    static const char *const gx[] = {"attn_scale_missing", "cache_k_scaled", "cache_kv_before_bias", "cache_kv_swapped",
                                     "cache_not_appended", "cache_offset_1", "cache_offset_m1", "cache_position_reset",
                                     "cache_position_reset_ids", "clean", "clean_f16_logits", "clean_ids_i32", "eos",
                                     "gelu_erf", "padded", "padding_positions", "qkv_order_kqv", "unexplained"};
    for (size_t i = 0; i < sizeof gx / sizeof gx[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/decode/gen/%s.safetensors'", fixtures, fixtures, gx[i]);
        check_report(K_GEN, args);
    }
    snprintf(args, sizeof args, "verify '%s/decode/near_tie' '%s/decode/gen/tie_flip.safetensors'", fixtures, fixtures);
    check_report(K_GEN, args);
    snprintf(cmd, sizeof cmd, "'%s' run '%s/decode/tok' --prompt 'The cat' --generate 4 --save all -o '%s/gen.safetensors' > /dev/null",
             cli, fixtures, dir);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s/gen.safetensors'", fixtures, dir);
    check_report(K_GEN, args);
    CHECK(reports_checked >= 85);
}

/* ---- docs/json.md against the schema ------------------------------------- */

typedef struct names {
    const char *v[400];
    size_t n;
} names;

static void add_name(names *s, const char *v) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], v)) return;
    if (s->n < sizeof s->v / sizeof s->v[0]) s->v[s->n++] = v;
}

static void add_list(names *s, const char *list, char *store, size_t *used, size_t cap) {
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, "|");
        if (*used + n + 1 <= cap) {
            memcpy(store + *used, p, n);
            store[*used + n] = '\0';
            add_name(s, store + *used);
            *used += n + 1;
        }
        p = p[n] ? p + n + 1 : NULL;
    }
}

static char store[8192];
static size_t store_used;

static void collect(names *s, const field *fs) {
    for (const field *f = fs; f->key; f++) {
        add_name(s, f->key);
        if (f->values && f->values[0] != '<') add_list(s, f->values, store, &store_used, sizeof store);
        if (f->item_values && f->item_values[0] != '<') add_list(s, f->item_values, store, &store_used, sizeof store);
        if (f->fields) collect(s, f->fields);
    }
}

static void docs_should_document_exactly_this_schema(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/../docs/json.md", fixtures);
    FILE *fp = fopen(path, "rb");
    static char doc[1 << 18];
    size_t n = fp ? fread(doc, 1, sizeof doc - 1, fp) : 0;
    doc[n] = '\0';
    if (fp) fclose(fp);
    CHECK(n > 0 && n < sizeof doc - 1); /* read, and whole */
    char *sec = doc;
    names schema = {{0}, 0};
    collect(&schema, verify_fields);
    collect(&schema, inspect_fields);
    collect(&schema, diff_fields);
    collect(&schema, gen_fields);
    /* every quoted identifier in the page is a field, an enumerated value, a
     * diagnosis code or a verdict */
    names quoted = {{0}, 0};
    static char qstore[1 << 14];
    size_t qused = 0;
    for (char *p = strchr(sec, '"'); p; p = strchr(p + 1, '"')) {
        char *q = strchr(p + 1, '"');
        if (!q) break;
        size_t len = (size_t)(q - p - 1);
        int ident = len > 0 && len < 64;
        for (char *c = p + 1; ident && c < q; c++) ident = isalnum((unsigned char)*c) || *c == '_' || *c == ':' || *c == '.';
        if (ident && qused + len + 1 < sizeof qstore) {
            memcpy(qstore + qused, p + 1, len);
            qstore[qused + len] = '\0';
            const char *w = qstore + qused;
            qused += len + 1;
            add_name(&quoted, w);
            int known = 0;
            for (size_t i = 0; i < schema.n && !known; i++) known = !strcmp(schema.v[i], w);
            known |= valid_value(w, "<code>") || valid_value(w, "<verdict>");
            if (!known) {
                fprintf(stderr, "docs/json.md names \"%s\", which no report has\n", w);
                check_failures++;
            }
        }
        p = q;
    }
    /* and every field and value of the schema is in the page */
    for (size_t i = 0; i < schema.n; i++) {
        int found = 0;
        for (size_t j = 0; j < quoted.n && !found; j++) found = !strcmp(schema.v[i], quoted.v[j]);
        if (!found) {
            fprintf(stderr, "the reports write \"%s\", which docs/json.md does not document\n", schema.v[i]);
            check_failures++;
        }
    }
    CHECK(schema.n > 80);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "schema") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(reports_should_follow_the_documented_schema);
    RUN(docs_should_document_exactly_this_schema);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
