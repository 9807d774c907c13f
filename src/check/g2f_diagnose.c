/* g2f_diagnose: hypothesis search for failing layers; see g2f_diagnose.h. */
#include "g2f_diagnose.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_compare.h"
#include "g2f_quant.h"

/* Precision paths (a port's arithmetic in lower precision). */
enum { P_NONE, P_TF32, P_F16_MM, P_ACT_F16, P_ACT_BF16, P_AUTO_F16, P_AUTO_BF16, P_COUNT };

/* A hypothesis: the mutations applied to the computation. Each field is a
 * dimension; a pair combines two dimensions. build_how recomputes it. */
typedef struct variant {
    int gelu;        /* -1: the form asked for; else another g2f_gelu */
    int clip;
    int no_fc_bias, no_proj_bias, residual;
    int rounding;    /* weights rounded: 0 none, 1 float16, 2 bfloat16 */
    int misread;     /* bit 1: c_fc, bit 2: c_proj */
    long from_layer; /* -1: the layer's own weights */
    int precision;   /* P_* */
    int quant;       /* a g2f_dtype: G2F_DTYPE_F32 none; a quantized type: the weights as quantized */
    int ln2;         /* in recorded before ln_2 */
} variant;

static const variant plain = {-1, 0, 0, 0, 0, 0, 0, -1, P_NONE, G2F_DTYPE_F32, 0};

struct ctx;
/* The FFN's hypotheses, one entry per code and value, in the order they are
 * tried: the variant field the code sets (to value), the groups no pair may
 * hold twice (one GELU form, one origin of the weights, one precision path,
 * ...), the cause parameter that tells one code's values apart (key), and
 * when it applies (NULL: always). A new code is an entry here plus its
 * recompute in build_how. */
enum { G_GELU = 1, G_CLIP = 2, G_FCB = 4, G_PROJB = 8, G_RES = 16, G_WEIGHTS = 32, G_MISREAD = 64, G_PREC = 128,
       G_LN2 = 256 };
enum { K_NONE, K_MISREAD, K_QUANT, K_GELU };
typedef struct ffn_hyp {
    g2f_diag code;
    size_t field; /* offsetof(variant, an int field) */
    int value;
    unsigned groups;
    int key;
    int (*applies)(const struct ctx *c, int value);
} ffn_hyp;

static int other_gelu(const struct ctx *c, int g);
static int has_fc_bias(const struct ctx *c, int v);
static int has_proj_bias(const struct ctx *c, int v);
static int quant_applies(const struct ctx *c, int q);

#define F(f) offsetof(variant, f)
#define QUANT(q) {G2F_DIAG_WEIGHTS_QUANTIZED, F(quant), q, G_WEIGHTS, K_QUANT, quant_applies}
static const ffn_hyp ffn_hyps[] = {
    {G2F_DIAG_GELU_TANH, F(gelu), G2F_GELU_TANH, G_GELU, K_GELU, other_gelu},
    {G2F_DIAG_GELU_ERF, F(gelu), G2F_GELU_ERF, G_GELU, K_GELU, other_gelu},
    {G2F_DIAG_GELU_SIGMOID, F(gelu), G2F_GELU_SIGMOID, G_GELU, K_GELU, other_gelu},
    {G2F_DIAG_GELU_MLX_APPROX, F(gelu), G2F_GELU_MLX, G_GELU, K_GELU, other_gelu},
    {G2F_DIAG_GELU_F16_TABLE, F(gelu), G2F_GELU_F16_TABLE, G_GELU, K_GELU, other_gelu},
    {G2F_DIAG_GELU_CLIPPED, F(clip), 1, G_CLIP, K_NONE, NULL},
    {G2F_DIAG_FC_BIAS_MISSING, F(no_fc_bias), 1, G_FCB, K_NONE, has_fc_bias},
    {G2F_DIAG_PROJ_BIAS_MISSING, F(no_proj_bias), 1, G_PROJB, K_NONE, has_proj_bias},
    {G2F_DIAG_RESIDUAL_INCLUDED, F(residual), 1, G_RES, K_NONE, NULL},
    {G2F_DIAG_WEIGHTS_F16_ROUNDED, F(rounding), 1, G_WEIGHTS, K_NONE, NULL},
    {G2F_DIAG_WEIGHTS_BF16_ROUNDED, F(rounding), 2, G_WEIGHTS, K_NONE, NULL},
    {G2F_DIAG_LAYOUT_MISREAD, F(misread), 1, G_MISREAD, K_MISREAD, NULL},
    {G2F_DIAG_LAYOUT_MISREAD, F(misread), 2, G_MISREAD, K_MISREAD, NULL},
    {G2F_DIAG_LAYOUT_MISREAD, F(misread), 3, G_MISREAD, K_MISREAD, NULL},
    {G2F_DIAG_TF32_MATMUL, F(precision), P_TF32, G_PREC | G_WEIGHTS, K_NONE, NULL},
    {G2F_DIAG_F16_MATMUL, F(precision), P_F16_MM, G_PREC | G_WEIGHTS, K_NONE, NULL},
    {G2F_DIAG_ACT_F16_ROUNDED, F(precision), P_ACT_F16, G_PREC, K_NONE, NULL},
    {G2F_DIAG_ACT_BF16_ROUNDED, F(precision), P_ACT_BF16, G_PREC, K_NONE, NULL},
    {G2F_DIAG_AUTOCAST_F16, F(precision), P_AUTO_F16, G_PREC | G_WEIGHTS, K_NONE, NULL},
    {G2F_DIAG_AUTOCAST_BF16, F(precision), P_AUTO_BF16, G_PREC | G_WEIGHTS, K_NONE, NULL},
    /* a quantized checkpoint: its own type; a float one: each type ggml writes */
    QUANT(G2F_DTYPE_Q8_0), QUANT(G2F_DTYPE_Q4_0), QUANT(G2F_DTYPE_Q4_1), QUANT(G2F_DTYPE_Q5_0),
    QUANT(G2F_DTYPE_Q5_1), QUANT(G2F_DTYPE_Q4_K), QUANT(G2F_DTYPE_Q5_K), QUANT(G2F_DTYPE_Q6_K),
    {G2F_DIAG_LN2_INPUT_CAPTURED, F(ln2), 1, G_LN2, K_NONE, NULL},
};
#define N_FFN_HYPS (sizeof ffn_hyps / sizeof ffn_hyps[0])

