/* g2f_llmc_state: reader for llm.c's debug state (gpt2_124M_debug_state.bin),
 * as written by karpathy/llm.c train_gpt2.py write_state and read by
 * test_gpt2.c, the file llm.c's C code and its ports in other languages
 * check themselves against: one batch's input tokens, targets, logits and
 * loss from PyTorch, and the gradients of every parameter.
 *
 * Byte layout (little-endian, no padding anywhere):
 *   [0, 1024)  header, 256 int32:
 *                [0] magic 20240327
 *                [1] version 2 (1 -> 2 when llm.c padded the vocabulary of
 *                    the gradients)
 *                [2] B, batch size      [3] T, sequence length
 *                [4..255] unused (zero), not checked
 *   then, back to back:
 *     x       int32   (B, T)      the input token ids
 *     y       int32   (B, T)      the targets (x shifted by one token)
 *     logits  float32 (B, T, V)   the forward's logits over the *unpadded*
 *                                 vocabulary: train_gpt2.py's lm_head has
 *                                 vocab_size rows, and test_gpt2.c reads
 *                                 B*T*V floats (it compares them with its
 *                                 own (B, T, Vp) logits up to V)
 *     loss    float32             F.cross_entropy of the logits against y,
 *                                 the mean over B*T
 *     grads   float32 (P)         every parameter's gradient in the llm.c
 *                                 checkpoint's order and shapes, wte's padded
 *                                 with zero rows to (Vp, C) (write_tensors on
 *                                 pad_vocab'd grads): P is the parameter count
 *                                 of the padded llm.c checkpoint (g2f_llmc.h)
 *
 * The file stores neither V, Vp nor P. They come from the checkpoint the
 * state belongs to (g2f_llmc_state_dims: from an llm.c checkpoint's table,
 * or from any GPT-2's sizes with llm.c's padding), and the file size must
 * then be exactly
 *     1024 + 4BT (x) + 4BT (y) + 4BT Vl (logits) + 4 (loss) + 4P (grads)
 * with Vl = V, what write_state writes, or Vl = Vp: logits kept padded, as a
 * port that writes its own (B, T, Vp) buffer would; the two sizes always
 * differ when Vp > V (B, T >= 1), so the size tells them apart. Padded
 * logits are cut to V (an owned copy: B T V floats); the padding columns
 * are not read.
 *
 * The table (in this order):
 *   input_ids  I32 (B, T)      x, a view
 *   targets    I32 (B, T)      y, a view
 *   logits     F32 (B, T, V)   a view, or the cut copy of padded logits
 *   loss       F32 ()          a scalar view
 * The gradients are out of scope: not exposed, their size checked; the
 * metadata says they are there. Metadata (decimal strings): "format" =
 * "llm.c debug state", "version", "batch_size", "seq_len", "vocab_size" (V),
 * "padded_vocab_size" (Vp), "logits_vocab" (Vl, the width stored in the
 * file), "gradient_floats" (P).
 *
 * Validation, in this order; the first violation is the error:
 *   1. the file holds the 4-byte magic and it is 20240327;
 *   2. the file holds the 1024-byte header;
 *   3. version is 2 (version 1, with unpadded gradients, is refused:
 *      llm.c's own test refuses it too);
 *   4. B in [1, G2F_LLMC_STATE_MAX_BATCH], T in [1, G2F_LLMC_MAX_SEQ_LEN];
 *   5. the caller's dims (G2F_ERR_USAGE, not the file's fault): none given
 *      is refused here, naming B and T and what is missing; V in
 *      [1, G2F_LLMC_MAX_VOCAB], Vp in [V, G2F_LLMC_MAX_VOCAB], P in
 *      [1, G2F_LLMC_STATE_MAX_PARAMS];
 *   6. B T Vl x 4 and the total size do not overflow 64 bits (they can
 *      within the limits: B = T = 2^20 with V = 2^22);
 *   7. the file size equals the size for Vl = V or for Vl = Vp exactly (a
 *      shorter file is truncated, a longer one is not what write_state
 *      wrote; the message says which, or that it lies between the sizes
 *      for V and for Vp);
 *   8. every x and every y is a token id in [0, V) (llm.c's loss indexes its
 *      probabilities with y; PyTorch's ignore_index -1 never comes from
 *      llm.c's data loader and is refused): the first one outside is named
 *      with its [b, t].
 *
 * Ownership: g2f_llmc_state_open maps the file read-only; the table and its
 * data pointers are borrowed and valid until g2f_llmc_state_close.
 *
 *     g2f_llmc *ck; g2f_llmc_state *st; g2f_llmc_state_dims dims; g2f_error err = {0};
 *     g2f_llmc_open("gpt2_124M.bin", &ck, &err);
 *     g2f_llmc_state_dims_from_llmc(g2f_llmc_table(ck), &dims, &err);
 *     g2f_llmc_state_open("gpt2_124M_debug_state.bin", &dims, &st, &err);
 *     const g2f_tensor *z = g2f_table_find(g2f_llmc_state_table(st), "logits"); // (4, 64, 50257)
 *     g2f_llmc_state_close(st); g2f_llmc_close(ck);
 */
