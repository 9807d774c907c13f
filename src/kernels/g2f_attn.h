/* g2f_attn: the core of GPT-2's causal self-attention, from the c_attn
 * output to the heads merged back (the c_proj input), with the variants a
 * port can get wrong, so that a diagnosis can recompute each one.
 *
 * One sequence of T tokens at positions 0..T-1, n_embd d, n_head heads of
 * d_head = d / n_head features:
 *   qkv (T, 3d)        c_attn's output; each row is three thirds of d
 *   q, k, v (T, d)     the thirds named by opts.qkv_order (GPT-2: q, k, v)
 *   q_h, k_h, v_h      (T, d_head) per head h, feature i of head h at
 *                      h d_head + i of a d-vector (GPT-2, [n_head, d_head])
 *                      or at i n_head + h (opts.heads_interleaved,
 *                      [d_head, n_head])
 *   S_h = q_h k_h^T * scale              (T, T) scores
 *   P_h = softmax over the keys a query may see: j <= i (opts.causal) or
 *         all j < T (a port that lost the mask); the others get exactly 0
 *   z_h = P_h v_h                        (T, d_head)
 *   merged (T, d)      z_h put back at the same places as the split took
 *                      them from (heads_interleaved applies to both)
 *   probs (n_head, T, T) optional: P_h, row i zero after i when causal
 * The arithmetic is PyTorch eager's (HF GPT2Attention._attn): the scores in
 * float32 (q k^T, then the scale), masked positions excluded, softmax in
 * float32 semantics (subtract the row max, exp, normalize), then P v.
 *
 * The pair:
 *   g2f_attn_forward      float32 data. Per head, q, k, v are gathered into
 *                         contiguous (T, d_head) blocks; then tasks of
 *                         (head, block of G2F_ATTN_QB queries) run on OpenMP
 *                         threads, largest first: S for the block by
 *                         g2f_matmul (the packed AVX2 GEMM) against the keys
 *                         the block can see (causal: keys after the block's
 *                         last query are never touched), the softmax row by
 *                         row (exp in double, rounded to float: within 0.5
 *                         ulp and a hair; the row sum in double; p = e * (1 /
 *                         sum)), then z = P v by g2f_matmul. Each output
 *                         element is computed by one thread in a fixed
 *                         order, and the blocking does not depend on the
 *                         thread count: bitwise identical for any count (on
 *                         a given CPU; the portable path rounds differently
 *                         from the AVX2 one). A query's results do not
 *                         depend on T or on later tokens when causal.
 *   g2f_attn_forward_ref  double throughout (scores, exp, sums, P v), plain
 *                         loops on one thread, reading qkv in place with its
 *                         own indexing: the oracle in tests.
 *
 * Non-finite inputs propagate: a NaN or Inf score makes its row NaN; a NaN
 * or Inf in v reaches, through 0 * NaN, the z of the queries of its
 * 96-query block that may not see it (PyTorch's P @ V multiplies every
 * masked zero, so there it reaches all of them); the reference skips
 * masked keys.
 *
 * Ownership: all arrays are the caller's; merged and probs are written
 * entirely (probs may be NULL). The fast kernel's scratch lives in a
 * caller-owned g2f_attn_ws (start {0}, keep it across calls and sequences,
 * release with g2f_attn_ws_free; NULL means one of its own for the call),
 * sized by T and d: 3 T d floats for the split heads plus, per thread,
 * G2F_ATTN_QB (T + d_head) floats and a g2f_ffn_ws. Not to be shared by
 * concurrent calls.
 *
 * Failure model: G2F_ERR_USAGE (err names the argument) for n_head 0 or
 * not dividing d, a qkv_order that is not a permutation of 0, 1, 2, or
 * NULL qkv/merged; G2F_ERR_NOMEM when a buffer size overflows, exceeds the
 * machine's memory or cannot be allocated (checked before anything is
 * read or written). On failure merged and probs are left unwritten.
 *
 *     g2f_attn_ws ws = {0};
 *     g2f_attn_opts o = g2f_attn_opts_gpt2(d / n_head);
 *     for (each sequence s)
 *         if (g2f_attn_forward(qkv_s, T, d, n_head, &o, merged_s, NULL, 0, &ws, &err) != G2F_OK) ...
 *     g2f_attn_ws_free(&ws);
 */
#ifndef G2F_ATTN_H
#define G2F_ATTN_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_ffn.h"

