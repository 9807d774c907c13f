/* g2f_naming: the naming schemes of GPT-2 checkpoints in the wild, internal
 * to the loader (g2f_model.h lists them for users). A tensor name is
 *   [containers.]<block>.<N>.<middle><suffix>
 * where the containers are the wrappers training code adds (a checkpoint
 * dict's "model.", torch.compile's "_orig_mod.", DDP's "module.", HF's
 * "transformer."). One table, one entry per scheme: the FFN's, the
 * LayerNorms', the attention's and the model's ends' names, so that a new
 * scheme is one entry. Only names here: which tensors a checkpoint holds
 * is the model's business (g2f_model.c). */
#ifndef G2F_NAMING_H
#define G2F_NAMING_H

#include <stddef.h>

#include "g2f_ffn_types.h"
#include "g2f_model.h"
#include "g2f_source.h"

/* Layer indices at or above this are refused as absurd. */
#define G2F_NAMING_MAX_LAYERS 4096

enum { G2F_SCHEME_HF, G2F_SCHEME_MINGPT, G2F_SCHEME_TLENS, G2F_SCHEME_GGUF, G2F_SCHEME_COUNT };

/* The model's ends that are stored under scheme-specific top-level names
 * (ln_f, named like the LayerNorms, is apart). */
enum { G2F_EMB_WTE, G2F_EMB_WPE, G2F_EMB_HEAD, G2F_EMB_HEAD_B, G2F_EMB_COUNT };

typedef struct g2f_scheme {
    const char *name;                      /* for reports */
    const char *block;                     /* "h", "blocks", "blk" */
    const char *middle;                    /* "mlp." or "" */
    const char *suffix[G2F_FFN_TENSORS];   /* the FFN's four after "<block>.N.<middle>" */
    const char *ln2;                       /* ln_2 weight after "<block>.0.", gives n_embd */
    const char *ln[2][2];                  /* ln_1 and ln_2: weight and bias after "<block>.N." */
    const char *ln_f[2];                   /* the final LayerNorm after the prefix */
    const char *attn[4];                   /* c_attn weight, bias, c_proj weight, bias after "<block>.N." (TL: NULL) */
    const char *split_attn[8];             /* TL's W_Q, W_K, W_V, b_Q, b_K, b_V, W_O, b_O (others: NULL) */
    const char *ends[G2F_EMB_COUNT][4];    /* candidate names per end, NULL-terminated */
} g2f_scheme;

extern const g2f_scheme g2f_schemes[G2F_SCHEME_COUNT];

/* name after the container prefixes (any number, in any order). */
const char *g2f_naming_strip_containers(const char *name);

/* Matches name against the schemes: returns the FFN slot (G2F_FFN_*), or
 * -1 when it is not an FFN tensor, -2 when its layer index is
 * G2F_NAMING_MAX_LAYERS or more. On a match *scheme, *layer and
 * *prefix_len (the length of the container prefix) are set. */
int g2f_naming_match_ffn(const char *name, int *scheme, size_t *layer, size_t *prefix_len);

/* <block>.N.attn.{bias, masked_bias, mask, IGNORE} (key after the
 * containers): HF's, minGPT's and TransformerLens' causal-mask buffers,
 * not parameters. */
int g2f_naming_is_buffer(const char *key);

/* The training dict's container the prefix starts with ("model.",
 * "model_state.", "state_dict."), or NULL. */
const char *g2f_naming_training_container(const char *prefix);

/* The layout a format and naming use by convention, and why in one phrase:
 * nn.Linear [out, in] for training checkpoints (nanoGPT, minGPT), ggml and
 * llm.c; HF Conv1D [in, out] for HF files and TransformerLens (W_in is
 * (d_model, d_mlp)). */
g2f_layout g2f_naming_conventional_layout(g2f_format f, int scheme, const char *prefix, const char **why);

#endif
