/* GELU forms: the seed lesson's values, and the documented tanh/erf gap;
 * the forms ports run instead (sigmoid, MLX, ggml's f16 table): values by
 * hand, ulp sweeps, ggml's table rebuilt here from its definition, edges;
 * the derivatives. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn.h"

static void gelu_tanh_should_match_lesson_values(void) {
    CHECK_NEAR(g2f_gelu_tanh(-3.0f), -0.0036, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(-1.0f), -0.1588, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(1.0f), 0.8412, 5e-5);
    CHECK_NEAR(g2f_gelu_tanh(2.0f), 1.9546, 5e-5);
    CHECK(g2f_gelu_tanh(0.0f) == 0.0f);
}

/* The tolerance model (g2f_tol.h) allows 2 u (|act| + |pre|) per GELU
 * implementation: check ours stays inside that against double. */
static void gelu_float_should_stay_within_the_tolerance_model(void) {
    double worst_t = 0, worst_e = 0;
    for (int i = -80000; i <= 80000; i++) {
        float x = (float)i / 10000.0f;
        double t = g2f_gelu_tanh_f64(x), e = g2f_gelu_erf_f64(x);
        if (x == 0) continue;
        double et = fabs(g2f_gelu_tanh(x) - t) / (fabs(t) + fabs(x)) / 0x1p-24;
        double ee = fabs(g2f_gelu_erf(x) - e) / (fabs(e) + fabs(x)) / 0x1p-24;
        if (et > worst_t) worst_t = et;
        if (ee > worst_e) worst_e = ee;
    }
    CHECK(worst_t < 2.0);
    CHECK(worst_e < 2.0);
}

static void gelu_forms_should_differ_by_at_most_4_7e_4_near_2_7(void) {
    double worst = 0, at = 0;
    for (int i = -80000; i <= 80000; i++) {
        double x = i / 10000.0;
        double d = fabs(g2f_gelu_tanh_f64(x) - g2f_gelu_erf_f64(x));
        if (d > worst) { worst = d; at = x; }
    }
    CHECK(worst > 4.7e-4 && worst < 4.75e-4);
    CHECK(fabs(fabs(at) - 2.7) < 0.05);
    CHECK(fabs(g2f_gelu_tanh_f64(0.05) - g2f_gelu_erf_f64(0.05)) < 1e-8);
}

static void gelu_deriv_should_match_finite_difference(void) {
    for (double x = -5; x <= 5; x += 0.37) {
        double fd = (g2f_gelu_erf_f64(x + 1e-6) - g2f_gelu_erf_f64(x - 1e-6)) / 2e-6;
        CHECK_NEAR(g2f_gelu_deriv(x), fd, 1e-6);
    }
}

/* ulps of float between a and the exact value e (long double). */
static double ulps(float a, long double e) {
    float r = (float)e;
    float next = nextafterf(fabsf(r), INFINITY);
    double ulp = r != 0 ? (double)(next - fabsf(r)) : 0x1p-149;
    return (double)fabsl((long double)a - e) / ulp;
}

static long double exact_tanh(float x) {
    long double u = 0.7978845608028654L * ((long double)x + 0.044715L * (long double)x * x * x);
    return (long double)x / (1.0L + expl(-2.0L * u)); /* = 0.5 x (1 + tanh u), without cancellation */
}

static long double exact_erf(float x) { return 0.5L * (long double)x * erfcl(-(long double)x / sqrtl(2.0L)); }

/* Issue target: within 2 ulp of the correctly rounded GELU on a dense grid,
 * for the scalar and the vectorized (batch) paths, and never worse than the
 * glibc tanhf/erff formulas (which lose tens of ulp for negative x). */
