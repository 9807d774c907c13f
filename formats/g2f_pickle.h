/* g2f_pickle: a restricted pickle machine for what torch.save writes in
 * data.pkl (a state dict or a training checkpoint dict), and nothing else.
 *
 * Python's unpickler runs code: GLOBAL imports any callable and REDUCE calls
 * it. This machine cannot, by construction: GLOBAL / STACK_GLOBAL resolve
 * only the names below, each to an inert marker, and REDUCE only knows what
 * each marker means. Everything else is refused with a message naming it:
 *   "data.pkl: GLOBAL 'os system' is not allowed (gpt2ffn reads state dicts only)"
 *
 * Allowed globals (module name), and what REDUCE of them yields:
 *   collections OrderedDict           () -> an empty dict
 *   torch._utils _rebuild_tensor_v2   (storage, offset, size, stride,
 *                                      requires_grad, hooks[, metadata]) -> a tensor
 *   torch._utils _rebuild_parameter   (tensor, requires_grad, hooks) -> the tensor
 *   torch FloatStorage HalfStorage BFloat16Storage DoubleStorage LongStorage
 *         IntStorage ShortStorage CharStorage ByteStorage BoolStorage
 *   torch.storage UntypedStorage      storage types: only inside a persistent id
 * No inert data constructors (numpy scalar, builtins set, torch device, ...)
 * are allowed: the real checkpoints inspected (a nanoGPT ckpt.pt with its
 * optimizer, model_args and config; a minGPT-style ckpt.pt with config, stoi,
 * itos; HF pytorch_model.bin files; AdamW state dicts of torch 1.13) use only
 * the globals above. Add a row to the table in g2f_pickle.c when a real file
 * needs one, producing an opaque value.
 *
 * Opcodes (protocol 2, plus the protocol-4 ones a newer pickler may use):
 *   PROTO FRAME STOP MARK NONE NEWTRUE NEWFALSE
 *   BININT BININT1 BININT2 LONG1 (up to 8 bytes) BINFLOAT
 *   BINUNICODE SHORT_BINUNICODE BINUNICODE8 BINSTRING SHORT_BINSTRING
 *   EMPTY_DICT EMPTY_LIST EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 LIST DICT
 *   APPEND APPENDS SETITEM SETITEMS
 *   BINPUT LONG_BINPUT MEMOIZE BINGET LONG_BINGET
 *   GLOBAL STACK_GLOBAL REDUCE BUILD BINPERSID
 * Any other opcode is an error naming it and its byte offset.
 *
 * Semantics beyond Python's:
 *   - BINPERSID accepts only torch's storage id, the tuple
 *     ('storage', <storage type>, key: str, location: str, numel: int), and
 *     yields a storage value;
 *   - _rebuild_tensor_v2 needs a storage, an int offset >= 0, size and stride
 *     tuples of the same length <= G2F_MAX_DIMS of ints >= 0, a bool;
 *   - BUILD is accepted on a dict (an OrderedDict's _metadata) and ignored;
 *   - a dict keeps a repeated key twice (Python keeps the last): walkers see
 *     both and can refuse the ambiguity;
 *   - bytes after STOP are an error.
 *
 * Limits (larger is malformed or hostile; real checkpoints are far below):
 *   G2F_PICKLE_MAX_STACK   items on the stack, marks included
 *   G2F_PICKLE_MAX_MARKS   open MARKs (nesting of tuples/lists/dicts being built)
 *   G2F_PICKLE_MAX_DEPTH   container nesting depth when an item is added
 *   G2F_PICKLE_MAX_MEMO    memo index (BINPUT/LONG_BINPUT/MEMOIZE)
 *   G2F_PICKLE_MAX_INT_BYTES  LONG1 length (values must fit int64)
 * Every string length is checked against the bytes remaining before it is
 * copied, and all allocations together are capped at
 * G2F_PICKLE_ALLOC_FACTOR x pickle size + G2F_PICKLE_ALLOC_SLACK bytes, so a
 * small pickle cannot make the machine allocate much (each opcode creates at
 * most one value).
 * Containers may be shared (the memo) or even cyclic (a list appended to
 * itself): walkers of the tree must bound their depth and visits.
 *
 * Ownership: g2f_pickle_parse copies what it keeps (strings included); the
 * value tree belongs to the g2f_pickle and is valid until g2f_pickle_free.
 */
