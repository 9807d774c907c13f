/* g2f_tol: see the model in g2f_tol.h. Sums of squares are computed in
 * float by the same matmul as the FFN (their own rounding is irrelevant at
 * the 1e-7 relative level), everything else in double. Quantities are kept
 * in units of u^2 so floats neither underflow nor lose range. */
#include "g2f_tol.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_cpu.h"
#include "g2f_gelu_curv.h"

#define BLOCK 4096 /* elements per OpenMP task: fixed, so the thread count changes nothing */

static double input_roundoff(g2f_dtype d) {
    double r = g2f_dtype_store_roundoff(d);
    return d == G2F_DTYPE_F64 ? ldexp(1.0, -24) : r; /* F64 input is rounded to float here */
}

double g2f_round_unit(g2f_round r) {
    return r == G2F_ROUND_F16 || r == G2F_ROUND_TF32 ? ldexp(1.0, -11) : r == G2F_ROUND_BF16 ? ldexp(1.0, -8) : 0.0;
}

/* g2f_round_value, F16 by F16C when f16c (g2f_cpu_features()->f16c: the
 * same value); the loops below read the flag once, not per element (each
 * read costs a call: 62 -> 35 ns an element of the f16 table form's
 * hidden tolerance on one Zen 5 core). */
static float round_x(g2f_round r, float v, int f16c) {
    switch (r) {
    case G2F_ROUND_F16: return f16c ? g2f_cpu_round_f16(v) : g2f_f16_to_f32(g2f_f32_to_f16(v));
    case G2F_ROUND_BF16: return g2f_bf16_to_f32(g2f_f32_to_bf16(v));
    case G2F_ROUND_TF32: return g2f_round_tf32(v);
    default: return v;
    }
}

float g2f_round_value(g2f_round r, float v) { return round_x(r, v, g2f_cpu_features()->f16c); }

void g2f_round_span(g2f_round r, const float *in, float *out, size_t n) {
    if (r == G2F_ROUND_TF32) {
        g2f_round_tf32_buf(in, out, n);
        return;
    }
    const int f16c = g2f_cpu_features()->f16c;
    for (size_t i = 0; i < n; i++) out[i] = round_x(r, in[i], f16c);
}

double g2f_round_flip(g2f_round r, float v, double t) {
    if (r == G2F_ROUND_NONE || !(t >= 0)) return 0;
    float lo = g2f_round_value(r, (float)((double)v - t)), hi = g2f_round_value(r, (float)((double)v + t));
    return lo != hi ? fabs((double)hi - lo) : 0;
}

/* flip_one_x, with the window's ends rounded into *lo and *hi (when it
 * gets that far: the answer is not 0) for flip_prob_of. */
static double flip_ends(g2f_round r, float v, double t, int f16c, float *lo, float *hi) {
    if (r == G2F_ROUND_NONE || !(t >= 0)) return 0;
    *lo = round_x(r, (float)((double)v - t), f16c), *hi = round_x(r, (float)((double)v + t), f16c);
    if (*lo == *hi) return 0;
    /* neighbours when nothing representable lies between them: their midpoint, a tie, rounds to one of them */
    float mid = round_x(r, (float)(((double)*lo + *hi) / 2), f16c);
    double step = fabs((double)*hi - *lo);
    return mid == *lo || mid == *hi ? step : -step;
}

static double flip_one_x(g2f_round r, float v, double t, int f16c) {
    float lo, hi;
    return flip_ends(r, v, t, f16c, &lo, &hi);
}

double g2f_round_flip_one(g2f_round r, float v, double t) {
    return r == G2F_ROUND_NONE ? 0 : flip_one_x(r, v, t, g2f_cpu_features()->f16c);
}

g2f_tol_units g2f_tol_units_for(g2f_dtype in, g2f_dtype out, g2f_dtype pre, g2f_dtype act, double weight_roundoff) {
    g2f_tol_units u = {input_roundoff(in),
                       g2f_dtype_store_floor(in),
                       weight_roundoff,
                       g2f_dtype_store_roundoff(pre),
                       g2f_dtype_store_roundoff(act),
                       g2f_dtype_store_roundoff(out),
                       g2f_dtype_store_floor(pre),
                       g2f_dtype_store_floor(act),
                       g2f_dtype_store_floor(out),
                       G2F_ROUND_NONE,
                       0,
                       G2F_ROUND_NONE,
                       G2F_ROUND_NONE,
                       NULL};
    return u;
}

