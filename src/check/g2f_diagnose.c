/* g2f_diagnose: hypothesis search for failing layers; see g2f_diagnose.h. */
#include "g2f_diagnose.h"

#include <math.h>
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

/* A set of tokens: the whole fixture layer or a gathered sample. */
typedef struct tokens {
    size_t T;
    const float *x;
    const double *out, *pre, *act;
} tokens;

typedef struct ctx {
    const g2f_diag_input *in;
    size_t d, h;
    g2f_dtype wdtype;        /* the checkpoint's weight dtype */
    float *rounded_buf[3];   /* rounded copies of the layer's weights, made on first use */
    g2f_ffn_weights rounded[3];
    size_t tried;
} ctx;

static float round_to(float v, int rounding) {
    return rounding == 1 ? g2f_f16_to_f32(g2f_f32_to_f16(v)) : g2f_bf16_to_f32(g2f_f32_to_bf16(v));
}

static const g2f_ffn_weights *rounded_weights(ctx *c, int rounding, g2f_error *err) {
    if (c->rounded_buf[rounding]) return &c->rounded[rounding];
    const g2f_ffn_weights *w = c->in->w;
    size_t dh = c->d * c->h, total = 2 * dh + c->d + c->h;
    float *buf = g2f_alloc_array(total, sizeof(float));
    if (!buf) {
        g2f_error_set(err, G2F_ERR_NOMEM, "diagnosis: cannot allocate a rounded copy of layer %zu", c->in->layer);
        return NULL;
    }
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

/* Recomputes the layer under v on toks; *match is 1 when every compared
 * tensor is within tolerance. base: the weights v starts from (the layer's
 * own, or another layer's for from_layer). */
static g2f_status evaluate(ctx *c, const tokens *toks, const variant *v, const g2f_ffn_weights *base,
                           const g2f_tol_squares *sq, int *match, double *margin, g2f_error *err) {
    const g2f_diag_input *in = c->in;
    const g2f_fixture_layer *fx = in->fx;
    size_t T = toks->T, d = c->d, h = c->h;
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
            if (!r) return G2F_ERR_NOMEM;
            w = *r;
        }
    }
    if (v->no_fc_bias) w.b_fc = NULL;
    if (v->no_proj_bias) w.b_proj = NULL;
    if (v->misread & 1) w.layout_fc = flip(w.layout_fc);
    if (v->misread & 2) w.layout_proj = flip(w.layout_proj);
    g2f_gelu g = v->other_gelu ? g2f_gelu_other(in->gelu) : in->gelu;

    /* one block: pre, act, tpre, tact (T, h), out, tout (T, d); T x (4 h + 2 d)
     * fits, since verify's buffers for the layer (T x (5 h + 3 d)) did */
    float *pre = g2f_alloc_work(T, 4 * h + 2 * d, sizeof(float), "diagnosis: the work buffers", err);
    float *act = pre ? pre + T * h : NULL, *tpre = act ? act + T * h : NULL, *tact = tpre ? tpre + T * h : NULL;
    float *out = tact ? tact + T * h : NULL, *tout = out ? out + T * d : NULL;
    g2f_status st = G2F_OK;
    if (!pre) return err ? err->status : G2F_ERR_NOMEM;
    g2f_ffn_forward(&w, toks->x, T, g, pre, act, out, in->n_threads, in->ws);
    g2f_tol_request tr = {&w, toks->x, T, pre, act, out, toks->out, toks->pre, toks->act,
                          fx->dtype[G2F_FX_IN], fx->dtype[G2F_FX_OUT], fx->dtype[G2F_FX_PRE], fx->dtype[G2F_FX_ACT],
                          weight_roundoff, sq, in->ws};
    if ((st = g2f_tol_compute(&tr, in->tol, tout, tpre, tact, in->n_threads, err)) != G2F_OK) goto done;
    if (v->residual) {
        for (size_t i = 0; i < T * d; i++) {
            out[i] += toks->x[i];
            tout[i] += (float)(ldexp(1.0, -24) * fabs(out[i])); /* the add's own rounding */
        }
    }
    g2f_cmp co, cp, ca;
    g2f_compare(toks->out, out, tout, T * d, &co);
    *match = co.mismatched == 0;
    *margin = co.margin;
    if (toks->pre) {
        g2f_compare(toks->pre, pre, tpre, T * h, &cp);
        *match &= cp.mismatched == 0;
        if (cp.margin > *margin) *margin = cp.margin;
    }
    if (toks->act) {
        g2f_compare(toks->act, act, tact, T * h, &ca);
        *match &= ca.mismatched == 0;
        if (ca.margin > *margin) *margin = ca.margin;
    }
