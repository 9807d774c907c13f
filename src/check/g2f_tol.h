/* g2f_tol: per-element tolerances derived from the computation itself.
 *
 * Two correct float32 implementations of the FFN (ours and PyTorch's) differ
 * only by rounding. We model each rounding as an independent error of at
 * most u = 2^-24 relative to the value rounded, and bound the difference by
 * lambda standard deviations (lambda = 6: under the model a false alarm has
 * probability ~2e-9 per element, and the bound is not tuned to any fixture).
 *
 * A dot product s = sum_{i<n} p_i accumulated in fp32 rounds every partial
 * sum s_i; the variance of its error is about u^2 sum_i s_i^2, and for terms
 * in no particular order sum_i s_i^2 ~ n/2 sum p_i^2 + n/3 s^2 (random-walk
 * part plus drift). Counting both implementations' errors (2 u^2/3 each for
 * uniform rounding) is covered by taking u^2 per rounding. Per token:
 *
 *   V_pre[k]  = u^2 (n_embd/2 sum_i x_i^2 W_fc[i,k]^2 + n_embd/3 pre_k^2)
 *               + u_in^2 sum_i x_i^2 W_fc[i,k]^2          (fixture input rounding)
 *   V_act[k]  = GELU'(pre_k)^2 V_pre[k] + (2 u (|act_k| + |pre_k|))^2   (GELU formula, either form)
 *   V_out[j]  = sum_k W_proj[k,j]^2 (u^2 n_inner/2 act_k^2 + V_act[k]) + u^2 n_inner/3 out_j^2
 *   tol       = lambda sqrt(V) + u_store |expected| + f_store   (the fixture dtype's own rounding)
 *
 * When the weights themselves are uncertain by a relative u_w (a checkpoint
 * rounded to F16/BF16 while the reference used the originals: a diagnosis
 * hypothesis), u_w^2 sum_i x_i^2 W_fc[i,k]^2 joins V_pre and
 * u_w^2 sum_k act_k^2 W_proj[k,j]^2 joins V_out.
 *
 * u_in / u_store are 2^-11 for F16 and 2^-8 for BF16 fixture tensors, 0 for
 * F32 and F64 (an F64 input rounded to float adds u, folded into u_in);
 * f_store is half the subnormal spacing (F16 2^-25): below 6.1e-5 F16's
 * rounding is absolute. The
 * sums of squares are two extra products (x^2 W_fc^2 and q W_proj^2), each
 * computed in the same pass over the weights as the FFN's own product
 * (g2f_matmul_sq: the squared weights are packed beside the weights, never
 * stored whole). The element-wise parts below take them per chunk of
 * tokens, so callers can keep memory bounded whatever the token count.
 *
 * With user rtol/atol the model is replaced by atol + rtol |expected|, like
 * torch.isclose.
 */
#ifndef G2F_TOL_H
#define G2F_TOL_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_tensor.h"

#define G2F_TOL_LAMBDA 6.0

/* Roundings a port's arithmetic can apply between the stages. */
typedef enum g2f_round {
    G2F_ROUND_NONE,
    G2F_ROUND_F16,  /* IEEE half, round to nearest even */
    G2F_ROUND_BF16, /* bfloat16, RNE */
    G2F_ROUND_TF32, /* 10 explicit mantissa bits (g2f_round_tf32) */
    G2F_ROUND_COUNT
} g2f_round;
/* Unit roundoff of r: 2^-11 (F16, TF32), 2^-8 (BF16), 0 (NONE). */
double g2f_round_unit(g2f_round r);
float g2f_round_value(g2f_round r, float v);
void g2f_round_span(g2f_round r, const float *in, float *out, size_t n);
/* The step r takes at v when [v - t, v + t] holds one of its rounding
 * boundaries (two computations of v within t may round to neighbours),
 * else 0. */
double g2f_round_flip(g2f_round r, float v, double t);
/* The same, telling one step from several: the step when the window holds
 * exactly one boundary (the two roundings are neighbours), minus the span
 * when it holds more, 0 when none. */
double g2f_round_flip_one(g2f_round r, float v, double t);

/* The second moment of the difference between two roundings (r) of a
 * value computed within variance var of v: the probability that they land
 * on either side of a boundary (Phi(-b / sigma) for a boundary at b inside
 * v +- lambda sigma) times the step squared; 0 when no boundary is that
 * close. What a rounded product input carries into the product's variance
 * (ggml's F16 matmul inputs, g2f_block). */