static void gelu_should_be_within_2_ulp_of_correctly_rounded(void) {
    enum { N = 1600001 };
    float *x = malloc(N * sizeof(float)), *yt = malloc(N * sizeof(float)), *ye = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 50000.0f; /* [-16, 16] step 2e-5 */
    g2f_ffn_gelu(G2F_GELU_TANH, x, N, yt, 2);
    g2f_ffn_gelu(G2F_GELU_ERF, x, N, ye, 2);
    double worst_t = 0, worst_e = 0, glibc_t = 0, glibc_e = 0;
    int same = 1;
    for (int i = 0; i < N; i++) {
        long double et = exact_tanh(x[i]), ee = exact_erf(x[i]);
        double ut = ulps(yt[i], et), ue = ulps(ye[i], ee);
        if (ut > worst_t) worst_t = ut;
        if (ue > worst_e) worst_e = ue;
        same &= yt[i] == g2f_gelu_tanh(x[i]) && ye[i] == g2f_gelu_erf(x[i]);
        float gt = 0.5f * x[i] * (1.0f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
        float ge = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f));
        if (ulps(gt, et) > glibc_t) glibc_t = ulps(gt, et);
        if (ulps(ge, ee) > glibc_e) glibc_e = ulps(ge, ee);
    }
    fprintf(stderr, "  max error: tanh %.3f ulp (glibc tanhf formula %.3g), erf %.3f ulp (glibc erff formula %.3g)\n",
            worst_t, glibc_t, worst_e, glibc_e);
    CHECK(worst_t <= 2.0 && worst_e <= 2.0);
    CHECK(worst_t <= glibc_t && worst_e <= glibc_e);
    CHECK(same); /* batch and scalar paths agree bitwise */
    float nan_in = NAN, out;
    g2f_ffn_gelu(G2F_GELU_ERF, &nan_in, 1, &out, 1);
    CHECK(isnan(out));
    free(x); free(yt); free(ye);
}

/* Values worked by hand: sigmoid(1.702) = 1 / (1 + e^-1.702), e^-1.702 =
 * 0.1823034, so GELU_sigmoid(1) = 1 / 1.1823034 = 0.8457958; for MLX at 1,
 * v = 1.60033 * 1.0433603 = 1.6697205, e^-v = 0.1883147, 1 / 1.1883147 =
 * 0.8415386; at -1 both are f(1) - 1 (x sigmoid(v) is odd in v: f(-x) =
 * f(x) - x). The f16 table: f16(GELU_tanh(1) = 0.8411920): 0.8411920 * 2048
 * = 1722.76 -> 1723/2048; GELU_tanh(-2) = -0.0454023, * 2^15 = -1487.74 ->
 * -1488/2^15; 0.3 rounds to the half 0.300048828125 (1229/4096), whose GELU
 * 0.1854067 * 8192 = 1518.85 -> 1519/8192 (not f16(GELU(0.3)) = 1518/8192). */
