/* g2f_bpe: byte-level BPE vocabularies; see g2f_bpe.h. Tokens are found by
 * sorting (g2f_names, n log n) while the merges are read; merges are found
 * by a hash table of (left, right) pairs, which is also how a pair given
 * twice is caught, and what the tokenizer asks once per candidate pair. */
#include "g2f_bpe.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_file.h"
#include "g2f_json.h"
#include "g2f_names.h"
#include "g2f_text.h"

typedef struct span {
    uint32_t start, len; /* a token's bytes: bytes[start, start + len) */
} span;

typedef struct merge {
    uint32_t left, right, result;
} merge;

struct g2f_bpe {
    g2f_bpe_kind kind;
    char *vocab_path, *merges_path;
    size_t n_tokens;
    unsigned char *bytes;  /* every token's bytes, back to back */
    span *tok;             /* (n_tokens) by id */
    g2f_name_ref *sorted;  /* (n_tokens) the tokens sorted by bytes, for lookups */
    uint32_t byte_id[256];
    size_t n_merges;
    merge *merges;         /* (n_merges) by rank */
    uint32_t *slots;       /* (n_slots, a power of two) merge ranks by pair hash, UINT32_MAX: empty */
    size_t n_slots;
};

/* ---- the byte-level alphabet --------------------------------------------- */

static int printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

uint32_t g2f_bpe_byte_char(unsigned char b) {
    if (printable(b)) return b;
    if (b <= 0x20) return 0x100u + b;              /* k = 0..32 */
    if (b <= 0xA0) return 0x100u + 33 + (b - 0x7F); /* k = 33..66 */
    return 0x143;                                   /* 0xAD, k = 67 */
}

int g2f_bpe_char_byte(uint32_t cp) {
    if (cp < 0x100) return printable(cp) ? (int)cp : -1;
    if (cp > 0x143) return -1;
    uint32_t k = cp - 0x100;
    return k <= 32 ? (int)k : k <= 66 ? (int)(0x7F + k - 33) : 0xAD;
}

/* Maps a byte-level spelling s[0, n) to bytes (out holds at least
 * G2F_BPE_MAX_TOKEN_BYTES). Returns its byte count, or 0 with why[] set. */
static size_t spelling_bytes(const char *s, size_t n, unsigned char *out, char *why, size_t why_cap) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    if (n == 0) return snprintf(why, why_cap, "it is empty"), 0;
    while (i < n) {
        size_t k = g2f_utf8_len(u + i); /* s is NUL-terminated further on: nothing past it is read */
        if (k == 0 || k > n - i) return snprintf(why, why_cap, "byte %zu is not valid UTF-8", i), 0;
        uint32_t cp = k == 1 ? u[i] : k == 2 ? (u[i] & 0x1Fu) << 6 | (u[i + 1] & 0x3Fu) : 0x110000;
        int b = g2f_bpe_char_byte(cp);
        if (b < 0) {
            if (k == 1 || k == 2) snprintf(why, why_cap, "U+%04X at byte %zu is not in GPT-2's byte-level alphabet", cp, i);
            else snprintf(why, why_cap, "the character at byte %zu is not in GPT-2's byte-level alphabet", i);
            return 0;
        }
        if (o == G2F_BPE_MAX_TOKEN_BYTES)
            return snprintf(why, why_cap, "it is longer than %u bytes", G2F_BPE_MAX_TOKEN_BYTES), 0;
        out[o++] = (unsigned char)b;
        i += k;
    }
    return o;
}

/* ---- handles --------------------------------------------------------------- */

static void drop_merges(g2f_bpe *v) {
    free(v->merges);
    free(v->slots);
    v->merges = NULL;
    v->slots = NULL;
    v->n_merges = v->n_slots = 0;
}

void g2f_bpe_close(g2f_bpe *v) {
    if (!v) return;
    drop_merges(v);
    free(v->vocab_path);
    free(v->merges_path);
    free(v->bytes);
    free(v->tok);
    free(v->sorted);
    free(v);
}

size_t g2f_bpe_vocab_size(const g2f_bpe *v) { return v->n_tokens; }
size_t g2f_bpe_merge_count(const g2f_bpe *v) { return v->n_merges; }
g2f_bpe_kind g2f_bpe_get_kind(const g2f_bpe *v) { return v->kind; }
const char *g2f_bpe_vocab_path(const g2f_bpe *v) { return v->vocab_path; }
const char *g2f_bpe_merges_path(const g2f_bpe *v) { return v->merges_path; }
uint32_t g2f_bpe_byte_token(const g2f_bpe *v, unsigned char b) { return v->byte_id[b]; }

