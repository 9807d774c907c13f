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

#include "g2f_cause.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_ffn_eval.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_tol.h"

#define G2F_DIAG_SAMPLE 16
#define G2F_DIAG_MAX_CAUSES 8

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
