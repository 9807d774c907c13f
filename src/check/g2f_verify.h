/* g2f_verify: checks every selected layer's FFN against a fixture and tells
 * which GELU form the data matches.
 *
 * Per layer: run the FFN with the requested GELU form, derive per-element
 * tolerances (g2f_tol), compare out (and pre / act when the fixture has
 * them), and run c_proj once more on the other GELU form of the same
 * pre-activations, so the report can say whether the data matches tanh, erf,
 * both (the inputs cannot tell them apart) or neither. Failing layers then
 * go to g2f_diagnose for the cause.
 *
 * One result structure flows to the reports (g2f_report); nothing here
 * prints.
 */
#ifndef G2F_VERIFY_H
#define G2F_VERIFY_H

#include <stddef.h>

#include "g2f_block.h"
#include "g2f_compare.h"
#include "g2f_diagnose.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_ffn_eval.h"
#include "g2f_forward.h"
#include "g2f_fixture.h"
#include "g2f_loss_stage.h"
#include "g2f_model.h"
#include "g2f_tol.h"

typedef enum g2f_layer_status { G2F_LAYER_PASS, G2F_LAYER_FAIL, G2F_LAYER_SKIPPED, G2F_LAYER_STATUS_COUNT } g2f_layer_status;
const char *g2f_layer_status_name(g2f_layer_status s);

typedef enum g2f_best_gelu {
    G2F_BEST_TANH,
    G2F_BEST_ERF,
    G2F_BEST_INDISTINGUISHABLE, /* both forms within tolerance on these inputs */
    G2F_BEST_NEITHER,
    G2F_BEST_SIGMOID,           /* the data fits only one of the other forms (g2f_gelu) */
    G2F_BEST_MLX,
    G2F_BEST_F16_TABLE,
    G2F_BEST_COUNT
} g2f_best_gelu;
const char *g2f_best_gelu_name(g2f_best_gelu b);

typedef struct g2f_layer_result {
    size_t layer;
    g2f_layer_status status;     /* the layer's: it fails when any of its stages does */
    g2f_layer_status ffn_status; /* the FFN's own (with has_ffn): the FFN table's verdict */
    size_t tokens;
    g2f_cmp out;            /* requested GELU form against h.L.mlp.out */
    g2f_cmp out_other;      /* the other form against h.L.mlp.out */
    size_t other_tokens;    /* 0: out_other covers every token; else the tokens it covers (g2f_verify.c) */
    int has_pre, has_act;
    g2f_cmp pre, act, act_other;
    double gelu_separation; /* max(sep_out, sep_act): > 1 means the data can tell */
    double sep_out, sep_act; /* max |ours - other form| / tol over out, over act (0 without act) */
    /* Every GELU form recomputed (g2f_gelu order): the margin of each over
     * out (and pre/act) on gelu_tokens tokens (the G2F_EVAL_TRACK where tanh
     * and erf differ most, or all when there are no more), and, when the
     * fixture records pre and act, of act against each form of the recorded
     * pre on every token: the variant read directly from the pairs. A form
     * that fails on the first of those tokens stops there: its margin on
     * gelu_form_tokens[g] of them (a lower bound of its margin on all). */
    double gelu_margin[G2F_GELU_COUNT];
    size_t gelu_tokens;
    size_t gelu_form_tokens[G2F_GELU_COUNT];
    int has_gelu_pa;
    double gelu_margin_pa[G2F_GELU_COUNT];
    g2f_best_gelu best_gelu;
    g2f_diag_set diagnosis; /* G2F_DIAG_BIT(code) per code: the union of diag.causes */
    g2f_diag_result diag;   /* failing layers: the explanations found, or where the error lives */
    g2f_diag_set accepted;  /* --accept: the accepted cause's codes (the layer was judged on it), or 0 */
    g2f_cause accepted_cause;
    char explanation[1024]; /* one sentence */
    int not_selected;       /* skipped because --layers left it out */
    int has_ffn;            /* the FFN compared (mlp.in and mlp.out recorded) */
    int has_block;          /* other stages of the block recorded (g2f_block) */
    g2f_block_result block; /* their checks; stage[G2F_STAGE_MLP] mirrors the FFN's */
} g2f_layer_result;

/* Called after each layer verified (done of total), with the bytes of weights
 * read so far; for progress displays. */
typedef void (*g2f_progress_fn)(void *user, size_t done, size_t total, unsigned long long bytes);

typedef struct g2f_verify_params {
    g2f_gelu gelu;
    const char *gelu_source;     /* "--gelu", "config.json ...", "default" */
    const unsigned char *select; /* n_layer flags, NULL = every layer */
    g2f_tol_params tol;
    size_t n_head;               /* attention heads; 0: the model's (config.json, GGUF, llm.c, TransformerLens) */
    g2f_diag_set accept;         /* causes a port has on purpose (G2F_ACCEPT_*): a layer they explain
                                    alone is judged on them (docs/diagnosis.md: --accept) */
    int n_threads;               /* <= 0: OpenMP default */
    g2f_progress_fn progress;    /* may be NULL */
    void *progress_user;
} g2f_verify_params;

/* Two names of the fixture for one stage (g2f_fixture_alias), compared
 * value for value: equal, or equal within the coarser dtype's rounding when
 * their dtypes differ. */
