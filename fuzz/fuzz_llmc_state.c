/* Fuzz target: llm.c's debug state (g2f_llmc_state_parse), read without
 * the checkpoint's sizes, with the bundled tiny checkpoint's (V 96, Vp 128,
 * 210304 parameters: the committed fixture's), and with sizes made to fit
 * the input: V and Vp from the unused header words [4] and [5], and P the
 * floats left after logits of width V (then Vp), so that inputs of any size
 * reach the id checks and the cut of padded logits. */
#include "fuzz_util.h"
#include "g2f_bytes.h"
#include "g2f_llmc_state.h"

static void parse_with(const uint8_t *data, size_t size, const g2f_llmc_state_dims *d) {
    g2f_table t = {0};
    g2f_error err = {0};
    float *cut = NULL;
    g2f_status s = g2f_llmc_state_parse(data, size, "fuzz.bin", d, &t, &cut, &err);
    if (s != G2F_OK && cut) abort(); /* nothing is handed out on failure */
    fuzz_check_table(s, &err, &t);
    free(cut);
}

int g2f_fuzz_llmc_state(const uint8_t *data, size_t size) {
    static const g2f_llmc_state_dims tiny = {96, 128, 210304};
    parse_with(data, size, NULL);
    parse_with(data, size, &tiny);
    if (size < 1024) return 0;
    const int32_t B = g2f_load_i32le(data + 8), T = g2f_load_i32le(data + 12);
    if (B < 1 || T < 1 || B > G2F_LLMC_STATE_MAX_BATCH || T > G2F_LLMC_MAX_SEQ_LEN) return 0;
    const uint64_t bt = (uint64_t)B * (uint64_t)T, V = 1 + (data[16] | (uint64_t)(data[17] & 0x3f) << 8);
    const uint64_t Vp = V + data[20];
    for (int padded = 0; padded < 2; padded++) {
        const uint64_t vl = padded ? Vp : V, fixed = 1024 + 8 * bt + 4; /* bt <= 2^40, vl < 2^15 */
        if (size < fixed + 4 * bt * vl || (size - fixed - 4 * bt * vl) % 4) continue;
        const g2f_llmc_state_dims d = {V, Vp, (size - fixed - 4 * bt * vl) / 4};
        if (d.n_params) parse_with(data, size, &d);
    }
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_llmc_state(data, size); }
#endif
