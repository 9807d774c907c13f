/* g2f_model: finds the GPT-2 FFN weights of every layer in a checkpoint.
 *
 * The checkpoint is any file g2f_source reads (safetensors, sharded or not;
 * a torch.save zip, sharded or not; GGUF; llm.c), or the folder holding
 * model.safetensors / its index / pytorch_model.bin / its index. The only
 * module that knows GPT-2 naming. For every layer L it looks for the four
 * FFN tensors (g2f_ffn_tensor) under one naming scheme:
 *   HF               h.L.mlp.c_fc.weight / .bias, h.L.mlp.c_proj.weight / .bias
 *   minGPT           blocks.L.mlp.c_fc.* / c_proj.*
 *   TransformerLens  blocks.L.mlp.W_in / b_in / W_out / b_out
 *   GGUF             blk.L.ffn_up.weight / .bias, blk.L.ffn_down.*
 * after container prefixes (model., model_state., state_dict., module.,
 * _orig_mod., transformer.), with the shapes
 *   c_fc.weight    Conv1D (n_embd, n_inner) or Linear (n_inner, n_embd)
 *   c_fc.bias      (n_inner), optional
 *   c_proj.weight  Conv1D (n_inner, n_embd) or Linear (n_embd, n_inner)
 *   c_proj.bias    (n_embd), optional
 * and ignores every other tensor. Two schemes or prefixes in one file are an
 * error. Layers must be 0..n_layer-1 without holes, with the same shapes; a
 * bias is present in every layer or in none.
 *
 * n_embd comes from ln_2.weight / wte.weight (or their equivalents) when
 * present, else from the shapes taking n_inner = 4 n_embd; the layout
 * (Conv1D or Linear) follows from n_embd and the c_fc shape, and when the
 * shapes cannot tell (n_inner == n_embd) the format's convention decides (HF
 * files and TransformerLens: Conv1D; nanoGPT, minGPT, GGUF, llm.c: Linear).
 * info says which.
 *
 * The config: the file given, else config.json beside the checkpoint, else
 * the only *config*.json there (some repositories ship <name>_config.json;
 * tokenizer_config.json and generation_config.json are never a model's
 * config); with several, none is used and info.config_source says so. It
 * is optional, and cross-checked: n_layer /
 * num_hidden_layers, n_embd / hidden_size, n_inner (null = 4 n_embd) must
 * match the tensors, and activation_function (gelu_new, gelu_pytorch_tanh,
 * gelu_fast: tanh; gelu: erf) becomes the default GELU form. It must be a
 * regular file of at most 1 MiB holding a JSON object in which no object
 * repeats a key (Python's json would take the last value, cJSON the first:
 * refused); a FIFO or folder named config.json is refused, not skipped.
 *
 * A nanoGPT training checkpoint (a torch.save dict holding model_args
 * beside model, g2f_torch.h) sets info.file_has_gelu: nanoGPT's model.py
 * runs nn.GELU(), exact erf, so that is the default where no config says.
 *
 * info.n_head (attention heads, for the block): config.json n_head /
 * num_attention_heads, else GGUF gpt2.attention.head_count, the llm.c
 * header's NH, a torch checkpoint's model_args['n_head'] (nanoGPT) or
 * config['n_head'] (a top-level config dict), TransformerLens' W_Q shape
 * [n_head, d, d_head]; info.n_head_source names which. A config.json or
 * torch dict whose n_head does not divide n_embd (or whose n_embd or
 * n_layer differs from the tensors') is refused (G2F_ERR_FORMAT).
 *
 * Weights may be F32, F16, BF16, F64 or one of ggml's quantized types (GGUF
 * Q4_0 ... Q6_K, g2f_quant.h), converted to float32 one layer at a time;
 * info.dtype names the type of layer 0's c_fc.weight ("Q8_0"), so a
 * quantized checkpoint is never described as float. g2f_model_layer_load
 * checks a quantized tensor's blocks first (sizes, finite f16 scales) and
 * fails with G2F_ERR_FORMAT naming the tensor and the block.
 *
 * Ownership: the model owns its mapping; g2f_layer views point into it (F32,
 * aligned) or into the layer's own buffer (converted), valid until
 * g2f_layer_free / g2f_model_close.
 */
