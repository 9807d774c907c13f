/* g2f_quant: ggml's block-quantized weight formats (the GGUF tensor types
 * llama.cpp ships GPT-2 in): block layouts, dequantization, validation, the
 * error bound of ggml's reference rounding, and the reference quantizers.
 *
 * Every type stores a row (ggml's ne[0], the fastest dimension) as blocks of
 * B consecutive values; a tensor is numel / B blocks back to back, each of
 * S bytes, little-endian, decoded byte by byte (never cast to a struct).
 * "f16" is an IEEE half; q are the stored integer codes. Per block:
 *
 *   type  B    S    layout (byte offsets)                    value of element i
 *   Q4_0  32   18   [0,2) f16 d; [2,18) qs[16]              (q - 8) d
 *   Q4_1  32   20   [0,2) d; [2,4) f16 m; [4,20) qs[16]     q d + m
 *   Q5_0  32   22   [0,2) d; [2,6) u32 qh; [6,22) qs[16]    (q - 16) d
 *   Q5_1  32   24   [0,2) d; [2,4) m; [4,8) qh; [8,24) qs   q d + m
 *   Q8_0  32   34   [0,2) d; [2,34) int8 qs[32]             q d
 *   Q4_K  256  144  [0,2) d; [2,4) f16 dmin; [4,16) scales[12];
 *                   [16,144) qs[128]                        (d sc_j) q - (dmin m_j)
 *   Q5_K  256  176  as Q4_K, then [16,48) qh[32]; [48,176) qs[128]
 *   Q6_K  256  210  [0,128) ql; [128,192) qh; [192,208) int8 sc[16];
 *                   [208,210) f16 d                          (d sc_j) (q - 32)
 *
 * Nibble order (Q4_0, Q4_1, Q5_0, Q5_1): byte j of qs holds element j in its
 * low nibble and element j + 16 in its high nibble. Q5_0/Q5_1: bit j of qh
 * (u32, little-endian) is bit 4 of element j (j in [0, 32)).
 * Q4_K/Q5_K: 8 sub-blocks of 32 with 6-bit scale sc_j and min m_j packed in
 * scales[12]: for j < 4, sc_j = scales[j] & 63, m_j = scales[j + 4] & 63;
 * for j >= 4, sc_j = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4 and
 * m_j = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4. The 256 values come in
 * 4 chunks of 64: chunk c uses qs[32c, 32c + 32), element 64c + l (l < 32)
 * is the low nibble of qs[32c + l] (sub-block 2c), element 64c + 32 + l the
 * high nibble (sub-block 2c + 1). Q5_K adds bit 2c of qh[l] (worth 16) to
 * element 64c + l and bit 2c + 1 of qh[l] to element 64c + 32 + l.
 * Q6_K: 16 sub-blocks of 16 with int8 scales; two halves of 128, half h uses
 * ql[64h, 64h + 64), qh[32h, 32h + 32), sc[8h, 8h + 8); for l < 32 the four
 * elements 128h + l + 32k (k = 0..3) take the low nibble of ql[64h + l]
 * (k = 0), of ql[64h + 32 + l] (k = 1), the high nibble of ql[64h + l]
 * (k = 2) and of ql[64h + 32 + l] (k = 3), and bits 2k, 2k + 1 of qh[32h + l]
 * as bits 4-5; the sub-block of element e is e / 16.
 *
 * Arithmetic, as ggml's dequantize_row_* (float32): scales are converted
 * from f16 exactly; every product of a scale and a code is exact in float32
 * (at most 11 + 8 + 6 significant bits), so the only roundings are the
 * additions (q d + m, (d sc) q - dmin m) and Q6_K's (d sc) (q - 32); with or
 * without fused multiply-add the result is the same.
 *
 * Validation (g2f_quant_check): the element count is a multiple of B (the
 * readers also require ne[0] to be one, ggml's rule, and nbytes = blocks x S
 * within the file); every f16 scale and min is finite (ggml's
 * ggml_validate_row_data checks the same fields: d, and m or dmin where the
 * type has one); a NaN or Inf is an error naming the tensor, the block index
 * and the field.
 *
 * Error bounds (g2f_quant_bounds): for element i, step_i is the spacing of
 * its block's grid (|d|, |d sc_j|) and bound_i the largest error that ggml's
 * reference quantizer (quantize_row_*_ref) can leave on it, given the block's
 * bytes: |dequantized - original| <= bound_i. With h(v) = max(2^-11 |v|,
 * 2^-25), the f16 rounding of a scale v that the quantizer did not
 * compensate for (it rounds the codes with the unrounded float scale), and
 * q the element's signed code:
 *   Q8_0              step/2 + (|q| + 1) h(d)
 *   Q4_0, Q5_0        step/2 + (|q| + 1) h(d), and a whole step for the top
 *                     code (7, 15): the reference clamps x/d = +8 (+16) there
 *   Q4_1, Q5_1        step/2 + (q + 1) h(d) + h(m) + 2^-22 (|m| + 32 step):
 *                     the f16 min is a shift of up to h(m), which can be many
 *                     steps when |m| >> max - min
 *   Q4_K, Q5_K, Q6_K  step/2 + 2^-20 (|value| + |dmin m_j| + 32 step) for
 *                     codes strictly inside the range (the reference rounds
 *                     with the stored scales); at the end codes (0 and 15 /
 *                     31 for Q4_K / Q5_K, -32 and 31 for Q6_K) and in
 *                     sub-blocks with scale 0, the search-based scales can
 *                     clip the block's extremes, so the bound there adds
 *                     step + (the 6-bit / 8-bit scale's rounding) B_j/2 |d| +
 *                     |dmin|/2 (B_j = 31, 63, 64 codes): measured on random
 *                     blocks of several distributions in tests/test_quant.c,
 *                     not proven.
 * tests/test_quant.c checks every bound on data quantized by
 * scripts/ggml_quant.py and by the C quantizers below.
 *
 * Consistency (g2f_quant_consistent): a block's error bound comes from its
 * own scales, which the file chooses; a forged block (codes 0, d = 65504)
 * would claim a bound of 32752 per weight. So a bound is used only for
 * blocks that satisfy a condition every block of ggml's reference quantizer
 * (finite inputs) satisfies, proven from quantize_row_*_ref; each ties the
 * scale to a value the block encodes. Below, D is the stored f16 scale, a
 * block with D = 0 decodes its scaled part to 0 and passes (subnormal inputs
 * can leave any codes there), e16(v) = max(2^-11 |v|, 2^-25) is the f16
 * rounding radius at v.
 *   Q8_0  D = 0, or some |q| = 127 and none is -128: d = amax / 127, and
 *         the largest |x| times fl(1/d) is 127 within 3 ulp, rounded: 127;
 *         every other |x id| <= that. (D != 0 needs d >= 2^-25, so id is
 *         finite.)
 *   Q4_0, Q5_0  D = 0, or some code is 0 (value -8 D / -16 D): d = max / -8
 *         (-16) with max the signed absmax, so max id = -8 (1 +- 2 ulp) and
 *         trunc(-8 + 8.5 +- 1e-6) = 0.
 *   Q4_1, Q5_1  D >= +0 (d = (max - min) / 15 or 31), and D = 0, or codes 0
 *         and 15 (31) both present: the min element maps to exactly 0.5,
 *         the max element to nmax + 0.5 within 3 ulp (one f32 value fl(max -
 *         min) on both sides), truncated to 0 and nmax.
 *   Q4_K, Q5_K  (K0) D, dmin >= +0 (maxima / 63 of non-negative scales and
 *         -mins); (K1) D = 0 or some sub-block scale sc_j = 63 (nearest(63 /
 *         max_scale * max_scale) = 63); (K2) dmin = 0 or some m_j = 63,
 *         likewise; (K3) for D != 0, every sub-block j with sc_j >= 1 has a
 *         code >= min(nmax, T_j), T_j = ceil(c (1 - 1/(2 sc_j)) (1 - e16(D) /
 *         D) - E / (D sc_j) - 1/2), E = dmin / 2 + 63.5 e16(dmin) (the 6-bit
 *         min's error), c = 4.5 (Q4_K), 10 (Q5_K), when T_j >= 1. Argument:
 *         make_qkx2_quants keeps a candidate (s, mu) only when its weighted
 *         squared error is below the first one's (s0 = R / nmax, R = max -
 *         min with min <= 0, each error <= R / (2 nmax)); with weights av +
 *         |x_i| >= av and their sum <= 64 av, every residual of the kept
 *         fit is <= rho R, rho = 4 / nmax. If the sub-block's smallest x is
 *         <= 0 it has code 0 and the largest code >= nmax - 1, so s <= (1 +
 *         2 rho) R / (nmax - 1) and x_max - mu >= (1 - rho) R: (x_max - mu) /
 *         s >= 6.7 (Q4_K), 20.8 (Q5_K). Otherwise min = 0, mu <= 0 and the
 *         least-squares slope over codes round(k x) with k >= (nmax + rmin)
 *         / R is <= 2.5 / k (the codes' rounding errors lie in [-1/2, 1];
 *         for integer codes E(l - mean)+ <= Var l), so (x_max - mu) / s >=
 *         (nmax + rmin) / 2.5; taken as / 3 for float32's cancellation: 4.67,
 *         10.2. The final pass codes x_max as round((x_max + dmin m_j) /
 *         (D sc_j)), where dmin m_j = -mu +- E and D sc_j <= s (1 + 1 /
 *         (2 sc_j - 1)) (1 + e16(D) / D).
 *   Q6_K  D = 0, or some sub-block scale is -128 (nearest(-128 / max_scale *
 *         max_scale)), and every sub-block with scale sc != 0 has a code
 *         q - 32 <= -min(32, T), T = ceil(20.5 (1 - 1/(2 |sc|)) (1 -
 *         e16(D) / |D|) - 1/2). Argument: make_qx_quants' scale is
 *         sum x^3 l / sum x^2 l^2 over codes l = round(k x), |k M| in [31.1,
 *         32.9] for the signed absmax M; every |x l| <= 1.5 l^2 / |k|, so
 *         |scale| <= |M| / 20.7, with the sign opposite to M's; the stored
 *         D sc is that scale within the 8-bit and f16 roundings, so M's code
 *         round(M / (D sc)) is <= -T.
 * The margins are wide on real data (Q8_0: exact; K3 asks for codes >= 4 of
 * 15 where ggml's reach 14-15; Q6_K for <= -21 where they reach -31, -32);
 * tests/test_quant.c checks no block ggml's quantizers write fails (six
 * distributions, random scales, the Python fixture) and that forged ones do.
 * Quantizers tuned otherwise (an importance matrix) can fail it: their
 * blocks are then not trusted for a bound either.
 *
 * Quantizers (g2f_quant_quantize): ggml's quantize_row_*_ref for Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K (the K-quants with ggml's
 * make_qkx2_quants / make_qx_quants searches), in strict float32 arithmetic
 * (no fused multiply-add contraction: ggml built without FMA contraction, or
 * gguf-py's numpy, gives the same bytes; scripts/ggml_quant.py is the same
 * algorithm in numpy, and tests/test_quant.c checks both agree bit for bit).
 *
 *     float w[64] = {...}, back[64];
 *     g2f_quant_roundtrip(G2F_DTYPE_Q4_0, w, 64, back); // what a Q4_0 port computes with
 *
 * Nothing here allocates except where stated; no function reads outside
 * [blocks, blocks + nbytes) for the ranges the caller passes.
 */
