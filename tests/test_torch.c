/* torch.save reader: the committed fixtures (fixtures/torch/, made by
 * scripts/export_torch_fixtures.py from fixtures/tiny) compared value by value
 * with the safetensors original; then small archives built here (a stored-zip
 * writer and a pickle writer) for every rule of the tensor-to-storage check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "g2f_torch.h"
#include "pickle_writer.h"

static const char *fixtures = "fixtures";

/* ---- writers ------------------------------------------------------------ */

#include "zip_writer.h"

static const float six[6] = {1, 2, 3, 4, 5, 6};

/* "r/data.pkl" (the pickle in pk) and "r/data/0" holding bytes0 bytes of six. */
static size_t build_simple(size_t bytes0) {
    zent e[2] = {{"r/data.pkl", pk, pn, 0, 0}, {"r/data/0", six, bytes0, 0, 0}};
    return zip_write(e, 2);
}

static void expect_error(size_t n, const char *needle, int line) {
    g2f_table t;
    g2f_error err = {0};
    g2f_status s = g2f_torch_parse(zbuf, n, "bad.pt", &t, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "bad.pt")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(t.count == 0 && t.tensors == NULL);
}
#define EXPECT_ERROR(n, needle) expect_error(n, needle, __LINE__)

/* ---- fixture files ------------------------------------------------------ */

static g2f_torch *open_fixture(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/torch/%s", fixtures, name);
    g2f_torch *pt = NULL;
    g2f_error err = {0};
    if (g2f_torch_open(path, &pt, &err) != G2F_OK) fprintf(stderr, "%s\n", err.msg);
    CHECK(pt != NULL);
    return pt;
}

static g2f_safetensors *open_tiny(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    return st;
}