double g2f_round_flip_var(g2f_round r, float v, double var, double lambda);

/* Where the hidden tolerances put their rounding flips as discrete steps
 * (g2f_cmp_acc_add_flips): pre's own, and act's two (a pre step carried by
 * the GELU's slope, act's own rounding); each (n) or NULL (then a flip's
 * size joins the tolerance instead, a box around the value). */
typedef struct g2f_flips {
    float *pre, *act1, *act2;
} g2f_flips;

typedef struct g2f_tol_params {
    int user;           /* 1: use atol + rtol |expected| */
    double rtol, atol;
    double lambda;      /* standard deviations, G2F_TOL_LAMBDA by default */
} g2f_tol_params;

/* The standard deviations a derived tolerance allows: p's lambda, or
 * G2F_TOL_LAMBDA when unset (p NULL or lambda <= 0). The one place the
 * default is applied. */
double g2f_tol_lambda(const g2f_tol_params *p);

/* The variance of a recorded input tensor's values: its own storage
 * rounding, (u x)^2 (float64 read as float32: u = 2^-24), plus f^2 for the
 * dtype's absolute floor f (F16 subnormals: 2^-25). */
void g2f_tol_input_var(const float *x, size_t n, g2f_dtype dt, float *v);

/* Relative roundoffs of one comparison (u_in, u_w, the stored dtypes). */
typedef struct g2f_tol_units {
    double u_in;            /* the fixture input's rounding, relative (F16 2^-11, F64 read as float 2^-24) */
    double f_in;            /* ... and its absolute floor (F16 subnormals: 2^-25), an input variance f_in^2 */
    double u_w;             /* the weights' uncertainty, relative (0, or a rounding hypothesis) */
    double u_pre, u_act, u_out; /* the stored expected values' own rounding */
    double f_pre, f_act, f_out; /* ... and its absolute floor (F16 subnormals: 2^-25) */
    /* roundings inside the computation (a port's precision path, g2f_ffn_eval):
     * our value and the reference's round alike unless a boundary lies
     * between them (g2f_round_flip) */
    g2f_round store;        /* pre and act stored rounded */
    int table_in;           /* the GELU rounds its input to float16 (ggml's table) */
    g2f_round gemm_act;     /* act rounded as c_proj's input (TF32) */
    g2f_round out_round;    /* out rounded */
    const struct g2f_tol_f16 *f16; /* with table_in: the halves' part, tabulated (or NULL) */
} g2f_tol_units;

/* What g2f_tol_ffn_hidden_x derives for ggml's f16 GELU table from the
 * table's input half alone (its GELU in double, the entry's own rounding
 * flip within the float formula's error and that flip's second moment),
 * over the 65536 halves for one lambda: the same values it computes per
 * element without the table (a tanh and five half roundings each), a
 * lookup instead. */
typedef struct g2f_tol_f16_half {
    double exact;  /* GELU_tanh(half) in double */
    double own0;   /* the entry's flip (g2f_round_flip_one; 0 outside (-10, 10)) */
    double m_own0; /* its second moment (0 outside) */
    double pad;    /* 32 bytes: one cache line a lookup */
} g2f_tol_f16_half;
typedef struct g2f_tol_f16 {
    double lambda;
    g2f_tol_f16_half *half; /* owned, 65536, by the half's bits */
} g2f_tol_f16;
/* Fills t for lambda (kept when it already holds it); 0 when out of memory. */
int g2f_tol_f16_make(g2f_tol_f16 *t, double lambda);
void g2f_tol_f16_free(g2f_tol_f16 *t);

/* The units for fixture dtypes (input, out, pre, act) and a weight roundoff. */
g2f_tol_units g2f_tol_units_for(g2f_dtype in, g2f_dtype out, g2f_dtype pre, g2f_dtype act, double weight_roundoff);

/* The weight of an input's variance in c_fc's A2 operand, so that
 * A2 = x^2 + var * g2f_tol_var_coef(d, un) carries exactly sum var W^2 into
 * V_pre: g2f_tol_ffn_hidden_x weighs s by d/2 + (u_in/u)^2 + (u_w/u)^2, the
 * coefficients of x^2 (a variance multiplied by them would be inflated by
 * (u_w/u)^2 = 2^26 for F16 weights at every layer). */