#ifndef G2F_QUANT_H
#define G2F_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

#define G2F_QUANT_MAX_BLOCK 256 /* elements per block, largest (QK_K) */

typedef struct g2f_quant_info {
    const char *name;   /* ggml's name: "Q8_0" */
    uint32_t ggml_type; /* ggml's type id (enum ggml_type): Q8_0 = 8 */
    uint32_t block;     /* elements per block */
    uint32_t bytes;     /* bytes per block */
} g2f_quant_info;

/* The block layout of a quantized dtype, or NULL when dtype is not one. */
const g2f_quant_info *g2f_quant_info_of(g2f_dtype dtype);
/* The quantized dtype with ggml type id ggml_type, G2F_DTYPE_OPAQUE when it
 * is not one of the eight. */
g2f_dtype g2f_quant_from_ggml(uint32_t ggml_type);

/* Byte size of numel elements of a quantized dtype into *nbytes: false (and
 * *nbytes unchanged) when numel is not a multiple of the block size or the
 * size overflows. */
bool g2f_quant_nbytes(g2f_dtype dtype, uint64_t numel, uint64_t *nbytes);

/* Checks t (a quantized tensor, data valid for t->nbytes bytes): numel a
 * multiple of the block size, nbytes = blocks x block bytes, every f16 scale
 * and min finite. label names the file. G2F_ERR_FORMAT on failure, e.g.
 * "model.gguf: tensor 'blk.0.ffn_up.weight': Q8_0 block 17 (elements
 * [544, 576)) has scale d = NaN (f16 0x7e00)". A non-quantized t is OK. */
