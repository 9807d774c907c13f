/* g2f_ffn_eval with opts.tracked_out: the tracked tokens' evaluation made
 * in the first pass (every token in one chunk, or over several with their
 * rows kept aside as they come) must equal, bit for bit, the separate
 * evaluation of those tokens verify ran before (the other form's c_proj
 * and every GELU form on the tracked list), for the plain computation, a
 * port's stored roundings (pre_u and act_u apart from pre and act) and a
 * layer the asked form does not fit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn_eval.h"
#include "g2f_layernorm.h"

/* the small case: more than G2F_EVAL_TRACK tokens, one chunk; the large
 * one: GPT-2 small's widths, several chunks */
#define D 32
#define H 128
#define T 80
#define D2 768
#define H2 3072
#define T2 500

static float gauss(uint64_t *s) {
    double u = 0;
    for (int i = 0; i < 12; i++) {
        *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
        u += (double)(*s >> 11) * 0x1p-53;
    }
    return (float)(u - 6);
}

static g2f_tensor view(const char *name, const float *data, size_t rows, size_t w) {
    g2f_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = G2F_DTYPE_F32;
    t.ndim = 2;
    t.shape[0] = rows, t.shape[1] = w;
    t.numel = (uint64_t)rows * w;
    t.data = (const unsigned char *)data;
    t.nbytes = t.numel * 4;
    return t;
}

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void cmp_should_match(const char *what, const char *field, const g2f_cmp *a, const g2f_cmp *b) {
    if (a->mismatched != b->mismatched || a->total != b->total || !same(a->margin, b->margin) ||
        !same(a->max_abs, b->max_abs) || a->worst != b->worst) {
        fprintf(stderr, "%s: %s differs: margin %.17g vs %.17g, mismatched %zu vs %zu\n", what, field, a->margin,
                b->margin, a->mismatched, b->mismatched);
        check_failures++;
    }
}

/* Every GELU form's margin: the first pass's tracked result a against the
 * separate evaluation b. */
static void margins_should_match(const char *what, const g2f_ffn_eval_result *a, const g2f_ffn_eval_result *b) {
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if (!same(a->form_margin[g], b->form_margin[g])) {
            fprintf(stderr, "%s: %s margin %.17g in the first pass, %.17g alone\n", what, g2f_gelu_name((g2f_gelu)g),
                    a->form_margin[g], b->form_margin[g]);
            check_failures++;
        }
}

/* Evaluates the case both ways and compares what verify reads. */
static void tracked_should_match_second_pass(const char *what, g2f_ffn_how how, const g2f_fixture_views *fx) {
    g2f_tol_params p = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_ffn_eval_ws ws = {0};
    g2f_error err = {0};
    const unsigned all = (1u << G2F_GELU_COUNT) - 1u;
    g2f_ffn_eval_result res, fused = {0}, sep;
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, 0, all, &fused, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, &p, &first, 2, &ws, &res, &err) == G2F_OK);
    CHECK(res.tracked_done == 1);
    CHECK(res.n_tracked == G2F_EVAL_TRACK);
    if (res.tracked_done != 1) { /* fused was not filled */
        g2f_ffn_eval_result_free(&res);
        g2f_ffn_eval_ws_free(&ws);
        return;
    }
    g2f_ffn_eval_opts few = {res.tracked, res.n_tracked, G2F_EVAL_OTHER_FULL, 0, all, 0, NULL, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, &p, &few, 1, &ws, &sep, &err) == G2F_OK);
    CHECK(fused.tokens == sep.tokens);
    cmp_should_match(what, "out", &fused.out, &sep.out);
    cmp_should_match(what, "out_other", &fused.out_other, &sep.out_other);
    cmp_should_match(what, "act_other", &fused.act_other, &sep.act_other);
    if (!same(fused.sep_out, sep.sep_out) || !same(fused.sep_act, sep.sep_act)) {
        fprintf(stderr, "%s: separations differ: %.17g %.17g vs %.17g %.17g\n", what, fused.sep_out, fused.sep_act,
                sep.sep_out, sep.sep_act);
        check_failures++;
    }
    margins_should_match(what, &fused, &sep);
    g2f_ffn_eval_result_free(&res);
    g2f_ffn_eval_result_free(&fused);
    g2f_ffn_eval_result_free(&sep);
    g2f_ffn_eval_ws_free(&ws);
}

