/* g2f_diff: weight-to-weight comparison; see g2f_diff.h.
 *
 * Workload: two checkpoints as large as GPT-2 XL (3.9 GB each in F32), so
 * reading them is the cost to beat. Each tensor pair is streamed once, front
 * to back, in blocks of BLOCK elements that the threads take in turn
 * (OpenMP); one pass over a block gathers every statistic the verdicts need
 * (equality, the largest differences, the rounding, quantization and
 * rounded-to-f16/bf16 tests, the sums for a scale), each block into its own
 * record, merged in block order afterwards, so nothing depends on the thread
 * count. Values are read in place (F32) or converted a block at a time into
 * per-thread scratch, never copied whole, and each tensor's pages of both
 * files are dropped from the resident set once read (g2f_mapping_release).
 * Only a tensor that no verdict of that pass explains is read again: A in
 * the other layout (transposed), A's other layers whose leading values
 * agree (from_layer), a scale, and the f16/bf16 tests of the blocks where
 * they were deferred because a cheaper verdict fitted there.
 *
 * Orientation: two files in the same layout are compared in file order (the
 * same permutation of the logical order on both sides); otherwise a block
 * is a run of logical rows, a Linear side gathered column by column. */
#include "g2f_diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "g2f_diffstat.h"
#include "g2f_quant.h"

#define SIGNATURE 16         /* leading logical values kept per tensor to find layer swaps */
#define BLOCK (1u << 16)     /* elements per block: 256 KiB of floats per side, in L2 */

static const char *const kind_names[] = {"identical",  "rounded",    "zero_bias", "f16_rounded",
                                         "bf16_rounded", "transposed", "from_layer", "scaled",
                                         "quantized",  "missing",    "different", "not_compared"};
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
        for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
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

/* ---- one side of a comparison ------------------------------------------ */

/* A tensor as one file holds it, and how its elements map to the logical
 * (rows, cols): c_fc.weight (n_embd, n_inner), c_proj.weight (n_inner,
 * n_embd), a bias (1, n). Conv1D is the logical order itself; Linear is its
 * transpose: logical (i, j) at element j rows + i. */
typedef struct side {
    const g2f_tensor *t;
    int linear;
} side;

typedef struct shape {
    size_t rows, cols;
} shape;

static int side_quant(const side *s) { return s->t && g2f_dtype_is_quant(s->t->dtype); }

/* Per-thread scratch: both sides' values and, for quantized sides, their
 * steps and bounds, one block each, plus a column's worth for gathers. */
typedef struct scratch {
    float *va, *vb, *step_a, *bound_a, *step_b, *bound_b, *qsum, *tmp;
} scratch;

/* How a pass walks a tensor pair: flat (both in file order, blocks of
 * BLOCK elements) or by logical rows (rpb rows a block). */
typedef struct walk {
    shape sh;
    int flat;
    size_t rpb, n_blocks;
} walk;

static walk walk_of(const side *a, const side *b, shape sh) {
    walk w = {sh, a->linear == b->linear || sh.rows == 1, 0, 0};
    size_t n = sh.rows * sh.cols;
    if (w.flat) {
        w.n_blocks = (n + BLOCK - 1) / BLOCK;
    } else {
        w.rpb = BLOCK / sh.cols ? BLOCK / sh.cols : 1;
        w.n_blocks = (sh.rows + w.rpb - 1) / w.rpb;
    }
    return w;
}

/* Block blk's element range in file order [*start, *start + *count) (flat
 * walks), or its logical rows [*start, *start + *count). */
static void block_range(const walk *w, size_t blk, size_t *start, size_t *count) {
    size_t total = w->flat ? w->sh.rows * w->sh.cols : w->sh.rows, per = w->flat ? BLOCK : w->rpb;
    *start = blk * per;
    *count = total - *start < per ? total - *start : per;
}

/* A side's values of one block, in the walk's order: in place when the
 * tensor is aligned F32 read in file order, else converted into vals; and
 * the steps and bounds of a quantized side. Returns the values. */
