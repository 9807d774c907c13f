/* g2f_file: files as gpt2ffn reads them: read-only mappings of whole
 * regular files, a mapped file with the table a reader parsed from it,
 * small whole-file reads, file identities (device, inode) and path helpers.
 *
 * Reading refuses anything that is not a regular file (or a symlink to one)
 * before it could block: a FIFO or a device named as a shard or a fixture
 * member is an error naming what it is, never an open() that waits forever.
 * Every reader opens files through open_regular (g2f_mapping_open, which
 * g2f_read_small_file and g2f_mapped_table_open use, and
 * g2f_file_open_regular, which g2f_sha256_file uses), so this is the one
 * place that decides.
 */
#define _DEFAULT_SOURCE /* madvise(MADV_DONTNEED): glibc makes posix_madvise's DONTNEED a no-op */
#include "g2f_file.h"
#include "g2f_cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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
    out->dev = (uint64_t)st.st_dev, out->ino = (uint64_t)st.st_ino;
    out->path = strdup(path); /* NULL only disables g2f_mapping_read */
    return G2F_OK;
}

/* madvise(advice) over [lo, hi) (page-aligned lo), in pieces of MADV_PIECE
 * bytes shared out among the threads: the kernel fills (or drops) the page
 * tables of disjoint ranges of one mapping in parallel, and the main thread
 * no longer does it alone while the others wait (GPT-2 XL's 48 layers: a
 * tenth of verify's time at 64 tokens, perf, 2 CPUs of an AMD EPYC). Errors
 * only mean no help: nothing depends on the advice. */
#define MADV_PIECE ((uintptr_t)8 << 20)
static void advise_range(uintptr_t lo, uintptr_t hi, int advice) {
    if (hi <= lo) return;
    long pieces = (long)((hi - lo + MADV_PIECE - 1) / MADV_PIECE);
    if (pieces == 1) { /* no team for one piece */
        madvise((void *)lo, hi - lo, advice);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long k = 0; k < pieces; k++) {
        uintptr_t a = lo + (uintptr_t)k * MADV_PIECE, b = hi - a < MADV_PIECE ? hi : a + MADV_PIECE;
        madvise((void *)a, b - a, advice);
    }
}

void g2f_mapping_release(const void *p, uint64_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || len == 0) return;
    uintptr_t a = (uintptr_t)p, e = a + (uintptr_t)len;
    uintptr_t lo = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1), hi = e & ~((uintptr_t)page - 1);
    advise_range(lo, hi, MADV_DONTNEED); /* read-only private mapping: nothing is lost */
}

void g2f_mapping_populate(const void *p, uint64_t len) {
#ifdef MADV_POPULATE_READ
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || len == 0 || len > G2F_POPULATE_MAX) return;
    uintptr_t lo = (uintptr_t)p & ~((uintptr_t)page - 1), hi = (uintptr_t)p + (uintptr_t)len;
    advise_range(lo, hi, MADV_POPULATE_READ);
#else
    (void)p, (void)len;
#endif
}

void g2f_mapping_close(g2f_mapping *m) {
    if (!m) return;
    if (m->data) munmap((void *)m->data, (size_t)m->size);
    free(m->path);
    memset(m, 0, sizeof *m);
}

