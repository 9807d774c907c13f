/* End-to-end: the gpt2ffn binary on the bundled fixtures and on files this
 * test writes (malformed, non-finite, GELU-undeterminable), checking exit
 * codes, the report and the one-line error messages. argv[1] is the fixtures
 * folder, argv[2] the CLI. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "g2f_ffn.h"
#include "pickle_writer.h"
#include "test_util.h"
#include "zip_writer.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 16], err_text[1 << 12];

/* Runs the CLI with args (a shell-quoted string); returns its exit code. */
static int run(const char *args) {
    return run_cli_in("", cli, args, dir, out_text, sizeof out_text, err_text, sizeof err_text);
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void verify_should_pass_the_tanh_fixture(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"status\":\t\"pass\"");
    CHECK(count(out_text, "\"best_gelu\":\t\"tanh\"") == 4);
    CHECK_CONTAINS(out_text, "\"gelu_source\":\t\"from config.json activation_function \\\"gelu_new\\\"\"");
    snprintf(args, sizeof args, "verify '%s/tiny/model.safetensors' '%s/tiny_tanh.safetensors' --threads 1", fixtures,
             fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "all 4 compared layers match");
    /* the kernels' path that computed it, as this process (same CPU, no GPT2FFN_ISA) picks it,
     * the same in the JSON */
    char line[160];
    snprintf(line, sizeof line, "kernels     %s (sums of squares %s", g2f_ffn_isa(),
             g2f_ffn_squares_bf16() ? "from bfloat16 factors rounded up" : "in float32");
    CHECK_CONTAINS(out_text, line);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 0);
    snprintf(line, sizeof line, "\"kernels\":\t\"%s\"", g2f_ffn_isa());
    CHECK_CONTAINS(out_text, line);
}

static void verify_should_flag_gelu_erf_on_every_layer_of_the_erf_fixture(void) {
    char args[1024], json[400];
    snprintf(json, sizeof json, "%s/report.json", dir);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --json '%s'", fixtures, fixtures, json);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "first divergence at layer 0: layer 0 matches exact erf GELU");
    char rep[1 << 16];
    slurp_text(json, rep, sizeof rep);
    CHECK(count(rep, "\"diagnosis\":\t[\"gelu_erf\"]") == 4);
    CHECK(count(rep, "\"best_gelu\":\t\"erf\"") == 4);
    CHECK_CONTAINS(rep, "\"status\":\t\"fail\"");
    /* asking for erf makes the same fixture pass, and the tanh one fail with gelu_tanh */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --gelu erf", fixtures, fixtures);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --gelu=erf --json -", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK(count(out_text, "\"diagnosis\":\t[\"gelu_tanh\"]") == 4);
}

static void verify_should_take_the_gelu_form_from_an_explicit_config(void) {
    char cfg[400], args[1400];
    snprintf(cfg, sizeof cfg, "%s/erf_config.json", dir);
    const char *text = "{\"n_layer\": 4, \"n_embd\": 64, \"n_inner\": null, \"activation_function\": \"gelu\"}";
    write_bytes(cfg, text, strlen(text));
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --config '%s'", fixtures, fixtures, cfg);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "gelu        erf (from config.json activation_function \"gelu\")");
    text = "{\"n_layer\": 5}";
    write_bytes(cfg, text, strlen(text));
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "n_layer is 5 but");
}

static void verify_should_pass_an_f16_fixture_with_its_own_rounding(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh_f16.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"fixture_dtype\":\t\"F16\"");
}

static void verify_should_skip_unselected_layers_and_honour_user_tolerances(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --layers 1,3 --json -", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK(count(out_text, "\"status\":\t\"skipped\"") == 2);
    CHECK(count(out_text, "\"diagnosis\":\t[\"gelu_erf\"]") == 2);
    /* a loose user tolerance hides the GELU difference; the report says what was used */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --atol 1e-2", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "atol 0.01, rtol 0");
}

static void verify_should_reject_bad_usage_with_exit_2(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --layers 4", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "layer 4 is out of range");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --gelu relu", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "expected tanh, erf, sigmoid, mlx_approx or f16_table");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --frobnicate", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "unknown option '--frobnicate'");
    /* a tolerance is a number in [0, 1e30]: a negative one would fail every element */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --rtol -1", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "--rtol '-1': expected a non-negative number");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --atol -0.001", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK(run("verify") == 2);
    CHECK(run("nonsense") == 2);
    CHECK(run("--help") == 0);
    CHECK_CONTAINS(out_text, "verify CHECKPOINT FIXTURES");
}

/* One corrupt file per class of fault; each must give exit 2, one line on
 * stderr naming the file, and no report. */