#ifndef G2F_MODEL_H
#define G2F_MODEL_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_ffn_types.h"
#include "g2f_tensor.h"

typedef struct g2f_model g2f_model;

typedef struct g2f_model_info {
    const char *path;          /* the weights file */
    const char *format;        /* "safetensors", "safetensors, 3 shards", ... */
    const char *naming;        /* the naming scheme found, e.g. "HF GPT-2 (h.N.mlp.c_fc)" */
    const char *config_path;   /* NULL when there is no config.json */
    const char *prefix;        /* key prefix found: "" or "transformer." */
    size_t n_layer, n_embd, n_inner;
    g2f_dtype dtype;           /* dtype of layer 0's c_fc.weight */
    g2f_layout layout;
    const char *layout_source; /* how the layout was decided, one phrase */
    int has_fc_bias, has_proj_bias;
    int config_has_gelu;       /* config named a GELU form */
    g2f_gelu config_gelu;
    const char *config_activation; /* the config's string, or NULL */
    double ln_eps;             /* LayerNorm epsilon: config.json layer_norm_epsilon, else 1e-5 */
    int config_has_ln_eps;
    size_t n_head;             /* attention heads, 0 when nothing says (then attention is not checked) */
    const char *n_head_source; /* where n_head came from, or NULL */
    const char *config_source; /* how config_path was found ("config.json beside the checkpoint", ...), or
                                  why there is none ("none beside the checkpoint", "several ...") */
    int file_has_gelu;         /* the file says which GELU its training code runs (a nanoGPT checkpoint) */
    g2f_gelu file_gelu;
    const char *file_gelu_why; /* why, one phrase; NULL unless file_has_gelu */
    /* The model's ends (g2f_model_embed_load), from the shapes found at open
     * (0 when the checkpoint holds no wte / wpe, or their shapes do not fit
     * n_embd: g2f_model_embed_load then says why). */
    size_t vocab;              /* wte's rows (llm.c: its header's vocab_size, wte being padded) */
    size_t n_positions;        /* wpe's rows */
    int has_lm_head;           /* the checkpoint stores its own head tensor (maybe a tied copy) */
    int has_wte;               /* it holds a token embedding (an FFN-only file holds none) */
    long config_vocab, config_n_positions; /* config.json vocab_size / n_positions (n_ctx), -1 when absent;
                                              n_positions also a GGUF's gpt2.context_length */
    const char *n_positions_said_by; /* where config_n_positions comes from (a path, or the GGUF key) */
    int config_untied;         /* config.json says tie_word_embeddings false */
    /* config.json's attention other than GPT-2's: scale_attn_weights false (scores not divided by
     * sqrt(d_head)), scale_attn_by_inverse_layer_idx true (divided by layer + 1 as well) */
    int attn_unscaled, attn_by_layer;
} g2f_model_info;

/* The four FFN tensors of a layer, in the one order every per-tensor array
 * uses (g2f_layer.src, inspect's statistics, diff's verdicts, the reports). */
typedef enum g2f_ffn_tensor {
    G2F_FFN_FC_W,   /* c_fc.weight */
    G2F_FFN_FC_B,   /* c_fc.bias, optional */
    G2F_FFN_PROJ_W, /* c_proj.weight */
    G2F_FFN_PROJ_B, /* c_proj.bias, optional */
    G2F_FFN_TENSORS
} g2f_ffn_tensor;
/* Every tensor of a layer: the FFN's four above, then the block's others in
 * block order (inspect and diff list them all; g2f_model_layer_tensors_all). */
enum {
    G2F_BLK_LN1_W = G2F_FFN_TENSORS, /* ln_1.weight */
    G2F_BLK_LN1_B,                   /* ln_1.bias */
    G2F_BLK_ATTN_W,                  /* attn.c_attn.weight */
    G2F_BLK_ATTN_B,                  /* attn.c_attn.bias */
    G2F_BLK_APROJ_W,                 /* attn.c_proj.weight */
    G2F_BLK_APROJ_B,                 /* attn.c_proj.bias */
    G2F_BLK_LN2_W,                   /* ln_2.weight */
    G2F_BLK_LN2_B,                   /* ln_2.bias */
    G2F_LAYER_TENSORS
};
/* The role's name in reports: "c_fc.weight", "c_fc.bias", "c_proj.weight",
 * "c_proj.bias", "ln_1.weight", ..., "attn.c_attn.weight", ... ("?" out of
 * range). */