static int field(const variant *v, const ffn_hyp *y) { return *(const int *)((const char *)v + y->field); }
static void set_field(variant *v, const ffn_hyp *y) { *(int *)((char *)v + y->field) = y->value; }
/* Entry y holds in v (a field at plain's value holds no entry). */
static int holds(const variant *v, const ffn_hyp *y) { return field(v, y) == y->value; }

static int variant_size(const variant *v) {
    int n = v->from_layer >= 0;
    for (size_t i = 0; i < N_FFN_HYPS; i++) n += holds(v, &ffn_hyps[i]);
    return n;
}

static unsigned variant_groups(const variant *v) {
    unsigned g = 0;
    for (size_t i = 0; i < N_FFN_HYPS; i++)
        if (holds(v, &ffn_hyps[i])) g |= ffn_hyps[i].groups;
    return g;
}

static g2f_cause variant_cause(const variant *v, g2f_gelu asked, double margin) {
    g2f_cause c = g2f_cause_of(0, G2F_STAGE_MLP);
    c.misread = v->misread, c.from_layer = v->from_layer, c.quant = (g2f_dtype)v->quant, c.asked = asked,
    c.margin = margin;
    for (size_t i = 0; i < N_FFN_HYPS; i++)
        if (holds(v, &ffn_hyps[i])) c.codes |= G2F_DIAG_BIT(ffn_hyps[i].code);
    if (v->from_layer >= 0) c.codes |= G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_FROM_LAYER);
    return c;
}

/* The variant a cause describes (the inverse of variant_cause). */
static variant cause_variant(const g2f_cause *c, g2f_gelu asked) {
    variant v = plain;
    for (size_t i = 0; i < N_FFN_HYPS; i++) {
        const ffn_hyp *y = &ffn_hyps[i];
        int key = y->key == K_MISREAD ? c->misread : y->key == K_QUANT ? (int)c->quant : y->value;
        if ((c->codes & G2F_DIAG_BIT(y->code)) && key == y->value && !(y->key == K_GELU && y->value == (int)asked))
            set_field(&v, y);
    }
    v.from_layer = c->codes & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_FROM_LAYER) ? c->from_layer : -1;
    return v;
}

/* Weight transforms kept once made: rounded or quantized copies. */
enum { WT_F16 = 1, WT_BF16, WT_TF32, WT_F16W, WT_QUANT0, WT_COUNT = WT_QUANT0 + 8 }; /* F16W: biases kept */
static const g2f_dtype quant_types[8] = {G2F_DTYPE_Q8_0, G2F_DTYPE_Q4_0, G2F_DTYPE_Q4_1, G2F_DTYPE_Q5_0,
                                         G2F_DTYPE_Q5_1, G2F_DTYPE_Q4_K, G2F_DTYPE_Q5_K, G2F_DTYPE_Q6_K};

typedef struct ctx {
    const g2f_diag_input *in;
    size_t d, h;
    g2f_dtype wdtype;             /* the checkpoint's weight dtype */
    float *wt_buf[WT_COUNT];      /* transformed copies of the layer's weights, made on first use */
    g2f_ffn_weights wt[WT_COUNT];
    int wt_failed[WT_COUNT];      /* the transform does not apply (shapes not whole blocks) */
    float *wvar;                  /* quantized checkpoint: wvar_fc (d) then wvar_proj (h) */
    int quant_bad;                /* its blocks fail g2f_quant_consistent: then no wvar, and bad_* say where */
    int bad_role;
    uint64_t bad_block;
    char bad_why[200];
    g2f_ln ln2;                   /* the layer's ln_2, loaded on first use */
    int ln2_state;                /* 0 not loaded, 1 loaded, -1 absent */
    size_t tried;
    const size_t *sample;         /* screening tokens (ascending) */
    size_t n_sample;
    float *base_out;              /* (tokens, n_embd): the layer's out computed as asked, made on first use */
} ctx;

/* A context for one layer's diagnosis: its sizes and weight dtype. */
static void ctx_init(ctx *c, const g2f_diag_input *in) {
    const g2f_model_info *mi = g2f_model_get_info(in->model);
    memset(c, 0, sizeof *c);
    c->in = in;
    c->d = mi->n_embd;
    c->h = mi->n_inner;
    c->wdtype = mi->dtype;
}

static void ctx_free(ctx *c) {
    for (int k = 0; k < WT_COUNT; k++) free(c->wt_buf[k]);
    free(c->wvar);
    free(c->base_out);
    g2f_ln_free(&c->ln2);
}

static g2f_layout flip(g2f_layout l) { return l == G2F_LAYOUT_CONV1D ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D; }

/* Quantizes a (rows, cols) weight of layout lay as llama.cpp stores it:
 * Linear [out, in] rows of length in, i.e. rows of a Linear buffer, or the
 * columns of a Conv1D [in, out] one. */