typedef struct g2f_alias_check {
    char *kept, *other;          /* the tensor read, and its alias (names, owned) */
    int same;                    /* every value equal (both NaN counts as equal) */
    int shapes_differ;           /* different element counts: not compared value by value */
    size_t differing, total;
    double max_abs;              /* the largest |kept - other| (NaN when one side is NaN) */
    size_t first;                /* flat index of the first differing element */
} g2f_alias_check;

typedef struct g2f_verify_result {
    g2f_gelu gelu;
    size_t n_layers;             /* = model n_layer */
    g2f_layer_result *layers;    /* n_layers entries, owned */
    size_t compared, failed;
    int pass;                    /* every compared layer passes (and at least one was compared) */
    long first_fail;             /* layer index or -1 */
    g2f_stage first_stage;       /* with first_fail: the first diverging stage of that layer, or G2F_STAGE_NONE */
    g2f_model_result model;      /* the whole forward from input_ids (g2f_forward), present 0 without
                                    model-level tensors; its first divergence's codes filled from the
                                    layer's isolated stage check when it lies in a block */
    g2f_loss_stage loss;         /* the recorded loss (targets and loss: llm.c's debug state), present 0
                                    without; a checked loss that does not match fails the run */
    g2f_alias_check *aliases;    /* n_aliases entries, owned: the fixture's names for one stage */
    size_t n_aliases, aliases_differ; /* aliases_differ > 0: the capture is inconsistent, no PASS */
    /* the fixture's tensors under names that look like stages' but are not
     * (not compared; g2f_fixture_unknown) */
    g2f_fixture_unknown unknown[G2F_FIXTURE_UNKNOWN_MAX];
    size_t n_unknown, n_unknown_total;
    /* the fixture's TransformerLens hook_normalized captures and how each
     * was read (g2f_fixture_read_norms), n_norms entries, owned */
    g2f_fixture_norm *norms;
    size_t n_norms;
} g2f_verify_result;

/* Why a fixture compared nothing (no layer and no model-level stage had its
 * input beside its expected output): what it records and what each stage
 * needs, one sentence into buf. For the "nothing was compared" refusal. */
void g2f_verify_nothing_compared(const g2f_fixture *f, char *buf, size_t n);

g2f_status g2f_verify_run(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p,
                          g2f_verify_result *out, g2f_error *err);
void g2f_verify_result_free(g2f_verify_result *r);

/* A layer's figures as every report (text, JSON, HTML) shows them, computed
 * here once so that the reports cannot disagree: the elements compared and
 * mismatched over out, pre and act (those the fixture has), and the largest
 * margin among them. A NaN margin in any of them makes the margin NaN (it
 * never reads as a pass). A skipped layer gives zeros. */
typedef struct g2f_layer_totals {
    size_t mismatched, total;
    double margin;
} g2f_layer_totals;
g2f_layer_totals g2f_layer_result_totals(const g2f_layer_result *r);

/* ---- what the reports say about a layer and a whole run ------------------
 * Computed here once, so that the text, JSON and HTML reports agree. */

/* |cosine| between the computed and the expected out below which a layer
 * is "uncorrelated": with every compared layer unexplained and this far
 * off, the fixture was most likely made from another checkpoint (or its
 * layers are in another order). A port with a bug keeps cosines near 1. */
#define G2F_UNRELATED_COSINE 0.1

/* True when the layer's data matches exactly one GELU form (best_gelu tanh
 * or erf), so the form is verified; false for a layer whose inputs cannot
 * tell them apart (indistinguishable) and for one that neither form
 * matches. False for a skipped layer. */
int g2f_layer_gelu_verified(const g2f_layer_result *r);

/* The GELU form a layer's data points at, for the `gelu` column: best_gelu's
 * name, except that a layer neither form matches whose every explanation
 * names the same GELU form (a code "gelu_<form>", e.g. gelu_erf with a
 * missing bias) shows that form ("erf", "tanh", ...). Static string. */
const char *g2f_layer_gelu_shown(const g2f_layer_result *r);

typedef struct g2f_verify_summary {
    size_t gelu_unverified;  /* compared layers whose inputs cannot tell the forms apart (indistinguishable) */
    double unverified_sep;   /* the largest max(sep_out, sep_act) among them */
    int gelu_verified;       /* every compared layer's g2f_layer_gelu_verified */
    int other_gelu_explains; /* every compared layer fails and one other GELU form is in every cause of each,
                                alone or with precisions --accept takes (tanh, erf, sigmoid, mlx_approx,
                                f16_table: the same for every layer) */
    g2f_gelu other_gelu;     /* that form (without other_gelu_explains: tanh / erf, the one not asked for) */
    g2f_diag_set other_gelu_with; /* the precisions found beside that form in the layers' causes (f16_matmul
                                     with ggml's table: what --accept takes), 0 when the form alone explains them */
    g2f_diag_set other_gelu_beside; /* every code found beside it, alternatives included (tf32_matmul | f16_matmul) */
    int unrelated;           /* every compared layer unexplained with |cosine| < G2F_UNRELATED_COSINE */
    int all_unexplained;     /* every compared layer fails, unexplained (not non-finite) */
    size_t best_tanh;        /* compared layers whose best GELU is tanh (what a fixture's claim is checked against) */
    size_t best_erf;         /* ... erf */
} g2f_verify_summary;
void g2f_verify_summarize(const g2f_verify_result *r, g2f_verify_summary *out);

#endif