const char *g2f_model_tensor_role(int k);

typedef struct g2f_layer {
    g2f_ffn_weights w;
    float *owned; /* converted or realigned tensors; NULL when all are views */
    int read;     /* bit k: src[k] was read into a g2f_layer_reader's buffer (no mapped pages to drop) */
    const g2f_tensor *src[G2F_FFN_TENSORS]; /* as found (bias NULL when absent); borrowed from the model */
} g2f_layer;

/* path: a checkpoint file in any format g2f_source reads, a shard index, or
 * a folder holding one (see the top of this file).
 * config_path: a config.json to cross-check, or NULL to use config.json
 * beside the checkpoint, or the only *config*.json there. */
g2f_status g2f_model_open(const char *path, const char *config_path, g2f_model **out, g2f_error *err);
/* Borrowed; valid until g2f_model_close. */
const g2f_model_info *g2f_model_get_info(const g2f_model *m);
/* FFN parameters per layer from the loaded shapes: 2 n_embd n_inner + biases. */
size_t g2f_model_ffn_params(const g2f_model *m);
/* Views (or converts) layer's weights into out; free with g2f_layer_free. */
g2f_status g2f_model_layer_load(const g2f_model *m, size_t layer, g2f_layer *out, g2f_error *err);
/* Frees the conversions and drops the layer's mapped pages from the
 * resident set (see g2f_mapping_release). */
void g2f_layer_free(g2f_layer *l);

/* A walk over the layers (run, verify) that reads each layer's float32
 * weights into one buffer kept across layers instead of viewing them in
 * the mapping, where that is faster: on a guest whose page tables the
 * hypervisor shadows, the first touch of each mapped page faults into the
 * hypervisor, and copying GPT-2 XL's 48 layers out of the mapping ran at
 * 3-5 GB/s against 12-25 GB/s for pread into a reused buffer (2 threads of
 * an AMD EPYC under PVM). The reader measures both on the first layer of at
 * least 8 MiB (1 MiB pieces each way, four times, into the buffer it fills
 * anyway) and keeps the faster for the rest of the walk; either way the
 * weights are the same bytes (the file is reopened only when it is still
 * the mapped one, g2f_mapping_read). GPT2FFN_WEIGHTS=map or read fixes the
 * choice (tests, benchmarks). A layer with a float32 tensor over
 * G2F_POPULATE_MAX (256 MiB) is viewed: a hostile file's huge tensor is
 * neither read nor given a buffer before the checks on its work. Start from
 * {0}; free with g2f_layer_reader_free. The buffer holds one layer's FFN
 * weights. */
typedef struct g2f_layer_reader {
    unsigned char *buf; /* owned, 2 MiB aligned */
    size_t cap;         /* bytes */
    int mode;           /* G2F_READ_UNDECIDED (start), G2F_READ_MAP, G2F_READ_PREAD */
    int n_threads;      /* for the reads (g2f_threads) */
} g2f_layer_reader;
enum { G2F_READ_UNDECIDED = 0, G2F_READ_MAP = 1, G2F_READ_PREAD = 2 };
/* g2f_model_layer_load, the float32 tensors read into rd's buffer when rd
 * (may be NULL) found reading faster; out's views then last until the next
 * call with rd or g2f_layer_reader_free. */
g2f_status g2f_model_layer_read(const g2f_model *m, size_t layer, g2f_layer_reader *rd, g2f_layer *out,
                                g2f_error *err);
void g2f_layer_reader_free(g2f_layer_reader *rd);
/* One tensor t of m (as m's tables give it), read into rd's buffer when it
 * is float32 in place in the mapping, at most G2F_POPULATE_MAX bytes, and
 * rd (may be NULL) decides reading is faster, as g2f_model_layer_read
 * decides; NULL otherwise (then read it in place). The floats last until
 * the next call with rd or g2f_layer_reader_free. */
const float *g2f_model_tensor_read(const g2f_model *m, const g2f_tensor *t, g2f_layer_reader *rd);
/* Drops t's pages from the resident set (g2f_mapping_release) when its bytes lie in one of m's file
 * mappings; memory of its own (TransformerLens' assembled c_attn, an inflated member) is left
 * alone: MADV_DONTNEED would zero it, and the next read of t would see zeros. */
