/* The restricted pickle machine: every limit of formats/g2f_pickle.h and of
 * SECURITY.md's Limits table (stack, MARKs, nesting, memo, integers, the
 * allocation cap), and every length it reads against the bytes remaining, at
 * the exact limit (accepted) and one past it (refused with the message). */
#include "bounds.h"
#include "g2f_pickle.h"

/* Runs the machine over an exact copy of b; cap 0: the default cap. */
static g2f_status pk_parse(const bytes *b, uint64_t cap, g2f_error *err) {
    unsigned char *q = b_exact(b);
    g2f_pickle *p = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = cap ? g2f_pickle_parse_capped(q, b->n, cap, "data.pkl", &p, err)
                        : g2f_pickle_parse(q, b->n, "data.pkl", &p, err);
    g2f_pickle_free(p);
    free(q);
    return st;
}

static void start(bytes *b) {
    b->n = 0;
    pk_op(b, 0x80);
    pk_op(b, 2);
}
static void repeat(bytes *b, unsigned op, size_t n) { b_fill(b, (int)op, n); }

/* pickle limits: at most G2F_PICKLE_MAX_STACK (1,000,000) items on the stack */
static void pickle_should_take_a_stack_up_to_the_limit(void) {
    bytes b = {0};
    g2f_error err;
    start(&b);
    repeat(&b, 'N', G2F_PICKLE_MAX_STACK);
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, 0, &err), err);
    b.n--;
    pk_op(&b, 'N');
    pk_op(&b, '.');
    REFUSED(pk_parse(&b, 0, &err), err, "stack deeper than the limit of 1000000 items at offset 1000002 (opcode NONE)");
    b_free(&b);
}

/* pickle limits: at most G2F_PICKLE_MAX_MARKS (64) open MARKs */
static void pickle_should_take_marks_up_to_the_limit(void) {
    bytes b = {0};
    g2f_error err;
    start(&b);
    repeat(&b, '(', G2F_PICKLE_MAX_MARKS);
    repeat(&b, 't', G2F_PICKLE_MAX_MARKS);
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, 0, &err), err);
    start(&b);
    repeat(&b, '(', G2F_PICKLE_MAX_MARKS + 1);
    repeat(&b, 't', G2F_PICKLE_MAX_MARKS + 1);
    pk_op(&b, '.');
    REFUSED(pk_parse(&b, 0, &err), err, "MARKs nested deeper than the limit of 64 at offset 66 (opcode MARK)");
    b_free(&b);
}

/* pickle limits: containers nested at most G2F_PICKLE_MAX_DEPTH (64) deep,
 * through tuples, lists and dicts */
static void pickle_should_take_nesting_up_to_the_limit(void) {
    bytes b = {0};
    g2f_error err;
    for (unsigned depth = G2F_PICKLE_MAX_DEPTH; depth <= G2F_PICKLE_MAX_DEPTH + 1; depth++) {
        /* () is 1 deep, each TUPLE1 one more */
        start(&b);
        pk_op(&b, ')');
        repeat(&b, 0x85, depth - 1);
        pk_op(&b, '.');
        if (depth == G2F_PICKLE_MAX_DEPTH) ACCEPTED(pk_parse(&b, 0, &err), err);
        else REFUSED(pk_parse(&b, 0, &err), err, "containers nested deeper than the limit of 64");
        /* depth lists, each appended to the one below */
        start(&b);
        repeat(&b, ']', depth);
        repeat(&b, 'a', depth - 1);
        pk_op(&b, '.');
        if (depth == G2F_PICKLE_MAX_DEPTH) ACCEPTED(pk_parse(&b, 0, &err), err);
        else REFUSED(pk_parse(&b, 0, &err), err, "containers nested deeper than the limit of 64 at offset");
        /* depth dicts, each set as a value of the one below */
        start(&b);
        for (unsigned i = 0; i < depth; i++) {
            pk_op(&b, '}');
            pk_op(&b, 'N'); /* the key of the next one */
        }
        b.n--;
        for (unsigned i = 1; i < depth; i++) pk_op(&b, 's');
        pk_op(&b, '.');
        if (depth == G2F_PICKLE_MAX_DEPTH) ACCEPTED(pk_parse(&b, 0, &err), err);
        else REFUSED(pk_parse(&b, 0, &err), err, "(opcode SETITEM)");
    }
    b_free(&b);
}

