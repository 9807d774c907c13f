/* g2f_text: the one terminal-escaping rule for strings from files (control
 * bytes, DEL, C1 and bidi controls, invalid UTF-8 shown as \xHH; valid UTF-8
 * kept), its truncation at whole units, g2f_error_set applying it to every
 * message, and the U+FFFD replacement of invalid UTF-8 in text. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_error.h"
#include "g2f_text.h"

static void check_escape(const char *in, const char *want) {
    char out[256];
    g2f_escape(in, out, sizeof out);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "escape: got \"%s\", want \"%s\"\n", out, want);
        check_failures++;
    }
    CHECK(g2f_escape_size(in) == strlen(want) + 1);
    CHECK(g2f_text_is_plain(in) == (strcmp(in, want) == 0));
    char *d = g2f_escape_dup(in);
    CHECK(d && strcmp(d, want) == 0);
    free(d);
}

static void escape_should_show_control_bytes_and_del_as_hex(void) {
    check_escape("tanh\n\nresult: PASS\x1b[2J", "tanh\\x0a\\x0aresult: PASS\\x1b[2J");
    check_escape("a\tb\rc\x07\x7f", "a\\x09b\\x0dc\\x07\\x7f");
    check_escape("\x01\x1f", "\\x01\\x1f");
    check_escape("", "");
}

static void escape_should_keep_valid_utf8_and_backslashes(void) {
    check_escape("h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.weight");
    check_escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 C:\\x", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 C:\\x");
    check_escape("\xc2\xa0\xe2\x80\x8b", "\xc2\xa0\xe2\x80\x8b"); /* NBSP, zero width space: printable */
}