/* opts.forms asked in the same pass as opts.tracked_out (verify asks one
 * or the other): the tracked tokens' evaluation still that of a separate
 * pass (the forms' pass used to rewrite act and the tolerances of a single
 * chunk before the tracked rows were read). */
static void tracked_with_forms_asked(const char *what, g2f_ffn_how how, const g2f_fixture_views *fx) {
    g2f_tol_params p = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_ffn_eval_ws ws = {0};
    g2f_error err = {0};
    const unsigned all = (1u << G2F_GELU_COUNT) - 1u;
    g2f_ffn_eval_result res, tr = {0}, sep;
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, all, all, &tr, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, &p, &first, 2, &ws, &res, &err) == G2F_OK);
    CHECK(res.tracked_done == 1);
    if (res.tracked_done == 1) {
        g2f_ffn_eval_opts few = {res.tracked, res.n_tracked, G2F_EVAL_OTHER_FULL, 0, all, 0, NULL, NULL, NULL};
        CHECK(g2f_ffn_eval(&how, fx, 0, &p, &few, 1, &ws, &sep, &err) == G2F_OK);
        cmp_should_match(what, "out", &tr.out, &sep.out);
        if (tr.has_pre) cmp_should_match(what, "pre", &tr.pre, &sep.pre);
        if (tr.has_act) cmp_should_match(what, "act", &tr.act, &sep.act);
        margins_should_match(what, &tr, &sep);
        g2f_ffn_eval_result_free(&sep);
    }
    g2f_ffn_eval_result_free(&res);
    g2f_ffn_eval_result_free(&tr);
    g2f_ffn_eval_ws_free(&ws);
}

/* The four cases on t tokens of widths d, h (size names them). */
static void cases(const char *size, size_t t, size_t d, size_t h) {
    float *x = malloc(t * d * sizeof(float)), *wfc = malloc(d * h * sizeof(float)), *bfc = malloc(h * sizeof(float));
    float *wproj = malloc(h * d * sizeof(float)), *bproj = malloc(d * sizeof(float)), *out = malloc(t * d * sizeof(float));
    float *pre = malloc(t * h * sizeof(float)), *act = malloc(t * h * sizeof(float));
    CHECK(x && wfc && bfc && wproj && bproj && out && pre && act);
    if (!(x && wfc && bfc && wproj && bproj && out && pre && act)) return;
    uint64_t s = 12345;
    for (size_t i = 0; i < t * d; i++) x[i] = gauss(&s);
    for (size_t i = 0; i < d * h; i++) wfc[i] = 0.5f * (float)sqrt(32.0 / (double)d) * gauss(&s);
    for (size_t i = 0; i < h; i++) bfc[i] = 0.1f * gauss(&s);
    for (size_t i = 0; i < h * d; i++) wproj[i] = 0.05f * (float)sqrt(128.0 / (double)h) * gauss(&s);
    for (size_t i = 0; i < d; i++) bproj[i] = 0.02f * gauss(&s);
    g2f_ffn_weights w = {d, h, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, wfc, bfc, wproj, bproj};
    g2f_tensor tin = view("in", x, t, d), tout = view("out", out, t, d), tpre = view("pre", pre, t, h),
               tact = view("act", act, t, h);
    g2f_fixture_views fx = {{[G2F_ACT_MLP_IN] = &tin, [G2F_ACT_MLP_OUT] = &tout, [G2F_ACT_MLP_PRE] = &tpre,
                             [G2F_ACT_MLP_ACT] = &tact},
                            t};
    g2f_ffn_how how;
    memset(&how, 0, sizeof how);
    how.w = &w;
    how.gelu = G2F_GELU_TANH;
    char what[96];
    g2f_ffn_forward(&w, x, t, G2F_GELU_TANH, pre, act, out, 1, NULL);
    snprintf(what, sizeof what, "%s: plain tanh, passing", size);
    tracked_should_match_second_pass(what, how, &fx);
    snprintf(what, sizeof what, "%s: other forms asked too", size);
    tracked_with_forms_asked(what, how, &fx);
    g2f_ffn_how stored = how;
    stored.store = G2F_ROUND_F16;
    snprintf(what, sizeof what, "%s: f16 stores", size);
    tracked_should_match_second_pass(what, stored, &fx);
    snprintf(what, sizeof what, "%s: f16 stores, other forms asked too", size);
    tracked_with_forms_asked(what, stored, &fx);
    g2f_ffn_forward(&w, x, t, G2F_GELU_ERF, pre, act, out, 1, NULL);
    snprintf(what, sizeof what, "%s: erf data, tanh asked", size);
    tracked_should_match_second_pass(what, how, &fx);
    fx.t[G2F_ACT_MLP_PRE] = fx.t[G2F_ACT_MLP_ACT] = NULL;
    snprintf(what, sizeof what, "%s: out only", size);
    tracked_should_match_second_pass(what, how, &fx);
    free(x), free(wfc), free(bfc), free(wproj), free(bproj), free(out), free(pre), free(act);
}

