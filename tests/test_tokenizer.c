/* g2f_tokenizer against its references: the token ids of every case of
 * fixtures/tokenizer/vectors.tsv (gpt-3-encoder on OpenAI's files, \s as
 * encoder.py reads it; scripts/make_tokenizer_vectors.js), the U+FFFD
 * replacement count and text, decode(encode(text)) giving the text back;
 * the same ids from every file format (the small HF vocabulary as vocab.json
 * + merges.txt and as both kinds of tokenizer.json; OpenAI's files rewritten
 * as HF's by this test); encoder.py's merge order on a vocabulary whose
 * ranks are not monotonic; decode's errors. argv[1] is the fixtures folder. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe_files.h"
#include "check.h"
#include "g2f_tokenizer.h"
#include "test_util.h"

static const char *fixtures = "fixtures";

/* ---- the vectors ---------------------------------------------------------- */

typedef struct vcase {
    char name[64];
    unsigned char *in, *text; /* text: what in decodes to (U+FFFD for invalid UTF-8) */
    size_t n_in, n_text, replaced;
    int64_t *ids, *js; /* js: gpt-3-encoder's own ids where they differ (NULL: they do not) */
    size_t n_ids, n_js;
} vcase;

typedef struct vset {
    vcase *c;
    size_t n;
} vset;

static unsigned char *unhex(const char *h, size_t *n) {
    size_t len = strlen(h);
    unsigned char *b = malloc(len / 2 + 1);
    if (!b) abort();
    for (size_t i = 0; i + 1 < len; i += 2) {
        unsigned v;
        if (sscanf(h + i, "%2x", &v) != 1) abort();
        b[i / 2] = (unsigned char)v;
    }
    *n = len / 2;
    return b;
}

static int64_t *parse_ids(const char *s, size_t *n) {
    size_t cap = strlen(s) / 2 + 1, k = 0;
    int64_t *ids = malloc(cap * sizeof *ids);
    if (!ids) abort();
    for (char *end; *s; s = end) {
        ids[k++] = strtoll(s, &end, 10);
        if (end == s) abort();
    }
    *n = k;
    return ids;
}

/* Reads a vectors file: the full form (name, in, text, replaced, ids[, js])
 * or the small one (name, ids). */
static vset read_vectors(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer/%s", fixtures, file);
    FILE *fp = fopen(path, "r");
    vset v = {NULL, 0};
    CHECK(fp != NULL);
    if (!fp) return v;
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, fp) > 0) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = '\0';
        char *col[6] = {0};
        size_t nc = 0;
        for (char *p = line; p && nc < 6; nc++) {
            col[nc] = p;
            if ((p = strchr(p, '\t')) != NULL) *p++ = '\0';
        }
        if (v.n == cap) v.c = realloc(v.c, (cap = cap ? 2 * cap : 1024) * sizeof *v.c);
        vcase *c = &v.c[v.n++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", col[0] ? col[0] : "");
        if (nc == 2) {
            c->ids = parse_ids(col[1], &c->n_ids);
            continue;
        }
        CHECK(nc >= 5);
        c->in = unhex(col[1], &c->n_in);
        c->text = strcmp(col[2], "=") == 0 ? NULL : unhex(col[2], &c->n_text);
        if (!c->text) c->n_text = c->n_in;
        c->replaced = strtoul(col[3], NULL, 10);
        c->ids = parse_ids(col[4], &c->n_ids);
        if (nc == 6) c->js = parse_ids(col[5], &c->n_js);
    }
    free(line);
    fclose(fp);
    return v;
}

static void free_vectors(vset *v) {
    for (size_t i = 0; i < v->n; i++) {
        free(v->c[i].in);
        free(v->c[i].text);
        free(v->c[i].ids);
        free(v->c[i].js);
    }
    free(v->c);
}

static vset full, small;

static g2f_tokenizer *open_tok(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer/%s", fixtures, rel);
    g2f_tokenizer *t = NULL;
    g2f_error err = {0};
    if (g2f_tokenizer_open(path, &t, &err) != G2F_OK) {
        fprintf(stderr, "open %s: %s\n", path, err.msg);
        check_failures++;
    }
    return t;
}

static int same_ids(const int64_t *a, size_t na, const int64_t *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

/* Encodes every case of v (the inputs from full) with t; returns the
 * number of cases whose ids differ from want's. */
static size_t encode_all(const g2f_tokenizer *t, const vset *want, const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < full.n; i++) {
        g2f_tokens k;
        g2f_error err = {0};
        CHECK(g2f_tokenizer_encode(t, full.c[i].in, full.c[i].n_in, &k, &err) == G2F_OK);
        const vcase *w = &want->c[i];
        if (strcmp(w->name, full.c[i].name) != 0 || !same_ids(k.ids, k.count, w->ids, w->n_ids)) {
            if (bad++ < 5) fprintf(stderr, "%s: %s: %zu ids, want %zu\n", what, full.c[i].name, k.count, w->n_ids);
        }
        g2f_tokens_free(&k);
    }
    return bad;
}

