/* g2f_genverify: a generation checked step by step; see g2f_genverify.h.
 *
 * The workload: a handful of rows of up to a context's length, a vocabulary
 * of 50k: the reference is one forward with variances per row (the cost of
 * verify on the same tokens); a divergence costs one recomputation per bug,
 * each a decode of every row (g2f_decode) or a forward.
 */
#include "g2f_genverify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_compare.h"
#include "g2f_decode.h"
#include "g2f_forward.h"
#include "g2f_tol.h"

/* ---- the fixture's tensors ---------------------------------------------------- */

typedef struct gen_t {
    const g2f_fixture *f;
    const g2f_tensor *prompt, *gen, *logits, *mask, *eos;
    size_t B, T0, N, V, n_pos;
} gen_t;

static int is_id_dtype(g2f_dtype d) { return d == G2F_DTYPE_I64 || d == G2F_DTYPE_I32; }
static int is_mask_dtype(g2f_dtype d) {
    return is_id_dtype(d) || d == G2F_DTYPE_U8 || d == G2F_DTYPE_BOOL || d == G2F_DTYPE_I8;
}

int g2f_genverify_present(const g2f_fixture *f) { return g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS) != NULL; }

static g2f_status bad(const gen_t *g, const g2f_tensor *t, const char *what, g2f_error *err) {
    char sh[128];
    g2f_shape_format(t, sh, sizeof sh);
    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s %s): %s", g2f_fixture_path(g->f), t->name,
                         g2f_tensor_type_name(t), sh, what);
}

/* A tensor's dtype, its bytes against its elements, and [B, len] or [len]
 * (nd 1 or 2; tail extra trailing dimensions, the vocabulary's). */
static g2f_status check_shape(const gen_t *g, const g2f_tensor *t, size_t nd, int ints, g2f_error *err) {
    char what[160];
    if (ints ? (t == g->mask ? !is_mask_dtype(t->dtype) : !is_id_dtype(t->dtype)) : !g2f_dtype_is_float(t->dtype))
        return bad(g, t, ints ? (t == g->mask ? "expected integers or booleans (0 or 1)" : "expected I64 or I32 token ids")
                              : "expected F32, F16, BF16 or F64 logits", err);
    if (t->ndim != nd)
        return snprintf(what, sizeof what, "expected %zu dimensions (like prompt_ids's, %s)", nd,
                        nd == g->prompt->ndim ? "with its rows" : "then the vocabulary"),
               bad(g, t, what, err);
    if (t->numel == 0 || t->nbytes < t->numel * g2f_dtype_size(t->dtype)) return bad(g, t, "holds no values", err);
    return G2F_OK;
}

/* Shapes, dtypes and sizes of every generation tensor. */
static g2f_status check_tensors(gen_t *g, g2f_error *err) {
    const char *path = g2f_fixture_path(g->f);
    if (!g->prompt)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: holds generated_ids but no prompt_ids (the tokens the port "
                             "generated after)", path);
    size_t nd = g->prompt->ndim;
    if (nd < 1 || nd > 2) return bad(g, g->prompt, "expected [B, T0] or [T0]", err);
    g2f_status st = check_shape(g, g->prompt, nd, 1, err);
    if (st == G2F_OK) st = check_shape(g, g->gen, nd, 1, err);
    if (st != G2F_OK) return st;
    g->B = nd == 2 ? (size_t)g->prompt->shape[0] : 1;
    g->T0 = (size_t)g->prompt->shape[nd - 1], g->N = (size_t)g->gen->shape[nd - 1];
    char what[200];
    if (nd == 2 && g->gen->shape[0] != g->B)
        return snprintf(what, sizeof what, "%llu rows but prompt_ids has %zu", (unsigned long long)g->gen->shape[0],
                        g->B), bad(g, g->gen, what, err);
    if (g->logits) {
        if ((st = check_shape(g, g->logits, nd + 1, 0, err)) != G2F_OK) return st;
        const uint64_t *s = g->logits->shape;
        if ((nd == 2 && s[0] != g->B) || s[nd - 1] != g->N || s[nd] != g->V)
            return snprintf(what, sizeof what, "expected [%s%zu, %zu] (%srows of generated_ids, the vocabulary)",
                            nd == 2 ? "B, " : "", g->N, g->V, nd == 2 ? "B and the " : "the "),
                   bad(g, g->logits, what, err);
    }
    if (g->mask) {
        if ((st = check_shape(g, g->mask, nd, 1, err)) != G2F_OK) return st;
        for (size_t k = 0; k < nd; k++)
            if (g->mask->shape[k] != g->prompt->shape[k]) return bad(g, g->mask, "expected prompt_ids's shape", err);
    }
    if (g->eos && (!is_id_dtype(g->eos->dtype) || g->eos->numel != 1 || g->eos->ndim > 1 ||
                   g->eos->nbytes < g2f_dtype_size(g->eos->dtype)))
        return bad(g, g->eos, "expected one I64 or I32 token id ([] or [1])", err);
    return G2F_OK;
}

