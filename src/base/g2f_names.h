/* g2f_names: uniqueness and lookup of names by sorting.
 *
 * Every reader must refuse a name that appears twice (tensor names, zip
 * members, GGUF keys, JSON keys) and some look names up once per item (a
 * shard index maps a million names into shards). Both are done here by one
 * sort, n log n comparisons whatever the input: a linear search per item is
 * n^2, which hung for minutes on hostile files (SECURITY.md, Findings).
 *
 * Names are byte strings with a length (GGUF's are not NUL-terminated).
 * The order is bytewise (unsigned), a shorter name before its extensions:
 * for NUL-free C strings the same order as strcmp. Ties are broken by
 * index, so the sort is deterministic and the first of two equal names in
 * the input comes first.
 *
 *     g2f_name_ref *r = g2f_names_of_table(table);       // sorted
 *     size_t d = g2f_names_find_dup(r, table->count);
 *     if (d) ... table->tensors[r[d].index].name appears twice ...
 *     free(r);
 */
#ifndef G2F_NAMES_H
#define G2F_NAMES_H

#include <stddef.h>

#include "g2f_tensor.h"

typedef struct g2f_name_ref {
    const char *s; /* borrowed; not necessarily NUL-terminated */
    size_t len;
    size_t index;  /* the caller's position of the named item */
} g2f_name_ref;

/* A ref to the NUL-terminated name s of item index. */
g2f_name_ref g2f_name_ref_of(const char *s, size_t index);
/* Sorts refs by name, then index. */
void g2f_names_sort(g2f_name_ref *refs, size_t n);
/* In sorted refs: the position i >= 1 of the first name equal to its
 * predecessor (refs[i - 1] and refs[i] name the same thing, refs[i - 1]
 * first in the input), or 0 when every name is distinct. */
size_t g2f_names_find_dup(const g2f_name_ref *sorted, size_t n);
/* In sorted refs: the first ref naming s[0, len), or NULL (binary search). */
const g2f_name_ref *g2f_names_find(const g2f_name_ref *sorted, size_t n, const char *s, size_t len);
/* Refs to the table's tensor names, sorted; malloc'd (the caller frees),
 * NULL when out of memory. Valid while the table is. */
g2f_name_ref *g2f_names_of_table(const g2f_table *t);

/* Edit distance (insertions, deletions, substitutions) between a and b;
 * 99 for names of 63 bytes or more. For "did you mean" suggestions. */
size_t g2f_edit_distance(const char *a, const char *b);
/* The candidate nearest to word within max_edits, or NULL: n candidates,
 * each a const char * at stride bytes from the last (a field of a struct
 * array, or a plain array with stride sizeof(char *)); ties to the first. */
const char *g2f_closest_name(const char *word, const char *const *names, size_t stride, size_t n, size_t max_edits);

#endif
