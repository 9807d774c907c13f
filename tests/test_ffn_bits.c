/* The FFN kernels' output bits, pinned: a SHA-256 over every output of
 * fixed inputs (g2f_ffn_forward's pre, act and out, g2f_ffn_fc_gelu_sq's and
 * g2f_ffn_proj_sq's sums of squares, g2f_matmul_sq's second product) per
 * shape, for each kernel path, with 1, 2 and 3 threads. A change to the
 * kernels (blocking, micro-kernel shape, a new instruction set) must leave
 * these digests as they are: every output element is the same terms summed
 * in the same order, whatever the blocking and the thread count.
 *
 * avx2 and avx512 (one fused multiply-add per term) share one table; the
 * portable C kernel (multiply, then add) has its own; amx and avx512_bf16
 * (sums of squares on bfloat16 factors) pin avx512's values and their own
 * squares' independence of the thread count. The path is chosen
 * once per process (g2f_cpu_features), so run without GPT2FFN_ISA this
 * program runs itself once per path with GPT2FFN_ISA set, then checks the
 * default path against its table. A path the CPU lacks is skipped (said
 * on stderr). A digest that changes on purpose (a different summation
 * order) is a change of every verdict's arithmetic: scripts/golden shows it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn.h"
#include "g2f_sha256.h"
#include "test_util.h"

typedef struct shape {
    size_t T, d, h;
    const char *why;
} shape;

static const shape shapes[] = {
    {1, 70, 301, "one token: the matrix-vector path, k and n off its 8-row and 16-column steps"},
    {5, 33, 17, "fewer rows and columns than one tile"},
    {37, 70, 300, "edge tiles on both sides, k off the 8 x 8 transposes"},
    {130, 96, 384, "two row blocks of 96, c_proj over two depth blocks of 256"},
    {64, 64, 2100, "c_fc wider than one 2048-column block"},
    {200, 160, 640, "c_proj over three depth blocks (256, 256, 128)"},
    {777, 40, 300, "many rows: two or more row blocks whatever the L2, the last a part of a panel"},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* Digests per shape, of the function above, made by this test from the
 * kernels of commit f107282 (AVX2: an Intel Xeon with AVX-512, GCC 12); the
 * 777-token shape's from 27c3e0e (AMD EPYC Zen 5, GCC 12). */
static const char *const want_fma[N_SHAPES] = {
    "aa175b0a95d5769c2f50a804ebbc09d3bf6871dd7583b4342a9b4de5457d0c9c",
    "18b1d56ac8a461d4f21621e79fa9f3e4405ddf4b92074c5615a5317e435a2376",
    "016554b7df7b80c6f96a3fff52169cea26cccc67e04f95a976e35a5b87f36986",
    "643b04b4f4c0a6b81ea01c3ef43a409d6d661aac1403789a3bffca7e883458e6",
    "1d79d0bda2215bdc5a2d7bf36f25f858de82bba7fdc6de8d6d3f132c6294e826",
    "af76ba46baf006c79c372225b2e7753760ac381d0c3c03ea53deeaa13d03d515",
    "4272ea88228aff7ad966a9460de254e5f50a04a931c0b45be5cb7e252b058168",
};
/* The same outputs without the sums of squares (digest_shape with sq_hex),
 * on avx2 and avx512 (this test, an Intel Xeon with AMX, GCC 12): what the
 * amx path must give beside its own squares. */
