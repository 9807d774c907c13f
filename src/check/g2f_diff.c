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
 * is a run of logical rows, a Linear side gathered column by column. A
 * quantized side's bound is ggml's reference rounding of the other side's
 * values over the quantized side's own blocks: runs of its file order, so a
 * gathered quantized side makes each block whole quantization blocks of rows.
 *
 * The tensors: per layer the model's roles, then its ends, then the others
 * (g2f_model.h), each pair through pair_verdict. */
#include "g2f_diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "g2f_cause.h"
#include "g2f_diffstat.h"
#include "g2f_quant.h"

#define SIGNATURE 16         /* leading logical values kept per tensor to find layer swaps */
#define BLOCK (1u << 16)     /* elements per block: 256 KiB of floats per side, in L2 */

static const char *const kind_names[] = {
    "identical", "rounded",      "zero_bias",     "f16_rounded", "bf16_rounded",  "transposed",
    "from_layer", "scaled",      "quantized",     "quant_inconsistent", "missing", "different",
    "shape_differs", "held_by_one", "tied",       "buffer",      "training_state", "outside_scope", "absent"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == G2F_DIFF_KIND_COUNT, "one name per kind");

const char *g2f_diff_kind_name(g2f_diff_kind k) { return (unsigned)k < G2F_DIFF_KIND_COUNT ? kind_names[k] : "?"; }
bool g2f_diff_kind_compared(g2f_diff_kind k) { return k <= G2F_DIFF_SHAPE; }
bool g2f_diff_kind_excused(g2f_diff_kind k) {
    return k == G2F_DIFF_BUFFER || k == G2F_DIFF_TRAINING || k == G2F_DIFF_OUTSIDE;
}

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

static const char *const scope_names[] = {"all", "block", "ffn"};
_Static_assert(sizeof scope_names / sizeof scope_names[0] == G2F_DIFF_SCOPE_COUNT, "one name per scope");

const char *g2f_diff_scope_name(g2f_diff_scope s) { return (unsigned)s < G2F_DIFF_SCOPE_COUNT ? scope_names[s] : "?"; }

bool g2f_diff_scope_parse(const char *s, g2f_diff_scope *out) {
    for (int k = G2F_DIFF_SCOPE_BLOCK; k < G2F_DIFF_SCOPE_COUNT; k++)
        if (!strcmp(s, scope_names[k])) return *out = (g2f_diff_scope)k, true;
    return false;
}

/* ---- the entries ---------------------------------------------------------- */

size_t g2f_diff_entries(const g2f_diff_result *r) {
    return r->tensors ? r->n_layers * G2F_LAYER_TENSORS + G2F_END_TENSORS + r->n_others : 0;
}

const g2f_diff_tensor *g2f_diff_entry(const g2f_diff_result *r, size_t i, long *layer, const char **label) {
    size_t per = r->n_layers * G2F_LAYER_TENSORS;
    if (i >= g2f_diff_entries(r)) return NULL;
    if (i < per) {
        if (layer) *layer = (long)(i / G2F_LAYER_TENSORS);
        if (label) *label = g2f_model_tensor_role((int)(i % G2F_LAYER_TENSORS));
        return &r->tensors[i / G2F_LAYER_TENSORS][i % G2F_LAYER_TENSORS];
    }
    if (layer) *layer = -1;
    if (i - per < G2F_END_TENSORS) {
        if (label) *label = g2f_model_end_role((int)(i - per));
        return &r->ends[i - per];
    }
    const g2f_diff_tensor *o = &r->others[i - per - G2F_END_TENSORS];
    if (label) *label = o->label ? o->label : "?";
    return o;
}

static g2f_diff_tensor *entry_mut(g2f_diff_result *r, size_t i) {
    return (g2f_diff_tensor *)(uintptr_t)g2f_diff_entry(r, i, NULL, NULL);
}

void g2f_diff_accept(g2f_diff_result *r, unsigned classes) {
    r->accept = classes;
    r->accepted = 0;
    for (size_t i = 0; i < g2f_diff_entries(r); i++) {
        g2f_diff_tensor *t = entry_mut(r, i);
        t->accepted = !t->equivalent && t->accept_class && (t->accept_class & classes) == t->accept_class;
        r->accepted += (size_t)t->accepted;
    }
    r->all_accepted = r->same_sizes && !r->config_msg[0] && !r->equivalent && r->compared && !r->held_by_one &&
                      r->accepted == r->differing;
}

/* ---- tolerances ------------------------------------------------------------ */

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
    double rel, abs;     /* |a - b| <= rel |a| + abs: a quick necessary test */
    g2f_dtype da, db;    /* the two dtypes where they differ (rounding_fits decides) */
} tol;

/* Half the step of a dtype's subnormals: where rounding to it is absolute, not relative. */
static double subnormal_half_step(g2f_dtype d) {
    switch (d) {
    case G2F_DTYPE_F16: return ldexp(1.0, -25);
    case G2F_DTYPE_BF16: return ldexp(1.0, -134);
    case G2F_DTYPE_F32: return ldexp(1.0, -150);
    default: return 0;
    }
}

static tol tol_for(g2f_dtype a, g2f_dtype b) {
    if (a == b) return (tol){0, 0, a, b}; /* same dtype: a faithful port is bit-identical */
    double ra = storage_roundoff(a), rb = storage_roundoff(b), sa = subnormal_half_step(a),
           sb = subnormal_half_step(b), r = ra > rb ? ra : rb;
    /* F16 beside BF16, neither holding the other: both roundings of one value x; with |a - b| <= h_a + h_b,
     * h <= r |x| for each, the bound relative to |a| is (ra + rb) / (1 - the larger) */
    if (ra >= 0x1p-11 && rb >= 0x1p-11) r = (ra + rb) / (1 - r);
    return (tol){r, sa > sb ? sa : sb, a, b}; /* the coarser dtype's subnormals: absolute steps */
}

/* ---- storage rounding, exactly ----------------------------------------- */

/* The dtype whose grid a value read as float lies on: F16 and BF16 their own; every other dtype
 * (F32, F64 and the quantized ones read as float) float's. */
static g2f_dtype grid_of(g2f_dtype d) { return d == G2F_DTYPE_F16 || d == G2F_DTYPE_BF16 ? d : G2F_DTYPE_F32; }

/* Whether every wide[i] (a value on float's grid) rounds to narrow[i] (on F16's or BF16's) to nearest,
 * ties either way, both finite. In float's bits the narrow grid is every 2^16 (BF16) or 2^13 (F16)
 * steps, its midpoints half that, all linear in the bits within a binade and at its bottom (the
 * midpoint below lies in the binade below, on its spacing); F16's subnormals (|v| <= 2^-14) are an
 * absolute grid of 2^-24. Branch-free over the elements (vectorizable). */
static int rounds_nearest(const float *wide, const float *narrow, size_t n, g2f_dtype nd) {
    uint32_t half = nd == G2F_DTYPE_BF16 ? 0x8000u : 0x1000u;
    float sub = nd == G2F_DTYPE_BF16 ? -1.0f : 0x1p-14f; /* BF16: none, its subnormals are float's */
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t wb, nb;
        memcpy(&wb, &wide[i], 4), memcpy(&nb, &narrow[i], 4);
        uint32_t wm = wb & 0x7fffffffu, nm = nb & 0x7fffffffu, d = wm > nm ? wm - nm : nm - wm;
        int finite = wm < 0x7f800000u && nm < 0x7f800000u;
        int near = fabsf(narrow[i]) <= sub ? fabs((double)wide[i] - narrow[i]) <= 0x1p-25
                                                        : d <= half && (nm == 0 || !((wb ^ nb) >> 31));
        bad |= !(finite && near);
    }
    return !bad;
}