/* "[1, 3]" of row b, column j (nd 2), or "[3]". */
static void at_text(const gen_t *g, size_t b, size_t j, char *buf, size_t n) {
    if (g->prompt->ndim == 2) snprintf(buf, n, "[%zu, %zu]", b, j);
    else snprintf(buf, n, "[%zu]", j);
}

/* The values: mask 0/1 with a token per row, ids in the vocabulary, eos an id, positions. */
static g2f_status check_values(const gen_t *g, g2f_error *err) {
    char what[200], at[48];
    int64_t eos = g->eos ? g2f_tensor_int_at(g->eos, 0) : -1;
    if (g->eos && (eos < 0 || (uint64_t)eos >= g->V))
        return snprintf(what, sizeof what, "%lld is outside the vocabulary 0..%zu", (long long)eos, g->V - 1),
               bad(g, g->eos, what, err);
    for (size_t b = 0; b < g->B; b++) {
        size_t L = 0, N = g->N;
        for (size_t j = 0; j < g->T0; j++) {
            int64_t m = g->mask ? g2f_tensor_int_at(g->mask, b * g->T0 + j) : 1, id = g2f_tensor_int_at(g->prompt, b * g->T0 + j);
            at_text(g, b, j, at, sizeof at);
            if (m != 0 && m != 1)
                return snprintf(what, sizeof what, "%lld at %s: expected 0 (padding) or 1", (long long)m, at),
                       bad(g, g->mask, what, err);
            if (m && (id < 0 || (uint64_t)id >= g->V))
                return snprintf(what, sizeof what, "token id %lld at %s is outside the vocabulary 0..%zu", (long long)id,
                                at, g->V - 1), bad(g, g->prompt, what, err);
            L += (size_t)m;
        }
        if (L == 0)
            return snprintf(what, sizeof what, "row %zu is all padding (no 1)", b), bad(g, g->mask, what, err);
        for (size_t k = 0; k < g->N; k++) {
            int64_t id = g2f_tensor_int_at(g->gen, b * g->N + k);
            at_text(g, b, k, at, sizeof at);
            if (id < 0 || (uint64_t)id >= g->V)
                return snprintf(what, sizeof what, "token id %lld at %s is outside the vocabulary 0..%zu", (long long)id,
                                at, g->V - 1), bad(g, g->gen, what, err);
            if (id == eos && N == g->N) N = k + 1;
        }
        if (g->n_pos && L + N - 1 > g->n_pos)
            return snprintf(what, sizeof what, "row %zu: %zu prompt tokens and %zu generated after them need %zu "
                            "positions but the checkpoint has %zu (wpe)", b, L, N, L + N - 1, g->n_pos),
                   bad(g, g->gen, what, err);
    }
    return G2F_OK;
}

/* A generation tensor recorded under two names (generated_ids and
 * transformer.generated_ids) must hold the same values: which one is the
 * port's is not defined otherwise (the same values within the coarser
 * dtype's rounding, as verify's aliases). */
static g2f_status check_twins(const gen_t *g, g2f_error *err) {
    const g2f_tensor *gen[5] = {g->prompt, g->gen, g->logits, g->mask, g->eos};
    for (size_t i = 0; i < g2f_fixture_n_aliases(g->f); i++) {
        const g2f_fixture_alias *a = g2f_fixture_alias_at(g->f, i);
        int ours = 0;
        for (int k = 0; k < 5; k++) ours |= gen[k] && a->kept == gen[k];
        if (!ours) continue;
        g2f_alias_values v;
        g2f_status st = g2f_fixture_alias_values(a, &v, err);
        if (st != G2F_OK) return st;
        if (v.not_comparable || v.differing || a->other2)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: '%s' and '%s' name one tensor of the generation with "
                                 "different values: which one is the port's is not defined",
                                 g2f_fixture_path(g->f), a->kept->name, a->other->name);
    }
    return G2F_OK;
}

