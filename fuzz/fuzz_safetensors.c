/* Fuzz target: the safetensors header and tensor table (g2f_safetensors_parse). */
#include "fuzz_util.h"
#include "g2f_safetensors.h"

int g2f_fuzz_safetensors(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_safetensors_parse(data, size, "fuzz.safetensors", &t, &err);
    fuzz_check_table(s, &err, &t); /* every view must lie inside the input */
    (void)g2f_safetensors_probe(data, size);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_safetensors(data, size); }
#endif
