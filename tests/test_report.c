/* The reports: text, JSON and HTML show the same per-layer figures
 * (mismatched / total / margin from g2f_layer_result_totals), on the
 * non-finite fixture and on a layer whose pre margin is NaN (where the HTML
 * report once disagreed); every JSON builder (verify, inspect, diff) and the
 * writer's safetensors header is complete or absent when any allocation
 * fails, never partial (a counted failing allocator through
 * cJSON_InitHooks). argv[1] = fixtures folder. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "g2f_html.h"
#include "g2f_report.h"
#include "g2f_source.h"
#include "g2f_writer.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

/* ---- the three reports of one result ---------------------------------- */

typedef struct figures {
    char margin[32];   /* as printed (%.3g), "nan" / "inf" for non-finite */
    size_t mismatched, total;
} figures;

/* Layer L's row of the text table. */
static int text_figures(const char *text, size_t L, figures *f) {
    const char *p = strstr(text, "diagnosis\n");
    for (p = p ? strchr(p, '\n') : NULL; p; p = strchr(p + 1, '\n')) {
        size_t layer, tokens;
        char abs_e[32], rel_e[32], frac[64];
        if (sscanf(p + 1, "%zu %zu %31s %31s %31s %63s", &layer, &tokens, abs_e, rel_e, f->margin, frac) == 6 &&
            layer == L)
            return sscanf(frac, "%zu/%zu", &f->mismatched, &f->total) == 2;
    }
    return 0;
}

static int json_figures(const char *json, size_t L, figures *f) {
    cJSON *root = cJSON_Parse(json);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *l = cJSON_GetArrayItem(layers, (int)L);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(l, "margin");
    const cJSON *mi = cJSON_GetObjectItemCaseSensitive(l, "mismatched");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "total");
    int ok = (cJSON_IsNumber(m) || cJSON_IsNull(m)) && cJSON_IsNumber(mi) && cJSON_IsNumber(t);
    if (ok) {
        /* JSON has no NaN: a non-finite margin is null */
        if (cJSON_IsNull(m)) snprintf(f->margin, sizeof f->margin, "non-finite");
        else snprintf(f->margin, sizeof f->margin, "%.3g", m->valuedouble);
        f->mismatched = (size_t)mi->valuedouble;
        f->total = (size_t)t->valuedouble;
    }
    cJSON_Delete(root);
    return ok;
}

/* The n-th <td> of the row with id "layer-L" (text up to "</td>"). */
static int html_cell(const char *html, size_t L, int n, char *buf, size_t cap) {
    char id[32];
    snprintf(id, sizeof id, "<tr id=\"layer-%zu\"", L);
    const char *p = strstr(html, id);
    for (int i = 0; p && i <= n; i++) p = strstr(p + 1, "<td");
    p = p ? strchr(p, '>') : NULL;
    const char *e = p ? strstr(p, "</td>") : NULL;
    if (!e || (size_t)(e - p - 1) >= cap) return 0;
    memcpy(buf, p + 1, (size_t)(e - p - 1));
    buf[e - p - 1] = '\0';
    return 1;
}

static int html_figures(const char *html, size_t L, figures *f) {
    char frac[64];
    return html_cell(html, L, 6, f->margin, sizeof f->margin) && html_cell(html, L, 7, frac, sizeof frac) &&
           sscanf(frac, "%zu / %zu", &f->mismatched, &f->total) == 2;
}

/* Renders the three reports and checks every compared layer's figures
 * agree (the JSON's null standing for a non-finite margin). */
