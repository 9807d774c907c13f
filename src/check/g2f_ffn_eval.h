/* g2f_ffn_eval: one way of computing a layer's FFN (a hypothesis: the
 * weights, the GELU form, the residual, a weight rounding) evaluated against
 * the layer's recorded tensors with the derived tolerance (g2f_tol) and the
 * one comparison (g2f_compare). verify runs it once for the asked
 * computation, diagnose once per hypothesis.
 *
 * Tokens go through in chunks (at most G2F_EVAL_CHUNK_BYTES of buffers), so
 * memory is bounded by the layer's weights plus a chunk whatever the token
 * count: per chunk, x and the expected values are read from the fixture's
 * tensors, c_fc runs with the sums of squares beside it (g2f_ffn_fc_gelu_sq),
 * then the element-wise tolerance of pre and act, c_proj with its sums of
 * squares, the tolerance of out, and the comparisons, added to accumulators
 * in token order. Every product is a GEMM (never the one-row GEMV), so a
 * token's results do not depend on the tokens computed with it, and every
 * parallel loop runs over fixed blocks: the same bits for any thread count
 * and any chunk size.
 *
 * Other GELU forms (opts.forms) reuse the chunk's c_fc: per form only the
 * GELU, its tolerances, c_proj and the comparisons are redone.
 *
 * The other GELU form (what verify reports as out_other and the GELU
 * separation) costs a third product; G2F_EVAL_OTHER_ACT computes only its
 * activations (element-wise) and keeps the tokens where the two forms differ
 * most relative to the tolerance, so that verify can run the third product
 * on those alone and on every token only when it could change the verdict.
 */
#ifndef G2F_FFN_EVAL_H
#define G2F_FFN_EVAL_H

#include <stddef.h>

#include "g2f_compare.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_tol.h"

/* Buffers of a chunk, at most this many bytes (the chunk then has at least
 * 16 tokens, or all of them). */
#define G2F_EVAL_CHUNK_BYTES ((size_t)48 << 20)
/* Tokens kept where the GELU forms differ most. */
#define G2F_EVAL_TRACK 32

/* How our side computes: a hypothesis about what the reference did. The
 * roundings model a port's precision path (g2f_diagnose): the weights are
 * rounded by the caller (how->w), the rest here. A value the reference
 * rounds from its own float32 intermediate rounds to the same value from
 * ours, except when the two lie on either side of a rounding boundary: the
 * tolerance allows that one step only for elements whose float32 tolerance
 * interval holds a boundary (g2f_round_flip), and carries it downstream. */
typedef struct g2f_ffn_how {
    const g2f_ffn_weights *w; /* weights as the hypothesis has them (rounded, another layer's, misread, no bias) */
    g2f_gelu gelu;
    int residual;             /* the reference stored x + FFN(x) */
    double weight_roundoff;   /* relative uncertainty of the weights (a rounded checkpoint), 0 normally */
    int clip;                 /* act clipped to [-10, 10] (HF gelu_10) */
    g2f_round gemm_in;        /* both products' inputs (x and act) rounded: TF32 matmuls, autocast */
    g2f_round store;          /* pre and act stored rounded between the stages */
    g2f_round out_round;      /* out rounded (autocast) */
    const g2f_ln *ln;         /* the recorded in is ln_2's input: the FFN runs on LayerNorm(in) */
    /* weights known only to within a per-element variance (a ggml-quantized
     * checkpoint against a float reference): for each input index the
     * largest variance over its outputs, wvar_fc (n_embd) and wvar_proj
     * (n_inner), absolute; NULL: none. Enters V_pre as sum_i x_i^2
     * wvar_fc[i] and V_out as sum_k act_k^2 wvar_proj[k] (an upper bound). */
    const float *wvar_fc, *wvar_proj;
} g2f_ffn_how;

typedef enum g2f_eval_other {
    G2F_EVAL_OTHER_NONE,
    G2F_EVAL_OTHER_ACT,  /* the other form's act: act_other, the act separation, the tracked tokens */
    G2F_EVAL_OTHER_FULL, /* and its out through c_proj: out_other, the out separation */
    G2F_EVAL_OTHER_COUNT
} g2f_eval_other;

typedef struct g2f_ffn_eval_opts {
    const size_t *tokens;  /* ascending token indices to evaluate, or NULL for every token */
    size_t n_tokens;       /* with tokens */
    g2f_eval_other other;
    int profile;           /* count mismatches per channel and flagged tokens (g2f_ffn_profile) */
    /* other GELU forms to evaluate on the same tokens (bit 1u << g2f_gelu;
     * how->gelu's own bit is ignored): each as `how` with that form, its own
     * GELU, tolerances and c_proj, sharing c_fc (the same pre and sums of
     * squares): margins bitwise those of a separate g2f_ffn_eval per form,
     * for half the products. On an evaluation of one chunk of more than 8
     * tokens, a form neither how->gelu's nor the other (g2f_gelu_other)
     * that fails on the first 8 (margin > 1) stops there (its margin on
     * those, form_tokens 8): it fits exactly where it fits on every token. */
    unsigned forms;
    /* With other = G2F_EVAL_OTHER_ACT and every token (tokens NULL): also
     * the evaluation of the tracked tokens that verify runs next ({tracked,
     * n_tracked, G2F_EVAL_OTHER_FULL, 0, tracked_forms}) into *tracked_out,
     * from this pass's c_fc and main c_proj on those rows (rows are
     * independent: bitwise that evaluation; over several chunks the rows of
     * the tokens tracked so far are kept aside), and res->tracked_done = 1.
     * NULL: none. */
    unsigned tracked_forms;
    struct g2f_ffn_eval_result *tracked_out;
    /* (fixture tokens, n_embd), rows by token index, or NULL: keep_out receives the evaluated
     * tokens' out; against base_out (another computation's, so kept) the result's base_* sums
     * compare this one's out, token by token in order (the same bits for any thread count). */
    float *keep_out;
    const float *base_out;
} g2f_ffn_eval_opts;