static const float *read_side(const side *s, const walk *w, size_t start, size_t count, float *vals, float *step,
                              float *bound, float *tmp) {
    const g2f_tensor *t = s->t;
    int quant = g2f_dtype_is_quant(t->dtype);
    if (w->flat || !s->linear) { /* a contiguous range of the file */
        size_t e0 = w->flat ? start : start * w->sh.cols, n = w->flat ? count : count * w->sh.cols;
        if (quant && (step || bound)) g2f_quant_bounds(t->dtype, t->data, e0, n, step, bound);
        if (t->dtype == G2F_DTYPE_F32 && ((uintptr_t)t->data % _Alignof(float)) == 0)
            return (const float *)(const void *)t->data + e0;
        g2f_tensor_read_f32(t, e0, n, vals);
        return vals;
    }
    /* logical rows [start, start + count) of a Linear tensor: column j of
     * the logical block is the file's row j, elements [start, start + count) */
    size_t rows = w->sh.rows, cols = w->sh.cols;
    for (int what = 0; what < 3; what++) {
        float *dst = what == 0 ? vals : what == 1 ? step : bound;
        if (!dst || (what && !quant)) continue;
        for (size_t j = 0; j < cols; j++) {
            size_t e0 = j * rows + start;
            if (what == 0) g2f_tensor_read_f32(t, e0, count, tmp);
            else g2f_quant_bounds(t->dtype, t->data, e0, count, what == 1 ? tmp : NULL, what == 2 ? tmp : NULL);
            for (size_t i = 0; i < count; i++) dst[i * cols + j] = tmp[i];
        }
    }
    return vals;
}

/* The flat logical index of element k of block (start, count). */
static size_t logical_index(const side *s, const walk *w, size_t start, size_t k) {
    if (!w->flat) return start * w->sh.cols + k;
    size_t p = start + k;
    if (!s->linear || w->sh.rows == 1) return p;
    return (p % w->sh.rows) * w->sh.cols + p / w->sh.rows; /* file element p is logical (p % rows, p / rows) */
}

/* ---- the statistics of one block -------------------------------------- */

enum { R_F16_AB = 1, R_F16_BA = 2, R_BF16_AB = 4, R_BF16_BA = 8, R_ALL = 15 };

typedef struct bstats {
    int neq;                /* some a != b (NaN counts) */
    double max_abs;         /* as a serial walk: the largest, or NaN once one is NaN */
    size_t worst;           /* its index in the block */
    double max_rel;         /* |a - b| / (|a|, or 1 for a == 0) */
    int out_t, out_q;       /* some element outside t / outside t plus the quantization bound */
    double max_steps, max_ratio; /* quantized: |a - b| / step, / bound */
    int dead;               /* R_* rounding hypotheses this block rules out */
    int deferred;           /* the rounding tests were not run (a cheaper verdict fits the block) */
    double sab, saa;        /* sum a b, sum a a (for a scale) */
} bstats;

static int rounds_to(const float *wide, const float *narrow, size_t n, int bf16) {
    for (size_t i = 0; i < n; i++) {
        float r = bf16 ? g2f_bf16_to_f32(g2f_f32_to_bf16(wide[i])) : g2f_f16_to_f32(g2f_f32_to_f16(wide[i]));
        if (!(r == narrow[i] || (isnan(r) && isnan(narrow[i])))) return 0;
    }
    return 1;
}

static int rounding_dead(const float *a, const float *b, size_t n) {
    return (rounds_to(a, b, n, 0) ? 0 : R_F16_AB) | (rounds_to(b, a, n, 0) ? 0 : R_F16_BA) |
           (rounds_to(a, b, n, 1) ? 0 : R_BF16_AB) | (rounds_to(b, a, n, 1) ? 0 : R_BF16_BA);
}

/* qb: the quantization bound per element (NULL: none), step: the quantized
 * side's grid step. */
