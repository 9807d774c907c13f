/* g2f_safetensors: reader for the safetensors format (Hugging Face).
 *
 * Byte layout:
 *   [0, 8)        N, u64 little-endian: length of the JSON header
 *   [8, 8+N)      UTF-8 JSON object: {"__metadata__": {str: str}?,
 *                   "<name>": {"dtype": "F32", "shape": [d0, ...],
 *                              "data_offsets": [begin, end]}, ...}
 *                 libraries pad it with spaces to a multiple of 8; files
 *                 written by hand may not, leaving the data unaligned.
 *   [8+N, size)   the data buffer; offsets are relative to its start.
 *
 * Validation, in this order; the first violation is the error:
 *   1. the file holds at least the 8 length bytes;
 *   2. N <= G2F_SAFETENSORS_MAX_HEADER (100,000,000, the reference
 *      implementation's limit) and 8 + N <= file size;
 *   3. the header starts with '{', is valid UTF-8 without control bytes, and
 *      parses as one JSON object followed only by whitespace, in which no
 *      object holds a key twice (g2f_json, sorted per object): the header's
 *      own keys are the tensor names, so names are unique, and a tensor's
 *      entry cannot say "dtype" twice;
 *   4. "__metadata__", when present, is an object of string values;
 *   5. every other member is an object with a known "dtype" string, a
 *      "shape" array of at most G2F_MAX_DIMS non-negative integers and a
 *      "data_offsets" array of two non-negative integers begin <= end;
 *   6. element count x dtype size == end - begin, computed without overflow;
 *   7. end <= data buffer size;
 *   8. sorted by begin (g2f_span), the tensors tile the data buffer exactly:
 *      the first starts at 0, each starts where the previous ended (no
 *      overlap, no gap), the last ends at the end of the file.
 * Integers must be below 2^53: JSON numbers are read as doubles, exact below
 * 2^53, and 2^53 + 1 would read as 2^53; larger values are refused as out of
 * range.
 *
 * Ownership: g2f_safetensors_open maps the file read-only; the table and the
 * data pointers in it are borrowed and valid until g2f_safetensors_close.
 * No tensor data is copied.
 */
#ifndef G2F_SAFETENSORS_H
#define G2F_SAFETENSORS_H

#include <stdint.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_tensor.h"

#define G2F_SAFETENSORS_MAX_HEADER 100000000ull

typedef g2f_mapped_table g2f_safetensors;

/* Validates a complete safetensors image in memory and fills out with views
 * into buf. label names the file in messages. On failure out is empty. */
g2f_status g2f_safetensors_parse(const unsigned char *buf, uint64_t size, const char *label,
                                 g2f_table *out, g2f_error *err);

/* True when the bytes look like safetensors (a plausible length then '{'). */
int g2f_safetensors_probe(const unsigned char *buf, uint64_t size);

/* Maps and validates path. *out is set only on success. */
g2f_status g2f_safetensors_open(const char *path, g2f_safetensors **out, g2f_error *err);
/* Borrowed; valid until g2f_safetensors_close. */
const g2f_table *g2f_safetensors_table(const g2f_safetensors *st);
/* Unmaps and frees; NULL is a no-op. */
void g2f_safetensors_close(g2f_safetensors *st);

#endif