/* ---- several chunks: every kind of computation `how` describes ------- */

#define ALL_FORMS ((1u << G2F_GELU_COUNT) - 1u)

/* one workspace for every variant below, sizes and hows changing between
 * calls: ws->buf and ws->track_buf reused and grown */
static g2f_ffn_eval_ws shared_ws;

static void same_result(const char *what, const char *which, const g2f_ffn_eval_result *a,
                        const g2f_ffn_eval_result *b, int tracked_list) {
    char f[160];
    if (a->tokens != b->tokens || a->has_pre != b->has_pre || a->has_act != b->has_act) {
        fprintf(stderr, "%s: %s: tokens %zu vs %zu, has_pre %d vs %d, has_act %d vs %d\n", what, which, a->tokens,
                b->tokens, a->has_pre, b->has_pre, a->has_act, b->has_act);
        check_failures++;
    }
    snprintf(f, sizeof f, "%s out", which), cmp_should_match(what, f, &a->out, &b->out);
    if (a->has_pre) snprintf(f, sizeof f, "%s pre", which), cmp_should_match(what, f, &a->pre, &b->pre);
    if (a->has_act) snprintf(f, sizeof f, "%s act", which), cmp_should_match(what, f, &a->act, &b->act);
    if (a->has_act)
        snprintf(f, sizeof f, "%s act_other", which), cmp_should_match(what, f, &a->act_other, &b->act_other);
    if (!same(a->sep_act, b->sep_act)) {
        fprintf(stderr, "%s: %s sep_act %.17g vs %.17g\n", what, which, a->sep_act, b->sep_act);
        check_failures++;
    }
    if (tracked_list && (a->n_tracked != b->n_tracked || memcmp(a->tracked, b->tracked, a->n_tracked * sizeof(size_t)))) {
        fprintf(stderr, "%s: %s: the tracked tokens differ\n", what, which);
        check_failures++;
    }
}

/* The first pass with tracked_out over several chunks against (a) the same
 * pass without tracked_out (the main result: the s_fc/q swap changes
 * nothing) and (b) the separate evaluation of the tracked tokens, every
 * field verify reads and pre/act too. */
