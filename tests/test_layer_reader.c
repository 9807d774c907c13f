/* The layer reader (g2f_model_layer_read): reading a layer's float32
 * weights into its buffer gives the very floats the mapping's views give,
 * whichever way it takes (GPT2FFN_WEIGHTS=read, map, or measured on a layer
 * large enough to measure); a file renamed over the checkpoint after it was
 * opened is never read (the views of the mapped file instead); and
 * g2f_mapping_read refuses ranges outside its mapping. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_file.h"
#include "g2f_model.h"
#include "test_util.h"

static char dir[256];

static const char *in_dir(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* in_dir(name): 2 layers of GPT-2 shape (n_embd d, n_inner 4d, biases),
 * values from seed. */
static void checkpoint(const char *name, size_t d, uint64_t seed) {
    const size_t h = 4 * d, sizes[4] = {d * h, h, h * d, d};
    const char *roles[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
    st_entry e[8];
    char names[8][48];
    float *data[8] = {0};
    for (int i = 0; i < 8; i++) {
        int k = i % 4;
        data[i] = malloc(sizes[k] * sizeof(float));
        CHECK(data[i] != NULL);
        if (!data[i]) return;
        for (size_t j = 0; j < sizes[k]; j++) data[i][j] = rnd_unit(&seed);
        snprintf(names[i], sizeof names[i], "h.%d.mlp.%s", i / 4, roles[k]);
        e[i] = (st_entry){names[i], "F32", k % 2 ? 1u : 2u, {0}, data[i], sizes[k] * sizeof(float)};
        if (k == 0) e[i].shape[0] = d, e[i].shape[1] = h;
        if (k == 1) e[i].shape[0] = h;
        if (k == 2) e[i].shape[0] = h, e[i].shape[1] = d;
        if (k == 3) e[i].shape[0] = d;
    }
    CHECK(st_write(in_dir(name), NULL, e, 8, 1) == 0);
    for (int i = 0; i < 8; i++) free(data[i]);
}

static int same_floats(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* Layer L read through rd against the plain views, tensor by tensor;
 * returns out's read bits (-1 on a load error). */
static int read_matches_views(const g2f_model *m, size_t L, g2f_layer_reader *rd) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    g2f_layer v, r;
    g2f_error err;
    if (g2f_model_layer_load(m, L, &v, &err) != G2F_OK) return -1;
    if (g2f_model_layer_read(m, L, rd, &r, &err) != G2F_OK) {
        g2f_layer_free(&v);
        return -1;
    }
    CHECK(same_floats(v.w.w_fc, r.w.w_fc, d * h));
    CHECK(same_floats(v.w.b_fc, r.w.b_fc, h));
    CHECK(same_floats(v.w.w_proj, r.w.w_proj, h * d));
    CHECK(same_floats(v.w.b_proj, r.w.b_proj, d));
    CHECK(v.read == 0);
    int bits = r.read;
    if (bits) { /* the views of what was read are in the reader's buffer, not the mapping */
        CHECK((const unsigned char *)r.w.w_fc >= rd->buf && (const unsigned char *)r.w.w_fc < rd->buf + rd->cap);
        CHECK(r.w.w_fc != v.w.w_fc);
    } else {
        CHECK(r.w.w_fc == v.w.w_fc);
    }
    g2f_layer_free(&r);
    g2f_layer_free(&v);
    return bits;
}

/* Layers [0, layers) read with GPT2FFN_WEIGHTS=mode over n_threads, each
 * against the views, each expected to read the tensors of want_bits;
 * returns the reader's mode. */
static int forced_should_read(const g2f_model *m, const char *mode, size_t layers, int n_threads, int want_bits) {
    setenv("GPT2FFN_WEIGHTS", mode, 1);
    g2f_layer_reader rd = {0};
    rd.n_threads = n_threads;
    for (size_t L = 0; L < layers; L++) CHECK(read_matches_views(m, L, &rd) == want_bits);
    int got = rd.mode;
    if (want_bits == 0) CHECK(rd.buf == NULL); /* nothing read, no buffer kept */
    g2f_layer_reader_free(&rd);
    CHECK(rd.buf == NULL && rd.cap == 0 && rd.mode == G2F_READ_UNDECIDED);
    unsetenv("GPT2FFN_WEIGHTS");
    return got;
}

static g2f_model *open_model(const char *name) {
    g2f_model *m = NULL;
    g2f_error err;
    CHECK(g2f_model_open(in_dir(name), NULL, &m, &err) == G2F_OK);
    return m;
}

static void forced_read_should_give_the_mapped_floats(void) {
    checkpoint("small.safetensors", 8, 1);
    g2f_model *m = open_model("small.safetensors");
    if (!m) return;
    CHECK(forced_should_read(m, "read", 2, 0, 15) == G2F_READ_PREAD); /* all four tensors read */
    g2f_model_close(m);
}

static void forced_map_should_view_the_mapping(void) {
    checkpoint("small.safetensors", 8, 2);
    g2f_model *m = open_model("small.safetensors");
    if (!m) return;
    CHECK(forced_should_read(m, "map", 2, 0, 0) == G2F_READ_MAP);
    g2f_model_close(m);
}

/* A layer under 8 MiB is not measured (views, undecided); one of GPT-2
 * small's width (18.9 MB) is, and either outcome gives the same floats. */
static void measured_choice_should_give_the_mapped_floats(void) {
    checkpoint("small.safetensors", 8, 3);
    g2f_model *m = open_model("small.safetensors");
    if (!m) return;
    g2f_layer_reader rd = {0};
    CHECK(read_matches_views(m, 0, &rd) == 0);
    CHECK(rd.mode == G2F_READ_UNDECIDED);
    g2f_layer_reader_free(&rd);
    g2f_model_close(m);
    checkpoint("wide.safetensors", 768, 4);
    if (!(m = open_model("wide.safetensors"))) return;
    for (size_t L = 0; L < 2; L++) {
        int bits = read_matches_views(m, L, &rd);
        CHECK(rd.mode == G2F_READ_MAP || rd.mode == G2F_READ_PREAD);
        CHECK(bits == (rd.mode == G2F_READ_PREAD ? 15 : 0));
    }
    fprintf(stderr, "     (measured: %s)\n", rd.mode == G2F_READ_PREAD ? "read" : "map");
    g2f_layer_reader_free(&rd);
    /* and read whatever was measured: 9.4 MB tensors, in 1 MiB pieces over 1, 2 and 3 threads */
    for (int t = 1; t <= 3; t++) CHECK(forced_should_read(m, "read", 2, t, 15) == G2F_READ_PREAD);
    g2f_model_close(m);
    remove(in_dir("wide.safetensors"));
}

/* A layer whose biases are F16 (converted) beside F32 weights (read): the
 * read tensors and the converted ones side by side, each as loaded alone. */
static void mixed_layer_should_read_its_f32_tensors_only(void) {
    enum { D = 8, H = 32 };
    static float wfc[D * H], wpr[H * D];
    static uint16_t bfc[H], bpr[D];
    uint64_t seed = 9;
    for (size_t i = 0; i < D * H; i++) wfc[i] = rnd_unit(&seed), wpr[i] = rnd_unit(&seed);
    for (size_t i = 0; i < H; i++) bfc[i] = (uint16_t)(0x3c00 + i); /* 1.0 and up */
    for (size_t i = 0; i < D; i++) bpr[i] = (uint16_t)(0xbc00 + i); /* -1.0 and down */
    st_entry e[] = {{"h.0.mlp.c_fc.weight", "F32", 2, {D, H}, wfc, sizeof wfc},
                    {"h.0.mlp.c_fc.bias", "F16", 1, {H}, bfc, sizeof bfc},
                    {"h.0.mlp.c_proj.weight", "F32", 2, {H, D}, wpr, sizeof wpr},
                    {"h.0.mlp.c_proj.bias", "F16", 1, {D}, bpr, sizeof bpr}};
    CHECK(st_write(in_dir("mixed.safetensors"), NULL, e, 4, 1) == 0);
    g2f_model *m = open_model("mixed.safetensors");
    if (!m) return;
    CHECK(forced_should_read(m, "read", 1, 0, 1 << G2F_FFN_FC_W | 1 << G2F_FFN_PROJ_W) == G2F_READ_PREAD);
    g2f_model_close(m);
}

/* Renamed over after the open: the reader may not read the new file's
 * bytes; it keeps the mapped (old) file's views. */
static void file_renamed_over_should_never_be_read(void) {
    checkpoint("small.safetensors", 8, 5);
    g2f_model *m = open_model("small.safetensors");
    if (!m) return;
    g2f_layer before;
    g2f_error err;
    CHECK(g2f_model_layer_load(m, 0, &before, &err) == G2F_OK);
    size_t n = 8 * 32;
    float *old = malloc(n * sizeof(float));
    CHECK(old != NULL);
    if (!old) return;
    memcpy(old, before.w.w_fc, n * sizeof(float));
    g2f_layer_free(&before);
    checkpoint("other.safetensors", 8, 6); /* same shapes, other values */
    char from[512], to[512]; /* in_dir's buffer is one */
    snprintf(from, sizeof from, "%s", in_dir("other.safetensors"));
    snprintf(to, sizeof to, "%s", in_dir("small.safetensors"));
    CHECK(rename(from, to) == 0);
    setenv("GPT2FFN_WEIGHTS", "read", 1);
    g2f_layer_reader rd = {0};
    g2f_layer r;
    CHECK(g2f_model_layer_read(m, 0, &rd, &r, &err) == G2F_OK);
    CHECK(r.read == 0);
    CHECK(same_floats(r.w.w_fc, old, n));
    g2f_layer_free(&r);
    g2f_layer_reader_free(&rd);
    unsetenv("GPT2FFN_WEIGHTS");
    free(old);
    g2f_model_close(m);
}

/* A tensor over 256 MiB (G2F_POPULATE_MAX; a sparse file here) is viewed:
 * neither read nor given a buffer ahead of the checks on the work it asks
 * for (an 8 TB hole made the buffer's allocation abort under ASan). */
static void huge_tensor_should_be_viewed_not_read(void) {
    const uint64_t h = ((uint64_t)1 << 26) + 16; /* 256 MiB + 64 bytes of F32 */
    big_entry e[] = {{"h.0.mlp.c_fc.weight", "F32", 2, {1, h}, 4 * h}, {"h.0.mlp.c_proj.weight", "F32", 2, {h, 1}, 4 * h}};
    int w = write_sparse_st(in_dir("huge.safetensors"), e, 2);
    CHECK(w == 0 || w == 77);
    if (w != 0) return;
    g2f_model *m = open_model("huge.safetensors");
    if (!m) return;
    setenv("GPT2FFN_WEIGHTS", "read", 1);
    g2f_layer_reader rd = {0};
    g2f_layer r;
    g2f_error err;
    CHECK(g2f_model_layer_read(m, 0, &rd, &r, &err) == G2F_OK);
    CHECK(r.read == 0 && rd.buf == NULL && rd.cap == 0);
    CHECK(g2f_model_tensor_read(m, r.src[G2F_FFN_FC_W], &rd) == NULL && rd.buf == NULL);
    g2f_layer_free(&r);
    g2f_layer_reader_free(&rd);
    unsetenv("GPT2FFN_WEIGHTS");
    g2f_model_close(m);
    remove(in_dir("huge.safetensors"));
}

/* g2f_model_tensor_read (diff's reads): with GPT2FFN_WEIGHTS=read each
 * float32 tensor's floats out of the file, bit for bit the mapped ones,
 * lasting until the next call; with map, without a reader or a tensor, NULL. */
static void tensor_read_should_give_the_mapped_floats(void) {
    checkpoint("small.safetensors", 8, 8);
    g2f_model *m = open_model("small.safetensors");
    if (!m) return;
    const g2f_tensor *x[G2F_FFN_TENSORS];
    g2f_error err;
    CHECK(g2f_model_layer_tensors(m, 1, x, &err) == G2F_OK);
    g2f_layer_reader rd = {0};
    setenv("GPT2FFN_WEIGHTS", "read", 1);
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        const float *f = g2f_model_tensor_read(m, x[k], &rd);
        CHECK(f != NULL && (const void *)f != (const void *)x[k]->data);
        if (f) CHECK(same_floats(f, (const float *)(const void *)x[k]->data, (size_t)x[k]->numel));
    }
    CHECK(g2f_model_tensor_read(m, NULL, &rd) == NULL && g2f_model_tensor_read(m, x[0], NULL) == NULL);
    g2f_layer_reader_free(&rd);
    setenv("GPT2FFN_WEIGHTS", "map", 1);
    CHECK(g2f_model_tensor_read(m, x[0], &rd) == NULL && rd.buf == NULL);
    g2f_layer_reader_free(&rd);
    unsetenv("GPT2FFN_WEIGHTS");
    g2f_model_close(m);
}

