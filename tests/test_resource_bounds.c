/* Resource bounds on hostile inputs (SECURITY.md, "Limits"): work that
 * grows with a count read from the file must stay n log n, and allocations
 * must stay under their named caps. Each case here used to be quadratic or
 * lacked a test. */
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "g2f_pickle.h"
#include "g2f_safetensors.h"
#include "g2f_source.h"
#include "g2f_torch.h"
#include "test_util.h"

#ifdef GPT2FFN_SANITIZED
#define TIME_LIMIT_S 60.0 /* the sanitizers slow everything down ~5x */
#else
#define TIME_LIMIT_S 15.0
#endif

static char dir[256];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this process: what a quadratic loop costs, whatever else the
 * (shared) machine is running; wall time at load 12 on 2 cores is 5x. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A safetensors file of n empty U8 tensors named t0, t1, ... (a header of
 * about 50 n bytes); returns 0 on success. */
static int write_many(const char *path, size_t n, const char *dup) {
    size_t cap = 64 * n + 256, len = 0;
    char *h = malloc(cap);
    if (!h) return -1;
    h[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(h + len, cap - len, "%s\"t%zu\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}",
                                i ? "," : "", i);
    if (dup) len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}", dup);
    h[len++] = '}';
    while (len % 8) h[len++] = ' ';
    FILE *fp = fopen(path, "wb");
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    int ok = fp && fwrite(lb, 1, 8, fp) == 8 && fwrite(h, 1, len, fp) == len;
    free(h);
    return (fp && fclose(fp) == 0 && ok) ? 0 : -1;
}

static void safetensors_should_check_names_in_n_log_n(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/many.safetensors", dir);
    CHECK(write_many(path, 300000, NULL) == 0);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    double t0 = now_s();
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    CHECK(now_s() - t0 < TIME_LIMIT_S); /* a linear search per name took minutes */
    if (st) CHECK(g2f_safetensors_table(st)->count == 300000);
    g2f_safetensors_close(st);
    /* and a duplicate among them is still found, naming it */
    CHECK(write_many(path, 300000, "t123456") == 0);
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 't123456' appears twice");
    unlink(path);
}

