/* g2f_tensor: the tensor table every format reader produces, dtypes, checked
 * size arithmetic and conversion to float32.
 *
 * A table is a list of named tensors: dtype, shape (row-major, outermost
 * first) and a pointer to the tensor's bytes inside memory the reader owns
 * (usually a read-only mmap). Data pointers may be unaligned (a hand-written
 * safetensors file with an unpadded header), so element access goes through
 * memcpy-based loads here, never through a cast pointer.
 *
 * Byte order: all formats read here are little-endian, and so must be the
 * host: g2f_tensor.c refuses to compile otherwise. x86-64 is what is built
 * and tested (with the AVX2 / F16C / SHA-NI kernels, and GPT2FFN_SIMD=OFF
 * for the portable ones); another little-endian host (aarch64) gets the
 * portable kernels only, and no test runs on one.
 */
#ifndef G2F_TENSOR_H
#define G2F_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

typedef enum g2f_dtype {
    G2F_DTYPE_F32,
    G2F_DTYPE_F16,
    G2F_DTYPE_BF16,
    G2F_DTYPE_F64,
    /* Known to the formats but not convertible to float for the FFN: */
    G2F_DTYPE_BOOL,
    G2F_DTYPE_U8,
    G2F_DTYPE_I8,
    G2F_DTYPE_I16,
    G2F_DTYPE_U16,
    G2F_DTYPE_I32,
    G2F_DTYPE_U32,
    G2F_DTYPE_I64,
    G2F_DTYPE_U64,
    G2F_DTYPE_F8_E4M3,
    G2F_DTYPE_F8_E5M2,
    /* ggml's block-quantized weight types (GGUF), dequantized to float by
     * g2f_tensor_read_f32/f64 (g2f_quant.h: layouts, validation, bounds).
     * g2f_dtype_size is 0 for them: sizes go by blocks (g2f_quant_block). */
    G2F_DTYPE_Q4_0,
    G2F_DTYPE_Q4_1,
    G2F_DTYPE_Q5_0,
    G2F_DTYPE_Q5_1,
    G2F_DTYPE_Q8_0,
    G2F_DTYPE_Q4_K,
    G2F_DTYPE_Q5_K,
    G2F_DTYPE_Q6_K,
    /* A type the format knows but gpt2ffn cannot convert (a GGUF quantized
     * type, ...): g2f_tensor.type_name names it; numel/nbytes still hold. */
    G2F_DTYPE_OPAQUE,
    G2F_DTYPE_COUNT
} g2f_dtype;

/* safetensors-style upper-case name ("F32", "BF16", ...); ggml's for the
 * quantized types ("Q8_0", "Q4_K", ...). */
const char *g2f_dtype_name(g2f_dtype dtype);
/* Parses a safetensors dtype name; false when unknown (the quantized types'
 * names are not safetensors dtypes and are refused too). */
bool g2f_dtype_from_name(const char *name, g2f_dtype *out);
/* Bytes per element; 0 for the quantized (block) types and OPAQUE. */
size_t g2f_dtype_size(g2f_dtype dtype);
/* True for F32, F16, BF16, F64. */
bool g2f_dtype_is_float(g2f_dtype dtype);
/* True for the ggml block-quantized types (G2F_DTYPE_Q4_0 ... Q6_K). */
bool g2f_dtype_is_quant(g2f_dtype dtype);
/* True for the dtypes g2f_tensor_read_f32/f64 convert: float or quantized. */
bool g2f_dtype_is_convertible(g2f_dtype dtype);
/* Unit roundoff of storing a float32 value in this dtype: 0 for F32 and F64
 * (no loss), 2^-11 for F16, 2^-8 for BF16. Used by the tolerance model. */
double g2f_dtype_store_roundoff(g2f_dtype dtype);
/* The absolute part of that rounding: half the spacing of the dtype's subnormals (F16 2^-25, BF16
 * 2^-134; 0 otherwise), where the relative bound above fails (a value below F16's 6.1e-5 is off by
 * up to 2^-25 whatever its size). A stored value v is within roundoff |v| + floor. */
double g2f_dtype_store_floor(g2f_dtype dtype);
/* Whether x (as dtype dx holds it) and y (dy) can be one value stored in both: in one dtype,
 * equal; in two, the reals that round to each to nearest on its dtype's grid overlap (F64 and the
 * others taken as exact), so one step off is a difference even where it is within the relative
 * roundoff (1.0 beside BF16 0.99609375). Both NaN agree; an infinity only with itself. */
