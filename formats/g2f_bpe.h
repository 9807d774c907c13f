/* g2f_bpe: readers for byte-level BPE vocabularies, the files GPT-2's
 * tokenizer is made of (OpenAI's encoder.json + vocab.bpe, HF's vocab.json +
 * merges.txt or tokenizer.json). They give the tokens as byte strings and
 * the merges as ranked pairs of token ids; encoding text with them is
 * g2f_tokenizer's (src/load), which adds GPT-2's pre-tokenization.
 *
 * Byte layout of each file (each read whole; every byte is hostile):
 *
 *   encoder.json (OpenAI) = vocab.json (HF): one JSON object
 *       {"!": 0, "\"": 1, ..., "\u0120the": 262, ..., "<|endoftext|>": 50256}
 *     each key a token spelled in the byte-level alphabet (below), each
 *     value its id. GPT-2: 50,257 entries, ids 0..50256.
 *
 *   vocab.bpe (OpenAI) = merges.txt (HF): text, lines ending in "\n"
 *       #version: 0.2              line 1: "#version" and anything after it
 *       \u0120 t                   line 2: the merge of rank 0, applied first
 *       \u0120 a                   line 3: rank 1 ... (GPT-2: 50,000 merges)
 *     a merge is "A B": two tokens (byte-level spelling) and one space
 *     between them; it joins an adjacent A, B into the token A+B. The file
 *     ends with the last merge's "\n". (OpenAI's encoder.py and HF's
 *     GPT2Tokenizer read split("\n")[1:-1]: they drop line 1 whatever it
 *     says and the last line even when it is a merge; HF's Rust reader
 *     skips only "#version" lines. A file read differently by them is
 *     refused: line 1 must be "#version...", the file must end in "\n".)
 *
 *   tokenizer.json (HF tokenizers): one JSON object; read from it:
 *       "model": {"type": "BPE", "vocab": {as vocab.json},
 *                 "merges": ["\u0120 t", ...]  or  [["\u0120", "t"], ...]}
 *     (merges as "A B" strings, or as [A, B] pairs since tokenizers 0.20;
 *     one form per file, as tokenizers reads them). It must describe
 *     GPT-2's pipeline, which is what the tokenizer applies: normalizer null
 *     or absent; pre_tokenizer {"type": "ByteLevel", "add_prefix_space":
 *     false} ("use_regex" absent or true); post_processor and decoder null,
 *     absent or of type "ByteLevel"; model.type absent or "BPE",
 *     model.dropout absent or null, model.continuing_subword_prefix and
 *     model.end_of_word_suffix absent, null or "", model.byte_fallback and
 *     model.ignore_merges absent or false. Nothing else is read
 *     (added_tokens, truncation, padding: see docs/tokenizer.md).
 *
 * The byte-level alphabet (GPT-2's bytes_to_unicode): byte b is written as
 * one character, b itself for the 188 printable bytes 0x21-0x7E, 0xA1-0xAC,
 * 0xAE-0xFF, and U+0100 + k for the k-th (from 0) of the 68 others in
 * increasing order: 0x00-0x20 are U+0100-U+0120 (a space is "\u0120", "Ġ"),
 * 0x7F-0xA0 are U+0121-U+0142, 0xAD is U+0143. A token's bytes are its
 * characters mapped back; the map is one-to-one, so distinct spellings are
 * distinct byte strings.
 *
 * Validation, in this order; the first violation is the error, one line
 * naming the file, the line or field, and what is wrong (G2F_ERR_FORMAT;
 * G2F_ERR_IO when a file cannot be read):
 *   1. each file is a regular file of at most G2F_BPE_MAX_FILE_BYTES;
 *   the vocabulary (encoder.json, vocab.json, tokenizer.json):
 *   2. the text is one JSON value with only white space after it, holds no
 *      "\u0000" escape (cJSON would end the string there: the key read
 *      would not be the key written), and no object in it holds a key twice
 *      (g2f_json);
 *   3. it is an object (tokenizer.json: with the pipeline above and an
 *      object "model" holding an object "vocab");
 *   4. it has at most G2F_BPE_MAX_VOCAB entries;
 *   5. for each entry, in file order: its value is an integer in [0, n),
 *      n the number of entries, that no earlier entry has (so the ids are
 *      exactly 0..n-1); its key is a byte-level string: non-empty, valid
 *      UTF-8, every character in the alphabet, at most
 *      G2F_BPE_MAX_TOKEN_BYTES bytes;
 *   6. each of the 256 single bytes is a token (BPE starts from them);
 *   the merges (vocab.bpe, merges.txt, tokenizer.json's model.merges):
 *   7. merges.txt: line 1 starts with "#version", the file ends with "\n";
 *      tokenizer.json: "merges" is an array, of strings only or of pairs
 *      only;
 *   8. at most G2F_BPE_MAX_MERGES merges;
 *   9. for each merge, in rank order: it is "A B" (one space; a line, or a
 *      string of the array) or [A, B] (two strings), A and B byte-level
 *      strings (as 5); A, B and A+B are tokens of the vocabulary; the pair
 *      (A, B) appears in no earlier merge (encoder.py would keep the last
 *      rank of two, tokenizers the first).
 *
 * Files, given as a folder or one file (the partner found beside it):
 *   folder        tokenizer.json if there, else vocab.json + merges.txt,
 *                 else encoder.json + vocab.bpe (a folder with only one
 *                 file of a pair is an error naming the missing one);
 *   tokenizer.json; vocab.json or merges.txt (with the other beside it);
 *   encoder.json or vocab.bpe (with the other beside it). Any other file
 *   name is G2F_ERR_USAGE.
 *
 * Memory: the file's text, cJSON's tree of it (up to about 40 bytes per
 * byte of JSON), then the tokens' bytes (at most the file's size), 32
 * bytes per token and at most 28 per merge.
 *
 *     g2f_bpe *v; g2f_error err = {0};
 *     if (g2f_bpe_open("gpt2/", &v, &err) != G2F_OK) return err.status;
 *     size_t len; const unsigned char *t = g2f_bpe_token(v, 262, &len); // " the", 4 bytes
 *     uint32_t result, rank = g2f_bpe_merge_rank(v, left_id, right_id, &result);
 *     g2f_bpe_close(v);
 *
 * Internal to the library (the tokenizer's reader): not installed.
 */