done:
    free(pre);
    return st;
}

/* Owned copies of a subset of tokens. */
typedef struct sample {
    tokens t;
    float *x;
    double *out, *pre, *act;
} sample;

static void sample_free(sample *s) {
    free(s->x); free(s->out); free(s->pre); free(s->act);
    memset(s, 0, sizeof *s);
}

static int sample_make(sample *s, const g2f_fixture_layer *fx, size_t d, size_t h, size_t n) {
    memset(s, 0, sizeof *s);
    size_t T = fx->n_tokens;
    if (n > T) n = T;
    s->x = g2f_alloc_array(n * d, sizeof(float));
    s->out = g2f_alloc_array(n * d, sizeof(double));
    if (fx->pre) s->pre = g2f_alloc_array(n * h, sizeof(double));
    if (fx->act) s->act = g2f_alloc_array(n * h, sizeof(double));
    if (!s->x || !s->out || (fx->pre && !s->pre) || (fx->act && !s->act)) {
        sample_free(s);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        size_t t = i * T / n; /* spread over the whole fixture */
        memcpy(s->x + i * d, fx->in + t * d, d * sizeof(float));
        memcpy(s->out + i * d, fx->out + t * d, d * sizeof(double));
        if (s->pre) memcpy(s->pre + i * h, fx->pre + t * h, h * sizeof(double));
        if (s->act) memcpy(s->act + i * h, fx->act + t * h, h * sizeof(double));
    }
    s->t = (tokens){n, s->x, s->out, s->pre, s->act};
    return 1;
}

typedef struct search {
    ctx *c;
    const tokens *screen, *all;
    g2f_diag_result *res;
} search;

/* Screens v on the sample, confirms it on every token, records a match. */
static g2f_status try_variant(search *s, const variant *v, const g2f_ffn_weights *base, const g2f_tol_squares *sq,
                              g2f_error *err) {
    int match;
    double margin;
    g2f_status st = evaluate(s->c, s->screen, v, base, sq, &match, &margin, err);
    if (st != G2F_OK || !match) return st;
    if (s->screen->T < s->all->T && (st = evaluate(s->c, s->all, v, base, sq, &match, &margin, err)) != G2F_OK)
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
    size_t T4 = s->screen->T < 4 ? s->screen->T : 4;
    float *pre = g2f_alloc_array(T4 * h, sizeof(float)), *act = g2f_alloc_array(T4 * h, sizeof(float));
    float *out = g2f_alloc_array(T4 * d, sizeof(float));
    g2f_status st = G2F_OK;
    if (!pre || !act || !out) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "diagnosis: out of memory");
        goto done;
    }
    for (size_t K = 0; K < n_layer && st == G2F_OK; K++) {
        if (K == in->layer) continue;
        g2f_layer lk;
        if ((st = g2f_model_layer_load(in->model, K, &lk, err)) != G2F_OK) break;
        g2f_ffn_forward(&lk.w, s->screen->x, T4, in->gelu, pre, act, out, in->n_threads, in->ws);
        c->tried++;
        /* another layer's weights give outputs off by O(1); 5% keeps any
         * candidate that the exact evaluation could accept */
        g2f_tol_squares sq = {0};
        if (rel_rms_error(s->screen->out, out, T4 * d) < 0.05 &&
            (st = g2f_tol_squares_init(&lk.w, &sq, in->n_threads, err)) == G2F_OK) {
            variant v = plain;
            v.from_layer = (long)K;
            if ((st = try_variant(s, &v, &lk.w, &sq, err)) == G2F_OK) {
                v.other_gelu = 1;
                st = try_variant(s, &v, &lk.w, &sq, err);
            }
        }
        g2f_tol_squares_free(&sq);
        g2f_layer_free(&lk);
    }
done:
    free(pre); free(act); free(out);
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

