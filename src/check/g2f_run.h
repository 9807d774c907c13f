/* g2f_run: reproduces reference activations without Python: runs every
 * selected layer's FFN on a fixture-style file of inputs (h.N.mlp.in) and
 * writes in, out (and optionally pre, act) in the inputs' own naming, as
 * safetensors or .npz (g2f_writer, atomic). The metadata records the GELU
 * form, where it came from, the checkpoint and its sha256, and the tool
 * version, so the file can be verified later like any PyTorch export.
 */
#ifndef G2F_RUN_H
#define G2F_RUN_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_writer.h"

typedef struct g2f_run_params {
    g2f_gelu gelu;
    const char *gelu_source;
    const unsigned char *select;  /* n_layer flags or NULL = every layer with inputs */
    int save_pre, save_act;
    g2f_out_format format;
    const char *checkpoint_label; /* recorded as given */
    const char *checkpoint_sha256;
    int n_threads;
} g2f_run_params;

typedef struct g2f_run_result {
    size_t layers, tensors;
    size_t tokens;               /* of the last layer written */
} g2f_run_result;

/* Everything g2f_run checks before it computes: the inputs against the
 * model and each layer's work size against the machine's memory. The CLI
 * calls it before hashing the checkpoint, so a hostile size is refused at
 * once. */
g2f_status g2f_run_check(const g2f_model *m, const g2f_fixture *inputs, const g2f_run_params *p, g2f_error *err);

g2f_status g2f_run(const g2f_model *m, const g2f_fixture *inputs, const char *out_path, const g2f_run_params *p,
                   g2f_run_result *r, g2f_error *err);

#endif