/* pickle limits: memo indexes below G2F_PICKLE_MAX_MEMO (10,000,000) */
static void pickle_should_take_memo_indexes_up_to_the_limit(void) {
    bytes b = {0};
    g2f_error err;
    start(&b);
    pk_op(&b, 'N');
    pk_op(&b, 'r'); /* LONG_BINPUT */
    b_u32(&b, G2F_PICKLE_MAX_MEMO - 1);
    pk_op(&b, '.');
    /* the default cap of a 9-byte pickle stops the memo growing to 10^7
     * entries: the index passes its own check */
    PASSES_CHECK(pk_parse(&b, 0, &err), err, "above the limit", "needs more than 1049152 bytes of memory");
    ACCEPTED(pk_parse(&b, 256u << 20, &err), err); /* with room: 134 MB for the memo */
    b_put(&b, 4, G2F_PICKLE_MAX_MEMO, 4);
    REFUSED(pk_parse(&b, 256u << 20, &err), err, "memo index 10000000 is above the limit of 10000000");
    /* BINGET: below the memo's length, and set */
    start(&b);
    pk_op(&b, 'N');
    pk_op(&b, 'q');
    pk_op(&b, 1); /* memo[1]: the memo has 2 entries, memo[0] unset */
    pk_op(&b, 'h');
    pk_op(&b, 1);
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, 0, &err), err);
    b.p[b.n - 2] = 2;
    REFUSED(pk_parse(&b, 0, &err), err, "memo index 2 out of range or unset (memo has 2 entries)");
    b.p[b.n - 2] = 0;
    REFUSED(pk_parse(&b, 0, &err), err, "memo index 0 out of range or unset (memo has 2 entries)");
    b_free(&b);
}

/* pickle limits: LONG1 of at most G2F_PICKLE_MAX_INT_BYTES (8) bytes; PROTO
 * at most 5 */
static void pickle_should_take_integers_and_protocols_up_to_the_limit(void) {
    bytes b = {0};
    g2f_error err;
    for (unsigned n = 8; n <= 9; n++) {
        start(&b);
        pk_op(&b, 0x8a);
        pk_op(&b, n);
        b_fill(&b, 0xff, n);
        pk_op(&b, '.');
        if (n == 8) ACCEPTED(pk_parse(&b, 0, &err), err);
        else REFUSED(pk_parse(&b, 0, &err), err, "integer does not fit 64 bits at offset 2 (opcode LONG1)");
    }
    /* LONG1 values: sign-extended below 8 bytes, taken as they are at 8 */
    static const struct {
        unsigned n;
        unsigned char bytes[8];
        int64_t value;
    } longs[] = {{0, {0}, 0},
                 {1, {0x80}, -128},
                 {7, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -1},
                 {7, {0, 0, 0, 0, 0, 0, 0x40}, 1ll << 54},
                 {8, {0, 0, 0, 0, 0, 0, 0, 0x80}, INT64_MIN},
                 {8, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, INT64_MAX}};
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        start(&b);
        pk_op(&b, 0x8a);
        pk_op(&b, longs[i].n);
        b_bytes(&b, longs[i].bytes, longs[i].n);
        pk_op(&b, '.');
        g2f_pickle *p = NULL;
        CHECK(g2f_pickle_parse(b.p, b.n, "data.pkl", &p, &err) == G2F_OK);
        const g2f_pickle_value *v = p ? g2f_pickle_root(p) : NULL;
        CHECK(v && v->kind == G2F_PV_INT && v->u.i == longs[i].value);
        g2f_pickle_free(p);
    }
    start(&b);
    pk_op(&b, 'N');
    pk_op(&b, '.');
    b.p[1] = 5;
    ACCEPTED(pk_parse(&b, 0, &err), err);
    b.p[1] = 6;
    REFUSED(pk_parse(&b, 0, &err), err, "pickle protocol above 5 at offset 0 (opcode PROTO)");
    b_free(&b);
}

