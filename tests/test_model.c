/* GPT-2 FFN discovery: names, prefixes, layouts, biases, dtypes, config.json
 * cross-checks, and the parameter count from loaded shapes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_model.h"
#include "test_util.h"
#include <sys/stat.h>

static char dir[256];

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* Writes a one- or two-layer checkpoint with the given names and shapes.
 * Conv1D: c_fc (d, h); Linear: c_fc (h, d). Values are i * 0.001. */
static int write_model(const char *file, const char *prefix, size_t layers, size_t d, size_t h, int linear,
                       int biases, const char *dtype, int pad, int with_ln) {
    size_t esz = !strcmp(dtype, "F64") ? 8 : !strcmp(dtype, "F32") ? 4 : 2;
    size_t n = 0;
    st_entry e[16];
    char names[16][64];
    void *bufs[16];
    for (size_t L = 0; L < layers; L++) {
        const char *suffix[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
        for (int k = 0; k < 4; k++) {
            if (!biases && (k == 1 || k == 3)) continue;
            snprintf(names[n], 64, "%sh.%zu.mlp.%s", prefix, L, suffix[k]);
            size_t count = k == 0 || k == 2 ? d * h : k == 1 ? h : d;
            unsigned char *b = calloc(count, esz);
            for (size_t i = 0; i < count; i++) {
                float v = (float)((i % 1000) * 0.001 + L);
                if (esz == 4) memcpy(b + 4 * i, &v, 4);
                else if (esz == 8) { double dv = v; memcpy(b + 8 * i, &dv, 8); }
                else { uint16_t hv = !strcmp(dtype, "F16") ? g2f_f32_to_f16(v) : g2f_f32_to_bf16(v); memcpy(b + 2 * i, &hv, 2); }
            }
            bufs[n] = b;
            e[n] = (st_entry){names[n], dtype, k == 0 || k == 2 ? 2u : 1u, {0}, b, count * esz};
            if (k == 0) { e[n].shape[0] = linear ? h : d; e[n].shape[1] = linear ? d : h; }
            else if (k == 2) { e[n].shape[0] = linear ? d : h; e[n].shape[1] = linear ? h : d; }
            else e[n].shape[0] = count;
            n++;
        }
    }
    float ln[4096];
    if (with_ln) {
        memset(ln, 0, sizeof ln);
        snprintf(names[n], 64, "%sh.0.ln_2.weight", prefix);
        bufs[n] = NULL;
        e[n++] = (st_entry){names[n - 1], "F32", 1, {d}, ln, d * 4};
    }
    char path[400];
    path_in(path, sizeof path, file);
    int rc = st_write(path, "{\"format\":\"pt\"}", e, n, pad);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    return rc;
}

static void write_text(const char *name, const char *text) {
    char path[400];
    path_in(path, sizeof path, name);
    write_bytes(path, text, strlen(text));
}

static g2f_status open_model(const char *name, g2f_model **m, g2f_error *err) {
    char path[400];
    path_in(path, sizeof path, name);
    return g2f_model_open(path, NULL, m, err);
}

static void model_should_count_ffn_parameters_of_gpt2_small(void) {
    /* d = 768: 8 d^2 + 5 d = 4,722,432 parameters per layer */
    CHECK(write_model("small.safetensors", "transformer.", 1, 768, 3072, 0, 1, "F32", 1, 0) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(open_model("small.safetensors", &m, &err) == G2F_OK);
    if (!m) { fprintf(stderr, "%s\n", err.msg); return; }
    const g2f_model_info *in = g2f_model_get_info(m);
    CHECK(in->n_embd == 768 && in->n_inner == 3072 && in->n_layer == 1);
    CHECK(in->layout == G2F_LAYOUT_CONV1D);
    CHECK(g2f_model_ffn_params(m) == 4722432);
    CHECK(strcmp(in->prefix, "transformer.") == 0);
    g2f_layer l;
    CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
    CHECK(l.owned == NULL); /* aligned F32 is used in place */
    CHECK(l.w.w_fc[999] == 0.999f);
    g2f_layer_free(&l);
    g2f_model_close(m);
}

static void model_should_decide_layout_from_shapes(void) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(write_model("lin.safetensors", "", 2, 8, 32, 1, 1, "F32", 1, 0) == 0);
    CHECK(open_model("lin.safetensors", &m, &err) == G2F_OK);
    if (m) {
        const g2f_model_info *in = g2f_model_get_info(m);
        CHECK(in->layout == G2F_LAYOUT_LINEAR && in->n_embd == 8 && in->n_inner == 32 && in->n_layer == 2);
        CHECK_CONTAINS(in->layout_source, "n_inner = 4 n_embd");
    }
    g2f_model_close(m);
    /* n_inner == n_embd: only the convention can decide, and it says so */
    CHECK(write_model("square.safetensors", "", 1, 8, 8, 0, 1, "F32", 1, 0) == 0);
    CHECK(open_model("square.safetensors", &m, &err) == G2F_OK);
    if (m) CHECK_CONTAINS(g2f_model_get_info(m)->layout_source, "cannot tell");
    g2f_model_close(m);
    /* ln_2.weight gives n_embd, so n_inner 3 n_embd in Linear layout is recognised */
    CHECK(write_model("lin3.safetensors", "", 1, 8, 24, 1, 1, "F32", 1, 1) == 0);
    CHECK(open_model("lin3.safetensors", &m, &err) == G2F_OK);
    if (m) CHECK(g2f_model_get_info(m)->layout == G2F_LAYOUT_LINEAR && g2f_model_get_info(m)->n_inner == 24);
    g2f_model_close(m);
}

static void model_should_convert_half_and_unaligned_weights(void) {
    const char *dtypes[] = {"F16", "BF16", "F64", "F32"};
    for (int i = 0; i < 4; i++) {
        g2f_model *m = NULL;
        g2f_error err = {0};
        /* unpadded header: the F32 case is unaligned and must be realigned */
        CHECK(write_model("half.safetensors", "", 1, 8, 32, 0, 1, dtypes[i], 0, 0) == 0);
        CHECK(open_model("half.safetensors", &m, &err) == G2F_OK);
        if (!m) continue;
        g2f_layer l;
        CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
        CHECK_NEAR(l.w.w_fc[100], 0.1, 1e-3);
        CHECK_NEAR(l.w.b_proj[5], 0.005, 1e-4);
        g2f_layer_free(&l);
        g2f_model_close(m);
    }
}

static void model_should_accept_missing_biases_everywhere_but_not_in_some_layers(void) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(write_model("nobias.safetensors", "", 2, 8, 32, 0, 0, "F32", 1, 0) == 0);
    CHECK(open_model("nobias.safetensors", &m, &err) == G2F_OK);
    if (m) {
        CHECK(!g2f_model_get_info(m)->has_fc_bias && !g2f_model_get_info(m)->has_proj_bias);
        CHECK(g2f_model_ffn_params(m) == 2 * 8 * 32);
    }
    g2f_model_close(m);
}

