/* g2f_zip: a validating ZIP reader over bytes in memory (a g2f_mapping).
 *
 * Written for torch.save checkpoints (>= 1.6 writes a zip of stored, i.e.
 * uncompressed, members: <root>/data.pkl, <root>/data/<key>, ...), but it
 * reads any single-disk archive of stored or deflated members, ZIP64
 * included. The archive is read through its central directory only; local
 * headers are checked against it. Nothing is decompressed at open.
 *
 * Byte layout (little-endian; APPNOTE.TXT 6.3), from the end of the file:
 *   EOCD, 22 bytes + comment, within the last 65,557 (22 + 65,535) bytes:
 *     [0] u32 0x06054b50  [4] u16 this disk  [6] u16 disk of the directory
 *     [8] u16 entries on this disk  [10] u16 entries  [12] u32 directory size
 *     [16] u32 directory offset  [20] u16 comment length, then the comment
 *   ZIP64 EOCD locator, 20 bytes, immediately before the EOCD (when present):
 *     [0] u32 0x07064b50  [4] u32 disk  [8] u64 offset of the ZIP64 EOCD
 *     [16] u32 number of disks
 *   ZIP64 EOCD record, at that offset, 56 bytes + extensible data:
 *     [0] u32 0x06064b50  [4] u64 record size - 12  [12] u16 made by
 *     [14] u16 needed  [16] u32 this disk  [20] u32 disk of the directory
 *     [24] u64 entries on this disk  [32] u64 entries  [40] u64 directory size
 *     [48] u64 directory offset
 *   Central directory: per member, 46 bytes + name + extra + comment:
 *     [0] u32 0x02014b50  [8] u16 flags  [10] u16 method  [16] u32 CRC-32
 *     [20] u32 compressed size  [24] u32 size  [28] u16 name length
 *     [30] u16 extra length  [32] u16 comment length  [34] u16 disk
 *     [42] u32 local header offset
 *     A 0xffffffff size or offset is in the ZIP64 extra field (id 0x0001):
 *     u64 size, u64 compressed size, u64 offset, in that order, each present
 *     only when its 32-bit field is 0xffffffff.
 *   Local header, 30 bytes + name + extra, then the member's data:
 *     [0] u32 0x04034b50  [6] u16 flags  [8] u16 method  [26] u16 name length
 *     [28] u16 extra length (torch pads it to align the data to 64 bytes)
 *
 * Validation at open, in this order; the first violation is the error:
 *   1. an EOCD signature whose comment ends exactly at the end of the file,
 *      searched backwards over the last 65,557 bytes;
 *   2. single disk (disk numbers 0, entries on this disk == entries);
 *   3. with a ZIP64 locator: the ZIP64 record lies inside the file before the
 *      locator, has its signature and single-disk fields; its counts replace
 *      the EOCD's;
 *   4. entries <= G2F_ZIP_MAX_ENTRIES and entries x 46 <= directory size, and
 *      the directory [offset, offset + size) lies before the EOCD records;
 *   5. per central entry: signature, the 46 bytes + name + extra + comment
 *      inside the directory; name of 1..G2F_ZIP_MAX_NAME bytes without NUL;
 *      not encrypted (flag bits 0 and 6); method 0 (stored) or 8 (deflate);
 *      a stored member's sizes equal; ZIP64 extra field well-formed and
 *      holding every field marked 0xffffffff; disk 0;
 *   6. names unique;
 *   7. per member, its local header inside the file, with the signature and
 *      the same name; data [start, start + compressed size) inside the file
 *      and before the central directory;
 *   8. sorted by offset, no member's [local header, data end) overlaps the
 *      next one's.
 * Flag bit 3 (sizes and CRC in a data descriptor after the data) is allowed:
 * sizes and CRC-32 always come from the central directory.
 * Reading a member checks its CRC-32 (g2f_zip_stored_view, g2f_zip_extract).
 *
 * Ownership: g2f_zip_open_mapping borrows the bytes, which must outlive the
 * g2f_zip; names and members are owned by the g2f_zip and valid until
 * g2f_zip_close. The caller frees what g2f_zip_extract returns.
 *
 *     g2f_zip *z;
 *     if (g2f_zip_open_mapping(map.data, map.size, path, &z, &err) != G2F_OK) return err.status;
 *     const g2f_zip_member *m = g2f_zip_find(z, "archive/data.pkl");
 *     const unsigned char *bytes;
 *     if (m && g2f_zip_stored_view(z, m, &bytes, &err) == G2F_OK) use(bytes, m->size);
 *     g2f_zip_close(z);
 */
#ifndef G2F_ZIP_H
#define G2F_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

/* Larger values are malformed or hostile rather than checkpoints: a GPT-2 XL
 * state dict with optimizer state has a few thousand members. */
#define G2F_ZIP_MAX_ENTRIES 1000000u
#define G2F_ZIP_MAX_NAME 4096u
/* Deflated members may expand at most this much (zip bombs reach 10^6). */
#define G2F_ZIP_MAX_RATIO 1000u

enum { G2F_ZIP_STORED = 0, G2F_ZIP_DEFLATE = 8 };

typedef struct g2f_zip g2f_zip;

typedef struct g2f_zip_member {
    const char *name;             /* NUL-terminated, owned by the g2f_zip */
    unsigned method;              /* G2F_ZIP_STORED or G2F_ZIP_DEFLATE */
    uint64_t compressed_size;     /* bytes at data */
    uint64_t size;                /* bytes once decompressed (== compressed for stored) */
    uint32_t crc32;               /* of the decompressed bytes, from the central directory */
    uint64_t header_offset;       /* of the local header */
    const unsigned char *data;    /* compressed bytes, borrowed from the mapping */
    size_t index;                 /* position in central directory order: g2f_zip_entry(z, index) */
} g2f_zip_member;

/* Validates the archive in data[0, size) (see the checklist above). label
 * names the file in messages. *out is set only on success. */
g2f_status g2f_zip_open_mapping(const unsigned char *data, uint64_t size, const char *label, g2f_zip **out,
                                g2f_error *err);
/* Number of members. */
size_t g2f_zip_count(const g2f_zip *z);
/* Member i < g2f_zip_count(z), in central directory order. */
const g2f_zip_member *g2f_zip_entry(const g2f_zip *z, size_t i);
/* The member named exactly name, or NULL (binary search, names are unique). */
const g2f_zip_member *g2f_zip_find(const g2f_zip *z, const char *name);

/* A stored member's bytes in place: checks method 0 and the CRC-32 over its
 * m->size bytes, then sets *out to a pointer into the mapping (borrowed, maybe
 * unaligned, valid as long as the mapping). *out is set only on success. */
g2f_status g2f_zip_stored_view(const g2f_zip *z, const g2f_zip_member *m, const unsigned char **out,
                               g2f_error *err);
/* Any member into a malloc'd buffer of exactly m->size bytes (1 byte when
 * empty) that the caller frees. Refuses m->size > max_size and deflated
 * members expanding more than G2F_ZIP_MAX_RATIO:1 before allocating; then
 * checks the stream produces exactly m->size bytes and the CRC-32. */
g2f_status g2f_zip_extract(const g2f_zip *z, const g2f_zip_member *m, uint64_t max_size, unsigned char **out,
                           g2f_error *err);
/* Frees the directory (not the mapping); NULL is a no-op. */
void g2f_zip_close(g2f_zip *z);

#endif
