/* g2f_diff: weight-to-weight comparison; see g2f_diff.h. Each layer of both
 * models is loaded once (plus, for a tensor that matches nothing else, the
 * other layers of A whose first values agree). */
#include "g2f_diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_quant.h"

#define SIGNATURE 16 /* leading logical values kept per tensor to find layer swaps */

static const char *const kind_names[] = {"identical",  "rounded", "zero_bias", "f16_rounded", "bf16_rounded",
                                         "transposed", "from_layer", "scaled", "quantized", "missing", "different"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == G2F_DIFF_KIND_COUNT, "one name per kind");

const char *g2f_diff_kind_name(g2f_diff_kind k) { return (unsigned)k < G2F_DIFF_KIND_COUNT ? kind_names[k] : "?"; }

const char *g2f_diff_accept_name(unsigned accept_class) {
    return accept_class == G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED ? "weights_quantized" : NULL;
}

bool g2f_diff_accept_parse(const char *list, unsigned *classes) {
    unsigned c = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == strlen("weights_quantized") && !strncmp(p, "weights_quantized", n)) c |= G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED;
        else return false;
        p += n;
        if (*p == ',') p++;
    }
    *classes = c;
    return true;
}

void g2f_diff_accept(g2f_diff_result *r, unsigned classes) {
    r->accept = classes;
    r->accepted = 0;
    for (size_t L = 0; r->tensors && L < r->n_layers; L++)
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            g2f_diff_tensor *t = &r->tensors[L][k];
            t->accepted = !t->equivalent && t->accept_class && (t->accept_class & classes) == t->accept_class;
            r->accepted += (size_t)t->accepted;
        }
    r->all_accepted = r->same_sizes && !r->equivalent && r->accepted == r->differing;
}

/* Relative rounding of a value stored in dtype, against an exact original. */
static double storage_roundoff(g2f_dtype d) {
    switch (d) {
    case G2F_DTYPE_F16: return ldexp(1.0, -11);
    case G2F_DTYPE_BF16: return ldexp(1.0, -8);
    case G2F_DTYPE_F32: return ldexp(1.0, -24);
    default: return 0;
    }
}

typedef struct tol {
    double rel, abs; /* |a - b| <= rel |a| + abs */
} tol;

static tol tol_for(g2f_dtype a, g2f_dtype b) {
    if (a == b) return (tol){0, 0}; /* same dtype: a faithful port is bit-identical */
    double ra = storage_roundoff(a), rb = storage_roundoff(b);
    int f16 = a == G2F_DTYPE_F16 || b == G2F_DTYPE_F16;
    return (tol){ra > rb ? ra : rb, f16 ? ldexp(1.0, -25) : 0}; /* F16 subnormals: absolute steps of 2^-24 */
}

/* |a - b| <= t, plus bound[i] when bound is not NULL (quantized weights). */
static int within(const float *a, const float *b, size_t n, tol t, const float *bound) {
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= t.rel * fabs(a[i]) + t.abs + (bound ? bound[i] : 0))) return 0;
    }
    return 1;
}

/* Logical copy: c_fc weight as (n_embd, n_inner), c_proj as (n_inner, n_embd). */
static void logical(const float *raw, g2f_layout layout, size_t rows, size_t cols, float *out) {
    if (layout == G2F_LAYOUT_CONV1D) {
        memcpy(out, raw, rows * cols * sizeof(float));
        return;
    }
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) out[i * cols + j] = raw[j * rows + i];
}

typedef struct loaded {
    float *buf;          /* owned: the four logical tensors back to back */
    const float *v[G2F_FFN_TENSORS];
    const float *raw[G2F_FFN_TENSORS];  /* the layer views, valid while lay is held */
    g2f_dtype dtype[G2F_FFN_TENSORS];
    const float *step[G2F_FFN_TENSORS], *bound[G2F_FFN_TENSORS]; /* quantized tensors: logical order */
    float *qbuf;         /* owned: their steps and bounds */
    g2f_layer lay;
} loaded;

static size_t tensor_size(int k, size_t d, size_t h) { return k == 0 || k == 2 ? d * h : k == 1 ? h : d; }

