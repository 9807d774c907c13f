/* FFN kernels: the worked example, layouts, position-wise behaviour, agreement
 * with the double reference, and bitwise determinism across thread counts. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn.h"
#include "test_util.h"

static void ffn_should_reproduce_worked_example(void) {
    /* W1 rows are hidden units (Linear [out, in]); W2 reads hidden units 0 and 1. */
    const float w1_lin[8] = {1, 0, 0, 1, 1, 1, 1, -1};
    const float w2_lin[8] = {1, 0, 0, 0, 0, 1, 0, 0}; /* (n_embd 2, n_inner 4) */
    float w1_conv[8], w2_conv[8];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++) {
            w1_conv[i * 4 + k] = w1_lin[k * 2 + i];
            w2_conv[k * 2 + i] = w2_lin[i * 4 + k];
        }
    const float x[2] = {1, -2};
    g2f_ffn_weights ws[2] = {{2, 4, G2F_LAYOUT_LINEAR, G2F_LAYOUT_LINEAR, w1_lin, NULL, w2_lin, NULL},
                             {2, 4, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, w1_conv, NULL, w2_conv, NULL}};
    for (int l = 0; l < 2; l++) {
        float pre[4], act[4], out[2], out_ref[2];
        g2f_ffn_forward(&ws[l], x, 1, G2F_GELU_TANH, pre, act, out, 1, NULL);
        CHECK_NEAR(out[0], 0.8412, 5e-5);
        CHECK_NEAR(out[1], -0.0454, 5e-5);
        CHECK_NEAR(pre[2], -1.0, 0);
        CHECK_NEAR(pre[3], 3.0, 0);
        CHECK(g2f_ffn_forward_ref(&ws[l], x, 1, G2F_GELU_TANH, NULL, NULL, out_ref, NULL) == G2F_OK);
        CHECK_NEAR(out_ref[0], out[0], 1e-6);
        CHECK_NEAR(out_ref[1], out[1], 1e-6);
    }
}

typedef struct rand_ffn {
    size_t d, h;
    float *w1, *b1, *w2, *b2;
    g2f_ffn_weights w;
} rand_ffn;

static void rand_ffn_init(rand_ffn *r, size_t d, size_t h, g2f_layout layout, uint64_t seed) {
    r->d = d;
    r->h = h;
    r->w1 = malloc(d * h * sizeof(float));
    r->w2 = malloc(d * h * sizeof(float));
    r->b1 = malloc(h * sizeof(float));
    r->b2 = malloc(d * sizeof(float));
    for (size_t i = 0; i < d * h; i++) r->w1[i] = rnd_unit(&seed) * 0.25f;
    for (size_t i = 0; i < d * h; i++) r->w2[i] = rnd_unit(&seed) * 0.1f;
    for (size_t i = 0; i < h; i++) r->b1[i] = rnd_unit(&seed) * 0.3f;
    for (size_t i = 0; i < d; i++) r->b2[i] = rnd_unit(&seed) * 0.1f;
    r->w = (g2f_ffn_weights){d, h, layout, layout, r->w1, r->b1, r->w2, r->b2};
}

static void rand_ffn_free(rand_ffn *r) {
    free(r->w1); free(r->w2); free(r->b1); free(r->b2);
}

static void ffn_should_be_position_wise(void) {
    rand_ffn r;
    rand_ffn_init(&r, 48, 192, G2F_LAYOUT_CONV1D, 7);
    size_t T = 9;
    uint64_t s = 3;
    float *x = malloc(T * 48 * sizeof(float)), *pre = malloc(T * 192 * sizeof(float)),
          *act = malloc(T * 192 * sizeof(float)), *o1 = malloc(T * 48 * sizeof(float)),
          *o2 = malloc(T * 48 * sizeof(float));
    for (size_t i = 0; i < T * 48; i++) x[i] = rnd_unit(&s) * 2;
    g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, act, o1, 2, NULL);
    for (size_t i = 0; i < 48; i++) x[i] += 1.0f; /* change token 0 only */
    g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, act, o2, 2, NULL);
    CHECK(memcmp(o1 + 48, o2 + 48, (T - 1) * 48 * sizeof(float)) == 0);
    CHECK(memcmp(o1, o2, 48 * sizeof(float)) != 0);
    free(x); free(pre); free(act); free(o1); free(o2);
    rand_ffn_free(&r);
}