static g2f_status gen_open(gen_t *g, const g2f_model *m, const g2f_fixture *f, g2f_error *err) {
    memset(g, 0, sizeof *g);
    g->f = f;
    g->prompt = g2f_fixture_act(f, 0, G2F_ACT_PROMPT_IDS);
    g->gen = g2f_fixture_act(f, 0, G2F_ACT_GENERATED_IDS);
    g->logits = g2f_fixture_act(f, 0, G2F_ACT_STEP_LOGITS);
    g->mask = g2f_fixture_act(f, 0, G2F_ACT_ATTENTION_MASK);
    g->eos = g2f_fixture_act(f, 0, G2F_ACT_EOS_ID);
    const g2f_model_info *mi = g2f_model_get_info(m);
    g->V = mi->vocab, g->n_pos = mi->n_positions;
    if (!g->gen) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: no generated_ids: not a generation", g2f_fixture_path(f));
    if (!g->V) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: no token embedding (wte): a generation cannot be checked",
                                    mi->path);
    g2f_status st = check_tensors(g, err);
    if (st == G2F_OK) st = check_twins(g, err);
    return st == G2F_OK ? check_values(g, err) : st;
}

g2f_status g2f_genverify_check(const g2f_model *m, const g2f_fixture *f, g2f_error *err) {
    gen_t g;
    return gen_open(&g, m, f, err);
}

/* ---- the rows -------------------------------------------------------------------- */

/* One row: its prompt's tokens (the mask's 1s) then the port's tokens. */
typedef struct row_t {
    const int64_t *seq;
    size_t L, N;       /* prompt tokens; steps compared (up to and with the first eos) */
    size_t pads;       /* the mask's 0s */
    int left;          /* every 0 before the first 1 (HF's left padding) */
} row_t;

typedef struct gv {
    gen_t g;
    const g2f_model *m;
    const g2f_genverify_params *p;
    double lambda, us, fl; /* us, fl: the port logits' stored rounding, relative and absolute */
    row_t *rows;
    int64_t *ids;      /* the rows' tokens, (B, T0 + N) */
    float *tol;        /* (B, N, V): lambda sqrt(var) of our logits at each compared step */
    float *zt;         /* one row's logits of ours, (N, V) */
    float *tbuf;       /* a step's compare tolerance (V) */
    double *ep;        /* a step's port logits (V) */
    size_t max_T, max_L;
    g2f_embed e;
} gv;

static g2f_status rows_make(gv *v, g2f_error *err) {
    gen_t *g = &v->g;
    size_t w = g->T0 + g->N;
    v->rows = calloc(g->B, sizeof *v->rows);
    v->ids = g2f_alloc_work(g->B, w, sizeof *v->ids, "verify: the generation's tokens", err);
    if (!v->ids) return err ? err->status : G2F_ERR_NOMEM;
    if (!v->rows) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    int64_t eos = g->eos ? g2f_tensor_int_at(g->eos, 0) : -1;
    for (size_t b = 0; b < g->B; b++) {
        row_t *r = &v->rows[b];
        int64_t *s = v->ids + b * w;
        int seen = 0;
        r->left = 1;
        for (size_t j = 0; j < g->T0; j++) {
            int on = !g->mask || g2f_tensor_int_at(g->mask, b * g->T0 + j) != 0;
            if (on) s[r->L++] = g2f_tensor_int_at(g->prompt, b * g->T0 + j), seen = 1;
            else r->pads++, r->left &= !seen;
        }
        r->N = g->N;
        for (size_t k = 0; k < g->N; k++) {
            s[r->L + k] = g2f_tensor_int_at(g->gen, b * g->N + k);
            if (s[r->L + k] == eos && r->N == g->N) r->N = k + 1;
        }
        r->seq = s;
        if (r->L + r->N - 1 > v->max_T) v->max_T = r->L + r->N - 1;
        if (r->L > v->max_L) v->max_L = r->L;
    }
    return G2F_OK;
}

/* ---- one step judged ---------------------------------------------------------------- */

