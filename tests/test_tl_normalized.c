/* TransformerLens' hook_normalized, recorded after the LayerNorm's gain and
 * bias (TransformerLens 2) or before them (3): which reading the values
 * decide (g2f_normread), and verify of captures of either kind, never a
 * verdict on the wrong reading. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_normread.h"
#include "g2f_source.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures, *cli;

#define D 64
#define ROWS 6

/* Rows like a residual stream (an offset, one outlier channel), their
 * LayerNorm before (n) and after (y) a gain and bias like tiny's. */
typedef struct rows {
    float n[ROWS * D], y[ROWS * D], w[D], b[D];
} rows;

static void make_rows(rows *r, double w_mean, double w_sd, double b_sd, uint64_t seed) {
    uint64_t s = seed;
    for (int j = 0; j < D; j++) {
        r->w[j] = (float)(w_mean + w_sd * (2 * rnd_unit(&s) - 1) * 1.7);
        r->b[j] = (float)(b_sd * (2 * rnd_unit(&s) - 1) * 1.7);
    }
    for (int i = 0; i < ROWS; i++) {
        double x[D], mean = 0, var = 0;
        for (int j = 0; j < D; j++) x[j] = 0.3 + (j == 5 ? 6.0 : 1.0) * (2 * rnd_unit(&s) - 1), mean += x[j];
        mean /= D;
        for (int j = 0; j < D; j++) var += (x[j] - mean) * (x[j] - mean);
        var /= D;
        for (int j = 0; j < D; j++) {
            float n = (float)((x[j] - mean) / sqrt(var + 1e-5));
            volatile float p = n * r->w[j];
            r->n[i * D + j] = n;
            r->y[i * D + j] = p + r->b[j];
        }
    }
}

static g2f_tensor tensor_of(const float *v, const char *name) {
    g2f_tensor t = {name, G2F_DTYPE_F32, 2, {ROWS, D}, ROWS * D, (const unsigned char *)v, ROWS * D * 4, NULL};
    return t;
}

static g2f_ln ln_of(const rows *r, int found) {
    g2f_ln ln = {D, found ? r->w : NULL, found ? r->b : NULL, 1e-5, found, {NULL, NULL}, 0};
    return ln;
}

static g2f_norm_reading decide(const float *v, const g2f_ln *ln) {
    g2f_tensor t = tensor_of(v, "x");
    g2f_norm_decision d;
    g2f_error err = {0};
    CHECK(g2f_norm_decide(&t, ln, &d, &err) == G2F_OK);
    return d.reading;
}

static void each_reading_should_be_told_apart_by_the_values(void) {
    rows r;
    make_rows(&r, 1.0, 0.1, 0.05, 7); /* tiny's gains: close to 1, the hard case */
    g2f_ln ln = ln_of(&r, 1);
    CHECK(decide(r.n, &ln) == G2F_NORM_BEFORE);
    CHECK(decide(r.y, &ln) == G2F_NORM_AFTER);
    make_rows(&r, 0.25, 0.1, 0.1, 8); /* GPT-2's early ln_1: gains far below 1 */
    ln = ln_of(&r, 1);
    CHECK(decide(r.n, &ln) == G2F_NORM_BEFORE);
    CHECK(decide(r.y, &ln) == G2F_NORM_AFTER);
}

static void a_reading_the_values_cannot_tell_should_be_undecided(void) {
    rows r;
    make_rows(&r, 1.0, 0.1, 0.05, 9);
    for (int j = 0; j < D; j++) r.w[j] = -1.0f, r.b[j] = 0.0f; /* y = -n: normalized rows either way */
    g2f_ln ln = ln_of(&r, 1);
    CHECK(decide(r.n, &ln) == G2F_NORM_UNDECIDED);
    make_rows(&r, 1.0, 0.1, 0.05, 9);
    g2f_ln none = ln_of(&r, 0); /* the checkpoint holds no gain: after cannot be tested */
    CHECK(decide(r.n, &none) == G2F_NORM_UNDECIDED);
    r.w[3] = 0.0f; /* a zero gain: (y - b) / w undefined */
    ln = ln_of(&r, 1);
    CHECK(decide(r.n, &ln) == G2F_NORM_UNDECIDED);
}

