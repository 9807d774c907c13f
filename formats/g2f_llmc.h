/* g2f_llmc: reader for llm.c GPT-2 checkpoints (gpt2_124M.bin,
 * gpt2_124M_bf16.bin), as written by karpathy/llm.c train_gpt2.py
 * write_model and read by train_gpt2.c gpt2_build_from_checkpoint.
 *
 * Byte layout (little-endian):
 *   [0, 1024)  header, 256 int32:
 *                [0] magic 20240326
 *                [1] version: 3 = parameters in float32, 5 = bfloat16
 *                [2] maxT, max_seq_len       [3] V, vocab_size
 *                [4] L, num_layers           [5] NH, num_heads
 *                [6] C, channels             [7] Vp, padded_vocab_size
 *                [8..255] unused (zero), not checked
 *   [1024, end) the parameters, back to back, no padding, in llm.c's fixed
 *              order (shapes row-major, outermost first; (L, ...) means one
 *              block per layer, layer 0 first):
 *                wte (Vp, C)  wpe (maxT, C)  ln1w (L, C)  ln1b (L, C)
 *                qkvw (L, 3C, C)  qkvb (L, 3C)  attprojw (L, C, C)
 *                attprojb (L, C)  ln2w (L, C)  ln2b (L, C)  fcw (L, 4C, C)
 *                fcb (L, 4C)  fcprojw (L, C, 4C)  fcprojb (L, C)
 *                lnfw (C)  lnfb (C)
 *              Weights are nn.Linear [out, in]: train_gpt2.py uses Linear
 *              (and transposes HF's Conv1D [in, out] when loading GPT-2), so
 *              fcw is (4C, C), the transpose of HF's c_fc (C, 4C).
 *
 * The table holds views into the file for every parameter, named as in
 * GPT-2 / HF (the format *is* GPT-2's, so its names are the natural ones),
 * in this order (4 + 12L tensors):
 *   wte.weight               (Vp, C)   rows V..Vp-1 are llm.c's zero padding
 *   wpe.weight               (maxT, C)
 *   then per layer L:
 *   h.L.ln_1.weight          (C)
 *   h.L.ln_1.bias            (C)
 *   h.L.attn.c_attn.weight   (3C, C)   Linear [out, in]: q, k, v rows
 *   h.L.attn.c_attn.bias     (3C)
 *   h.L.attn.c_proj.weight   (C, C)    Linear [out, in]
 *   h.L.attn.c_proj.bias     (C)
 *   h.L.ln_2.weight          (C)
 *   h.L.ln_2.bias            (C)
 *   h.L.mlp.c_fc.weight      (4C, C)   Linear [out, in]
 *   h.L.mlp.c_fc.bias        (4C)
 *   h.L.mlp.c_proj.weight    (C, 4C)   Linear [out, in]
 *   h.L.mlp.c_proj.bias      (C)
 *   and last:
 *   ln_f.weight              (C)
 *   ln_f.bias                (C)
 * dtype F32 (version 3) or BF16 (version 5). Metadata (decimal strings):
 * "format" = "llm.c", "version", "max_seq_len", "vocab_size",
 * "padded_vocab_size", "num_layers", "num_heads", "channels".
 *
 * Validation, in this order; the first violation is the error:
 *   1. the file holds the 4-byte magic and it is 20240326;
 *   2. the file holds the 1024-byte header;
 *   3. version is 3 or 5;
 *   4. every dimension lies in its named range: maxT in [1, G2F_LLMC_MAX_SEQ_LEN],
 *      V in [1, G2F_LLMC_MAX_VOCAB], L in [1, G2F_LLMC_MAX_LAYERS],
 *      C in [1, G2F_LLMC_MAX_CHANNELS], NH in [1, C] dividing C,
 *      Vp in [V, G2F_LLMC_MAX_VOCAB];
 *   5. the parameter count and 1024 + count x dtype size do not overflow 64
 *      bits (they cannot within the limits; checked anyway);
 *   6. the file size equals 1024 + count x dtype size exactly (a shorter file
 *      is truncated, a longer one is not what write_model wrote).
 *
 * Ownership: g2f_llmc_open maps the file read-only; the table and its data
 * pointers are borrowed and valid until g2f_llmc_close. Nothing is copied.
 *
 *     g2f_llmc *m; g2f_error err = {0};
 *     if (g2f_llmc_open("gpt2_124M.bin", &m, &err) != G2F_OK) return err.status;
 *     const g2f_tensor *fc = g2f_table_find(g2f_llmc_table(m), "h.0.mlp.c_fc.weight");
 *     ... fc->shape = {3072, 768} ...
 *     g2f_llmc_close(m);
 */
#ifndef G2F_LLMC_H
#define G2F_LLMC_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_tensor.h"

#define G2F_LLMC_MAGIC 20240326
#define G2F_LLMC_HEADER_BYTES 1024u
#define G2F_LLMC_VERSION_F32 3
#define G2F_LLMC_VERSION_BF16 5

/* Limits on header values: larger ones are malformed or malicious
 * (GPT-2 XL: maxT 1024, V 50257, L 48, C 1600, NH 25). */
#define G2F_LLMC_MAX_SEQ_LEN  (1 << 20)
#define G2F_LLMC_MAX_VOCAB    (1 << 24)
#define G2F_LLMC_MAX_LAYERS   1024
#define G2F_LLMC_MAX_CHANNELS 65536

typedef g2f_mapped_table g2f_llmc;

/* Validates a complete llm.c checkpoint image in memory and fills out with
 * views into buf. label names the file in messages. On failure out is empty. */
g2f_status g2f_llmc_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                          g2f_error *err);

/* Maps and validates path. *out is set only on success. */
g2f_status g2f_llmc_open(const char *path, g2f_llmc **out, g2f_error *err);
/* Borrowed; valid until g2f_llmc_close. */
const g2f_table *g2f_llmc_table(const g2f_llmc *m);
/* Unmaps and frees; NULL is a no-op. */
void g2f_llmc_close(g2f_llmc *m);

#endif
