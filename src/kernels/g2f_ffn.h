/* g2f_ffn: the GPT-2 feed-forward block and its GELU forms.
 *
 * Per token x (n_embd floats):
 *   pre = x W_fc + b_fc          (n_inner)
 *   act = GELU(pre)
 *   out = act W_proj + b_proj    (n_embd)
 * GELU_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2, HF "gelu_new")
 * GELU_erf(x)  = 0.5 x (1 + erf(x / sqrt 2))                         (torch F.gelu default, HF "gelu")
 * and the forms ports are found to run instead (g2f_gelu below).
 *
 * Weight layouts (both read in place, never transposed into a copy):
 *   G2F_LAYOUT_CONV1D  HF Conv1D [in, out]:  W_fc (n_embd, n_inner), W_proj (n_inner, n_embd)
 *   G2F_LAYOUT_LINEAR  nn.Linear [out, in]:  W_fc (n_inner, n_embd), W_proj (n_embd, n_inner)
 *
 * Kernels come in pairs: g2f_ffn_forward (float32, OpenMP, packed and
 * blocked, AVX-512 or AVX2 + FMA when the CPU has them) and
 * g2f_ffn_forward_ref (plain loops, double accumulation, the oracle in
 * tests). Every output element of the fast kernel is accumulated by one
 * thread in a fixed k order, so results are bitwise identical for any thread
 * count, and the AVX-512 and AVX2 paths give the same bits (the portable
 * kernel, without FMA, rounds differently).
 */
#ifndef G2F_FFN_H
#define G2F_FFN_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_ffn_types.h" /* g2f_gelu (the forms), g2f_layout, g2f_ffn_weights */

/* "tanh", "erf", "sigmoid", "mlx_approx", "f16_table"; "?" out of range. */
const char *g2f_gelu_name(g2f_gelu g);
/* The form named by g2f_gelu_name; 0 when the name is unknown. */
int g2f_gelu_from_name(const char *name, g2f_gelu *out);
/* The other form of the tanh/erf pair: erf for tanh, tanh for erf, and
 * tanh for every other form (they are approximations of it). */
g2f_gelu g2f_gelu_other(g2f_gelu g);

/* The float forms: computed in double and rounded once, so within 1 ulp of
 * the exact value (test_gelu measures <= 0.5 ulp plus a hair for each
 * smooth form); F16_TABLE is exact per its definition above. NaN gives NaN;
 * +inf gives +inf; -inf gives -0 for SIGMOID and MLX (the limit), +0 for
 * F16_TABLE (ggml's clamp) and -inf for TANH and ERF (as they always did). */
float g2f_gelu_tanh(float x);
float g2f_gelu_erf(float x);
float g2f_gelu_sigmoid(float x);
float g2f_gelu_mlx(float x);
float g2f_gelu_f16_table(float x);
/* Any form, by g2f_gelu (the functions above). */
float g2f_gelu_eval(g2f_gelu g, float x);

/* The textbook formulas in double (libm), for the reference kernel and
 * tests. The F16_TABLE form is a float function by definition: its f64 form
 * is g2f_gelu_f16_table((float)x), as the port sees a float input. */
double g2f_gelu_tanh_f64(double x);
double g2f_gelu_erf_f64(double x);
double g2f_gelu_sigmoid_f64(double x);
double g2f_gelu_mlx_f64(double x);
double g2f_gelu_f16_table_f64(double x);
double g2f_gelu_eval_f64(g2f_gelu g, double x);

/* d GELU_erf / dx, used to propagate errors through either form (the two
 * derivatives differ by < 2e-3). */
double g2f_gelu_deriv(double x);
/* g[i] = GELU'(x[i]) to about 1e-6 (g2f_gelu_deriv.h), vectorized: what the
 * tolerance uses for every element (the same bits on every CPU). */
void g2f_gelu_deriv_span(const float *x, float *g, size_t n);

/* d GELU / dx of form g, exact for the smooth forms (TANH, ERF, SIGMOID,
 * MLX); for F16_TABLE, the derivative of the tanh form that the table
 * rounds (its steps are rounding: half an f16 ulp of the input and of the
 * output, for the tolerance to add). g2f_gelu_deriv differs from it by at
 * most 8.7e-4 (TANH), 0.030 (SIGMOID), 8.8e-4 (MLX) on the real line
 * (test_gelu measures). */
double g2f_gelu_deriv_of(g2f_gelu g, double x);

/* TF32, the input precision of PyTorch's matmuls on Ampere and later GPUs
 * with allow_tf32: float32 with 10 explicit mantissa bits. Rounds to nearest,
 * ties to even, keeping the sign and the 8-bit exponent (so a value above
 * the largest TF32 number by half an ulp or more becomes Inf, as in any
 * IEEE rounding); Inf stays Inf and NaN stays NaN (quieted; its payload's
 * low bits are never rounded into an Inf). Subnormals keep 10 bits of
 * fraction like the normal numbers. The GPU's own conversion may break ties
 * away from zero instead; ties are 1 in 8192 of random inputs. */
float g2f_round_tf32(float x);
/* out[i] = g2f_round_tf32(in[i]) for n elements; out may equal in. */
void g2f_round_tf32_buf(const float *in, float *out, size_t n);

/* "Conv1D [in, out]" / "Linear [out, in]" */
const char *g2f_layout_name(g2f_layout l);

/* Scratch memory of the matmul kernels (the packed weight blocks, up to
 * 16 MiB), owned by the caller and kept across calls: a fresh buffer per
 * call costs a page fault per 4 KiB (2400 per GPT-2 small FFN call, which
 * made 64-token calls up to 30% slower on the benchmark host). Start from
 * {0} and release with g2f_ffn_ws_free; where a kernel takes ws, NULL means
 * a buffer of its own for the call. Not to be shared by concurrent calls. */