static void identity_gain_and_non_normalized_rows_should_read_as_recorded(void) {
    rows r;
    make_rows(&r, 2.0, 0.1, 0.05, 10);
    g2f_ln none = ln_of(&r, 0);
    CHECK(decide(r.y, &none) == G2F_NORM_AFTER); /* rows of mean square ~4 are no normalized rows */
    g2f_ln ln = ln_of(&r, 1);
    r.n[7] = NAN; /* neither reading fits: the LayerNorm's output, the check fails on it */
    CHECK(decide(r.n, &ln) == G2F_NORM_AFTER);
    for (int j = 0; j < D; j++) r.w[j] = 1.0f, r.b[j] = 0.0f;
    CHECK(decide(r.y, &ln) == G2F_NORM_SAME);
}

static void a_bf16_capture_before_gain_should_read_before(void) {
    rows r;
    make_rows(&r, 1.0, 0.1, 0.05, 11);
    uint16_t h[ROWS * D];
    for (int i = 0; i < ROWS * D; i++) h[i] = g2f_f32_to_bf16(r.n[i]);
    g2f_tensor t = {"x", G2F_DTYPE_BF16, 2, {ROWS, D}, ROWS * D, (const unsigned char *)h, ROWS * D * 2, NULL};
    g2f_ln ln = ln_of(&r, 1);
    g2f_norm_decision d;
    g2f_error err = {0};
    CHECK(g2f_norm_decide(&t, &ln, &d, &err) == G2F_OK && d.reading == G2F_NORM_BEFORE);
}

static void applying_gain_and_bias_should_match_the_layernorm_bit_for_bit(void) {
    rows r;
    make_rows(&r, 1.0, 0.1, 0.05, 12);
    g2f_tensor t = tensor_of(r.n, "x"), out;
    g2f_ln ln = ln_of(&r, 1);
    void *owned = NULL;
    g2f_error err = {0};
    CHECK(g2f_norm_apply(&t, &ln, &out, &owned, &err) == G2F_OK);
    CHECK(owned && out.dtype == G2F_DTYPE_F32 && out.numel == t.numel && !memcmp(owned, r.y, sizeof r.y));
    free(owned);
}

/* verify of fixture (under fixtures/) against tiny, reading as mode says. */
static g2f_status verify_tiny(const char *fixture, g2f_norm_mode mode, g2f_verify_result *res, g2f_error *err) {
    char ck[512], fx[512];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/%s", fixtures, fixture);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(ck, NULL, &m, err);
    if (s == G2F_OK) s = g2f_fixture_open_for(fx, m, mode, &f, err);
    g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .tol = {0, 0, 0, G2F_TOL_LAMBDA},
                           .n_threads = 1};
    if (s == G2F_OK) s = g2f_verify_run(m, f, &p, res, err);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

static size_t count_reading(const g2f_verify_result *res, g2f_norm_reading r) {
    size_t n = 0;
    for (size_t i = 0; i < res->n_norms; i++) n += res->norms[i].reading == r;
    return n;
}

static void captures_of_either_version_should_pass_against_their_checkpoint(void) {
    static const char *const before[] = {"block/clean_tl3.safetensors", "model/clean_tl3.safetensors",
                                         "block/ffn_tl3.safetensors"};
    g2f_verify_result res;
    g2f_error err = {0};
    for (size_t i = 0; i < 3; i++) {
        CHECK(verify_tiny(before[i], G2F_NORM_MODE_AUTO, &res, &err) == G2F_OK);
        CHECK(res.pass && res.compared > 0 && res.n_norms > 0 && count_reading(&res, G2F_NORM_BEFORE) == res.n_norms);
        if (!res.pass) fprintf(stderr, "%s: not a PASS\n", before[i]);
        if (i == 1) CHECK(res.model.present && res.model.pass);
        g2f_verify_result_free(&res);
        /* told the other reading, the same capture fails: the reading matters */
        CHECK(verify_tiny(before[i], G2F_NORM_MODE_AFTER, &res, &err) == G2F_OK);
        CHECK(!res.pass && res.n_norms > 0 && res.norms[0].forced);
        g2f_verify_result_free(&res);
    }
    CHECK(verify_tiny("block/clean_tl.safetensors", G2F_NORM_MODE_AUTO, &res, &err) == G2F_OK);
    CHECK(res.pass && res.n_norms == 4 && count_reading(&res, G2F_NORM_AFTER) == 4);
    g2f_verify_result_free(&res);
    CHECK(verify_tiny("block/clean_tl.safetensors", G2F_NORM_MODE_BEFORE, &res, &err) == G2F_OK);
    CHECK(!res.pass);
    g2f_verify_result_free(&res);
}

