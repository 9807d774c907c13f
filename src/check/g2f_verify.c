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

static int all_pass(const g2f_cmp *out, const g2f_cmp *pre, const g2f_cmp *act) {
    return out->mismatched == 0 && (!pre || pre->mismatched == 0) && (!act || act->mismatched == 0);
}

/* Names an element of a (tokens, width) tensor for messages. */
static void elem_name(char *buf, size_t n, const char *tensor, size_t index, size_t width) {
    snprintf(buf, n, "%s[token %zu, %zu]", tensor, index / width, index % width);
}

static void explain_nonfinite(g2f_layer_result *r, double bad_value, long bad_in, size_t d, size_t h) {
    char where[96];
    const g2f_cmp *c = r->out.nonfinite ? &r->out : r->pre.nonfinite ? &r->pre : &r->act;
    const char *tensor = c == &r->out ? "out" : c == &r->pre ? "pre" : "act";
    size_t width = c == &r->out ? d : h;
    if (bad_in >= 0) {
        elem_name(where, sizeof where, "in", (size_t)bad_in, d);
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu: non-finite value in the fixture's input h.%zu.mlp.%s (value %g)", r->layer, r->layer,
                 where, bad_value);
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

/* The other GELU form's out (a third product as large as c_proj) is
 * computed on every token only where it can change the verdict: when the
 * layer fails, or when on the G2F_EVAL_TRACK tokens where the forms differ
 * most the other form passes too (then "indistinguishable" must hold on
 * every token). When the layer passes and the other form already fails on
 * those tokens, out_other and the separation describe those tokens
 * (other_tokens says how many). Layers of at most that many tokens are
 * computed whole in one pass. */
static g2f_status evaluate(const g2f_ffn_how *how, const g2f_fixture_views *fx, size_t L, const g2f_verify_params *p,
                           g2f_ffn_eval_ws *ws, g2f_ffn_eval_result *res, size_t *other_tokens, g2f_error *err) {
    g2f_ffn_eval_opts all = {NULL, 0, G2F_EVAL_OTHER_FULL, 0};
    *other_tokens = 0;
    if (fx->n_tokens <= G2F_EVAL_TRACK) return g2f_ffn_eval(how, fx, L, &p->tol, &all, p->n_threads, ws, res, err);
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0};
    g2f_status st = g2f_ffn_eval(how, fx, L, &p->tol, &first, p->n_threads, ws, res, err);
    if (st != G2F_OK) return st;
    if (g2f_ffn_eval_match(res) && res->n_tracked) {
        g2f_ffn_eval_opts few = {res->tracked, res->n_tracked, G2F_EVAL_OTHER_FULL, 0};
        g2f_ffn_eval_result r2;
        if ((st = g2f_ffn_eval(how, fx, L, &p->tol, &few, p->n_threads, ws, &r2, err)) != G2F_OK) return st;
        if (r2.out_other.mismatched > 0) { /* the other form fails: the verdict is settled */
            res->out_other = r2.out_other;
            res->sep_out = r2.sep_out;
            *other_tokens = r2.tokens;
            g2f_ffn_eval_result_free(&r2);
            return G2F_OK;
        }
        g2f_ffn_eval_result_free(&r2);
    }
    g2f_ffn_eval_result_free(res);
    return g2f_ffn_eval(how, fx, L, &p->tol, &all, p->n_threads, ws, res, err);
}