double g2f_tol_var_coef(size_t n_embd, const g2f_tol_units *un) {
    const double u = ldexp(1.0, -24), uin = un->u_in / u, uw = un->u_w / u;
    return 1.0 / (((double)n_embd / 2 + uin * uin + uw * uw) * u * u);
}

/* g2f_tol_ffn_hidden_x's loop when nothing rounds and no token adds a
 * variance: its expressions term for term (allow_pre and gm are 0 there),
 * so the same bits. Its two square roots and a division per value bound
 * it; hidden_plain runs it compiled for the widest vectors the CPU has
 * (no FMA: -ffp-contract=off, so every width the same bits; pinned by
 * test_tol_hidden_bits). gpt2ffn verify of 12 layers x 1024 tokens (d 768):
 * this step 0.095 -> 0.076 s with the AVX-512 build and act's square root
 * skipped where act has no reference (2 threads, Intel Xeon). */
/* Half the largest |GELU''| over [p - e, p + e], bounded (g2f_gelu_curv.h, any form):
 * |GELU(p + e) - GELU(p) - GELU'(p) e| <= curv_half(p, e) e^2. 0.43 near zero;
 * far from it, where the GELU is 0 or x, almost nothing (a global bound grew
 * the tolerance of huge pre values as pre^2). Selects and a division, so the
 * loops that call it stay vectorized; a NaN p takes the global bound. */
static inline __attribute__((always_inline)) double curv_half(double p, double e) {
    double a = fabs(p) - fabs(e);
    a = a > 0 ? a : 0;
    double r = G2F_GELU_CURV_K / (a * a * (a * a)); /* +inf at a = 0 */
    return G2F_GELU_CURV_C0 * (r < 1 ? r : 1);
}

static inline __attribute__((always_inline)) void
hidden_plain_body(size_t m, double d, double h, double kin, double uw2, double lambda, double u, const float *pre,
                  const float *act, const float *s, const float *gd, const double *exp_pre, const double *exp_act,
                  double u_pre, double u_act, double f_pre, double f_act, float *tol_pre, float *tol_act,
                  float *q) {
    double tp[BLOCK], ta[BLOCK];
    float qb[BLOCK];
    for (size_t r = 0; r < m; r++) {
        double hk = pre[r], ak = act[r];
        double v1 = d / 2 * s[r] + d / 3 * hk * hk + kin * s[r];
        double g = gd[r], ge = 2.0 * (fabs(ak) + fabs(hk));
        double vact = g * g * v1 + ge * ge;
        double t1 = lambda * u * sqrt(v1);
        double allow_act = curv_half(hk, t1) * t1 * t1;
        tp[r] = t1;
        if (exp_act) ta[r] = lambda * u * sqrt(vact) + allow_act; /* unused without act: a square root saved */
        vact += (allow_act * allow_act + 0.0) / (lambda * lambda * u * u);
        qb[r] = (float)((h / 2 + uw2) * ak * ak + vact);
    }
    if (exp_pre)
        for (size_t r = 0; r < m; r++) tol_pre[r] = (float)(tp[r] + 0.0 + (u_pre * fabs(exp_pre[r]) + f_pre));
    if (exp_act)
        for (size_t r = 0; r < m; r++) tol_act[r] = (float)(ta[r] + (u_act * fabs(exp_act[r]) + f_act));
    memcpy(q, qb, m * sizeof(float));
}

/* The body compiled three ways; the same arguments each. */
#define HIDDEN_PLAIN_ARGS                                                                                          \
    size_t m, double d, double h, double kin, double uw2, double lambda, double u, const float *pre,              \
        const float *act, const float *s, const float *gd, const double *exp_pre, const double *exp_act,          \
        double u_pre, double u_act, double f_pre, double f_act, float *tol_pre, float *tol_act, float *q
#define HIDDEN_PLAIN_PASS                                                                                          \
    m, d, h, kin, uw2, lambda, u, pre, act, s, gd, exp_pre, exp_act, u_pre, u_act, f_pre, f_act, tol_pre, tol_act, q