int g2f_file_pread_all(int fd, void *dst, uint64_t len, uint64_t off) {
    unsigned char *d = dst;
    while (len > 0) {
        size_t want = len < ((uint64_t)1 << 30) ? (size_t)len : (size_t)1 << 30;
        ssize_t r = pread(fd, d, want, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0; /* the file ended first */
        if (r <= 0) return 0;
        d += r, off += (uint64_t)r, len -= (uint64_t)r;
    }
    return 1;
}

g2f_status g2f_file_open_regular(const char *path, int *fd, uint64_t *size, g2f_error *err) {
    struct stat st;
    *fd = -1;
    g2f_status s = open_regular(path, fd, &st, err);
    if (s == G2F_OK) *size = (uint64_t)st.st_size;
    return s;
}

/* Pieces of at least 1 MiB, whole pages: each thread's reads land in pages
 * of dst that it first touches itself. */
#define READ_PIECE ((uint64_t)1 << 20)
int g2f_mapping_read(const g2f_mapping *m, const void *p, uint64_t len, void *dst, int n_threads) {
    uintptr_t q = (uintptr_t)p, b = (uintptr_t)m->data; /* as integers: p may lie outside the mapping */
    if (!m->path || !b || q < b || len > m->size || (uint64_t)(q - b) > m->size - len) return 0;
    uint64_t off = (uint64_t)(q - b);
    struct stat st;
    int fd = -1;
    if (open_regular(m->path, &fd, &st, NULL) != G2F_OK) return 0;
    int ok = (uint64_t)st.st_dev == m->dev && (uint64_t)st.st_ino == m->ino && (uint64_t)st.st_size == m->size;
    if (ok) {
        long pieces = (long)((len + READ_PIECE - 1) / READ_PIECE), bad = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads)) reduction(+ : bad)
#else
        (void)n_threads;
#endif
        for (long k = 0; k < pieces; k++) {
            uint64_t a = (uint64_t)k * READ_PIECE, n = len - a < READ_PIECE ? len - a : READ_PIECE;
            bad += !g2f_file_pread_all(fd, (unsigned char *)dst + a, n, off + a);
        }
        ok = bad == 0;
    }
    close(fd);
    return ok;
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

g2f_status g2f_path_list_add(g2f_path_list *l, const char *path, g2f_error *err) {
    if (l->count == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 8; /* a count of pointers in memory: doubling cannot overflow */
        char **p = realloc(l->paths, nc * sizeof *p);
        if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        l->paths = p;
        l->cap = nc;
    }
    if (!(l->paths[l->count] = g2f_strdup(path))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    l->count++;
    return G2F_OK;
}

void g2f_path_list_free(g2f_path_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

g2f_status g2f_output_check(const char *out_path, const g2f_path_list *inputs, g2f_error *err) {
    struct stat o, in;
    if (stat(out_path, &o) != 0) return G2F_OK; /* nothing there: no input can be replaced */
    for (size_t i = 0; i < inputs->count; i++) {
        const char *p = inputs->paths[i];
        if (stat(p, &in) != 0 || in.st_dev != o.st_dev || in.st_ino != o.st_ino) continue;
        if (!strcmp(p, out_path))
            return g2f_error_set(err, G2F_ERR_USAGE, "%s: is an input; writing there would replace it (choose "
                                 "another output name)", out_path);
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: is the same file as the input %s (a link to it); writing "
                             "there would replace it (choose another output name)", out_path, p);
    }
    return G2F_OK;
}

/* ---- output files ------------------------------------------------------ */

/* The registered temporaries. state: 0 free, 1 being filled or emptied by
 * its owner, 2 armed (path complete; the signal handler may unlink it).
 * Lock-free atomics only, so the handler can read the table whatever the
 * interrupted thread was doing. */
#define SLOT_PATH 4160 /* PATH_MAX plus ".gpt2ffn-PID.N.tmp" */
static struct {
    atomic_int state;
    char path[SLOT_PATH];
} slots[G2F_OUTFILE_SLOTS];

static int slot_arm(const char *path) {
    size_t n = strlen(path);
    if (n >= SLOT_PATH) return -1;
    for (int i = 0; i < G2F_OUTFILE_SLOTS; i++) {
        int expect = 0;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expect, 1)) continue;
        memcpy(slots[i].path, path, n + 1);
        atomic_store(&slots[i].state, 2);
        return i;
    }
    return -1; /* all busy: written unregistered */
}

static void slot_disarm(int i) {
    if (i < 0) return;
    atomic_store(&slots[i].state, 1);
    slots[i].path[0] = '\0';
    atomic_store(&slots[i].state, 0);
}

void g2f_outfile_remove_temporaries(void) {
    for (int i = 0; i < G2F_OUTFILE_SLOTS; i++)
        if (atomic_load(&slots[i].state) == 2) unlink(slots[i].path);
}

struct g2f_outfile {
    char *path, *tmp;
    FILE *fp;
    int slot;
};

