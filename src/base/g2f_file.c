/* g2f_file: files as gpt2ffn reads them: read-only mappings of whole
 * regular files, a mapped file with the table a reader parsed from it,
 * small whole-file reads, file identities (device, inode) and path helpers.
 *
 * Reading refuses anything that is not a regular file (or a symlink to one)
 * before it could block: a FIFO or a device named as a shard or a fixture
 * member is an error naming what it is, never an open() that waits forever.
 * Every reader opens files through g2f_mapping_open (g2f_read_small_file,
 * g2f_mapped_table_open and g2f_sha256_file use it), so this is the one
 * place that decides.
 */
#define _DEFAULT_SOURCE /* madvise(MADV_DONTNEED): glibc makes posix_madvise's DONTNEED a no-op */
#include "g2f_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *g2f_file_kind(unsigned mode) {
    mode_t m = (mode_t)mode;
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* Opens path for reading only if it is a regular file (a symlink is
 * followed). stat() first: a FIFO is refused before open() could wait for a
 * writer, and a device before open() could have side effects (a tape
 * rewinds). The open itself is O_NONBLOCK and fstat()-checked again, so a
 * file swapped for a FIFO between the two calls cannot block either. */
static g2f_status open_regular(const char *path, int *fd_out, struct stat *st, g2f_error *err) {
    if (stat(path, st) != 0) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st->st_mode))
        return g2f_error_set(err, G2F_ERR_IO, "%s: is %s, not a regular file", path, g2f_file_kind(st->st_mode));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return g2f_error_set(err, G2F_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return g2f_error_set(err, G2F_ERR_IO, "%s: is %s, not a regular file", path, g2f_file_kind(st->st_mode));
    }
    *fd_out = fd;
    return G2F_OK;
}

g2f_status g2f_mapping_open(const char *path, g2f_mapping *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    struct stat st;
    int fd = -1;
    g2f_status s = open_regular(path, &fd, &st, err);
    if (s != G2F_OK) return s;
    out->size = (uint64_t)st.st_size;
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            out->size = 0;
            return g2f_error_set(err, G2F_ERR_IO, "%s: cannot mmap %llu bytes: %s", path,
                                 (unsigned long long)st.st_size, strerror(e));
        }
        out->data = p;
    }
    close(fd); /* the mapping stays valid without the descriptor */
    return G2F_OK;
}

void g2f_mapping_release(const void *p, uint64_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || len == 0) return;
    uintptr_t a = (uintptr_t)p, e = a + (uintptr_t)len;
    uintptr_t lo = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1), hi = e & ~((uintptr_t)page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED); /* read-only private mapping: nothing is lost */
}

void g2f_mapping_close(g2f_mapping *m) {
    if (!m) return;
    if (m->data) munmap((void *)m->data, (size_t)m->size);
    m->data = NULL;
    m->size = 0;
}

g2f_status g2f_mapped_table_open(const char *path, g2f_parse_fn parse, g2f_mapped_table **out, g2f_error *err) {
    *out = NULL;
    g2f_mapped_table *m = calloc(1, sizeof *m);
    if (!m) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    g2f_status s = g2f_mapping_open(path, &m->map, err);
    if (s == G2F_OK) s = parse(m->map.data, m->map.size, path, &m->table, err);
    if (s != G2F_OK) {
        g2f_mapped_table_close(m);
        return s;
    }
    *out = m;
    return G2F_OK;
}

void g2f_mapped_table_close(g2f_mapped_table *m) {
    if (!m) return;
    g2f_table_free(&m->table);
    g2f_mapping_close(&m->map);
    free(m);
}

char *g2f_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *g2f_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t n = a;
    if (a && dir[a - 1] != '/') p[n++] = '/';
    memcpy(p + n, name, b + 1);
    return p;
}

char *g2f_path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return g2f_strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

int g2f_path_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int g2f_path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

g2f_status g2f_file_id(const char *path, g2f_file_identity *out, g2f_error *err) {
    struct stat st;
    memset(out, 0, sizeof *out);
    if (stat(path, &st) != 0) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    return G2F_OK;
}

g2f_status g2f_read_small_file(const char *path, size_t max_bytes, char **out, size_t *len, g2f_error *err) {
    *out = NULL;
    *len = 0;
    g2f_mapping m;
    g2f_status s = g2f_mapping_open(path, &m, err);
    if (s != G2F_OK) return s;
    uint64_t size = m.size; /* read before close, which zeroes it */
    if (size > max_bytes) {
        g2f_mapping_close(&m);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: %llu bytes, larger than the %zu-byte limit for this file",
                             path, (unsigned long long)size, max_bytes);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        g2f_mapping_close(&m);
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    }
    if (size) memcpy(buf, m.data, (size_t)size);
    buf[size] = '\0';
    *len = (size_t)size;
    *out = buf;
    g2f_mapping_close(&m);
    return G2F_OK;
}
