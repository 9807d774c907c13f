/* g2f_stage: the stage table. GPT-2's stages in model order and the
 * activations a reference records, one entry each, which every module walks:
 * the fixture reader takes its names from here (HF and TransformerLens, and
 * the suggestions for names it does not know), `run` writes and `--save`s
 * by the same entries, verify (isolated and chained) and the reports name
 * stages and tensors from here. Ids are enum values end to end; strings
 * appear only at the edges (g2f_act_match, g2f_act_name, g2f_stage_name).
 *
 * A stage reads one recorded input and produces one or more activations:
 *   embed   input_ids            -> embed (TransformerLens: hook_embed + hook_pos_embed)
 *   ln_1    h.L.in               -> h.L.ln_1.out
 *   attn    h.L.ln_1.out         -> h.L.attn.qkv, .probs, .merged, .out (TL: hook_q/k/v, hook_z)
 *   mid     h.L.in, h.L.attn.out -> h.L.mid
 *   ln_2    h.L.mid              -> h.L.mlp.in (= h.L.ln_2.out)
 *   mlp     h.L.mlp.in           -> h.L.mlp.pre, .act, .out
 *   out     h.L.mid, h.L.mlp.out -> h.L.out
 *   ln_f    h.{last}.out         -> ln_f.out
 *   logits  ln_f.out             -> logits
 * The check layer adds what each stage computes and which porting bugs it
 * tries (src/check/g2f_stages.h), keyed by the same ids. */
#ifndef G2F_STAGE_H
#define G2F_STAGE_H

#include <stddef.h>

/* Stages in model order; the block's six are contiguous. */
typedef enum g2f_stage {
    G2F_STAGE_NONE = -1, /* no stage (nothing diverged) */
    G2F_STAGE_EMBED,
    G2F_STAGE_LN1,
    G2F_STAGE_ATTN,
    G2F_STAGE_MID,
    G2F_STAGE_LN2,
    G2F_STAGE_MLP,
    G2F_STAGE_OUT,
    G2F_STAGE_LN_F,
    G2F_STAGE_LOGITS,
    G2F_STAGE_COUNT
} g2f_stage;
#define G2F_BLOCK_FIRST G2F_STAGE_LN1
#define G2F_BLOCK_LAST G2F_STAGE_OUT
/* A stage of every layer (ln_1 .. out), else one of the model's ends. */
int g2f_stage_per_layer(g2f_stage s);
/* The model-level stage after s (embed -> ln_f -> logits -> G2F_STAGE_COUNT):
 * for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)). */
int g2f_model_stage_next(int s);
/* "embed", "ln_1", "attn", "mid", "ln_2", "mlp", "out", "ln_f", "logits"; "?" out of range. */
const char *g2f_stage_name(g2f_stage s);

/* The activations a fixture may record, model order. */
typedef enum g2f_act {
    G2F_ACT_IDS,        /* input_ids [..., T] I64 or I32 */
    G2F_ACT_EMBED,      /* embed [..., T, d] = wte[ids] + wpe[pos] */
    G2F_ACT_TOK_EMBED,  /* TransformerLens hook_embed: wte[ids] */
    G2F_ACT_POS_EMBED,  /* TransformerLens hook_pos_embed: wpe[pos] */
    G2F_ACT_IN,         /* h.L.in: the block's input */
    G2F_ACT_LN1,
    G2F_ACT_QKV,        /* c_attn's output [..., T, 3d] */
    G2F_ACT_Q,          /* TransformerLens hook_q / k / v [..., T, n_head, d_head] */
    G2F_ACT_K,
    G2F_ACT_V,
    G2F_ACT_PROBS,      /* [..., n_head, T, T] */
    G2F_ACT_MERGED,     /* the heads merged: c_proj's input */
    G2F_ACT_Z,          /* TransformerLens hook_z [..., T, n_head, d_head] */
    G2F_ACT_ATTN_OUT,
    G2F_ACT_MID,
    G2F_ACT_MLP_IN,     /* = ln_2's output */
    G2F_ACT_MLP_PRE,    /* c_fc's output [..., T, n_inner] */
    G2F_ACT_MLP_ACT,    /* after the GELU */
    G2F_ACT_MLP_OUT,
    G2F_ACT_OUT,
    G2F_ACT_LN_F,
    G2F_ACT_LOGITS,     /* [..., T, vocab] */
    /* a generation (docs/decode.md): the prompt, the tokens generated after it and each step's logits */
    G2F_ACT_PROMPT_IDS,     /* prompt_ids [B, T0] or [T0], I64 or I32 */
    G2F_ACT_GENERATED_IDS,  /* generated_ids [B, N] or [N] */
    G2F_ACT_STEP_LOGITS,    /* step_logits [B, N, vocab] or [N, vocab]: the logits step k chose token k from */
    G2F_ACT_ATTENTION_MASK, /* attention_mask [B, T0]: 1 where the prompt holds a token, 0 at padding */
    G2F_ACT_EOS_ID,         /* eos_token_id [] or [1]: a row's tokens after its first one are not compared */
    G2F_ACT_COUNT
} g2f_act;
/* The activations of one forward end at logits; after it, a generation's tensors. */
#define G2F_ACT_FORWARD_LAST G2F_ACT_LOGITS
/* One of a generation's tensors (prompt_ids .. eos_token_id). */
int g2f_act_is_generation(g2f_act a);

