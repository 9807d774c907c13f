/* Fuzz target: the GGUF reader (g2f_gguf_parse), then, for every quantized
 * tensor it accepts, the block checks, dequantization and bounds that a
 * layer load runs (g2f_quant.h), over at most the first 4096 elements. */
#include "fuzz_util.h"
#include "g2f_gguf.h"
#include "g2f_quant.h"

static void fuzz_quantized(const g2f_table *t) {
    static float v[4096], step[4096], bound[4096];
    for (size_t i = 0; i < t->count; i++) {
        const g2f_tensor *x = &t->tensors[i];
        if (!g2f_dtype_is_quant(x->dtype)) continue;
        g2f_error err = {0};
        if (g2f_quant_check(x, "fuzz.gguf", &err) != G2F_OK) {
            fuzz_check_message(G2F_ERR_FORMAT, &err);
            continue;
        }
        uint64_t n = x->numel < 4096 ? x->numel : 4096, start = x->numel - n;
        g2f_tensor_read_f32(x, start, n, v);
        g2f_quant_bounds(x->dtype, x->data, start, n, step, bound);
    }
}

int g2f_fuzz_gguf(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_gguf_parse(data, size, "fuzz.gguf", &t, &err);
    if (s == G2F_OK) fuzz_quantized(&t);
    fuzz_check_table(s, &err, &t); /* every view must lie inside the input */
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_gguf(data, size); }
#endif
