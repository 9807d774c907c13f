/* g2f_probe: a file's format from its first bytes. A safetensors file
 * starts with its header's length, any u64: one of 0x380 bytes (a run
 * fixture whose metadata records a long checkpoint path) starts 80 03, the
 * bytes of a protocol-3 pickle, and was refused as "a pickle" until the
 * stricter safetensors test came first. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "g2f_probe.h"

/* A safetensors start: the header length n, then '{' and spaces. */
static uint64_t safetensors_start(unsigned char *buf, size_t cap, uint64_t n) {
    memset(buf, ' ', cap);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    buf[8] = '{';
    buf[8 + n - 1] = '}';
    return 8 + n;
}

static void probe_should_read_safetensors_whose_length_starts_like_a_pickle(void) {
    static unsigned char buf[8 + 0x600];
    for (uint64_t n = 0x280; n <= 0x580; n += 0x100) { /* 80 02 .. 80 05: each pickle protocol */
        uint64_t size = safetensors_start(buf, sizeof buf, n);
        CHECK(buf[0] == 0x80 && buf[1] >= 2 && buf[1] <= 5);
        CHECK(g2f_format_probe(buf, size) == G2F_FORMAT_SAFETENSORS);
    }
}

static void probe_should_still_read_a_legacy_pickle_as_a_pickle(void) {
    /* torch.save's legacy format: PROTO 2, then LONG1 of its magic number */
    const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    CHECK(g2f_format_probe(legacy, sizeof legacy) == G2F_FORMAT_PICKLE);
    const unsigned char proto4[] = {0x80, 0x04, 0x95, 0x10, 0, 0, 0, 0, 0, 0, 0, '}', 0x94, '.'};
    CHECK(g2f_format_probe(proto4, sizeof proto4) == G2F_FORMAT_PICKLE);
}

int main(void) {
    RUN(probe_should_read_safetensors_whose_length_starts_like_a_pickle);
    RUN(probe_should_still_read_a_legacy_pickle_as_a_pickle);
    CHECK_EXIT();
}
