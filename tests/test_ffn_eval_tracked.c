/* g2f_ffn_eval with opts.tracked_out: the tracked tokens' evaluation made
 * in the first pass (every token in one chunk) must equal, bit for bit,
 * the separate evaluation of those tokens verify ran before (the other
 * form's c_proj and every GELU form on the tracked list), for the plain
 * computation, a port's stored roundings (pre_u and act_u apart from pre
 * and act) and a layer the asked form does not fit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn_eval.h"

#define D 32
#define H 128
#define T 80 /* more than G2F_EVAL_TRACK, one chunk */

static float gauss(uint64_t *s) {
    double u = 0;
    for (int i = 0; i < 12; i++) {
        *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
        u += (double)(*s >> 11) * 0x1p-53;
    }
    return (float)(u - 6);
}

static g2f_tensor view(const char *name, const float *data, size_t w) {
    g2f_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = G2F_DTYPE_F32;
    t.ndim = 2;
    t.shape[0] = T, t.shape[1] = w;
    t.numel = (uint64_t)T * w;
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

int main(void) {
    static float x[T * D], wfc[D * H], bfc[H], wproj[H * D], bproj[D], pre[T * H], act[T * H], out[T * D];
    uint64_t s = 12345;
    for (size_t i = 0; i < T * D; i++) x[i] = gauss(&s);
    for (size_t i = 0; i < D * H; i++) wfc[i] = 0.5f * gauss(&s);
    for (size_t i = 0; i < H; i++) bfc[i] = 0.1f * gauss(&s);
    for (size_t i = 0; i < H * D; i++) wproj[i] = 0.05f * gauss(&s);
    for (size_t i = 0; i < D; i++) bproj[i] = 0.02f * gauss(&s);
    g2f_ffn_weights w = {D, H, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, wfc, bfc, wproj, bproj};
    g2f_tensor tin = view("in", x, D), tout = view("out", out, D), tpre = view("pre", pre, H), tact = view("act", act, H);
    g2f_fixture_views fx = {{[G2F_ACT_MLP_IN] = &tin, [G2F_ACT_MLP_OUT] = &tout, [G2F_ACT_MLP_PRE] = &tpre,
                             [G2F_ACT_MLP_ACT] = &tact},
                            T};
    g2f_ffn_how how;
    memset(&how, 0, sizeof how);
    how.w = &w;
    how.gelu = G2F_GELU_TANH;
    g2f_ffn_forward(&w, x, T, G2F_GELU_TANH, pre, act, out, 1, NULL);
    tracked_should_match_second_pass("plain tanh, passing", how, &fx);
    g2f_ffn_how stored = how;
    stored.store = G2F_ROUND_F16;
    tracked_should_match_second_pass("f16 stores", stored, &fx);
    g2f_ffn_forward(&w, x, T, G2F_GELU_ERF, pre, act, out, 1, NULL);
    tracked_should_match_second_pass("erf data, tanh asked", how, &fx);
    fx.t[G2F_ACT_MLP_PRE] = fx.t[G2F_ACT_MLP_ACT] = NULL;
    tracked_should_match_second_pass("out only", how, &fx);
    return check_failures ? 1 : 0;
}
