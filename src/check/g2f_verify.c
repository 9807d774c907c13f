/* g2f_verify: per-layer verification; see g2f_verify.h. */
#include "g2f_verify.h"

#include "g2f_cpu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {"pass", "fail", "skipped"};
_Static_assert(sizeof status_names / sizeof status_names[0] == G2F_LAYER_STATUS_COUNT, "one name per status");
static const char *const best_names[] = {"tanh", "erf", "indistinguishable", "neither", "sigmoid", "mlx_approx",
                                         "f16_table"};
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
             r->layer,
             c->nonfinite_in_expected ? "reference"
             : c->nonfinite_in_tol    ? "tolerance (it overflows float: values near its range)"
                                      : "computation (check the weights)",
             where,
             c->nonfinite);
}

static void explain(g2f_layer_result *r, g2f_gelu asked) {
    const g2f_diag_result *dg = &r->diag;
    if (r->accepted) {
        char words[300];
        g2f_cause_words(&r->accepted_cause, words, sizeof words);
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu %s with %s, accepted (--accept): judged with it, margin %.3g%s", r->layer,
                 r->status == G2F_LAYER_PASS ? "matches" : "does not match even", words, r->out.margin,
                 r->best_gelu == G2F_BEST_INDISTINGUISHABLE ? "; the GELU form cannot be told apart within that tolerance"
                                                            : "");
        return;
    }
    if (r->status == G2F_LAYER_PASS) {
        if (r->best_gelu == G2F_BEST_INDISTINGUISHABLE)
            snprintf(r->explanation, sizeof r->explanation,
                     "layer %zu matches; GELU form undetermined: on these inputs tanh and erf differ by at most "
                     "%.2g of the tolerance",
                     r->layer, r->gelu_separation);
        else { /* what told the forms apart: out, or act when recorded (out alone may not) */
            int by_act = r->has_act && r->act_other.margin > r->out_other.margin;
            snprintf(r->explanation, sizeof r->explanation,
                     "layer %zu matches with %s GELU (the other form is off by up to %.3g x the tolerance%s)", r->layer,
                     g2f_gelu_name(asked), by_act ? r->act_other.margin : r->out_other.margin,
                     by_act ? " at act" : "");
        }
        return;
    }
    if (dg->n_causes == 1 && dg->causes[0].codes == G2F_DIAG_BIT(G2F_DIAG_GELU_ERF)) {
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu matches exact erf GELU (torch F.gelu default, HF 'gelu'), not the tanh approximation "
                 "GPT-2 uses ('gelu_new')",
                 r->layer);
    } else if (dg->n_causes == 1 && dg->causes[0].codes == G2F_DIAG_BIT(G2F_DIAG_GELU_TANH)) {
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu matches the tanh GELU approximation (GPT-2's, HF 'gelu_new'), not exact erf GELU ('gelu')",
                 r->layer);
    } else if (dg->n_causes == 1 && dg->causes[0].codes == G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT)) {
        char words[300];
        g2f_cause_words(&dg->causes[0], words, sizeof words);
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu does not match, and no cause is tried with the checkpoint's quantization: %s (%s)",
                 r->layer, words, dg->quant_why);
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

/* Every GELU form, for the margins of the GELU table. */
#define ALL_FORMS ((1u << G2F_GELU_COUNT) - 1u)

/* Each form's margin from an evaluation with opts.forms (r->gelu_margin,
 * over gelu_tokens tokens): how decisively the data picks a form. */
static void take_forms(const g2f_ffn_eval_result *e, g2f_layer_result *r) {
    for (int g = 0; g < G2F_GELU_COUNT; g++) r->gelu_margin[g] = e->form_margin[g], r->gelu_form_tokens[g] = e->form_tokens[g];
    r->gelu_tokens = e->tokens;
}

/* The other GELU form's out (a third product as large as c_proj) is
 * computed on every token only where it can change the verdict: when the
 * layer fails, or when on the G2F_EVAL_TRACK tokens where the forms differ
 * most the other form passes too (then "indistinguishable" must hold on
 * every token). When the layer passes and the other form already fails on
 * those tokens, out_other and the separation describe those tokens
 * (other_tokens says how many). Every form's margin (the GELU table) comes
 * from the same tracked tokens, in the same evaluation (one c_fc for all
 * forms), made in the first pass from its c_fc and c_proj on those
 * tokens' rows (opts.tracked_out; kept aside as they come over several
 * chunks), or again when that pass had no memory for them. Layers of at
 * most that many tokens are computed whole in one pass. */
static g2f_status evaluate(const g2f_ffn_how *how, const g2f_fixture_views *fx, size_t L, const g2f_verify_params *p,
                           g2f_ffn_eval_ws *ws, g2f_ffn_eval_result *res, g2f_layer_result *r, g2f_error *err) {
    g2f_ffn_eval_opts all = {NULL, 0, G2F_EVAL_OTHER_FULL, 0, ALL_FORMS, 0, NULL, NULL, NULL};
    g2f_status st;
    r->other_tokens = 0;
    if (fx->n_tokens <= G2F_EVAL_TRACK) {
        if ((st = g2f_ffn_eval(how, fx, L, &p->tol, &all, p->n_threads, ws, res, err)) == G2F_OK) take_forms(res, r);
        return st;
    }
    g2f_ffn_eval_result r2;
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, 0, ALL_FORMS, &r2, NULL, NULL};
    if ((st = g2f_ffn_eval(how, fx, L, &p->tol, &first, p->n_threads, ws, res, err)) != G2F_OK) return st;
    if (res->n_tracked) {
        g2f_ffn_eval_opts few = {res->tracked, res->n_tracked, G2F_EVAL_OTHER_FULL, 0, ALL_FORMS, 0, NULL, NULL, NULL};
        if (!res->tracked_done && (st = g2f_ffn_eval(how, fx, L, &p->tol, &few, p->n_threads, ws, &r2, err)) != G2F_OK) {
            g2f_ffn_eval_result_free(res);
            return st;
        }
        take_forms(&r2, r);
        int settled = g2f_ffn_eval_match(res) && r2.out_other.mismatched > 0;
        if (settled) { /* the other form fails: the verdict is settled */
            res->out_other = r2.out_other;
            res->sep_out = r2.sep_out;
            r->other_tokens = r2.tokens;
        }
        g2f_ffn_eval_result_free(&r2);
        if (settled) return G2F_OK;
        all.forms = 0;
    }
    g2f_ffn_eval_result_free(res);
    if ((st = g2f_ffn_eval(how, fx, L, &p->tol, &all, p->n_threads, ws, res, err)) == G2F_OK && all.forms)
        take_forms(res, r);
    return st;
}

