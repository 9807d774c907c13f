/* Checkpoint and fixture loading: the bounds of SECURITY.md's Limits table
 * that live above the readers (config.json size and integers, layer indexes
 * of checkpoints and fixtures), at the exact limit (accepted) and one past it
 * (refused with the check's message). */
#include "bounds.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "test_util.h"

static char dir[256];
static const float zeros[64];

static const char *in_dir(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* dir/model.safetensors: layers 0..n-1 (plus layer `extra` when not 0) of
 * F32 c_fc.weight [1, 4] and c_proj.weight [4, 1] (n_embd 1, n_inner 4). */
static void checkpoint(size_t n, size_t extra) {
    const size_t count = 2 * (n + (extra != 0));
    st_entry *e = calloc(count, sizeof *e);
    char (*names)[48] = calloc(count, sizeof *names);
    CHECK(e && names);
    if (!e || !names) return;
    for (size_t i = 0; i < count; i++) {
        const size_t layer = i / 2 < n ? i / 2 : extra;
        const int fc = i % 2 == 0;
        snprintf(names[i], sizeof names[i], "h.%zu.mlp.%s.weight", layer, fc ? "c_fc" : "c_proj");
        e[i] = (st_entry){names[i], "F32", 2, {fc ? 1u : 4u, fc ? 4u : 1u}, zeros, 16};
    }
    CHECK(st_write(in_dir("model.safetensors"), NULL, e, count, 1) == 0);
    free(e);
    free(names);
}

static g2f_status open_model(size_t *n_layer, g2f_error *err) {
    g2f_model *m = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_model_open(dir, NULL, &m, err);
    if (st == G2F_OK && n_layer) *n_layer = g2f_model_get_info(m)->n_layer;
    g2f_model_close(m);
    return st;
}

static void config(const char *text) {
    CHECK(write_bytes(in_dir("config.json"), text, strlen(text)) == 0);
}

/* config.json (Limits): at most 1 MiB (CONFIG_MAX_BYTES) */
static void config_should_take_a_file_of_up_to_one_mebibyte(void) {
    checkpoint(1, 0);
    bytes b = {0};
    g2f_error err;
    for (size_t size = 1u << 20; size <= (1u << 20) + 1; size++) {
        b.n = 0;
        b_str(&b, "{\"n_layer\": 1");
        b_fill(&b, ' ', size - b.n - 1);
        b_str(&b, "}");
        CHECK(write_bytes(in_dir("config.json"), b.p, b.n) == 0);
        if (size == 1u << 20) ACCEPTED(open_model(NULL, &err), err);
        else REFUSED(open_model(NULL, &err), err, "bytes, larger than the 1048576-byte limit for this file");
    }
    /* an empty file is read (and is not JSON) */
    CHECK(write_bytes(in_dir("config.json"), "", 0) == 0);
    REFUSED(open_model(NULL, &err), err, "config.json: not a JSON object");
    unlink(in_dir("config.json"));
    b_free(&b);
}

/* config.json (Limits): n_layer, n_embd and n_inner are integers in
 * [1, 10^9] (then they must match the tensors) */
static void config_should_take_sizes_from_one_to_a_billion(void) {
    static const char *const keys[] = {"n_layer", "n_embd", "n_inner"};
    static const char *const values[] = {"0", "1", "1000000000", "1000000001"};
    checkpoint(1, 0); /* n_layer 1, n_embd 1, n_inner 4 */
    g2f_error err;
    for (size_t k = 0; k < 3; k++) {
        for (size_t v = 0; v < 4; v++) {
            char text[96], needle[96];
            snprintf(text, sizeof text, "{\"%s\": %s}", keys[k], values[v]);
            config(text);
            g2f_status st = open_model(NULL, &err);
            snprintf(needle, sizeof needle, "\"%s\" must be a positive integer", keys[k]);
            if (v == 0 || v == 3) {
                REFUSED(st, err, needle);
            } else if (v == 1 && k < 2) {
                ACCEPTED(st, err); /* n_layer 1, n_embd 1: what the tensors hold */
            } else {
                snprintf(needle, sizeof needle, "%s is %s but", keys[k], values[v]);
                PASSES_CHECK(st, err, "must be a positive integer", needle);
            }
        }
    }
    unlink(in_dir("config.json"));
}

/* config.json: layer_norm_epsilon is a number in (0, 1), both ends open */
static void config_should_take_a_layer_norm_epsilon_strictly_between_0_and_1(void) {
    static const char *const values[] = {"0", "1e-300", "0.999", "1", "1.5", "-1e-5"};
    checkpoint(1, 0);
    g2f_error err;
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        char text[96];
        snprintf(text, sizeof text, "{\"layer_norm_epsilon\": %s}", values[v]);
        config(text);
        g2f_status st = open_model(NULL, &err);
        if (v == 1 || v == 2) ACCEPTED(st, err);
        else REFUSED(st, err, "\"layer_norm_epsilon\" must be a number in (0, 1)");
    }
    unlink(in_dir("config.json"));
}

/* checkpoint (Limits): layer indexes below MAX_LAYERS (4096); layers are
 * counted up to the highest index of any FFN tensor, and loaded below it */
