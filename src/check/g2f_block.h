/* g2f_block: the stages of a GPT-2 block around the FFN, checked like the
 * FFN: recomputed from a recorded input, compared with the derived
 * tolerance, a failing stage recomputed under each porting bug of its kind.
 *
 *   ln_1   a = LayerNorm_1(x)                          in -> ln_1.out
 *   attn   qkv = a W_attn + b, causal softmax(q k^T / sqrt(d_head)) v per
 *          head, merged, attn.out = merged W_proj + b   ln_1.out -> qkv,
 *                                                       probs, merged, attn.out
 *   mid    mid = x + attn.out                           in, attn.out -> mid
 *   ln_2   LayerNorm_2(mid)                             mid -> ln_2.out (mlp.in)
 *   mlp    the FFN (g2f_verify's own path)              mlp.in -> mlp.out
 *   out    out = mid + mlp.out                          mid, mlp.out -> out
 *
 * Isolated: every stage whose input and output are recorded is checked from
 * its recorded input, so one wrong stage does not cascade. Chained: from
 * h.L.in alone the whole block is computed and every recorded stage
 * compared, the tolerances composed along the way (each stage's variance
 * carried into the next, the way the FFN's goes through c_fc, the GELU and
 * c_proj: the chain's FFN is g2f_ffn_eval_rows, the FFN check's own steps);
 * the variances travel and a tolerance is formed only where a stage is
 * compared. The first stage that does not match is the layer's first
 * divergence. Diagnosis runs on the isolated stages.
 *
 * Tolerance (README: Tolerance): each rounding an independent error of at
 * most u = 2^-24 relative; a dot product of n terms p_i has variance
 * u^2 (n/2 sum p_i^2 + n/3 (sum p_i)^2); an input's variance var_i enters a
 * product as sum var_i w_i^2. LayerNorm: the mean and the variance as sums
 * of d, 1/sqrt, the subtraction, two products and the bias
 * (g2f_tol_layernorm_var), plus w^2 r^2 var_x. Attention per head: the
 * scores q.k over d_head (both inputs' variances), the scale's product, the
 * softmax p_ij (p_ij^2 (var_s_ij + sum_l p_il^2 var_s_il), twice for the
 * correlation, plus the sum's and exp's roundings), z = p v over the keys,
 * c_proj over d. Every product of sums of squares is a GEMM
 * (g2f_matmul_sq). The bound is lambda sqrt(V) plus the stored dtype's
 * rounding, as for the FFN.
 *
 * Sequences: the leading dimensions before T are independent sequences,
 * each from position 0; attention works per sequence, in parallel over
 * heads. Memory: one sequence's (T, width) stages and, for attention's
 * variance, one block of G2F_ATTN_QB queries of one head at a time ((QB,
 * T) scores and probabilities, compared with the recorded ones as they are
 * made), and the FFN's chunk of tokens (at most G2F_EVAL_CHUNK_BYTES,
 * g2f_ffn_eval.h): linear in T. Only a values-only chain that keeps the
 * probabilities (run --save attn.probs) holds (n_head, T, T).
 */
#ifndef G2F_BLOCK_H
#define G2F_BLOCK_H

#include <stddef.h>

#include "g2f_compare.h"
#include "g2f_diagnose.h"
#include "g2f_error.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_tol.h"

/* The block's stages are the stage table's ln_1 .. out (g2f_stage.h):
 * results are indexed by g2f_stage, G2F_BLOCK_FIRST .. G2F_BLOCK_LAST. */

typedef struct g2f_block_result {
    g2f_stage_result stage[G2F_STAGE_COUNT]; /* mlp: filled by the caller from the FFN's check */
    int chained;                 /* h.L.in recorded: the whole block computed from it */
    size_t chained_compared;     /* stages the chained pass compared (0: it had nothing to compare) */
    int diverged;                /* the chained pass found a stage that does not match */
    g2f_diag_set chain_accepted; /* the chained pass matched when computed with these accepted precisions */
    g2f_stage first_stage;       /* with diverged: the first such stage, */
    const char *first_tensor;    /* its tensor, */
    double first_margin;         /* and margin */
    int attn_skipped;            /* attention recorded but not checked (no n_head, or no weights) */
    char note[160];              /* why, when skipped */
} g2f_block_result;

/* A port's bug in every block, for the chained pass: the forward computed
 * under it is a hypothesis about a whole generation (g2f_genverify), where
 * no stage is recorded to locate it. All 0: GPT-2. */
typedef struct g2f_block_bug {
    double scale;                /* attn_scale_missing (1.0) or attn_scale:C, the scores' multiplier; 0: 1/sqrt(d_head) */
    int scale_layer_idx;         /* attn_scale_layer_idx: the scores also divided by layer + 1 */
    int qkv;                     /* qkv_order: c_attn's thirds read as qkv_perm (g2f_qkv_perms) */
    int qkv_perm[3];
    int heads_interleaved;       /* heads split as [d_head, n_head] */
    double ln_eps;               /* ln_eps: both LayerNorms' epsilon; 0: the model's */
} g2f_block_bug;

typedef struct g2f_block_params {
    size_t n_head;               /* 0: the model's */
    const g2f_tol_params *tol;
    g2f_gelu gelu;               /* the FFN's form, for the chained pass */
    int n_threads;
    int diagnose;                /* recompute failing stages under the porting bugs */
    int values_only;             /* g2f_block_chain: no variances, nothing compared (the forward's run) */
    int no_probs;                /* with values_only: the attention probabilities not kept ((n_head, T, T)
                                    floats; g2f_block_chain_values gives NULL for them) */
    double weight_roundoff;      /* the weights known only to within this relative rounding (--accept of the
                                    checkpoint's own F16/BF16 rounding): every stage judged with it; 0 normally */
    g2f_round gemm_in;           /* every product's input rounded so (ggml's F16 matmul; the weights the
                                    caller's, rounded by g2f_block_round): the chain's arithmetic */
    g2f_diag_set accept;         /* g2f_block_check: a failing stage whose cause is made of these codes alone
                                    (weights_f16_rounded, weights_bf16_rounded, f16_matmul: --accept) is judged
                                    on that cause's recomputation, and so is the chained pass */
    const g2f_block_bug *bug;    /* the chained pass computed with this bug in every block, or NULL */
} g2f_block_params;

