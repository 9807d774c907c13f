/* g2f_genverify: is a port's generation GPT-2's greedy generation, and
 * where it is not, is the divergence expected? (docs/decode.md)
 *
 * A generation fixture (g2f_stage.h's generation entries; any format the
 * fixture reader takes) holds
 *   prompt_ids      [B, T0] or [T0]      I64 / I32   required
 *   generated_ids   [B, N] or [N]        I64 / I32   required: the port's tokens
 *   step_logits     [B, N, V] or [N, V]  float       optional: the logits each token was chosen from
 *   attention_mask  [B, T0] or [T0]      I64 / I32 / U8 / BOOL, 0 or 1, optional: HF's left padding
 *   eos_token_id    [] or [1]            integer     optional: a row's steps after its first one not compared
 * Each row's prompt is its tokens where the mask is 1 (every token without
 * a mask), at positions 0, 1, ... as HF's position ids from the mask's
 * cumulative sum give them, the padding never attended: so a padded row is
 * computed as its tokens alone. Nothing is compared where the mask is 0.
 *
 * The reference: the whole forward (g2f_forward_run_var, the full
 * recompute with every value's variance) of each row's prompt followed by
 * the port's tokens but the last (teacher-forced on the port's own
 * tokens: after an expected flip the port's continuation is still
 * checkable), whose logits at the prompt's last position and after are the
 * steps' (tol = lambda sqrt(var) per logit, plus the stored dtype's
 * rounding of the port's logits). Step k of a row is then
 *   the same token   the port's token is our argmax, and its logits (when
 *                    recorded) match ours within tol;
 *   tie_flip         another token, where ours and the port's are within
 *                    the two logits' tolerances (gap = z[ours] - z[port] <=
 *                    tol[ours] + tol[port]: two correct float32 computations
 *                    can order them either way), and its logits match:
 *                    expected, reported with the gap, not a failure;
 *   a divergence     otherwise (a token no rounding explains, or logits
 *                    beyond tol).
 * The first divergence (the earliest step over the rows) is diagnosed like
 * a forward stage: the generation recomputed under each of a port's bugs
 * (the KV-cache ones by g2f_decode's hows: cache_position_reset,
 * cache_not_appended, cache_offset:K for K in -2..2, cache_k_scaled,
 * cache_kv_before_bias, cache_kv_swapped, padding_positions with a padded
 * batch; the model's ends by the forward's: wpe_missing, wpe_offset:K,
 * ln_f_missing, lm_head_untied); a bug is named when its recomputation
 * reproduces every compared step of every row: each port token its argmax
 * or within the tie window, and the port's logits within tol (the correct
 * computation's tolerance at the same step). Tokens alone are weaker
 * evidence than logits: with only ids several bugs may fit, and all that
 * fit are named.
 *
 * Memory: the tolerance of every compared step's logits (B N V floats, as
 * much as the port's step_logits), one row's reference logits, the
 * forward's and the decoder's (g2f_forward.h, g2f_decode.h).
 */
#ifndef G2F_GENVERIFY_H
#define G2F_GENVERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_cause.h"
#include "g2f_error.h"
#include "g2f_fixture.h"
#include "g2f_model.h"

typedef struct g2f_genverify_params {
    size_t n_head;      /* 0: the model's */
    g2f_gelu gelu;
    int n_threads;
    double lambda;      /* 0: G2F_TOL_LAMBDA */
    int diagnose;       /* a divergence recomputed under the port bugs */
} g2f_genverify_params;

/* A step where the port's token is not ours. */
typedef struct g2f_gen_step {
    size_t seq, step;
    int64_t ours, port;   /* our greedy choice, the port's token */
    double gap;           /* z[ours] - z[port] in our logits (>= 0) */
    double window;        /* tol[ours] + tol[port]: the gap a rounding can close */
    size_t rank;          /* the port's token among ours: 1 second, 2 third, ... (0: the same token) */
    int logits_checked;   /* the port's logits at this step were compared, */
    double logits_margin; /* max |port - ours| / tol (<= 1 matches; +inf with a non-finite value) */
    int64_t port_top;     /* with logits: the largest of the port's own logits when its token is below it, a
                             choice no rounding makes (not greedy); else -1 */
} g2f_gen_step;

#define G2F_GEN_MAX_FLIPS 16

typedef struct g2f_gen_result {
    size_t n_seq, steps, vocab;
    size_t prompt_min, prompt_max; /* the rows' prompt lengths (their tokens where the mask is 1) */
    size_t padded_rows;            /* rows the attention mask pads */
    int has_logits, has_mask, has_eos;
    g2f_dtype logits_dtype;
    int64_t eos;
    size_t compared;               /* steps compared (each row's, up to and with its first eos) */
    size_t after_eos;              /* steps after a row's eos, not compared */
    size_t same;                   /* of the compared: the port's token is ours */
    size_t n_flips;                /* tie flips (the first G2F_GEN_MAX_FLIPS in flips) */
    g2f_gen_step flips[G2F_GEN_MAX_FLIPS];
    size_t logits_steps;           /* steps whose port logits were compared */
    size_t logits_failed;          /* ... and did not match */
    double logits_margin;          /* the largest of their margins */
    size_t diverged_steps;         /* compared steps that are neither the same token nor a tie flip with
                                      matching logits */
    int diverged;
    g2f_gen_step first;            /* with diverged: the first divergence */
    size_t rows_diverged;          /* rows with a divergence */
    size_t later;                  /* steps after the first divergence, in its row, that diverge too */
    g2f_cause causes[G2F_STAGE_MAX_CAUSES]; /* what reproduces it, best margin first (none: unexplained) */
    size_t n_causes, hypotheses_tried;
    int nonfinite;                 /* the port's logits hold NaN or Inf at a compared step */
    int pass;                      /* steps were compared and none diverged (tie flips allowed) */
} g2f_gen_result;

/* The fixture holds a generation (generated_ids). */
int g2f_genverify_present(const g2f_fixture *f);
/* Checks every generation tensor of f against m, each failure one line
 * naming the file, the tensor and what is wrong (G2F_ERR_FORMAT): dtypes,
 * shapes (B and N agreeing, V the vocabulary), every compared id in the
 * vocabulary, mask values 0 or 1 with a token in every row, eos one id,
 * each row's prompt and steps within the positions. */
g2f_status g2f_genverify_check(const g2f_model *m, const g2f_fixture *f, g2f_error *err);
/* Verifies f's generation (after g2f_genverify_check succeeded; it is run
 * again). Fails on bad input, memory, or weights that cannot be read. */
g2f_status g2f_genverify_run(const g2f_model *m, const g2f_fixture *f, const g2f_genverify_params *p,
                             g2f_gen_result *out, g2f_error *err);

#endif