static void hidden_plain_any(HIDDEN_PLAIN_ARGS) { hidden_plain_body(HIDDEN_PLAIN_PASS); }
#if defined(GPT2FFN_X86_KERNELS) && defined(__x86_64__) /* (i386's x87 arithmetic would differ) */
#if defined(__clang__) /* clang knows no prefer-vector-width in a target attribute */
#define TARGET_512 __attribute__((target("avx512f"), min_vector_width(512)))
#else
#define TARGET_512 __attribute__((target("avx512f,prefer-vector-width=512")))
#endif
__attribute__((target("avx2"))) static void hidden_plain_avx2(HIDDEN_PLAIN_ARGS) {
    hidden_plain_body(HIDDEN_PLAIN_PASS);
}
TARGET_512 static void hidden_plain_512(HIDDEN_PLAIN_ARGS) {
    hidden_plain_body(HIDDEN_PLAIN_PASS);
}
static void hidden_plain(HIDDEN_PLAIN_ARGS) {
    const g2f_cpu *c = g2f_cpu_features();
    if (c->avx512f) hidden_plain_512(HIDDEN_PLAIN_PASS);
    else if (c->avx2_fma) hidden_plain_avx2(HIDDEN_PLAIN_PASS);
    else hidden_plain_any(HIDDEN_PLAIN_PASS);
}
#else
static void hidden_plain(HIDDEN_PLAIN_ARGS) { hidden_plain_any(HIDDEN_PLAIN_PASS); }
#endif

/* The probability that a value computed within sigma (standard deviation)
 * of v rounds (r) to the other side of the boundary nearest v inside v +- t:
 * Phi(-b / sigma) for a boundary at distance b, 0 without one in the window,
 * 1 with several (no finer claim). A flip's second moment is this times its
 * step squared: what it adds downstream is weighted by how likely it is.
 * From flip_ends's answer f and the window's ends lo, hi it rounded. */
static double flip_prob_of(float v, double f, float lo, float hi, double sigma) {
    if (f == 0) return 0;
    if (f < 0 || !(sigma > 0)) return 1;
    double b = fabs((double)v - ((double)lo + hi) / 2);
    return 0.5 * erfc(b / (sigma * sqrt(2.0)));
}

/* The second moment a rounding adds to a value known to within sigma: a
 * single boundary within t, its step with its probability; several (sigma
 * beyond the rounding's step), the step at v (the rest is sigma's, counted
 * already); none, 0. *f gets g2f_round_flip_one's answer. */
static double flip_moment(g2f_round r, float v, double t, double sigma, double *f, int f16c) {
    float lo, hi; /* the window's ends, rounded once for the flip and its probability */
    *f = flip_ends(r, v, t, f16c, &lo, &hi);
    if (*f == 0) return 0;
    if (*f > 0) return flip_prob_of(v, *f, lo, hi, sigma) * *f * *f;
    double ulp = 2 * g2f_round_unit(r) * fabs((double)v) + ldexp(1.0, -24); /* the step near v (subnormals too) */
    return ulp * ulp;
}

double g2f_round_flip_var(g2f_round r, float v, double var, double lambda) {
    double sigma = sqrt(var > 0 ? var : 0), t = lambda * sigma, f;
    double m = flip_moment(r, v, t, sigma, &f, g2f_cpu_features()->f16c);
    return f < 0 ? var + m : m; /* several steps apart: the value's own uncertainty stays */
}

/* A flip f (g2f_round_flip_one: > 0 one step, < 0 several) as a discrete
 * step for the comparison (*flip, when it is kept apart) or, when several
 * boundaries lie in the window or no flip array is kept, its size added to
 * the tolerance (*box). */
static void place_flip(double f, float *flip, double *box) {
    if (f > 0 && flip) *flip = (float)f;
    else *box += fabs(f);
}

/* One hidden element's inputs to its rounding allowances. */
typedef struct flip_in {
    float pre_u, pre, act_u, act;
    double g, tp, ta, curv, lambda;
    int fl;   /* flips placed as steps (g2f_flips) rather than boxed */
    int f16c; /* g2f_cpu_features()->f16c, read once */
} flip_in;

/* The f16 table entry's own rounding at the half x16 (exact: its GELU in
 * double): the entry's float formula is within fe of exact, one more
 * neighbour within prop (a pre step's effect). */
