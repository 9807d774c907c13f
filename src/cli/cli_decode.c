/* cli_decode: see cli_decode.h. */
#include "cli_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_msg.h"
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
