/* g2f_file: read-only mappings of whole regular files, the mapped file +
 * parsed table pair the readers hand out, small whole-file reads and path
 * helpers. Everything that opens a file for reading goes through
 * g2f_mapping_open, which refuses anything but a regular file (or a symlink
 * to one) without blocking on it: a FIFO, a device, a socket or a directory
 * is an error saying what it is ("x.npy: is a FIFO (named pipe), not a
 * regular file"), never an open() that waits forever for a writer.
 */
#ifndef G2F_FILE_H
#define G2F_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

/* A read-only memory mapping of a whole regular file. */
typedef struct g2f_mapping {
    const unsigned char *data; /* NULL for an empty file */
    uint64_t size;
} g2f_mapping;

/* Maps the regular file path (a symlink is followed); anything else is
 * G2F_ERR_IO naming its kind, refused before it is opened. *out is zeroed on
 * failure. */
g2f_status g2f_mapping_open(const char *path, g2f_mapping *out, g2f_error *err);
void g2f_mapping_close(g2f_mapping *m);
/* Drops the whole pages inside [p, p + len) from this process's resident set
 * (they stay in the page cache and fault back in on the next read), so a
 * layer-by-layer walk over a mapped checkpoint keeps RSS near one layer. */
void g2f_mapping_release(const void *p, uint64_t len);

/* A file mapped read-only with the table a reader parsed from it: what the
 * safetensors, torch, GGUF and llm.c readers hand out (their handle types
 * are this struct). */
typedef g2f_status (*g2f_parse_fn)(const unsigned char *buf, uint64_t size, const char *label, g2f_table *out,
                                   g2f_error *err);
typedef struct g2f_mapped_table {
    g2f_mapping map;
    g2f_table table; /* data pointers into map */
} g2f_mapped_table;

/* Maps path and runs parse over it; *out is set only on success. */
g2f_status g2f_mapped_table_open(const char *path, g2f_parse_fn parse, g2f_mapped_table **out, g2f_error *err);
/* NULL is a no-op. */
void g2f_mapped_table_close(g2f_mapped_table *m);

/* Small string and path helpers shared by the readers. Each returns a
 * malloc'd string the caller frees, or NULL when out of memory. */
char *g2f_strdup(const char *s);
/* dir + "/" + name (no doubled slash). */
char *g2f_path_join(const char *dir, const char *name);
/* The folder part of path ("." when it has none). */
char *g2f_path_dir(const char *path);
int g2f_path_is_dir(const char *path);
/* True when path names anything at all (stat succeeds): a FIFO too, so that
 * a reader asked for it refuses it by name rather than skipping it. */
int g2f_path_exists(const char *path);
/* "a directory", "a FIFO (named pipe)", "a character device", ... for a
 * stat st_mode. */
const char *g2f_file_kind(unsigned mode);

/* What makes two names the same file (links, symlinks): device and inode. */
typedef struct g2f_file_identity {
    uint64_t dev, ino;
} g2f_file_identity;
/* The identity of the file path names (a symlink is followed). */
g2f_status g2f_file_id(const char *path, g2f_file_identity *out, g2f_error *err);

/* Reads a small file (at most max_bytes) into a NUL-terminated malloc'd
 * buffer the caller frees. G2F_ERR_IO when it cannot be read, G2F_ERR_FORMAT
 * when it is larger than max_bytes. */
g2f_status g2f_read_small_file(const char *path, size_t max_bytes, char **out, size_t *len, g2f_error *err);

#endif
