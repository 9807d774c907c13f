/* g2f_bpe, the tokenizer's file readers: every way of naming the files (a
 * folder and its order of preference, each file with its partner beside
 * it), what OpenAI's files hold, and each check of the checklist in
 * formats/g2f_bpe.h refused with G2F_ERR_FORMAT and one line naming the
 * file and what is wrong, on files written here byte by byte (a base of the
 * 256 byte tokens with id = byte, "ab" 256, "abc" 257, merges "a b", "ab c").
 * argv[1] is the fixtures folder. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe_files.h"
#include "check.h"
#include "g2f_bpe.h"
#include "test_util.h"

static const char *fixtures = "fixtures";
static char dir[256];
static int n_case;

static const char *const BASE_EXTRA = ", \"ab\": 256, \"abc\": 257";
static const char *const BASE_MERGES = "#version: 0.2\na b\nab c\n";

/* A fresh folder of the case holding name = text[0, n). */
static void put(const char *sub, const char *name, const char *text, size_t n, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, sub);
    mkdir(path, 0700);
    snprintf(path, cap, "%s/%s/%s", dir, sub, name);
    CHECK(write_bytes(path, text, n) == 0);
}

/* Opens path: refused with status st and a message naming file and holding needle. */
static void expect_refused(const char *path, g2f_status st, const char *file, const char *needle, int line) {
    g2f_bpe *v = NULL;
    g2f_error err = {0};
    g2f_status got = g2f_bpe_open(path, &v, &err);
    if (got != st || v || !strstr(err.msg, file) || !strstr(err.msg, needle) || strchr(err.msg, '\n')) {
        fprintf(stderr, "line %d: %s: status %d, \"%s\"; wanted status %d naming %s with \"%s\"\n", line, path,
                (int)got, err.msg, (int)st, file, needle);
        check_failures++;
    }
    g2f_bpe_close(v);
}

/* vocab.json = extra after the byte tokens (or raw when raw), merges.txt = merges, in a folder of their own. */
static void hf_case(const char *extra, int raw, size_t raw_len, const char *merges, const char *bad_file,
                    const char *needle, int line) {
    char sub[32], vp[512], mp[512];
    snprintf(sub, sizeof sub, "case%d", n_case++);
    char *v = raw ? NULL : bpe_byte_vocab(extra, -1);
    put(sub, "vocab.json", raw ? extra : v, raw ? raw_len : strlen(v), vp, sizeof vp);
    put(sub, "merges.txt", merges, strlen(merges), mp, sizeof mp);
    free(v);
    expect_refused(vp, G2F_ERR_FORMAT, strcmp(bad_file, "merges.txt") == 0 ? mp : vp, needle, line);
}
#define VOCAB(extra, needle) hf_case((extra), 0, 0, BASE_MERGES, "vocab.json", (needle), __LINE__)
#define RAW_VOCAB(text, needle) hf_case((text), 1, strlen(text), BASE_MERGES, "vocab.json", (needle), __LINE__)
#define MERGES(text, needle) hf_case(BASE_EXTRA, 0, 0, (text), "merges.txt", (needle), __LINE__)

static void vocabulary_checks_should_each_refuse_their_file(void) {
    /* 2: JSON */
    RAW_VOCAB("{\"a\": 0", "not valid JSON");
    RAW_VOCAB("{} x", "bytes after the JSON value, from byte 3");
    VOCAB(", \"ab\": 256, \"a\\u0000b\": 257", "a NUL character (raw or \\u0000) at byte");
    hf_case("{\"a\0b\": 0}", 1, 10, BASE_MERGES, "vocab.json", "a NUL character", __LINE__);
    VOCAB(", \"ab\": 256, \"ab\": 257", "key \"ab\" appears twice");
    /* 3: an object */
    RAW_VOCAB("[1, 2]", "not a JSON object of tokens and ids");
    /* 5: ids and tokens */
    VOCAB(", \"ab\": \"x\"", "token \"ab\" has a value that is not an integer id");
    VOCAB(", \"ab\": 1.5", "token \"ab\" has id 1.5, not an integer in [0, 257)");
    VOCAB(", \"ab\": -1", "has id -1, not an integer in [0, 257)");
    VOCAB(", \"ab\": 257", "has id 257, not an integer in [0, 257)");
    VOCAB(", \"ab\": 256, \"abc\": 256", "tokens \"ab\" and \"abc\" both have id 256");
    VOCAB(", \"ab\": 97", "tokens \"a\" and \"ab\" both have id 97");
    VOCAB(", \"\": 256", "token \"\" is not a byte-level string: it is empty");
    VOCAB(", \"a b\": 256", "U+0020 at byte 1 is not in GPT-2's byte-level alphabet");
    VOCAB(", \"a\\u00adb\": 256", "U+00AD at byte 1 is not in");
    VOCAB(", \"\\u0144\": 256", "U+0144 at byte 0 is not in");
    VOCAB(", \"a\\u65e5\": 256", "the character at byte 1 is not in");
    VOCAB(", \"a\xff\": 256", "byte 1 is not valid UTF-8");
    VOCAB(", \"a\xc4\": 256", "byte 1 is not valid UTF-8");
    /* 6: every byte */
    char sub[32], vp[512], mp[512];
    snprintf(sub, sizeof sub, "case%d", n_case++);
    char *v = bpe_byte_vocab(", \"ab\": 65", 'A');
    put(sub, "vocab.json", v, strlen(v), vp, sizeof vp);
    put(sub, "merges.txt", BASE_MERGES, strlen(BASE_MERGES), mp, sizeof mp);
    expect_refused(vp, G2F_ERR_FORMAT, vp, "no token for the byte 0x41 (\"A\" in the byte-level alphabet)", __LINE__);
    free(v);
}

