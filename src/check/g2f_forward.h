/* g2f_forward: the whole GPT-2 forward, token ids to logits, and its check.
 *
 *   x      = wte[ids] + wpe[positions]          positions 0..T-1 per sequence
 *   x      = block_L(x)  for L = 0 .. n_layer-1  (g2f_block_chain: the block
 *                                                 check's own arithmetic)
 *   ln_f   = LayerNorm_f(x)
 *   logits = ln_f head^T (+ head bias)           head: lm_head, or wte when tied
 *
 * When a fixture is checked, every value travels with its variance (README:
 * Tolerance): the embedding is one rounding (the gather is exact, the add
 * rounds once), the blocks carry theirs as the chained block check does,
 * ln_f and the logits' GEMM add their own. A recorded stage is compared with
 * lambda sqrt(var) plus its stored dtype's rounding. Without a fixture
 * (`run`: nothing is compared) no variance is computed or allocated: the
 * values alone, by the same calls, so the same bits (test_forward checks);
 * the variances were more than half of the work (a GEMM on squares beside
 * every GEMM, the logits' included).
 *
 * Memory: one block's weights at a time (g2f_model_block_load, freed before
 * the next), the embeddings and head (views when F32), the residual stream
 * and ln_f's output for every token (2 n_tokens d floats, twice that with
 * variances), a sequence's block buffers (g2f_block_chain, with its (n_head,
 * T, T) scores), and the logits a chunk of G2F_FORWARD_LOGIT_ROWS (or
 * G2F_FORWARD_VALUE_ROWS) tokens at a time. Every size is checked against
 * the machine's memory before use.
 *
 * Threads: the kernels' (bitwise identical for any thread count); the
 * rest runs in a fixed order on one thread.
 *
 * Checking (g2f_forward_check) compares, in model order: embed (or
 * hook_embed + hook_pos_embed, or h.0.in), every layer's recorded stages
 * (chained), ln_f.out, logits; the first that does not match is the model's
 * first divergence. Beside it, isolated checks from recorded inputs: embed
 * from input_ids, ln_f from the last layer's h.L.out, logits from ln_f.out;
 * a failing one is recomputed under the model's porting bugs (wpe_missing,
 * wpe_offset:K for K in 1..4 and -1, ln_f_missing, ln_eps:E, ln_*_missing,
 * lm_head_untied). A divergence no isolated check explains (say a fixture
 * with only input_ids and logits) is diagnosed by rerunning the whole
 * forward under each model-level bug. For the logits also the agreement a
 * user acts on: top-1 tokens per position, the largest KL divergence
 * KL(softmax(reference) || softmax(ours)) and the positions whose top-1
 * differs.
 */
#ifndef G2F_FORWARD_H
#define G2F_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_block.h"
#include "g2f_compare.h"
#include "g2f_diagnose.h"
#include "g2f_error.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_tol.h"

/* Tokens per chunk of the logits' GEMM (a chunk's logits and variances:
 * 2 rows x vocab floats). Without variances (run) chunks of
 * G2F_FORWARD_VALUE_ROWS: every chunk packs the whole head again (vocab x d,
 * transposed when it is wte), which at 64 rows cost about a third of the
 * logits' time (GPT-2 small, 1024 tokens); 256 rows are 51 MB of logits. A
 * row's logits do not depend on the chunk (g2f_matmul_sq). */
#define G2F_FORWARD_LOGIT_ROWS 64
#define G2F_FORWARD_VALUE_ROWS 256

typedef struct g2f_forward_params {
    size_t n_head;                /* 0: the model's */
    const g2f_tol_params *tol;
    g2f_gelu gelu;
    int n_threads;
    int no_probs;                 /* without a fixture: the attention probabilities not kept (the step
                                     hook sees NULL for them: g2f_block_params.no_probs) */
    g2f_diag_set accept;          /* g2f_forward_check: the port's precision (weights_f16_rounded,
                                     f16_matmul: --accept); a failing model judged again computed so */
} g2f_forward_params;

/* A port's model-level bugs, to recompute under (all 0: GPT-2). */
typedef struct g2f_model_how {
    int no_wpe;                   /* wpe_missing */
    long wpe_offset;              /* wpe_offset:K: positions K .. K+T-1 */
    int no_ln_f;                  /* ln_f_missing: ln_f.out = the last block's output */
    int no_ln_w, no_ln_b;         /* ln_f without its gain / bias */
    double ln_eps;                /* 0: the model's */
    int wte_head;                 /* lm_head_untied: the logits made with wte */
    double embed_scale;           /* embed_scaled: wte[ids] times this (0: not scaled) */
    /* the port's precision (a hypothesis, or what --accept takes; all 0: float32 as stored):
     * wte_r / wpe_r / head_r / ln_f_r replace the ends' weights (rounded copies: weights_f16_rounded,
     * ggml's F16 wte), block_round rounds every block's weights (g2f_block_round: 1 all to
     * F16, 2 the products' to F16 (f16_matmul), 3 all to BF16), gemm_in rounds every
     * product's input (the blocks' and the logits'), uw: the weights known to within this
     * relative rounding (an F16/BF16 checkpoint against a float32 reference) */
    const float *wte_r, *wpe_r, *head_r;
    const g2f_ln *ln_f_r;         /* ln_f's gain and bias rounded (weights_f16_rounded), or NULL */
    int block_round;
    g2f_round gemm_in;
    double uw;
    const g2f_block_bug *block;   /* a bug in every block (a generation's hypotheses), or NULL */
} g2f_model_how;