/* Whether every b[i], the port's value in dtype db, is A's a[i] rounded to db to nearest (ties
 * either way), both finite: A is the original, so B in a dtype at least as wide must hold A's value
 * itself (a BF16 original widened to F32 is exact: noise below half a BF16 step is a change). The
 * relative test alone would also take a one-step error at the bottom of a binade (1.0 beside BF16
 * 0.99609375). */
static int rounding_fits(const float *a, const float *b, size_t n, g2f_dtype da, g2f_dtype db) {
    g2f_dtype ga = grid_of(da), gb = grid_of(db);
    if (ga == G2F_DTYPE_F32 && gb != ga) return rounds_nearest(a, b, n, gb);
    for (size_t i = 0; i < n; i++) /* A's value exact (F64's point), B's grid */
        if (!isfinite(a[i]) || !isfinite(b[i]) || !g2f_dtype_values_agree(a[i], G2F_DTYPE_F64, b[i], gb)) return 0;
    return 1;
}

/* ---- one side of a comparison ------------------------------------------ */

/* A tensor as one file holds it, and how its elements map to the logical
 * (rows, cols): c_fc.weight (n_embd, n_inner), c_proj.weight (n_inner,
 * n_embd), wte (vocab, n_embd), a bias (1, n). Conv1D (and row-major) is the
 * logical order itself; Linear is its transpose: logical (i, j) at element
 * j rows + i (TransformerLens' W_U [d, vocab] is a Linear head). */
typedef struct side {
    const g2f_tensor *t;
    int linear;
    const float *f; /* t's floats read out of the file (g2f_model_tensor_read), or NULL: t's in place */
} side;

typedef struct shape {
    size_t rows, cols;
} shape;

static g2f_dtype side_quant(const side *s) {
    return s->t && g2f_dtype_is_quant(s->t->dtype) ? s->t->dtype : G2F_DTYPE_F32;
}

/* Per-thread scratch: both sides' values and the bounds of a quantized
 * side, one block each (cap floats), plus room for gathers. */
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

/* A side whose elements a row walk gathers column by column. */
static int gathered(const side *s, const walk *w) { return !w->flat && s->linear; }

static walk walk_of(const side *a, const side *b, shape sh) {
    walk w = {sh, a->linear == b->linear || sh.rows == 1, 0, 0};
    size_t n = sh.rows * sh.cols;
    if (w.flat) {
        w.n_blocks = (n + BLOCK - 1) / BLOCK;
        return w;
    }
    w.rpb = BLOCK / sh.cols ? BLOCK / sh.cols : 1;
    /* a gathered quantized side's blocks run down a column: whole ones a block */
    for (int k = 0; k < 2; k++) {
        const side *s = k ? b : a;
        const g2f_quant_info *qi = g2f_quant_info_of(side_quant(s));
        if (qi && s->linear) w.rpb = (w.rpb + qi->block - 1) / qi->block * qi->block;
    }
    w.n_blocks = (sh.rows + w.rpb - 1) / w.rpb;
    return w;
}

/* Floats a block of the walk holds. */
static size_t walk_block_floats(const walk *w) { return w->flat ? BLOCK : w->rpb * w->sh.cols; }

/* Block blk's element range in file order [*start, *start + *count) (flat
 * walks), or its logical rows [*start, *start + *count). */
static void block_range(const walk *w, size_t blk, size_t *start, size_t *count) {
    size_t total = w->flat ? w->sh.rows * w->sh.cols : w->sh.rows, per = w->flat ? BLOCK : w->rpb;
    *start = blk * per;
    *count = total - *start < per ? total - *start : per;
}

/* A side's values of one block, in the walk's order: in place when the
 * tensor is aligned F32 read in file order, else converted into vals. */
static const float *read_side(const side *s, const walk *w, size_t start, size_t count, float *vals, float *tmp) {
    const g2f_tensor *t = s->t;
    if (!gathered(s, w)) { /* a contiguous range of the file */
        size_t e0 = w->flat ? start : start * w->sh.cols, n = w->flat ? count : count * w->sh.cols;
        if (s->f) return s->f + e0;
        if (t->dtype == G2F_DTYPE_F32 && ((uintptr_t)t->data % _Alignof(float)) == 0)
            return (const float *)(const void *)t->data + e0;
        g2f_tensor_read_f32(t, e0, n, vals);
        return vals;
    }
    /* logical rows [start, start + count) of a Linear tensor: column j of
     * the logical block is the file's row j, elements [start, start + count) */
    size_t rows = w->sh.rows, cols = w->sh.cols;
    for (size_t j = 0; j < cols; j++) {
        const float *col = s->f ? s->f + j * rows + start : tmp;
        if (!s->f) g2f_tensor_read_f32(t, j * rows + start, count, tmp);
        for (size_t i = 0; i < count; i++) vals[i * cols + j] = col[i];
    }
    return vals;
}

/* The step and bound of ggml's reference rounding (type q) of the reference
 * values ref (the block in walk order), over q's own blocks: runs of the
 * walk order, or, for a gathered side, runs of count rows down each column
 * (count a multiple of the block: walk_of). */
static void ref_bounds(g2f_dtype q, int gath, const float *ref, size_t count, size_t cols, size_t n, float *step,
                       float *bound, float *tmp) {
    const g2f_quant_info *qi = g2f_quant_info_of(q);
    size_t B = qi->block;
    if (!gath) {
        if (!g2f_quant_bounds_of_values(q, ref, n, step, bound)) memset(bound, 0, n * sizeof *bound);
        return;
    }
    float *col = tmp, *cs = tmp + B, *cb = tmp + 2 * B;
    for (size_t j = 0; j < cols; j++)
        for (size_t r0 = 0; r0 + B <= count; r0 += B) {
            for (size_t i = 0; i < B; i++) col[i] = ref[(r0 + i) * cols + j];
            g2f_quant_bounds_of_values(q, col, B, cs, cb);
            for (size_t i = 0; i < B; i++) step[(r0 + i) * cols + j] = cs[i], bound[(r0 + i) * cols + j] = cb[i];
        }
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
            /* an Inf (or a block's bound made infinite by one) never fits: inf <= inf would */
            o->out_q |= !(d <= t.rel * fabs(a[i]) + t.abs + qb[i]) || !isfinite(a[i]) || !isfinite(b[i]) ||
                        !isfinite(qb[i]);
            double steps = d == 0 ? 0 : step[i] > 0 ? d / step[i] : INFINITY, ratio = d == 0 ? 0 : d / qb[i];
            if (steps > o->max_steps) o->max_steps = steps;
            if (ratio > o->max_ratio) o->max_ratio = ratio;
        }
    }
    int neq = ds.neq, out_t = ds.out_tol, out_q = o->out_q;
    if (neq && t.rel > 0 && !out_t) out_t = !rounding_fits(a, b, n, t.da, t.db);
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
    size_t sc_cap;                             /* floats in each scratch array */
    int n_threads;
    bstats *blocks;                            /* per block of the current tensor */
    size_t blocks_cap;
    double roundoff;                           /* the largest rounding allowed so far */
    g2f_layer_reader rd[2];                    /* A's and B's tensor of the current pair, read where faster */
} differ;

typedef enum pass_kind {
    PASS_STATS,     /* block_stats of every block */
    PASS_ROUNDING,  /* the deferred rounding tests */
    PASS_WITHIN,    /* every |a - b| <= t.rel |a| + t.abs (+ the quantization bound): *ok */
    PASS_SCALED,    /* every |c a - b| <= 2 loose.rel |c a| + loose.abs: *ok */
} pass_kind;

