/* A hypothesis that rounds between the stages (act_f16/bf16_rounded,
 * autocast_f16/bf16, tf32_matmul, ggml's f16 GELU table, ggml's F16
 * matmul) must explain the data it describes well inside its own
 * tolerance: two computations of the same float32 value round to
 * neighbours when a rounding boundary lies between them, and the tolerance
 * has to cover that, also downstream (issue "Never a false verdict", class
 * 6: the true hypothesis sat at margins 0.95-1.0 and left a layer of the
 * same fixture unexplained).
 *
 * The references are made here by another implementation of each precision
 * path (float32 sums in the reverse order of ours, the GELU through the
 * float formula with tanhf, ggml's table from that formula): over shapes,
 * input and weight magnitudes and seeds, the true hypothesis evaluated by
 * g2f_ffn_eval has its margin well below 1 (the distribution is printed),
 * with and without pre/act recorded; the plain computation of a clean
 * reference passes too. argv[1] = fixtures folder (unused). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn_eval.h"
#include "g2f_tensor.h"
#include "g2f_tol.h"
#include "test_util.h"

typedef enum { H_CLEAN, H_ACT_F16, H_ACT_BF16, H_AUTO_F16, H_AUTO_BF16, H_TF32, H_TABLE, H_GGML, H_COUNT } hyp;
static const char *const hyp_names[H_COUNT] = {"clean",         "act_f16_rounded", "act_bf16_rounded", "autocast_f16",
                                                "autocast_bf16", "tf32_matmul",     "gelu_f16_table",
                                                "gelu_f16_table,f16_matmul"};

/* What each path rounds (the reference's arithmetic and our how alike). */
typedef struct path {
    g2f_round w;      /* weights (and, for autocast, biases) */
    int round_bias;
    g2f_round gemm_in; /* both products' inputs */
    g2f_round store;  /* pre and act */
    g2f_round out;
    int table;        /* ggml's f16 GELU table */
} path;

static path path_of(hyp h) {
    path p = {G2F_ROUND_NONE, 0, G2F_ROUND_NONE, G2F_ROUND_NONE, G2F_ROUND_NONE, 0};
    switch (h) {
    case H_ACT_F16: p.store = G2F_ROUND_F16; break;
    case H_ACT_BF16: p.store = G2F_ROUND_BF16; break;
    case H_AUTO_F16: p = (path){G2F_ROUND_F16, 1, G2F_ROUND_F16, G2F_ROUND_F16, G2F_ROUND_F16, 0}; break;
    case H_AUTO_BF16: p = (path){G2F_ROUND_BF16, 1, G2F_ROUND_BF16, G2F_ROUND_BF16, G2F_ROUND_BF16, 0}; break;
    case H_TF32: p.w = p.gemm_in = G2F_ROUND_TF32; break;
    case H_TABLE: p.table = 1; break;
    case H_GGML: p.w = p.gemm_in = G2F_ROUND_F16, p.table = 1; break; /* ggml's example: F16 weights, f32 biases */
    default: break;
    }
    return p;
}

/* The float32 formula ports run (HF's gelu_new in float, ggml_gelu_f32). */
static float gelu_f32(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

static float gelu_ref(const path *p, float x) {
    if (!p->table) return gelu_f32(x);
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return g2f_round_value(G2F_ROUND_F16, gelu_f32(g2f_round_value(G2F_ROUND_F16, x)));
}

/* y (T, n) = x (T, k) W (k, n) + b in float32, the sum over k in reverse
 * order (another implementation than ours). */
static void matmul_rev(const float *x, const float *W, const float *b, size_t T, size_t k, size_t n, float *y) {
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (size_t i = k; i-- > 0;) acc += x[t * k + i] * W[i * n + j];
            y[t * n + j] = b ? acc + b[j] : acc;
        }
}

