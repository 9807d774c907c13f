/* g2f_model: finds the GPT-2 FFN weights of every layer in a checkpoint.
 *
 * The only module that knows GPT-2 naming. For every layer L it looks for
 *   [transformer.]h.L.mlp.c_fc.weight    Conv1D (n_embd, n_inner) or Linear (n_inner, n_embd)
 *   [transformer.]h.L.mlp.c_fc.bias      (n_inner), optional
 *   [transformer.]h.L.mlp.c_proj.weight  Conv1D (n_inner, n_embd) or Linear (n_embd, n_inner)
 *   [transformer.]h.L.mlp.c_proj.bias    (n_embd), optional
 * and ignores every other tensor. Layers must be 0..n_layer-1 without holes,
 * with the same shapes; a bias is present in every layer or in none.
 *
 * n_embd comes from ln_2.weight / wte.weight when present, else config.json,
 * else from the shapes (n_inner = 4 n_embd); the layout (Conv1D or Linear)
 * follows from n_embd and the c_fc shape, and when n_inner == n_embd the
 * format's convention decides (safetensors from HF: Conv1D). info says which.
 *
 * config.json beside the checkpoint (optional) is cross-checked: n_layer /
 * num_hidden_layers, n_embd / hidden_size, n_inner (null = 4 n_embd), and
 * activation_function (gelu_new, gelu_pytorch_tanh, gelu_fast: tanh; gelu:
 * erf) which becomes the default GELU form.
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
#include "g2f_ffn.h"
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
} g2f_model_info;

typedef struct g2f_layer {
    g2f_ffn_weights w;
    float *owned; /* converted or realigned tensors; NULL when all are views */
    const g2f_tensor *src[4]; /* c_fc.weight, c_fc.bias, c_proj.weight, c_proj.bias as found
                               (bias NULL when absent); borrowed from the model */
} g2f_layer;

/* path: a safetensors file, or a folder holding model.safetensors.
 * config_path: a config.json to cross-check, or NULL to use config.json
 * beside the checkpoint when there is one. */
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
/* NULL is a no-op. */
void g2f_model_close(g2f_model *m);

/* Maps an HF activation_function string to a GELU form; 0 when it is not
 * one of gelu_new, gelu_pytorch_tanh, gelu_fast (tanh) or gelu (erf). */
int g2f_activation_to_gelu(const char *activation, g2f_gelu *out);

#endif