/* An f16 GELU table's entry for x made by another float formula (glibc's
 * or torch's tanhf, an FMA) may be the other neighbour where GELU(f16(x))
 * lies within that formula's error (4 ulp) of an f16 rounding boundary:
 * that step, else 0 (as the FFN's tolerance allows it). */
static double table_flip(float x) {
    float x16 = g2f_round_value(G2F_ROUND_F16, x);
    if (!(fabs(x16) < 10)) return 0; /* outside the table: 0 or x exactly */
    double exact = g2f_gelu_tanh_f64(x16), fe = 4 * ldexp(1.0, -24) * (fabs(exact) + fabs(x16));
    return fabs(g2f_round_flip_one(G2F_ROUND_F16, (float)exact, fe));
}

/* One block's part of a form's margin over the recorded pairs, as the
 * running `if (!(m <= cur)) cur = m` of one pass leaves it: the largest
 * margin after the block's last NaN (all of them without one), or NaN when
 * its last element is NaN. */
typedef struct pa_part {
    int has_nan, nan_last;
    double max;
} pa_part;

#define PA_BLOCK 4096

/* The stored pre's and act's rounding: relative, and its absolute floor (F16 subnormals). */
typedef struct pa_units {
    double up, ua, fp, fa;
} pa_units;

/* The part of elements [i0, i0 + n) for form g: a the form's act of pf
 * (the recorded pre in float), ep and ea the recorded pre and act. The
 * tolerance: the reference's float32 formula (4 ulp of |act| + |pre|:
 * PyTorch's formulas round 1 + tanh / 1 + erf, which cancels for negative
 * x, twice the allowance for our GELU against theirs in the FFN model), the
 * stored act's rounding and the stored pre's carried through the GELU's
 * slope (at most 1.13). The f16 table's other neighbour (table_flip) only
 * lowers a margin, so it is computed only where the margin without it
 * would raise the running maximum: the same result. */
static pa_part pa_block(g2f_gelu g, const float *a, const float *pf, const double *ep, const double *ea, size_t n,
                        const pa_units *su) {
    const double u = ldexp(1.0, -24);
    pa_part pt = {0, 0, 0};
    int any = 0; /* an element since the last NaN */
    for (size_t i = 0; i < n; i++) {
        double e = ea[i], tol = 4 * u * (fabs((double)a[i]) + fabs(ep[i])) + (su->ua * fabs(e) + su->fa) +
                                 1.13 * (su->up * fabs(ep[i]) + su->fp);
        double err_ = fabs((double)a[i] - e), m = err_ / (tol > 0 ? tol : 1e-300);
        if (m != m) {
            pt.has_nan = 1, any = 0;
            continue;
        }
        if (any && m <= pt.max) continue;
        if (g == G2F_GELU_F16_TABLE) {
            double f = table_flip(pf[i]);
            if (f > 0 && fabs(err_ - f) < err_) m = fabs(err_ - f) / (tol > 0 ? tol : 1e-300);
        }
        if (!any || m > pt.max) pt.max = m;
        any = 1;
    }
    pt.nan_last = pt.has_nan && !any;
    return pt;
}

/* Form g's margin over n pairs into *cur, continuing its running maximum,
 * in blocks that any number of threads computes alike. */
static void pa_margin(g2f_gelu g, const float *a, const float *pf, const double *ep, const double *ea, size_t n,
                      const pa_units *su, pa_part *parts, int n_threads, double *cur) {
    long nb = (long)((n + PA_BLOCK - 1) / PA_BLOCK);
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long b = 0; b < nb; b++) {
        size_t i0 = (size_t)b * PA_BLOCK, m = n - i0 < PA_BLOCK ? n - i0 : PA_BLOCK;
        parts[b] = pa_block(g, a + i0, pf + i0, ep + i0, ea + i0, m, su);
    }
    for (long b = 0; b < nb; b++) {
        if (parts[b].has_nan) *cur = parts[b].nan_last ? NAN : parts[b].max;
        else if (!(parts[b].max <= *cur)) *cur = parts[b].max;
    }
}

/* With pre and act recorded: act against each form of the recorded pre, on
 * every token (pa_block's tolerance). */
