/* HTML report: structure on passing and failing fixtures, escaping of
 * strings from files (a checkpoint under a folder named with & < " '), the
 * growable buffer, non-finite numbers as text, and a render in headless
 * Chromium (DOM and screenshot). argv[1] = fixtures folder. Without
 * Chromium (/usr/bin/chromium, or $G2F_CHROMIUM when set: a path that does
 * not exist is how the skip is tried) the other cases still run, and the
 * test exits 77 (skipped) when they pass. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "g2f_html.h"
#include "g2f_report.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];
static char chromium[512];  /* the browser's path */
static int browser_missing; /* a case needed Chromium and found none */

/* 1 when Chromium is there; else says the case is skipped and why. */
static int have_chromium(const char *what) {
    if (access(chromium, X_OK) == 0) return 1;
    fprintf(stderr, "skipped: %s: %s is not installed (scripts/setup installs chromium)\n", what, chromium);
    browser_missing = 1;
    return 0;
}

/* CHECK_CONTAINS for whole pages: names the missing needle, not the page. */
#define CHECK_HAS(hay, needle)                                                                        \
    do {                                                                                              \
        const char *h_ = (hay);                                                                       \
        if (!h_ || !strstr(h_, (needle))) {                                                           \
            fprintf(stderr, "%s:%d: CHECK_HAS failed: \"%s\" not in the page\n", __FILE__, __LINE__, \
                    (needle));                                                                        \
            check_failures++;                                                                         \
        }                                                                                             \
    } while (0)

/* Verifies model_path against fixture_path and renders the page (NULL on
 * any failure, reported). */
static char *render_select(const char *model_path, const char *fixture_path, const unsigned char *select,
                           g2f_verify_result *res_out) {
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    g2f_verify_result res = {0};
    char *html = NULL;
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    if (g2f_model_open(model_path, NULL, &m, &err) != G2F_OK || g2f_fixture_open(fixture_path, &f, &err) != G2F_OK) {
        fprintf(stderr, "render %s %s: %s\n", model_path, fixture_path, err.msg);
        goto done;
    }
    g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "from the test", .select = select, .tol = tol,
                           .n_threads = 2};
    if (g2f_verify_run(m, f, &p, &res, &err) != G2F_OK) {
        fprintf(stderr, "render %s %s: %s\n", model_path, fixture_path, err.msg);
        goto done;
    }
    g2f_report_ctx ctx = {.checkpoint_arg = model_path, .fixtures_arg = fixture_path, .model = g2f_model_get_info(m),
                          .gelu_source = "from the test", .fixture_claim = g2f_fixture_gelu_claim(f),
                          .fixture_dtype = g2f_fixture_dtype(f), .tol = &tol, .result = &res};
    html = g2f_report_html(&ctx);
done:
    if (res_out) *res_out = res;
    else g2f_verify_result_free(&res);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return html;
}

static char *render(const char *model_path, const char *fixture_path, g2f_verify_result *res_out) {
    return render_select(model_path, fixture_path, NULL, res_out);
}

