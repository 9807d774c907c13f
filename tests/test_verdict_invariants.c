/* The verdict's invariants over every bundled fixture and checkpoint format
 * (issue "Never a false verdict", done-when): verify on each fixture with
 * its checkpoint, and tiny's references on every checkpoint format, with the
 * text, JSON and HTML reports of one run:
 *   - exit 0 exactly when JSON says pass, 1 when it says fail; a pass or a
 *     fail always compared something (a layer, or a model-level stage);
 *   - a pass holds no failing layer or stage anywhere in the JSON;
 *   - the verdict word is the same in text, JSON and HTML, and so are the
 *     counts beside it (text and HTML);
 *   - every cause the JSON names (layers, block stages, the whole model's
 *     stages and layers, the first divergence) is named in the text and in
 *     the HTML.
 * argv[1] = fixtures folder, argv[2] = the CLI. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];
static size_t runs, passes, failures_seen, codes_checked;

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = s ? fread(s, 1, (size_t)n, fp) : 0;
    if (s) s[got] = '\0';
    fclose(fp);
    return s;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The text between "result: " and the end of its line. */
static void result_line(const char *text, char *buf, size_t n) {
    const char *p = text ? strstr(text, "\nresult: ") : NULL;
    buf[0] = '\0';
    if (!p) return;
    p += 9;
    size_t len = strcspn(p, "\n");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), p);
}

/* The counts in parentheses at the end of the result line. */
static const char *counts_of(const char *line) {
    const char *p = strrchr(line, '(');
    return p ? p : "";
}

typedef struct run_ctx {
    const char *what, *text, *html;
    int fails;
} run_ctx;

/* code named in the text and in the HTML report. */
static void named_everywhere(run_ctx *r, const char *code) {
    if (!code[0]) return;
    codes_checked++;
    if (!strstr(r->text, code) || !strstr(r->html, code)) {
        fprintf(stderr, "%s: cause '%s' is in the JSON but not in the %s\n", r->what, code,
                !strstr(r->text, code) ? "text" : "HTML");
        CHECK(0);
    }
}

static void codes_everywhere(run_ctx *r, const cJSON *arr) {
    const cJSON *c;
    cJSON_ArrayForEach(c, arr) if (cJSON_IsString(c)) named_everywhere(r, c->valuestring);
}

/* The layers: compared ones counted; every failing one (and stage) noted; causes named. */
static size_t layers_compared(run_ctx *r, const cJSON *root) {
    size_t compared = 0;
    const cJSON *l, *s;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(root, "layers")) {
        if (strcmp(str(l, "status"), "skipped")) compared++;
        r->fails += !strcmp(str(l, "status"), "fail");
        codes_everywhere(r, cJSON_GetObjectItem(l, "diagnosis"));
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(l, "stages")) {
            r->fails += !strcmp(str(s, "status"), "fail");
            codes_everywhere(r, cJSON_GetObjectItem(s, "diagnosis"));
        }
    }
    return compared;
}

static size_t forward_compared(run_ctx *r, const cJSON *root) {
    const cJSON *f = cJSON_GetObjectItem(root, "forward"), *s, *l;
    if (!cJSON_IsObject(f)) return 0;
    const char *const groups[] = {"chained_stages", "isolated_stages"};
    for (int g = 0; g < 2; g++)
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(f, groups[g])) {
            r->fails += !strcmp(str(s, "status"), "fail");
            codes_everywhere(r, cJSON_GetObjectItem(s, "diagnosis"));
        }
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(f, "layers")) {
        r->fails += cJSON_IsTrue(cJSON_GetObjectItem(l, "diverged"));
        codes_everywhere(r, cJSON_GetObjectItem(l, "diagnosis"));
    }
    codes_everywhere(r, cJSON_GetObjectItem(cJSON_GetObjectItem(f, "first_divergence"), "codes"));
    const cJSON *n = cJSON_GetObjectItem(f, "compared");
    return cJSON_IsNumber(n) ? (size_t)n->valuedouble : 0;
}