static g2f_status gelu_from_pairs(const g2f_fixture_views *fx, size_t h, g2f_ffn_ws *fws, int n_threads,
                                  g2f_layer_result *r, g2f_error *err) {
    const g2f_tensor *tp = fx->t[G2F_ACT_MLP_PRE], *ta = fx->t[G2F_ACT_MLP_ACT];
    if (!tp || !ta) return G2F_OK;
    const size_t rows = 64;
    double *buf = g2f_alloc_work(rows, 2 * h, sizeof(double), "verify: the recorded pre and act", err);
    float *pf = buf ? g2f_alloc_work(rows, 2 * h, sizeof(float), "verify: the recorded pre", err) : NULL;
    pa_part *parts = pf ? g2f_alloc_work(rows * h / PA_BLOCK + 1, 1, sizeof *parts, "verify: the GELU pairs", err)
                        : NULL;
    if (!parts) {
        free(buf);
        free(pf);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    double *ep = buf, *ea = buf + rows * h;
    float *af = pf + rows * h;
    const pa_units su = {g2f_dtype_store_roundoff(tp->dtype), g2f_dtype_store_roundoff(ta->dtype),
                         g2f_dtype_store_floor(tp->dtype), g2f_dtype_store_floor(ta->dtype)};
    for (int g = 0; g < G2F_GELU_COUNT; g++) r->gelu_margin_pa[g] = 0;
    for (size_t t0 = 0; t0 < fx->n_tokens; t0 += rows) {
        size_t n = fx->n_tokens - t0 < rows ? fx->n_tokens - t0 : rows;
        g2f_tensor_read_f64(tp, (uint64_t)t0 * h, (uint64_t)n * h, ep);
        g2f_tensor_read_f64(ta, (uint64_t)t0 * h, (uint64_t)n * h, ea);
        for (size_t i = 0; i < n * h; i++) pf[i] = (float)ep[i];
        for (int g = 0; g < G2F_GELU_COUNT; g++) {
            g2f_ffn_gelu_ws((g2f_gelu)g, pf, n * h, af, n_threads, fws); /* bitwise g2f_gelu_eval */
            pa_margin((g2f_gelu)g, af, pf, ep, ea, n * h, &su, parts, n_threads, &r->gelu_margin_pa[g]);
        }
    }
    r->has_gelu_pa = 1;
    free(buf);
    free(pf);
    free(parts);
    return G2F_OK;
}

static g2f_best_gelu best_of(g2f_gelu g) {
    switch (g) {
    case G2F_GELU_ERF: return G2F_BEST_ERF;
    case G2F_GELU_SIGMOID: return G2F_BEST_SIGMOID;
    case G2F_GELU_MLX: return G2F_BEST_MLX;
    case G2F_GELU_F16_TABLE: return G2F_BEST_F16_TABLE;
    default: return G2F_BEST_TANH;
    }
}

/* Evaluates how (the asked computation, or an accepted cause's) and fills
 * r's numbers, status and GELU evidence from it; *ok: every compared tensor
 * within tolerance. */
static g2f_status assess(const g2f_ffn_how *how, const g2f_fixture_views *fx, size_t L, size_t h,
                         const g2f_verify_params *p, g2f_ffn_eval_ws *ws, g2f_layer_result *r, int *ok,
                         g2f_ffn_eval_result *res, g2f_error *err) {
    g2f_gelu other = g2f_gelu_other(p->gelu);
    g2f_status st = evaluate(how, fx, L, p, ws, res, r, err);
    if (st != G2F_OK) return st;
    r->tokens = fx->n_tokens;
    r->has_pre = res->has_pre;
    r->has_act = res->has_act;
    r->out = res->out;
    r->out_other = res->out_other;
    if (res->has_pre) r->pre = res->pre;
    if (res->has_act) {
        r->act = res->act;
        r->act_other = res->act_other;
    }
    r->sep_out = res->sep_out;
    r->sep_act = res->sep_act;
    r->gelu_separation = res->sep_out > res->sep_act ? res->sep_out : res->sep_act;
    const g2f_cmp *pre = res->has_pre ? &r->pre : NULL;
    *ok = all_pass(&r->out, pre, res->has_act ? &r->act : NULL);
    int ok_other = all_pass(&r->out_other, pre, res->has_act ? &r->act_other : NULL);
    r->status = *ok ? G2F_LAYER_PASS : G2F_LAYER_FAIL;
    if (*ok && ok_other)
        r->best_gelu = G2F_BEST_INDISTINGUISHABLE;
    else if (*ok || ok_other) /* the form that fits: the asked one (any of the five), or the other */
        r->best_gelu = best_of(*ok ? p->gelu : other);
    else
        r->best_gelu = G2F_BEST_NEITHER;
    st = gelu_from_pairs(fx, h, &ws->ffn, p->n_threads, r, err);
    if (st == G2F_OK && r->best_gelu == G2F_BEST_NEITHER) { /* one of the other forms alone fits */
        int fits = -1, count = 0;
        for (int g = G2F_GELU_SIGMOID; g < G2F_GELU_COUNT; g++)
            if (r->gelu_margin[g] <= 1) fits = g, count++;
        if (count == 1)
            r->best_gelu = fits == G2F_GELU_SIGMOID ? G2F_BEST_SIGMOID
                           : fits == G2F_GELU_MLX   ? G2F_BEST_MLX
                                                    : G2F_BEST_F16_TABLE;
    }
    if (st != G2F_OK) g2f_ffn_eval_result_free(res);
    return st;
}

/* The diagnosis code of a GELU form that assess names as the only one fitting a failing layer. */
static int alone_code(g2f_best_gelu b) {
    return b == G2F_BEST_SIGMOID ? G2F_DIAG_GELU_SIGMOID
           : b == G2F_BEST_MLX   ? G2F_DIAG_GELU_MLX_APPROX
           : b == G2F_BEST_F16_TABLE ? G2F_DIAG_GELU_F16_TABLE
                                     : -1;
}

/* On a failing layer, a form that alone fits the tracked tokens (assess) is claimed only when the
 * diagnosis found a cause with it: on every token and held to its tests, as the table's wide
 * tolerance is not on those tokens alone (an F16 port with one hidden unit off was "f16_table" in
 * the gelu column while nothing explained it). */
static void keep_gelu_claim(g2f_layer_result *r) {
    int code = alone_code(r->best_gelu);
    if (code >= 0 && !(r->diagnosis & G2F_DIAG_BIT(code))) r->best_gelu = G2F_BEST_NEITHER;
}

/* --accept: the first cause made only of accepted codes, or NULL. */
static const g2f_cause *accepted_cause(const g2f_layer_result *r, g2f_diag_set accept) {
    for (size_t i = 0; accept && i < r->diag.n_causes; i++)
        if (!(r->diag.causes[i].codes & ~accept)) return &r->diag.causes[i];
    return NULL;
}

static g2f_status verify_layer(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p, size_t L,
                               g2f_ffn_eval_ws *ws, g2f_layer_reader *rd, g2f_layer_result *r, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    g2f_fixture_views fx;
    g2f_layer lw;
    g2f_status st = g2f_fixture_layer_views(f, L, &fx, err);
    if (st != G2F_OK) return st;
    if ((st = g2f_model_layer_read(m, L, rd, &lw, err)) != G2F_OK) return st;
    g2f_ffn_how how;
    memset(&how, 0, sizeof how);
    how.w = &lw.w;
    how.gelu = p->gelu;
    g2f_ffn_eval_result res;
    int ok;
    if ((st = assess(&how, &fx, L, h, p, ws, r, &ok, &res, err)) != G2F_OK) {
        g2f_layer_free(&lw);
        return st;
    }
    if (r->out.nonfinite || r->pre.nonfinite || r->act.nonfinite || res.bad_in >= 0) {
        r->status = G2F_LAYER_FAIL;
        r->best_gelu = G2F_BEST_NEITHER;
        r->diagnosis = G2F_DIAG_BIT(G2F_DIAG_NONFINITE);
        explain_nonfinite(r, res.bad_in_value, res.bad_in, d, h);
    } else {
        if (!ok) {
            /* diagnosis work happens only here, for failing layers */
            g2f_diag_input di = {m, L, &lw.w, &lw, &fx, p->gelu, &p->tol, p->n_threads, ws};
            st = g2f_diagnose_layer(&di, &r->diag, err);
            for (size_t i = 0; i < r->diag.n_causes; i++) r->diagnosis |= r->diag.causes[i].codes;
            if (!r->diag.n_causes) r->diagnosis = G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED);
            const g2f_cause *acc = st == G2F_OK ? accepted_cause(r, p->accept) : NULL;
            if (acc) {
                /* what the user ported on purpose: the layer is judged on the
                 * computation that cause describes (its rounding in the
                 * tolerance, or the same rounded weights), the GELU check too */
                g2f_ffn_how how2;
                g2f_ffn_weights w2;
                float *owned = NULL;
                g2f_ln ln;
                r->accepted = acc->codes;
                r->accepted_cause = *acc;
                if ((st = g2f_diag_how_of(&di, acc, &how2, &w2, &owned, &ln, err)) == G2F_OK) {
                    g2f_ffn_eval_result_free(&res);
                    st = assess(&how2, &fx, L, h, p, ws, r, &ok, &res, err);
                }
                free(owned);
                g2f_ln_free(&ln);
                if (st != G2F_OK) {
                    g2f_layer_free(&lw);
                    return st;
                }
            }
            if (r->status == G2F_LAYER_FAIL) keep_gelu_claim(r);
        }
        explain(r, p->gelu);
    }
    r->ffn_status = r->status; /* the FFN's own verdict; fold_block may fail the layer for another stage */
    g2f_ffn_eval_result_free(&res);
    g2f_layer_free(&lw);
    return st;
}