/* True when a (rows, cols) equals b, or b transposed when transposed. */
static int same_values(const g2f_tensor *a, const g2f_tensor *b, int transposed) {
    if (!a || !b || a->numel != b->numel || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    float *x = malloc(a->numel * sizeof *x), *y = malloc(b->numel * sizeof *y);
    g2f_tensor_read_f32(a, 0, a->numel, x);
    g2f_tensor_read_f32(b, 0, b->numel, y);
    int ok = 1;
    if (!transposed) {
        ok = memcmp(x, y, a->numel * sizeof *x) == 0 && memcmp(a->shape, b->shape, sizeof a->shape) == 0;
    } else {
        uint64_t r = a->shape[0], c = a->shape[1];
        ok = b->shape[0] == c && b->shape[1] == r;
        for (uint64_t i = 0; ok && i < r; i++)
            for (uint64_t j = 0; j < c; j++)
                if (x[i * c + j] != y[j * r + i]) ok = 0;
    }
    free(x);
    free(y);
    return ok;
}

static void torch_should_read_hf_state_dicts(void) {
    g2f_torch *pt = open_fixture("hf_tiny.bin");
    g2f_safetensors *st = open_tiny();
    if (!pt || !st) goto done;
    const g2f_table *t = g2f_torch_table(pt), *ref = g2f_safetensors_table(st);
    CHECK(t->count == ref->count && t->count == 52 && t->meta_count == 0);
    for (size_t i = 0; i < ref->count; i++) {
        const g2f_tensor *a = g2f_table_find(t, ref->tensors[i].name);
        CHECK(a && same_values(a, &ref->tensors[i], 0));
        CHECK(a && a->nbytes == ref->tensors[i].nbytes);
    }
done:
    g2f_torch_close(pt);
    g2f_safetensors_close(st);
}

static void torch_should_read_nanogpt_checkpoints(void) {
    g2f_torch *pt = open_fixture("nanogpt_ckpt.pt");
    g2f_safetensors *st = open_tiny();
    if (!pt || !st) goto done;
    const g2f_table *t = g2f_torch_table(pt), *ref = g2f_safetensors_table(st);
    char a[128], b[128];
    for (int L = 0; L < 4; L++) {
        for (int k = 0; k < 2; k++) {
            const char *w = k ? "c_proj" : "c_fc";
            snprintf(a, sizeof a, "model._orig_mod.transformer.h.%d.mlp.%s.weight", L, w);
            snprintf(b, sizeof b, "transformer.h.%d.mlp.%s.weight", L, w);
            CHECK(same_values(g2f_table_find(t, a), g2f_table_find(ref, b), 1)); /* Linear = Conv1D^T */
            snprintf(a, sizeof a, "model._orig_mod.transformer.h.%d.mlp.%s.bias", L, w);
            snprintf(b, sizeof b, "transformer.h.%d.mlp.%s.bias", L, w);
            CHECK(same_values(g2f_table_find(t, a), g2f_table_find(ref, b), 0));
        }
    }
    const g2f_tensor *w0 = g2f_table_find(t, "model._orig_mod.transformer.h.0.mlp.c_fc.weight");
    CHECK(w0 && w0->shape[0] == 256 && w0->shape[1] == 64);
    const g2f_tensor *loss = g2f_table_find(t, "best_val_loss");
    float f = 0;
    if (loss) g2f_tensor_read_f32(loss, 0, 1, &f);
    CHECK(loss && loss->ndim == 0 && loss->numel == 1 && f == 1.5f);
    /* AdamW state: step, exp_avg, exp_avg_sq per stepped parameter (the 1-D ones). */
    size_t opt = 0, model = 0;
    for (size_t i = 0; i < t->count; i++) {
        opt += strncmp(t->tensors[i].name, "optimizer.state.", 16) == 0;
        model += strncmp(t->tensors[i].name, "model.", 6) == 0;
    }
    CHECK(model == 24 && opt == 3 * 16 && t->count == model + opt + 1);
    const g2f_tensor *s = g2f_table_find(t, "optimizer.state.8.exp_avg");
    CHECK(s && s->ndim == 1 && s->shape[0] == 64);
done:
    g2f_torch_close(pt);
    g2f_safetensors_close(st);
}

static void torch_should_read_mingpt_and_bias_free_checkpoints(void) {
    g2f_torch *pt = open_fixture("mingpt_ckpt.pt");
    g2f_safetensors *st = open_tiny();
    if (!pt || !st) goto done;
    const g2f_table *t = g2f_torch_table(pt), *ref = g2f_safetensors_table(st);
    CHECK(t->count == 24);
    CHECK(same_values(g2f_table_find(t, "model_state.blocks.3.mlp.c_proj.bias"),
                      g2f_table_find(ref, "transformer.h.3.mlp.c_proj.bias"), 0));
    CHECK(same_values(g2f_table_find(t, "model_state.blocks.2.mlp.c_fc.weight"),
                      g2f_table_find(ref, "transformer.h.2.mlp.c_fc.weight"), 1));
    CHECK(same_values(g2f_table_find(t, "model_state.blocks.1.ln_2.weight"),
                      g2f_table_find(ref, "transformer.h.1.ln_2.weight"), 0));
    g2f_torch_close(pt);
    pt = open_fixture("nobias_ckpt.pt");
    if (!pt) goto done;
    t = g2f_torch_table(pt);
    CHECK(g2f_table_find(t, "model._orig_mod.transformer.h.0.mlp.c_fc.bias") == NULL);
    CHECK(g2f_table_find(t, "model._orig_mod.transformer.h.0.ln_2.bias") == NULL);
    CHECK(same_values(g2f_table_find(t, "model._orig_mod.transformer.h.3.mlp.c_proj.weight"),
                      g2f_table_find(ref, "transformer.h.3.mlp.c_proj.weight"), 1));
done:
    g2f_torch_close(pt);
    g2f_safetensors_close(st);
}

static void torch_should_reject_noncontiguous_tensors(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/torch/hf_tiny_noncontig.bin", fixtures);
    g2f_torch *pt = NULL;
    g2f_error err = {0};
    CHECK(g2f_torch_open(path, &pt, &err) == G2F_ERR_FORMAT && pt == NULL);
    CHECK_CONTAINS(err.msg, "tensor 'transformer.h.0.mlp.c_fc.weight' is not contiguous: shape [64, 256], "
                            "strides (1, 64) are not row-major");
    /* The same rule on a hand-built (2, 3) tensor with strides (1, 2). */
    const int shape[2] = {2, 3}, stride[2] = {1, 2};
    start();
    op('}');
    ustr("t");
    tensor("FloatStorage", "0", 6, 0, 2, shape, stride);
    op('s');
    op('.');
    EXPECT_ERROR(build_simple(24), "tensor 't' is not contiguous");
}

static void torch_should_refuse_legacy_and_foreign_files(void) {
    const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20,
                                    0x6a, 0xa8, 0x50, 0x19, 0x2e, 0x80, 0x02, 0x4d, 0xe9, 0x03};
    memcpy(zbuf, legacy, sizeof legacy);
    EXPECT_ERROR(sizeof legacy, "legacy (pre-1.6) torch.save format is not supported; re-save with torch>=1.6");
    CHECK(g2f_torch_is_legacy(legacy, sizeof legacy) && !g2f_torch_is_legacy(legacy, 8));
    memcpy(zbuf, "\x80\x02N.", 4);
    EXPECT_ERROR(4, "not a zip archive, so not a torch.save (>= 1.6) checkpoint (it is a raw pickle)");
    memcpy(zbuf, "\x10\0\0\0\0\0\0\0{}", 10);
    EXPECT_ERROR(10, "not a zip archive");
    EXPECT_ERROR(0, "not a zip archive");
    zent e[1] = {{"arr_0.npy", "\x93NUMPY", 6, 0, 0}}; /* an .npz */
    EXPECT_ERROR(zip_write(e, 1), "no '<root>/data.pkl' member: a zip archive but not a torch.save checkpoint");
    start();
    op('N');
    op('.');
    zent two[2] = {{"a/data.pkl", pk, pn, 0, 0}, {"b/data.pkl", pk, pn, 0, 0}};
    EXPECT_ERROR(zip_write(two, 2), "two pickles, 'a/data.pkl' and 'b/data.pkl'");
}

