/* g2f_zip: see the layout and checklist in g2f_zip.h. The archive is
 * untrusted: every field is decoded with explicit little-endian loads and
 * checked against the bytes that are really there before it is used. */
#include "g2f_zip.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "g2f_bytes.h"
#include "g2f_names.h"
#include "g2f_tensor.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_SIZE 22u
#define EOCD64_SIZE 56u
#define LOCATOR64_SIZE 20u
#define CENTRAL_SIZE 46u
#define LOCAL_SIZE 30u
#define MAX_COMMENT 65535u
/* zlib counts in uInt: feed it at most this much at a time. */
#define ZCHUNK (1u << 30)

typedef struct member_ext {
    g2f_zip_member m;
    uint64_t end; /* data end: m.data's offset + compressed size */
} member_ext;

struct g2f_zip {
    const unsigned char *base;
    uint64_t size;
    const char *label;
    member_ext *members;          /* central directory order */
    size_t count;
    g2f_name_ref *by_name;        /* member names sorted, for g2f_zip_find */
    char *names;                  /* one block holding every name */
};


static int offset_cmp(const void *a, const void *b) {
    const member_ext *x = *(const member_ext *const *)a, *y = *(const member_ext *const *)b;
    return x->m.header_offset < y->m.header_offset ? -1 : x->m.header_offset > y->m.header_offset;
}

/* Finds the EOCD whose comment ends exactly at the end of the file: a
 * signature inside a comment (or inside data) then cannot fool the search. */
static g2f_status find_eocd(const unsigned char *b, uint64_t size, const char *label, uint64_t *pos,
                            g2f_error *err) {
    if (size < EOCD_SIZE)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %llu bytes is too short for a zip archive", label,
                             (unsigned long long)size);
    uint64_t lowest = size > EOCD_SIZE + MAX_COMMENT ? size - EOCD_SIZE - MAX_COMMENT : 0;
    for (uint64_t p = size - EOCD_SIZE + 1; p-- > lowest;) {
        if (g2f_load_u32le(b + p) == SIG_EOCD && p + EOCD_SIZE + g2f_load_u16le(b + p + 20) == size) {
            *pos = p;
            return G2F_OK;
        }
    }
    return g2f_error_set(err, G2F_ERR_FORMAT,
                         "%s: no end of central directory record in the last %llu bytes (truncated or not a zip)",
                         label, (unsigned long long)(size - lowest));
}

typedef struct directory {
    uint64_t entries, size, offset;
    uint64_t limit; /* the directory must end at or before this offset */
} directory;

static g2f_status read_eocd(const unsigned char *b, uint64_t size, const char *label, directory *d,
                            g2f_error *err) {
    uint64_t pos = 0;
    g2f_status st = find_eocd(b, size, label, &pos, err);
    if (st != G2F_OK) return st;
    const unsigned char *e = b + pos;
    if (g2f_load_u16le(e + 4) != 0 || g2f_load_u16le(e + 6) != 0 || g2f_load_u16le(e + 8) != g2f_load_u16le(e + 10))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: multi-disk (split) zip archives are not supported", label);
    d->entries = g2f_load_u16le(e + 10);
    d->size = g2f_load_u32le(e + 12);
    d->offset = g2f_load_u32le(e + 16);
    d->limit = pos;
    int wants64 = d->entries == 0xffff || d->size == 0xffffffffu || d->offset == 0xffffffffu;
    if (pos < LOCATOR64_SIZE || g2f_load_u32le(b + pos - LOCATOR64_SIZE) != SIG_LOCATOR64) {
        if (wants64)
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: end of central directory defers to ZIP64 but there is no ZIP64 locator", label);
        return G2F_OK;
    }
    const unsigned char *loc = b + pos - LOCATOR64_SIZE;
    uint64_t rec = g2f_load_u64le(loc + 8);
    if (g2f_load_u32le(loc + 4) != 0 || g2f_load_u32le(loc + 16) > 1)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: multi-disk (split) zip archives are not supported", label);
    uint64_t room = pos - LOCATOR64_SIZE;
    if (rec > room || room - rec < EOCD64_SIZE)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: ZIP64 end of central directory offset %llu is outside the file (must be <= %llu)",
                             label, (unsigned long long)rec,
                             (unsigned long long)(room >= EOCD64_SIZE ? room - EOCD64_SIZE : 0));
    const unsigned char *r = b + rec;
    if (g2f_load_u32le(r) != SIG_EOCD64)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: bad ZIP64 end of central directory signature at %llu",
                             label, (unsigned long long)rec);
    if (g2f_load_u32le(r + 16) != 0 || g2f_load_u32le(r + 20) != 0 || g2f_load_u64le(r + 24) != g2f_load_u64le(r + 32))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: multi-disk (split) zip archives are not supported", label);
    d->entries = g2f_load_u64le(r + 32);
    d->size = g2f_load_u64le(r + 40);
    d->offset = g2f_load_u64le(r + 48);
    d->limit = rec;
    return G2F_OK;
}

