/* Helpers for tests: a minimal safetensors writer (so corrupt and special
 * files are made by the tests themselves) and a scratch directory. */
#ifndef G2F_TEST_UTIL_H
#define G2F_TEST_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct st_entry {
    const char *name;
    const char *dtype;   /* "F32", "F16", ... */
    size_t ndim;
    uint64_t shape[4];
    const void *data;    /* raw little-endian bytes */
    size_t nbytes;
} st_entry;

/* Writes a valid safetensors file; pad != 0 pads the header to 8 bytes.
 * meta is a JSON object text for __metadata__ or NULL. Returns 0 on success. */
static inline int st_write(const char *path, const char *meta, const st_entry *e, size_t n, int pad) {
    size_t cap = 4096 + n * 256;
    char *hdr = malloc(cap);
    if (!hdr) return -1;
    size_t len = (size_t)snprintf(hdr, cap, "{");
    if (meta) len += (size_t)snprintf(hdr + len, cap - len, "\"__metadata__\":%s", meta);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", (meta || i) ? "," : "",
                                e[i].name, e[i].dtype);
        for (size_t d = 0; d < e[i].ndim; d++)
            len += (size_t)snprintf(hdr + len, cap - len, "%s%llu", d ? "," : "", (unsigned long long)e[i].shape[d]);
        len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                (unsigned long long)(off + e[i].nbytes));
        off += e[i].nbytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while (pad && len % 8) hdr[len++] = ' ';
    FILE *fp = fopen(path, "wb");
    if (!fp) { free(hdr); return -1; }
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    fwrite(lb, 1, 8, fp);
    fwrite(hdr, 1, len, fp);
    for (size_t i = 0; i < n; i++) fwrite(e[i].data, 1, e[i].nbytes, fp);
    free(hdr);
    return fclose(fp) == 0 ? 0 : -1;
}

/* Writes a safetensors header for n tensors of the given dtypes and shapes,
 * back to back, then extends the file (sparse) to hold their data. Returns
 * 0, 77 when the filesystem refuses or does not keep it sparse, -1. */
typedef struct big_entry {
    const char *name, *dtype;
    size_t ndim;
    uint64_t shape[2];
    uint64_t nbytes;
} big_entry;

static inline int write_sparse_st(const char *path, const big_entry *e, size_t n) {
    char hdr[4096];
    size_t len = (size_t)snprintf(hdr, sizeof hdr, "{");
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(hdr + len, sizeof hdr - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "",
                                e[i].name, e[i].dtype);
        for (size_t d = 0; d < e[i].ndim; d++)
            len += (size_t)snprintf(hdr + len, sizeof hdr - len, "%s%llu", d ? "," : "",
                                    (unsigned long long)e[i].shape[d]);
        len += (size_t)snprintf(hdr + len, sizeof hdr - len, "],\"data_offsets\":[%llu,%llu]}",
                                (unsigned long long)off, (unsigned long long)(off + e[i].nbytes));
        off += e[i].nbytes;
    }
    len += (size_t)snprintf(hdr + len, sizeof hdr - len, "}");
    while (len % 8) hdr[len++] = ' ';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    int ok = write(fd, lb, 8) == 8 && write(fd, hdr, len) == (ssize_t)len;
    if (ok && ftruncate(fd, (off_t)(8 + len + off)) != 0) {
        close(fd);
        unlink(path);
        return 77;
    }
    struct stat st;
    ok = ok && fstat(fd, &st) == 0;
    close(fd);
    if (!ok) return -1;
    if ((uint64_t)st.st_blocks * 512 > (1u << 20)) {
        unlink(path);
        return 77;
    }
    return 0;
}

/* Copies a file; 0 on success. */
static inline int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    int ok = in && out;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* The whole file, NUL-terminated, in a malloc'd buffer (the caller frees
 * it), its length in *n when n is not NULL; NULL when it cannot be read. */
static inline char *read_whole_file(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    long len = fp && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    char *b = len >= 0 && fseek(fp, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
    if (b && fread(b, 1, (size_t)len, fp) == (size_t)len) {
        b[len] = '\0';
        if (n) *n = (size_t)len;
    } else {
        free(b);
        b = NULL;
    }
    if (fp) fclose(fp);
    return b;
}

/* Writes raw bytes to path. */
static inline int write_bytes(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    size_t w = fwrite(data, 1, n, fp);
    return (fclose(fp) == 0 && w == n) ? 0 : -1;
}

/* A fresh scratch directory under TMPDIR; path written into buf. */
static inline int make_tmpdir(char *buf, size_t n, const char *tag) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/g2f_%s_XXXXXX", base && *base ? base : "/tmp", tag);
    return mkdtemp(buf) ? 0 : -1;
}

/* Removes a scratch directory made by make_tmpdir, with everything in it. */
static inline void remove_tmpdir(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* Deterministic pseudo-random floats in [-1, 1). */
static inline float rnd_unit(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}


/* Reads up to n - 1 bytes of path into buf, NUL-terminated ("" when it
 * cannot be read). */
static inline void slurp_text(const char *path, char *buf, size_t n) {
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(buf, 1, n - 1, fp) : 0;
    buf[got] = '\0';
    if (fp) fclose(fp);
}

/* Runs "PREFIX 'cli' args" through the shell (args shell-quoted, prefix
 * e.g. "NO_COLOR=1" or ""), its stdout into out and stderr into err (via
 * dir/out.txt, dir/err.txt); returns its exit code, -1 when it did not
 * exit or the command does not fit. */
static inline int run_cli_in(const char *prefix, const char *cli, const char *args, const char *dir, char *out,
                             size_t out_n, char *err, size_t err_n) {
    char cmd[4096], p[400];
    int w = snprintf(cmd, sizeof cmd, "%s '%s' %s > '%s/out.txt' 2> '%s/err.txt'", prefix, cli, args, dir, dir);
    if (w < 0 || (size_t)w >= sizeof cmd) return -1; /* a command that does not fit is never run cut short */
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    slurp_text(p, out, out_n);
    snprintf(p, sizeof p, "%s/err.txt", dir);
    slurp_text(p, err, err_n);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs the test program self again with GPT2FFN_ISA=isa (and arg, or
 * NULL): the kernels' choice is read once per process, so each path needs
 * a process of its own. Its exit status (77: the CPU lacks that path), -1
 * when it could not run. */
static inline int run_self_with_isa(const char *self, const char *isa, const char *arg) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("GPT2FFN_ISA", isa, 1);
        execl(self, self, arg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#endif