static void verify_should_reject_malformed_files_with_one_line_and_no_report(void) {
    const char *cases[][2] = {
        {"\x05\0\0\0\0\0\0\0{\"a\":", "not valid JSON"},
        {"\xff\xff\xff\xff\0\0\0\0{}", "exceeds the limit"},
        {"\x02\0\0\0\0\0\0\0{}xx", "trailing bytes"},
        {"\x02\0", "too short"},
    };
    char path[400], json[400], args[1400];
    snprintf(json, sizeof json, "%s/never.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/bad%zu.safetensors", dir, i);
        size_t len = i == 0 ? 8 + 5 : i == 1 ? 10 : i == 2 ? 12 : 2;
        write_bytes(path, cases[i][0], len);
        /* as the fixture and as the checkpoint */
        snprintf(args, sizeof args, "verify '%s/tiny' '%s' --json '%s'", fixtures, path, json);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, path);
        CHECK_CONTAINS(err_text, cases[i][1]);
        CHECK(count(err_text, "\n") == 1);
        CHECK(out_text[0] == '\0');
        CHECK(!file_exists(json));
        snprintf(args, sizeof args, "verify '%s' '%s/tiny_tanh.safetensors' --json '%s'", path, fixtures, json);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, cases[i][1]);
        CHECK(!file_exists(json));
    }
    /* a file of another format is named as such */
    snprintf(path, sizeof path, "%s/ckpt.pt", dir);
    write_bytes(path, "PK\x03\x04\x14\0\0\0\x08\0", 10);
    snprintf(args, sizeof args, "verify '%s' '%s/tiny_tanh.safetensors'", path, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "ckpt.pt: ");
    CHECK_CONTAINS(err_text, "zip archive");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/nope.safetensors'", fixtures, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "nope.safetensors: cannot open");
}

/* A small model of our own, with expected outputs from the double reference. */
static void write_case(const char *name, float w_scale, float b_scale, int poison) {
    enum { D = 16, H = 64, T = 6 };
    static float w1[D * H], b1[H], w2[H * D], b2[D], x[T * D], y[T * D];
    uint64_t s = 42;
    for (int i = 0; i < D * H; i++) w1[i] = rnd_unit(&s) * w_scale;
    for (int i = 0; i < H; i++) b1[i] = rnd_unit(&s) * b_scale;
    for (int i = 0; i < H * D; i++) w2[i] = rnd_unit(&s) * 0.2f;
    for (int i = 0; i < D; i++) b2[i] = rnd_unit(&s) * 0.1f;
    for (int i = 0; i < T * D; i++) x[i] = rnd_unit(&s) * 1.7f;
    g2f_ffn_weights w = {D, H, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, w1, b1, w2, b2};
    g2f_ffn_forward_ref(&w, x, T, G2F_GELU_TANH, NULL, NULL, y, NULL);
    if (poison) y[T * D - 3] = NAN;
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
    st_write(path, "{\"gelu\":\"tanh\"}", f, 2, 1);
}

static void verify_should_call_the_gelu_form_undetermined_for_tiny_preactivations(void) {
    write_case("tinypre", 0.004f, 0.0f, 0); /* |pre| < 0.05: tanh and erf agree to 1e-8 */
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tinypre' '%s/tinypre/fixture.safetensors' --json -", dir, dir);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"best_gelu\":\t\"indistinguishable\"");
    CHECK_CONTAINS(out_text, "GELU form undetermined");
    /* the same machinery with real magnitudes does tell them apart */
    write_case("bigpre", 0.6f, 0.3f, 0);
    snprintf(args, sizeof args, "verify '%s/bigpre' '%s/bigpre/fixture.safetensors' --json -", dir, dir);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"best_gelu\":\t\"tanh\"");
}

static void verify_should_never_pass_nan(void) {
    write_case("nan", 0.6f, 0.3f, 1);
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/nan' '%s/nan/fixture.safetensors' --json - --atol 1e30", dir, dir);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "\"nonfinite\"");
    CHECK_CONTAINS(out_text, "non-finite value in the reference at out[token 5, 13]");
}

