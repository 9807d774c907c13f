/* g2f_diff: validates ported weights against the original without any
 * fixture: same sizes, then every tensor either file holds, each pair in the
 * logical orientation (each file's layout undone: c_fc weights compared as
 * (n_embd, n_inner), c_proj as (n_inner, n_embd), wte and the head as
 * (vocab, n_embd)), and what the difference is.
 *
 * What is compared (the model module names the tensors, g2f_model.h):
 *   per layer   the G2F_LAYER_TENSORS roles (FFN, LayerNorms, attention;
 *               TransformerLens' W_Q/W_K/W_V/W_O reassembled into the
 *               logical c_attn / c_proj, g2f_model_split_attn);
 *   the ends    wte, wpe, ln_f.weight / .bias, the head and its bias
 *               (G2F_END_*): a head stored by one file only is compared
 *               with the other's wte when that one is tied (stores none);
 *               neither storing one is "tied" (the head is wte, compared);
 *               llm.c's padded wte rows beyond the vocabulary are noted,
 *               not compared;
 *   the others  every other tensor (g2f_model_others), matched by its name
 *               after the container prefixes: compared when both hold it,
 *               held by one file only otherwise; non-parameter buffers
 *               (attn.bias, attn.masked_bias, attn.mask, IGNORE) and
 *               training state (optimizer.*) are excused, not compared.
 * A scope (g2f_diff_run_scoped) excuses what lies outside it: FFN (the four
 * FFN tensors of every layer) or BLOCK (every per-layer tensor).
 *
 * Verdicts, first that fits:
 *   identical      every value equal;
 *   rounded        equal within the rounding of the lower-precision dtype of
 *                  the two files (F16 2^-11, BF16 2^-8, F32 2^-24 against an
 *                  F64 original): equivalent;
 *   quant_inconsistent:T  a quantized side (GGUF type T) holds a block no
 *                  reference quantizer of ggml writes (g2f_quant_consistent):
 *                  its scale is not trusted, bad_block and note say which
 *                  block and why; never accepted;
 *   quantized:T    B (or A) is stored in ggml's quantized type T and every
 *                  value is within the error bound of ggml's reference
 *                  rounding of the other's values (g2f_quant_bounds_of_values
 *                  of the float side, never the quantized file's own scales:
 *                  about half a step of the block's grid); max_steps is the
 *                  largest |B - A| in those steps, bound_ratio the largest
 *                  |B - A| / bound (<= 1). Not equivalent (the weights
 *                  changed), but accepted as "weights_quantized" by
 *                  g2f_diff_accept (the CLI's --accept weights_quantized);
 *                  both quantized: each side's bound from A's values, added;
 *   f16_rounded / bf16_rounded   B is A rounded to float16 / bfloat16 but
 *                  stored in a wider dtype (or A is B rounded);
 *   transposed     B's bytes are A's read in the other layout (every 2-D
 *                  weight: a Conv1D buffer taken as Linear without a
 *                  transpose; for the square attn.c_proj that is the
 *                  transpose itself, what nanoGPT's and minGPT's
 *                  from_pretrained do to a name left out of their list);
 *   from_layer:K   B's per-layer tensor is A's layer K (within rounding);
 *   scaled:c       B = c A within rounding (c != 1);
 *   missing        a bias only one file has (equivalent when the other's is
 *                  all zero: reported as "zero_bias"); the difference is
 *                  the bias itself (the other read as zeros), so max_abs is
 *                  its largest magnitude and missing_in / missing_values say
 *                  which file has it and how many values;
 *   different      none of the above;
 *   shape_differs  both hold it, in shapes (or dtypes, for non-float
 *                  tensors) that do not compare: not equivalent;
 * and for what is not compared:
 *   held_by_one    a weight only one file holds (missing_in): not
 *                  equivalent, never accepted;
 *   tied           neither file stores a head: both compute logits with wte;
 *   buffer, training_state, outside_scope   excused (see above);
 *   absent         neither holds it (not a tensor: reports leave it out).
 * transposed and from_layer:K are found within the quantization bound too
 * when a side is quantized (a quantized port with swapped layers).
 * B is equivalent to A when something was compared and every tensor is
 * identical, rounded, zero_bias, tied or excused; accepted when, besides,
 * every other verdict is in an accepted class and no tensor is held by one
 * file only.
 *
 * Cost: each tensor pair is read once, in file order, in parallel over
 * blocks (g2f_diff.c), the pages dropped as it goes; only a tensor no cheap
 * verdict explains is read again (transposed, from_layer, scaled); a
 * quantized side's blocks are checked for consistency once, and the float
 * side's values are quantized block by block for the bound (the compute
 * that makes a quantized diff slower than a float one). Results do not
 * depend on the thread count.
 */
#ifndef G2F_DIFF_H
#define G2F_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    G2F_DIFF_QUANT_INCONSISTENT,
    G2F_DIFF_MISSING,
    G2F_DIFF_DIFFERENT,
    G2F_DIFF_SHAPE,        /* "shape_differs" */
    G2F_DIFF_HELD_BY_ONE,  /* only missing_in's file holds this weight */
    G2F_DIFF_TIED,         /* the head: neither file stores one */
    G2F_DIFF_BUFFER,       /* excused: a non-parameter buffer */
    G2F_DIFF_TRAINING,     /* excused: training state ("training_state") */
    G2F_DIFF_OUTSIDE,      /* excused: outside the scope asked for ("outside_scope") */
    G2F_DIFF_ABSENT,       /* neither file holds it */
    G2F_DIFF_KIND_COUNT
} g2f_diff_kind;