static int quantize_matrix(g2f_dtype q, const float *w, g2f_layout lay, size_t in, size_t out, float *dst) {
    if (lay == G2F_LAYOUT_LINEAR) return g2f_quant_roundtrip(q, w, (uint64_t)in * out, dst);
    return g2f_quant_roundtrip_cols(q, w, in, out, dst);
}

/* The layer's weights under transform k (see WT_*), NULL when it does not
 * apply (*applies 0) or with err set. */
static const g2f_ffn_weights *transformed(ctx *c, int k, int *applies, g2f_error *err) {
    *applies = 1;
    if (c->wt_buf[k]) return &c->wt[k];
    if (c->wt_failed[k]) return *applies = 0, NULL;
    const g2f_ffn_weights *w = c->in->w;
    size_t dh = c->d * c->h, total = 2 * dh + c->d + c->h; /* fits: the layer's weights are in memory */
    float *buf = g2f_alloc_work(total, 1, sizeof(float), "diagnosis: a rounded copy of the weights", err);
    if (!buf) return NULL;
    g2f_ffn_weights r = *w;
    float *p = buf;
    g2f_round rnd = k == WT_F16 || k == WT_F16W ? G2F_ROUND_F16 : k == WT_BF16 ? G2F_ROUND_BF16 : G2F_ROUND_TF32;
    if (k >= WT_QUANT0) {
        g2f_dtype q = quant_types[k - WT_QUANT0];
        if (!quantize_matrix(q, w->w_fc, w->layout_fc, c->d, c->h, p) ||
            !quantize_matrix(q, w->w_proj, w->layout_proj, c->h, c->d, p + dh)) {
            free(buf);
            c->wt_failed[k] = 1;
            return *applies = 0, NULL;
        }
    } else {
        g2f_round_span(rnd, w->w_fc, p, dh);
        g2f_round_span(rnd, w->w_proj, p + dh, dh);
    }
    r.w_fc = p;
    r.w_proj = p + dh;
    p += 2 * dh;
    /* biases: float32 in llama.cpp and in a TF32 matmul (added after the
     * product); rounded with the weights otherwise (autocast casts them) */
    int keep_bias = k >= WT_QUANT0 || k == WT_TF32 || k == WT_F16W; /* ggml's F16 path adds float32 biases */
    if (w->b_fc) {
        if (keep_bias) memcpy(p, w->b_fc, c->h * sizeof(float));
        else g2f_round_span(rnd, w->b_fc, p, c->h);
        r.b_fc = p;
    }
    p += c->h;
    if (w->b_proj) {
        if (keep_bias) memcpy(p, w->b_proj, c->d * sizeof(float));
        else g2f_round_span(rnd, w->b_proj, p, c->d);
        r.b_proj = p;
    }
    c->wt_buf[k] = buf;
    c->wt[k] = r;
    return &c->wt[k];
}

/* A ggml-quantized checkpoint: per input index, the largest variance of the
 * weights' quantization error over the outputs (bound^2 / 3, an error
 * uniform within its bound), for c_fc (n_embd) and c_proj (n_inner). */
