/* cli_decode: see cli_decode.h. */
#include "cli_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_msg.h"
#include "g2f_genrun.h"
#include "g2f_text.h"

int cli_open_tokenizer(const char *cmd, const char *path, const char *checkpoint, const g2f_model *m, int need,
                       g2f_tokenizer **out) {
    g2f_error err = {0};
    *out = NULL;
    g2f_status st = path ? g2f_tokenizer_open(path, out, &err) : g2f_tokenizer_open_beside(checkpoint, out, &err);
    if (st != G2F_OK) return cli_bad("%s: %s", cmd, err.msg);
    if (!*out) {
        if (!need) return 0;
        return cli_bad("%s: --prompt: no tokenizer beside %s (tokenizer.json, vocab.json + merges.txt, or "
                       "encoder.json + vocab.bpe); give --tokenizer DIR|FILE", cmd, checkpoint);
    }
    const g2f_tokenizer_info *ti = g2f_tokenizer_get_info(*out);
    size_t V = g2f_model_get_info(m)->vocab;
    if (V && ti->vocab_size > V) {
        cli_bad("%s: the tokenizer %s holds %zu tokens but the checkpoint's vocabulary has %zu: it is not this "
                "model's tokenizer (give --tokenizer DIR|FILE)", cmd, ti->vocab_path, ti->vocab_size, V);
        g2f_tokenizer_close(*out);
        *out = NULL;
        return EXIT_BAD;
    }
    return 0;
}

int cli_prompt_ids(const char *cmd, const g2f_tokenizer *tok, const g2f_model *m, const char *text, int64_t **ids,
                   size_t *T) {
    g2f_error err = {0};
    g2f_tokens t = {0};
    *ids = NULL;
    *T = 0;
    if (g2f_tokenizer_encode(tok, text, strlen(text), &t, &err) != G2F_OK) return cli_bad("%s: --prompt: %s", cmd, err.msg);
    if (t.count == 0) {
        g2f_tokens_free(&t);
        return cli_bad("%s: --prompt: the text encodes to no tokens", cmd);
    }
    size_t V = g2f_model_get_info(m)->vocab;
    for (size_t i = 0; V && i < t.count; i++)
        if ((uint64_t)t.ids[i] >= V) {
            cli_bad("%s: --prompt: token %zu is id %lld, outside the checkpoint's vocabulary 0..%zu", cmd, i,
                    (long long)t.ids[i], V - 1);
            g2f_tokens_free(&t);
            return EXIT_BAD;
        }
    printf("prompt: %zu token%s:", t.count, t.count == 1 ? "" : "s");
    for (size_t i = 0; i < t.count && i < 64; i++) printf(" %lld", (long long)t.ids[i]);
    printf("%s%s\n", t.count > 64 ? " ..." : "", t.replaced ? " (invalid UTF-8 replaced by U+FFFD first)" : "");
    *ids = t.ids;
    *T = t.count;
    return 0;
}

/* "sequence 0: generated 5 tokens: 3 17 ..." and its text when tok is known. */
static void show_generated(const g2f_tokenizer *tok, size_t seq, const int64_t *ids, size_t N) {
    printf("sequence %zu: generated %zu token%s:", seq, N, N == 1 ? "" : "s");
    for (size_t i = 0; i < N && i < 64; i++) printf(" %lld", (long long)ids[i]);
    printf("%s\n", N > 64 ? " ..." : "");
    unsigned char *bytes = NULL;
    size_t len = 0;
    g2f_error err = {0};
    if (!tok || g2f_tokenizer_decode(tok, ids, N, &bytes, &len, &err) != G2F_OK) return;
    for (size_t i = 0; i < len; i++) /* shown as one line: a NUL ends no string early */
        if (!bytes[i]) bytes[i] = 0x01;
    char *shown = g2f_escape_dup((const char *)bytes);
    printf("sequence %zu: text: \"%s\"\n", seq, shown ? shown : "?");
    free(shown);
    free(bytes);
}

int cli_run_generate(const g2f_model *m, const char *checkpoint, const int64_t *ids, const uint64_t *lead,
                     size_t lead_ndim, size_t T0, const char *out, const g2f_run_params *p, size_t n_head,
                     unsigned save, const char *spec, const char *tok_path, int tl_names) {
    char *end;
    unsigned long long N = strtoull(spec, &end, 10);
    if (*spec < '0' || *spec > '9' || *end || N == 0 || N > (1u << 20))
        return cli_bad("run: --generate '%.40s': expected the number of tokens to generate, 1 to %u", spec, 1u << 20);
    if (tl_names) return cli_bad("run: --generate writes HF names (--names tl is for the forward of --ids)");
    g2f_tokenizer *tok = NULL;
    if (cli_open_tokenizer("run", tok_path, checkpoint, m, 0, &tok) != 0) return EXIT_BAD;
    g2f_error err = {0};
    char sha[65];
    g2f_run_params rp = *p;
    rp.checkpoint_sha256 = sha;
    g2f_genrun_params gp = {&rp, n_head, (size_t)N, save};
    g2f_genrun_result r = {0};
    int rc = 0;
    if (g2f_model_sha256(m, sha, &err) != G2F_OK ||
        g2f_run_generate(m, ids, lead, lead_ndim, T0, out, &gp, &r, &err) != G2F_OK) {
        rc = cli_bad("%s", err.msg);
    } else {
        char *shown = g2f_escape_dup(out);
        printf("wrote %s: %zu token%s generated greedily after each of %zu prompt%s of %zu tokens (one step a token, "
               "keys and values cached), %zu tensors, %s GELU, checkpoint sha256 %s\n", shown ? shown : "?", r.steps,
               r.steps == 1 ? "" : "s", r.n_seq, r.n_seq == 1 ? "" : "s", r.T0, r.tensors, g2f_gelu_name(p->gelu), sha);
        free(shown);
        for (size_t s = 0; s < r.n_seq; s++) show_generated(tok, s, r.generated + s * r.steps, r.steps);
    }
    g2f_genrun_result_free(&r);
    g2f_tokenizer_close(tok);
    return rc;
}