/* Step k of row b with logits z (ours, or a recomputation's): the port's
 * token against z's argmax and, when recorded, its logits against z. */
typedef struct judged {
    g2f_gen_step s;
    int same, tie, fits; /* fits: the same token or a tie, and the logits (if any) match */
    int nonfinite;
} judged;

/* Whether the port's token is a largest of its own recorded logits e (V, finite), else *top the
 * largest: rounding them to F16 or BF16 keeps their order (or makes a tie), so a greedy port's
 * token is always one; a token below another is a choice that is not greedy (sampling, a penalty,
 * an index off), however near the tie in our logits. */
static int own_argmax(const double *e, size_t V, int64_t port, int64_t *top) {
    size_t t = 0;
    for (size_t i = 1; i < V; i++) t = e[i] > e[t] ? i : t;
    if (!(e[t] > e[port])) return 1;
    *top = (int64_t)t;
    return 0;
}

static void judge_step(gv *v, size_t b, size_t k, const float *z, judged *j) {
    const gen_t *g = &v->g;
    size_t V = g->V;
    const float *tol = v->tol + (b * g->N + k) * V;
    int64_t port = v->rows[b].seq[v->rows[b].L + k];
    memset(j, 0, sizeof *j);
    size_t top = g2f_argmax(z, V);
    j->s = (g2f_gen_step){b, k, (int64_t)top, port, 0, 0, 0, 0, 0, -1};
    j->s.gap = (double)z[top] - z[port];
    /* the window is the computation's alone: the port chose its token on the logits it computed,
     * before storing them rounded (F16, BF16), so that rounding cannot excuse a flip */
    j->s.window = (double)tol[top] + tol[port];
    for (size_t i = 0; i < V; i++) j->s.rank += z[i] > z[port] || (z[i] == z[port] && i < (size_t)port);
    j->same = top == (size_t)port;
    j->tie = !j->same && j->s.gap <= j->s.window;
    int logits_ok = 1;
    if (g->logits) {
        g2f_tensor_read_f64(g->logits, ((uint64_t)b * g->N + k) * V, V, v->ep);
        for (size_t i = 0; i < V; i++) v->tbuf[i] = (float)(tol[i] + v->us * fabs(v->ep[i]) + v->fl);
        g2f_cmp c;
        g2f_compare(v->ep, z, v->tbuf, V, &c);
        j->s.logits_checked = 1;
        j->s.logits_margin = c.nonfinite ? INFINITY : c.margin;
        j->nonfinite = c.nonfinite > 0;
        logits_ok = c.mismatched == 0 && c.nonfinite == 0;
        if (logits_ok) logits_ok = own_argmax(v->ep, V, port, &j->s.port_top);
    }
    j->fits = (j->same || j->tie) && logits_ok;
}

/* ---- the reference: the full recompute of each row ------------------------------------- */

typedef struct ref_ctx {
    gv *v;
    size_t b;
} ref_ctx;

/* Rows L - 1 .. of the forward are the steps: ours and their tolerance. */
static g2f_status ref_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)err;
    ref_ctx *c = u;
    gv *v = c->v;
    const row_t *r = &v->rows[c->b];
    size_t V = v->g.V;
    for (size_t i = 0; i < n; i++) {
        size_t t = row0 + i;
        if (t + 1 < r->L) continue;
        size_t k = t + 1 - r->L;
        float *tol = v->tol + (c->b * v->g.N + k) * V;
        memcpy(v->zt + k * V, z + i * V, V * sizeof *z);
        for (size_t j = 0; j < V; j++) tol[j] = (float)(v->lambda * sqrt((double)vz[i * V + j]));
    }
    return G2F_OK;
}

/* The forward's parameters for the verify's threads and GELU. */
static g2f_forward_params fwd_params(const gv *v, const g2f_tol_params *tol) {
    g2f_forward_params fp = {v->p->n_head, tol, v->p->gelu, g2f_decode_threads(v->m, v->p->n_threads), 1, 0};
    return fp;
}