/* An index of n entries into one shard of n tensors. */
static void shard_index_should_map_in_n_log_n(void) {
    char shard[512], index[512];
    size_t n = 200000;
    snprintf(shard, sizeof shard, "%s/model-00001-of-00001.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    CHECK(write_many(shard, n, NULL) == 0);
    size_t cap = 64 * n + 256, len = 0;
    char *j = malloc(cap);
    CHECK(j != NULL);
    if (!j) return;
    len += (size_t)snprintf(j, cap, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
    for (size_t i = n; i-- > 0;) /* reverse order: a sorted lookup must not depend on it */
        len += (size_t)snprintf(j + len, cap - len, "%s\"t%zu\":\"model-00001-of-00001.safetensors\"", i + 1 < n ? "," : "", i);
    len += (size_t)snprintf(j + len, cap - len, "}}");
    CHECK(write_bytes(index, j, len) == 0);
    g2f_source *s = NULL;
    g2f_error err = {0};
    double t0 = now_s();
    CHECK(g2f_source_open(index, &s, &err) == G2F_OK);
    CHECK(now_s() - t0 < TIME_LIMIT_S);
    if (s) CHECK(g2f_source_table(s)->count == n);
    g2f_source_close(s);
    /* a name mapped twice (JSON objects may repeat keys) */
    len -= 2;
    len += (size_t)snprintf(j + len, cap - len, ",\"t7\":\"model-00001-of-00001.safetensors\"}}");
    CHECK(write_bytes(index, j, len) == 0);
    CHECK(g2f_source_open(index, &s, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 't7' appears twice in weight_map");
    free(j);
    unlink(index);
    unlink(shard);
}

/* One past MAX_INDEX_ENTRIES; the exact limit passes in test_bounds_index. */
static void shard_index_should_refuse_more_than_a_million_entries(void) {
    char index[512];
    snprintf(index, sizeof index, "%s/big.index.json", dir);
    size_t n = 1000001, cap = 16 * n + 64, len = 0;
    char *j = malloc(cap);
    CHECK(j != NULL);
    if (!j) return;
    len += (size_t)snprintf(j, cap, "{\"weight_map\":{");
    for (size_t i = 0; i < n; i++) len += (size_t)snprintf(j + len, cap - len, "%s\"%zu\":\"s\"", i ? "," : "", i);
    len += (size_t)snprintf(j + len, cap - len, "}}");
    CHECK(write_bytes(index, j, len) == 0);
    free(j);
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(index, &s, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "more than 1000000 entries");
    unlink(index);
}

/* One byte per value (EMPTY_LIST) costs far more than 64 bytes each: the
 * machine stops at its allocation cap instead of growing with the count. */
static void pickle_should_stop_at_its_allocation_cap(void) {
    size_t n = 900000;
    unsigned char *p = malloc(n + 3);
    CHECK(p != NULL);
    if (!p) return;
    p[0] = 0x80;
    p[1] = 2;
    memset(p + 2, ']', n);
    p[n + 2] = '.';
    g2f_pickle *pk = NULL;
    g2f_error err = {0};
    CHECK(g2f_pickle_parse(p, n + 3, "big.pkl", &pk, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "bytes of memory, the limit for a");
    free(p);
}

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) {
    put16(p, v & 0xffff);
    put16(p + 2, v >> 16);
}

/* A torch.save-like zip whose only member, archive/data.pkl, is deflated
 * (about 12:1): 900,000 opcodes pushing None or a new list. The pickle
 * machine's allocations must be capped by the archive's size, not by the
 * inflated pickle's (64 x 900 KB = 58 MB from a 75 KB file). */
static void torch_deflated_pickle_should_be_capped_by_the_file_size(void) {
    size_t n = 900000, plen = n + 3;
    unsigned char *pkl = malloc(plen), *zbuf = malloc(plen), *file = malloc(plen + 512);
    CHECK(pkl && zbuf && file);
    if (!pkl || !zbuf || !file) return;
    pkl[0] = 0x80;
    pkl[1] = 2;
    uint64_t seed = 1;
    for (size_t i = 0; i < n; i++) { /* 1 in 8 a new list, else None: ~23 bytes of memory each */
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        pkl[2 + i] = (seed >> 61) == 0 ? ']' : 'N';
    }
    pkl[n + 2] = '.';
    /* uncompressed, the usual cap (64 x) lets it through */
    g2f_pickle *pk = NULL;
    g2f_error perr = {0};
    CHECK(g2f_pickle_parse(pkl, plen, "plain.pkl", &pk, &perr) == G2F_OK);
    g2f_pickle_free(pk);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = pkl;
    zs.avail_in = (uInt)plen;
    zs.next_out = zbuf;
    zs.avail_out = (uInt)plen;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t clen = zs.total_out;
    deflateEnd(&zs);
    uint32_t crc = (uint32_t)crc32(0, pkl, (uInt)plen);
    const char *name = "archive/data.pkl";
    unsigned nl = (unsigned)strlen(name);
    size_t o = 0;
    unsigned char *h = file; /* local header */
    memset(h, 0, 30);
    put32(h, 0x04034b50);
    put16(h + 4, 20);
    put16(h + 8, 8);
    put32(h + 14, crc);
    put32(h + 18, (uint32_t)clen);
    put32(h + 22, (uint32_t)plen);
    put16(h + 26, nl);
    memcpy(h + 30, name, nl);
    o = 30 + nl;
    memcpy(file + o, zbuf, clen);
    o += clen;
    size_t cd = o; /* central directory */
    h = file + o;
    memset(h, 0, 46);
    put32(h, 0x02014b50);
    put16(h + 4, 20);
    put16(h + 6, 20);
    put16(h + 10, 8);
    put32(h + 16, crc);
    put32(h + 20, (uint32_t)clen);
    put32(h + 24, (uint32_t)plen);
    put16(h + 28, nl);
    memcpy(h + 46, name, nl);
    o += 46 + nl;
    h = file + o; /* end of central directory */
    memset(h, 0, 22);
    put32(h, 0x06054b50);
    put16(h + 8, 1);
    put16(h + 10, 1);
    put32(h + 12, (uint32_t)(o - cd));
    put32(h + 16, (uint32_t)cd);
    o += 22;
    g2f_table t = {0};
    g2f_error err = {0};
    CHECK(g2f_torch_parse(file, o, "bomb.pt", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "bytes of memory, the limit for a");
    /* the limit quoted is 64 x the compressed size + 1 MiB */
    char want[64];
    snprintf(want, sizeof want, "more than %llu bytes",
             (unsigned long long)(clen * G2F_PICKLE_ALLOC_FACTOR + G2F_PICKLE_ALLOC_SLACK));
    CHECK_CONTAINS(err.msg, want);
    g2f_table_free(&t);
    free(pkl);
    free(zbuf);
    free(file);
}


/* A growable byte buffer for the generated archives. */
typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static void b_put(bytes *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 1 << 16;
        while (nc < b->len + n) nc *= 2;
        unsigned char *q = realloc(b->p, nc);
        if (!q) abort(); /* a test helper: no recovery */
        b->p = q;
        b->cap = nc;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void b_u8(bytes *b, unsigned v) {
    unsigned char c = (unsigned char)v;
    b_put(b, &c, 1);
}
static void b_le(bytes *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}
static void b_str(bytes *b, const char *s) { b_put(b, s, strlen(s)); }
static void b_ustr(bytes *b, const char *s) { /* BINUNICODE */
    b_u8(b, 'X');
    b_le(b, strlen(s), 4);
    b_str(b, s);
}

/* torch.save's data.pkl for {"t0": tensor, "t1": tensor, ...}: n empty F32
 * tensors, tensor i on its own storage "i" (numel 0). Globals and constant
 * strings are memoized (BINPUT / BINGET) as torch's pickler does, so the
 * pickle is about 50 bytes per tensor. */
static void torch_many_pickle(bytes *b, size_t n) {
    b_u8(b, 0x80);
    b_u8(b, 2);
    b_u8(b, '}');
    for (size_t i = 0; i < n; i++) {
        char key[32];
        if (i % 1000 == 0) b_u8(b, '('); /* MARK: SETITEMS in batches, like pickle */
        snprintf(key, sizeof key, "t%zu", i);
        b_ustr(b, key);
        if (i == 0) {
            b_str(b, "ctorch._utils\n_rebuild_tensor_v2\nq\x01");
        } else {
            b_str(b, "h\x01");
        }
        b_str(b, "((");
        if (i == 0) {
            b_ustr(b, "storage");
            b_str(b, "q\x02" "ctorch\nFloatStorage\nq\x03");
        } else {
            b_str(b, "h\x02h\x03");
        }
        snprintf(key, sizeof key, "%zu", i);
        b_ustr(b, key);
        if (i == 0) {
            b_ustr(b, "cpu");
            b_str(b, "q\x04");
        } else {
            b_str(b, "h\x04");
        }
        b_str(b, "K"); b_u8(b, 0); b_str(b, "tQ");       /* numel 0, BINPERSID */
        b_str(b, "K"); b_u8(b, 0);                      /* offset 0 */
        b_str(b, "K"); b_u8(b, 0); b_u8(b, 0x85);       /* shape (0,) */
        b_str(b, "K"); b_u8(b, 1); b_u8(b, 0x85);       /* stride (1,) */
        b_u8(b, 0x89);                                  /* requires_grad False */
        if (i == 0) b_str(b, "ccollections\nOrderedDict\nq\x05");
        else b_str(b, "h\x05");
        b_str(b, ")RtR");
        if (i % 1000 == 999 || i + 1 == n) b_u8(b, 'u');
    }
    b_u8(b, '.');
}

/* A stored-only zip of the members (names[i], data[i], size[i]), with ZIP64
 * end records when there are more than 65,534 members. */
static void zip_stored(bytes *b, size_t n, char *const *names, const unsigned char *const *data, const size_t *size) {
    uint64_t *offs = malloc(n * sizeof *offs);
    uint32_t *crcs = malloc(n * sizeof *crcs);
    if (!offs || !crcs) abort();
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        crcs[i] = (uint32_t)crc32(0, size[i] ? data[i] : Z_NULL, (uInt)size[i]);
        offs[i] = b->len;
        b_le(b, 0x04034b50, 4);
        b_le(b, 20, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 2); /* stored */
        b_le(b, 0, 4);
        b_le(b, crcs[i], 4);
        b_le(b, size[i], 4);
        b_le(b, size[i], 4);
        b_le(b, nl, 2);
        b_le(b, 0, 2);
        b_put(b, names[i], nl);
        if (size[i]) b_put(b, data[i], size[i]);
    }
    uint64_t cd = b->len;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        b_le(b, 0x02014b50, 4);
        b_le(b, 20, 2);
        b_le(b, 20, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 4);
        b_le(b, crcs[i], 4);
        b_le(b, size[i], 4);
        b_le(b, size[i], 4);
        b_le(b, nl, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 2);
        b_le(b, 0, 4);
        b_le(b, offs[i], 4);
        b_put(b, names[i], nl);
    }
    uint64_t cds = b->len - cd;
    int z64 = n >= 0xffff;
    if (z64) {
        uint64_t rec = b->len;
        b_le(b, 0x06064b50, 4);
        b_le(b, 44, 8);
        b_le(b, 45, 2);
        b_le(b, 45, 2);
        b_le(b, 0, 4);
        b_le(b, 0, 4);
        b_le(b, n, 8);
        b_le(b, n, 8);
        b_le(b, cds, 8);
        b_le(b, cd, 8);
        b_le(b, 0x07064b50, 4);
        b_le(b, 0, 4);
        b_le(b, rec, 8);
        b_le(b, 1, 4);
    }
    b_le(b, 0x06054b50, 4);
    b_le(b, 0, 2);
    b_le(b, 0, 2);
    b_le(b, z64 ? 0xffff : n, 2);
    b_le(b, z64 ? 0xffff : n, 2);
    b_le(b, cds, 4);
    b_le(b, cd, 4);
    b_le(b, 0, 2);
    free(offs);
    free(crcs);
}

/* 400,000 tensors, each on its own storage (issue 12: a linear search of the
 * storages already checked took 53 s): every storage's CRC is checked once,
 * and finding whether it was checked must not scan the others. */
static void torch_should_check_own_storages_in_n_log_n(void) {
    size_t n = 400000;
    bytes pkl = {0}, zip = {0};
    torch_many_pickle(&pkl, n);
    char **names = malloc((n + 1) * sizeof *names);
    const unsigned char **data = calloc(n + 1, sizeof *data);
    size_t *size = calloc(n + 1, sizeof *size);
    CHECK(names && data && size);
    if (!names || !data || !size) return;
    names[0] = "archive/data.pkl";
    data[0] = pkl.p;
    size[0] = pkl.len;
    for (size_t i = 0; i < n; i++) {
        names[i + 1] = malloc(32);
        if (!names[i + 1]) abort();
        snprintf(names[i + 1], 32, "archive/data/%zu", i);
    }
    zip_stored(&zip, n + 1, names, data, size);
    g2f_table t = {0};
    g2f_error err = {0};
    double t0 = cpu_s(), w0 = now_s();
    CHECK(g2f_torch_parse(zip.p, zip.len, "many.pt", &t, &err) == G2F_OK);
    double dt = cpu_s() - t0;
    fprintf(stderr, "torch: %zu tensors on their own storages parsed in %.2f s of CPU (%.2f s wall)\n", n, dt,
            now_s() - w0);
    CHECK(dt < TIME_LIMIT_S);
    CHECK(t.count == n);
    g2f_table_free(&t);
    for (size_t i = 1; i <= n; i++) free(names[i]);
    free(names);
    free(data);
    free(size);
    free(pkl.p);
    free(zip.p);
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "bounds") != 0) return 1;
    RUN(safetensors_should_check_names_in_n_log_n);
    RUN(shard_index_should_map_in_n_log_n);
    RUN(shard_index_should_refuse_more_than_a_million_entries);
    RUN(pickle_should_stop_at_its_allocation_cap);
    RUN(torch_deflated_pickle_should_be_capped_by_the_file_size);
    RUN(torch_should_check_own_storages_in_n_log_n);
    rmdir(dir);
    CHECK_EXIT();
}
