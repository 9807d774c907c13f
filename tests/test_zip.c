/* zip reader: archives built here byte by byte (stored, deflated, ZIP64),
 * read back, then corrupted one field at a time, each asserting the status
 * and the message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "g2f_zip.h"

/* ---- a minimal zip writer --------------------------------------------- */

typedef struct zmember {
    const char *name;
    const void *data;
    size_t size;
    int deflate;
} zmember;

typedef struct zlayout {
    size_t local[8], central[8]; /* offsets of each member's headers */
    size_t cd, eocd, size;
} zlayout;

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { put16(p, v & 0xffff); put16(p + 2, v >> 16); }
static void put64(unsigned char *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

static size_t raw_deflate(const void *in, size_t n, unsigned char *out, size_t cap) {
    z_stream s;
    memset(&s, 0, sizeof s);
    deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    s.next_in = (unsigned char *)(uintptr_t)in;
    s.avail_in = (uInt)n;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    deflate(&s, Z_FINISH);
    size_t r = s.total_out;
    deflateEnd(&s);
    return r;
}

/* Writes n members into out; zip64 puts sizes and offsets in ZIP64 extra
 * fields and adds the ZIP64 end records. Returns the archive size. */
static size_t zip_build(unsigned char *out, const zmember *m, size_t n, int zip64, zlayout *lay) {
    size_t pos = 0, csize[8];
    uint32_t crc[8];
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name);
        unsigned char *l = out + pos;
        lay->local[i] = pos;
        memset(l, 0, 30);
        put32(l, 0x04034b50);
        put16(l + 4, 20);
        put16(l + 8, m[i].deflate ? 8 : 0);
        crc[i] = (uint32_t)crc32(0, m[i].data, (uInt)m[i].size);
        put32(l + 14, crc[i]);
        put16(l + 26, (unsigned)nl);
        memcpy(l + 30, m[i].name, nl);
        pos += 30 + nl;
        if (m[i].deflate) {
            csize[i] = raw_deflate(m[i].data, m[i].size, out + pos, 1 << 20);
        } else {
            memcpy(out + pos, m[i].data, m[i].size);
            csize[i] = m[i].size;
        }
        put32(l + 18, (uint32_t)csize[i]);
        put32(l + 22, (uint32_t)m[i].size);
        pos += csize[i];
    }
    lay->cd = pos;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name);
        unsigned char *c = out + pos;
        lay->central[i] = pos;
        memset(c, 0, 46);
        put32(c, 0x02014b50);
        put16(c + 4, 45);
        put16(c + 6, 20);
        put16(c + 10, m[i].deflate ? 8 : 0);
        put32(c + 16, crc[i]);
        put32(c + 20, zip64 ? 0xffffffffu : (uint32_t)csize[i]);
        put32(c + 24, zip64 ? 0xffffffffu : (uint32_t)m[i].size);
        put16(c + 28, (unsigned)nl);
        put16(c + 30, zip64 ? 28 : 0);
        put32(c + 42, zip64 ? 0xffffffffu : (uint32_t)lay->local[i]);
        memcpy(c + 46, m[i].name, nl);
        pos += 46 + nl;
        if (zip64) {
            unsigned char *x = out + pos;
            put16(x, 1);
            put16(x + 2, 24);
            put64(x + 4, m[i].size);
            put64(x + 12, csize[i]);
            put64(x + 20, lay->local[i]);
            pos += 28;
        }
    }
    size_t cd_size = pos - lay->cd;
    if (zip64) {
        unsigned char *r = out + pos;
        memset(r, 0, 56);
        put32(r, 0x06064b50);
        put64(r + 4, 44);
        put64(r + 24, n);
        put64(r + 32, n);
        put64(r + 40, cd_size);
        put64(r + 48, lay->cd);
        unsigned char *loc = r + 56;
        put32(loc, 0x07064b50);
        put32(loc + 4, 0);
        put64(loc + 8, pos);
        put32(loc + 16, 1);
        pos += 76;
    }
    unsigned char *e = out + pos;
    lay->eocd = pos;
    memset(e, 0, 22);
    put32(e, 0x06054b50);
    put16(e + 8, zip64 ? 0xffff : (unsigned)n);
    put16(e + 10, zip64 ? 0xffff : (unsigned)n);
    put32(e + 12, zip64 ? 0xffffffffu : (uint32_t)cd_size);
    put32(e + 16, zip64 ? 0xffffffffu : (uint32_t)lay->cd);
    pos += 22;
    lay->size = pos;
    return pos;
}

/* ---- helpers ------------------------------------------------------------ */