/* One compared step into the result: counts, flips, the first divergence. */
static void tally(g2f_gen_result *out, const judged *j, size_t *row_div) {
    out->compared++;
    out->same += (size_t)j->same;
    if (j->s.logits_checked) {
        out->logits_steps++;
        out->logits_failed += (size_t)!(j->s.logits_margin <= 1);
        if (!(j->s.logits_margin <= out->logits_margin)) out->logits_margin = j->s.logits_margin;
    }
    out->nonfinite |= j->nonfinite;
    if (j->fits && j->tie) {
        if (out->n_flips < G2F_GEN_MAX_FLIPS) out->flips[out->n_flips] = j->s;
        out->n_flips++;
    }
    if (j->fits) return;
    out->diverged_steps++;
    (*row_div)++;
    if (!out->diverged || j->s.step < out->first.step) {
        out->diverged = 1;
        out->first = j->s;
    }
}

/* Every row recomputed with variances and every step judged. */
static g2f_status reference(gv *v, g2f_gen_result *out, g2f_error *err) {
    g2f_tol_params tol = {0, 0, 0, v->lambda};
    g2f_forward_params fp = fwd_params(v, &tol);
    size_t divs = 0, div_row_count = 0;
    g2f_status st = G2F_OK;
    for (size_t b = 0; b < v->g.B && st == G2F_OK; b++) {
        const row_t *r = &v->rows[b];
        ref_ctx c = {v, b};
        g2f_forward_hooks hk = {&c, NULL, NULL, NULL, NULL, ref_logits};
        st = g2f_forward_run_var(v->m, &v->e, r->seq, 1, r->L + r->N - 1, &fp, NULL, &hk, err);
        size_t row_div = 0;
        int was = out->diverged;
        size_t before = out->first.step;
        for (size_t k = 0; k < r->N && st == G2F_OK; k++) {
            judged j;
            judge_step(v, b, k, v->zt + k * v->g.V, &j);
            tally(out, &j, &row_div);
        }
        out->after_eos += v->g.N - r->N;
        if (row_div) div_row_count++;
        if (out->diverged && (!was || out->first.step < before)) divs = row_div; /* this row holds the first */
    }
    out->rows_diverged = div_row_count;
    out->later = divs ? divs - 1 : 0;
    return st;
}

/* ---- the port's bugs, by recomputation ------------------------------------------------ */

/* A hypothesis: a KV-cache bug (a decode how) or a bug of the model's ends
 * (the forward's how). */
typedef struct hyp {
    g2f_cause c;
    int forward;         /* recomputed by the forward, else by the decoder */
    g2f_decode_how dh;
    g2f_model_how mh;
    int pad;             /* padding_positions: each row's positions moved by its padding */
    int block;           /* with forward: bb in every block (mh.block points to it when tried) */
    g2f_block_bug bb;
    int gelu_set;        /* with forward: the FFN's GELU form instead of the asked one */
    g2f_gelu gelu;
} hyp;

/* How well a recomputation reproduces the port: every compared step fits. */
typedef struct fit_t {
    int fits;            /* so far */
    double margin;       /* the largest logits margin, or gap / window of a flip without logits */
} fit_t;

static void fit_step(gv *v, size_t b, size_t k, const float *z, fit_t *ft) {
    judged j;
    judge_step(v, b, k, z, &j);
    ft->fits &= j.fits;
    double m = j.s.logits_checked ? j.s.logits_margin : j.tie && j.s.window > 0 ? j.s.gap / j.s.window : 0;
    if (!(m <= ft->margin)) ft->margin = m;
}

typedef struct hyp_ctx {
    gv *v;
    size_t b;
    fit_t *ft;
} hyp_ctx;

static g2f_status hyp_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)vz, (void)err;
    hyp_ctx *c = u;
    const row_t *r = &c->v->rows[c->b];
    for (size_t i = 0; i < n; i++)
        if (row0 + i + 1 >= r->L) fit_step(c->v, c->b, row0 + i + 1 - r->L, z + i * c->v->g.V, c->ft);
    return G2F_OK;
}

/* Row b decoded under the how, teacher-forced on the port's tokens. G2F_ERR_USAGE: positions the how
 * pushes out of the checkpoint's (not this port). */
static g2f_status decode_row(gv *v, g2f_decoder *dc, const hyp *h, size_t b, float *z, fit_t *ft, g2f_error *err) {
    const row_t *r = &v->rows[b];
    g2f_decode_how how = h->dh;
    if (h->pad) how.pos_shift = (long)r->pads;
    g2f_decoder_start(dc, &how, NULL);
    g2f_status st = g2f_decoder_step(dc, r->seq, r->L, z, err);
    for (size_t k = 0; k < r->N && st == G2F_OK && ft->fits; k++) {
        fit_step(v, b, k, z, ft);
        if (k + 1 < r->N) st = g2f_decoder_step(dc, &r->seq[r->L + k], 1, z, err);
    }
    return st;
}