/* path names an existing file that is not a regular one (/dev/null, a pipe, a terminal): it is
 * written in place, since a rename over it would replace it by a regular file (as root, /dev/null
 * for everyone). A pipe without a reader is refused rather than waited on. */
static g2f_status outfile_open_special(const char *path, const struct stat *st, g2f_outfile **out, g2f_error *err) {
    if (S_ISDIR(st->st_mode)) return g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: is a directory", path);
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", path,
                             errno == ENXIO ? "a named pipe with no reader" : strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    g2f_outfile *f = calloc(1, sizeof *f);
    if (!f || !(f->path = g2f_strdup(path)) || !(f->fp = fdopen(fd, "wb"))) {
        if (f) free(f->path);
        free(f);
        close(fd);
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    }
    f->slot = -1; /* no temporary */
    *out = f;
    return G2F_OK;
}

g2f_status g2f_outfile_open(const char *path, g2f_outfile **out, g2f_error *err) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return outfile_open_special(path, &st, out, err);
    g2f_outfile *f = calloc(1, sizeof *f);
    size_t cap = strlen(path) + 32;
    if (!f || !(f->path = g2f_strdup(path)) || !(f->tmp = malloc(cap))) {
        if (f) free(f->path);
        free(f);
        return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory", path);
    }
    long pid = (long)getpid();
    int fd = -1, e = 0;
    /* the temporary sits in the output's folder (the rename must not cross
     * file systems) under a short name of its own: OUT plus a suffix would
     * exceed NAME_MAX for a legal 255-byte OUT */
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    for (int k = 0; k < 100 && fd < 0; k++) {
        if (k == 0) snprintf(f->tmp, cap, "%.*s.gpt2ffn-%ld.tmp", dir_len, path, pid);
        else snprintf(f->tmp, cap, "%.*s.gpt2ffn-%ld.%d.tmp", dir_len, path, pid, k);
        /* registered before it exists, so no moment has it on disk unregistered */
        f->slot = slot_arm(f->tmp);
        fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        e = errno;
        if (fd < 0) slot_disarm(f->slot);
        if (fd < 0 && e != EEXIST) break;
    }
    if (fd >= 0 && !(f->fp = fdopen(fd, "wb"))) {
        e = errno;
        close(fd);
        unlink(f->tmp);
        slot_disarm(f->slot);
    }
    if (!f->fp) {
        g2f_status s = g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", path, strerror(e));
        free(f->tmp);
        free(f->path);
        free(f);
        return s;
    }
    *out = f;
    return G2F_OK;
}

FILE *g2f_outfile_stream(g2f_outfile *f) { return f->fp; }

g2f_status g2f_outfile_close(g2f_outfile *f, int commit, g2f_error *err) {
    if (!f) return G2F_OK;
    g2f_status s = G2F_OK;
    /* a write that failed earlier is sticky (ferror); its errno is long gone */
    int bad = ferror(f->fp), e = bad ? EIO : 0;
    if (fclose(f->fp) != 0 && !bad) bad = 1, e = errno;
    if (commit && bad) s = g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", f->path, strerror(e));
    else if (commit && f->tmp && rename(f->tmp, f->path) != 0)
        s = g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", f->path, strerror(errno));
    if ((!commit || s != G2F_OK) && f->tmp) unlink(f->tmp);
    slot_disarm(f->slot); /* after the rename: a signal in between unlinks a name that is gone */
    free(f->tmp);
    free(f->path);
    free(f);
    return s;
}

g2f_status g2f_write_file_atomic(const char *path, const char *text, g2f_error *err) {
    g2f_outfile *f;
    g2f_status s = g2f_outfile_open(path, &f, err);
    if (s != G2F_OK) return s;
    FILE *fp = g2f_outfile_stream(f);
    size_t len = strlen(text);
    if (fwrite(text, 1, len, fp) != len || fputc('\n', fp) == EOF) {
        int e = errno;
        g2f_outfile_close(f, 0, NULL);
        return g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return g2f_outfile_close(f, 1, err);
}