static double own_fe(double exact, double x16) { return 4 * ldexp(1.0, -24) * (fabs(exact) + fabs(x16)); }
static double own_flip(double exact, double x16, double prop, int f16c) {
    return fabs(x16) < 10 ? flip_one_x(G2F_ROUND_F16, (float)exact, own_fe(exact, x16) + prop, f16c) : 0;
}
/* Without a pre step: the flip (*own0) and its second moment. */
static double own0_of(double exact, double x16, double lambda, double *own0, int f16c) {
    double fe = own_fe(exact, x16);
    *own0 = 0;
    return fabs(x16) < 10 ? flip_moment(G2F_ROUND_F16, (float)exact, fe, fe / lambda, own0, f16c) : 0;
}

int g2f_tol_f16_make(g2f_tol_f16 *t, double lambda) {
    if (t->half && t->lambda == lambda) return 1;
    if (!t->half && !(t->half = aligned_alloc(32, 65536 * sizeof *t->half))) return 0;
    for (uint32_t b = 0; b < 65536; b++) {
        double x16 = g2f_f16_to_f32((uint16_t)b);
        g2f_tol_f16_half *e = &t->half[b];
        e->exact = g2f_gelu_tanh_f64(x16);
        e->m_own0 = own0_of(e->exact, x16, lambda, &e->own0, g2f_cpu_features()->f16c);
        e->pad = 0;
    }
    t->lambda = lambda;
    return 1;
}

void g2f_tol_f16_free(g2f_tol_f16 *t) {
    free(t->half);
    t->half = NULL;
}

/* The f16 table's entry for pre: its half *x16, the half's GELU *exact,
 * the entry's own flip *own0 (no pre step widening its window) and, the
 * return value, that flip's second moment; from the table of halves when
 * it is for this lambda, else computed (own0_of). */
static double table_entry(const g2f_tol_units *un, float pre, double lambda, int f16c, double *x16, double *exact,
                          double *own0) {
    uint16_t hb = f16c ? g2f_cpu_f32_to_f16(pre) : g2f_f32_to_f16(pre);
    const g2f_tol_f16 *tb = un->f16 && un->f16->lambda == lambda ? un->f16 : NULL;
    *x16 = g2f_f16_to_f32(hb);
    if (tb) {
        *exact = tb->half[hb].exact, *own0 = tb->half[hb].own0;
        return tb->half[hb].m_own0;
    }
    *exact = g2f_gelu_tanh_f64(*x16);
    return own0_of(*exact, *x16, lambda, own0, f16c);
}

/* The allowances for the port's roundings of one hidden element: boxed
 * (*box_pre, *box_act, absolute), placed as steps (*f_*), and the second
 * moment carried into c_proj (*flip_var, absolute). */
