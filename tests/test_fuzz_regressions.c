/* Replays every committed fuzzer finding (every file in fuzz/regressions/<target>/)
 * through the same entry points as the libFuzzer targets in fuzz/, without
 * libFuzzer, so that each stays fixed. Under the sanitizer build
 * (GPT2FFN_SANITIZE) a regression shows up as an ASan/UBSan report; in any
 * build as a crash, a hang (ctest's timeout) or a bad message (abort).
 * argv[1] is the fixtures folder; the regressions are in argv[1]/../fuzz. */
#define G2F_FUZZ_NO_MAIN 1

#include <dirent.h>
#include <sys/stat.h>

#include "../fuzz/fuzz_bpe.c"
#include "../fuzz/fuzz_config.c"
#include "../fuzz/fuzz_fixture_names.c"
#include "../fuzz/fuzz_genverify.c"
#include "../fuzz/fuzz_gguf.c"
#include "../fuzz/fuzz_llmc.c"
#include "../fuzz/fuzz_llmc_state.c"
#include "../fuzz/fuzz_npy.c"
#include "../fuzz/fuzz_npz.c"
#include "../fuzz/fuzz_pickle.c"
#include "../fuzz/fuzz_safetensors.c"
#include "../fuzz/fuzz_shard_index.c"
#include "../fuzz/fuzz_tokenizer.c"
#include "../fuzz/fuzz_torch.c"
#include "../fuzz/fuzz_zip.c"
#include "check.h"

static const struct {
    const char *name;
    int (*run)(const uint8_t *, size_t);
} targets[] = {
    {"safetensors", g2f_fuzz_safetensors}, {"shard_index", g2f_fuzz_shard_index},
    {"config", g2f_fuzz_config},           {"zip", g2f_fuzz_zip},
    {"pickle", g2f_fuzz_pickle},           {"torch", g2f_fuzz_torch},
    {"npy", g2f_fuzz_npy},                 {"npz", g2f_fuzz_npz},
    {"gguf", g2f_fuzz_gguf},               {"llmc", g2f_fuzz_llmc},
    {"fixture_names", g2f_fuzz_fixture_names}, {"bpe", g2f_fuzz_bpe},
    {"tokenizer", g2f_fuzz_tokenizer},     {"llmc_state", g2f_fuzz_llmc_state},
    {"genverify", g2f_fuzz_genverify},
};

static size_t replayed = 0;

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 4096, len = 0, r;
    unsigned char *b = malloc(cap);
    while (b && (r = fread(b + len, 1, cap - len, fp)) > 0) {
        len += r;
        if (len == cap) {
            unsigned char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(fp);
    *n = len;
    return b;
}

static void replay_target(const char *root, size_t t) {
    char dir[8192];
    if (snprintf(dir, sizeof dir, "%s/%s", root, targets[t].name) >= (int)sizeof dir) return;
    DIR *d = opendir(dir);
    if (!d) return; /* no findings for this target */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[16384];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        size_t n = 0;
        unsigned char *buf = slurp(path, &n);
        CHECK(buf != NULL);
        if (!buf) continue;
        fprintf(stderr, "replay %s/%s (%zu bytes)\n", targets[t].name, e->d_name, n);
        CHECK(targets[t].run(buf, n) == 0);
        free(buf);
        replayed++;
    }
    closedir(d);
}

/* Removes the scratch folder the targets wrote into (two levels deep). */
static void remove_tree(const char *path, int depth) {
    DIR *d = depth < 3 ? opendir(path) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4096];
            if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) continue;
            remove_tree(p, depth + 1);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void regressions_should_replay_without_findings(const char *fixtures) {
    char root[4096];
    snprintf(root, sizeof root, "%s/../fuzz/regressions", fixtures);
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) replay_target(root, t);
    CHECK(replayed > 0); /* the folder was found and holds the committed findings */
}

static const char *fixtures_dir;
static void regressions(void) { regressions_should_replay_without_findings(fixtures_dir); }

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fixtures_dir = argv[1];
    setenv("G2F_FIXTURES", argv[1], 1);
    RUN(regressions);
    fprintf(stderr, "%zu regression inputs replayed\n", replayed);
    if (fuzz_scratch_dir()) remove_tree(fuzz_scratch_dir(), 0);
    CHECK_EXIT();
}
