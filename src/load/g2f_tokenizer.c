/* g2f_tokenizer: see g2f_tokenizer.h. PCRE2 splits the text (one compiled
 * pattern, read-only after open: pcre2_match is thread-safe with a match
 * data block per call); the BPE loop runs on a piece's bytes with a binary
 * heap of candidate pairs keyed by (rank, position). */
#include "g2f_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bpe.h"
#include "g2f_file.h"
#include "g2f_tensor.h"
#include "g2f_text.h"

/* GPT-2's pattern (encoder.py), its \s and \S written as the property that
 * Python's regex module reads \s as (PCRE2's \s also takes U+180E). */
static const char pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+"
                              "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";

struct g2f_tokenizer {
    g2f_bpe *bpe;
    pcre2_code *re;
    g2f_tokenizer_info info;
};

static const char *const format_names[G2F_BPE_KIND_COUNT] = {"encoder.json + vocab.bpe", "vocab.json + merges.txt",
                                                             "tokenizer.json"};

g2f_status g2f_tokenizer_open(const char *path, g2f_tokenizer **out, g2f_error *err) {
    *out = NULL;
    g2f_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    g2f_status st = g2f_bpe_open(path, &t->bpe, err);
    if (st == G2F_OK) {
        int code;
        PCRE2_SIZE at;
        t->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
        if (!t->re) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(code, msg, sizeof msg);
            st = g2f_error_set(err, G2F_ERR_USAGE, "PCRE2 %d.%d cannot compile GPT-2's pattern (offset %zu): %s",
                               PCRE2_MAJOR, PCRE2_MINOR, (size_t)at, (const char *)msg);
        }
    }
    if (st != G2F_OK) {
        g2f_tokenizer_close(t);
        return st;
    }
    t->info = (g2f_tokenizer_info){g2f_bpe_vocab_path(t->bpe), g2f_bpe_merges_path(t->bpe),
                                   format_names[g2f_bpe_get_kind(t->bpe)], g2f_bpe_vocab_size(t->bpe),
                                   g2f_bpe_merge_count(t->bpe)};
    *out = t;
    return G2F_OK;
}

void g2f_tokenizer_close(g2f_tokenizer *tok) {
    if (!tok) return;
    pcre2_code_free(tok->re);
    g2f_bpe_close(tok->bpe);
    free(tok);
}

const g2f_tokenizer_info *g2f_tokenizer_get_info(const g2f_tokenizer *tok) { return &tok->info; }
size_t g2f_tokenizer_vocab_size(const g2f_tokenizer *tok) { return tok->info.vocab_size; }

const unsigned char *g2f_tokenizer_token_bytes(const g2f_tokenizer *tok, int64_t id, size_t *len) {
    if (id < 0 || (uint64_t)id >= tok->info.vocab_size) {
        *len = 0;
        return NULL;
    }
    return g2f_bpe_token(tok->bpe, (uint32_t)id, len);
}

g2f_status g2f_tokenizer_open_beside(const char *checkpoint, g2f_tokenizer **out, g2f_error *err) {
    static const char *const names[] = {"tokenizer.json", "vocab.json", "merges.txt", "encoder.json", "vocab.bpe"};
    *out = NULL;
    char *dir = g2f_path_is_dir(checkpoint) ? g2f_strdup(checkpoint) : g2f_path_dir(checkpoint);
    if (!dir) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    int any = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !any; i++) {
        char *p = g2f_path_join(dir, names[i]);
        any = p && g2f_path_exists(p);
        free(p);
    }
    g2f_status st = any ? g2f_tokenizer_open(dir, out, err) : G2F_OK;
    free(dir);
    return st;
}

/* A character a terminal must not receive as it is (g2f_text.h): C1
 * controls and the bidirectional controls, k bytes of valid UTF-8 at c. */
static int unsafe_char(const unsigned char *c, size_t k) {
    if (k == 2) return (c[0] == 0xc2 && c[1] < 0xa0) || (c[0] == 0xd8 && c[1] == 0x9c);
    if (k != 3 || c[0] != 0xe2) return 0;
    return (c[1] == 0x80 && (c[2] == 0x8e || c[2] == 0x8f || (c[2] >= 0xaa && c[2] <= 0xae))) ||
           (c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9);
}