/* pickle limits: all allocations together at most the cap. The first
 * opcode that pushes a value charges the stack's first 8 slots, the value
 * registry's first 8 slots and the value; nothing else is allocated. */
static void pickle_should_allocate_up_to_the_cap(void) {
    bytes b = {0};
    g2f_error err;
    const uint64_t need = 2 * 8 * sizeof(void *) + sizeof(g2f_pickle_value);
    start(&b);
    pk_op(&b, 'N');
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, need, &err), err);
    REFUSED(pk_parse(&b, need - 1, &err), err, "needs more than");
    start(&b); /* 8 items fill the stack's first 8 slots exactly: no more memory */
    repeat(&b, 'N', 8);
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, need, &err), err);
    start(&b);
    pk_op(&b, 'N');
    pk_op(&b, '.');
    char needle[96];
    snprintf(needle, sizeof needle, "needs more than %llu bytes of memory, the limit for a 4-byte pickle",
             (unsigned long long)(need - 1));
    REFUSED(pk_parse(&b, need - 1, &err), err, needle);
    b_free(&b);
}

/* The least cap under which b runs. */
static uint64_t least_cap(const bytes *b) {
    uint64_t lo = 1, hi = 1ull << 32;
    g2f_error err;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (pk_parse(b, mid, &err) == G2F_OK) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* A pickle of one None memoized at index memo, a BINUNICODE string of
 * str bytes, then pairs PROTO opcodes and nones NONE opcodes (neither
 * allocates: PROTO does nothing, None is shared and the stack keeps its
 * first 8 slots), then STOP. */
static void cap_probe(bytes *b, uint32_t memo, size_t str, size_t pairs, size_t nones) {
    start(b);
    pk_op(b, 'N');
    pk_op(b, 'r');
    b_u32(b, memo);
    pk_op(b, 'X');
    b_u32(b, (uint32_t)str);
    b_fill(b, 's', str);
    for (size_t i = 0; i < pairs; i++) {
        pk_op(b, 0x80);
        pk_op(b, 2);
    }
    repeat(b, 'N', nones);
    pk_op(b, '.');
}

/* pickle limits: the default cap is G2F_PICKLE_ALLOC_FACTOR (64) x the
 * pickle's size + G2F_PICKLE_ALLOC_SLACK (1 MiB), to the byte: a pickle
 * that needs exactly that runs, one that needs a byte more does not. The
 * numbers are SECURITY.md's, written out. */
#define MIB (1ull << 20)
static void pickle_should_allocate_up_to_64_times_its_size_plus_1_mib(void) {
    bytes b = {0};
    g2f_error err;
    /* what one more string byte costs (1) and what the padding costs (0) */
    cap_probe(&b, 1u << 18, 0, 0, 0);
    const uint64_t base = least_cap(&b);
    const size_t base_size = b.n;
    cap_probe(&b, 1u << 18, 1, 1, 1);
    CHECK(least_cap(&b) == base + 1);
    /* choose the string so that need - cap is a multiple of 64, then pad */
    size_t str = 0;
    uint64_t need = 0, cap = 0;
    for (; str < 64; str++) {
        need = base + str;
        cap = 64 * (uint64_t)(base_size + str) + MIB;
        if (need > cap && (need - cap) % 64 == 0) break;
    }
    CHECK(str < 64);
    const size_t pad = (size_t)((need - cap) / 64); /* bytes of padding */
    const size_t nones = 2 - pad % 2, pairs = (pad - nones) / 2; /* at least one NONE to take out below */
    cap_probe(&b, 1u << 18, str, pairs, nones);
    CHECK(least_cap(&b) == 64 * (uint64_t)b.n + MIB);
    ACCEPTED(pk_parse(&b, 0, &err), err);
    /* one string byte more, one NONE less: the same size, one byte more need */
    cap_probe(&b, 1u << 18, str + 1, pairs, nones - 1);
    CHECK(least_cap(&b) == 64 * (uint64_t)b.n + MIB + 1);
    REFUSED(pk_parse(&b, 0, &err), err, "needs more than");
    b_free(&b);
}

/* pickle: every length is checked against the bytes remaining, for each
 * string opcode (its length field, then its bytes) */
static void pickle_should_read_strings_up_to_the_last_byte(void) {
    static const struct {
        unsigned op, len_bytes;
        const char *name;
    } ops[] = {{'X', 4, "BINUNICODE"}, {0x8c, 1, "SHORT_BINUNICODE"}, {0x8d, 8, "BINUNICODE8"},
               {'T', 4, "BINSTRING"},  {'U', 1, "SHORT_BINSTRING"}};
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char needle[96];
        /* a string then STOP: accepted */
        start(&b);
        pk_op(&b, ops[i].op);
        b_le(&b, 3, (int)ops[i].len_bytes);
        b_str(&b, "abc");
        pk_op(&b, '.');
        ACCEPTED(pk_parse(&b, 0, &err), err);
        /* its bytes reaching the end of the pickle: no STOP, but read */
        b.n--;
        PASSES_CHECK(pk_parse(&b, 0, &err), err, "truncated", "without STOP");
        /* one byte past the end */
        b_put(&b, 3, 4, (int)ops[i].len_bytes);
        snprintf(needle, sizeof needle, "truncated: needs 4 bytes, 3 remain at offset 2 (opcode %s)", ops[i].name);
        REFUSED(pk_parse(&b, 0, &err), err, needle);
        /* the length field itself cut by one byte */
        b.n = 3 + ops[i].len_bytes - 1;
        snprintf(needle, sizeof needle, "truncated: needs %u bytes, %u remain", ops[i].len_bytes, ops[i].len_bytes - 1);
        REFUSED(pk_parse(&b, 0, &err), err, needle);
    }
    /* BINSTRING's length is signed: 2^31 - 1 is a length, 2^31 is negative */
    start(&b);
    pk_op(&b, 'T');
    b_u32(&b, 0x7fffffffu);
    PASSES_CHECK(pk_parse(&b, 0, &err), err, "negative", "truncated: needs 2147483647 bytes, 0 remain");
    b_put(&b, 3, 0x80000000u, 4);
    REFUSED(pk_parse(&b, 0, &err), err, "negative string length at offset 2 (opcode BINSTRING)");
    /* FRAME: its length may reach the end of the pickle, not past it */
    start(&b);
    pk_op(&b, 0x95);
    b_u64(&b, 2);
    pk_op(&b, 'N');
    pk_op(&b, '.');
    ACCEPTED(pk_parse(&b, 0, &err), err);
    b_put(&b, 3, 3, 8);
    REFUSED(pk_parse(&b, 0, &err), err, "FRAME longer than the bytes remaining");
    b_free(&b);
}