/* Fills the ZIP64 values of the fields marked 0xffffffff from extra field
 * 0x0001; every marked field must be there. */
static g2f_status read_zip64_extra(const unsigned char *x, size_t xlen, const char *label, const char *name,
                                   uint64_t *fields[3], g2f_error *err) {
    size_t i = 0;
    while (xlen - i >= 4) {
        unsigned id = g2f_load_u16le(x + i), len = g2f_load_u16le(x + i + 2);
        if (len > xlen - i - 4)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': extra field 0x%04x runs past its end", label,
                                 name, id);
        if (id == 0x0001) {
            size_t at = 0;
            for (int f = 0; f < 3; f++) {
                if (*fields[f] != 0xffffffffu) continue;
                if (len - at < 8)
                    return g2f_error_set(err, G2F_ERR_FORMAT,
                                         "%s: member '%s': ZIP64 extra field is too short for its 64-bit sizes", label,
                                         name);
                *fields[f] = g2f_load_u64le(x + i + 4 + at);
                at += 8;
            }
            return G2F_OK;
        }
        i += 4 + len;
    }
    for (int f = 0; f < 3; f++)
        if (*fields[f] == 0xffffffffu)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': size or offset 0xffffffff without a ZIP64 extra field",
                                 label, name);
    return G2F_OK;
}

/* Decodes central entry at *pos (inside [.., end)) into me; names go to *names. */
static g2f_status read_central(const g2f_zip *z, uint64_t *pos, uint64_t end, size_t index, member_ext *me,
                               char **names, g2f_error *err) {
    const unsigned char *c = z->base + *pos;
    if (end - *pos < CENTRAL_SIZE || g2f_load_u32le(c) != SIG_CENTRAL)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: central directory entry %zu at offset %llu is missing or truncated",
                             z->label, index, (unsigned long long)*pos);
    unsigned flags = g2f_load_u16le(c + 8), method = g2f_load_u16le(c + 10);
    size_t nlen = g2f_load_u16le(c + 28), xlen = g2f_load_u16le(c + 30), clen = g2f_load_u16le(c + 32);
    if (end - *pos - CENTRAL_SIZE < (uint64_t)nlen + xlen + clen)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: central directory entry %zu runs past the directory's end",
                             z->label, index);
    const unsigned char *nm = c + CENTRAL_SIZE;
    if (nlen == 0 || nlen > G2F_ZIP_MAX_NAME || memchr(nm, 0, nlen))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: central directory entry %zu: name of %zu bytes must be 1..%u bytes without NUL",
                             z->label, index, nlen, G2F_ZIP_MAX_NAME);
    char *name = *names;
    memcpy(name, nm, nlen);
    name[nlen] = '\0';
    *names += nlen + 1;
    me->m.name = name;
    if (flags & 0x41)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' is encrypted", z->label, name);
    if (method != G2F_ZIP_STORED && method != G2F_ZIP_DEFLATE)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: member '%s': compression method %u is not supported (only 0 stored, 8 deflate)",
                             z->label, name, method);
    me->m.method = method;
    me->m.crc32 = g2f_load_u32le(c + 16);
    uint64_t csize = g2f_load_u32le(c + 20), usize = g2f_load_u32le(c + 24), off = g2f_load_u32le(c + 42);
    uint64_t *fields[3] = {&usize, &csize, &off};
    g2f_status st = read_zip64_extra(nm + nlen, xlen, z->label, name, fields, err);
    if (st != G2F_OK) return st;
    if (g2f_load_u16le(c + 34) != 0 && g2f_load_u16le(c + 34) != 0xffff)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' is on another disk", z->label, name);
    if (method == G2F_ZIP_STORED && csize != usize)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: stored member '%s' has compressed size %llu != size %llu",
                             z->label, name, (unsigned long long)csize, (unsigned long long)usize);
    me->m.compressed_size = csize;
    me->m.size = usize;
    me->m.header_offset = off;
    *pos += CENTRAL_SIZE + nlen + xlen + clen;
    return G2F_OK;
}

