/* An f16-minded port gets a true verdict (issue "Never a false verdict",
 * classes 10-13): ggml's F16 path (fixtures/model/ggml_f16: F16 weights and
 * product inputs, float32 sums, the f16 GELU table) and a port of F16
 * weights (model/weights_f16_rounded; formats2/tiny_full_f16.gguf against a
 * float32 reference) pass every stage, isolated, chained and from input_ids,
 * once the precision is named (--gelu f16_table, --accept ...); without it
 * each failing stage is named for that precision (never unexplained, never
 * only tf32_matmul); under the accept a real bug is still found and named,
 * and the chained tolerances stay the size of the isolated ones (an input
 * variance weighed as x^2 once made them grow 2^26-fold a layer). The result
 * line's counts agree with the verdict in text and HTML. argv[1] = fixtures
 * folder, argv[2] = the CLI. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_fixture.h"
#include "test_util.h"
#include "st_rewrite.h"

static const char *fixtures, *cli;
static char dir[256];

typedef struct outcome {
    int code;
    char *text, *html;
    cJSON *json;
} outcome;

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

/* verify CK FX ARGS with --json and --html beside the text. */
static outcome verify(const char *ck, const char *fx, const char *args) {
    char cmd[2048], t[300], j[300], h[300];
    snprintf(t, sizeof t, "%s/out.txt", dir);
    snprintf(j, sizeof j, "%s/out.json", dir);
    snprintf(h, sizeof h, "%s/out.html", dir);
    remove(j), remove(h);
    snprintf(cmd, sizeof cmd, "'%s' verify '%s/%s' '%s/%s' %s --json '%s' --html '%s' > '%s' 2>&1", cli, fixtures, ck,
             fixtures, fx, args, j, h, t);
    int st = system(cmd);
    outcome o = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(t), slurp(h), NULL};
    char *js = slurp(j);
    o.json = js ? cJSON_Parse(js) : NULL;
    free(js);
    if (!o.json) fprintf(stderr, "%s: no JSON report; output:\n%s\n", cmd, o.text ? o.text : "");
    return o;
}

static void outcome_free(outcome *o) {
    free(o->text), free(o->html);
    cJSON_Delete(o->json);
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int has_code(const cJSON *arr, const char *code) {
    const cJSON *c;
    cJSON_ArrayForEach(c, arr) if (cJSON_IsString(c) && !strcmp(c->valuestring, code)) return 1;
    return 0;
}

/* Every stage of every layer, every model-level stage (isolated and chained)
 * and every chained layer passes; the forward was computed from input_ids
 * and judged with accept (or plain float32 for NULL). */
static void every_stage_should_pass(const outcome *o, const char *accept) {
    CHECK(o->code == 0);
    CHECK(!strcmp(str(o->json, "status"), "pass"));
    const cJSON *l, *s;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(o->json, "layers")) {
        CHECK(!strcmp(str(l, "status"), "pass"));
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(l, "stages")) CHECK(!strcmp(str(s, "status"), "pass"));
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(l, "chained"), "diverged")));
    }
    const cJSON *f = cJSON_GetObjectItem(o->json, "forward");
    CHECK(!strcmp(str(f, "status"), "pass"));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(f, "chained")));
    const cJSON *acc = cJSON_GetObjectItem(f, "accepted");
    CHECK(accept ? has_code(acc, accept) : cJSON_GetArraySize(acc) == 0);
    CHECK(cJSON_GetObjectItem(f, "failed") && cJSON_GetObjectItem(f, "failed")->valuedouble == 0);
    CHECK(cJSON_GetObjectItem(f, "compared") && cJSON_GetObjectItem(f, "compared")->valuedouble >= 30);
    static const char *const ms[] = {"embed", "ln_f", "logits"};
    for (int i = 0; i < 3; i++) {
        CHECK(!strcmp(str(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "isolated_stages"), ms[i]), "status"), "pass"));
        CHECK(!strcmp(str(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "chained_stages"), ms[i]), "status"), "pass"));
    }
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(f, "layers")) CHECK(cJSON_IsFalse(cJSON_GetObjectItem(l, "diverged")));
}

