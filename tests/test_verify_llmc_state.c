/* `gpt2ffn verify CHECKPOINT debug_state.bin` on llm.c's debug state
 * (fixtures/llmc/tiny_debug_state.bin, made for formats2/tiny_llmc.bin):
 *   - clean: PASS against the llm.c checkpoint (vocabulary padded to 128)
 *     and against the same weights as safetensors (fixtures/tiny): the
 *     logits compared (V columns), the loss checked as a stage from the
 *     recorded logits and from ours, the gradients said to be out of
 *     scope, in the text, JSON and HTML reports;
 *   - one logit moved by 0.01: FAIL, first divergence at logits;
 *   - the loss moved by 1e-4 (20 ulps; the bounds are about 1e-5): FAIL at
 *     the loss, the logits still passing; the same loss one ulp away passes;
 *   - hostile states (bad magic, truncated, a target outside the
 *     vocabulary, a NaN loss, and a checkpoint without a vocabulary to
 *     size the state by): exit 2 with one line naming the file, or FAIL
 *     for the NaN (it never passes).
 * argv[1] = fixtures folder, argv[2] = the CLI. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256], out_text[1 << 20], err_text[8192];

/* The CLI with args; its exit code, stdout in out_text, stderr in err_text. */
static int run(const char *args) {
    return run_cli_in("NO_COLOR=1", cli, args, dir, out_text, sizeof out_text, err_text, sizeof err_text);
}

/* verify CK STATE --json -: the exit code and the parsed report (the caller deletes it). */
static cJSON *verify_json(const char *ck, const char *state, int *rc) {
    char args[2048];
    snprintf(args, sizeof args, "verify '%s' '%s' --json -", ck, state);
    *rc = run(args);
    return cJSON_Parse(out_text);
}

static const char *str_at(const cJSON *o, const char *a, const char *b, const char *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c) x = cJSON_GetObjectItemCaseSensitive(x, c);
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* The state's layout (g2f_llmc_state.h): B 4, T 16, V 96, logits unpadded. */
enum { B = 4, T = 16, V = 96 };
static const size_t X_AT = 1024, Y_AT = 1024 + 4 * B * T, Z_AT = 1024 + 8 * B * T, LOSS_AT = 1024 + 8 * B * T + 4 * B * T * V;

static char *state;
static size_t state_len;

/* A copy of the state with the float at byte `at` moved by delta (NAN: set
 * to NaN), or the int32 at `at` set to ival (when at < Z_AT); its path. */
static const char *variant(const char *name, size_t at, float delta, int32_t ival, size_t keep) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *b = malloc(state_len);
    memcpy(b, state, state_len);
    if (at >= Z_AT) {
        float f;
        memcpy(&f, b + at, 4);
        f = isnan(delta) ? NAN : f + delta;
        memcpy(b + at, &f, 4);
    } else if (at) {
        memcpy(b + at, &ival, 4);
    }
    CHECK(write_bytes(path, b, keep ? keep : state_len) == 0);
    free(b);
    return path;
}

static void clean_passes(const char *llmc, const char *st) {
    const char *cks[2] = {llmc, NULL};
    char tiny[512];
    snprintf(tiny, sizeof tiny, "%s/tiny", fixtures);
    cks[1] = tiny;
    for (int i = 0; i < 2; i++) {
        int rc;
        cJSON *j = verify_json(cks[i], st, &rc);
        CHECK(rc == 0 && j);
        CHECK(!strcmp(str_at(j, "status", NULL, NULL), "pass"));
        CHECK(strstr(str_at(j, "verdict", NULL, NULL), "logits, loss") != NULL);
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "forward"), "loss");
        CHECK(!strcmp(str_at(loss, "status", NULL, NULL), "pass"));
        CHECK(!strcmp(str_at(loss, "chained", "status", NULL), "pass"));
        CHECK(!strcmp(str_at(loss, "isolated", "status", NULL), "pass"));
        const cJSON *pos = cJSON_GetObjectItemCaseSensitive(loss, "positions");
        CHECK(cJSON_IsNumber(pos) && pos->valuedouble == B * T);
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(loss, "reference");
        CHECK(cJSON_IsNumber(ref) && fabs(ref->valuedouble - 5.31694937) < 1e-6);
        const cJSON *grads = cJSON_GetObjectItemCaseSensitive(loss, "gradients_not_checked");
        CHECK(cJSON_IsNumber(grads) && grads->valuedouble == 210304);
        cJSON_Delete(j);
    }
    /* the text and HTML reports say the same */
    char args[2048];
    snprintf(args, sizeof args, "verify '%s' '%s' --html '%s/r.html'", llmc, st, dir);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\nloss     ");
    CHECK_CONTAINS(out_text, "loss: the reference records 5.31694937 (the mean over 64 positions)");
    CHECK_CONTAINS(out_text, "210304 parameter gradients: not checked (gradients are out of scope");
    CHECK_CONTAINS(out_text, "loss: matches)");
    char p[512], html[1 << 16];
    snprintf(p, sizeof p, "%s/r.html", dir);
    slurp_text(p, html, sizeof html);
    CHECK_CONTAINS(html, "<td class=\"l\">loss</td><td class=\"sg-pass\">");
    CHECK_CONTAINS(html, "<p id=\"loss\">Loss: the reference records 5.31694937");
    CHECK_CONTAINS(html, "210304 parameter gradients");
}

