/* restricted pickle machine: pickles written here opcode by opcode, the way
 * torch.save writes them, then one refusal per rule (globals, opcodes, memo,
 * stack, nesting, truncation, limits), each asserting status and message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_pickle.h"
#include "pickle_writer.h"

static g2f_status run(g2f_pickle **p, g2f_error *err) {
    *p = NULL;
    return g2f_pickle_parse(pk, pn, "t.pt: data.pkl", p, err);
}

static void expect_error(const char *needle, int line) {
    g2f_pickle *p;
    g2f_error err = {0};
    g2f_status s = run(&p, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "t.pt: data.pkl")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(p == NULL);
    g2f_pickle_free(p);
}
#define EXPECT_ERROR(needle) expect_error(needle, __LINE__)

static const g2f_pickle_value *dict_get(const g2f_pickle_value *d, const char *key) {
    if (!d || d->kind != G2F_PV_DICT) return NULL;
    for (size_t i = 0; i < d->u.dict.count; i++)
        if (d->u.dict.keys[i]->kind == G2F_PV_STR && !strcmp(d->u.dict.keys[i]->u.str.s, key))
            return d->u.dict.values[i];
    return NULL;
}

/* ---- tests -------------------------------------------------------------- */

/* {'w': tensor (2, 3) at offset 1 of a 7-float storage, 'p': the same tensor
 *  through _rebuild_parameter, 'meta': [None, True, -5, 2**40, 1.5, 'é'],
 *  'h': HalfStorage tensor} then BUILD of the OrderedDict's _metadata. */