typedef struct pass {
    pass_kind kind;
    tol t;
    double c;       /* PASS_SCALED */
    int ok;         /* PASS_WITHIN, PASS_SCALED: AND over the blocks */
} pass;

/* The quantization bound of a block and B's step: B's, the port's, from A's values (A's
 * dequantized ones when A is quantized too); NULL when B is not quantized. */
static const float *quant_bound(const side *A, const side *B, const walk *w, const float *a, const float *b,
                                size_t count, size_t n, scratch *sc, const float **step) {
    (void)A, (void)b;
    g2f_dtype qb = side_quant(B);
    *step = NULL;
    if (qb == G2F_DTYPE_F32) return NULL; /* a float port of a quantized A can only hold A's values */
    size_t cols = w->flat ? 1 : w->sh.cols;
    ref_bounds(qb, gathered(B, w), a, count, cols, n, sc->step_b, sc->bound_b, sc->tmp);
    *step = sc->step_b;
    return sc->bound_b;
}

static void run_pass(differ *df, const side *A, const side *B, const walk *w, pass *ps) {
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
        const float *a = read_side(A, w, start, count, sc->va, sc->tmp);
        const float *b = read_side(B, w, start, count, sc->vb, sc->tmp);
        const float *step = NULL, *qb = NULL;
        if (ps->kind == PASS_STATS || ps->kind == PASS_WITHIN) qb = quant_bound(A, B, w, a, b, count, n, sc, &step);
        if (ps->kind == PASS_STATS) {
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
    g2f_model_release(df->a, A->t);
    g2f_model_release(df->b, B->t);
}

/* ---- scratch --------------------------------------------------------------- */

static void scratch_free(differ *df) {
    for (int i = 0; df->sc && i < df->n_threads; i++) {
        scratch *s = &df->sc[i];
        float **f[] = {&s->va, &s->vb, &s->step_a, &s->bound_a, &s->step_b, &s->bound_b, &s->qsum, &s->tmp};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) free(*f[k]), *f[k] = NULL;
    }
    free(df->sc);
    df->sc = NULL;
    df->sc_cap = 0;
}

/* Per-thread arrays of at least n floats (a block of any walk so far); tmp
 * also holds a gathered column run and three quantization blocks. */
static g2f_status scratch_ensure(differ *df, size_t n, g2f_error *err) {
    if (n <= df->sc_cap) return G2F_OK;
    scratch_free(df);
    df->sc = calloc((size_t)df->n_threads, sizeof *df->sc);
    for (int i = 0; df->sc && i < df->n_threads; i++) {
        scratch *s = &df->sc[i];
        float **f[] = {&s->va, &s->vb, &s->step_a, &s->bound_a, &s->step_b, &s->bound_b, &s->qsum, &s->tmp};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            *f[k] = g2f_alloc_work(n + (k == 7 ? 3 * G2F_QUANT_MAX_BLOCK : 0), 1, sizeof(float), "diff: scratch", err);
            if (!*f[k]) {
                scratch_free(df);
                return err ? err->status : G2F_ERR_NOMEM;
            }
        }
    }
    if (!df->sc) return g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
    df->sc_cap = n;
    return G2F_OK;
}

/* Makes room for a walk's blocks: records and scratch. */
static g2f_status room_for(differ *df, const walk *w, g2f_error *err) {
    if (w->n_blocks > df->blocks_cap) {
        bstats *nb = realloc(df->blocks, w->n_blocks * sizeof *nb);
        if (!nb) return g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
        df->blocks = nb;
        df->blocks_cap = w->n_blocks;
    }
    size_t need = walk_block_floats(w); /* >= rpb: a gathered column's run fits tmp */
    return scratch_ensure(df, need > BLOCK ? need : BLOCK, err);
}

static g2f_status within(differ *df, const side *A, const side *B, shape sh, tol t, int *ok, g2f_error *err) {
    walk w = walk_of(A, B, sh);
    pass ps = {PASS_WITHIN, t, 0, 0};
    g2f_status st = room_for(df, &w, err);
    if (st != G2F_OK) return st;
    run_pass(df, A, B, &w, &ps);
    *ok = ps.ok;
    return G2F_OK;
}

/* ---- consistency of a quantized side ----------------------------------- */

/* Whether the quantized tensor t's blocks are ones ggml's reference
 * quantizer writes: checked in chunks over the threads; the first bad block
 * (the lowest index, whatever the threads) into *bad and why. */
static int quant_consistent(const differ *df, const g2f_tensor *t, uint64_t *bad, char *why, size_t n) {
    const g2f_quant_info *qi = g2f_quant_info_of(t->dtype);
    if (!qi) return 1;
    const uint64_t blocks = t->numel / qi->block, chunk = 4096, nc = (blocks + chunk - 1) / chunk;
    uint64_t first = UINT64_MAX;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(df->n_threads)
#endif
    for (uint64_t c = 0; c < nc; c++) {
        uint64_t b0 = c * chunk, cnt = blocks - b0 < chunk ? blocks - b0 : chunk, at;
        if (g2f_quant_consistent(t->dtype, t->data, b0, cnt, &at, NULL, 0)) continue;
#ifdef _OPENMP
#pragma omp critical(g2f_diff_first_bad)
#endif
        if (at < first) first = at;
    }
    (void)df;
    if (first == UINT64_MAX) return 1;
    g2f_quant_consistent(t->dtype, t->data, first, 1, NULL, why, n);
    *bad = first;
    return 0;
}

/* ---- the verdict of one pair ------------------------------------------- */

/* What classify may try beyond the cheap verdicts. */
typedef struct role {
    long layer;  /* >= 0: a per-layer role, from_layer is tried */
    int k;       /* its G2F_LAYER_TENSORS index */
    int two_d;   /* a 2-D weight: transposed is tried */
} role;

/* Merges the blocks' records in block order: the same as one serial walk. */
typedef struct merged {
    int identical, out_t, out_q, deferred, dead;
    double sab, saa;
} merged;

static merged merge_blocks(const differ *df, const side *A, const walk *w, g2f_diff_tensor *o) {
    merged m = {1, 0, 0, 0, 0, 0, 0};
    for (size_t blk = 0; blk < w->n_blocks; blk++) {
        const bstats *s = &df->blocks[blk];
        size_t start, count;
        block_range(w, blk, &start, &count);
        m.identical &= !s->neq && !isnan(s->max_abs); /* inf and inf: the same bits, never "identical" */
        if (s->max_abs > o->max_abs || isnan(s->max_abs))
            o->max_abs = s->max_abs, o->worst = logical_index(A, w, start, s->worst);
        if (s->max_rel > o->max_rel) o->max_rel = s->max_rel;
        m.out_t |= s->out_t;
        m.out_q |= s->out_q;
        if (s->max_steps > o->max_steps) o->max_steps = s->max_steps;
        if (s->max_ratio > o->bound_ratio) o->bound_ratio = s->max_ratio;
        m.deferred |= s->deferred;
        m.dead |= s->dead;
        m.sab += s->sab;
        m.saa += s->saa;
    }
    return m;
}

/* The rounding tests, run where they waited: f16_rounded / bf16_rounded. */
static int rounded_kind(differ *df, const side *A, const side *B, const walk *w, tol t, merged *m,
                        g2f_diff_tensor *o) {
    if (m->deferred && (m->dead & R_ALL) != R_ALL) {
        pass ps = {PASS_ROUNDING, t, 0, 0};
        run_pass(df, A, B, w, &ps);
        for (size_t blk = 0; blk < w->n_blocks; blk++) m->dead |= df->blocks[blk].dead;
    }
    if ((m->dead & (R_F16_AB | R_F16_BA)) != (R_F16_AB | R_F16_BA)) return o->kind = G2F_DIFF_F16_ROUNDED, 1;
    if ((m->dead & (R_BF16_AB | R_BF16_BA)) != (R_BF16_AB | R_BF16_BA)) return o->kind = G2F_DIFF_BF16_ROUNDED, 1;
    return 0;
}