#ifndef G2F_BPE_H
#define G2F_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

/* Limits: larger values are malformed or malicious. GPT-2: encoder.json
 * 1.0 MB, vocab.bpe 0.46 MB, tokenizer.json 1.4 MB, 50,257 tokens, 50,000
 * merges, tokens of at most 128 bytes; the largest byte-level vocabularies
 * in use hold about 256k tokens. */
#define G2F_BPE_MAX_FILE_BYTES ((size_t)64 << 20)
#define G2F_BPE_MAX_VOCAB      ((size_t)1 << 20)
#define G2F_BPE_MAX_MERGES     ((size_t)1 << 20)
#define G2F_BPE_MAX_TOKEN_BYTES 1024u

/* No merge of this pair (g2f_bpe_merge_rank). */
#define G2F_BPE_NO_MERGE UINT32_MAX

typedef enum g2f_bpe_kind {
    G2F_BPE_OPENAI,         /* encoder.json + vocab.bpe */
    G2F_BPE_HF_FILES,       /* vocab.json + merges.txt */
    G2F_BPE_HF_TOKENIZER,   /* tokenizer.json */
    G2F_BPE_KIND_COUNT
} g2f_bpe_kind;

typedef struct g2f_bpe g2f_bpe;

/* Reads the vocabulary and merges at path (a folder or a file, above).
 * *out is set only on success. */
g2f_status g2f_bpe_open(const char *path, g2f_bpe **out, g2f_error *err);

/* The same from memory (the fuzz targets and tests): text[0, len), label
 * naming the file in messages. parse_vocab reads encoder.json / vocab.json
 * (checks 2-6) into a vocabulary without merges; parse_merges reads
 * vocab.bpe / merges.txt (checks 7-9) into v, replacing any merges it had
 * (on failure v keeps none); parse_tokenizer_json reads both from one
 * tokenizer.json. */
g2f_status g2f_bpe_parse_vocab(const char *text, size_t len, const char *label, g2f_bpe **out, g2f_error *err);
g2f_status g2f_bpe_parse_merges(g2f_bpe *v, const char *text, size_t len, const char *label, g2f_error *err);
g2f_status g2f_bpe_parse_tokenizer_json(const char *text, size_t len, const char *label, g2f_bpe **out,
                                        g2f_error *err);

/* NULL is a no-op. */
void g2f_bpe_close(g2f_bpe *v);

size_t g2f_bpe_vocab_size(const g2f_bpe *v);
size_t g2f_bpe_merge_count(const g2f_bpe *v);
g2f_bpe_kind g2f_bpe_get_kind(const g2f_bpe *v);
/* The files read (borrowed until close); merges_path is NULL for a
 * tokenizer.json, both are the labels given to the parse functions. */
const char *g2f_bpe_vocab_path(const g2f_bpe *v);
const char *g2f_bpe_merges_path(const g2f_bpe *v);

/* Token id's bytes (borrowed until close) and their count in *len; NULL
 * (and *len 0) when id >= the vocabulary size. */
const unsigned char *g2f_bpe_token(const g2f_bpe *v, uint32_t id, size_t *len);
/* The id of the single-byte token of b (check 6: there is one). */
uint32_t g2f_bpe_byte_token(const g2f_bpe *v, unsigned char b);
/* The rank of the merge joining tokens left and right (0 is applied first)
 * and, in *result, the token it makes; G2F_BPE_NO_MERGE when there is none.
 * Constant time (a hash table). */
uint32_t g2f_bpe_merge_rank(const g2f_bpe *v, uint32_t left, uint32_t right, uint32_t *result);

/* GPT-2's byte-to-unicode map: the code point byte b is spelled with, and
 * the byte a code point stands for (-1 when it is not in the alphabet). */
uint32_t g2f_bpe_byte_char(unsigned char b);
int g2f_bpe_char_byte(uint32_t cp);

#endif