/* {'a': t[0:2], 'b': t[2:6] as (2, 2), 'c': (1, 2) with an odd stride on the
 *  size-1 dimension, 'l': [t], 7: t}, all sharing storage 0, in a root
 *  folder of any name, with byteorder "little". */
static void torch_should_read_any_root_and_shared_storages(void) {
    const int s2[1] = {2}, u1[1] = {1}, s22[2] = {2, 2}, st22[2] = {2, 1}, s12[2] = {1, 2}, st12[2] = {99, 1};
    start();
    op('}');
    op('(');
    ustr("a");
    tensor("FloatStorage", "0", 6, 0, 1, s2, u1);
    ustr("b");
    tensor("FloatStorage", "0", 6, 2, 2, s22, st22);
    ustr("c");
    tensor("FloatStorage", "0", 6, 4, 2, s12, st12);
    ustr("l");
    op(']');
    tensor("FloatStorage", "0", 6, 5, 0, NULL, NULL);
    op('a');
    binint(7);
    tensor("FloatStorage", "0", 6, 1, 0, NULL, NULL);
    op('u');
    op('.');
    zent e[3] = {{"my-model.v2/data.pkl", pk, pn, 0, 0}, {"my-model.v2/byteorder", "little", 6, 0, 0},
                 {"my-model.v2/data/0", six, 24, 0, 0}};
    size_t n = zip_write(e, 3);
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_torch_parse(zbuf, n, "ok.pt", &t, &err) == G2F_OK);
    if (t.count != 5) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(t.count == 5);
        g2f_table_free(&t);
        return;
    }
    const char *names[5] = {"a", "b", "c", "l.0", "7"};
    const float first[5] = {1, 3, 5, 6, 2};
    for (int i = 0; i < 5; i++) {
        const g2f_tensor *x = g2f_table_find(&t, names[i]);
        float f = 0;
        if (x) g2f_tensor_read_f32(x, 0, 1, &f);
        CHECK(x && x->dtype == G2F_DTYPE_F32 && f == first[i]);
    }
    const g2f_tensor *b = g2f_table_find(&t, "b");
    float v[4];
    g2f_tensor_read_f32(b, 0, 4, v);
    CHECK(b->numel == 4 && b->nbytes == 16 && v[0] == 3 && v[3] == 6);
    CHECK(g2f_table_find(&t, "a")->data + 8 == b->data); /* views into one storage, no copy */
    g2f_table_free(&t);
}