/* Odd sizes cross every block edge of the kernel: 6 x 16 tiles, the 8 x 8
 * packing transposes and their tails, depth blocks of 256 (k 300, 384). */
static void ffn_should_agree_with_reference_and_be_thread_count_independent(void) {
    /* {1, 70, 301}: one token (the GEMV path) with k and n off its 8-row and
     * 16-column steps */
    const size_t shapes[][3] = {{1, 8, 32}, {1, 70, 301}, {37, 70, 300}, {130, 96, 384}, {5, 33, 17}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t T = shapes[si][0], d = shapes[si][1], h = shapes[si][2];
        for (int layout = 0; layout < G2F_LAYOUT_COUNT; layout++) {
            rand_ffn r;
            rand_ffn_init(&r, d, h, (g2f_layout)layout, 11 + si);
            uint64_t s = 5 + si;
            float *x = malloc(T * d * sizeof(float));
            float *pre = malloc(T * h * sizeof(float)), *act = malloc(T * h * sizeof(float));
            float *o1 = malloc(T * d * sizeof(float)), *o2 = malloc(T * d * sizeof(float)),
                  *oref = malloc(T * d * sizeof(float));
            float *p2 = malloc(T * h * sizeof(float)), *a2 = malloc(T * h * sizeof(float));
            for (size_t i = 0; i < T * d; i++) x[i] = rnd_unit(&s) * 1.5f;
            for (int g = 0; g < G2F_GELU_COUNT; g++) {
                g2f_ffn_forward(&r.w, x, T, (g2f_gelu)g, pre, act, o1, 1, NULL);
                g2f_ffn_forward(&r.w, x, T, (g2f_gelu)g, p2, a2, o2, 2, NULL);
                CHECK(memcmp(o1, o2, T * d * sizeof(float)) == 0);
                CHECK(memcmp(pre, p2, T * h * sizeof(float)) == 0);
                CHECK(memcmp(act, a2, T * h * sizeof(float)) == 0);
                for (size_t i = 0; i < T * h; i++) /* the fused epilogue or the separate pass: g2f_ffn_gelu */
                    if (act[i] != g2f_gelu_eval((g2f_gelu)g, pre[i])) {
                        CHECK(act[i] == g2f_gelu_eval((g2f_gelu)g, pre[i]));
                        break;
                    }
                if (g == G2F_GELU_F16_TABLE) {
                    /* the reference's act is the table of its own pre */
                    CHECK(g2f_ffn_forward_ref(&r.w, x, T, (g2f_gelu)g, p2, a2, oref, NULL) == G2F_OK);
                    for (size_t i = 0; i < T * h; i++)
                        if (a2[i] != g2f_gelu_f16_table(p2[i])) {
                            CHECK(a2[i] == g2f_gelu_f16_table(p2[i]));
                            break;
                        }
                    /* A step function: where the fast pre and the reference's sit on
                     * two sides of a half-way point between halves (about 1 element
                     * in 500 here), act moves by an f16 ulp, 5e-4 of it, and out by
                     * that times a weight. So the reference is fed the fast act
                     * (act itself was checked above): c_proj alone, in double. */
                    for (size_t t = 0; t < T; t++)
                        for (size_t j = 0; j < d; j++) {
                            double acc = r.b2[j];
                            for (size_t u = 0; u < h; u++)
                                acc += (double)act[t * h + u] *
                                       (layout == G2F_LAYOUT_LINEAR ? r.w2[j * h + u] : r.w2[u * d + j]);
                            oref[t * d + j] = (float)acc;
                        }
                } else {
                    CHECK(g2f_ffn_forward_ref(&r.w, x, T, (g2f_gelu)g, NULL, NULL, oref, NULL) == G2F_OK);
                }
                double worst = 0;
                for (size_t i = 0; i < T * d; i++) {
                    double e = fabs((double)o1[i] - oref[i]);
                    if (e > worst) worst = e;
                }
                /* fp32 against double over a few hundred terms of size ~0.1 */
                CHECK(worst < 2e-5);
            }
            free(x); free(pre); free(act); free(o1); free(o2); free(oref); free(p2); free(a2);
            rand_ffn_free(&r);
        }
    }
}

