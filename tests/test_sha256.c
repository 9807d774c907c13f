/* test_sha256: SHA-256 digests against FIPS 180-4 / NIST example vectors,
 * the SHA-NI compression (when the CPU has it) against the portable one on
 * every length from 0 to 300 bytes and on uneven update splits, and
 * g2f_sha256_file (read in 256 KiB pieces) against the digest of the same
 * bytes in memory, at and around the pieces' borders, and the error of a
 * file that ends before the size its open saw (g2f_sha256_fd). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "g2f_sha256.h"
#include "test_util.h"

static void digest(int ni, const void *data, size_t len, size_t split, char hex[65]) {
    g2f_sha256 s;
    g2f_sha256_init(&s);
    if (ni >= 0) s.ni = ni;
    size_t first = split < len ? split : len;
    g2f_sha256_update(&s, data, first);
    g2f_sha256_update(&s, (const unsigned char *)data + first, len - first);
    g2f_sha256_final_hex(&s, hex);
}

static void test_known_vectors(void) {
    char hex[65];
    for (int ni = 0; ni <= 1; ni++) {
        g2f_sha256 probe;
        g2f_sha256_init(&probe);
        if (ni && !probe.ni) continue; /* no SHA-NI here: the portable code only */
        digest(ni, "", 0, 0, hex);
        CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        digest(ni, "abc", 3, 1, hex);
        CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        digest(ni, m448, strlen(m448), 7, hex);
        CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
        size_t n = 1000000;
        char *a = malloc(n);
        CHECK(a != NULL);
        if (!a) return;
        memset(a, 'a', n);
        digest(ni, a, n, 12345, hex);
        CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        free(a);
    }
}

static void test_ni_matches_portable(void) {
    g2f_sha256 probe;
    g2f_sha256_init(&probe);
    if (!probe.ni) {
        fprintf(stderr, "no SHA-NI on this CPU: only the portable code was checked\n");
        return;
    }
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131u + 7u);
    for (size_t len = 0; len <= sizeof buf; len++) {
        char a[65], b[65];
        size_t split = len * 7 / 11;
        digest(0, buf, len, split, a);
        digest(1, buf, len, split, b);
        CHECK(!strcmp(a, b));
    }
}

static void file_digest_should_match_the_bytes_digest(void) {
    char dir[256], path[300];
    if (make_tmpdir(dir, sizeof dir, "sha256") != 0) return;
    snprintf(path, sizeof path, "%s/f.bin", dir);
    const size_t piece = (size_t)256 << 10, sizes[] = {0, 1, piece - 1, piece, piece + 1, 2 * piece + 123};
    unsigned char *buf = malloc(sizes[5]);
    CHECK(buf != NULL);
    for (size_t i = 0; buf && i < sizes[5]; i++) buf[i] = (unsigned char)(i * 131 + (i >> 9));
    for (size_t t = 0; buf && t < sizeof sizes / sizeof sizes[0]; t++) {
        char want[65], got[65] = "";
        g2f_error err;
        digest(-1, buf, sizes[t], sizes[t] / 2, want);
        CHECK(write_bytes(path, buf, sizes[t]) == 0);
        CHECK(g2f_sha256_file(path, got, &err) == G2F_OK);
        CHECK(!strcmp(want, got));
    }
    CHECK(g2f_sha256_file(dir, (char[65]){0}, &(g2f_error){0}) == G2F_ERR_IO); /* a folder: refused */
    free(buf);
    remove_tmpdir(dir);
}

/* A file truncated between its open and its hash: the size the open saw
 * is hashed or nothing is; the error names the file, the piece and why. */
static void short_file_should_fail_naming_file_and_offset(void) {
    char dir[256], path[300];
    if (make_tmpdir(dir, sizeof dir, "sha256s") != 0) return;
    snprintf(path, sizeof path, "%s/short.bin", dir);
    const size_t piece = (size_t)256 << 10, have = piece + 100;
    unsigned char *buf = calloc(have, 1);
    CHECK(buf != NULL);
    CHECK(buf && write_bytes(path, buf, have) == 0);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    if (buf && fd >= 0) {
        char want[65], got[65] = "";
        g2f_error err = {0};
        digest(-1, buf, have, 0, want);
        CHECK(g2f_sha256_fd(fd, have, path, got, &err) == G2F_OK); /* the size as it is */
        CHECK(!strcmp(want, got));
        CHECK(g2f_sha256_fd(fd, 2 * piece, path, got, &err) == G2F_ERR_IO); /* it ends in the second piece */
        CHECK(strstr(err.msg, path) != NULL);
        CHECK(strstr(err.msg, "262144 bytes at offset 262144") != NULL);
        CHECK(strstr(err.msg, "the file ended first") != NULL);
        CHECK(g2f_sha256_fd(fd, piece + 101, path, got, &err) == G2F_ERR_IO); /* one byte short */
        CHECK(strstr(err.msg, "101 bytes at offset 262144") != NULL);
    }
    if (fd >= 0) close(fd);
    free(buf);
    remove_tmpdir(dir);
}

int main(void) {
    RUN(test_known_vectors);
    RUN(test_ni_matches_portable);
    RUN(file_digest_should_match_the_bytes_digest);
    RUN(short_file_should_fail_naming_file_and_offset);
    CHECK_EXIT();
}
