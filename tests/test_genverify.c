/* Verify a generation (g2f_genverify) on the committed fixtures of
 * scripts/export_decode_fixtures.py (a PyTorch port with a KV cache, HF's
 * arithmetic): the clean generation passes (with step logits as F32 and as
 * F16, with ids alone, a left-padded batch compared only where the mask is
 * 1, a row finished at its eos); each KV-cache bug is named, alone, by
 * recomputation; the near-tie is tie_flip, reported with its gap and not a
 * failure, unless the port's token is below another of its own logits (not_greedy); a divergence nothing explains is unexplained; a NaN never
 * passes; every malformed generation tensor is refused with one line naming
 * the file and the tensor. argv[1] = fixtures folder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_genverify.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

static g2f_status verify_at(const char *ck, const char *fx_path, g2f_gen_result *r, g2f_error *err) {
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(r, 0, sizeof *r);
    g2f_status st = g2f_model_open(ck, NULL, &m, err);
    if (st == G2F_OK) st = g2f_fixture_open(fx_path, &f, err);
    if (st == G2F_OK) st = g2f_genverify_check(m, f, err);
    g2f_genverify_params p = {0, G2F_GELU_TANH, 0, 0, 1};
    if (st == G2F_OK) st = g2f_genverify_run(m, f, &p, r, err);
    g2f_fixture_close(f);
    g2f_model_close(m);
    return st;
}

static g2f_status verify_gen(const char *name, g2f_gen_result *r) {
    char ck[512], fx[512];
    g2f_error err = {0};
    snprintf(ck, sizeof ck, "%s/%s", fixtures, strstr(name, "tie") || strstr(name, "greedy") ? "decode/near_tie" : "tiny");
    snprintf(fx, sizeof fx, "%s/decode/gen/%s.safetensors", fixtures, name);
    g2f_status st = verify_at(ck, fx, r, &err);
    if (st != G2F_OK) fprintf(stderr, "  %s: %s\n", name, err.msg);
    return st;
}

static void clean_generations_should_pass(void) {
    static const char *names[] = {"clean", "clean_ids_i32", "clean_f16_logits", "padded", "eos"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        g2f_gen_result r;
        CHECK(verify_gen(names[i], &r) == G2F_OK);
        if (!r.pass) fprintf(stderr, "  %s: diverged at %zu:%zu\n", names[i], r.first.seq, r.first.step);
        CHECK(r.pass && !r.diverged && r.compared > 0 && r.same == r.compared && r.n_flips == 0);
        CHECK(r.has_logits == (strcmp(names[i], "clean_ids_i32") != 0));
        CHECK(!r.has_logits || (r.logits_steps == r.compared && r.logits_failed == 0 && r.logits_margin <= 1));
    }
    g2f_gen_result r;
    CHECK(verify_gen("padded", &r) == G2F_OK);
    CHECK(r.has_mask && r.padded_rows == 1 && r.prompt_min == 3 && r.prompt_max == 6 && r.compared == 20);
    CHECK(verify_gen("eos", &r) == G2F_OK);
    /* row 0 ends at its step 3 (8 after), row 1 meets the same id at its step 8 (3 after) */
    CHECK(r.has_eos && r.compared == 13 && r.after_eos == 11);
}

/* The generation fixture diverges and codes alone reproduce it, within its tolerance; *r for more checks. */
static void named_alone(const char *fixture, const char *codes, g2f_gen_result *r) {
    CHECK(verify_gen(fixture, r) == G2F_OK);
    char got[400];
    g2f_causes_join(r->causes, r->n_causes, got, sizeof got);
    if (strcmp(got, codes)) fprintf(stderr, "  %s: named '%s'\n", fixture, got);
    CHECK(!r->pass && r->diverged && r->n_causes == 1 && !strcmp(got, codes));
    CHECK(r->n_causes == 0 || r->causes[0].margin <= 1);
}

