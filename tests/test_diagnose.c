/* Diagnosis: every code is reported on the fixture made with that mutation
 * (fixtures/diag, made by scripts/export_fixtures.py), none on clean ones;
 * pairs; undetermined and unexplained cases; the F16-checkpoint case. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "g2f_verify.h"
#include "test_util.h"
#include "st_rewrite.h"

static const char *fixtures;
static char dir[256];

typedef struct run_result {
    g2f_status status;
    g2f_verify_result res;
    char err[G2F_ERROR_MSG_MAX];
} run_result;

static run_result verify(const char *model_path, const char *fixture_path, g2f_gelu gelu) {
    run_result r;
    memset(&r, 0, sizeof r);
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    r.status = g2f_model_open(model_path, NULL, &m, &err);
    if (r.status == G2F_OK) r.status = g2f_fixture_open(fixture_path, &f, &err);
    if (r.status == G2F_OK) {
        g2f_verify_params p = {.gelu = gelu, .gelu_source = "test", .select = NULL, .tol = {0, 0, 0, G2F_TOL_LAMBDA}, .n_threads = 2};
        r.status = g2f_verify_run(m, f, &p, &r.res, &err);
    }
    if (r.status != G2F_OK) fprintf(stderr, "verify %s %s: %s\n", model_path, fixture_path, err.msg);
    memcpy(r.err, err.msg, sizeof r.err);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return r;
}

static void codes_of(const g2f_layer_result *l, char *buf, size_t n) {
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < l->diag.n_causes && used < n; i++) {
        char one[128];
        g2f_cause_codes(&l->diag.causes[i], one, sizeof one);
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " | " : "", one);
    }
    if (!l->diag.n_causes && (l->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_NONFINITE)))) snprintf(buf, n, "nonfinite");
    if (!l->diag.n_causes && (l->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED)))) snprintf(buf, n, "unexplained");
}

/* A failing layer's gelu column names another form only with a cause that has it. */
static void check_gelu_claim(const g2f_layer_result *l, const char *fixture, size_t L, const char *got, int line) {
    static const struct { g2f_best_gelu b; g2f_diag d; } alone[] = {
        {G2F_BEST_SIGMOID, G2F_DIAG_GELU_SIGMOID}, {G2F_BEST_MLX, G2F_DIAG_GELU_MLX_APPROX},
        {G2F_BEST_F16_TABLE, G2F_DIAG_GELU_F16_TABLE}};
    for (size_t k = 0; k < 3; k++)
        if (l->status == G2F_LAYER_FAIL && l->best_gelu == alone[k].b && !(l->diagnosis & G2F_DIAG_BIT(alone[k].d))) {
            fprintf(stderr, "line %d: %s layer %zu: gelu %s with codes \"%s\"\n", line, fixture, L,
                    g2f_best_gelu_name(l->best_gelu), got);
            check_failures++;
        }
}

/* Every layer in `layers` (bit mask) fails with exactly `want`; the others pass. undetermined:
 * `want` lists alternatives the data cannot single out (TF32 and ggml's F16 matmul both round to
 * 10-bit significands), and the layer says so. */
static void expect_codes(const char *fixture, unsigned layers, const char *want, int undetermined, int line) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/%s", fixtures, fixture);
    run_result r = verify(model, fx, G2F_GELU_TANH);
    if (r.status != G2F_OK) {
        check_failures++;
        return;
    }
    for (size_t L = 0; L < r.res.n_layers; L++) {
        const g2f_layer_result *l = &r.res.layers[L];
        char got[512];
        codes_of(l, got, sizeof got);
        int mutated = (layers >> L) & 1u;
        int ok = mutated ? (l->status == G2F_LAYER_FAIL && !strcmp(got, want) && l->diag.undetermined == undetermined)
                         : (l->status == G2F_LAYER_PASS && l->diagnosis == 0 && l->diag.hypotheses_tried == 0);
        if (!ok) {
            fprintf(stderr, "line %d: %s layer %zu: status %s, codes \"%s\", wanted %s\n", line, fixture, L,
                    g2f_layer_status_name(l->status), got, mutated ? want : "a pass without diagnosis");
            check_failures++;
        } else if (mutated && l->diag.n_causes) {
            CHECK(l->diag.causes[0].margin <= 1.0); /* a cause is reported only when it fits */
        }
        check_gelu_claim(l, fixture, L, got, line);
    }
    g2f_verify_result_free(&r.res);
}
#define EXPECT_CODES(f, layers, want) expect_codes(f, layers, want, 0, __LINE__)
#define EXPECT_UNDETERMINED(f, layers, want) expect_codes(f, layers, want, 1, __LINE__)