static unsigned char zbuf[1 << 22];
static unsigned char big[1 << 21];
static const char hello[] = "hello, zip";
static zlayout lay;

/* Two members: a stored "r/a" and a deflated "r/b" of 4000 patterned bytes. */
static size_t build_pair(int zip64) {
    for (size_t i = 0; i < 4000; i++) big[i] = (unsigned char)(i % 251 * 7);
    zmember m[2] = {{"r/a", hello, sizeof hello - 1, 0}, {"r/b", big, 4000, 1}};
    return zip_build(zbuf, m, 2, zip64, &lay);
}

static void expect_open_error(size_t n, const char *needle, int line) {
    g2f_zip *z = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_zip_open_mapping(zbuf, n, "bad.zip", &z, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "bad.zip")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(z == NULL);
    g2f_zip_close(z);
}
#define EXPECT_OPEN_ERROR(n, needle) expect_open_error(n, needle, __LINE__)

static void check_pair(g2f_zip *z) {
    g2f_error err = {0};
    CHECK(g2f_zip_count(z) == 2);
    const g2f_zip_member *a = g2f_zip_find(z, "r/a"), *b = g2f_zip_find(z, "r/b");
    CHECK(a && b && g2f_zip_entry(z, 0) == a && g2f_zip_entry(z, 1) == b && g2f_zip_entry(z, 2) == NULL);
    CHECK(g2f_zip_find(z, "r/c") == NULL && g2f_zip_find(z, "r") == NULL);
    if (!a || !b) return;
    CHECK(a->method == G2F_ZIP_STORED && a->size == sizeof hello - 1 && a->compressed_size == a->size);
    CHECK(b->method == G2F_ZIP_DEFLATE && b->size == 4000 && b->compressed_size < 4000);
    const unsigned char *view = NULL;
    CHECK(g2f_zip_stored_view(z, a, &view, &err) == G2F_OK);
    CHECK(view == zbuf + lay.local[0] + 30 + 3 && memcmp(view, hello, a->size) == 0); /* in place */
    CHECK(g2f_zip_stored_view(z, b, &view, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "member 'r/b' is compressed");
    unsigned char *out = NULL;
    CHECK(g2f_zip_extract(z, b, 1 << 20, &out, &err) == G2F_OK);
    CHECK(out && memcmp(out, big, 4000) == 0);
    free(out);
    out = NULL;
    CHECK(g2f_zip_extract(z, a, 1 << 20, &out, &err) == G2F_OK);
    CHECK(out && memcmp(out, hello, a->size) == 0);
    free(out);
}

/* ---- tests -------------------------------------------------------------- */

static void zip_should_read_stored_and_deflated_members(void) {
    size_t n = build_pair(0);
    g2f_zip *z = NULL;
    g2f_error err = {0};
    CHECK(g2f_zip_open_mapping(zbuf, n, "ok.zip", &z, &err) == G2F_OK);
    if (z) check_pair(z);
    g2f_zip_close(z);
    g2f_zip_close(NULL);
}

static void zip_should_read_zip64_records(void) {
    size_t n = build_pair(1);
    g2f_zip *z = NULL;
    g2f_error err = {0};
    CHECK(g2f_zip_open_mapping(zbuf, n, "ok64.zip", &z, &err) == G2F_OK);
    if (z) check_pair(z);
    g2f_zip_close(z);
}

static void zip_should_find_the_end_record_behind_a_comment(void) {
    size_t n = build_pair(0);
    const char comment[] = "PK\x05\x06 a fake end record inside the comment";
    put16(zbuf + lay.eocd + 20, sizeof comment - 1);
    memcpy(zbuf + n, comment, sizeof comment - 1);
    g2f_zip *z = NULL;
    g2f_error err = {0};
    CHECK(g2f_zip_open_mapping(zbuf, n + sizeof comment - 1, "comment.zip", &z, &err) == G2F_OK);
    CHECK(z && g2f_zip_count(z) == 2);
    g2f_zip_close(z);
}

static void zip_should_reject_truncated_archives(void) {
    size_t n = build_pair(0);
    EXPECT_OPEN_ERROR(10, "too short for a zip archive");
    EXPECT_OPEN_ERROR(n - 1, "no end of central directory record");
    EXPECT_OPEN_ERROR(lay.cd + 10, "no end of central directory record");
    put32(zbuf + lay.eocd + 12, (uint32_t)(lay.eocd - lay.cd + 1)); /* directory size too large */
    EXPECT_OPEN_ERROR(n, "runs past its end record");
    build_pair(0);
    put16(zbuf + lay.eocd + 8, 3);
    put16(zbuf + lay.eocd + 10, 3); /* three entries claimed, room for two */
    EXPECT_OPEN_ERROR(n, "3 members cannot fit a 98-byte central directory");
    build_pair(0);
    zbuf[lay.central[1]] = 'X';
    EXPECT_OPEN_ERROR(n, "central directory entry 1 at offset");
    build_pair(0);
    put16(zbuf + lay.eocd + 4, 1);
    EXPECT_OPEN_ERROR(n, "multi-disk");
}

static void zip_should_reject_bad_directory_entries(void) {
    size_t n = build_pair(0);
    unsigned char *c1 = zbuf + lay.central[1];
    put16(c1 + 8, 1);
    EXPECT_OPEN_ERROR(n, "member 'r/b' is encrypted");
    build_pair(0);
    put16(c1 + 10, 12);
    EXPECT_OPEN_ERROR(n, "compression method 12 is not supported");
    build_pair(0);
    c1[46 + 1] = '\0';
    EXPECT_OPEN_ERROR(n, "name of 3 bytes must be 1..4096 bytes without NUL");
    build_pair(0);
    c1[46 + 2] = 'a'; /* "r/a" twice */
    zbuf[lay.local[1] + 30 + 2] = 'a';
    EXPECT_OPEN_ERROR(n, "member 'r/a' appears twice");
    build_pair(0);
    put32(c1 + 20, 0xffffffffu);
    EXPECT_OPEN_ERROR(n, "0xffffffff without a ZIP64 extra field");
    build_pair(0);
    put32(zbuf + lay.central[0] + 20, 3); /* stored: compressed != size */
    EXPECT_OPEN_ERROR(n, "stored member 'r/a' has compressed size 3 != size 10");
}

static void zip_should_reject_bad_local_headers(void) {
    size_t n = build_pair(0);
    zbuf[lay.local[1]] = 'X';
    EXPECT_OPEN_ERROR(n, "member 'r/b': no local header signature");
    build_pair(0);
    zbuf[lay.local[1] + 30 + 2] = 'z';
    EXPECT_OPEN_ERROR(n, "member 'r/b': local header names another file");
    build_pair(0);
    put16(zbuf + lay.local[1] + 28, 5000);
    EXPECT_OPEN_ERROR(n, "member 'r/b': local header runs past the end of the file");
    build_pair(0);
    put16(zbuf + lay.local[1] + 28, 40); /* extra length pushes the data into the directory */
    EXPECT_OPEN_ERROR(n, "member 'r/b': data [");
    build_pair(0);
    put32(zbuf + lay.central[1] + 42, (uint32_t)n); /* offset past the end */
    EXPECT_OPEN_ERROR(n, "local header offset");
}

/* Member "r/b"'s local header is written inside member "r/a"'s data, and the
 * directory points at it: both are valid alone but they overlap. */
static void zip_should_reject_overlapping_members(void) {
    unsigned char inner[64];
    const char payload[] = "xyz";
    memset(inner, 0, sizeof inner);
    put32(inner, 0x04034b50);
    put32(inner + 14, (uint32_t)crc32(0, (const unsigned char *)payload, 3));
    put32(inner + 18, 3);
    put32(inner + 22, 3);
    put16(inner + 26, 3);
    memcpy(inner + 30, "r/b", 3);
    memcpy(inner + 33, payload, 3);
    zmember m[2] = {{"r/a", inner, 36, 0}, {"r/b", payload, 3, 0}};
    size_t n = zip_build(zbuf, m, 2, 0, &lay);
    put32(zbuf + lay.central[1] + 42, (uint32_t)(lay.local[0] + 30 + 3)); /* r/a's data start */
    EXPECT_OPEN_ERROR(n, "member 'r/b' at offset 33 overlaps member 'r/a'");
}

static void zip_should_reject_bad_zip64_records(void) {
    size_t n = build_pair(1);
    size_t rec = lay.eocd - 76, loc = lay.eocd - 20;
    put64(zbuf + loc + 8, n); /* record offset outside the file */
    EXPECT_OPEN_ERROR(n, "ZIP64 end of central directory offset");
    build_pair(1);
    zbuf[rec] = 'X';
    EXPECT_OPEN_ERROR(n, "bad ZIP64 end of central directory signature");
    build_pair(1);
    put64(zbuf + rec + 32, 1u << 30); /* too many entries */
    put64(zbuf + rec + 24, 1u << 30);
    EXPECT_OPEN_ERROR(n, "more than the limit of 1000000");
    build_pair(1);
    put64(zbuf + rec + 32, 100); /* more entries than the directory can hold */
    put64(zbuf + rec + 24, 100);
    EXPECT_OPEN_ERROR(n, "cannot fit");
    build_pair(1);
    put16(zbuf + lay.central[0] + 32 - 2, 20); /* ZIP64 extra field too short for its three values */
    put16(zbuf + lay.central[0] + 46 + 3 + 2, 16);
    EXPECT_OPEN_ERROR(n, "ZIP64 extra field");
    build_pair(1);
    zbuf[loc] = 'X'; /* EOCD says ZIP64 but the locator is gone */
    EXPECT_OPEN_ERROR(n, "no ZIP64 locator");
}

static void zip_should_reject_bad_crc(void) {
    size_t n = build_pair(0);
    zbuf[lay.local[0] + 30 + 3] ^= 1; /* one bit of r/a's data */
    g2f_zip *z = NULL;
    g2f_error err = {0};
    CHECK(g2f_zip_open_mapping(zbuf, n, "crc.zip", &z, &err) == G2F_OK); /* CRC is checked on read */
    if (!z) return;
    const unsigned char *view = NULL;
    CHECK(g2f_zip_stored_view(z, g2f_zip_find(z, "r/a"), &view, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "crc.zip: member 'r/a': CRC-32 is 0x");
    CHECK(view == NULL);
    unsigned char *out = NULL;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "r/a"), 100, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "CRC-32");
    CHECK(out == NULL);
    g2f_zip_close(z);
    /* A deflated member whose CRC in the directory is wrong. */
    build_pair(0);
    put32(zbuf + lay.central[1] + 16, 0x12345678);
    CHECK(g2f_zip_open_mapping(zbuf, n, "crc.zip", &z, &err) == G2F_OK);
    if (!z) return;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "r/b"), 1 << 20, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "directory says 0x12345678");
    g2f_zip_close(z);
}