/* Each bug's fixture: diverged, and the bug is what reproduces it (alone, with step logits). */
static void kv_cache_bugs_should_be_named(void) {
    static const char *cases[][2] = {
        {"cache_position_reset", "cache_position_reset"}, {"cache_not_appended", "cache_not_appended"},
        {"cache_offset_1", "cache_offset:1"},             {"cache_offset_m1", "cache_offset:-1"},
        {"cache_k_scaled", "cache_k_scaled"},             {"cache_kv_before_bias", "cache_kv_before_bias"},
        {"cache_kv_swapped", "cache_kv_swapped"},         {"padding_positions", "padding_positions"},
        {"cache_position_reset_ids", "cache_position_reset"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_gen_result r;
        named_alone(cases[i][0], cases[i][1], &r);
        CHECK(r.hypotheses_tried >= 10);
        /* the prompt's step is right: a cache bug shows from the first decode step on */
        CHECK(r.first.step >= 1 || !strcmp(cases[i][0], "padding_positions"));
    }
}

/* A bug of every block shows in a generation from the prompt's step on; it
 * is named by recomputing the whole forward under it. */
static void block_bugs_should_be_named_in_a_generation(void) {
    static const char *cases[][2] = {
        {"gelu_erf", "gelu_erf"}, {"attn_scale_missing", "attn_scale_missing"}, {"qkv_order_kqv", "qkv_order:kqv"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_gen_result r;
        named_alone(cases[i][0], cases[i][1], &r);
        CHECK(r.first.step == 0);
    }
}

static void a_near_tie_should_be_a_tie_flip_and_pass(void) {
    g2f_gen_result r;
    CHECK(verify_gen("tie_flip", &r) == G2F_OK);
    CHECK(r.pass && !r.diverged && r.n_flips == 3 && r.same + r.n_flips == r.compared);
    for (size_t i = 0; i < r.n_flips; i++) {
        const g2f_gen_step *s = &r.flips[i];
        CHECK(s->ours != s->port && s->rank == 1); /* the port's token is our second */
        CHECK(s->gap > 0 && s->gap <= s->window && s->window < 1e-4);
        CHECK(s->logits_checked && s->logits_margin <= 1);
        CHECK(s->port_top == -1); /* the port's token is the largest of its own logits */
    }
    CHECK(r.flips[0].step == 0 && r.flips[0].ours == 50 && r.flips[0].port == 63);
}

/* The same near-tie where the port takes the token its own logits put second: rounding keeps the
 * logits' order, so that is no tie flip but a choice that is not greedy (it passed as a tie flip). */
static void a_token_below_the_ports_own_largest_logit_should_diverge(void) {
    g2f_gen_result r;
    CHECK(verify_gen("not_greedy", &r) == G2F_OK);
    CHECK(!r.pass && r.diverged && r.n_flips == 0 && r.diverged_steps == 3 && r.n_causes == 0);
    CHECK(r.first.step == 0 && r.first.ours == 50 && r.first.port == 63 && r.first.port_top == 50);
    CHECK(r.first.gap <= r.first.window && r.first.logits_margin <= 1); /* a near-tie, logits within tolerance */
}

static void an_unexplained_divergence_should_fail_unexplained(void) {
    g2f_gen_result r;
    CHECK(verify_gen("unexplained", &r) == G2F_OK);
    CHECK(!r.pass && r.diverged && r.n_causes == 0 && r.first.seq == 1 && r.first.step == 4);
    CHECK(r.first.ours == r.first.port && r.first.logits_margin > 1); /* the same token, logits beyond tolerance */
    CHECK(r.diverged_steps == 1 && r.rows_diverged == 1);
}

/* ---- hostile files ---- */

typedef struct gen_files {
    int64_t prompt[2][4], gen[2][3], mask[2][4], eos;
    float logits[2][3][96];
} gen_files;

static void base(gen_files *g) {
    memset(g, 0, sizeof *g);
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 4; j++) g->prompt[b][j] = 5 + b * 7 + j, g->mask[b][j] = 1;
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 3; k++) g->gen[b][k] = 3;
}