static void check_reports_agree(const g2f_report_ctx *ctx) {
    char *text = NULL, *json = g2f_report_json(ctx), *html = g2f_report_html(ctx);
    size_t tlen = 0;
    FILE *fp = open_memstream(&text, &tlen);
    if (fp) {
        g2f_report_text(fp, ctx);
        fclose(fp);
    }
    CHECK(text && json && html);
    if (text && json && !ctx->tol->user) { /* the derived tolerance's sigmas, as the text says them */
        cJSON *root = cJSON_Parse(json);
        const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
        const cJSON *sig = cJSON_GetObjectItemCaseSensitive(tol, "sigmas");
        double want = ctx->tol->lambda > 0 ? ctx->tol->lambda : G2F_TOL_LAMBDA;
        char said[64];
        snprintf(said, sizeof said, "per element, %g sigma of fp32", want);
        CHECK(cJSON_IsNumber(sig) && sig->valuedouble == want);
        CHECK_CONTAINS(text, said);
        cJSON_Delete(root);
    }
    for (size_t L = 0; text && json && html && L < ctx->result->n_layers; L++) {
        const g2f_layer_result *r = &ctx->result->layers[L];
        if (r->status == G2F_LAYER_SKIPPED) continue;
        g2f_layer_totals want = g2f_layer_result_totals(r);
        figures t, j, h;
        CHECK(text_figures(text, L, &t) && json_figures(json, L, &j) && html_figures(html, L, &h));
        CHECK(t.mismatched == want.mismatched && j.mismatched == want.mismatched && h.mismatched == want.mismatched);
        CHECK(t.total == want.total && j.total == want.total && h.total == want.total);
        int finite = isfinite(want.margin);
        if (strcmp(t.margin, h.margin) != 0 || (finite ? strcmp(t.margin, j.margin) != 0 : strcmp(j.margin, "non-finite") != 0)) {
            fprintf(stderr, "layer %zu margin: text %s, JSON %s, HTML %s\n", L, t.margin, j.margin, h.margin);
            check_failures++;
        }
    }
    free(text);
    free(json);
    free(html);
}

static g2f_model_info tiny_info(void) {
    g2f_model_info mi = {0};
    mi.path = "model.safetensors";
    mi.format = "safetensors";
    mi.naming = "HF GPT-2 (h.N.mlp.c_fc)";
    mi.prefix = "";
    mi.n_layer = 2;
    mi.n_embd = 4;
    mi.n_inner = 16;
    mi.layout_source = "test";
    return mi;
}

/* NaN in pre's margin: every report says nan (the JSON null), none shows
 * out's margin as if the layer had a finite one. */
static void reports_should_agree_when_a_margin_is_nan(void) {
    g2f_layer_result layers[2];
    memset(layers, 0, sizeof layers);
    for (int i = 0; i < 2; i++) {
        g2f_layer_result *r = &layers[i];
        r->layer = (size_t)i;
        r->tokens = 3;
        r->has_pre = r->has_act = 1;
        r->has_ffn = 1;
        r->out.total = 12;
        r->pre.total = r->act.total = 48;
        r->out.cosine = 1;
        r->best_gelu = G2F_BEST_NEITHER;
        snprintf(r->explanation, sizeof r->explanation, "layer %d", i);
    }
    layers[0].status = G2F_LAYER_FAIL;
    layers[0].out.margin = 3.0;
    layers[0].out.mismatched = 2;
    layers[0].pre.margin = NAN;
    layers[0].pre.mismatched = 1;
    layers[0].act.margin = 0.5;
    layers[0].diagnosis = G2F_DIAG_BIT(G2F_DIAG_NONFINITE);
    layers[1].status = G2F_LAYER_FAIL;
    layers[1].out.margin = 0.25;
    layers[1].act.margin = 7.5;
    layers[1].act.mismatched = 4;
    layers[1].diagnosis = G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED);
    g2f_verify_result res = {.gelu = G2F_GELU_TANH, .n_layers = 2, .layers = layers, .compared = 2, .failed = 2, .pass = 0, .first_fail = 0, .first_stage = -1};
    g2f_model_info mi = tiny_info();
    g2f_tol_params tol = {0, 0, 0, 0}; /* lambda 0: the default, as the CLI passes it */
    g2f_report_ctx ctx = {"ck", "fx", &mi, "test", NULL, G2F_DTYPE_F32, &tol, &res, 0, NULL, NULL, 0, NULL};
    g2f_layer_totals t0 = g2f_layer_result_totals(&layers[0]), t1 = g2f_layer_result_totals(&layers[1]);
    CHECK(isnan(t0.margin) && t0.mismatched == 3 && t0.total == 108);
    CHECK(t1.margin == 7.5 && t1.mismatched == 4 && t1.total == 108);
    check_reports_agree(&ctx);
    /* NaN in out, the first term, stays NaN too */
    layers[0].out.margin = NAN;
    layers[0].pre.margin = 2;
    CHECK(isnan(g2f_layer_result_totals(&layers[0]).margin));
    check_reports_agree(&ctx);
    layers[0].status = G2F_LAYER_SKIPPED;
    g2f_layer_totals sk = g2f_layer_result_totals(&layers[0]);
    CHECK(sk.margin == 0 && sk.mismatched == 0 && sk.total == 0);
}

