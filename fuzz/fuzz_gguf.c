/* Fuzz target: the GGUF reader (g2f_gguf_parse). */
#include "fuzz_util.h"
#include "g2f_gguf.h"

int g2f_fuzz_gguf(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_gguf_parse(data, size, "fuzz.gguf", &t, &err);
    fuzz_check_table(s, &err, &t); /* every view must lie inside the input */
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_gguf(data, size); }
#endif
