/* Fuzz target: the safetensors header and tensor table (g2f_safetensors_parse). */
#include "fuzz_util.h"
#include "g2f_safetensors.h"

int g2f_fuzz_safetensors(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_safetensors_parse(data, size, "fuzz.safetensors", &t, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) /* touch every view: it must lie inside the input */
        for (size_t i = 0; i < t.count; i++)
            if (t.tensors[i].nbytes) {
                volatile unsigned char x = t.tensors[i].data[0];
                x = t.tensors[i].data[t.tensors[i].nbytes - 1];
                (void)x;
            }
    g2f_table_free(&t);
    (void)g2f_safetensors_probe(data, size);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_safetensors(data, size); }
#endif