/* Every failing stage (block and model-level, isolated) names code among
 * its causes, and nothing is unexplained. */
static void every_failure_should_name(const outcome *o, const char *code) {
    CHECK(o->code == 1);
    const cJSON *l, *s;
    int failures = 0;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(o->json, "layers")) {
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(l, "stages")) {
            if (strcmp(str(s, "status"), "fail")) continue;
            failures++;
            if (!has_code(cJSON_GetObjectItem(s, "diagnosis"), code))
                fprintf(stderr, "layer %d %s: no %s\n", cJSON_GetObjectItem(l, "layer")->valueint, str(s, "stage"),
                        code);
            CHECK(has_code(cJSON_GetObjectItem(s, "diagnosis"), code));
            CHECK(!has_code(cJSON_GetObjectItem(s, "diagnosis"), "unexplained"));
        }
    }
    const cJSON *f = cJSON_GetObjectItem(o->json, "forward"), *iso = cJSON_GetObjectItem(f, "isolated_stages");
    cJSON_ArrayForEach(s, iso) {
        if (strcmp(str(s, "status"), "fail")) continue;
        failures++;
        CHECK(has_code(cJSON_GetObjectItem(s, "diagnosis"), code));
    }
    CHECK(failures > 0);
    CHECK(has_code(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "first_divergence"), "codes"), code));
}

/* The counts beside the verdict: the whole model's failures when it has
 * them, the same sentence in text and HTML. */
static void counts_should_agree(const outcome *o) {
    const cJSON *f = cJSON_GetObjectItem(o->json, "forward");
    char want[160];
    snprintf(want, sizeof want, "whole model: %d stages compared, %d failed)",
             cJSON_GetObjectItem(f, "compared")->valueint, cJSON_GetObjectItem(f, "failed")->valueint);
    CHECK_CONTAINS(o->text, want);
    CHECK_CONTAINS(o->html, want);
    if (o->code != 0) CHECK(cJSON_GetObjectItem(f, "failed")->valueint > 0 || strstr(o->text, "0 failed, ") == NULL);
}

/* The FFN table's rows (a layer number, then its token count) that hold word. */
static int ffn_rows_with(const char *text, const char *word) {
    int rows = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        unsigned layer, tokens;
        char extra[16];
        if (sscanf(buf, "%u %u %15s", &layer, &tokens, extra) == 3 && (strstr(buf, " PASS ") || strstr(buf, " FAIL ")))
            rows += strstr(buf, word) != NULL;
        line = end ? end + 1 : NULL;
    }
    return rows;
}

static void ggml_f16_port_should_pass_once_its_precision_is_named(void) {
    outcome o = verify("tiny", "model/ggml_f16.safetensors", "--gelu f16_table --accept f16_matmul");
    every_stage_should_pass(&o, "f16_matmul");
    counts_should_agree(&o);
    CHECK_CONTAINS(o.text, "accepted: f16_matmul");
    outcome_free(&o);
}

static void ggml_f16_port_should_be_named_without_the_accept(void) {
    outcome o = verify("tiny", "model/ggml_f16.safetensors", "--gelu f16_table");
    every_failure_should_name(&o, "f16_matmul");
    counts_should_agree(&o);
    /* the result line says what failed: the layers, and the whole model */
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "failed")->valueint > 0);
    /* the FFN table's gelu column never claims the form not asked for (it once said tanh): neither
     * form fits computed in float32, which the causes explain */
    CHECK(ffn_rows_with(o.text, " neither ") == 4);
    outcome_free(&o);
}

static void ggml_f16_port_should_get_the_f16_table_hint(void) {
    outcome o = verify("tiny", "model/ggml_f16.safetensors", "");
    CHECK(o.code == 1);
    CHECK_CONTAINS(str(o.json, "hint"), "--gelu f16_table");
    CHECK_CONTAINS(o.text, "hint: ");
    outcome_free(&o);
}