static void escape_should_show_invalid_utf8_c1_and_bidi_controls(void) {
    check_escape("\xff\xfe", "\\xff\\xfe");
    check_escape("\xc0\xaf", "\\xc0\\xaf");                 /* overlong '/' */
    check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80");         /* surrogate */
    check_escape("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    check_escape("x\xe2\x82", "x\\xe2\\x82");               /* truncated at the end */
    check_escape("\xc2\x9b" "31m", "\\xc2\\x9b" "31m");       /* C1 CSI */
    check_escape("\xc2\x85", "\\xc2\\x85");                 /* C1 NEL */
    check_escape("abc\xe2\x80\xae" "d", "abc\\xe2\\x80\\xae" "d");   /* right-to-left override */
    check_escape("\xe2\x81\xa6\xd8\x9c\xe2\x80\x8f", "\\xe2\\x81\\xa6\\xd8\\x9c\\xe2\\x80\\x8f");
}

static void escape_should_cut_at_whole_units(void) {
    char out[8];
    g2f_escape("ab\x1b" "cd", out, 6); /* "ab" + "\x1b" would need 7 */
    CHECK(strcmp(out, "ab") == 0);
    g2f_escape("ab\xc3\xa9xyz", out, 4); /* the 2-byte character does not fit after "ab" */
    CHECK(strcmp(out, "ab") == 0);
    g2f_escape("abcdefghij", out, sizeof out);
    CHECK(strcmp(out, "abcdefg") == 0);
    g2f_escape(NULL, out, sizeof out);
    CHECK(out[0] == '\0');
}

static void utf8_repair_should_replace_only_invalid_bytes(void) {
    char *d = g2f_utf8_repair_dup("ok \xc3\xa9\xff\x1b\xe2\x82" "x");
    CHECK(d && strcmp(d, "ok \xc3\xa9\xef\xbf\xbd\x1b\xef\xbf\xbd\xef\xbf\xbd" "x") == 0);
    free(d);
    d = g2f_utf8_repair_dup("");
    CHECK(d && !*d);
    free(d);
}

/* in[0, n) replaced must be want[0, wn) with `bad` replacements (and the
 * size pass agree with the writing pass). */
static void check_replace(const char *in, size_t n, const char *want, size_t wn, size_t bad) {
    unsigned char out[64];
    size_t r1 = 99, r2 = 99;
    size_t need = g2f_utf8_replace((const unsigned char *)in, n, NULL, &r1);
    size_t got = g2f_utf8_replace((const unsigned char *)in, n, out, &r2);
    if (got != wn || memcmp(out, want, wn) != 0 || r2 != bad) {
        fprintf(stderr, "replace: %zu bytes, %zu replaced; want %zu bytes, %zu replaced\n", got, r2, wn, bad);
        check_failures++;
    }
    CHECK(need == got && r1 == r2);
}
#define REPLACE(in, want, bad) check_replace(in, sizeof in - 1, want, sizeof want - 1, bad)
#define FFFD "\xef\xbf\xbd"

static void utf8_replace_should_replace_each_maximal_subpart_once(void) {
    /* Unicode 15, chapter 3, table 3-8 (what TextDecoder and Python do) */
    REPLACE("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d", 6);
    REPLACE("\xe2\x82x", FFFD "x", 1);               /* truncated, then a byte that starts the next unit */
    REPLACE("\xe2\x82", FFFD, 1);                    /* truncated at the end */
    REPLACE("\xf0\x80\x80\x80", FFFD FFFD FFFD FFFD, 4); /* overlong: F0 needs 90-BF */
    REPLACE("\xc0\xaf", FFFD FFFD, 2);               /* C0, C1 start nothing */
    REPLACE("\xed\xa0\x80", FFFD FFFD FFFD, 3);       /* a surrogate: ED needs 80-9F */
    REPLACE("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD, 4); /* above U+10FFFF */
    REPLACE("\xf5\xff\xfe", FFFD FFFD FFFD, 3);
    REPLACE("\xf0\x9f\x98", FFFD, 1);               /* an emoji cut short */
    REPLACE("\xef\xbb\xbf" "a\x00" "b\xf4\x8f\xbf\xbf", "\xef\xbb\xbf" "a\x00" "b\xf4\x8f\xbf\xbf", 0); /* BOM, NUL, U+10FFFF kept */
    REPLACE("", "", 0);
}

static void error_should_escape_what_files_put_in_messages(void) {
    g2f_error err = {0};
    CHECK(g2f_error_set(&err, G2F_ERR_FORMAT, "x.safetensors: tensor '%s'", "h.0\n\x1b]0;pwned\x07\xff") ==
          G2F_ERR_FORMAT);
    CHECK(strcmp(err.msg, "x.safetensors: tensor 'h.0\\x0a\\x1b]0;pwned\\x07\\xff'") == 0);
    CHECK(err.status == G2F_ERR_FORMAT);
    /* a message quoting itself (re-prefixing) is not escaped twice */
    g2f_error again = err;
    g2f_error_set(&again, G2F_ERR_FORMAT, "%s", err.msg);
    CHECK(strcmp(again.msg, err.msg) == 0);
    /* long messages stay one valid line, cut at a whole unit */
    char big[1200];
    for (size_t i = 0; i < sizeof big - 1; i++) big[i] = i % 3 ? 'a' : '\n';
    big[sizeof big - 1] = '\0';
    g2f_error_set(&err, G2F_ERR_FORMAT, "%s", big);
    CHECK(strlen(err.msg) < G2F_ERROR_MSG_MAX && strchr(err.msg, '\n') == NULL);
    size_t n = strlen(err.msg);
    CHECK(n >= 4 && (err.msg[n - 1] == 'a' || strcmp(err.msg + n - 4, "\\x0a") == 0));
}

int main(void) {
    RUN(escape_should_show_control_bytes_and_del_as_hex);
    RUN(escape_should_keep_valid_utf8_and_backslashes);
    RUN(escape_should_show_invalid_utf8_c1_and_bidi_controls);
    RUN(escape_should_cut_at_whole_units);
    RUN(utf8_repair_should_replace_only_invalid_bytes);
    RUN(utf8_replace_should_replace_each_maximal_subpart_once);
    RUN(error_should_escape_what_files_put_in_messages);
    CHECK_EXIT();
}