static void gelu_variants_should_match_hand_computed_values(void) {
    CHECK_NEAR(g2f_gelu_sigmoid(1.0f), 0.8457958, 1e-6);
    CHECK_NEAR(g2f_gelu_sigmoid(-1.0f), 0.8457958 - 1, 1e-6);
    CHECK_NEAR(g2f_gelu_sigmoid(2.0f), 1.9356586, 1e-6);  /* 2 / (1 + e^-3.404 = 0.0332551) */
    CHECK_NEAR(g2f_gelu_sigmoid(-3.0f), -0.0180713, 1e-6); /* -3 / (1 + e^5.106 = 165.02) */
    CHECK_NEAR(g2f_gelu_mlx(1.0f), 0.8415386, 1e-6);
    CHECK_NEAR(g2f_gelu_mlx(-1.0f), 0.8415386 - 1, 1e-6);
    CHECK_NEAR(g2f_gelu_mlx(2.0f), 1.9543043, 1e-6);  /* v = 3.20066 * 1.1734412 = 3.7557989 */
    CHECK(g2f_gelu_sigmoid(0.0f) == 0.0f && g2f_gelu_mlx(0.0f) == 0.0f && g2f_gelu_f16_table(0.0f) == 0.0f);
    CHECK(g2f_gelu_f16_table(1.0f) == 1723.0f / 2048);
    CHECK(g2f_gelu_f16_table(-2.0f) == -1488.0f / 32768);
    CHECK(g2f_gelu_f16_table(0.3f) == 1519.0f / 8192);
    /* ggml clamps to 0 at x <= -10 only: below -3 the table still holds small negatives */
    CHECK(g2f_gelu_f16_table(-3.5f) < 0 && g2f_gelu_f16_table(-3.5f) > -1e-3f);
    CHECK(g2f_gelu_f16_table(-5.0f) < 0 && g2f_gelu_f16_table(-10.0f) == 0.0f);
    CHECK(g2f_gelu_f16_table(5.0f) == 5.0f);         /* 4.9999998, to the nearest half (step 2^-8) */
    CHECK(g2f_gelu_f16_table(9.99f) == 9.9921875f);  /* the half of 9.99 (step 2^-7), passed through */
    CHECK(g2f_gelu_f16_table(12.345f) == 12.345f);   /* >= 10: x itself, not rounded */
    CHECK(g2f_gelu_f16_table(-12.0f) == 0.0f);
    /* the dispatchers agree with the named forms */
    for (float x = -4; x <= 4; x += 0.37f) {
        CHECK(g2f_gelu_eval(G2F_GELU_SIGMOID, x) == g2f_gelu_sigmoid(x));
        CHECK(g2f_gelu_eval(G2F_GELU_MLX, x) == g2f_gelu_mlx(x));
        CHECK(g2f_gelu_eval(G2F_GELU_F16_TABLE, x) == g2f_gelu_f16_table(x));
        CHECK(g2f_gelu_eval(G2F_GELU_ERF, x) == g2f_gelu_erf(x));
        CHECK_NEAR(g2f_gelu_eval_f64(G2F_GELU_SIGMOID, x), g2f_gelu_sigmoid(x), 3e-7); /* an ulp at 4 */
        CHECK_NEAR(g2f_gelu_eval_f64(G2F_GELU_MLX, x), g2f_gelu_mlx(x), 3e-7);
        CHECK(g2f_gelu_eval_f64(G2F_GELU_F16_TABLE, x) == g2f_gelu_f16_table(x));
    }
}

static void gelu_names_should_round_trip(void) {
    const char *names[G2F_GELU_COUNT] = {"tanh", "erf", "sigmoid", "mlx_approx", "f16_table"};
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        g2f_gelu back;
        CHECK(strcmp(g2f_gelu_name((g2f_gelu)g), names[g]) == 0);
        CHECK(g2f_gelu_from_name(names[g], &back) && back == (g2f_gelu)g);
        CHECK(g2f_gelu_other((g2f_gelu)g) == (g == G2F_GELU_TANH ? G2F_GELU_ERF : G2F_GELU_TANH));
    }
    g2f_gelu unused;
    CHECK(!g2f_gelu_from_name("gelu", &unused) && !g2f_gelu_from_name(NULL, &unused));
    CHECK(G2F_GELU_TANH == 0 && G2F_GELU_ERF == 1); /* stored in reports */
}

static long double exact_sigmoid(float x) { return (long double)x / (1.0L + expl(-1.702L * (long double)x)); }

static long double exact_mlx(float x) {
    long double v = 1.60033L * (long double)x * (1.0L + 0.0433603L * (long double)x * x);
    return (long double)x / (1.0L + expl(-v));
}

/* Within 1 ulp of the exact value (so of the double value rounded), on
 * [-64, 64] where the results reach the subnormals at the negative end; the
 * batch path (vectorized) gives the scalar's bits. */
static void gelu_sigmoid_forms_should_be_within_1_ulp(void) {
    enum { N = 1280001 };
    float *x = malloc(N * sizeof(float)), *ys = malloc(N * sizeof(float)), *ym = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 10000.0f; /* step 1e-4 */
    g2f_ffn_gelu(G2F_GELU_SIGMOID, x, N, ys, 2);
    g2f_ffn_gelu(G2F_GELU_MLX, x, N, ym, 2);
    double worst_s = 0, worst_m = 0;
    int same = 1;
    for (int i = 0; i < N; i++) {
        double us = ulps(ys[i], exact_sigmoid(x[i])), um = ulps(ym[i], exact_mlx(x[i]));
        if (us > worst_s) worst_s = us;
        if (um > worst_m) worst_m = um;
        same &= ys[i] == g2f_gelu_sigmoid(x[i]) && ym[i] == g2f_gelu_mlx(x[i]);
    }
    fprintf(stderr, "  max error: sigmoid %.3f ulp, mlx %.3f ulp\n", worst_s, worst_m);
    CHECK(worst_s <= 1.0 && worst_m <= 1.0);
    CHECK(same);
    free(x); free(ys); free(ym);
}

