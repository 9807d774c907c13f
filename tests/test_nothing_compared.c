/* A verdict on nothing compared is a false verdict (issue "Never a false
 * verdict", class 4). A stage counts as compared only when its input and its
 * expected output are both recorded: every tensor of the bundled model and
 * block fixtures, written alone into a fixture of its own (and h.0.in all
 * NaN), must give no PASS from the library (pass 0, nothing compared) and
 * exit 2 from the CLI with one line naming what the fixture records (never
 * "input_ids" when it holds none). A tensor with its stage's input beside it
 * is compared (the control). argv[1] = fixtures folder, argv[2] = the CLI. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_source.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

/* Writes the tensors ts (n of them) of a source as a safetensors file;
 * nan != 0 replaces every F32 value by NaN. */
static int write_alone(const char *path, const g2f_tensor *const *ts, size_t n, int nan) {
    st_entry e[4];
    float *bufs[4] = {0};
    for (size_t i = 0; i < n; i++) {
        const g2f_tensor *t = ts[i];
        e[i] = (st_entry){t->name, g2f_dtype_name(t->dtype), t->ndim, {0}, t->data, (size_t)t->nbytes};
        for (size_t k = 0; k < t->ndim; k++) e[i].shape[k] = t->shape[k];
        if (nan && t->dtype == G2F_DTYPE_F32) {
            bufs[i] = malloc((size_t)t->nbytes);
            for (uint64_t k = 0; bufs[i] && k < t->numel; k++) bufs[i][k] = NAN;
            e[i].data = bufs[i];
        }
    }
    int rc = st_write(path, NULL, e, n, 1);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    return rc;
}

/* Verifies checkpoint ck against fixture fx through the library. */
static g2f_status verify_lib(const char *ck, const char *fx, g2f_verify_result *res) {
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(ck, NULL, &m, &err);
    if (s == G2F_OK) s = g2f_fixture_open(fx, &f, &err);
    if (s == G2F_OK) {
        g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
        g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .tol = tol, .n_threads = 1};
        s = g2f_verify_run(m, f, &p, res, &err);
    }
    if (s != G2F_OK) fprintf(stderr, "verify %s %s: %s\n", ck, fx, err.msg);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

/* The CLI's exit code; its stderr in err_out. */
static int verify_cli(const char *ck, const char *fx, char *err_out, size_t n) {
    char cmd[2048], p[400];
    snprintf(p, sizeof p, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' verify '%s' '%s' > /dev/null 2> '%s'", cli, ck, fx, p);
    int st = system(cmd);
    FILE *fp = fopen(p, "rb");
    size_t got = fp ? fread(err_out, 1, n - 1, fp) : 0;
    err_out[got] = '\0';
    if (fp) fclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every tensor of fixture `name` alone: nothing compared, never a pass. */
static void each_tensor_alone(const char *name, int use_cli) {
    char src_path[400], ck[400], fx[400];
    snprintf(src_path, sizeof src_path, "%s/%s", fixtures, name);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    g2f_source *src = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(src_path, &src, &err) == G2F_OK);
    if (!src) return;
    const g2f_table *t = g2f_source_table(src);
    size_t tried = 0;
    for (size_t i = 0; i < t->count; i++) {
        const g2f_tensor *one = &t->tensors[i];
        snprintf(fx, sizeof fx, "%s/alone_%zu.safetensors", dir, i);
        CHECK(write_alone(fx, &one, 1, 0) == 0);
        g2f_verify_result res;
        g2f_status s = verify_lib(ck, fx, &res);
        /* an FFN out alone is refused by the fixture check (no mlp.in): also no verdict */
        if (s == G2F_OK) {
            if (res.pass || res.compared || res.model.compared)
                fprintf(stderr, "  %s alone: pass %d, compared %zu, model compared %zu\n", one->name, res.pass,
                        res.compared, res.model.compared);
            CHECK(!res.pass && res.compared == 0 && res.model.compared == 0);
        }
        g2f_verify_result_free(&res);
        if (use_cli) {
            char msg[2048];
            CHECK(verify_cli(ck, fx, msg, sizeof msg) == 2);
            CHECK(strchr(msg, '\n') == strrchr(msg, '\n')); /* one line */
            if (strcmp(one->name, "input_ids") != 0 && strstr(msg, "holds input_ids")) {
                fprintf(stderr, "  %s alone: %s", one->name, msg);
                CHECK(0);
            }
        }
        tried++;
    }
    CHECK(tried > 10);
    g2f_source_close(src);
}

static void each_model_tensor_alone_should_compare_nothing(void) { each_tensor_alone("model/clean.safetensors", 1); }
static void each_block_tensor_alone_should_compare_nothing(void) { each_tensor_alone("block/clean.safetensors", 0); }

/* h.0.in all NaN, alone: no PASS (before, "PASS (1 compared ...)"). */
static void a_nan_input_alone_should_not_pass(void) {
    char src_path[400], ck[400], fx[400], msg[2048];
    snprintf(src_path, sizeof src_path, "%s/model/clean.safetensors", fixtures);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/nan_in.safetensors", dir);
    g2f_source *src = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(src_path, &src, &err) == G2F_OK);
    if (!src) return;
    const g2f_tensor *in = g2f_table_find(g2f_source_table(src), "h.0.in");
    CHECK(in != NULL);
    if (in) {
        CHECK(write_alone(fx, &in, 1, 1) == 0);
        CHECK(verify_cli(ck, fx, msg, sizeof msg) == 2);
        CHECK_CONTAINS(msg, "nothing was compared");
        CHECK_CONTAINS(msg, "h.0.in");
    }
    g2f_source_close(src);
}

/* The control: a stage's input beside its output is compared. */
static void a_stage_with_its_input_should_be_compared(void) {
    char src_path[400], ck[400], fx[400];
    snprintf(src_path, sizeof src_path, "%s/model/clean.safetensors", fixtures);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(fx, sizeof fx, "%s/pair.safetensors", dir);
    g2f_source *src = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(src_path, &src, &err) == G2F_OK);
    if (!src) return;
    const g2f_table *t = g2f_source_table(src);
    const g2f_tensor *pair[2] = {g2f_table_find(t, "h.1.in"), g2f_table_find(t, "h.1.ln_1.out")};
    CHECK(pair[0] && pair[1]);
    if (pair[0] && pair[1]) {
        CHECK(write_alone(fx, pair, 2, 0) == 0);
        g2f_verify_result res;
        CHECK(verify_lib(ck, fx, &res) == G2F_OK);
        CHECK(res.compared == 1 && res.pass);
        CHECK(res.layers[1].block.stage[G2F_STAGE_LN1].checked);
        g2f_verify_result_free(&res);
    }
    g2f_source_close(src);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "nothing") != 0) return 1;
    RUN(each_model_tensor_alone_should_compare_nothing);
    RUN(each_block_tensor_alone_should_compare_nothing);
    RUN(a_nan_input_alone_should_not_pass);
    RUN(a_stage_with_its_input_should_be_compared);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