/* The generation under h: *ft, or ft->fits 0 when h cannot be this port's. */
static g2f_status try_hyp(gv *v, g2f_decoder *dc, const hyp *h, float *z, fit_t *ft, g2f_error *err) {
    ft->fits = 1, ft->margin = 0;
    g2f_tol_params tol = {0, 0, 0, v->lambda};
    g2f_forward_params fp = fwd_params(v, &tol);
    g2f_model_how mh = h->mh;
    if (h->block) mh.block = &h->bb;
    if (h->gelu_set) fp.gelu = h->gelu;
    for (size_t b = 0; b < v->g.B && ft->fits; b++) {
        g2f_error e2 = {0};
        g2f_status st;
        if (h->forward) {
            hyp_ctx c = {v, b, ft};
            g2f_forward_hooks hk = {&c, NULL, NULL, NULL, NULL, hyp_logits};
            st = g2f_forward_run(v->m, &v->e, v->rows[b].seq, 1, v->rows[b].L + v->rows[b].N - 1, &fp, &mh, NULL,
                                 &hk, NULL, &e2);
        } else {
            st = decode_row(v, dc, h, b, z, ft, &e2);
        }
        if (st == G2F_ERR_USAGE) ft->fits = 0; /* positions outside the checkpoint's: not this port */
        else if (st != G2F_OK) return err ? (*err = e2, st) : st;
    }
    return G2F_OK;
}

/* Appends hypothesis code to hs (at most max) after setup, which sets its fields through hs[n]. */
#define ADD(code, setup)                                                                                              \
    do {                                                                                                             \
        if (n < max) {                                                                                               \
            memset(&hs[n], 0, sizeof hs[n]);                                                                         \
            hs[n].c = g2f_cause_of(G2F_DIAG_BIT(code), G2F_STAGE_LOGITS);                                            \
            setup;                                                                                                   \
            n++;                                                                                                     \
        }                                                                                                            \
    } while (0)

/* A bug of every block or another GELU form, recomputed by the forward:
 * the block's own hypotheses (g2f_block.c tries them stage by stage where
 * stages are recorded; a generation records none, so they are tried on the
 * whole model). */
static size_t block_hypotheses(const gv *v, hyp *hs, size_t max) {
    const g2f_model_info *mi = g2f_model_get_info(v->m);
    size_t n = 0, H = v->p->n_head ? v->p->n_head : mi->n_head, d = mi->n_embd;
    double dh = H ? (double)(d / H) : 1.0;
#define ADD_BLOCK(code, setup) ADD(code, (hs[n].forward = hs[n].block = 1, setup))
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if ((g2f_gelu)g != v->p->gelu)
            ADD_BLOCK(g2f_diag_of_gelu((g2f_gelu)g), (hs[n].gelu_set = 1, hs[n].gelu = (g2f_gelu)g, hs[n].c.asked = v->p->gelu));
    ADD_BLOCK(G2F_DIAG_ATTN_SCALE_MISSING, hs[n].bb.scale = 1.0);
    ADD_BLOCK(G2F_DIAG_ATTN_SCALE_LAYER_IDX, hs[n].bb.scale_layer_idx = 1);
    ADD_BLOCK(G2F_DIAG_ATTN_SCALE, (hs[n].bb.scale = hs[n].c.scale = 1.0 / sqrt((double)d), hs[n].c.scale_name = 1));
    ADD_BLOCK(G2F_DIAG_ATTN_SCALE, (hs[n].bb.scale = hs[n].c.scale = 1.0 / dh, hs[n].c.scale_name = 2));
    for (int i = 0; i < G2F_QKV_PERMS_N; i++)
        ADD_BLOCK(G2F_DIAG_QKV_ORDER, (hs[n].bb.qkv = 1, memcpy(hs[n].bb.qkv_perm, g2f_qkv_perms[i], sizeof g2f_qkv_perms[i]),
                                 memcpy(hs[n].c.qkv_perm, g2f_qkv_perms[i], sizeof g2f_qkv_perms[i])));
    ADD_BLOCK(G2F_DIAG_HEADS_INTERLEAVED, hs[n].bb.heads_interleaved = 1);
    /* another epsilon in every block, and port-wide (ln_f too: a config read wrong, a constant in the code) */
    for (int wide = 0; wide < 2; wide++)
        for (int i = 0; i < G2F_LN_EPS_GRID_N; i++)
            if (fabs(g2f_ln_eps_grid[i] - mi->ln_eps) > 1e-3 * mi->ln_eps)
                ADD_BLOCK(G2F_DIAG_LN_EPS, (hs[n].bb.ln_eps = hs[n].c.eps = g2f_ln_eps_grid[i],
                                            hs[n].mh.ln_eps = wide ? g2f_ln_eps_grid[i] : 0));
    return n;
#undef ADD_BLOCK
}

