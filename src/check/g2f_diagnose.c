/* g2f_diagnose: hypothesis search for failing layers; see g2f_diagnose.h. */
#include "g2f_diagnose.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_compare.h"

static const char *const diag_names[] = {
    "gelu_erf",         "gelu_tanh",           "fc_bias_missing",      "proj_bias_missing",
    "residual_included", "weights_from_layer", "weights_f16_rounded", "weights_bf16_rounded",
    "layout_misread",   "nonfinite",           "unexplained",
};
_Static_assert(sizeof diag_names / sizeof diag_names[0] == G2F_DIAG_COUNT, "one name per code");

const char *g2f_diag_name(g2f_diag d) { return (unsigned)d < G2F_DIAG_COUNT ? diag_names[d] : "?"; }

static const char *const misread_names[] = {"", "c_fc", "c_proj", "both"};

void g2f_cause_codes(const g2f_cause *c, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++) {
        if (!(c->codes & (1u << d))) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", diag_names[d]);
        if (used >= n) break;
        if (d == G2F_DIAG_WEIGHTS_FROM_LAYER) used += (size_t)snprintf(buf + used, n - used, ":%ld", c->from_layer);
        if (d == G2F_DIAG_LAYOUT_MISREAD && c->misread > 0 && c->misread < 4)
            used += (size_t)snprintf(buf + used, n - used, ":%s", misread_names[c->misread]);
    }
}

void g2f_cause_words(const g2f_cause *c, char *buf, size_t n) {
    static const char *const words[] = {
        "exact erf GELU (torch F.gelu default, HF 'gelu') instead of the tanh approximation ('gelu_new')",
        "the tanh GELU approximation ('gelu_new') instead of exact erf",
        "no c_fc bias",
        "no c_proj bias",
        "the residual added (out = x + FFN(x))",
        "the weights of layer %ld",
        "weights rounded to float16",
        "weights rounded to bfloat16",
        "Conv1D [in, out] weights read as Linear [out, in] without a transpose (%s)",
        "non-finite values",
        "no known cause",
    };
    _Static_assert(sizeof words / sizeof words[0] == G2F_DIAG_COUNT, "one phrase per code");
    size_t used = 0;
    buf[0] = '\0';
    int first = 1;
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++) {
        if (!(c->codes & (1u << d))) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s", first ? "" : " and ");
        first = 0;
        if (used >= n) break;
        if (d == G2F_DIAG_WEIGHTS_FROM_LAYER)
            used += (size_t)snprintf(buf + used, n - used, words[d], c->from_layer);
        else if (d == G2F_DIAG_LAYOUT_MISREAD)
            used += (size_t)snprintf(buf + used, n - used, words[d],
                                     c->misread == 3 ? "c_fc and c_proj" : misread_names[c->misread & 3]);
        else
            used += (size_t)snprintf(buf + used, n - used, "%s", words[d]);
    }
}

/* A hypothesis: the mutations applied to the computation. */
typedef struct variant {
    int other_gelu, no_fc_bias, no_proj_bias, residual;
    int rounding;    /* 0 none, 1 float16, 2 bfloat16 */
    int misread;     /* bit 1: c_fc, bit 2: c_proj */
    long from_layer; /* -1: the layer's own weights */
} variant;

static const variant plain = {0, 0, 0, 0, 0, 0, -1};

static int variant_size(const variant *v) {
    return (v->other_gelu != 0) + v->no_fc_bias + v->no_proj_bias + v->residual + (v->rounding != 0) +
           (v->misread != 0) + (v->from_layer >= 0);
}

static g2f_cause variant_cause(const variant *v, g2f_gelu asked, double margin) {
    g2f_cause c = {0, v->misread, v->from_layer, margin};
    if (v->other_gelu) c.codes |= 1u << (asked == G2F_GELU_TANH ? G2F_DIAG_GELU_ERF : G2F_DIAG_GELU_TANH);
    if (v->no_fc_bias) c.codes |= 1u << G2F_DIAG_FC_BIAS_MISSING;
    if (v->no_proj_bias) c.codes |= 1u << G2F_DIAG_PROJ_BIAS_MISSING;
    if (v->residual) c.codes |= 1u << G2F_DIAG_RESIDUAL_INCLUDED;
    if (v->rounding == 1) c.codes |= 1u << G2F_DIAG_WEIGHTS_F16_ROUNDED;
    if (v->rounding == 2) c.codes |= 1u << G2F_DIAG_WEIGHTS_BF16_ROUNDED;
    if (v->misread) c.codes |= 1u << G2F_DIAG_LAYOUT_MISREAD;
    if (v->from_layer >= 0) c.codes |= 1u << G2F_DIAG_WEIGHTS_FROM_LAYER;
    return c;
}