#ifndef G2F_PICKLE_H
#define G2F_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

#define G2F_PICKLE_MAX_STACK 1000000u
#define G2F_PICKLE_MAX_MARKS 64u
#define G2F_PICKLE_MAX_DEPTH 64u
#define G2F_PICKLE_MAX_MEMO 10000000u
#define G2F_PICKLE_MAX_INT_BYTES 8u
#define G2F_PICKLE_ALLOC_FACTOR 64u /* real torch pickles use 16-22x */
#define G2F_PICKLE_ALLOC_SLACK (1u << 20)

typedef enum g2f_pickle_kind {
    G2F_PV_NONE,
    G2F_PV_BOOL,
    G2F_PV_INT,
    G2F_PV_FLOAT,
    G2F_PV_STR,     /* unicode or byte string; may hold NUL bytes (see len) */
    G2F_PV_TUPLE,
    G2F_PV_LIST,
    G2F_PV_DICT,    /* dict and OrderedDict; keys in insertion order */
    G2F_PV_GLOBAL,  /* an allowed global, inert */
    G2F_PV_STORAGE, /* a persistent id of a storage */
    G2F_PV_TENSOR,
    G2F_PV_COUNT
} g2f_pickle_kind;

typedef struct g2f_pickle_storage {
    const char *key;          /* the archive member is <root>/data/<key> */
    const char *location;     /* "cpu", "cuda:0", ... */
    const char *type_name;    /* "FloatStorage", ... */
    g2f_dtype dtype;          /* of the storage type; UntypedStorage: U8 */
    uint64_t numel;           /* elements of dtype in the storage */
} g2f_pickle_storage;

typedef struct g2f_pickle_tensor {
    g2f_pickle_storage storage; /* strings shared with the storage value */
    uint64_t offset;          /* storage_offset, in elements */
    size_t ndim;              /* <= G2F_MAX_DIMS */
    uint64_t shape[G2F_MAX_DIMS];
    uint64_t stride[G2F_MAX_DIMS]; /* in elements */
} g2f_pickle_tensor;

typedef struct g2f_pickle_value g2f_pickle_value;
struct g2f_pickle_value {
    g2f_pickle_kind kind;
    unsigned depth;           /* internal: nesting depth when last grown */
    size_t cap;               /* internal: capacity of items/values */
    union {
        bool b;
        int64_t i;
        double f;
        struct { char *s; size_t len; } str;                          /* NUL-terminated copy */
        struct { g2f_pickle_value **items; size_t count; } seq;       /* TUPLE, LIST */
        struct { g2f_pickle_value **keys, **values; size_t count; } dict;
        int global;           /* internal index of the allowed global */
        g2f_pickle_storage storage;
        g2f_pickle_tensor *tensor; /* kept apart: tensors are few, values many */
    } u;
};

typedef struct g2f_pickle g2f_pickle;

/* Runs the machine over buf[0, size). label prefixes messages ("x.pt: data.pkl").
 * *out is set only on success. */
g2f_status g2f_pickle_parse(const unsigned char *buf, size_t size, const char *label, g2f_pickle **out,
                            g2f_error *err);
/* Same, with all allocations together capped at alloc_cap bytes instead of
 * G2F_PICKLE_ALLOC_FACTOR x size + G2F_PICKLE_ALLOC_SLACK. For a pickle that
 * was inflated from a smaller file (a deflated data.pkl), so the cap can
 * follow the size of the file the user gave rather than the inflated size. */
g2f_status g2f_pickle_parse_capped(const unsigned char *buf, size_t size, uint64_t alloc_cap, const char *label,
                                   g2f_pickle **out, g2f_error *err);
/* The value STOP returned; borrowed until g2f_pickle_free. */
const g2f_pickle_value *g2f_pickle_root(const g2f_pickle *p);
/* Number of values created (a bound for walkers' visit budgets). */
size_t g2f_pickle_value_count(const g2f_pickle *p);
/* "dict", "tensor", ... */
const char *g2f_pickle_kind_name(g2f_pickle_kind kind);
/* Frees every value; NULL is a no-op. */
void g2f_pickle_free(g2f_pickle *p);

/* The allowlist, enumerated (test_pickle_allowlist pins it): the i-th
 * allowed global's module and name (static strings) and 1, or 0 past the
 * last one. */
int g2f_pickle_allowed_global(size_t i, const char **module, const char **name);

#endif