/* Checks layer's block stages recorded in f (g2f_fixture_check_block
 * succeeded). Fails only on allocation (sizes checked against the machine's
 * memory, naming the layer) or unreadable weights. */
g2f_status g2f_block_check(const g2f_model *m, const g2f_fixture *f, size_t layer, const g2f_block_params *p,
                           g2f_block_result *out, g2f_error *err);

/* ---- the block from values in memory (the whole forward, g2f_forward) ----
 * The chained pass above, one sequence at a time, from a residual stream the
 * caller holds (values and absolute variances) instead of a recorded
 * h.L.in: the same functions, so the model's forward and the block check
 * cannot differ. Usage, per layer L:
 *     g2f_block_chain_step(c, &b, L, f, seq, x, vx, err)   for each sequence
 *     g2f_block_chain_layer_end(c, &verdict)
 * A chain made with p->values_only computes the values alone, by the same
 * calls (the same bits), and never allocates the variances or the
 * comparisons' buffers (a third of the memory): for a forward that checks
 * nothing, where the variances were most of the time (a GEMM on squares
 * beside every GEMM, and per head four more for the scores and P v).
 */
typedef struct g2f_block_chain g2f_block_chain;

/* The chained verdict of a layer over the sequences stepped since the last
 * g2f_block_chain_layer_end: per stage (checked: the fixture records one of
 * its tensors and it was compared), and the first stage that diverges. */
typedef struct g2f_chain_verdict {
    g2f_stage_result stage[G2F_STAGE_COUNT];
    int diverged;
    g2f_stage first_stage;
    const char *first_tensor;
    double first_margin;
} g2f_chain_verdict;

/* A workspace for sequences of T tokens of m's shapes (n_head: p->n_head or
 * the model's; it must be known). Sizes checked against the machine's
 * memory (G2F_ERR_NOMEM naming the buffers). p is borrowed until
 * g2f_block_chain_free. */
g2f_status g2f_block_chain_new(const g2f_model *m, size_t T, const g2f_block_params *p, g2f_block_chain **out,
                               g2f_error *err);
/* NULL is a no-op. */
void g2f_block_chain_free(g2f_block_chain *c);
/* Block b (layer L, with attention weights) of sequence seq: x, vx (T, d) in,
 * replaced by the block's output and its variance. With f, every stage f
 * records for layer L is compared with that sequence's rows (f checked by
 * g2f_fixture_check_block with the same (n_seq, T)). A values_only chain
 * takes vx and f NULL, any other vx not NULL (else G2F_ERR_USAGE). */
g2f_status g2f_block_chain_step(g2f_block_chain *c, const g2f_block *b, size_t L, const g2f_fixture *f, size_t seq,
                                float *x, float *vx, g2f_error *err);
/* The verdict of the steps since the last call; the tallies restart. */
void g2f_block_chain_layer_end(g2f_block_chain *c, g2f_chain_verdict *out);
/* An activation's values from the last step, row-major (T, width) (probs:
 * (n_head, T, T), NULL in a no_probs chain), valid until the next step;
 * *width gets the row width. IN: the step's input; Q, K, V: NULL, they are
 * thirds of QKV's rows; Z: MERGED's layout; a model-level one: NULL. */
const float *g2f_block_chain_values(const g2f_block_chain *c, g2f_act kind, size_t *width);

/* A copy of src with its weights rounded (r): every weight, bias and gain
 * (a checkpoint stored rounded), or with matmul_only the four products'
 * weights alone (c_attn, attn.c_proj, c_fc, c_proj: ggml's F16 path, whose
 * biases and LayerNorms stay float32). dst's arrays point into *owned (the
 * caller frees it) or into src; valid while both are. */
g2f_status g2f_block_round(const g2f_block *src, g2f_round r, int matmul_only, g2f_block *dst, float **owned,
                           g2f_error *err);

/* LayerNorm of x (T, d) with variance vx: y and its variance vy (the
 * LayerNorm's roundings plus vx through its Jacobian), rstd (T) scratch.
 * no_w / no_b leave out the gain / bias (a port's bugs). vy NULL: y alone
 * (vx unread, may be NULL), the same bits. */
void g2f_block_ln_var(const float *x, const float *vx, size_t T, size_t d, const g2f_ln *ln, double eps, int no_w,
                      int no_b, float *y, float *vy, double *rstd, int n_threads);
/* c (m, n) = a (m, k) B + bias with its variance: B is (k, n), or (n, k)
 * when b_trans; a2 (m, k) scratch; ws may be NULL. vc NULL: c alone (va
 * and a2 unread, may be NULL), the same bits (g2f_matmul_sq). rin: a rounds
 * to that before the product (ggml's F16 matmul), into ar (m, k) scratch
 * (unread, may be NULL, with G2F_ROUND_NONE); uw: B and bias known to
 * within that relative rounding (0: exactly). */
void g2f_block_gemm_var(const float *a, const float *va, size_t m, size_t k, const float *B, int b_trans, size_t n,
                        const float *bias, double uw, g2f_round rin, float *c, float *vc, float *a2, float *ar,
                        int n_threads, g2f_ffn_ws *ws);

#endif