g2f_status g2f_quant_check(const g2f_tensor *t, const char *label, g2f_error *err);

/* Dequantizes elements [start, start + count) of a quantized tensor whose
 * blocks start at blocks (block 0 = element 0) into dst, as ggml's
 * dequantize_row_* does. Any range; only the blocks it touches are read. */
void g2f_quant_dequantize(g2f_dtype dtype, const unsigned char *blocks, uint64_t start, uint64_t count, float *dst);

/* For elements [start, start + count) of the same: step (the grid spacing
 * of the element's block or sub-block) and bound (the largest error of
 * ggml's reference rounding, see the table above), either may be NULL. */
void g2f_quant_bounds(g2f_dtype dtype, const unsigned char *blocks, uint64_t start, uint64_t count, float *step,
                      float *bound);

/* Blocks [first, first + count) of a quantized tensor against the
 * consistency conditions above: true when every block meets them; else
 * false with the first failing block's index in *bad and a phrase saying
 * what fails in why ("scale d = 65504 but its largest |code| is 0, not
 * 127 ..."). A non-quantized dtype is true. */
bool g2f_quant_consistent(g2f_dtype dtype, const unsigned char *blocks, uint64_t first, uint64_t count, uint64_t *bad,
                          char *why, size_t why_len);

/* The step and bound (g2f_quant_bounds) of the blocks ggml's reference
 * quantizer writes for the values x[0, n), blocks running along x: the
 * error bound of a quantization of x, from x itself rather than from a
 * file's scales. For Q4_0 / Q5_0 every element within 1/16 of its block's
 * largest |value| gets the clamped top code's extra half step, whichever
 * sign the quantizer's tie-break (or a rounding of x) makes the block's max.
 * false (nothing written) when n is not whole blocks. */