/* A token's output does not depend on which other tokens share its batch
 * (from 2 tokens up; one token takes the matrix-vector path). */
static void ffn_should_not_depend_on_the_batch_size(void) {
    rand_ffn r;
    rand_ffn_init(&r, 96, 384, G2F_LAYOUT_CONV1D, 21);
    size_t T = 200;
    uint64_t s = 9;
    float *x = malloc(T * 96 * sizeof(float)), *pre = malloc(T * 384 * sizeof(float)),
          *act = malloc(T * 384 * sizeof(float)), *all = malloc(T * 96 * sizeof(float)),
          *some = malloc(T * 96 * sizeof(float));
    for (size_t i = 0; i < T * 96; i++) x[i] = rnd_unit(&s) * 1.5f;
    g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, act, all, 2, NULL);
    const size_t sizes[] = {2, 5, 96, 97, 199};
    for (size_t i = 0; i < 5; i++) {
        g2f_ffn_forward(&r.w, x, sizes[i], G2F_GELU_TANH, pre, act, some, 1, NULL);
        CHECK(memcmp(all, some, sizes[i] * 96 * sizeof(float)) == 0);
    }
    free(x); free(pre); free(act); free(all); free(some);
    rand_ffn_free(&r);
}

static void matmul_should_add_bias_after_the_sum(void) {
    const float a[2] = {1e8f, 1.0f};
    const float b[2] = {1.0f, 1.0f}; /* (k 2, n 1) */
    const float bias[1] = {-1e8f};
    float c[1];
    g2f_matmul(a, 1, 2, b, 0, 1, bias, c, 1, NULL);
    /* (1e8 + 1) rounds to 1e8 in float, then + bias = 0: the order of addmm */
    CHECK(c[0] == 0.0f);
}

/* A workspace kept across calls of growing and shrinking shapes (its buffer
 * reallocated, then reused) gives bitwise the results of a call without one. */
static void workspace_reuse_should_not_change_results(void) {
    const size_t shapes[][3] = {{48, 192, 9}, {300, 1200, 70}, {64, 256, 13}, {300, 1200, 1}};
    g2f_ffn_ws ws = {0};
    for (int rep = 0; rep < 2; rep++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            size_t d = shapes[i][0], h = shapes[i][1], T = shapes[i][2];
            rand_ffn r;
            rand_ffn_init(&r, d, h, i % 2 ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D, 11 + i);
            uint64_t s = 5 + i;
            float *x = malloc(T * d * sizeof(float)), *pre = malloc(T * h * sizeof(float)),
                  *act = malloc(T * h * sizeof(float)), *o1 = malloc(T * d * sizeof(float)),
                  *o2 = malloc(T * d * sizeof(float)), *a2 = malloc(T * h * sizeof(float));
            for (size_t j = 0; j < T * d; j++) x[j] = rnd_unit(&s) * 2;
            g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, act, o1, 2, NULL);
            g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, a2, o2, 2, &ws);
            CHECK(memcmp(o1, o2, T * d * sizeof(float)) == 0);
            CHECK(memcmp(act, a2, T * h * sizeof(float)) == 0);
            CHECK(T == 1 || ws.buf != NULL); /* m > 1 packs its weight blocks into ws */
            free(x); free(pre); free(act); free(o1); free(o2); free(a2);
            rand_ffn_free(&r);
        }
    g2f_ffn_ws_free(&ws);
    CHECK(ws.buf == NULL && ws.cap == 0);
}