/* ---- the cases ------------------------------------------------------------- */

static void tokenizer_should_give_gpt3_encoders_ids_on_every_case(void) {
    g2f_tokenizer *t = open_tok("openai");
    if (!t) return;
    CHECK(full.n >= 700); /* a verdict on nothing compared is no verdict */
    size_t bad = 0, replaced_cases = 0, js_cases = 0;
    for (size_t i = 0; i < full.n; i++) {
        const vcase *c = &full.c[i];
        g2f_tokens k;
        g2f_error err = {0};
        CHECK(g2f_tokenizer_encode(t, c->in, c->n_in, &k, &err) == G2F_OK);
        int ok = same_ids(k.ids, k.count, c->ids, c->n_ids) && k.replaced == c->replaced;
        if (!ok && bad++ < 10)
            fprintf(stderr, "%s: %zu ids (%zu replaced), want %zu (%zu replaced)\n", c->name, k.count, k.replaced,
                    c->n_ids, c->replaced);
        /* where gpt-3-encoder's JavaScript \s differs from encoder.py's, the ids follow encoder.py */
        if (c->js) {
            js_cases++;
            CHECK(!same_ids(k.ids, k.count, c->js, c->n_js));
        }
        replaced_cases += c->replaced > 0;
        g2f_tokens_free(&k);
    }
    CHECK(bad == 0);
    CHECK(replaced_cases >= 100 && js_cases >= 1);
    fprintf(stderr, "%zu cases, %zu with invalid UTF-8, %zu where gpt-3-encoder's \\s differs: %zu differ\n", full.n,
            replaced_cases, js_cases, bad);
    g2f_tokenizer_close(t);
}

static void decode_should_give_back_the_text_of_every_case(void) {
    g2f_tokenizer *t = open_tok("openai");
    if (!t) return;
    size_t bad = 0;
    for (size_t i = 0; i < full.n; i++) {
        const vcase *c = &full.c[i];
        unsigned char *b;
        size_t n;
        g2f_error err = {0};
        CHECK(g2f_tokenizer_decode(t, c->ids, c->n_ids, &b, &n, &err) == G2F_OK);
        const unsigned char *want = c->text ? c->text : c->in;
        if (!b || n != c->n_text || memcmp(b, want, n) != 0) {
            if (bad++ < 5) fprintf(stderr, "%s: decoded %zu bytes, want %zu\n", c->name, n, c->n_text);
        }
        free(b);
    }
    CHECK(bad == 0);
    g2f_tokenizer_close(t);
}

static void small_vocabulary_should_give_the_same_ids_from_each_file_format(void) {
    static const char *const paths[] = {"small_hf", "small_hf/vocab.json", "small_hf/merges.txt", "small_json",
                                        "small_json/tokenizer.json", "small_pairs", "small_pairs/tokenizer.json"};
    CHECK(small.n == full.n);
    for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
        g2f_tokenizer *t = open_tok(paths[p]);
        if (!t) continue;
        CHECK(g2f_tokenizer_vocab_size(t) == 2257 && g2f_tokenizer_get_info(t)->merges == 2000);
        CHECK(encode_all(t, &small, paths[p]) == 0);
        g2f_tokenizer_close(t);
    }
}

/* OpenAI's two files as HF's (vocab.json printed by cJSON: characters as
 * they are, where encoder.json has \u escapes) and as tokenizer.json with
 * both forms of merges: every case gives the same ids. */
