/* g2f_fixture: reference activations, mapped to layers.
 *
 * A fixture (safetensors, .npz, or a folder of .npy files named like the
 * tensors; any format g2f_source reads) holds per layer L, with or without a
 * "transformer." prefix:
 *   h.L.mlp.in   (..., n_embd)   FFN input (the ln_2 output)       required
 *   h.L.mlp.out  (..., n_embd)   FFN output before the residual    required
 *   h.L.mlp.pre  (..., n_inner)  c_fc output before GELU           optional
 *   h.L.mlp.act  (..., n_inner)  after GELU                        optional
 * TransformerLens activation-cache names work too: blocks.L.ln2.hook_normalized
 * (in), blocks.L.hook_mlp_out (out), blocks.L.mlp.hook_pre (pre),
 * blocks.L.mlp.hook_post (act).
 * Tokens are the flattened leading dimensions and must agree between the
 * tensors of a layer. Any float dtype; the dtype is kept for tolerances.
 * __metadata__ "gelu" ("tanh" / "erf") is the producer's claim, returned as
 * is, never trusted. Other tensors are ignored.
 *
 * Ownership: g2f_fixture owns its mapping; g2f_fixture_layer buffers are the
 * caller's, freed with g2f_fixture_layer_free.
 */
#ifndef G2F_FIXTURE_H
#define G2F_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_model.h"
#include "g2f_normread.h"
#include "g2f_stage.h"
#include "g2f_tensor.h"

/* The tensors a fixture records are the stage table's activations
 * (g2f_stage.h: names, widths, the stage each belongs to); every lookup
 * below takes a g2f_act. Leading dimensions before T are independent
 * sequences, each from position 0, the same for every stage. */

typedef struct g2f_fixture g2f_fixture;

typedef struct g2f_fixture_layer {
    size_t n_tokens;
    float *in;          /* (n_tokens, n_embd), F64 input rounded to float */
    double *out;        /* (n_tokens, n_embd), exact file values */
    double *pre, *act;  /* (n_tokens, n_inner) or NULL when absent */
    g2f_dtype dtype[G2F_ACT_COUNT]; /* of the FFN's four (G2F_ACT_MLP_*) */
} g2f_fixture_layer;

g2f_status g2f_fixture_open(const char *path, g2f_fixture **out, g2f_error *err);
/* g2f_fixture_open with what the file cannot say about itself taken from
 * the checkpoint it is verified against: llm.c's debug state stores its
 * logits and gradients without V, Vp or the parameter count, which come
 * from m's sizes with llm.c's padding (g2f_llmc_state_dims_for_model). */
/* It also reads TransformerLens' hook_normalized captures as mode says
 * (g2f_fixture_read_norms). */
g2f_status g2f_fixture_open_for(const char *path, const g2f_model *m, g2f_norm_mode mode, g2f_fixture **out,
                                g2f_error *err);
/* A fixture over a table the caller holds (a binding's arrays in memory,
 * g2f_bind.h): the table, its names and the bytes its data pointers point
 * to are borrowed and must outlive the fixture; the caller has checked
 * every tensor as a reader would (shape, numel and nbytes consistent).
 * label stands for the file in messages and reports (g2f_fixture_path);
 * g2f_fixture_files adds nothing. */
g2f_status g2f_fixture_from_table(const g2f_table *table, const char *label, g2f_fixture **out, g2f_error *err);
/* Checks every fixture tensor against the model's sizes (layers < n_layer,
 * last dimensions, token counts) so that errors surface before any work. */
g2f_status g2f_fixture_check(const g2f_fixture *f, size_t n_layer, size_t n_embd, size_t n_inner,
                             g2f_error *err);
int g2f_fixture_has_layer(const g2f_fixture *f, size_t layer);
/* The metadata "gelu" claim, or NULL. Borrowed. */
const char *g2f_fixture_gelu_claim(const g2f_fixture *f);
/* Dtype of the fixture's first "out" tensor (for reports). */
g2f_dtype g2f_fixture_dtype(const g2f_fixture *f);
const char *g2f_fixture_path(const g2f_fixture *f);
/* A layer's recorded FFN tensors (t[G2F_ACT_MLP_IN], _OUT, _PRE, _ACT; the
 * others NULL), to be read a chunk of tokens at a time (g2f_tensor_read_f32
 * / _f64 of rows): borrowed from the fixture, valid until
 * g2f_fixture_close; pre / act NULL when absent.
 * Only after g2f_fixture_check succeeded (shapes and dtypes are checked). */