/* More rows than one row block (matmul_direct's row blocks, each one's
 * columns in tasks, the last row block's in narrower ones; with few threads
 * a task's columns capped by the L2): the same bits as 100 rows at a time
 * (one row block), on 1 to 3 threads, every output written (NaN first). */
static void ffn_row_blocks_should_give_the_bits_of_short_batches(void) {
    const size_t d = 64, h = 4096, T = 400, part = 100;
    rand_ffn r;
    rand_ffn_init(&r, d, h, G2F_LAYOUT_CONV1D, 41);
    uint64_t s = 13;
    float *x = malloc(T * d * sizeof(float)), *pre = malloc(T * h * sizeof(float)),
          *act = malloc(T * h * sizeof(float)), *out = malloc(T * d * sizeof(float)),
          *pre1 = malloc(T * h * sizeof(float)), *act1 = malloc(T * h * sizeof(float)),
          *out1 = malloc(T * d * sizeof(float));
    for (size_t i = 0; i < T * d; i++) x[i] = rnd_unit(&s) * 1.5f;
    for (size_t t0 = 0; t0 < T; t0 += part)
        g2f_ffn_forward(&r.w, x + t0 * d, part, G2F_GELU_TANH, pre1 + t0 * h, act1 + t0 * h, out1 + t0 * d, 1, NULL);
    for (int threads = 1; threads <= 3; threads++) {
        for (size_t i = 0; i < T * h; i++) pre[i] = act[i] = NAN;
        for (size_t i = 0; i < T * d; i++) out[i] = NAN;
        g2f_ffn_forward(&r.w, x, T, G2F_GELU_TANH, pre, act, out, threads, NULL);
        CHECK(memcmp(pre, pre1, T * h * sizeof(float)) == 0);
        CHECK(memcmp(act, act1, T * h * sizeof(float)) == 0);
        CHECK(memcmp(out, out1, T * d * sizeof(float)) == 0);
    }
    free(x); free(pre); free(act); free(out); free(pre1); free(act1); free(out1);
    rand_ffn_free(&r);
}

/* The AVX-512 epilogue streams a tile's act rows that start a 64-byte line
 * past the caches and stores the others: the same values either way. act
 * 64-byte aligned (rows streamed where h keeps them aligned; h 200 makes
 * every other row unaligned) against act one float off (no row streamed),
 * tanh and erf, both layouts, 1 to 3 threads, edge tiles included. */
static void act_should_not_depend_on_its_alignment(void) {
    const size_t shapes[][3] = {{64, 256, 40}, {48, 192, 25}, {50, 200, 30}, {128, 512, 100}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        size_t d = shapes[i][0], h = shapes[i][1], T = shapes[i][2];
        rand_ffn r;
        rand_ffn_init(&r, d, h, i % 2 ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D, 31 + i);
        uint64_t s = 17 + i;
        float *x = malloc(T * d * sizeof(float)), *pre = malloc(T * h * sizeof(float)),
              *o1 = malloc(T * d * sizeof(float)), *o2 = malloc(T * d * sizeof(float));
        size_t bytes = (T * h * sizeof(float) + 64 + 63) / 64 * 64;
        float *lined = aligned_alloc(64, bytes), *a2 = aligned_alloc(64, bytes), *shifted = a2 + 1;
        float *sq = malloc(T * h * sizeof(float));
        for (size_t j = 0; j < T * d; j++) x[j] = rnd_unit(&s) * 3;
        for (int g = 0; g < 2; g++)
            for (int threads = 1; threads <= 3; threads++) {
                g2f_gelu gelu = g ? G2F_GELU_ERF : G2F_GELU_TANH;
                g2f_ffn_forward(&r.w, x, T, gelu, pre, lined, o1, threads, NULL);
                g2f_ffn_forward(&r.w, x, T, gelu, pre, shifted, o2, threads, NULL);
                CHECK(memcmp(lined, shifted, T * h * sizeof(float)) == 0);
                CHECK(memcmp(o1, o2, T * d * sizeof(float)) == 0);
                /* and beside the sums of squares, as run and verify call it */
                g2f_ffn_fc_gelu_sq(&r.w, x, T, gelu, pre, lined, sq, threads, NULL);
                CHECK(memcmp(lined, shifted, T * h * sizeof(float)) == 0);
            }
        free(x); free(pre); free(o1); free(o2); free(lined); free(a2); free(sq);
        rand_ffn_free(&r);
    }
}

