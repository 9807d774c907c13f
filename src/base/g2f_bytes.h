/* g2f_bytes: little-endian loads and stores, byte by byte.
 *
 * Every integer in every file format gpt2ffn reads is little-endian (GGUF,
 * zip, safetensors' header length, .npy header length, llm.c, pickle's
 * BININT/LONG1) and may sit at any alignment inside a mapping. Decoding them
 * explicitly from bytes, never by casting a buffer to a wider type, makes
 * the reads independent of alignment, aliasing rules and the host's byte
 * order. The caller has checked that the bytes are there.
 */
#ifndef G2F_BYTES_H
#define G2F_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* The n <= 8 bytes at p as an unsigned little-endian integer. */
static inline uint64_t g2f_load_le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

static inline uint16_t g2f_load_u16le(const unsigned char *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }

static inline uint32_t g2f_load_u32le(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t g2f_load_u64le(const unsigned char *p) {
    return (uint64_t)g2f_load_u32le(p) | (uint64_t)g2f_load_u32le(p + 4) << 32;
}

/* Two's complement reinterpretation of the unsigned loads, without UB. */
static inline int32_t g2f_load_i32le(const unsigned char *p) {
    uint32_t u = g2f_load_u32le(p);
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

/* Writes the low n <= 8 bytes of v at p, little-endian. */
static inline void g2f_store_le(unsigned char *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

#endif
