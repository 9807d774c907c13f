/* g2f_inspect: what a checkpoint holds: format, naming, layout, sizes,
 * config, n_head, and per layer every tensor (the FFN's four, the
 * LayerNorms', the attention's) with value statistics. */
#ifndef G2F_INSPECT_H
#define G2F_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_model.h"

typedef struct g2f_stats {
    uint64_t count, nan, inf;
    double min, max, mean, std; /* over finite values; 0 when none */
} g2f_stats;

/* Statistics of n floats, accumulated in double (Welford). */
void g2f_stats_compute(const float *v, size_t n, g2f_stats *out);

/* Every tensor of the layer (G2F_LAYER_TENSORS roles: the FFN's, then the
 * LayerNorms' and attention's); absent ones NULL. */
typedef struct g2f_inspect_layer {
    const g2f_tensor *tensor[G2F_LAYER_TENSORS]; /* borrowed from the model */
    g2f_stats stats[G2F_LAYER_TENSORS];
    int attn_split;                              /* q, k, v stored apart (TransformerLens) */
} g2f_inspect_layer;

typedef struct g2f_inspect_result {
    size_t n_layers;
    g2f_inspect_layer *layers; /* owned */
    size_t ffn_params;         /* per layer */
} g2f_inspect_result;

g2f_status g2f_inspect_run(const g2f_model *m, g2f_inspect_result *out, g2f_error *err);
void g2f_inspect_result_free(g2f_inspect_result *r);

#endif