/* The GELU fused into c_fc's tiles (from registers, with AVX-512) gives
 * g2f_gelu_eval's bits for every pre-activation, a NaN's payload too: rows
 * of x with NaN, infinities and huge values make pre NaN, infinite or
 * beyond the clamps, beside ordinary rows, in whole 12 x 32 tiles and at
 * the edges, on 1 and 2 threads. */
static void fused_gelu_should_give_the_scalar_bits_on_nan_and_inf(void) {
    const size_t d = 64, h = 200, T = 30;
    rand_ffn r;
    rand_ffn_init(&r, d, h, G2F_LAYOUT_CONV1D, 41);
    uint64_t s = 23;
    float *x = malloc(T * d * sizeof(float)), *pre = malloc(T * h * sizeof(float)), *act = malloc(T * h * sizeof(float));
    float *out = malloc(T * d * sizeof(float));
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < d; j++) {
            float v = rnd_unit(&s) * 3;
            if (t % 5 == 1 && j == t % d) v = NAN;
            if (t % 5 == 2 && j == 3) v = t % 2 ? INFINITY : -INFINITY;
            if (t % 5 == 3) v *= 1e30f;
            x[t * d + j] = v;
        }
    size_t bad = 0, nan = 0;
    for (int g = 0; g < 2; g++)
        for (int threads = 1; threads <= 2; threads++) {
            g2f_gelu gelu = g ? G2F_GELU_ERF : G2F_GELU_TANH;
            g2f_ffn_forward(&r.w, x, T, gelu, pre, act, out, threads, NULL);
            for (size_t i = 0; i < T * h; i++) {
                float want = g2f_gelu_eval(gelu, pre[i]);
                bad += memcmp(&act[i], &want, sizeof want) != 0;
                nan += isnan(pre[i]) != 0;
            }
        }
    fprintf(stderr, "  %zu of %zu act values differ from the scalar GELU (%zu NaN pre-activations)\n", bad,
            4 * T * h, nan);
    CHECK(nan > 0);
    CHECK(bad == 0);
    free(x); free(pre); free(act); free(out);
    rand_ffn_free(&r);
}

/* c2 (m, n), g2f_matmul_sq's second product of A2 (m, k) and the squares
 * b2 of B (layout bt), against r2 (g2f_matmul on the squared operands):
 * the same bits on the float paths; on "amx" (g2f_amx_sq) and
 * "avx512_bf16" (g2f_dpbf_tile), factors rounded up to bfloat16, at or
 * above the exact sums, by at most (1 + 2^-7)^2, give or take the float
 * sums' own rounding (k 2^-24 of them). */
static int squares_match(const float *c2, const float *r2, const float *a2, const float *b2, size_t m, size_t k,
                         size_t n, int bt) {
    if (!g2f_ffn_squares_bf16()) return memcmp(c2, r2, m * n * 4) == 0;
    const double slack = (double)k * 0x1p-24, up = (1 + 0x1p-7) * (1 + 0x1p-7);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t kk = 0; kk < k; kk++) s += (double)a2[i * k + kk] * (bt ? b2[j * k + kk] : b2[kk * n + j]);
            double v = c2[i * n + j];
            if (!(v >= s * (1 - slack) && v <= s * up * (1 + slack))) return 0;
        }
    return 1;
}

/* The second product of g2f_matmul_sq equals g2f_matmul on the squared
 * operands bit for bit (same tiles, same order; on AMX within its bound), for both layouts, with A2
 * given or A squared, on the shared-B path and for one row (which must not
 * take the GEMV: a row's results may not depend on the rows beside it).
 * Without the second product (c2 NULL: the forward's run) C is the same
 * bits, also for the rows of a batch computed in another chunk. */