static void f16_weights_should_pass_at_every_stage_with_the_accept(void) {
    /* the reference made from F16-rounded weights (wte, wpe, ln_f too) against the float32 file */
    outcome o = verify("tiny", "model/weights_f16_rounded.safetensors", "");
    every_failure_should_name(&o, "weights_f16_rounded");
    outcome_free(&o);
    o = verify("tiny", "model/weights_f16_rounded.safetensors", "--accept weights_f16_rounded");
    every_stage_should_pass(&o, "weights_f16_rounded");
    outcome_free(&o);
    /* the F16 file against the float32 reference: the checkpoint is the rounded side */
    o = verify("formats2/tiny_full_f16.gguf", "model/clean.safetensors", "");
    every_failure_should_name(&o, "weights_f16_rounded");
    outcome_free(&o);
    o = verify("formats2/tiny_full_f16.gguf", "model/clean.safetensors", "--accept weights_f16_rounded");
    every_stage_should_pass(&o, "weights_f16_rounded");
    /* the chained tolerances stay those of the stages: no margin collapses towards 0 along the layers */
    const cJSON *l, *m;
    double least = 1;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "layers"))
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(l, "margins")) if (cJSON_IsNumber(m) && m->valuedouble > 0 &&
                                                                     m->valuedouble < least) least = m->valuedouble;
    CHECK(least > 0.01);
    outcome_free(&o);
}

/* Under the accept the port's other bugs are still found, where they are,
 * with their own names. */
static void a_real_bug_should_be_named_under_the_accept(void) {
    outcome o = verify("formats2/tiny_full_f16.gguf", "model/attn_scale_missing_layer2.safetensors",
                       "--accept weights_f16_rounded");
    CHECK(o.code == 1);
    const cJSON *fd = cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "first_divergence");
    CHECK(cJSON_GetObjectItem(fd, "layer") && cJSON_GetObjectItem(fd, "layer")->valueint == 2);
    CHECK(!strcmp(str(fd, "stage"), "attn"));
    CHECK(has_code(cJSON_GetObjectItem(fd, "codes"), "attn_scale_missing"));
    counts_should_agree(&o);
    outcome_free(&o);
    o = verify("formats2/tiny_full_f16.gguf", "model/wpe_offset_1.safetensors", "--accept weights_f16_rounded");
    CHECK(o.code == 1);
    fd = cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "first_divergence");
    CHECK(!strcmp(str(fd, "stage"), "embed"));
    CHECK(has_code(cJSON_GetObjectItem(fd, "codes"), "wpe_offset:1"));
    counts_should_agree(&o);
    outcome_free(&o);
    o = verify("tiny", "model/attn_scale_missing_layer2.safetensors", "--gelu f16_table --accept f16_matmul");
    CHECK(o.code == 1);
    outcome_free(&o);
    /* ggml's F16 path with its attention mask left out at layer 1: the stage is diagnosed computed
     * with the accepted precision, so the mask is named (it was "no known cause") */
    o = verify("tiny", "model/ggml_f16_attn_mask_missing_layer1.safetensors", "--gelu f16_table --accept f16_matmul");
    CHECK(o.code == 1);
    fd = cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "first_divergence");
    CHECK(cJSON_GetObjectItem(fd, "layer") && cJSON_GetObjectItem(fd, "layer")->valueint == 1);
    CHECK(!strcmp(str(fd, "stage"), "attn"));
    CHECK(has_code(cJSON_GetObjectItem(fd, "codes"), "attn_mask_missing"));
    const cJSON *st1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o.json, "layers"), 1),
                                                              "stages"), 1);
    CHECK(!strcmp(str(st1, "stage"), "attn") && has_code(cJSON_GetObjectItem(st1, "accepted"), "f16_matmul"));
    CHECK_CONTAINS(o.text, "first divergence: layer 1, attn: attn_mask_missing");
    outcome_free(&o);
}

/* An F16 GGUF keeps its LayerNorms in F32: under --accept weights_f16_rounded they are exact, and a
 * LayerNorm bug (eps 1e-6 or 1e-12 where the model says 1e-5) still fails; it passed, the F16
 * uncertainty applied to gains and biases never rounded (a tolerance 1000x too wide). */