static void block_stats(const float *a, const float *b, size_t n, tol t, const float *qb, const float *step,
                        bstats *o) {
    memset(o, 0, sizeof *o);
    g2f_diffstat ds;
    memset(&ds, 0, sizeof ds);
    if (!qb) {
        g2f_diffstat_run(a, b, n, 0, t.rel, t.abs, &ds); /* vectorized where the CPU can */
    } else {
        g2f_diffstat_run_ref(a, b, n, 0, t.rel, t.abs, &ds);
        for (size_t i = 0; i < n; i++) { /* quantized weights: their bound and grid too */
            double d = fabs((double)a[i] - b[i]);
            o->out_q |= !(d <= t.rel * fabs(a[i]) + t.abs + qb[i]);
            double steps = d == 0 ? 0 : step[i] > 0 ? d / step[i] : INFINITY, ratio = d == 0 ? 0 : d / qb[i];
            if (steps > o->max_steps) o->max_steps = steps;
            if (ratio > o->max_ratio) o->max_ratio = ratio;
        }
    }
    int neq = ds.neq, out_t = ds.out_tol, out_q = o->out_q;
    o->neq = neq;
    o->max_abs = ds.max_abs;
    o->worst = ds.worst;
    o->max_rel = ds.max_rel;
    o->out_t = out_t;
    o->sab = (ds.sab[0] + ds.sab[1]) + (ds.sab[2] + ds.sab[3]);
    o->saa = (ds.saa[0] + ds.saa[1]) + (ds.saa[2] + ds.saa[3]);
    /* the f16 / bf16 tests decide only when no cheaper verdict fits the
     * tensor; here, where one fits this block, they wait (most blocks of
     * most diffs), and run again only when the tensor needs them */
    if (!neq || (t.rel > 0 && !out_t) || (qb && !out_q)) o->deferred = 1;
    else o->dead = rounding_dead(a, b, n);
}

/* ---- passes over a tensor pair ----------------------------------------- */

typedef struct differ {
    const g2f_model *a, *b;
    size_t d, h;
    float (*sig)[G2F_LAYER_TENSORS][SIGNATURE]; /* A's leading logical values per layer */
    scratch *sc;                               /* one per thread */
    int n_threads;
    bstats *blocks;                            /* per block of the current tensor */
    size_t blocks_cap;
} differ;

typedef enum pass_kind {
    PASS_STATS,     /* block_stats of every block */
    PASS_ROUNDING,  /* the deferred rounding tests */
    PASS_WITHIN,    /* every |a - b| <= t.rel |a| + t.abs (+ B's bound): *ok */
    PASS_SCALED,    /* every |c a - b| <= 2 loose.rel |c a| + loose.abs: *ok */
} pass_kind;

typedef struct pass {
    pass_kind kind;
    tol t;
    double c;       /* PASS_SCALED */
    int ok;         /* PASS_WITHIN, PASS_SCALED: AND over the blocks */
} pass;

static void run_pass(differ *df, const side *A, const side *B, const walk *w, pass *ps) {
    int use_qa = side_quant(A) && ps->kind == PASS_STATS, use_qb = side_quant(B) && ps->kind != PASS_SCALED;
    int ok = 1;
    size_t nb = w->n_blocks;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(df->n_threads) reduction(&& : ok)
#endif
    for (size_t blk = 0; blk < nb; blk++) {
        if (ps->kind != PASS_STATS && ps->kind != PASS_ROUNDING && !ok) continue;
        if (ps->kind == PASS_ROUNDING && !df->blocks[blk].deferred) continue;
#ifdef _OPENMP
        scratch *sc = &df->sc[omp_get_thread_num()];
#else
        scratch *sc = &df->sc[0];
#endif
        size_t start, count;
        block_range(w, blk, &start, &count);
        size_t n = w->flat ? count : count * w->sh.cols;
        const float *a = read_side(A, w, start, count, sc->va, use_qa ? sc->step_a : NULL, use_qa ? sc->bound_a : NULL,
                                   sc->tmp);
        const float *b = read_side(B, w, start, count, sc->vb, use_qb ? sc->step_b : NULL, use_qb ? sc->bound_b : NULL,
                                   sc->tmp);
        const float *qb = use_qb ? sc->bound_b : NULL;
        if (ps->kind == PASS_STATS) {
            const float *step = use_qb ? sc->step_b : use_qa ? sc->step_a : NULL;
            if (use_qa && use_qb) {
                for (size_t i = 0; i < n; i++) sc->qsum[i] = sc->bound_a[i] + sc->bound_b[i];
                qb = sc->qsum;
            } else if (use_qa) {
                qb = sc->bound_a;
            }
            block_stats(a, b, n, ps->t, qb, step, &df->blocks[blk]);
        } else if (ps->kind == PASS_ROUNDING) {
            df->blocks[blk].dead = rounding_dead(a, b, n);
        } else if (ps->kind == PASS_WITHIN) {
            for (size_t i = 0; i < n && ok; i++) {
                double dd = fabs((double)a[i] - b[i]);
                if (!(dd <= ps->t.rel * fabs(a[i]) + ps->t.abs + (qb ? qb[i] : 0))) ok = 0;
            }
        } else {
            for (size_t i = 0; i < n && ok; i++) {
                double want = ps->c * a[i];
                ok = fabs(want - b[i]) <= ps->t.rel * 2 * fabs(want) + ps->t.abs;
            }
        }
    }
    ps->ok = ok;
    /* Both tensors' pages leave the resident set once the pass is done: per
     * tensor, not per block, since dropping pages that several threads have
     * mapped costs a TLB shootdown each time (measured: per-block release
     * made diff of two GPT-2 124M files 2x slower on 2 threads). */
    g2f_mapping_release(A->t->data, A->t->nbytes);
    g2f_mapping_release(B->t->data, B->t->nbytes);
}

