/* Fuzz target: .npz archives (g2f_npz_open: zip members, stored or deflated,
 * each an .npy; the __metadata__ member's JSON). The input is written to a
 * scratch file, since g2f_npz_open maps a path. */
#include "fuzz_util.h"
#include "g2f_npy.h"

int g2f_fuzz_npz(const uint8_t *data, size_t size) {
    char path[512];
    char dir[400];
    if (fuzz_target_dir(dir, sizeof dir, "npz")) return 0;
    snprintf(path, sizeof path, "%s/fuzz.npz", dir);
    if (fuzz_write_file(path, data, size)) return 0;
    g2f_npz *z = NULL;
    g2f_error err = {0};
    g2f_status s = g2f_npz_open(path, &z, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK) {
        const g2f_table *t = g2f_npz_table(z);
        for (size_t i = 0; i < t->count; i++) fuzz_touch(&t->tensors[i]);
    }
    g2f_npz_close(z);
    (void)g2f_npz_probe_members(data, size);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_npz(data, size); }
#endif