static g2f_status load(const g2f_model *m, size_t L, loaded *o, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    memset(o, 0, sizeof *o);
    g2f_status s = g2f_model_layer_load(m, L, &o->lay, err);
    if (s != G2F_OK) return s;
    size_t nq = 0; /* elements of quantized tensors: a step and a bound each, plus one raw tensor's worth */
    for (int k = 0; k < G2F_FFN_TENSORS; k++)
        if (o->lay.src[k] && g2f_dtype_is_quant(o->lay.src[k]->dtype)) nq += tensor_size(k, d, h);
    o->buf = g2f_alloc_array(2 * d * h + d + h, sizeof(float));
    o->qbuf = nq ? g2f_alloc_array(2 * nq + d * h, sizeof(float)) : NULL;
    if (!o->buf || (nq && !o->qbuf)) {
        free(o->buf);
        free(o->qbuf);
        g2f_layer_free(&o->lay);
        return g2f_error_set(err, G2F_ERR_NOMEM, "diff: cannot allocate layer %zu", L);
    }
    float *raw = o->qbuf ? o->qbuf + 2 * nq : NULL, *q = o->qbuf;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        const g2f_tensor *src = o->lay.src[k];
        if (!src || !g2f_dtype_is_quant(src->dtype)) continue;
        size_t n = tensor_size(k, d, h);
        float *st = q, *bd = q + n;
        g2f_layout lay = k == 0 ? o->lay.w.layout_fc : o->lay.w.layout_proj;
        size_t rows = k == 0 ? d : h, cols = k == 0 ? h : d;
        for (int which = 0; which < 2; which++) { /* step, then bound, in the file's order, then logical */
            g2f_quant_bounds(src->dtype, src->data, 0, n, which ? NULL : raw, which ? raw : NULL);
            if (k == 0 || k == 2) logical(raw, lay, rows, cols, which ? bd : st);
            else memcpy(which ? bd : st, raw, n * sizeof(float));
        }
        o->step[k] = st;
        o->bound[k] = bd;
        q += 2 * n;
    }
    const float *views[G2F_FFN_TENSORS] = {o->lay.w.w_fc, o->lay.w.b_fc, o->lay.w.w_proj, o->lay.w.b_proj};
    float *p = o->buf;
    for (int k = 0; k < G2F_FFN_TENSORS; k++) {
        size_t n = tensor_size(k, d, h);
        o->raw[k] = views[k];
        o->dtype[k] = o->lay.src[k] ? o->lay.src[k]->dtype : G2F_DTYPE_F32;
        if (!views[k]) continue;
        if (k == 0) logical(views[k], o->lay.w.layout_fc, d, h, p);
        else if (k == 2) logical(views[k], o->lay.w.layout_proj, h, d, p);
        else memcpy(p, views[k], n * sizeof(float));
        o->v[k] = p;
        p += n;
    }
    return G2F_OK;
}

static void unload(loaded *o) {
    free(o->buf);
    free(o->qbuf);
    g2f_layer_free(&o->lay);
    memset(o, 0, sizeof *o);
}

static int all_zero(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (v[i] != 0) return 0;
    return 1;
}

static int rounds_to(const float *wide, const float *narrow, size_t n, int bf16) {
    for (size_t i = 0; i < n; i++) {
        float r = bf16 ? g2f_bf16_to_f32(g2f_f32_to_bf16(wide[i])) : g2f_f16_to_f32(g2f_f32_to_f16(wide[i]));
        if (!(r == narrow[i] || (isnan(r) && isnan(narrow[i])))) return 0;
    }
    return 1;
}

typedef struct differ {
    const g2f_model *a, *b;
    size_t d, h;
    float (*sig)[G2F_FFN_TENSORS][SIGNATURE]; /* A's leading logical values per layer */
    float *scratch;                            /* d * h floats */
    float *qscratch;                           /* d * h floats: A's bound + B's when both are quantized */
} differ;