/* ---- ggml's f16 GELU rebuilt from its definition, with a half rounding of
 * our own (frexp/ldexp, not the library's bit manipulation). */
static float half_round(float x) {
    if (isnan(x) || isinf(x)) return x;
    double a = fabs((double)x);
    if (a >= 65520.0) return copysignf(INFINITY, x);
    int e;
    frexp(a, &e);                /* a = m 2^e, m in [0.5, 1): 11 bits of significand */
    int q = e - 11 < -24 ? -24 : e - 11; /* the quantum; subnormal halves are multiples of 2^-24 */
    return copysignf((float)ldexp(nearbyint(ldexp(a, -q)), q), x); /* ties to even */
}

static float half_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

static float ggml_gelu(float x) { /* ggml_gelu_f32, as compiled with fma contraction */
    const float a = 0.044715f, s = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(s * x * fmaf(a * x, x, 1.0f)));
}

static int same_float(float a, float b) { return isnan(a) ? isnan(b) : memcmp(&a, &b, sizeof a) == 0; }

static void gelu_f16_table_should_match_ggml_table(void) {
    static float table[65536];
    for (int h = 0; h < 65536; h++) table[h] = half_round(ggml_gelu(half_value((uint16_t)h)));
    size_t checked = 0, bad = 0;
    /* every half strictly inside (-10, 10), and the floats on each side of the
     * midpoint to the next half up (the input's rounding), and the midpoint
     * itself (a tie: to the even one) */
    for (int h = 0; h < 65536; h++) {
        float v = half_value((uint16_t)h);
        if (!(v > -10.0f && v < 10.0f)) continue;
        checked++;
        bad += !same_float(g2f_gelu_f16_table(v), table[h]);
        /* the next half towards +inf (none from -0: +0 is the same number) */
        int up = !(h & 0x8000) ? h + 1 : (h & 0x7fff) == 0 ? -1 : h - 1;
        if (up < 0 || !(half_value((uint16_t)up) < 10.0f)) continue;
        float w = half_value((uint16_t)up), mid = (float)(((double)v + w) / 2); /* exact: 12 bits */
        int even = (h & 1) == 0 ? h : up;
        bad += !same_float(g2f_gelu_f16_table(nextafterf(mid, v)), table[h]);
        bad += !same_float(g2f_gelu_f16_table(nextafterf(mid, w)), table[up]);
        bad += !same_float(g2f_gelu_f16_table(mid), table[even]);
    }
    fprintf(stderr, "  f16 table: %zu halves in (-10, 10) and their midpoints, %zu differ\n", checked, bad);
    CHECK(checked == 2 * 0x4900); /* +-0 up to the half below 10 (0x4900), each sign */
    CHECK(bad == 0);
}

/* g2f_ffn_gelu_ws looks the F16_TABLE form up in a table over the halves:
 * the same bits as g2f_gelu_f16_table on every kind of input (each half,
 * its neighbours and midpoints, the clamps at +-10, huge, subnormal,
 * infinite and NaN inputs, random bit patterns), any thread count, and
 * without a workspace. */