static int within(differ *df, const side *A, const side *B, shape sh, tol t) {
    walk w = walk_of(A, B, sh);
    pass ps = {PASS_WITHIN, t, 0, 0};
    run_pass(df, A, B, &w, &ps);
    return ps.ok;
}

/* A role's logical shape (Conv1D [in, out]; g2f_model_layer_tensors_all
 * checked the stored one). */
static shape shape_of(const differ *df, int k) {
    switch (k) {
    case G2F_FFN_FC_W: return (shape){df->d, df->h};
    case G2F_FFN_PROJ_W: return (shape){df->h, df->d};
    case G2F_FFN_FC_B: return (shape){1, df->h};
    case G2F_BLK_ATTN_W: return (shape){df->d, 3 * df->d};
    case G2F_BLK_ATTN_B: return (shape){1, 3 * df->d};
    case G2F_BLK_APROJ_W: return (shape){df->d, df->d};
    default: return (shape){1, df->d};
    }
}

/* A bias only one file has: the difference is the bias itself (the other
 * read as zeros), so max_abs is its largest magnitude. */
static void missing_verdict(const side *only, int in_a, g2f_diff_tensor *o) {
    const g2f_tensor *t = only->t;
    float v[256];
    int zero = 1;
    for (uint64_t i = 0; i < t->numel; i += 256) {
        size_t n = t->numel - i < 256 ? (size_t)(t->numel - i) : 256;
        g2f_tensor_read_f32(t, i, n, v);
        for (size_t j = 0; j < n; j++) {
            double m = fabs(v[j]);
            if (m > o->max_abs || isnan(m)) o->max_abs = m, o->worst = (size_t)(i + j);
            double rel = in_a ? (m > 0 ? 1.0 : 0.0) : m; /* |a - 0| / |a|, or |0 - b| / 1 */
            if (rel > o->max_rel || isnan(rel)) o->max_rel = rel;
            zero &= v[j] == 0;
        }
    }
    o->missing_values = (size_t)t->numel;
    o->missing_in = in_a ? 'A' : 'B';
    o->kind = zero ? G2F_DIFF_ZERO_BIAS : G2F_DIFF_MISSING;
    o->equivalent = zero;
}