/* The stages' verdict folded into the layer: the mlp stage mirrors the FFN,
 * the layer fails when any checked stage fails or the chained pass diverges,
 * and a layer whose FFN matches but another stage does not says which. */
static void fold_block(g2f_layer_result *r) {
    g2f_block_result *b = &r->block;
    g2f_stage_result *ms = &b->stage[G2F_STAGE_MLP];
    if (r->has_ffn) {
        g2f_layer_totals tot = g2f_layer_result_totals(r);
        ms->checked = 1;
        ms->pass = r->ffn_status == G2F_LAYER_PASS; /* the FFN's own (fold_block may run twice) */
        ms->mismatched = tot.mismatched;
        ms->total = tot.total;
        ms->margin = tot.margin;
        ms->worst = r->out;
        ms->worst_tensor = "mlp.out";
    }
    int first = -1;
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++)
        if (b->stage[s].checked && !b->stage[s].pass) {
            first = s;
            break;
        }
    if (first < 0 && b->diverged) first = (int)b->first_stage;
    if (first < 0) {
        if (!r->has_ffn) {
            r->status = G2F_LAYER_PASS;
            snprintf(r->explanation, sizeof r->explanation, "layer %zu: every recorded stage of the block matches%s%s",
                     r->layer, b->attn_skipped ? "; " : "", b->attn_skipped ? b->note : "");
        }
        return;
    }
    if (first == G2F_STAGE_MLP && r->ffn_status == G2F_LAYER_FAIL) return; /* the FFN's own explanation */
    const g2f_stage_result *fs = &b->stage[first];
    char codes[256];
    g2f_causes_join(fs->causes, fs->n_causes, codes, sizeof codes);
    r->status = G2F_LAYER_FAIL;
    if (!fs->checked) /* only the chained pass saw it */
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu, %s: computed from h.%zu.in, %s does not match (margin %.3g); the stage alone is not "
                 "recorded", r->layer, g2f_stage_name((g2f_stage)first), r->layer, b->first_tensor, b->first_margin);
    else if (fs->pass) /* only the chained pass failed: its numbers, not the isolated stage's */
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu, %s: computed from h.%zu.in, %s does not match (margin %.3g); from its own recorded "
                 "input the stage matches (margin %.3g)", r->layer, g2f_stage_name((g2f_stage)first), r->layer,
                 b->first_tensor, b->first_margin, fs->margin);
    else if (fs->n_causes)
        snprintf(r->explanation, sizeof r->explanation, "layer %zu, %s: %s%s (%s margin %.3g)", r->layer,
                 g2f_stage_name((g2f_stage)first), codes, fs->n_causes > 1 ? " (undetermined: each fits)" : "",
                 fs->worst_tensor, fs->margin);
    else
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu, %s: does not match and no known cause explains it (%s margin %.3g, %zu of %zu elements)",
                 r->layer, g2f_stage_name((g2f_stage)first), fs->worst_tensor, fs->margin, fs->mismatched, fs->total);
}

