/* g2f_ffn_eval_rows, the FFN the block's chained pass computes: its values
 * are the kernels' own (c_fc by g2f_matmul_sq, the GELU, c_proj), the same
 * bits with or without the variances; each row's values and variances do
 * not depend on the rows computed with it; the variances grow with the
 * input's; ggml's F16 matmul multiplies the rounded input; a LayerNorm with
 * an input variance is refused. fixtures/small, layer 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn_eval.h"
#include "g2f_model.h"

enum { N = 24 };

typedef struct bufs {
    float *pre, *act, *out, *vpre, *vact, *vout;
} bufs;

static float *x, *vx, *block;
static size_t d, h;

static g2f_ffn_rows rows_of(bufs *b, size_t r) {
    g2f_ffn_rows o = {b->pre + r * h, b->act + r * h, b->out + r * d, b->vpre + r * h, b->vact + r * h,
                      b->vout + r * d};
    return o;
}

static void bufs_make(bufs *b, float *p) {
    b->pre = p, b->act = p + N * h, b->vpre = p + 2 * N * h, b->vact = p + 3 * N * h;
    b->out = p + 4 * N * h, b->vout = p + 4 * N * h + N * d;
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static int same_all(const bufs *a, const bufs *b, int var) {
    int v = !var || (same(a->vpre, b->vpre, N * h) && same(a->vact, b->vact, N * h) && same(a->vout, b->vout, N * d));
    return same(a->pre, b->pre, N * h) && same(a->act, b->act, N * h) && same(a->out, b->out, N * d) && v;
}

/* ulp-level input variances: (u x)^2 and some way above */
static void fill(void) {
    uint64_t s = 12345;
    for (size_t i = 0; i < N * d; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 4.0 - 2.0);
        vx[i] = (float)(ldexp(1.0, -48) * x[i] * x[i] * (double)(1 + i % 7));
    }
}

static void values_should_be_the_kernels_own(const g2f_ffn_weights *w, bufs *a, bufs *b, int nt, g2f_ffn_eval_ws *ws) {
    g2f_error err = {0};
    g2f_ffn_how how = {.w = w, .gelu = G2F_GELU_TANH};
    g2f_ffn_rows ra = rows_of(a, 0), rb = rows_of(b, 0);
    CHECK(g2f_ffn_eval_rows(&how, x, vx, N, G2F_TOL_LAMBDA, 0, nt, ws, &ra, &err) == G2F_OK);
    CHECK(g2f_ffn_eval_rows(&how, x, NULL, N, G2F_TOL_LAMBDA, 0, nt, ws, &rb, &err) == G2F_OK);
    CHECK(same_all(a, b, 0)); /* the values alone: the same bits */
    g2f_matmul_sq(x, NULL, N, d, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, h, w->b_fc, b->pre, NULL, nt, NULL);
    g2f_ffn_gelu(G2F_GELU_TANH, b->pre, N * h, b->act, nt);
    g2f_ffn_proj_sq(w, b->act, NULL, N, b->out, NULL, nt, NULL);
    CHECK(same_all(a, b, 0));
    /* ggml's F16 matmul: the products take the rounded input */
    how.gemm_in = G2F_ROUND_F16;
    CHECK(g2f_ffn_eval_rows(&how, x, vx, N, G2F_TOL_LAMBDA, 0, nt, ws, &ra, &err) == G2F_OK);
    float *xr = malloc(N * d * sizeof(float)), *ar = malloc(N * h * sizeof(float));
    g2f_round_span(G2F_ROUND_F16, x, xr, N * d);
    g2f_matmul_sq(xr, NULL, N, d, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, h, w->b_fc, b->pre, NULL, nt, NULL);
    g2f_ffn_gelu(G2F_GELU_TANH, b->pre, N * h, b->act, nt);
    g2f_round_span(G2F_ROUND_F16, b->act, ar, N * h);
    g2f_ffn_proj_sq(w, ar, NULL, N, b->out, NULL, nt, NULL);
    CHECK(same_all(a, b, 0));
    free(xr);
    free(ar);
}