static int names_code(const g2f_stage_result *st, const char *code) {
    for (size_t k = 0; k < st->n_causes; k++) {
        char buf[256];
        g2f_cause_codes(&st->causes[k], buf, sizeof buf);
        if (strstr(buf, code)) return 1;
    }
    return 0;
}

static void a_layernorm_bug_should_still_be_named_from_before_gain_captures(void) {
    g2f_verify_result res;
    g2f_error err = {0};
    CHECK(verify_tiny("block/ln_eps_1e-12_tl3.safetensors", G2F_NORM_MODE_AUTO, &res, &err) == G2F_OK);
    CHECK(!res.pass && res.first_fail == 0 && res.first_stage == G2F_STAGE_LN1);
    CHECK(res.n_layers > 0 && names_code(&res.layers[0].block.stage[G2F_STAGE_LN1], "ln_eps:1e-12"));
    g2f_verify_result_free(&res);
}

/* A fixture holding HF and TransformerLens 3 names of one capture: the
 * pair holds the same stage once the gain and bias are applied. */
static void hf_and_tl3_names_of_one_capture_should_agree(void) {
    char p1[512], p2[512], ck[512];
    snprintf(p1, sizeof p1, "%s/block/clean.safetensors", fixtures);
    snprintf(p2, sizeof p2, "%s/block/clean_tl3.safetensors", fixtures);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    g2f_source *a = NULL, *b = NULL;
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(p1, &a, &err) == G2F_OK && g2f_source_open(p2, &b, &err) == G2F_OK);
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    if (!a || !b || !m) goto done;
    const g2f_table *ta = g2f_source_table(a), *tb = g2f_source_table(b);
    g2f_tensor both[8];
    size_t n = 0;
    const char *const names[] = {"h.0.ln_1.out", "h.0.mlp.in", "h.0.in", "h.0.mlp.out"};
    for (size_t i = 0; i < 4; i++)
        if (g2f_table_find(ta, names[i])) both[n++] = *g2f_table_find(ta, names[i]);
    const char *const tl[] = {"blocks.0.ln1.hook_normalized", "blocks.0.ln2.hook_normalized"};
    for (size_t i = 0; i < 2; i++)
        if (g2f_table_find(tb, tl[i])) both[n++] = *g2f_table_find(tb, tl[i]);
    CHECK(n == 6);
    g2f_table t = {both, n, NULL, 0};
    CHECK(g2f_fixture_from_table(&t, "both", &f, &err) == G2F_OK);
    CHECK(f && g2f_fixture_read_norms(f, m, G2F_NORM_MODE_AUTO, &err) == G2F_OK);
    CHECK(f && g2f_fixture_read_norms(f, m, G2F_NORM_MODE_AUTO, &err) != G2F_OK); /* once */
    g2f_verify_result res = {0};
    g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .tol = {0, 0, 0, G2F_TOL_LAMBDA},
                           .n_threads = 1};
    CHECK(f && g2f_verify_run(m, f, &p, &res, &err) == G2F_OK);
    CHECK(res.n_aliases == 2 && res.aliases_differ == 0 && res.pass);
    g2f_verify_result_free(&res);
done:
    g2f_fixture_close(f);
    g2f_model_close(m);
    g2f_source_close(a);
    g2f_source_close(b);
}

/* An FFN-only checkpoint (no LayerNorm gain) with an FFN-only TL3 capture:
 * the values cannot tell; verify refuses with what to say, and a forced
 * before has no gain to apply. */