typedef struct g2f_fixture_views {
    const g2f_tensor *t[G2F_ACT_COUNT];
    size_t n_tokens;
} g2f_fixture_views;
g2f_status g2f_fixture_layer_views(const g2f_fixture *f, size_t layer, g2f_fixture_views *out, g2f_error *err);

/* The recorded tensor of activation a (borrowed), or NULL: layer's for a
 * layer's activation (h.L.*), the model's otherwise (layer ignored).
 * Shapes are checked by g2f_fixture_check / _check_block / _check_model
 * (mlp.out may be recorded without mlp.in in a block fixture). */
const g2f_tensor *g2f_fixture_act(const g2f_fixture *f, size_t layer, g2f_act a);
/* Layers with any block stage recorded (slots beyond the FFN's). */
int g2f_fixture_has_block(const g2f_fixture *f, size_t layer);
size_t g2f_fixture_n_slots(const g2f_fixture *f);
/* The block stages' shapes against the model: d-wide stages (n_seq, T, d),
 * qkv (n_seq, T, 3 d), probs (n_seq, n_head, T, T), q/k/v/z (n_seq, T,
 * n_head, d_head), one (n_seq, T) per layer shared with mlp.in/out when
 * recorded; n_head 0 refuses nothing that needs it (those stages are then
 * skipped by verify). *n_seq / *T of the first layer with block stages. */
g2f_status g2f_fixture_check_block(const g2f_fixture *f, size_t n_layer, size_t n_embd, size_t n_head,
                                   g2f_error *err);
/* The sequence split of a layer's block stages: n_seq sequences of T
 * tokens (0, 0 without block stages). */
void g2f_fixture_block_shape(const g2f_fixture *f, size_t layer, size_t *n_seq, size_t *T);

/* Any model-level tensor recorded. */
int g2f_fixture_has_model(const g2f_fixture *f);
/* Checks input_ids and the model-level stages: ids [..., T] of I64 or I32,
 * each in [0, vocab) (an error names the first one out of range by its
 * position), T <= n_pos (when n_pos is not 0), embed / hook_embed /
 * hook_pos_embed / ln_f.out [..., T, d], logits [..., T, vocab], and every
 * layer's block stages with the same (n_seq, T). Without input_ids the
 * stages still get their shapes checked, (n_seq, T) from the first found.
 * *n_seq and *T: the split (0, 0 without any model-level tensor). */
g2f_status g2f_fixture_check_model(const g2f_fixture *f, size_t d, size_t vocab, size_t n_pos, size_t *n_seq,
                                   size_t *T, g2f_error *err);
/* Token ids [start, start + count) of input_ids (checked by
 * g2f_fixture_check_model), widened. */
void g2f_fixture_read_ids(const g2f_tensor *ids, uint64_t start, uint64_t count, int64_t *out);

/* Loads one layer whole (after g2f_fixture_check succeeded); memory grows
 * with the layer's tokens: verify reads views instead. */
g2f_status g2f_fixture_layer_load(const g2f_fixture *f, size_t layer, size_t n_embd, size_t n_inner,
                                  g2f_fixture_layer *out, g2f_error *err);
void g2f_fixture_layer_free(g2f_fixture_layer *l);

/* Inputs only (for `run`, which computes the outputs): checks every layer
 * that has an 'in' tensor against the model's sizes. */
g2f_status g2f_fixture_check_inputs(const g2f_fixture *f, size_t n_layer, size_t n_embd, g2f_error *err);
int g2f_fixture_has_input(const g2f_fixture *f, size_t layer);
/* The layer's 'in' tensor (borrowed), for its shape. */
const g2f_tensor *g2f_fixture_input(const g2f_fixture *f, size_t layer);
/* The name a tensor of this kind gets in the layer's own naming scheme
 * (canonical, with the same prefix, or TransformerLens). */
void g2f_fixture_name_for(const g2f_fixture *f, size_t layer, g2f_act kind, char *buf, size_t n);
/* Every file the fixture was read from (the file, or every *.npy of a
 * folder), appended to out. For g2f_output_check. */
g2f_status g2f_fixture_files(const g2f_fixture *f, g2f_path_list *out, g2f_error *err);
/* Two tensors of the fixture that name the same stage (h.L.ln_2.out and
 * h.L.mlp.in, a TransformerLens name beside the HF one, ...: what a hook on
 * every module writes). The first in the file is the one read (kept); verify
 * checks that the other holds the same values (g2f_verify: a capture whose
 * names for one tensor differ is a finding, not a refusal). Borrowed. */