static const char *const want_values[N_SHAPES] = {
    "067285322223cc31e8d691ef53bdeab934f8f3129d6639e4276c98c1b11070d6",
    "e138499e99b734c8c427d7b0c32b09040ebac317601bdcb2bef55b4e8a351f52",
    "90c9b133f8664d2e75e9c6291bd038e2f17463acb6a9a864597e713fe41eb333",
    "8ac017d7bc0d81c06ac5cb79aa10a3a87e6659f017fa373c84ad2d63a8d00ddf",
    "a3151ed9a5fd61dd84f94bacf053c4477aa97444d8a60222d89141f0afc7e90b",
    "cefdadc579f96d4a0f7e33eafc1423e85c07d04682bbe2114853ad220510f255",
    "006ac3af93d312de72d47c8038691033b8b6d7f084c7bbc39211893f4d6d8edf",
};
static const char *const want_portable[N_SHAPES] = {
    "4bdb6f6a71f7d289ab5f2978ada1ff5d0c5e22930a42516d504998a78b77019c",
    "8fb74d4404079aefdf8b09583de723e9a3462dc0e8b7559e8cdf191cf108a8e5",
    "a1599dc43720265e052949e83786050dbe4168fd98e4360141217012745aea0d",
    "66a22e4f860213da9c931155c16a957b96cba3e8be953c3e9286fdc17757377f",
    "7f11c0b0ecd1990eb30c5610ee592a9e7f4644d38b42cd85367a47d18c83179f",
    "2328185f668648c6231b8c99a65bef578700f8c825e1af1c9a0fe4ce46382daa",
    "23b8ace6551a551ab0583a68c25b6d7b26591631cb11eb32f8634d2e7ec4bd59",
};

static void fill(float *v, size_t n, float scale, uint64_t *s) {
    for (size_t i = 0; i < n; i++) v[i] = rnd_unit(s) * scale;
}

/* Every output of the FFN kernels on shape sh, hashed, with n_threads
 * threads; ws: a workspace kept across the calls (or NULL). With sq_hex,
 * the sums of squares are hashed there instead, the rest into hex. */
static void digest_shape(const shape *sh, int n_threads, g2f_ffn_ws *ws, char hex[65], char *sq_hex) {
    size_t T = sh->T, d = sh->d, h = sh->h;
    uint64_t seed = 1000003u * T + 1009u * d + h;
    float *w1 = malloc(d * h * 4), *w2 = malloc(d * h * 4), *b1 = malloc(h * 4), *b2 = malloc(d * 4);
    float *x = malloc(T * d * 4), *pre = malloc(T * h * 4), *act = malloc(T * h * 4), *s = malloc(T * h * 4);
    float *out = malloc(T * d * 4), *v = malloc(T * d * 4), *q = malloc(T * h * 4);
    g2f_sha256 ctx, ctx_sq;
    g2f_sha256_init(&ctx);
    g2f_sha256_init(&ctx_sq);
    g2f_sha256 *sq = sq_hex ? &ctx_sq : &ctx;
    if (!w1 || !w2 || !b1 || !b2 || !x || !pre || !act || !s || !out || !v || !q) {
        CHECK(!"out of memory");
        goto done;
    }
    fill(w1, d * h, 0.25f, &seed);
    fill(w2, d * h, 0.1f, &seed);
    fill(b1, h, 0.3f, &seed);
    fill(b2, d, 0.1f, &seed);
    fill(x, T * d, 1.5f, &seed);
    fill(q, T * h, 1.0f, &seed);
    for (int layout = 0; layout < G2F_LAYOUT_COUNT; layout++) {
        g2f_ffn_weights w = {d, h, (g2f_layout)layout, (g2f_layout)layout, w1, b1, w2, b2};
        for (int g = 0; g < G2F_GELU_COUNT; g++) {
            /* the fused epilogue (tanh, erf) and the separate pass (the others) */
            if (T * h > 4096 && g != G2F_GELU_TANH && g != G2F_GELU_SIGMOID) continue;
            g2f_ffn_forward(&w, x, T, (g2f_gelu)g, pre, act, out, n_threads, ws);
            g2f_sha256_update(&ctx, pre, T * h * 4);
            g2f_sha256_update(&ctx, act, T * h * 4);
            g2f_sha256_update(&ctx, out, T * d * 4);
        }
        /* verify's products: the FFN with the sums of squares beside it */
        g2f_ffn_fc_gelu_sq(&w, x, T, G2F_GELU_TANH, pre, act, s, n_threads, ws);
        g2f_ffn_proj_sq(&w, act, q, T, out, v, n_threads, ws);
        g2f_sha256_update(&ctx, pre, T * h * 4);
        g2f_sha256_update(&ctx, act, T * h * 4);
        g2f_sha256_update(sq, s, T * h * 4);
        g2f_sha256_update(&ctx, out, T * d * 4);
        g2f_sha256_update(sq, v, T * d * 4);
        /* A squared as packed, into c2, with bias */
        g2f_matmul_sq(x, NULL, T, d, w1, layout == G2F_LAYOUT_LINEAR, h, b1, pre, s, n_threads, ws);
        g2f_sha256_update(&ctx, pre, T * h * 4);
        g2f_sha256_update(sq, s, T * h * 4);
    }
done:
    g2f_sha256_final_hex(&ctx, hex);
    if (sq_hex) g2f_sha256_final_hex(&ctx_sq, sq_hex);
    free(w1), free(w2), free(b1), free(b2), free(x), free(pre), free(act), free(s), free(out), free(v), free(q);
}