const unsigned char *g2f_bpe_token(const g2f_bpe *v, uint32_t id, size_t *len) {
    if (id >= v->n_tokens) {
        *len = 0;
        return NULL;
    }
    *len = v->tok[id].len;
    return v->bytes + v->tok[id].start;
}

static size_t pair_slot(uint64_t left, uint64_t right, size_t mask) {
    return (size_t)(((left << 32 | right) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

uint32_t g2f_bpe_merge_rank(const g2f_bpe *v, uint32_t left, uint32_t right, uint32_t *result) {
    if (!v->n_slots) return G2F_BPE_NO_MERGE;
    for (size_t i = pair_slot(left, right, v->n_slots - 1);; i = (i + 1) & (v->n_slots - 1)) {
        uint32_t r = v->slots[i];
        if (r == UINT32_MAX) return G2F_BPE_NO_MERGE;
        if (v->merges[r].left == left && v->merges[r].right == right) {
            *result = v->merges[r].result;
            return r;
        }
    }
}

/* ---- JSON ------------------------------------------------------------------ */

/* Check 2: one JSON value and white space, no NUL (raw or escaped), no key
 * twice in an object. *out is the tree on success. */
static g2f_status json_read(const char *text, size_t len, const char *label, cJSON **out, g2f_error *err) {
    const char *end = NULL;
    *out = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: not valid JSON (at byte %zu)", label, at);
    }
    size_t at = (size_t)(end - text);
    while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) at++;
    g2f_status st = G2F_OK;
    size_t nul = g2f_json_find_nul(text, len);
    const cJSON *dup_obj = NULL;
    const char *dup_key = NULL;
    if (at < len)
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: bytes after the JSON value, from byte %zu", label, at);
    else if (nul < len)
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: a NUL character (raw or \\u0000) at byte %zu: cJSON would cut the string there",
                           label, nul);
    else if ((st = g2f_json_find_duplicate_key(root, &dup_obj, &dup_key, label, err)) == G2F_OK && dup_obj)
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: key \"%.80s\" appears twice in one object", label, dup_key);
    if (st != G2F_OK) cJSON_Delete(root);
    else *out = root;
    return st;
}

/* ---- the vocabulary ---------------------------------------------------------- */

/* Check 5 for one entry: its id (into *id) and its token's bytes (appended
 * at v->bytes + *used). seen[id] holds the entry that took id, plus one. */
static g2f_status vocab_entry(g2f_bpe *v, const cJSON *e, const char *where, size_t index, uint32_t *seen,
                              size_t *used, g2f_error *err) {
    uint64_t id;
    const char *key = e->string;
    if (!g2f_json_u64(e, &id) || id >= v->n_tokens) {
        if (cJSON_IsNumber(e))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: token \"%.80s\" has id %.17g, not an integer in [0, %zu)",
                                 where, key, e->valuedouble, v->n_tokens);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: token \"%.80s\" has a value that is not an integer id", where,
                             key);
    }
    if (seen[id])
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tokens \"%.80s\" and \"%.80s\" both have id %llu", where,
                             v->sorted[seen[id] - 1].s, key, (unsigned long long)id);
    seen[id] = (uint32_t)index + 1;
    v->sorted[index].s = key; /* the spelling, for the message above (index_tokens sets sorted anew) */
    char why[96];
    size_t n = spelling_bytes(key, strlen(key), v->bytes + *used, why, sizeof why);
    if (n == 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: token \"%.80s\" is not a byte-level string: %s", where, key,
                             why);
    v->tok[id].start = (uint32_t)*used;
    v->tok[id].len = (uint32_t)n;
    *used += n;
    return G2F_OK;
}

/* Check 6, then the sorted refs for lookups by bytes. */
static g2f_status index_tokens(g2f_bpe *v, const char *where, g2f_error *err) {
    for (size_t i = 0; i < v->n_tokens; i++)
        v->sorted[i] = (g2f_name_ref){(const char *)v->bytes + v->tok[i].start, v->tok[i].len, i};
    g2f_names_sort(v->sorted, v->n_tokens);
    for (unsigned b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        const g2f_name_ref *r = g2f_names_find(v->sorted, v->n_tokens, (const char *)&c, 1);
        if (!r) {
            uint32_t cp = g2f_bpe_byte_char(c);
            char sp[3] = {(char)(cp < 0x80 ? cp : 0xC0 | cp >> 6), cp < 0x80 ? 0 : (char)(0x80 | (cp & 0x3F)), 0};
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: no token for the byte 0x%02x (\"%s\" in the byte-level alphabet): BPE starts from "
                                 "all 256 bytes", where, b, sp);
        }
        v->byte_id[b] = (uint32_t)r->index;
    }
    return G2F_OK;
}

