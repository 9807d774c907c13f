/* A pickle writer for tests: pickles written opcode by opcode into pk[0..pn),
 * the way torch.save writes them (protocol 2). Each test file that includes
 * it gets its own buffer. */
#ifndef G2F_TEST_PICKLE_WRITER_H
#define G2F_TEST_PICKLE_WRITER_H

#include <stdint.h>
#include <string.h>

static unsigned char pk[1 << 20];
static size_t pn;

static void op(unsigned c) { pk[pn++] = (unsigned char)c; }
static void u32le(uint32_t v) {
    for (int i = 0; i < 4; i++) op((v >> (8 * i)) & 0xff);
}
static void raw(const char *s) {
    memcpy(pk + pn, s, strlen(s));
    pn += strlen(s);
}
static void ustr(const char *s) { /* BINUNICODE */
    op('X');
    u32le((uint32_t)strlen(s));
    raw(s);
}
static void global(const char *module, const char *name) {
    op('c');
    raw(module);
    op('\n');
    raw(name);
    op('\n');
}
static void binint(int32_t v) { /* BININT1 when it fits, else BININT */
    if (v >= 0 && v < 256) {
        op('K');
        op((unsigned)v);
    } else {
        op('J');
        u32le((uint32_t)v);
    }
}
static void start(void) {
    pn = 0;
    op(0x80);
    op(2);
}

/* _rebuild_tensor_v2((storage, type, key, 'cpu', numel), offset, shape, stride, False, OrderedDict()) */
static void tensor(const char *type, const char *key, int numel, int offset, int ndim, const int *shape,
                   const int *stride) {
    global("torch._utils", "_rebuild_tensor_v2");
    op('(');
    op('(');
    ustr("storage");
    global("torch", type);
    ustr(key);
    ustr("cpu");
    binint(numel);
    op('t');
    op('Q');
    binint(offset);
    op('(');
    for (int d = 0; d < ndim; d++) binint(shape[d]);
    op('t');
    op('(');
    for (int d = 0; d < ndim; d++) binint(stride[d]);
    op('t');
    op(0x89);
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op('t');
    op('R');
}

#endif