/* One layer K of from_layer's search: screened on B's leading values
 * (lead, within their bound), then the whole tensor compared. */
typedef struct layer_probe {
    differ *df;
    const role *r;
    const side *A, *B;
    shape sh;
    tol t;
    const float *lead, *lead_bound;
    size_t n;
    int *found;
    g2f_diff_tensor *o;
} layer_probe;

static g2f_status probe_layer(void *u, size_t K, int *stop, g2f_error *err) {
    layer_probe *p = u;
    differ *df = p->df;
    int close = 1;
    for (size_t i = 0; i < SIGNATURE && i < p->n && close; i++) {
        double dd = fabs((double)df->sig[K][p->r->k][i] - p->lead[i]);
        close = dd <= p->t.rel * fabs(df->sig[K][p->r->k][i]) + p->t.abs + p->lead_bound[i];
    }
    if (!close) return G2F_OK;
    const g2f_tensor *ts[G2F_LAYER_TENSORS];
    int split, ok = 0;
    g2f_status st = g2f_model_layer_tensors_all(df->a, K, ts, &split, err);
    side other = {ts[p->r->k], p->A->linear, NULL};
    if (st == G2F_OK && other.t) st = within(df, &other, p->B, p->sh, p->t, &ok, err);
    if (st != G2F_OK) return st;
    if (ok) {
        p->o->kind = G2F_DIFF_FROM_LAYER;
        p->o->from_layer = (long)K;
        *p->found = *stop = 1;
    }
    return G2F_OK;
}

/* from_layer:K: B's tensor is A's layer K (r->layer >= 0), screened on the
 * leading values. */
static g2f_status from_layer(differ *df, const role *r, const side *A, const side *B, shape sh, tol t, int *found,
                             g2f_diff_tensor *o, g2f_error *err) {
    size_t n_layer = g2f_model_get_info(df->a)->n_layer, n = sh.rows * sh.cols;
    float lead[SIGNATURE], lead_bound[SIGNATURE] = {0};
    *found = 0;
    for (size_t i = 0; i < SIGNATURE && i < n; i++) { /* B's leading logical values (the screen's bound: B's own) */
        size_t e = B->linear && sh.rows > 1 ? (i % sh.cols) * sh.rows + i / sh.cols : i;
        g2f_tensor_read_f32(B->t, e, 1, &lead[i]);
        if (side_quant(B) != G2F_DTYPE_F32) g2f_quant_bounds(B->t->dtype, B->t->data, e, 1, NULL, &lead_bound[i]);
    }
    layer_probe p = {df, r, A, B, sh, t, lead, lead_bound, n, found, o};
    return g2f_search_other_layers(n_layer, (size_t)r->layer, probe_layer, &p, err);
}

/* The verdicts past the first pass: rounding, layout, another layer, a
 * scale; the first that fits. */
static g2f_status later_verdicts(differ *df, const role *r, const side *A, const side *B, const walk *w, tol t,
                                 merged *m, g2f_diff_tensor *o, g2f_error *err) {
    int quant = side_quant(A) != G2F_DTYPE_F32 || side_quant(B) != G2F_DTYPE_F32, ok = 0;
    o->max_steps = o->bound_ratio = 0;
    if (rounded_kind(df, A, B, w, t, m, o)) return G2F_OK;
    if (r->two_d) { /* A's bytes read in the other layout */
        side other = {A->t, !A->linear, NULL};
        g2f_status st = within(df, &other, B, w->sh, t, &ok, err);
        if (st != G2F_OK) return st;
        if (ok) return o->kind = G2F_DIFF_TRANSPOSED, G2F_OK;
    }
    if (r->layer >= 0) {
        g2f_status st = from_layer(df, r, A, B, w->sh, t, &ok, o, err);
        if (st != G2F_OK || ok) return st;
    }
    o->kind = G2F_DIFF_DIFFERENT;
    if (quant) return G2F_OK; /* a scale is not looked for under quantization noise */
    double c = m->saa > 0 ? m->sab / m->saa : 0;
    if (c != 0 && fabs(c - 1) > 1e-6) {
        tol loose = {t.rel > 0x1p-23 ? t.rel : 0x1p-23, t.abs, t.da, t.db}; /* for derived values: one more rounding */
        pass ps = {PASS_SCALED, loose, c, 0};
        run_pass(df, A, B, w, &ps);
        if (ps.ok) o->kind = G2F_DIFF_SCALED, o->scale = c;
    }
    return G2F_OK;
}

/* A quantized side with a block ggml's reference quantizer cannot write:
 * 1 with the verdict set. */
static int inconsistent(const differ *df, const side *A, const side *B, g2f_diff_tensor *o) {
    for (int k = 0; k < 2; k++) {
        const side *s = k ? A : B; /* B's first: it is the port */
        uint64_t bad;
        char why[200];
        if (side_quant(s) == G2F_DTYPE_F32 || quant_consistent(df, s->t, &bad, why, sizeof why)) continue;
        const g2f_quant_info *qi = g2f_quant_info_of(s->t->dtype);
        o->kind = G2F_DIFF_QUANT_INCONSISTENT;
        o->quant = s->t->dtype;
        o->bad_block = bad;
        snprintf(o->note, sizeof o->note, "%c's '%.150s': %s block %llu (elements [%llu, %llu)): %.200s", k ? 'A' : 'B',
                 s->t->name, qi->name, (unsigned long long)bad, (unsigned long long)(bad * qi->block),
                 (unsigned long long)((bad + 1) * qi->block), why);
        return 1;
    }
    return 0;
}

/* A side's file index of logical element (i, j). */
static uint64_t file_at(const side *s, shape sh, size_t i, size_t j) {
    return s->linear && sh.rows > 1 ? (uint64_t)j * sh.rows + i : (uint64_t)i * sh.cols + j;
}

/* A side's logical row i, columns [j0, j0 + n), in double: a Conv1D row is one run of the file. */
static void row_in_double(const side *S, shape sh, size_t i, size_t j0, size_t n, double *v) {
    if (!S->linear || sh.rows == 1) {
        g2f_tensor_read_f64(S->t, file_at(S, sh, i, j0), n, v);
        return;
    }
    for (size_t j = 0; j < n; j++) g2f_tensor_read_f64(S->t, file_at(S, sh, i, j0 + j), 1, &v[j]);
}

/* Both sides in double, in the logical order: *same when every value is the same finite number,
 * *rounded when every B value is A's rounded to B's dtype to nearest (g2f_dtype_values_agree, A
 * taken as exact), *max_abs the largest |a - b| (NaN sticks). */
static void compare_in_double(const side *A, const side *B, shape sh, int *same, int *rounded, double *max_abs) {
    enum { CH = 1024 };
    double a[CH], b[CH];
    *same = *rounded = 1;
    *max_abs = 0;
    for (size_t i = 0; i < sh.rows; i++)
        for (size_t j0 = 0; j0 < sh.cols; j0 += CH) {
            size_t n = sh.cols - j0 < CH ? sh.cols - j0 : CH;
            row_in_double(A, sh, i, j0, n, a), row_in_double(B, sh, i, j0, n, b);
            for (size_t j = 0; j < n; j++) {
                double d = fabs(a[j] - b[j]);
                *same &= a[j] == b[j] && isfinite(a[j]);
                *rounded &= isfinite(a[j]) && isfinite(b[j]) &&
                            g2f_dtype_values_agree(a[j], G2F_DTYPE_F64, b[j], B->t->dtype);
                if (!(d <= *max_abs)) *max_abs = d;
            }
        }
}

