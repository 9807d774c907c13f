/* g2f_model_impl: the model's insides, shared by the loader's files and by
 * no one else (callers see g2f_model.h):
 *   g2f_model.c    open and close: the FFN tensors found, the shapes and
 *                  layout decided, the config read; names looked up
 *   g2f_weights.c  a layer's, a LayerNorm's and a block's weights as floats,
 *                  the stored tensors by role, every other tensor
 *   g2f_tlens.c    TransformerLens' split attention as HF's c_attn / c_proj
 *   g2f_ends.c     the embeddings, ln_f and the head
 * with g2f_naming (the schemes), g2f_config (config.json, n_head, the GELU
 * default) and g2f_digest (the checkpoint's SHA-256) beside them. */
#ifndef G2F_MODEL_IMPL_H
#define G2F_MODEL_IMPL_H

#include <stdint.h>

#include "g2f_model.h"
#include "g2f_names.h"
#include "g2f_naming.h"
#include "g2f_source.h"

struct g2f_model {
    g2f_model_info info;
    g2f_source *src;
    char *path;
    char *config_path;
    char *prefix;
    char *activation;
    int scheme;                                   /* G2F_SCHEME_* */
    char layout_why[160];
    const g2f_tensor *(*layers)[G2F_FFN_TENSORS]; /* n_layer entries */
    g2f_name_ref *by_name;                        /* the table's names, sorted: lookups in log n */
    char config_why[400];                         /* info.config_source */
};

static inline const g2f_scheme *g2f_model_scheme(const g2f_model *m) { return &g2f_schemes[m->scheme]; }

/* A tensor of the checkpoint by its name after the model's prefix (or at
 * the root: an HF lm_head sits outside "transformer."), of layer's block
 * ("<block>.<layer>.rest") or, with layer -1, top-level; NULL when absent. */
const g2f_tensor *g2f_model_find(const g2f_model *m, const char *rest, int layer);
/* The end G2F_EMB_* under the scheme's names, after the model's prefix or
 * any shorter one (nanoGPT's lm_head sits outside "transformer."). */
const g2f_tensor *g2f_model_find_end(const g2f_model *m, int role);

/* F32 and float-aligned: usable in place, without a converted copy. */
static inline int g2f_model_in_place(const g2f_tensor *x) {
    return x->dtype == G2F_DTYPE_F32 && ((uintptr_t)x->data % _Alignof(float)) == 0;
}

/* Sets info.vocab, n_positions, has_lm_head and has_wte from the ends' shapes (g2f_ends.c). */
void g2f_model_note_ends(g2f_model *m);

/* TransformerLens' attention of layer L with n_head H as the block's Conv1D
 * c_attn (d, 3d), c_proj (d, d) and biases, into b (g2f_tlens.c); leaves b
 * without attention when the layer has none. */
g2f_status g2f_tlens_block_attention(const g2f_model *m, size_t L, size_t H, g2f_block *b, g2f_error *err);

#endif
