/* The hidden tolerances' bits, pinned: a SHA-256 over everything
 * g2f_tol_ffn_hidden_x writes (tol_pre, tol_act, the c_proj coefficients q
 * and the flips) on adversarial inputs (every float16 value, its float
 * neighbours and the midpoints to the next, the clamps, NaN, infinities,
 * subnormals; sums of squares from 0 to 1e12, negative, infinite and NaN),
 * for the port's roundings that take its rounding paths: the f16 GELU
 * table's input alone (with and without the table of halves, flips kept
 * apart or boxed, a per-token variance, two lambdas) and stores rounded to
 * float16. The digests were made by this test from the code of commit
 * d8dca4c, before the table's input got a short path where no float16
 * boundary lies within reach (hidden_table_still): that path must give
 * what the general one gave, element for element. The configurations where
 * nothing rounds (the plain loop, compiled for AVX-512, AVX2 or neither and
 * chosen at run time, with one square root fewer when act has no
 * reference) have digests made from commit 6bb9080, before that. Every
 * digest was made again when the GELU's curvature allowance became local
 * (g2f_gelu_curv.h: 0.43 e^2 near zero where it was 0.4 e^2 everywhere,
 * falling as |pre|^-4 far from zero), the same for each kernel path, and
 * again when the stored act's absolute floor joined its tolerance (act is
 * float16 here: 2^-25, F16's subnormal rounding), the same for each path
 * and still one digest for both table configurations. NaN
 * outputs are hashed as one NaN (their payload follows the compiler's
 * operand order). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_sha256.h"
#include "g2f_tensor.h"
#include "g2f_tol.h"
#include "test_util.h"

#define D 768
#define H 3072

typedef struct inputs {
    size_t n;
    float *pre, *act, *s;
    double *ep, *ea, *extra; /* extra: per token (n / H of them) */
} inputs;

typedef struct config {
    const char *what;
    int table, flips, extra, store_f16;
    double lambda;
    const char *want;
    int plain, no_pre, no_act; /* plain: nothing rounds (the vectorized loop); pre's or act's reference absent */
} config;

static const config configs[] = {
    {"table input, the table of halves, flips apart", 1, 1, 0, 0, G2F_TOL_LAMBDA,
     "1330628ea4844c8f26444231b81de63b56821e9941a076cf6e9ed68ed082b199", 0, 0, 0},
    {"table input, no table, flips apart", 0, 1, 0, 0, G2F_TOL_LAMBDA,
     "1330628ea4844c8f26444231b81de63b56821e9941a076cf6e9ed68ed082b199", 0, 0, 0},
    {"table input, the table, flips boxed", 1, 0, 0, 0, G2F_TOL_LAMBDA,
     "f376a4b865522bfafe68c71200bdef0b59e05a7e8277f4066d2987b7b76b9bb3", 0, 0, 0},
    {"table input, the table, a per-token variance", 1, 1, 1, 0, G2F_TOL_LAMBDA,
     "1b45198217da839bca622a3d4ee937c643293ca276131cd29cc01fb11fd474c4", 0, 0, 0},
    {"table input, no table, lambda 3", 0, 1, 0, 0, 3.0,
     "9d1f9fa0ee750fe9d388016265bbb3de51790d71a6a59c2b3fdd223a097825d4", 0, 0, 0},
    {"stores rounded to float16", 0, 1, 0, 1, G2F_TOL_LAMBDA,
     "4b944474e954267e84d775c6ae3b5060c01ce3b403bead2b83e72e70ba8457e7", 0, 0, 0},
    {"nothing rounds, pre and act", 0, 1, 0, 0, G2F_TOL_LAMBDA,
     "6b4f5e01ed60b8bd906f9e67941a2995267eada96851f18ce90a3f3a99a6d639", 1, 0, 0},
    {"nothing rounds, pre alone, flips boxed", 0, 0, 0, 0, G2F_TOL_LAMBDA,
     "2312cf172ccbdcf14d0bd805f2d442be83542bdacd1efe077ea7cbc6e7e51bfe", 1, 0, 1},
    {"nothing rounds, act alone, lambda 3", 0, 1, 0, 0, 3.0,
     "d8946efbe24b94d13afd01b60daeec457e3b65840c7d3edfd710713f01fc8840", 1, 1, 0},
    {"nothing rounds, neither", 0, 1, 0, 0, G2F_TOL_LAMBDA,
     "62f76efdb3c46d191c7a570630550ec1b2ebc8b480ee81f8d5defde057b944e7", 1, 1, 1},
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The inputs: each float16 value, its float neighbours and the midpoint to
 * the next, then the edges; sums of squares spread over 12 decades with a
 * few odd ones; n a whole number of rows of H. */
static int inputs_make(inputs *in) {
    const float edge[] = {10.0f, -10.0f, nextafterf(10.0f, 0), NAN, -NAN, INFINITY, -INFINITY, 1e-40f, -1e-45f,
                          65504.0f, 65520.0f, 70000.0f, -1e30f, -3.0f, 2.7f, -0.0f};
    size_t ne = sizeof edge / sizeof edge[0];
    size_t n = (65536 * 4 + ne + H - 1) / H * H;
    in->n = n;
    in->pre = malloc(n * sizeof(float)), in->act = malloc(n * sizeof(float)), in->s = malloc(n * sizeof(float));
    in->ep = malloc(n * sizeof(double)), in->ea = malloc(n * sizeof(double)), in->extra = malloc(n / H * sizeof(double));
    if (!in->pre || !in->act || !in->s || !in->ep || !in->ea || !in->extra) return 0;
    size_t k = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float v = g2f_f16_to_f32((uint16_t)h), w = g2f_f16_to_f32((uint16_t)(h + 1 < 65536 ? h + 1 : h));
        in->pre[k++] = v;
        in->pre[k++] = nextafterf(v, INFINITY);
        in->pre[k++] = nextafterf(v, -INFINITY);
        in->pre[k++] = (float)(((double)v + w) / 2);
    }
    for (size_t i = 0; i < ne; i++) in->pre[k++] = edge[i];
    uint64_t st = 77;
    for (; k < n; k++) { /* the rest: random floats of every sign and exponent below 2^16 */
        st = st * 6364136223846793005u + 1442695040888963407u;
        uint32_t b = (uint32_t)(st >> 32);
        in->pre[k] = from_bits((b & 0x80000000u) | ((b >> 1) % 0x47800000u));
    }
    for (size_t i = 0; i < n; i++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        uint32_t r = (uint32_t)(st >> 40);
        in->act[i] = g2f_gelu_f16_table(in->pre[i]);
        in->s[i] = (float)pow(10.0, (double)r / (1 << 24) * 12.0); /* 1 .. 1e12, in units of u^2 */
        if (i % 997 == 3) in->s[i] = 0.0f;
        if (i % 1999 == 5) in->s[i] = -1.0f;
        if (i % 4999 == 7) in->s[i] = INFINITY;
        if (i % 7001 == 11) in->s[i] = NAN;
        in->ep[i] = in->pre[i], in->ea[i] = in->act[i];
    }
    for (size_t t = 0; t < n / H; t++) in->extra[t] = (double)(t + 1) * 1e3;
    return 1;
}