static g2f_status quant_variances(ctx *c, g2f_error *err) {
    if (c->wvar || c->quant_bad) return G2F_OK;
    const g2f_diag_input *in = c->in;
    const g2f_tensor *src[2] = {in->lw->src[G2F_FFN_FC_W], in->lw->src[G2F_FFN_PROJ_W]};
    /* a bound is the file's own word: used only for blocks ggml's reference
     * quantizer can have written (a forged scale would set the tolerance) */
    for (int m = 0; m < 2; m++) {
        const g2f_quant_info *qi = src[m] ? g2f_quant_info_of(src[m]->dtype) : NULL;
        if (qi && !g2f_quant_consistent(src[m]->dtype, src[m]->data, 0, src[m]->numel / qi->block, &c->bad_block,
                                        c->bad_why, sizeof c->bad_why)) {
            c->quant_bad = 1;
            c->bad_role = m == 0 ? G2F_FFN_FC_W : G2F_FFN_PROJ_W;
            return G2F_OK;
        }
    }
    size_t ins[2] = {c->d, c->h}, outs[2] = {c->h, c->d}, dh = c->d * c->h;
    float *var = g2f_alloc_work(c->d + c->h, 1, sizeof(float), "diagnosis: quantization variances", err);
    float *bound = var ? g2f_alloc_work(dh, 1, sizeof(float), "diagnosis: quantization bounds", err) : NULL;
    if (!bound) {
        free(var);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *vp = var;
    for (int m = 0; m < 2; m++) {
        g2f_layout lay = m == 0 ? in->w->layout_fc : in->w->layout_proj;
        memset(vp, 0, ins[m] * sizeof(float));
        if (src[m] && g2f_dtype_is_quant(src[m]->dtype)) {
            g2f_quant_bounds(src[m]->dtype, src[m]->data, 0, dh, NULL, bound);
            for (size_t a = 0; a < ins[m]; a++)
                for (size_t b = 0; b < outs[m]; b++) {
                    float e = lay == G2F_LAYOUT_LINEAR ? bound[b * ins[m] + a] : bound[a * outs[m] + b];
                    float v = e * e / 3.0f;
                    if (v > vp[a]) vp[a] = v;
                }
        }
        vp += ins[m];
    }
    free(bound);
    c->wvar = var;
    return G2F_OK;
}

static const g2f_ln *layer_ln2(ctx *c, g2f_error *err, g2f_status *st) {
    if (c->ln2_state == 0) {
        *st = g2f_model_ln_load(c->in->model, 2, c->in->layer, &c->ln2, err);
        if (*st != G2F_OK) return NULL;
        c->ln2_state = c->ln2.found ? 1 : -1;
    }
    return c->ln2_state > 0 ? &c->ln2 : NULL;
}

/* Builds the computation of v from base (the layer's own weights or
 * another layer's): *w receives the weights to use (pointers into c's
 * copies or base). *applies 0 when v cannot be computed here. */
static g2f_status build_how(ctx *c, const variant *v, const g2f_ffn_weights *base, g2f_ffn_how *how,
                            g2f_ffn_weights *w, int *applies, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    *applies = 1;
    *w = *base;
    memset(how, 0, sizeof *how);
    how->w = w;
    how->gelu = v->gelu >= 0 ? (g2f_gelu)v->gelu : in->gelu;
    how->residual = v->residual;
    how->clip = v->clip;
    int wt = 0; /* the weights' transform */
    g2f_dtype rd = G2F_DTYPE_F32;
    if (v->rounding) wt = v->rounding == 1 ? WT_F16 : WT_BF16, rd = v->rounding == 1 ? G2F_DTYPE_F16 : G2F_DTYPE_BF16;
    switch (v->precision) {
    case P_TF32: wt = WT_TF32, how->gemm_in = G2F_ROUND_TF32; break;
    case P_F16_MM: /* an F16 checkpoint's weights are ggml's own: nothing to round then */
        wt = c->wdtype == G2F_DTYPE_F16 ? 0 : WT_F16W, how->gemm_in = G2F_ROUND_F16;
        break;
    case P_ACT_F16: how->store = G2F_ROUND_F16; break;
    case P_ACT_BF16: how->store = G2F_ROUND_BF16; break;
    case P_AUTO_F16:
        wt = WT_F16, rd = G2F_DTYPE_F16;
        how->gemm_in = how->store = how->out_round = G2F_ROUND_F16;
        break;
    case P_AUTO_BF16:
        wt = WT_BF16, rd = G2F_DTYPE_BF16;
        how->gemm_in = how->store = how->out_round = G2F_ROUND_BF16;
        break;
    default: break;
    }
    if (v->quant != G2F_DTYPE_F32) {
        if (g2f_dtype_is_quant(c->wdtype)) {
            /* the checkpoint is the quantized side: the reference used the
             * originals, which we cannot recover, so widen the tolerance */
            if ((int)c->wdtype != v->quant) return *applies = 0, G2F_OK;
            g2f_status st = quant_variances(c, err);
            if (st != G2F_OK) return st;
            if (c->quant_bad) return *applies = 0, G2F_OK;
            how->wvar_fc = c->wvar;
            how->wvar_proj = c->wvar + c->d;
        } else {
            for (int k = 0; k < 8; k++)
                if ((int)quant_types[k] == v->quant) wt = WT_QUANT0 + k;
        }
    }
    if (wt && rd != G2F_DTYPE_F32 && c->wdtype == rd) {
        /* the checkpoint is already rounded: the reference may have used the
         * originals, which we cannot recover, so widen the tolerance instead */
        how->weight_roundoff = g2f_dtype_store_roundoff(rd);
        wt = 0;
    }
    if (wt && base == in->w) {
        int ok;
        const g2f_ffn_weights *r = transformed(c, wt, &ok, err);
        if (!ok) return *applies = 0, G2F_OK;
        if (!r) return err ? err->status : G2F_ERR_NOMEM;
        *w = *r;
    } else if (wt) {
        return *applies = 0, G2F_OK; /* another layer's weights are not transformed as well */
    }
    if (v->no_fc_bias) w->b_fc = NULL;
    if (v->no_proj_bias) w->b_proj = NULL;
    if (v->misread & 1) w->layout_fc = flip(w->layout_fc);
    if (v->misread & 2) w->layout_proj = flip(w->layout_proj);
    if (v->ln2) {
        g2f_status st = G2F_OK;
        how->ln = layer_ln2(c, err, &st);
        if (st != G2F_OK) return st;
        if (!how->ln) *applies = 0;
    }
    return G2F_OK;
}

/* Recomputes the layer under v on the screening sample (screen) or every
 * token; *match is 1 when every compared tensor is within tolerance. */
/* Rounded weights, a lower-precision path, quantized weights, ggml's float16 GELU table: their
 * tolerances are wide (a float16 or bfloat16 step of every product), wide enough to take a wrong
 * scale of the output, which their rounding noise, of either sign, does not make. */
static int lower_precision(const variant *v) {
    return v->rounding || v->precision != P_NONE || v->quant != G2F_DTYPE_F32 || v->gelu == G2F_GELU_F16_TABLE;
}

/* Whether a compared tensor's error runs along its values by more than lambda standard deviations
 * (g2f_cmp.trend; the deviation each tolerance stands for: a bound on the noise, so an actual
 * rounding difference stays well inside, 1.5 at most on the bundled fixtures). Only the
 * lower-precision hypotheses are held to it: elsewhere the float32 errors of one LayerNorm row
 * share a factor, and that is a trend too. */
static int trended(const g2f_ffn_eval_result *r, double lambda) {
    return fabs(r->out.trend) > lambda || (r->has_pre && fabs(r->pre.trend) > lambda) ||
           (r->has_act && fabs(r->act.trend) > lambda);
}

/* Whether out's error holds more than twice the noise that the computation's rounding model
 * allows (g2f_ffn_eval_result.noise_var: the variance each tolerance stands for, a bound per
 * element, so a true hypothesis leaves less: at most 0.36 of it on the bundled fixtures' named
 * causes; twice, as a token's errors share its inputs). A lower-precision hypothesis's tolerance
 * is wide enough to take a real bug element by element (an F16 reference from a port with float16
 * matmuls and one hidden unit off passed as tf32_matmul at margin 0.83), but the bug's error, on
 * every element at once, is noise of the wrong size (4.6 times the model's there). Held against a
 * hypothesis only where it does not reproduce most of the error (moves_closer): a few rounding
 * flips, each a whole step, make the noise of a true one heavy-tailed (2.1-2.4 times the model's
 * for TF32 matmuls on 64-token F32 references, where the hypothesis removes all but 0.03% of the
 * squared error). */
static int too_noisy(const g2f_ffn_eval_result *r) { return !(r->noise_err <= 2 * r->noise_var); }

/* out computed under v from weights base on the sample (screen) or every token, into a new
 * (tokens, n_embd) buffer *out (rows by token; the others unset); *out NULL when v does not apply
 * here. */
static g2f_status computed_out(ctx *c, int screen, const variant *v, const g2f_ffn_weights *base, float **out,
                               g2f_error *err) {
    const g2f_diag_input *in = c->in;
    g2f_ffn_how how;
    g2f_ffn_weights w;
    int applies;
    *out = NULL;
    g2f_status st = build_how(c, v, base, &how, &w, &applies, err);
    if (st != G2F_OK) return st;
    if (!applies) return G2F_OK;
    float *keep = g2f_alloc_work(in->fx->n_tokens, c->d, sizeof(float), "diagnosis: an out to compare with", err);
    if (!keep) return err ? err->status : G2F_ERR_NOMEM;
    g2f_ffn_eval_opts opts = {screen ? c->sample : NULL, screen ? c->n_sample : 0, G2F_EVAL_OTHER_NONE, 0, 0, 0,
                              NULL, keep, NULL};
    g2f_ffn_eval_result r;
    st = g2f_ffn_eval(&how, in->fx, in->layer, in->tol, &opts, in->n_threads, in->ws, &r, err);
    if (st != G2F_OK) {
        free(keep);
        return st;
    }
    g2f_ffn_eval_result_free(&r);
    *out = keep;
    return G2F_OK;
}

/* v without its lower-precision part `part` (0 rounded weights, 1 a precision path, 2 quantized
 * weights, 3 ggml's float16 GELU table) into *b; 0 when v has no such part. */
static int without_part(const variant *v, int part, variant *b) {
    *b = *v;
    switch (part) {
    case 0: b->rounding = 0; return v->rounding != 0;
    case 1: b->precision = P_NONE; return v->precision != P_NONE;
    case 2: b->quant = G2F_DTYPE_F32; return v->quant != G2F_DTYPE_F32;
    default: b->gelu = plain.gelu; return v->gelu == G2F_GELU_F16_TABLE;
    }
}

/* A precision path that rounds two things, each a hypothesis of its own: v with only its weights'
 * rounding, and (autocast) with only its activations' into subs; how many. The path must move out
 * closer than each of them: the half that is true carries it otherwise (F16 weights with an output
 * channel off were autocast_f16, the weights' rounding carrying the test and the activations'
 * tolerance taking the channel). */
static int precision_halves(const variant *v, variant subs[2]) {
    int weights = v->precision == P_AUTO_F16 || v->precision == P_F16_MM ? 1 : v->precision == P_AUTO_BF16 ? 2 : 0;
    int act = v->precision == P_AUTO_F16 ? P_ACT_F16 : v->precision == P_AUTO_BF16 ? P_ACT_BF16 : P_NONE;
    if (!weights || v->rounding) return 0;
    subs[0] = *v, subs[0].precision = P_NONE, subs[0].rounding = weights;
    if (act == P_NONE) return 1;
    subs[1] = *v, subs[1].precision = act;
    return 2;
}

/* Whether how (v's computation) moves out towards the reference from what bv computes (the test
 * below), on the sample (screen) or every token. */
static g2f_status closer_than(ctx *c, int screen, const variant *bv, const g2f_ffn_weights *base,
                              const g2f_ffn_how *how, int noisy, int *ok, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    float *own = NULL;
    const float *b;
    g2f_status st;
    if (variant_size(bv) == 0) { /* the layer as asked: made once, on every token */
        if (!c->base_out && (st = computed_out(c, 0, &plain, in->w, &c->base_out, err)) != G2F_OK) return st;
        b = c->base_out;
    } else {
        if ((st = computed_out(c, screen, bv, base, &own, err)) != G2F_OK) return st;
        if (!own) return *ok = 0, G2F_OK; /* nothing to move closer from: not shown */
        b = own;
    }
    g2f_ffn_eval_opts opts = {screen ? c->sample : NULL, screen ? c->n_sample : 0, G2F_EVAL_OTHER_NONE, 0, 0, 0,
                              NULL, NULL, b};
    g2f_ffn_eval_result r;
    st = g2f_ffn_eval(how, in->fx, in->layer, in->tol, &opts, in->n_threads, in->ws, &r, err);
    free(own);
    if (st != G2F_OK) return st;
    double fall = -2 * r.base_de - r.base_dd;
    *ok = r.base_dd == 0 ? !noisy : fall > 0 && (fall >= 0.75 * r.base_ee || (-r.base_de > 3 * sqrt(r.base_dde) && !noisy));
    g2f_ffn_eval_result_free(&r);
    return G2F_OK;
}

/* A lower-precision hypothesis v that changes the computed values (its roundings recomputed, not
 * only a tolerance widened) must move out towards the reference, by each of its lower-precision
 * parts: from what v computes without that part (the layer as asked, or the pair's other half). A
 * true part reproduces the port's roundings, all but a few flips, so its change delta cancels that
 * computation's error E (sum delta E near -sum delta^2), while a false one adds its own roundings,
 * independent of E, to whatever the real bug left, and passes only on its wide tolerance (an F16
 * reference with one output channel off by 0.01 was named act_bf16_rounded | autocast_f16; one
 * hidden unit off, gelu_erf with act_f16_rounded; a missing bias with it, that bias with
 * autocast_bf16, the bias's own fix carrying the test; F16 weights with it, gelu_f16_table with
 * f16_matmul, the weights' rounding carrying it). So delta must lean against E by more than 3
 * deviations of chance (sum delta E, independent of E, has deviation sqrt(sum delta^2 E^2); 0.13%
 * one-sided), or remove at least 3/4 of the squared error (an error on a few elements,
 * reproduced: too few for the deviation to say), and the squared error must fall (by
 * -2 sum delta E - sum delta^2). Where delta leans significantly but removes less than 3/4, the
 * hypothesis explains only a part, its tolerance perhaps the rest: it must also leave no more
 * noise than its rounding allows (noisy: too_noisy). Values left as they were (weights the
 * checkpoint already holds rounded: a tolerance widened only) have delta 0: held to the noise
 * alone. */
static g2f_status moves_closer(ctx *c, int screen, const variant *v, const g2f_ffn_weights *base,
                               const g2f_ffn_how *how, int noisy, int *ok, g2f_error *err) {
    g2f_status st = G2F_OK;
    *ok = 1;
    for (int part = 0; part < 4 && *ok && st == G2F_OK; part++) {
        variant bv;
        if (without_part(v, part, &bv)) st = closer_than(c, screen, &bv, base, how, noisy, ok, err);
    }
    variant subs[2];
    for (int k = 0, n = precision_halves(v, subs); k < n && *ok && st == G2F_OK; k++)
        st = closer_than(c, screen, &subs[k], base, how, noisy, ok, err);
    return st;
}

static g2f_status evaluate(ctx *c, int screen, const variant *v, const g2f_ffn_weights *base, int *match,
                           double *margin, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    g2f_ffn_how how;
    g2f_ffn_weights w;
    int applies;
    *match = 0;
    *margin = INFINITY;
    g2f_status st = build_how(c, v, base, &how, &w, &applies, err);
    if (st != G2F_OK || !applies) return st;
    c->tried++;
    g2f_ffn_eval_opts opts = {screen ? c->sample : NULL, screen ? c->n_sample : 0, G2F_EVAL_OTHER_NONE, 0, 0, 0, NULL, NULL, NULL};
    g2f_ffn_eval_result r;
    st = g2f_ffn_eval(&how, in->fx, in->layer, in->tol, &opts, in->n_threads, in->ws, &r, err);
    if (st != G2F_OK) return st;
    *match = g2f_ffn_eval_match(&r);
    *margin = g2f_ffn_eval_margin(&r);
    if (*match && lower_precision(v)) *match = !trended(&r, g2f_tol_lambda(in->tol));
    int noisy = too_noisy(&r);
    g2f_ffn_eval_result_free(&r);
    if (*match && lower_precision(v)) st = moves_closer(c, screen, v, base, &how, noisy, match, err);
    return st;
}

typedef struct search {
    ctx *c;
    g2f_diag_result *res;
} search;

/* Screens v on the sample, confirms it on every token, records a match. */
static g2f_status try_variant(search *s, const variant *v, const g2f_ffn_weights *base, g2f_error *err) {
    int match;
    double margin;
    g2f_status st = evaluate(s->c, 1, v, base, &match, &margin, err);
    if (st != G2F_OK || !match) return st;
    if (s->c->n_sample < s->c->in->fx->n_tokens && (st = evaluate(s->c, 0, v, base, &match, &margin, err)) != G2F_OK)
        return st;
    if (match && s->res->n_causes < G2F_DIAG_MAX_CAUSES)
        s->res->causes[s->res->n_causes++] = variant_cause(v, s->c->in->gelu, margin);
    return G2F_OK;
}

static int other_gelu(const ctx *c, int g) { return g != (int)c->in->gelu; }
static int has_fc_bias(const ctx *c, int v) { return (void)v, c->in->w->b_fc != NULL; }
static int has_proj_bias(const ctx *c, int v) { return (void)v, c->in->w->b_proj != NULL; }
/* a quantized checkpoint: its own type only; a float one: every type */
static int quant_applies(const ctx *c, int q) { return g2f_dtype_is_quant(c->wdtype) ? q == (int)c->wdtype : 1; }

/* The cheap hypotheses, each a one-mutation variant: the table's entries
 * that apply. */
static size_t cheap_singles(const ctx *c, variant *out) {
    size_t n = 0;
    for (size_t i = 0; i < N_FFN_HYPS; i++) {
        const ffn_hyp *y = &ffn_hyps[i];
        if (y->applies && !y->applies(c, y->value)) continue;
        out[n] = plain;
        set_field(&out[n++], y);
    }
    return n;
}

/* Combines two single-mutation variants from different dimensions that can
 * hold together (no group twice: the weights have one origin, ...). */
static int combine(const variant *a, const variant *b, variant *out) {
    if (variant_groups(a) & variant_groups(b)) return 0;
    *out = *a;
    for (size_t i = 0; i < N_FFN_HYPS; i++)
        if (holds(b, &ffn_hyps[i])) set_field(out, &ffn_hyps[i]);
    out->from_layer = -1;
    return 1;
}

static double rel_rms_error(const double *e, const float *c, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += (c[i] - e[i]) * (c[i] - e[i]);
        den += e[i] * e[i];
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

/* The layer search's screen: x, its expected out e (T4 rows of the
 * sample), and buffers for pre, act, out. */
typedef struct layer_screen {
    search *s;
    const float *x;
    const double *e;
    float *pre, *act, *out;
    size_t T4;
} layer_screen;

/* Layer K's weights on the screen; a candidate is tried in both GELU
 * forms. Every layer is tried (stop untouched): each that fits is a cause. */
static g2f_status screen_layer(void *u, size_t K, int *stop, g2f_error *err) {
    layer_screen *ls = u;
    search *s = ls->s;
    ctx *c = s->c;
    const g2f_diag_input *in = c->in;
    g2f_layer lk;
    (void)stop;
    g2f_status st = g2f_model_layer_load(in->model, K, &lk, err);
    if (st != G2F_OK) return st;
    g2f_ffn_forward(&lk.w, ls->x, ls->T4, in->gelu, ls->pre, ls->act, ls->out, in->n_threads, &in->ws->ffn);
    c->tried++;
    /* another layer's weights give outputs off by O(1); 5% keeps any
     * candidate that the exact evaluation could accept */
    if (rel_rms_error(ls->e, ls->out, ls->T4 * c->d) < 0.05) {
        variant v = plain;
        v.from_layer = (long)K;
        size_t found = s->res->n_causes;
        /* with the other GELU form only when alone it does not fit: the smaller explanation wins
         * (an F16 reference that cannot tell the forms apart had both, "undetermined") */
        if ((st = try_variant(s, &v, &lk.w, err)) == G2F_OK && s->res->n_causes == found) {
            v.gelu = (int)g2f_gelu_other(in->gelu);
            st = try_variant(s, &v, &lk.w, err);
        }
    }
    g2f_layer_free(&lk);
    return st;
}

static g2f_status layer_search(search *s, g2f_error *err) {
    ctx *c = s->c;
    const g2f_diag_input *in = c->in;
    size_t n_layer = g2f_model_get_info(in->model)->n_layer, d = c->d, h = c->h;
    size_t T4 = c->n_sample < 4 ? c->n_sample : 4;
    /* x, out (T4, d), pre, act (T4, h); expected out (T4, d) */
    float *x = g2f_alloc_work(T4, 2 * d + 2 * h, sizeof(float), "diagnosis: the layer search", err);
    double *e = x ? g2f_alloc_work(T4, d, sizeof(double), "diagnosis: the layer search", err) : NULL;
    if (!x || !e) {
        free(x);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *out = x + T4 * d, *pre = out + T4 * d, *act = pre + T4 * h;
    for (size_t r = 0; r < T4; r++) {
        g2f_tensor_read_f32(in->fx->t[G2F_ACT_MLP_IN], (uint64_t)c->sample[r] * d, d, x + r * d);
        g2f_tensor_read_f64(in->fx->t[G2F_ACT_MLP_OUT], (uint64_t)c->sample[r] * d, d, e + r * d);
    }
    layer_screen ls = {s, x, e, pre, act, out, T4};
    g2f_status st = g2f_search_other_layers(n_layer, in->layer, screen_layer, &ls, err);
    free(x);
    free(e);
    return st;
}

/* Up to 8 indices of flagged[i] != 0, "3, 7, 9, ..." plus the count. */
static void list_flags(const size_t *counts, size_t n, char *buf, size_t len, size_t *flagged) {
    size_t shown = 0, used = 0;
    *flagged = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!counts[i]) continue;
        if (shown < 8 && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%zu", shown ? ", " : "", i), shown++;
        (*flagged)++;
    }
    if (*flagged > shown && used < len) snprintf(buf + used, len - used, ", ...");
}

/* Where the error lives, for a layer nothing explains. */
static g2f_status locate(const ctx *c, char *buf, size_t len, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    const g2f_fixture_views *fx = in->fx;
    size_t T = fx->n_tokens, d = c->d, h = c->h;
    g2f_ffn_how how;
    memset(&how, 0, sizeof how);
    how.w = in->w;
    how.gelu = in->gelu;
    g2f_ffn_eval_opts opts = {NULL, 0, G2F_EVAL_OTHER_NONE, 1, 0, 0, NULL, NULL, NULL};
    g2f_ffn_eval_result r;
    g2f_status st = g2f_ffn_eval(&how, fx, in->layer, in->tol, &opts, in->n_threads, in->ws, &r, err);
    if (st != G2F_OK) return st;
    const g2f_ffn_profile *pf = &r.profile;
    char tl[96], cl[96];
    size_t nc, used = 0;
    tl[0] = '\0';
    for (size_t i = 0; i < pf->tokens_flagged && i < 8; i++)
        used += (size_t)snprintf(tl + used, sizeof tl - used, "%s%zu", i ? ", " : "", pf->first_flagged[i]);
    if (pf->tokens_flagged > 8 && used < sizeof tl) snprintf(tl + used, sizeof tl - used, ", ...");
    list_flags(pf->col_out, d, cl, sizeof cl, &nc);
    used = (size_t)snprintf(buf, len, "out differs in %zu of %zu tokens (%s) and %zu of %zu output channels (%s)",
                            pf->tokens_flagged, T, tl, nc, d, cl);
    if (used >= len) goto done;
    if (pf->col_pre) {
        list_flags(pf->col_pre, h, cl, sizeof cl, &nc);
        if (nc) {
            snprintf(buf + used, len - used, "; first divergence at c_fc: %zu of %zu hidden units (%s)", nc, h, cl);
            goto done;
        }
    }
    if (pf->col_act) {
        list_flags(pf->col_act, h, cl, sizeof cl, &nc);
        if (nc) {
            snprintf(buf + used, len - used, "; c_fc matches%s, first divergence at the activation: %zu of %zu hidden units (%s)",
                     pf->col_pre ? "" : " (not in the fixture)", nc, h, cl);
            goto done;
        }
    }
    if (pf->col_pre || pf->col_act)
        snprintf(buf + used, len - used, "; %s match, so the divergence is in c_proj",
                 pf->col_pre && pf->col_act ? "c_fc and the activation" : pf->col_pre ? "c_fc" : "the activation");
    else
        snprintf(buf + used, len - used, "; the fixture has no pre/act to tell which stage diverges");
done:
    g2f_ffn_eval_result_free(&r);
    return G2F_OK;
}

g2f_status g2f_diagnose_layer(const g2f_diag_input *in, g2f_diag_result *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    ctx c;
    ctx_init(&c, in);
    size_t T = in->fx->n_tokens, n = T < G2F_DIAG_SAMPLE ? T : G2F_DIAG_SAMPLE;
    size_t sample[G2F_DIAG_SAMPLE];
    for (size_t i = 0; i < n; i++) sample[i] = i * T / n; /* spread over the whole fixture */
    c.sample = sample;
    c.n_sample = n;
    out->sample_tokens = n;
    search s = {&c, out};
    variant singles[40];
    size_t ns = cheap_singles(&c, singles);
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < ns && st == G2F_OK; i++) st = try_variant(&s, &singles[i], in->w, err);
    if (st == G2F_OK && out->n_causes == 0) st = layer_search(&s, err);
    int pairs = out->n_causes == 0;
    for (size_t i = 0; pairs && i < ns && st == G2F_OK; i++)
        for (size_t j = i + 1; j < ns && st == G2F_OK; j++) {
            variant v;
            if (combine(&singles[i], &singles[j], &v) && variant_size(&v) == 2) st = try_variant(&s, &v, in->w, err);
        }
    /* pairs only run when no single matched, so every cause found is minimal;
     * autocast rounds the weights and the activations: when rounding one of
     * them alone already explains the layer, autocast is not the smaller
     * explanation */
    for (size_t i = 0; i < out->n_causes; i++) {
        g2f_diag_set a = out->causes[i].codes;
        g2f_diag_set sub = a == G2F_DIAG_BIT(G2F_DIAG_AUTOCAST_F16)
                               ? G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED) | G2F_DIAG_BIT(G2F_DIAG_ACT_F16_ROUNDED)
                           : a == G2F_DIAG_BIT(G2F_DIAG_AUTOCAST_BF16)
                               ? G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_BF16_ROUNDED) | G2F_DIAG_BIT(G2F_DIAG_ACT_BF16_ROUNDED)
                               : 0;
        int simpler = 0;
        for (size_t j = 0; sub && j < out->n_causes; j++) simpler |= j != i && (out->causes[j].codes & sub) &&
                                                               !(out->causes[j].codes & ~sub);
        if (simpler) {
            memmove(&out->causes[i], &out->causes[i + 1], (out->n_causes - i - 1) * sizeof out->causes[0]);
            out->n_causes--;
            i--;
        }
    }
    if (out->n_causes == 0 && c.quant_bad) { /* nothing explains it, and the quantization cannot be judged */
        g2f_cause q = g2f_cause_of(G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT), G2F_STAGE_MLP);
        q.quant = c.wdtype, q.asked = in->gelu, q.margin = INFINITY, q.quant_role = c.bad_role,
        q.quant_block = c.bad_block;
        out->causes[0] = q;
        out->n_causes = 1;
        snprintf(out->quant_why, sizeof out->quant_why, "%s", c.bad_why);
    }
    out->undetermined = out->n_causes > 1;
    out->hypotheses_tried = c.tried;
    if (st == G2F_OK && out->n_causes == 0) st = locate(&c, out->where, sizeof out->where, err);
    ctx_free(&c);
    return st;
}