typedef struct ctx {
    const g2f_diag_input *in;
    size_t d, h;
    g2f_dtype wdtype;        /* the checkpoint's weight dtype */
    float *rounded_buf[3];   /* rounded copies of the layer's weights, made on first use */
    g2f_ffn_weights rounded[3];
    size_t tried;
    const size_t *sample;    /* screening tokens (ascending) */
    size_t n_sample;
} ctx;

static float round_to(float v, int rounding) {
    return rounding == 1 ? g2f_f16_to_f32(g2f_f32_to_f16(v)) : g2f_bf16_to_f32(g2f_f32_to_bf16(v));
}

static const g2f_ffn_weights *rounded_weights(ctx *c, int rounding, g2f_error *err) {
    if (c->rounded_buf[rounding]) return &c->rounded[rounding];
    const g2f_ffn_weights *w = c->in->w;
    size_t dh = c->d * c->h, total = 2 * dh + c->d + c->h; /* fits: the layer's weights are in memory */
    float *buf = g2f_alloc_work(total, 1, sizeof(float), "diagnosis: a rounded copy of the weights", err);
    if (!buf) return NULL;
    g2f_ffn_weights r = *w;
    float *p = buf;
    for (size_t i = 0; i < dh; i++) p[i] = round_to(w->w_fc[i], rounding);
    r.w_fc = p;
    p += dh;
    for (size_t i = 0; i < dh; i++) p[i] = round_to(w->w_proj[i], rounding);
    r.w_proj = p;
    p += dh;
    if (w->b_fc) {
        for (size_t i = 0; i < c->h; i++) p[i] = round_to(w->b_fc[i], rounding);
        r.b_fc = p;
    }
    p += c->h;
    if (w->b_proj) {
        for (size_t i = 0; i < c->d; i++) p[i] = round_to(w->b_proj[i], rounding);
        r.b_proj = p;
    }
    c->rounded_buf[rounding] = buf;
    c->rounded[rounding] = r;
    return &c->rounded[rounding];
}

static g2f_layout flip(g2f_layout l) { return l == G2F_LAYOUT_CONV1D ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D; }

/* Recomputes the layer under v on the screening sample (screen) or every
 * token; *match is 1 when every compared tensor is within tolerance. base:
 * the weights v starts from (the layer's own, or another layer's). */
