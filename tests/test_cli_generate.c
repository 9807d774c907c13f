/* End-to-end: run --generate (greedy generation with the KV cache) and
 * verify of a generation fixture. The file run writes is a generation
 * fixture (its step logits' argmax is each generated token) and, with
 * --save, a fixture of the tokens stepped that verify passes against the
 * full recompute; hostile sizes are refused with one line. argv[1] is the
 * fixtures folder, argv[2] the CLI. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_decode.h"
#include "g2f_fixture.h"
#include "test_util.h"
#include "st_rewrite.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 16], err_text[1 << 12];

/* Runs the CLI with args (a shell-quoted string); returns its exit code. */
static int run(const char *args) {
    return run_cli_in("", cli, args, dir, out_text, sizeof out_text, err_text, sizeof err_text);
}

/* The file's generated ids are the argmax of its step logits, and what run printed. */
static void generation_file_should_hold_together(const char *path, size_t n_seq, size_t N, size_t V) {
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    if (!f) return;
    const g2f_tensor *g = g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS), *z = g2f_fixture_act(f, 0, G2F_ACT_STEP_LOGITS);
    CHECK(g && z && g->numel == n_seq * N && z->numel == n_seq * N * V);
    CHECK(g2f_fixture_act(f, 0, G2F_ACT_PROMPT_IDS) != NULL);
    if (g && z && g->numel == n_seq * N && z->numel == n_seq * N * V) {
        int64_t *ids = malloc(n_seq * N * sizeof *ids);
        float *row = malloc(V * sizeof *row);
        g2f_fixture_read_ids(g, 0, n_seq * N, ids);
        for (size_t k = 0; k < n_seq * N; k++) {
            g2f_tensor_read_f32(z, k * V, V, row);
            CHECK(ids[k] == (int64_t)g2f_argmax(row, V));
        }
        for (size_t s = 0; s < n_seq; s++) {
            char line[128];
            snprintf(line, sizeof line, "sequence %zu: generated %zu tokens: %lld", s, N, (long long)ids[s * N]);
            CHECK_CONTAINS(out_text, line);
        }
        free(ids);
        free(row);
    }
    g2f_fixture_close(f);
}

static void run_generate_should_write_a_generation_and_its_steps(void) {
    char args[1024], out[400];
    snprintf(out, sizeof out, "%s/g.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/tiny' --ids '5,17,3;1,2,3' --generate 9 -o '%s' --save all", fixtures, out);
    CHECK(run(args) == 0);
    generation_file_should_hold_together(out, 2, 9, 96);
    /* the steps' stages against the full recompute of the tokens stepped */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --json -", fixtures, out);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"status\":\t\"pass\"");
    /* from text, its text shown */
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt 'The cat sat on' --generate 12 -o '%s'", fixtures, out);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "sequence 0: text: \"");
    generation_file_should_hold_together(out, 1, 12, 2257);
    /* .npz too, and one token of prompt up to the last position (32) */
    snprintf(out, sizeof out, "%s/g.npz", dir);
    snprintf(args, sizeof args, "run '%s/tiny' --ids 7 --generate 32 -o '%s'", fixtures, out);
    CHECK(run(args) == 0);
    generation_file_should_hold_together(out, 1, 32, 96);
}

static void run_generate_should_refuse_what_does_not_fit(void) {
    char args[1024], out[400];
    snprintf(out, sizeof out, "%s/bad.safetensors", dir);
    const char *cases[][2] = {
        {"--ids 5,17,3 --generate 31", "exceed the 32 positions"},
        {"--ids 5,17,3 --generate 0", "expected the number of tokens to generate"},
        {"--ids 5,17,3 --generate 3x", "expected the number of tokens to generate"},
        {"--ids 5,17,3 --generate 99999999999999999999", "expected the number of tokens to generate"},
        {"--ids 5,17,3 --generate 2 --names tl", "HF names"},
        {"--ids 5,96 --generate 2", "outside the vocabulary"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "run '%s/tiny' %s -o '%s'", fixtures, cases[i][0], out);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, cases[i][1]);
        CHECK(strchr(err_text, '\n') == err_text + strlen(err_text) - 1); /* one line */
    }
    snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' --generate 2 -o '%s'", fixtures, fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "--generate needs token ids");
    char p[400];
    snprintf(p, sizeof p, "%s/bad.safetensors", dir);
    CHECK(access(p, F_OK) != 0); /* nothing written */
}