/* B is A quantized: every |B - A| is within the bound qb. */
static void quantized_verdict(g2f_diff_tensor *o, const float *a, const float *b, size_t n, const float *qb,
                              const float *step, g2f_dtype dtype) {
    o->kind = G2F_DIFF_QUANTIZED;
    o->quant = dtype;
    o->accept_class = G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        double steps = e == 0 ? 0 : step[i] > 0 ? e / step[i] : INFINITY;
        double ratio = e == 0 ? 0 : e / qb[i];
        if (steps > o->max_steps) o->max_steps = steps;
        if (ratio > o->bound_ratio) o->bound_ratio = ratio;
    }
}

static void classify(differ *df, size_t L, int k, const loaded *A, const loaded *B, g2f_diff_tensor *o,
                     g2f_error *err, g2f_status *st) {
    size_t n = tensor_size(k, df->d, df->h);
    const float *a = A->v[k], *b = B->v[k];
    memset(o, 0, sizeof *o); /* equivalent 0: set only by the verdicts that are */
    o->from_layer = -1;
    if (!a || !b) {
        const float *only = a ? a : b;
        o->kind = only && all_zero(only, n) ? G2F_DIFF_ZERO_BIAS : G2F_DIFF_MISSING;
        o->equivalent = o->kind == G2F_DIFF_ZERO_BIAS;
        return;
    }
    /* Quantized weights: the bound of B's blocks (A's too when A is quantized). */
    const float *qb = B->bound[k];
    if (A->bound[k]) {
        if (qb) {
            for (size_t i = 0; i < n; i++) df->qscratch[i] = A->bound[k][i] + qb[i];
            qb = df->qscratch;
        } else {
            qb = A->bound[k];
        }
    }
    int identical = 1;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - b[i]);
        double rel = diff / (fabs(a[i]) > 0 ? fabs(a[i]) : 1.0);
        if (a[i] != b[i]) identical = 0;
        if (diff > o->max_abs || isnan(diff)) o->max_abs = diff, o->worst = i;
        if (rel > o->max_rel) o->max_rel = rel;
    }
    tol t = tol_for(A->dtype[k], B->dtype[k]);
    tol loose = {t.rel > 0x1p-23 ? t.rel : 0x1p-23, t.abs}; /* for derived values: one more rounding */
    /* the verdicts in order, the first that fits: each returns */
    if (!identical && qb && within(a, b, n, t, qb)) {
        quantized_verdict(o, a, b, n, qb, B->step[k] ? B->step[k] : A->step[k], B->step[k] ? B->dtype[k] : A->dtype[k]);
        return;
    }
    if (identical || (t.rel > 0 && within(a, b, n, t, NULL))) {
        o->kind = identical ? G2F_DIFF_IDENTICAL : G2F_DIFF_ROUNDED;
        o->equivalent = 1;
        return;
    }
    if (rounds_to(a, b, n, 0) || rounds_to(b, a, n, 0)) {
        o->kind = G2F_DIFF_F16_ROUNDED;
        return;
    }
    if (rounds_to(a, b, n, 1) || rounds_to(b, a, n, 1)) {
        o->kind = G2F_DIFF_BF16_ROUNDED;
        return;
    }
    if (k == 0 || k == 2) { /* A's bytes read in the other layout */
        const loaded *src = A;
        g2f_layout lay = k == 0 ? src->lay.w.layout_fc : src->lay.w.layout_proj;
        g2f_layout other = lay == G2F_LAYOUT_CONV1D ? G2F_LAYOUT_LINEAR : G2F_LAYOUT_CONV1D;
        size_t rows = k == 0 ? df->d : df->h, cols = k == 0 ? df->h : df->d;
        logical(src->raw[k], other, rows, cols, df->scratch);
        if (within(df->scratch, b, n, t, B->bound[k])) {
            o->kind = G2F_DIFF_TRANSPOSED;
            return;
        }
    }
    size_t n_layer = g2f_model_get_info(df->a)->n_layer;
    for (size_t K = 0; K < n_layer; K++) {
        if (K == L || !within(df->sig[K][k], b, n < SIGNATURE ? n : SIGNATURE, t, B->bound[k])) continue;
        loaded other;
        if ((*st = load(df->a, K, &other, err)) != G2F_OK) return;
        int same = other.v[k] && within(other.v[k], b, n, t, B->bound[k]);
        unload(&other);
        if (same) {
            o->kind = G2F_DIFF_FROM_LAYER;
            o->from_layer = (long)K;
            return;
        }
    }
    if (qb) {
        o->kind = G2F_DIFF_DIFFERENT; /* a scale is not looked for under quantization noise */
        return;
    }
    double ab = 0, aa = 0;
    for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i];
    double c = aa > 0 ? ab / aa : 0;
    if (c != 0 && fabs(c - 1) > 1e-6) {
        int fits = 1;
        for (size_t i = 0; i < n && fits; i++) {
            double want = c * a[i];
            fits = fabs(want - b[i]) <= loose.rel * 2 * fabs(want) + loose.abs;
        }
        if (fits) {
            o->kind = G2F_DIFF_SCALED;
            o->scale = c;
            return;
        }
    }
    o->kind = G2F_DIFF_DIFFERENT;
}