/* Queries per task of the fast kernel (a multiple of the GEMM's 6-row
 * tile): S blocks of 96 x T floats stay in L2, and T = 1024 gives 11
 * blocks per head, enough tasks to balance two to a few dozen threads. */
#define G2F_ATTN_QB 96

/* The variants a port can get wrong (GPT-2: g2f_attn_opts_gpt2). */
typedef struct g2f_attn_opts {
    int causal;            /* 1: query i sees keys 0..i; 0: all T keys (mask missing) */
    double scale;          /* scores multiplier: 1/sqrt(d_head); 1.0 models the scale missing,
                              1/(sqrt(d_head) (L+1)) HF's scale_attn_by_inverse_layer_idx */
    int qkv_order[3];      /* the third (0, 1, 2) of a qkv row read as q, k, v in that order:
                              {0,1,2} GPT-2; a port doing `k, q, v = qkv.split(d)` is {1,0,2},
                              `k, v, q = ...` is {2,0,1} (q from the third third) */
    int heads_interleaved; /* 0: feature i of head h at h d_head + i; 1: at i n_head + h */
} g2f_attn_opts;

/* causal, 1/sqrt(d_head), {0, 1, 2}, heads contiguous. */
g2f_attn_opts g2f_attn_opts_gpt2(size_t d_head);

/* One row of scores s (n) scaled, then softmax in place, portably: the
 * row's maximum subtracted, exp in double, one running sum in order, each
 * divided by it (the vector path's steps; the KV-cache step uses it). */
void g2f_softmax_row_ref(float *s, size_t n, double scale);

/* Scratch of g2f_attn_forward, owned by the caller; start from {0}. */
typedef struct g2f_attn_ws {
    float *heads;      /* (3, n_head, T, d_head): q, k, v split by head */
    size_t heads_cap;  /* floats */
    float *blocks;     /* per thread: scores (QB, T) then z (QB, d_head) */
    size_t blocks_cap; /* floats */
    g2f_ffn_ws *mm;    /* per thread: g2f_matmul's packed blocks */
    size_t mm_count;
} g2f_attn_ws;
/* Frees ws's buffers and zeroes it; NULL is a no-op. */
void g2f_attn_ws_free(g2f_attn_ws *ws);

/* merged (T, d) and probs (n_head, T, T) or NULL, from qkv (T, 3d) of one
 * sequence; opts NULL means g2f_attn_opts_gpt2(d / n_head). n_threads <= 0
 * means the OpenMP default; ws may be NULL. */
g2f_status g2f_attn_forward(const float *qkv, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                            float *merged, float *probs, int n_threads, g2f_attn_ws *ws, g2f_error *err);

/* The probabilities of one task of g2f_attn_forward, the same bits it
 * used: after g2f_attn_forward(qkv, T, d, n_head, opts, ..., ws) (ws keeps
 * the heads it split), rows gets (mq, n) for head h's queries [b QB, b QB +
 * mq) against the n keys they see (n = b QB + mq when causal, else T; zeros
 * after a causal row's last key), b < ceil(T / QB). rows holds QB T floats;
 * mm is the caller's (one thread). For checks that need the probabilities
 * a block at a time: memory QB T, never (n_head, T, T). */
void g2f_attn_block_probs(const g2f_attn_ws *ws, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                          size_t h, size_t b, float *rows, size_t *mq, size_t *n, g2f_ffn_ws *mm);

/* The reference: the same outputs computed in double (rounded to float at
 * the end), one thread. Allocates T + d_head doubles. */
g2f_status g2f_attn_forward_ref(const float *qkv, size_t T, size_t d, size_t n_head, const g2f_attn_opts *opts,
                                float *merged, float *probs, g2f_error *err);

/* n_seq independent sequences of T tokens each, every one starting at
 * position 0: qkv (n_seq T, 3d), merged (n_seq T, d), probs (n_seq,
 * n_head, T, T) or NULL (a fixture's leading dimensions flattened). One
 * g2f_attn_forward per sequence, sharing ws; stops at the first failure. */
g2f_status g2f_attn_forward_batch(const float *qkv, size_t n_seq, size_t T, size_t d, size_t n_head,
                                  const g2f_attn_opts *opts, float *merged, float *probs, int n_threads,
                                  g2f_attn_ws *ws, g2f_error *err);
/* The same with g2f_attn_forward_ref. */
g2f_status g2f_attn_forward_batch_ref(const float *qkv, size_t n_seq, size_t T, size_t d, size_t n_head,
                                      const g2f_attn_opts *opts, float *merged, float *probs, g2f_error *err);

#endif
