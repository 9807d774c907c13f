/* The tokenizer's file readers (formats/g2f_bpe.h): every bound of the
 * checklist and of SECURITY.md's Limits table, at the exact limit (accepted,
 * or let through to a later check) and one past it (refused with the
 * check's own message): file bytes, token count, token bytes, merge count
 * (merges.txt and tokenizer.json), ids at the vocabulary's end, the
 * merges.txt frame, and every edge of the byte-level alphabet. Inputs are
 * built here and parsed from allocations of exactly their size. */
#include "bounds.h"
#include "bpe_files.h"
#include "g2f_bpe.h"
#include "test_util.h"

/* The 256 byte tokens (id = byte) as JSON object entries, no braces. */
static void b_byte_tokens(bytes *b) {
    char *j = bpe_byte_vocab("", -1);
    b_bytes(b, j + 1, strlen(j) - 2);
    free(j);
}

static g2f_status parse_vocab(const bytes *b, g2f_bpe **out, g2f_error *err) {
    unsigned char *q = b_exact(b);
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_bpe_parse_vocab((const char *)q, b->n, "vocab.json", out, err);
    free(q);
    return st;
}

static g2f_status vocab_st(const bytes *b, g2f_error *err) {
    g2f_bpe *v = NULL;
    g2f_status st = parse_vocab(b, &v, err);
    g2f_bpe_close(v);
    return st;
}

static g2f_status merges_st(g2f_bpe *v, const bytes *b, g2f_error *err) {
    unsigned char *q = b_exact(b);
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_bpe_parse_merges(v, (const char *)q, b->n, "merges.txt", err);
    free(q);
    return st;
}

/* The byte tokens plus one token of n copies of the character c (1 or 2
 * UTF-8 bytes). */
static g2f_status long_token_st(const char *c, size_t n, g2f_error *err) {
    bytes b = {0};
    b_str(&b, "{");
    b_byte_tokens(&b);
    b_str(&b, ", \"");
    for (size_t i = 0; i < n; i++) b_str(&b, c);
    b_str(&b, "\": 256}");
    g2f_status st = vocab_st(&b, err);
    b_free(&b);
    return st;
}

static void token_should_take_up_to_1024_bytes(void) {
    g2f_error err;
    /* checklist 5: at most G2F_BPE_MAX_TOKEN_BYTES bytes once mapped back */
    ACCEPTED(long_token_st("a", G2F_BPE_MAX_TOKEN_BYTES, &err), err);
    REFUSED(long_token_st("a", G2F_BPE_MAX_TOKEN_BYTES + 1, &err), err, "it is longer than 1024 bytes");
    /* "\u0100" (byte 0x00) is two UTF-8 bytes and one token byte: the limit counts token bytes */
    ACCEPTED(long_token_st("\xc4\x80", G2F_BPE_MAX_TOKEN_BYTES, &err), err);
    REFUSED(long_token_st("\xc4\x80", G2F_BPE_MAX_TOKEN_BYTES + 1, &err), err, "longer than 1024 bytes");
}

static void ids_should_end_at_the_vocabulary_size(void) {
    g2f_error err;
    bytes b = {0};
    /* checklist 5: ids in [0, n) */
    b_str(&b, "{");
    b_byte_tokens(&b);
    b_str(&b, ", \"ab\": 256}");
    ACCEPTED(vocab_st(&b, &err), err);
    b.n -= 5;
    b_str(&b, "257}");
    REFUSED(vocab_st(&b, &err), err, "token \"ab\" has id 257, not an integer in [0, 257)");
    b.n -= 4;
    b_str(&b, "9007199254740993}"); /* 2^53 + 1 reads as 2^53 */
    REFUSED(vocab_st(&b, &err), err, "not an integer in [0, 257)");
    b_free(&b);
}

/* {"0000000": 0, "0000001": 0, ...}: n distinct tokens, all of id 0. */
static g2f_status many_tokens_st(size_t n, g2f_error *err) {
    bytes b = {0};
    b_reserve(&b, 14 * n + 2);
    b_str(&b, "{");
    for (size_t i = 0; i < n; i++) {
        char e[32];
        snprintf(e, sizeof e, "%s\"%07zx\":0", i ? "," : "", i);
        b_str(&b, e);
    }
    b_str(&b, "}");
    g2f_status st = vocab_st(&b, err);
    b_free(&b);
    return st;
}

