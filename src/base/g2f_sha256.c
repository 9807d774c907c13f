/* g2f_sha256: see g2f_sha256.h; the portable compression function follows
 * FIPS 180-4 section 6.2 with big-endian message words loaded byte by byte;
 * CPUs with the SHA extensions use g2f_sha256_ni instead. */
#include "g2f_sha256.h"
#include "g2f_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "g2f_cpu.h"
#include "g2f_sha256_ni.h"
#include "g2f_tensor.h"

const uint32_t g2f_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + g2f_sha256_k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void blocks(g2f_sha256 *s, const unsigned char *p, size_t n) {
    if (s->ni) {
#ifdef GPT2FFN_X86_KERNELS
        g2f_sha256_ni_blocks(s->h, p, n);
#endif
        return;
    }
    for (; n > 0; n--, p += 64) compress(s->h, p);
}

void g2f_sha256_init(g2f_sha256 *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->bytes = 0;
    s->used = 0;
    s->ni = g2f_cpu_features()->sha;
}

void g2f_sha256_update(g2f_sha256 *s, const void *data, size_t len) {
    const unsigned char *p = data;
    s->bytes += len;
    if (s->used) {
        size_t take = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used < 64) return;
        blocks(s, s->block, 1);
        s->used = 0;
    }
    blocks(s, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
    memcpy(s->block, p, len);
    s->used = len;
}

void g2f_sha256_final_hex(g2f_sha256 *s, char hex[65]) {
    uint64_t bits = s->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t n = (s->used < 56 ? 56 : 120) - s->used;
    for (int i = 0; i < 8; i++) pad[n + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    g2f_sha256_update(s, pad, n + 8);
    for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

/* Read, not mapped: under a hypervisor that shadows the guest's page
 * tables (PVM) the first touch of every mapped page traps into it; GPT-2
 * XL's 3.9 GB hashed in 3.2-3.8 s read in 256 KiB pieces against 4.9-5.9 s
 * mapped (2 CPUs of an AMD EPYC). The pieces are hashed while in L2, and
 * nothing of the file stays resident (verify hashes beside its work). The
 * size is the one the open saw: a file that shrinks meanwhile is an error,
 * bytes it gains are not hashed. */
#define HASH_PIECE ((size_t)256 << 10)
g2f_status g2f_sha256_fd(int fd, uint64_t size, const char *path, char hex[65], g2f_error *err) {
    unsigned char *buf = malloc(HASH_PIECE);
    if (!buf) return g2f_error_set(err, G2F_ERR_NOMEM, "%s: out of memory for hashing", path);
    g2f_status st = G2F_OK;
    g2f_sha256 s;
    g2f_sha256_init(&s);
    for (uint64_t off = 0; off < size && st == G2F_OK; off += HASH_PIECE) {
        size_t n = size - off < HASH_PIECE ? (size_t)(size - off) : HASH_PIECE;
        if (g2f_file_pread_all(fd, buf, n, off)) {
            g2f_sha256_update(&s, buf, n);
            continue;
        }
        int e = errno;
        st = g2f_error_set(err, G2F_ERR_IO, "%s: cannot read %zu bytes at offset %llu to hash them: %s", path, n,
                           (unsigned long long)off, e ? strerror(e) : "the file ended first (truncated meanwhile?)");
    }
    free(buf);
    if (st == G2F_OK) g2f_sha256_final_hex(&s, hex);
    return st;
}

g2f_status g2f_sha256_file(const char *path, char hex[65], g2f_error *err) {
    int fd = -1;
    uint64_t size = 0;
    g2f_status st = g2f_file_open_regular(path, &fd, &size, err);
    if (st != G2F_OK) return st;
    st = g2f_sha256_fd(fd, size, path, hex, err);
    close(fd);
    return st;
}