/* Counts mismatches per row and per column of a (T, width) comparison. */
static void mismatch_profile(const double *e, const float *c, const float *tol, size_t T, size_t width,
                             size_t *rows, size_t *cols) {
    memset(rows, 0, T * sizeof *rows);
    memset(cols, 0, width * sizeof *cols);
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < width; j++) {
            size_t i = t * width + j;
            double diff = fabs(c[i] - e[i]);
            if (!(diff <= tol[i])) rows[t]++, cols[j]++;
        }
}

static void locate(const g2f_diag_input *in, size_t d, size_t h, char *buf, size_t len) {
    const g2f_fixture_layer *fx = in->fx;
    size_t T = fx->n_tokens;
    size_t *rows = g2f_alloc_array(T, sizeof(size_t));
    size_t *cols = g2f_alloc_array(h > d ? h : d, sizeof(size_t));
    if (!rows || !cols || !in->out || !in->tol_out) {
        snprintf(buf, len, "(not located)");
        free(rows); free(cols);
        return;
    }
    char tl[96], cl[96];
    size_t nt, nc;
    mismatch_profile(fx->out, in->out, in->tol_out, T, d, rows, cols);
    list_flags(rows, T, tl, sizeof tl, &nt);
    list_flags(cols, d, cl, sizeof cl, &nc);
    size_t used = (size_t)snprintf(buf, len, "out differs in %zu of %zu tokens (%s) and %zu of %zu output channels (%s)",
                                   nt, T, tl, nc, d, cl);
    if (used >= len) goto done;
    if (fx->pre && in->pre && in->tol_pre) {
        mismatch_profile(fx->pre, in->pre, in->tol_pre, T, h, rows, cols);
        list_flags(cols, h, cl, sizeof cl, &nc);
        if (nc) {
            snprintf(buf + used, len - used, "; first divergence at c_fc: %zu of %zu hidden units (%s)", nc, h, cl);
            goto done;
        }
    }
    if (fx->act && in->act && in->tol_act) {
        mismatch_profile(fx->act, in->act, in->tol_act, T, h, rows, cols);
        list_flags(cols, h, cl, sizeof cl, &nc);
        if (nc) {
            snprintf(buf + used, len - used, "; c_fc matches%s, first divergence at the activation: %zu of %zu hidden units (%s)",
                     fx->pre ? "" : " (not in the fixture)", nc, h, cl);
            goto done;
        }
    }
    if (fx->pre || fx->act)
        snprintf(buf + used, len - used, "; %s match, so the divergence is in c_proj",
                 fx->pre && fx->act ? "c_fc and the activation" : fx->pre ? "c_fc" : "the activation");
    else
        snprintf(buf + used, len - used, "; the fixture has no pre/act to tell which stage diverges");
done:
    free(rows);
    free(cols);
}

g2f_status g2f_diagnose_layer(const g2f_diag_input *in, g2f_diag_result *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const g2f_model_info *mi = g2f_model_get_info(in->model);
    ctx c = {in, mi->n_embd, mi->n_inner, mi->dtype, {0}, {{0}}, 0};
    const g2f_fixture_layer *fx = in->fx;
    tokens all = {fx->n_tokens, fx->in, fx->out, fx->pre, fx->act};
    sample smp;
    if (!sample_make(&smp, fx, c.d, c.h, G2F_DIAG_SAMPLE))
        return g2f_error_set(err, G2F_ERR_NOMEM, "diagnosis: out of memory");
    out->sample_tokens = smp.t.T;
    search s = {&c, &smp.t, &all, out};
    variant singles[16];
    size_t ns = cheap_singles(in->w, singles);
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < ns && st == G2F_OK; i++) st = try_variant(&s, &singles[i], in->w, in->squares, err);
    if (st == G2F_OK && out->n_causes == 0) st = layer_search(&s, err);
    int pairs = out->n_causes == 0;
    for (size_t i = 0; pairs && i < ns && st == G2F_OK; i++)
        for (size_t j = i + 1; j < ns && st == G2F_OK; j++) {
            variant v;
            if (combine(&singles[i], &singles[j], &v) && variant_size(&v) == 2)
                st = try_variant(&s, &v, in->w, in->squares, err);
        }
    /* pairs only run when no single matched, so every cause found is minimal */
    out->undetermined = out->n_causes > 1;
    out->hypotheses_tried = c.tried;
    if (st == G2F_OK && out->n_causes == 0) locate(in, c.d, c.h, out->where, sizeof out->where);
    sample_free(&smp);
    for (int r = 0; r < 3; r++) free(c.rounded_buf[r]);
    return st;
}