static void vocabulary_should_take_up_to_2_to_the_20_tokens(void) {
    g2f_error err;
    /* checklist 4: at most G2F_BPE_MAX_VOCAB entries; at the limit the next check (ids) refuses these */
    PASSES_CHECK(many_tokens_st(G2F_BPE_MAX_VOCAB, &err), err, "more than", "both have id 0");
    REFUSED(many_tokens_st(G2F_BPE_MAX_VOCAB + 1, &err), err, "vocab.json: more than 1048576 tokens");
}

/* A vocabulary of the byte tokens (for the merges' tests). */
static g2f_bpe *byte_vocab(void) {
    bytes b = {0};
    g2f_error err;
    g2f_bpe *v = NULL;
    b_str(&b, "{");
    b_byte_tokens(&b);
    b_str(&b, ", \"ab\": 256}");
    CHECK(parse_vocab(&b, &v, &err) == G2F_OK);
    b_free(&b);
    return v;
}

/* merges.txt: "#version: 0.2" and n lines "a a" ("aa" is no token). */
static g2f_status many_merges_st(g2f_bpe *v, size_t n, g2f_error *err) {
    bytes b = {0};
    b_reserve(&b, 4 * n + 16);
    b_str(&b, "#version: 0.2\n");
    for (size_t i = 0; i < n; i++) b_str(&b, "a a\n");
    g2f_status st = merges_st(v, &b, err);
    b_free(&b);
    return st;
}

/* tokenizer.json with n merges "a a". */
static g2f_status many_json_merges_st(size_t n, g2f_error *err) {
    bytes b = {0};
    b_reserve(&b, 6 * n + 8192);
    b_str(&b, "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"vocab\": {");
    b_byte_tokens(&b);
    b_str(&b, "}, \"merges\": [");
    for (size_t i = 0; i < n; i++) b_str(&b, i ? ",\"a a\"" : "\"a a\"");
    b_str(&b, "]}}");
    unsigned char *q = b_exact(&b);
    g2f_bpe *v = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_bpe_parse_tokenizer_json((const char *)q, b.n, "tokenizer.json", &v, err);
    g2f_bpe_close(v);
    free(q);
    b_free(&b);
    return st;
}

static void merges_should_take_up_to_2_to_the_20(void) {
    g2f_bpe *v = byte_vocab();
    if (!v) return;
    g2f_error err;
    /* checklist 8: at most G2F_BPE_MAX_MERGES; at the limit the merges' own check refuses "a a" */
    PASSES_CHECK(many_merges_st(v, G2F_BPE_MAX_MERGES, &err), err, "more than", "line 2: \"a\" + \"a\" is not a token");
    REFUSED(many_merges_st(v, G2F_BPE_MAX_MERGES + 1, &err), err, "merges.txt: more than 1048576 merges");
    PASSES_CHECK(many_json_merges_st(G2F_BPE_MAX_MERGES, &err), err, "more than",
                 "model.merges[0]: \"a\" + \"a\" is not a token");
    REFUSED(many_json_merges_st(G2F_BPE_MAX_MERGES + 1, &err), err, "model.merges: more than 1048576 merges");
    g2f_bpe_close(v);
}

static void merges_frame_should_be_read_to_the_byte(void) {
    g2f_bpe *v = byte_vocab();
    if (!v) return;
    g2f_error err;
    bytes b = {0};
    /* checklist 7: line 1 starts with "#version" (8 bytes), the file ends with "\n" */
    b_str(&b, "#version\n");
    ACCEPTED(merges_st(v, &b, &err), err);
    CHECK(g2f_bpe_merge_count(v) == 0);
    b.n--;
    REFUSED(merges_st(v, &b, &err), err, "the last line does not end with a newline");
    b.n = 0;
    b_str(&b, "#versio\n");
    REFUSED(merges_st(v, &b, &err), err, "line 1 does not start with \"#version\"");
    b.n = 0;
    b_str(&b, "#version\na b\n");
    ACCEPTED(merges_st(v, &b, &err), err);
    CHECK(g2f_bpe_merge_count(v) == 1);
    b.n -= 2; /* "#version\na " */
    b_str(&b, "\n");
    REFUSED(merges_st(v, &b, &err), err, "line 2: \"\" is not a byte-level string: it is empty");
    CHECK(g2f_bpe_merge_count(v) == 0); /* a failed read keeps no merges */
    /* a part at the token limit, joined with one more byte: 1025 bytes, no token (and no overflow) */
    b.n = 0;
    b_str(&b, "#version\n");
    b_fill(&b, 'a', G2F_BPE_MAX_TOKEN_BYTES);
    b_str(&b, " a\n");
    REFUSED(merges_st(v, &b, &err), err, "is not a token of vocab.json");
    b.n = 9;
    b_fill(&b, 'a', G2F_BPE_MAX_TOKEN_BYTES + 1);
    b_str(&b, " a\n");
    REFUSED(merges_st(v, &b, &err), err, "it is longer than 1024 bytes");
    b_free(&b);
    g2f_bpe_close(v);
}

