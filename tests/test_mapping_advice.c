/* The page-table advice on a mapped checkpoint (g2f_mapping_populate,
 * g2f_mapping_release: madvise in 8 MiB pieces shared among the OpenMP
 * threads) changes no byte the mapping reads: a 20 MiB file (three pieces,
 * the last partial, the range off page boundaries) reads the same after
 * being populated, released and read again, with one thread and with
 * several. And g2f_threads_set_default (the CLI's --threads) is the team
 * that g2f_threads(0), so those regions, use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_cpu.h"
#include "g2f_file.h"
#include "test_util.h"

static char dir[256];

static uint32_t word_at(uint64_t i) { return (uint32_t)(i * 2654435761u) ^ 0x9e3779b9u; }

static int bytes_intact(const unsigned char *p, uint64_t n) {
    for (uint64_t i = 0; i + 4 <= n; i += 4) {
        uint32_t w;
        memcpy(&w, p + i, 4);
        if (w != word_at(i / 4)) return 0;
    }
    return 1;
}

static void advice_should_keep_every_byte_of_the_mapping(void) {
    const uint64_t n = (uint64_t)20 << 20;
    char path[300];
    snprintf(path, sizeof path, "%s/big.bin", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (uint64_t i = 0; i < n / 4; i++) {
        uint32_t w = word_at(i);
        fwrite(&w, 4, 1, f);
    }
    fclose(f);
    g2f_mapping m;
    g2f_error err = {0};
    CHECK(g2f_mapping_open(path, &m, &err) == G2F_OK);
    for (int threads = 1; threads <= 3; threads++) {
        g2f_threads_set_default(threads);
        g2f_mapping_populate(m.data + 100, n - 300); /* off page boundaries at both ends */
        CHECK(bytes_intact(m.data, m.size));
        g2f_mapping_release(m.data + 100, n - 300);
        CHECK(bytes_intact(m.data, m.size)); /* read back from the file */
        g2f_mapping_release(m.data, m.size);
        CHECK(bytes_intact(m.data, m.size));
    }
    g2f_mapping_close(&m);
    remove(path);
}

static void threads_set_default_should_be_the_default_team(void) {
#ifdef _OPENMP
    g2f_threads_set_default(3);
    CHECK(g2f_threads(0) == 3);
    g2f_threads_set_default(1);
    CHECK(g2f_threads(0) == 1);
    g2f_threads_set_default(0); /* no change */
    CHECK(g2f_threads(0) == 1);
#endif
#ifdef _OPENMP
    CHECK(g2f_threads(5) == 5); /* an explicit count wins */
#else
    CHECK(g2f_threads(5) == 1);
#endif
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "advice") != 0) return 1;
    RUN(advice_should_keep_every_byte_of_the_mapping);
    RUN(threads_set_default_should_be_the_default_team);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