static g2f_status classify(differ *df, size_t L, int k, const side *A, const side *B, g2f_diff_tensor *o,
                           g2f_error *err) {
    memset(o, 0, sizeof *o); /* equivalent 0: set only by the verdicts that are */
    o->from_layer = -1;
    if (!A->t || !B->t) {
        missing_verdict(A->t ? A : B, A->t != NULL, o);
        return G2F_OK;
    }
    shape sh = shape_of(df, k);
    walk w = walk_of(A, B, sh);
    if (w.n_blocks > df->blocks_cap) {
        bstats *nb = realloc(df->blocks, w.n_blocks * sizeof *nb);
        if (!nb) return g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
        df->blocks = nb;
        df->blocks_cap = w.n_blocks;
    }
    tol t = tol_for(A->t->dtype, B->t->dtype);
    tol loose = {t.rel > 0x1p-23 ? t.rel : 0x1p-23, t.abs}; /* for derived values: one more rounding */
    pass ps = {PASS_STATS, t, 0, 0};
    run_pass(df, A, B, &w, &ps);
    /* merge in block order: the same as one serial walk */
    int identical = 1, out_t = 0, out_q = 0, deferred = 0, dead = 0;
    double sab = 0, saa = 0;
    int qb = side_quant(A) || side_quant(B);
    for (size_t blk = 0; blk < w.n_blocks; blk++) {
        const bstats *s = &df->blocks[blk];
        size_t start, count;
        block_range(&w, blk, &start, &count);
        identical &= !s->neq;
        if (s->max_abs > o->max_abs || isnan(s->max_abs))
            o->max_abs = s->max_abs, o->worst = logical_index(A, &w, start, s->worst);
        if (s->max_rel > o->max_rel) o->max_rel = s->max_rel;
        out_t |= s->out_t;
        out_q |= s->out_q;
        if (s->max_steps > o->max_steps) o->max_steps = s->max_steps;
        if (s->max_ratio > o->bound_ratio) o->bound_ratio = s->max_ratio;
        deferred |= s->deferred;
        dead |= s->dead;
        sab += s->sab;
        saa += s->saa;
    }
    /* the verdicts in order, the first that fits: each returns */
    if (!identical && qb && !out_q) {
        o->kind = G2F_DIFF_QUANTIZED;
        o->quant = side_quant(B) ? B->t->dtype : A->t->dtype;
        o->accept_class = G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED;
        return G2F_OK;
    }
    o->max_steps = o->bound_ratio = 0;
    if (identical || (t.rel > 0 && !out_t)) {
        o->kind = identical ? G2F_DIFF_IDENTICAL : G2F_DIFF_ROUNDED;
        o->equivalent = 1;
        return G2F_OK;
    }
    if (deferred && (dead & R_ALL) != R_ALL) { /* the blocks that waited, now that the tests decide */
        ps = (pass){PASS_ROUNDING, t, 0, 0};
        run_pass(df, A, B, &w, &ps);
        for (size_t blk = 0; blk < w.n_blocks; blk++) dead |= df->blocks[blk].dead;
    }
    if ((dead & (R_F16_AB | R_F16_BA)) != (R_F16_AB | R_F16_BA)) {
        o->kind = G2F_DIFF_F16_ROUNDED;
        return G2F_OK;
    }
    if ((dead & (R_BF16_AB | R_BF16_BA)) != (R_BF16_AB | R_BF16_BA)) {
        o->kind = G2F_DIFF_BF16_ROUNDED;
        return G2F_OK;
    }
    if (k == G2F_FFN_FC_W || k == G2F_FFN_PROJ_W) { /* A's bytes read in the other layout */
        side other = {A->t, !A->linear};
        if (within(df, &other, B, sh, t)) {
            o->kind = G2F_DIFF_TRANSPOSED;
            return G2F_OK;
        }
    }
    size_t n_layer = g2f_model_get_info(df->a)->n_layer, n = sh.rows * sh.cols;
    float lead[SIGNATURE];
    for (size_t i = 0; i < SIGNATURE && i < n; i++) { /* B's leading logical values */
        size_t e = B->linear && sh.rows > 1 ? (i % sh.cols) * sh.rows + i / sh.cols : i;
        g2f_tensor_read_f32(B->t, e, 1, &lead[i]);
    }
    float lead_bound[SIGNATURE] = {0};
    for (size_t i = 0; side_quant(B) && i < SIGNATURE && i < n; i++) {
        size_t e = B->linear && sh.rows > 1 ? (i % sh.cols) * sh.rows + i / sh.cols : i;
        g2f_quant_bounds(B->t->dtype, B->t->data, e, 1, NULL, &lead_bound[i]);
    }
    for (size_t K = 0; K < n_layer; K++) {
        if (K == L) continue;
        int close = 1;
        for (size_t i = 0; i < SIGNATURE && i < n && close; i++) {
            double dd = fabs((double)df->sig[K][k][i] - lead[i]);
            close = dd <= t.rel * fabs(df->sig[K][k][i]) + t.abs + lead_bound[i];
        }
        if (!close) continue;
        const g2f_tensor *ts[G2F_LAYER_TENSORS];
        int split;
        g2f_status st = g2f_model_layer_tensors_all(df->a, K, ts, &split, err);
        if (st != G2F_OK) return st;
        side other = {ts[k], A->linear};
        if (other.t && within(df, &other, B, sh, t)) {
            o->kind = G2F_DIFF_FROM_LAYER;
            o->from_layer = (long)K;
            return G2F_OK;
        }
    }
    if (qb) {
        o->kind = G2F_DIFF_DIFFERENT; /* a scale is not looked for under quantization noise */
        return G2F_OK;
    }
    double c = saa > 0 ? sab / saa : 0;
    if (c != 0 && fabs(c - 1) > 1e-6) {
        ps = (pass){PASS_SCALED, loose, c, 0};
        run_pass(df, A, B, &w, &ps);
        if (ps.ok) {
            o->kind = G2F_DIFF_SCALED;
            o->scale = c;
            return G2F_OK;
        }
    }
    o->kind = G2F_DIFF_DIFFERENT;
    return G2F_OK;
}