/* The last dimensions of an activation, in the model's sizes. */
typedef enum g2f_act_width {
    G2F_WIDTH_IDS,      /* [..., T] */
    G2F_WIDTH_D,        /* [..., T, n_embd] */
    G2F_WIDTH_3D,       /* [..., T, 3 n_embd] */
    G2F_WIDTH_INNER,    /* [..., T, n_inner] */
    G2F_WIDTH_HEADS,    /* [..., T, n_head, d_head] */
    G2F_WIDTH_PROBS,    /* [..., n_head, T, T] */
    G2F_WIDTH_VOCAB,    /* [..., T, vocab] */
    G2F_WIDTH_SCALAR    /* [] or [1] */
} g2f_act_width;

typedef struct g2f_act_info {
    const char *hf;         /* HF name (after "h.L." for a layer's), NULL when HF names none */
    const char *hf_alias;   /* another HF name read for it ("ln_2.out" for mlp.in), or NULL */
    const char *tl;         /* TransformerLens name (after "blocks.L."), NULL when it names none */
    g2f_stage stage;        /* the stage whose output (or part of it) this is; input_ids: embed's input */
    g2f_act_width width;
    const char *save;       /* run --save's word, NULL when it cannot be saved on its own */
    const char *save_alias; /* another word for it ("pre"), or NULL */
} g2f_act_info;

/* The entry of a, or NULL out of range. */
const g2f_act_info *g2f_act_info_of(g2f_act a);
/* Recorded per layer (h.L.*), else a model-level tensor. */
int g2f_act_per_layer(g2f_act a);
/* One of the FFN's four (mlp.in, mlp.pre, mlp.act, mlp.out). */
int g2f_act_is_ffn(g2f_act a);
/* The FFN's four in the order they are checked and named: mlp.in, mlp.out,
 * mlp.pre, mlp.act (i in 0..3). */
g2f_act g2f_ffn_act(int i);
/* Its name as a fixture writes it: HF ("h.3.attn.probs", "embed"), or with tl
 * TransformerLens' ("blocks.3.attn.hook_pattern", "ln_final.hook_normalized"),
 * falling back to the other naming when one has none; layer ignored for
 * model-level tensors. */
void g2f_act_name(g2f_act a, long layer, int tl, char *buf, size_t n);

/* A fixture tensor's name (an optional "transformer." prefix, then HF's
 * h.L.<rest> or a model-level name, or TransformerLens' blocks.L.<rest> or
 * model-level name) as an activation: returns it (*layer for a layer's),
 * -1 when the name is none of the table's, -2 when its layer index is
 * G2F_STAGE_MAX_LAYERS or more. *tl gets 1 for a TransformerLens name. */
#define G2F_STAGE_MAX_LAYERS 4096
int g2f_act_match(const char *name, size_t *layer, int *tl);

/* Parses "<block>.<N>.<rest>" (block "h" or "blocks"; N without leading
 * zeros): the layer's number, -1 when p is not of that form, -2 when N is
 * G2F_STAGE_MAX_LAYERS or more; *rest points past the dot after N. */
long g2f_act_layer_prefix(const char *p, const char *block, const char **rest);

/* run --save: a word (or its alias) as an activation, -1 when unknown. */
int g2f_act_of_save_word(const char *word);

/* The names known after a layer prefix (tl 0: HF's, with aliases; 1:
 * TransformerLens') and at the model level (both namings), for suggestions
 * of the nearest known name: up to max into names, the count returned. */
size_t g2f_act_known_names(int layer_names, int tl, const char **names, size_t max);

#endif
