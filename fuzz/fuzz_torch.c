/* Fuzz target: torch.save zip checkpoints (g2f_torch_parse: zip, data.pkl
 * through the restricted pickle machine, the tensor walk, storages). */
#include "fuzz_util.h"
#include "g2f_torch.h"

int g2f_fuzz_torch(const uint8_t *data, size_t size) {
    g2f_table t = {0};
    g2f_error err = {0};
    g2f_status s = g2f_torch_parse(data, size, "fuzz.pt", &t, &err);
    fuzz_check_table(s, &err, &t); /* every view must lie inside the input */
    (void)g2f_torch_is_legacy(data, size);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_torch(data, size); }
#endif