static void merges_checks_should_each_refuse_their_file(void) {
    /* 7: the frame */
    MERGES("a b\n", "line 1 does not start with \"#version\"");
    MERGES("", "line 1 does not start with \"#version\"");
    MERGES("#version: 0.2\na b", "the last line does not end with a newline");
    /* 9: each merge */
    MERGES("#version: 0.2\n\na b\n", "line 2: empty, where a merge \"A B\" was expected");
    MERGES("#version: 0.2\na b\nab\n", "line 3: \"ab\" is not a merge \"A B\" (two tokens, one space)");
    MERGES("#version: 0.2\na b c\n", "line 2: \"a b c\" is not a merge");
    MERGES("#version: 0.2\n a\n", "line 2: \"\" is not a byte-level string: it is empty");
    MERGES("#version: 0.2\r\na b\r\n", "line 2: \"b\\x0d\" is not a byte-level string: U+000D at byte 1");
    MERGES("#version: 0.2\na\xc3\x28 b\n", "line 2: \"a\\xc3(\" is not a byte-level string: byte 1 is not valid UTF-8");
    MERGES("#version: 0.2\nxy z\n", "line 2: \"xy\" is not a token of");
    MERGES("#version: 0.2\na zz\n", "line 2: \"zz\" is not a token of");
    MERGES("#version: 0.2\na c\n", "line 2: \"a\" + \"c\" is not a token of");
    MERGES("#version: 0.2\na b\nab c\na b\n", "line 4: the merge \"a\" \"b\" repeats the merge of rank 0");
}

/* tokenizer.json: pipeline fields, model fields, merges (JSON texts). */
static void tj_case(const char *pipeline, const char *model, const char *merges, const char *needle, int line) {
    char sub[32], tp[512];
    snprintf(sub, sizeof sub, "case%d", n_case++);
    char *v = bpe_byte_vocab(BASE_EXTRA, -1);
    size_t cap = strlen(v) + 4096;
    char *t = malloc(cap);
    snprintf(t, cap, "{%s\"model\": {%s\"vocab\": %s, \"merges\": %s}}", pipeline, model, v, merges);
    put(sub, "tokenizer.json", t, strlen(t), tp, sizeof tp);
    expect_refused(tp, G2F_ERR_FORMAT, tp, needle, line);
    free(t);
    free(v);
}
#define PRE "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, "
#define PIPELINE(p, needle) tj_case((p), "", "[\"a b\"]", (needle), __LINE__)
#define MODEL(m, needle) tj_case(PRE, (m), "[\"a b\"]", (needle), __LINE__)
#define TJ_MERGES(m, needle) tj_case(PRE, "", (m), (needle), __LINE__)

