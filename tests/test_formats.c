/* Every checkpoint format end to end: a verify that passes per format (and
 * layout, naming, bias-free FFNs, shards), and the refusals that name what
 * is wrong. The per-format readers have their own tests. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

static g2f_status verify(const char *model, const char *fixture, g2f_verify_result *res, g2f_model_info *info,
                         g2f_error *err) {
    char mp[400], fp[400];
    snprintf(mp, sizeof mp, "%s/%s", fixtures, model);
    snprintf(fp, sizeof fp, "%s/%s", fixtures, fixture);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(mp, NULL, &m, err);
    if (s == G2F_OK) {
        if (info) *info = *g2f_model_get_info(m);
        s = g2f_fixture_open(fp, &f, err);
    }
    if (s == G2F_OK) {
        g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .select = NULL, .tol = {0, 0, 0, G2F_TOL_LAMBDA}, .n_threads = 2};
        s = g2f_verify_run(m, f, &p, res, err);
    }
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

static void every_format_should_verify_its_reference(void) {
    struct {
        const char *model, *fixture;
        g2f_layout layout;
        int bias;
    } cases[] = {
        {"tiny", "tiny_tanh.safetensors", G2F_LAYOUT_CONV1D, 1},
        {"torch/hf_tiny.bin", "tiny_tanh.safetensors", G2F_LAYOUT_CONV1D, 1},
        {"torch/sharded", "tiny_tanh.safetensors", G2F_LAYOUT_CONV1D, 1},
        {"torch/nanogpt_ckpt.pt", "tiny_tanh.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"torch/mingpt_ckpt.pt", "tiny_tanh.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"torch/nobias_ckpt.pt", "torch/nobias_ref.safetensors", G2F_LAYOUT_LINEAR, 0},
        {"formats2/tiny.gguf", "tiny_tanh.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"formats2/tiny_f16.gguf", "formats2/tiny_f16_ref.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"formats2/tiny_llmc.bin", "tiny_tanh.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"formats2/tiny_llmc_bf16.bin", "diag/weights_bf16_rounded.safetensors", G2F_LAYOUT_LINEAR, 1},
        {"tiny", "npz/tiny_tanh_compressed.npz", G2F_LAYOUT_CONV1D, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_verify_result res;
        g2f_model_info info;
        g2f_error err = {0};
        g2f_status s = verify(cases[i].model, cases[i].fixture, &res, &info, &err);
        int ok = s == G2F_OK && res.pass && res.compared == 4 && info.layout == cases[i].layout &&
                 info.has_fc_bias == cases[i].bias && info.n_embd == 64 && info.n_inner == 256;
        if (!ok) {
            fprintf(stderr, "%s vs %s: status %d (%s), pass %d, layout %d, bias %d\n", cases[i].model, cases[i].fixture,
                    s, err.msg, res.pass, info.layout, info.has_fc_bias);
            check_failures++;
        }
        g2f_verify_result_free(&res);
    }
}

static void rounded_checkpoints_should_be_diagnosed_against_full_precision_references(void) {
    g2f_verify_result res;
    g2f_error err = {0};
    CHECK(verify("formats2/tiny_f16.gguf", "tiny_tanh.safetensors", &res, NULL, &err) == G2F_OK);
    CHECK(!res.pass);
    for (size_t L = 0; L < res.n_layers; L++)
        CHECK(res.layers[L].diagnosis == G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED));
    g2f_verify_result_free(&res);
}

static void unreadable_checkpoints_should_be_named(void) {
    struct { const char *model, *msg; } cases[] = {
        {"torch/hf_tiny_noncontig.bin", "is not contiguous"},
        {"tiny_tanh.safetensors", "no GPT-2 FFN tensors"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_verify_result res;
        g2f_error err = {0};
        g2f_status s = verify(cases[i].model, "tiny_tanh.safetensors", &res, NULL, &err);
        if (s != G2F_ERR_FORMAT || !strstr(err.msg, cases[i].msg)) {
            fprintf(stderr, "%s: status %d, \"%s\", wanted \"%s\"\n", cases[i].model, s, err.msg, cases[i].msg);
            check_failures++;
        }
    }
    /* a legacy (pre-1.6) torch.save file: a raw pickle with torch's magic number */
    char path[400];
    snprintf(path, sizeof path, "%s/legacy.pt", dir);
    const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                    0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
    CHECK(write_bytes(path, legacy, sizeof legacy) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "legacy (pre-1.6) torch.save format is not supported");
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "formats") != 0) return 1;
    fixtures = argv[1];
    RUN(every_format_should_verify_its_reference);
    RUN(rounded_checkpoints_should_be_diagnosed_against_full_precision_references);
    RUN(unreadable_checkpoints_should_be_named);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
