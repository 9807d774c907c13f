/* g2f_decode: GPT-2 a step at a time with a cache of every layer's keys and
 * values, as a port decodes: the prompt in one step, then one token per
 * step, and greedy generation on top (docs/decode.md).
 *
 * A step of n tokens that follow `past` cached ones (one sequence):
 *   x      = wte[id] + wpe[pos]                    pos = past + i (the prompt: 0..n-1)
 *   per layer L (the block's arithmetic, g2f_block.h):
 *     a    = LayerNorm_1(x)
 *     qkv  = a W_attn + b_attn                     (n, 3d); k, v stored in the cache's rows past..past+n-1
 *     z    = attention of each new token over the cache's rows 0..past-1 and the new rows up to itself
 *            (the prompt: g2f_attn_forward, the forward's kernel; a decode step: g2f_kvattn_forward)
 *     x    = x + z W_proj + b_proj;  x = x + FFN(LayerNorm_2(x))
 *   logits = LayerNorm_f(x) head^T (+ bias)         of the step's last token (or of each)
 * With one token a step's products are matrix-vector products that stream
 * every weight once (g2f_matmul's GEMV): the step is bound by memory
 * bandwidth. The values differ from the whole forward's by float32
 * rounding only (other summation orders): test_decode checks that every
 * step's logits equal the full recompute at that position within the
 * derived tolerance, and `run --generate --save` writes the per-step stages
 * as a fixture that `verify` checks against the full recompute.
 *
 * A port's KV-cache bugs are hows (g2f_decode_how): each changes what the
 * cache holds or which positions are used, so that a generation can be
 * recomputed under it (g2f_genverify names the ones that reproduce a port's).
 * The prompt step is always right: these bugs show only in decode steps,
 * which a teacher-forced check never runs.
 *
 * Memory: every block's weights (views when F32, else converted copies:
 * the whole model as float32), the cache (2 n_layer max_tokens d floats)
 * and a step's buffers ((13 d + 2 n_inner) max_step floats, the logits'
 * rows, and with probabilities kept n_head max_step max_tokens); each
 * checked against the machine's memory (g2f_alloc_work, naming it).
 *
 * Threads: the kernels' (bitwise the same for any thread count); the rest
 * in a fixed order; by default a model whose layers hold fewer than 2^20
 * weights runs on one thread (each product is microseconds: a fork and
 * join would cost as much). Not to be shared by concurrent calls.
 *
 *     g2f_decoder *dc;
 *     g2f_decode_params p = {0, G2F_GELU_TANH, 0, T0 + N - 1, T0, 0, 0};
 *     if (g2f_decoder_new(model, &p, &dc, &err) != G2F_OK) ...
 *     g2f_decoder_start(dc, NULL);
 *     g2f_generate(dc, prompt, T0, N, ids, NULL, &err);   // or g2f_decoder_step yourself
 *     g2f_decoder_free(dc);
 */
#ifndef G2F_DECODE_H
#define G2F_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_model.h"
#include "g2f_stage.h"

/* A port's KV-cache bugs (all 0: GPT-2). The prompt step is never
 * affected; from the first decode step on: */
typedef struct g2f_decode_how {
    int position_reset; /* cache_position_reset: each decoded token at position 0 (positions restarted per step) */
    int not_appended;   /* cache_not_appended: a decode step's keys and values are used but never stored: every
                           step sees the prompt's cache and itself; positions still count every token */
    long offset;        /* cache_offset:K: the past length K more than the tokens stored (positions too): K > 0
                           reads K rows never written (zeros), K < 0 overwrites the last K */
    int k_scaled;       /* cache_k_scaled: keys stored multiplied by the attention scale (scaled twice when read) */
    int kv_unbiased;    /* cache_kv_before_bias: keys and values stored without c_attn's bias */
    int kv_swapped;     /* cache_kv_swapped: the key cache holds the values and the value cache the keys */
    long pos_shift;     /* padding_positions: every position (the prompt's too) moved by this many: a row's left
                           padding counted as positions */
} g2f_decode_how;

