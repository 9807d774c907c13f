/* g2f_json: the rule every JSON document gpt2ffn reads obeys on top of
 * cJSON's syntax: no object holds a key twice.
 *
 * cJSON keeps a repeated key as two siblings and its lookups return the
 * first; Python's json returns the last, the Rust safetensors reader refuses
 * some repeats. A file read differently by gpt2ffn and by the tools that
 * wrote or will load it is refused instead: the safetensors header, shard
 * indexes, config.json and an .npz's __metadata__ all go through this check
 * right after parsing. Each object's keys are sorted (g2f_names): n log n
 * over the whole document, not a pairwise n^2.
 *
 *     const cJSON *obj; const char *key;
 *     if ((st = g2f_json_find_duplicate_key(root, &obj, &key, label, err)) != G2F_OK) return st;
 *     if (obj) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: key \"%s\" appears twice", label, key);
 *
 * Internal to the readers (formats/ and the loaders above them).
 */
#ifndef G2F_JSON_H
#define G2F_JSON_H

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

/* Walks every object in the tree under root (inside arrays too), in
 * document order, depth first. Sets *object and *key to the first object
 * holding a key twice and that key (borrowed from the tree), or both to NULL
 * when there is none; returns G2F_OK either way. G2F_ERR_NOMEM (err set,
 * naming label) when the scratch memory for sorting cannot be had. The
 * recursion is bounded by cJSON's nesting limit (CJSON_NESTING_LIMIT). */
g2f_status g2f_json_find_duplicate_key(const cJSON *root, const cJSON **object, const char **key, const char *label,
                                       g2f_error *err);

/* The byte offset of the first NUL character in the JSON text text[0, len),
 * raw or written as the escape \u0000, or len when there is none. cJSON
 * keeps strings NUL-terminated, so a key "a\u0000b" would be read as "a":
 * readers whose strings are names (tokens) refuse such a text. */
size_t g2f_json_find_nul(const char *text, size_t len);

/* JSON numbers arrive as doubles: true, with *out set, only for an exact
 * non-negative integer below 2^53 (2^53 + 1 reads as 2^53, so 2^53 cannot be trusted). */
int g2f_json_u64(const cJSON *item, uint64_t *out);

#endif
