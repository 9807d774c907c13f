/* g2f_pickle: the restricted pickle machine; see the opcode set, the
 * allowlist and the limits in g2f_pickle.h.
 *
 * The machine follows CPython's _pickle.c: a value stack with a mark stack
 * ("fence": no opcode may pop below the innermost MARK), a memo indexed by
 * the pickler's counters. It never recurses: values are kept in one registry
 * and freed from it, so a cyclic or deep tree costs nothing here. Workload:
 * data.pkl of a state dict, kilobytes to a few megabytes. */
#include "g2f_pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_bytes.h"

/* What an allowed global means to REDUCE and BINPERSID. */
typedef enum role { ROLE_DICT, ROLE_TENSOR_V2, ROLE_PARAMETER, ROLE_STORAGE } role;

static const struct allowed_global {
    const char *module, *name;
    role role;
    g2f_dtype dtype; /* ROLE_STORAGE only */
} allowed[] = {
    {"collections", "OrderedDict", ROLE_DICT, G2F_DTYPE_U8},
    {"torch._utils", "_rebuild_tensor_v2", ROLE_TENSOR_V2, G2F_DTYPE_U8},
    {"torch._utils", "_rebuild_parameter", ROLE_PARAMETER, G2F_DTYPE_U8},
    {"torch", "FloatStorage", ROLE_STORAGE, G2F_DTYPE_F32},
    {"torch", "HalfStorage", ROLE_STORAGE, G2F_DTYPE_F16},
    {"torch", "BFloat16Storage", ROLE_STORAGE, G2F_DTYPE_BF16},
    {"torch", "DoubleStorage", ROLE_STORAGE, G2F_DTYPE_F64},
    {"torch", "LongStorage", ROLE_STORAGE, G2F_DTYPE_I64},
    {"torch", "IntStorage", ROLE_STORAGE, G2F_DTYPE_I32},
    {"torch", "ShortStorage", ROLE_STORAGE, G2F_DTYPE_I16},
    {"torch", "CharStorage", ROLE_STORAGE, G2F_DTYPE_I8},
    {"torch", "ByteStorage", ROLE_STORAGE, G2F_DTYPE_U8},
    {"torch", "BoolStorage", ROLE_STORAGE, G2F_DTYPE_BOOL},
    {"torch.storage", "UntypedStorage", ROLE_STORAGE, G2F_DTYPE_U8},
};
#define ALLOWED_COUNT (sizeof allowed / sizeof allowed[0])

static const char *const kind_names[] = {"None", "bool", "int", "float", "str", "tuple",
                                         "list", "dict", "global", "storage", "tensor"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == G2F_PV_COUNT, "one name per kind");

const char *g2f_pickle_kind_name(g2f_pickle_kind kind) {
    return (unsigned)kind < G2F_PV_COUNT ? kind_names[kind] : "?";
}