/* pickle: GLOBAL names are lines of at most 256 bytes */
static void pickle_should_take_global_lines_up_to_256_bytes(void) {
    char line[258];
    bytes b = {0};
    g2f_error err;
    for (size_t len = 256; len <= 257; len++) {
        memset(line, 'm', len);
        line[len] = '\0';
        for (int which = 0; which < 2; which++) {
            start(&b);
            pk_global(&b, which ? "os" : line, which ? line : "system");
            pk_op(&b, '.');
            if (len == 256) PASSES_CHECK(pk_parse(&b, 0, &err), err, "not a line of at most", "is not allowed");
            else REFUSED(pk_parse(&b, 0, &err), err, "GLOBAL name is not a line of at most 256 bytes");
        }
    }
    b_free(&b);
}

/* pickle: no opcode pops below the innermost MARK (TUPLE1-3 need 1-3 items
 * above it, SETITEM a dict and 2 items, APPEND a list and 1 item, STOP and
 * BINPUT one item), nor below the bottom of the stack */
static void pickle_should_pop_down_to_the_mark_and_no_further(void) {
    static const struct {
        const char *ops;    /* after PROTO 2 */
        const char *needle; /* NULL: accepted */
    } cases[] = {
        {"(N\x85t.", NULL},   {"(\x85", "stack underflow at offset 3 (opcode TUPLE1)"},
        {"(NN\x86t.", NULL},  {"(N\x86", "stack underflow at offset 4 (opcode TUPLE2)"},
        {"(NNN\x87t.", NULL}, {"(NN\x87", "stack underflow at offset 5 (opcode TUPLE3)"},
        {"(}NNst.", NULL},     {"}(NNs", "stack underflow at offset 6 (opcode SETITEM)"},
        {"(]Nat.", NULL},      {"](Na", "stack underflow at offset 5 (opcode APPEND)"},
        {"(N.", NULL},         {"N(.", "stack underflow at offset 4 (opcode STOP)"},
        {"Nq\x01.", NULL},     {"N(q\x01t.", "stack underflow at offset 4 (opcode BINPUT)"},
        {"q\x01N.", "stack underflow at offset 2 (opcode BINPUT)"},
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        start(&b);
        b_str(&b, cases[i].ops);
        if (cases[i].needle) REFUSED(pk_parse(&b, 0, &err), err, cases[i].needle);
        else ACCEPTED(pk_parse(&b, 0, &err), err);
    }
    b_free(&b);
}

