/* Helpers for the bounds tests (tests/test_bounds_<reader>.c): each of those
 * takes every bound of one reader (its header's numbered checklist, its rows
 * of SECURITY.md's Limits table) to the exact limit, which must be accepted,
 * and one past it, which must be refused with the check's own message.
 *
 * When the input at the exact limit would be huge (a 1 GiB string, a million
 * entries), the test shows instead that the limit's check lets it through:
 * the input is then refused by a *later* check, with that check's message and
 * without the limit's (PASSES_CHECK). Inputs are built here byte by byte (a
 * growable buffer with little-endian writers, and a zip writer shared by the
 * zip, torch and npz tests) and parsed from an allocation of exactly their
 * size, so that a bound moved by one byte reads past it under ASan. */
#ifndef G2F_TEST_BOUNDS_H
#define G2F_TEST_BOUNDS_H

/* MAP_ANONYMOUS, MAP_NORESERVE: include this header first. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "g2f_error.h"
#include "g2f_tensor.h"

/* ---- a growable byte buffer ---------------------------------------------- */

typedef struct bytes {
    unsigned char *p;
    size_t n, cap;
} bytes;

static inline void b_reserve(bytes *b, size_t more) {
    if (b->n + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) abort(); /* a test bug or a machine out of memory, not a reader bug */
    b->p = q;
    b->cap = cap;
}
static inline void b_bytes(bytes *b, const void *d, size_t n) {
    b_reserve(b, n);
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void b_fill(bytes *b, int c, size_t n) {
    b_reserve(b, n);
    memset(b->p + b->n, c, n);
    b->n += n;
}
static inline void b_str(bytes *b, const char *s) { b_bytes(b, s, strlen(s)); }
static inline void b_u8(bytes *b, unsigned v) {
    unsigned char c = (unsigned char)v;
    b_bytes(b, &c, 1);
}
static inline void b_le(bytes *b, uint64_t v, int width) {
    for (int i = 0; i < width; i++) b_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}
static inline void b_u16(bytes *b, unsigned v) { b_le(b, v, 2); }
static inline void b_u32(bytes *b, uint32_t v) { b_le(b, v, 4); }
static inline void b_u64(bytes *b, uint64_t v) { b_le(b, v, 8); }
/* Overwrites bytes [at, at + width) with v, little-endian. */
static inline void b_put(bytes *b, size_t at, uint64_t v, int width) {
    if (at + (size_t)width > b->n) abort();
    for (int i = 0; i < width; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}
static inline void b_free(bytes *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* A copy of b in an allocation of exactly its size (1 byte when empty), so
 * that a read one byte past the input is a heap overflow under ASan. */
static inline unsigned char *b_exact(const bytes *b) {
    unsigned char *q = malloc(b->n ? b->n : 1);
    if (!q) abort();
    if (b->n) memcpy(q, b->p, b->n);
    return q;
}

/* ---- huge inputs that cost nothing ---------------------------------------- */

/* size bytes of zeros, readable and writable, from an anonymous mapping that
 * reserves no memory: only the pages written or read become resident. For
 * inputs whose size is the point (a 1 GiB array that a reader must skip, not
 * read). NULL when the machine refuses the mapping. */
static inline unsigned char *zero_map(uint64_t size) {
    if (size == 0 || size > SIZE_MAX) return NULL;
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
static inline void zero_unmap(unsigned char *p, uint64_t size) {
    if (p) munmap(p, (size_t)size);
}

/* A fresh scratch folder for many or large files: under $G2F_FAST_TMPDIR
 * when set (scripts/mutate points it at a folder it removes after each
 * mutant, whose crashes skip the tests' cleanup), else under /dev/shm
 * (memory) when the machine has one, where thousands of files cost
 * milliseconds rather than seconds on a disk, else under $TMPDIR or /tmp.
 * 0 on success; the caller removes it (remove_tmpdir in test_util.h). */
static inline int fast_tmpdir(char *dir, size_t n, const char *tag) {
    struct stat st;
    const char *fast = getenv("G2F_FAST_TMPDIR");
    snprintf(dir, n, "%s/g2f_%s_XXXXXX", fast && *fast ? fast : "/dev/shm", tag);
    if (stat(fast && *fast ? fast : "/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && mkdtemp(dir)) return 0;
    const char *base = getenv("TMPDIR");
    snprintf(dir, n, "%s/g2f_%s_XXXXXX", base && *base ? base : "/tmp", tag);
    return mkdtemp(dir) ? 0 : -1;
}

/* ---- expectations ---------------------------------------------------------- */

/* The input is accepted. */
static inline void expect_ok(g2f_status st, const g2f_error *err, int line) {
    if (st != G2F_OK) {
        fprintf(stderr, "line %d: refused (status %d) but it is at the limit: \"%s\"\n", line, (int)st, err->msg);
        check_failures++;
    }
}
/* The input is refused with a message holding needle. */
static inline void expect_refused(g2f_status st, const g2f_error *err, const char *needle, int line) {
    if (st == G2F_OK) {
        fprintf(stderr, "line %d: accepted but it is past the limit (wanted \"%s\")\n", line, needle);
        check_failures++;
    } else if (!strstr(err->msg, needle)) {
        fprintf(stderr, "line %d: refused with \"%s\", wanted \"%s\"\n", line, err->msg, needle);
        check_failures++;
    }
}
/* The check whose message holds check_needle let the input through: it is
 * refused by a later check (next_needle). */
static inline void expect_passes(g2f_status st, const g2f_error *err, const char *check_needle, const char *next_needle,
                          int line) {
    expect_refused(st, err, next_needle, line);
    if (st != G2F_OK && strstr(err->msg, check_needle)) {
        fprintf(stderr, "line %d: stopped by the check under test (\"%s\"): \"%s\"\n", line, check_needle, err->msg);
        check_failures++;
    }
}
#define ACCEPTED(st, err) expect_ok((st), &(err), __LINE__)
#define REFUSED(st, err, needle) expect_refused((st), &(err), (needle), __LINE__)
#define PASSES_CHECK(st, err, check_needle, next_needle) \
    expect_passes((st), &(err), (check_needle), (next_needle), __LINE__)

/* ---- parsing from an exact copy ------------------------------------------------ */

typedef g2f_status (*table_parser)(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                                   g2f_error *err);

/* Runs parse over an exact copy of b; on success touches the first and last
 * byte of every tensor view (ASan: a view outside the input), stores the
 * tensor count in *count (when not NULL) and frees the table. */
static inline g2f_status parse_exact(table_parser parse, const bytes *b, const char *label, size_t *count,
                                     g2f_error *err) {
    unsigned char *q = b_exact(b);
    g2f_table t;
    memset(err, 0, sizeof *err);
    g2f_status st = parse(q, b->n, label, &t, err);
    if (st == G2F_OK) {
        for (size_t i = 0; i < t.count; i++) {
            if (!t.tensors[i].nbytes) continue;
            volatile unsigned char x = t.tensors[i].data[0];
            x = t.tensors[i].data[t.tensors[i].nbytes - 1];
            (void)x;
        }
        if (count) *count = t.count;
        g2f_table_free(&t);
    }
    free(q);
    return st;
}

/* ---- a pickle writer (protocol 2 opcodes, as torch.save writes them) ---------- */

static inline void pk_op(bytes *b, unsigned op) { b_u8(b, op); }
static inline void pk_ustr(bytes *b, const char *s) { /* BINUNICODE */
    pk_op(b, 'X');
    b_u32(b, (uint32_t)strlen(s));
    b_str(b, s);
}
static inline void pk_global(bytes *b, const char *module, const char *name) {
    pk_op(b, 'c');
    b_str(b, module);
    b_u8(b, '\n');
    b_str(b, name);
    b_u8(b, '\n');
}
static inline void pk_int(bytes *b, uint32_t v) { /* BININT */
    pk_op(b, 'J');
    b_u32(b, v);
}
/* _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset,
 * shape, stride, False, OrderedDict()): pushes one tensor. */
static inline void pk_tensor(bytes *b, const char *type, const char *key, uint32_t numel, uint32_t offset, size_t ndim,
                             const uint32_t *shape, const uint32_t *stride) {
    pk_global(b, "torch._utils", "_rebuild_tensor_v2");
    pk_op(b, '(');
    pk_op(b, '(');
    pk_ustr(b, "storage");
    pk_global(b, "torch", type);
    pk_ustr(b, key);
    pk_ustr(b, "cpu");
    pk_int(b, numel);
    pk_op(b, 't');
    pk_op(b, 'Q');
    pk_int(b, offset);
    pk_op(b, '(');
    for (size_t d = 0; d < ndim; d++) pk_int(b, shape[d]);
    pk_op(b, 't');
    pk_op(b, '(');
    for (size_t d = 0; d < ndim; d++) pk_int(b, stride[d]);
    pk_op(b, 't');
    pk_op(b, 0x89); /* False */
    pk_global(b, "collections", "OrderedDict");
    pk_op(b, ')');
    pk_op(b, 'R');
    pk_op(b, 't');
    pk_op(b, 'R');
}

/* ---- a zip writer ------------------------------------------------------------ */

#define ZIP_MAX_MEMBERS 16

typedef struct zentry {
    const char *name;
    const void *data;
    size_t size;  /* uncompressed bytes */
    int deflate;  /* 0 stored, 1 deflated (raw deflate, level 9) */
    /* When raw is set, the member's compressed bytes are raw[0, raw_size)
     * as given (deflate must be set), size is only declared (data unused)
     * and the CRC-32 is crc. */
    const void *raw;
    size_t raw_size;
    uint32_t crc;
} zentry;

/* Where zip_write put everything, for tests that patch one field. */
typedef struct zlay {
    size_t local[ZIP_MAX_MEMBERS];   /* local header offsets */
    size_t central[ZIP_MAX_MEMBERS]; /* central entry offsets */
    size_t data[ZIP_MAX_MEMBERS];    /* member data offsets */
    size_t csize[ZIP_MAX_MEMBERS];   /* compressed sizes */
    size_t cd, cd_size;              /* central directory */
    size_t rec64, loc64;             /* ZIP64 end record and locator (zip64 only) */
    size_t eocd;
} zlay;

static inline size_t zip_deflate(const void *in, size_t n, bytes *out) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2(&s, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    uLong cap = deflateBound(&s, (uLong)n);
    b_reserve(out, cap);
    s.next_in = (unsigned char *)(uintptr_t)in;
    s.avail_in = (uInt)n;
    s.next_out = out->p + out->n;
    s.avail_out = (uInt)cap;
    if (deflate(&s, Z_FINISH) != Z_STREAM_END) abort();
    size_t r = s.total_out;
    deflateEnd(&s);
    out->n += r;
    return r;
}

/* Appends a zip of n members to b (which may hold bytes already: offsets
 * are from the start of b), then the end records: with zip64, every central
 * entry carries its sizes and offset in a ZIP64 extra field (the 32-bit
 * fields 0xffffffff) and the ZIP64 end record and locator precede the EOCD,
 * which defers to them. comment_len bytes of 'c' end the file. */
static inline void zip_write(bytes *b, const zentry *e, size_t n, int zip64, size_t comment_len, zlay *lay) {
    if (n > ZIP_MAX_MEMBERS) abort();
    uint32_t crc[ZIP_MAX_MEMBERS];
    memset(lay, 0, sizeof *lay);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        crc[i] = e[i].raw ? e[i].crc : (uint32_t)crc32(0, e[i].data, (uInt)e[i].size);
        lay->local[i] = b->n;
        b_u32(b, 0x04034b50);
        b_u16(b, 20);
        b_u16(b, 0);
        b_u16(b, e[i].deflate ? 8 : 0);
        b_u32(b, 0); /* time, date */
        b_u32(b, crc[i]);
        size_t sizes_at = b->n;
        b_u32(b, 0);
        b_u32(b, (uint32_t)e[i].size);
        b_u16(b, (unsigned)nl);
        b_u16(b, 0);
        b_str(b, e[i].name);
        lay->data[i] = b->n;
        if (e[i].raw) {
            b_bytes(b, e[i].raw, e[i].raw_size);
            lay->csize[i] = e[i].raw_size;
        } else if (e[i].deflate) lay->csize[i] = zip_deflate(e[i].data, e[i].size, b);
        else {
            b_bytes(b, e[i].data, e[i].size);
            lay->csize[i] = e[i].size;
        }
        b_put(b, sizes_at, lay->csize[i], 4);
    }
    lay->cd = b->n;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        lay->central[i] = b->n;
        b_u32(b, 0x02014b50);
        b_u16(b, 20);
        b_u16(b, 20);
        b_u16(b, 0);
        b_u16(b, e[i].deflate ? 8 : 0);
        b_u32(b, 0);
        b_u32(b, crc[i]);
        b_u32(b, zip64 ? 0xffffffffu : (uint32_t)lay->csize[i]);
        b_u32(b, zip64 ? 0xffffffffu : (uint32_t)e[i].size);
        b_u16(b, (unsigned)nl);
        b_u16(b, zip64 ? 28 : 0);
        b_u16(b, 0);
        b_u16(b, 0);
        b_u16(b, 0);
        b_u32(b, 0);
        b_u32(b, zip64 ? 0xffffffffu : (uint32_t)lay->local[i]);
        b_str(b, e[i].name);
        if (zip64) {
            b_u16(b, 0x0001);
            b_u16(b, 24);
            b_u64(b, e[i].size);
            b_u64(b, lay->csize[i]);
            b_u64(b, lay->local[i]);
        }
    }
    lay->cd_size = b->n - lay->cd;
    if (zip64) {
        lay->rec64 = b->n;
        b_u32(b, 0x06064b50);
        b_u64(b, 44);
        b_u16(b, 45);
        b_u16(b, 45);
        b_u32(b, 0);
        b_u32(b, 0);
        b_u64(b, n);
        b_u64(b, n);
        b_u64(b, lay->cd_size);
        b_u64(b, lay->cd);
        lay->loc64 = b->n;
        b_u32(b, 0x07064b50);
        b_u32(b, 0);
        b_u64(b, lay->rec64);
        b_u32(b, 1);
    }
    lay->eocd = b->n;
    b_u32(b, 0x06054b50);
    b_u16(b, 0);
    b_u16(b, 0);
    b_u16(b, zip64 ? 0xffff : (unsigned)n);
    b_u16(b, zip64 ? 0xffff : (unsigned)n);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)lay->cd_size);
    b_u32(b, zip64 ? 0xffffffffu : (uint32_t)lay->cd);
    b_u16(b, (unsigned)comment_len);
    b_fill(b, 'c', comment_len);
}

/* Field offsets inside a central entry and a ZIP64 end record. */
enum { CEN_CRC = 16, CEN_CSIZE = 20, CEN_SIZE = 24, CEN_NAME_LEN = 28, CEN_EXTRA_LEN = 30, CEN_COMMENT_LEN = 32,
       CEN_OFFSET = 42, CEN_NAME = 46 };
enum { REC64_ENTRIES_DISK = 24, REC64_ENTRIES = 32, REC64_CD_SIZE = 40, REC64_CD_OFFSET = 48 };
enum { EOCD_CD_SIZE = 12, EOCD_CD_OFFSET = 16, EOCD_COMMENT_LEN = 20 };
/* In a zip64 central entry: the ZIP64 extra field's size, compressed size
 * and offset values. */
enum { CEN64_SIZE = 4, CEN64_CSIZE = 12, CEN64_OFFSET = 20 };

#endif