/* A scale-family cause (HF's 1/(L+1), or a constant) of layer r's attention. */
static int scale_cause(const g2f_cause *c) {
    return (c->codes & (G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE_LAYER_IDX) | G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE))) != 0;
}

/* Whether every layer where a scale-family cause was seen has a cause of
 * this kind: layer_idx, or the constant `scale` (within 1%). HF's layer_idx
 * is a model's setting: an attention beyond layer 0 that matches at GPT-2's
 * scale contradicts it too (a wrong scale at one layer was named so). */
static int scale_story_holds(const g2f_verify_result *out, int layer_idx, double scale) {
    for (size_t L = 0; L < out->n_layers; L++) {
        const g2f_stage_result *a = &out->layers[L].block.stage[G2F_STAGE_ATTN];
        if (layer_idx && L > 0 && a->checked && a->pass && !a->accepted) return 0;
        int seen = 0, fits = 0;
        for (size_t k = 0; k < a->n_causes; k++) {
            const g2f_cause *c = &a->causes[k];
            seen |= scale_cause(c);
            if (layer_idx) fits |= (c->codes & G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE_LAYER_IDX)) != 0;
            else fits |= (c->codes & G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE)) && fabs(c->scale / scale - 1) < 0.01;
        }
        if (seen && !fits) return 0;
    }
    return 1;
}

/* HF's scale_attn_by_inverse_layer_idx is named only when the factor follows
 * 1/(L+1) on every layer where a wrong scale is seen and no attention beyond
 * layer 0 matches unscaled, and a constant only when it is the same on all of
 * them: at a layer where both fit (llm.c's 1/sqrt(n_embd) equals
 * 1/(sqrt(d_head) (L+1)) at L = 1 when n_head = 4), the story the other
 * layers contradict is dropped; a layer_idx found alone becomes the constant
 * it computed (attn_scale:C, this layer's). Returns whether a layer's causes
 * changed. */
static int reconcile_attn_scale(g2f_verify_result *out) {
    int changed = 0;
    for (size_t L = 0; L < out->n_layers; L++) {
        g2f_stage_result *a = &out->layers[L].block.stage[G2F_STAGE_ATTN];
        size_t w = 0;
        for (size_t k = 0; k < a->n_causes; k++) {
            const g2f_cause *c = &a->causes[k];
            int drop = 0;
            if (c->codes == G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE_LAYER_IDX)) drop = !scale_story_holds(out, 1, 0);
            else if (c->codes == G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE)) drop = !scale_story_holds(out, 0, c->scale);
            if (drop && a->n_causes > 1) {
                changed = 1;
                continue;
            }
            a->causes[w] = *c;
            if (drop && c->codes == G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE_LAYER_IDX)) { /* alone: what this layer did */
                a->causes[w].codes = G2F_DIAG_BIT(G2F_DIAG_ATTN_SCALE);
                a->causes[w].scale_name = 0;
                changed = 1;
            }
            w++;
        }
        a->n_causes = w;
    }
    return changed;
}

/* The model's first divergence in a block: the diagnosis of that stage from
 * the layer's isolated check (the FFN's for mlp), as the layer reports it. */
static void model_codes(g2f_verify_result *out) {
    g2f_model_result *mr = &out->model;
    if (!mr->diverged || mr->first_layer < 0 || (size_t)mr->first_layer >= out->n_layers) return;
    const g2f_layer_result *r = &out->layers[mr->first_layer];
    int s0 = (int)mr->first_stage, iso = s0 == G2F_STAGE_MLP ? r->has_ffn : r->block.stage[s0].checked;
    if (mr->layers && mr->layers[mr->first_layer].stage[s0].worst.nonfinite) { /* NaN or Inf there: that is all */
        snprintf(mr->first_codes, sizeof mr->first_codes, "%s", g2f_diag_name(G2F_DIAG_NONFINITE));
        return;
    }
    if (r->status == G2F_LAYER_SKIPPED || !iso) { /* the stage's own check, the one diagnosed, did not run */
        snprintf(mr->first_not_diagnosed, sizeof mr->first_not_diagnosed, "not diagnosed: %s",
                 r->not_selected ? "the layer is outside --layers"
                                 : "the fixture does not record this stage beside its input");
        return;
    }
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
        if (s != (int)mr->first_stage) continue;
        if (s == G2F_STAGE_MLP)
            g2f_causes_join(r->diag.causes, r->diag.n_causes, mr->first_codes, sizeof mr->first_codes);
        else
            g2f_causes_join(r->block.stage[s].causes, r->block.stage[s].n_causes, mr->first_codes,
                            sizeof mr->first_codes);
    }
}

/* A layer was compared when some stage had both its input and its expected
 * output recorded: the FFN, a stage from its recorded input, or a stage of
 * the block computed from h.L.in. A fixture holding one tensor of a layer
 * (h.0.in alone) compares nothing there. */