/* Checks the member's local header and places its data inside [0, data_limit). */
static g2f_status check_local(const g2f_zip *z, member_ext *me, uint64_t data_limit, g2f_error *err) {
    const char *name = me->m.name;
    uint64_t off = me->m.header_offset;
    if (off > z->size || z->size - off < LOCAL_SIZE)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': local header offset %llu is past the end of the file",
                             z->label, name, (unsigned long long)off);
    const unsigned char *l = z->base + off;
    size_t nlen = strlen(name);
    if (g2f_load_u32le(l) != SIG_LOCAL)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': no local header signature at offset %llu", z->label,
                             name, (unsigned long long)off);
    if (g2f_load_u16le(l + 26) != nlen || g2f_load_u16le(l + 8) != me->m.method)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: member '%s': local header disagrees with the central directory (name length or method)",
                             z->label, name);
    uint64_t start = off + LOCAL_SIZE + nlen + g2f_load_u16le(l + 28); /* < 2^64: off <= size - 30 */
    if (start > z->size)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': local header runs past the end of the file",
                             z->label, name);
    if (memcmp(l + LOCAL_SIZE, name, nlen) != 0)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': local header names another file", z->label, name);
    uint64_t end;
    if (!g2f_add_u64(start, me->m.compressed_size, &end) || end > data_limit)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: member '%s': data [%llu, +%llu) runs past the end of the member data (%llu)",
                             z->label, name, (unsigned long long)start, (unsigned long long)me->m.compressed_size,
                             (unsigned long long)data_limit);
    me->m.data = z->base + start;
    me->end = end;
    return G2F_OK;
}

static g2f_status check_layout(g2f_zip *z, g2f_error *err) {
    g2f_status st = G2F_OK;
    g2f_name_ref *byname = g2f_alloc_array(z->count ? z->count : 1, sizeof *byname);
    const member_ext **byoff = g2f_alloc_array(z->count ? z->count : 1, sizeof *byoff);
    if (!byname || !byoff) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %zu zip members", z->label, z->count);
        goto done;
    }
    for (size_t i = 0; i < z->count; i++) {
        byname[i] = g2f_name_ref_of(z->members[i].m.name, i);
        byoff[i] = &z->members[i];
    }
    g2f_names_sort(byname, z->count);
    size_t dup = g2f_names_find_dup(byname, z->count);
    if (dup) {
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' appears twice", z->label, byname[dup].s);
        goto done;
    }
    qsort(byoff, z->count, sizeof *byoff, offset_cmp);
    for (size_t i = 1; i < z->count; i++)
        if (byoff[i]->m.header_offset < byoff[i - 1]->end) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' at offset %llu overlaps member '%s' (ends at %llu)",
                               z->label, byoff[i]->m.name, (unsigned long long)byoff[i]->m.header_offset,
                               byoff[i - 1]->m.name, (unsigned long long)byoff[i - 1]->end);
            goto done;
        }
    z->by_name = byname;
    byname = NULL;