static void several(const char *what, g2f_ffn_how how, const g2f_fixture_views *fx, const g2f_tol_params *p, int nt) {
    g2f_error err = {0};
    g2f_ffn_eval_result res, bare, fused, sep;
    memset(&fused, 0, sizeof fused);
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, 0, ALL_FORMS, &fused, NULL, NULL};
    g2f_ffn_eval_opts none = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, 0, 0, NULL, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, p, &first, nt, &shared_ws, &res, &err) == G2F_OK);
    CHECK(g2f_ffn_eval(&how, fx, 0, p, &none, nt, &shared_ws, &bare, &err) == G2F_OK);
    same_result(what, "first pass vs without tracked_out", &res, &bare, 1);
    if (res.tracked_done != 1 || res.n_tracked != G2F_EVAL_TRACK) {
        fprintf(stderr, "%s: tracked_done %d, %zu tracked\n", what, res.tracked_done, res.n_tracked);
        check_failures++;
        g2f_ffn_eval_result_free(&res), g2f_ffn_eval_result_free(&bare);
        return;
    }
    /* the store path is what is tested: tracked tokens from several chunks */
    if (!(res.tracked[G2F_EVAL_TRACK - 1] - res.tracked[0] > fx->n_tokens / 3)) {
        fprintf(stderr, "%s: tracked tokens %zu .. %zu: not over several chunks\n", what, res.tracked[0],
                res.tracked[G2F_EVAL_TRACK - 1]);
        check_failures++;
    }
    g2f_ffn_eval_opts few = {res.tracked, res.n_tracked, G2F_EVAL_OTHER_FULL, 0, ALL_FORMS, 0, NULL, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, p, &few, nt == 1 ? 2 : 1, &shared_ws, &sep, &err) == G2F_OK);
    same_result(what, "tracked vs separate", &fused, &sep, 1);
    if (getenv("TRACKED_VERBOSE"))
        fprintf(stderr, "%s: tracked %zu..%zu, main out margin %.3g (%zu bad), tracked out %.3g (%zu bad), "
                "out_other %zu bad, forms %.3g %.3g %.3g %.3g %.3g\n", what, res.tracked[0],
                res.tracked[G2F_EVAL_TRACK - 1], res.out.margin, res.out.mismatched, fused.out.margin,
                fused.out.mismatched, fused.out_other.mismatched, fused.form_margin[0], fused.form_margin[1],
                fused.form_margin[2], fused.form_margin[3], fused.form_margin[4]);
    cmp_should_match(what, "out_other", &fused.out_other, &sep.out_other);
    if (!same(fused.sep_out, sep.sep_out)) {
        fprintf(stderr, "%s: sep_out %.17g vs %.17g\n", what, fused.sep_out, sep.sep_out);
        check_failures++;
    }
    margins_should_match(what, &fused, &sep);
    g2f_ffn_eval_result_free(&res), g2f_ffn_eval_result_free(&bare);
    g2f_ffn_eval_result_free(&fused), g2f_ffn_eval_result_free(&sep);
}

/* opts.forms over several chunks (the swapped s_fc/q carried from chunk
 * to chunk): each form's margin as a separate g2f_ffn_eval with that form. */
static void forms_several(const char *what, g2f_ffn_how how, const g2f_fixture_views *fx, const g2f_tol_params *p) {
    g2f_error err = {0};
    g2f_ffn_eval_result all, one;
    g2f_ffn_eval_opts o = {NULL, 0, G2F_EVAL_OTHER_FULL, 0, ALL_FORMS, 0, NULL, NULL, NULL};
    CHECK(g2f_ffn_eval(&how, fx, 0, p, &o, 2, &shared_ws, &all, &err) == G2F_OK);
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        g2f_ffn_how hg = how;
        hg.gelu = (g2f_gelu)g;
        g2f_ffn_eval_opts o1 = {NULL, 0, G2F_EVAL_OTHER_NONE, 0, 0, 0, NULL, NULL, NULL};
        CHECK(g2f_ffn_eval(&hg, fx, 0, p, &o1, 2, &shared_ws, &one, &err) == G2F_OK);
        if (!same(all.form_margin[g], g2f_ffn_eval_margin(&one))) {
            fprintf(stderr, "%s: forms: %s margin %.17g with the others, %.17g alone\n", what,
                    g2f_gelu_name((g2f_gelu)g), all.form_margin[g], g2f_ffn_eval_margin(&one));
            check_failures++;
        }
        g2f_ffn_eval_result_free(&one);
    }
    g2f_ffn_eval_result_free(&all);
}

typedef struct layer_data {
    size_t t, d, h;
    float *x, *xl, *wfc, *bfc, *wproj, *bproj, *out, *pre, *act, *lnw, *lnb, *wvfc, *wvproj;
    g2f_ffn_weights w;
    g2f_ln ln;
    g2f_tensor tin, tout, tpre, tact;
} layer_data;