static void diagnosis_should_name_each_single_mutation(void) {
    EXPECT_CODES("erf.safetensors", 0xf, "gelu_erf");
    EXPECT_CODES("fc_bias_missing.safetensors", 0xf, "fc_bias_missing");
    EXPECT_CODES("proj_bias_missing.safetensors", 0xf, "proj_bias_missing");
    EXPECT_CODES("residual_included.safetensors", 0xf, "residual_included");
    EXPECT_CODES("weights_f16_rounded.safetensors", 0xf, "weights_f16_rounded");
    EXPECT_CODES("weights_bf16_rounded.safetensors", 0xf, "weights_bf16_rounded");
    EXPECT_CODES("layout_misread_fc.safetensors", 0xf, "layout_misread:c_fc");
    EXPECT_CODES("layout_misread_proj.safetensors", 0xf, "layout_misread:c_proj");
    EXPECT_CODES("layout_misread_both.safetensors", 0xf, "layout_misread:both");
    EXPECT_CODES("weights_from_layer.safetensors", 0x4, "weights_from_layer:0");
    EXPECT_CODES("nonfinite.safetensors", 0xf, "nonfinite");
}

/* An F16 reference (its rounding in every tolerance): a bug the wide tolerance of a precision
 * path takes is not that path (one output channel off by 0.01 was act_bf16_rounded |
 * autocast_f16, one hidden unit off by 0.05 act_bf16_rounded), and bfloat16 weights or autocast are
 * still told apart from the paths near them (they were named act_bf16_rounded and autocast_f16). */
static void diagnosis_should_not_take_a_bug_for_a_precision_path_on_an_f16_reference(void) {
    EXPECT_CODES("f16_perturb_proj_5.safetensors", 0xf, "unexplained");
    EXPECT_CODES("f16_perturb_act_17.safetensors", 0xf, "unexplained");
    EXPECT_CODES("f16_weights_bf16_rounded.safetensors", 0xf, "weights_bf16_rounded");
    EXPECT_CODES("f16_autocast_bf16.safetensors", 0xf, "autocast_bf16");
    /* a missing bias and an output channel or hidden unit off: no pair of the bias with a precision
     * path (fc_bias_missing,autocast_bf16; the precision judged against the bias's fix alone) */
    EXPECT_CODES("f16_fc_bias_missing_perturb_proj_5.safetensors", 0xf, "unexplained");
    EXPECT_CODES("f16_proj_bias_missing_perturb_act_17.safetensors", 0xf, "unexplained");
    /* F16 weights (or ggml's F16 matmul) with an output channel off: not autocast_f16 (the weights'
     * half true, the activations' tolerance taking the channel), nor gelu_f16_table with f16_matmul */
    EXPECT_CODES("f16_weights_f16_rounded_perturb_proj_3.safetensors", 0xf, "unexplained");
    EXPECT_CODES("f16_f16_matmul_perturb_proj_3.safetensors", 0xf, "unexplained");
    /* ... or a hidden unit off: within tf32_matmul's tolerance at layer 3, element by element, but
     * 4.6 times the noise that path's rounding allows (too_noisy) */
    EXPECT_CODES("f16_weights_f16_rounded_perturb_act_17.safetensors", 0xf, "unexplained");
    EXPECT_CODES("f16_f16_matmul_perturb_act_17.safetensors", 0xf, "unexplained");
    /* that noise test spares a true precision path that reproduces most of the error: TF32 matmuls
     * with a missing bias on 64 tokens leave 2.4 times the model's noise (a few whole-step flips) */
    EXPECT_UNDETERMINED("tf32_matmul_proj_bias_missing_64.safetensors", 0xa,
                        "proj_bias_missing,tf32_matmul | proj_bias_missing,f16_matmul");
    /* the GELU forms alike under F16's rounding: another layer's weights alone, not also with erf */
    EXPECT_CODES("f16_weights_from_layer.safetensors", 0x4, "weights_from_layer:0");
}