static void pickle_should_read_what_torch_save_writes(void) {
    const int shape[2] = {2, 3}, stride[2] = {3, 1};
    start();
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op('q'); op(0);                          /* BINPUT 0 */
    op('(');
    ustr("w");
    tensor("FloatStorage", "0", 7, 1, 2, shape, stride);
    op('q'); op(1);
    ustr("p");
    global("torch._utils", "_rebuild_parameter");
    op('h'); op(1);                          /* BINGET 1: the same tensor */
    op(0x88);
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op(0x87);                                /* TUPLE3 */
    op('R');
    ustr("meta");
    op(']');
    op('(');
    op('N');
    op(0x88);
    binint(-5);
    op(0x8a); op(6); u32le(0); op(0); op(1); /* LONG1 6 bytes: 2**40 */
    op('G');                                 /* BINFLOAT 1.5, big-endian */
    op(0x3f); op(0xf8); for (int i = 0; i < 6; i++) op(0);
    op(0x8c); op(2); op(0xc3); op(0xa9);     /* SHORT_BINUNICODE 'é' */
    op('e');                                 /* APPENDS */
    ustr("h");
    op(0x8c); op(12); memcpy(pk + pn, "torch._utils", 12); pn += 12;
    op(0x8c); op(18); memcpy(pk + pn, "_rebuild_tensor_v2", 18); pn += 18;
    op(0x93);                                /* STACK_GLOBAL */
    op(0x94);                                /* MEMOIZE */
    op('(');
    op('(');
    ustr("storage");
    global("torch", "HalfStorage");
    ustr("12");
    ustr("cuda:0");
    binint(4);
    op('t');
    op('Q');
    binint(0);
    op('('); binint(4); op('t');
    op('('); binint(1); op('t');
    op(0x89);
    op('}');
    op('t');
    op('R');
    op('u');                                 /* SETITEMS */
    op('}');                                 /* BUILD state: {'_metadata': {}} */
    ustr("_metadata");
    op('}');
    op('s');
    op('b');
    op('.');

    g2f_pickle *p = NULL;
    g2f_error err = {0};
    CHECK(run(&p, &err) == G2F_OK);
    if (!p) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const g2f_pickle_value *root = g2f_pickle_root(p);
    CHECK(root->kind == G2F_PV_DICT && root->u.dict.count == 4);
    const g2f_pickle_value *w = dict_get(root, "w"), *pp = dict_get(root, "p"), *m = dict_get(root, "meta");
    CHECK(w && w->kind == G2F_PV_TENSOR && pp == w);
    if (w && w->kind == G2F_PV_TENSOR) {
        const g2f_pickle_tensor *t = w->u.tensor;
        CHECK(t->storage.dtype == G2F_DTYPE_F32 && !strcmp(t->storage.key, "0") && t->storage.numel == 7);
        CHECK(!strcmp(t->storage.location, "cpu") && !strcmp(t->storage.type_name, "FloatStorage"));
        CHECK(t->offset == 1 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
        CHECK(t->stride[0] == 3 && t->stride[1] == 1);
    }
    CHECK(m && m->kind == G2F_PV_LIST && m->u.seq.count == 6);
    if (m && m->kind == G2F_PV_LIST && m->u.seq.count == 6) {
        g2f_pickle_value **it = m->u.seq.items;
        CHECK(it[0]->kind == G2F_PV_NONE && it[1]->kind == G2F_PV_BOOL && it[1]->u.b);
        CHECK(it[2]->kind == G2F_PV_INT && it[2]->u.i == -5);
        CHECK(it[3]->kind == G2F_PV_INT && it[3]->u.i == (int64_t)1 << 40);
        CHECK(it[4]->kind == G2F_PV_FLOAT && it[4]->u.f == 1.5);
        CHECK(it[5]->kind == G2F_PV_STR && it[5]->u.str.len == 2 && !strcmp(it[5]->u.str.s, "\xc3\xa9"));
    }
    const g2f_pickle_value *h = dict_get(root, "h");
    CHECK(h && h->kind == G2F_PV_TENSOR);
    if (h && h->kind == G2F_PV_TENSOR)
        CHECK(h->u.tensor->storage.dtype == G2F_DTYPE_F16 && !strcmp(h->u.tensor->storage.location, "cuda:0"));
    CHECK(g2f_pickle_value_count(p) > 10);
    g2f_pickle_free(p);
    g2f_pickle_free(NULL);
}

static void pickle_should_refuse_globals_outside_the_allowlist(void) {
    start();
    global("os", "system");
    ustr("echo pwned");
    op(0x85);
    op('R');
    op('.');
    EXPECT_ERROR("data.pkl: GLOBAL 'os system' is not allowed (gpt2ffn reads state dicts only)");
    start();
    ustr("builtins");
    ustr("eval");
    op(0x93);
    EXPECT_ERROR("GLOBAL 'builtins eval' is not allowed");
    start();
    global("torch", "load"); /* a torch name, but not a data constructor */
    EXPECT_ERROR("GLOBAL 'torch load' is not allowed");
    start();
    global("torch", "FloatStorage"); /* allowed, but not callable */
    op(')');
    op('R');
    EXPECT_ERROR("REDUCE of 'torch FloatStorage' is not supported");
    start();
    ustr("not callable");
    op(')');
    op('R');
    EXPECT_ERROR("REDUCE of something that is not an allowed global");
    start();
    global("collections", "OrderedDict");
    ustr("x");
    op(0x85);
    op('R');
    EXPECT_ERROR("OrderedDict() with arguments is not supported");
}

static void pickle_should_refuse_unknown_opcodes(void) {
    start();
    op('i'); /* INST: builds arbitrary objects */
    EXPECT_ERROR("opcode INST (0x69) at offset 2 is not supported");
    start();
    op(0x8f); /* EMPTY_SET */
    EXPECT_ERROR("opcode EMPTY_SET (0x8f) at offset 2");
    start();
    op(']');
    op(0xff);
    EXPECT_ERROR("unknown opcode 0xff at offset 3");
    start();
    pk[1] = 6;
    EXPECT_ERROR("pickle protocol above 5");
}

static void pickle_should_reject_memo_index_out_of_range(void) {
    start();
    op('h');
    op(5);
    EXPECT_ERROR("memo index 5 out of range or unset (memo has 0 entries) at offset 2 (opcode BINGET)");
    start();
    op('N');
    op('q');
    op(3);    /* memo[3] set, memo[1] never */
    op('h');
    op(1);
    EXPECT_ERROR("memo index 1 out of range or unset (memo has 4 entries)");
    start();
    op('N');
    op('r');
    u32le(0xfffffff0u);
    EXPECT_ERROR("memo index 4294967280 is above the limit of 10000000");
    start();
    op('j');
    u32le(70000);
    EXPECT_ERROR("memo index 70000 out of range");
}

static void pickle_should_reject_stack_underflow(void) {
    start();
    op('.');
    EXPECT_ERROR("stack underflow at offset 2 (opcode STOP)");
    start();
    op('N');
    op('a'); /* APPEND: needs a list below */
    EXPECT_ERROR("stack underflow at offset 3 (opcode APPEND)");
    start();
    op('N');
    op('(');
    op(0x86); /* TUPLE2 may not reach below the MARK */
    EXPECT_ERROR("stack underflow at offset 4 (opcode TUPLE2)");
    start();
    op(']');
    op('(');
    op('N');
    op('s'); /* SETITEM with one item above the mark */
    EXPECT_ERROR("stack underflow");
    start();
    op('t');
    EXPECT_ERROR("no MARK to close");
    start();
    op('N');
    op('q');
    op(0);
    op('(');
    op('q');
    op(1); /* PUT with nothing above the mark */
    EXPECT_ERROR("stack underflow at offset 6 (opcode BINPUT)");
    start();
    op('}');
    op('N');
    op('a');
    EXPECT_ERROR("expected a list below the items, found a dict");
}

static void pickle_should_reject_deep_nesting(void) {
    start();
    for (int i = 0; i < 70; i++) op(']');
    for (int i = 0; i < 69; i++) op('a'); /* each list appended into the one below */
    op('.');
    EXPECT_ERROR("containers nested deeper than the limit of 64");
    start();
    for (int i = 0; i < 65; i++) op('(');
    EXPECT_ERROR("MARKs nested deeper than the limit of 64");
    /* 64 levels are fine. */
    start();
    for (int i = 0; i < 64; i++) op(']');
    for (int i = 0; i < 63; i++) op('a');
    op('.');
    g2f_pickle *p;
    g2f_error err = {0};
    CHECK(run(&p, &err) == G2F_OK);
    g2f_pickle_free(p);
}

static void pickle_should_reject_truncation_and_trailing_bytes(void) {
    start();
    op('X');
    u32le(1000);
    op('a');
    EXPECT_ERROR("truncated: needs 1000 bytes, 1 remain at offset 2 (opcode BINUNICODE)");
    start();
    op('X');
    op(1);
    EXPECT_ERROR("truncated: needs 4 bytes");
    start();
    op(0x8d); /* BINUNICODE8 with a 2^63 length */
    u32le(0);
    u32le(0x80000000u);
    EXPECT_ERROR("truncated");
    start();
    op('T');
    u32le(0xffffffffu); /* BINSTRING -1 */
    EXPECT_ERROR("negative string length");
    start();
    op('c');
    op('o');
    op('s');
    EXPECT_ERROR("GLOBAL name is not a line");
    start();
    op('N');
    EXPECT_ERROR("ends at offset 3 without STOP");
    start();
    op('N');
    op('.');
    op('N');
    EXPECT_ERROR("1 bytes after STOP at offset 3");
    start();
    op(0x8a);
    op(9);
    for (int i = 0; i < 9; i++) op(1);
    EXPECT_ERROR("integer does not fit 64 bits");
    start();
    op(0x95);
    u32le(100);
    u32le(0);
    EXPECT_ERROR("FRAME longer than the bytes remaining");
}

static void pickle_should_reject_malformed_torch_calls(void) {
    const int shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, shape[1] = {2}, neg[1] = {-1};
    start();
    ustr("storage");
    op(0x85);
    op('Q');
    EXPECT_ERROR("persistent id is not torch's ('storage', <storage type>, key, location, numel)");
    start();
    tensor("FloatStorage", "0", 1, 0, 9, shape9, shape9);
    EXPECT_ERROR("_rebuild_tensor_v2: more than 8 dimensions");
    start();
    tensor("FloatStorage", "0", 2, 0, 1, shape, neg);
    EXPECT_ERROR("_rebuild_tensor_v2: size and stride must be ints >= 0");
    start();
    tensor("FloatStorage", "0", 2, -3, 1, shape, shape);
    EXPECT_ERROR("storage offset is not an int >= 0");
    start();
    global("torch._utils", "_rebuild_tensor_v2");
    op('N');
    op(0x85);
    op('R');
    EXPECT_ERROR("_rebuild_tensor_v2 needs 6 or 7 arguments");
    start();
    global("torch._utils", "_rebuild_parameter");
    op('N');
    op('N');
    op('N');
    op(0x87);
    op('R');
    EXPECT_ERROR("_rebuild_parameter needs (tensor, requires_grad, hooks)");
    start();
    op('N');
    op('N');
    op('b'); /* BUILD on None */
    EXPECT_ERROR("expected a dict below the items, found a None");
}

/* 500,000 empty dicts: each a new value, so far more memory than 64x the
 * pickle's size; the cap must stop it with a message. */
static void pickle_should_bound_allocations(void) {
    start();
    for (int i = 0; i < 500000; i++) op('}');
    op('.');
    EXPECT_ERROR("bytes of memory, the limit for a 500003-byte pickle");
}

int main(void) {
    RUN(pickle_should_read_what_torch_save_writes);
    RUN(pickle_should_refuse_globals_outside_the_allowlist);
    RUN(pickle_should_refuse_unknown_opcodes);
    RUN(pickle_should_reject_memo_index_out_of_range);
    RUN(pickle_should_reject_stack_underflow);
    RUN(pickle_should_reject_deep_nesting);
    RUN(pickle_should_reject_truncation_and_trailing_bytes);
    RUN(pickle_should_reject_malformed_torch_calls);
    RUN(pickle_should_bound_allocations);
    CHECK_EXIT();
}