static void perturbed_fail(const char *llmc) {
    int rc;
    /* logits[1, 3, 7] + 0.01 */
    cJSON *j = verify_json(llmc, variant("logit.bin", Z_AT + 4 * ((1 * T + 3) * V + 7), 0.01f, 0, 0), &rc);
    CHECK(rc == 1 && j);
    CHECK(!strcmp(str_at(j, "forward", "first_divergence", "stage"), "logits"));
    const cJSON *lg = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "forward"), "chained_stages"), "logits");
    CHECK(!strcmp(str_at(lg, "status", NULL, NULL), "fail"));
    CHECK_CONTAINS(str_at(j, "verdict", NULL, NULL), "first divergence: logits");
    cJSON_Delete(j);
    /* the loss + 1e-4 */
    j = verify_json(llmc, variant("loss.bin", LOSS_AT, 1e-4f, 0, 0), &rc);
    CHECK(rc == 1 && j);
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(j, "forward");
    CHECK(!strcmp(str_at(fw, "status", NULL, NULL), "pass"));       /* the logits match */
    CHECK(!strcmp(str_at(fw, "loss", "status", NULL), "fail"));
    CHECK(!strcmp(str_at(fw, "loss", "chained", "status"), "fail"));
    CHECK(!strcmp(str_at(fw, "loss", "isolated", "status"), "fail"));
    CHECK_CONTAINS(str_at(j, "verdict", NULL, NULL), "first divergence: loss: the mean cross-entropy of the "
                                                    "reference's own logits against the targets is 5.3169");
    cJSON_Delete(j);
    char args[2048];
    snprintf(args, sizeof args, "verify '%s' '%s/loss.bin'", llmc, dir);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "loss: does not match)");
    CHECK_CONTAINS(out_text, "first divergence: loss:");
    /* one ulp is within float32's rounding of the mean */
    float f;
    memcpy(&f, state + LOSS_AT, 4);
    j = verify_json(llmc, variant("ulp.bin", LOSS_AT, nextafterf(f, 10.0f) - f, 0, 0), &rc);
    CHECK(rc == 0 && j && !strcmp(str_at(j, "status", NULL, NULL), "pass"));
    cJSON_Delete(j);
    /* a NaN loss never passes */
    j = verify_json(llmc, variant("nan.bin", LOSS_AT, NAN, 0, 0), &rc);
    CHECK(rc == 1 && j && !strcmp(str_at(j, "forward", "loss", "status"), "fail"));
    cJSON_Delete(j);
}

static void hostile_refused(const char *llmc) {
    struct {
        const char *name;
        size_t at;
        int32_t val;
        size_t keep;
        const char *msg;
    } cases[] = {
        {"version.bin", 4, 1, 0, "version is 1"},
        {"short.bin", 0, 0, 2000, "bytes but B=4, T=16"},
        {"target.bin", Y_AT + 4 * 5, V, 0, "outside"},
        {"input.bin", X_AT + 4 * 9, -1, 0, "outside"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[2048];
        const char *p = variant(cases[i].name, cases[i].at, 0, cases[i].val, cases[i].keep);
        snprintf(args, sizeof args, "verify '%s' '%s'", llmc, p);
        int rc = run(args);
        CHECK(rc == 2);
        CHECK_CONTAINS(err_text, cases[i].name);
        CHECK_CONTAINS(err_text, cases[i].msg);
        CHECK(strchr(err_text, '\n') == err_text + strlen(err_text) - 1); /* one line */
    }
    /* a checkpoint without a token embedding cannot size the state */
    char args[2048];
    snprintf(args, sizeof args, "verify '%s/torch/nanogpt_ckpt.pt' '%s/llmc/tiny_debug_state.bin'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "tiny_debug_state.bin");
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    fixtures = argv[1];
    cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "llmc_verify") != 0) return 1;
    char st[512], llmc[512];
    snprintf(st, sizeof st, "%s/llmc/tiny_debug_state.bin", fixtures);
    snprintf(llmc, sizeof llmc, "%s/formats2/tiny_llmc.bin", fixtures);
    state = read_whole_file(st, &state_len);
    CHECK(state && state_len > LOSS_AT + 4);
    if (state) {
        clean_passes(llmc, st);
        perturbed_fail(llmc);
        hostile_refused(llmc);
    }
    free(state);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