/* Under `script`, stdout and stderr are a terminal. */
static int run_tty(const char *env, const char *args) {
    char inner[1500], cmd[2048];
    snprintf(inner, sizeof inner, "%s '%s' %s", env, cli, args);
    snprintf(cmd, sizeof cmd, "script -qec \"%s\" /dev/null > '%s/out.txt' 2>&1", inner, dir);
    int st = system(cmd);
    char p[400];
    snprintf(p, sizeof p, "%s/out.txt", dir);
    slurp_text(p, out_text, sizeof out_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void verify_should_colour_and_show_progress_only_on_a_terminal(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK(strstr(out_text, "\033[") == NULL && strstr(err_text, "verify: ") == NULL);
    CHECK(run_tty("", args) == 1);
    CHECK_CONTAINS(out_text, "\033[1;31m");
    CHECK_CONTAINS(out_text, "verify: 4/4 layers");
    CHECK(run_tty("NO_COLOR=1", args) == 1);
    CHECK(strstr(out_text, "\033[1;31m") == NULL);
    CHECK_CONTAINS(out_text, "verify: 4/4 layers");
    char quiet[1100];
    snprintf(quiet, sizeof quiet, "%s --quiet", args);
    CHECK(run_tty("", quiet) == 1);
    CHECK(strstr(out_text, "verify: 4/4") == NULL);
}

static void verify_should_show_cosine_sqnr_and_the_worst_element(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "cosine  sqnr_db");
    CHECK_CONTAINS(out_text, "worst element per layer");
    CHECK_CONTAINS(out_text, "  layer 3: out[");
}

/* --json / --html naming an input (the weights, config.json, the fixture, a
 * link to one) is exit 2 with one line, and the input is untouched. */
static void reports_should_never_replace_an_input(void) {
    char cmd[1600], args[2400], ck[400], fx[400], link_path[400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(fx, sizeof fx, "%s/fx.safetensors", dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s/tiny' '%s' && cp '%s/tiny_tanh.safetensors' '%s'", fixtures, ck, fixtures, fx);
    CHECK(system(cmd) == 0);
    snprintf(link_path, sizeof link_path, "%s/link.json", dir);
    char model[450], config[450];
    snprintf(model, sizeof model, "%s/model.safetensors", ck);
    snprintf(config, sizeof config, "%s/config.json", ck);
    CHECK(symlink(model, link_path) == 0);
    struct stat before_m, before_c, before_f, st;
    CHECK(stat(model, &before_m) == 0 && stat(config, &before_c) == 0 && stat(fx, &before_f) == 0);
    char cases[8][1400];
    snprintf(cases[0], sizeof cases[0], "verify '%s' '%s' --json '%s'", ck, fx, model);
    snprintf(cases[1], sizeof cases[1], "verify '%s' '%s' --html '%s'", ck, fx, config);
    snprintf(cases[2], sizeof cases[2], "verify '%s' '%s' --json '%s'", ck, fx, fx);
    snprintf(cases[3], sizeof cases[3], "verify '%s' '%s' --json '%s'", ck, fx, link_path);
    snprintf(cases[4], sizeof cases[4], "inspect '%s' --json '%s'", ck, model);
    snprintf(cases[5], sizeof cases[5], "inspect '%s' --json '%s'", ck, link_path);
    snprintf(cases[6], sizeof cases[6], "diff '%s/tiny' '%s' --json '%s'", fixtures, ck, config);
    snprintf(cases[7], sizeof cases[7], "diff '%s' '%s/tiny' --json '%s'", ck, fixtures, link_path);
    for (size_t i = 0; i < 8; i++) {
        int rc = run(cases[i]);
        if (rc != 2) fprintf(stderr, "exit %d for %s\n", rc, cases[i]);
        CHECK(rc == 2);
        CHECK(count(err_text, "\n") == 1);
        CHECK_CONTAINS(err_text, "writing there would replace it");
        CHECK(out_text[0] == '\0');
    }
    /* nothing was rewritten: same inode, size and time */
    CHECK(stat(model, &st) == 0 && st.st_ino == before_m.st_ino && st.st_size == before_m.st_size &&
          st.st_mtime == before_m.st_mtime);
    CHECK(stat(config, &st) == 0 && st.st_ino == before_c.st_ino && st.st_size == before_c.st_size);
    CHECK(stat(fx, &st) == 0 && st.st_ino == before_f.st_ino && st.st_size == before_f.st_size);
    /* reports beside the inputs are fine */
    snprintf(args, sizeof args, "verify '%s' '%s' --json '%s/report.json' --html '%s/report.html'", ck, fx, ck, ck);
    CHECK(run(args) == 0);
}

/* Output that cannot be written (a full disk, here /dev/full) is an error,
 * exit 2 and one line on stderr, never a silent exit 0. */
static void commands_should_exit_2_when_stdout_cannot_be_written(void) {
    char cases[6][1200];
    snprintf(cases[0], sizeof cases[0], "verify '%s/tiny' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    snprintf(cases[1], sizeof cases[1], "verify '%s/tiny' '%s/tiny_erf.safetensors' --json -", fixtures, fixtures);
    snprintf(cases[2], sizeof cases[2], "inspect '%s/tiny'", fixtures);
    snprintf(cases[3], sizeof cases[3], "diff '%s/tiny' '%s/tiny'", fixtures, fixtures);
    snprintf(cases[4], sizeof cases[4], "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/full.safetensors'", fixtures,
             fixtures, dir);
    snprintf(cases[5], sizeof cases[5], "--help");
    for (size_t i = 0; i < 6; i++) {
        char cmd[2400], p[400];
        snprintf(cmd, sizeof cmd, "'%.500s' %.1200s > /dev/full 2> '%.300s/err.txt'", cli, cases[i], dir);
        int st = system(cmd);
        snprintf(p, sizeof p, "%s/err.txt", dir);
        slurp_text(p, err_text, sizeof err_text);
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (rc != 2) fprintf(stderr, "exit %d for %s > /dev/full\n", rc, cases[i]);
        CHECK(rc == 2);
        CHECK_CONTAINS(err_text, "cannot write to standard output: No space left on device");
        CHECK(count(err_text, "\n") == 1);
    }
}

/* --accept: an F16 checkpoint against its float32 original's reference
 * fails with weights_f16_rounded; accepted, every layer passes with the
 * cause still named and the GELU form still told (F16 weights keep tanh and
 * erf apart on these inputs); a code outside the list is a usage error. */
static void verify_should_accept_a_rounding_ported_on_purpose(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/formats2/tiny_f16.gguf' '%s/tiny_tanh.safetensors' --json -", fixtures,
             fixtures);
    CHECK(run(args) == 1);
    CHECK(count(out_text, "\"weights_f16_rounded\"") >= 4);
    snprintf(args, sizeof args,
             "verify '%s/formats2/tiny_f16.gguf' '%s/tiny_tanh.safetensors' --accept weights_f16_rounded --json -",
             fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK(count(out_text, "\"status\":\t\"pass\"") == 5); /* the report and its 4 layers */
    CHECK(count(out_text, "\"best_gelu\":\t\"tanh\"") == 4);
    CHECK(count(out_text, "\"accepted\":\t[\"weights_f16_rounded\"]") == 4);
    snprintf(args, sizeof args,
             "verify '%s/formats2/tiny_f16.gguf' '%s/tiny_erf.safetensors' --accept weights_f16_rounded", fixtures,
             fixtures);
    CHECK(run(args) == 1); /* the erf reference still fails: rounding does not explain it alone */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --accept gelu_erf", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "--accept 'gelu_erf'");
}

/* ---- what a new user trips over (README: Commands; docs/formats.md) ------ */


/* The last line of the text report, without its newline. */
static const char *last_line(void) {
    static char line[4096];
    size_t n = strlen(out_text);
    while (n && out_text[n - 1] == '\n') n--;
    const char *p = out_text + n;
    while (p > out_text && p[-1] != '\n') p--;
    snprintf(line, sizeof line, "%.*s", (int)(out_text + n - p), p);
    return line;
}

/* A folder with the tiny checkpoint under a name of its own and its config
 * as <name>_config.json saying "gelu" (erf): both are found, the report
 * names the config, and the erf reference passes. A second *config*.json
 * makes the choice unclear: none is used, and the report says why. */
static void verify_should_find_a_checkpoint_and_its_config_under_other_names(void) {
    char f[400], p[500], src[500], args[1400];
    snprintf(f, sizeof f, "%s/cerebras", dir);
    mkdir(f, 0700);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(p, sizeof p, "%s/tiny_cerebras_gpt.safetensors", f);
    CHECK(copy_file(src, p) == 0);
    snprintf(p, sizeof p, "%s/tiny_cerebras_gpt_config.json", f);
    const char *cfg = "{\"n_layer\": 4, \"n_embd\": 64, \"activation_function\": \"gelu\"}";
    CHECK(write_bytes(p, cfg, strlen(cfg)) == 0);
    snprintf(args, sizeof args, "verify '%s' '%s/tiny_erf.safetensors'", f, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "tiny_cerebras_gpt.safetensors (safetensors, F32, 4 layers");
    CHECK_CONTAINS(out_text, "tiny_cerebras_gpt_config.json (the only *config*.json beside the checkpoint; "
                             "activation_function \"gelu\")");
    CHECK_CONTAINS(out_text, "gelu        erf (from config.json activation_function \"gelu\")");
    snprintf(args, sizeof args, "verify '%s' '%s/tiny_erf.safetensors' --json -", f, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"config_source\":\t\"the only *config*.json beside the checkpoint\"");
    snprintf(p, sizeof p, "%s/other_config.json", f);
    CHECK(write_bytes(p, "{}", 2) == 0);
    snprintf(args, sizeof args, "verify '%s' '%s/tiny_erf.safetensors'", f, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "config      none used: 2 *config*.json files beside the checkpoint "
                             "(other_config.json, tiny_cerebras_gpt_config.json); name one with --config");
    /* a folder with two checkpoint files: exit 2, naming both */
    snprintf(p, sizeof p, "%s/copy.safetensors", f);
    CHECK(copy_file(src, p) == 0);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "folder holds 2 checkpoint files, so which one is meant is not clear: "
                             "copy.safetensors, tiny_cerebras_gpt.safetensors");
}

/* nanoGPT's model.py runs nn.GELU() (exact erf): its training checkpoint
 * (model_args beside model) defaults to erf, and says where that came from;
 * minGPT's does not say, and stays with GPT-2's tanh. */
static void verify_should_default_to_erf_for_a_nanogpt_checkpoint(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/torch/nanogpt_ckpt.pt' '%s/tiny_erf.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "gelu        erf (from the checkpoint: a nanoGPT training checkpoint (model_args beside "
                             "model), whose model.py runs nn.GELU(), exact erf)");
    snprintf(args, sizeof args, "verify '%s/torch/nanogpt_ckpt.pt' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(last_line(), "hint: every compared layer matches the tanh GELU approximation (GPT-2's, HF "
                                "'gelu_new'), not erf. If the reference is right and the checkpoint's config is "
                                "wrong: rerun with --gelu tanh");
    CHECK_CONTAINS(last_line(), "If the fixture came from your port: the port's GELU is the bug");
    snprintf(args, sizeof args, "verify '%s/torch/mingpt_ckpt.pt' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "gelu        tanh (default: GPT-2's tanh approximation; no config.json)");
}

/* When every compared layer fails with exactly the other GELU form, the
 * report ends with the option that passes; not otherwise. */
static void verify_should_end_with_the_option_that_would_pass(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    char want[1400];
    /* both readings: the config is wrong (the option), or the port's GELU is the bug */
    snprintf(want, sizeof want,
             "hint: every compared layer matches the exact erf GELU (torch F.gelu's default, HF 'gelu'), not tanh. "
             "If the reference is right and the checkpoint's config is wrong: rerun with --gelu erf (gpt2ffn verify "
             "%s/tiny %s/tiny_erf.safetensors --gelu erf), or name a config whose activation_function is \"gelu\" "
             "with --config FILE. If the fixture came from your port: the port's GELU is the bug (it runs erf on "
             "weights trained with tanh); make it use the tanh form, and do not pass --gelu erf",
             fixtures, fixtures);
    if (strcmp(last_line(), want) != 0) {
        fprintf(stderr, "last line: %s\nwanted:    %s\n", last_line(), want);
        check_failures++;
    }
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --gelu erf", fixtures, fixtures);
    CHECK(run(args) == 0 && !strstr(out_text, "hint:"));
    /* the other forms get their option too (ggml's table, quick_gelu), and JSON says the same as the text */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/gelu_f16_table.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(last_line(), "hint: every compared layer matches ggml's float16 GELU table");
    CHECK_CONTAINS(last_line(), "rerun with --gelu f16_table (gpt2ffn verify");
    snprintf(want, sizeof want, "%s", last_line() + 6);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/gelu_f16_table.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 1);
    cJSON *root = cJSON_Parse(out_text);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "hint");
    CHECK(cJSON_IsString(h) && !strcmp(h->valuestring, want));
    cJSON_Delete(root);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/gelu_sigmoid.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(last_line(), "rerun with --gelu sigmoid");
    /* erf and a missing bias: --gelu erf alone would not pass */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/erf_fc_bias_missing.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1 && !strstr(out_text, "hint:"));
}

static void verify_should_say_when_the_arguments_are_swapped(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tiny_tanh.safetensors' '%s/tiny'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK(count(err_text, "\n") == 1);
    CHECK_CONTAINS(err_text, "the arguments are swapped: ");
    CHECK_CONTAINS(err_text, "tiny_tanh.safetensors holds fixture tensors (h.N.mlp.in / h.N.mlp.out) and ");
    CHECK_CONTAINS(err_text, "/tiny checkpoint tensors (h.N.mlp.c_fc ...); the checkpoint comes first");
    snprintf(args, sizeof args, "verify '%s/tiny_tanh.safetensors' '%s/tiny_erf.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "tiny_tanh.safetensors holds fixture tensors (h.N.mlp.in / h.N.mlp.out), not a "
                             "checkpoint's FFN weights; the checkpoint comes first");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/torch/hf_tiny.bin'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "hf_tiny.bin holds checkpoint tensors (h.N.mlp.c_fc ...), not fixture tensors");
}

static void verify_should_say_a_json_checkpoint_is_json(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tiny/config.json' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK(count(err_text, "\n") == 1);
    CHECK_CONTAINS(err_text, "config.json: is a JSON file, not a file of tensors");
    CHECK_CONTAINS(err_text, "a model config is given with --config FILE");
    CHECK(!strstr(err_text, "header length"));
}

static void verify_should_say_a_layer_range_is_reversed(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --layers 1-0", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "--layers '1-0': the range 1-0 is reversed; write 0-1");
}

/* `run` records the checkpoint's sha256; verify checks it: the same file,
 * another file (the same weights in another format count as another file),
 * or no record at all (null, null). */
static void verify_should_check_the_checkpoint_digest_a_fixture_records(void) {
    char args[1400], made[400];
    snprintf(made, sizeof made, "%s/made.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s'", fixtures, fixtures, made);
    CHECK(run(args) == 0);
    const char *sha = strstr(out_text, "checkpoint sha256 ");
    char digest[65] = "";
    if (sha) snprintf(digest, sizeof digest, "%.64s", sha + 18);
    CHECK(strlen(digest) == 64);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, made);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "provenance  the fixture records this checkpoint's sha256 (");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --json -", fixtures, made);
    CHECK(run(args) == 0);
    char want[200];
    snprintf(want, sizeof want, "\"fixture_checkpoint_sha256\":\t\"%s\"", digest);
    CHECK_CONTAINS(out_text, want);
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_match\":\ttrue");
    snprintf(args, sizeof args, "verify '%s/torch/hf_tiny.bin' '%s'", fixtures, made);
    CHECK(run(args) == 0);
    snprintf(want, sizeof want, "warning     the fixture records checkpoint_sha256 %s, but this checkpoint's is ", digest);
    CHECK_CONTAINS(out_text, want);
    CHECK_CONTAINS(out_text, ": the fixture was made from another file");
    snprintf(args, sizeof args, "verify '%s/torch/hf_tiny.bin' '%s' --json -", fixtures, made);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_match\":\tfalse");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"fixture_checkpoint_sha256\":\tnull");
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_match\":\tnull");
}