/* Writes the generation with `drop` leaving one tensor out and returns the check's status and message. */
static g2f_status write_and_check(const char *what, const st_entry *e, size_t n, g2f_error *err) {
    char path[400], ck[400];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, what);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    CHECK(st_write(path, NULL, e, n, 1) == 0);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    g2f_status st = g2f_model_open(ck, NULL, &m, err);
    if (st == G2F_OK) st = g2f_fixture_open(path, &f, err);
    if (st == G2F_OK) st = g2f_genverify_check(m, f, err);
    if (st != G2F_OK) {
        CHECK(strstr(err->msg, what) != NULL || strstr(err->msg, path) != NULL); /* names the file */
        CHECK(!strchr(err->msg, '\n'));
    }
    g2f_fixture_close(f);
    g2f_model_close(m);
    return st;
}

static void malformed_generations_should_be_refused(void) {
    gen_files g;
    g2f_error err = {0};
    base(&g);
    st_entry e[5] = {
        {"prompt_ids", "I64", 2, {2, 4}, g.prompt, sizeof g.prompt},
        {"generated_ids", "I64", 2, {2, 3}, g.gen, sizeof g.gen},
        {"step_logits", "F32", 3, {2, 3, 96}, g.logits, sizeof g.logits},
        {"attention_mask", "I64", 2, {2, 4}, g.mask, sizeof g.mask},
        {"eos_token_id", "I64", 1, {1}, &g.eos, sizeof g.eos},
    };
    CHECK(write_and_check("ok", e, 5, &err) == G2F_OK);
    CHECK(write_and_check("no_prompt", e + 1, 1, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "no prompt_ids");
    st_entry x[5];
    memcpy(x, e, sizeof x);
    x[1].shape[0] = 1, x[1].nbytes = 3 * 8;
    CHECK(write_and_check("gen_rows", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "generated_ids");
    memcpy(x, e, sizeof x);
    x[2].shape[2] = 95, x[2].nbytes = 2 * 3 * 95 * 4;
    CHECK(write_and_check("logits_vocab", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "expected [B, 3, 96]");
    memcpy(x, e, sizeof x);
    x[0].dtype = "F32", x[0].nbytes = 2 * 4 * 4;
    CHECK(write_and_check("prompt_float", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "expected I64 or I32 token ids");
    memcpy(x, e, sizeof x);
    x[2].dtype = "I32", x[2].nbytes = sizeof g.logits;
    CHECK(write_and_check("logits_int", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "expected F32, F16, BF16 or F64 logits");
    memcpy(x, e, sizeof x);
    x[0].ndim = 3, x[0].shape[0] = 1, x[0].shape[1] = 2, x[0].shape[2] = 4;
    CHECK(write_and_check("prompt_3d", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "expected [B, T0] or [T0]");
    base(&g);
    g.gen[1][2] = 96;
    CHECK(write_and_check("gen_id", e, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "token id 96 at [1, 2] is outside the vocabulary 0..95");
    base(&g);
    g.prompt[0][1] = -4;
    CHECK(write_and_check("prompt_id", e, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "token id -4 at [0, 1]");
    g.mask[0][1] = 0; /* a masked id is never read */
    CHECK(write_and_check("prompt_id_masked", e, 5, &err) == G2F_OK);
    base(&g);
    g.mask[1][0] = 2;
    CHECK(write_and_check("mask_value", e, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "2 at [1, 0]: expected 0 (padding) or 1");
    base(&g);
    memset(g.mask[1], 0, sizeof g.mask[1]);
    CHECK(write_and_check("mask_empty", e, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "row 1 is all padding");
    base(&g);
    g.eos = 200;
    CHECK(write_and_check("eos_range", e, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "eos_token_id");
    base(&g);
    memcpy(x, e, sizeof x);
    x[4].shape[0] = 2, x[4].nbytes = 16; /* two eos ids: 16 bytes from &g.eos and beyond is g's own memory */
    int64_t two[2] = {1, 2};
    x[4].data = two;
    CHECK(write_and_check("eos_two", x, 5, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "expected one I64 or I32 token id");
    /* a row that does not fit the 32 positions: 4 prompt tokens and 30 steps */
    int64_t longgen[2][30] = {{0}};
    memcpy(x, e, sizeof x);
    x[1] = (st_entry){"generated_ids", "I64", 2, {2, 30}, longgen, sizeof longgen};
    CHECK(write_and_check("too_long", x, 2, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "need 33 positions but the checkpoint has 32");
    x[1].shape[1] = 29, x[1].nbytes = 2 * 29 * 8; /* 4 + 29 - 1 = 32: fits */
    CHECK(write_and_check("fits", x, 2, &err) == G2F_OK);
    /* the port's tokens twice, under a prefixed name too: refused when they differ, not one dropped */
    base(&g);
    st_entry twin[6];
    memcpy(twin, e, sizeof e);
    int64_t other[2][3] = {{3, 3, 3}, {3, 3, 4}};
    twin[5] = (st_entry){"transformer.generated_ids", "I64", 2, {2, 3}, other, sizeof other};
    CHECK(write_and_check("twin", twin, 6, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "'generated_ids' and 'transformer.generated_ids' name one tensor of the generation");
    other[1][2] = 3; /* the same values: one tensor under two names, fine */
    CHECK(write_and_check("twin_same", twin, 6, &err) == G2F_OK);
}

/* NaN in the port's logits never passes: a divergence, nonfinite. */
static void nonfinite_logits_should_not_pass(void) {
    char ck[400], path[400], out[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(path, sizeof path, "%s/decode/gen/clean.safetensors", fixtures);
    snprintf(out, sizeof out, "%s/nan.safetensors", dir);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    if (!f) return;
    static int64_t prompt[10], gen[24];
    static float z[24 * 96];
    g2f_fixture_read_ids(g2f_fixture_act(f, 0, G2F_ACT_PROMPT_IDS), 0, 10, prompt);
    g2f_fixture_read_ids(g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS), 0, 24, gen);
    g2f_tensor_read_f32(g2f_fixture_act(f, 0, G2F_ACT_STEP_LOGITS), 0, 24 * 96, z);
    g2f_fixture_close(f);
    z[5 * 96 + 11] = NAN; /* row 0, step 5 */
    st_entry e[3] = {{"prompt_ids", "I64", 2, {2, 5}, prompt, sizeof prompt},
                     {"generated_ids", "I64", 2, {2, 12}, gen, sizeof gen},
                     {"step_logits", "F32", 3, {2, 12, 96}, z, sizeof z}};
    CHECK(st_write(out, NULL, e, 3, 1) == 0);
    g2f_gen_result r;
    CHECK(verify_at(ck, out, &r, &err) == G2F_OK);
    CHECK(!r.pass && r.diverged && r.nonfinite && r.first.seq == 0 && r.first.step == 5 && isinf(r.first.logits_margin));
}

/* The padded batch cut to its first step, row 0's token replaced by our
 * runner-up, whose logit is 0.0079 below the top one: far beyond float32's
 * tie window (about 1e-5) but within what BF16 storage of the logits rounds
 * (0.02). Stored as F32, as BF16, or not at all, the flip is a divergence:
 * the port chose its token before storing its logits, so their storage
 * never widens the tie window. Unflipped, the BF16 logits pass. */
static void stored_rounding_should_not_excuse_a_flip(void) {
    char ck[400], path[400], out[400];
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    snprintf(path, sizeof path, "%s/decode/gen/padded.safetensors", fixtures);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    if (!f) return;
    const g2f_tensor *tp = g2f_fixture_act(f, 0, G2F_ACT_PROMPT_IDS), *tm = g2f_fixture_act(f, 0, G2F_ACT_ATTENTION_MASK);
    const g2f_tensor *tg = g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS), *tz = g2f_fixture_act(f, 0, G2F_ACT_STEP_LOGITS);
    CHECK(tp && tm && tg && tz && tp->ndim == 2 && tg->ndim == 2 && tz->ndim == 3 && tp->shape[0] == 2 &&
          tz->shape[2] == 96);
    if (!(tp && tm && tg && tz && tp->ndim == 2 && tg->ndim == 2 && tz->ndim == 3 && tp->shape[0] == 2 &&
          tz->shape[2] == 96 && tp->shape[1] <= 8)) {
        g2f_fixture_close(f);
        return;
    }
    size_t T0 = (size_t)tp->shape[1], N = (size_t)tg->shape[1];
    int64_t prompt[16], mask[16], gen[2];
    float z[2][96];
    uint16_t zb[2][96];
    g2f_fixture_read_ids(tp, 0, 2 * T0, prompt);
    g2f_fixture_read_ids(tm, 0, 2 * T0, mask);
    for (size_t b = 0; b < 2; b++) {
        g2f_fixture_read_ids(tg, b * N, 1, &gen[b]);
        g2f_tensor_read_f32(tz, b * N * 96, 96, z[b]);
    }
    g2f_fixture_close(f);
    size_t top = 0, second = top == 0 ? 1 : 0;
    for (size_t i = 0; i < 96; i++) top = z[0][i] > z[0][top] ? i : top;
    second = top == 0 ? 1 : 0;
    for (size_t i = 0; i < 96; i++) second = i != top && z[0][i] > z[0][second] ? i : second;
    double gap = (double)z[0][top] - z[0][second];
    CHECK(gen[0] == (int64_t)top && gap > 1e-3 && gap < ldexp(1.0, -8) * (fabs(z[0][top]) + fabs(z[0][second])));
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < 96; i++) zb[b][i] = g2f_f32_to_bf16(z[b][i]);
    for (int flip = 0; flip < 2; flip++) {
        int64_t g2[2] = {flip ? (int64_t)second : gen[0], gen[1]};
        for (int store = 0; store < 3; store++) { /* BF16, F32, none */
            st_entry e[4] = {{"prompt_ids", "I64", 2, {2, T0}, prompt, 2 * T0 * sizeof *prompt},
                             {"attention_mask", "I64", 2, {2, T0}, mask, 2 * T0 * sizeof *mask},
                             {"generated_ids", "I64", 2, {2, 1}, g2, sizeof g2},
                             {"step_logits", store ? "F32" : "BF16", 3, {2, 1, 96}, NULL, 0}};
            e[3].data = store ? (const void *)z : (const void *)zb;
            e[3].nbytes = store ? sizeof z : sizeof zb;
            snprintf(out, sizeof out, "%s/flip%d_%d.safetensors", dir, flip, store);
            CHECK(st_write(out, NULL, e, store == 2 ? 3 : 4, 1) == 0);
            g2f_gen_result r;
            CHECK(verify_at(ck, out, &r, &err) == G2F_OK);
            if (r.pass == flip) fprintf(stderr, "  flip %d, logits %s: pass %d\n", flip, store == 0 ? "BF16" : store == 1 ? "F32" : "none", r.pass);
            CHECK(r.pass == !flip && r.n_flips == 0 && r.compared == 2);
            CHECK(!flip || (r.diverged && r.first.seq == 0 && r.first.step == 0 && r.first.gap > r.first.window));
        }
    }
}

int main(int argc, char **argv) {
    fixtures = argc > 1 ? argv[1] : "fixtures";
    if (make_tmpdir(dir, sizeof dir, "genverify") != 0) return 1;
    RUN(clean_generations_should_pass);
    RUN(kv_cache_bugs_should_be_named);
    RUN(a_near_tie_should_be_a_tie_flip_and_pass);
    RUN(a_token_below_the_ports_own_largest_logit_should_diverge);
    RUN(block_bugs_should_be_named_in_a_generation);
    RUN(an_unexplained_divergence_should_fail_unexplained);
    RUN(malformed_generations_should_be_refused);
    RUN(nonfinite_logits_should_not_pass);
    RUN(stored_rounding_should_not_excuse_a_flip);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