static void diagnosis_should_name_pairs(void) {
    EXPECT_CODES("erf_fc_bias_missing.safetensors", 0xf, "gelu_erf,fc_bias_missing");
    EXPECT_CODES("erf_residual.safetensors", 0xf, "gelu_erf,residual_included");
}

/* The codes of issue 16 (GELU variants, precision paths, quantized weights,
 * the LayerNorm input), each on the tiny model (trained-like magnitudes, in
 * and out of layers 0-1) and on the small one (small random weights, pre and
 * act recorded): exactly its code, nothing else, nothing undetermined. */
static void expect_codes_on(const char *model_dir, const char *fixture, unsigned layers, const char *want, int line) {

    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/%s", fixtures, model_dir);
    snprintf(fx, sizeof fx, "%s/%s", fixtures, fixture);
    run_result r = verify(model, fx, G2F_GELU_TANH);
    if (r.status != G2F_OK) {
        fprintf(stderr, "line %d: %s: %s\n", line, fixture, r.err);
        check_failures++;
        return;
    }
    for (size_t L = 0; L < r.res.n_layers; L++) {
        const g2f_layer_result *l = &r.res.layers[L];
        if (!((layers >> L) & 1u)) continue;
        char got[512];
        codes_of(l, got, sizeof got);
        /* "a | b": two causes the data cannot tell apart, listed as such; "x || y": either answer */
        const char *alt = strstr(want, " || ");
        char first[256];
        snprintf(first, sizeof first, "%.*s", alt ? (int)(alt - want) : (int)strlen(want), want);
        int same = !strcmp(got, first) || (alt && !strcmp(got, alt + 4));
        if (!(l->status == G2F_LAYER_FAIL && same && l->diag.undetermined == (strstr(got, " | ") != NULL))) {
            fprintf(stderr, "line %d: %s layer %zu: status %s, codes \"%s\", wanted %s\n", line, fixture, L,
                    g2f_layer_status_name(l->status), got, want);
            check_failures++;
        }
    }
    g2f_verify_result_free(&r.res);
}