/* pickle: _rebuild_tensor_v2 takes at most G2F_MAX_DIMS (8) dimensions */
static void pickle_should_rebuild_tensors_of_up_to_eight_dimensions(void) {
    const uint32_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    bytes b = {0};
    g2f_error err;
    for (size_t ndim = 8; ndim <= 9; ndim++) {
        start(&b);
        pk_tensor(&b, "FloatStorage", "0", 1, 0, ndim, ones, ones);
        pk_op(&b, '.');
        if (ndim == 8) ACCEPTED(pk_parse(&b, 0, &err), err);
        else REFUSED(pk_parse(&b, 0, &err), err, "_rebuild_tensor_v2: more than 8 dimensions");
    }
    b_free(&b);
}

/* g2f_pickle_kind_name: every kind has a name, and past the last there is "?" */
static void pickle_should_name_kinds_up_to_the_last(void) {
    CHECK(strcmp(g2f_pickle_kind_name(G2F_PV_TENSOR), "tensor") == 0);
    CHECK(strcmp(g2f_pickle_kind_name(G2F_PV_COUNT), "?") == 0);
}

int main(void) {
    RUN(pickle_should_take_a_stack_up_to_the_limit);
    RUN(pickle_should_take_marks_up_to_the_limit);
    RUN(pickle_should_take_nesting_up_to_the_limit);
    RUN(pickle_should_take_memo_indexes_up_to_the_limit);
    RUN(pickle_should_take_integers_and_protocols_up_to_the_limit);
    RUN(pickle_should_allocate_up_to_the_cap);
    RUN(pickle_should_allocate_up_to_64_times_its_size_plus_1_mib);
    RUN(pickle_should_read_strings_up_to_the_last_byte);
    RUN(pickle_should_take_global_lines_up_to_256_bytes);
    RUN(pickle_should_pop_down_to_the_mark_and_no_further);
    RUN(pickle_should_rebuild_tensors_of_up_to_eight_dimensions);
    RUN(pickle_should_name_kinds_up_to_the_last);
    CHECK_EXIT();
}
