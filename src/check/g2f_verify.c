/* g2f_verify: per-layer verification; see g2f_verify.h. */
#include "g2f_verify.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {"pass", "fail", "skipped"};
_Static_assert(sizeof status_names / sizeof status_names[0] == G2F_LAYER_STATUS_COUNT, "one name per status");
static const char *const best_names[] = {"tanh", "erf", "indistinguishable", "neither"};
_Static_assert(sizeof best_names / sizeof best_names[0] == G2F_BEST_COUNT, "one name per verdict");

const char *g2f_layer_status_name(g2f_layer_status s) {
    return (unsigned)s < G2F_LAYER_STATUS_COUNT ? status_names[s] : "?";
}
const char *g2f_best_gelu_name(g2f_best_gelu b) { return (unsigned)b < G2F_BEST_COUNT ? best_names[b] : "?"; }

/* Buffers kept from layer to layer, grown when a layer needs more: fresh
 * ones per layer cost a page fault per 4 KiB each time (on GPT-2 XL, most of
 * verify's system time). */
typedef struct scratch {
    float *pre, *act, *out, *act2, *out2, *tol_out, *tol_pre, *tol_act;
    size_t cap_h, cap_d; /* floats in the (T, n_inner) and (T, n_embd) buffers */
    g2f_tol_squares sq;
    g2f_ffn_ws ffn;
} scratch;

/* The buffers sized by the token count: one block, so that its whole size
 * is checked against the machine's memory at once. */
static void scratch_free_tokens(scratch *s) {
    free(s->pre);
    s->pre = s->act = s->out = s->act2 = s->out2 = s->tol_out = s->tol_pre = s->tol_act = NULL;
    s->cap_h = s->cap_d = 0;
}

static void scratch_free(scratch *s) {
    scratch_free_tokens(s);
    g2f_tol_squares_free(&s->sq);
    g2f_ffn_ws_free(&s->ffn);
}

/* Makes room for T tokens (5 (T, h) and 3 (T, d) buffers); T x (5 h + 3 d)
 * is checked for overflow and against the machine's memory. */
static g2f_status scratch_reserve(scratch *s, size_t L, size_t T, size_t d, size_t h, g2f_error *err) {
    size_t th, td, width;
    if (s->pre && !__builtin_mul_overflow(T, h, &th) && !__builtin_mul_overflow(T, d, &td) && s->cap_h >= th &&
        s->cap_d >= td)
        return G2F_OK;
    scratch_free_tokens(s);
    char what[96];
    snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens", L, T);
    if (__builtin_mul_overflow(h, (size_t)5, &width) || __builtin_add_overflow(width, 3 * d, &width))
        width = SIZE_MAX;
    float *p = g2f_alloc_work(T, width, sizeof(float), what, err);
    if (!p) return err ? err->status : G2F_ERR_NOMEM;
    th = T * h; /* both fit: T x width did */
    td = T * d;
    s->pre = p; p += th;
    s->act = p; p += th;
    s->act2 = p; p += th;
    s->tol_pre = p; p += th;
    s->tol_act = p; p += th;
    s->out = p; p += td;
    s->out2 = p; p += td;
    s->tol_out = p;
    s->cap_h = th;
    s->cap_d = td;
    return G2F_OK;
}

static long first_nonfinite_f(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return (long)i;
    return -1;
}

static int all_pass(const g2f_cmp *out, const g2f_cmp *pre, const g2f_cmp *act) {
    return out->mismatched == 0 && (!pre || pre->mismatched == 0) && (!act || act->mismatched == 0);
}

/* Names an element of a (tokens, width) tensor for messages. */
static void elem_name(char *buf, size_t n, const char *tensor, size_t index, size_t width) {
    snprintf(buf, n, "%s[token %zu, %zu]", tensor, index / width, index % width);
}

static void explain_nonfinite(g2f_layer_result *r, const g2f_fixture_layer *fx, long bad_in, size_t d, size_t h) {
    char where[96];
    const g2f_cmp *c = r->out.nonfinite ? &r->out : r->pre.nonfinite ? &r->pre : &r->act;
    const char *tensor = c == &r->out ? "out" : c == &r->pre ? "pre" : "act";
    size_t width = c == &r->out ? d : h;
    if (bad_in >= 0) {
        elem_name(where, sizeof where, "in", (size_t)bad_in, d);
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu: non-finite value in the fixture's input h.%zu.mlp.%s (value %g)", r->layer, r->layer,
                 where, (double)fx->in[bad_in]);
        return;
    }
    elem_name(where, sizeof where, tensor, c->first_nonfinite, width);
    snprintf(r->explanation, sizeof r->explanation, "layer %zu: non-finite value in the %s at %s (%zu such elements)",
             r->layer, c->nonfinite_in_expected ? "reference" : "computation (check the weights)", where,
             c->nonfinite);
}