/* The digests of this process's path against its table, for 1, 2 and 3
 * threads. On "amx" the sums of squares are the tile unit's (g2f_amx_sq),
 * on "avx512_bf16" VDPBF16PS's (g2f_dpbf_tile; bounds checked in test_ffn):
 * the values are pinned (want_values, the float paths' without the
 * squares), the squares the same for any thread count, whatever the
 * instruction's own rounding on this CPU. */
static void ffn_bits_should_match_the_pinned_digests(void) {
    const char *isa = g2f_ffn_isa();
    int bf16_sq = g2f_ffn_squares_bf16();
    const char *const *want = bf16_sq ? want_values : strcmp(isa, "portable") ? want_fma : want_portable;
    fprintf(stderr, "  path %s\n", isa);
    g2f_ffn_ws ws = {0};
    for (size_t i = 0; i < N_SHAPES; i++) {
        char sq_first[65] = "";
        for (int threads = 1; threads <= 3; threads++) {
            char hex[65], sq_hex[65];
            digest_shape(&shapes[i], threads, threads == 2 ? &ws : NULL, hex, bf16_sq ? sq_hex : NULL);
            if (bf16_sq && threads == 1) memcpy(sq_first, sq_hex, sizeof sq_first);
            if (bf16_sq && strcmp(sq_hex, sq_first) != 0) {
                fprintf(stderr, "  %s, shape %zu, %d threads: squares %s, with one thread %s\n", isa, i, threads,
                        sq_hex, sq_first);
                check_failures++;
            }
            if (strcmp(hex, want[i]) != 0) {
                fprintf(stderr, "  %s, shape %zu (%zu tokens, d %zu, h %zu: %s), %d thread%s: digest %s, pinned %s\n",
                        isa, i, shapes[i].T, shapes[i].d, shapes[i].h, shapes[i].why, threads, threads > 1 ? "s" : "",
                        hex, want[i]);
                check_failures++;
            }
        }
    }
    g2f_ffn_ws_free(&ws);
}

int main(int argc, char **argv) {
    const char *isa = getenv("GPT2FFN_ISA");
    if (isa) { /* one path: the one asked for, or skipped when the CPU lacks it */
        if (strcmp(g2f_ffn_isa(), isa) != 0) {
            fprintf(stderr, "GPT2FFN_ISA=%s: this CPU runs %s (skipped)\n", isa, g2f_ffn_isa());
            return 77;
        }
        RUN(ffn_bits_should_match_the_pinned_digests);
        CHECK_EXIT();
    }
    (void)argc;
    static const char *const paths[] = {"portable", "avx2", "avx512", "avx512_bf16", "amx"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        int rc = run_self_with_isa(argv[0], paths[i], "--child");
        fprintf(stderr, "%s GPT2FFN_ISA=%s\n", rc == 0 ? "ok  " : rc == 77 ? "skip" : "FAIL", paths[i]);
        if (rc != 0 && rc != 77) check_failures++;
    }
    RUN(ffn_bits_should_match_the_pinned_digests); /* the default path */
    CHECK_EXIT();
}