/* The bugs to try: KV-cache ones, the padding's, the model's ends', every block's. */
static size_t hypotheses(const gv *v, const g2f_gen_result *out, hyp *hs, size_t max) {
    static const long offsets[] = {-2, -1, 1, 2, 3, 4};
    size_t n = 0;
    ADD(G2F_DIAG_CACHE_POSITION_RESET, hs[n].dh.position_reset = 1);
    ADD(G2F_DIAG_CACHE_NOT_APPENDED, hs[n].dh.not_appended = 1);
    for (size_t i = 0; i < 4; i++) ADD(G2F_DIAG_CACHE_OFFSET, (hs[n].dh.offset = offsets[i], hs[n].c.offset = offsets[i]));
    ADD(G2F_DIAG_CACHE_K_SCALED, hs[n].dh.k_scaled = 1);
    ADD(G2F_DIAG_CACHE_KV_BEFORE_BIAS, hs[n].dh.kv_unbiased = 1);
    ADD(G2F_DIAG_CACHE_KV_SWAPPED, hs[n].dh.kv_swapped = 1);
    int left = out->padded_rows > 0;
    for (size_t b = 0; b < v->g.B; b++) left &= !v->rows[b].pads || v->rows[b].left;
    if (left) ADD(G2F_DIAG_PADDING_POSITIONS, hs[n].pad = 1);
    const g2f_embed *e = &v->e;
    if (e->wpe) {
        ADD(G2F_DIAG_WPE_MISSING, (hs[n].forward = 1, hs[n].mh.no_wpe = 1));
        for (size_t i = 2; i < sizeof offsets / sizeof offsets[0]; i++)
            if (v->max_T + (size_t)offsets[i] <= e->n_pos)
                ADD(G2F_DIAG_WPE_OFFSET, (hs[n].forward = 1, hs[n].mh.wpe_offset = offsets[i], hs[n].c.offset = offsets[i]));
    }
    ADD(G2F_DIAG_LN_F_MISSING, (hs[n].forward = 1, hs[n].mh.no_ln_f = 1));
    if (e->head_stored && !e->tied) ADD(G2F_DIAG_LM_HEAD_UNTIED, (hs[n].forward = 1, hs[n].mh.wte_head = 1));
    return n + block_hypotheses(v, hs + n, max - n);
}
#undef ADD

static int by_margin(const void *a, const void *b) {
    double x = ((const g2f_cause *)a)->margin, y = ((const g2f_cause *)b)->margin;
    return x < y ? -1 : x > y;
}

/* c's code and value among out's causes already (an epsilon in the blocks and port-wide: one name);
 * the better margin kept. */
static int named_already(g2f_gen_result *out, const g2f_cause *c) {
    for (size_t k = 0; k < out->n_causes; k++)
        if (out->causes[k].codes == c->codes && out->causes[k].eps == c->eps && c->codes == G2F_DIAG_BIT(G2F_DIAG_LN_EPS)) {
            if (c->margin < out->causes[k].margin) out->causes[k].margin = c->margin;
            return 1;
        }
    return 0;
}