/* With an F64 side the passes' float reads lose what a double holds below float's precision and
 * beyond its range (both sides Inf there), so "identical" and "rounded" are decided in double: the
 * same finite values, identical; B, the port, in a narrower dtype holding A's values rounded to it
 * to nearest, rounded (equivalent); else neither, whatever the floats say (*not_rounding), and the
 * later verdicts decide (an F64 port of F32 weights that differ below float's precision, F64 A one
 * F16 step from B where A's float lands on the midpoint). Returns 1 when it decided. */
static int f64_verdict(const side *A, const side *B, shape sh, int *not_rounding, g2f_diff_tensor *o) {
    *not_rounding = 0;
    if (A->t->dtype != G2F_DTYPE_F64 && B->t->dtype != G2F_DTYPE_F64) return 0;
    int same, rounded;
    double mx;
    compare_in_double(A, B, sh, &same, &rounded, &mx);
    if (same) {
        o->kind = G2F_DIFF_IDENTICAL, o->equivalent = 1, o->max_abs = o->max_rel = 0;
        return 1;
    }
    *not_rounding = 1;
    if (mx > o->max_abs || isnan(mx)) o->max_abs = mx; /* what the floats could not see */
    if (A->t->dtype != G2F_DTYPE_F64 || B->t->dtype == G2F_DTYPE_F64 || !rounded) return 0;
    o->kind = G2F_DIFF_ROUNDED, o->equivalent = 1;
    return 1;
}

static g2f_status classify(differ *df, const role *r, const side *A, const side *B, shape sh, g2f_diff_tensor *o,
                           g2f_error *err) {
    walk w = walk_of(A, B, sh);
    g2f_status st = room_for(df, &w, err);
    if (st != G2F_OK) return st;
    tol t = tol_for(A->t->dtype, B->t->dtype);
    if (t.rel > df->roundoff) df->roundoff = t.rel;
    /* B, the port, quantized: its bound; A quantized alone: B must hold A's dequantized values */
    int quant = side_quant(B) != G2F_DTYPE_F32, quant_a = side_quant(A) != G2F_DTYPE_F32;
    pass ps = {PASS_STATS, t, 0, 0};
    run_pass(df, A, B, &w, &ps);
    merged m = merge_blocks(df, A, &w, o);
    int not_rounding = 0;
    if (!quant && f64_verdict(A, B, sh, &not_rounding, o)) return o->max_steps = o->bound_ratio = 0, G2F_OK;
    /* the verdicts in order, the first that fits */
    if (!not_rounding && (m.identical || (t.rel > 0 && !m.out_t))) {
        o->kind = m.identical ? G2F_DIFF_IDENTICAL : G2F_DIFF_ROUNDED;
        o->equivalent = 1;
        o->max_steps = o->bound_ratio = 0;
        return G2F_OK;
    }
    if ((quant || quant_a) && inconsistent(df, A, B, o)) {
        o->max_steps = o->bound_ratio = 0;
        return G2F_OK;
    }
    if (quant && !m.out_q) {
        o->kind = G2F_DIFF_QUANTIZED;
        o->quant = B->t->dtype;
        o->accept_class = G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED;
        return G2F_OK;
    }
    return later_verdicts(df, r, A, B, &w, t, &m, o, err);
}

/* A bias only one file has: the difference is the bias itself (the other
 * read as zeros), so max_abs is its largest magnitude. */
static void missing_verdict(const g2f_tensor *t, int in_a, g2f_diff_tensor *o) {
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
    o->kind = zero ? G2F_DIFF_ZERO_BIAS : G2F_DIFF_MISSING;
    o->equivalent = zero;
}

static char *dup_name(const g2f_tensor *t) {
    if (!t) return NULL;
    size_t n = strlen(t->name);
    char *s = malloc(n + 1);
    if (s) memcpy(s, t->name, n + 1);
    return s;
}

/* One pair of the same role: a and b as each file holds it (NULL when
 * absent) in the logical shape sh; bias: one file's is compared with
 * zeros. */
typedef struct pair {
    const g2f_tensor *a, *b;
    int lin_a, lin_b;
    shape sh;
    int bias;
    role r;
} pair;

static g2f_status pair_verdict(differ *df, const pair *p, g2f_diff_tensor *o, g2f_error *err) {
    o->from_layer = -1;
    if (!o->name_a && p->a && !(o->name_a = dup_name(p->a))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (!o->name_b && p->b && !(o->name_b = dup_name(p->b))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (!p->a && !p->b) return o->kind = G2F_DIFF_ABSENT, G2F_OK;
    if (!p->a || !p->b) {
        o->missing_in = p->a ? 'A' : 'B';
        if (p->bias) missing_verdict(p->a ? p->a : p->b, p->a != NULL, o);
        else o->kind = G2F_DIFF_HELD_BY_ONE;
        return G2F_OK;
    }
    /* read out of the files where that beats first touches of the mapping
     * (on a guest whose page tables the hypervisor shadows) */
    side A = {p->a, p->lin_a, g2f_model_tensor_read(df->a, p->a, &df->rd[0])};
    side B = {p->b, p->lin_b, g2f_model_tensor_read(df->b, p->b, &df->rd[1])};
    return classify(df, &p->r, &A, &B, p->sh, o, err);
}

/* ---- the layers -------------------------------------------------------- */

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

static int is_weight_2d(int k) {
    return k == G2F_FFN_FC_W || k == G2F_FFN_PROJ_W || k == G2F_BLK_ATTN_W || k == G2F_BLK_APROJ_W;
}

static int is_layer_bias(int k) {
    return k == G2F_FFN_FC_B || k == G2F_FFN_PROJ_B || k == G2F_BLK_LN1_B || k == G2F_BLK_ATTN_B ||
           k == G2F_BLK_APROJ_B || k == G2F_BLK_LN2_B;
}

/* A layer's tensors as stored, TransformerLens' attention assembled into
 * the logical c_attn / c_proj (Conv1D: *conv marks those roles). */
static g2f_status layer_tensors(const g2f_model *m, size_t L, const g2f_tensor *ts[G2F_LAYER_TENSORS],
                                g2f_split_attn *sa, int conv[G2F_LAYER_TENSORS], g2f_error *err) {
    int split;
    memset(sa, 0, sizeof *sa);
    memset(conv, 0, G2F_LAYER_TENSORS * sizeof *conv);
    g2f_status st = g2f_model_layer_tensors_all(m, L, ts, &split, err);
    if (st == G2F_OK && split) st = g2f_model_split_attn(m, L, sa, err);
    for (int i = 0; st == G2F_OK && split && i < 4; i++) {
        ts[G2F_BLK_ATTN_W + i] = sa->present[i] ? &sa->t[i] : NULL;
        conv[G2F_BLK_ATTN_W + i] = 1;
    }
    return st;
}

/* What split attention role i was assembled from: "blocks.0.attn.W_Q +
 * W_K + W_V" (owned). */
static char *split_name(const g2f_split_attn *sa, int i) {
    static const int from[4][3] = {{0, 1, 2}, {3, 4, 5}, {6, -1, -1}, {7, -1, -1}};
    char buf[600];
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < 3 && from[i][k] >= 0; k++) {
        const g2f_tensor *t = sa->src[from[i][k]];
        if (!t) continue;
        const char *nm = used ? strrchr(t->name, '.') : t->name; /* the first in full, then the last part */
        nm = nm && used ? nm + 1 : t->name;
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? " + " : "", nm);
        if (used >= sizeof buf) break;
    }
    g2f_tensor t = {.name = buf};
    return dup_name(&t);
}