void g2f_model_release(const g2f_model *m, const g2f_tensor *t);
/* Every file the model was read from, appended to out: the checkpoint file
 * (for a sharded one the index and every shard) and the config.json read,
 * if any. For g2f_output_check. */
g2f_status g2f_model_files(const g2f_model *m, g2f_path_list *out, g2f_error *err);

/* The checkpoint's SHA-256 as 64 lowercase hex digits (hex[65]), recorded
 * by `run` (metadata checkpoint_sha256):
 *   - one file: the digest of that file (what `sha256sum FILE` prints);
 *   - sharded (an index): the digest of the text `sha256sum` prints for the
 *     shards in byte order of their names, one line "<digest>  <name>\n"
 *     per shard with the name as the index gives it (a plain file name):
 *     `cd DIR && LC_ALL=C sha256sum $(ls SHARDS | LC_ALL=C sort) | sha256sum`.
 *     The index itself is not hashed: it only maps names to shards, and the
 *     weights are what the digest identifies.
 * Reads every byte of the checkpoint once. */
g2f_status g2f_model_sha256(const g2f_model *m, char hex[65], g2f_error *err);

/* NULL is a no-op. */
void g2f_model_close(g2f_model *m);

/* A LayerNorm's parameters as floats (views, or converted copies it owns),
 * each NULL when the checkpoint has none; eps from the model info. found is
 * 0 when the checkpoint holds no gain for it (then w and b are NULL). */
typedef struct g2f_ln {
    size_t d;
    const float *w, *b; /* (d) */
    double eps;
    int found;
    float *owned[2];
    double roundoff;    /* the storage roundoff of its stored tensors (F16 / BF16; 0 for F32, F64):
                           a rounded checkpoint's LayerNorm is uncertain only when stored rounded */
} g2f_ln;
/* which: 1 ln_1 (before attention), 2 ln_2 (before the FFN) of layer; 0 the
 * final ln_f (layer ignored). Names follow the checkpoint's scheme (HF
 * ln_1/ln_2/ln_f, TransformerLens ln1/ln2/ln_final, GGUF attn_norm/ffn_norm/
 * output_norm). Free with g2f_ln_free. */
g2f_status g2f_model_ln_load(const g2f_model *m, int which, size_t layer, g2f_ln *out, g2f_error *err);
void g2f_ln_free(g2f_ln *ln);

/* A whole GPT-2 block's weights as floats (views, or converted copies it
 * owns): ln_1, attention (c_attn: layout Conv1D (d, 3d) or Linear (3d, d),
 * q, k, v in that order along the 3d; c_proj: (d, d)), ln_2 and the FFN.
 * has_attn is 0 when the checkpoint holds no attention weights (an FFN-only
 * file): the attention stages are then skipped. */
typedef struct g2f_block {
    size_t n_embd, n_head;
    g2f_ln ln_1, ln_2;
    int has_attn;
    const float *attn_w, *attn_b;   /* bias (3d) or NULL */
    const float *aproj_w, *aproj_b; /* bias (d) or NULL */
    g2f_layout layout_attn, layout_aproj;
    g2f_layer mlp;
    float *owned;                   /* converted copies of the attention weights */
    const g2f_tensor *src[4];       /* as found: c_attn weight, bias, c_proj weight, bias (NULL when absent) */
} g2f_block;
/* Loads layer's block (after g2f_model_open); n_head overrides the model's
 * when not 0. Free with g2f_block_free (it drops the mapped pages too). */
g2f_status g2f_model_block_load(const g2f_model *m, size_t layer, size_t n_head, g2f_block *out, g2f_error *err);
void g2f_block_free(g2f_block *b);