static void checkpoint_should_take_layer_indexes_below_4096(void) {
    g2f_error err;
    size_t n_layer = 0;
    checkpoint(4096, 0);
    ACCEPTED(open_model(&n_layer, &err), err);
    CHECK(n_layer == 4096);
    g2f_model *m = NULL;
    if (g2f_model_open(dir, NULL, &m, &err) == G2F_OK) {
        g2f_layer l;
        ACCEPTED(g2f_model_layer_load(m, 4095, &l, &err), err);
        g2f_layer_free(&l);
        REFUSED(g2f_model_layer_load(m, 4096, &l, &err), err, "layer 4096 out of range (model has 4096)");
    }
    g2f_model_close(m);
    checkpoint(1, 4096);
    REFUSED(open_model(NULL, &err), err, "tensor 'h.4096.mlp.c_fc.weight': layer index is 4096 or more");
    /* a top layer holding only c_fc.weight still counts */
    const st_entry e[] = {{"h.0.mlp.c_fc.weight", "F32", 2, {1, 4}, zeros, 16},
                          {"h.0.mlp.c_proj.weight", "F32", 2, {4, 1}, zeros, 16},
                          {"h.1.mlp.c_fc.weight", "F32", 2, {1, 4}, zeros, 16}};
    CHECK(st_write(in_dir("model.safetensors"), NULL, e, 3, 1) == 0);
    REFUSED(open_model(NULL, &err), err, "tensor 'h.1.mlp.c_proj.weight' is missing");
}

/* fixture (Limits): layer indexes in [0, MAX_LAYERS) (4096), in every
 * naming; the accessors answer for layers below the highest and no further */
static void fixture_should_take_layer_indexes_below_4096(void) {
    static const char *const patterns[][2] = {{"h.%d.mlp.in", "h.%d.mlp.out"},
                                              {"transformer.h.%d.mlp.in", "transformer.h.%d.mlp.out"},
                                              {"blocks.%d.ln2.hook_normalized", "blocks.%d.hook_mlp_out"}};
    g2f_error err;
    for (size_t p = 0; p < 3; p++) {
        for (int layer = -1; layer <= 4096; layer += layer == 0 ? 4095 : 1) {
            char in[64], out[64], needle[160];
            snprintf(in, sizeof in, patterns[p][0], layer);
            snprintf(out, sizeof out, patterns[p][1], layer);
            const st_entry e[] = {{in, "F32", 2, {1, 1}, zeros, 4}, {out, "F32", 2, {1, 1}, zeros, 4}};
            CHECK(st_write(in_dir("fixture.safetensors"), NULL, e, 2, 1) == 0);
            g2f_fixture *f = NULL;
            err = (g2f_error){0};
            g2f_status st = g2f_fixture_open(in_dir("fixture.safetensors"), &f, &err);
            snprintf(needle, sizeof needle, "tensor '%s': layer index is 4096 or more", in);
            if (layer >= 0 && layer <= 4095) {
                ACCEPTED(st, err);
                if (st == G2F_OK) {
                    CHECK(g2f_fixture_has_layer(f, (size_t)layer) && g2f_fixture_has_input(f, (size_t)layer));
                    CHECK(g2f_fixture_input(f, (size_t)layer) != NULL);
                    CHECK(!g2f_fixture_has_layer(f, (size_t)layer + 1) && !g2f_fixture_has_input(f, (size_t)layer + 1));
                    CHECK(g2f_fixture_input(f, (size_t)layer + 1) == NULL);
                }
            } else if (layer < 0) {
                REFUSED(st, err, "no fixture tensors"); /* "h.-1.": not a layer index */
            } else {
                REFUSED(st, err, needle);
            }
            g2f_fixture_close(f);
        }
    }
}

/* fixture: a layer L fits a checkpoint of more than L layers, in the check
 * of the whole fixture and in the check of its inputs; 'in' and 'out' end in
 * n_embd, 'pre' and 'act' in n_inner */
static void fixture_should_fit_layers_below_the_checkpoints_count(void) {
    const st_entry e[] = {{"h.3.mlp.in", "F32", 2, {1, 2}, zeros, 8},
                          {"h.3.mlp.out", "F32", 2, {1, 2}, zeros, 8},
                          {"h.3.mlp.pre", "F32", 2, {1, 8}, zeros, 32},
                          {"h.3.mlp.act", "F32", 2, {1, 8}, zeros, 32}};
    CHECK(st_write(in_dir("fixture.safetensors"), NULL, e, 4, 1) == 0);
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    ACCEPTED(g2f_fixture_open(in_dir("fixture.safetensors"), &f, &err), err);
    if (f) {
        ACCEPTED(g2f_fixture_check(f, 4, 2, 8, &err), err);
        REFUSED(g2f_fixture_check(f, 3, 2, 8, &err), err, "has tensors for layer 3 but the checkpoint has 3 layers");
        ACCEPTED(g2f_fixture_check_inputs(f, 4, 2, &err), err);
        REFUSED(g2f_fixture_check_inputs(f, 3, 2, &err), err, "has inputs for layer 3 but the checkpoint has 3 layers");
    }
    g2f_fixture_close(f);
}

int main(void) {
    if (fast_tmpdir(dir, sizeof dir, "bounds_model") != 0) return 1;
    RUN(config_should_take_a_file_of_up_to_one_mebibyte);
    RUN(config_should_take_sizes_from_one_to_a_billion);
    RUN(config_should_take_a_layer_norm_epsilon_strictly_between_0_and_1);
    RUN(checkpoint_should_take_layer_indexes_below_4096);
    RUN(fixture_should_take_layer_indexes_below_4096);
    RUN(fixture_should_fit_layers_below_the_checkpoints_count);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
