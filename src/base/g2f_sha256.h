/* g2f_sha256: SHA-256 (FIPS 180-4), to record which checkpoint produced a
 * `run` output. Streaming: init, update any number of times, final. */
#ifndef G2F_SHA256_H
#define G2F_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_error.h"

typedef struct g2f_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t used;
    int ni; /* 1: the SHA-NI compression function; init sets it when the CPU has SHA-NI, 0 forces portable C */
} g2f_sha256;

void g2f_sha256_init(g2f_sha256 *s);
void g2f_sha256_update(g2f_sha256 *s, const void *data, size_t len);
/* Writes the digest as 64 lowercase hex digits plus NUL into hex[65]. */
void g2f_sha256_final_hex(g2f_sha256 *s, char hex[65]);
/* Digest of a whole regular file (read once with pread, 256 KiB at a time). */
g2f_status g2f_sha256_file(const char *path, char hex[65], g2f_error *err);
/* Digest of the first size bytes of fd (g2f_sha256_file's pass, on the size
 * its open saw): G2F_ERR_IO naming path and the offset when a read fails
 * or the file ends before size (truncated meanwhile); hex is then unset. */
g2f_status g2f_sha256_fd(int fd, uint64_t size, const char *path, char hex[65], g2f_error *err);

#endif