/* verify CK FX (paths under the fixtures folder) and its invariants. */
static void check_run(const char *ck, const char *fx) {
    char cmd[2048], t[300], j[300], h[300], what[700];
    snprintf(t, sizeof t, "%s/out.txt", dir);
    snprintf(j, sizeof j, "%s/out.json", dir);
    snprintf(h, sizeof h, "%s/out.html", dir);
    snprintf(what, sizeof what, "verify %s %s", ck, fx);
    remove(j), remove(h);
    snprintf(cmd, sizeof cmd, "NO_COLOR=1 '%s' verify '%s/%s' '%s/%s' --json '%s' --html '%s' > '%s' 2>/dev/null", cli,
             fixtures, ck, fixtures, fx, j, h, t);
    int st = system(cmd), code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    runs++;
    CHECK(code == 0 || code == 1 || code == 2);
    if (code == 2) { /* refused: no report written */
        char *js = slurp(j);
        CHECK(js == NULL);
        free(js);
        return;
    }
    char *text = slurp(t), *html = slurp(h), *js = slurp(j);
    cJSON *root = js ? cJSON_Parse(js) : NULL;
    CHECK(text && html && root);
    if (text && html && root) {
        run_ctx r = {what, text, html, 0};
        const char *status = str(root, "status");
        size_t compared = layers_compared(&r, root) + forward_compared(&r, root);
        char line[1024];
        result_line(text, line, sizeof line);
        int pass = code == 0;
        passes += (size_t)pass, failures_seen += (size_t)!pass;
        if (strcmp(status, pass ? "pass" : "fail") || compared == 0 || (pass && r.fails) ||
            strncmp(line, pass ? "PASS" : "FAIL", 4) || !strstr(html, pass ? ">PASS<" : ">FAIL<") ||
            !strstr(html, counts_of(line)))
            fprintf(stderr, "%s: exit %d, JSON %s, %zu compared, %d failing entries, result '%s'\n", what, code,
                    status, compared, r.fails, line);
        CHECK(!strcmp(status, pass ? "pass" : "fail"));
        CHECK(compared > 0);
        CHECK(!pass || r.fails == 0);
        CHECK(!strncmp(line, pass ? "PASS" : "FAIL", 4));
        CHECK(strstr(html, pass ? ">PASS<" : ">FAIL<") != NULL);
        CHECK(counts_of(line)[0] == '(' && strstr(html, counts_of(line)) != NULL);
    }
    cJSON_Delete(root);
    free(text), free(html), free(js);
}

/* The checkpoint a bundled fixture was made from (scripts/make_fixtures). */
static const char *checkpoint_for(const char *sub, const char *name) {
    if (!strncmp(name, "small_", 6) || !strcmp(name, "lm_head_untied.safetensors")) return "small";
    if (!strcmp(name, "tiny_pre_erf.safetensors")) return "diag/tiny_pre";
    if (!strcmp(sub, "quant") && !strncmp(name, "k256", 4)) return "quant/k256";
    return "tiny";
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every fixture file (suffix) in folder sub, in name order. */
static void each_fixture(const char *sub, const char *suffix) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", fixtures, sub);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    if (!d) return;
    char *names[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (len > sl && !strcmp(e->d_name + len - sl, suffix)) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    CHECK(n > 0);
    for (size_t i = 0; i < n; i++) {
        char fx[400];
        snprintf(fx, sizeof fx, "%s/%s", sub, names[i]);
        if (strcmp(names[i], "blocks.safetensors")) check_run(checkpoint_for(sub, names[i]), fx); /* quant/blocks: not a fixture */
        free(names[i]);
    }
}

static void every_bundled_fixture_should_keep_the_invariants(void) {
    check_run("tiny", "tiny_tanh.safetensors");
    check_run("tiny", "tiny_erf.safetensors");
    check_run("tiny", "tiny_tanh_f16.safetensors");
    each_fixture("diag", ".safetensors");
    each_fixture("block", ".safetensors");
    each_fixture("model", ".safetensors");
    each_fixture("npz", ".npz");
    each_fixture("quant", ".safetensors");
}

static void every_checkpoint_format_should_keep_the_invariants(void) {
    static const char *const cks[] = {
        "formats2/tiny.gguf",          "formats2/tiny_f16.gguf",       "formats2/tiny_q8.gguf",
        "formats2/tiny_full.gguf",     "formats2/tiny_full_f16.gguf",  "formats2/tiny_llmc.bin",
        "formats2/tiny_llmc_bf16.bin", "formats2/tiny_tl.safetensors", "torch/hf_tiny.bin",
        "torch/nanogpt_full_ckpt.pt",  "torch/mingpt_full_ckpt.pt",    "quant/tiny_q4_0.gguf",
    };
    for (size_t i = 0; i < sizeof cks / sizeof cks[0]; i++) {
        check_run(cks[i], "tiny_tanh.safetensors");
        check_run(cks[i], "model/clean.safetensors");
        check_run(cks[i], "block/clean.safetensors");
    }
}

/* A line of text that starts with prefix holds word. */
static int line_with(const char *text, const char *prefix, const char *word) {
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, prefix, strlen(prefix))) continue;
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), p);
        if (strstr(buf, word)) return 1;
    }
    return 0;
}

