/* g2f_kvattn: GPT-2's causal self-attention for tokens that follow a cache
 * of the earlier tokens' keys and values: the decode step (one token after
 * the prompt) and any step of n tokens after `past` cached ones.
 *
 * One sequence; n_embd d, n_head heads of d_head = d / n_head features
 * (feature i of head h at h d_head + i, GPT-2's [n_head, d_head]):
 *   qkv (n, 3d)       c_attn's output for the n new tokens: q | k | v
 *   kc, vc (past, d)  the cached keys and values of tokens 0..past-1, rows
 *                     of ld floats (ld >= d: one layer's slice of a cache)
 *   query i (token past + i) sees the cached rows 0..past-1 and the new
 *   rows 0..i (its own key included), in that order, L = past + i + 1 keys:
 *     s_j  = q_i,h . k_j,h                    float32, features in 8 fixed lanes
 *     s_j  = float(s_j * scale)               the product in double, rounded once
 *     e_j  = float(exp(double(s_j - max s)))  as g2f_attn's softmax
 *     p_j  = float(e_j * (1 / sum e))         the sum in double, keys in order
 *     z_h  = sum_j p_j v_j,h                  float32, keys in order
 *   merged (n, d)     z_h at head h's features
 *   probs             (n_head, n, past + n) or NULL: p_ij, zeros after query
 *                     i's last key
 * The arithmetic is g2f_attn_forward's (scale after the dot, the same
 * softmax), summed in another order: the two agree within the derived
 * tolerance, not bit for bit. With past 0 it is the whole causal attention
 * of n tokens.
 *
 * The pair:
 *   g2f_kvattn_forward      float32 as above; OpenMP over (head, query)
 *                           tasks, each from its scores to its z written by
 *                           one thread in a fixed order: bitwise identical
 *                           for any thread count.
 *   g2f_kvattn_forward_ref  double throughout, one thread: the oracle.
 *
 * Cost per query: 2 L d multiply-adds, against the 12 d^2 of the block's
 * products that the decode step streams from memory: attention is a tenth
 * of GPT-2 small's step at 1024 tokens of context.
 *
 * Failure model: G2F_ERR_USAGE naming the argument for n_head 0 or not
 * dividing d, ld < d, NULL qkv / merged, or kc / vc NULL with past > 0;
 * G2F_ERR_NOMEM when the scratch (one row of L floats per thread) cannot be
 * had. merged and probs are then unwritten. All arrays are the caller's.
 */
#ifndef G2F_KVATTN_H
#define G2F_KVATTN_H

#include <stddef.h>

#include "g2f_error.h"

typedef struct g2f_kvattn_args {
    const float *qkv;        /* (n, 3d) */
    size_t n;                /* new tokens */
    const float *kc, *vc;    /* (past, ld) each; may be NULL when past is 0 */
    size_t past, ld;
    size_t d, n_head;
    double scale;            /* GPT-2: 1 / sqrt(d_head) */
} g2f_kvattn_args;

/* merged (n, d) and probs (n_head, n, past + n) or NULL; n_threads <= 0:
 * the OpenMP default. */
g2f_status g2f_kvattn_forward(const g2f_kvattn_args *a, float *merged, float *probs, int n_threads, g2f_error *err);
/* The same in double, rounded to float at the end; one thread. */
g2f_status g2f_kvattn_forward_ref(const g2f_kvattn_args *a, float *merged, float *probs, g2f_error *err);

#endif