/* One layer (D, H) and a fixture of T tokens (double reference, tanh GELU)
 * that is uncorrelated with it by construction: tokens come in equal pairs
 * and the second of each pair expects minus the output, so the cosine
 * between computed and expected out is 0, as for a reference made from
 * another model (whose outputs are uncorrelated with this one's). */
static void write_uncorrelated(const char *name, int T) {
    enum { D = 32, H = 128 };
    static float w1[D * H], b1[H], w2[H * D], b2[D], x[256 * D], y[256 * D];
    uint64_t s = 42;
    for (int i = 0; i < D * H; i++) w1[i] = rnd_unit(&s) * 0.6f;
    for (int i = 0; i < H; i++) b1[i] = rnd_unit(&s) * 0.3f;
    for (int i = 0; i < H * D; i++) w2[i] = rnd_unit(&s) * 0.2f;
    for (int i = 0; i < D; i++) b2[i] = rnd_unit(&s) * 0.1f;
    for (int t = 0; t < T; t += 2)
        for (int i = 0; i < D; i++) x[t * D + i] = x[(t + 1) * D + i] = rnd_unit(&s) * 1.7f;
    g2f_ffn_weights w = {D, H, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, w1, b1, w2, b2};
    g2f_ffn_forward_ref(&w, x, (size_t)T, G2F_GELU_TANH, NULL, NULL, y, NULL);
    for (int t = 1; t < T; t += 2)
        for (int i = 0; i < D; i++) y[t * D + i] = -y[t * D + i];
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0700);
    st_entry m[4] = {{"h.0.mlp.c_fc.weight", "F32", 2, {D, H}, w1, sizeof w1},
                     {"h.0.mlp.c_fc.bias", "F32", 1, {H}, b1, sizeof b1},
                     {"h.0.mlp.c_proj.weight", "F32", 2, {H, D}, w2, sizeof w2},
                     {"h.0.mlp.c_proj.bias", "F32", 1, {D}, b2, sizeof b2}};
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    st_write(path, NULL, m, 4, 1);
    st_entry f[2] = {{"h.0.mlp.in", "F32", 2, {(uint64_t)T, D}, x, (size_t)T * D * 4},
                     {"h.0.mlp.out", "F32", 2, {(uint64_t)T, D}, y, (size_t)T * D * 4}};
    snprintf(path, sizeof path, "%s/%s/fixture.safetensors", dir, name);
    st_write(path, NULL, f, 2, 1);
}

