/* llm.c checkpoint reader: views at the right offsets (checked on a small
 * image whose every parameter holds its own element index), one corrupt
 * header per rule, and the committed fixtures/formats2/tiny_llmc*.bin checked
 * value by value against the safetensors checkpoint they were exported from.
 * argv[1] is the fixtures folder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_llmc.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures = "fixtures";

/* maxT 3, V 5, L 2, NH 2, C 4, Vp 8: 540 parameters (see below). */
enum { T_MAX = 3, VOCAB = 5, LAYERS = 2, HEADS = 2, CH = 4, VPAD = 8, N_PARAMS = 540 };

static unsigned char image[1024 + N_PARAMS * 4 + 16];

static void put_i32(unsigned char *p, int32_t v) {
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

/* Header with the given fields; parameter i holds the value i (F32) or i
 * rounded to bfloat16 (exact for the offsets checked below, all of at most 8
 * significant bits). Returns the image size. */
static size_t make_image(int32_t version, int32_t maxT, int32_t V, int32_t L, int32_t NH, int32_t C, int32_t Vp) {
    memset(image, 0, sizeof image);
    const int32_t h[8] = {G2F_LLMC_MAGIC, version, maxT, V, L, NH, C, Vp};
    for (int i = 0; i < 8; i++) put_i32(image + 4 * i, h[i]);
    for (int i = 0; i < N_PARAMS; i++) {
        float f = (float)i;
        if (version == 5) {
            uint16_t b = g2f_f32_to_bf16(f);
            memcpy(image + 1024 + 2 * i, &b, 2);
        } else {
            memcpy(image + 1024 + 4 * i, &f, 4);
        }
    }
    return 1024 + (size_t)N_PARAMS * (version == 5 ? 2 : 4);
}

static size_t make_default(int32_t version) { return make_image(version, T_MAX, VOCAB, LAYERS, HEADS, CH, VPAD); }

static void expect_error(size_t n, const char *needle, int line) {
    g2f_table t;
    g2f_error err = {0};
    g2f_status s = g2f_llmc_parse(image, n, "bad.bin", &t, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "bad.bin")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(t.count == 0 && t.tensors == NULL);
}
#define EXPECT_ERROR(n, needle) expect_error(n, needle, __LINE__)

static float first(const g2f_table *t, const char *name) {
    const g2f_tensor *x = g2f_table_find(t, name);
    float v = -1;
    if (x) g2f_tensor_read_f32(x, 0, 1, &v);
    else fprintf(stderr, "missing tensor %s\n", name);
    return v;
}

/* Element offsets with L=2, C=4, Vp=8, maxT=3 (llm.c order):
 * wte 0 (32), wpe 32 (12), ln1w 44 (8), ln1b 52 (8), qkvw 60 (96),
 * qkvb 156 (24), attprojw 180 (32), attprojb 212 (8), ln2w 220 (8),
 * ln2b 228 (8), fcw 236 (128), fcb 364 (32), fcprojw 396 (128),
 * fcprojb 524 (8), lnfw 532 (4), lnfb 536 (4): 540 in all. */
static void llmc_should_view_each_parameter_at_its_offset(void) {
    for (int version = 3; version <= 5; version += 2) {
        size_t n = make_default(version);
        g2f_table t;
        g2f_error err = {0};
        CHECK(g2f_llmc_parse(image, n, "ok.bin", &t, &err) == G2F_OK);
        CHECK(t.count == 4 + 12 * LAYERS);
        const g2f_dtype dt = version == 3 ? G2F_DTYPE_F32 : G2F_DTYPE_BF16;
        const g2f_tensor *wte = g2f_table_find(&t, "wte.weight");
        CHECK(wte && wte->dtype == dt && wte->ndim == 2 && wte->shape[0] == VPAD && wte->shape[1] == CH);
        CHECK(first(&t, "wte.weight") == 0);
        CHECK(first(&t, "wpe.weight") == 32);
        const g2f_tensor *wpe = g2f_table_find(&t, "wpe.weight");
        CHECK(wpe && wpe->ndim == 2 && wpe->shape[0] == T_MAX && wpe->shape[1] == CH);
        CHECK(first(&t, "h.0.ln_1.weight") == 44 && first(&t, "h.1.ln_1.weight") == 48);
        CHECK(first(&t, "h.0.ln_1.bias") == 52 && first(&t, "h.1.ln_1.bias") == 56);
        CHECK(first(&t, "h.0.attn.c_attn.weight") == 60 && first(&t, "h.1.attn.c_attn.weight") == 108);
        CHECK(first(&t, "h.0.attn.c_attn.bias") == 156 && first(&t, "h.1.attn.c_attn.bias") == 168);
        CHECK(first(&t, "h.0.attn.c_proj.weight") == 180 && first(&t, "h.1.attn.c_proj.weight") == 196);
        CHECK(first(&t, "h.0.attn.c_proj.bias") == 212 && first(&t, "h.1.attn.c_proj.bias") == 216);
        const g2f_tensor *qkv = g2f_table_find(&t, "h.1.attn.c_attn.weight");
        CHECK(qkv && qkv->ndim == 2 && qkv->shape[0] == 3 * CH && qkv->shape[1] == CH && qkv->numel == 48);
        const g2f_tensor *ap = g2f_table_find(&t, "h.0.attn.c_proj.weight");
        CHECK(ap && ap->ndim == 2 && ap->shape[0] == CH && ap->shape[1] == CH);
        const g2f_tensor *qb = g2f_table_find(&t, "h.0.attn.c_attn.bias");
        CHECK(qb && qb->ndim == 1 && qb->shape[0] == 3 * CH);
        CHECK(first(&t, "ln_f.weight") == 532 && first(&t, "ln_f.bias") == 536);
        const g2f_tensor *lnf = g2f_table_find(&t, "ln_f.bias");
        CHECK(lnf && lnf->ndim == 1 && lnf->shape[0] == CH && lnf->data + lnf->nbytes == image + n);
        CHECK(first(&t, "h.0.ln_2.weight") == 220 && first(&t, "h.1.ln_2.weight") == 224);
        CHECK(first(&t, "h.0.ln_2.bias") == 228 && first(&t, "h.1.ln_2.bias") == 232);
        CHECK(first(&t, "h.0.mlp.c_fc.weight") == 236 && first(&t, "h.1.mlp.c_fc.weight") == 300);
        CHECK(first(&t, "h.0.mlp.c_fc.bias") == 364 && first(&t, "h.1.mlp.c_fc.bias") == 380);
        CHECK(first(&t, "h.0.mlp.c_proj.weight") == 396 && first(&t, "h.1.mlp.c_proj.weight") == 460);
        CHECK(first(&t, "h.0.mlp.c_proj.bias") == 524 && first(&t, "h.1.mlp.c_proj.bias") == 528);
        const g2f_tensor *fc = g2f_table_find(&t, "h.1.mlp.c_fc.weight");
        CHECK(fc && fc->dtype == dt && fc->ndim == 2 && fc->shape[0] == 4 * CH && fc->shape[1] == CH);
        CHECK(fc && fc->numel == 64 && fc->nbytes == 64 * g2f_dtype_size(dt));
        if (fc) { /* last element of layer 1's c_fc: 300 + 63 */
            float last;
            g2f_tensor_read_f32(fc, 63, 1, &last);
            CHECK(last == (version == 3 ? 363.0f : g2f_bf16_to_f32(g2f_f32_to_bf16(363.0f))));
        }
        const g2f_tensor *pj = g2f_table_find(&t, "h.0.mlp.c_proj.weight");
        CHECK(pj && pj->shape[0] == CH && pj->shape[1] == 4 * CH);
        const g2f_tensor *pb = g2f_table_find(&t, "h.0.mlp.c_proj.bias");
        CHECK(pb && pb->ndim == 1 && pb->shape[0] == CH);
        CHECK(strcmp(g2f_table_meta(&t, "format"), "llm.c") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "version"), version == 3 ? "3" : "5") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "max_seq_len"), "3") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "vocab_size"), "5") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "padded_vocab_size"), "8") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "num_heads"), "2") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "num_layers"), "2") == 0);
        CHECK(strcmp(g2f_table_meta(&t, "channels"), "4") == 0);
        g2f_table_free(&t);
    }
}