static void matmul_sq_should_equal_the_product_of_squares(void) {
    uint64_t seed = 7;
    /* 250 rows: more than one row block (192 at most), so the batch takes matmul_goto and the
     * single row matmul_direct (on "amx": the squares in a pass of their own, or beside each panel) */
    const size_t ms[] = {1, 2, 7, 100, 250}, ks[] = {3, 300, 777}, ns[] = {5, 40, 1100};
    for (size_t mi = 0; mi < 5; mi++)
        for (size_t ki = 0; ki < 3; ki++)
            for (size_t ni = 0; ni < 3; ni++)
                for (int bt = 0; bt < 2; bt++) {
                    size_t m = ms[mi], k = ks[ki], n = ns[ni];
                    float *a = malloc(m * k * 4), *a2 = malloc(m * k * 4), *q = malloc(m * k * 4),
                          *b = malloc(k * n * 4), *b2 = malloc(k * n * 4), *c = malloc(m * n * 4),
                          *c2 = malloc(m * n * 4), *r = malloc(m * n * 4), *r2 = malloc(m * n * 4),
                          *bias = malloc(n * 4);
                    for (size_t i = 0; i < m * k; i++) a[i] = rnd_unit(&seed), a2[i] = a[i] * a[i], q[i] = fabsf(rnd_unit(&seed)); /* a variance */
                    for (size_t i = 0; i < k * n; i++) b[i] = rnd_unit(&seed), b2[i] = b[i] * b[i];
                    for (size_t i = 0; i < n; i++) bias[i] = rnd_unit(&seed);
                    /* A squared as packed */
                    g2f_matmul_sq(a, NULL, m, k, b, bt, n, bias, c, c2, 2, NULL);
                    g2f_matmul_sq(a, NULL, m, k, b, bt, n, bias, r, NULL, 1, NULL);
                    CHECK(memcmp(c, r, m * n * 4) == 0);
                    if (m > 1) {
                        g2f_matmul_sq(a + k, NULL, m - 1, k, b, bt, n, bias, r, NULL, 2, NULL);
                        CHECK(memcmp(c + n, r, (m - 1) * n * 4) == 0);
                    }
                    g2f_matmul(a2, m > 1 ? m : 1, k, b2, bt, n, NULL, r2, 2, NULL);
                    if (m > 1) { /* the GEMV (m = 1) sums in another order: compare the products only there */
                        g2f_matmul(a, m, k, b, bt, n, bias, r, 2, NULL);
                        CHECK(memcmp(c, r, m * n * 4) == 0);
                        CHECK(squares_match(c2, r2, a2, b2, m, k, n, bt));
                    }
                    /* one row alone gives the same bits as inside a batch */
                    if (m > 1) {
                        float c1[1100], c21[1100];
                        g2f_matmul_sq(a + k, NULL, 1, k, b, bt, n, bias, c1, c21, 1, NULL);
                        CHECK(memcmp(c1, c + n, n * 4) == 0);
                        CHECK(memcmp(c21, c2 + n, n * 4) == 0);
                    }
                    /* A2 given */
                    g2f_matmul_sq(a, q, m, k, b, bt, n, NULL, c, c2, 1, NULL);
                    if (m > 1) {
                        g2f_matmul(q, m, k, b2, bt, n, NULL, r2, 1, NULL);
                        CHECK(squares_match(c2, r2, q, b2, m, k, n, bt));
                    }
                    /* NaN in A2 stays NaN in its row, never a finite bound */
                    q[k - 1] = NAN;
                    g2f_matmul_sq(a, q, m, k, b, bt, n, NULL, c, c2, 2, NULL);
                    for (size_t j = 0; j < n; j++) CHECK(isnan(c2[j]));
                    free(a), free(a2), free(q), free(b), free(b2), free(c), free(c2), free(r), free(r2), free(bias);
                }
}