typedef struct kase {
    size_t d, h, T;
    float *x, *wfc, *bfc, *wproj, *bproj;     /* the checkpoint (Conv1D) and the recorded input */
    float *rw[4];                             /* the path's weights: w_fc, b_fc, w_proj, b_proj */
    float *pre, *act, *out;                   /* the reference */
} kase;

static void kase_free(kase *c) {
    free(c->x), free(c->wfc), free(c->bfc), free(c->wproj), free(c->bproj);
    for (int i = 0; i < 4; i++) free(c->rw[i]);
    free(c->pre), free(c->act), free(c->out);
}

static float gauss(uint64_t *s) {
    double u1 = (rnd_unit(s) + 1.0) / 2.0 + 1e-12, u2 = (rnd_unit(s) + 1.0) / 2.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* A case: x ~ N(0, 1) (a LayerNorm's output), c_fc so that pre has the
 * standard deviation pre_std, c_proj N(0, 0.05), small biases. */
static void kase_make(kase *c, size_t d, size_t T, double pre_std, uint64_t seed, const path *p) {
    size_t h = 4 * d;
    memset(c, 0, sizeof *c);
    c->d = d, c->h = h, c->T = T;
    c->x = malloc(T * d * sizeof(float)), c->wfc = malloc(d * h * sizeof(float)), c->bfc = malloc(h * sizeof(float));
    c->wproj = malloc(h * d * sizeof(float)), c->bproj = malloc(d * sizeof(float));
    size_t sizes[4] = {d * h, h, h * d, d};
    for (int i = 0; i < 4; i++) c->rw[i] = malloc(sizes[i] * sizeof(float));
    c->pre = malloc(T * h * sizeof(float)), c->act = malloc(T * h * sizeof(float)), c->out = malloc(T * d * sizeof(float));
    uint64_t s = seed * 7919 + 1;
    for (size_t i = 0; i < T * d; i++) c->x[i] = gauss(&s);
    double sfc = pre_std / sqrt((double)d);
    for (size_t i = 0; i < d * h; i++) c->wfc[i] = (float)(sfc * gauss(&s));
    for (size_t i = 0; i < h; i++) c->bfc[i] = 0.1f * gauss(&s);
    for (size_t i = 0; i < h * d; i++) c->wproj[i] = 0.05f * gauss(&s);
    for (size_t i = 0; i < d; i++) c->bproj[i] = 0.02f * gauss(&s);
    const float *src[4] = {c->wfc, c->bfc, c->wproj, c->bproj};
    for (int i = 0; i < 4; i++)
        g2f_round_span((i & 1) && !p->round_bias ? G2F_ROUND_NONE : p->w, src[i], c->rw[i], sizes[i]);
    /* the reference, by the path's arithmetic */
    float *xin = malloc(T * h * sizeof(float));
    g2f_round_span(p->gemm_in, c->x, xin, T * d);
    matmul_rev(xin, c->rw[0], c->rw[1], T, d, h, c->pre);
    g2f_round_span(p->store, c->pre, c->pre, T * h);
    for (size_t i = 0; i < T * h; i++) c->act[i] = gelu_ref(p, c->pre[i]);
    g2f_round_span(p->store, c->act, c->act, T * h);
    g2f_round_span(p->gemm_in == p->store ? G2F_ROUND_NONE : p->gemm_in, c->act, xin, T * h);
    matmul_rev(xin, c->rw[2], c->rw[3], T, h, d, c->out);
    g2f_round_span(p->out, c->out, c->out, T * d);
    free(xin);
}

static g2f_tensor view(const char *name, const float *data, size_t T, size_t w) {
    g2f_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = G2F_DTYPE_F32;
    t.ndim = 2;
    t.shape[0] = T, t.shape[1] = w;
    t.numel = (uint64_t)T * w;
    t.data = (const unsigned char *)data;
    t.nbytes = t.numel * 4;
    return t;
}

/* The true hypothesis's margin on case c (with pre/act recorded or not). */
static double margin_of(const kase *c, const path *p, int with_hidden, g2f_ffn_eval_ws *ws) {
    g2f_ffn_weights w = {c->d, c->h, G2F_LAYOUT_CONV1D, G2F_LAYOUT_CONV1D, c->rw[0], c->rw[1], c->rw[2], c->rw[3]};
    g2f_ffn_how how;
    memset(&how, 0, sizeof how);
    how.w = &w;
    how.gelu = p->table ? G2F_GELU_F16_TABLE : G2F_GELU_TANH;
    how.gemm_in = p->gemm_in;
    how.store = p->store;
    how.out_round = p->out;
    g2f_tensor tin = view("in", c->x, c->T, c->d), tout = view("out", c->out, c->T, c->d);
    g2f_tensor tpre = view("pre", c->pre, c->T, c->h), tact = view("act", c->act, c->T, c->h);
    g2f_fixture_views fx = {{[G2F_ACT_MLP_IN] = &tin, [G2F_ACT_MLP_OUT] = &tout,
                             [G2F_ACT_MLP_PRE] = with_hidden ? &tpre : NULL, [G2F_ACT_MLP_ACT] = with_hidden ? &tact : NULL},
                            c->T};
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_ffn_eval_opts opts = {NULL, 0, G2F_EVAL_OTHER_NONE, 0, 0, 0, NULL, NULL, NULL};
    g2f_ffn_eval_result r;
    g2f_error err = {0};
    if (g2f_ffn_eval(&how, &fx, 0, &tol, &opts, 1, ws, &r, &err) != G2F_OK) return INFINITY;
    double m = g2f_ffn_eval_margin(&r);
    if (getenv("DBG") && m > 1)
        fprintf(stderr, "    d %zu hidden %d: out %.3g (worst %zu: %.9g vs %.9g tol %.3g) pre %.3g act %.3g (worst %zu: e %.9g c %.9g tol %.3g)\n", c->d, with_hidden,
                r.out.margin, r.out.worst, r.out.worst_expected, r.out.worst_computed, r.out.worst_tol, r.pre.margin, r.act.margin, r.act.worst, r.act.worst_expected, r.act.worst_computed, r.act.worst_tol);
    g2f_ffn_eval_result_free(&r);
    return m;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Every hypothesis over 3 widths x 4 pre-activation scales x 12 seeds, with
 * and without pre/act: 288 cases each. The bound 0.8 leaves room below 1
 * for the float32 noise of a reference made another way. */
static void true_hypotheses_should_fit_well_inside_their_tolerance(void) {
    static const size_t widths[] = {16, 32, 64};
    static const double scales[] = {0.5, 1.0, 2.0, 3.5};
    enum { SEEDS = 12, N = 3 * 4 * SEEDS * 2 };
    g2f_ffn_eval_ws ws = {0};
    for (int hh = 0; hh < H_COUNT; hh++) {
        path p = path_of((hyp)hh);
        double m[N];
        size_t n = 0;
        for (size_t wi = 0; wi < 3; wi++)
            for (size_t si = 0; si < 4; si++)
                for (uint64_t seed = 0; seed < SEEDS; seed++) {
                    kase c;
                    kase_make(&c, widths[wi], 16, scales[si], seed + 100 * (uint64_t)hh + 17 * wi + 5 * si, &p);
                    m[n++] = margin_of(&c, &p, 1, &ws);
                    m[n++] = margin_of(&c, &p, 0, &ws);
                    kase_free(&c);
                }
        qsort(m, n, sizeof m[0], cmp_double);
        fprintf(stderr, "  %-26s margins over %zu cases: median %.3f, 90%% %.3f, 99%% %.3f, max %.3f\n",
                hyp_names[hh], n, m[n / 2], m[n * 9 / 10], m[n * 99 / 100], m[n - 1]);
        CHECK(m[n - 1] <= 0.8);
    }
    g2f_ffn_eval_ws_free(&ws);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    RUN(true_hypotheses_should_fit_well_inside_their_tolerance);
    CHECK_EXIT();
}
