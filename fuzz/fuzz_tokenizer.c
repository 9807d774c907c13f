/* Fuzz target: encoding (g2f_tokenizer_encode) of any bytes with GPT-2's
 * vocabulary (fixtures/tokenizer/openai, opened once): every id is in the
 * vocabulary, the ids decode to the input with its invalid UTF-8 replaced
 * (g2f_utf8_replace), and the replacements are counted as that does. */
#include "fuzz_util.h"
#include "g2f_text.h"
#include "g2f_tokenizer.h"

int g2f_fuzz_tokenizer(const uint8_t *data, size_t size) {
    static g2f_tokenizer *tok;
    g2f_error err = {0};
    if (!tok) {
        char p[1024];
        snprintf(p, sizeof p, "%s/tokenizer/openai", fuzz_fixtures_dir());
        if (g2f_tokenizer_open(p, &tok, &err) != G2F_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s (set G2F_FIXTURES)\n", err.msg);
            abort();
        }
    }
    g2f_tokens t;
    g2f_status s = g2f_tokenizer_encode(tok, data, size, &t, &err);
    fuzz_check_message(s, &err);
    if (s != G2F_OK) return 0;
    size_t replaced, n = g2f_utf8_replace(data, size, NULL, &replaced);
    unsigned char *want = malloc(n + 1), *got = NULL;
    size_t len = 0;
    if (!want) abort();
    g2f_utf8_replace(data, size, want, NULL);
    if (t.replaced != replaced || t.count > n) abort();
    if (g2f_tokenizer_decode(tok, t.ids, t.count, &got, &len, &err) != G2F_OK) abort(); /* an id out of range */
    if (len != n || (n && memcmp(got, want, n) != 0)) abort();
    free(got);
    free(want);
    g2f_tokens_free(&t);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_tokenizer(data, size); }
#endif