g2f_status g2f_diff_run(const g2f_model *a, const g2f_model *b, g2f_diff_result *out, g2f_error *err) {
    const g2f_model_info *ia = g2f_model_get_info(a), *ib = g2f_model_get_info(b);
    memset(out, 0, sizeof *out);
    if (ia->n_layer != ib->n_layer || ia->n_embd != ib->n_embd || ia->n_inner != ib->n_inner) {
        snprintf(out->sizes_msg, sizeof out->sizes_msg,
                 "sizes differ: A has %zu layers, n_embd %zu, n_inner %zu; B has %zu layers, n_embd %zu, n_inner %zu",
                 ia->n_layer, ia->n_embd, ia->n_inner, ib->n_layer, ib->n_embd, ib->n_inner);
        return G2F_OK;
    }
    out->same_sizes = 1;
    differ df = {a, b, ia->n_embd, ia->n_inner, NULL, NULL, NULL};
    size_t n_layer = ia->n_layer;
    out->tensors = calloc(n_layer ? n_layer : 1, sizeof *out->tensors);
    df.sig = calloc(n_layer ? n_layer : 1, sizeof *df.sig);
    df.scratch = g2f_alloc_array(df.d * df.h, sizeof(float));
    df.qscratch = g2f_alloc_array(df.d * df.h, sizeof(float));
    g2f_status st = G2F_OK;
    if (!out->tensors || !df.sig || !df.scratch || !df.qscratch) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
        goto done;
    }
    out->n_layers = n_layer;
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) { /* signatures of A, one layer at a time */
        loaded A;
        if ((st = load(a, L, &A, err)) != G2F_OK) break;
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            size_t n = tensor_size(k, df.d, df.h);
            for (size_t i = 0; i < SIGNATURE; i++) df.sig[L][k][i] = A.v[k] && i < n ? A.v[k][i] : NAN;
        }
        unload(&A);
    }
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) {
        loaded A, B;
        if ((st = load(a, L, &A, err)) != G2F_OK) break;
        if ((st = load(b, L, &B, err)) != G2F_OK) {
            unload(&A);
            break;
        }
        for (int k = 0; k < G2F_FFN_TENSORS && st == G2F_OK; k++) {
            if (!A.v[k] && !B.v[k]) {
                out->tensors[L][k] = (g2f_diff_tensor){.kind = G2F_DIFF_IDENTICAL, .equivalent = 1, .from_layer = -1};
                continue;
            }
            double ro = tol_for(A.dtype[k], B.dtype[k]).rel;
            if (ro > out->roundoff) out->roundoff = ro;
            classify(&df, L, k, &A, &B, &out->tensors[L][k], err, &st);
            if (!out->tensors[L][k].equivalent) out->differing++;
        }
        unload(&A);
        unload(&B);
    }
    out->equivalent = st == G2F_OK && out->differing == 0;
    g2f_diff_accept(out, 0);
done:
    free(df.sig);
    free(df.scratch);
    free(df.qscratch);
    if (st != G2F_OK) g2f_diff_result_free(out);
    return st;
}

void g2f_diff_result_free(g2f_diff_result *r) {
    if (!r) return;
    free(r->tensors);
    memset(r, 0, sizeof *r);
}