static void hash_floats(g2f_sha256 *ctx, const float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = isnan(v[i]) ? NAN : v[i];
        g2f_sha256_update(ctx, &x, sizeof x);
    }
}

/* What g2f_tol_ffn_hidden_x writes for config c, hashed into hex. */
static int digest(const inputs *in, const config *c, g2f_tol_f16 *tab, int n_threads, char hex[65]) {
    size_t n = in->n;
    float *out = calloc(6 * n, sizeof(float));
    if (!out) return 0;
    float *tol_pre = out, *tol_act = out + n, *q = out + 2 * n;
    g2f_flips fl = {out + 3 * n, out + 4 * n, out + 5 * n};
    g2f_tol_units un = g2f_tol_units_for(G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F16, 0);
    un.table_in = !c->store_f16 && !c->plain;
    un.store = c->store_f16 ? G2F_ROUND_F16 : G2F_ROUND_NONE;
    un.f16 = c->table ? tab : NULL;
    g2f_tol_ffn_hidden_x(n, D, H, in->pre, in->pre, in->act, in->act, in->s, c->no_pre ? NULL : in->ep,
                         c->no_act ? NULL : in->ea, &un, c->lambda, c->extra ? in->extra : NULL,
                         c->no_pre ? NULL : tol_pre, c->no_act ? NULL : tol_act, q, c->flips ? &fl : NULL, n_threads);
    g2f_sha256 ctx;
    g2f_sha256_init(&ctx);
    hash_floats(&ctx, out, (c->flips ? 6 : 3) * n);
    g2f_sha256_final_hex(&ctx, hex);
    free(out);
    return 1;
}

int main(int argc, char **argv) {
    (void)argc;
    if (!getenv("GPT2FFN_ISA")) /* the portable and AVX2 copies too, whatever this CPU has */
        for (int k = 0; k < 2; k++) {
            const char *isa = k ? "avx2" : "portable";
            int rc = run_self_with_isa(argv[0], isa, NULL);
            fprintf(stderr, "%s GPT2FFN_ISA=%s\n", rc == 0 ? "ok  " : "FAIL", isa);
            if (rc != 0) check_failures++;
        }
    inputs in = {0};
    g2f_tol_f16 tab = {0};
    int ok = inputs_make(&in) && g2f_tol_f16_make(&tab, G2F_TOL_LAMBDA);
    CHECK(ok);
    for (size_t k = 0; ok && k < N_CONFIGS; k++) {
        char hex[65], hex2[65];
        CHECK(digest(&in, &configs[k], &tab, 1, hex) && digest(&in, &configs[k], &tab, 2, hex2));
        CHECK(strcmp(hex, hex2) == 0); /* any thread count */
        fprintf(stderr, "  %-48s %s\n", configs[k].what, hex);
        if (strcmp(hex, configs[k].want) != 0) {
            fprintf(stderr, "    want %s\n", configs[k].want);
            check_failures++;
        }
    }
    g2f_tol_f16_free(&tab);
    free(in.pre), free(in.act), free(in.s), free(in.ep), free(in.ea), free(in.extra);
    return check_failures ? 1 : 0;
}