/* The reports of a verify of fixture (on checkpoint ck): exit code, and the text, JSON and HTML saying the same. */
static void reports_should_agree(const char *ck, const char *fx, int want_rc, const char *code) {
    char args[1024], html[400];
    snprintf(html, sizeof html, "%s/r.html", dir);
    snprintf(args, sizeof args, "verify '%s/%s' '%s/decode/gen/%s.safetensors'", fixtures, ck, fixtures, fx);
    CHECK(run(args) == want_rc);
    char text[sizeof out_text];
    memcpy(text, out_text, sizeof text);
    CHECK_CONTAINS(text, code);
    CHECK_CONTAINS(text, want_rc ? "result: FAIL" : "result: PASS");
    snprintf(args, sizeof args, "verify '%s/%s' '%s/decode/gen/%s.safetensors' --json - --html '%s'", fixtures, ck,
             fixtures, fx, html);
    CHECK(run(args) == want_rc);
    CHECK_CONTAINS(out_text, want_rc ? "\"status\":\t\"fail\"" : "\"status\":\t\"pass\"");
    CHECK_CONTAINS(out_text, code);
    char *h = read_whole_file(html, NULL);
    CHECK_CONTAINS(h, code);
    CHECK_CONTAINS(h, want_rc ? "<strong>FAIL</strong>" : "<strong>PASS</strong>");
    /* the verdict sentence: the text's is the JSON's */
    const char *v = strstr(out_text, "\"verdict\":\t\"");
    if (v) {
        char sentence[600];
        v += strlen("\"verdict\":\t\"");
        size_t n = strcspn(v, "\"");
        snprintf(sentence, sizeof sentence, "%.*s", (int)(n < 200 ? n : 200), v);
        CHECK_CONTAINS(text, sentence);
    }
    CHECK(v != NULL);
    free(h);
}

static void verify_should_judge_generations_in_every_report(void) {
    reports_should_agree("tiny", "clean", 0, "greedy one: the same token at 24 of 24 compared steps");
    reports_should_agree("tiny", "padded", 0, "greedy one: the same token at 20 of 20 compared steps");
    reports_should_agree("tiny", "cache_position_reset", 1, "cache_position_reset");
    reports_should_agree("tiny", "cache_offset_m1", 1, "cache_offset:-1");
    reports_should_agree("tiny", "padding_positions", 1, "padding_positions");
    /* token ids alone: what reproduces them is consistent with the port, not shown to be its bug */
    reports_should_agree("tiny", "cache_position_reset_ids", 1, "consistent with cache_position_reset");
    reports_should_agree("tiny", "cache_position_reset_ids", 1, "token ids only");
    reports_should_agree("tiny", "unexplained", 1, "unexplained");
    reports_should_agree("decode/near_tie", "tie_flip", 0, "tie_flip");
    reports_should_agree("decode/near_tie", "not_greedy", 1, "not_greedy");
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/decode/near_tie' '%s/decode/gen/tie_flip.safetensors' --json -", fixtures,
             fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"tie_flip_count\":\t3");
    /* the tolerance options of a teacher-forced verify are not a generation's */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/decode/gen/clean.safetensors' --rtol 0.1", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "holds a generation");
    /* another checkpoint's generation: refused by its vocabulary */
    snprintf(args, sizeof args, "verify '%s/small' '%s/decode/gen/clean.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "expected [B, 12, 32]");
}

/* A port's generation on the tokenizer's model with one token changed: the tokens shown as text. */
static void verify_should_show_the_diverging_tokens_as_text(void) {
    char args[1024], out[400], port[400];
    snprintf(out, sizeof out, "%s/tokgen.safetensors", dir);
    snprintf(port, sizeof port, "%s/tokport.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt 'The cat sat on' --generate 6 -o '%s'", fixtures, out);
    CHECK(run(args) == 0);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(out, &f, &err) == G2F_OK);
    if (!f) return;
    static int64_t prompt[64], gen[6];
    const g2f_tensor *tp = g2f_fixture_act(f, 0, G2F_ACT_PROMPT_IDS);
    size_t T0 = (size_t)tp->numel;
    g2f_fixture_read_ids(tp, 0, T0, prompt);
    g2f_fixture_read_ids(g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS), 0, 6, gen);
    g2f_fixture_close(f);
    gen[3] = 262; /* ' the' */
    st_entry e[2] = {{"prompt_ids", "I64", 1, {T0}, prompt, T0 * 8}, {"generated_ids", "I64", 1, {6}, gen, sizeof gen}};
    CHECK(st_write(port, NULL, e, 2, 1) == 0);
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s'", fixtures, port);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "first divergence at sequence 0, step 3: reference '");
    CHECK_CONTAINS(out_text, "port ' the' (262)");
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s' --json -", fixtures, port);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "\"text\":\t\"' the'\"");
}

/* run --generate --save: one file, both checks, both pass. */
static void verify_should_check_both_sides_of_a_saved_generation(void) {
    char args[1024], out[400];
    snprintf(out, sizeof out, "%s/both.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/tiny' --ids 5,17,3,42 --generate 7 -o '%s' --save in,attn.probs,out,ln_f.out",
             fixtures, out);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, out);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "teacher-forced stages pass");
    CHECK_CONTAINS(out_text, "provenance");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --json -", fixtures, out);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "\"teacher_forced\":\t{");
}

