/* g2f_tokenizer: GPT-2's tokenizer, text to token ids and back, exactly as
 * OpenAI's encoder.py (gpt-2/src/encoder.py) and HF's GPT2Tokenizer.
 *
 * Encoding, per call:
 *   1. the text's bytes are made valid UTF-8: each maximal invalid
 *      subsequence becomes one U+FFFD, as WHATWG's TextDecoder and Python's
 *      bytes.decode("utf-8", "replace") do (g2f_utf8_replace, g2f_text.h);
 *      a leading BOM is kept; result.replaced counts the replacements;
 *   2. it is split into pieces by GPT-2's pattern (findall, left to right)
 *          's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      (contractions, case-sensitive; an optional space then letters,
 *      numbers, or other characters; runs of white space, the last space of
 *      a run left to start the next word) with Unicode's categories from
 *      PCRE2 (UTF + UCP) and \s read as Python's regex module reads it,
 *      Unicode's White_Space property (PCRE2's own \s adds U+180E);
 *   3. each piece's UTF-8 bytes start as single-byte tokens, and BPE joins
 *      adjacent tokens: the pair of lowest merge rank, every occurrence of it
 *      left to right (an overlap: the left one), until no pair has a merge,
 *      as encoder.py's loop does. Here a heap of candidate pairs does it in
 *      O(k log k) for a piece of k bytes, whatever the vocabulary.
 * Special tokens are not recognised in the text: "<|endoftext|>" in the
 * text is encoded as its characters, as encoder.py does (HF splits its added
 * tokens out first: put 50256 into the ids yourself). No prefix space is
 * added (GPT2Tokenizer's add_prefix_space=False).
 *
 * Decoding: the ids' byte strings concatenated. Tokens are bytes, not text:
 * a slice of ids may end inside a UTF-8 character, so the result can be
 * invalid UTF-8 (HF's decode replaces such bytes by U+FFFD; show it with
 * g2f_escape, g2f_text.h).
 *
 * Files: any path g2f_bpe reads (formats/g2f_bpe.h: a folder, tokenizer.json,
 * vocab.json or merges.txt, encoder.json or vocab.bpe), validated whole.
 * See docs/tokenizer.md.
 *
 * Memory: open holds the vocabulary (32 bytes per token and at most 28 per
 * merge beyond the tokens' bytes). Encode allocates the replaced text (at
 * most 3x the input), the ids (8 bytes each, at most one per byte) and
 * about 52 bytes per byte of the longest piece (a run of letters, say).
 * Nothing is cached between calls, so a tokenizer may be shared by threads.
 *
 *     g2f_tokenizer *tok; g2f_tokens t; g2f_error err = {0};
 *     if (g2f_tokenizer_open("gpt2/", &tok, &err) != G2F_OK) return err.status;
 *     if (g2f_tokenizer_encode(tok, "Hello world", 11, &t, &err) == G2F_OK) {
 *         ... t.ids = {15496, 995}, t.count = 2 ...
 *         g2f_tokens_free(&t);
 *     }
 *     g2f_tokenizer_close(tok);
 */
#ifndef G2F_TOKENIZER_H
#define G2F_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

typedef struct g2f_tokenizer g2f_tokenizer;

typedef struct g2f_tokenizer_info {
    const char *vocab_path;  /* encoder.json, vocab.json or tokenizer.json */
    const char *merges_path; /* vocab.bpe or merges.txt; NULL for tokenizer.json */
    const char *format;      /* "encoder.json + vocab.bpe", "vocab.json + merges.txt" or "tokenizer.json" */
    size_t vocab_size;       /* ids are 0 .. vocab_size - 1 */
    size_t merges;
} g2f_tokenizer_info;

/* An encoding: ids (count of them, malloc'd, NULL when count is 0) owned
 * by the caller, who frees them with g2f_tokens_free. */
typedef struct g2f_tokens {
    int64_t *ids;
    size_t count;
    size_t replaced; /* invalid UTF-8 subsequences replaced by U+FFFD first */
} g2f_tokens;

/* Reads and validates the vocabulary at path and compiles the pattern.
 * *out is set only on success: G2F_ERR_FORMAT for a malformed file (one
 * line naming it), G2F_ERR_IO / G2F_ERR_USAGE for a path that is not one. */
g2f_status g2f_tokenizer_open(const char *path, g2f_tokenizer **out, g2f_error *err);
/* NULL is a no-op. */
void g2f_tokenizer_close(g2f_tokenizer *tok);

/* Borrowed; valid until close. */
const g2f_tokenizer_info *g2f_tokenizer_get_info(const g2f_tokenizer *tok);
size_t g2f_tokenizer_vocab_size(const g2f_tokenizer *tok);

/* Encodes text[0, len) (any bytes; NULL with len 0 is the empty text) into
 * *out. On failure (G2F_ERR_NOMEM; G2F_ERR_USAGE for NULL text with len > 0)
 * *out is empty ({NULL, 0, 0}). */
g2f_status g2f_tokenizer_encode(const g2f_tokenizer *tok, const void *text, size_t len, g2f_tokens *out,
                                g2f_error *err);
/* Frees t->ids and empties t; NULL is a no-op. */
void g2f_tokens_free(g2f_tokens *t);

/* The bytes of ids[0, n) into *bytes (malloc'd, NUL-terminated for
 * convenience, the caller frees) and their count into *len. An id outside
 * [0, vocab_size) is G2F_ERR_USAGE naming it and its position, with *bytes
 * NULL. */
g2f_status g2f_tokenizer_decode(const g2f_tokenizer *tok, const int64_t *ids, size_t n, unsigned char **bytes,
                                size_t *len, g2f_error *err);

/* One token's bytes (borrowed until close; not NUL-terminated) and their
 * count in *len, for showing a token (escape them: g2f_text.h); NULL with
 * *len 0 when id is outside [0, vocab_size). */
const unsigned char *g2f_tokenizer_token_bytes(const g2f_tokenizer *tok, int64_t id, size_t *len);

/* The tokenizer beside a checkpoint (`run --prompt`, the reports' token
 * text): the folder checkpoint names, or the folder holding the file, opened
 * as g2f_tokenizer_open opens a folder when it holds any of tokenizer.json,
 * vocab.json, merges.txt, encoder.json, vocab.bpe (a malformed one is its
 * error); G2F_OK with *out NULL when it holds none of them. */
g2f_status g2f_tokenizer_open_beside(const char *checkpoint, g2f_tokenizer **out, g2f_error *err);

/* Token id as text for reports, into buf (n bytes, always NUL-terminated;
 * the length returned): its bytes in single quotes, valid UTF-8 kept, a
 * quote or backslash escaped by a backslash, newline, tab and CR as \n,
 * \t, \r, other control bytes (C0, DEL, C1) and bytes that are not UTF-8
 * as \xHH: one line of plain UTF-8 (" the" -> "' the'"). An id the
 * tokenizer does not hold (or tok NULL) is "<id>". A token too long for n
 * is cut at a character's end (then closed by the quote when there is
 * room); 64 bytes hold almost every GPT-2 token. */
size_t g2f_tokenizer_token_text(const g2f_tokenizer *tok, int64_t id, char *buf, size_t n);

#endif