static void tokenizer_json_checks_should_each_refuse_their_file(void) {
    char tp[512];
    put("tj_root", "tokenizer.json", "{\"model\": 1}", 12, tp, sizeof tp);
    expect_refused(tp, G2F_ERR_FORMAT, tp, "not a JSON object with an object \"model\"", __LINE__);
    put("tj_dup", "tokenizer.json", "{\"model\": {}, \"x\": {\"t\": 1, \"t\": 2}}", 36, tp, sizeof tp);
    expect_refused(tp, G2F_ERR_FORMAT, tp, "key \"t\" appears twice", __LINE__);
    PIPELINE(PRE "\"normalizer\": {\"type\": \"NFC\"}, ", "normalizer is not null (GPT-2 has none)");
    PIPELINE("", "pre_tokenizer is not {\"type\": \"ByteLevel\"}: not GPT-2's tokenizer pipeline");
    PIPELINE("\"pre_tokenizer\": {\"type\": \"Whitespace\"}, ", "pre_tokenizer is not {\"type\": \"ByteLevel\"}");
    PIPELINE("\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, ", "pre_tokenizer.add_prefix_space is not false");
    PIPELINE("\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true}, ", "add_prefix_space is not false");
    PIPELINE("\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}, ",
             "pre_tokenizer.use_regex is not true");
    PIPELINE(PRE "\"post_processor\": {\"type\": \"TemplateProcessing\"}, ", "post_processor is not null or ByteLevel");
    PIPELINE(PRE "\"decoder\": {\"type\": \"WordPiece\"}, ", "decoder is not null or ByteLevel");
    MODEL("\"type\": \"WordPiece\", ", "model.type is not \"BPE\"");
    MODEL("\"dropout\": 0.1, ", "model.dropout is not null");
    MODEL("\"continuing_subword_prefix\": \"##\", ", "model.continuing_subword_prefix or end_of_word_suffix is not empty");
    MODEL("\"end_of_word_suffix\": \"</w>\", ", "continuing_subword_prefix or end_of_word_suffix is not empty");
    MODEL("\"byte_fallback\": true, ", "model.byte_fallback or ignore_merges is not false");
    MODEL("\"ignore_merges\": true, ", "model.byte_fallback or ignore_merges is not false");
    TJ_MERGES("{}", "model.merges is missing or not an array");
    TJ_MERGES("[\"a b\", [\"ab\", \"c\"]]", "model.merges[1]: not a string \"A B\" (model.merges[0] sets the form");
    TJ_MERGES("[[\"a\", \"b\"], \"ab c\"]", "model.merges[1]: not a pair [\"A\", \"B\"] of two strings");
    TJ_MERGES("[[\"a\"]]", "model.merges[0]: not a pair");
    TJ_MERGES("[[\"a\", 1]]", "model.merges[0]: not a pair");
    TJ_MERGES("[[\"a\", \"b\", \"c\"]]", "model.merges[0]: not a pair");
    TJ_MERGES("[1]", "model.merges[0]: not a string");
    TJ_MERGES("[[\"a\", \"zz\"]]", "model.merges[0]: \"zz\" is not a token of");
    TJ_MERGES("[[\"a\", \"b\"], [\"a\", \"b\"]]", "model.merges[1]: the merge \"a\" \"b\" repeats the merge of rank 0");
    TJ_MERGES("[\"ab\"]", "model.merges[0]: \"ab\" is not a merge");
    /* the vocabulary's checks are vocab.json's, named by their field */
    char *v = bpe_byte_vocab(", \"ab\": 300", -1);
    size_t cap = strlen(v) + 512;
    char *t = malloc(cap);
    snprintf(t, cap, "{" PRE "\"model\": {\"vocab\": %s, \"merges\": []}}", v);
    put("tj_vocab", "tokenizer.json", t, strlen(t), tp, sizeof tp);
    expect_refused(tp, G2F_ERR_FORMAT, tp, "model.vocab: token \"ab\" has id 300, not an integer in [0, 257)", __LINE__);
    snprintf(t, cap, "{" PRE "\"model\": {\"vocab\": [], \"merges\": []}}");
    put("tj_vocab", "tokenizer.json", t, strlen(t), tp, sizeof tp);
    expect_refused(tp, G2F_ERR_FORMAT, tp, "model.vocab: not a JSON object of tokens and ids", __LINE__);
    free(t);
    free(v);
}