/* A's leading logical values of every tensor of layer L (for from_layer),
 * read element by element: the layer itself is not loaded. */
static g2f_status signatures(differ *df, size_t L, g2f_error *err) {
    const g2f_tensor *ts[G2F_LAYER_TENSORS];
    int split;
    g2f_status st = g2f_model_layer_tensors_all(df->a, L, ts, &split, err);
    if (st != G2F_OK) return st;
    int linear = g2f_model_get_info(df->a)->layout == G2F_LAYOUT_LINEAR;
    for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
        shape sh = shape_of(df, k);
        size_t n = sh.rows * sh.cols;
        for (size_t i = 0; i < SIGNATURE; i++) {
            df->sig[L][k][i] = NAN;
            if (!ts[k] || i >= n) continue;
            size_t e = linear && sh.rows > 1 ? (i % sh.cols) * sh.rows + i / sh.cols : i;
            g2f_tensor_read_f32(ts[k], e, 1, &df->sig[L][k][i]);
        }
    }
    return G2F_OK;
}

static void scratch_free(differ *df) {
    for (int i = 0; df->sc && i < df->n_threads; i++) {
        scratch *s = &df->sc[i];
        free(s->va);
        free(s->vb);
        free(s->step_a);
        free(s->bound_a);
        free(s->step_b);
        free(s->bound_b);
        free(s->qsum);
        free(s->tmp);
    }
    free(df->sc);
    df->sc = NULL;
}

/* Per-thread blocks: a gathered block holds up to rpb whole rows, so at
 * least one row (n_inner floats) even when that is more than BLOCK. */