static int layer_compared(const g2f_layer_result *r) {
    if (r->has_ffn) return 1;
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++)
        if (r->block.stage[s].checked) return 1;
    return r->block.chained && r->block.chained_compared > 0;
}

/* Appends t's name to names (the first three), counting every one. */
static void add_name(const g2f_tensor *t, char *names, size_t cap, size_t *used, size_t *count) {
    if (!t) return;
    if ((*count)++ < 3 && *used < cap)
        *used += (size_t)snprintf(names + *used, cap - *used, "%s%s", *used ? ", " : "", t->name);
}

void g2f_verify_nothing_compared(const g2f_fixture *f, char *buf, size_t n) {
    char names[200] = "";
    size_t used = 0, count = 0;
    for (int k = 0; k < G2F_ACT_COUNT; k++)
        if (!g2f_act_per_layer((g2f_act)k) && !g2f_act_is_generation((g2f_act)k)) /* a generation is judged apart */
            add_name(g2f_fixture_act(f, 0, (g2f_act)k), names, sizeof names, &used, &count);
    for (size_t L = 0; L < g2f_fixture_n_slots(f); L++) {
        for (int k = G2F_ACT_IN; k <= G2F_ACT_OUT; k++) /* the block's stages, then the FFN's */
            if (!g2f_act_is_ffn((g2f_act)k)) add_name(g2f_fixture_act(f, L, (g2f_act)k), names, sizeof names, &used, &count);
        for (int i = 0; i < 4; i++) add_name(g2f_fixture_act(f, L, g2f_ffn_act(i)), names, sizeof names, &used, &count);
    }
    char more[48] = "";
    if (count > 3) snprintf(more, sizeof more, " and %zu more", count - 3);
    char hint[320] = "";
    size_t total;
    if (g2f_fixture_n_unknown(f, &total)) {
        const g2f_fixture_unknown *u = g2f_fixture_unknown_at(f, 0);
        if (u->why[0]) snprintf(hint, sizeof hint, "; '%s' is recorded but not compared (%s)", u->name, u->why);
        else
            snprintf(hint, sizeof hint, "; '%s' is not a name gpt2ffn knows%s%s%s", u->name,
                     u->suggestion[0] ? " (did you mean '" : "", u->suggestion, u->suggestion[0] ? "'?)" : "");
    }
    snprintf(buf, n,
             "%s records %s%s, but no stage has both its input and its expected output there (a stage needs its "
             "input beside its output: h.L.in with h.L.ln_1.out, h.L.mlp.in with h.L.mlp.out, input_ids with "
             "logits, ...; README: Block and Model)%s",
             g2f_fixture_path(f), count ? names : "no tensor of a selected layer", more, hint);
}

/* The alias's name: other's, or "other + other2". */
static char *alias_other_name(const g2f_fixture_alias *a) {
    if (!a->other2) return g2f_strdup(a->other->name);
    size_t n = strlen(a->other->name) + strlen(a->other2->name) + 4;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s + %s", a->other->name, a->other2->name);
    return s;
}

/* Compares an alias pair value for value (g2f_fixture_alias_values). */
static g2f_status alias_check(const g2f_fixture_alias *a, g2f_alias_check *o, g2f_error *err) {
    memset(o, 0, sizeof *o);
    if (!(o->kept = g2f_strdup(a->kept->name)) || !(o->other = alias_other_name(a)))
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    g2f_alias_values v;
    g2f_status st = g2f_fixture_alias_values(a, &v, err);
    if (st != G2F_OK) return st;
    o->shapes_differ = v.not_comparable;
    o->total = v.total, o->differing = v.differing, o->first = v.first, o->max_abs = v.max_abs;
    o->same = !v.not_comparable && v.differing == 0;
    return G2F_OK;
}

static g2f_status check_aliases(const g2f_fixture *f, g2f_verify_result *out, g2f_error *err) {
    size_t n = g2f_fixture_n_aliases(f);
    if (!n) return G2F_OK;
    if (!(out->aliases = calloc(n, sizeof *out->aliases))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const g2f_fixture_alias *a = g2f_fixture_alias_at(f, i);
        g2f_alias_check *o = &out->aliases[out->n_aliases++];
        g2f_status st = alias_check(a, o, err);
        if (st != G2F_OK) return st;
        out->aliases_differ += !o->same;
        if (a->stream && o->same) { /* the stream's names agree, as in every full capture: not listed */
            free(o->kept);
            free(o->other);
            memset(o, 0, sizeof *o);
            out->n_aliases--;
        }
    }
    return G2F_OK;
}

/* What the pass over the layers works with. */
typedef struct layer_pass {
    const g2f_model *m;
    const g2f_fixture *f;
    const g2f_verify_params *p;
    const g2f_block_params *bp;
    g2f_ffn_eval_ws *ws;
    g2f_layer_reader *rd;
    size_t todo, done;
    unsigned long long bytes;
} layer_pass;

/* The first failing layer and its first diverging stage. */
static void note_first_fail(g2f_verify_result *out, const g2f_layer_result *r, size_t L) {
    if (out->first_fail >= 0) return;
    out->first_fail = (long)L;
    if (!r->has_block) return;
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST && out->first_stage == G2F_STAGE_NONE; s++)
        if (r->block.stage[s].checked && !r->block.stage[s].pass) out->first_stage = (g2f_stage)s;
    if (out->first_stage == G2F_STAGE_NONE && r->block.diverged) out->first_stage = r->block.first_stage;
}