static void hidden_flips(const g2f_tol_units *un, const flip_in *fi, double *box_pre, double *box_act, double *flips,
                         double *flip_var, float *f_pre, float *f_act1, float *f_act2) {
    const double g = fi->g, tp = fi->tp, ta = fi->ta, curv = fi->curv, lambda = fi->lambda;
    const double ak = fi->act;
    /* two computations of a value within its tolerance round to neighbours
     * when a boundary lies between them: pre's own rounding, the table's
     * input; the GELU carries a pre step (its slope; the curvature over the
     * step joins the tolerance), and act's own rounding may then flip
     * anywhere in the widened window */
    double fp, fin = 0, sg = tp / lambda;
    const int hw = fi->f16c;
    double m_pre = flip_moment(un->store, fi->pre_u, tp, sg, &fp, hw);
    if (un->table_in) m_pre += flip_moment(G2F_ROUND_F16, fi->pre, tp, sg, &fin, hw);
    double dp = fabs(fp) + fabs(fin), prop = fabs(g) * dp;
    place_flip(fp, fi->fl ? f_pre : NULL, box_pre);
    *box_act += curv_half(fi->pre, dp) * dp * dp;
    place_flip(fp < 0 || fin < 0 || (fp && fin) ? -prop : prop, fi->fl ? f_act1 : NULL, box_act);
    /* act's own rounding: where it can land after a pre step (own), and without one
     * (own0, with its probability) */
    double own, own0, m_own0;
    if (un->table_in) { /* the table holds f16(GELU) by a float formula (ggml's, or another's) */
        double x16, exact;
        m_own0 = table_entry(un, fi->pre, lambda, hw, &x16, &exact, &own0);
        own = prop == 0 ? own0 : own_flip(exact, x16, prop, hw); /* own_flip(.., 0) is own0 */
    } else {
        own = flip_one_x(un->store, fi->act_u, ta + prop, hw);
        m_own0 = flip_moment(un->store, fi->act_u, ta, ta / lambda, &own0, hw);
    }
    place_flip(own, fi->fl ? f_act2 : NULL, box_act);
    *flips = prop + fabs(own);
    /* downstream, each event's second moment: pre's roundings carried by the slope
     * (with act's own step that may follow), and act's rounding alone */
    double s_act = 2 * g2f_round_unit(un->table_in ? G2F_ROUND_F16 : un->store) * fabs(ak);
    *flip_var = g * g * m_pre + (m_pre > 0 ? s_act * s_act : 0) + m_own0;
    /* c_proj's input rounding (TF32, ggml's F16): on its own, and after a pre step with
     * that step's probability (m_pre / dp^2) */
    double fg, m_gm = flip_moment(un->gemm_act, fi->act, ta + curv + *box_act + *flips, ta / lambda, &fg, hw);
    *flip_var += m_gm + (dp > 0 ? m_pre / (dp * dp) : 0) * fg * fg;
}

#define SUB 512 /* elements of a rounding path's block handled at a time (its arrays on the stack) */

/* Whether each element's window pre +- tp holds no float16 boundary (the
 * table's input rounds alike at both ends: flip_one_x(F16, pre, tp) is 0),
 * for the elements r < m, the roundings 8 at a time with F16C. */
static void table_in_still(const float *pre, const double *tp, size_t m, int f16c, unsigned char *still) {
    float lo[SUB], hi[SUB];
    for (size_t r = 0; r < m; r++) {
        lo[r] = (float)((double)pre[r] - tp[r]);
        hi[r] = (float)((double)pre[r] + tp[r]);
    }
    if (f16c) {
        g2f_cpu_round_f16_span(lo, lo, m);
        g2f_cpu_round_f16_span(hi, hi, m);
    } else {
        for (size_t r = 0; r < m; r++) {
            lo[r] = round_x(G2F_ROUND_F16, lo[r], 0);
            hi[r] = round_x(G2F_ROUND_F16, hi[r], 0);
        }
    }
    for (size_t r = 0; r < m; r++) still[r] = lo[r] == hi[r];
}

/* hidden_flips when only the table's input rounds (un->store and
 * un->gemm_act NONE) and no float16 boundary lies within pre +- tp: then
 * no pre step (dp = 0, and prop = |g| dp = 0 as g is finite: the GELU
 * derivative clamps its input), the entry's own flip own0 as it is, and
 * downstream its second moment m_own0 only; the same values as
 * hidden_flips there (test_tol_hidden_bits). */
static void hidden_table_still(const g2f_tol_units *un, const flip_in *fi, double *box_act, double *flips,
                               double *flip_var, float *f_act2) {
    double x16, exact, own0, m_own0 = table_entry(un, fi->pre, fi->lambda, fi->f16c, &x16, &exact, &own0);
    place_flip(own0, fi->fl ? f_act2 : NULL, box_act);
    *flips = fabs(own0);
    *flip_var = m_own0;
}

/* g2f_tol_ffn_hidden_x's arguments, for its parts. */
typedef struct hidden_args {
    const g2f_tol_units *un;
    const float *pre_u, *pre, *act_u, *act, *s;
    const double *exp_pre, *exp_act, *tok_extra;
    float *tol_pre, *tol_act, *q;
    g2f_flips *fl;
    size_t n_inner;
    double d, h, uw, kin; /* n_embd, n_inner; in units of u: the weights' rounding, and kin = uin^2 + uw^2 */
    double lambda;
    int f16c;
    int rounds;     /* a port's rounding between the stages (else only a token's variance) */
    int table_only; /* the f16 table's input the only one: most elements take hidden_table_still */
} hidden_args;

