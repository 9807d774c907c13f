/* Fuzz target: the restricted pickle machine (g2f_pickle_parse), plus a
 * bounded walk over the value tree it returns (shared and cyclic containers
 * are allowed: the walk is capped by depth and by the value count). */
#include "fuzz_util.h"
#include "g2f_pickle.h"

static void pickle_walk(const g2f_pickle_value *v, unsigned depth, size_t *budget) {
    if (!v || depth > G2F_PICKLE_MAX_DEPTH + 2 || *budget == 0) return;
    (*budget)--;
    (void)g2f_pickle_kind_name(v->kind);
    switch (v->kind) {
    case G2F_PV_STR:
        if (v->u.str.s[v->u.str.len] != '\0') abort();
        break;
    case G2F_PV_TUPLE:
    case G2F_PV_LIST:
        for (size_t i = 0; i < v->u.seq.count; i++) pickle_walk(v->u.seq.items[i], depth + 1, budget);
        break;
    case G2F_PV_DICT:
        for (size_t i = 0; i < v->u.dict.count; i++) {
            pickle_walk(v->u.dict.keys[i], depth + 1, budget);
            pickle_walk(v->u.dict.values[i], depth + 1, budget);
        }
        break;
    case G2F_PV_TENSOR:
        if (v->u.tensor->ndim > G2F_MAX_DIMS) abort();
        break;
    default:
        break;
    }
}

int g2f_fuzz_pickle(const uint8_t *data, size_t size) {
    g2f_pickle *p = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_pickle_parse(data, size, "fuzz: data.pkl", &p, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) {
        size_t budget = 4 * g2f_pickle_value_count(p) + 16;
        pickle_walk(g2f_pickle_root(p), 0, &budget);
    }
    g2f_pickle_free(p);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_pickle(data, size); }
#endif