static void torch_should_reject_storage_problems(void) {
    const int s2[1] = {2}, u1[1] = {1};
    start();
    op('}');
    ustr("w");
    tensor("FloatStorage", "0", 6, 5, 1, s2, u1); /* elements 5 and 6 of a 6-element storage */
    op('s');
    op('.');
    EXPECT_ERROR(build_simple(24), "tensor 'w': storage offset 5 + 2 elements runs past the end of storage 'r/data/0' (6 elements)");
    start();
    op('}');
    ustr("w");
    tensor("FloatStorage", "0", 6, 0, 1, s2, u1);
    op('s');
    op('.');
    EXPECT_ERROR(build_simple(20), "tensor 'w': storage 'r/data/0' holds 20 bytes but its FloatStorage of 6 elements needs 24");
    zent deflated[2] = {{"r/data.pkl", pk, pn, 0, 0}, {"r/data/0", six, 24, 1, 0}};
    EXPECT_ERROR(zip_write(deflated, 2), "member 'r/data/0' is compressed (method 8); it must be stored");
    zent badcrc[2] = {{"r/data.pkl", pk, pn, 0, 0}, {"r/data/0", six, 24, 0, 1}};
    EXPECT_ERROR(zip_write(badcrc, 2), "member 'r/data/0': CRC-32 is 0x");
    zent badpkl[2] = {{"r/data.pkl", pk, pn, 0, 1}, {"r/data/0", six, 24, 0, 0}};
    EXPECT_ERROR(zip_write(badpkl, 2), "member 'r/data.pkl': CRC-32");
    zent missing[1] = {{"r/data.pkl", pk, pn, 0, 0}};
    EXPECT_ERROR(zip_write(missing, 1), "tensor 'w': storage 'r/data/0' is missing from the archive");
    /* A deflated data.pkl is fine (torch never writes one, zip tools might). */
    zent zpkl[2] = {{"r/data.pkl", pk, pn, 1, 0}, {"r/data/0", six, 24, 0, 0}};
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_torch_parse(zbuf, zip_write(zpkl, 2), "ok.pt", &t, &err) == G2F_OK && t.count == 1);
    g2f_table_free(&t);
}

static void torch_should_reject_bad_objects(void) {
    const int s2[1] = {2}, u1[1] = {1};
    start();
    global("os", "system");
    ustr("id");
    op(0x85);
    op('R');
    op('.');
    EXPECT_ERROR(build_simple(24), "bad.pt: r/data.pkl: GLOBAL 'os system' is not allowed (gpt2ffn reads state dicts only)");
    start();
    op('}');
    binint(1);
    binint(2);
    op(0x86); /* a tuple key */
    tensor("FloatStorage", "0", 6, 0, 1, s2, u1);
    op('s');
    op('.');
    EXPECT_ERROR(build_simple(24), "tensor at '<tuple>' cannot be named: a dict key above it is not a str or int");
    start();
    op('}');
    op('(');
    ustr("a.b");
    tensor("FloatStorage", "0", 6, 0, 1, s2, u1);
    ustr("a");
    op('}');
    ustr("b");
    tensor("FloatStorage", "0", 6, 2, 1, s2, u1);
    op('s');
    op('u');
    op('.');
    EXPECT_ERROR(build_simple(24), "tensor 'a.b' appears twice");
    start();
    op(']'); /* a list that contains itself */
    op('q');
    op(0);
    op('h');
    op(0);
    op('a');
    op('.');
    EXPECT_ERROR(build_simple(24), "is nested deeper than 64 levels (or cyclic)");
    start();
    op('N');
    op('.');
    zent big[2] = {{"r/data.pkl", pk, pn, 0, 0}, {"r/byteorder", "big", 3, 0, 0}};
    EXPECT_ERROR(zip_write(big, 2), "big-endian checkpoint (r/byteorder says 'big') is not supported");
    zent odd[2] = {{"r/data.pkl", pk, pn, 0, 0}, {"r/byteorder", "middle", 6, 0, 0}};
    EXPECT_ERROR(zip_write(odd, 2), "r/byteorder is neither 'little' nor 'big'");
}