static int in_scope(g2f_diff_scope s, long layer, int k) {
    if (s == G2F_DIFF_SCOPE_ALL) return 1;
    if (layer < 0) return 0;
    return s == G2F_DIFF_SCOPE_BLOCK || k < G2F_FFN_TENSORS;
}

/* The excused verdict of what lies outside the scope. */
static void outside(const g2f_tensor *a, const g2f_tensor *b, g2f_diff_tensor *o) {
    o->from_layer = -1;
    o->kind = a || b ? G2F_DIFF_OUTSIDE : G2F_DIFF_ABSENT;
    o->missing_in = a && b ? 0 : a ? 'A' : b ? 'B' : 0;
    if (!o->name_a) o->name_a = dup_name(a);
    if (!o->name_b) o->name_b = dup_name(b);
}

/* A bias whose module one file does not hold at all (its weight held by
 * the other only) is held by one file too, not a bias left out. */
static void bias_of_absent_module(const g2f_diff_tensor *w, g2f_diff_tensor *b) {
    if (w->kind != G2F_DIFF_HELD_BY_ONE || (b->kind != G2F_DIFF_MISSING && b->kind != G2F_DIFF_ZERO_BIAS)) return;
    b->kind = G2F_DIFF_HELD_BY_ONE;
    b->equivalent = 0;
    b->max_abs = b->max_rel = 0;
    b->worst = b->missing_values = 0;
}