double g2f_tol_var_coef(size_t n_embd, const g2f_tol_units *un);

/* Element-wise part after c_fc, for n = tokens x n_inner elements:
 * from pre, act and s = (x o x)(W_fc o W_fc), writes tol_pre / tol_act
 * (each may be NULL; exp_pre / exp_act give the stored values' rounding and
 * may be NULL when the tolerance is not needed) and q, the coefficient of
 * W_proj^2 in V_out (in units of u^2), the A2 operand of c_proj's
 * g2f_matmul_sq. tok_extra: a variance per token (units of u^2) added to
 * V_pre (tok_extra[i / n_inner]; NULL: none: a ggml-quantized checkpoint's
 * weight uncertainty). pre_u, act_u: the values before the roundings of un
 * (equal to pre, act when nothing is rounded), whose rounding flips widen
 * the tolerance, or go to flips (g2f_flips; NULL: into the tolerance).
 * OpenMP over fixed blocks: any thread count, same bits. */
void g2f_tol_ffn_hidden_x(size_t n, size_t n_embd, size_t n_inner, const float *pre_u, const float *pre,
                          const float *act_u, const float *act, const float *s, const double *exp_pre,
                          const double *exp_act, const g2f_tol_units *un, double lambda, const double *tok_extra,
                          float *tol_pre, float *tol_act, float *q, g2f_flips *flips, int n_threads);
/* Element-wise part after c_proj, for n = tokens x n_embd elements: from
 * out_u (out before its rounding, un->out_round) and v = q (W_proj o
 * W_proj), tol_out (may be v); tok_extra as above (tok_extra[i / n_embd]),
 * flip_out (n) or NULL: out's own rounding flip as a discrete step.
 * noise (n) or NULL: the error variance each tolerance stands for, its
 * parts by their kind: the rounding model's (tolerance / lambda)^2, a
 * flip's step squared, and a stored dtype's rounding as uniform over its
 * bound (bound^2 / 3). */
void g2f_tol_ffn_out_x(size_t n, size_t n_inner, size_t n_embd, const float *out_u, const float *v,
                       const double *exp_out, const g2f_tol_units *un, double lambda, const double *tok_extra,
                       float *tol_out, float *flip_out, float *noise, int n_threads);

/* Absolute variance per element of y = LayerNorm(x) (T rows of d) between
 * two float32 implementations, by the same rounding model: the mean and the
 * variance as sums of d terms, 1/sqrt (two roundings), the subtraction,
 * the two products and the bias add, plus the input's own rounding u_in
 * (relative) and f_in (absolute) carried through. w and b may be NULL (1 and 0). */
void g2f_tol_layernorm_var(const float *x, const float *y, size_t T, size_t d, const float *w, const float *b,
                           double eps, double u_in, double f_in, float *var, int n_threads);

/* User tolerances: tol[i] = atol + rtol |expected[i]|. */
void g2f_tol_user(const g2f_tol_params *p, const double *expected, size_t n, float *tol);

typedef struct g2f_tol_request {
    const g2f_ffn_weights *w;
    const float *x;                 /* (T, n_embd) */
    size_t n_tokens;
    const float *pre, *act, *out;   /* our computation: (T, n_inner), (T, n_inner), (T, n_embd) */
    const double *exp_out;          /* (T, n_embd) expected */
    const double *exp_pre, *exp_act;/* optional expected (T, n_inner) */
    g2f_dtype dtype_in, dtype_out, dtype_pre, dtype_act;
    double weight_roundoff;         /* u_w, 0 normally */
    g2f_ffn_ws *ws;                 /* for the two products; NULL: their own */
} g2f_tol_request;

/* Whole-array convenience over the functions above (tests, benchmarks):
 * fills tol_out (T, n_embd) and, when non-NULL, tol_pre / tol_act
 * (T, n_inner). Recomputes the two products of squares itself. Fails only on
 * allocation (sizes checked against overflow and the machine's memory). */
g2f_status g2f_tol_compute(const g2f_tol_request *r, const g2f_tol_params *p, float *tol_out, float *tol_pre,
                           float *tol_act, int n_threads, g2f_error *err);

#endif