static void explain(g2f_layer_result *r, g2f_gelu asked) {
    const g2f_diag_result *dg = &r->diag;
    if (r->status == G2F_LAYER_PASS) {
        if (r->best_gelu == G2F_BEST_INDISTINGUISHABLE)
            snprintf(r->explanation, sizeof r->explanation,
                     "layer %zu matches; GELU form undetermined: on these inputs tanh and erf differ by at most "
                     "%.2g of the tolerance",
                     r->layer, r->gelu_separation);
        else
            snprintf(r->explanation, sizeof r->explanation,
                     "layer %zu matches with %s GELU (the other form is off by up to %.3g x the tolerance)", r->layer,
                     g2f_gelu_name(asked), r->out_other.margin);
        return;
    }
    if (dg->n_causes == 1 && dg->causes[0].codes == 1u << G2F_DIAG_GELU_ERF) {
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu matches exact erf GELU (torch F.gelu default, HF 'gelu'), not the tanh approximation "
                 "GPT-2 uses ('gelu_new')",
                 r->layer);
    } else if (dg->n_causes == 1 && dg->causes[0].codes == 1u << G2F_DIAG_GELU_TANH) {
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu matches the tanh GELU approximation (GPT-2's, HF 'gelu_new'), not exact erf GELU ('gelu')",
                 r->layer);
    } else if (dg->n_causes == 1) {
        char words[300];
        g2f_cause_words(&dg->causes[0], words, sizeof words);
        snprintf(r->explanation, sizeof r->explanation, "layer %zu is reproduced with %s (margin %.2g)", r->layer,
                 words, dg->causes[0].margin);
    } else if (dg->n_causes > 1) {
        size_t used = (size_t)snprintf(r->explanation, sizeof r->explanation,
                                       "layer %zu: cause undetermined, the data fits %zu explanations equally:",
                                       r->layer, dg->n_causes);
        for (size_t i = 0; i < dg->n_causes && used < sizeof r->explanation; i++) {
            char codes[128];
            g2f_cause_codes(&dg->causes[i], codes, sizeof codes);
            used += (size_t)snprintf(r->explanation + used, sizeof r->explanation - used, "%s %s", i ? ";" : "",
                                     codes);
        }
    } else {
        snprintf(r->explanation, sizeof r->explanation, "layer %zu does not match and no known cause explains it: %s",
                 r->layer, dg->where);
    }
}

static g2f_status verify_layer(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p, size_t L,
                               scratch *sp, g2f_layer_result *r, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    g2f_fixture_layer fx;
    g2f_layer lw;
    g2f_status st = g2f_fixture_layer_load(f, L, d, h, &fx, err);
    if (st != G2F_OK) return st;
    if ((st = g2f_model_layer_load(m, L, &lw, err)) != G2F_OK) {
        g2f_fixture_layer_free(&fx);
        return st;
    }
    size_t T = fx.n_tokens;
    if ((st = scratch_reserve(sp, L, T, d, h, err)) != G2F_OK) {
        g2f_layer_free(&lw);
        g2f_fixture_layer_free(&fx);
        return st;
    }
    scratch s = *sp; /* the buffers, by value: the code below reads s.pre ... */
    const g2f_ffn_weights *w = &lw.w;
    g2f_gelu other = g2f_gelu_other(p->gelu);
    g2f_ffn_forward(w, fx.in, T, p->gelu, s.pre, s.act, s.out, p->n_threads, &sp->ffn);
    g2f_ffn_gelu(other, s.pre, T * h, s.act2, p->n_threads);
    g2f_ffn_proj(w, s.act2, T, s.out2, p->n_threads, &sp->ffn);

    g2f_tol_squares *sq = &sp->sq;
    g2f_tol_request tr = {w, fx.in, T, s.pre, s.act, s.out, fx.out, fx.pre, fx.act,
                          fx.dtype[G2F_FX_IN], fx.dtype[G2F_FX_OUT], fx.dtype[G2F_FX_PRE], fx.dtype[G2F_FX_ACT], 0.0, sq, &sp->ffn};
    if (!p->tol.user) st = g2f_tol_squares_init(w, sq, p->n_threads, err); /* user tolerances need no squares */
    if (st == G2F_OK) st = g2f_tol_compute(&tr, &p->tol, s.tol_out, s.tol_pre, s.tol_act, p->n_threads, err);
    if (st == G2F_OK) {
        r->tokens = T;
        r->has_pre = fx.pre != NULL;
        r->has_act = fx.act != NULL;
        g2f_compare(fx.out, s.out, s.tol_out, T * d, &r->out);
        g2f_compare(fx.out, s.out2, s.tol_out, T * d, &r->out_other);
        if (fx.pre) g2f_compare(fx.pre, s.pre, s.tol_pre, T * h, &r->pre);
        if (fx.act) {
            g2f_compare(fx.act, s.act, s.tol_act, T * h, &r->act);
            g2f_compare(fx.act, s.act2, s.tol_act, T * h, &r->act_other);
        }
        r->gelu_separation = g2f_separation(s.out, s.out2, s.tol_out, T * d);
        if (fx.act) {
            double sa = g2f_separation(s.act, s.act2, s.tol_act, T * h);
            if (sa > r->gelu_separation) r->gelu_separation = sa;
        }
        const g2f_cmp *pre = fx.pre ? &r->pre : NULL;
        int ok = all_pass(&r->out, pre, fx.act ? &r->act : NULL);
        int ok_other = all_pass(&r->out_other, pre, fx.act ? &r->act_other : NULL);
        long bad_in = first_nonfinite_f(fx.in, T * d);
        r->status = ok ? G2F_LAYER_PASS : G2F_LAYER_FAIL;
        if (ok && ok_other)
            r->best_gelu = G2F_BEST_INDISTINGUISHABLE;
        else if (ok || ok_other)
            r->best_gelu = (ok ? p->gelu : other) == G2F_GELU_ERF ? G2F_BEST_ERF : G2F_BEST_TANH;
        else
            r->best_gelu = G2F_BEST_NEITHER;
        if (r->out.nonfinite || r->pre.nonfinite || r->act.nonfinite || bad_in >= 0) {
            r->status = G2F_LAYER_FAIL;
            r->best_gelu = G2F_BEST_NEITHER;
            r->diagnosis = 1u << G2F_DIAG_NONFINITE;
            explain_nonfinite(r, &fx, bad_in, d, h);
        } else {
            if (!ok) {
                /* diagnosis work happens only here, for failing layers */
                g2f_diag_input di = {m, L, w, sq, &fx, p->gelu, &p->tol, p->n_threads,
                                     s.pre, s.act, s.out, s.tol_pre, s.tol_act, s.tol_out, &sp->ffn};
                st = g2f_diagnose_layer(&di, &r->diag, err);
                for (size_t i = 0; i < r->diag.n_causes; i++) r->diagnosis |= r->diag.causes[i].codes;
                if (!r->diag.n_causes) r->diagnosis = 1u << G2F_DIAG_UNEXPLAINED;
            }
            explain(r, p->gelu);
        }
    }
    g2f_layer_free(&lw);
    g2f_fixture_layer_free(&fx);
    return st;
}