static g2f_status compare_layer(differ *df, g2f_diff_scope scope, size_t L, g2f_diff_tensor *out, g2f_error *err) {
    const g2f_tensor *ta[G2F_LAYER_TENSORS], *tb[G2F_LAYER_TENSORS];
    g2f_split_attn sa, sb;
    int ca[G2F_LAYER_TENSORS], cb[G2F_LAYER_TENSORS];
    g2f_status st = layer_tensors(df->a, L, ta, &sa, ca, err);
    if (st == G2F_OK) st = layer_tensors(df->b, L, tb, &sb, cb, err);
    int lin_a = g2f_model_get_info(df->a)->layout == G2F_LAYOUT_LINEAR;
    int lin_b = g2f_model_get_info(df->b)->layout == G2F_LAYOUT_LINEAR;
    for (int k = 0; k < G2F_LAYER_TENSORS && st == G2F_OK; k++) {
        if (ca[k] && ta[k] && !(out[k].name_a = split_name(&sa, k - G2F_BLK_ATTN_W)))
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        if (cb[k] && tb[k] && !(out[k].name_b = split_name(&sb, k - G2F_BLK_ATTN_W)))
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        if (st == G2F_OK && !in_scope(scope, (long)L, k)) {
            outside(ta[k], tb[k], &out[k]);
            continue;
        }
        pair p = {ta[k], tb[k], lin_a && !ca[k], lin_b && !cb[k], shape_of(df, k), is_layer_bias(k),
                  {(long)L, k, is_weight_2d(k)}};
        if (st == G2F_OK) st = pair_verdict(df, &p, &out[k], err);
    }
    for (int k = 0; st == G2F_OK && k < G2F_LAYER_TENSORS; k++) {
        static const int weight_of[G2F_LAYER_TENSORS] = {-1, G2F_FFN_FC_W, -1, G2F_FFN_PROJ_W, -1, G2F_BLK_LN1_W, -1,
                                                         G2F_BLK_ATTN_W, -1, G2F_BLK_APROJ_W, -1, G2F_BLK_LN2_W};
        if (weight_of[k] >= 0) bias_of_absent_module(&out[weight_of[k]], &out[k]);
    }
    g2f_split_attn_free(&sa);
    g2f_split_attn_free(&sb);
    return st;
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

/* ---- the ends ---------------------------------------------------------- */

/* The first rows x d elements of t as a tensor of that shape (wte's
 * vocabulary without llm.c's padding rows), in *view. */
static const g2f_tensor *rows_view(const g2f_tensor *t, size_t rows, size_t d, g2f_tensor *view) {
    if (!t) return NULL;
    *view = *t;
    view->ndim = 2;
    view->shape[0] = rows;
    view->shape[1] = d;
    view->numel = (uint64_t)rows * d;
    const g2f_quant_info *qi = g2f_quant_info_of(t->dtype);
    view->nbytes = qi ? view->numel / qi->block * qi->bytes : view->numel * g2f_dtype_size(t->dtype);
    return view;
}

/* The head: a stored one against the other's, or against the other's wte
 * when that file stores none (it is tied); neither storing one: tied. */
static g2f_status compare_head(differ *df, const g2f_model_ends *ea, const g2f_model_ends *eb, g2f_tensor vw[2],
                               g2f_diff_tensor *o, g2f_error *err) {
    const g2f_tensor *ha = ea->t[G2F_END_HEAD], *hb = eb->t[G2F_END_HEAD];
    size_t d = df->d;
    if (!ha && !hb) {
        o->kind = G2F_DIFF_TIED;
        o->equivalent = 1;
        o->from_layer = -1;
        snprintf(o->note, sizeof o->note, "neither file stores a head: both make the logits with wte, compared above");
        return G2F_OK;
    }
    const g2f_tensor *xa = ha ? ha : rows_view(ea->t[G2F_END_WTE], ea->vocab, d, &vw[0]);
    const g2f_tensor *xb = hb ? hb : rows_view(eb->t[G2F_END_WTE], eb->vocab, d, &vw[1]);
    if ((!ha && xa) || (!hb && xb))
        snprintf(o->note, sizeof o->note, "%c stores no head (tied to its wte): %c's head is compared with %c's wte",
                 ha ? 'B' : 'A', ha ? 'A' : 'B', ha ? 'B' : 'A');
    if (xa && xb && ea->vocab != eb->vocab) {
        o->kind = G2F_DIFF_SHAPE;
        o->from_layer = -1;
        o->name_a = dup_name(xa), o->name_b = dup_name(xb);
        snprintf(o->note, sizeof o->note, "vocabularies of %zu and %zu rows", ea->vocab, eb->vocab);
        return G2F_OK;
    }
    pair p = {xa, xb, ha && ea->head_dv, hb && eb->head_dv, {xa ? ea->vocab : eb->vocab, d}, 0, {-1, -1, 1}};
    return pair_verdict(df, &p, o, err);
}

static g2f_status compare_ends(differ *df, g2f_diff_scope scope, g2f_diff_tensor *out, g2f_error *err) {
    g2f_model_ends ea, eb;
    g2f_status st = g2f_model_end_tensors(df->a, &ea, err);
    if (st == G2F_OK) st = g2f_model_end_tensors(df->b, &eb, err);
    if (st != G2F_OK) return st;
    g2f_tensor va, vb, hv[2];
    for (int k = 0; k < G2F_END_TENSORS && st == G2F_OK; k++) {
        const g2f_tensor *a = ea.t[k], *b = eb.t[k];
        if (!in_scope(scope, -1, k)) {
            outside(a, b, &out[k]);
            continue;
        }
        if (k == G2F_END_HEAD) {
            st = compare_head(df, &ea, &eb, hv, &out[k], err);
            continue;
        }
        size_t ra = k == G2F_END_WTE ? ea.vocab : k == G2F_END_WPE ? ea.n_pos : 1;
        size_t rb = k == G2F_END_WTE ? eb.vocab : k == G2F_END_WPE ? eb.n_pos : 1;
        size_t cols = k == G2F_END_HEAD_B ? (a ? ea.vocab : eb.vocab) : df->d;
        if (k == G2F_END_WTE) a = rows_view(a, ra, df->d, &va), b = rows_view(b, rb, df->d, &vb);
        if (a && b && (ra != rb || (k == G2F_END_HEAD_B && ea.vocab != eb.vocab))) {
            out[k] = (g2f_diff_tensor){.kind = G2F_DIFF_SHAPE, .from_layer = -1};
            out[k].name_a = dup_name(a), out[k].name_b = dup_name(b);
            snprintf(out[k].note, sizeof out[k].note, "%zu rows in A, %zu in B", ra, rb);
            continue;
        }
        pair p = {a, b, 0, 0, {a ? ra : rb, cols}, k == G2F_END_LNF_B || k == G2F_END_HEAD_B,
                  {-1, -1, k == G2F_END_WTE || k == G2F_END_WPE}};
        st = pair_verdict(df, &p, &out[k], err);
        if (k == G2F_END_LNF_B) bias_of_absent_module(&out[G2F_END_LNF_W], &out[k]);
        for (int s = 0; st == G2F_OK && k == G2F_END_WTE && s < 2; s++) {
            const g2f_model_ends *e = s ? &eb : &ea;
            if (e->wte_rows > e->vocab && !out[k].note[0])
                snprintf(out[k].note, sizeof out[k].note, "%c pads wte to %zu rows (llm.c): rows %zu-%zu lie beyond "
                         "the vocabulary and are not compared", s ? 'B' : 'A', e->wte_rows, e->vocab, e->wte_rows - 1);
        }
    }
    return st;
}

/* ---- every other tensor ------------------------------------------------- */

static int other_cmp(const void *x, const void *y) {
    return strcmp(((const g2f_model_other *)x)->key, ((const g2f_model_other *)y)->key);
}

/* An 8-bit float's byte is NaN or Inf: E4M3 (OCP) has NaN at S.1111.111 and
 * no Inf; E5M2 has Inf and NaN where the exponent is all ones. */
static int f8_nonfinite(g2f_dtype d, unsigned char b) {
    if (d == G2F_DTYPE_F8_E4M3) return (b & 0x7F) == 0x7F;
    if (d == G2F_DTYPE_F8_E5M2) return (b & 0x7C) == 0x7C;
    return 0;
}

/* Two other tensors of one name: compared as flat arrays of the same
 * shape, bytes for dtypes that are not floats (an 8-bit float's NaN or
 * Inf never equal, as everywhere). */
static g2f_status compare_other_pair(differ *df, const g2f_tensor *a, const g2f_tensor *b, g2f_diff_tensor *o,
                                     g2f_error *err) {
    int same_shape = a->ndim == b->ndim && a->numel == b->numel;
    for (size_t i = 0; same_shape && i < a->ndim; i++) same_shape = a->shape[i] == b->shape[i];
    int floats = g2f_dtype_is_convertible(a->dtype) && g2f_dtype_is_convertible(b->dtype);
    o->from_layer = -1;
    if (!same_shape) return o->kind = G2F_DIFF_SHAPE, G2F_OK;
    if (!floats && (a->dtype != b->dtype || a->nbytes != b->nbytes)) /* U8 against BOOL: the same shape */
        return o->kind = G2F_DIFF_DIFFERENT, G2F_OK;
    if (!floats) {
        int nonfinite = 0;
        for (uint64_t i = 0; i < a->nbytes && (a->dtype == G2F_DTYPE_F8_E4M3 || a->dtype == G2F_DTYPE_F8_E5M2); i++)
            nonfinite |= f8_nonfinite(a->dtype, a->data[i]);
        o->kind = nonfinite || (a->nbytes && memcmp(a->data, b->data, (size_t)a->nbytes)) ? G2F_DIFF_DIFFERENT
                                                                                         : G2F_DIFF_IDENTICAL;
        o->equivalent = o->kind == G2F_DIFF_IDENTICAL;
        return G2F_OK;
    }
    pair p = {a, b, 0, 0, {1, (size_t)a->numel}, 0, {-1, -1, 0}};
    return pair_verdict(df, &p, o, err);
}

/* One other tensor held by one file (A when in_a) or both (b != NULL). */
static g2f_status compare_other(differ *df, const g2f_model_other *x, const g2f_model_other *y, int in_a,
                                g2f_diff_scope scope, g2f_diff_tensor *o, g2f_error *err) {
    const g2f_tensor *a = in_a ? x->t : y ? y->t : NULL, *b = in_a ? (y ? y->t : NULL) : x->t;
    size_t n = strlen(x->key);
    if (!(o->label = malloc(n + 1)) || (a && !(o->name_a = dup_name(a))) || (b && !(o->name_b = dup_name(b))))
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    memcpy(o->label, x->key, n + 1);
    o->from_layer = -1;
    o->missing_in = a && b ? 0 : a ? 'A' : 'B';
    g2f_other_kind k = x->kind != G2F_OTHER_UNKNOWN ? x->kind : y ? y->kind : x->kind;
    if (k == G2F_OTHER_BUFFER) return o->kind = G2F_DIFF_BUFFER, G2F_OK;
    if (k == G2F_OTHER_TRAINING) return o->kind = G2F_DIFF_TRAINING, G2F_OK;
    if (!in_scope(scope, -1, 0)) return o->kind = G2F_DIFF_OUTSIDE, G2F_OK;
    if (!a || !b) return o->kind = G2F_DIFF_HELD_BY_ONE, G2F_OK;
    return compare_other_pair(df, a, b, o, err);
}

static const g2f_model_other *find_other(const g2f_model_other *sorted, size_t n, const char *key) {
    g2f_model_other k = {NULL, key, G2F_OTHER_UNKNOWN};
    return n ? bsearch(&k, sorted, n, sizeof *sorted, other_cmp) : NULL;
}

/* Two tensors of one file whose names are one after the container prefixes
 * (transformer.score.weight and model.score.weight): neither can stand for
 * the other file's, so each keeps its whole name (then held by one file, or
 * matched exactly), never one compared and the other dropped. */
static int other_ptr_cmp(const void *x, const void *y) {
    return strcmp((*(g2f_model_other *const *)x)->key, (*(g2f_model_other *const *)y)->key);
}

static g2f_status unstrip_twins(g2f_model_other *o, size_t n, g2f_error *err) {
    if (n < 2) return G2F_OK;
    g2f_model_other **p = malloc(n * sizeof *p);
    if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) p[i] = &o[i];
    qsort(p, n, sizeof *p, other_ptr_cmp); /* twins side by side; keys are set only after the pass */
    unsigned char *twin = calloc(n, 1);
    if (!twin) return free(p), g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 1; i < n; i++)
        if (!strcmp(p[i - 1]->key, p[i]->key)) twin[i - 1] = twin[i] = 1;
    for (size_t i = 0; i < n; i++)
        if (twin[i]) p[i]->key = p[i]->t->name;
    free(twin);
    free(p);
    return G2F_OK;
}