/* The model's ends: token and position embeddings, ln_f and the head, as
 * floats (views into the mapping when F32, else converted copies it owns).
 * Names per scheme, each after the container prefix or any shorter prefix
 * (nanoGPT's lm_head sits outside "transformer."):
 *   HF / nanoGPT     wte.weight (vocab, d), wpe.weight (n_pos, d), ln_f.*, lm_head.weight (vocab, d)
 *   minGPT           also tok_emb.weight, pos_emb ([1, n_pos, d]), head.weight
 *   TransformerLens  embed.W_E (vocab, d), pos_embed.W_pos (n_pos, d), ln_final.w/b,
 *                    unembed.W_U (d, vocab), unembed.b_U (vocab)
 *   GGUF             token_embd.weight, position_embd.weight, output_norm.*, output.weight
 *   llm.c            wte.weight (padded_vocab, d): vocab is the header's vocab_size
 * The head: logits = ln_f(x) head^T (+ head_b). Without a stored head it is
 * wte (tied); a stored head equal to wte value for value (nanoGPT and HF
 * save the tied weight twice; TransformerLens' W_U = W_E^T) is tied too,
 * and head_desc says which. */
typedef struct g2f_embed {
    size_t vocab, n_pos, d;
    const float *wte;          /* (vocab rows at least, d) */
    const float *wpe;          /* (n_pos, d), NULL when the checkpoint has none */
    const float *head;         /* (vocab, d), or (d, vocab) when head_dv */
    int head_dv;               /* the head is stored [d, vocab] (TransformerLens W_U) */
    const float *head_b;       /* (vocab) or NULL */
    int head_stored;           /* the checkpoint stores its own head tensor */
    int tied;                  /* the head is wte's values (none stored, or an equal copy) */
    const char *head_desc;     /* one phrase for reports (static) */
    g2f_ln ln_f;               /* found 0 when the checkpoint has no ln_f */
    const g2f_tensor *src[4];  /* wte, wpe, head, head bias as found (NULL when absent) */
    float *owned[4];
} g2f_embed;
/* Loads (views or converts) the ends; fails (G2F_ERR_FORMAT) naming the file
 * and tensor when wte is missing or a shape or dtype does not fit n_embd,
 * the vocabulary or config.json (vocab_size, n_positions). Conversions are
 * sized with g2f_alloc_work. Free with g2f_embed_free. */
g2f_status g2f_model_embed_load(const g2f_model *m, g2f_embed *out, g2f_error *err);
/* NULL is a no-op; drops the mapped pages too. */
void g2f_embed_free(g2f_embed *e);

/* The model's ends as stored, for readers that stream them (diff), in the
 * order reports list them. */
enum { G2F_END_WTE, G2F_END_WPE, G2F_END_LNF_W, G2F_END_LNF_B, G2F_END_HEAD, G2F_END_HEAD_B, G2F_END_TENSORS };
/* "wte", "wpe", "ln_f.weight", "ln_f.bias", "head", "head.bias" ("?" out of range). */
const char *g2f_model_end_role(int k);
typedef struct g2f_model_ends {
    const g2f_tensor *t[G2F_END_TENSORS]; /* as found (NULL when absent), borrowed from the model */
    size_t vocab;    /* the vocabulary: wte's rows, or llm.c's header vocab_size (wte padded beyond it) */
    size_t wte_rows; /* wte's stored rows */
    size_t n_pos;    /* wpe's rows (minGPT's pos_emb [1, n_pos, d] too) */
    int head_dv;     /* the head is stored [d, vocab] (TransformerLens W_U); else [vocab, d] */
} g2f_model_ends;
/* The tensors g2f_model_embed_load reads, found under the same names and
 * checked the same way (shapes against n_embd and each other, dtypes,
 * quantized blocks), without converting anything; a checkpoint without wte
 * is not an error here (t[G2F_END_WTE] NULL; then the head is not checked
 * against it). */
g2f_status g2f_model_end_tensors(const g2f_model *m, g2f_model_ends *out, g2f_error *err);

/* TransformerLens' attention of a layer (W_Q, W_K, W_V [n_head, d, d_head],
 * b_Q, b_K, b_V [n_head, d_head], W_O [n_head, d_head, d], b_O [d]) as the
 * HF tensors it stands for, t[k - G2F_BLK_ATTN_W] for the roles
 * G2F_BLK_ATTN_W .. G2F_BLK_APROJ_B: c_attn Conv1D (d, 3d) with q | k | v
 * along the 3d and head h's columns at h d_head, and its bias (3d),
 * assembled into a buffer it owns in the parts' dtype (float32 when they
 * differ, float64 when one of them is F64), so that a diff sees what the
 * file stores (a BF16 port's c_attn is BF16); c_proj (d, d) a view of W_O
 * (row h d_head + j, Conv1D) and b_O. present[k] 0 when absent (a bias);
 * all 0 for a layer without W_Q (and for other schemes). n_head is W_Q's.
 * The same reshaping g2f_model_block_load computes the block with. Free
 * with g2f_split_attn_free. */