/* Checks 3-6 on a vocabulary object; where names it ("vocab.json" or
 * "tokenizer.json: model.vocab"). */
static g2f_status vocab_from_json(const cJSON *obj, const char *where, g2f_bpe *v, g2f_error *err) {
    if (!cJSON_IsObject(obj))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a JSON object of tokens and ids", where);
    size_t n = 0, total = 0;
    for (const cJSON *e = obj->child; e; e = e->next) {
        if (++n > G2F_BPE_MAX_VOCAB) break;
        total += strlen(e->string); /* at most the file's size: no overflow */
    }
    if (n > G2F_BPE_MAX_VOCAB)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: more than %zu tokens", where, G2F_BPE_MAX_VOCAB);
    v->n_tokens = n;
    uint32_t *seen = calloc(n ? n : 1, sizeof *seen);
    v->bytes = malloc(total ? total : 1);
    v->tok = g2f_alloc_array(n ? n : 1, sizeof *v->tok);
    v->sorted = g2f_alloc_array(n ? n : 1, sizeof *v->sorted);
    g2f_status st = G2F_OK;
    if (!seen || !v->bytes || !v->tok || !v->sorted)
        st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %zu tokens", where, n);
    size_t used = 0, i = 0;
    for (const cJSON *e = obj->child; st == G2F_OK && e; e = e->next, i++)
        st = vocab_entry(v, e, where, i, seen, &used, err);
    free(seen);
    return st == G2F_OK ? index_tokens(v, where, err) : st;
}

static g2f_bpe *bpe_new(g2f_bpe_kind kind, const char *vocab_label, g2f_error *err) {
    g2f_bpe *v = calloc(1, sizeof *v);
    if (v && !(v->vocab_path = g2f_strdup(vocab_label))) {
        free(v);
        v = NULL;
    }
    if (!v) g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", vocab_label);
    else v->kind = kind;
    return v;
}

g2f_status g2f_bpe_parse_vocab(const char *text, size_t len, const char *label, g2f_bpe **out, g2f_error *err) {
    *out = NULL;
    cJSON *root;
    g2f_status st = json_read(text, len, label, &root, err);
    if (st != G2F_OK) return st;
    g2f_bpe *v = bpe_new(G2F_BPE_OPENAI, label, err);
    st = v ? vocab_from_json(root, label, v, err) : G2F_ERR_NOMEM;
    cJSON_Delete(root);
    if (st != G2F_OK) g2f_bpe_close(v);
    else *out = v;
    return st;
}

/* ---- the merges -------------------------------------------------------------- */

static uint32_t find_token(const g2f_bpe *v, const unsigned char *b, size_t n) {
    const g2f_name_ref *r = g2f_names_find(v->sorted, v->n_tokens, (const char *)b, n);
    return r ? (uint32_t)r->index : UINT32_MAX;
}

/* Room for count merges, and an empty pair table at most half full. */
static g2f_status merges_alloc(g2f_bpe *v, size_t count, const char *label, g2f_error *err) {
    size_t slots = 16;
    while (slots < 2 * count) slots *= 2;
    v->merges = g2f_alloc_array(count ? count : 1, sizeof *v->merges);
    v->slots = g2f_alloc_array(slots, sizeof *v->slots);
    if (!v->merges || !v->slots) {
        drop_merges(v);
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %zu merges", label, count);
    }
    memset(v->slots, 0xff, slots * sizeof *v->slots);
    v->n_slots = slots;
    return G2F_OK;
}

/* Check 9 for the merge of rank v->n_merges: A = a[0, an), B = b[0, bn),
 * both byte-level spellings; where names it ("merges.txt: line 7"). */