static g2f_status compare_others(differ *df, g2f_diff_scope scope, g2f_diff_result *out, g2f_error *err) {
    g2f_model_other *oa = NULL, *ob = NULL, *sa = NULL, *sb = NULL;
    size_t na = 0, nb = 0;
    g2f_status st = g2f_model_others(df->a, &oa, &na, err);
    if (st == G2F_OK) st = g2f_model_others(df->b, &ob, &nb, err);
    if (st == G2F_OK) st = unstrip_twins(oa, na, err);
    if (st == G2F_OK) st = unstrip_twins(ob, nb, err);
    if (st == G2F_OK && (na + nb) &&
        (!(sa = malloc((na ? na : 1) * sizeof *sa)) || !(sb = malloc((nb ? nb : 1) * sizeof *sb)) ||
         !(out->others = calloc(na + nb, sizeof *out->others))))
        st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    if (st == G2F_OK && (na + nb)) {
        if (na) memcpy(sa, oa, na * sizeof *sa);
        if (nb) memcpy(sb, ob, nb * sizeof *sb);
        qsort(sa, na, sizeof *sa, other_cmp);
        qsort(sb, nb, sizeof *sb, other_cmp);
    }
    for (size_t i = 0; st == G2F_OK && i < na; i++)
        st = compare_other(df, &oa[i], find_other(sb, nb, oa[i].key), 1, scope, &out->others[out->n_others++], err);
    for (size_t i = 0; st == G2F_OK && i < nb; i++)
        if (!find_other(sa, na, ob[i].key))
            st = compare_other(df, &ob[i], NULL, 0, scope, &out->others[out->n_others++], err);
    free(oa), free(ob), free(sa), free(sb);
    return st;
}

/* ---- the whole diff ------------------------------------------------------ */

static void count(g2f_diff_result *r) {
    r->compared = r->differing = r->held_by_one = r->excused = 0;
    for (size_t i = 0; i < g2f_diff_entries(r); i++) {
        const g2f_diff_tensor *t = g2f_diff_entry(r, i, NULL, NULL);
        r->compared += g2f_diff_kind_compared(t->kind);
        r->differing += g2f_diff_kind_compared(t->kind) && !t->equivalent;
        r->held_by_one += t->kind == G2F_DIFF_HELD_BY_ONE;
        r->excused += g2f_diff_kind_excused(t->kind);
    }
    r->equivalent = r->compared && !r->differing && !r->held_by_one && !r->config_msg[0];
}

/* The GELU a file's model runs, where the file says (config.json's activation_function, else the
 * checkpoint's own code: a nanoGPT training checkpoint runs erf); *why names it; -1 when unsaid. */
static int gelu_said(const g2f_model_info *m, const char **why) {
    if (m->config_has_gelu) return *why = m->config_activation ? m->config_activation : "config.json", (int)m->config_gelu;
    if (m->file_has_gelu) return *why = "the checkpoint's own code", (int)m->file_gelu;
    return *why = NULL, -1;
}

static const char *attn_rule(const g2f_model_info *m) {
    return m->attn_unscaled ? (m->attn_by_layer ? "1 / (layer + 1)" : "1 (scale_attn_weights false)")
                            : (m->attn_by_layer ? "1 / (sqrt(d_head) (layer + 1))" : "1 / sqrt(d_head)");
}

/* What the two files' configs say that makes them other models, where both say it (sizes aside):
 * identical tensors under another head count compute another attention. */
static void compare_config(const g2f_model_info *a, const g2f_model_info *b, g2f_diff_scope scope, g2f_diff_result *out) {
    char *m = out->config_msg;
    size_t n = sizeof out->config_msg, used = 0;
    int block = scope != G2F_DIFF_SCOPE_FFN;
    if (block && a->n_head && b->n_head && a->n_head != b->n_head)
        used += (size_t)snprintf(m + used, n - used, "n_head %zu in A, %zu in B", a->n_head, b->n_head);
    const char *wa, *wb;
    int fa = gelu_said(a, &wa), fb = gelu_said(b, &wb);
    if (fa >= 0 && fb >= 0 && fa != fb && used < n)
        used += (size_t)snprintf(m + used, n - used, "%sthe GELU: %s in A (%.40s), %s in B (%.40s)", used ? "; " : "",
                                 g2f_gelu_name((g2f_gelu)fa), wa, g2f_gelu_name((g2f_gelu)fb), wb);
    if (block && (a->attn_unscaled != b->attn_unscaled || a->attn_by_layer != b->attn_by_layer) && used < n)
        used += (size_t)snprintf(m + used, n - used, "%sthe attention's scale: %s in A, %s in B", used ? "; " : "",
                                 attn_rule(a), attn_rule(b));
    /* relative 1e-6: a GGUF holds its epsilon as a float32 */
    if (block && a->config_has_ln_eps && b->config_has_ln_eps && fabs(a->ln_eps - b->ln_eps) > 1e-6 * a->ln_eps && used < n)
        snprintf(m + used, n - used, "%slayer_norm_epsilon %g in A, %g in B", used ? "; " : "", a->ln_eps, b->ln_eps);
}

g2f_status g2f_diff_run(const g2f_model *a, const g2f_model *b, g2f_diff_result *out, g2f_error *err) {
    return g2f_diff_run_scoped(a, b, G2F_DIFF_SCOPE_ALL, out, err);
}

g2f_status g2f_diff_run_scoped(const g2f_model *a, const g2f_model *b, g2f_diff_scope scope, g2f_diff_result *out,
                               g2f_error *err) {
    const g2f_model_info *ia = g2f_model_get_info(a), *ib = g2f_model_get_info(b);
    memset(out, 0, sizeof *out);
    out->scope = scope;
    if (ia->n_layer != ib->n_layer || ia->n_embd != ib->n_embd || ia->n_inner != ib->n_inner) {
        snprintf(out->sizes_msg, sizeof out->sizes_msg,
                 "sizes differ: A has %zu layers, n_embd %zu, n_inner %zu; B has %zu layers, n_embd %zu, n_inner %zu",
                 ia->n_layer, ia->n_embd, ia->n_inner, ib->n_layer, ib->n_embd, ib->n_inner);
        return G2F_OK;
    }
    out->same_sizes = 1;
    compare_config(ia, ib, scope, out);
    differ df = {a, b, ia->n_embd, ia->n_inner, NULL, NULL, 0, 1, NULL, 0, 0, {{0}, {0}}};
#ifdef _OPENMP
    df.n_threads = omp_get_max_threads();
#endif
    df.rd[0].n_threads = df.rd[1].n_threads = df.n_threads;
    size_t n_layer = ia->n_layer;
    out->tensors = calloc(n_layer ? n_layer : 1, sizeof *out->tensors);
    df.sig = calloc(n_layer ? n_layer : 1, sizeof *df.sig);
    g2f_status st = G2F_OK;
    if (!out->tensors || !df.sig) {
        st = g2f_error_set(err, G2F_ERR_NOMEM, "diff: out of memory");
        goto done;
    }
    out->n_layers = n_layer;
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) st = signatures(&df, L, err);
    for (size_t L = 0; L < n_layer && st == G2F_OK; L++) st = compare_layer(&df, scope, L, out->tensors[L], err);
    if (st == G2F_OK) st = compare_ends(&df, scope, out->ends, err);
    if (st == G2F_OK) st = compare_others(&df, scope, out, err);
    count(out);
    out->roundoff = df.roundoff;
    g2f_diff_accept(out, 0);
done:
    free(df.sig);
    free(df.blocks);
    scratch_free(&df);
    g2f_layer_reader_free(&df.rd[0]);
    g2f_layer_reader_free(&df.rd[1]);
    if (st != G2F_OK) g2f_diff_result_free(out);
    return st;
}

static void entry_free(g2f_diff_tensor *t) {
    free(t->name_a);
    free(t->name_b);
    free(t->label);
}

void g2f_diff_result_free(g2f_diff_result *r) {
    if (!r) return;
    for (size_t i = 0; i < g2f_diff_entries(r); i++) entry_free(entry_mut(r, i));
    free(r->tensors);
    free(r->others);
    memset(r, 0, sizeof *r);
}
