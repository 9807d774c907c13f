/* g2f_diff: validates ported weights against the original without any
 * fixture: same sizes, then per layer and tensor the largest differences in
 * the logical orientation (each file's layout undone: c_fc weights compared
 * as (n_embd, n_inner), c_proj as (n_inner, n_embd)), and what the
 * difference is.
 *
 * Verdicts, first that fits:
 *   identical      every value equal;
 *   rounded        equal within the rounding of the lower-precision dtype of
 *                  the two files (F16 2^-11, BF16 2^-8, F32 2^-24 against an
 *                  F64 original): equivalent;
 *   f16_rounded / bf16_rounded   B is A rounded to float16 / bfloat16 but
 *                  stored in a wider dtype (or A is B rounded);
 *   transposed     B's bytes are A's read in the other layout (a Conv1D
 *                  buffer taken as Linear without a transpose);
 *   from_layer:K   B's tensor is A's layer K (within rounding);
 *   scaled:c       B = c A within rounding (c != 1);
 *   quantized:T    B (or A) is stored in ggml's quantized type T (GGUF Q8_0,
 *                  Q4_K, ...) and every value is within the error bound of
 *                  ggml's reference rounding of the other's (g2f_quant_bounds:
 *                  about half a step of the block's grid); max_steps is the
 *                  largest |B - A| in steps, bound_ratio the largest
 *                  |B - A| / bound (<= 1). Not equivalent (the weights
 *                  changed), but accepted as "weights_quantized" by
 *                  g2f_diff_accept (the CLI's --accept weights_quantized);
 *   missing        a bias only one file has (equivalent when the other's is
 *                  all zero: reported as "zero_bias"); the difference is
 *                  the bias itself (the other read as zeros), so max_abs is
 *                  its largest magnitude and missing_in / missing_values say
 *                  which file has it and how many values;
 *   different      none of the above.
 * transposed and from_layer:K are found within the quantization bound too
 * when B is quantized (a quantized port with swapped layers).
 * B is equivalent to A when every tensor is identical, rounded or zero_bias;
 * accepted when every other tensor's verdict is in an accepted class.
 *
 * Cost: each tensor pair is read once, in file order, in parallel over
 * blocks (g2f_diff.c), the pages dropped as it goes; only a tensor no cheap
 * verdict explains is read again (transposed, from_layer, scaled).
 * Results do not depend on the thread count.
 */
#ifndef G2F_DIFF_H
#define G2F_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "g2f_error.h"
#include "g2f_inspect.h"
#include "g2f_model.h"

typedef enum g2f_diff_kind {
    G2F_DIFF_IDENTICAL,
    G2F_DIFF_ROUNDED,
    G2F_DIFF_ZERO_BIAS,
    G2F_DIFF_F16_ROUNDED,
    G2F_DIFF_BF16_ROUNDED,
    G2F_DIFF_TRANSPOSED,
    G2F_DIFF_FROM_LAYER,
    G2F_DIFF_SCALED,
    G2F_DIFF_QUANTIZED,
    G2F_DIFF_MISSING,
    G2F_DIFF_DIFFERENT,
    G2F_DIFF_NOT_COMPARED, /* a block tensor one checkpoint does not hold in any layer (an FFN-only
                              export), or attention stored apart (TransformerLens): neither
                              equivalent nor counted as differing */
    G2F_DIFF_KIND_COUNT
} g2f_diff_kind;

const char *g2f_diff_kind_name(g2f_diff_kind k);

typedef struct g2f_diff_tensor {
    g2f_diff_kind kind;
    int equivalent;
    double max_abs, max_rel;   /* of B against A, logical orientation */
    size_t worst;              /* flat logical index of max_abs (ties: the first in file order) */
    long from_layer;           /* FROM_LAYER */
    double scale;              /* SCALED */
    g2f_dtype quant;           /* QUANTIZED: the quantized dtype (B's, else A's) */
    double max_steps;          /* QUANTIZED: max |B - A| / step */
    double bound_ratio;        /* QUANTIZED: max |B - A| / bound, <= 1 */
    unsigned accept_class;     /* the G2F_DIFF_ACCEPT_* class the verdict falls in, 0 for none */
    int accepted;              /* not equivalent, but its class was accepted (g2f_diff_accept) */
    int missing_in;            /* MISSING / ZERO_BIAS / NOT_COMPARED: 'A' or 'B', the file that has the
                                  tensor (NOT_COMPARED: 0 when neither holds it, 'S' for split attention) */
    size_t missing_values;     /* MISSING / ZERO_BIAS: its element count */
} g2f_diff_tensor;

/* Classes of non-equivalent verdicts a caller may accept (bit flags). */
#define G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED 1u /* quantized:T */
/* "weights_quantized" for a single class, NULL otherwise. */
const char *g2f_diff_accept_name(unsigned accept_class);
/* Parses a comma-separated list of class names ("weights_quantized") into
 * *classes; false on an unknown name (*classes unchanged). */
bool g2f_diff_accept_parse(const char *list, unsigned *classes);

typedef struct g2f_diff_result {
    int same_sizes;            /* n_layer, n_embd, n_inner agree */
    char sizes_msg[256];       /* when they do not */
    double roundoff;           /* the rounding allowed, relative */
    size_t n_layers;
    g2f_diff_tensor (*tensors)[G2F_LAYER_TENSORS]; /* owned, n_layers rows, every role (g2f_model.h) */
    size_t compared;           /* tensors compared (not NOT_COMPARED) */
    size_t differing;          /* tensors not equivalent (accepted ones included) */
    int equivalent;
    unsigned accept;           /* classes accepted (g2f_diff_accept), 0 by default */
    size_t accepted;           /* differing tensors whose class is accepted */
    int all_accepted;          /* not equivalent, but every differing tensor accepted */
} g2f_diff_result;

g2f_status g2f_diff_run(const g2f_model *a, const g2f_model *b, g2f_diff_result *out, g2f_error *err);
/* Accepts the verdict classes in `classes` (G2F_DIFF_ACCEPT_* flags):
 * sets accept, each tensor's accepted, accepted and all_accepted. */
void g2f_diff_accept(g2f_diff_result *r, unsigned classes);
void g2f_diff_result_free(g2f_diff_result *r);

#endif