static g2f_status verify_layer(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p, size_t L,
                               g2f_ffn_eval_ws *ws, g2f_layer_result *r, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    g2f_fixture_views fx;
    g2f_layer lw;
    g2f_status st = g2f_fixture_layer_views(f, L, &fx, err);
    if (st != G2F_OK) return st;
    if ((st = g2f_model_layer_load(m, L, &lw, err)) != G2F_OK) return st;
    g2f_ffn_how how = {&lw.w, p->gelu, 0, 0.0};
    g2f_ffn_eval_result res;
    g2f_gelu other = g2f_gelu_other(p->gelu);
    if ((st = evaluate(&how, &fx, L, p, ws, &res, &r->other_tokens, err)) == G2F_OK) {
        r->tokens = fx.n_tokens;
        r->has_pre = res.has_pre;
        r->has_act = res.has_act;
        r->out = res.out;
        r->out_other = res.out_other;
        if (res.has_pre) r->pre = res.pre;
        if (res.has_act) {
            r->act = res.act;
            r->act_other = res.act_other;
        }
        r->sep_out = res.sep_out;
        r->sep_act = res.sep_act;
        r->gelu_separation = res.sep_out > res.sep_act ? res.sep_out : res.sep_act;
        const g2f_cmp *pre = res.has_pre ? &r->pre : NULL;
        int ok = all_pass(&r->out, pre, res.has_act ? &r->act : NULL);
        int ok_other = all_pass(&r->out_other, pre, res.has_act ? &r->act_other : NULL);
        r->status = ok ? G2F_LAYER_PASS : G2F_LAYER_FAIL;
        if (ok && ok_other)
            r->best_gelu = G2F_BEST_INDISTINGUISHABLE;
        else if (ok || ok_other)
            r->best_gelu = (ok ? p->gelu : other) == G2F_GELU_ERF ? G2F_BEST_ERF : G2F_BEST_TANH;
        else
            r->best_gelu = G2F_BEST_NEITHER;
        if (r->out.nonfinite || r->pre.nonfinite || r->act.nonfinite || res.bad_in >= 0) {
            r->status = G2F_LAYER_FAIL;
            r->best_gelu = G2F_BEST_NEITHER;
            r->diagnosis = 1u << G2F_DIAG_NONFINITE;
            explain_nonfinite(r, res.bad_in_value, res.bad_in, d, h);
        } else {
            if (!ok) {
                /* diagnosis work happens only here, for failing layers */
                g2f_diag_input di = {m, L, &lw.w, &fx, p->gelu, &p->tol, p->n_threads, ws};
                st = g2f_diagnose_layer(&di, &r->diag, err);
                for (size_t i = 0; i < r->diag.n_causes; i++) r->diagnosis |= r->diag.causes[i].codes;
                if (!r->diag.n_causes) r->diagnosis = 1u << G2F_DIAG_UNEXPLAINED;
            }
            explain(r, p->gelu);
        }
        g2f_ffn_eval_result_free(&res);
    }
    g2f_layer_free(&lw);
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
    g2f_ffn_eval_ws ws = {0}; /* kept from layer to layer: fresh buffers cost page faults */
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
        if ((st = verify_layer(m, f, p, L, &ws, r, err)) != G2F_OK) {
            g2f_ffn_eval_ws_free(&ws);
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
    g2f_ffn_eval_ws_free(&ws);
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

/* ---- what the reports say about a layer and a whole run ----------------- */

int g2f_layer_gelu_verified(const g2f_layer_result *r) {
    return r->status != G2F_LAYER_SKIPPED && (r->best_gelu == G2F_BEST_TANH || r->best_gelu == G2F_BEST_ERF);
}

/* The GELU form a cause's codes name ("gelu_erf" -> "erf"), NULL when none
 * does; "" when two different forms are named. */
static const char *cause_gelu(const g2f_cause *c) {
    const char *form = NULL;
    for (int d = 0; d < G2F_DIAG_COUNT; d++) {
        const char *name = g2f_diag_name((g2f_diag)d);
        if (!(c->codes & (1u << d)) || strncmp(name, "gelu_", 5) != 0) continue;
        if (form && strcmp(form, name + 5) != 0) return "";
        form = name + 5;
    }
    return form;
}

const char *g2f_layer_gelu_shown(const g2f_layer_result *r) {
    if (r->status == G2F_LAYER_SKIPPED || r->best_gelu != G2F_BEST_NEITHER || r->diag.n_causes == 0)
        return g2f_best_gelu_name(r->best_gelu);
    const char *form = cause_gelu(&r->diag.causes[0]);
    for (size_t i = 1; form && i < r->diag.n_causes; i++) {
        const char *f = cause_gelu(&r->diag.causes[i]);
        if (!f || strcmp(f, form) != 0) form = NULL;
    }
    return form && *form ? form : g2f_best_gelu_name(r->best_gelu);
}

void g2f_verify_summarize(const g2f_verify_result *r, g2f_verify_summary *out) {
    memset(out, 0, sizeof *out);
    out->other_gelu = g2f_gelu_other(r->gelu);
    unsigned other_code = 1u << (out->other_gelu == G2F_GELU_ERF ? G2F_DIAG_GELU_ERF : G2F_DIAG_GELU_TANH);
    size_t compared = 0, explained_by_other = 0, unrelated = 0, unexplained = 0, verified = 0;
    for (size_t i = 0; i < r->n_layers; i++) {
        const g2f_layer_result *l = &r->layers[i];
        if (l->status == G2F_LAYER_SKIPPED) continue;
        compared++;
        verified += (size_t)g2f_layer_gelu_verified(l);
        if (l->best_gelu == G2F_BEST_INDISTINGUISHABLE) {
            double sep = l->sep_out > l->sep_act ? l->sep_out : l->sep_act;
            if (!out->gelu_unverified || sep > out->unverified_sep) out->unverified_sep = sep;
            out->gelu_unverified++;
        }
        if (l->status == G2F_LAYER_FAIL && l->diag.n_causes == 1 && l->diag.causes[0].codes == other_code)
            explained_by_other++;
        if (l->status == G2F_LAYER_FAIL && (l->diagnosis & (1u << G2F_DIAG_UNEXPLAINED)) &&
            !(l->diagnosis & (1u << G2F_DIAG_NONFINITE))) {
            unexplained++;
            unrelated += fabs(l->out.cosine) < G2F_UNRELATED_COSINE;
        }
    }
    out->gelu_verified = compared > 0 && verified == compared;
    out->other_gelu_explains = compared > 0 && explained_by_other == compared;
    out->unrelated = compared > 0 && unrelated == compared;
    out->all_unexplained = compared > 0 && unexplained == compared;
}
