/* g2f_names: see g2f_names.h. */
#include "g2f_names.h"

#include <stdlib.h>
#include <string.h>

g2f_name_ref g2f_name_ref_of(const char *s, size_t index) { return (g2f_name_ref){s, strlen(s), index}; }

static int name_order(const char *a, size_t alen, const char *b, size_t blen) {
    int r = memcmp(a, b, alen < blen ? alen : blen);
    if (r) return r;
    return alen < blen ? -1 : alen > blen;
}

static int ref_cmp(const void *pa, const void *pb) {
    const g2f_name_ref *a = pa, *b = pb;
    int r = name_order(a->s, a->len, b->s, b->len);
    if (r) return r;
    return a->index < b->index ? -1 : a->index > b->index;
}

void g2f_names_sort(g2f_name_ref *refs, size_t n) {
    if (n > 1) qsort(refs, n, sizeof *refs, ref_cmp);
}

size_t g2f_names_find_dup(const g2f_name_ref *sorted, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (sorted[i].len == sorted[i - 1].len && memcmp(sorted[i].s, sorted[i - 1].s, sorted[i].len) == 0) return i;
    return 0;
}

const g2f_name_ref *g2f_names_find(const g2f_name_ref *sorted, size_t n, const char *s, size_t len) {
    size_t lo = 0, hi = n; /* the first ref >= s lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (name_order(sorted[mid].s, sorted[mid].len, s, len) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && name_order(sorted[lo].s, sorted[lo].len, s, len) == 0 ? &sorted[lo] : NULL;
}

g2f_name_ref *g2f_names_of_table(const g2f_table *t) {
    g2f_name_ref *r = g2f_alloc_array(t->count ? t->count : 1, sizeof *r);
    if (!r) return NULL;
    for (size_t i = 0; i < t->count; i++) r[i] = g2f_name_ref_of(t->tensors[i].name, i);
    g2f_names_sort(r, t->count);
    return r;
}

size_t g2f_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 63 || lb >= 63) return 99;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *g2f_closest_name(const char *word, const char *const *names, size_t stride, size_t n, size_t max_edits) {
    const char *best = NULL;
    size_t bd = max_edits + 1;
    for (size_t i = 0; i < n; i++) {
        const char *cand = *(const char *const *)(const void *)((const char *)names + i * stride);
        if (!cand) continue;
        size_t d = g2f_edit_distance(word, cand);
        if (d < bd) bd = d, best = cand;
    }
    return best;
}