/* A fixture uncorrelated with the checkpoint: every layer unexplained, and
 * the verdict says what that most likely means. So does one whose recorded
 * digest is another checkpoint's. A porting bug (diag/unexplained: cosine
 * near 1, no digest) keeps its own explanation. */
static void verify_should_say_a_fixture_is_from_another_checkpoint(void) {
    write_uncorrelated("uncorrelated", 64);
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/uncorrelated' '%s/uncorrelated/fixture.safetensors'", dir, dir);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "first divergence at layer 0: the fixture was most likely not made from this checkpoint "
                             "(another model, or its layers in another order): the only compared layer is "
                             "unexplained and uncorrelated with the reference (|cosine| < 0.1)");
    /* another model of the same shape (other weight scales: still correlated), whose fixture `run` made
     * and so records that model's digest */
    write_case("model_x", 0.6f, 0.3f, 0);
    write_case("model_y", 0.9f, 0.1f, 0);
    snprintf(args, sizeof args, "run '%s/model_y' '%s/model_y/fixture.safetensors' -o '%s/model_y/made.safetensors'",
             dir, dir, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/model_x' '%s/model_y/made.safetensors'", dir, dir);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "first divergence at layer 0: the fixture was most likely not made from this checkpoint "
                             "(another model, or its layers in another order): the only compared layer is "
                             "unexplained, and the fixture records another checkpoint's sha256");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/unexplained.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK(!strstr(out_text, "most likely not made from this checkpoint"));
    CHECK_CONTAINS(out_text, "first divergence at layer 1: layer 1 does not match and no known cause explains it");
}