static void diagnosis_should_name_gelu_variants_and_precision_paths(void) {
    static const struct { const char *file, *code; } cases[] = {
        {"gelu_sigmoid", "gelu_sigmoid"},       {"gelu_mlx_approx", "gelu_mlx_approx"},
        {"gelu_f16_table", "gelu_f16_table"},   {"gelu_clipped", "gelu_clipped"},
        /* TF32 and ggml's F16 matmul round inputs to the same 10-bit mantissa: within F16's range the
         * data cannot tell them apart (small weights below it can) */
        {"gelu_10", "gelu_erf,gelu_clipped"},   {"tf32_matmul", "tf32_matmul | f16_matmul || tf32_matmul"},
        {"act_f16_rounded", "act_f16_rounded"}, {"act_bf16_rounded", "act_bf16_rounded"},
        {"autocast_f16", "autocast_f16"},       {"autocast_bf16", "autocast_bf16"},
        {"ln2_input_captured", "ln2_input_captured"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char f[128];
        snprintf(f, sizeof f, "diag/%s.safetensors", cases[i].file);
        expect_codes_on("tiny", f, 0x3, cases[i].code, __LINE__);
        snprintf(f, sizeof f, "diag/small_%s.safetensors", cases[i].file);
        expect_codes_on("small", f, 0x3, cases[i].code, __LINE__);
    }
}

/* Quantized weights both ways: a ggml-quantized checkpoint against a float
 * reference (the tolerance widened by the blocks' error bounds), and a
 * float checkpoint against a reference computed with quantized weights
 * (the weights quantized here with ggml's reference rounding). */
static void diagnosis_should_name_quantized_weights(void) {
    static const char *const types[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
    for (size_t i = 0; i < 5; i++) {
        char ck[64], fx[96], want[64];
        snprintf(ck, sizeof ck, "quant/tiny_%s.gguf", types[i]);
        snprintf(want, sizeof want, "weights_quantized:%s", types[i]);
        for (char *p = want + 18; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        expect_codes_on(ck, "tiny_tanh.safetensors", 0xf, want, __LINE__);
        snprintf(fx, sizeof fx, "quant/weights_quantized_%s.safetensors", types[i]);
        expect_codes_on("tiny", fx, 0xf, want, __LINE__);
    }
    expect_codes_on("quant/k256_q4_k.gguf", "quant/k256_tanh.safetensors", 0x1, "weights_quantized:Q4_K", __LINE__);
    expect_codes_on("quant/k256_q6_k.gguf", "quant/k256_tanh.safetensors", 0x1, "weights_quantized:Q6_K", __LINE__);
}

static void diagnosis_should_stay_silent_on_clean_fixtures(void) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    /* F32, F16 and BF16 references, the driven ones reaching |pre| 12.3 */
    static const struct { const char *model, *fx; g2f_gelu g; } clean[] = {
        {"tiny", "tiny_tanh.safetensors", G2F_GELU_TANH},       {"tiny", "tiny_tanh_f16.safetensors", G2F_GELU_TANH},
        {"tiny", "diag/driven.safetensors", G2F_GELU_TANH},     {"tiny", "diag/driven_f16.safetensors", G2F_GELU_TANH},
        {"tiny", "diag/driven_bf16.safetensors", G2F_GELU_TANH}, {"tiny", "diag/driven_erf.safetensors", G2F_GELU_ERF},
        {"small", "diag/small_driven.safetensors", G2F_GELU_TANH},
        {"small", "diag/small_driven_f16.safetensors", G2F_GELU_TANH},
        {"small", "diag/small_driven_bf16.safetensors", G2F_GELU_TANH},
        {"small", "diag/small_driven_erf.safetensors", G2F_GELU_ERF},
    };
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        snprintf(model, sizeof model, "%s/%s", fixtures, clean[i].model);
        snprintf(fx, sizeof fx, "%s/%s", fixtures, clean[i].fx);
        run_result r = verify(model, fx, clean[i].g);
        if (!r.res.pass) fprintf(stderr, "%s did not pass\n", clean[i].fx);
        CHECK(r.status == G2F_OK && r.res.pass);
        for (size_t L = 0; L < r.res.n_layers; L++) {
            CHECK(r.res.layers[L].diagnosis == 0);
            CHECK(r.res.layers[L].out.margin < 0.6); /* clean references pass with room */
        }
        g2f_verify_result_free(&r.res);
    }
}

static void diagnosis_should_locate_unexplained_errors(void) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/unexplained.safetensors", fixtures);
    run_result r = verify(model, fx, G2F_GELU_TANH);
    CHECK(r.status == G2F_OK && r.res.n_layers == 4);
    if (r.status != G2F_OK) return;
    const g2f_layer_result *l1 = &r.res.layers[1], *l3 = &r.res.layers[3];
    CHECK(l1->diagnosis == G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED));
    CHECK_CONTAINS(l1->diag.where, "1 of 64 output channels (5)");
    CHECK_CONTAINS(l1->diag.where, "divergence is in c_proj");
    CHECK(l3->diagnosis == G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED));
    CHECK_CONTAINS(l3->diag.where, "first divergence at the activation: 1 of 256 hidden units (17)");
    CHECK(r.res.layers[0].status == G2F_LAYER_PASS && r.res.layers[2].status == G2F_LAYER_PASS);
    g2f_verify_result_free(&r.res);
}

