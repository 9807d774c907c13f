/* Shared helpers for the fuzz targets (fuzz/fuzz_<target>.c) and for
 * tests/test_fuzz_regressions.c, which replays fuzz/regressions/<target>/
 * through the same entry points without libFuzzer.
 *
 * Each target file defines `int g2f_fuzz_<target>(const uint8_t *, size_t)`
 * and, unless G2F_FUZZ_NO_MAIN is defined, LLVMFuzzerTestOneInput calling it.
 * Targets that need a file on disk write into one scratch folder per process
 * (created on first use, reused by every execution). */
#ifndef G2F_FUZZ_UTIL_H
#define G2F_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "g2f_error.h"

/* The per-process scratch folder, or NULL when it cannot be made. */
static inline const char *fuzz_scratch_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/g2f_fuzz_XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            dir[0] = '\0';
            return NULL;
        }
    }
    return dir;
}

/* scratch/<tag>, created on first use, into buf; 0 on success. Each target
 * has its own, so that files one target writes never meet another's. */
static inline int fuzz_target_dir(char *buf, size_t n, const char *tag) {
    const char *d = fuzz_scratch_dir();
    if (!d || snprintf(buf, n, "%s/%s", d, tag) >= (int)n) return -1;
    return (mkdir(buf, 0700) == 0 || errno == EEXIST) ? 0 : -1;
}

/* scratch/<name> into buf; 0 on success. */
static inline int fuzz_scratch_path(char *buf, size_t n, const char *name) {
    const char *d = fuzz_scratch_dir();
    if (!d) return -1;
    return snprintf(buf, n, "%s/%s", d, name) < (int)n ? 0 : -1;
}

static inline int fuzz_write_file(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    size_t w = n ? fwrite(data, 1, n, fp) : 0;
    return (fclose(fp) == 0 && w == n) ? 0 : -1;
}

/* Copies src to dst (the fixtures a target needs next to its input). */
static inline int fuzz_copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb");
    if (!in) return -1;
    FILE *out = fopen(dst, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t r;
    int ok = 1;
    while ((r = fread(buf, 1, sizeof buf, in)) > 0) ok &= fwrite(buf, 1, r, out) == r;
    fclose(in);
    return (fclose(out) == 0 && ok) ? 0 : -1;
}

/* The fixtures folder: $G2F_FIXTURES, else the one the build baked in. */
static inline const char *fuzz_fixtures_dir(void) {
    const char *e = getenv("G2F_FIXTURES");
#ifdef G2F_FUZZ_FIXTURES
    if (!e || !*e) e = G2F_FUZZ_FIXTURES;
#endif
    return e && *e ? e : "fixtures";
}

/* Every message a reader writes must be one non-empty line: the CLI prints it
 * as is, and the promise is "exit 2 with one line" with no control byte from
 * the file reaching the terminal (no newline, no escape). The status recorded
 * must be the one returned. */
static inline void fuzz_check_message(g2f_status s, const g2f_error *err) {
    if (s == G2F_OK) return;
    int bad = !err->msg[0] || err->status != s || !memchr(err->msg, '\0', sizeof err->msg);
    for (const char *c = err->msg; !bad && *c; c++) bad = (unsigned char)*c < 0x20 || *c == 0x7f;
    if (bad) {
        fprintf(stderr, "fuzz: status %d (recorded %d) with a bad message: \"%.*s\"\n", (int)s, (int)err->status,
                (int)sizeof err->msg, err->msg);
        abort();
    }
}

#include "g2f_tensor.h"

/* Touches the first and last byte of a tensor's view: a view that strays
 * outside the input is caught by AddressSanitizer here. */
static inline void fuzz_touch(const g2f_tensor *t) {
    if (!t->nbytes) return;
    volatile unsigned char x = t->data[0];
    x = t->data[t->nbytes - 1];
    (void)x;
}

/* After a table parser: the message rule, every view touched, the table freed. */
static inline void fuzz_check_table(g2f_status s, const g2f_error *err, g2f_table *t) {
    fuzz_check_message(s, err);
    if (s == G2F_OK)
        for (size_t i = 0; i < t->count; i++) fuzz_touch(&t->tensors[i]);
    g2f_table_free(t);
}

#endif