typedef struct g2f_fixture_alias {
    const g2f_tensor *kept, *other;
    const g2f_tensor *other2; /* or NULL; else other + other2 is the alias (hook_embed + hook_pos_embed) */
    int stream;               /* the residual stream under its other names (h.L.out and h.L+1.in, embed and
                                 h.0.in): in every full capture, so reported only when the values differ */
} g2f_fixture_alias;
size_t g2f_fixture_n_aliases(const g2f_fixture *f);
const g2f_fixture_alias *g2f_fixture_alias_at(const g2f_fixture *f, size_t i);

/* How an alias pair's values agree, element by element: integers (ids, masks) equal; floats one
 * value stored in both dtypes (g2f_dtype_values_agree: the same in one dtype, one rounded to
 * nearest in the other's), other + other2 (a sum in float32 in the port) within one rounding of
 * the sum in the coarsest of the three. */
typedef struct g2f_alias_values {
    int not_comparable;   /* different element counts, or integers beside floats */
    size_t total, differing;
    size_t first;         /* flat index of the first differing element */
    double max_abs;       /* the largest |kept - other| of those (NaN when one side is NaN) */
} g2f_alias_values;
g2f_status g2f_fixture_alias_values(const g2f_fixture_alias *a, g2f_alias_values *o, g2f_error *err);

/* A tensor of the fixture that no comparison reads: a name the tool does
 * not know (the reports say so with the nearest known name: "h.0.mlp.output":
 * did you mean "h.0.mlp.out"?; "h.00.mlp.in": "h.0.mlp.in"; suggestion ""
 * when nothing is near), or a known one that cannot be compared (why: a
 * hook_embed without its hook_pos_embed). The first G2F_FIXTURE_UNKNOWN_MAX are kept; *total gets
 * how many there are. */
#define G2F_FIXTURE_UNKNOWN_MAX 16
typedef struct g2f_fixture_unknown {
    char name[128];            /* a copy, cut to fit */
    char suggestion[112];
    char why[96];              /* a known name not compared: why ("" for an unknown name) */
} g2f_fixture_unknown;
size_t g2f_fixture_n_unknown(const g2f_fixture *f, size_t *total);
const g2f_fixture_unknown *g2f_fixture_unknown_at(const g2f_fixture *f, size_t i);

/* A tensor of the fixture by its exact name, or NULL: for tensors outside
 * the stage table (llm.c's debug state's "targets" and "loss", read by
 * the loss stage, g2f_loss_stage.h). Borrowed. */
const g2f_tensor *g2f_fixture_named(const g2f_fixture *f, const char *name);

/* TransformerLens' blocks.L.ln1 / ln2.hook_normalized and
 * ln_final.hook_normalized: after the gain and bias in TransformerLens 2,
 * before them in 3 (g2f_normread.h). Once per fixture, with the checkpoint
 * it is verified against: each such capture is read as mode says, or
 * (G2F_NORM_MODE_AUTO) as its values and m's gain and bias decide. Read
 * before: the stage's tensor becomes the LayerNorm's output computed from
 * it; undecided: the capture is taken out (not compared; its other name's
 * tensor, when the fixture has one, holds the stage). g2f_fixture_open and
 * _from_table read them as recorded until this is called;
 * g2f_fixture_open_for calls it. */
typedef struct g2f_fixture_norm {
    char name[128];           /* the capture's name, a copy */
    g2f_act act;              /* G2F_ACT_LN1, G2F_ACT_MLP_IN or G2F_ACT_LN_F */
    size_t layer;             /* 0 for ln_final */
    g2f_norm_reading reading;
    int forced;               /* taken from the mode, not decided */
} g2f_fixture_norm;
g2f_status g2f_fixture_read_norms(g2f_fixture *f, const g2f_model *m, g2f_norm_mode mode, g2f_error *err);
size_t g2f_fixture_n_norms(const g2f_fixture *f);
const g2f_fixture_norm *g2f_fixture_norm_at(const g2f_fixture *f, size_t i);
/* The capture of activation a (layer's; ln_final: layer ignored), or NULL. */
const g2f_fixture_norm *g2f_fixture_norm_of(const g2f_fixture *f, size_t layer, g2f_act a);

/* NULL is a no-op. */
void g2f_fixture_close(g2f_fixture *f);
/* A metadata value of the fixture file (safetensors __metadata__, an .npz's
 * __metadata__ JSON), or NULL: e.g. "checkpoint_sha256", which `run`
 * records. Borrowed, never trusted: reports escape it. */
const char *g2f_fixture_meta(const g2f_fixture *f, const char *key);

#endif