g2f_status g2f_diag_how_of(const g2f_diag_input *in, const g2f_cause *cause, g2f_ffn_how *how, g2f_ffn_weights *w,
                           float **owned, g2f_ln *ln, g2f_error *err) {
    ctx c;
    ctx_init(&c, in);
    *owned = NULL;
    memset(ln, 0, sizeof *ln);
    variant v = cause_variant(cause, in->gelu);
    int applies;
    g2f_status st = build_how(&c, &v, in->w, how, w, &applies, err);
    if (st == G2F_OK && !applies)
        st = g2f_error_set(err, G2F_ERR_USAGE, "layer %zu: the cause cannot be recomputed", in->layer);
    if (st != G2F_OK) {
        ctx_free(&c);
        return st;
    }
    /* hand the copies the computation points into to the caller */
    for (int k = 0; k < WT_COUNT; k++)
        if (c.wt_buf[k] && w->w_fc == c.wt[k].w_fc) *owned = c.wt_buf[k], c.wt_buf[k] = NULL;
    if (c.wvar) { /* one owned block at most: rounded weights and variances do not go together */
        if (*owned) free(*owned);
        *owned = c.wvar;
        c.wvar = NULL;
    }
    if (how->ln) {
        *ln = c.ln2;
        memset(&c.ln2, 0, sizeof c.ln2);
        how->ln = ln;
    }
    ctx_free(&c);
    return G2F_OK;
}