typedef struct g2f_ffn_ws {
    float *buf;      /* owned, 64-byte aligned */
    size_t cap;      /* floats */
    float *f16_gelu; /* owned: the F16_TABLE form by f16 input bits (65536), made on first use */
} g2f_ffn_ws;
void g2f_ffn_ws_free(g2f_ffn_ws *ws);

/* The path the matmuls take on this CPU: "avx512" or "avx2" (one fused
 * multiply-add per term: the same bits) or "portable" (C, multiply then
 * add: other roundings), chosen at run time; "amx": avx512's, with the sums
 * of squares of g2f_matmul_sq on the AMX tile unit (bounds from factors
 * rounded up to bfloat16: g2f_amx_sq); "avx512_bf16": the same bounds with
 * VDPBF16PS in avx512's tiles (g2f_dpbf_tile: AMD Zen 4 and later);
 * GPT2FFN_ISA=portable|avx2|avx512|avx512_bf16|amx caps it (g2f_cpu.h),
 * for tests and benchmarks. */
const char *g2f_ffn_isa(void);
/* 1 when this path's sums of squares (g2f_matmul_sq's second product, the
 * derived tolerance's) come from bfloat16 factors rounded up ("amx",
 * "avx512_bf16"), 0 when they are float32 sums: what a report says beside
 * the path, since the tolerances differ by up to (1 + 2^-7)^2 in variance. */
int g2f_ffn_squares_bf16(void);

/* C (m, n) = A (m, k) B + bias, where B is (k, n) when b_trans is 0 and
 * stored as (n, k) when b_trans is 1; bias (n) may be NULL. Each C element is
 * sum_{k in order} A[i,k] B[k,j] in float32, then + bias[j].
 * n_threads <= 0 means the OpenMP default. */
void g2f_matmul(const float *a, size_t m, size_t k, const float *b, int b_trans, size_t n,
                const float *bias, float *c, int n_threads, g2f_ffn_ws *ws);

/* g2f_matmul and, in the same pass over B, C2 (m, n) = A2 (B o B): the
 * squares of B's entries are packed beside B and never stored whole (the
 * sums of squares that error bounds need, g2f_tol). a2 (m, k) may be NULL,
 * then A2 = A o A (A squared as it is packed). c2 may be NULL (no second
 * product). Unlike g2f_matmul, one row (m = 1) is not computed by the GEMV,
 * whose summation order differs: each row's results are the same however
 * many rows are computed with it. On the "amx" path C2 is g2f_amx_sq's (an
 * upper bound within (1 + 2^-7)^2 of the float sums), in its own pass; on
 * "avx512_bf16" the same bound from g2f_dpbf_tile, in the same pass. */
void g2f_matmul_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n,
                   const float *bias, float *c, float *c2, int n_threads, g2f_ffn_ws *ws);
/* g2f_ffn_fc_gelu plus s (n_tokens, n_inner) = (x o x) (W_fc o W_fc), by
 * g2f_matmul_sq (s may be NULL). */
void g2f_ffn_fc_gelu_sq(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                        float *act, float *s, int n_threads, g2f_ffn_ws *ws);
/* g2f_ffn_proj plus v (n_tokens, n_embd) = q (W_proj o W_proj), q
 * (n_tokens, n_inner), by g2f_matmul_sq (q and v may be NULL). */
void g2f_ffn_proj_sq(const g2f_ffn_weights *w, const float *act, const float *q, size_t n_tokens, float *out,
                     float *v, int n_threads, g2f_ffn_ws *ws);

/* pre = x W_fc + b_fc and act = GELU(pre) in one pass: the GELU is applied
 * to each block of pre right after it is computed (fused epilogue, for the
 * tanh and erf forms; the others are applied in a pass over pre after it,
 * with the same results as g2f_ffn_gelu). */
void g2f_ffn_fc_gelu(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre, float *act,
                     int n_threads, g2f_ffn_ws *ws);
/* act[i] = GELU(pre[i]) for count elements (act may equal pre), in double
 * precision rounded once (within 1 ulp of the correctly rounded value), or
 * the F16_TABLE form exactly; bitwise g2f_gelu_eval(g, pre[i]). */
void g2f_ffn_gelu(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads);
/* g2f_ffn_gelu with ws (or NULL): the F16_TABLE form is looked up in ws's
 * table of g2f_gelu_f16_table over the 65536 f16 inputs (made on its first
 * use, a few ms; the same bits, at a lookup's cost instead of a tanhf's). */
void g2f_ffn_gelu_ws(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads, g2f_ffn_ws *ws);
/* out (n_tokens, n_embd) = act (n_tokens, n_inner) W_proj + b_proj */
void g2f_ffn_proj(const g2f_ffn_weights *w, const float *act, size_t n_tokens, float *out, int n_threads,
                  g2f_ffn_ws *ws);

/* The whole FFN. pre and act (n_tokens, n_inner) are caller buffers that
 * receive the intermediates; out is (n_tokens, n_embd). */
void g2f_ffn_forward(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                     float *act, float *out, int n_threads, g2f_ffn_ws *ws);

/* Reference: double accumulation and double GELU (g2f_gelu_eval_f64: the
 * F16_TABLE form of the float pre, as a port sees it), rounded to float at
 * the end; pre and act may be NULL. Single-threaded, for tests and oracles.
 * Fails only when its (n_inner) scratch vector cannot be allocated. */
g2f_status g2f_ffn_forward_ref(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g,
                               float *pre, float *act, float *out, g2f_error *err);

#endif