size_t g2f_tokenizer_token_text(const g2f_tokenizer *tok, int64_t id, char *buf, size_t n) {
    size_t len, used = 0;
    const unsigned char *b = tok ? g2f_tokenizer_token_bytes(tok, id, &len) : NULL;
    if (n == 0) return 0;
    buf[0] = '\0';
    if (!b) return (size_t)snprintf(buf, n, "<%lld>", (long long)id);
    /* a byte string of at most G2F_BPE_MAX_TOKEN_BYTES: copied into a NUL-terminated buffer so that a
     * UTF-8 sequence is never read past the token's end */
    unsigned char tmp[G2F_BPE_MAX_TOKEN_BYTES + 1];
    memcpy(tmp, b, len);
    tmp[len] = 0;
    used += (size_t)snprintf(buf + used, n - used, "'");
    for (size_t i = 0; i < len && used + 16 < n;) { /* room for the longest escape, 12 bytes */
        unsigned char c = tmp[i];
        size_t k = c ? g2f_utf8_len(tmp + i) : 0;
        if (c == '\'' || c == '\\') {
            used += (size_t)snprintf(buf + used, n - used, "\\%c", c);
        } else if (c == '\n' || c == '\t' || c == '\r') {
            used += (size_t)snprintf(buf + used, n - used, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
        } else if (k == 0 || c < 0x20 || c == 0x7f || unsafe_char(tmp + i, k)) {
            for (size_t j = 0; j < (k ? k : 1); j++)
                used += (size_t)snprintf(buf + used, n - used, "\\x%02x", tmp[i + j]);
        } else {
            memcpy(buf + used, tmp + i, k);
            used += k;
            buf[used] = '\0';
            i += k;
            continue;
        }
        i += k ? k : 1;
    }
    if (used + 1 < n) used += (size_t)snprintf(buf + used, n - used, "'");
    return used;
}

/* ---- BPE on one piece -------------------------------------------------------- */

#define NONE UINT32_MAX

/* A candidate: the pair starting at symbol pos, whose merge has rank. */
typedef struct cand {
    uint32_t rank, pos;
} cand;

/* Work memory for a piece of up to cap bytes, reused across pieces. */
typedef struct work {
    size_t cap;
    uint32_t *id, *next, *prev; /* symbols, a list in the bytes' order; id NONE: merged away */
    cand *heap, *later;         /* heap: up to 3 cap (cap - 1 pairs + 2 per merge); later: 2 cap */
    size_t n_heap, n_later;
} work;

static void work_free(work *w) {
    free(w->id);
    free(w->next);
    free(w->prev);
    free(w->heap);
    free(w->later);
    memset(w, 0, sizeof *w);
}

static int work_reserve(work *w, size_t k) {
    if (k <= w->cap) return 1;
    work_free(w);
    w->id = g2f_alloc_array(k, sizeof *w->id);
    w->next = g2f_alloc_array(k, sizeof *w->next);
    w->prev = g2f_alloc_array(k, sizeof *w->prev);
    w->heap = k <= SIZE_MAX / 3 ? g2f_alloc_array(3 * k, sizeof *w->heap) : NULL;
    w->later = k <= SIZE_MAX / 2 ? g2f_alloc_array(2 * k, sizeof *w->later) : NULL;
    if (!w->id || !w->next || !w->prev || !w->heap || !w->later) {
        work_free(w);
        return 0;
    }
    w->cap = k;
    return 1;
}

static int cand_less(cand a, cand b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(work *w, cand c) {
    size_t i = w->n_heap++;
    while (i > 0 && cand_less(c, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static cand heap_pop(work *w) {
    cand top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cand_less(w->heap[c + 1], w->heap[c])) c++;
        if (!cand_less(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* The rank of the pair starting at symbol pos (NONE: no right neighbour or
 * no merge), its result in *result. */
static uint32_t pair_rank(const g2f_bpe *v, const work *w, uint32_t pos, uint32_t *result) {
    uint32_t q = w->next[pos];
    if (q == NONE) return NONE;
    uint32_t r = g2f_bpe_merge_rank(v, w->id[pos], w->id[q], result);
    return r == G2F_BPE_NO_MERGE ? NONE : r;
}

/* A pair formed while the pass of rank pass merges: encoder.py finishes
 * that pass before it looks at new pairs, so one of lower rank waits. */
static void add_cand(const g2f_bpe *v, work *w, uint32_t pos, uint32_t pass) {
    uint32_t result, r = pair_rank(v, w, pos, &result);
    if (r == NONE) return;
    if (r < pass) w->later[w->n_later++] = (cand){r, pos};
    else heap_push(w, (cand){r, pos});
}

/* BPE of the k >= 2 byte tokens in w->id[0, k); the result is the list
 * from symbol 0. A candidate is stale when the pair now at its position
 * has another rank (ranks are unique per pair). */
static void bpe_merge(const g2f_bpe *v, work *w, size_t k) {
    w->n_heap = w->n_later = 0;
    for (uint32_t i = 0; i + 1 < k; i++) add_cand(v, w, i, 0);
    uint32_t pass = NONE;
    for (;;) {
        if (w->n_later && (!w->n_heap || w->heap[0].rank != pass)) { /* the pass is over */
            for (size_t i = 0; i < w->n_later; i++) heap_push(w, w->later[i]);
            w->n_later = 0;
        }
        if (!w->n_heap) break;
        cand c = heap_pop(w);
        uint32_t result;
        if (w->id[c.pos] == NONE || pair_rank(v, w, c.pos, &result) != c.rank) continue;
        pass = c.rank;
        uint32_t q = w->next[c.pos];
        w->id[c.pos] = result;
        w->id[q] = NONE;
        w->next[c.pos] = w->next[q];
        if (w->next[q] != NONE) w->prev[w->next[q]] = c.pos;
        if (w->prev[c.pos] != NONE) add_cand(v, w, w->prev[c.pos], pass);
        add_cand(v, w, c.pos, pass);
    }
}

/* ---- encoding ---------------------------------------------------------------- */

typedef struct ids_buf {
    int64_t *p;
    size_t n, cap;
} ids_buf;

static int ids_push(ids_buf *b, int64_t id) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256; /* at most one id per byte of text: no overflow */
        int64_t *q = realloc(b->p, cap * sizeof *q);
        if (!q) return 0;
        b->p = q;
        b->cap = cap;
    }
    b->p[b->n++] = id;
    return 1;
}

/* Appends the ids of one piece s[0, k). */
static int encode_piece(const g2f_bpe *v, const unsigned char *s, size_t k, work *w, ids_buf *ids) {
    if (k == 1) return ids_push(ids, g2f_bpe_byte_token(v, s[0]));
    if (k > UINT32_MAX - 1 || !work_reserve(w, k)) return 0;
    for (uint32_t i = 0; i < k; i++) {
        w->id[i] = g2f_bpe_byte_token(v, s[i]);
        w->next[i] = i + 1 < k ? i + 1 : NONE;
        w->prev[i] = i ? i - 1 : NONE;
    }
    bpe_merge(v, w, k);
    for (uint32_t i = 0; i != NONE; i = w->next[i])
        if (!ids_push(ids, w->id[i])) return 0;
    return 1;
}

/* Splits the valid UTF-8 text[0, n) with the pattern and encodes every
 * piece, as findall does: match after match from the end of the last. */
static g2f_status encode_text(const g2f_tokenizer *tok, const unsigned char *text, size_t n, ids_buf *ids,
                              g2f_error *err) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(tok->re, NULL);
    if (!md) return g2f_error_set(err, G2F_ERR_NOMEM, "tokenizer: out of memory");
    work w = {0};
    g2f_status st = G2F_OK;
    for (size_t at = 0; st == G2F_OK && at < n;) {
        /* the text is valid UTF-8 by construction: no check per match (that would be quadratic) */
        int rc = pcre2_match(tok->re, text, n, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (rc < 0 || ov[1] <= ov[0]) {
            PCRE2_UCHAR msg[120] = "an empty match";
            if (rc < 0) pcre2_get_error_message(rc, msg, sizeof msg);
            st = g2f_error_set(err, G2F_ERR_NOMEM, "tokenizer: GPT-2's pattern failed at byte %zu of the text: %s", at,
                               (const char *)msg);
        } else if (!encode_piece(tok->bpe, text + ov[0], ov[1] - ov[0], &w, ids))
            st = g2f_error_set(err, G2F_ERR_NOMEM, "tokenizer: out of memory for a piece of %zu bytes",
                               (size_t)(ov[1] - ov[0]));
        else at = ov[1];
    }
    work_free(&w);
    pcre2_match_data_free(md);
    return st;
}

g2f_status g2f_tokenizer_encode(const g2f_tokenizer *tok, const void *text, size_t len, g2f_tokens *out,
                                g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (!text && len) return g2f_error_set(err, G2F_ERR_USAGE, "tokenizer: no text (NULL) of %zu bytes", len);
    size_t replaced, n = g2f_utf8_replace(text, len, NULL, &replaced);
    unsigned char *buf = n == len && !replaced ? (unsigned char *)(uintptr_t)text : malloc(n);
    if (!buf && n) return g2f_error_set(err, G2F_ERR_NOMEM, "tokenizer: out of memory for %zu bytes of text", n);
    if (buf != text) g2f_utf8_replace(text, len, buf, NULL);
    ids_buf ids = {0};
    g2f_status st = encode_text(tok, buf, n, &ids, err);
    if (buf != text) free(buf);
    if (st != G2F_OK) {
        free(ids.p);
        return st;
    }
    *out = (g2f_tokens){ids.p, ids.n, replaced};
    return G2F_OK;
}

void g2f_tokens_free(g2f_tokens *t) {
    if (!t) return;
    free(t->ids);
    memset(t, 0, sizeof *t);
}

g2f_status g2f_tokenizer_decode(const g2f_tokenizer *tok, const int64_t *ids, size_t n, unsigned char **bytes,
                                size_t *len, g2f_error *err) {
    *bytes = NULL;
    *len = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        if (!g2f_tokenizer_token_bytes(tok, ids[i], &k))
            return g2f_error_set(err, G2F_ERR_USAGE, "token id %lld at position %zu is outside the vocabulary [0, %zu)",
                                 (long long)ids[i], i, tok->info.vocab_size);
        total += k; /* at most 1024 per id: no overflow */
    }
    unsigned char *out = total < SIZE_MAX ? malloc((size_t)total + 1) : NULL;
    if (!out) return g2f_error_set(err, G2F_ERR_NOMEM, "tokenizer: out of memory for %llu decoded bytes",
                                   (unsigned long long)total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        const unsigned char *b = g2f_tokenizer_token_bytes(tok, ids[i], &k);
        memcpy(out + o, b, k);
        o += k;
    }
    out[o] = '\0';
    *bytes = out;
    *len = o;
    return G2F_OK;
}