/* Every hypothesis recomputed; the ones that reproduce the port are its causes. */
static g2f_status diagnose(gv *v, g2f_gen_result *out, g2f_error *err) {
    hyp hs[64];
    size_t n = hypotheses(v, out, hs, 64), cap = v->max_T + 4;
    if (v->e.wpe && cap > v->e.n_pos) cap = v->e.n_pos;
    g2f_decoder *dc = NULL;
    g2f_decode_params dp = {v->p->n_head, v->p->gelu, v->p->n_threads, cap, v->max_L, 0, 0};
    g2f_status st = g2f_decoder_new(v->m, &dp, &dc, err);
    float *z = st == G2F_OK ? g2f_alloc_work(1, v->g.V, sizeof(float), "verify: a recomputed step's logits", err) : NULL;
    if (st == G2F_OK && !z) st = err ? err->status : G2F_ERR_NOMEM;
    for (size_t i = 0; i < n && st == G2F_OK; i++) {
        fit_t ft;
        st = try_hyp(v, dc, &hs[i], z, &ft, err);
        out->hypotheses_tried++;
        if (st != G2F_OK || !ft.fits || out->n_causes >= G2F_STAGE_MAX_CAUSES) continue;
        hs[i].c.margin = ft.margin;
        if (!named_already(out, &hs[i].c)) out->causes[out->n_causes++] = hs[i].c;
    }
    qsort(out->causes, out->n_causes, sizeof out->causes[0], by_margin);
    free(z);
    g2f_decoder_free(dc);
    return st;
}

/* ---- the run ----------------------------------------------------------------------- */

static g2f_status gv_alloc(gv *v, g2f_error *err) {
    size_t V = v->g.V, N = v->g.N;
    size_t BN;
    if (__builtin_mul_overflow(v->g.B, N, &BN)) BN = SIZE_MAX;
    v->tol = g2f_alloc_work(BN, V, sizeof(float), "verify: the tolerance of every step's logits", err);
    v->zt = v->tol ? g2f_alloc_work(N, V, sizeof(float), "verify: a row's reference logits", err) : NULL;
    v->tbuf = v->zt ? g2f_alloc_work(1, V, sizeof(float), "verify: a step's tolerance", err) : NULL;
    v->ep = v->tbuf ? g2f_alloc_work(1, V, sizeof(double), "verify: a step's port logits", err) : NULL;
    return v->ep ? G2F_OK : err ? err->status : G2F_ERR_NOMEM;
}

static void gv_free(gv *v) {
    free(v->rows);
    free(v->ids);
    free(v->tol);
    free(v->zt);
    free(v->tbuf);
    free(v->ep);
    g2f_embed_free(&v->e);
}

/* The result's description of the fixture. */
static void describe(const gv *v, g2f_gen_result *out) {
    const gen_t *g = &v->g;
    out->n_seq = g->B, out->steps = g->N, out->vocab = g->V;
    out->has_logits = g->logits != NULL, out->has_mask = g->mask != NULL, out->has_eos = g->eos != NULL;
    out->logits_dtype = g->logits ? g->logits->dtype : G2F_DTYPE_F32;
    out->eos = g->eos ? g2f_tensor_int_at(g->eos, 0) : -1;
    out->prompt_min = SIZE_MAX;
    for (size_t b = 0; b < g->B; b++) {
        const row_t *r = &v->rows[b];
        out->padded_rows += r->pads > 0;
        if (r->L < out->prompt_min) out->prompt_min = r->L;
        if (r->L > out->prompt_max) out->prompt_max = r->L;
    }
}

g2f_status g2f_genverify_run(const g2f_model *m, const g2f_fixture *f, const g2f_genverify_params *p,
                             g2f_gen_result *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    gv v;
    memset(&v, 0, sizeof v);
    v.m = m, v.p = p;
    v.lambda = p->lambda > 0 ? p->lambda : G2F_TOL_LAMBDA;
    g2f_status st = gen_open(&v.g, m, f, err);
    if (st == G2F_OK) st = g2f_model_embed_load(m, &v.e, err);
    if (st == G2F_OK) st = rows_make(&v, err);
    if (st == G2F_OK) st = gv_alloc(&v, err);
    if (st == G2F_OK) {
        v.us = v.g.logits ? g2f_dtype_store_roundoff(v.g.logits->dtype) : 0;
        v.fl = v.g.logits ? g2f_dtype_store_floor(v.g.logits->dtype) : 0;
        describe(&v, out);
        st = reference(&v, out, err);
    }
    /* a token below the port's own largest logit is not greedy whatever the model computes: nothing to recompute */
    if (st == G2F_OK && out->diverged && p->diagnose && out->first.port_top < 0) st = diagnose(&v, out, err);
    out->pass = st == G2F_OK && out->compared > 0 && !out->diverged;
    gv_free(&v);
    return st;
}