typedef struct g2f_split_attn {
    g2f_tensor t[4];
    int present[4];
    size_t n_head;
    unsigned char *owned;
    const g2f_tensor *src[8]; /* W_Q, W_K, W_V, b_Q, b_K, b_V, W_O, b_O as found (borrowed) */
} g2f_split_attn;
g2f_status g2f_model_split_attn(const g2f_model *m, size_t layer, g2f_split_attn *out, g2f_error *err);
void g2f_split_attn_free(g2f_split_attn *s);

/* What a tensor of the checkpoint that is none of the roles above is. */
typedef enum g2f_other_kind {
    G2F_OTHER_UNKNOWN,  /* a tensor the model does not use (score.weight, a port's extra) */
    G2F_OTHER_BUFFER,   /* a non-parameter buffer: <block>.N.attn.bias, .masked_bias, .mask, TransformerLens' IGNORE */
    G2F_OTHER_TRAINING, /* training state beside the model's state dict: its known keys (optimizer.*,
                           best_val_loss, iter_num, scheduler.*, ...); any other tensor there is compared */
    G2F_OTHER_KIND_COUNT
} g2f_other_kind;
typedef struct g2f_model_other {
    const g2f_tensor *t; /* borrowed from the model */
    const char *key;     /* t->name after the container prefixes (model., _orig_mod., transformer., ...) */
    g2f_other_kind kind;
} g2f_model_other;
/* Every tensor of the checkpoint that is none of the roles (a layer's
 * G2F_LAYER_TENSORS, TransformerLens' split attention, the ends), in the
 * table's order, into *out (the caller frees it; NULL when none). Training
 * state: for a torch.save dict whose model sits under a container (model.,
 * model_state., state_dict.), the tensors outside it. */
g2f_status g2f_model_others(const g2f_model *m, g2f_model_other **out, size_t *n, g2f_error *err);

/* Maps an HF activation_function string to a GELU form; 0 when it is not
 * one of gelu_new, gelu_pytorch_tanh, gelu_fast (tanh) or gelu (erf). */
int g2f_activation_to_gelu(const char *activation, g2f_gelu *out);

/* The layer's four FFN tensors as found (bias NULL when absent), borrowed
 * from the model, without converting or copying anything: for readers that
 * stream a tensor (diff), through g2f_tensor_read_f32 of element ranges.
 * Quantized tensors are validated first (g2f_quant_check), as by
 * g2f_model_layer_load. Their layout is info.layout; release pages read
 * with g2f_mapping_release. */
g2f_status g2f_model_layer_tensors(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_FFN_TENSORS],
                                   g2f_error *err);

/* Every tensor of the layer as stored (G2F_LAYER_TENSORS roles; NULL when
 * absent), the same way: the FFN's from g2f_model_layer_tensors, then the
 * LayerNorms and attention, each checked against its role's shape (a
 * vector of d or 3d; c_attn [d, 3d] and c_proj [d, d] in info.layout) and
 * dtype, so a reader may index them by their logical shape. TransformerLens
 * stores q, k and v apart (W_Q, W_K, W_V, W_O): its attention roles are NULL
 * and *attn_split is set. */
g2f_status g2f_model_layer_tensors_all(const g2f_model *m, size_t layer, const g2f_tensor *out[G2F_LAYER_TENSORS],
                                       int *attn_split, g2f_error *err);

/* Whether the checkpoint holds what the whole forward computes with, as HF's
 * GPT-2 would load it, into why (a phrase naming the file and tensor, "" when
 * it does): a position embedding (HF initializes a missing one at
 * random: no result is faithful), the final LayerNorm, every layer's
 * attention weights and LayerNorm gains, and each bias role (the LayerNorms',
 * the attention's) in every layer or in none (nanoGPT's bias=False). A
 * tensor missing from one layer only is a broken file, not a port's choice.
 * Errors only for a tensor that cannot be read (err). */
g2f_status g2f_model_forward_ready(const g2f_model *m, const g2f_embed *e, char *why, size_t n, g2f_error *err);

#endif
