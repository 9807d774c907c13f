/* g2f_normread: which side of the gain and bias a TransformerLens
 * `hook_normalized` capture was recorded on.
 *
 * TransformerLens 2.x records `blocks.L.ln1.hook_normalized` (ln2,
 * ln_final) after the LayerNorm's gain and bias: the LayerNorm's output,
 * what the next stage reads. TransformerLens 3 (PR #770) moved the hook
 * before them: (x - mean) / sqrt(var + eps). The name is the same, so the
 * values decide, with the checkpoint's gain w and bias b:
 *   before  rows of n have mean 0 and mean square var/(var + eps) <= 1;
 *   after   rows of (y - b) / w do.
 * Exactly one reading fitting is an answer; both fitting (gain and bias
 * close to 1 and 0, or few rows) or a gain with a zero or none in the
 * checkpoint leave it undecided, and the caller does not guess; neither
 * fitting reads it as the LayerNorm's output, where the check then fails
 * as it should (an LN whose rows are not normalized either way).
 * A gain of exactly 1 and bias 0 make both readings the same values.
 */
#ifndef G2F_NORMREAD_H
#define G2F_NORMREAD_H

#include "g2f_error.h"
#include "g2f_model.h"
#include "g2f_tensor.h"

/* What the user says (verify / run --tl-normalized). */
typedef enum g2f_norm_mode {
    G2F_NORM_MODE_AUTO,   /* decide from the values */
    G2F_NORM_MODE_AFTER,  /* TransformerLens 2.x: after gain and bias */
    G2F_NORM_MODE_BEFORE, /* TransformerLens 3: before */
} g2f_norm_mode;

typedef enum g2f_norm_reading {
    G2F_NORM_AFTER,     /* the LayerNorm's output as recorded */
    G2F_NORM_BEFORE,    /* before gain and bias: they are applied to it */
    G2F_NORM_SAME,      /* gain 1 and bias 0: both readings are the same values */
    G2F_NORM_UNDECIDED, /* not compared: the values do not tell */
} g2f_norm_reading;

typedef struct g2f_norm_decision {
    int before_fits, after_fits, after_testable;
    g2f_norm_reading reading;
} g2f_norm_decision;

/* Decides the reading of t (rows of ln->d values; any float dtype) against
 * ln (ln->found 0: the checkpoint holds no gain, the after reading cannot
 * be tested). Reads a row at a time. */
g2f_status g2f_norm_decide(const g2f_tensor *t, const g2f_ln *ln, g2f_norm_decision *out, g2f_error *err);

/* The LayerNorm's output from a capture before gain and bias: n w + b
 * computed in float32 as TransformerLens does (the product, then the sum),
 * stored in t's dtype (float64 kept as float64). *out takes t's name and
 * shape; its data is *owned (the caller frees it). */
g2f_status g2f_norm_apply(const g2f_tensor *t, const g2f_ln *ln, g2f_tensor *out, void **owned, g2f_error *err);

/* "after gain and bias", "before gain and bias (gain and bias applied)",
 * "gain 1 and bias 0: the same either way", "undecided". Static. */
const char *g2f_norm_reading_phrase(g2f_norm_reading r);
/* "auto", "after", "before" from the option's word; 0 when unknown. */
int g2f_norm_mode_parse(const char *word, g2f_norm_mode *out);

#endif