done:
    free(byname);
    free(byoff);
    return st;
}

g2f_status g2f_zip_open_mapping(const unsigned char *data, uint64_t size, const char *label, g2f_zip **out,
                                g2f_error *err) {
    *out = NULL;
    directory d = {0, 0, 0, 0};
    g2f_status st = read_eocd(data, size, label, &d, err);
    if (st != G2F_OK) return st;
    if (d.entries > G2F_ZIP_MAX_ENTRIES)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %llu zip members, more than the limit of %u", label,
                             (unsigned long long)d.entries, G2F_ZIP_MAX_ENTRIES);
    uint64_t cd_end;
    if (!g2f_add_u64(d.offset, d.size, &cd_end) || cd_end > d.limit)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: central directory [%llu, +%llu) runs past its end record at %llu (truncated?)", label,
                             (unsigned long long)d.offset, (unsigned long long)d.size, (unsigned long long)d.limit);
    if (d.entries * CENTRAL_SIZE > d.size)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %llu members cannot fit a %llu-byte central directory", label,
                             (unsigned long long)d.entries, (unsigned long long)d.size);
    g2f_zip *z = calloc(1, sizeof *z);
    if (!z) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", label);
    z->base = data;
    z->size = size;
    z->label = label;
    /* Names total at most the directory size (minus fixed parts) plus NULs. */
    z->members = g2f_alloc_array(d.entries ? (size_t)d.entries : 1, sizeof *z->members);
    z->names = malloc((size_t)d.size + 1);
    if (!z->members || !z->names) {
        g2f_zip_close(z);
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for %llu zip members", label,
                             (unsigned long long)d.entries);
    }
    char *names = z->names;
    uint64_t pos = d.offset;
    for (size_t i = 0; i < d.entries; i++) {
        memset(&z->members[i], 0, sizeof z->members[i]);
        z->members[i].m.index = i;
        if ((st = read_central(z, &pos, cd_end, i, &z->members[i], &names, err)) != G2F_OK) goto fail;
        z->count++;
    }
    for (size_t i = 0; i < z->count; i++)
        if ((st = check_local(z, &z->members[i], d.offset, err)) != G2F_OK) goto fail;
    if ((st = check_layout(z, err)) != G2F_OK) goto fail;
    *out = z;
    return G2F_OK;
fail:
    g2f_zip_close(z);
    return st;
}

size_t g2f_zip_count(const g2f_zip *z) { return z->count; }

const g2f_zip_member *g2f_zip_entry(const g2f_zip *z, size_t i) { return i < z->count ? &z->members[i].m : NULL; }

const g2f_zip_member *g2f_zip_find(const g2f_zip *z, const char *name) {
    const g2f_name_ref *r = g2f_names_find(z->by_name, z->count, name, strlen(name));
    return r ? &z->members[r->index].m : NULL;
}

static uint32_t crc_of(const unsigned char *p, uint64_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt chunk = n > ZCHUNK ? ZCHUNK : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

static g2f_status check_crc(const g2f_zip *z, const g2f_zip_member *m, const unsigned char *p, g2f_error *err) {
    uint32_t crc = crc_of(p, m->size);
    if (crc != m->crc32)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': CRC-32 is 0x%08x but the directory says 0x%08x",
                             z->label, m->name, crc, m->crc32);
    return G2F_OK;
}

g2f_status g2f_zip_stored_view(const g2f_zip *z, const g2f_zip_member *m, const unsigned char **out,
                               g2f_error *err) {
    if (m->method != G2F_ZIP_STORED)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' is compressed (method %u); it must be stored",
                             z->label, m->name, m->method);
    g2f_status st = check_crc(z, m, m->data, err);
    if (st == G2F_OK) *out = m->data;
    return st;
}