static void llmc_should_reject_bad_magic_and_version(void) {
    size_t n = make_default(3);
    put_i32(image, 12345);
    EXPECT_ERROR(n, "bad magic 12345, expected 20240326");
    EXPECT_ERROR(3, "too short for the llm.c magic");
    n = make_default(3);
    EXPECT_ERROR(100, "file is 100 bytes, too short for the 1024-byte llm.c header");
    put_i32(image + 4, 4);
    EXPECT_ERROR(n, "header[1] version is 4, expected 3 (float32) or 5 (bfloat16)");
    put_i32(image + 4, 1);
    EXPECT_ERROR(n, "header[1] version is 1");
}

static void llmc_should_reject_absurd_sizes(void) {
    EXPECT_ERROR(make_image(3, 0, VOCAB, LAYERS, HEADS, CH, VPAD), "header[2] max_seq_len is 0 but must be in [1, 1048576]");
    EXPECT_ERROR(make_image(3, T_MAX, -7, LAYERS, HEADS, CH, VPAD), "header[3] vocab_size is -7 but must be in [1, 16777216]");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, 0, HEADS, CH, VPAD), "header[4] num_layers is 0 but must be in [1, 1024]");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, 100000, HEADS, CH, VPAD), "header[4] num_layers is 100000 but must be in [1, 1024]");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, LAYERS, HEADS, -1, VPAD), "header[6] channels is -1 but must be in [1, 65536]");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, LAYERS, HEADS, INT32_MAX, VPAD), "header[6] channels is 2147483647");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, LAYERS, 0, CH, VPAD), "header[5] num_heads is 0 but must be in [1, 4]");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, LAYERS, 3, CH, VPAD), "header[5] num_heads 3 does not divide channels 4");
    EXPECT_ERROR(make_image(3, T_MAX, VOCAB, LAYERS, HEADS, CH, 4), "header[7] padded_vocab_size (at least vocab_size) is 4 but must be in [5, 16777216]");
    /* Every field at its limit: nothing overflows or is allocated; the size
     * check names the bytes such a model would take. */
    EXPECT_ERROR(make_image(3, 1 << 20, 1 << 24, 1024, 1, 65536, 1 << 24), "implies 215782647137280 bytes");
}