bool g2f_dtype_values_agree(double x, g2f_dtype dx, double y, g2f_dtype dy);

#define G2F_MAX_DIMS 8

typedef struct g2f_tensor {
    const char *name;          /* owned by the table */
    g2f_dtype dtype;
    size_t ndim;               /* <= G2F_MAX_DIMS */
    uint64_t shape[G2F_MAX_DIMS];
    uint64_t numel;            /* product of shape, checked against overflow */
    const unsigned char *data; /* borrowed from the reader, maybe unaligned */
    uint64_t nbytes;           /* numel * dtype size (quantized: numel / block
                                  elements * block bytes; OPAQUE: the format's size) */
    const char *type_name;     /* OPAQUE only: the format's name for the type (static) */
} g2f_tensor;

/* A metadata pair of a table: both strings malloc'd and owned by the table
 * (freed by g2f_table_free). */
typedef struct g2f_meta_entry {
    char *key;
    char *value;
} g2f_meta_entry;

/* A tensor table. Everything in it is owned by the table except the bytes the
 * data pointers point to, which belong to the reader that filled it. */
typedef struct g2f_table {
    g2f_tensor *tensors;
    size_t count;
    g2f_meta_entry *meta;      /* string-to-string metadata, may be empty */
    size_t meta_count;
} g2f_table;

/* Frees the table's own allocations; the table is zeroed. NULL is a no-op. */
void g2f_table_free(g2f_table *table);
/* Linear search by exact name; NULL when absent. For a handful of lookups:
 * a lookup per tensor of a file sorts the names instead (g2f_names.h). */
const g2f_tensor *g2f_table_find(const g2f_table *table, const char *name);
/* Metadata value for key, or NULL. */
const char *g2f_table_meta(const g2f_table *table, const char *key);

/* The dtype's name, or the format's own type name for OPAQUE tensors. */
const char *g2f_tensor_type_name(const g2f_tensor *t);

/* Writes shape as "[a, b, c]" into buf (always NUL-terminated). */
void g2f_shape_format(const g2f_tensor *t, char *buf, size_t size);

/* Converts elements [start, start + count) of a float or quantized tensor
 * to float32 in dst (F64 rounds to nearest; quantized types are dequantized
 * exactly as ggml does, any range, block boundaries or not). The caller has
 * checked the range, and for a quantized tensor that its scales are finite
 * (g2f_quant_check): a NaN scale reads as NaN values. */
void g2f_tensor_read_f32(const g2f_tensor *t, uint64_t start, uint64_t count, float *dst);
/* Same, to double (exact for every float dtype; a dequantized value is a
 * float32, widened). */
void g2f_tensor_read_f64(const g2f_tensor *t, uint64_t start, uint64_t count, double *dst);
/* True for the integer dtypes g2f_tensor_int_at reads: I64, I32, I8, U8, BOOL. */
bool g2f_dtype_is_int(g2f_dtype dtype);
/* Element i of a tensor of such a dtype (its bounds checked by the caller). */
int64_t g2f_tensor_int_at(const g2f_tensor *t, uint64_t i);

float g2f_f16_to_f32(uint16_t h);
float g2f_bf16_to_f32(uint16_t b);
/* Round-to-nearest-even conversions, used to model rounded weights. */
uint16_t g2f_f32_to_f16(float f);
uint16_t g2f_f32_to_bf16(float f);

/* Checked arithmetic: on overflow return false and leave *out unchanged. */
bool g2f_mul_u64(uint64_t a, uint64_t b, uint64_t *out);
bool g2f_add_u64(uint64_t a, uint64_t b, uint64_t *out);
/* malloc of count * size bytes, NULL on overflow or failure. */
void *g2f_alloc_array(size_t count, size_t size);
/* Physical memory of the machine in bytes (sysconf), UINT64_MAX if unknown. */
uint64_t g2f_physical_memory(void);
/* Work buffers whose size is a product of counts from files (tokens x
 * n_inner, ...): rows x cols elements of elsize bytes, the product checked
 * for overflow and against the machine's physical memory before the
 * allocation (64-byte aligned; free() it), so a hostile size is an error
 * naming `what` (G2F_ERR_NOMEM), never a wrapped size or a process killed
 * for memory. NULL with err set on failure. */
void *g2f_alloc_work(size_t rows, size_t cols, size_t elsize, const char *what, g2f_error *err);

#endif
