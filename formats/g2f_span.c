/* g2f_span: see g2f_span.h. */
#include "g2f_span.h"

#include <stdlib.h>

static int span_cmp(const void *a, const void *b) {
    const g2f_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

g2f_span_fault g2f_spans_check(g2f_span *spans, size_t n, int tile, uint64_t total, g2f_span_report *r) {
    if (n > 1) qsort(spans, n, sizeof *spans, span_cmp);
    uint64_t reach = 0;
    size_t last = 0; /* the span that set reach */
    for (size_t i = 0; i < n; i++) {
        if (!tile && spans[i].begin == spans[i].end) continue;
        if (spans[i].begin < reach) {
            *r = (g2f_span_report){i, last, reach};
            return G2F_SPAN_OVERLAP;
        }
        if (tile && spans[i].begin > reach) {
            *r = (g2f_span_report){i, last, reach};
            return G2F_SPAN_GAP;
        }
        reach = spans[i].end;
        last = i;
    }
    if (tile && reach != total) {
        *r = (g2f_span_report){n, last, reach};
        return G2F_SPAN_SHORT;
    }
    return G2F_SPAN_OK;
}
