/* g2f_ffn_types: the types the kernels, the loader and the checks share: the
 * GELU forms, the two weight layouts and the borrowed views of one layer's
 * FFN weights. Their functions (names, the GELU itself, the kernels) are in
 * g2f_ffn.h; the loader needs only the types, so it does not include the
 * kernels' header.
 */
#ifndef G2F_FFN_TYPES_H
#define G2F_FFN_TYPES_H

#include <stddef.h>

/* The GELU forms. TANH and ERF keep the values 0 and 1 (stored in reports
 * and JSON); the others model what ports run instead:
 *   SIGMOID    x sigmoid(1.702 x)                              HF "quick_gelu"
 *   MLX        x sigmoid(1.60033 x (1 + 0.0433603 x^2))        MLX's former gelu_approx
 *   F16_TABLE  0 for x <= -10, x for x >= 10, else
 *              f16(gelu_ggml(f16(x)))                          ggml's CPU GELU (llama.cpp)
 * where f16() rounds to IEEE half, to nearest even, and gelu_ggml is the
 * tanh form evaluated in float as ggml fills its 65536-entry table
 * (ggml_table_gelu_f16, from ggml_gelu_f32):
 *   0.5f*x * (1.0f + tanhf((0.7978845608f*x) * fmaf(0.044715f*x, x, 1.0f)))
 * The fma is the compilers' default contraction of 0.044715f*x*x + 1.0f
 * (GCC in GNU mode, clang) on the FMA machines llama.cpp targets; without
 * it one entry of the 65536 moves by one f16 ulp (x = -1.998046875), and
 * with a correctly rounded tanhf instead of glibc's none does (measured).
 * The float inside the table is what matters: 268 entries differ from the
 * exact tanh GELU rounded to f16, all at x < 0, where 1 + tanh cancels. */
typedef enum g2f_gelu {
    G2F_GELU_TANH = 0,
    G2F_GELU_ERF = 1,
    G2F_GELU_SIGMOID,
    G2F_GELU_MLX,
    G2F_GELU_F16_TABLE,
    G2F_GELU_COUNT
} g2f_gelu;

/* HF Conv1D [in, out] or nn.Linear [out, in] (g2f_ffn.h: weight layouts). */
typedef enum g2f_layout { G2F_LAYOUT_CONV1D, G2F_LAYOUT_LINEAR, G2F_LAYOUT_COUNT } g2f_layout;

/* Borrowed views of one layer's FFN weights; biases may be NULL (no bias).
 * Each matrix has its own layout so a diagnosis can model one of them being
 * misread; a checkpoint's two are always the same. */
typedef struct g2f_ffn_weights {
    size_t n_embd, n_inner;
    g2f_layout layout_fc, layout_proj;
    const float *w_fc;   /* (n_embd, n_inner) Conv1D or (n_inner, n_embd) Linear */
    const float *b_fc;   /* (n_inner) or NULL */
    const float *w_proj; /* (n_inner, n_embd) Conv1D or (n_embd, n_inner) Linear */
    const float *b_proj; /* (n_embd) or NULL */
} g2f_ffn_weights;

#endif