/* g2f_tol_ffn_hidden_x's elements [i0, i0 + m) (m <= SUB) when something
 * rounds or a token adds a variance; gd their GELU'(pre). */
static void hidden_rounds(const hidden_args *x, size_t i0, size_t m, const float *gd) {
    const g2f_tol_units *un = x->un;
    const double u = ldexp(1.0, -24), lambda = x->lambda, d = x->d, h = x->h, uw = x->uw, kin = x->kin;
    const int rounds = x->rounds, table_only = x->table_only;
    const float *pre = x->pre, *act = x->act, *s = x->s;
    g2f_flips *fl = x->fl;
    double v1b[SUB], tpb[SUB];
    unsigned char still[SUB];
    for (size_t r = 0; r < m; r++) {
        size_t i = i0 + r;
        double hk = pre[i];
        v1b[r] = d / 2 * s[i] + d / 3 * hk * hk + kin * s[i] +
                 (x->tok_extra ? x->tok_extra[i / x->n_inner] : 0.0); /* / u^2 */
        tpb[r] = lambda * u * sqrt(v1b[r]);
    }
    if (table_only) table_in_still(pre + i0, tpb, m, x->f16c, still);
    for (size_t r = 0; r < m; r++) {
        size_t i = i0 + r;
        double hk = pre[i], ak = act[i];
        double v1 = v1b[r];
        double g = gd[r], ge = 2.0 * (fabs(ak) + fabs(hk));
        double vact = g * g * v1 + ge * ge;
        /* allowances (absolute) beyond the random-rounding model: the GELU's curvature over
         * pre's tolerance interval (curv_half: |GELU(p + e) - GELU(p) - g e| <= 0.43 e^2 near
         * zero, less far from it: negligible for float32 rounding, e ~ 1e-6, not for quantization noise),
         * and a rounding boundary within an element's tolerance (one step more) */
        double tp = tpb[r], ta = lambda * u * sqrt(vact), curv = curv_half(hk, tp) * tp * tp;
        double box_pre = 0, box_act = 0, flips = 0, flip_var = 0;
        float f_pre = 0, f_act1 = 0, f_act2 = 0;
        flip_in fi = {x->pre_u[i], pre[i], x->act_u[i], act[i], g, tp, ta, curv, lambda, fl != NULL, x->f16c};
        if (table_only && still[r])
            hidden_table_still(un, &fi, &box_act, &flips, &flip_var, &f_act2);
        else if (rounds)
            hidden_flips(un, &fi, &box_pre, &box_act, &flips, &flip_var, &f_pre, &f_act1, &f_act2);
        if (fl && fl->pre) fl->pre[i] = f_pre;
        if (fl && fl->act1) fl->act1[i] = f_act1, fl->act2[i] = f_act2;
        if (x->tol_pre && x->exp_pre) x->tol_pre[i] = (float)(tp + box_pre + (un->u_pre * fabs(x->exp_pre[i]) + un->f_pre));
        if (x->tol_act && x->exp_act)
            x->tol_act[i] = (float)(ta + curv + box_act + (un->u_act * fabs(x->exp_act[i]) + un->f_act));
        /* into c_proj: the curvature a systematic bound as before; a flip is an error of its
         * step with the probability above, independent across elements: its second moment takes
         * the lambda sigmas like the roundings' variance (what is boxed counts whole) */
        (void)flips;
        vact += curv * curv / (lambda * lambda * u * u) + flip_var / (u * u);
        x->q[i] = (float)((h / 2 + uw * uw) * ak * ak + vact); /* coefficient of W_proj[k,j]^2 */
    }
}

