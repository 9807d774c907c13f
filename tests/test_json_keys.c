/* JSON read from files (SECURITY.md, "JSON"): no object may hold a key twice
 * (cJSON kept the first, Python's json takes the last: a config.json with
 * "n_layer" twice was read differently by gpt2ffn and by transformers), in
 * every JSON gpt2ffn reads: the safetensors header, shard indexes,
 * config.json and an .npz's __metadata__; a shard index's
 * metadata.total_size must be an integer; the size limit message of
 * config.json and indexes names the real size. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <sys/stat.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_npy.h"
#include "g2f_safetensors.h"
#include "g2f_source.h"
#include "g2f_writer.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void write_text(const char *name, const char *text) {
    char p[512];
    path_in(p, sizeof p, name);
    CHECK(write_bytes(p, text, strlen(text)) == 0);
}

/* A safetensors file with header json (padded to 8) and data bytes. */
static void write_raw_st(const char *name, const char *json, const void *data, size_t n) {
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    unsigned char *b = malloc(8 + padded + n);
    CHECK(b != NULL);
    if (!b) return;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(b + 8, json, len);
    memset(b + 8 + len, ' ', padded - len);
    if (n) memcpy(b + 8 + padded, data, n);
    char p[512];
    path_in(p, sizeof p, name);
    CHECK(write_bytes(p, b, 8 + padded + n) == 0);
    free(b);
}

static g2f_status open_st(const char *name, g2f_error *err) {
    char p[512];
    path_in(p, sizeof p, name);
    g2f_safetensors *st = NULL;
    g2f_status s = g2f_safetensors_open(p, &st, err);
    g2f_safetensors_close(st);
    return s;
}