static void mapping_read_should_refuse_ranges_outside_the_mapping(void) {
    checkpoint("small.safetensors", 8, 7);
    g2f_mapping map;
    g2f_error err;
    CHECK(g2f_mapping_open(in_dir("small.safetensors"), &map, &err) == G2F_OK);
    unsigned char buf[64];
    CHECK(g2f_mapping_read(&map, map.data, 64, buf, 1) == 1);
    CHECK(memcmp(buf, map.data, 64) == 0);
    CHECK(g2f_mapping_read(&map, map.data + map.size - 64, 64, buf, 2) == 1);
    CHECK(g2f_mapping_read(&map, map.data + map.size - 63, 64, buf, 1) == 0); /* one past the end */
    CHECK(g2f_mapping_read(&map, map.data, map.size + 1, buf, 1) == 0);
    CHECK(g2f_mapping_read(&map, buf, 8, buf, 1) == 0); /* not in the mapping */
    g2f_mapping_close(&map);
    CHECK(map.path == NULL && map.data == NULL);
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "layer_reader") != 0) return 1;
    RUN(forced_read_should_give_the_mapped_floats);
    RUN(forced_map_should_view_the_mapping);
    RUN(measured_choice_should_give_the_mapped_floats);
    RUN(mixed_layer_should_read_its_f32_tensors_only);
    RUN(file_renamed_over_should_never_be_read);
    RUN(huge_tensor_should_be_viewed_not_read);
    RUN(tensor_read_should_give_the_mapped_floats);
    RUN(mapping_read_should_refuse_ranges_outside_the_mapping);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
