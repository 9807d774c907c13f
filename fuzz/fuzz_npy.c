/* Fuzz target: one .npy image (g2f_npy_parse: magic, version, the Python
 * dict header, descr / fortran_order / shape, size against the bytes). */
#include "fuzz_util.h"
#include "g2f_npy.h"

int g2f_fuzz_npy(const uint8_t *data, size_t size) {
    g2f_tensor t;
    memset(&t, 0, sizeof t);
    g2f_error err = {0};
    g2f_status s = g2f_npy_parse(data, size, "fuzz.npy", &t, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) fuzz_touch(&t);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_npy(data, size); }
#endif
