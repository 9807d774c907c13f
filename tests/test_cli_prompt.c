/* End-to-end: text where ids go. run --prompt with the tokenizer beside the
 * checkpoint or --tokenizer, its refusals, and verify showing the tokens
 * where the top-1 differs as text. argv[1] is the fixtures folder, argv[2]
 * the CLI. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_tokenizer.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 16], err_text[1 << 12];

/* Runs the CLI with args (a shell-quoted string); returns its exit code. */
static int run(const char *args) {
    return run_cli_in("", cli, args, dir, out_text, sizeof out_text, err_text, sizeof err_text);
}

/* The ids run wrote into path's input_ids equal the tokenizer's encoding of text. */
static void ids_should_be_the_encoding(const char *path, const char *tok_path, const char *text) {
    g2f_tokenizer *tok = NULL;
    g2f_fixture *f = NULL;
    g2f_tokens t = {0};
    g2f_error err = {0};
    CHECK(g2f_tokenizer_open(tok_path, &tok, &err) == G2F_OK);
    CHECK(tok && g2f_tokenizer_encode(tok, text, strlen(text), &t, &err) == G2F_OK && t.count > 1);
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    const g2f_tensor *ids = f ? g2f_fixture_act(f, 0, G2F_ACT_IDS) : NULL;
    CHECK(ids && ids->numel == t.count);
    if (ids && ids->numel == t.count) {
        int64_t got[64];
        g2f_fixture_read_ids(ids, 0, t.count < 64 ? t.count : 64, got);
        for (size_t i = 0; i < t.count && i < 64; i++) CHECK(got[i] == t.ids[i]);
    }
    char line[64];
    snprintf(line, sizeof line, "prompt: %zu tokens: %lld", t.count, t.count ? (long long)t.ids[0] : -1LL);
    CHECK_CONTAINS(out_text, line);
    g2f_tokens_free(&t);
    g2f_fixture_close(f);
    g2f_tokenizer_close(tok);
}

static void run_should_encode_the_prompt_with_the_tokenizer_beside_the_checkpoint(void) {
    char args[1024], out[400], tk[400];
    const char *text = "Hello world, the cat's 42 naps";
    snprintf(out, sizeof out, "%s/p.safetensors", dir);
    snprintf(tk, sizeof tk, "%s/decode/tok", fixtures);
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt \"%s\" -o '%s'", fixtures, text, out);
    CHECK(run(args) == 0);
    ids_should_be_the_encoding(out, tk, text);
    /* the same with --tokenizer naming one of the files */
    snprintf(args, sizeof args, "run '%s/decode/tok/model.safetensors' --prompt \"%s\" --tokenizer '%s/decode/tok/merges.txt' -o '%s'",
             fixtures, text, fixtures, out);
    CHECK(run(args) == 0);
    ids_should_be_the_encoding(out, tk, text);
    /* and the output is a fixture verify passes */
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s'", fixtures, out);
    CHECK(run(args) == 0);
}

static void run_should_refuse_a_prompt_it_cannot_encode_for_this_model(void) {
    char args[1024], out[400];
    snprintf(out, sizeof out, "%s/q.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/tiny' --prompt 'Hello' -o '%s'", fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "no tokenizer beside");
    CHECK_CONTAINS(err_text, "--tokenizer");
    /* GPT-2's 50257 tokens are not the tiny model's 96 */
    snprintf(args, sizeof args, "run '%s/tiny' --prompt 'Hello' --tokenizer '%s/tokenizer/openai' -o '%s'", fixtures,
             fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "holds 50257 tokens but the checkpoint's vocabulary has 96");
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt '' -o '%s'", fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "encodes to no tokens");
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt 'a' --ids 1,2 -o '%s'", fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "one of INPUTS, --ids and --prompt");
    snprintf(args, sizeof args, "run '%s/decode/tok' --ids 1,2 --tokenizer '%s/decode/tok' -o '%s'", fixtures, fixtures,
             out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "--tokenizer is for --prompt");
    snprintf(args, sizeof args, "run '%s/decode/tok' --prompt 'a' --tokenizer '%s/tiny/config.json' -o '%s'", fixtures,
             fixtures, out);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "not a tokenizer file");
    CHECK(!strchr(err_text, '\n') || strchr(err_text, '\n') == err_text + strlen(err_text) - 1); /* one line */
}

static void verify_should_show_the_differing_top1_tokens_as_text(void) {
    char args[1024];
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s/decode/tok_wpe_missing.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "position 0:3: reference ' process', ours ' ask'");
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s/decode/tok_wpe_missing.safetensors' --json -", fixtures,
             fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "\"text\":\t\"' process'\"");
    CHECK_CONTAINS(out_text, "\"text\":\t\"' ask'\"");
    char html[400];
    snprintf(html, sizeof html, "%s/r.html", dir);
    snprintf(args, sizeof args, "verify '%s/decode/tok' '%s/decode/tok_wpe_missing.safetensors' --html '%s'", fixtures,
             fixtures, html);
    CHECK(run(args) == 1);
    char *h = read_whole_file(html, NULL);
    CHECK_CONTAINS(h, "0:3 (reference <code>&#39; process&#39;</code>, ours <code>&#39; ask&#39;</code>)");
    free(h);
    /* --tokenizer: the same vocabulary from a tokenizer.json elsewhere */
    snprintf(args, sizeof args, "verify '%s/decode/tok/model.safetensors' '%s/decode/tok_wpe_missing.safetensors' "
             "--tokenizer '%s/tokenizer/small_json'", fixtures, fixtures, fixtures);
    CHECK(run(args) == 1);
    CHECK_CONTAINS(out_text, "position 0:3: reference ' process', ours ' ask'");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "prompt") != 0) return 1;
    RUN(run_should_encode_the_prompt_with_the_tokenizer_beside_the_checkpoint);
    RUN(run_should_refuse_a_prompt_it_cannot_encode_for_this_model);
    RUN(verify_should_show_the_differing_top1_tokens_as_text);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
