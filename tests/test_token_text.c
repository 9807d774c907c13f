/* g2f_tokenizer_token_text and g2f_tokenizer_open_beside: a token shown as
 * one line of plain UTF-8 in quotes (what reports print where the top-1
 * tokens differ), and the tokenizer found beside a checkpoint. argv[1] is
 * the fixtures folder. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_text.h"
#include "g2f_tokenizer.h"

static const char *fixtures;
static g2f_tokenizer *tok;

/* The id of text's one token. */
static int64_t one_id(const char *text, size_t len) {
    g2f_tokens t = {0};
    g2f_error err = {0};
    CHECK(g2f_tokenizer_encode(tok, text, len, &t, &err) == G2F_OK);
    CHECK(t.count == 1);
    int64_t id = t.count ? t.ids[0] : -1;
    g2f_tokens_free(&t);
    return id;
}

static void shown(const char *text, size_t len, const char *want) {
    char buf[80];
    size_t n = g2f_tokenizer_token_text(tok, one_id(text, len), buf, sizeof buf);
    if (strcmp(buf, want)) fprintf(stderr, "  token of %zu bytes shown as [%s], want [%s]\n", len, buf, want);
    CHECK(!strcmp(buf, want) && n == strlen(buf));
    CHECK(g2f_text_is_plain(buf)); /* nothing a terminal or JSON needs escaped beyond its syntax */
}

static void token_text_should_quote_and_escape_a_token(void) {
    shown(" the", 4, "' the'");
    shown("\n", 1, "'\\n'");
    shown("\t", 1, "'\\t'");
    shown("'", 1, "'\\''");
    shown("\\", 1, "'\\\\'");
    shown("\x1b", 1, "'\\x1b'");
    shown("\x7f", 1, "'\\x7f'");
    shown("\xc3\xa9", 2, "'\xc3\xa9'"); /* é: one token in GPT-2's vocabulary, kept */
    /* a byte that is not UTF-8 on its own: the encoder sees U+FFFD first, so ask for byte 0xe2's token */
    char buf[32];
    size_t len;
    int64_t id = -1;
    for (int64_t i = 0; i < 256 && id < 0; i++) {
        const unsigned char *b = g2f_tokenizer_token_bytes(tok, i, &len);
        if (b && len == 1 && b[0] == 0xe2) id = i;
    }
    CHECK(id >= 0);
    g2f_tokenizer_token_text(tok, id, buf, sizeof buf);
    CHECK(!strcmp(buf, "'\\xe2'"));
    /* an id the tokenizer does not hold, and no tokenizer */
    g2f_tokenizer_token_text(tok, 50257, buf, sizeof buf);
    CHECK(!strcmp(buf, "<50257>"));
    g2f_tokenizer_token_text(NULL, 7, buf, sizeof buf);
    CHECK(!strcmp(buf, "<7>"));
}

static void token_text_should_stay_within_its_buffer(void) {
    char buf[8];
    memset(buf, 'x', sizeof buf);
    size_t n = g2f_tokenizer_token_text(tok, one_id(" information", 12), buf, sizeof buf);
    CHECK(n < sizeof buf && buf[n] == '\0' && buf[0] == '\'');
    CHECK(g2f_tokenizer_token_text(tok, 262, buf, 0) == 0);
}

static void open_beside_should_find_the_folder_s_tokenizer_or_none(void) {
    char path[512];
    g2f_error err = {0};
    g2f_tokenizer *t = NULL;
    snprintf(path, sizeof path, "%s/decode/tok/model.safetensors", fixtures); /* a file: its folder */
    CHECK(g2f_tokenizer_open_beside(path, &t, &err) == G2F_OK && t && g2f_tokenizer_vocab_size(t) == 2257);
    g2f_tokenizer_close(t);
    snprintf(path, sizeof path, "%s/decode/tok", fixtures); /* the folder itself */
    CHECK(g2f_tokenizer_open_beside(path, &t, &err) == G2F_OK && t);
    g2f_tokenizer_close(t);
    t = (g2f_tokenizer *)1;
    snprintf(path, sizeof path, "%s/tiny", fixtures); /* nothing there: no error, no tokenizer */
    CHECK(g2f_tokenizer_open_beside(path, &t, &err) == G2F_OK && t == NULL);
}

int main(int argc, char **argv) {
    fixtures = argc > 1 ? argv[1] : "fixtures";
    char path[512];
    g2f_error err = {0};
    snprintf(path, sizeof path, "%s/tokenizer/openai", fixtures);
    if (g2f_tokenizer_open(path, &tok, &err) != G2F_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    RUN(token_text_should_quote_and_escape_a_token);
    RUN(token_text_should_stay_within_its_buffer);
    RUN(open_beside_should_find_the_folder_s_tokenizer_or_none);
    g2f_tokenizer_close(tok);
    CHECK_EXIT();
}
