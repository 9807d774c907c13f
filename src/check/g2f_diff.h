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
 *   missing        a bias only one file has (equivalent when the other's is
 *                  all zero: reported as "zero_bias");
 *   different      none of the above.
 * B is equivalent to A when every tensor is identical, rounded or zero_bias.
 */
#ifndef G2F_DIFF_H
#define G2F_DIFF_H

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
    G2F_DIFF_MISSING,
    G2F_DIFF_DIFFERENT,
    G2F_DIFF_KIND_COUNT
} g2f_diff_kind;

const char *g2f_diff_kind_name(g2f_diff_kind k);

typedef struct g2f_diff_tensor {
    g2f_diff_kind kind;
    int equivalent;
    double max_abs, max_rel;   /* of B against A, logical orientation */
    size_t worst;              /* flat logical index of max_abs */
    long from_layer;           /* FROM_LAYER */
    double scale;              /* SCALED */
} g2f_diff_tensor;

typedef struct g2f_diff_result {
    int same_sizes;            /* n_layer, n_embd, n_inner agree */
    char sizes_msg[256];       /* when they do not */
    double roundoff;           /* the rounding allowed, relative */
    size_t n_layers;
    g2f_diff_tensor (*tensors)[G2F_FFN_TENSORS]; /* owned, n_layers rows */
    size_t differing;
    int equivalent;
} g2f_diff_result;

g2f_status g2f_diff_run(const g2f_model *a, const g2f_model *b, g2f_diff_result *out, g2f_error *err);
void g2f_diff_result_free(g2f_diff_result *r);

#endif
