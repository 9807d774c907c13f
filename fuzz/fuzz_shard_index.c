/* Fuzz target: shard index JSON (g2f_source_open on NAME.index.json). The
 * input is the index; its folder holds two small torch shards and a
 * safetensors file (copied once from the fixtures) that it may name. */
#include "fuzz_util.h"
#include "g2f_source.h"

int g2f_fuzz_shard_index(const uint8_t *data, size_t size) {
    static int ready = 0;
    char dir[400], path[512], src[512];
    if (fuzz_target_dir(dir, sizeof dir, "shard_index")) return 0;
    if (!ready) {
        static const char *const copies[][2] = {
            {"torch/sharded/pytorch_model-00001-of-00002.bin", "pytorch_model-00001-of-00002.bin"},
            {"torch/sharded/pytorch_model-00002-of-00002.bin", "pytorch_model-00002-of-00002.bin"},
            {"tiny/model.safetensors", "model.safetensors"},
        };
        for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
            snprintf(src, sizeof src, "%s/%s", fuzz_fixtures_dir(), copies[i][0]);
            snprintf(path, sizeof path, "%s/%s", dir, copies[i][1]);
            if (fuzz_copy_file(src, path)) {
                fprintf(stderr, "fuzz_shard_index: cannot copy %s (set G2F_FIXTURES)\n", src);
                abort();
            }
        }
        ready = 1;
    }
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (fuzz_write_file(path, data, size)) return 0;
    g2f_source *s = NULL;
    g2f_error err = {0};
    g2f_status st = g2f_source_open(path, &s, &err);
    fuzz_check_message(st, &err);
    g2f_source_close(s);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_shard_index(data, size); }
#endif