/* Every opcode of pickle protocols 0-5, so refusals can name what they saw. */
static const char *opcode_name(unsigned op) {
    static const struct { unsigned char op; const char *name; } names[] = {
        {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"},
        {'I', "INT"}, {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"},
        {'P', "PERSID"}, {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"},
        {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"}, {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"},
        {'c', "GLOBAL"}, {'d', "DICT"}, {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"},
        {'i', "INST"}, {'j', "LONG_BINGET"}, {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"},
        {'q', "BINPUT"}, {'r', "LONG_BINPUT"}, {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"},
        {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"},
        {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"}, {0x86, "TUPLE2"},
        {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"}, {0x8a, "LONG1"}, {0x8b, "LONG4"},
        {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"},
        {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"},
        {0x94, "MEMOIZE"}, {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"},
        {0x98, "READONLY_BUFFER"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op) return names[i].name;
    return NULL;
}

struct g2f_pickle {
    const char *label;
    const unsigned char *buf;
    size_t size, pos;
    size_t op_pos;                  /* offset of the opcode being run, for messages */
    unsigned op;
    g2f_error *err;
    uint64_t alloc_used, alloc_cap; /* all allocations, charged as made */
    g2f_pickle_value **values;      /* registry of every value, for freeing */
    size_t nvalues, values_cap;
    g2f_pickle_value **stack;
    size_t sp, stack_cap;
    size_t marks[G2F_PICKLE_MAX_MARKS]; /* stack heights at each open MARK */
    size_t nmarks;
    g2f_pickle_value **memo;        /* NULL where never set */
    size_t memo_len, memo_cap;
    /* Immutable constants are made once and shared, so only opcodes that
     * build containers or read data create values. */
    g2f_pickle_value *none, *yes, *no, *empty_tuple;
    g2f_pickle_value *root;
};

#define FAIL(...) g2f_error_set(p->err, G2F_ERR_FORMAT, __VA_ARGS__)

/* "<label>: <what> at offset N (opcode NAME)" */
static g2f_status where_fail(g2f_pickle *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static g2f_status where_fail(g2f_pickle *p, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *n = opcode_name(p->op);
    return FAIL("%s: %s at offset %zu (opcode %s)", p->label, what, p->op_pos, n ? n : "?");
}

/* Charges n bytes against the allocation cap, then mallocs/reallocs. */
static void *charged_realloc(g2f_pickle *p, void *old, size_t count, size_t elsize) {
    uint64_t n;
    if (!g2f_mul_u64(count, elsize, &n) || n > p->alloc_cap - p->alloc_used) {
        FAIL("%s: needs more than %llu bytes of memory, the limit for a %zu-byte pickle (offset %zu)", p->label,
             (unsigned long long)p->alloc_cap, p->size, p->op_pos);
        return NULL;
    }
    void *q = realloc(old, n ? (size_t)n : 1);
    if (!q) {
        g2f_error_set(p->err, G2F_ERR_NOMEM, "%s: out of memory", p->label);
        return NULL;
    }
    p->alloc_used += n;
    return q;
}

/* Grows *arr (of *cap elements) to hold at least need; doubling keeps the
 * total charged below twice the final size. */
static int grow(g2f_pickle *p, void **arr, size_t *cap, size_t need, size_t elsize) {
    if (need <= *cap) return 1;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    void *q = charged_realloc(p, *arr, ncap, elsize);
    if (!q) return 0;
    *arr = q;
    *cap = ncap;
    return 1;
}

static g2f_pickle_value *new_value(g2f_pickle *p, g2f_pickle_kind kind) {
    if (!grow(p, (void **)&p->values, &p->values_cap, p->nvalues + 1, sizeof *p->values)) return NULL;
    g2f_pickle_value *v = charged_realloc(p, NULL, 1, sizeof *v);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->depth = (kind == G2F_PV_TUPLE || kind == G2F_PV_LIST || kind == G2F_PV_DICT);
    p->values[p->nvalues++] = v;
    return v;
}

static void free_value(g2f_pickle_value *v) {
    if (v->kind == G2F_PV_STR) free(v->u.str.s);
    else if (v->kind == G2F_PV_TUPLE || v->kind == G2F_PV_LIST) free(v->u.seq.items);
    else if (v->kind == G2F_PV_TENSOR) free(v->u.tensor);
    else if (v->kind == G2F_PV_DICT) {
        free(v->u.dict.keys);
        free(v->u.dict.values);
    }
    free(v);
}

/* The one value behind *slot (None, True, False, ()), made on first use. */
static g2f_pickle_value *shared(g2f_pickle *p, g2f_pickle_value **slot, g2f_pickle_kind kind) {
    if (!*slot && (*slot = new_value(p, kind)) && slot == &p->yes) (*slot)->u.b = true;
    return *slot;
}

static g2f_status push(g2f_pickle *p, g2f_pickle_value *v) {
    if (!v) return p->err->status;
    if (p->sp >= G2F_PICKLE_MAX_STACK)
        return where_fail(p, "stack deeper than the limit of %u items", G2F_PICKLE_MAX_STACK);
    if (!grow(p, (void **)&p->stack, &p->stack_cap, p->sp + 1, sizeof *p->stack)) return p->err->status;
    p->stack[p->sp++] = v;
    return G2F_OK;
}

static size_t fence(const g2f_pickle *p) { return p->nmarks ? p->marks[p->nmarks - 1] : 0; }

static g2f_status pop(g2f_pickle *p, g2f_pickle_value **out) {
    if (p->sp <= fence(p)) return where_fail(p, "stack underflow");
    *out = p->stack[--p->sp];
    return G2F_OK;
}

/* Pops the innermost MARK: the items above it are stack[*k, sp). */
static g2f_status pop_mark(g2f_pickle *p, size_t *k) {
    if (!p->nmarks) return where_fail(p, "no MARK to close (stack underflow)");
    *k = p->marks[--p->nmarks];
    return G2F_OK;
}

/* The container just below the popped mark k, which must be above the fence. */
static g2f_status container_below(g2f_pickle *p, size_t k, g2f_pickle_kind kind, g2f_pickle_value **out) {
    if (k == 0 || k - 1 < fence(p)) return where_fail(p, "stack underflow");
    g2f_pickle_value *c = p->stack[k - 1];
    if (c->kind != kind)
        return where_fail(p, "expected a %s below the items, found a %s", g2f_pickle_kind_name(kind),
                          g2f_pickle_kind_name(c->kind));
    *out = c;
    return G2F_OK;
}

static g2f_status deepen(g2f_pickle *p, g2f_pickle_value *c, const g2f_pickle_value *item) {
    if (item->depth + 1 > c->depth) c->depth = item->depth + 1;
    if (c->depth > G2F_PICKLE_MAX_DEPTH)
        return where_fail(p, "containers nested deeper than the limit of %u", G2F_PICKLE_MAX_DEPTH);
    return G2F_OK;
}

static g2f_status seq_add(g2f_pickle *p, g2f_pickle_value *c, g2f_pickle_value *const *items, size_t n) {
    if (!grow(p, (void **)&c->u.seq.items, &c->cap, c->u.seq.count + n, sizeof *c->u.seq.items))
        return p->err->status;
    for (size_t i = 0; i < n; i++) {
        g2f_status st = deepen(p, c, items[i]);
        if (st != G2F_OK) return st;
        c->u.seq.items[c->u.seq.count++] = items[i];
    }
    return G2F_OK;
}

/* Adds n key/value pairs kv[0], kv[1], kv[2], ... */
static g2f_status dict_add(g2f_pickle *p, g2f_pickle_value *d, g2f_pickle_value *const *kv, size_t n) {
    size_t need = d->u.dict.count + n, cap = d->cap;
    if (!grow(p, (void **)&d->u.dict.keys, &cap, need, sizeof *d->u.dict.keys)) return p->err->status;
    cap = d->cap;
    if (!grow(p, (void **)&d->u.dict.values, &cap, need, sizeof *d->u.dict.values)) return p->err->status;
    d->cap = cap;
    for (size_t i = 0; i < n; i++) {
        g2f_status st = deepen(p, d, kv[2 * i + 1]);
        if (st != G2F_OK) return st;
        d->u.dict.keys[d->u.dict.count] = kv[2 * i];
        d->u.dict.values[d->u.dict.count++] = kv[2 * i + 1];
    }
    return G2F_OK;
}

static g2f_status need(g2f_pickle *p, size_t n) {
    if (p->size - p->pos < n) return where_fail(p, "truncated: needs %zu bytes, %zu remain", n, p->size - p->pos);
    return G2F_OK;
}

static uint64_t read_le(g2f_pickle *p, size_t n) {
    uint64_t v = g2f_load_le(p->buf + p->pos, n);
    p->pos += n;
    return v;
}

static g2f_status push_int(g2f_pickle *p, int64_t i) {
    g2f_pickle_value *v = new_value(p, G2F_PV_INT);
    if (v) v->u.i = i;
    return push(p, v);
}

/* A string whose n-byte length field is next; the bytes are copied. */
static g2f_status push_string(g2f_pickle *p, size_t len_bytes) {
    g2f_status st = need(p, len_bytes);
    if (st != G2F_OK) return st;
    uint64_t n = read_le(p, len_bytes);
    if (len_bytes == 4 && p->op == 'T' && n > INT32_MAX) return where_fail(p, "negative string length");
    if ((st = need(p, n > SIZE_MAX ? SIZE_MAX : (size_t)n)) != G2F_OK) return st;
    g2f_pickle_value *v = new_value(p, G2F_PV_STR);
    if (!v) return p->err->status;
    if (!(v->u.str.s = charged_realloc(p, NULL, (size_t)n + 1, 1))) return p->err->status;
    memcpy(v->u.str.s, p->buf + p->pos, (size_t)n);
    v->u.str.s[n] = '\0';
    v->u.str.len = (size_t)n;
    p->pos += (size_t)n;
    return push(p, v);
}

static g2f_status push_global(g2f_pickle *p, const char *module, size_t mlen, const char *name, size_t nlen) {
    for (size_t i = 0; i < ALLOWED_COUNT; i++) {
        if (strlen(allowed[i].module) == mlen && !memcmp(allowed[i].module, module, mlen) &&
            strlen(allowed[i].name) == nlen && !memcmp(allowed[i].name, name, nlen)) {
            g2f_pickle_value *v = new_value(p, G2F_PV_GLOBAL);
            if (v) v->u.global = (int)i;
            return push(p, v);
        }
    }
    return FAIL("%s: GLOBAL '%.*s %.*s' is not allowed (gpt2ffn reads state dicts only) at offset %zu", p->label,
                (int)(mlen > 100 ? 100 : mlen), module, (int)(nlen > 100 ? 100 : nlen), name, p->op_pos);
}

/* GLOBAL: "module\nname\n", each line at most 256 bytes. */
static g2f_status op_global(g2f_pickle *p) {
    const char *line[2];
    size_t len[2];
    for (int k = 0; k < 2; k++) {
        size_t avail = p->size - p->pos;
        const unsigned char *nl = memchr(p->buf + p->pos, '\n', avail > 257 ? 257 : avail);
        if (!nl) return where_fail(p, "GLOBAL name is not a line of at most 256 bytes");
        line[k] = (const char *)p->buf + p->pos;
        len[k] = (size_t)(nl - (p->buf + p->pos));
        p->pos += len[k] + 1;
    }
    return push_global(p, line[0], len[0], line[1], len[1]);
}

static g2f_status op_stack_global(g2f_pickle *p) {
    g2f_pickle_value *name = NULL, *module = NULL;
    g2f_status st;
    if ((st = pop(p, &name)) != G2F_OK || (st = pop(p, &module)) != G2F_OK) return st;
    if (name->kind != G2F_PV_STR || module->kind != G2F_PV_STR)
        return where_fail(p, "STACK_GLOBAL needs two strings");
    return push_global(p, module->u.str.s, module->u.str.len, name->u.str.s, name->u.str.len);
}

static int is_int(const g2f_pickle_value *v, int64_t min) { return v->kind == G2F_PV_INT && v->u.i >= min; }

/* A string usable as a C string (no NUL inside). */
static int is_cstr(const g2f_pickle_value *v) { return v->kind == G2F_PV_STR && strlen(v->u.str.s) == v->u.str.len; }

/* BINPERSID: ('storage', <storage type>, key, location, numel). */
static g2f_status op_persid(g2f_pickle *p) {
    g2f_pickle_value *pid = NULL, *v;
    g2f_status st = pop(p, &pid);
    if (st != G2F_OK) return st;
    g2f_pickle_value **a = pid->kind == G2F_PV_TUPLE ? pid->u.seq.items : NULL;
    if (!a || pid->u.seq.count != 5 || !is_cstr(a[0]) || strcmp(a[0]->u.str.s, "storage") != 0 ||
        a[1]->kind != G2F_PV_GLOBAL || allowed[a[1]->u.global].role != ROLE_STORAGE || !is_cstr(a[2]) ||
        !is_cstr(a[3]) || !is_int(a[4], 0))
        return where_fail(p, "persistent id is not torch's ('storage', <storage type>, key, location, numel)");
    if (!(v = new_value(p, G2F_PV_STORAGE))) return p->err->status;
    const struct allowed_global *g = &allowed[a[1]->u.global];
    v->u.storage = (g2f_pickle_storage){a[2]->u.str.s, a[3]->u.str.s, g->name, g->dtype, (uint64_t)a[4]->u.i};
    return push(p, v);
}

/* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) */
static g2f_status rebuild_tensor(g2f_pickle *p, const g2f_pickle_value *args) {
    size_t n = args->u.seq.count;
    g2f_pickle_value **a = args->u.seq.items;
    if (n != 6 && n != 7) return where_fail(p, "_rebuild_tensor_v2 needs 6 or 7 arguments");
    if (a[0]->kind != G2F_PV_STORAGE) return where_fail(p, "_rebuild_tensor_v2: argument 1 is not a storage");
    if (!is_int(a[1], 0)) return where_fail(p, "_rebuild_tensor_v2: storage offset is not an int >= 0");
    if (a[2]->kind != G2F_PV_TUPLE || a[3]->kind != G2F_PV_TUPLE || a[2]->u.seq.count != a[3]->u.seq.count)
        return where_fail(p, "_rebuild_tensor_v2: size and stride are not tuples of the same length");
    if (a[2]->u.seq.count > G2F_MAX_DIMS) return where_fail(p, "_rebuild_tensor_v2: more than 8 dimensions");
    if (a[4]->kind != G2F_PV_BOOL) return where_fail(p, "_rebuild_tensor_v2: requires_grad is not a bool");
    g2f_pickle_value *v = new_value(p, G2F_PV_TENSOR);
    if (!v) return p->err->status;
    g2f_pickle_tensor *t = v->u.tensor = charged_realloc(p, NULL, 1, sizeof *t);
    if (!t) return p->err->status;
    memset(t, 0, sizeof *t);
    t->storage = a[0]->u.storage;
    t->offset = (uint64_t)a[1]->u.i;
    t->ndim = a[2]->u.seq.count;
    for (size_t d = 0; d < t->ndim; d++) {
        const g2f_pickle_value *sz = a[2]->u.seq.items[d], *sd = a[3]->u.seq.items[d];
        if (!is_int(sz, 0) || !is_int(sd, 0))
            return where_fail(p, "_rebuild_tensor_v2: size and stride must be ints >= 0");
        t->shape[d] = (uint64_t)sz->u.i;
        t->stride[d] = (uint64_t)sd->u.i;
    }
    return push(p, v);
}

static g2f_status op_reduce(g2f_pickle *p) {
    g2f_pickle_value *args = NULL, *fn = NULL;
    g2f_status st;
    if ((st = pop(p, &args)) != G2F_OK || (st = pop(p, &fn)) != G2F_OK) return st;
    if (fn->kind != G2F_PV_GLOBAL) return where_fail(p, "REDUCE of something that is not an allowed global");
    if (args->kind != G2F_PV_TUPLE) return where_fail(p, "REDUCE arguments are not a tuple");
    const struct allowed_global *g = &allowed[fn->u.global];
    switch (g->role) {
    case ROLE_DICT:
        if (args->u.seq.count != 0) return where_fail(p, "OrderedDict() with arguments is not supported");
        return push(p, new_value(p, G2F_PV_DICT));
    case ROLE_TENSOR_V2:
        return rebuild_tensor(p, args);
    case ROLE_PARAMETER:
        if (args->u.seq.count != 3 || args->u.seq.items[0]->kind != G2F_PV_TENSOR)
            return where_fail(p, "_rebuild_parameter needs (tensor, requires_grad, hooks)");
        return push(p, args->u.seq.items[0]);
    case ROLE_STORAGE:
        break;
    }
    return where_fail(p, "REDUCE of '%s %s' is not supported", g->module, g->name);
}

static g2f_status op_memo_put(g2f_pickle *p, uint64_t idx) {
    if (p->sp <= fence(p)) return where_fail(p, "stack underflow");
    if (idx >= G2F_PICKLE_MAX_MEMO)
        return where_fail(p, "memo index %llu is above the limit of %u", (unsigned long long)idx, G2F_PICKLE_MAX_MEMO);
    if (idx >= p->memo_len) {
        if (!grow(p, (void **)&p->memo, &p->memo_cap, (size_t)idx + 1, sizeof *p->memo)) return p->err->status;
        memset(p->memo + p->memo_len, 0, ((size_t)idx + 1 - p->memo_len) * sizeof *p->memo);
        p->memo_len = (size_t)idx + 1;
    }
    p->memo[idx] = p->stack[p->sp - 1];
    return G2F_OK;
}

static g2f_status op_memo_get(g2f_pickle *p, uint64_t idx) {
    if (idx >= p->memo_len || !p->memo[idx])
        return where_fail(p, "memo index %llu out of range or unset (memo has %zu entries)", (unsigned long long)idx,
                          p->memo_len);
    return push(p, p->memo[idx]);
}

/* TUPLE, TUPLE1-3, LIST: a new sequence of the n items on top. */
static g2f_status make_seq(g2f_pickle *p, g2f_pickle_kind kind, size_t k) {
    g2f_pickle_value *v = new_value(p, kind);
    if (!v) return p->err->status;
    g2f_status st = seq_add(p, v, p->stack + k, p->sp - k);
    if (st != G2F_OK) return st;
    p->sp = k;
    return push(p, v);
}

static g2f_status run_op(g2f_pickle *p) {
    g2f_status st = G2F_OK;
    g2f_pickle_value *v = NULL, *c = NULL;
    size_t k = 0;
    switch (p->op) {
    case 0x80: /* PROTO */
        if ((st = need(p, 1)) != G2F_OK) return st;
        if (p->buf[p->pos] > 5) return where_fail(p, "pickle protocol above 5");
        p->pos++;
        return G2F_OK;
    case 0x95: /* FRAME: a length prefix only; the bytes follow inline */
        if ((st = need(p, 8)) != G2F_OK) return st;
        if (read_le(p, 8) > p->size - p->pos) return where_fail(p, "FRAME longer than the bytes remaining");
        return G2F_OK;
    case '(':
        if (p->nmarks >= G2F_PICKLE_MAX_MARKS)
            return where_fail(p, "MARKs nested deeper than the limit of %u", G2F_PICKLE_MAX_MARKS);
        p->marks[p->nmarks++] = p->sp;
        return G2F_OK;
    case 'N': return push(p, shared(p, &p->none, G2F_PV_NONE));
    case 0x88: return push(p, shared(p, &p->yes, G2F_PV_BOOL));
    case 0x89: return push(p, shared(p, &p->no, G2F_PV_BOOL));
    case 'J':
        if ((st = need(p, 4)) != G2F_OK) return st;
        return push_int(p, (int32_t)(uint32_t)read_le(p, 4));
    case 'K':
    case 'M':
        if ((st = need(p, p->op == 'K' ? 1 : 2)) != G2F_OK) return st;
        return push_int(p, (int64_t)read_le(p, p->op == 'K' ? 1 : 2));
    case 0x8a: { /* LONG1: little-endian two's complement of n bytes */
        if ((st = need(p, 1)) != G2F_OK) return st;
        size_t n = p->buf[p->pos++];
        if (n > G2F_PICKLE_MAX_INT_BYTES) return where_fail(p, "integer does not fit 64 bits");
        if ((st = need(p, n)) != G2F_OK) return st;
        uint64_t u = read_le(p, n);
        if (n && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~0ull << (8 * n);
        int64_t i;
        memcpy(&i, &u, sizeof i);
        return push_int(p, i);
    }
    case 'G': { /* BINFLOAT: big-endian IEEE double */
        if ((st = need(p, 8)) != G2F_OK) return st;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | p->buf[p->pos++];
        if ((v = new_value(p, G2F_PV_FLOAT))) memcpy(&v->u.f, &u, sizeof u);
        return push(p, v);
    }
    case 'X': case 'T': return push_string(p, 4);
    case 0x8c: case 'U': return push_string(p, 1);
    case 0x8d: return push_string(p, 8);
    case '}': return push(p, new_value(p, G2F_PV_DICT));
    case ']': return push(p, new_value(p, G2F_PV_LIST));
    case ')': return push(p, shared(p, &p->empty_tuple, G2F_PV_TUPLE));
    case 't':
    case 'l':
        if ((st = pop_mark(p, &k)) != G2F_OK) return st;
        return make_seq(p, p->op == 't' ? G2F_PV_TUPLE : G2F_PV_LIST, k);
    case 0x85: case 0x86: case 0x87: {
        size_t n = p->op - 0x84u;
        if (p->sp < fence(p) + n) return where_fail(p, "stack underflow");
        return make_seq(p, G2F_PV_TUPLE, p->sp - n);
    }
    case 'd':
        if ((st = pop_mark(p, &k)) != G2F_OK) return st;
        if ((p->sp - k) % 2) return where_fail(p, "odd number of items for a dict");
        if (!(v = new_value(p, G2F_PV_DICT))) return p->err->status;
        if ((st = dict_add(p, v, p->stack + k, (p->sp - k) / 2)) != G2F_OK) return st;
        p->sp = k;
        return push(p, v);
    case 'a':
        if ((st = pop(p, &v)) != G2F_OK) return st;
        if ((st = container_below(p, p->sp, G2F_PV_LIST, &c)) != G2F_OK) return st;
        return seq_add(p, c, &v, 1);
    case 'e':
        if ((st = pop_mark(p, &k)) != G2F_OK) return st;
        if ((st = container_below(p, k, G2F_PV_LIST, &c)) != G2F_OK) return st;
        if ((st = seq_add(p, c, p->stack + k, p->sp - k)) != G2F_OK) return st;
        p->sp = k;
        return G2F_OK;
    case 's':
        if (p->sp < fence(p) + 3) return where_fail(p, "stack underflow");
        if ((st = container_below(p, p->sp - 2, G2F_PV_DICT, &c)) != G2F_OK) return st;
        if ((st = dict_add(p, c, p->stack + p->sp - 2, 1)) != G2F_OK) return st;
        p->sp -= 2;
        return G2F_OK;
    case 'u':
        if ((st = pop_mark(p, &k)) != G2F_OK) return st;
        if ((p->sp - k) % 2) return where_fail(p, "odd number of items for SETITEMS");
        if ((st = container_below(p, k, G2F_PV_DICT, &c)) != G2F_OK) return st;
        if ((st = dict_add(p, c, p->stack + k, (p->sp - k) / 2)) != G2F_OK) return st;
        p->sp = k;
        return G2F_OK;
    case 'q':
    case 'h':
        if ((st = need(p, 1)) != G2F_OK) return st;
        return p->op == 'q' ? op_memo_put(p, read_le(p, 1)) : op_memo_get(p, read_le(p, 1));
    case 'r':
    case 'j':
        if ((st = need(p, 4)) != G2F_OK) return st;
        return p->op == 'r' ? op_memo_put(p, read_le(p, 4)) : op_memo_get(p, read_le(p, 4));
    case 0x94: return op_memo_put(p, p->memo_len);
    case 'c': return op_global(p);
    case 0x93: return op_stack_global(p);
    case 'R': return op_reduce(p);
    case 'Q': return op_persid(p);
    case 'b':
        if ((st = pop(p, &v)) != G2F_OK) return st;
        return container_below(p, p->sp, G2F_PV_DICT, &c); /* state ignored */
    default: {
        const char *n = opcode_name(p->op);
        if (n)
            return FAIL("%s: opcode %s (0x%02x) at offset %zu is not supported (gpt2ffn reads state dicts only)",
                        p->label, n, p->op, p->op_pos);
        return FAIL("%s: unknown opcode 0x%02x at offset %zu", p->label, p->op, p->op_pos);
    }
    }
}

g2f_status g2f_pickle_parse(const unsigned char *buf, size_t size, const char *label, g2f_pickle **out,
                            g2f_error *err) {
    uint64_t cap;
    if (!g2f_mul_u64(size, G2F_PICKLE_ALLOC_FACTOR, &cap) || !g2f_add_u64(cap, G2F_PICKLE_ALLOC_SLACK, &cap))
        cap = UINT64_MAX;
    return g2f_pickle_parse_capped(buf, size, cap, label, out, err);
}

g2f_status g2f_pickle_parse_capped(const unsigned char *buf, size_t size, uint64_t alloc_cap, const char *label,
                                   g2f_pickle **out, g2f_error *err) {
    *out = NULL;
    g2f_pickle *p = calloc(1, sizeof *p);
    if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
    g2f_error scratch = {0};
    p->err = err ? err : &scratch;
    p->label = label;
    p->buf = buf;
    p->size = size;
    p->alloc_cap = alloc_cap;
    g2f_status st = G2F_OK;
    /* The stack is never NULL, so p->stack + k is defined even when empty. */
    if (!grow(p, (void **)&p->stack, &p->stack_cap, 1, sizeof *p->stack)) st = p->err->status;
    while (st == G2F_OK && !p->root) {
        if (p->pos >= p->size) {
            st = FAIL("%s: ends at offset %zu without STOP", label, p->pos);
            break;
        }
        p->op_pos = p->pos;
        p->op = p->buf[p->pos++];
        if (p->op == '.') {
            g2f_pickle_value *r = NULL;
            if ((st = pop(p, &r)) != G2F_OK) break;
            if (p->pos != p->size) {
                st = FAIL("%s: %zu bytes after STOP at offset %zu", label, p->size - p->pos, p->op_pos);
                break;
            }
            p->root = r;
        } else if ((st = run_op(p)) != G2F_OK) {
            break;
        }
    }
    free(p->stack);
    free(p->memo);
    p->stack = NULL;
    p->memo = NULL;
    p->err = NULL;
    if (st != G2F_OK) {
        g2f_pickle_free(p);
        return st;
    }
    *out = p;
    return G2F_OK;
}

const g2f_pickle_value *g2f_pickle_root(const g2f_pickle *p) { return p->root; }

size_t g2f_pickle_value_count(const g2f_pickle *p) { return p->nvalues; }

void g2f_pickle_free(g2f_pickle *p) {
    if (!p) return;
    for (size_t i = 0; i < p->nvalues; i++) free_value(p->values[i]);
    free(p->values);
    free(p->stack);
    free(p->memo);
    free(p);
}

int g2f_pickle_allowed_global(size_t i, const char **module, const char **name) {
    if (i >= ALLOWED_COUNT) return 0;
    *module = allowed[i].module;
    *name = allowed[i].name;
    return 1;
}