/* A pass whose inputs cannot tell erf from tanh says so in its summary, in
 * JSON (top level and per layer); inputs that can tell them apart do not. */
static void verify_should_say_a_pass_did_not_check_the_gelu(void) {
    write_case("tinypre2", 0.004f, 0.0f, 0);
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tinypre2' '%s/tinypre2/fixture.safetensors'", dir, dir);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(last_line(), "result: PASS, but these inputs cannot tell erf from tanh GELU (separation ");
    CHECK_CONTAINS(last_line(), " of the tolerance): the GELU form is not verified (1 compared, 0 failed, 0 skipped)");
    CHECK_CONTAINS(out_text, "the 1 compared layer matches the reference, but these inputs cannot tell");
    snprintf(args, sizeof args, "verify '%s/tinypre2' '%s/tinypre2/fixture.safetensors' --json -", dir, dir);
    CHECK(run(args) == 0);
    CHECK(count(out_text, "\"gelu_verified\":\tfalse") == 2);
    /* a loose user tolerance gives the GELU check up too, and says so */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --atol 1e-2", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(last_line(), "result: PASS, but these inputs cannot tell erf from tanh GELU");
    write_case("bigpre2", 0.6f, 0.3f, 0);
    snprintf(args, sizeof args, "verify '%s/bigpre2' '%s/bigpre2/fixture.safetensors' --json -", dir, dir);
    CHECK(run(args) == 0);
    CHECK(count(out_text, "\"gelu_verified\":\ttrue") == 2 && !strstr(out_text, "cannot tell"));
}

/* Counts read as English; the failing layers' explanations sit under a
 * heading; the gelu column names the form a diagnosis names. */
static void verify_should_write_plain_english(void) {
    char args[1400];
    write_case("one", 0.6f, 0.3f, 0);
    snprintf(args, sizeof args, "verify '%s/one' '%s/one/fixture.safetensors'", dir, dir);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "(safetensors, F32, 1 layer, n_embd 16");
    CHECK_CONTAINS(out_text, "the 1 compared layer matches the reference");
    CHECK(!strstr(out_text, "1 layers") && !strstr(out_text, "all 1 compared"));
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/unexplained.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "failing layers (2 of the 4 compared):\n  layer 1 does not match");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/diag/erf_fc_bias_missing.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "failing layers (all 4 compared):\n");
    /* every row's gelu column: erf, since every diagnosis names exact erf GELU */
    const char *end = strstr(out_text, "worst element per layer");
    for (const char *p = strstr(out_text, "diagnosis\n"); p && (p = strstr(p, "FAIL ")) != NULL && p < end; p += 5) {
        char word[32] = "";
        sscanf(p + 5, "%31s", word);
        CHECK(!strcmp(word, "erf"));
    }
    CHECK(count(out_text, "gelu_erf,fc_bias_missing") == 4);
    CHECK(!strstr(out_text, "neither"));
}

/* verify --help names every fixture format, and each is read: a torch.save
 * .pt dict of tensors here (the others are bundled fixtures). */
