/* g2f_span: where the tensors of a file lie, checked by sorting.
 *
 * safetensors and GGUF give each tensor a byte range [begin, end) of a data
 * section; no two may overlap (two tensors aliasing the same bytes, or one
 * running into the next, is malformed or hostile), and safetensors also
 * requires the ranges to tile the section exactly. Sorting by begin makes
 * both one pass: n log n, whatever the count.
 *
 * Internal to the readers.
 */
#ifndef G2F_SPAN_H
#define G2F_SPAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct g2f_span {
    uint64_t begin, end; /* begin <= end, relative to the data section */
    size_t index;        /* the caller's tensor index */
} g2f_span;

typedef enum g2f_span_fault {
    G2F_SPAN_OK,
    G2F_SPAN_OVERLAP, /* spans[at] begins before spans[prev] ends */
    G2F_SPAN_GAP,     /* tiling only: bytes [reach, spans[at].begin) belong to no span */
    G2F_SPAN_SHORT,   /* tiling only: the spans end at reach, before the section's end */
} g2f_span_fault;

typedef struct g2f_span_report {
    size_t at;      /* position in the sorted spans of the offending one */
    size_t prev;    /* position of the span it overlaps (OVERLAP) */
    uint64_t reach; /* where the spans before it ended */
} g2f_span_report;

/* Sorts spans by (begin, end, index) and checks them.
 * tile != 0 (safetensors): the spans must tile [0, total) exactly: each
 *   begins where the previous ended, an empty span included (an empty span
 *   inside another is an overlap), the last ends at total.
 * tile == 0 (GGUF): no two non-empty spans overlap; gaps (alignment
 *   padding) are allowed and empty spans occupy nothing; total is unused.
 * On a fault, *r says where (spans left sorted). */
g2f_span_fault g2f_spans_check(g2f_span *spans, size_t n, int tile, uint64_t total, g2f_span_report *r);

#endif
