/* g2f_sha256_ni: the SHA-256 compression function on the x86 SHA extensions
 * (SHA-NI), in its own translation unit compiled with -msha -msse4.1 and
 * called only when the CPU has them (g2f_cpu_features()->sha). Internal to g2f_sha256: about 5x the
 * portable C code, which made `run` on GPT-2 XL spend most of its time
 * hashing the 3.9 GB checkpoint. */
#ifndef G2F_SHA256_NI_H
#define G2F_SHA256_NI_H
#include <stddef.h>
#include <stdint.h>
/* The round constants (FIPS 180-4 section 4.2.2), defined in g2f_sha256.c. */
extern const uint32_t g2f_sha256_k[64];
/* Runs the compression function over n 64-byte blocks at p, updating h. */
void g2f_sha256_ni_blocks(uint32_t h[8], const unsigned char *p, size_t n);
#endif
