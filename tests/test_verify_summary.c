/* g2f_verify_summarize: the whole-run statements every report makes, from
 * hand-made results, at their thresholds: "unrelated" needs every compared
 * layer unexplained with |cosine| below G2F_UNRELATED_COSINE (0.1), not a
 * port whose layers are merely poor; the GELU claim counts; nothing is
 * "verified" or "unrelated" when no layer was compared. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "g2f_verify.h"

#define N 3

static void failing_unexplained(g2f_layer_result *l, double cosine) {
    memset(l, 0, sizeof *l);
    l->status = G2F_LAYER_FAIL;
    l->has_ffn = 1;
    l->best_gelu = G2F_BEST_NEITHER;
    l->diagnosis = G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED);
    l->out.cosine = cosine;
}

static g2f_verify_summary summarize(g2f_layer_result *layers) {
    g2f_verify_result r = {.gelu = G2F_GELU_TANH, .n_layers = N, .layers = layers, .compared = N, .failed = N,
                           .first_fail = -1, .first_stage = -1};
    g2f_verify_summary s;
    g2f_verify_summarize(&r, &s);
    return s;
}

static void summary_should_call_a_run_unrelated_only_below_the_cosine_threshold(void) {
    g2f_layer_result l[N];
    for (int i = 0; i < N; i++) failing_unexplained(&l[i], i == 1 ? -0.05 : 0.02);
    g2f_verify_summary s = summarize(l);
    CHECK(s.all_unexplained && s.unrelated);
    l[2].out.cosine = 0.3; /* poor, but correlated: a bug, not another checkpoint */
    s = summarize(l);
    CHECK(s.all_unexplained && !s.unrelated);
    l[2].out.cosine = 0.099;
    CHECK(summarize(l).unrelated);
    l[2].out.cosine = 0.11;
    CHECK(!summarize(l).unrelated);
    l[2].out.cosine = -0.11;
    CHECK(!summarize(l).unrelated);
}

static void summary_should_count_the_best_forms_of_compared_layers(void) {
    g2f_layer_result l[N];
    memset(l, 0, sizeof l);
    l[0].status = G2F_LAYER_PASS, l[0].best_gelu = G2F_BEST_TANH;
    l[1].status = G2F_LAYER_PASS, l[1].best_gelu = G2F_BEST_TANH;
    l[2].status = G2F_LAYER_FAIL, l[2].best_gelu = G2F_BEST_ERF;
    for (int i = 0; i < N; i++) l[i].has_ffn = 1; /* the FFN compared: the GELU verdicts count */
    g2f_verify_summary s = summarize(l); /* counts that differ, so that swapped ones show */
    CHECK(s.best_tanh == 2 && s.best_erf == 1);
    CHECK(s.gelu_verified && !s.unrelated && !s.all_unexplained);
    l[0].status = G2F_LAYER_SKIPPED; /* not compared: not counted */
    s = summarize(l);
    CHECK(s.best_tanh == 1 && s.best_erf == 1);
}

static void summary_should_claim_nothing_without_compared_layers(void) {
    g2f_layer_result l[N];
    memset(l, 0, sizeof l);
    for (int i = 0; i < N; i++) l[i].status = G2F_LAYER_SKIPPED;
    g2f_verify_summary s = summarize(l);
    CHECK(!s.gelu_verified && !s.other_gelu_explains && !s.unrelated && !s.all_unexplained);
    CHECK(s.best_tanh == 0 && s.best_erf == 0 && s.gelu_unverified == 0);
}

int main(void) {
    RUN(summary_should_call_a_run_unrelated_only_below_the_cosine_threshold);
    RUN(summary_should_count_the_best_forms_of_compared_layers);
    RUN(summary_should_claim_nothing_without_compared_layers);
    CHECK_EXIT();
}