const char *g2f_diff_kind_name(g2f_diff_kind k);
/* A value comparison was made (identical .. shape_differs). */
bool g2f_diff_kind_compared(g2f_diff_kind k);
/* Accounted for without a comparison and not a difference: buffer,
 * training_state, outside_scope. */
bool g2f_diff_kind_excused(g2f_diff_kind k);

typedef struct g2f_diff_tensor {
    g2f_diff_kind kind;
    int equivalent;
    double max_abs, max_rel;   /* of B against A, logical orientation */
    size_t worst;              /* flat logical index of max_abs (ties: the first in file order) */
    long from_layer;           /* FROM_LAYER */
    double scale;              /* SCALED */
    g2f_dtype quant;           /* QUANTIZED, QUANT_INCONSISTENT: the quantized dtype (B's, else A's) */
    double max_steps;          /* QUANTIZED: max |B - A| / step */
    double bound_ratio;        /* QUANTIZED: max |B - A| / bound, <= 1 */
    uint64_t bad_block;        /* QUANT_INCONSISTENT: the first inconsistent block of the quantized side */
    unsigned accept_class;     /* the G2F_DIFF_ACCEPT_* class the verdict falls in, 0 for none */
    int accepted;              /* not equivalent, but its class was accepted (g2f_diff_accept) */
    int missing_in;            /* MISSING / ZERO_BIAS / HELD_BY_ONE (and excused tensors one file holds): 'A' or
                                  'B', the file that has the tensor; 0 when both do */
    size_t missing_values;     /* MISSING / ZERO_BIAS: its element count */
    char *name_a, *name_b;     /* owned: the tensor's name in each file (NULL when absent; for a split
                                  attention, what it is assembled from) */
    char *label;               /* owned, other tensors only: the name after the container prefixes */
    char note[480];            /* a sentence when needed: which block fails and why (QUANT_INCONSISTENT),
                                  which tensor a head is compared with, wte's padding rows */
} g2f_diff_tensor;

/* Classes of non-equivalent verdicts a caller may accept (bit flags). */
#define G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED 1u /* quantized:T */
/* "weights_quantized" for a single class, NULL otherwise. */
const char *g2f_diff_accept_name(unsigned accept_class);
/* Parses a comma-separated list of class names ("weights_quantized") into
 * *classes; false on an unknown name (*classes unchanged). */
bool g2f_diff_accept_parse(const char *list, unsigned *classes);

/* What a diff compares: everything, or only the per-layer tensors. */
typedef enum g2f_diff_scope { G2F_DIFF_SCOPE_ALL, G2F_DIFF_SCOPE_BLOCK, G2F_DIFF_SCOPE_FFN, G2F_DIFF_SCOPE_COUNT } g2f_diff_scope;
/* "all", "block", "ffn". */
const char *g2f_diff_scope_name(g2f_diff_scope s);
/* "ffn" or "block" (as --only takes them); false otherwise. */
bool g2f_diff_scope_parse(const char *s, g2f_diff_scope *out);

typedef struct g2f_diff_result {
    int same_sizes;            /* n_layer, n_embd, n_inner agree */
    char sizes_msg[256];       /* when they do not */
    char config_msg[256];      /* "" or what of the two configs defines another model within the scope: n_head
                                  (not for --only ffn), the GELU form of activation_function, layer_norm_epsilon
                                  (not for --only ffn), when both files say; never equivalent then */
    g2f_diff_scope scope;
    double roundoff;           /* the rounding allowed, relative */
    size_t n_layers;
    g2f_diff_tensor (*tensors)[G2F_LAYER_TENSORS]; /* owned, n_layers rows, every role (g2f_model.h) */
    g2f_diff_tensor ends[G2F_END_TENSORS];         /* the model's ends (G2F_END_*) */
    g2f_diff_tensor *others;   /* owned: every other tensor, A's in its order, then B's A lacks */
    size_t n_others;
    size_t compared;           /* tensors compared (g2f_diff_kind_compared) */
    size_t differing;          /* compared and not equivalent (accepted ones included) */
    size_t held_by_one;        /* HELD_BY_ONE tensors */
    size_t excused;            /* buffers, training state, outside the scope */
    int equivalent;
    unsigned accept;           /* classes accepted (g2f_diff_accept), 0 by default */
    size_t accepted;           /* differing tensors whose class is accepted */
    int all_accepted;          /* not equivalent, but every differing tensor accepted and none held by one */
} g2f_diff_result;

/* Every tensor the result accounts for, in report order: layer by layer
 * (G2F_LAYER_TENSORS each), then the ends, then the others. */
size_t g2f_diff_entries(const g2f_diff_result *r);
/* Entry i (< g2f_diff_entries): *layer its layer or -1, *label its role
 * ("c_fc.weight", "wte") or an other tensor's name; NULL out of range. */
const g2f_diff_tensor *g2f_diff_entry(const g2f_diff_result *r, size_t i, long *layer, const char **label);

/* Compares everything (G2F_DIFF_SCOPE_ALL). */
g2f_status g2f_diff_run(const g2f_model *a, const g2f_model *b, g2f_diff_result *out, g2f_error *err);
g2f_status g2f_diff_run_scoped(const g2f_model *a, const g2f_model *b, g2f_diff_scope scope, g2f_diff_result *out,
                               g2f_error *err);
/* Accepts the verdict classes in `classes` (G2F_DIFF_ACCEPT_* flags):
 * sets accept, each tensor's accepted, accepted and all_accepted. */
void g2f_diff_accept(g2f_diff_result *r, unsigned classes);
void g2f_diff_result_free(g2f_diff_result *r);

#endif