static void diagnosis_should_call_gelu_undetermined_for_tiny_preactivations(void) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/diag/tiny_pre", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/tiny_pre_erf.safetensors", fixtures);
    run_result r = verify(model, fx, G2F_GELU_TANH); /* made with erf, checked as tanh */
    CHECK(r.status == G2F_OK && r.res.pass);
    if (r.status == G2F_OK) {
        CHECK(r.res.layers[0].best_gelu == G2F_BEST_INDISTINGUISHABLE);
        CHECK(r.res.layers[0].gelu_separation < 1.0);
        CHECK_CONTAINS(r.res.layers[0].explanation, "GELU form undetermined");
    }
    g2f_verify_result_free(&r.res);
}

/* Layers 0 and 2 share weights; fixture layer 1 was computed with them: both
 * weights_from_layer:0 and :2 fit, and the report must not pick one. */
static void diagnosis_should_report_ties_as_undetermined(void) {
    enum { D = 16, H = 64, T = 5 };
    static float w[3][4][D * H], x[T * D], y[T * D];
    uint64_t s = 9;
    for (int L = 0; L < 2; L++)
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < D * H; i++) w[L][k][i] = rnd_unit(&s) * (k == 0 ? 0.5f : k == 2 ? 0.2f : 0.3f);
    memcpy(w[2], w[0], sizeof w[0]);
    for (int i = 0; i < T * D; i++) x[i] = rnd_unit(&s) * 1.5f;
    g2f_ffn_weights fw = {D, H, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, w[0][0], w[0][1], w[0][2], w[0][3]};
    g2f_ffn_forward_ref(&fw, x, T, G2F_GELU_TANH, NULL, NULL, y, NULL);
    st_entry e[12];
    char names[12][48];
    const char *suffix[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
    for (int L = 0; L < 3; L++)
        for (int k = 0; k < 4; k++) {
            int n = L * 4 + k;
            snprintf(names[n], sizeof names[n], "h.%d.mlp.%s", L, suffix[k]);
            e[n] = (st_entry){names[n], "F32", k % 2 ? 1u : 2u, {0}, w[L][k], 0};
            if (k == 0) { e[n].shape[0] = D; e[n].shape[1] = H; e[n].nbytes = D * H * 4; }
            if (k == 1) { e[n].shape[0] = H; e[n].nbytes = H * 4; }
            if (k == 2) { e[n].shape[0] = H; e[n].shape[1] = D; e[n].nbytes = D * H * 4; }
            if (k == 3) { e[n].shape[0] = D; e[n].nbytes = D * 4; }
        }
    char mp[400], fp[400];
    snprintf(mp, sizeof mp, "%s/tie.safetensors", dir);
    snprintf(fp, sizeof fp, "%s/tie_fixture.safetensors", dir);
    CHECK(st_write(mp, NULL, e, 12, 1) == 0);
    st_entry f[2] = {{"h.1.mlp.in", "F32", 2, {T, D}, x, sizeof x}, {"h.1.mlp.out", "F32", 2, {T, D}, y, sizeof y}};
    CHECK(st_write(fp, NULL, f, 2, 1) == 0);
    run_result r = verify(mp, fp, G2F_GELU_TANH);
    CHECK(r.status == G2F_OK);
    if (r.status != G2F_OK) return;
    const g2f_layer_result *l = &r.res.layers[1];
    char got[512];
    codes_of(l, got, sizeof got);
    CHECK(l->diag.undetermined);
    CHECK(!strcmp(got, "weights_from_layer:0 | weights_from_layer:2"));
    CHECK_CONTAINS(l->explanation, "undetermined");
    g2f_verify_result_free(&r.res);
}

/* The checkpoint was rounded to F16 while the reference used the F32
 * originals: only a tolerance widened by the weights' rounding fits. */
static st_how ffn_weights_f16(void *u, const g2f_tensor *t) {
    (void)u;
    return strstr(t->name, ".mlp.c_") ? (st_how){ST_CONVERT, "F16", 1.0f, NULL} : (st_how){ST_DROP, NULL, 0, NULL};
}

