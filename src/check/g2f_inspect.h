/* g2f_inspect: what a checkpoint holds: format, naming, layout, sizes,
 * config, and per layer the four FFN tensors with value statistics. */
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

typedef struct g2f_inspect_layer {
    const g2f_tensor *tensor[G2F_FFN_TENSORS]; /* borrowed from the model; bias may be NULL */
    g2f_stats stats[G2F_FFN_TENSORS];
} g2f_inspect_layer;

typedef struct g2f_inspect_result {
    size_t n_layers;
    g2f_inspect_layer *layers; /* owned */
    size_t ffn_params;         /* per layer */
} g2f_inspect_result;

g2f_status g2f_inspect_run(const g2f_model *m, g2f_inspect_result *out, g2f_error *err);
void g2f_inspect_result_free(g2f_inspect_result *r);

#endif
