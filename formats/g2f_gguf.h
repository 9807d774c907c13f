/* g2f_gguf: reader for GGUF v2 and v3 (ggml / llama.cpp model files).
 *
 * Byte layout (all little-endian; a "string" is a u64 byte length followed by
 * that many bytes, not NUL-terminated):
 *   [0, 4)    magic "GGUF"
 *   [4, 8)    u32 version: 2 or 3 (v3 only added big-endian files, which
 *             this reader refuses; v1 used 32-bit counts and is refused)
 *   [8, 16)   u64 n_tensors
 *   [16, 24)  u64 n_kv
 *   n_kv key-value pairs:
 *             string key; u32 value type; value:
 *               0 UINT8 1 INT8 2 UINT16 3 INT16 4 UINT32 5 INT32 6 FLOAT32
 *               7 BOOL (1 byte) 8 STRING 10 UINT64 11 INT64 12 FLOAT64
 *               9 ARRAY: u32 element type, u64 count, count elements
 *                 (arrays of arrays are refused, as ggml refuses them)
 *   n_tensors tensor infos:
 *             string name; u32 n_dims; u64 ne[n_dims]; u32 ggml type;
 *             u64 offset (relative to the data section)
 *   padding to a multiple of the alignment (KV "general.alignment", UINT32,
 *   default 32), then the data section.
 *
 * Shapes: ggml's ne[0] is the fastest-varying dimension, so the table's
 * row-major shape is [ne[n-1], ..., ne[0]]. A llama.cpp GPT-2 file stores
 * blk.N.ffn_up.weight with ne = [n_embd, n_inner]: row-major [n_inner, n_embd],
 * i.e. nn.Linear [out, in] (llama.cpp's converter transposes HF's Conv1D);
 * blk.N.ffn_down.weight has ne = [n_inner, n_embd]: row-major [n_embd, n_inner];
 * token_embd.weight ne = [n_embd, n_vocab]: row-major [n_vocab, n_embd].
 *
 * Types: F32, F16, BF16 (id 30), F64 (28) and I8..I64 (24..27) map to g2f
 * dtypes; Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K to the quantized
 * dtypes G2F_DTYPE_Q4_0 ... (g2f_quant.h: layouts, dequantization; their
 * scales are checked by g2f_quant_check when a layer is loaded); the other
 * block-quantized types (Q8_1, Q2_K, Q3_K, Q8_K, IQ*, TQ*, MXFP4) become
 * G2F_DTYPE_OPAQUE with type_name "Q2_K" etc. Both have nbytes from ggml's
 * table (ne[0] / block size * type size * ne[1] * ...). Ids ggml removed or
 * does not define (4, 5, 31-33, 36-38, >= 40) are errors.
 *
 * Metadata: string and scalar KVs go into table->meta as strings (integers in
 * decimal, floats with %.9g / %.17g, bools as "true"/"false"), e.g.
 * "general.architecture" = "gpt2", "gpt2.feed_forward_length" = "3072".
 * Arrays (tokenizer vocabularies, ...) are validated but not stored. A string
 * value with an embedded NUL byte reads as its prefix up to the NUL.
 *
 * Validation, in this order; the first violation is the error:
 *   1. the file holds the 4-byte magic and it is "GGUF";
 *   2. version is 2 or 3 (1: refused as GGUFv1; a version whose low 16 bits
 *      are zero: refused as a big-endian file);
 *   3. n_tensors <= G2F_GGUF_MAX_TENSORS and n_kv <= G2F_GGUF_MAX_KV, and the
 *      bytes after the 24-byte header can hold that many minimal tensor infos
 *      (25 bytes each) plus minimal KV pairs (14 bytes each);
 *   4. every read stays inside the file; every string length is within its
 *      limit (keys G2F_GGUF_MAX_KEY, values G2F_GGUF_MAX_STRING, tensor names
 *      G2F_GGUF_MAX_NAME) and within the bytes remaining;
 *   5. keys are non-empty and free of control bytes; value types are known;
 *      array counts are <= G2F_GGUF_MAX_ARRAY and fit the bytes remaining
 *      (count x element size, or x 8 for strings) before any element is
 *      read; once all pairs are read, keys are unique;
 *   6. "general.alignment", when present, is a UINT32 power of two in
 *      [1, G2F_GGUF_MAX_ALIGNMENT];
 *   7. per tensor info: the name is non-empty and free of control bytes;
 *      n_dims <= 4; every ne < 2^63; the type id is known; ne[0] is a multiple
 *      of the type's block size; the element count (< 2^63) and byte size do
 *      not overflow; once all infos are read, names are unique;
 *   8. per tensor: offset is a multiple of the alignment, and data start +
 *      offset + byte size <= file size, computed without overflow;
 *   9. sorted by offset, no two tensors' bytes overlap (gaps, e.g. alignment
 *      padding, are allowed; ggml additionally requires the offsets to follow
 *      the info order exactly, which this reader does not need).
 * Nothing is allocated for a count before it has passed its checks.
 *
 * Ownership: g2f_gguf_open maps the file read-only; the table and the data
 * pointers in it are borrowed and valid until g2f_gguf_close. No tensor data
 * is copied.
 *
 *     g2f_gguf *gg; g2f_error err = {0};
 *     if (g2f_gguf_open("model.gguf", &gg, &err) != G2F_OK) return err.status;
 *     const g2f_tensor *up = g2f_table_find(g2f_gguf_table(gg), "blk.0.ffn_up.weight");
 *     ... up->shape = {n_inner, n_embd} ...
 *     g2f_gguf_close(gg);
 */
#ifndef G2F_GGUF_H
#define G2F_GGUF_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_tensor.h"

/* Limits on header values: larger ones are malformed or malicious. */
#define G2F_GGUF_MAX_TENSORS   1000000ull      /* big MoE files have a few thousand */
#define G2F_GGUF_MAX_KV        100000ull       /* real files have tens */
#define G2F_GGUF_MAX_KEY       65535ull        /* the GGUF spec's key limit */
#define G2F_GGUF_MAX_NAME      63ull           /* ggml's GGML_MAX_NAME (64) minus the NUL */
#define G2F_GGUF_MAX_STRING    (1ull << 30)    /* ggml's GGUF_MAX_STRING_LENGTH */
#define G2F_GGUF_MAX_ARRAY     (1ull << 30)    /* ggml's GGUF_MAX_ARRAY_ELEMENTS */
#define G2F_GGUF_MAX_ALIGNMENT (1ull << 20)
#define G2F_GGUF_DEFAULT_ALIGNMENT 32u
#define G2F_GGUF_MAX_DIMS      4u              /* ggml's GGML_MAX_DIMS */

typedef g2f_mapped_table g2f_gguf;

/* Validates a complete GGUF image in memory and fills out with views into
 * buf. label names the file in messages. On failure out is empty. */
g2f_status g2f_gguf_parse(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                          g2f_error *err);

/* Maps and validates path. *out is set only on success. */
g2f_status g2f_gguf_open(const char *path, g2f_gguf **out, g2f_error *err);
/* Borrowed; valid until g2f_gguf_close. */
const g2f_table *g2f_gguf_table(const g2f_gguf *gg);
/* Unmaps and frees; NULL is a no-op. */
void g2f_gguf_close(g2f_gguf *gg);

/* ggml's name for a type id ("Q8_0"), or NULL for an unknown id. */
const char *g2f_gguf_type_name(uint32_t ggml_type);

#endif