static void model_should_cross_check_config(void) {
    char sub[400];
    path_in(sub, sizeof sub, "withcfg");
    mkdir(sub, 0700);
    CHECK(write_model("withcfg/model.safetensors", "transformer.", 2, 8, 32, 0, 1, "F32", 1, 0) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    write_text("withcfg/config.json", "{\"n_layer\": 2, \"n_embd\": 8, \"n_inner\": null, \"activation_function\": \"gelu\"}");
    CHECK(open_model("withcfg", &m, &err) == G2F_OK); /* a folder works too */
    if (m) {
        CHECK(g2f_model_get_info(m)->config_has_gelu && g2f_model_get_info(m)->config_gelu == G2F_GELU_ERF);
        CHECK_CONTAINS(g2f_model_get_info(m)->config_path, "config.json");
    }
    g2f_model_close(m);
    m = NULL;
    write_text("withcfg/config.json", "{\"n_layer\": 3, \"n_embd\": 8}");
    CHECK(open_model("withcfg", &m, &err) == G2F_ERR_FORMAT && !m);
    CHECK_CONTAINS(err.msg, "n_layer is 3 but");
    write_text("withcfg/config.json", "{\"n_embd\": 8, \"n_inner\": 64}");
    CHECK(open_model("withcfg", &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "n_inner is 64");
    write_text("withcfg/config.json", "{\"activation_function\": \"relu\"}");
    CHECK(open_model("withcfg", &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "\"relu\" is not a GELU");
    write_text("withcfg/config.json", "{\"n_embd\": ");
    CHECK(open_model("withcfg", &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "config.json: not a JSON object");
    /* n_head must divide n_embd (8): 1, 2, 4, 8 and nothing else */
    for (int h = 1; h <= 16; h++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "{\"n_embd\": 8, \"n_head\": %d}", h);
        write_text("withcfg/config.json", cfg);
        m = NULL;
        g2f_status st = open_model("withcfg", &m, &err);
        if (h == 1 || h == 2 || h == 4 || h == 8) {
            CHECK(st == G2F_OK && m && g2f_model_get_info(m)->n_head == (size_t)h);
        } else {
            CHECK(st == G2F_ERR_FORMAT);
            CHECK_CONTAINS(err.msg, "does not divide n_embd 8");
        }
        g2f_model_close(m);
    }
    m = NULL;
    g2f_gelu g;
    CHECK(g2f_activation_to_gelu("gelu_new", &g) && g == G2F_GELU_TANH);
    CHECK(g2f_activation_to_gelu("gelu_pytorch_tanh", &g) && g == G2F_GELU_TANH);
    CHECK(g2f_activation_to_gelu("gelu_fast", &g) && g == G2F_GELU_TANH);
    CHECK(g2f_activation_to_gelu("gelu", &g) && g == G2F_GELU_ERF);
}

static void model_should_name_missing_or_inconsistent_tensors(void) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    char path[400];
    /* layer 1 has c_fc.weight but no c_proj.weight */
    float w[8 * 32] = {0}, b[32] = {0};
    st_entry e[3] = {{"h.0.mlp.c_fc.weight", "F32", 2, {8, 32}, w, sizeof w},
                     {"h.0.mlp.c_proj.weight", "F32", 2, {32, 8}, w, sizeof w},
                     {"h.1.mlp.c_fc.weight", "F32", 2, {8, 32}, w, sizeof w}};
    path_in(path, sizeof path, "missing.safetensors");
    CHECK(st_write(path, NULL, e, 3, 1) == 0);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "'h.1.mlp.c_proj.weight' is missing");
    st_entry e2[3] = {{"h.0.mlp.c_fc.weight", "F32", 2, {8, 32}, w, sizeof w},
                      {"h.0.mlp.c_proj.weight", "F32", 2, {8, 32}, w, sizeof w},
                      {"h.0.mlp.c_fc.bias", "F32", 1, {32}, b, sizeof b}};
    CHECK(st_write(path, NULL, e2, 3, 1) == 0);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "not transposes of each other");
    st_entry e3[2] = {{"h.0.mlp.c_fc.weight", "I32", 2, {8, 32}, w, sizeof w},
                      {"h.0.mlp.c_proj.weight", "F32", 2, {32, 8}, w, sizeof w}};
    CHECK(st_write(path, NULL, e3, 2, 1) == 0);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "dtype I32");
    st_entry e4[1] = {{"wte.weight", "F32", 2, {8, 32}, w, sizeof w}};
    CHECK(st_write(path, NULL, e4, 1, 1) == 0);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "no GPT-2 FFN tensors");
    CHECK(m == NULL);
    path_in(path, sizeof path, "emptydir");
    mkdir(path, 0700);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "holds none of model.safetensors");
}

