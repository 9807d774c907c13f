/* g2f_file: files as gpt2ffn reads and writes them: read-only mappings of
 * whole regular files, the mapped file + parsed table pair the readers hand
 * out, small whole-file reads, path helpers, and atomic output files.
 * Everything that opens a file for reading goes through g2f_mapping_open,
 * which refuses anything but a regular file (or a symlink to one) without
 * blocking on it: a FIFO, a device, a socket or a directory is an error
 * saying what it is ("x.npy: is a FIFO (named pipe), not a regular file"),
 * never an open() that waits forever for a writer. Everything that writes a
 * file goes through g2f_outfile.
 */
#ifndef G2F_FILE_H
#define G2F_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "g2f_error.h"
#include "g2f_tensor.h"

/* A read-only memory mapping of a whole regular file. */
typedef struct g2f_mapping {
    const unsigned char *data; /* NULL for an empty file */
    uint64_t size;
    char *path;                /* owned copy (NULL when out of memory): g2f_mapping_read reopens it */
    uint64_t dev, ino;         /* the mapped file, so that a reopen reads the same one */
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
/* Maps the pages of [p, p + len) in before they are read (page tables filled
 * in one call instead of a fault per few pages on the compute threads);
 * nothing happens where the kernel cannot (before Linux 5.14) or for a
 * range over G2F_POPULATE_MAX bytes: a hostile file's huge (sparse) tensor
 * is never read ahead of the checks on the work it asks for. */
#define G2F_POPULATE_MAX ((uint64_t)256 << 20)
void g2f_mapping_populate(const void *p, uint64_t len);
/* Opens path for reading only if it is a regular file, as g2f_mapping_open
 * checks it (never blocking on a FIFO); *fd (the caller closes it) and the
 * file's *size. */
g2f_status g2f_file_open_regular(const char *path, int *fd, uint64_t *size, g2f_error *err);
/* pread of exactly len bytes at off into dst (retried on EINTR and short
 * reads); 0 when the file ends first (errno 0) or on an error (errno). */
int g2f_file_pread_all(int fd, void *dst, uint64_t len, uint64_t off);
/* Copies the mapped bytes [p, p + len) into dst with pread on the file
 * itself, in pieces shared out among n_threads (g2f_threads): the kernel's
 * copy from the page cache, where a first touch of mapped pages can cost
 * several times more (a guest under shadow paging: each page faults into
 * the hypervisor; g2f_model_layer_read measures which is faster). The file
 * is reopened by its path and must be the mapped one (same device and
 * inode, a regular file of the mapped size), so a file renamed over it is
 * never read. Returns 1 when all len bytes were read, else 0 (dst partly
 * written: read the mapping instead). */
int g2f_mapping_read(const g2f_mapping *m, const void *p, uint64_t len, void *dst, int n_threads);

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

/* A list of paths (owned copies). Zero-initialise it ({0}). */
typedef struct g2f_path_list {
    char **paths;
    size_t count, cap;
} g2f_path_list;
/* Appends a copy of path. */
g2f_status g2f_path_list_add(g2f_path_list *l, const char *path, g2f_error *err);
/* Frees every path and zeroes l; NULL is a no-op. */
void g2f_path_list_free(g2f_path_list *l);

/* ---- output files ------------------------------------------------------
 * Every file gpt2ffn writes (reports, `run` outputs) is written atomically:
 * into .gpt2ffn-PID.tmp in PATH's folder (created exclusively: never through a
 * file or a link that is already there; .gpt2ffn-PID.N.tmp when that name is
 * taken; a short name of its own, so a legal 255-byte PATH fits NAME_MAX), and
 * renamed over PATH only once complete, so a failed or interrupted write
 * leaves nothing under PATH, nor replaces a good file. A PATH that exists
 * and is not a regular file (/dev/null, a pipe, a terminal) is written in
 * place: a rename would replace it by a regular file (as root, /dev/null
 * for every process); a directory, or a named pipe with no reader, is an
 * error.
 *
 * While it is being written the temporary's name is registered in a table
 * of G2F_OUTFILE_SLOTS entries, so that a SIGINT / SIGTERM handler can
 * remove it with g2f_outfile_remove_temporaries (async-signal-safe: it only
 * reads the table and calls unlink). This table is the one piece of global
 * state in the library, since signals are process-wide; beyond
 * G2F_OUTFILE_SLOTS files open at once, the others are written unregistered
 * (still atomic, but a signal leaves their temporary behind). The library
 * installs no signal handler itself; the CLI does.
 *
 *     g2f_outfile *f;
 *     if (g2f_outfile_open(path, &f, &err) != G2F_OK) return err.status;
 *     fwrite(data, 1, n, g2f_outfile_stream(f));
 *     return g2f_outfile_close(f, 1, &err); // close, then rename over path
 */
#define G2F_OUTFILE_SLOTS 16

typedef struct g2f_outfile g2f_outfile;

/* Creates the temporary for path; *out is set only on success. */
g2f_status g2f_outfile_open(const char *path, g2f_outfile **out, g2f_error *err);
/* The temporary's stream, for fwrite / ftell. Borrowed until close. */
FILE *g2f_outfile_stream(g2f_outfile *f);
/* commit != 0: close the stream (any write error that happened on it is
 * reported here, naming path) and rename the temporary over path; commit
 * == 0, or any failure: remove the temporary. Frees f either way; NULL is a
 * no-op returning G2F_OK. */
g2f_status g2f_outfile_close(g2f_outfile *f, int commit, g2f_error *err);

/* text plus a final newline, written to path atomically as above. */
g2f_status g2f_write_file_atomic(const char *path, const char *text, g2f_error *err);

/* Refuses an output path that is one of the inputs: when out_path exists
 * and resolves to the same file (device and inode, so a hard link or a
 * symlink to an input counts) as any path in inputs, G2F_ERR_USAGE naming
 * both; otherwise G2F_OK. Called before anything is written, since the
 * rename at the end of an atomic write would replace the input. */
g2f_status g2f_output_check(const char *out_path, const g2f_path_list *inputs, g2f_error *err);

/* Unlinks every temporary output file that is registered (being written).
 * Async-signal-safe: for signal handlers, which then re-raise the signal. */
void g2f_outfile_remove_temporaries(void);

#endif
