/* Fuzz target: the llm.c checkpoint header (g2f_llmc_parse). */
#include "fuzz_util.h"
#include "g2f_llmc.h"

int g2f_fuzz_llmc(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_llmc_parse(data, size, "fuzz.bin", &t, &err);
    fuzz_check_table(s, &err, &t); /* every view must lie inside the input */
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_llmc(data, size); }
#endif