static int layer_make(layer_data *L, size_t t, size_t d, size_t h, uint64_t seed) {
    memset(L, 0, sizeof *L);
    L->t = t, L->d = d, L->h = h;
    L->x = malloc(t * d * 4), L->xl = malloc(t * d * 4), L->wfc = malloc(d * h * 4), L->bfc = malloc(h * 4);
    L->wproj = malloc(h * d * 4), L->bproj = malloc(d * 4), L->out = calloc(t * d, 4); /* written by layer_ref */
    L->pre = calloc(t * h, 4), L->act = calloc(t * h, 4), L->lnw = malloc(d * 4), L->lnb = malloc(d * 4);
    L->wvfc = malloc(d * 4), L->wvproj = malloc(h * 4);
    if (!(L->x && L->xl && L->wfc && L->bfc && L->wproj && L->bproj && L->out && L->pre && L->act && L->lnw &&
          L->lnb && L->wvfc && L->wvproj))
        return 0;
    uint64_t s = seed;
    for (size_t i = 0; i < t * d; i++) L->x[i] = 3.0f * gauss(&s) + 0.5f;
    for (size_t i = 0; i < d * h; i++) L->wfc[i] = 0.5f * (float)sqrt(32.0 / (double)d) * gauss(&s);
    for (size_t i = 0; i < h; i++) L->bfc[i] = 0.1f * gauss(&s);
    for (size_t i = 0; i < h * d; i++) L->wproj[i] = 0.05f * (float)sqrt(128.0 / (double)h) * gauss(&s);
    for (size_t i = 0; i < d; i++) L->bproj[i] = 0.02f * gauss(&s);
    for (size_t i = 0; i < d; i++) L->lnw[i] = 1.0f + 0.1f * gauss(&s), L->lnb[i] = 0.05f * gauss(&s);
    for (size_t i = 0; i < d; i++) L->wvfc[i] = (float)ldexp(1.0 + fabs(gauss(&s)), -30);
    for (size_t i = 0; i < h; i++) L->wvproj[i] = (float)ldexp(1.0 + fabs(gauss(&s)), -32);
    L->w = (g2f_ffn_weights){d, h, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, L->wfc, L->bfc, L->wproj, L->bproj};
    L->ln.d = d, L->ln.w = L->lnw, L->ln.b = L->lnb, L->ln.eps = 1e-5, L->ln.found = 1;
    L->tin = view("in", L->x, t, d), L->tout = view("out", L->out, t, d);
    L->tpre = view("pre", L->pre, t, h), L->tact = view("act", L->act, t, h);
    return 1;
}

static void layer_free(layer_data *L) {
    free(L->x), free(L->xl), free(L->wfc), free(L->bfc), free(L->wproj), free(L->bproj), free(L->out);
    free(L->pre), free(L->act), free(L->lnw), free(L->lnb), free(L->wvfc), free(L->wvproj);
}

/* The reference: form g on x (LayerNorm first with ln), plus x (residual). */
static void layer_ref(layer_data *L, g2f_gelu g, int ln, int residual) {
    const float *in = L->x;
    if (ln) g2f_ln_forward(L->x, L->t, L->d, L->lnw, L->lnb, 1e-5, L->xl, NULL, NULL, 1), in = L->xl;
    g2f_ffn_forward(&L->w, in, L->t, g, L->pre, L->act, L->out, 1, NULL);
    if (residual)
        for (size_t i = 0; i < L->t * L->d; i++) L->out[i] += L->x[i];
}

static g2f_fixture_views layer_fx(layer_data *L, int pre, int act) {
    g2f_fixture_views fx = {{[G2F_ACT_MLP_IN] = &L->tin, [G2F_ACT_MLP_OUT] = &L->tout,
                             [G2F_ACT_MLP_PRE] = pre ? &L->tpre : NULL, [G2F_ACT_MLP_ACT] = act ? &L->tact : NULL},
                            L->t};
    return fx;
}

/* The kinds of computation whose rows the store must carry: c_fc's input
 * apart from x (LayerNorm, a rounded GEMM input; read again by the
 * weights' variance), pre apart from pre_u (stores rounded), the flips,
 * out rounded, residual and clip, the f16 table and erf asked, fixtures
 * without pre or act, NaN rows (scores at infinity), 3 threads, and the
 * other forms asked in the same pass; all (a review ran these and more
 * once: user tolerance, tf32, bf16, MLX, sigmoid, ties, each alone, at
 * 768/3072 too), else plain and everything at once (another size, on the
 * same workspace). */