static void without_the_gain_a_capture_should_not_be_guessed(void) {
    char dir[256], ck[512], fx[512], tiny[512];
    CHECK(make_tmpdir(dir, sizeof dir, "tlnorm") == 0);
    snprintf(tiny, sizeof tiny, "%s/tiny/model.safetensors", fixtures);
    snprintf(ck, sizeof ck, "%s/ffn_only.safetensors", dir);
    snprintf(fx, sizeof fx, "%s/block/ffn_tl3.safetensors", fixtures);
    g2f_source *src = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(tiny, &src, &err) == G2F_OK);
    if (!src) return;
    const g2f_table *t = g2f_source_table(src);
    st_entry e[64];
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 64; i++)
        if (strstr(t->tensors[i].name, ".mlp.")) {
            const g2f_tensor *x = &t->tensors[i];
            e[n++] = (st_entry){x->name, "F32", x->ndim, {x->shape[0], x->ndim > 1 ? x->shape[1] : 0}, x->data,
                                (size_t)x->nbytes};
        }
    CHECK(n == 16 && st_write(ck, NULL, e, n, 1) == 0);
    g2f_source_close(src);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    CHECK(m && g2f_fixture_open_for(fx, m, G2F_NORM_MODE_AUTO, &f, &err) == G2F_OK);
    const g2f_model_info *mi = m ? g2f_model_get_info(m) : NULL;
    CHECK(f && g2f_fixture_norm_at(f, 0)->reading == G2F_NORM_UNDECIDED);
    CHECK(f && mi && g2f_fixture_check(f, mi->n_layer, mi->n_embd, mi->n_inner, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "--tl-normalized before|after");
    g2f_fixture_close(f);
    f = NULL;
    CHECK(m && g2f_fixture_open_for(fx, m, G2F_NORM_MODE_BEFORE, &f, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "does not hold");
    g2f_fixture_close(f);
    g2f_model_close(m);
    /* the CLI: exit 2 with that line */
    char out[8192], errs[4096], args[1200];
    snprintf(args, sizeof args, "verify '%s' '%s'", ck, fx);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, errs, sizeof errs) == 2);
    CHECK_CONTAINS(errs, "ffn_tl3.safetensors: layer 0 has no 'h.0.mlp.in' tensor; 'blocks.0.ln2.hook_normalized'");
    remove_tmpdir(dir);
}

static void the_reports_should_say_how_each_capture_was_read(void) {
    char dir[256], out[1 << 16], errs[4096], args[1200];
    CHECK(make_tmpdir(dir, sizeof dir, "tlnorm") == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/block/clean_tl3.safetensors'", fixtures, fixtures);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, errs, sizeof errs) == 0);
    CHECK_CONTAINS(out, "reading     4 TransformerLens hook_normalized captures ('blocks.0.ln1.hook_normalized', ...) "
                        "read before gain and bias");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/block/clean_tl3.safetensors' --json -", fixtures, fixtures);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, errs, sizeof errs) == 0);
    cJSON *j = cJSON_Parse(out), *arr = cJSON_GetObjectItem(j, "tl_normalized");
    CHECK(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 4);
    for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(o, "reading"));
        CHECK(r && !strcmp(r, "before") && cJSON_IsFalse(cJSON_GetObjectItem(o, "forced")));
        CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(o, "tensor")), "hook_normalized"));
    }
    cJSON_Delete(j);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/block/clean_tl3.safetensors' --tl-normalized after", fixtures,
             fixtures);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, errs, sizeof errs) == 1);
    CHECK_CONTAINS(out, "read after gain and bias (TransformerLens 2), as --tl-normalized says");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/block/clean_tl3.safetensors' --tl-normalized 3", fixtures,
             fixtures);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, errs, sizeof errs) == 2);
    CHECK_CONTAINS(errs, "--tl-normalized is auto, after or before, not '3'");
    remove_tmpdir(dir);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES_DIR CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    cli = argv[2];
    RUN(each_reading_should_be_told_apart_by_the_values);
    RUN(a_reading_the_values_cannot_tell_should_be_undecided);
    RUN(identity_gain_and_non_normalized_rows_should_read_as_recorded);
    RUN(a_bf16_capture_before_gain_should_read_before);
    RUN(applying_gain_and_bias_should_match_the_layernorm_bit_for_bit);
    RUN(captures_of_either_version_should_pass_against_their_checkpoint);
    RUN(a_layernorm_bug_should_still_be_named_from_before_gain_captures);
    RUN(hf_and_tl3_names_of_one_capture_should_agree);
    RUN(without_the_gain_a_capture_should_not_be_guessed);
    RUN(the_reports_should_say_how_each_capture_was_read);
    CHECK_EXIT();
}