static void verify_should_read_every_fixture_format_its_help_lists(void) {
    CHECK(run("verify --help") == 0);
    const char *formats[] = {"safetensors", "NumPy .npz", "folder\n              of .npy files",
                             "TransformerLens names", "torch.save .pt dict of\n              tensors"};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) CHECK_CONTAINS(out_text, formats[i]);
    /* {'h.0.mlp.in': x, 'h.0.mlp.out': y} as torch.save writes it */
    write_case("ptfx", 0.6f, 0.3f, 0);
    char path[400];
    snprintf(path, sizeof path, "%s/ptfx/fixture.safetensors", dir);
    FILE *fp = fopen(path, "rb");
    static unsigned char st[1 << 14];
    size_t n = fp ? fread(st, 1, sizeof st, fp) : 0;
    if (fp) fclose(fp);
    CHECK(n > 8 + 2 * 6 * 16 * 4);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)st[i] << (8 * i);
    const unsigned char *x = st + 8 + hl, *y = x + 6 * 16 * 4; /* in, then out, as write_case wrote them */
    const int shape[2] = {6, 16}, stride[2] = {16, 1};
    start();
    op('}');
    op('(');
    ustr("h.0.mlp.in");
    tensor("FloatStorage", "0", 96, 0, 2, shape, stride);
    ustr("h.0.mlp.out");
    tensor("FloatStorage", "1", 96, 0, 2, shape, stride);
    op('u');
    op('.');
    zent e[3] = {{"fx/data.pkl", pk, pn, 0, 0}, {"fx/data/0", x, 384, 0, 0}, {"fx/data/1", y, 384, 0, 0}};
    size_t len = zip_write(e, 3);
    snprintf(path, sizeof path, "%s/ptfx/activations.pt", dir);
    CHECK(write_bytes(path, zbuf, len) == 0);
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/ptfx' '%s'", dir, path);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "the 1 compared layer matches the reference");
}

static void verify_should_show_both_gelu_separations(void) {
    char args[1400];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors' --json -", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK(count(out_text, "\"sep_out\":") == 4 && count(out_text, "\"sep_act\":") == 4);
    CHECK(count(out_text, "\"gelu_separation\":") == 4); /* kept for older readers */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_erf.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "gelu  sep_out  sep_act  diagnosis");
}

/* ---- the whole model (docs/model.md) ----------------------------------- */

static void verify_should_open_with_the_models_first_divergence(void) {
    static const struct { const char *ckpt, *fixture, *opening; } cases[] = {
        {"tiny", "attn_scale_missing_layer2", "first divergence: layer 2, attn: attn_scale_missing"},
        {"tiny", "wpe_missing", "first divergence: embed: wpe_missing"},
        {"tiny", "wpe_offset_1", "first divergence: embed: wpe_offset:1"},
        {"tiny", "embed_scaled", "first divergence: embed: embed_scaled"},
        {"tiny", "ln_f_missing", "first divergence: ln_f: ln_f_missing"},
        {"small", "lm_head_untied", "first divergence: logits: lm_head_untied"},
    };
    char args[1400];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/%s' '%s/model/%s.safetensors'", fixtures, cases[i].ckpt, fixtures,
                 cases[i].fixture);
        CHECK(run(args) == 1);
        CHECK_CONTAINS(out_text, cases[i].opening);
        CHECK_CONTAINS(out_text, "whole model (chained from input_ids");
        CHECK_CONTAINS(out_text, "result: FAIL");
    }
    static const struct { const char *ckpt, *fixture; } clean[] = {
        {"tiny", "clean"}, {"tiny", "clean_tl_i32"}, {"small", "small_clean"}};
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        snprintf(args, sizeof args, "verify '%s/%s' '%s/model/%s.safetensors'", fixtures, clean[i].ckpt, fixtures,
                 clean[i].fixture);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "the whole forward from input_ids matches the reference");
        CHECK_CONTAINS(out_text, "top-1 token the same at 12 of 12 positions");
    }
}

static void run_should_compute_the_whole_model_for_any_prompt(void) {
    char args[1400];
    /* --ids, every stage, both namings: each output verifies against the checkpoint */
    static const char *const names[] = {"hf", "tl"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "run '%s/tiny' --ids '5,17,3,42;1,2,3,4' -o '%s/ids_%s.safetensors' --save all "
                 "--names %s", fixtures, dir, names[k], names[k]);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "the whole model on 2 sequences of 4 tokens");
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/ids_%s.safetensors'", fixtures, dir, names[k]);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "the whole forward from input_ids matches the reference");
    }
    snprintf(args, sizeof args, "inspect '%s/ids_tl.safetensors'", dir); /* not a checkpoint; just exists */
    char path[400];
    snprintf(path, sizeof path, "%s/ids_tl.safetensors", dir);
    CHECK(file_exists(path));
    /* the PyTorch export's input_ids: the output verifies bitwise (margin 0) against the same checkpoint,
     * and the export itself (PyTorch's arithmetic) passes within the tolerance */
    snprintf(args, sizeof args, "run '%s/tiny' '%s/model/clean.safetensors' -o '%s/again.safetensors' --save embed,ln_f.out",
             fixtures, fixtures, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/again.safetensors' --json '%s/again.json'", fixtures, dir, dir);
    CHECK(run(args) == 0);
    static char json[1 << 16];
    snprintf(path, sizeof path, "%s/again.json", dir);
    slurp_text(path, json, sizeof json);
    cJSON *root = cJSON_Parse(json), *fwd = cJSON_GetObjectItemCaseSensitive(root, "forward");
    cJSON *lg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(fwd, "chained_stages"), "logits");
    cJSON *mg = cJSON_GetObjectItemCaseSensitive(lg, "margin");
    CHECK(cJSON_IsNumber(mg) && mg->valuedouble == 0); /* run and verify compute the same bits */
    cJSON_Delete(root);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/model/clean.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 0);
    /* and one sequence without a leading dimension */
    snprintf(args, sizeof args, "run '%s/small' --ids 3,1,4,1,5,9,2,6 -o '%s/one.safetensors'", fixtures, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/small' '%s/one.safetensors'", fixtures, dir);
    CHECK(run(args) == 0);
}