static size_t count_of(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* The page's invariants whatever the data: one document, no script, nothing
 * from the network, a row per layer. */
static void check_structure(const char *html, size_t n_layers) {
    CHECK(html && !strncmp(html, "<!DOCTYPE html>\n", 16));
    if (!html) return;
    CHECK_HAS(html, "<meta charset=\"utf-8\">");
    CHECK_HAS(html, "<title>");
    CHECK(strstr(html, "<script") == NULL && strstr(html, "<SCRIPT") == NULL);
    CHECK(strstr(html, "http://") == NULL && strstr(html, "https://") == NULL);
    CHECK(!strstr(html, "onload=") && !strstr(html, "onerror=") && !strstr(html, "onclick=") &&
          !strstr(html, "javascript:"));
    CHECK(count_of(html, "<tr id=\"layer-") == n_layers);
    for (size_t L = 0; L < n_layers; L++) {
        char id[32];
        snprintf(id, sizeof id, "id=\"layer-%zu\"", L);
        CHECK(count_of(html, id) == 1);
    }
    CHECK_HAS(html, "<figure id=\"chart\">");
    CHECK_HAS(html, ">tolerance</text>");
    CHECK_HAS(html, "requested GELU (tanh)");
    CHECK_HAS(html, "other GELU (erf)");
    CHECK(count_of(html, "<svg") == count_of(html, "</svg>"));
    CHECK(count_of(html, "<section") == count_of(html, "</section>"));
    CHECK(strlen(html) > 1000 && html[strlen(html) - 1] == '\n');
    CHECK_HAS(html, "</html>\n");
}

static int write_text(const char *path, const char *text) { return write_bytes(path, text, strlen(text)); }

static void html_should_show_an_all_pass_report(void) {
    char model[400], fx[400], path[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/tiny_tanh.safetensors", fixtures);
    char *html = render(model, fx, NULL);
    check_structure(html, 4);
    if (!html) return;
    CHECK_HAS(html, "<span class=\"badge pass\">PASS</span>");
    CHECK_HAS(html, "all 4 compared layers match the reference");
    CHECK(count_of(html, "class=\"pass\"><td>") == 4);
    CHECK(strstr(html, "class=\"fail\"") == NULL && strstr(html, "<section") == NULL);
    CHECK(count_of(html, "<rect class=\"bar pass\"") == 4);
    CHECK(count_of(html, "<path class=\"other\"") == 4);
    CHECK_HAS(html, "<dt>GELU</dt><dd><strong>tanh</strong> (from the test)</dd>");
    char kern[200]; /* the path that computed it, in the text report's words */
    snprintf(kern, sizeof kern, "<dt>kernels</dt><dd>%s (%s)</dd>", g2f_ffn_isa(), g2f_report_squares_words(0));
    CHECK_HAS(html, kern);
    snprintf(path, sizeof path, "%s/pass.html", dir);
    CHECK(write_text(path, html) == 0);
    free(html);
}

static void html_should_show_the_failing_layer_with_its_histogram(void) {
    char model[400], fx[400], path[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/weights_from_layer.safetensors", fixtures);
    char *html = render(model, fx, NULL);
    check_structure(html, 4);
    if (!html) return;
    CHECK_HAS(html, "<span class=\"badge fail\">FAIL</span>");
    CHECK_HAS(html, "first divergence at layer <a href=\"#fail-2\">2</a>:");
    CHECK_HAS(html, "<tr id=\"layer-2\" class=\"fail\">");
    CHECK_HAS(html, "<tr id=\"layer-0\" class=\"pass\">");
    CHECK(count_of(html, "<section class=\"layer\"") == 1);
    CHECK_HAS(html, "<section class=\"layer\" id=\"fail-2\">");
    CHECK_HAS(html, "<svg id=\"hist-2\"");
    CHECK(strstr(html, "id=\"hist-0\"") == NULL);
    CHECK_HAS(html, "weights_from_layer:0");   /* the code, in the table and the section */
    CHECK_HAS(html, "worst element</dt><dd>token ");
    CHECK(count_of(html, "<rect class=\"bar fail\"") == 1 && count_of(html, "<rect class=\"bar pass\"") == 3);
    /* the histogram holds every element of out once */
    const char *h = strstr(html, "<svg id=\"hist-2\""), *end = h ? strstr(h, "</svg>") : NULL;
    size_t sum = 0;
    for (const char *p = h; end && (p = strstr(p, " elements</title>")) != NULL && p < end; p++) {
        const char *q = p;
        while (q > h && q[-1] >= '0' && q[-1] <= '9') q--;
        sum += strtoul(q, NULL, 10);
    }
    CHECK(sum == 768);
    snprintf(path, sizeof path, "%s/fail.html", dir);
    CHECK(write_text(path, html) == 0);
    free(html);
}

static void html_should_show_skipped_layers_as_gaps(void) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/unexplained.safetensors", fixtures);
    const unsigned char select[4] = {1, 1, 0, 0}; /* layer 1 fails, 2 and 3 skipped */
    char *html = render_select(model, fx, select, NULL);
    check_structure(html, 4);
    if (!html) return;
    CHECK_HAS(html, "<tr id=\"layer-2\" class=\"skipped\">");
    CHECK_HAS(html, "<tr id=\"layer-3\" class=\"skipped\">");
    CHECK_HAS(html, "<tr id=\"layer-1\" class=\"fail\">");
    CHECK(count_of(html, "<rect class=\"bar ") == 2 && count_of(html, "<path class=\"other\"") == 2);
    CHECK(strstr(html, "href=\"#layer-2\"") == NULL); /* no bar links to a skipped layer */
    CHECK_HAS(html, "(2 compared, 1 failed, 2 skipped)");
    CHECK(count_of(html, "<section class=\"layer\"") == 1 && strstr(html, "id=\"hist-1\""));
    free(html);
}


static void html_should_escape_paths_from_the_filesystem(void) {
    /* a checkpoint folder whose name holds every character that matters */
    const char *weird = "a&b<i>\"c'd";
    char folder[300], from[512], to[400], fx[400];
    snprintf(folder, sizeof folder, "%s/%s", dir, weird);
    if (mkdir(folder, 0755) != 0) {
        fprintf(stderr, "skipping the folder case: mkdir %s: %s\n", folder, strerror(errno));
        return;
    }
    const char *files[] = {"model.safetensors", "config.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/tiny/%s", fixtures, files[i]);
        snprintf(to, sizeof to, "%s/%s", folder, files[i]);
        CHECK(copy_file(from, to) == 0);
    }
    snprintf(from, sizeof from, "%s/tiny_tanh.safetensors", fixtures);
    snprintf(fx, sizeof fx, "%s/fx<&>.safetensors", folder);
    CHECK(copy_file(from, fx) == 0);
    char *html = render(folder, fx, NULL);
    check_structure(html, 4);
    if (!html) return;
    CHECK(strstr(html, weird) == NULL);
    CHECK(strstr(html, "<i>") == NULL);
    CHECK(strstr(html, "fx<&>") == NULL);
    CHECK_HAS(html, "a&amp;b&lt;i&gt;&quot;c&#39;d/model.safetensors");
    CHECK_HAS(html, "fx&lt;&amp;&gt;.safetensors");
    free(html);
}

static void html_escape_should_cover_markup_controls_and_bad_utf8(void) {
    g2f_html_buf b = {0};
    CHECK(g2f_html_escape_append(&b, "<a href=\"x\">&'</a>") == 0);
    CHECK(b.data && !strcmp(b.data, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"));
    g2f_html_buf_free(&b);
    CHECK(b.data == NULL && b.len == 0);
    /* tab and newline kept; other control bytes, DEL and broken UTF-8 become U+FFFD; valid UTF-8 kept */
    CHECK(g2f_html_escape_append(&b, "t\tn\nx\x01y\x7fz\xc3(\xe2\x82\xac\xc3\xa9\xed\xa0\x80!") == 0);
    CHECK(b.data && !strcmp(b.data, "t\tn\nx\xEF\xBF\xBDy\xEF\xBF\xBDz\xEF\xBF\xBD(\xe2\x82\xac\xc3\xa9"
                                    "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!"));
    g2f_html_buf_free(&b);
    CHECK(g2f_html_escape_append(&b, NULL) == 0 && b.len == 0);
    g2f_html_buf_free(NULL);
}

static void html_buf_should_grow_without_truncating(void) {
    /* 3 MB of "<" becomes 12 MB of "&lt;", byte for byte */
    size_t n = 3u << 20;
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    if (!big) return;
    memset(big, '<', n);
    big[n] = '\0';
    g2f_html_buf b = {0};
    CHECK(g2f_html_escape_append(&b, "x") == 0);
    CHECK(g2f_html_escape_append(&b, big) == 0);
    CHECK(!b.failed && b.len == 1 + 4 * n && b.data[b.len] == '\0');
    CHECK(b.data && !strncmp(b.data + b.len - 8, "&lt;&lt;", 8) && b.data[0] == 'x');
    g2f_html_buf_free(&b);
    /* a failed buffer stays failed */
    g2f_html_buf f = {0};
    f.failed = 1;
    CHECK(g2f_html_escape_append(&f, "a") == -1 && f.data == NULL);

    /* a long checkpoint argument reaches the page whole */
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/tiny_tanh.safetensors", fixtures);
    g2f_verify_result res = {0};
    char *html = render(model, fx, &res);
    free(html);
    g2f_error err = {0};
    g2f_model *m = NULL;
    if (g2f_model_open(model, NULL, &m, &err) == G2F_OK && res.layers) {
        memset(big, 'q', 100000);
        big[100000] = '\0';
        g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
        g2f_report_ctx ctx = {.checkpoint_arg = big, .fixtures_arg = fx, .model = g2f_model_get_info(m),
                              .gelu_source = "x", .fixture_dtype = G2F_DTYPE_F32, .tol = &tol, .result = &res};
        html = g2f_report_html(&ctx);
        CHECK(html && count_of(html, big) == 2); /* title and heading */
        free(html);
    }
    g2f_model_close(m);
    g2f_verify_result_free(&res);
    free(big);
}

static void html_should_print_nonfinite_numbers_as_text(void) {
    char model[400], fx[400];
    snprintf(model, sizeof model, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/diag/nonfinite.safetensors", fixtures);
    g2f_verify_result res = {0};
    char *html = render(model, fx, &res);
    check_structure(html, 4);
    CHECK_HAS(html, "nonfinite");
    CHECK_HAS(html, "<dt>non-finite</dt>");
    free(html);
    /* a crafted result: NaN and Inf statistics are words, never printf's spellings */
    if (res.layers) {
        g2f_error err = {0};
        g2f_model *m = NULL;
        if (g2f_model_open(model, NULL, &m, &err) == G2F_OK) {
            res.layers[0].out.max_abs = NAN;
            res.layers[0].out.sqnr_db = INFINITY;
            res.layers[0].out.cosine = -INFINITY;
            res.layers[0].out.margin = NAN;
            g2f_tol_params tol = {1, 1e-5, 1e-6, 0};
            g2f_report_ctx ctx = {.checkpoint_arg = model, .fixtures_arg = fx, .model = g2f_model_get_info(m),
                                  .gelu_source = "x", .fixture_claim = "gelu\"<x>", .fixture_dtype = G2F_DTYPE_F32,
                                  .tol = &tol, .result = &res};
            html = g2f_report_html(&ctx);
            check_structure(html, 4);
            CHECK_HAS(html, "<td>nan</td>");
            CHECK_HAS(html, "<td>inf</td>");
            CHECK_HAS(html, "<td>-inf</td>");
            CHECK(strstr(html, ">NaN<") == NULL && strstr(html, ">-nan<") == NULL);
            CHECK_HAS(html, "claims gelu=&quot;gelu&quot;&lt;x&gt;&quot;, which is neither");
            CHECK_HAS(html, "atol 1e-06, rtol 1e-05");
            free(html);
        }
        g2f_model_close(m);
    }
    g2f_verify_result_free(&res);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs argv with stdout to out_path and stderr to err_path; the exit code,
 * or -1 when it could not run. */
static int run(char *const argv[], const char *out_path, const char *err_path) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0) _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path, size_t *n_out) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) {
        size_t got = fread(s, 1, (size_t)n, fp);
        s[got] = '\0';
        if (n_out) *n_out = got;
    }
    fclose(fp);
    return s;
}

static void dump_tail(const char *path) {
    char *s = slurp(path, NULL);
    if (s) fprintf(stderr, "--- %s (tail) ---\n%s\n", path, strlen(s) > 2000 ? s + strlen(s) - 2000 : s);
    free(s);
}

static void html_should_render_in_headless_chromium(void) {
    if (!have_chromium("rendering the HTML report")) return;
    char report[400], url[420], profile[400], shot[400], out[400], errlog[400], shot_arg[420], prof_arg[420];
    snprintf(report, sizeof report, "%s/fail.html", dir);
    snprintf(url, sizeof url, "file://%s", report);
    snprintf(profile, sizeof profile, "%s/chromium-profile", dir);
    snprintf(prof_arg, sizeof prof_arg, "--user-data-dir=%s", profile);
    snprintf(shot, sizeof shot, "%s/shot.png", dir);
    snprintf(shot_arg, sizeof shot_arg, "--screenshot=%s", shot);
    snprintf(out, sizeof out, "%s/dom.html", dir);
    snprintf(errlog, sizeof errlog, "%s/chromium.log", dir);
    CHECK(access(report, R_OK) == 0); /* written by html_should_show_the_failing_layer_with_its_histogram */

    double t0 = now_s();
    char *dom_argv[] = {"timeout", "60", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", prof_arg, "--dump-dom", url, NULL};
    int rc = run(dom_argv, out, errlog);
    double t1 = now_s();
    CHECK(rc == 0);
    if (rc != 0) dump_tail(errlog);
    char *dom = slurp(out, NULL);
    CHECK(dom != NULL);
    if (dom) {
        for (int L = 0; L < 4; L++) {
            char id[32];
            snprintf(id, sizeof id, "id=\"layer-%d\"", L);
            CHECK_HAS(dom, id);
        }
        CHECK_HAS(dom, "<figure id=\"chart\">");
        CHECK_HAS(dom, "<svg id=\"hist-2\"");
        CHECK_HAS(dom, "class=\"bar fail\"");
        CHECK(strstr(dom, "<script") == NULL);
    }
    free(dom);

    char *shot_argv[] = {"timeout", "60", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", prof_arg, "--hide-scrollbars", "--window-size=1200,1600", shot_arg, url,
                         NULL};
    rc = run(shot_argv, out, errlog);
    double t2 = now_s();
    CHECK(rc == 0);
    if (rc != 0) dump_tail(errlog);
    size_t n = 0;
    char *png = slurp(shot, &n);
    CHECK(png && n > 1000 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8));
    free(png);
    fprintf(stderr, "chromium: --dump-dom %.1f s, --screenshot %.1f s\n", t1 - t0, t2 - t1);
}

/* ---- the page at 1200 px --------------------------------------------------- */

/* A result as GPT-2 XL's would be: 48 layers, every third one failing with
 * a long diagnosis, a few skipped, under a long path. */
static char *render_xl_like(void) {
    static g2f_layer_result layers[48];
    memset(layers, 0, sizeof layers);
    for (int i = 0; i < 48; i++) {
        g2f_layer_result *r = &layers[i];
        r->layer = (size_t)i;
        r->tokens = 1024;
        r->status = i >= 20 && i < 26 ? G2F_LAYER_SKIPPED : i % 3 == 0 ? G2F_LAYER_FAIL : G2F_LAYER_PASS;
        r->has_pre = r->has_act = 1;
        r->has_ffn = 1;
        r->out.total = 1024 * 1600;
        r->pre.total = r->act.total = 1024 * 6400;
        r->out.cosine = 0.9999;
        r->out.sqnr_db = 60;
        r->out.margin = r->status == G2F_LAYER_FAIL ? 2.5e6 : 0.07;
        r->out.mismatched = r->status == G2F_LAYER_FAIL ? 1000000 : 0;
        r->out_other.margin = 300;
        r->sep_out = 86;
        r->sep_act = 248;
        r->best_gelu = r->status == G2F_LAYER_FAIL ? G2F_BEST_NEITHER : G2F_BEST_TANH;
        for (int k = 0; k < G2F_HIST_BINS; k++) r->out.hist[k] = (size_t)(k * 997 % 5000);
        if (r->status == G2F_LAYER_FAIL) {
            r->diag.n_causes = 2;
            r->diag.undetermined = 1;
            r->diag.causes[0].codes = 1u << G2F_DIAG_GELU_ERF | 1u << G2F_DIAG_LAYOUT_MISREAD;
            r->diag.causes[0].misread = 3;
            r->diag.causes[1].codes = 1u << G2F_DIAG_WEIGHTS_FROM_LAYER | 1u << G2F_DIAG_FC_BIAS_MISSING;
            r->diag.causes[1].from_layer = 47;
            r->diagnosis = r->diag.causes[0].codes | r->diag.causes[1].codes;
            snprintf(r->diag.where, sizeof r->diag.where, "%s", "");
        }
        snprintf(r->explanation, sizeof r->explanation,
                 "layer %d: cause undetermined, the data fits 2 explanations equally: "
                 "gelu_erf,layout_misread:both; weights_from_layer:47,fc_bias_missing_and_a_long_word_"
                 "without_any_break_opportunity_0123456789012345678901234567890123456789",
                 i);
    }
    g2f_verify_result res = {.gelu = G2F_GELU_TANH, .n_layers = 48, .layers = layers, .compared = 42, .failed = 14, .pass = 0, .first_fail = 0, .first_stage = -1};
    g2f_model_info mi = {0};
    mi.path = "/data/checkpoints/a_very_long_folder_name_without_any_spaces_to_check_wrapping_in_the_header_"
              "0123456789abcdef0123456789abcdef/model.safetensors";
    mi.format = "safetensors";
    mi.naming = "HF GPT-2 (h.N.mlp.c_fc)";
    mi.prefix = "transformer.";
    mi.n_layer = 48;
    mi.n_embd = 1600;
    mi.n_inner = 6400;
    mi.layout_source = "from c_fc.weight's shape and n_embd of ln_2.weight/wte.weight";
    mi.config_source = "none beside the checkpoint";
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_report_ctx ctx = {.checkpoint_arg = mi.path, .fixtures_arg = "/data/fixtures/"
                          "another_very_long_name_without_spaces_0123456789abcdef0123456789abcdef.safetensors",
                          .model = &mi, .gelu_source = "default: GPT-2's tanh approximation; no config.json",
                          .fixture_claim = "tanh", .fixture_dtype = G2F_DTYPE_F32, .tol = &tol, .result = &res,
                          .fixture_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                          .checkpoint_sha256 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"};
    return g2f_report_html(&ctx);
}

/* The page's widths as Chromium lays them out at 1200 px: a copy of the
 * page with a script (the report itself has none) that writes the document's
 * scroll width and client width, and the SVG labels that fall outside their
 * SVG or overlap another label of it plus the boxes whose content overflows
 * them (outside the table's scrolling box), into the DOM, read back with
 * --dump-dom. 0 when it ran. */
static int measure(const char *page, const char *tag, long *scroll_w, long *client_w, long *clipped) {
    char path[400], url[420], prof_arg[420], out[400], errlog[400];
    snprintf(path, sizeof path, "%s/measure-%s.html", dir, tag);
    const char *script =
        "<script>(function(){var d=document.documentElement,c=0;"
        "document.querySelectorAll('svg').forEach(function(s){var r=s.getBoundingClientRect();"
        "s.querySelectorAll('text').forEach(function(t){var b=t.getBoundingClientRect();"
        "if(b.left<r.left-0.5||b.right>r.right+0.5||b.top<r.top-0.5||b.bottom>r.bottom+0.5)c++;});"
        "var t=s.querySelectorAll('text'),i,j;for(i=0;i<t.length;i++)for(j=i+1;j<t.length;j++){"
        "var x=t[i].getBoundingClientRect(),y=t[j].getBoundingClientRect();"
        "if(x.width&&y.width&&x.left<y.right-0.5&&y.left<x.right-0.5&&x.top<y.bottom-0.5&&y.top<x.bottom-0.5)c++;}});"
        "document.querySelectorAll('body *').forEach(function(e){"
        "if(e.clientWidth>0&&e.scrollWidth>e.clientWidth+1&&!e.closest('.scroll')&&!e.closest('svg'))c++;});"
        "var p=document.createElement('pre');p.id='measure';"
        "p.textContent='scroll='+d.scrollWidth+' client='+d.clientWidth+' clipped='+c;"
        "document.body.appendChild(p);})();</script>";
    const char *end = strstr(page, "</body>");
    FILE *fp = fopen(path, "wb");
    if (!fp || !end) return -1;
    fwrite(page, 1, (size_t)(end - page), fp);
    fputs(script, fp);
    fputs(end, fp);
    fclose(fp);
    snprintf(url, sizeof url, "file://%s", path);
    snprintf(prof_arg, sizeof prof_arg, "--user-data-dir=%s/chromium-profile", dir);
    snprintf(out, sizeof out, "%s/measure.out", dir);
    snprintf(errlog, sizeof errlog, "%s/measure.log", dir);
    char *argv[] = {"timeout", "60", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", prof_arg, "--window-size=1200,900", "--dump-dom", url, NULL};
    if (run(argv, out, errlog) != 0) {
        dump_tail(errlog);
        return -1;
    }
    char *dom = slurp(out, NULL);
    const char *m = dom ? strstr(dom, "<pre id=\"measure\">") : NULL;
    int ok = m && sscanf(m, "<pre id=\"measure\">scroll=%ld client=%ld clipped=%ld", scroll_w, client_w, clipped) == 3;
    free(dom);
    return ok ? 0 : -1;
}

/* At 1200 px the page never scrolls sideways (long paths and words wrap, the
 * layer table scrolls in its own box) and no chart label is cut off: on a
 * 48-layer result with long paths, and on the failing fixture's page. */
static void html_should_fit_1200_pixels_without_clipping(void) {
    if (!have_chromium("measuring the page at 1200 px")) return;
    char *xl = render_xl_like();
    CHECK(xl != NULL);
    char path[400];
    snprintf(path, sizeof path, "%s/fail.html", dir);
    char *fail = slurp(path, NULL); /* written by html_should_show_the_failing_layer_with_its_histogram */
    const char *pages[2] = {xl, fail}, *tags[2] = {"xl", "fail"};
    for (int i = 0; i < 2; i++) {
        long sw = -1, cw = -1, clipped = -1;
        CHECK(pages[i] && measure(pages[i], tags[i], &sw, &cw, &clipped) == 0);
        fprintf(stderr, "  %s page at 1200 px: scrollWidth %ld, clientWidth %ld, labels or boxes clipped or overlapping %ld\n", tags[i], sw,
                cw, clipped);
        CHECK(cw > 1000 && cw <= 1200 && sw <= cw);
        CHECK(clipped == 0);
    }
    if (xl) {
        snprintf(path, sizeof path, "%s/xl.html", dir);
        CHECK(write_text(path, xl) == 0);
    }
    free(xl);
    free(fail);
}

/* A pass whose inputs cannot tell the GELU forms apart says so at the top,
 * and per layer in the table. */
static void html_should_say_a_pass_did_not_check_the_gelu(void) {
    g2f_layer_result layers[2];
    memset(layers, 0, sizeof layers);
    for (int i = 0; i < 2; i++) {
        layers[i].layer = (size_t)i;
        layers[i].tokens = 6;
        layers[i].status = G2F_LAYER_PASS;
        layers[i].has_ffn = 1;
        layers[i].out.total = 96;
        layers[i].out.cosine = 1;
        layers[i].best_gelu = i ? G2F_BEST_TANH : G2F_BEST_INDISTINGUISHABLE;
        layers[i].sep_out = i ? 40 : 0.06;
        snprintf(layers[i].explanation, sizeof layers[i].explanation, "layer %d", i);
    }
    g2f_verify_result res = {.gelu = G2F_GELU_TANH, .n_layers = 2, .layers = layers, .compared = 2, .failed = 0, .pass = 1, .first_fail = -1, .first_stage = -1};
    g2f_model_info mi = {0};
    mi.path = "m.safetensors";
    mi.format = mi.naming = mi.layout_source = "x";
    mi.prefix = "";
    mi.n_layer = 2;
    mi.n_embd = 16;
    mi.n_inner = 64;
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_report_ctx ctx = {.checkpoint_arg = "m", .fixtures_arg = "f", .model = &mi, .gelu_source = "x",
                          .fixture_dtype = G2F_DTYPE_F32, .tol = &tol, .result = &res};
    char *html = g2f_report_html(&ctx);
    check_structure(html, 2);
    CHECK_HAS(html, "<p class=\"verdict warn\" id=\"gelu-unverified\"><strong>PASS, but</strong> on 1 of the 2 "
                    "compared layers these inputs cannot tell erf from tanh GELU (separation at most 0.06 of the "
                    "tolerance): the GELU form is not verified there</p>");
    CHECK(count_of(html, "<span class=\"muted unverified\">not verified</span>") == 1);
    free(html);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURES_DIR [CLI]\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    const char *browser = getenv("G2F_CHROMIUM");
    snprintf(chromium, sizeof chromium, "%s", browser ? browser : "/usr/bin/chromium");
    if (make_tmpdir(dir, sizeof dir, "html") != 0) {
        fprintf(stderr, "cannot make a scratch directory\n");
        return 1;
    }
    RUN(html_should_show_an_all_pass_report);
    RUN(html_should_show_the_failing_layer_with_its_histogram);
    RUN(html_should_show_skipped_layers_as_gaps);
    RUN(html_should_escape_paths_from_the_filesystem);
    RUN(html_escape_should_cover_markup_controls_and_bad_utf8);
    RUN(html_buf_should_grow_without_truncating);
    RUN(html_should_print_nonfinite_numbers_as_text);
    RUN(html_should_render_in_headless_chromium);
    RUN(html_should_fit_1200_pixels_without_clipping);
    RUN(html_should_say_a_pass_did_not_check_the_gelu);
    if (!check_failures && !getenv("G2F_KEEP_SCRATCH")) {
        remove_tmpdir(dir);
    } else {
        fprintf(stderr, "scratch files kept in %s\n", dir);
    }
    if (!check_failures && browser_missing) {
        fprintf(stderr, "skipped (77): the cases that need Chromium did not run; the others passed\n");
        return 77;
    }
    CHECK_EXIT();
}