static void openai_files_written_as_hf_files_should_give_the_same_ids(void) {
    char dir[256], src[1024], path[512];
    if (make_tmpdir(dir, sizeof dir, "tokhf") != 0) return;
    snprintf(src, sizeof src, "%s/tokenizer/openai/encoder.json", fixtures);
    FILE *fp = fopen(src, "rb");
    char *text = malloc(2 << 20);
    size_t n = fp ? fread(text, 1, (2 << 20) - 1, fp) : 0;
    if (fp) fclose(fp);
    text[n] = '\0';
    cJSON *vocab = cJSON_Parse(text);
    snprintf(src, sizeof src, "%s/tokenizer/openai/vocab.bpe", fixtures);
    fp = fopen(src, "rb");
    n = fp ? fread(text, 1, (2 << 20) - 1, fp) : 0;
    if (fp) fclose(fp);
    text[n] = '\0';
    CHECK(vocab != NULL && n > 0);
    char *vj = cJSON_PrintUnformatted(vocab);
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    CHECK(vj && write_bytes(path, vj, strlen(vj)) == 0);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    CHECK(write_bytes(path, text, n) == 0);
    for (int pairs = 0; pairs < 2; pairs++) {
        cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model"), *m;
        cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
        cJSON_AddStringToObject(pre, "type", "ByteLevel");
        cJSON_AddFalseToObject(pre, "add_prefix_space");
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddItemToObject(model, "vocab", cJSON_Duplicate(vocab, 1));
        cJSON_AddItemToObject(model, "merges", m = cJSON_CreateArray());
        for (char *line = strchr(text, '\n') + 1, *eol; (eol = strchr(line, '\n')) != NULL; line = eol + 1) {
            *eol = '\0';
            char *sp = strchr(line, ' ');
            cJSON *e = cJSON_CreateString(line);
            if (pairs && sp) {
                *sp = '\0';
                cJSON_Delete(e);
                e = cJSON_CreateArray();
                cJSON_AddItemToArray(e, cJSON_CreateString(line));
                cJSON_AddItemToArray(e, cJSON_CreateString(sp + 1));
                *sp = ' ';
            }
            cJSON_AddItemToArray(m, e);
            *eol = '\n';
        }
        char *tj = cJSON_PrintUnformatted(root);
        snprintf(path, sizeof path, "%s/%s", dir, pairs ? "pairs" : "strings");
        CHECK(mkdir(path, 0700) == 0);
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir, pairs ? "pairs" : "strings");
        CHECK(tj && write_bytes(path, tj, strlen(tj)) == 0);
        free(tj);
        cJSON_Delete(root);
    }
    free(vj);
    cJSON_Delete(vocab);
    free(text);
    static const char *const forms[] = {"", "/vocab.json", "/strings/tokenizer.json", "/pairs"};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        snprintf(path, sizeof path, "%s%s", dir, forms[f]);
        g2f_tokenizer *t = NULL;
        g2f_error err = {0};
        CHECK(g2f_tokenizer_open(path, &t, &err) == G2F_OK);
        if (!t) continue;
        CHECK(encode_all(t, &full, path) == 0);
        g2f_tokenizer_close(t);
    }
    remove_tmpdir(dir);
}

/* A folder with vocab.json = the 256 bytes + extra tokens (ids 256 ...) and
 * merges.txt = the merges given, one "A B" per entry. */
static int write_vocab(const char *dir, const char *const *extra, size_t n_extra, const char *const *merges,
                       size_t n_merges) {
    char path[512], more[1024] = "", *m = malloc(4096);
    size_t len = 0;
    for (size_t i = 0; i < n_extra; i++)
        len += (size_t)snprintf(more + len, sizeof more - len, ", \"%s\": %zu", extra[i], 256 + i);
    char *j = bpe_byte_vocab(more, -1);
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    int rc = write_bytes(path, j, strlen(j));
    len = (size_t)snprintf(m, 4096, "#version: 0.2\n");
    for (size_t i = 0; i < n_merges; i++) len += (size_t)snprintf(m + len, 4096 - len, "%s\n", merges[i]);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    rc |= write_bytes(path, m, len);
    free(j);
    free(m);
    return rc;
}

static void encode_case(const g2f_tokenizer *t, const char *text, const int64_t *want, size_t n_want) {
    g2f_tokens k;
    g2f_error err = {0};
    CHECK(g2f_tokenizer_encode(t, text, strlen(text), &k, &err) == G2F_OK);
    if (!same_ids(k.ids, k.count, want, n_want)) {
        fprintf(stderr, "\"%s\": %zu ids:", text, k.count);
        for (size_t i = 0; i < k.count; i++) fprintf(stderr, " %lld", (long long)k.ids[i]);
        fprintf(stderr, "\n");
        check_failures++;
    }
    g2f_tokens_free(&k);
}

/* encoder.py merges every occurrence of the best pair before it looks at
 * the pairs that made: with "aa a" ranked before "a a", "aaaa" is aa aa
 * (a heap that took the new pair at once would give aaa a). */
static void bpe_should_finish_a_pass_before_pairs_it_made(void) {
    char dir[256];
    if (make_tmpdir(dir, sizeof dir, "tokpass") != 0) return;
    static const char *const extra[] = {"aa", "aaa"}, *const merges[] = {"aa a", "a a"};
    CHECK(write_vocab(dir, extra, 2, merges, 2) == 0);
    g2f_tokenizer *t = NULL;
    g2f_error err = {0};
    CHECK(g2f_tokenizer_open(dir, &t, &err) == G2F_OK);
    if (t) {
        const int64_t aa = 256, aaa = 257, a = 'a'; /* write_vocab gives byte b the id b */
        encode_case(t, "aaaa", (int64_t[]){aa, aa}, 2);
        encode_case(t, "aaa", (int64_t[]){aaa}, 1);
        encode_case(t, "aaaaa", (int64_t[]){aa, aaa}, 2); /* pass 1: aa aa a; then aa+a at the end */
        encode_case(t, "a", (int64_t[]){a}, 1);
        g2f_tokenizer_close(t);
    }
    remove_tmpdir(dir);
}