void g2f_tol_ffn_hidden_x(size_t n, size_t n_embd, size_t n_inner, const float *pre_u, const float *pre,
                          const float *act_u, const float *act, const float *s, const double *exp_pre,
                          const double *exp_act, const g2f_tol_units *un, double lambda, const double *tok_extra,
                          float *tol_pre, float *tol_act, float *q, g2f_flips *fl, int n_threads) {
    const double u = ldexp(1.0, -24);
    const double uin = un->u_in / u, uw = un->u_w / u; /* in units of u */
    const double d = (double)n_embd, h = (double)n_inner;
    const int rounds = un->store != G2F_ROUND_NONE || un->table_in || un->gemm_act != G2F_ROUND_NONE;
    const int table_only = un->table_in && un->store == G2F_ROUND_NONE && un->gemm_act == G2F_ROUND_NONE;
    const hidden_args hx = {un, pre_u, pre, act_u, act, s, exp_pre, exp_act, tok_extra, tol_pre, tol_act, q, fl,
                            n_inner, d, h, uw, uin * uin + uw * uw, lambda, g2f_cpu_features()->f16c, rounds,
                            table_only};
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long b = 0; b < blocks; b++) {
        size_t i0 = (size_t)b * BLOCK, m = n - i0 < BLOCK ? n - i0 : BLOCK;
        float gd[BLOCK]; /* GELU'(pre), vectorized (g2f_gelu_deriv_span) */
        g2f_gelu_deriv_span(pre + i0, gd, m);
        if (!rounds && !tok_extra) {
            /* the plain computation: the same arithmetic without the rounding
             * flips, in straight loops the compiler vectorizes (q may be s:
             * written after the block is read) */
            hidden_plain(m, d, h, uin * uin + uw * uw, uw * uw, lambda, u, pre + i0, act + i0, s + i0, gd,
                         tol_pre && exp_pre ? exp_pre + i0 : NULL, tol_act && exp_act ? exp_act + i0 : NULL,
                         un->u_pre, un->u_act, un->f_pre, un->f_act, tol_pre ? tol_pre + i0 : NULL, tol_act ? tol_act + i0 : NULL,
                         q + i0);
            if (fl && fl->pre) memset(fl->pre + i0, 0, m * sizeof(float)); /* no rounding, no flip */
            if (fl && fl->act1) memset(fl->act1 + i0, 0, m * sizeof(float)), memset(fl->act2 + i0, 0, m * sizeof(float));
            continue;
        }
        for (size_t r0 = 0; r0 < m; r0 += SUB)
            hidden_rounds(&hx, i0 + r0, m - r0 < SUB ? m - r0 : SUB, gd + r0);
    }
}

void g2f_tol_ffn_out_x(size_t n, size_t n_inner, size_t n_embd, const float *out, const float *v,
                       const double *exp_out, const g2f_tol_units *un, double lambda, const double *tok_extra,
                       float *tol_out, float *flip_out, float *noise,
                       int n_threads) { /* out: before its rounding (un->out_round) */
    const double u = ldexp(1.0, -24), h = (double)n_inner;
    const int f16c = g2f_cpu_features()->f16c;
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long b = 0; b < blocks; b++) {
        size_t i0 = (size_t)b * BLOCK, i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
        for (size_t i = i0; i < i1; i++) {
            double y = out[i];
            double var = (double)v[i] + h / 3 * y * y + (tok_extra ? tok_extra[i / n_embd] : 0.0);
            double t = lambda * u * sqrt(var), box = 0;
            float f = 0;
            place_flip(flip_one_x(un->out_round, out[i], t, f16c), flip_out ? &f : NULL, &box);
            if (flip_out) flip_out[i] = f;
            double stored = un->u_out * fabs(exp_out[i]) + un->f_out;
            if (noise) noise[i] = (float)(u * u * var + (box + f) * (box + f) + stored * stored / 3);
            tol_out[i] = (float)(t + box + stored);
        }
    }
}

void g2f_tol_layernorm_var(const float *x, const float *y, size_t T, size_t d, const float *w, const float *b,
                           double eps, double u_in, double f_in, float *var, int n_threads) {
    const double u = ldexp(1.0, -24), u2 = u * u, n = (double)d;
    long rows = (long)T;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long t = 0; t < rows; t++) {
        const float *xr = x + (size_t)t * d, *yr = y + (size_t)t * d;
        float *vr = var + (size_t)t * d;
        double sx = 0, sxx = 0;
        for (size_t i = 0; i < d; i++) sx += xr[i], sxx += (double)xr[i] * xr[i];
        double mu = sx / n, sp = 0, spp = 0;
        for (size_t i = 0; i < d; i++) {
            double p = ((double)xr[i] - mu) * ((double)xr[i] - mu);
            sp += p, spp += p * p;
        }
        double v = sp / n, r = 1.0 / sqrt(v + eps);
        double var_mu = u2 * (n / 2 * sxx + n / 3 * sx * sx) / (n * n);          /* the mean, a sum of d */
        double var_v = u2 * (n / 2 * spp + n / 3 * sp * sp) / (n * n);           /* the variance, likewise */
        double var_r = var_v / (4 * (v + eps) * (v + eps)) + 2 * u2;              /* relative, and 1/sqrt */
        for (size_t i = 0; i < d; i++) {
            double wi = w ? w[i] : 1.0, z = ((double)xr[i] - mu) * r;
            double vz = r * r * var_mu + z * z * var_r + 2 * u2 * z * z            /* centre, scale, sub and mul */
                        + r * r * (u_in * u_in * (double)xr[i] * xr[i] + f_in * f_in); /* the input's rounding */
            vr[i] = (float)(wi * wi * vz + u2 * (z * wi) * (z * wi) + u2 * (double)yr[i] * yr[i]);
        }
        (void)b;
    }
}

