/* g2f_digest: a checkpoint's SHA-256; see g2f_digest.h. */
#include "g2f_digest.h"

#include <string.h>

#include "g2f_file.h"
#include "g2f_sha256.h"

g2f_status g2f_digest_checkpoint(const g2f_source *src, char hex[65], g2f_error *err) {
    g2f_path_list shards = {0};
    g2f_status st = g2f_source_shards(src, &shards, err);
    if (st == G2F_OK && shards.count == 0) st = g2f_sha256_file(g2f_source_path(src), hex, err);
    if (st == G2F_OK && shards.count) {
        /* sha256sum's output for the shards, in name order, then its digest */
        g2f_sha256 all;
        g2f_sha256_init(&all);
        for (size_t i = 0; i < shards.count && st == G2F_OK; i++) {
            char one[65];
            const char *slash = strrchr(shards.paths[i], '/');
            const char *name = slash ? slash + 1 : shards.paths[i];
            if ((st = g2f_sha256_file(shards.paths[i], one, err)) != G2F_OK) break;
            g2f_sha256_update(&all, one, 64);
            g2f_sha256_update(&all, "  ", 2);
            g2f_sha256_update(&all, name, strlen(name));
            g2f_sha256_update(&all, "\n", 1);
        }
        if (st == G2F_OK) g2f_sha256_final_hex(&all, hex);
    }
    g2f_path_list_free(&shards);
    return st;
}