static void files_should_be_found_by_folder_or_by_name(void) {
    char p[512], q[512];
    char *v = bpe_byte_vocab(BASE_EXTRA, -1);
    /* only one file of a pair: the missing one is named */
    put("only_vocab", "vocab.json", v, strlen(v), p, sizeof p);
    snprintf(q, sizeof q, "%s/only_vocab", dir);
    expect_refused(q, G2F_ERR_IO, "vocab.json", "vocab.json needs merges.txt beside it", __LINE__);
    expect_refused(p, G2F_ERR_IO, "vocab.json", "needs merges.txt beside it", __LINE__);
    put("only_bpe", "vocab.bpe", BASE_MERGES, strlen(BASE_MERGES), p, sizeof p);
    expect_refused(p, G2F_ERR_IO, "vocab.bpe", "vocab.bpe needs encoder.json beside it", __LINE__);
    snprintf(q, sizeof q, "%s/only_bpe", dir);
    expect_refused(q, G2F_ERR_IO, "vocab.bpe", "needs encoder.json", __LINE__);
    snprintf(q, sizeof q, "%s/empty", dir);
    mkdir(q, 0700);
    expect_refused(q, G2F_ERR_IO, q, "no tokenizer files", __LINE__);
    put("other", "vocab.txt", v, strlen(v), p, sizeof p);
    expect_refused(p, G2F_ERR_USAGE, p, "not a tokenizer file", __LINE__);
    snprintf(q, sizeof q, "%s/missing/encoder.json", dir);
    expect_refused(q, G2F_ERR_IO, q, "cannot open", __LINE__);
    /* a FIFO in a file's place is refused by name, never opened (it would block) */
    snprintf(q, sizeof q, "%s/fifo", dir);
    mkdir(q, 0700);
    snprintf(p, sizeof p, "%s/fifo/tokenizer.json", dir);
    CHECK(mkfifo(p, 0600) == 0);
    alarm(20);
    expect_refused(q, G2F_ERR_IO, p, "FIFO", __LINE__);
    alarm(0);
    /* a folder with every file: tokenizer.json first, then vocab.json + merges.txt */
    put("all", "vocab.json", v, strlen(v), p, sizeof p);
    put("all", "merges.txt", BASE_MERGES, strlen(BASE_MERGES), p, sizeof p);
    put("all", "encoder.json", "{}", 2, p, sizeof p); /* never read */
    put("all", "vocab.bpe", "", 0, p, sizeof p);
    snprintf(q, sizeof q, "%s/all", dir);
    g2f_bpe *b = NULL;
    g2f_error err = {0};
    CHECK(g2f_bpe_open(q, &b, &err) == G2F_OK && b && g2f_bpe_get_kind(b) == G2F_BPE_HF_FILES);
    if (b) CHECK(g2f_bpe_vocab_size(b) == 258 && g2f_bpe_merge_count(b) == 2);
    g2f_bpe_close(b);
    size_t cap = strlen(v) + 512;
    char *t = malloc(cap);
    snprintf(t, cap, "{" PRE "\"model\": {\"vocab\": %s, \"merges\": [[\"a\", \"b\"]]}}", v);
    put("all", "tokenizer.json", t, strlen(t), p, sizeof p);
    CHECK(g2f_bpe_open(q, &b, &err) == G2F_OK && b && g2f_bpe_get_kind(b) == G2F_BPE_HF_TOKENIZER);
    if (b) CHECK(g2f_bpe_merge_count(b) == 1 && g2f_bpe_merges_path(b) == NULL);
    if (b) CHECK_CONTAINS(g2f_bpe_vocab_path(b), "all/tokenizer.json");
    g2f_bpe_close(b);
    snprintf(q, sizeof q, "%s/all/merges.txt", dir); /* a file names its own pair */
    CHECK(g2f_bpe_open(q, &b, &err) == G2F_OK && b && g2f_bpe_get_kind(b) == G2F_BPE_HF_FILES);
    g2f_bpe_close(b);
    free(t);
    free(v);
}

static void openai_files_should_hold_gpt2s_vocabulary(void) {
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer/openai/vocab.bpe", fixtures);
    g2f_bpe *b = NULL;
    g2f_error err = {0};
    CHECK(g2f_bpe_open(p, &b, &err) == G2F_OK);
    if (!b) return;
    CHECK(g2f_bpe_get_kind(b) == G2F_BPE_OPENAI && g2f_bpe_vocab_size(b) == 50257 && g2f_bpe_merge_count(b) == 50000);
    CHECK_CONTAINS(g2f_bpe_vocab_path(b), "openai/encoder.json");
    CHECK_CONTAINS(g2f_bpe_merges_path(b), "openai/vocab.bpe");
    uint32_t res = 0, sp = g2f_bpe_byte_token(b, ' '), t = g2f_bpe_byte_token(b, 't');
    CHECK(sp == 220 && t == 83);
    CHECK(g2f_bpe_merge_rank(b, sp, t, &res) == 0 && res == 256); /* "Ġ t", the first merge */
    CHECK(g2f_bpe_merge_rank(b, t, sp, &res) == G2F_BPE_NO_MERGE);
    size_t len;
    const unsigned char *tok = g2f_bpe_token(b, 256, &len);
    CHECK(tok && len == 2 && memcmp(tok, " t", 2) == 0);
    CHECK(g2f_bpe_token(b, 50257, &len) == NULL && len == 0);
    g2f_bpe_close(b);
    g2f_bpe_close(NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    if (make_tmpdir(dir, sizeof dir, "bpe") != 0) return 1;
    RUN(vocabulary_checks_should_each_refuse_their_file);
    RUN(merges_checks_should_each_refuse_their_file);
    RUN(tokenizer_json_checks_should_each_refuse_their_file);
    RUN(files_should_be_found_by_folder_or_by_name);
    RUN(openai_files_should_hold_gpt2s_vocabulary);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
