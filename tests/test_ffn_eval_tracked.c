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

/* Evaluates the case both ways and compares what verify reads. */
static void tracked_should_match_second_pass(const char *what, g2f_ffn_how how, const g2f_fixture_views *fx) {
    g2f_tol_params p = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_ffn_eval_ws ws = {0};
    g2f_error err = {0};
    const unsigned all = (1u << G2F_GELU_COUNT) - 1u;
    g2f_ffn_eval_result res, fused, sep;
    g2f_ffn_eval_opts first = {NULL, 0, G2F_EVAL_OTHER_ACT, 0, 0, all, &fused};
    CHECK(g2f_ffn_eval(&how, fx, 0, &p, &first, 2, &ws, &res, &err) == G2F_OK);
    CHECK(res.tracked_done == 1);
    CHECK(res.n_tracked == G2F_EVAL_TRACK);
    g2f_ffn_eval_opts few = {res.tracked, res.n_tracked, G2F_EVAL_OTHER_FULL, 0, all, 0, NULL};
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
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if (!same(fused.form_margin[g], sep.form_margin[g])) {
            fprintf(stderr, "%s: %s margin %.17g in the first pass, %.17g alone\n", what, g2f_gelu_name((g2f_gelu)g),
                    fused.form_margin[g], sep.form_margin[g]);
            check_failures++;
        }
    g2f_ffn_eval_result_free(&res);
    g2f_ffn_eval_result_free(&fused);
    g2f_ffn_eval_result_free(&sep);
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
    g2f_ffn_how stored = how;
    stored.store = G2F_ROUND_F16;
    snprintf(what, sizeof what, "%s: f16 stores", size);
    tracked_should_match_second_pass(what, stored, &fx);
    g2f_ffn_forward(&w, x, t, G2F_GELU_ERF, pre, act, out, 1, NULL);
    snprintf(what, sizeof what, "%s: erf data, tanh asked", size);
    tracked_should_match_second_pass(what, how, &fx);
    fx.t[G2F_ACT_MLP_PRE] = fx.t[G2F_ACT_MLP_ACT] = NULL;
    snprintf(what, sizeof what, "%s: out only", size);
    tracked_should_match_second_pass(what, how, &fx);
    free(x), free(wfc), free(bfc), free(wproj), free(bproj), free(out), free(pre), free(act);
}

int main(void) {
    cases("one chunk", T, D, H);
    /* several chunks: a chunk's rows (at most G2F_EVAL_CHUNK_BYTES of
     * buffers, about 64 h + 40 d bytes a token with pre and act) are far
     * fewer than T2 */
    CHECK((size_t)G2F_EVAL_CHUNK_BYTES / (64 * H2 + 40 * D2) * 2 < T2);
    cases("several chunks", T2, D2, H2);
    return check_failures ? 1 : 0;
}