/* Layer L: its FFN and its block's stages, where the fixture records them. */
static g2f_status verify_one(layer_pass *lp, size_t L, g2f_verify_result *out, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(lp->m);
    const g2f_verify_params *p = lp->p;
    g2f_layer_result *r = &out->layers[L];
    r->layer = L;
    r->status = G2F_LAYER_SKIPPED;
    r->best_gelu = G2F_BEST_NEITHER;
    if (p->select && !p->select[L]) {
        r->not_selected = 1;
        snprintf(r->explanation, sizeof r->explanation, "layer %zu not selected by --layers", L);
        return G2F_OK;
    }
    r->has_ffn = g2f_fixture_has_layer(lp->f, L);
    r->has_block = g2f_fixture_has_block(lp->f, L);
    if (!r->has_ffn && !r->has_block) {
        snprintf(r->explanation, sizeof r->explanation, "layer %zu has no h.%zu.mlp.in/out in the fixture", L, L);
        return G2F_OK;
    }
    g2f_status st;
    if ((r->has_ffn && (st = verify_layer(lp->m, lp->f, p, L, lp->ws, lp->rd, r, err)) != G2F_OK) ||
        (r->has_block && (st = g2f_block_check(lp->m, lp->f, L, lp->bp, &r->block, err)) != G2F_OK))
        return st;
    if (r->has_block) fold_block(r);
    if (!layer_compared(r)) { /* recorded tensors, but no input beside its output */
        r->status = G2F_LAYER_SKIPPED;
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %zu: nothing compared: no stage has both its input and its expected output recorded", L);
        if (p->progress) p->progress(p->progress_user, ++lp->done, lp->todo, lp->bytes);
        return G2F_OK;
    }
    out->compared++;
    lp->bytes += (unsigned long long)(2 * mi->n_embd * mi->n_inner) * g2f_dtype_size(mi->dtype);
    if (p->progress) p->progress(p->progress_user, ++lp->done, lp->todo, lp->bytes);
    if (r->status == G2F_LAYER_FAIL) {
        out->failed++;
        note_first_fail(out, r, L);
    }
    return G2F_OK;
}

/* A config whose attention is not GPT-2's (scale_attn_weights false, scale_attn_by_inverse_layer_idx
 * true) is another model than the one recomputed: refused where the fixture records more than the
 * FFN (the blocks' stages, the model's), which the attention feeds. */
static g2f_status gpt2_attention(const g2f_model *m, const g2f_fixture *f, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    if (!mi->attn_unscaled && !mi->attn_by_layer) return G2F_OK;
    int beyond = g2f_fixture_has_model(f);
    for (size_t L = 0; L < mi->n_layer && !beyond; L++) beyond = g2f_fixture_has_block(f, L);
    if (!beyond) return G2F_OK;
    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: config.json sets %s: the attention is not GPT-2's, which gpt2ffn "
                         "recomputes (the FFN alone can be verified)", mi->config_path ? mi->config_path : mi->path,
                         mi->attn_unscaled ? "scale_attn_weights false" : "scale_attn_by_inverse_layer_idx true");
}

g2f_status g2f_verify_run(const g2f_model *m, const g2f_fixture *f, const g2f_verify_params *p,
                          g2f_verify_result *out, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    memset(out, 0, sizeof *out);
    size_t n_head = p->n_head ? p->n_head : mi->n_head;
    if (p->n_head && (mi->n_embd % p->n_head))
        return g2f_error_set(err, G2F_ERR_USAGE, "--n-head %zu does not divide n_embd %zu", p->n_head, mi->n_embd);
    g2f_status st = g2f_fixture_check(f, mi->n_layer, mi->n_embd, mi->n_inner, err);
    if (st == G2F_OK) st = g2f_fixture_check_block(f, mi->n_layer, mi->n_embd, n_head, err);
    if (st == G2F_OK) st = gpt2_attention(m, f, err);
    if (st != G2F_OK) return st;
    out->layers = calloc(mi->n_layer ? mi->n_layer : 1, sizeof *out->layers);
    if (!out->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    out->n_layers = mi->n_layer;
    out->gelu = p->gelu;
    out->n_unknown = g2f_fixture_n_unknown(f, &out->n_unknown_total);
    for (size_t i = 0; i < out->n_unknown; i++) out->unknown[i] = *g2f_fixture_unknown_at(f, i);
    if ((out->n_norms = g2f_fixture_n_norms(f)) && !(out->norms = g2f_alloc_array(out->n_norms, sizeof *out->norms))) {
        g2f_verify_result_free(out);
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < out->n_norms; i++) out->norms[i] = *g2f_fixture_norm_at(f, i);
    if ((st = check_aliases(f, out, err)) != G2F_OK) {
        g2f_verify_result_free(out);
        return st;
    }
    out->first_fail = -1;
    out->first_stage = G2F_STAGE_NONE;
    size_t todo = 0;
    for (size_t L = 0; L < mi->n_layer; L++)
        todo += (!p->select || p->select[L]) && (g2f_fixture_has_layer(f, L) || g2f_fixture_has_block(f, L));
    g2f_ffn_eval_ws ws = {0}; /* kept from layer to layer: fresh buffers cost page faults */
    g2f_block_params bp = {n_head, &p->tol, p->gelu, p->n_threads, 1, 0, 0, 0.0, G2F_ROUND_NONE, p->accept, NULL};
    /* --accept of the checkpoint's own rounding: the block's stages are
     * judged with it too (the FFN's accepted cause widens its tolerance so) */
    if ((mi->dtype == G2F_DTYPE_BF16 && (p->accept & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_BF16_ROUNDED))) ||
        (mi->dtype == G2F_DTYPE_F16 && (p->accept & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED))))
        bp.weight_roundoff = g2f_dtype_store_roundoff(mi->dtype);
    g2f_layer_reader rd = {0}; /* each layer's weights, read where that beats the mapping */
    rd.n_threads = p->n_threads;
    layer_pass lp = {m, f, p, &bp, &ws, &rd, todo, 0, 0};
    for (size_t L = 0; L < mi->n_layer; L++)
        if ((st = verify_one(&lp, L, out, err)) != G2F_OK) {
            g2f_ffn_eval_ws_free(&ws);
            g2f_layer_reader_free(&rd);
            g2f_verify_result_free(out);
            return st;
        }
    g2f_ffn_eval_ws_free(&ws);
    g2f_layer_reader_free(&rd);
    if (reconcile_attn_scale(out))
        for (size_t L = 0; L < mi->n_layer; L++)
            if (out->layers[L].has_block && out->layers[L].status == G2F_LAYER_FAIL) fold_block(&out->layers[L]);
    g2f_forward_params fp = {n_head, &p->tol, p->gelu, p->n_threads, 0, p->accept};
    if ((st = g2f_forward_check(m, f, &fp, &out->model, err)) != G2F_OK) {
        g2f_verify_result_free(out);
        return st;
    }
    model_codes(out);
    if (!out->model.skipped && (st = g2f_loss_stage_check(m, f, &fp, &out->loss, err)) != G2F_OK) {
        g2f_verify_result_free(out);
        return st;
    }
    /* a verdict on nothing compared is no PASS */
    out->pass = (out->compared > 0 || out->model.compared > 0 || out->loss.checked) && out->failed == 0 &&
                (!out->model.present || out->model.skipped || out->model.pass) && out->aliases_differ == 0 &&
                (!out->loss.checked || out->loss.pass);
    return G2F_OK;
}

