/* Fuzz target: the tokenizer's file readers (formats/g2f_bpe.h), one input
 * read three ways: as encoder.json / vocab.json (then the small fixture
 * vocabulary's merges.txt read against it), as tokenizer.json, and as
 * vocab.bpe / merges.txt against the small vocabulary (read once from
 * fixtures/tokenizer/small_hf/). Whatever is accepted must hold what the
 * header promises: every byte a token of its own, tokens of 1 to
 * G2F_BPE_MAX_TOKEN_BYTES bytes, merges that join two tokens into a third. */
#include "fuzz_util.h"
#include "g2f_bpe.h"

static char *fuzz_slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    char *b = fp ? malloc(1 << 20) : NULL;
    *n = b ? fread(b, 1, 1 << 20, fp) : 0;
    if (fp) fclose(fp);
    if (!b || *n == 0) {
        fprintf(stderr, "fuzz_bpe: cannot read %s (set G2F_FIXTURES)\n", path);
        abort();
    }
    return b;
}

/* The promises of an accepted vocabulary (and its merges, if any). */
static void check_vocab(const g2f_bpe *v) {
    size_t n = g2f_bpe_vocab_size(v), len;
    if (n < 256 || n > G2F_BPE_MAX_VOCAB) abort();
    for (unsigned b = 0; b < 256; b++) {
        const unsigned char *t = g2f_bpe_token(v, g2f_bpe_byte_token(v, (unsigned char)b), &len);
        if (!t || len != 1 || t[0] != b) abort();
    }
    for (uint32_t id = 0; id < n; id++)
        if (!g2f_bpe_token(v, id, &len) || len == 0 || len > G2F_BPE_MAX_TOKEN_BYTES) abort();
    for (uint32_t id = 0; id + 1 < n && id < 64; id++) { /* a merge's result is its parts joined */
        uint32_t result, r = g2f_bpe_merge_rank(v, id, id + 1, &result);
        size_t la, lb, lr;
        g2f_bpe_token(v, id, &la);
        g2f_bpe_token(v, id + 1, &lb);
        if (r != G2F_BPE_NO_MERGE && (r >= g2f_bpe_merge_count(v) || !g2f_bpe_token(v, result, &lr) || lr != la + lb))
            abort();
    }
}

int g2f_fuzz_bpe(const uint8_t *data, size_t size) {
    static g2f_bpe *small;
    static char *small_merges;
    static size_t small_merges_len;
    g2f_error err = {0};
    if (!small) {
        char p[1024];
        size_t n;
        snprintf(p, sizeof p, "%s/tokenizer/small_hf/vocab.json", fuzz_fixtures_dir());
        char *text = fuzz_slurp(p, &n);
        if (g2f_bpe_parse_vocab(text, n, p, &small, &err) != G2F_OK) abort();
        free(text);
        snprintf(p, sizeof p, "%s/tokenizer/small_hf/merges.txt", fuzz_fixtures_dir());
        small_merges = fuzz_slurp(p, &small_merges_len);
    }
    const char *text = (const char *)data;
    g2f_bpe *v = NULL;
    g2f_status s = g2f_bpe_parse_vocab(text, size, "fuzz.json", &v, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) {
        s = g2f_bpe_parse_merges(v, small_merges, small_merges_len, "merges.txt", &err);
        fuzz_check_message(s, &err);
        check_vocab(v);
    }
    g2f_bpe_close(v);
    v = NULL;
    s = g2f_bpe_parse_tokenizer_json(text, size, "tokenizer.json", &v, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) check_vocab(v);
    g2f_bpe_close(v);
    s = g2f_bpe_parse_merges(small, text, size, "fuzz.txt", &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) check_vocab(small);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_bpe(data, size); }
#endif