static g2f_status add_merge(g2f_bpe *v, const char *a, size_t an, const char *b, size_t bn, const char *where,
                            g2f_error *err) {
    unsigned char ab[2 * G2F_BPE_MAX_TOKEN_BYTES];
    char why[96];
    const char *part[2] = {a, b};
    size_t plen[2] = {an, bn}, n[2];
    uint32_t id[2];
    for (int k = 0; k < 2; k++) {
        if (!(n[k] = spelling_bytes(part[k], plen[k], ab + (k ? n[0] : 0), why, sizeof why)))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"%.*s\" is not a byte-level string: %s", where,
                                 (int)(plen[k] < 80 ? plen[k] : 80), part[k], why);
        if ((id[k] = find_token(v, ab + (k ? n[0] : 0), n[k])) == UINT32_MAX)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"%.*s\" is not a token of %s", where,
                                 (int)(plen[k] < 80 ? plen[k] : 80), part[k], v->vocab_path);
    }
    uint32_t result = find_token(v, ab, n[0] + n[1]);
    if (result == UINT32_MAX)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"%.*s\" + \"%.*s\" is not a token of %s", where,
                             (int)(an < 80 ? an : 80), a, (int)(bn < 80 ? bn : 80), b, v->vocab_path);
    size_t mask = v->n_slots - 1, i = pair_slot(id[0], id[1], mask);
    for (; v->slots[i] != UINT32_MAX; i = (i + 1) & mask) {
        const merge *m = &v->merges[v->slots[i]];
        if (m->left == id[0] && m->right == id[1])
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: the merge \"%.*s\" \"%.*s\" repeats the merge of rank %u",
                                 where, (int)(an < 80 ? an : 80), a, (int)(bn < 80 ? bn : 80), b, v->slots[i]);
    }
    v->slots[i] = (uint32_t)v->n_merges;
    v->merges[v->n_merges++] = (merge){id[0], id[1], result};
    return G2F_OK;
}

/* One "A B" merge (a line of merges.txt or a string of tokenizer.json's
 * merges): exactly one space. */
static g2f_status add_merge_text(g2f_bpe *v, const char *s, size_t n, const char *where, g2f_error *err) {
    const char *sp = memchr(s, ' ', n);
    if (n == 0) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: empty, where a merge \"A B\" was expected", where);
    if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: \"%.*s\" is not a merge \"A B\" (two tokens, one space)", where,
                             (int)(n < 80 ? n : 80), s);
    return add_merge(v, s, (size_t)(sp - s), sp + 1, n - (size_t)(sp - s) - 1, where, err);
}

g2f_status g2f_bpe_parse_merges(g2f_bpe *v, const char *text, size_t len, const char *label, g2f_error *err) {
    drop_merges(v);
    if (len < 8 || memcmp(text, "#version", 8) != 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: line 1 does not start with \"#version\" (encoder.py skips line 1 "
                             "whatever it holds)", label);
    if (text[len - 1] != '\n')
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: the last line does not end with a newline (encoder.py would drop "
                             "it)", label);
    size_t lines = 0;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))) != NULL; p++) lines++;
    if (lines - 1 > G2F_BPE_MAX_MERGES)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: more than %zu merges", label, G2F_BPE_MAX_MERGES);
    g2f_status st = merges_alloc(v, lines - 1, label, err);
    const char *p = memchr(text, '\n', len) + 1;
    for (size_t line = 2; st == G2F_OK && p < text + len; line++) {
        const char *eol = memchr(p, '\n', len - (size_t)(p - text));
        char where[64 + 4096];
        snprintf(where, sizeof where, "%s: line %zu", label, line);
        st = add_merge_text(v, p, (size_t)(eol - p), where, err);
        p = eol + 1;
    }
    if (st != G2F_OK) drop_merges(v);
    return st;
}

/* Check 7-9 on tokenizer.json's model.merges. */
static g2f_status merges_from_json(g2f_bpe *v, const cJSON *arr, const char *label, g2f_error *err) {
    if (!cJSON_IsArray(arr))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: model.merges is missing or not an array", label);
    size_t n = 0;
    for (const cJSON *e = arr->child; e && n <= G2F_BPE_MAX_MERGES; e = e->next) n++;
    if (n > G2F_BPE_MAX_MERGES)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: model.merges: more than %zu merges", label, G2F_BPE_MAX_MERGES);
    g2f_status st = merges_alloc(v, n, label, err);
    int pairs = arr->child && cJSON_IsArray(arr->child);
    size_t i = 0;
    for (const cJSON *e = arr->child; st == G2F_OK && e; e = e->next, i++) {
        char where[4200];
        snprintf(where, sizeof where, "%s: model.merges[%zu]", label, i);
        const cJSON *a = pairs && cJSON_IsArray(e) ? e->child : NULL, *b = a ? a->next : NULL;
        if (!pairs && cJSON_IsString(e)) st = add_merge_text(v, e->valuestring, strlen(e->valuestring), where, err);
        else if (cJSON_IsString(a) && cJSON_IsString(b) && !b->next)
            st = add_merge(v, a->valuestring, strlen(a->valuestring), b->valuestring, strlen(b->valuestring), where,
                           err);
        else
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: not %s (model.merges[0] sets the form for the whole array)",
                               where, pairs ? "a pair [\"A\", \"B\"] of two strings" : "a string \"A B\"");
    }
    if (st != G2F_OK) drop_merges(v);
    return st;
}

