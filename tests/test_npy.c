/* NumPy readers: .npy headers (every rule, corrupt cases built here), .npz
 * stored and deflated, folders of .npy, and verify on each fixture form. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_npy.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures;

/* Builds a v1 .npy image: header text padded to 64 bytes, then data_len bytes. */
static size_t npy_image(unsigned char *buf, const char *header, size_t data_len) {
    size_t h = strlen(header), total = 10 + h + 1;
    size_t pad = (64 - total % 64) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t hl = h + pad + 1;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, header, h);
    memset(buf + 10 + h, ' ', pad);
    buf[10 + h + pad] = '\n';
    memset(buf + 10 + hl, 0, data_len);
    return 10 + hl + data_len;
}

static void npy_should_parse_numpy_headers(void) {
    unsigned char buf[4096];
    size_t n = npy_image(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    g2f_tensor t;
    g2f_error err = {0};
    CHECK(g2f_npy_parse(buf, n, "a.npy", &t, &err) == G2F_OK);
    CHECK(t.dtype == G2F_DTYPE_F32 && t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 3 && t.nbytes == 24);
    n = npy_image(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 40);
    CHECK(g2f_npy_parse(buf, n, "a.npy", &t, &err) == G2F_OK && t.ndim == 1 && t.dtype == G2F_DTYPE_F64);
    n = npy_image(buf, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", 2);
    CHECK(g2f_npy_parse(buf, n, "a.npy", &t, &err) == G2F_OK && t.ndim == 0 && t.numel == 1);
    n = npy_image(buf, "{'shape': (1,), 'fortran_order': True, 'descr': '|u1'}", 1); /* any key order; 1-D Fortran is C */
    CHECK(g2f_npy_parse(buf, n, "a.npy", &t, &err) == G2F_OK && t.dtype == G2F_DTYPE_U8);
}

static void npy_should_reject_each_fault(void) {
    struct { const char *header; size_t data; const char *msg; } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "promises 6 x 4 bytes but 20 follow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28, "but 28 follow"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "dtype '>f4' is not supported"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "dtype '<c8'"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16, "Fortran order"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4, "structured arrays"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "unexpected or repeated key 'x'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8, "repeated key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False}", 0, "exactly descr, fortran_order and shape"},
        {"{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,)}", 8, "not True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 8, "non-negative integers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 8, "non-negative integers"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 8, "element count overflows"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 8, "promises"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4, "at most 8"},
        {"['descr']", 0, "not a dict literal"},
    };
    unsigned char buf[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = npy_image(buf, cases[i].header, cases[i].data);
        g2f_tensor t;
        g2f_error err = {0};
        g2f_status s = g2f_npy_parse(buf, n, "bad.npy", &t, &err);
        if (s != G2F_ERR_FORMAT || !strstr(err.msg, cases[i].msg) || !strstr(err.msg, "bad.npy")) {
            fprintf(stderr, "case %zu: status %d, \"%s\", wanted \"%s\"\n", i, s, err.msg, cases[i].msg);
            check_failures++;
        }
    }
    g2f_tensor t;
    g2f_error err = {0};
    CHECK(g2f_npy_parse((const unsigned char *)"\x93NUMPX\x01\x00\x00\x00", 10, "bad.npy", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "no \\x93NUMPY magic");
    CHECK(g2f_npy_parse((const unsigned char *)"\x93NUMPY\x04\x00\x00\x00", 10, "bad.npy", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "version 4.0");
    CHECK(g2f_npy_parse((const unsigned char *)"\x93NUMPY\x01\x00\xff\x00{", 11, "bad.npy", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "runs past the end");
}

static void npz_should_read_stored_deflated_and_folders_alike(void) {
    const char *files[] = {"npz/tiny_tanh.npz", "npz/tiny_tanh_compressed.npz", "npz/tiny_tanh_npy"};
    float first[3] = {0};
    for (int i = 0; i < 3; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", fixtures, files[i]);
        g2f_npz *z = NULL;
        g2f_error err = {0};
        CHECK(g2f_npz_open(path, &z, &err) == G2F_OK);
        if (!z) { fprintf(stderr, "%s\n", err.msg); continue; }
        const g2f_table *t = g2f_npz_table(z);
        CHECK(t->count == 16);
        const g2f_tensor *x = g2f_table_find(t, "h.2.mlp.out");
        CHECK(x && x->ndim == 3 && x->shape[2] == 64 && x->dtype == G2F_DTYPE_F32);
        if (x) g2f_tensor_read_f32(x, 5, 1, &first[i]);
        g2f_npz_close(z);
    }
    CHECK(first[0] == first[1] && first[1] == first[2] && first[0] != 0);
}

static void verify_should_accept_every_numpy_fixture_form(void) {
    const char *files[] = {"npz/tiny_tanh.npz", "npz/tiny_tanh_compressed.npz", "npz/tiny_tanh_npy",
                           "npz/tiny_tanh_tlens.npz", "npz/tiny_tanh_f64.npz"};
    for (int i = 0; i < 5; i++) {
        char model[400], path[400];
        snprintf(model, sizeof model, "%s/tiny", fixtures);
        snprintf(path, sizeof path, "%s/%s", fixtures, files[i]);
        g2f_model *m = NULL;
        g2f_fixture *f = NULL;
        g2f_error err = {0};
        g2f_verify_result res = {0};
        g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .select = NULL, .tol = {0, 0, 0, G2F_TOL_LAMBDA}, .n_threads = 1};
        int ok = g2f_model_open(model, NULL, &m, &err) == G2F_OK && g2f_fixture_open(path, &f, &err) == G2F_OK &&
                 g2f_verify_run(m, f, &p, &res, &err) == G2F_OK;
        if (!ok) fprintf(stderr, "%s: %s\n", files[i], err.msg);
        CHECK(ok && res.pass && res.compared == 4);
        if (ok && i == 4) CHECK(g2f_fixture_dtype(f) == G2F_DTYPE_F64);
        g2f_verify_result_free(&res);
        g2f_fixture_close(f);
        g2f_model_close(m);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    fixtures = argv[1];
    RUN(npy_should_parse_numpy_headers);
    RUN(npy_should_reject_each_fault);
    RUN(npz_should_read_stored_deflated_and_folders_alike);
    RUN(verify_should_accept_every_numpy_fixture_form);
    CHECK_EXIT();
}