static void torch_open_should_name_missing_files(void) {
    g2f_torch *pt = NULL;
    g2f_error err = {0};
    CHECK(g2f_torch_open("/nonexistent/ckpt.pt", &pt, &err) == G2F_ERR_IO && pt == NULL);
    CHECK_CONTAINS(err.msg, "/nonexistent/ckpt.pt");
    g2f_torch_close(NULL);
}

static int meta_is(const g2f_table *t, const char *key, const char *value) {
    const char *v = g2f_table_meta(t, key);
    return v && !strcmp(v, value);
}

/* nanoGPT's train.py saves {'model', 'optimizer', 'model_args', ...}: the
 * table says so (G2F_TORCH_META_MODEL_ARGS), and only for a dict holding
 * both keys at its top. */
static void torch_should_note_model_args_beside_model(void) {
    g2f_torch *pt = open_fixture("nanogpt_ckpt.pt");
    if (pt) {
        const g2f_table *t = g2f_torch_table(pt);
        CHECK(g2f_table_meta(t, G2F_TORCH_META_MODEL_ARGS) != NULL);
        /* model_args' sizes, and the config dict's (nanoGPT saves both) */
        CHECK(meta_is(t, G2F_TORCH_META_ARGS_N_HEAD, "4"));
        CHECK(meta_is(t, G2F_TORCH_META_ARGS_N_EMBD, "64"));
        CHECK(meta_is(t, "torch:model_args.n_layer", "4"));
        CHECK(meta_is(t, G2F_TORCH_META_CONFIG_N_HEAD, "4"));
    }
    g2f_torch_close(pt);
    pt = open_fixture("mingpt_ckpt.pt"); /* model_state and config: not nanoGPT's */
    if (pt) {
        const g2f_table *t = g2f_torch_table(pt);
        CHECK(!g2f_table_meta(t, G2F_TORCH_META_MODEL_ARGS) && !g2f_table_meta(t, G2F_TORCH_META_ARGS_N_HEAD));
        CHECK(t->meta_count == 3 && meta_is(t, G2F_TORCH_META_CONFIG_N_HEAD, "4"));
    }
    g2f_torch_close(pt);
    pt = open_fixture("hf_tiny.bin"); /* a bare state dict: nothing */
    if (pt) CHECK(g2f_torch_table(pt)->meta_count == 0);
    g2f_torch_close(pt);
    const int s2[1] = {2}, u1[1] = {1};
    for (int both = 0; both < 2; both++) {
        start();
        op('}');
        op('(');
        ustr("model_args");
        op('}');
        if (both) {
            ustr("model");
            op('}');
            ustr("w");
            tensor("FloatStorage", "0", 6, 0, 1, s2, u1);
            op('s');
        }
        op('u');
        op('.');
        size_t n = build_simple(24);
        g2f_table t;
        g2f_error err = {0};
        CHECK(g2f_torch_parse(zbuf, n, "m.pt", &t, &err) == G2F_OK);
        CHECK((g2f_table_meta(&t, G2F_TORCH_META_MODEL_ARGS) != NULL) == both);
        g2f_table_free(&t);
    }
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    RUN(torch_should_read_hf_state_dicts);
    RUN(torch_should_read_nanogpt_checkpoints);
    RUN(torch_should_note_model_args_beside_model);
    RUN(torch_should_read_mingpt_and_bias_free_checkpoints);
    RUN(torch_should_reject_noncontiguous_tensors);
    RUN(torch_should_refuse_legacy_and_foreign_files);
    RUN(torch_should_read_any_root_and_shared_storages);
    RUN(torch_should_reject_storage_problems);
    RUN(torch_should_reject_bad_objects);
    RUN(torch_open_should_name_missing_files);
    CHECK_EXIT();
}