bool g2f_quant_bounds_of_values(g2f_dtype dtype, const float *x, uint64_t n, float *step, float *bound);

/* True when g2f_quant_quantize knows dtype (all eight types). */
bool g2f_quant_can_quantize(g2f_dtype dtype);
/* ggml's reference quantization (quantize_row_*_ref) of n floats x (n a
 * multiple of the block size: false otherwise, nothing written) into
 * n / B blocks at dst (n / B x S bytes). */
bool g2f_quant_quantize(g2f_dtype dtype, const float *x, uint64_t n, unsigned char *dst);
/* Quantizes x and dequantizes it back into out (x == out allowed): the
 * weights a port that quantized with ggml's reference rounding computes
 * with. Blocks run along x. false when n is not a multiple of the block
 * size or out of memory (one block of scratch per call, on the stack). */
bool g2f_quant_roundtrip(g2f_dtype dtype, const float *x, uint64_t n, float *out);
/* Same for a row-major (rows, cols) matrix w whose ggml rows are its columns
 * (blocks run down each column): an HF Conv1D [in, out] weight, which
 * llama.cpp transposes to Linear [out, in] before quantizing rows of length
 * in. rows must be a multiple of the block size. out may be w. */
bool g2f_quant_roundtrip_cols(g2f_dtype dtype, const float *w, size_t rows, size_t cols, float *out);

#endif
