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

#include "g2f_digest_cache.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_fixture.h"
#include "g2f_forward.h"
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
    /* or NULL; when set, the digest hashed beside the work (checkpoint_sha256
     * is then unused): finished and recorded once every layer is written */
    g2f_digest_job *checkpoint_digest;
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

/* ---- the whole forward for any prompt --------------------------------------
 * From token ids (n_seq, T) (the INPUTS' input_ids, or the command line's)
 * through every block to the logits (g2f_forward), written as a model
 * fixture: input_ids (I64) and logits always, and each stage asked for under
 * the fixture names (HF: embed, h.L.in, h.L.ln_1.out, h.L.attn.qkv,
 * h.L.attn.probs, h.L.attn.merged, h.L.attn.out, h.L.mid, h.L.mlp.in,
 * h.L.mlp.pre, h.L.mlp.act, h.L.mlp.out, h.L.out, ln_f.out; or
 * TransformerLens': hook_embed + hook_pos_embed, blocks.L.hook_resid_pre,
 * ... attn.hook_q/k/v and attn.hook_z [..., T, n_head, d_head],
 * ln_final.hook_normalized), with run's metadata. Memory: the forward's
 * (g2f_forward.h) plus one layer's saved stages for every sequence. */
/* --save: a comma-separated list of the stage table's --save words (embed,
 * in, ln_1.out, attn.qkv, attn.probs, attn.merged, attn.out, mid, mlp.in (or
 * ln_2.out), mlp.pre (or pre), mlp.act (or act), mlp.out, out, ln_f.out) or
 * "all", into a bit set (bit g2f_act); 0 and a message naming the word when
 * one is unknown. */
int g2f_run_parse_save(const char *spec, unsigned *mask, char *msg, size_t n);

typedef struct g2f_run_model_params {
    const g2f_run_params *run;   /* gelu, its source, format, checkpoint label and sha256, threads */
    size_t n_head;               /* 0: the model's */
    unsigned save;               /* bits 1u << g2f_act */
    int tl_names;                /* TransformerLens names */
} g2f_run_model_params;

/* ids: n_seq * T token ids, the sequences' shape lead (lead_ndim <= 5
 * dimensions before T, may be 0). Checks every id against the vocabulary
 * (an error names the position) and T against the positions. */
g2f_status g2f_run_model(const g2f_model *m, const int64_t *ids, const uint64_t *lead, size_t lead_ndim, size_t T,
                         const char *out_path, const g2f_run_model_params *p, g2f_run_result *r, g2f_error *err);
#endif