static void gelu_f16_table_lookup_should_match_the_form_everywhere(void) {
    size_t n = 0, cap = 65536 * 4 + 200000 + 16;
    float *in = malloc(cap * sizeof *in), *out = malloc(cap * sizeof *out);
    if (!in || !out) {
        CHECK(!"out of memory");
        free(in), free(out);
        return;
    }
    for (int h = 0; h < 65536; h++) {
        float v = half_value((uint16_t)h);
        in[n++] = v;
        in[n++] = nextafterf(v, INFINITY);
        in[n++] = nextafterf(v, -INFINITY);
        int up = h + 1 < 65536 ? h + 1 : h;
        in[n++] = (float)(((double)v + half_value((uint16_t)up)) / 2);
    }
    const float edge[] = {10.0f, -10.0f, nextafterf(10.0f, 0), nextafterf(-10.0f, 0), 1e30f, -1e30f, 1e-40f,
                          -1e-40f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65520.0f, 0.0f, -0.0f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) in[n++] = edge[i];
    uint64_t st = 0x9e3779b97f4a7c15u;
    while (n < cap) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        uint32_t b = (uint32_t)(st >> 32);
        memcpy(&in[n++], &b, sizeof b);
    }
    size_t bad = 0;
    for (int threads = 1; threads <= 3; threads++) {
        g2f_ffn_ws ws = {0};
        g2f_ffn_gelu_ws(G2F_GELU_F16_TABLE, in, n, out, threads, threads == 3 ? NULL : &ws);
        for (size_t i = 0; i < n; i++) bad += !same_float(out[i], g2f_gelu_f16_table(in[i]));
        g2f_ffn_ws_free(&ws);
    }
    fprintf(stderr, "  f16 table lookups: %zu inputs x 3, %zu differ\n", n, bad);
    CHECK(bad == 0);
    free(in), free(out);
}

/* The vector paths on values in random order, so that neighbours take
 * different branches of the erf form (the AVX-512 path sorts a block's
 * values by branch and puts them back): every value bitwise the scalar
 * GELU, for odd lengths, in place too, NaN and infinities among them. */
static void gelu_vector_should_match_scalar_on_mixed_values(void) {
    enum { N = 20011 };
    float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float)), *io = malloc(N * sizeof(float));
    uint64_t st = 12345;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        double u = (double)(st >> 11) / 9007199254740992.0; /* [0, 1) */
        in[i] = (float)((u - 0.5) * (i % 3 == 0 ? 2.0 : i % 3 == 1 ? 8.0 : 40.0)); /* around |x| = 0.71 and beyond */
        if (i % 101 == 7) in[i] = NAN;
        if (i % 211 == 9) in[i] = i % 2 ? INFINITY : -INFINITY;
        if (i % 307 == 4) in[i] = nextafterf(0.70710678f, i % 2 ? 0.0f : 1.0f) * (i % 4 < 2 ? 1 : -1);
        if (i % 401 == 6) { /* the floats either side of where z = -x / sqrt 2 crosses +-0.5, and a NaN payload */
            static const uint32_t edge[] = {0x3f3504f3u, 0x3f3504f4u, 0xbf3504f3u, 0xbf3504f4u, 0x7fc01234u, 0xffc00001u};
            memcpy(&in[i], &edge[(i / 401) % 6], sizeof(float));
        }
    }
    g2f_gelu forms[2] = {G2F_GELU_TANH, G2F_GELU_ERF};
    size_t lens[4] = {N, N - 1, 17, 1};
    size_t bad = 0;
    for (int f = 0; f < 2; f++)
        for (int l = 0; l < 4; l++) {
            size_t n = lens[l];
            g2f_ffn_gelu(forms[f], in, n, out, 2);
            memcpy(io, in, n * sizeof(float));
            g2f_ffn_gelu(forms[f], io, n, io, 1); /* in place */
            for (size_t i = 0; i < n; i++) { /* bitwise: a NaN's payload too */
                float want = g2f_gelu_eval(forms[f], in[i]);
                bad += memcmp(&out[i], &want, sizeof want) != 0 || memcmp(&io[i], &want, sizeof want) != 0;
            }
        }
    fprintf(stderr, "  mixed values: %zu differ from the scalar GELU\n", bad);
    CHECK(bad == 0);
    free(in), free(out), free(io);
}