static void rows_should_not_depend_on_their_neighbours(const g2f_ffn_weights *w, g2f_round gemm_in, bufs *a, bufs *b,
                                                       g2f_ffn_eval_ws *ws) {
    g2f_error err = {0};
    g2f_ffn_how how = {.w = w, .gelu = G2F_GELU_TANH, .gemm_in = gemm_in};
    g2f_ffn_rows ra = rows_of(a, 0);
    CHECK(g2f_ffn_eval_rows(&how, x, vx, N, G2F_TOL_LAMBDA, 0, 2, ws, &ra, &err) == G2F_OK);
    for (size_t r = 0; r < N; r++) { /* one row at a time, one thread */
        g2f_ffn_rows rb = rows_of(b, r);
        CHECK(g2f_ffn_eval_rows(&how, x + r * d, vx + r * d, 1, G2F_TOL_LAMBDA, 0, 1, ws, &rb, &err) == G2F_OK);
    }
    CHECK(same_all(a, b, 1));
}

static int all_ge(const float *a, const float *b, size_t n, int *some_gt) {
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        ok &= a[i] >= b[i];
        *some_gt |= a[i] > b[i];
    }
    return ok;
}

static void variances_should_grow_with_the_input_variance(const g2f_ffn_weights *w, bufs *a, bufs *b,
                                                          g2f_ffn_eval_ws *ws) {
    g2f_error err = {0};
    g2f_ffn_how how = {.w = w, .gelu = G2F_GELU_TANH};
    float *zero = calloc(N * d, sizeof(float));
    g2f_ffn_rows ra = rows_of(a, 0), rb = rows_of(b, 0);
    CHECK(g2f_ffn_eval_rows(&how, x, vx, N, G2F_TOL_LAMBDA, 0, 2, ws, &ra, &err) == G2F_OK);
    CHECK(g2f_ffn_eval_rows(&how, x, zero, N, G2F_TOL_LAMBDA, 0, 2, ws, &rb, &err) == G2F_OK);
    int gt_pre = 0, gt_out = 0, gt_act = 0;
    CHECK(all_ge(a->vpre, b->vpre, N * h, &gt_pre) && gt_pre);
    CHECK(all_ge(a->vact, b->vact, N * h, &gt_act) && gt_act);
    CHECK(all_ge(a->vout, b->vout, N * d, &gt_out) && gt_out);
    int pos = 1; /* the rounding of the products themselves: never a zero variance here */
    for (size_t i = 0; i < N * d; i++) pos &= b->vout[i] > 0;
    CHECK(pos);
    free(zero);
}

static void a_layernorm_with_an_input_variance_should_be_refused(const g2f_ffn_weights *w, bufs *a,
                                                                  g2f_ffn_eval_ws *ws) {
    g2f_error err = {0};
    g2f_ln ln = {0};
    ln.eps = 1e-5;
    g2f_ffn_how how = {.w = w, .gelu = G2F_GELU_TANH, .ln = &ln};
    g2f_ffn_rows ra = rows_of(a, 0);
    CHECK(g2f_ffn_eval_rows(&how, x, vx, N, G2F_TOL_LAMBDA, 3, 1, ws, &ra, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "layer 3");
}

int main(int argc, char **argv) {
    const char *fixtures = argc > 1 ? argv[1] : "fixtures";
    char mp[400];
    snprintf(mp, sizeof mp, "%s/small", fixtures);
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_layer lw;
    if (g2f_model_open(mp, NULL, &m, &err) != G2F_OK || g2f_model_layer_load(m, 0, &lw, &err) != G2F_OK) {
        fprintf(stderr, "%s: %s\n", mp, err.msg);
        g2f_model_close(m);
        return 1;
    }
    d = lw.w.n_embd, h = lw.w.n_inner;
    x = malloc(2 * N * d * sizeof(float));
    vx = x + N * d;
    block = malloc(2 * (4 * N * h + 2 * N * d) * sizeof(float));
    bufs a, b;
    bufs_make(&a, block);
    bufs_make(&b, block + 4 * N * h + 2 * N * d);
    fill();
    g2f_ffn_eval_ws ws = {0};
    values_should_be_the_kernels_own(&lw.w, &a, &b, 2, &ws);
    rows_should_not_depend_on_their_neighbours(&lw.w, G2F_ROUND_NONE, &a, &b, &ws);
    rows_should_not_depend_on_their_neighbours(&lw.w, G2F_ROUND_F16, &a, &b, &ws);
    variances_should_grow_with_the_input_variance(&lw.w, &a, &b, &ws);
    a_layernorm_with_an_input_variance_should_be_refused(&lw.w, &a, &ws);
    g2f_ffn_eval_ws_free(&ws);
    free(block);
    free(x);
    g2f_layer_free(&lw);
    g2f_model_close(m);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