static void run_should_refuse_bad_ids_with_exit_2(void) {
    char args[1400];
    static const struct { const char *opts, *msg; } cases[] = {
        {"--ids 5,96,3", "token id 96 at position 1 (sequence 0, token 1) is outside the vocabulary 0..95"},
        {"--ids 5,x", "is not a list of token ids"},
        {"--ids '1,2;3'", "sequence 1 has 1 tokens but the first has 2"},
        {"--ids 1,2 --save embed,bogus", "unknown stage 'bogus'"},
        {"--ids 1,2 --names xl", "--names 'xl': expected hf or tl"},
        /* another n_head than config.json's: a model the file does not define (was computed silently) */
        {"--ids 1,2 --n-head 2", "--n-head 2 but "},
        {"--ids 1,2 --n-head 2 --generate 2", "gives 4 (config.json n_head): --n-head is for a checkpoint that"},
        {"", "give INPUTS or --ids, or --prompt"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "run '%s/tiny' %s -o '%s/bad.safetensors'", fixtures, cases[i].opts, dir);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, cases[i].msg);
        CHECK(count(err_text, "\n") == 1);
    }
    /* 33 tokens: tiny has 32 positions */
    char ids[200] = "";
    for (int i = 0; i < 33; i++) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s1", i ? "," : "");
    snprintf(args, sizeof args, "run '%s/tiny' --ids %s -o '%s/bad.safetensors'", fixtures, ids, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "sequences of 33 tokens but");
    char path[400];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    CHECK(!file_exists(path));
    /* verify too; the same n_head as the file's is no disagreement */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/model/clean.safetensors' --n-head 8", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "verify: --n-head 8 but");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/model/clean.safetensors' --n-head 4", fixtures, fixtures);
    CHECK(run(args) == 0);
}

/* GPT2FFN_ISA (tests and benchmarks): an unknown value is one line and exit
 * 2; each known one computes the same verdict (the portable path rounds
 * differently, within the derived tolerance). */
static void commands_should_refuse_an_unknown_isa_and_pass_on_every_path(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    setenv("GPT2FFN_ISA", "avx3", 1);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "gpt2ffn: GPT2FFN_ISA 'avx3': expected portable, avx2, avx512, avx512_bf16 or amx\n");
    CHECK(out_text[0] == '\0');
    const char *paths[] = {"portable", "avx2", "avx512", "avx512_bf16", "amx"};
    for (int i = 0; i < 5; i++) {
        setenv("GPT2FFN_ISA", paths[i], 1);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "PASS");
    }
    unsetenv("GPT2FFN_ISA");
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "cli") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(verify_should_pass_the_tanh_fixture);
    RUN(verify_should_flag_gelu_erf_on_every_layer_of_the_erf_fixture);
    RUN(verify_should_take_the_gelu_form_from_an_explicit_config);
    RUN(verify_should_pass_an_f16_fixture_with_its_own_rounding);
    RUN(verify_should_skip_unselected_layers_and_honour_user_tolerances);
    RUN(verify_should_reject_bad_usage_with_exit_2);
    RUN(verify_should_accept_a_rounding_ported_on_purpose);
    RUN(verify_should_reject_malformed_files_with_one_line_and_no_report);
    RUN(verify_should_call_the_gelu_form_undetermined_for_tiny_preactivations);
    RUN(verify_should_never_pass_nan);
    RUN(verify_should_colour_and_show_progress_only_on_a_terminal);
    RUN(verify_should_show_cosine_sqnr_and_the_worst_element);
    RUN(reports_should_never_replace_an_input);
    RUN(commands_should_exit_2_when_stdout_cannot_be_written);
    RUN(verify_should_find_a_checkpoint_and_its_config_under_other_names);
    RUN(verify_should_default_to_erf_for_a_nanogpt_checkpoint);
    RUN(verify_should_end_with_the_option_that_would_pass);
    RUN(verify_should_say_when_the_arguments_are_swapped);
    RUN(verify_should_say_a_json_checkpoint_is_json);
    RUN(verify_should_say_a_layer_range_is_reversed);
    RUN(verify_should_check_the_checkpoint_digest_a_fixture_records);
    RUN(verify_should_say_a_fixture_is_from_another_checkpoint);
    RUN(verify_should_say_a_pass_did_not_check_the_gelu);
    RUN(verify_should_write_plain_english);
    RUN(verify_should_read_every_fixture_format_its_help_lists);
    RUN(verify_should_show_both_gelu_separations);
    RUN(verify_should_open_with_the_models_first_divergence);
    RUN(run_should_compute_the_whole_model_for_any_prompt);
    RUN(run_should_refuse_bad_ids_with_exit_2);
    RUN(commands_should_refuse_an_unknown_isa_and_pass_on_every_path);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