/* ---- tokenizer.json ------------------------------------------------------------ */

/* obj[key] is absent, null, or (when type is not NULL) an object of that
 * "type". */
static int stage_is(const cJSON *obj, const char *key, const char *type) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!s || cJSON_IsNull(s)) return 1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    return type && cJSON_IsObject(s) && cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

/* obj[key] is absent, or null, false or "" where null_ok, false_ok or
 * empty_ok allow it. */
static int field_off(const cJSON *obj, const char *key, int null_ok, int false_ok, int empty_ok) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, key);
    return !f || (null_ok && cJSON_IsNull(f)) || (false_ok && cJSON_IsFalse(f)) ||
           (empty_ok && cJSON_IsString(f) && f->valuestring[0] == '\0');
}

/* The pipeline must be GPT-2's (g2f_bpe.h): the first stage that is not is
 * named. */
static g2f_status check_pipeline(const cJSON *root, const cJSON *model, const char *label, g2f_error *err) {
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(model, "type");
    const char *bad = NULL;
    if (!stage_is(root, "normalizer", NULL)) bad = "normalizer is not null (GPT-2 has none)";
    else if (!pre || cJSON_IsNull(pre) || !stage_is(root, "pre_tokenizer", "ByteLevel"))
        bad = "pre_tokenizer is not {\"type\": \"ByteLevel\"}";
    else if (!cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space")))
        bad = "pre_tokenizer.add_prefix_space is not false";
    else if (!field_off(pre, "use_regex", 0, 0, 0) && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pre, "use_regex")))
        bad = "pre_tokenizer.use_regex is not true";
    else if (!stage_is(root, "post_processor", "ByteLevel")) bad = "post_processor is not null or ByteLevel";
    else if (!stage_is(root, "decoder", "ByteLevel")) bad = "decoder is not null or ByteLevel";
    else if (mt && !(cJSON_IsString(mt) && strcmp(mt->valuestring, "BPE") == 0)) bad = "model.type is not \"BPE\"";
    else if (!field_off(model, "dropout", 1, 0, 0)) bad = "model.dropout is not null";
    else if (!field_off(model, "continuing_subword_prefix", 1, 0, 1) || !field_off(model, "end_of_word_suffix", 1, 0, 1))
        bad = "model.continuing_subword_prefix or end_of_word_suffix is not empty";
    else if (!field_off(model, "byte_fallback", 0, 1, 0) || !field_off(model, "ignore_merges", 0, 1, 0))
        bad = "model.byte_fallback or ignore_merges is not false";
    if (bad)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %s: not GPT-2's tokenizer pipeline", label, bad);
    return G2F_OK;
}

g2f_status g2f_bpe_parse_tokenizer_json(const char *text, size_t len, const char *label, g2f_bpe **out,
                                        g2f_error *err) {
    *out = NULL;
    cJSON *root;
    g2f_status st = json_read(text, len, label, &root, err);
    if (st != G2F_OK) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    g2f_bpe *v = NULL;
    char where[4200];
    snprintf(where, sizeof where, "%s: model.vocab", label);
    if (!cJSON_IsObject(root) || !cJSON_IsObject(model))
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: not a JSON object with an object \"model\"", label);
    else if ((st = check_pipeline(root, model, label, err)) == G2F_OK &&
             (v = bpe_new(G2F_BPE_HF_TOKENIZER, label, err)) == NULL)
        st = G2F_ERR_NOMEM;
    if (st == G2F_OK) st = vocab_from_json(cJSON_GetObjectItemCaseSensitive(model, "vocab"), where, v, err);
    if (st == G2F_OK) st = merges_from_json(v, cJSON_GetObjectItemCaseSensitive(model, "merges"), label, err);
    cJSON_Delete(root);
    if (st != G2F_OK) g2f_bpe_close(v);
    else *out = v;
    return st;
}

/* ---- files ----------------------------------------------------------------------- */

typedef g2f_status (*text_fn)(const char *text, size_t len, const char *label, void *ctx, g2f_error *err);