void g2f_verify_result_free(g2f_verify_result *r) {
    if (!r) return;
    free(r->layers);
    for (size_t i = 0; r->aliases && i < r->n_aliases; i++) {
        free(r->aliases[i].kept);
        free(r->aliases[i].other);
    }
    free(r->aliases);
    free(r->norms);
    g2f_model_result_free(&r->model);
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
    return r->status != G2F_LAYER_SKIPPED && r->has_ffn && r->best_gelu != G2F_BEST_INDISTINGUISHABLE &&
           r->best_gelu != G2F_BEST_NEITHER;
}

/* The GELU form a cause's codes name ("gelu_erf" -> "erf"), NULL when none
 * does; "" when two different forms are named. */
static const char *cause_gelu(const g2f_cause *c) {
    const char *form = NULL;
    for (int d = 0; d < G2F_DIAG_COUNT; d++) {
        const char *name = g2f_diag_name((g2f_diag)d);
        if (!(c->codes & G2F_DIAG_BIT(d)) || strncmp(name, "gelu_", 5) != 0) continue;
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
    int explaining = -1; /* the one other GELU form that alone explains failing layers, -2 when several do */
    size_t compared = 0, explained_by_other = 0, unrelated = 0, unexplained = 0, verified = 0;
    for (size_t i = 0; i < r->n_layers; i++) {
        const g2f_layer_result *l = &r->layers[i];
        if (l->status == G2F_LAYER_SKIPPED || !l->has_ffn) continue; /* the GELU and FFN verdicts */
        compared++;
        verified += (size_t)g2f_layer_gelu_verified(l);
        out->best_tanh += l->best_gelu == G2F_BEST_TANH;
        out->best_erf += l->best_gelu == G2F_BEST_ERF;
        if (l->best_gelu == G2F_BEST_INDISTINGUISHABLE) {
            double sep = l->sep_out > l->sep_act ? l->sep_out : l->sep_act;
            if (!out->gelu_unverified || sep > out->unverified_sep) out->unverified_sep = sep;
            out->gelu_unverified++;
        }
        for (int g = 0; l->status == G2F_LAYER_FAIL && l->diag.n_causes >= 1 && g < G2F_GELU_COUNT; g++) {
            /* the form is part of every explanation, and one of them is the form alone or with precisions
             * --accept takes (so that the option, and that accept, pass) */
            g2f_diag_set bit = G2F_DIAG_BIT(g2f_diag_of_gelu((g2f_gelu)g)), with = 0, any = 0;
            size_t in_all = 0;
            int passes = 0;
            for (size_t c = 0; c < l->diag.n_causes; c++) {
                g2f_diag_set rest = l->diag.causes[c].codes & ~bit;
                in_all += (l->diag.causes[c].codes & bit) != 0;
                any |= rest;
                if ((l->diag.causes[c].codes & bit) && !(rest & ~G2F_ACCEPT_ALL) && (!passes || !rest)) {
                    with = rest; /* the simplest such cause */
                    passes = 1;
                }
            }
            if (g != (int)r->gelu && in_all == l->diag.n_causes && passes) {
                explaining = explaining == -1 || explaining == g ? g : -2;
                explained_by_other++;
                out->other_gelu_with |= with;
                out->other_gelu_beside |= any;
            }
        }
        if (l->status == G2F_LAYER_FAIL && (l->diagnosis & G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED)) &&
            !(l->diagnosis & G2F_DIAG_BIT(G2F_DIAG_NONFINITE))) {
            unexplained++;
            unrelated += fabs(l->out.cosine) < G2F_UNRELATED_COSINE;
        }
    }
    out->gelu_verified = compared > 0 && verified == compared;
    out->other_gelu_explains = compared > 0 && explained_by_other == compared && explaining >= 0;
    if (out->other_gelu_explains) out->other_gelu = (g2f_gelu)explaining;
    out->unrelated = compared > 0 && unrelated == compared;
    out->all_unexplained = compared > 0 && unexplained == compared;
}