static void exact_layernorms_should_stay_exact_under_the_accept(void) {
    static const char *const bugs[] = {"block/ln_eps_1e-6.safetensors", "block/ln_eps_1e-12.safetensors"};
    for (int k = 0; k < 2; k++) {
        outcome o = verify("formats2/tiny_full_f16.gguf", bugs[k], "--accept weights_f16_rounded");
        if (o.code != 1) fprintf(stderr, "  %s: exit %d\n%s\n", bugs[k], o.code, o.text ? o.text : "");
        CHECK(o.code == 1);
        outcome_free(&o);
    }
    outcome o = verify("formats2/tiny_full_f16.gguf", "block/clean.safetensors", "--accept weights_f16_rounded");
    CHECK(o.code == 0);
    outcome_free(&o);
}

/* dir/name: model/clean's input_ids and logits, each logit times scale and moved by noise (its
 * size, alternating in sign). */
static st_how ids_only(void *u, const g2f_tensor *t) {
    (void)u;
    return (st_how){strcmp(t->name, "input_ids") ? ST_DROP : ST_KEEP, NULL, 1.0f, NULL};
}

static void write_logits_only(const char *name, float scale, float noise) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/model/clean.safetensors", fixtures);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(src, &f, &err) == G2F_OK);
    const g2f_tensor *lg = f ? g2f_fixture_act(f, 0, G2F_ACT_LOGITS) : NULL;
    CHECK(lg != NULL);
    float *v = lg ? malloc(lg->numel * sizeof *v) : NULL;
    if (v) {
        g2f_tensor_read_f32(lg, 0, lg->numel, v);
        for (uint64_t i = 0; i < lg->numel; i++) v[i] = v[i] * scale + (i % 2 ? noise : -noise);
        st_entry e = {"logits", "F32", 3, {lg->shape[0], lg->shape[1], lg->shape[2]}, v, lg->numel * sizeof *v};
        CHECK(st_rewrite(src, dst, ids_only, NULL, &e, 1) == 0);
    }
    free(v);
    g2f_fixture_close(f);
}

/* A float32 difference in logits recorded alone is no precision path: ggml's F16 matmul (its
 * tolerance wide enough to take them) was named for logits x1.002 (a trend rounding does not
 * make) and for a small change of either sign that its rounding only moves further from (a small
 * bug upstream, an epsilon, a gain); both are "no known cause". */
static void float32_logit_differences_should_not_be_named_f16_matmul(void) {
    static const struct { const char *name; float scale, noise; } cases[] = {
        {"logits_scaled.safetensors", 1.002f, 0}, {"logits_moved.safetensors", 1.0f, 2e-5f}};
    for (int k = 0; k < 2; k++) {
        write_logits_only(cases[k].name, cases[k].scale, cases[k].noise);
        char rel[400];
        snprintf(rel, sizeof rel, "../../../../../../../..%s/%s", dir, cases[k].name); /* verify prefixes fixtures/ */
        outcome o = verify("tiny", rel, "");
        CHECK(o.code == 1);
        const cJSON *fd = cJSON_GetObjectItem(cJSON_GetObjectItem(o.json, "forward"), "first_divergence");
        if (has_code(cJSON_GetObjectItem(fd, "codes"), "f16_matmul")) fprintf(stderr, "%s\n", o.text ? o.text : "");
        CHECK(!has_code(cJSON_GetObjectItem(fd, "codes"), "f16_matmul"));
        CHECK(!has_code(cJSON_GetObjectItem(fd, "codes"), "weights_f16_rounded"));
        outcome_free(&o);
    }
}

/* tiny with wte and wpe times 1e-3 (the embedding about 1e-5), and a float tensor stored as F16. */
static st_how small_embedding(void *u, const g2f_tensor *t) {
    (void)u;
    int emb = strstr(t->name, "wte.") || strstr(t->name, "wpe.");
    return emb ? (st_how){ST_CONVERT, "F32", 1e-3f, NULL} : (st_how){ST_KEEP, NULL, 1.0f, NULL};
}
/* tiny with the FFN's c_fc and c_proj bias times 1e-5: mlp.pre, mlp.act and mlp.out about 1e-5. */
static st_how small_mlp(void *u, const g2f_tensor *t) {
    (void)u;
    int small = strstr(t->name, "mlp.c_fc.") || strstr(t->name, "mlp.c_proj.bias");
    return small ? (st_how){ST_CONVERT, "F32", 1e-5f, NULL} : (st_how){ST_KEEP, NULL, 1.0f, NULL};
}
/* tiny with ln_2 and both FFN biases times 1e-5: the FFN's input (mlp.in) and everything after it
 * about 1e-5, its F16 rounding absolute. */