/* Classes 5 and 9 on the README example's fixture (layer 2's attention
 * unscaled): the chained stages after the first divergence say they follow
 * from it (propagated:h.2.attn, the same in text, JSON and HTML; never
 * "unexplained"), and layer 2's FFN, which matches, shows its own PASS while
 * the layer fails. */
static void downstream_stages_should_point_at_the_first_divergence(void) {
    char cmd[1400], t[300], j[300], h[300];
    snprintf(t, sizeof t, "%s/w.txt", dir);
    snprintf(j, sizeof j, "%s/w.json", dir);
    snprintf(h, sizeof h, "%s/w.html", dir);
    snprintf(cmd, sizeof cmd, "NO_COLOR=1 '%s' verify '%s/tiny' '%s/model/attn_scale_missing_layer2.safetensors' --json "
             "'%s' --html '%s' > '%s'", cli, fixtures, fixtures, j, h, t);
    CHECK(system(cmd) != -1);
    char *text = slurp(t), *html = slurp(h), *js = slurp(j);
    cJSON *root = js ? cJSON_Parse(js) : NULL, *f = cJSON_GetObjectItem(root, "forward");
    CHECK(root && text && html);
    const char *const later[] = {"ln_f", "logits"};
    for (int i = 0; i < 2; i++) {
        const cJSON *d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "chained_stages"), later[i]),
                                             "diagnosis");
        CHECK(cJSON_GetArraySize(d) == 1 && !strcmp(cJSON_GetArrayItem(d, 0)->valuestring, "propagated:h.2.attn"));
    }
    const cJSON *l3 = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "layers"), 3);
    const cJSON *d3 = cJSON_GetObjectItem(l3, "diagnosis");
    CHECK(cJSON_GetArraySize(d3) == 1 && !strcmp(cJSON_GetArrayItem(d3, 0)->valuestring, "propagated:h.2.attn"));
    CHECK(js && !strstr(js, "\"unexplained\""));
    CHECK(line_with(text, "ln_f ", "propagated:h.2.attn") && line_with(text, "logits ", "propagated:h.2.attn"));
    CHECK_CONTAINS(html, "propagated:h.2.attn");
    /* layer 2: the layer fails at attn, its FFN passes on its own */
    const cJSON *l2 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "layers"), 2);
    CHECK(!strcmp(str(l2, "status"), "fail") && !strcmp(str(l2, "ffn_status"), "pass"));
    CHECK(line_with(text, "    2      12 ", " PASS ") &&
          line_with(text, "    2      12 ", "- (the layer fails at another stage: below)"));
    CHECK(line_with(text, "    2     0.", "FAIL    attn: attn_scale_missing"));
    cJSON_Delete(root);
    free(text), free(html), free(js);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1], cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "invariants") != 0) return 1;
    RUN(every_bundled_fixture_should_keep_the_invariants);
    RUN(every_checkpoint_format_should_keep_the_invariants);
    RUN(downstream_stages_should_point_at_the_first_divergence);
    fprintf(stderr, "%zu runs: %zu PASS, %zu FAIL; %zu named causes found in text and HTML\n", runs, passes,
            failures_seen, codes_checked);
    remove_tmpdir(dir);
    return check_failures != 0;
}