/* A teacher-forced fixture with an attention_mask: all ones masks nothing; a 0 is refused, never judged. */
static void verify_should_refuse_a_padded_teacher_forced_fixture(void) {
    char path[400], fx[400], args[1024];
    snprintf(path, sizeof path, "%s/model/clean.safetensors", fixtures);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    if (!f) return;
    static int64_t ids[12], mask[12];
    static float z[12 * 96];
    g2f_fixture_read_ids(g2f_fixture_act(f, 0, G2F_ACT_IDS), 0, 12, ids);
    g2f_tensor_read_f32(g2f_fixture_act(f, 0, G2F_ACT_LOGITS), 0, 12 * 96, z);
    g2f_fixture_close(f);
    for (int i = 0; i < 12; i++) mask[i] = 1;
    st_entry e[3] = {{"input_ids", "I64", 2, {2, 6}, ids, sizeof ids},
                     {"logits", "F32", 3, {2, 6, 96}, z, sizeof z},
                     {"attention_mask", "I64", 2, {2, 6}, mask, sizeof mask}};
    snprintf(fx, sizeof fx, "%s/masked.safetensors", dir);
    CHECK(st_write(fx, NULL, e, 3, 1) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, fx);
    CHECK(run(args) == 0);
    mask[6] = 0; /* row 1 left-padded by one */
    CHECK(st_write(fx, NULL, e, 3, 1) == 0);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "holds 0 at element 6: a padded batch's padded positions are not GPT-2's");
    snprintf(args, sizeof args, "run '%s/tiny' '%s' -o '%s/o.safetensors'", fixtures, fx, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "attention_mask");
}

/* dir/name: the generation fixture gen's tensors and one more, extra. */
static void write_with(const char *gen, const char *name, const st_entry *extra) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/decode/gen/%s.safetensors", fixtures, gen);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    CHECK(st_rewrite(src, dst, NULL, NULL, extra, 1) == 0);
}

/* A generation saved with HF's input_ids (prompt and generation together) or the logits of the
 * prompt alone: no teacher-forced stage to compare, so no teacher-forced verdict (it was FAIL on a
 * correct port, "nothing was compared"); the generation is judged, the tensors' fate said. */
static void verify_should_judge_a_generation_beside_tensors_it_cannot_compare(void) {
    static int64_t ids[2][17];
    static float z[2][5][96];
    st_entry extra[2] = {{"input_ids", "I64", 2, {2, 17}, ids, sizeof ids}, {"logits", "F32", 3, {2, 5, 96}, z, sizeof z}};
    char args[1024];
    for (int k = 0; k < 2; k++) {
        write_with("clean", "extra.safetensors", &extra[k]);
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/extra.safetensors'", fixtures, dir);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "result: PASS (24 steps compared");
        CHECK_CONTAINS(out_text, "not checked teacher-forced");
        CHECK_CONTAINS(out_text, extra[k].name);
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/extra.safetensors' --json -", fixtures, dir);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "\"teacher_forced\":\tnull");
        CHECK_CONTAINS(out_text, "\"teacher_forced_note\":\t\"not checked teacher-forced");
    }
    /* a wrong generation beside them still fails */
    write_with("cache_not_appended", "extra.safetensors", &extra[0]);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/extra.safetensors'", fixtures, dir);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "cache_not_appended");
}

/* A port with another LayerNorm epsilon everywhere (ln_f too): tiny's weights under a config of
 * epsilon 1e-4 generate, and the generation checked against tiny names ln_eps:0.0001 (with the
 * blocks' epsilon alone tried, it was unexplained). */
static void verify_should_name_a_port_wide_epsilon(void) {
    char ck[300], src[400], gen[400], args[1400];
    snprintf(ck, sizeof ck, "%s/eps", dir);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    CHECK(st_checkpoint_dir(ck, src, NULL, NULL, NULL,
                            "{\"model_type\": \"gpt2\", \"activation_function\": \"gelu_new\", "
                            "\"layer_norm_epsilon\": 1e-4, \"n_layer\": 4, \"n_embd\": 64, \"n_head\": 4, "
                            "\"n_positions\": 32, \"vocab_size\": 96}\n") == 0);
    snprintf(gen, sizeof gen, "%s/eps_gen.safetensors", dir);
    snprintf(args, sizeof args, "run '%s' --ids '5,17,3,42,9;60,2,71,33,8' --generate 12 -o '%s'", ck, gen);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, gen);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "diagnosis   ln_eps:0.0001 (another LayerNorm epsilon)");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "generate") != 0) return 1;
    RUN(run_generate_should_write_a_generation_and_its_steps);
    RUN(run_generate_should_refuse_what_does_not_fit);
    RUN(verify_should_judge_generations_in_every_report);
    RUN(verify_should_show_the_diverging_tokens_as_text);
    RUN(verify_should_check_both_sides_of_a_saved_generation);
    RUN(verify_should_refuse_a_padded_teacher_forced_fixture);
    RUN(verify_should_judge_a_generation_beside_tensors_it_cannot_compare);
    RUN(verify_should_name_a_port_wide_epsilon);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