void g2f_tol_user(const g2f_tol_params *p, const double *expected, size_t n, float *tol) {
    for (size_t i = 0; i < n; i++) tol[i] = (float)(p->atol + p->rtol * fabs(expected[i]));
}

g2f_status g2f_tol_compute(const g2f_tol_request *r, const g2f_tol_params *p, float *tol_out, float *tol_pre,
                           float *tol_act, int n_threads, g2f_error *err) {
    const g2f_ffn_weights *w = r->w;
    size_t T = r->n_tokens, d = w->n_embd, h = w->n_inner;
    if (p->user) {
        g2f_tol_user(p, r->exp_out, T * d, tol_out);
        if (tol_pre && r->exp_pre) g2f_tol_user(p, r->exp_pre, T * h, tol_pre);
        if (tol_act && r->exp_act) g2f_tol_user(p, r->exp_act, T * h, tol_act);
        return G2F_OK;
    }
    double lambda = g2f_tol_lambda(p);
    g2f_tol_units un = g2f_tol_units_for(r->dtype_in, r->dtype_out, r->dtype_pre, r->dtype_act, r->weight_roundoff);
    /* pre2 (scratch for the recomputed pre), s and q (T, h); out2 and v (T, d) */
    size_t width = 3 * h + 3 * d;
    float *buf = g2f_alloc_work(T, width, sizeof(float), "tolerance: the buffers", err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    float *pre2 = buf, *s = pre2 + T * h, *q = s + T * h, *out2 = q + T * h, *v = out2 + T * d, *a2 = NULL;
    if (un.f_in > 0) { /* the input's absolute floor: x^2 + f_in^2 / (the coefficient of x^2) */
        const double k2 = g2f_tol_var_coef(d, &un);
        a2 = v + T * d;
        for (size_t i = 0; i < T * d; i++) a2[i] = (float)((double)r->x[i] * r->x[i] + k2 * un.f_in * un.f_in);
    }
    /* the products of squares, with their FFN products recomputed beside them (discarded) */
    g2f_matmul_sq(r->x, a2, T, d, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, h, NULL, pre2, s, n_threads, r->ws);
    g2f_tol_ffn_hidden_x(T * h, d, h, r->pre, r->pre, r->act, r->act, s, r->exp_pre, r->exp_act, &un, lambda, NULL,
                         tol_pre, tol_act, q, NULL, n_threads);
    g2f_matmul_sq(r->act, q, T, h, w->w_proj, w->layout_proj == G2F_LAYOUT_LINEAR, d, NULL, out2, v, n_threads,
                  r->ws);
    g2f_tol_ffn_out_x(T * d, h, d, r->out, v, r->exp_out, &un, lambda, NULL, tol_out, NULL, NULL, n_threads);
    free(buf);
    return G2F_OK;
}

double g2f_tol_lambda(const g2f_tol_params *p) { return p && p->lambda > 0 ? p->lambda : G2F_TOL_LAMBDA; }

void g2f_tol_input_var(const float *x, size_t n, g2f_dtype dt, float *v) {
    double u = dt == G2F_DTYPE_F64 ? ldexp(1.0, -24) : g2f_dtype_store_roundoff(dt);
    double f = g2f_dtype_store_floor(dt);
    for (size_t i = 0; i < n; i++) v[i] = (float)(u * u * (double)x[i] * x[i] + f * f);
}
