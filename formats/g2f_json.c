/* g2f_json: see g2f_json.h. */
#include "g2f_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_names.h"

typedef struct scratch {
    g2f_name_ref *refs;
    size_t cap;
} scratch;

/* Objects of at most this many keys are checked pairwise (at most 28
 * comparisons), saving the sort for the large ones. */
#define PAIRWISE_MAX 8

static int check_object(const cJSON *obj, scratch *sc, const char **key) {
    size_t n = 0;
    for (const cJSON *e = obj->child; e; e = e->next) n++;
    if (n <= PAIRWISE_MAX) {
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0) return *key = b->string, 1;
        return 0;
    }
    if (n > sc->cap) {
        g2f_name_ref *r = g2f_alloc_array(n, sizeof *r);
        if (!r) return -1;
        free(sc->refs);
        sc->refs = r;
        sc->cap = n;
    }
    size_t i = 0;
    for (const cJSON *e = obj->child; e; e = e->next, i++) sc->refs[i] = g2f_name_ref_of(e->string, i);
    g2f_names_sort(sc->refs, n);
    size_t d = g2f_names_find_dup(sc->refs, n);
    if (!d) return 0;
    *key = sc->refs[d].s;
    return 1;
}

/* 1: found (in *object, *key); 0: none; -1: out of memory. */
static int walk(const cJSON *v, scratch *sc, const cJSON **object, const char **key) {
    if (cJSON_IsObject(v)) {
        int r = check_object(v, sc, key);
        if (r) {
            if (r > 0) *object = v;
            return r;
        }
    }
    if (cJSON_IsObject(v) || cJSON_IsArray(v))
        for (const cJSON *c = v->child; c; c = c->next) {
            int r = walk(c, sc, object, key);
            if (r) return r;
        }
    return 0;
}

g2f_status g2f_json_find_duplicate_key(const cJSON *root, const cJSON **object, const char **key, const char *label,
                                       g2f_error *err) {
    scratch sc = {NULL, 0};
    *object = NULL;
    *key = NULL;
    int r = root ? walk(root, &sc, object, key) : 0;
    free(sc.refs);
    if (r < 0) {
        *object = NULL;
        *key = NULL;
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory checking JSON keys", label);
    }
    return G2F_OK;
}

int g2f_json_u64(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0) || d >= 9007199254740992.0 || floor(d) != d) return 0; /* 2^53 + 1 reads as 2^53 */
    *out = (uint64_t)d;
    return 1;
}

size_t g2f_json_find_nul(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\0') return i;
        if (text[i] != '\\') continue;
        if (len - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0) return i;
        i++; /* the escaped character: "\\u0000" is a backslash, then "u0000" */
    }
    return len;
}