static void diagnosis_should_explain_a_rounded_checkpoint(void) {
    char src[400], mp[400], fx[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(mp, sizeof mp, "%s/tiny_f16.safetensors", dir);
    CHECK(st_rewrite(src, mp, ffn_weights_f16, NULL, NULL, 0) == 0);
    snprintf(fx, sizeof fx, "%s/tiny_tanh.safetensors", fixtures);
    run_result r = verify(mp, fx, G2F_GELU_TANH);
    CHECK(r.status == G2F_OK);
    if (r.status != G2F_OK) return;
    for (size_t L = 0; L < r.res.n_layers; L++) {
        char got[512];
        codes_of(&r.res.layers[L], got, sizeof got);
        CHECK(r.res.layers[L].status == G2F_LAYER_FAIL);
        CHECK(!strcmp(got, "weights_f16_rounded"));
    }
    g2f_verify_result_free(&r.res);
}

/* fixtures/tiny_tanh.safetensors stored as BF16 (round to nearest even), every h.L.mlp.out times
 * *(float *)u first. */
static st_how bf16_out_scaled(void *u, const g2f_tensor *t) {
    return (st_how){ST_CONVERT, "BF16", strstr(t->name, ".mlp.out") ? *(const float *)u : 1.0f, NULL};
}

static void write_bf16_scaled(const char *name, float scale) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/tiny_tanh.safetensors", fixtures);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    CHECK(st_rewrite(src, dst, bf16_out_scaled, &scale, NULL, 0) == 0);
}

/* A BF16 reference whose FFN output is off by a uniform scale of 1-8%: bfloat16 arithmetic's wide
 * tolerance (autocast, activations stored in bfloat16) takes it element by element, but its
 * rounding does not leave every error along the output's values (the trend), nor move the output
 * towards the reference (1%, too few deviations for the trend on 12 tokens, was autocast_bf16),
 * so none of those is named: no known cause explains it. Unscaled, the same file passes. */
static void diagnosis_should_not_name_bf16_arithmetic_for_a_scaled_output(void) {
    static const float scales[] = {1.0f, 1.01f, 1.02f, 1.05f, 1.08f, 0.95f};
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        write_bf16_scaled("scaled_bf16.safetensors", scales[k]);
        snprintf(fx, sizeof fx, "%s/scaled_bf16.safetensors", dir);
        run_result r = verify(model, fx, G2F_GELU_TANH);
        CHECK(r.status == G2F_OK);
        if (r.status != G2F_OK) continue;
        for (size_t L = 0; L < r.res.n_layers; L++) {
            char got[512];
            codes_of(&r.res.layers[L], got, sizeof got);
            int ok = scales[k] == 1.0f ? r.res.layers[L].status == G2F_LAYER_PASS
                                       : r.res.layers[L].status == G2F_LAYER_FAIL && !strcmp(got, "unexplained");
            if (!ok) fprintf(stderr, "  scale %g layer %zu: %s \"%s\"\n", scales[k], L,
                             g2f_layer_status_name(r.res.layers[L].status), got);
            CHECK(ok);
        }
        g2f_verify_result_free(&r.res);
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "diag") != 0) return 1;
    fixtures = argv[1];
    RUN(diagnosis_should_name_each_single_mutation);
    RUN(diagnosis_should_name_pairs);
    RUN(diagnosis_should_not_take_a_bug_for_a_precision_path_on_an_f16_reference);
    RUN(diagnosis_should_name_gelu_variants_and_precision_paths);
    RUN(diagnosis_should_name_quantized_weights);
    RUN(diagnosis_should_stay_silent_on_clean_fixtures);
    RUN(diagnosis_should_locate_unexplained_errors);
    RUN(diagnosis_should_call_gelu_undetermined_for_tiny_preactivations);
    RUN(diagnosis_should_report_ties_as_undetermined);
    RUN(diagnosis_should_explain_a_rounded_checkpoint);
    RUN(diagnosis_should_not_name_bf16_arithmetic_for_a_scaled_output);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