/* Inflates m->compressed_size raw-deflate bytes into buf[0, m->size). */
static g2f_status inflate_member(const g2f_zip *z, const g2f_zip_member *m, unsigned char *buf, g2f_error *err) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK)
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: member '%s': cannot start inflate", z->label, m->name);
    const unsigned char *in = m->data;
    uint64_t in_left = m->compressed_size, out_left = m->size;
    unsigned char *o = buf, spare;
    int overflow_probe = 0, r;
    g2f_status st = G2F_OK;
    for (;;) {
        if (s.avail_in == 0 && in_left) {
            s.avail_in = in_left > ZCHUNK ? ZCHUNK : (uInt)in_left;
            s.next_in = (unsigned char *)(uintptr_t)in; /* zlib's API is not const */
            in += s.avail_in;
            in_left -= s.avail_in;
        }
        if (s.avail_out == 0) {
            if (out_left) {
                s.avail_out = out_left > ZCHUNK ? ZCHUNK : (uInt)out_left;
                s.next_out = o;
                o += s.avail_out;
                out_left -= s.avail_out;
            } else {
                /* The buffer is full: one spare byte tells "done" from "more". */
                s.next_out = &spare;
                s.avail_out = 1;
                overflow_probe = 1;
            }
        }
        r = inflate(&s, Z_NO_FLUSH);
        if (overflow_probe && s.avail_out == 0) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' inflates to more than its declared %llu bytes",
                               z->label, m->name, (unsigned long long)m->size);
            break;
        }
        if (r == Z_STREAM_END) break;
        if (r == Z_BUF_ERROR && s.avail_in == 0 && in_left == 0) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': deflate stream is truncated", z->label, m->name);
            break;
        }
        if (r != Z_OK && r != Z_BUF_ERROR) {
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s': corrupt deflate data (%s)", z->label, m->name,
                               s.msg ? s.msg : "zlib error");
            break;
        }
    }
    uint64_t produced = (uint64_t)s.total_out;
    inflateEnd(&s);
    if (st == G2F_OK && produced != m->size)
        st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' inflates to %llu bytes but the directory says %llu",
                           z->label, m->name, (unsigned long long)produced, (unsigned long long)m->size);
    return st;
}

g2f_status g2f_zip_extract(const g2f_zip *z, const g2f_zip_member *m, uint64_t max_size, unsigned char **out,
                           g2f_error *err) {
    if (m->size > max_size || m->size > SIZE_MAX - 1)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: member '%s' is %llu bytes, above the limit of %llu", z->label,
                             m->name, (unsigned long long)m->size, (unsigned long long)max_size);
    uint64_t cap;
    if (m->method == G2F_ZIP_DEFLATE && g2f_mul_u64(m->compressed_size, G2F_ZIP_MAX_RATIO, &cap) && m->size > cap)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: member '%s' claims %llu bytes from %llu compressed, a ratio above %u:1 (zip bomb?)",
                             z->label, m->name, (unsigned long long)m->size, (unsigned long long)m->compressed_size,
                             G2F_ZIP_MAX_RATIO);
    unsigned char *buf = malloc(m->size ? (size_t)m->size : 1);
    if (!buf)
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for member '%s' (%llu bytes)", z->label, m->name,
                             (unsigned long long)m->size);
    g2f_status st;
    if (m->method == G2F_ZIP_STORED) {
        if (m->size) memcpy(buf, m->data, (size_t)m->size);
        st = G2F_OK;
    } else {
        st = inflate_member(z, m, buf, err);
    }
    if (st == G2F_OK) st = check_crc(z, m, buf, err);
    if (st != G2F_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return G2F_OK;
}

void g2f_zip_close(g2f_zip *z) {
    if (!z) return;
    free(z->members);
    free(z->by_name);
    free(z->names);
    free(z);
}