/* Where mismatches are, for a layer that nothing explains. */
typedef struct g2f_ffn_profile {
    size_t *col_out;              /* (n_embd) mismatched tokens per output channel, owned */
    size_t *col_pre, *col_act;    /* (n_inner) per hidden unit, owned; NULL without pre / act */
    size_t tokens_flagged;        /* tokens with a mismatch in out */
    size_t first_flagged[8];      /* the first of them */
} g2f_ffn_profile;

typedef struct g2f_ffn_eval_result {
    int tracked_done;             /* opts.tracked_out was filled */
    size_t tokens;                /* evaluated */
    g2f_cmp out, pre, act;        /* pre / act when the fixture has them */
    int has_pre, has_act;
    g2f_cmp act_other, out_other; /* with opts.other (act_other needs act in the fixture) */
    double sep_act, sep_out;      /* max |ours - other form| / tol over act / out */
    long bad_in;                  /* flat index (token x n_embd + channel) of the first non-finite input, or -1 */
    double bad_in_value;
    size_t n_tracked;             /* with G2F_EVAL_OTHER_ACT or FULL: tokens where the forms differ most, */
    size_t tracked[G2F_EVAL_TRACK]; /* ascending */
    g2f_ffn_profile profile;      /* with opts.profile; freed by g2f_ffn_eval_result_free */
    double form_margin[G2F_GELU_COUNT]; /* with opts.forms: each form's g2f_ffn_eval_margin; how->gelu's too */
    size_t form_tokens[G2F_GELU_COUNT]; /* the tokens each form_margin is on (fewer: it failed on those) */
    /* with opts.base_out (b), over out's elements, delta = out - b and E = b - expected: sum delta^2,
     * sum delta E, sum delta^2 E^2, sum E^2 (how this computation's change from b meets b's error) */
    double base_dd, base_de, base_dde, base_ee;
    /* over out's elements: sum (out - expected)^2, and the sum of the variances its tolerances
     * stand for (g2f_tol_ffn_out_x's noise; 0 with a user tolerance): how much noise this
     * computation leaves against how much its rounding model expects */
    double noise_err, noise_var;
} g2f_ffn_eval_result;

/* Buffers kept across layers and hypotheses (start from {0}). */
typedef struct g2f_ffn_eval_ws {
    float *buf;                   /* owned: the chunk's buffers */
    size_t cap;                   /* bytes */
    float *track_buf;             /* owned: the tracked tokens' rows across chunks (opts.tracked_out) */
    size_t track_cap;             /* bytes */
    g2f_ffn_ws ffn;               /* the kernels' packed blocks */
    g2f_tol_f16 tol_f16;          /* the f16 table form's halves, made when a form needs them */
} g2f_ffn_eval_ws;
void g2f_ffn_eval_ws_free(g2f_ffn_eval_ws *ws);

/* Evaluates `how` on the layer's recorded tensors fx (in, out, optional pre
 * and act) with tolerance p. *res is filled on success; the only failures
 * are allocations (work sizes are checked against overflow and the
 * machine's memory, with a message naming the layer). */
g2f_status g2f_ffn_eval(const g2f_ffn_how *how, const g2f_fixture_views *fx, size_t layer, const g2f_tol_params *p,
                        const g2f_ffn_eval_opts *opts, int n_threads, g2f_ffn_eval_ws *ws,
                        g2f_ffn_eval_result *res, g2f_error *err);
void g2f_ffn_eval_result_free(g2f_ffn_eval_result *r);

/* The FFN of rows in memory (the block's chained pass), by the steps
 * g2f_ffn_eval takes per chunk: x (n, n_embd) is c_fc's input as `how`
 * computes it (how->w, gelu, weight_roundoff, gemm_in, store, out_round,
 * residual; how->ln only without vx), vx its absolute variance per element
 * or NULL. With how->gemm_in both sides round an uncertain x, a flip's
 * second moment joining the variance (g2f_round_flip_var, ggml's F16
 * matmul). Fills out's pre, act (n, n_inner) and out (n, n_embd) and, with
 * vx, their variances: the derived tolerance over lambda standard
 * deviations squared, without the stored dtype's rounding (the comparison
 * adds it); vx NULL: the values alone (var_* not written). Tokens go
 * through in chunks (ws): any n, the same bits. Fails only on allocation,
 * with a message naming the layer. */
typedef struct g2f_ffn_rows {
    float *pre, *act, *out;             /* (n, n_inner), (n, n_inner), (n, n_embd) */
    float *var_pre, *var_act, *var_out; /* the same shapes; with vx */
} g2f_ffn_rows;
g2f_status g2f_ffn_eval_rows(const g2f_ffn_how *how, const float *x, const float *vx, size_t n, double lambda,
                             size_t layer, int n_threads, g2f_ffn_eval_ws *ws, const g2f_ffn_rows *out,
                             g2f_error *err);

/* Every compared tensor within tolerance (out, and pre / act when present). */
int g2f_ffn_eval_match(const g2f_ffn_eval_result *r);
/* The largest margin over the compared tensors. */
double g2f_ffn_eval_margin(const g2f_ffn_eval_result *r);

#endif
