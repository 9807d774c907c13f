/* Fuzz target: config.json handling (g2f_model_open on a folder holding the
 * tiny fixture checkpoint, copied once, and config.json = the input). */
#include "fuzz_util.h"
#include "g2f_model.h"

int g2f_fuzz_config(const uint8_t *data, size_t size) {
    static int ready = 0;
    char dir[400], path[512], src[512];
    if (fuzz_target_dir(dir, sizeof dir, "config")) return 0;
    if (!ready) {
        snprintf(src, sizeof src, "%s/tiny/model.safetensors", fuzz_fixtures_dir());
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (fuzz_copy_file(src, path)) {
            fprintf(stderr, "fuzz_config: cannot copy %s (set G2F_FIXTURES)\n", src);
            abort();
        }
        ready = 1;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (fuzz_write_file(path, data, size)) return 0;
    g2f_model *m = NULL;
    g2f_error err = {0};
    g2f_status st = g2f_model_open(dir, NULL, &m, &err);
    fuzz_check_message(st, &err);
    if (st == G2F_OK) {
        const g2f_model_info *in = g2f_model_get_info(m);
        if (in->config_has_gelu && !in->config_activation) abort();
    }
    g2f_model_close(m);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_config(data, size); }
#endif
