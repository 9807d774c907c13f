/* g2f_genrun: `run --generate N`: greedy generation with the cache of
 * every layer's keys and values (g2f_decode), written as a generation
 * fixture (docs/decode.md) that `verify` checks:
 *   prompt_ids     [..., T0]     I64   the prompt of each sequence
 *   step_logits    [..., N, V]   F32   step k's logits (step 0: the prompt's last token's)
 *   generated_ids  [..., N]      I64   token k = argmax of step k's logits
 * and with --save the stages of every step as a model fixture of the T =
 * T0 + N - 1 tokens stepped (the last token generated is not stepped):
 *   input_ids      [..., T]      I64   the prompt, then the generated tokens but the last
 *   embed, h.L.*, ln_f.out       [..., T, width] (attn.probs [..., n_head, T, T])
 * under HF's fixture names: rows 0..T0-1 from the prompt's step, row T0 +
 * k - 1 from decode step k. `verify` checks those against the full
 * recompute of input_ids (so the cached steps' stages against the
 * teacher-forced forward, within the derived tolerance) and the generation
 * against its own greedy choice. Leading dimensions are the sequences',
 * each generated on its own. The metadata is run's (producer, tool, kind
 * "generation", gelu and its source, the checkpoint and its sha256, names).
 *
 * Memory: the decoder's (g2f_decode.h), a step's logits, the generated ids,
 * and with --save every saved stage of every sequence until the end (the
 * file holds one tensor after another, each over every step).
 */
#ifndef G2F_GENRUN_H
#define G2F_GENRUN_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_model.h"
#include "g2f_run.h"

typedef struct g2f_genrun_params {
    const g2f_run_params *run;   /* gelu, its source, format, checkpoint label and sha256, threads */
    size_t n_head;               /* 0: the model's */
    size_t steps;                /* N: tokens to generate per sequence, >= 1 */
    unsigned save;               /* run --save's bits (1u << g2f_act): the steps' stages */
} g2f_genrun_params;

typedef struct g2f_genrun_result {
    size_t n_seq, T0, steps, tensors;
    int64_t *generated;          /* (n_seq, steps), owned: g2f_genrun_result_free */
} g2f_genrun_result;

/* prompt: n_seq * T0 ids, the sequences' shape lead (lead_ndim <= 5
 * dimensions before T0, may be 0). Checks every id against the vocabulary,
 * T0 + N - 1 against the positions, n_head; writes out_path atomically. */
g2f_status g2f_run_generate(const g2f_model *m, const int64_t *prompt, const uint64_t *lead, size_t lead_ndim,
                            size_t T0, const char *out_path, const g2f_genrun_params *p, g2f_genrun_result *r,
                            g2f_error *err);
void g2f_genrun_result_free(g2f_genrun_result *r);

#endif