static void llmc_should_reject_wrong_file_sizes(void) {
    size_t n = make_default(3);
    EXPECT_ERROR(n - 1, "file is 3183 bytes but the header (L=2, C=4, Vp=8, maxT=3, F32) implies 3184 bytes "
                        "(1024 + 540 parameters x 4 bytes): truncated");
    EXPECT_ERROR(n + 4, "file is 3188 bytes but the header (L=2, C=4, Vp=8, maxT=3, F32) implies 3184 bytes "
                        "(1024 + 540 parameters x 4 bytes): trailing bytes");
    EXPECT_ERROR(1024, "implies 3184 bytes");
    n = make_default(5); /* an fp32-sized file labelled bf16 is too long */
    EXPECT_ERROR(1024 + N_PARAMS * 4, "implies 2104 bytes (1024 + 540 parameters x 2 bytes): trailing bytes");
}

/* ---- the committed fixtures against the checkpoint they came from ---- */

static void check_fixture(const char *file, int bf16, const g2f_table *ref) {
    char path[512];
    snprintf(path, sizeof path, "%s/formats2/%s", fixtures, file);
    g2f_llmc *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_llmc_open(path, &m, &err) == G2F_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const g2f_table *t = g2f_llmc_table(m);
    const g2f_dtype dt = bf16 ? G2F_DTYPE_BF16 : G2F_DTYPE_F32;
    CHECK(strcmp(g2f_table_meta(t, "version"), bf16 ? "5" : "3") == 0);
    CHECK(strcmp(g2f_table_meta(t, "vocab_size"), "96") == 0);
    CHECK(strcmp(g2f_table_meta(t, "max_seq_len"), "32") == 0);
    CHECK(strcmp(g2f_table_meta(t, "num_heads"), "4") == 0);
    /* wte: (Vp = 128, C): the checkpoint's 96 rows, then zero padding. */
    const g2f_tensor *wte = g2f_table_find(t, "wte.weight");
    const g2f_tensor *rwte = g2f_table_find(ref, "transformer.wte.weight");
    CHECK(wte && rwte && wte->dtype == dt && wte->shape[0] == 128 && wte->shape[1] == 64);
    if (wte && rwte) {
        float *a = malloc(128 * 64 * sizeof *a), *b = malloc(96 * 64 * sizeof *b);
        g2f_tensor_read_f32(wte, 0, 128 * 64, a);
        g2f_tensor_read_f32(rwte, 0, 96 * 64, b);
        int bad = 0;
        for (int i = 0; i < 128 * 64; i++) {
            float want = i < 96 * 64 ? b[i] : 0.0f;
            if (bf16) want = g2f_bf16_to_f32(g2f_f32_to_bf16(want));
            bad += a[i] != want;
        }
        CHECK(bad == 0);
        free(a);
        free(b);
    }
    for (int L = 0; L < 4; L++) {
        static const char *const names[] = {"mlp.c_fc.weight", "mlp.c_proj.weight", "mlp.c_fc.bias",
                                            "mlp.c_proj.bias", "ln_2.weight", "ln_2.bias"};
        for (size_t k = 0; k < 6; k++) {
            char name[96], rname[128];
            snprintf(name, sizeof name, "h.%d.%s", L, names[k]);
            snprintf(rname, sizeof rname, "transformer.%s", name);
            const g2f_tensor *w = g2f_table_find(t, name), *r = g2f_table_find(ref, rname);
            CHECK(w && r && w->dtype == dt && w->numel == r->numel && w->ndim == r->ndim);
            if (!w || !r || w->numel != r->numel) continue;
            float *a = malloc(w->numel * sizeof *a), *b = malloc(r->numel * sizeof *b);
            g2f_tensor_read_f32(w, 0, w->numel, a);
            g2f_tensor_read_f32(r, 0, r->numel, b);
            int bad = 0;
            if (w->ndim == 2) {
                /* llm.c is Linear [out, in], HF Conv1D [in, out]: transposed. */
                CHECK(w->shape[0] == r->shape[1] && w->shape[1] == r->shape[0]);
                CHECK(w->shape[0] == (k == 0 ? 256u : 64u));
                const uint64_t rows = w->shape[0], cols = w->shape[1];
                for (uint64_t i = 0; i < rows; i++)
                    for (uint64_t j = 0; j < cols; j++) {
                        float want = b[j * rows + i];
                        if (bf16) want = g2f_bf16_to_f32(g2f_f32_to_bf16(want));
                        bad += a[i * cols + j] != want;
                    }
            } else {
                for (uint64_t i = 0; i < w->numel; i++)
                    bad += a[i] != (bf16 ? g2f_bf16_to_f32(g2f_f32_to_bf16(b[i])) : b[i]);
            }
            CHECK(bad == 0);
            free(a);
            free(b);
        }
    }
    g2f_llmc_close(m);
}

static void llmc_should_read_the_exported_fixtures(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (!st) return;
    check_fixture("tiny_llmc.bin", 0, g2f_safetensors_table(st));
    check_fixture("tiny_llmc_bf16.bin", 1, g2f_safetensors_table(st));
    g2f_safetensors_close(st);
}

static void llmc_open_should_name_missing_files(void) {
    g2f_llmc *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_llmc_open("/nonexistent/gpt2.bin", &m, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "/nonexistent/gpt2.bin");
    CHECK(m == NULL);
    g2f_llmc_close(NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    RUN(llmc_should_view_each_parameter_at_its_offset);
    RUN(llmc_should_reject_bad_magic_and_version);
    RUN(llmc_should_reject_absurd_sizes);
    RUN(llmc_should_reject_wrong_file_sizes);
    RUN(llmc_should_read_the_exported_fixtures);
    RUN(llmc_open_should_name_missing_files);
    CHECK_EXIT();
}