static g2f_status evaluate(ctx *c, int screen, const variant *v, const g2f_ffn_weights *base, int *match,
                           double *margin, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    g2f_ffn_weights w = *base;
    double weight_roundoff = 0;
    c->tried++;
    if (v->rounding) {
        g2f_dtype rd = v->rounding == 1 ? G2F_DTYPE_F16 : G2F_DTYPE_BF16;
        if (c->wdtype == rd) {
            /* the checkpoint is already rounded: the reference may have used the
             * originals, which we cannot recover, so widen the tolerance instead */
            weight_roundoff = g2f_dtype_store_roundoff(rd);
        } else {
            const g2f_ffn_weights *r = rounded_weights(c, v->rounding, err);
            if (!r) return err ? err->status : G2F_ERR_NOMEM;
            w = *r;
        }
    }
    if (v->no_fc_bias) w.b_fc = NULL;
    if (v->no_proj_bias) w.b_proj = NULL;
    if (v->misread & 1) w.layout_fc = flip(w.layout_fc);
    if (v->misread & 2) w.layout_proj = flip(w.layout_proj);
    g2f_ffn_how how = {&w, v->other_gelu ? g2f_gelu_other(in->gelu) : in->gelu, v->residual, weight_roundoff};
    g2f_ffn_eval_opts opts = {screen ? c->sample : NULL, screen ? c->n_sample : 0, G2F_EVAL_OTHER_NONE, 0};
    g2f_ffn_eval_result r;
    g2f_status st = g2f_ffn_eval(&how, in->fx, in->layer, in->tol, &opts, in->n_threads, in->ws, &r, err);
    if (st != G2F_OK) return st;
    *match = g2f_ffn_eval_match(&r);
    *margin = g2f_ffn_eval_margin(&r);
    g2f_ffn_eval_result_free(&r);
    return G2F_OK;
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

/* The cheap hypotheses, each a one-mutation variant. */
static size_t cheap_singles(const g2f_ffn_weights *w, variant *out) {
    size_t n = 0;
    variant v = plain;
    v.other_gelu = 1; out[n++] = v; v = plain;
    if (w->b_fc) { v.no_fc_bias = 1; out[n++] = v; v = plain; }
    if (w->b_proj) { v.no_proj_bias = 1; out[n++] = v; v = plain; }
    v.residual = 1; out[n++] = v; v = plain;
    for (int r = 1; r <= 2; r++) { v.rounding = r; out[n++] = v; v = plain; }
    for (int m = 1; m <= 3; m++) { v.misread = m; out[n++] = v; v = plain; }
    return n;
}

/* Combines two single-mutation variants (from different dimensions). */
static int combine(const variant *a, const variant *b, variant *out) {
    if ((a->other_gelu && b->other_gelu) || (a->no_fc_bias && b->no_fc_bias) ||
        (a->no_proj_bias && b->no_proj_bias) || (a->residual && b->residual) || (a->rounding && b->rounding) ||
        (a->misread && b->misread))
        return 0;
    *out = (variant){a->other_gelu | b->other_gelu, a->no_fc_bias | b->no_fc_bias, a->no_proj_bias | b->no_proj_bias,
                     a->residual | b->residual,     a->rounding + b->rounding,     a->misread + b->misread,
                     -1};
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

static g2f_status layer_search(search *s, g2f_error *err) {
    ctx *c = s->c;
    const g2f_diag_input *in = c->in;
    size_t n_layer = g2f_model_get_info(in->model)->n_layer, d = c->d, h = c->h;
    size_t T4 = c->n_sample < 4 ? c->n_sample : 4;
    /* x, out (T4, d), pre, act (T4, h); expected out (T4, d) */
    float *x = g2f_alloc_work(T4, 2 * d + 2 * h, sizeof(float), "diagnosis: the layer search", err);
    double *e = x ? g2f_alloc_work(T4, d, sizeof(double), "diagnosis: the layer search", err) : NULL;
    g2f_status st = G2F_OK;
    if (!x || !e) {
        free(x);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *out = x + T4 * d, *pre = out + T4 * d, *act = pre + T4 * h;
    for (size_t r = 0; r < T4; r++) {
        g2f_tensor_read_f32(in->fx->t[G2F_FX_IN], (uint64_t)c->sample[r] * d, d, x + r * d);
        g2f_tensor_read_f64(in->fx->t[G2F_FX_OUT], (uint64_t)c->sample[r] * d, d, e + r * d);
    }
    for (size_t K = 0; K < n_layer && st == G2F_OK; K++) {
        if (K == in->layer) continue;
        g2f_layer lk;
        if ((st = g2f_model_layer_load(in->model, K, &lk, err)) != G2F_OK) break;
        g2f_ffn_forward(&lk.w, x, T4, in->gelu, pre, act, out, in->n_threads, &in->ws->ffn);
        c->tried++;
        /* another layer's weights give outputs off by O(1); 5% keeps any
         * candidate that the exact evaluation could accept */
        if (rel_rms_error(e, out, T4 * d) < 0.05) {
            variant v = plain;
            v.from_layer = (long)K;
            if ((st = try_variant(s, &v, &lk.w, err)) == G2F_OK) {
                v.other_gelu = 1;
                st = try_variant(s, &v, &lk.w, err);
            }
        }
        g2f_layer_free(&lk);
    }
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

/* Up to 8 indices of counts[i] != 0, "3, 7, 9, ..." plus their number. */
static g2f_status locate(const ctx *c, char *buf, size_t len, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    const g2f_fixture_views *fx = in->fx;
    size_t T = fx->n_tokens, d = c->d, h = c->h;
    g2f_ffn_how how = {in->w, in->gelu, 0, 0.0};
    g2f_ffn_eval_opts opts = {NULL, 0, G2F_EVAL_OTHER_NONE, 1};
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
    const g2f_model_info *mi = g2f_model_get_info(in->model);
    ctx c = {in, mi->n_embd, mi->n_inner, mi->dtype, {0}, {{0}}, 0, NULL, 0};
    size_t T = in->fx->n_tokens, n = T < G2F_DIAG_SAMPLE ? T : G2F_DIAG_SAMPLE;
    size_t sample[G2F_DIAG_SAMPLE];
    for (size_t i = 0; i < n; i++) sample[i] = i * T / n; /* spread over the whole fixture */
    c.sample = sample;
    c.n_sample = n;
    out->sample_tokens = n;
    search s = {&c, out};
    variant singles[16];
    size_t ns = cheap_singles(in->w, singles);
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < ns && st == G2F_OK; i++) st = try_variant(&s, &singles[i], in->w, err);
    if (st == G2F_OK && out->n_causes == 0) st = layer_search(&s, err);
    int pairs = out->n_causes == 0;
    for (size_t i = 0; pairs && i < ns && st == G2F_OK; i++)
        for (size_t j = i + 1; j < ns && st == G2F_OK; j++) {
            variant v;
            if (combine(&singles[i], &singles[j], &v) && variant_size(&v) == 2) st = try_variant(&s, &v, in->w, err);
        }
    /* pairs only run when no single matched, so every cause found is minimal */
    out->undetermined = out->n_causes > 1;
    out->hypotheses_tried = c.tried;
    if (st == G2F_OK && out->n_causes == 0) st = locate(&c, out->where, sizeof out->where, err);
    for (int r = 0; r < 3; r++) free(c.rounded_buf[r]);
    return st;
}