/* A verify result of the bundled checkpoint against fixture (NULL select). */
static int verify_fixture(const char *fixture, const unsigned char *select, g2f_model **m, g2f_fixture **f,
                          g2f_verify_result *res) {
    char mp[400], fp[400];
    g2f_error err = {0};
    snprintf(mp, sizeof mp, "%s/tiny", fixtures);
    snprintf(fp, sizeof fp, "%s/%s", fixtures, fixture);
    g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .select = select, .tol = {0, 0, 0, G2F_TOL_LAMBDA}, .n_threads = 1};
    int ok = g2f_model_open(mp, NULL, m, &err) == G2F_OK && g2f_fixture_open(fp, f, &err) == G2F_OK &&
             g2f_verify_run(*m, *f, &p, res, &err) == G2F_OK;
    if (!ok) fprintf(stderr, "verify %s: %s\n", fixture, err.msg);
    return ok;
}

static void reports_should_agree_on_the_nonfinite_and_pre_act_fixtures(void) {
    const char *names[] = {"diag/nonfinite.safetensors", "diag/unexplained.safetensors", "tiny_erf.safetensors"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        g2f_model *m = NULL;
        g2f_fixture *f = NULL;
        g2f_verify_result res = {0};
        g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
        CHECK(verify_fixture(names[i], NULL, &m, &f, &res));
        if (res.n_layers) {
            g2f_report_ctx ctx = {"ck", names[i], g2f_model_get_info(m), "test", g2f_fixture_gelu_claim(f),
                                  g2f_fixture_dtype(f), &tol, &res, 0, NULL, NULL, 0, NULL};
            check_reports_agree(&ctx);
        }
        g2f_verify_result_free(&res);
        g2f_fixture_close(f);
        g2f_model_close(m);
    }
}

/* ---- JSON under allocation failure ------------------------------------ */

static long alloc_countdown = -1; /* the allocation that fails: 0 = the next one; < 0 none */
static long alloc_seen;

static void *failing_malloc(size_t n) {
    alloc_seen++;
    if (alloc_countdown >= 0 && alloc_countdown-- == 0) return NULL;
    return malloc(n);
}

static void hooks_fail_at(long k) {
    alloc_countdown = k;
    alloc_seen = 0;
    cJSON_Hooks h = {failing_malloc, free};
    cJSON_InitHooks(&h);
}

static void hooks_default(void) {
    alloc_countdown = -1;
    cJSON_InitHooks(NULL);
}

typedef char *(*builder_fn)(const void *arg);

/* Fails each cJSON allocation of build(arg) in turn: every result is NULL or
 * the complete report. */
static void check_complete_or_null(const char *what, builder_fn build, const void *arg) {
    hooks_default();
    char *full = build(arg);
    CHECK(full != NULL);
    if (!full) return;
    size_t nulls = 0, runs = 0;
    for (long k = 0;; k++) {
        hooks_fail_at(k);
        char *s = build(arg);
        int triggered = alloc_countdown < 0;
        hooks_default();
        runs++;
        if (!s) nulls++;
        else if (strcmp(s, full) != 0) {
            fprintf(stderr, "%s: allocation %ld failed and a partial report came out (%zu of %zu bytes)\n", what, k,
                    strlen(s), strlen(full));
            check_failures++;
            free(s);
            break;
        }
        free(s);
        if (!triggered) break; /* k is past the last allocation */
    }
    CHECK(nulls + 1 == runs); /* every allocation mattered, the last run allocated all */
    CHECK(runs > 50);
    free(full);
}