static st_how small_mlp_in(void *u, const g2f_tensor *t) {
    (void)u;
    int small = strstr(t->name, "ln_2.") || strstr(t->name, "mlp.c_fc.bias") || strstr(t->name, "mlp.c_proj.bias");
    return small ? (st_how){ST_CONVERT, "F32", 1e-5f, NULL} : (st_how){ST_KEEP, NULL, 1.0f, NULL};
}
static st_how floats_f16(void *u, const g2f_tensor *t) {
    (void)u;
    return t->dtype == G2F_DTYPE_F32 ? (st_how){ST_CONVERT, "F16", 1.0f, NULL} : (st_how){ST_KEEP, NULL, 1.0f, NULL};
}

/* A correct reference stored as F16 with values below F16's normal range (6.1e-5, where its
 * rounding is 2^-25 absolute, not 2^-11 relative): run's own output of the checkpoint edited by
 * edit (named name), rounded to F16, passes every stage. */
static void subnormal_reference_should_pass(const char *name, st_edit_fn edit) {
    char ck[300], src[400], cfg[400], ref[400], ref16[400], txt[400], cmd[2400];
    snprintf(ck, sizeof ck, "%s/%s", dir, name);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(cfg, sizeof cfg, "%s/tiny/config.json", fixtures);
    CHECK(st_checkpoint_dir(ck, src, edit, NULL, cfg, NULL) == 0);
    snprintf(ref, sizeof ref, "%s/%s_ref.safetensors", dir, name);
    snprintf(ref16, sizeof ref16, "%s/%s_ref16.safetensors", dir, name);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --ids '5,17,3,42,9,60;2,71,33,8,11,23' --save all -o '%s' > /dev/null",
             cli, ck, ref);
    CHECK(system(cmd) == 0);
    CHECK(st_rewrite(ref, ref16, floats_f16, NULL, NULL, 0) == 0);
    snprintf(txt, sizeof txt, "%s/%s.txt", dir, name);
    snprintf(cmd, sizeof cmd, "'%s' verify '%s' '%s' > '%s' 2>&1", cli, ck, ref16, txt);
    int st = system(cmd);
    char *t = slurp(txt);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) fprintf(stderr, "%s\n", t ? t : "");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_CONTAINS(t, "whole model: 30 stages compared, 0 failed");
    free(t);
}

/* The embedding about 1e-5 (its embed failed at margin 37 on GPT-2-sized random weights, as on
 * this one). */
static void an_f16_reference_with_subnormal_values_should_pass(void) {
    subnormal_reference_should_pass("small_emb", small_embedding);
}

/* The FFN's own stages about 1e-5: the FFN's tolerance (pre, act, out), not the model's. */
static void an_f16_reference_with_a_subnormal_ffn_should_pass(void) {
    subnormal_reference_should_pass("small_mlp", small_mlp);
}

/* The FFN's recorded input about 1e-5 too: its rounding enters every FFN stage. */
static void an_f16_reference_with_a_subnormal_ffn_input_should_pass(void) {
    subnormal_reference_should_pass("small_mlp_in", small_mlp_in);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1], cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "f16port") != 0) return 1;
    RUN(ggml_f16_port_should_pass_once_its_precision_is_named);
    RUN(ggml_f16_port_should_be_named_without_the_accept);
    RUN(ggml_f16_port_should_get_the_f16_table_hint);
    RUN(f16_weights_should_pass_at_every_stage_with_the_accept);
    RUN(a_real_bug_should_be_named_under_the_accept);
    RUN(exact_layernorms_should_stay_exact_under_the_accept);
    RUN(float32_logit_differences_should_not_be_named_f16_matmul);
    RUN(an_f16_reference_with_subnormal_values_should_pass);
    RUN(an_f16_reference_with_a_subnormal_ffn_should_pass);
    RUN(an_f16_reference_with_a_subnormal_ffn_input_should_pass);
    remove_tmpdir(dir);
    return check_failures != 0;
}
