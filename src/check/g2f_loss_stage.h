/* g2f_loss_stage: the loss a reference records beside its logits, checked
 * as the model's last stage: the mean cross-entropy of the logits against
 * the recorded targets over every position (F.cross_entropy, llm.c's
 * crossentropy_forward and its mean), with g2f_loss's derived bound.
 *
 * Recorded as llm.c's debug state records it (g2f_llmc_state.h): a tensor
 * "targets", integer, of input_ids' shape (each in [0, vocab)), and "loss",
 * one float. Two checks, like every model-level stage's:
 *   isolated  the cross-entropy of the reference's own logits: does the
 *             port compute its loss from its logits as GPT-2's training
 *             does? The bound is the reference's float32 evaluation only
 *             (g2f_loss parts 2 and 3).
 *   chained   the cross-entropy of ours, the whole forward from input_ids
 *             (g2f_forward_run, one more pass with variances): the bound
 *             adds the logits' tolerance, lambda sqrt(var) plus their
 *             stored dtype's rounding, as the logits stage compares them.
 * A check that fails fails the stage; a chained failure after the logits
 * already failed is what they propagate (the reports say so).
 *
 * The gradients llm.c's debug state holds are not checked (verify checks
 * the forward); gradients counts them for the reports.
 */
#ifndef G2F_LOSS_STAGE_H
#define G2F_LOSS_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_fixture.h"
#include "g2f_forward.h"
#include "g2f_loss.h"
#include "g2f_model.h"

typedef struct g2f_loss_side {
    int checked;
    g2f_loss_result r;   /* our cross-entropy and its bound */
    double margin;       /* |reference - r.loss| / r.bound (g2f_loss_margin) */
    int pass;
} g2f_loss_side;

typedef struct g2f_loss_stage {
    int present;         /* the fixture records targets or loss */
    int checked;         /* at least one side checked */
    const char *why;     /* present but not checked: why (static), else NULL */
    double reference;    /* the recorded loss */
    size_t rows;         /* positions averaged over */
    g2f_loss_side chained, isolated;
    int pass;            /* checked and every checked side matches */
    uint64_t gradients;  /* gradient floats the file holds (its metadata "gradient_floats"), not checked */
} g2f_loss_stage;

/* Checks f's loss against m (after g2f_forward_check accepted f's model
 * tensors); p as the forward check's. Not present (nothing done) without
 * "targets" and "loss". A malformed targets or loss (dtype, shape, an id
 * outside the vocabulary) is G2F_ERR_FORMAT naming the fixture and tensor. */
g2f_status g2f_loss_stage_check(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p,
                                g2f_loss_stage *out, g2f_error *err);

#endif
