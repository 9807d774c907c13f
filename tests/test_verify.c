/* The library's result rules, checked on g2f_verify_run itself (not through
 * the CLI, which adds its own guard): `pass` is 0 when no layer was
 * compared; NaN or Inf in the reference, the input, the weights or the
 * computation never passes, whatever the tolerance; a layer passes exactly
 * when nothing it compared (out, pre, act) mismatched; the counts, the first
 * divergence and the skipped layers follow. argv[1] = fixtures folder. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "g2f_ffn.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

/* Verifies model_path against fixture_path (select may be NULL); the
 * status of g2f_verify_run. */
static g2f_status verify(const char *model_path, const char *fixture_path, const unsigned char *select, double atol,
                         g2f_verify_result *res) {
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(model_path, NULL, &m, &err);
    if (s == G2F_OK) s = g2f_fixture_open(fixture_path, &f, &err);
    if (s == G2F_OK) {
        g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .select = select, .tol = {atol > 0, 0, atol, G2F_TOL_LAMBDA}, .n_threads = 1};
        s = g2f_verify_run(m, f, &p, res, &err);
    }
    if (s != G2F_OK) fprintf(stderr, "verify %s %s: %s\n", model_path, fixture_path, err.msg);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

static void result_should_not_pass_when_no_layer_was_compared(void) {
    char ck[400], fx[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/tiny_tanh.safetensors", fixtures);
    unsigned char none[4] = {0, 0, 0, 0};
    g2f_verify_result res;
    CHECK(verify(ck, fx, none, 0, &res) == G2F_OK);
    CHECK(res.n_layers == 4 && res.compared == 0 && res.failed == 0);
    CHECK(res.pass == 0);
    CHECK(res.first_fail == -1);
    for (size_t L = 0; L < res.n_layers; L++) {
        CHECK(res.layers[L].status == G2F_LAYER_SKIPPED);
        CHECK_CONTAINS(res.layers[L].explanation, "not selected");
    }
    g2f_verify_result_free(&res);
}

/* A one-layer model of our own and a fixture from the double reference,
 * with one value replaced by poison at index `at` of the input (in), the
 * expected output (out) or the weights (w). */
enum { D = 16, H = 64, T = 6 };
static void write_case(const char *name, char where, float poison) {
    static float w1[D * H], b1[H], w2[H * D], b2[D], x[T * D], y[T * D];
    uint64_t s = 42;
    for (int i = 0; i < D * H; i++) w1[i] = rnd_unit(&s) * 0.6f;
    for (int i = 0; i < H; i++) b1[i] = rnd_unit(&s) * 0.3f;
    for (int i = 0; i < H * D; i++) w2[i] = rnd_unit(&s) * 0.2f;
    for (int i = 0; i < D; i++) b2[i] = rnd_unit(&s) * 0.1f;
    for (int i = 0; i < T * D; i++) x[i] = rnd_unit(&s) * 1.7f;
    g2f_ffn_weights w = {D, H, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, w1, b1, w2, b2};
    g2f_ffn_forward_ref(&w, x, T, G2F_GELU_TANH, NULL, NULL, y, NULL);
    if (where == 'o') y[T * D - 3] = poison;
    if (where == 'i') x[5] = poison;
    if (where == 'w') w2[7] = poison;
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0700);
    st_entry m[4] = {{"h.0.mlp.c_fc.weight", "F32", 2, {D, H}, w1, sizeof w1},
                     {"h.0.mlp.c_fc.bias", "F32", 1, {H}, b1, sizeof b1},
                     {"h.0.mlp.c_proj.weight", "F32", 2, {H, D}, w2, sizeof w2},
                     {"h.0.mlp.c_proj.bias", "F32", 1, {D}, b2, sizeof b2}};
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    st_write(path, NULL, m, 4, 1);
    st_entry f[2] = {{"h.0.mlp.in", "F32", 2, {T, D}, x, sizeof x}, {"h.0.mlp.out", "F32", 2, {T, D}, y, sizeof y}};
    snprintf(path, sizeof path, "%s/%s/fixture.safetensors", dir, name);
    st_write(path, NULL, f, 2, 1);
}