typedef struct g2f_decode_params {
    size_t n_head;      /* 0: the model's */
    g2f_gelu gelu;
    int n_threads;      /* <= 0: the default (g2f_decode_threads) */
    size_t max_tokens;  /* the most tokens one sequence holds (prompt + decode steps): the cache's rows */
    size_t max_step;    /* the most tokens one step takes (the prompt's length) */
    int all_logits;     /* every token's logits from a step (n rows), else the last token's */
    int keep_probs;     /* the attention probabilities kept for the hooks (g2f_decoder_values) */
} g2f_decode_params;

typedef struct g2f_decoder g2f_decoder;

/* The threads a step of m runs on for n_threads asked: n_threads when it
 * is above 0, else (the default) 1 when its layers hold fewer than 2^20
 * weights (see Threads above) and OpenMP's default otherwise. */
int g2f_decode_threads(const g2f_model *m, int n_threads);

/* After each layer of a step (values of that layer by g2f_decoder_values)
 * and after ln_f (embed, ln_f.out); a non-OK status stops the step. */
typedef struct g2f_decode_hooks {
    void *user;
    g2f_status (*layer)(void *user, size_t L, const g2f_decoder *dc, g2f_error *err);
    g2f_status (*ends)(void *user, const g2f_decoder *dc, g2f_error *err);
} g2f_decode_hooks;

/* Loads every block and the ends of m and allocates the cache and buffers.
 * Fails (naming what) when a block has no attention weights, n_head is
 * unknown or does not divide n_embd, there is no ln_f, max_tokens exceeds
 * the positions wpe holds or is 0, max_step is 0 or above max_tokens, or
 * memory is short. p is copied. */
g2f_status g2f_decoder_new(const g2f_model *m, const g2f_decode_params *p, g2f_decoder **out, g2f_error *err);
/* NULL is a no-op; drops the mapped pages of the weights. */
void g2f_decoder_free(g2f_decoder *dc);
/* A new sequence: the cache emptied; how (NULL: GPT-2) borrowed until the
 * next start. hooks (NULL: none) borrowed likewise. */
void g2f_decoder_start(g2f_decoder *dc, const g2f_decode_how *how, const g2f_decode_hooks *hooks);
/* The next n tokens of the sequence: ids (n) in [0, vocab), n <= max_step,
 * the sequence within max_tokens and the positions within wpe (a how can
 * push them out: G2F_ERR_USAGE naming the position). z: the logits, (V) of
 * the last token or (n, V) with all_logits. */
g2f_status g2f_decoder_step(g2f_decoder *dc, const int64_t *ids, size_t n, float *z, g2f_error *err);

size_t g2f_decoder_vocab(const g2f_decoder *dc);
/* Tokens stepped since the start. */
size_t g2f_decoder_tokens(const g2f_decoder *dc);
/* In a hook: the step's rows of activation a, (*rows, *width) row-major,
 * valid until the step returns (embed and ln_f.out in the ends hook, the
 * layer's stages in the layer hook; attn.probs (n_head, *rows, *width =
 * keys) with keep_probs; NULL for what the step does not hold). *rows is
 * the step's token count, *first the sequence's tokens before them (row 0's
 * index in the sequence). */
const float *g2f_decoder_values(const g2f_decoder *dc, g2f_act a, size_t *rows, size_t *width, size_t *first);

/* ---- greedy generation ----------------------------------------------------- */

/* After step k (0: the prompt's) of a generation: its logits (V) and the
 * token chosen from them; a non-OK status stops it. */
typedef struct g2f_generate_hooks {
    void *user;
    g2f_status (*step)(void *user, size_t k, const float *z, int64_t token, g2f_error *err);
} g2f_generate_hooks;

/* The first index of the largest of z[0, n) (torch.argmax's choice among
 * equal maxima); a NaN is never the largest, all NaN gives 0. */
size_t g2f_argmax(const float *z, size_t n);

/* N tokens generated greedily after prompt (T0 ids) on a started decoder:
 * the prompt in one step, then N - 1 steps of one token (the last token
 * chosen is not stepped); token k = g2f_argmax of step k's logits, into
 * out (N). T0 + N - 1 within the decoder's max_tokens, T0 within max_step. */
g2f_status g2f_generate(g2f_decoder *dc, const int64_t *prompt, size_t T0, size_t N, int64_t *out,
                        const g2f_generate_hooks *hooks, g2f_error *err);

#endif