static void zip_should_refuse_zip_bombs_and_lying_sizes(void) {
    memset(big, 0, sizeof big);
    zmember m[1] = {{"bomb", big, sizeof big, 1}}; /* 2 MiB of zeros deflate to ~2 KiB */
    size_t n = zip_build(zbuf, m, 1, 0, &lay);
    g2f_zip *z = NULL;
    g2f_error err = {0};
    CHECK(g2f_zip_open_mapping(zbuf, n, "bomb.zip", &z, &err) == G2F_OK);
    if (!z) return;
    unsigned char *out = NULL;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "bomb"), UINT64_MAX, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "a ratio above 1000:1 (zip bomb?)");
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "bomb"), 1000, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "above the limit of 1000");
    CHECK(out == NULL);
    g2f_zip_close(z);

    /* The directory understates / overstates the inflated size. */
    n = build_pair(0);
    put32(zbuf + lay.central[1] + 24, 3000);
    CHECK(g2f_zip_open_mapping(zbuf, n, "size.zip", &z, &err) == G2F_OK);
    if (!z) return;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "r/b"), 1 << 20, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "inflates to more than its declared 3000 bytes");
    g2f_zip_close(z);
    put32(zbuf + lay.central[1] + 24, 5000);
    CHECK(g2f_zip_open_mapping(zbuf, n, "size.zip", &z, &err) == G2F_OK);
    if (!z) return;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "r/b"), 1 << 20, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "inflates to 4000 bytes but the directory says 5000");
    g2f_zip_close(z);
    /* Garbage instead of deflate data. */
    build_pair(0);
    memset(zbuf + lay.local[1] + 33, 0xff, 8);
    CHECK(g2f_zip_open_mapping(zbuf, n, "junk.zip", &z, &err) == G2F_OK);
    if (!z) return;
    CHECK(g2f_zip_extract(z, g2f_zip_find(z, "r/b"), 1 << 20, &out, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "member 'r/b'");
    g2f_zip_close(z);
}

int main(void) {
    RUN(zip_should_read_stored_and_deflated_members);
    RUN(zip_should_read_zip64_records);
    RUN(zip_should_find_the_end_record_behind_a_comment);
    RUN(zip_should_reject_truncated_archives);
    RUN(zip_should_reject_bad_directory_entries);
    RUN(zip_should_reject_bad_local_headers);
    RUN(zip_should_reject_overlapping_members);
    RUN(zip_should_reject_bad_zip64_records);
    RUN(zip_should_reject_bad_crc);
    RUN(zip_should_refuse_zip_bombs_and_lying_sizes);
    CHECK_EXIT();
}