/* What the forward hands its caller as it goes (each may be NULL), values
 * with their absolute variances (NULL without a fixture); a non-OK status
 * stops the forward and is returned. Rows are the flattened (n_seq, T)
 * tokens. */
typedef struct g2f_forward_hooks {
    void *user;
    /* the embedding of every token: x (n_tokens, d) */
    g2f_status (*embed)(void *user, const float *x, const float *vx, g2f_error *err);
    /* after sequence seq went through layer L: its stages by
     * g2f_block_chain_values */
    g2f_status (*step)(void *user, size_t L, size_t seq, const g2f_block_chain *c, g2f_error *err);
    /* after every sequence went through layer L */
    g2f_status (*layer_end)(void *user, size_t L, g2f_error *err);
    /* ln_f's output for every token: y (n_tokens, d) */
    g2f_status (*ln_f)(void *user, const float *y, const float *vy, g2f_error *err);
    /* the logits of rows [row0, row0 + n): z (n, vocab) */
    g2f_status (*logits)(void *user, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err);
} g2f_forward_hooks;

/* The whole forward of ids (n_seq, T) (each in [0, vocab), T <= the
 * positions wpe holds: the caller checked, g2f_fixture_check_model). e:
 * from g2f_model_embed_load. how may be NULL. With f, every stage it records
 * is compared and verdicts (n_layer entries, may be NULL) get each layer's
 * chained verdict; without, only the values are computed (the hooks get
 * NULL variances). */
g2f_status g2f_forward_run(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t n_seq, size_t T,
                           const g2f_forward_params *p, const g2f_model_how *how, const g2f_fixture *f,
                           const g2f_forward_hooks *hooks, g2f_chain_verdict *verdicts, g2f_error *err);

/* The same without a fixture but with every value's variance (the hooks
 * get them): the tolerance of a computation compared elsewhere (a
 * generation's logits, g2f_genverify). */
g2f_status g2f_forward_run_var(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t n_seq, size_t T,
                               const g2f_forward_params *p, const g2f_model_how *how, const g2f_forward_hooks *hooks,
                               g2f_error *err);

/* ---- the check ------------------------------------------------------------ */

/* The model-level stages are the stage table's embed, ln_f and logits
 * (g2f_stage.h); results are indexed by g2f_stage (the block's entries
 * unused). */

#define G2F_MODEL_MAX_CAUSES 4 /* the causes kept per model-level stage (of G2F_STAGE_MAX_CAUSES) */

/* Top-1 agreement of the logits (computed in the chained pass against the
 * recorded logits). */
typedef struct g2f_logit_agreement {
    int computed;
    size_t positions, top1_agree;
    double max_kl;                /* nats, KL(softmax(reference) || softmax(ours)) */
    size_t max_kl_position;
    size_t *differing;            /* flat positions (seq * T + t) whose top-1 differs, owned */
    size_t n_differing;
    size_t *ref_top1, *our_top1;  /* at those positions, the reference's top-1 token and ours (in the same
                                     allocation as differing) */
} g2f_logit_agreement;

typedef struct g2f_model_result {
    int present;                  /* the fixture holds model-level tensors (input_ids, embed, ln_f.out, logits) */
    int has_ids;
    size_t n_seq, T, vocab;
    const char *head_desc;        /* g2f_embed's */
    int head_tied;
    /* chained from input_ids */
    int chained;
    const char *not_computable[G2F_STAGE_COUNT]; /* why a stage cannot be computed from this checkpoint
                                     (no wpe for embed, no ln_f, ...): static, NULL when it can */
    int skipped;                  /* nothing model-level can be computed from this checkpoint (no token
                                     embedding: an FFN-only file): chain_note says so; not a failure */
    char chain_note[640];         /* why the forward from input_ids was not computed ("" when it was, or
                                     when the fixture has no input_ids): n_head unknown, no attention
                                     weights; the isolated stages are still checked */
    g2f_stage_result chain[G2F_STAGE_COUNT];
    size_t n_layers;
    g2f_chain_verdict *layers;    /* n_layers entries, owned: every layer's chained verdict */
    /* isolated, from recorded inputs */
    g2f_stage_result iso[G2F_STAGE_COUNT];
    g2f_logit_agreement agree;
    /* the first divergence in model order (chained, else isolated) */
    int diverged;
    long first_layer;             /* the layer, or -1 for embed / ln_f / logits */
    g2f_stage first_stage;        /* embed, a block stage (with first_layer), ln_f, logits; G2F_STAGE_NONE */
    const char *first_tensor;
    double first_margin;
    char first_codes[256];        /* the diagnosis at that stage, "" when none (g2f_verify fills a block's) */
    char first_not_diagnosed[120]; /* "" or why that stage was not diagnosed (its layer outside --layers, the
                                      stage not recorded beside its input): then no cause is claimed or denied */
    size_t compared;              /* model-level and chained stages compared (0: input_ids alone) */
    size_t failed;                /* of those, the ones that do not match (propagated ones included) */
    g2f_diag_set accepted;        /* the precision codes the stages were judged with (--accept), or 0 */
    int pass;                     /* something was compared, and every compared stage matches */
} g2f_model_result;

/* Checks f's model-level tensors against m (nothing when it has none:
 * present 0). Fails on bad input (G2F_ERR_FORMAT naming the file and tensor:
 * ids out of range, shapes) or allocation. */
g2f_status g2f_forward_check(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p,
                             g2f_model_result *out, g2f_error *err);
void g2f_model_result_free(g2f_model_result *r);

#endif
