/* Fuzz target: a generation fixture (g2f_genverify_check and, when it is
 * accepted and small, g2f_genverify_run with its diagnosis) against the
 * tiny model (fixtures/tiny: vocab 96, 32 positions). The input is the
 * fixture file's bytes (any format the fixture reader takes; the seeds are
 * fixtures/decode/gen's safetensors). */
#include "fuzz_util.h"
#include "g2f_genverify.h"

int g2f_fuzz_genverify(const uint8_t *data, size_t size) {
    static g2f_model *m; /* opened once: the same checkpoint for every input */
    char dir[400], path[512], ck[512];
    g2f_error err = {0};
    if (!m) {
        snprintf(ck, sizeof ck, "%s/tiny", fuzz_fixtures_dir());
        if (g2f_model_open(ck, NULL, &m, &err) != G2F_OK) return 0;
    }
    if (fuzz_target_dir(dir, sizeof dir, "genverify")) return 0;
    snprintf(path, sizeof path, "%s/gen.safetensors", dir);
    if (fuzz_write_file(path, data, size)) return 0;
    g2f_fixture *f = NULL;
    g2f_status s = g2f_fixture_open(path, &f, &err);
    fuzz_check_message(s, &err);
    if (s == G2F_OK && g2f_genverify_present(f)) {
        s = g2f_genverify_check(m, f, &err);
        fuzz_check_message(s, &err);
        const g2f_tensor *g = g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS);
        if (s == G2F_OK && g->numel <= 64) { /* a few rows of a few steps: milliseconds on the tiny model */
            g2f_genverify_params p = {0, G2F_GELU_TANH, 1, 0, 1};
            g2f_gen_result r;
            s = g2f_genverify_run(m, f, &p, &r, &err);
            fuzz_check_message(s, &err);
            if (s == G2F_OK && r.pass && (r.diverged || r.compared == 0)) abort(); /* a pass on nothing, or diverged */
        }
    }
    g2f_fixture_close(f);
    return 0;
}

#ifndef G2F_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return g2f_fuzz_genverify(data, size); }
#endif