/* Writes one layer named with a given scheme, Linear or Conv1D. */
static int write_named(const char *file, const char *fmt_w1, const char *fmt_b1, const char *fmt_w2, const char *fmt_b2,
                       int linear) {
    static float w[8 * 32], b1[32], b2[8];
    for (int i = 0; i < 8 * 32; i++) w[i] = (float)i;
    st_entry e[4] = {{fmt_w1, "F32", 2, {linear ? 32u : 8u, linear ? 8u : 32u}, w, sizeof w},
                     {fmt_b1, "F32", 1, {32}, b1, sizeof b1},
                     {fmt_w2, "F32", 2, {linear ? 8u : 32u, linear ? 32u : 8u}, w, sizeof w},
                     {fmt_b2, "F32", 1, {8}, b2, sizeof b2}};
    char path[400];
    path_in(path, sizeof path, file);
    return st_write(path, NULL, e, 4, 1);
}

static void model_should_recognise_every_naming_scheme(void) {
    struct {
        const char *names[4];
        int linear;
        const char *naming, *prefix;
    } cases[] = {
        {{"model._orig_mod.transformer.h.0.mlp.c_fc.weight", "model._orig_mod.transformer.h.0.mlp.c_fc.bias",
          "model._orig_mod.transformer.h.0.mlp.c_proj.weight", "model._orig_mod.transformer.h.0.mlp.c_proj.bias"},
         1, "HF GPT-2", "model._orig_mod.transformer."},
        {{"model_state.blocks.0.mlp.c_fc.weight", "model_state.blocks.0.mlp.c_fc.bias",
          "model_state.blocks.0.mlp.c_proj.weight", "model_state.blocks.0.mlp.c_proj.bias"},
         1, "minGPT", "model_state."},
        {{"blocks.0.mlp.W_in", "blocks.0.mlp.b_in", "blocks.0.mlp.W_out", "blocks.0.mlp.b_out"}, 0, "TransformerLens", ""},
        {{"blk.0.ffn_up.weight", "blk.0.ffn_up.bias", "blk.0.ffn_down.weight", "blk.0.ffn_down.bias"}, 1, "GGUF", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(write_named("named.safetensors", cases[i].names[0], cases[i].names[1], cases[i].names[2],
                          cases[i].names[3], cases[i].linear) == 0);
        g2f_model *m = NULL;
        g2f_error err = {0};
        CHECK(open_model("named.safetensors", &m, &err) == G2F_OK);
        if (!m) { fprintf(stderr, "case %zu: %s\n", i, err.msg); continue; }
        const g2f_model_info *in = g2f_model_get_info(m);
        CHECK_CONTAINS(in->naming, cases[i].naming);
        CHECK(strcmp(in->prefix, cases[i].prefix) == 0);
        CHECK(in->layout == (cases[i].linear ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D));
        CHECK(in->n_embd == 8 && in->n_inner == 32 && in->n_layer == 1);
        g2f_model_close(m);
    }
    /* two different sets of FFN tensors in one file is an error, not a guess */
    CHECK(write_named("two.safetensors", "h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.bias", "blocks.0.mlp.c_proj.weight",
                      "blocks.0.mlp.c_proj.bias", 0) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(open_model("two.safetensors", &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "two sets of FFN tensors");
}

static void model_should_read_sharded_safetensors(void) {
    char sub[400];
    path_in(sub, sizeof sub, "sharded");
    mkdir(sub, 0700);
    static float w[8 * 32], b1[32], b2[8];
    for (int i = 0; i < 8 * 32; i++) w[i] = (float)i * 0.5f;
    st_entry s1[2] = {{"h.0.mlp.c_fc.weight", "F32", 2, {8, 32}, w, sizeof w}, {"h.0.mlp.c_fc.bias", "F32", 1, {32}, b1, sizeof b1}};
    st_entry s2[2] = {{"h.0.mlp.c_proj.weight", "F32", 2, {32, 8}, w, sizeof w}, {"h.0.mlp.c_proj.bias", "F32", 1, {8}, b2, sizeof b2}};
    char p[400];
    path_in(p, sizeof p, "sharded/model-00001-of-00002.safetensors");
    CHECK(st_write(p, NULL, s1, 2, 1) == 0);
    path_in(p, sizeof p, "sharded/model-00002-of-00002.safetensors");
    CHECK(st_write(p, NULL, s2, 2, 1) == 0);
    const char *good = "{\"metadata\": {\"total_size\": 2208}, \"weight_map\": {"
                       "\"h.0.mlp.c_fc.weight\": \"model-00001-of-00002.safetensors\","
                       "\"h.0.mlp.c_fc.bias\": \"model-00001-of-00002.safetensors\","
                       "\"h.0.mlp.c_proj.weight\": \"model-00002-of-00002.safetensors\","
                       "\"h.0.mlp.c_proj.bias\": \"model-00002-of-00002.safetensors\"}}";
    write_text("sharded/model.safetensors.index.json", good);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(open_model("sharded", &m, &err) == G2F_OK);
    if (m) {
        CHECK_CONTAINS(g2f_model_get_info(m)->format, "2 shards");
        g2f_layer l;
        CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
        CHECK(l.w.w_proj[3] == 1.5f);
        g2f_layer_free(&l);
        g2f_model_close(m);
    }
    struct { const char *json, *msg; } bad[] = {
        {"{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"model-00002-of-00002.safetensors\"}}", "that shard does not hold it"},
        {"{\"metadata\": {\"total_size\": 5}, \"weight_map\": {\"h.0.mlp.c_fc.weight\": \"model-00001-of-00002.safetensors\"}}", "total_size is 5"},
        {"{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"../model-00001-of-00002.safetensors\"}}", "not a plain file name"},
        {"{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"missing.safetensors\"}}", "missing.safetensors: cannot open"},
        {"{\"weight_map\": [1]}", "not a shard index"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text("sharded/model.safetensors.index.json", bad[i].json);
        m = NULL;
        CHECK(open_model("sharded/model.safetensors.index.json", &m, &err) != G2F_OK && !m);
        CHECK_CONTAINS(err.msg, bad[i].msg);
    }
    /* a shard's tensor the index leaves out is held too (a whole-shard loader reads it); a second
     * copy of a mapped one, whichever a loader would keep, is refused */
    static float head[8];
    st_entry s2x[3] = {s2[0], s2[1], {"score.weight", "F32", 1, {8}, head, sizeof head}};
    path_in(p, sizeof p, "sharded/model-00002-of-00002.safetensors");
    CHECK(st_write(p, NULL, s2x, 3, 1) == 0);
    write_text("sharded/model.safetensors.index.json", good);
    m = NULL;
    CHECK(open_model("sharded", &m, &err) == G2F_OK);
    size_t n_others = 0;
    g2f_model_other *o = NULL;
    if (m) CHECK(g2f_model_others(m, &o, &n_others, &err) == G2F_OK && n_others == 1 && !strcmp(o[0].key, "score.weight"));
    free(o);
    g2f_model_close(m);
    st_entry s2d[3] = {s2[0], s2[1], {"h.0.mlp.c_fc.bias", "F32", 1, {32}, b1, sizeof b1}};
    CHECK(st_write(p, NULL, s2d, 3, 1) == 0);
    m = NULL;
    CHECK(open_model("sharded", &m, &err) != G2F_OK && !m);
    CHECK_CONTAINS(err.msg, "tensor 'h.0.mlp.c_fc.bias' is in the shards twice, once where weight_map does not list it");
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "model") != 0) return 1;
    RUN(model_should_count_ffn_parameters_of_gpt2_small);
    RUN(model_should_decide_layout_from_shapes);
    RUN(model_should_convert_half_and_unaligned_weights);
    RUN(model_should_accept_missing_biases_everywhere_but_not_in_some_layers);
    RUN(model_should_cross_check_config);
    RUN(model_should_name_missing_or_inconsistent_tensors);
    RUN(model_should_recognise_every_naming_scheme);
    RUN(model_should_read_sharded_safetensors);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