/* Reads path whole (check 1) and hands its text to fn. */
static g2f_status with_file(const char *path, text_fn fn, void *ctx, g2f_error *err) {
    char *text;
    size_t len;
    g2f_status st = g2f_read_small_file(path, G2F_BPE_MAX_FILE_BYTES, &text, &len, err);
    if (st != G2F_OK) return st;
    st = fn(text, len, path, ctx, err);
    free(text);
    return st;
}

static g2f_status vocab_fn(const char *t, size_t n, const char *label, void *ctx, g2f_error *err) {
    return g2f_bpe_parse_vocab(t, n, label, ctx, err);
}
static g2f_status merges_fn(const char *t, size_t n, const char *label, void *ctx, g2f_error *err) {
    return g2f_bpe_parse_merges(ctx, t, n, label, err);
}
static g2f_status tokenizer_fn(const char *t, size_t n, const char *label, void *ctx, g2f_error *err) {
    return g2f_bpe_parse_tokenizer_json(t, n, label, ctx, err);
}

/* The file names, in the folder's order of preference. */
static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt", "encoder.json", "vocab.bpe"};
enum { N_TOKENIZER_JSON, N_VOCAB_JSON, N_MERGES_TXT, N_ENCODER_JSON, N_VOCAB_BPE, N_NAMES };

/* Opens the vocabulary file vpath and the merges file mpath. */
static g2f_status open_pair(const char *vpath, const char *mpath, g2f_bpe_kind kind, g2f_bpe **out, g2f_error *err) {
    g2f_bpe *v = NULL;
    g2f_status st = with_file(vpath, vocab_fn, &v, err);
    if (st == G2F_OK) st = with_file(mpath, merges_fn, v, err);
    if (st == G2F_OK && !(v->merges_path = g2f_strdup(mpath))) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (st != G2F_OK) {
        g2f_bpe_close(v);
        return st;
    }
    v->kind = kind;
    *out = v;
    return G2F_OK;
}

/* Opens the file named names[which] in dir, with its partner. */
static g2f_status open_named(const char *dir, int which, g2f_bpe **out, g2f_error *err) {
    if (which == N_TOKENIZER_JSON) {
        char *p = g2f_path_join(dir, names[which]);
        g2f_status st = p ? with_file(p, tokenizer_fn, out, err) : g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        free(p);
        return st;
    }
    int hf = which == N_VOCAB_JSON || which == N_MERGES_TXT;
    int vocab = hf ? N_VOCAB_JSON : N_ENCODER_JSON, merges = hf ? N_MERGES_TXT : N_VOCAB_BPE;
    int partner = which == vocab ? merges : vocab;
    char *vp = g2f_path_join(dir, names[vocab]), *mp = g2f_path_join(dir, names[merges]);
    g2f_status st;
    if (!vp || !mp) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    else if (!g2f_path_exists(partner == vocab ? vp : mp))
        st = g2f_error_set(err, G2F_ERR_IO, "%s: %s needs %s beside it, and there is none", which == vocab ? vp : mp,
                           names[which], names[partner]);
    else st = open_pair(vp, mp, hf ? G2F_BPE_HF_FILES : G2F_BPE_OPENAI, out, err);
    free(vp);
    free(mp);
    return st;
}

g2f_status g2f_bpe_open(const char *path, g2f_bpe **out, g2f_error *err) {
    *out = NULL;
    if (g2f_path_is_dir(path)) {
        for (int i = 0; i < N_NAMES; i++) {
            char *p = g2f_path_join(path, names[i]);
            if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            int there = g2f_path_exists(p);
            free(p);
            if (there) return open_named(path, i, out, err);
        }
        return g2f_error_set(err, G2F_ERR_IO,
                             "%s: no tokenizer files (tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe)",
                             path);
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 0; i < N_NAMES; i++) {
        if (strcmp(base, names[i]) != 0) continue;
        g2f_file_identity id;
        if (g2f_file_id(path, &id, err) != G2F_OK) return err ? err->status : G2F_ERR_IO; /* "cannot open: ..." */
        char *dir = g2f_path_dir(path);
        if (!dir) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        g2f_status st = open_named(dir, i, out, err);
        free(dir);
        return st;
    }
    return g2f_error_set(err, G2F_ERR_USAGE,
                         "%s: not a tokenizer file (tokenizer.json, vocab.json, merges.txt, encoder.json, vocab.bpe) "
                         "or a folder of them", path);
}