static void safetensors_should_refuse_a_key_twice_in_any_object(void) {
    static const float four[4] = {1, 2, 3, 4};
    g2f_error err = {0};
    write_raw_st("ok.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", four, 16);
    CHECK(open_st("ok.safetensors", &err) == G2F_OK);
    /* inside a tensor's entry: cJSON took the first dtype, Rust's serde refuses */
    write_raw_st("dtype_twice.safetensors",
                 "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,16]}}", four, 16);
    CHECK(open_st("dtype_twice.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 'a': key \"dtype\" appears twice in its entry");
    write_raw_st("offsets_twice.safetensors",
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"data_offsets\":[0,16]}}", four, 16);
    CHECK(open_st("offsets_twice.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "key \"data_offsets\" appears twice");
    /* in __metadata__: the fixture's gelu claim read one way or the other */
    write_raw_st("meta_twice.safetensors",
                 "{\"__metadata__\":{\"gelu\":\"tanh\",\"gelu\":\"erf\"},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                 four, 16);
    CHECK(open_st("meta_twice.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "__metadata__ key 'gelu' appears twice");
    /* the header's own keys: tensor names and __metadata__, as before */
    write_raw_st("name_twice.safetensors",
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                 four, 16);
    CHECK(open_st("name_twice.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 'a' appears twice in the header");
    write_raw_st("meta_object_twice.safetensors",
                 "{\"__metadata__\":{},\"__metadata__\":{},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                 four, 16);
    CHECK(open_st("meta_object_twice.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "__metadata__ appears twice");
    /* a large entry object (sorted, not pairwise) */
    size_t cap = 1 << 20, len = 0;
    char *j = malloc(cap);
    CHECK(j != NULL);
    if (!j) return;
    len += (size_t)snprintf(j, cap, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]");
    for (int i = 0; i < 5000; i++) len += (size_t)snprintf(j + len, cap - len, ",\"x%d\":0", i);
    len += (size_t)snprintf(j + len, cap - len, ",\"x4321\":1}}");
    write_raw_st("big_entry.safetensors", j, four, 16);
    CHECK(open_st("big_entry.safetensors", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "key \"x4321\" appears twice");
    free(j);
}

/* A one-shard index folder whose shard is the bundled tiny checkpoint. */
static void make_sharded(const char *name, const char *index_json) {
    char p[512], target[4200], abs[4200];
    path_in(p, sizeof p, name);
    mkdir(p, 0700);
    snprintf(target, sizeof target, "%s/tiny/model.safetensors", fixtures);
    CHECK(realpath(target, abs) != NULL);
    char link[600];
    snprintf(link, sizeof link, "%s/model-00001-of-00001.safetensors", p);
    unlink(link);
    CHECK(symlink(abs, link) == 0);
    char idx[600];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", name);
    write_text(idx, index_json);
}

static g2f_status open_source(const char *name, g2f_error *err) {
    char p[512];
    path_in(p, sizeof p, name);
    g2f_source *s = NULL;
    g2f_status st = g2f_source_open(p, &s, err);
    g2f_source_close(s);
    return st;
}

#define SHARD "\"model-00001-of-00001.safetensors\""
#define FC "\"transformer.h.0.mlp.c_fc.weight\""

static void shard_index_should_refuse_keys_twice_and_a_non_integer_total_size(void) {
    g2f_error err = {0};
    make_sharded("ix_ok", "{\"metadata\": {\"total_size\": 65536}, \"weight_map\": {" FC ": " SHARD "}}");
    CHECK(open_source("ix_ok", &err) == G2F_OK);
    struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"metadata\": {\"total_size\": \"65536\"}, \"weight_map\": {" FC ": " SHARD "}}",
         "metadata.total_size is not a non-negative integer"},
        {"{\"metadata\": {\"total_size\": 65536.5}, \"weight_map\": {" FC ": " SHARD "}}",
         "metadata.total_size is not a non-negative integer"},
        {"{\"metadata\": {\"total_size\": -1}, \"weight_map\": {" FC ": " SHARD "}}",
         "metadata.total_size is not a non-negative integer"},
        {"{\"metadata\": {\"total_size\": null}, \"weight_map\": {" FC ": " SHARD "}}",
         "metadata.total_size is not a non-negative integer"},
        {"{\"metadata\": \"65536\", \"weight_map\": {" FC ": " SHARD "}}",
         "\"metadata\" is not an object"},
        {"{\"metadata\": {\"total_size\": 1, \"total_size\": 65536}, \"weight_map\": {" FC ": " SHARD "}}",
         "key \"total_size\" appears twice in one object"},
        {"{\"weight_map\": {}, \"weight_map\": {" FC ": " SHARD "}}",
         "key \"weight_map\" appears twice in one object"},
        {"{\"weight_map\": {" FC ": " SHARD ", " FC ": " SHARD "}}",
         "tensor 'transformer.h.0.mlp.c_fc.weight' appears twice in weight_map"},
        {"{\"metadata\": {\"total_size\": 5}, \"weight_map\": {" FC ": " SHARD "}}",
         "metadata.total_size is 5 but the mapped tensors hold 65536 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "ix_bad%zu", i);
        make_sharded(name, bad[i].json);
        CHECK(open_source(name, &err) == G2F_ERR_FORMAT);
        CHECK_CONTAINS(err.msg, bad[i].msg);
    }
}

/* A folder holding the tiny checkpoint (a symlink) and config.json. */
static g2f_status open_with_config(const char *name, const char *config, g2f_error *err) {
    char p[512], target[4200], abs[4200], link[600], cfg[600];
    path_in(p, sizeof p, name);
    mkdir(p, 0700);
    snprintf(target, sizeof target, "%s/tiny/model.safetensors", fixtures);
    CHECK(realpath(target, abs) != NULL);
    snprintf(link, sizeof link, "%s/model.safetensors", p);
    unlink(link);
    CHECK(symlink(abs, link) == 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", name);
    write_text(cfg, config);
    g2f_model *m = NULL;
    g2f_status s = g2f_model_open(p, NULL, &m, err);
    g2f_model_close(m);
    return s;
}

static void config_should_refuse_a_key_twice(void) {
    g2f_error err = {0};
    CHECK(open_with_config("cfg_ok", "{\"n_layer\": 4, \"n_embd\": 64}", &err) == G2F_OK);
    /* transformers reads n_layer 3 here, gpt2ffn read 4 */
    CHECK(open_with_config("cfg_twice", "{\"n_layer\": 4, \"n_embd\": 64, \"n_layer\": 3}", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "config.json: key \"n_layer\" appears twice in one object");
    CHECK(open_with_config("cfg_act_twice", "{\"activation_function\": \"gelu_new\", \"activation_function\": \"gelu\"}",
                           &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "key \"activation_function\" appears twice");
    CHECK(open_with_config("cfg_nested_twice", "{\"task_specific_params\": {\"a\": {\"x\": 1, \"x\": 2}}}", &err) ==
          G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "key \"x\" appears twice");
    CHECK(open_with_config("cfg_list", "{\"architectures\": [{\"a\": 1}, {\"a\": 1, \"b\": 2, \"a\": 3}]}", &err) ==
          G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "key \"a\" appears twice");
}

static void size_limit_messages_should_name_the_real_size(void) {
    g2f_error err = {0};
    size_t n = (1u << 20) + 1; /* one byte over config.json's limit */
    char *big = malloc(n + 1);
    CHECK(big != NULL);
    if (!big) return;
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    CHECK(open_with_config("cfg_big", big, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "config.json: 1048577 bytes, larger than the 1048576-byte limit"); /* said 0 bytes */
    big[n - 2] = '}';
    big[n - 1] = '\0';
    CHECK(open_with_config("cfg_at_limit", big, &err) == G2F_OK); /* 1048576 bytes: at the limit, read */
    free(big);
}

static void npz_metadata_should_refuse_a_key_twice(void) {
    static const float x[2] = {1, 2};
    g2f_out_spec spec = {"h.0.mlp.in", 2, {1, 2}};
    const g2f_out_meta meta[2] = {{"gelu", "tanh"}, {"gelu", "erf"}};
    char p[512];
    path_in(p, sizeof p, "meta_twice.npz");
    g2f_writer *w = NULL;
    g2f_error err = {0};
    CHECK(g2f_writer_open(p, G2F_OUT_NPZ, &spec, 1, meta, 2, &w, &err) == G2F_OK);
    CHECK(g2f_writer_put(w, x, &err) == G2F_OK);
    CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
    g2f_npz *z = NULL;
    CHECK(g2f_npz_open(p, &z, &err) == G2F_ERR_FORMAT && !z);
    CHECK_CONTAINS(err.msg, "__metadata__: key \"gelu\" appears twice");
    /* one key each: read */
    CHECK(g2f_writer_open(p, G2F_OUT_NPZ, &spec, 1, meta, 1, &w, &err) == G2F_OK);
    CHECK(g2f_writer_put(w, x, &err) == G2F_OK);
    CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
    CHECK(g2f_npz_open(p, &z, &err) == G2F_OK);
    if (z) CHECK(g2f_table_meta(g2f_npz_table(z), "gelu") && !strcmp(g2f_table_meta(g2f_npz_table(z), "gelu"), "tanh"));
    g2f_npz_close(z);
}

/* The .npy header is a Python dict literal, not JSON, but a key twice is
 * just as ambiguous: refused by its own scanner. */
static void npy_header_should_refuse_a_key_twice(void) {
    char h[128];
    int n = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,), }");
    unsigned char b[256];
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)n;
    b[9] = 0;
    memcpy(b + 10, h, (size_t)n);
    memset(b + 10 + n, 0, 4);
    g2f_tensor t;
    g2f_error err = {0};
    CHECK(g2f_npy_parse(b, 10 + (uint64_t)n + 4, "x.npy", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "unexpected or repeated key 'shape'");
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fixtures = argv[1];
    if (make_tmpdir(dir, sizeof dir, "json") != 0) return 1;
    RUN(safetensors_should_refuse_a_key_twice_in_any_object);
    RUN(shard_index_should_refuse_keys_twice_and_a_non_integer_total_size);
    RUN(config_should_refuse_a_key_twice);
    RUN(size_limit_messages_should_name_the_real_size);
    RUN(npz_metadata_should_refuse_a_key_twice);
    RUN(npy_header_should_refuse_a_key_twice);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