/* A file of exactly n bytes in folder d: the vocabulary (spaces) or the
 * merges ("#version" and a line of spaces), with a valid partner. */
static g2f_status sized_file_st(const char *d, const char *which, size_t n, g2f_error *err) {
    char vp[512], mp[512];
    snprintf(vp, sizeof vp, "%s/vocab.json", d);
    snprintf(mp, sizeof mp, "%s/merges.txt", d);
    bytes b = {0};
    b_reserve(&b, n);
    if (strcmp(which, "vocab.json") == 0) {
        b_fill(&b, ' ', n);
        CHECK(write_bytes(mp, "#version\n", 9) == 0);
        CHECK(write_bytes(vp, b.p, b.n) == 0);
    } else {
        b_str(&b, "#version\n");
        b_fill(&b, ' ', n - 10);
        b_str(&b, "\n");
        CHECK(write_bytes(mp, b.p, b.n) == 0);
        b.n = 0;
        b_str(&b, "{");
        b_byte_tokens(&b);
        b_str(&b, "}");
        CHECK(write_bytes(vp, b.p, b.n) == 0);
    }
    b_free(&b);
    g2f_bpe *v = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_bpe_open(d, &v, err);
    g2f_bpe_close(v);
    return st;
}

static void files_should_take_up_to_64_mib(void) {
    char d[256];
    if (fast_tmpdir(d, sizeof d, "bpe64") != 0) return;
    g2f_error err;
    /* checklist 1: at most G2F_BPE_MAX_FILE_BYTES, each file */
    PASSES_CHECK(sized_file_st(d, "vocab.json", G2F_BPE_MAX_FILE_BYTES, &err), err, "larger than", "not valid JSON");
    REFUSED(sized_file_st(d, "vocab.json", G2F_BPE_MAX_FILE_BYTES + 1, &err), err,
            "vocab.json: 67108865 bytes, larger than the 67108864-byte limit");
    PASSES_CHECK(sized_file_st(d, "merges.txt", G2F_BPE_MAX_FILE_BYTES, &err), err, "larger than", "line 2:");
    REFUSED(sized_file_st(d, "merges.txt", G2F_BPE_MAX_FILE_BYTES + 1, &err), err,
            "merges.txt: 67108865 bytes, larger than the 67108864-byte limit");
    remove_tmpdir(d);
}

static void alphabet_should_map_every_byte_at_its_edges(void) {
    /* bytes_to_unicode: printable 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF as themselves, the rest from U+0100 */
    static const struct { unsigned b, cp; } edge[] = {
        {0x00, 0x100}, {0x20, 0x120}, {0x21, 0x21}, {0x7E, 0x7E}, {0x7F, 0x121}, {0xA0, 0x142},
        {0xA1, 0xA1}, {0xAC, 0xAC}, {0xAD, 0x143}, {0xAE, 0xAE}, {0xFF, 0xFF}};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        CHECK(g2f_bpe_byte_char((unsigned char)edge[i].b) == edge[i].cp);
        CHECK(g2f_bpe_char_byte(edge[i].cp) == (int)edge[i].b);
    }
    static const uint32_t outside[] = {0x00, 0x20, 0x7F, 0xA0, 0xAD, 0x144, 0x1000, 0x10FFFF, 0x110000, UINT32_MAX};
    for (size_t i = 0; i < sizeof outside / sizeof *outside; i++) CHECK(g2f_bpe_char_byte(outside[i]) == -1);
    int seen[0x144] = {0};
    for (unsigned b = 0; b < 256; b++) {
        uint32_t cp = g2f_bpe_byte_char((unsigned char)b);
        CHECK(cp < 0x144 && !seen[cp] && g2f_bpe_char_byte(cp) == (int)b);
        if (cp < 0x144) seen[cp] = 1;
    }
}

int main(void) {
    RUN(token_should_take_up_to_1024_bytes);
    RUN(ids_should_end_at_the_vocabulary_size);
    RUN(vocabulary_should_take_up_to_2_to_the_20_tokens);
    RUN(merges_should_take_up_to_2_to_the_20);
    RUN(merges_frame_should_be_read_to_the_byte);
    RUN(files_should_take_up_to_64_mib);
    RUN(alphabet_should_map_every_byte_at_its_edges);
    CHECK_EXIT();
}