g2f_status g2f_verify_run(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p,
                          g2f_verify_result *out, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    memset(out, 0, sizeof *out);
    g2f_status st = g2f_fixture_check(f, mi->n_layer, mi->n_embd, mi->n_inner, err);
    if (st != G2F_OK) return st;
    out->layers = calloc(mi->n_layer ? mi->n_layer : 1, sizeof *out->layers);
    if (!out->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    out->n_layers = mi->n_layer;
    out->gelu = p->gelu;
    out->first_fail = -1;
    size_t todo = 0, done = 0;
    unsigned long long bytes = 0;
    for (size_t L = 0; L < mi->n_layer; L++) todo += (!p->select || p->select[L]) && g2f_fixture_has_layer(f, L);
    scratch sc = {0};
    for (size_t L = 0; L < mi->n_layer; L++) {
        g2f_layer_result *r = &out->layers[L];
        r->layer = L;
        r->status = G2F_LAYER_SKIPPED;
        r->best_gelu = G2F_BEST_NEITHER;
        if (p->select && !p->select[L]) {
            snprintf(r->explanation, sizeof r->explanation, "layer %zu not selected by --layers", L);
            continue;
        }
        if (!g2f_fixture_has_layer(f, L)) {
            snprintf(r->explanation, sizeof r->explanation, "layer %zu has no h.%zu.mlp.in/out in the fixture", L, L);
            continue;
        }
        if ((st = verify_layer(m, f, p, L, &sc, r, err)) != G2F_OK) {
            scratch_free(&sc);
            g2f_verify_result_free(out);
            return st;
        }
        out->compared++;
        bytes += (unsigned long long)(2 * mi->n_embd * mi->n_inner) * g2f_dtype_size(mi->dtype);
        if (p->progress) p->progress(p->progress_user, ++done, todo, bytes);
        if (r->status == G2F_LAYER_FAIL) {
            out->failed++;
            if (out->first_fail < 0) out->first_fail = (long)L;
        }
    }
    scratch_free(&sc);
    out->pass = out->compared > 0 && out->failed == 0;
    return G2F_OK;
}

void g2f_verify_result_free(g2f_verify_result *r) {
    if (!r) return;
    free(r->layers);
    memset(r, 0, sizeof *r);
}

/* ---- the per-layer totals the reports show ---------------------------- */

g2f_layer_totals g2f_layer_result_totals(const g2f_layer_result *r) {
    g2f_layer_totals t = {0, 0, 0.0};
    if (r->status == G2F_LAYER_SKIPPED) return t;
    const g2f_cmp *parts[3] = {&r->out, r->has_pre ? &r->pre : NULL, r->has_act ? &r->act : NULL};
    for (int i = 0; i < 3; i++) {
        const g2f_cmp *c = parts[i];
        if (!c) continue;
        t.mismatched += c->mismatched;
        t.total += c->total;
        /* margins are >= 0; once NaN, no comparison replaces it */
        if (c->margin > t.margin || isnan(c->margin)) t.margin = c->margin;
    }
    return t;
}