static void nonfinite_should_never_pass(void) {
    const struct {
        const char *name;
        char where;
        float value;
    } cases[] = {{"nan_out", 'o', NAN}, {"inf_out", 'o', INFINITY}, {"nan_in", 'i', NAN},
                 {"inf_in", 'i', -INFINITY}, {"nan_w", 'w', NAN}, {"clean", 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_case(cases[i].name, cases[i].where, cases[i].value);
        char ck[400], fx[450];
        snprintf(ck, sizeof ck, "%s/%s", dir, cases[i].name);
        snprintf(fx, sizeof fx, "%s/fixture.safetensors", ck);
        /* the derived tolerance, and a user tolerance that would accept any finite error */
        for (int user = 0; user < 2; user++) {
            g2f_verify_result res;
            CHECK(verify(ck, fx, NULL, user ? 1e30 : 0, &res) == G2F_OK);
            if (res.n_layers != 1) {
                check_failures++;
                continue;
            }
            const g2f_layer_result *r = &res.layers[0];
            int clean = cases[i].where == 0;
            if (res.pass != clean || (r->status == G2F_LAYER_PASS) != clean) {
                fprintf(stderr, "%s (user tolerance %d): pass %d, status %d\n", cases[i].name, user, res.pass,
                        r->status);
                check_failures++;
            }
            if (!clean) {
                CHECK(r->diagnosis == G2F_DIAG_BIT(G2F_DIAG_NONFINITE));
                CHECK(r->best_gelu == G2F_BEST_NEITHER);
                CHECK(res.failed == 1 && res.first_fail == 0);
                CHECK(!(g2f_layer_result_totals(r).mismatched == 0));
            }
            g2f_verify_result_free(&res);
        }
    }
}

static void results_should_count_layers_and_name_the_first_divergence(void) {
    char ck[400], fx[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    g2f_verify_result res;
    /* erf data, tanh asked: layers 1-3 selected fail, layer 0 is skipped */
    snprintf(fx, sizeof fx, "%s/tiny_erf.safetensors", fixtures);
    unsigned char sel[4] = {0, 1, 1, 1};
    CHECK(verify(ck, fx, sel, 0, &res) == G2F_OK);
    CHECK(res.compared == 3 && res.failed == 3 && res.pass == 0 && res.first_fail == 1);
    CHECK(res.layers[0].status == G2F_LAYER_SKIPPED);
    for (size_t L = 1; L < 4; L++) {
        const g2f_layer_result *r = &res.layers[L];
        CHECK(r->status == G2F_LAYER_FAIL && g2f_layer_result_totals(r).mismatched > 0);
        CHECK(r->diagnosis == G2F_DIAG_BIT(G2F_DIAG_GELU_ERF) && r->best_gelu == G2F_BEST_ERF);
    }
    g2f_verify_result_free(&res);
    /* the tanh fixture: everything passes, nothing mismatched anywhere */
    snprintf(fx, sizeof fx, "%s/tiny_tanh.safetensors", fixtures);
    CHECK(verify(ck, fx, NULL, 0, &res) == G2F_OK);
    CHECK(res.compared == 4 && res.failed == 0 && res.pass == 1 && res.first_fail == -1);
    for (size_t L = 0; L < res.n_layers; L++) {
        const g2f_layer_result *r = &res.layers[L];
        g2f_layer_totals t = g2f_layer_result_totals(r);
        CHECK(r->status == G2F_LAYER_PASS && t.mismatched == 0 && t.margin <= 1 && r->has_pre && r->has_act);
        CHECK(t.total == r->out.total + r->pre.total + r->act.total);
        CHECK(r->diagnosis == 0 && r->diag.n_causes == 0);
    }
    g2f_verify_result_free(&res);
}

/* Every layer of tiny_erf fails under tanh: the first divergence is layer 0,
 * not a later one (the first failure is kept, never replaced). */
static void results_should_keep_layer_0_as_the_first_divergence(void) {
    char ck[400], fx[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/tiny_erf.safetensors", fixtures);
    g2f_verify_result res;
    CHECK(verify(ck, fx, NULL, 0, &res) == G2F_OK);
    CHECK(res.compared == 4 && res.failed == 4 && res.first_fail == 0 && !res.pass);
    g2f_verify_result_free(&res);
}

/* A layer neither tanh nor erf fits is named after one of the other forms
 * (sigmoid, mlx_approx, f16_table) only when that form's margin is <= 1. A
 * user tolerance (atol) moves the sigmoid fixture's margin to 0.5 and 1.5. */
static void best_gelu_should_name_an_other_form_only_when_it_fits(void) {
    char ck[400], fx[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/gelu_sigmoid.safetensors", fixtures);
    unsigned char first[4] = {1, 0, 0, 0};
    g2f_verify_result res;
    CHECK(verify(ck, fx, first, 1.0, &res) == G2F_OK);
    double err_sigmoid = res.n_layers ? res.layers[0].gelu_margin[G2F_GELU_SIGMOID] : 0; /* its max error */
    g2f_verify_result_free(&res);
    CHECK(err_sigmoid > 0 && err_sigmoid < 1e-3);
    CHECK(verify(ck, fx, first, err_sigmoid / 0.5, &res) == G2F_OK);
    CHECK(res.n_layers && res.layers[0].best_gelu == G2F_BEST_SIGMOID);
    g2f_verify_result_free(&res);
    CHECK(verify(ck, fx, first, err_sigmoid / 1.5, &res) == G2F_OK);
    CHECK(res.n_layers && res.layers[0].best_gelu == G2F_BEST_NEITHER);
    CHECK(res.n_layers && res.layers[0].gelu_margin[G2F_GELU_SIGMOID] > 1.4);
    g2f_verify_result_free(&res);
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "verify") != 0) return 1;
    fixtures = argv[1];
    RUN(result_should_not_pass_when_no_layer_was_compared);
    RUN(nonfinite_should_never_pass);
    RUN(results_should_count_layers_and_name_the_first_divergence);
    RUN(results_should_keep_layer_0_as_the_first_divergence);
    RUN(best_gelu_should_name_an_other_form_only_when_it_fits);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