static void variants(const char *size, size_t t, size_t d, size_t h, int all) {
    layer_data L;
    CHECK(layer_make(&L, t, d, h, 777));
    if (!L.x) return layer_free(&L);
    g2f_tol_params p = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_fixture_views fx = layer_fx(&L, 1, 1);
    g2f_ffn_how base;
    memset(&base, 0, sizeof base);
    base.w = &L.w;
    base.gelu = G2F_GELU_TANH;
    char what[160];
#define V(name, ...)                                                                                           \
    do {                                                                                                       \
        g2f_ffn_how hw = base;                                                                                 \
        __VA_ARGS__;                                                                                           \
        snprintf(what, sizeof what, "%s: %s", size, name);                                                     \
        several(what, hw, &fx, &p, 2);                                                                         \
    } while (0)
#define EVERYTHING                                                                                             \
    hw.ln = &L.ln, hw.gemm_in = G2F_ROUND_TF32, hw.store = G2F_ROUND_BF16, hw.out_round = G2F_ROUND_F16,       \
    hw.residual = 1, hw.wvar_fc = L.wvfc, hw.wvar_proj = L.wvproj, hw.clip = 1, hw.gelu = G2F_GELU_F16_TABLE, \
    hw.weight_roundoff = ldexp(1.0, -9)
    layer_ref(&L, G2F_GELU_TANH, 1, 1);
    V("everything", EVERYTHING);
    if (!all) {
        layer_ref(&L, G2F_GELU_TANH, 0, 0);
        V("plain", (void)0);
        layer_free(&L);
        return;
    }
    layer_ref(&L, G2F_GELU_TANH, 1, 0);
    V("ln + wvar_fc", hw.ln = &L.ln, hw.wvar_fc = L.wvfc);
    layer_ref(&L, G2F_GELU_TANH, 0, 0);
    V("gemm_in f16 = store f16", hw.gemm_in = G2F_ROUND_F16, hw.store = G2F_ROUND_F16);
    V("out_round bf16 + store f16", hw.out_round = G2F_ROUND_BF16, hw.store = G2F_ROUND_F16);
    V("f16 table asked + store f16", hw.gelu = G2F_GELU_F16_TABLE, hw.store = G2F_ROUND_F16);
    layer_ref(&L, G2F_GELU_TANH, 0, 1);
    V("residual + clip + out_round f16", hw.residual = 1, hw.clip = 1, hw.out_round = G2F_ROUND_F16);
    layer_ref(&L, G2F_GELU_ERF, 0, 0);
    V("erf asked, erf data", hw.gelu = G2F_GELU_ERF);
    layer_ref(&L, G2F_GELU_TANH, 1, 1);
    fx = layer_fx(&L, 0, 0);
    V("everything, out only", EVERYTHING);
    fx = layer_fx(&L, 1, 1);
    layer_ref(&L, G2F_GELU_TANH, 0, 0);
    snprintf(what, sizeof what, "%s: 3 threads", size);
    several(what, base, &fx, &p, 3);
    snprintf(what, sizeof what, "%s: forms asked", size);
    forms_several(what, base, &fx, &p);
    for (size_t r = 3; r < t; r += 11) L.x[r * d + r % d] = NAN; /* more NaN rows than tracked tokens */
    layer_ref(&L, G2F_GELU_TANH, 1, 1);
    V("NaN rows, everything", EVERYTHING);
#undef V
#undef EVERYTHING
    layer_free(&L);
}

int main(void) {
    cases("one chunk", T, D, H);
    /* several chunks: a chunk's rows (at most G2F_EVAL_CHUNK_BYTES of
     * buffers, about 64 h + 40 d bytes a token with pre and act) are far
     * fewer than T2 */
    CHECK((size_t)G2F_EVAL_CHUNK_BYTES / (64 * H2 + 40 * D2) * 2 < T2);
    cases("several chunks", T2, D2, H2);
    /* every kind of computation over several chunks, at widths whose
     * chunks are short (95 and 96 rows: a wide hidden layer fills the
     * buffers) so that the portable build's kernel gets through them too;
     * the workspace shared across sizes */
    CHECK((size_t)G2F_EVAL_CHUNK_BYTES / (64 * 8192 + 40 * 32) < 200 &&
          (size_t)G2F_EVAL_CHUNK_BYTES / (64 * 6144 + 40 * 48) < 200);
    variants("32/8192 x 200", 200, 32, 8192, 1);
    variants("48/6144 x 200", 200, 48, 6144, 0);
    variants("32/8192 x 200 again", 200, 32, 8192, 0);
    g2f_ffn_eval_ws_free(&shared_ws);
    return check_failures ? 1 : 0;
}