static uint32_t bits_of(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float float_of(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* TF32 keeps 10 of float's 23 fraction bits: 1 + 2^-10 is a TF32 number,
 * 1 + 2^-11 a tie between 1 and 1 + 2^-10 (to even: 1), 1 + 3 2^-11 a tie
 * between 1 + 2^-10 and 1 + 2^-9 (to even: 1 + 2^-9). Checked against a
 * rounding written with nearbyint on the scaled value over many floats. */
static void round_tf32_should_keep_10_bits_ties_to_even(void) {
    CHECK(g2f_round_tf32(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);
    CHECK(g2f_round_tf32(1.0f + 0x1p-11f) == 1.0f);
    CHECK(g2f_round_tf32(1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);
    CHECK(g2f_round_tf32(1.0f + 0x1p-11f + 0x1p-23f) == 1.0f + 0x1p-10f);
    CHECK(g2f_round_tf32(-(1.0f + 0x1p-11f + 0x1p-23f)) == -(1.0f + 0x1p-10f));
    CHECK(g2f_round_tf32(3.14159265f) == 3.140625f); /* pi: 1.1001001000|01111.. -> 1.1001001000 */
    CHECK(g2f_round_tf32(INFINITY) == INFINITY && g2f_round_tf32(-INFINITY) == -INFINITY);
    CHECK(isnan(g2f_round_tf32(NAN)));
    CHECK(isnan(g2f_round_tf32(float_of(0x7f800001u)))); /* payload below the kept bits: still NaN */
    CHECK(g2f_round_tf32(FLT_MAX) == INFINITY); /* above the largest TF32 number by more than half an ulp */
    CHECK(g2f_round_tf32(float_of(0x7f7fefffu)) == float_of(0x7f7fe000u)); /* just below that half */
    CHECK(bits_of(g2f_round_tf32(-0.0f)) == 0x80000000u);
    CHECK(g2f_round_tf32(0x1p-149f) == 0.0f); /* subnormal: the same 13 bits dropped */
    CHECK(g2f_round_tf32(0x1p-136f) == 0x1p-136f);
    uint64_t s = 99;
    size_t n = 100000, bad = 0;
    float *v = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t b = (uint32_t)(s >> 32);
        if ((b & 0x7f800000u) == 0x7f800000u || (b & 0x7f800000u) == 0) b ^= 0x20000000u; /* normal numbers */
        if (i % 8 == 0) b = (b & ~0x1fffu) | 0x1000u;                                   /* ties */
        v[i] = float_of(b);
    }
    g2f_round_tf32_buf(v, r, n);
    for (size_t i = 0; i < n; i++) {
        int e;
        frexpf(v[i], &e); /* v = m 2^e, m in [0.5, 1): TF32's quantum is 2^(e - 11) */
        float want = ldexpf(nearbyintf(ldexpf(v[i], 11 - e)), e - 11);
        bad += bits_of(r[i]) != bits_of(want);
    }
    CHECK(bad == 0);
    g2f_round_tf32_buf(v, v, n); /* in place */
    CHECK(memcmp(v, r, n * sizeof(float)) == 0);
    free(v); free(r);
}

int main(void) {
    RUN(ffn_should_reproduce_worked_example);
    RUN(ffn_should_be_position_wise);
    RUN(ffn_should_agree_with_reference_and_be_thread_count_independent);
    RUN(ffn_should_not_depend_on_the_batch_size);
    RUN(matmul_should_add_bias_after_the_sum);
    RUN(workspace_reuse_should_not_change_results);
    RUN(act_should_not_depend_on_its_alignment);
    RUN(fused_gelu_should_give_the_scalar_bits_on_nan_and_inf);
    RUN(ffn_row_blocks_should_give_the_bits_of_short_batches);
    RUN(matmul_sq_should_equal_the_product_of_squares);
    RUN(round_tf32_should_keep_10_bits_ties_to_even);
    CHECK_EXIT();
}