static void decode_should_refuse_an_id_outside_the_vocabulary(void) {
    g2f_tokenizer *t = open_tok("openai");
    if (!t) return;
    unsigned char *b = (unsigned char *)"x";
    size_t n = 9, len;
    g2f_error err = {0};
    CHECK(g2f_tokenizer_decode(t, (int64_t[]){15496, 50257}, 2, &b, &n, &err) == G2F_ERR_USAGE);
    CHECK(b == NULL && n == 0);
    CHECK_CONTAINS(err.msg, "token id 50257 at position 1 is outside the vocabulary [0, 50257)");
    CHECK(g2f_tokenizer_decode(t, (int64_t[]){-1}, 1, &b, &n, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "token id -1 at position 0");
    CHECK(g2f_tokenizer_decode(t, NULL, 0, &b, &n, &err) == G2F_OK && b && n == 0);
    free(b);
    const unsigned char *tok = g2f_tokenizer_token_bytes(t, 50256, &len);
    CHECK(tok && len == 13 && memcmp(tok, "<|endoftext|>", 13) == 0);
    tok = g2f_tokenizer_token_bytes(t, 262, &len);
    CHECK(tok && len == 4 && memcmp(tok, " the", 4) == 0);
    CHECK(g2f_tokenizer_token_bytes(t, 50257, &len) == NULL && len == 0);
    CHECK(g2f_tokenizer_token_bytes(t, -1, &len) == NULL && len == 0);
    const g2f_tokenizer_info *in = g2f_tokenizer_get_info(t);
    CHECK(in->vocab_size == 50257 && in->merges == 50000 && strcmp(in->format, "encoder.json + vocab.bpe") == 0);
    CHECK_CONTAINS(in->vocab_path, "encoder.json");
    CHECK_CONTAINS(in->merges_path, "vocab.bpe");
    g2f_tokenizer_close(t);
}

static void encode_should_take_empty_and_null_text(void) {
    g2f_tokenizer *t = open_tok("openai");
    if (!t) return;
    g2f_tokens k = {(int64_t *)&k, 7, 7};
    g2f_error err = {0};
    CHECK(g2f_tokenizer_encode(t, "", 0, &k, &err) == G2F_OK && k.count == 0 && k.ids == NULL && k.replaced == 0);
    CHECK(g2f_tokenizer_encode(t, NULL, 0, &k, &err) == G2F_OK && k.count == 0);
    CHECK(g2f_tokenizer_encode(t, NULL, 3, &k, &err) == G2F_ERR_USAGE && k.count == 0 && k.ids == NULL);
    g2f_tokens_free(&k);
    g2f_tokens_free(NULL);
    g2f_tokenizer_close(NULL);
    g2f_tokenizer_close(t);
}

/* A megabyte-long word is one piece: its BPE is O(k log k), and the ids
 * decode to the word. */
static void encode_should_take_a_megabyte_long_piece(void) {
    g2f_tokenizer *t = open_tok("openai");
    if (!t) return;
    size_t n = 1 << 20;
    char *s = malloc(n);
    uint64_t r = 1;
    for (size_t i = 0; i < n; i++) s[i] = (char)('a' + (int)((rnd_unit(&r) + 1.0f) * 13.0f) % 26);
    g2f_tokens k;
    g2f_error err = {0};
    CHECK(g2f_tokenizer_encode(t, s, n, &k, &err) == G2F_OK);
    unsigned char *b = NULL;
    size_t len = 0;
    CHECK(k.count > n / 4 && k.count < n); /* random letters: about 1.7 per token */
    CHECK(g2f_tokenizer_decode(t, k.ids, k.count, &b, &len, &err) == G2F_OK && len == n && memcmp(b, s, n) == 0);
    free(b);
    g2f_tokens_free(&k);
    free(s);
    g2f_tokenizer_close(t);
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    full = read_vectors("vectors.tsv");
    small = read_vectors("small_vectors.tsv");
    RUN(tokenizer_should_give_gpt3_encoders_ids_on_every_case);
    RUN(decode_should_give_back_the_text_of_every_case);
    RUN(small_vocabulary_should_give_the_same_ids_from_each_file_format);
    RUN(openai_files_written_as_hf_files_should_give_the_same_ids);
    RUN(bpe_should_finish_a_pass_before_pairs_it_made);
    RUN(decode_should_refuse_an_id_outside_the_vocabulary);
    RUN(encode_should_take_empty_and_null_text);
    RUN(encode_should_take_a_megabyte_long_piece);
    free_vectors(&full);
    free_vectors(&small);
    CHECK_EXIT();
}