static char *build_verify(const void *ctx) { return g2f_report_json(ctx); }

typedef struct inspect_arg {
    const g2f_model_info *mi;
    const g2f_inspect_result *r;
} inspect_arg;
static char *build_inspect(const void *a) {
    const inspect_arg *x = a;
    return g2f_report_inspect_json("ck", x->mi, x->r);
}

typedef struct diff_arg {
    const g2f_model_info *a, *b;
    const g2f_diff_result *r;
} diff_arg;
static char *build_diff(const void *a) {
    const diff_arg *x = a;
    return g2f_report_diff_json(x->a, x->b, x->r);
}

/* writer: the safetensors header with metadata, under the same failures:
 * either g2f_writer_open fails (and nothing is left) or the file is whole. */
static char *build_writer(const void *arg) {
    (void)arg;
    char path[400];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    g2f_out_spec specs[3] = {{"h.0.mlp.in", 2, {2, 4}}, {"h.0.mlp.out", 2, {2, 4}}, {"h.1.mlp.in", 3, {1, 2, 4}}};
    g2f_out_meta meta[2] = {{"gelu", "tanh"}, {"checkpoint", "ck\x1b"}};
    float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    g2f_writer *w = NULL;
    g2f_error err = {0};
    unlink(path);
    if (g2f_writer_open(path, G2F_OUT_SAFETENSORS, specs, 3, meta, 2, &w, &err) != G2F_OK) {
        struct stat st;
        CHECK(stat(path, &st) != 0);
        return NULL;
    }
    for (int i = 0; i < 3; i++) g2f_writer_put(w, data, &err);
    CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
    size_t n = 0;
    FILE *fp = fopen(path, "rb");
    char *bytes = fp ? calloc(1, 4096) : NULL;
    if (bytes) n = fread(bytes, 1, 4095, fp);
    if (fp) fclose(fp);
    for (size_t i = 0; bytes && i < n; i++)
        if (!bytes[i]) bytes[i] = '0'; /* comparable as a string */
    return bytes;
}

static void json_builders_should_return_complete_json_or_null(void) {
    g2f_model *m = NULL, *m2 = NULL;
    g2f_fixture *f = NULL;
    g2f_verify_result res = {0};
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_error err = {0};
    unsigned char select[4] = {1, 1, 0, 1}; /* a skipped layer too */
    CHECK(verify_fixture("diag/erf_fc_bias_missing.safetensors", select, &m, &f, &res));
    if (m && res.n_layers) {
        g2f_report_ctx ctx = {"ck\x1b", "fx", g2f_model_get_info(m), "test", "tanh\n", g2f_fixture_dtype(f), &tol, &res, 0, NULL, NULL, 0, NULL};
        check_complete_or_null("verify", build_verify, &ctx);
        g2f_inspect_result ir = {0};
        CHECK(g2f_inspect_run(m, &ir, &err) == G2F_OK);
        inspect_arg ia = {g2f_model_get_info(m), &ir};
        check_complete_or_null("inspect", build_inspect, &ia);
        g2f_inspect_result_free(&ir);
        char p2[400];
        snprintf(p2, sizeof p2, "%s/torch/hf_tiny.bin", fixtures);
        g2f_diff_result dr = {0};
        CHECK(g2f_model_open(p2, NULL, &m2, &err) == G2F_OK && g2f_diff_run(m, m2, &dr, &err) == G2F_OK);
        diff_arg da = {g2f_model_get_info(m), g2f_model_get_info(m2), &dr};
        if (m2) check_complete_or_null("diff", build_diff, &da);
        g2f_diff_result_free(&dr);
    }
    check_complete_or_null("writer header", build_writer, NULL);
    g2f_verify_result_free(&res);
    g2f_fixture_close(f);
    g2f_model_close(m2);
    g2f_model_close(m);
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "report") != 0) return 1;
    fixtures = argv[1];
    RUN(reports_should_agree_when_a_margin_is_nan);
    RUN(reports_should_agree_on_the_nonfinite_and_pre_act_fixtures);
    RUN(json_builders_should_return_complete_json_or_null);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
