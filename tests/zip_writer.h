/* A stored/deflated zip writer for tests (torch.save archives built byte
 * by byte, with pickle_writer.h for data.pkl): zip_write(e, n) writes n
 * members into zbuf and returns the archive's size. Plain zip (no ZIP64),
 * at most 16 members, 256 KiB in all. */
#ifndef G2F_TEST_ZIP_WRITER_H
#define G2F_TEST_ZIP_WRITER_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

typedef struct zent {
    const char *name;
    const void *data;
    size_t size;
    int deflate;
    int bad_crc;
} zent;

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { put16(p, v & 0xffff); put16(p + 2, v >> 16); }

#ifndef ZIP_WRITER_BUF
#define ZIP_WRITER_BUF (1 << 18)
#endif
static unsigned char zbuf[ZIP_WRITER_BUF];

/* A plain (non-ZIP64) archive of n members; returns its size. */
static size_t zip_write(const zent *e, size_t n) {
    size_t pos = 0, off[16], csz[16];
    uint32_t crc[16];
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        unsigned char *l = zbuf + pos;
        off[i] = pos;
        memset(l, 0, 30);
        put32(l, 0x04034b50);
        put16(l + 8, e[i].deflate ? 8 : 0);
        crc[i] = (uint32_t)crc32(0, e[i].data, (uInt)e[i].size) ^ (e[i].bad_crc ? 1u : 0u);
        put16(l + 26, (unsigned)nl);
        memcpy(l + 30, e[i].name, nl);
        pos += 30 + nl;
        if (e[i].deflate) {
            z_stream s;
            memset(&s, 0, sizeof s);
            deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
            s.next_in = (unsigned char *)(uintptr_t)e[i].data;
            s.avail_in = (uInt)e[i].size;
            s.next_out = zbuf + pos;
            s.avail_out = 1 << 16;
            deflate(&s, Z_FINISH);
            csz[i] = s.total_out;
            deflateEnd(&s);
        } else {
            memcpy(zbuf + pos, e[i].data, e[i].size);
            csz[i] = e[i].size;
        }
        pos += csz[i];
    }
    size_t cd = pos;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        unsigned char *c = zbuf + pos;
        memset(c, 0, 46);
        put32(c, 0x02014b50);
        put16(c + 10, e[i].deflate ? 8 : 0);
        put32(c + 16, crc[i]);
        put32(c + 20, (uint32_t)csz[i]);
        put32(c + 24, (uint32_t)e[i].size);
        put16(c + 28, (unsigned)nl);
        put32(c + 42, (uint32_t)off[i]);
        memcpy(c + 46, e[i].name, nl);
        pos += 46 + nl;
    }
    unsigned char *eo = zbuf + pos;
    memset(eo, 0, 22);
    put32(eo, 0x06054b50);
    put16(eo + 8, (unsigned)n);
    put16(eo + 10, (unsigned)n);
    put32(eo + 12, (uint32_t)(pos - cd));
    put32(eo + 16, (uint32_t)cd);
    return pos + 22;
}

#endif