#ifndef G2F_LLMC_STATE_H
#define G2F_LLMC_STATE_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_llmc.h"
#include "g2f_tensor.h"

#define G2F_LLMC_STATE_MAGIC 20240327
#define G2F_LLMC_STATE_VERSION 2
#define G2F_LLMC_STATE_HEADER_BYTES 1024u
/* llm.c's batches are 4 to 64 sequences; larger ones are malformed. */
#define G2F_LLMC_STATE_MAX_BATCH (1 << 20)
/* Above any llm.c checkpoint within g2f_llmc.h's limits (5.4e13). */
#define G2F_LLMC_STATE_MAX_PARAMS ((uint64_t)1 << 48)
/* train_gpt2.py's pad_vocab: the vocabulary rounded up to a multiple of 128. */
#define G2F_LLMC_PAD_MULTIPLE 128u

/* What the file does not store, from the checkpoint it belongs to. */
typedef struct g2f_llmc_state_dims {
    uint64_t vocab;        /* V, the real vocabulary (llm.c header[3] vocab_size) */
    uint64_t padded_vocab; /* Vp >= V (llm.c header[7]); V when nothing is padded */
    uint64_t n_params;     /* P: the padded llm.c checkpoint's parameters, the gradient floats */
} g2f_llmc_state_dims;

/* From an llm.c checkpoint's table (g2f_llmc_table): V and Vp from its
 * metadata, P the sum of its tensors' elements (llm.c's num_parameters).
 * G2F_ERR_USAGE when the table is not an llm.c checkpoint's. */
g2f_status g2f_llmc_state_dims_from_llmc(const g2f_table *llmc, g2f_llmc_state_dims *out, g2f_error *err);
/* From a GPT-2's sizes in any format, as write_state would have written its
 * state: Vp = V rounded up to G2F_LLMC_PAD_MULTIPLE, P = Vp C + maxT C +
 * L (12 C^2 + 13 C) + 2 C (g2f_llmc.h's parameters), overflow-checked. */
g2f_status g2f_llmc_state_dims_for_model(uint64_t vocab, uint64_t max_seq_len, uint64_t n_layer, uint64_t n_embd,
                                         g2f_llmc_state_dims *out, g2f_error *err);

/* Validates a complete debug-state image in memory against dims (NULL:
 * checks 1-4, then G2F_ERR_USAGE) and fills out with the table above. When
 * the file's logits are padded, *cut receives the owned copy the logits view
 * points into (free() it after g2f_table_free), else NULL. label names the
 * file in messages. On failure out is empty and *cut NULL. */
g2f_status g2f_llmc_state_parse(const unsigned char *buf, uint64_t size, const char *label,
                                const g2f_llmc_state_dims *dims, g2f_table *out, float **cut, g2f_error *err);

typedef struct g2f_llmc_state g2f_llmc_state;

/* Maps and validates path against dims. *out is set only on success. */
g2f_status g2f_llmc_state_open(const char *path, const g2f_llmc_state_dims *dims, g2f_llmc_state **out,
                               g2f_error *err);
/* Borrowed; valid until g2f_llmc_state_close. */
const g2f_table *g2f_llmc_state_table(const g2f_llmc_state *s);
/* Unmaps and frees; NULL is a no-op. */
void g2f_llmc_state_close(g2f_llmc_state *s);

#endif
