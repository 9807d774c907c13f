/* Fuzz target: the llm.c checkpoint header (g2f_llmc_parse). */
#include "fuzz_util.h"
#include "g2f_llmc.h"

int g2f_fuzz_llmc(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_llmc_parse(data, size, "fuzz.bin", &t, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK)
        for (size_t i = 0; i < t.count; i++)
            if (t.tensors[i].nbytes) {
                volatile unsigned char x = t.tensors[i].data[0];
                x = t.tensors[i].data[t.tensors[i].nbytes - 1];
                (void)x;
            }
    g2f_table_free(&t);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_llmc(data, size); }
#endif