static void gelu_variants_should_handle_edges(void) {
    g2f_gelu forms[3] = {G2F_GELU_SIGMOID, G2F_GELU_MLX, G2F_GELU_F16_TABLE};
    for (int i = 0; i < 3; i++) {
        g2f_gelu g = forms[i];
        CHECK(isnan(g2f_gelu_eval(g, NAN)));
        CHECK(g2f_gelu_eval(g, INFINITY) == INFINITY);
        CHECK(g2f_gelu_eval(g, -INFINITY) == 0.0f);
        CHECK(g2f_gelu_eval(g, -1e30f) == 0.0f);
        CHECK(g2f_gelu_eval(g, 1e30f) == 1e30f);
        float in[9] = {NAN, INFINITY, -INFINITY, -10.0f, 10.0f, 1, 2, 3, -1}, out[9];
        g2f_ffn_gelu(g, in, 9, out, 1); /* the vector path, NaN in lane 0 */
        CHECK(isnan(out[0]) && out[1] == INFINITY && out[2] == 0.0f);
        for (int j = 3; j < 9; j++) CHECK(same_float(out[j], g2f_gelu_eval(g, in[j])));
    }
    /* ggml's clamps: at -10 and below exactly +0, at 10 and above x */
    CHECK(same_float(g2f_gelu_f16_table(-10.0f), 0.0f));
    CHECK(g2f_gelu_f16_table(10.0f) == 10.0f && g2f_gelu_f16_table(10.001f) == 10.001f);
    /* just inside: through the table, where the halves round to +-10 */
    CHECK(g2f_gelu_f16_table(nextafterf(10.0f, 0)) == 10.0f);
    CHECK(same_float(g2f_gelu_f16_table(nextafterf(-10.0f, 0)), -0.0f)); /* -7.6e-22 rounds to -0 */
    CHECK(same_float(g2f_gelu_sigmoid(-100.0f), -0.0f));
}

/* The derivative of each smooth form against a central difference of its
 * f64 form, and how far g2f_gelu_deriv (erf's) is from each (the figures in
 * g2f_ffn.h). */
static void gelu_deriv_of_should_match_each_form(void) {
    g2f_gelu smooth[4] = {G2F_GELU_TANH, G2F_GELU_ERF, G2F_GELU_SIGMOID, G2F_GELU_MLX};
    double gap[4] = {0};
    for (int i = 0; i < 4; i++) {
        g2f_gelu g = smooth[i];
        for (double x = -12; x <= 12; x += 0.0137) {
            double fd = (g2f_gelu_eval_f64(g, x + 1e-6) - g2f_gelu_eval_f64(g, x - 1e-6)) / 2e-6;
            CHECK_NEAR(g2f_gelu_deriv_of(g, x), fd, 1e-6);
        }
        for (double x = -30; x <= 30; x += 1e-3) {
            double d = fabs(g2f_gelu_deriv(x) - g2f_gelu_deriv_of(g, x));
            if (d > gap[i]) gap[i] = d;
        }
    }
    fprintf(stderr, "  |g2f_gelu_deriv - exact| <= tanh %.3g, erf %.3g, sigmoid %.3g, mlx %.3g\n", gap[0], gap[1],
            gap[2], gap[3]);
    CHECK(gap[0] < 9e-4 && gap[1] == 0 && gap[2] < 0.030 && gap[3] < 9e-4);
    CHECK(g2f_gelu_deriv_of(G2F_GELU_F16_TABLE, 0.7) == g2f_gelu_deriv_of(G2F_GELU_TANH, 0.7));
    CHECK(isfinite(g2f_gelu_deriv_of(G2F_GELU_TANH, 500)) && isfinite(g2f_gelu_deriv_of(G2F_GELU_MLX, -500)));
}

int main(void) {
    RUN(gelu_tanh_should_match_lesson_values);
    RUN(gelu_vector_should_match_scalar_on_mixed_values);
    RUN(gelu_float_should_stay_within_the_tolerance_model);
    RUN(gelu_forms_should_differ_by_at_most_4_7e_4_near_2_7);
    RUN(gelu_deriv_should_match_finite_difference);
    RUN(gelu_should_be_within_2_ulp_of_correctly_rounded);
    RUN(gelu_variants_should_match_hand_computed_values);
    RUN(gelu_names_should_round_trip);
    RUN(gelu_sigmoid_forms_should_be_within_1_ulp);
    RUN(gelu_f16_table_should_match_ggml_table);
    RUN(gelu_f16_table_lookup_should_match_the_form_everywhere);
    RUN(gelu_variants_should_handle_edges);
    RUN(gelu_deriv_of_should_match_each_form);
    CHECK_EXIT();
}