static int scratch_alloc(differ *df) {
    size_t n = BLOCK > df->h ? BLOCK : df->h;
    n = n > 3 * df->d ? n : 3 * df->d; /* c_attn's rows */
    df->sc = calloc((size_t)df->n_threads, sizeof *df->sc);
    if (!df->sc) return 0;
    for (int i = 0; i < df->n_threads; i++) {
        scratch *s = &df->sc[i];
        s->va = g2f_alloc_array(n, sizeof(float));
        s->vb = g2f_alloc_array(n, sizeof(float));
        s->tmp = g2f_alloc_array(df->d > df->h ? df->d : df->h, sizeof(float));
        if (!s->va || !s->vb || !s->tmp) return 0;
        { /* quantized sides' steps and bounds (a GGUF may quantize some tensors only) */
            s->step_a = g2f_alloc_array(n, sizeof(float));
            s->bound_a = g2f_alloc_array(n, sizeof(float));
            s->step_b = g2f_alloc_array(n, sizeof(float));
            s->bound_b = g2f_alloc_array(n, sizeof(float));
            s->qsum = g2f_alloc_array(n, sizeof(float));
            if (!s->step_a || !s->bound_a || !s->step_b || !s->bound_b || !s->qsum) return 0;
        }
    }
    return 1;
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
    differ df = {a, b, ia->n_embd, ia->n_inner, NULL, NULL, 1, NULL, 0};
#ifdef _OPENMP
    df.n_threads = omp_get_max_threads();
#endif
    size_t n_layer = ia->n_layer;
    out->tensors = calloc(n_layer ? n_layer : 1, sizeof *out->tensors);
    df.sig = calloc(n_layer ? n_layer : 1, sizeof *df.sig);
    g2f_status st = G2F_OK;
    if (!out->tensors || !df.sig || !scratch_alloc(&df)) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
        goto done;
    }
    out->n_layers = n_layer;
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) st = signatures(&df, L, err);
    /* attention stored apart on either side is not compared (TransformerLens) */
    int split_a = 0, split_b = 0;
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) {
        const g2f_tensor *ta[G2F_LAYER_TENSORS], *tb[G2F_LAYER_TENSORS];
        int sa, sb;
        if ((st = g2f_model_layer_tensors_all(a, L, ta, &sa, err)) != G2F_OK ||
            (st = g2f_model_layer_tensors_all(b, L, tb, &sb, err)) != G2F_OK)
            break;
        split_a |= sa, split_b |= sb;
    }
    int lin_a = ia->layout == G2F_LAYOUT_LINEAR, lin_b = ib->layout == G2F_LAYOUT_LINEAR;
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) {
        const g2f_tensor *ta[G2F_LAYER_TENSORS], *tb[G2F_LAYER_TENSORS];
        int sa, sb;
        if ((st = g2f_model_layer_tensors_all(a, L, ta, &sa, err)) != G2F_OK ||
            (st = g2f_model_layer_tensors_all(b, L, tb, &sb, err)) != G2F_OK)
            break;
        for (int k = 0; k < G2F_LAYER_TENSORS && st == G2F_OK; k++) {
            int attn = k >= G2F_BLK_ATTN_W && k <= G2F_BLK_APROJ_B;
            /* a block tensor one side lacks is not compared (an FFN-only
             * export holds none): the FFN's are, a missing bias included */
            if (k >= G2F_FFN_TENSORS && ((attn && (split_a || split_b)) || !ta[k] || !tb[k])) {
                int in = attn && (split_a || split_b) ? 'S' : ta[k] ? 'A' : tb[k] ? 'B' : 0;
                out->tensors[L][k] = (g2f_diff_tensor){.kind = G2F_DIFF_NOT_COMPARED, .from_layer = -1, .missing_in = in};
                continue;
            }
            out->compared++;
            if (!ta[k] && !tb[k]) {
                out->tensors[L][k] = (g2f_diff_tensor){.kind = G2F_DIFF_IDENTICAL, .equivalent = 1, .from_layer = -1};
                continue;
            }
            /* an absent bias counts as F32 here, as it always has */
            double ro = tol_for(ta[k] ? ta[k]->dtype : G2F_DTYPE_F32, tb[k] ? tb[k]->dtype : G2F_DTYPE_F32).rel;
            if (ro > out->roundoff) out->roundoff = ro;
            side A = {ta[k], lin_a}, B = {tb[k], lin_b};
            st = classify(&df, L, k, &A, &B, &out->tensors[L][k], err);
            if (!out->tensors[L][k].equivalent) out->differing++;
        }
    }
    out->equivalent = st == G2F_OK && out->differing == 0;
    g2f_diff_accept(out, 0);
done:
    free(df.sig);
    free(df.blocks);
    scratch_free(&df);
    if (st != G2F_OK) g2f_diff_result_free(out);
    return st;
}

void g2f_diff_result_free(g2f_diff_result *r) {
    if (!r) return;
    free(r->tensors);
    memset(r, 0, sizeof *r);
}
