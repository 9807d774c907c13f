/* g2f_forward: the whole forward and its check; see g2f_forward.h. */
#include "g2f_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_ffn.h"

#define U 0x1p-24



/* ---- the forward ----------------------------------------------------------- */

/* x = wte[id] + wpe[t + offset] for one sequence: the gather is exact, the
 * add one rounding (variance u^2 x^2). Positions are in range (checked by
 * the caller: T <= n_pos, a hypothesis' offset keeps them inside). vx
 * NULL: x alone. */
static void embed_seq(const g2f_embed *e, const int64_t *ids, size_t T, const g2f_model_how *how, float *x,
                      float *vx) {
    size_t d = e->d;
    int with_pos = e->wpe && !(how && how->no_wpe);
    long off = how ? how->wpe_offset : 0;
    const float *wte = how && how->wte_r ? how->wte_r : e->wte, *wpe = how && how->wpe_r ? how->wpe_r : e->wpe;
    double uw = how ? how->uw : 0; /* the tables known to within their rounding: each term's own size */
    float sc = how && how->embed_scale > 0 ? (float)how->embed_scale : 0.0f; /* one more rounding when scaled */
    for (size_t t = 0; t < T; t++) {
        const float *w = wte + (size_t)ids[t] * d;
        const float *pe = with_pos ? wpe + (size_t)((long)t + off) * d : NULL;
        for (size_t j = 0; j < d; j++) {
            float tw = sc > 0 ? w[j] * sc : w[j];
            float v = pe ? tw + pe[j] : tw;
            x[t * d + j] = v;
            if (vx)
                vx[t * d + j] = (float)((pe ? U * U * (double)v * v : 0.0) + (sc > 0 ? U * U * (double)tw * tw : 0.0) +
                                        uw * uw * ((double)tw * tw + (pe ? (double)pe[j] * pe[j] : 0.0)));
        }
    }
}

/* The head the logits use under how: a rounded copy, wte (lm_head_untied),
 * or the checkpoint's; *trans and *bias with it. */
static const float *head_of(const g2f_embed *e, const g2f_model_how *how, int *trans, const float **bias) {
    int wte = how && how->wte_head;
    *trans = wte || !e->head_dv; /* lm_head (vocab, d): logits = y head^T */
    *bias = wte ? NULL : e->head_b;
    if (how && how->head_r) return how->head_r;
    return wte ? e->wte : e->head;
}

/* What one layer of the forward works with. */
typedef struct layer_run {
    const g2f_model *m;
    const g2f_forward_params *p;
    const g2f_model_how *how;
    const g2f_fixture *f;
    g2f_block_chain *c;
    const g2f_forward_hooks *hooks;
    size_t n_seq, T, d;
} layer_run;

/* Layer L over every sequence of x (vx NULL: values alone), with the
 * port's rounded weights when how says so; *v its verdict. */
static g2f_status run_layer(const layer_run *lr, size_t L, float *x, float *vx, g2f_chain_verdict *v,
                            g2f_error *err) {
    static const g2f_round kinds[4] = {G2F_ROUND_NONE, G2F_ROUND_F16, G2F_ROUND_F16, G2F_ROUND_BF16};
    const size_t T = lr->T, d = lr->d;
    g2f_block b, br;
    float *owned = NULL;
    memset(v, 0, sizeof *v);
    g2f_status st = g2f_model_block_load(lr->m, L, lr->p->n_head, &b, err);
    if (st != G2F_OK) return st;
    int rb = lr->how ? lr->how->block_round : 0; /* the port's rounded weights (a hypothesis or --accept) */
    if (rb > 0 && rb < 4) st = g2f_block_round(&b, kinds[rb], rb == 2, &br, &owned, err);
    for (size_t s = 0; s < lr->n_seq && st == G2F_OK; s++) {
        st = g2f_block_chain_step(lr->c, owned ? &br : &b, L, lr->f, s, x + s * T * d, vx ? vx + s * T * d : NULL,
                                  err);
        if (st == G2F_OK && lr->hooks->step) st = lr->hooks->step(lr->hooks->user, L, s, lr->c, err);
    }
    free(owned);
    g2f_block_free(&b);
    g2f_block_chain_layer_end(lr->c, v);
    return st;
}

static g2f_status forward_run(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t n_seq, size_t T,
                              const g2f_forward_params *p, const g2f_model_how *how, const g2f_fixture *f,
                              const g2f_forward_hooks *hooks, g2f_chain_verdict *verdicts, int force_var,
                              g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    static const g2f_forward_hooks none = {0};
    if (!hooks) hooks = &none;
    size_t d = e->d, V = e->vocab, N;
    if (__builtin_mul_overflow(n_seq, T, &N) || N == 0)
        return g2f_error_set(err, G2F_ERR_USAGE, "the forward: %zu sequences of %zu tokens", n_seq, T);
    char why[512];
    g2f_status ready = g2f_model_forward_ready(m, e, why, sizeof why, err);
    if (ready != G2F_OK) return ready;
    if (why[0]) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: the whole model cannot be computed", why);
    if (e->wpe && T > e->n_pos)
        return g2f_error_set(err, G2F_ERR_FORMAT, "sequences of %zu tokens but the checkpoint has %zu positions", T,
                             e->n_pos);
    int var = f != NULL || force_var; /* nothing compared: no variance computed, none allocated */
    g2f_block_params bp = {p->n_head, p->tol, p->gelu, p->n_threads, 0, !var, !var && p->no_probs,
                           how ? how->uw : 0.0, how ? how->gemm_in : G2F_ROUND_NONE, 0, how ? how->block : NULL};
    g2f_block_chain *c = NULL;
    g2f_status st = g2f_block_chain_new(m, T, &bp, &c, err);
    if (st != G2F_OK) return st;
    size_t R = var ? G2F_FORWARD_LOGIT_ROWS : G2F_FORWARD_VALUE_ROWS;
    R = N < R ? N : R;
    float *x = g2f_alloc_work(N, (var ? 4 : 2) * d, sizeof(float), "the forward: the residual stream and ln_f's output",
                              err);
    double *rstd = x ? g2f_alloc_work(N, 1, sizeof(double), "the forward: ln_f's statistics", err) : NULL;
    float *z = rstd ? g2f_alloc_work(R, var ? 2 * V + 2 * d : V + d, sizeof(float), "the forward: a chunk of logits",
                                     err)
                    : NULL;
    g2f_ffn_ws ws = {0};
    if (!z) {
        st = err ? err->status : G2F_ERR_NOMEM;
        goto done;
    }
    /* without variances: x, y (N, d) and z (R, V) only, the rest NULL */
    float *vx = var ? x + N * d : NULL, *y = var ? vx + N * d : x + N * d, *vy = var ? y + N * d : NULL;
    float *vz = var ? z + R * V : NULL, *a2 = var ? vz + R * V : NULL, *ar = var ? a2 + R * d : z + R * V;
    for (size_t s = 0; s < n_seq; s++) embed_seq(e, ids + s * T, T, how, x + s * T * d, var ? vx + s * T * d : NULL);
    if (hooks->embed && (st = hooks->embed(hooks->user, x, vx, err)) != G2F_OK) goto done;
    for (size_t L = 0; L < mi->n_layer; L++) {
        layer_run lr = {m, p, how, f, c, hooks, n_seq, T, d};
        g2f_chain_verdict v;
        st = run_layer(&lr, L, x, vx, &v, err);
        if (verdicts) verdicts[L] = v;
        if (st == G2F_OK && hooks->layer_end) st = hooks->layer_end(hooks->user, L, err);
        if (st != G2F_OK) goto done;
    }
    if (how && how->no_ln_f) {
        memcpy(y, x, N * d * sizeof *y);
        if (var) memcpy(vy, vx, N * d * sizeof *vy);
    } else {
        double eps = how && how->ln_eps > 0 ? how->ln_eps : e->ln_f.eps;
        const g2f_ln *ln = how && how->ln_f_r ? how->ln_f_r : &e->ln_f;
        g2f_block_ln_var(x, vx, N, d, ln, eps, how && how->no_ln_w, how && how->no_ln_b, y, vy, rstd, p->n_threads);
    }
    if (hooks->ln_f && (st = hooks->ln_f(hooks->user, y, vy, err)) != G2F_OK) goto done;
    int b_trans;
    const float *bias, *head = head_of(e, how, &b_trans, &bias);
    for (size_t r0 = 0; r0 < N && st == G2F_OK; r0 += R) {
        size_t n = N - r0 < R ? N - r0 : R;
        g2f_block_gemm_var(y + r0 * d, var ? vy + r0 * d : NULL, n, d, head, b_trans, V, bias, how ? how->uw : 0.0,
                           how ? how->gemm_in : G2F_ROUND_NONE, z, vz, a2, ar, p->n_threads, &ws);
        if (hooks->logits) st = hooks->logits(hooks->user, r0, n, z, vz, err);
    }
done:
    g2f_ffn_ws_free(&ws);
    free(z);
    free(rstd);
    free(x);
    g2f_block_chain_free(c);
    return st;
}

g2f_status g2f_forward_run(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t n_seq, size_t T,
                           const g2f_forward_params *p, const g2f_model_how *how, const g2f_fixture *f,
                           const g2f_forward_hooks *hooks, g2f_chain_verdict *verdicts, g2f_error *err) {
    return forward_run(m, e, ids, n_seq, T, p, how, f, hooks, verdicts, 0, err);
}

g2f_status g2f_forward_run_var(const g2f_model *m, const g2f_embed *e, const int64_t *ids, size_t n_seq, size_t T,
                               const g2f_forward_params *p, const g2f_model_how *how, const g2f_forward_hooks *hooks,
                               g2f_error *err) {
    return forward_run(m, e, ids, n_seq, T, p, how, NULL, hooks, NULL, 1, err);
}

/* ---- comparisons ------------------------------------------------------------ */

/* Where a model-level stage's reference lives. */
typedef struct target {
    const g2f_tensor *t, *t2; /* t2: TransformerLens hook_pos_embed, added to t */
    const char *name;
} target;

typedef struct chk {
    const g2f_fixture *f;
    const g2f_embed *e;
    size_t d, V, N, n_seq, T;
    double lambda;
    int n_threads;
    target tg[G2F_STAGE_COUNT];
    g2f_cmp_acc acc[G2F_STAGE_COUNT];
    int any[G2F_STAGE_COUNT];
    double *ebuf, *ebuf2;         /* expected rows, (R, max(d, V)) */
    float *tol;
    size_t cap;                   /* elements of each */
    g2f_logit_agreement *agree;   /* NULL: not wanted */
    /* the ends' weights rounded to F16 (the precision hypotheses and --accept), made on first use:
     * wte (vocab, d), wpe (n_pos, d), the head (when not wte); one block, owned */
    float *r16, *wte16, *wpe16, *head16;
    g2f_ln lnf16;                 /* ln_f with its gain and bias rounded to F16 (in r16) */
    const g2f_model_how *base;    /* the accepted precision every hypothesis is computed with, or NULL */
    int r16_tried;
    g2f_dtype wdtype;             /* the checkpoint's block weights' dtype */
} chk;

/* Compares rows [row0, row0 + n) of width w with the reference of stage s. */
static void cmp_rows(chk *k, int s, size_t row0, size_t n, size_t w, const float *c, const float *var) {
    const target *tg = &k->tg[s];
    for (size_t r = 0; r < n;) {
        size_t m = (n - r) * w <= k->cap ? n - r : k->cap / w;
        uint64_t at = (uint64_t)(row0 + r) * w, cnt = (uint64_t)m * w;
        g2f_tensor_read_f64(tg->t, at, cnt, k->ebuf);
        double us = g2f_dtype_store_roundoff(tg->t->dtype), fl = g2f_dtype_store_floor(tg->t->dtype);
        if (tg->t2) { /* two stored halves summed: each its own rounding */
            g2f_tensor_read_f64(tg->t2, at, cnt, k->ebuf2);
            for (size_t i = 0; i < cnt; i++) k->ebuf[i] += k->ebuf2[i];
            double u2 = g2f_dtype_store_roundoff(tg->t2->dtype);
            us = us > u2 ? us : u2;
            fl += g2f_dtype_store_floor(tg->t2->dtype);
        }
        for (size_t i = 0; i < cnt; i++)
            k->tol[i] = (float)(k->lambda * sqrt((double)var[r * w + i]) + us * fabs(k->ebuf[i]) + fl);
        if (!k->any[s]) g2f_cmp_acc_init(&k->acc[s], 1), k->acc[s].lambda = k->lambda;
        k->any[s] = 1;
        g2f_cmp_acc_add(&k->acc[s], k->ebuf, c + r * w, k->tol, cnt, at, k->n_threads);
        if (s == G2F_STAGE_LOGITS && k->agree) { /* the agreement users act on */
            g2f_logit_agreement *a = k->agree;
            a->computed = 1;
            for (size_t i = 0; i < m; i++) {
                const double *er = k->ebuf + i * w;
                const float *cr = c + (r + i) * w;
                size_t te = 0, tc = 0;
                double me = er[0], mc = cr[0];
                for (size_t j = 1; j < w; j++) {
                    if (er[j] > me) me = er[j], te = j;
                    if (cr[j] > mc) mc = cr[j], tc = j;
                }
                double se = 0, sc = 0;
                for (size_t j = 0; j < w; j++) se += exp(er[j] - me), sc += exp((double)cr[j] - mc);
                double lse = me + log(se), lsc = mc + log(sc), kl = 0;
                for (size_t j = 0; j < w; j++) {
                    double lp = er[j] - lse, lq = (double)cr[j] - lsc;
                    kl += exp(lp) * (lp - lq);
                }
                size_t pos = row0 + r + i;
                if (!(kl <= a->max_kl) || a->positions == 0) a->max_kl = kl, a->max_kl_position = pos; /* NaN sticks */
                a->positions++;
                if (te == tc) {
                    a->top1_agree++;
                } else {
                    a->ref_top1[a->n_differing] = te, a->our_top1[a->n_differing] = tc;
                    a->differing[a->n_differing++] = pos;
                }
            }
        }
        r += m;
    }
}

static void fill_mstage(g2f_stage_result *r, const chk *k, int s) {
    memset(r, 0, sizeof *r);
    if (!k->any[s]) return;
    g2f_cmp_acc_finish(&k->acc[s], &r->worst);
    r->checked = 1;
    r->mismatched = r->worst.mismatched;
    r->total = r->worst.total;
    r->margin = r->worst.margin;
    r->pass = r->worst.mismatched == 0 && r->worst.nonfinite == 0;
    r->worst_tensor = k->tg[s].name;
}

static g2f_status h_embed(void *u, const float *x, const float *vx, g2f_error *err) {
    (void)err;
    chk *k = u;
    if (k->tg[G2F_STAGE_EMBED].t) cmp_rows(k, G2F_STAGE_EMBED, 0, k->N, k->d, x, vx);
    return G2F_OK;
}
static g2f_status h_ln_f(void *u, const float *y, const float *vy, g2f_error *err) {
    (void)err;
    chk *k = u;
    if (k->tg[G2F_STAGE_LN_F].t) cmp_rows(k, G2F_STAGE_LN_F, 0, k->N, k->d, y, vy);
    return G2F_OK;
}
static g2f_status h_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)err;
    chk *k = u;
    if (k->tg[G2F_STAGE_LOGITS].t) cmp_rows(k, G2F_STAGE_LOGITS, row0, n, k->V, z, vz);
    return G2F_OK;
}

static void chk_reset(chk *k) {
    memset(k->acc, 0, sizeof k->acc);
    memset(k->any, 0, sizeof k->any);
}

/* ---- isolated checks --------------------------------------------------------- */


typedef struct iso_buf {
    float *a, *va, *b, *vb, *a2, *ar; /* (R, max(d, V)) each */
    double *rstd;
    g2f_ffn_ws ws;
} iso_buf;

/* Stage s recomputed under how from its recorded input, compared: *out. */
static void iso_stage(chk *k, int s, const int64_t *ids, const g2f_model_how *how, const g2f_tensor *in, iso_buf *ib,
                      const g2f_forward_params *p, g2f_stage_result *out) {
    const g2f_embed *e = k->e;
    size_t d = k->d, V = k->V;
    chk_reset(k);
    g2f_logit_agreement *keep = k->agree;
    k->agree = NULL;
    if (s == G2F_STAGE_EMBED) {
        for (size_t sq = 0; sq < k->n_seq; sq++) {
            embed_seq(e, ids + sq * k->T, k->T, how, ib->a, ib->va);
            cmp_rows(k, s, sq * k->T, k->T, d, ib->a, ib->va);
        }
    } else {
        size_t R = k->N < G2F_FORWARD_LOGIT_ROWS ? k->N : G2F_FORWARD_LOGIT_ROWS;
        for (size_t r0 = 0; r0 < k->N; r0 += R) {
            size_t n = k->N - r0 < R ? k->N - r0 : R;
            g2f_tensor_read_f32(in, (uint64_t)r0 * d, (uint64_t)n * d, ib->a);
            g2f_tol_input_var(ib->a, n * d, in->dtype, ib->va);
            if (s == G2F_STAGE_LN_F) {
                if (how->no_ln_f) {
                    memcpy(ib->b, ib->a, n * d * sizeof(float));
                    memcpy(ib->vb, ib->va, n * d * sizeof(float));
                } else {
                    g2f_block_ln_var(ib->a, ib->va, n, d, how->ln_f_r ? how->ln_f_r : &e->ln_f,
                                     how->ln_eps > 0 ? how->ln_eps : e->ln_f.eps,
                                     how->no_ln_w, how->no_ln_b, ib->b, ib->vb, ib->rstd, p->n_threads);
                }
                cmp_rows(k, s, r0, n, d, ib->b, ib->vb);
            } else {
                int b_trans;
                const float *bias, *head = head_of(e, how, &b_trans, &bias);
                g2f_block_gemm_var(ib->a, ib->va, n, d, head, b_trans, V, bias, how->uw, how->gemm_in, ib->b, ib->vb,
                                   ib->a2, ib->ar, p->n_threads, &ib->ws);
                cmp_rows(k, s, r0, n, V, ib->b, ib->vb);
            }
        }
    }
    fill_mstage(out, k, s);
    k->agree = keep;
}

/* The ends' weights rounded to F16, once (0 when there is no room: the
 * precision hypotheses are then not tried). */
static int ends_f16(chk *k) {
    if (k->r16_tried) return k->r16 != NULL;
    k->r16_tried = 1;
    const g2f_embed *e = k->e;
    size_t nv = k->V * k->d, np = e->wpe ? e->n_pos * k->d : 0, nh = e->head != e->wte ? nv : 0, nl = 2 * k->d;
    g2f_error tmp = {0};
    if (!(k->r16 = g2f_alloc_work(nv + np + nh + nl, 1, sizeof(float), "F16 copies of the ends", &tmp))) return 0;
    k->wte16 = k->r16, k->wpe16 = e->wpe ? k->r16 + nv : NULL, k->head16 = nh ? k->r16 + nv + np : k->wte16;
    g2f_round_span(G2F_ROUND_F16, e->wte, k->wte16, nv);
    if (e->wpe) g2f_round_span(G2F_ROUND_F16, e->wpe, k->wpe16, np);
    if (nh) g2f_round_span(G2F_ROUND_F16, e->head, k->head16, nh);
    k->lnf16 = e->ln_f;
    k->lnf16.owned[0] = k->lnf16.owned[1] = NULL;
    float *lw = k->r16 + nv + np + nh, *lb = lw + k->d;
    if (e->ln_f.w) g2f_round_span(G2F_ROUND_F16, e->ln_f.w, lw, k->d), k->lnf16.w = lw;
    if (e->ln_f.b) g2f_round_span(G2F_ROUND_F16, e->ln_f.b, lb, k->d), k->lnf16.b = lb;
    return 1;
}

/* A tensor the checkpoint already holds as F16 (the port's F16 copy is it). */
static int is_f16(const g2f_tensor *t) { return t && t->dtype == G2F_DTYPE_F16; }

/* The model computed with the port's precision: codes (weights_f16_rounded
 * and/or f16_matmul) into *hw (which the caller zeroed). weights_f16_rounded:
 * every weight F16 (an F16 checkpoint against a float32 reference: the
 * weights known to within their rounding instead); f16_matmul: ggml's F16
 * path, the products' weights F16 (wte among them: the embedding reads its
 * F16 rows), every product's input rounded to F16. 0 when the ends could not
 * be rounded. */
static int precision_how(chk *k, g2f_diag_set codes, g2f_model_how *hw) {
    const g2f_embed *e = k->e;
    int all = (codes & G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED)) != 0,
        mm = (codes & G2F_DIAG_BIT(G2F_DIAG_F16_MATMUL)) != 0;
    if (!all && !mm) return 1;
    if (!ends_f16(k)) return 0;
    if (all && is_f16(e->src[0])) { /* the checkpoint is the rounded side */
        hw->uw = g2f_dtype_store_roundoff(G2F_DTYPE_F16);
    } else {
        if (!is_f16(e->src[0])) hw->wte_r = k->wte16;
        if (all && e->wpe && !is_f16(e->src[1])) hw->wpe_r = k->wpe16;
        if (all && e->ln_f.found && k->wdtype != G2F_DTYPE_F16) hw->ln_f_r = &k->lnf16;
        if (!is_f16(e->src[2] ? e->src[2] : e->src[0])) hw->head_r = k->head16;
    }
    int f16_ckpt = k->wdtype == G2F_DTYPE_F16; /* its blocks are the port's F16 weights already */
    hw->block_round = all ? (f16_ckpt ? 0 : 1) : (f16_ckpt ? 0 : 2);
    if (mm) hw->gemm_in = G2F_ROUND_F16;
    return 1;
}

/* A hypothesis computed with the accepted precision (base, may be NULL):
 * its rounded weights and inputs, the rest of h its own. */
static void with_precision(g2f_model_how *h, const g2f_model_how *base) {
    if (!base) return;
    h->wte_r = base->wte_r, h->wpe_r = base->wpe_r, h->head_r = base->head_r, h->ln_f_r = base->ln_f_r;
    h->block_round = base->block_round, h->gemm_in = base->gemm_in, h->uw = base->uw;
}

/* A model-level hypothesis, one table entry each: the stage it acts on, its
 * code, its variants (a grid's size), whether a whole rerun tries it, and
 * how variant v recomputes: apply sets hw and the cause's parameters, and
 * returns 0 when v does not apply to this checkpoint. */
typedef struct model_hyp {
    g2f_stage stage;
    g2f_diag code;
    int variants;
    int rerun;
    int (*apply)(const chk *k, int v, g2f_model_how *hw, g2f_cause *c);
} model_hyp;

static int wpe_missing(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->no_wpe = 1;
    return k->e->wpe != NULL;
}
static int wpe_offset(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    long K = g2f_wpe_offsets[v];
    if (!k->e->wpe || (size_t)K + k->T > k->e->n_pos) return 0; /* a position outside wpe: not this port */
    hw->wpe_offset = c->offset = K;
    return 1;
}
static int embed_scaled(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->embed_scale = sqrt((double)k->d);
    return 1;
}
static int ln_f_missing(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->no_ln_f = 1;
    return k->e->ln_f.found;
}
static int ln_f_eps(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    double eps = g2f_ln_eps_grid[v], cur = k->e->ln_f.eps;
    if (!k->e->ln_f.found || fabs(eps - cur) <= 1e-3 * cur) return 0;
    hw->ln_eps = c->eps = eps;
    return 1;
}
static int ln_f_no_bias(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->no_ln_b = 1;
    return k->e->ln_f.found && k->e->ln_f.b;
}
static int ln_f_no_weight(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->no_ln_w = 1;
    return k->e->ln_f.found;
}
static int head_untied(const chk *k, int v, g2f_model_how *hw, g2f_cause *c) {
    (void)v, (void)c;
    hw->wte_head = 1;
    return k->e->head_stored && !k->e->tied;
}

static const model_hyp model_hyps[] = {
    {G2F_STAGE_EMBED, G2F_DIAG_WPE_MISSING, 1, 1, wpe_missing},
    {G2F_STAGE_EMBED, G2F_DIAG_WPE_OFFSET, G2F_WPE_OFFSETS_N, 1, wpe_offset},
    {G2F_STAGE_EMBED, G2F_DIAG_EMBED_SCALED, 1, 1, embed_scaled},
    {G2F_STAGE_LN_F, G2F_DIAG_LN_F_MISSING, 1, 1, ln_f_missing},
    {G2F_STAGE_LN_F, G2F_DIAG_LN_EPS, G2F_LN_EPS_GRID_N, 0, ln_f_eps},
    {G2F_STAGE_LN_F, G2F_DIAG_LN_BIAS_MISSING, 1, 0, ln_f_no_bias},
    {G2F_STAGE_LN_F, G2F_DIAG_LN_WEIGHT_MISSING, 1, 0, ln_f_no_weight},
    {G2F_STAGE_LOGITS, G2F_DIAG_LM_HEAD_UNTIED, 1, 1, head_untied},
};

/* The port's precision as hypotheses (weights F16, ggml's F16 matmul) at
 * stage s (-1: a whole rerun): the embedding and the logits; the blocks'
 * own stages are diagnosed by the block check. Not under an accepted
 * precision (the other bugs only then). Appends to hw, cs from n. */
static size_t precision_hypotheses(const chk *k, int s, g2f_model_how *hw, g2f_cause *cs, size_t n, size_t max) {
    static const g2f_diag prec[2] = {G2F_DIAG_WEIGHTS_F16_ROUNDED, G2F_DIAG_F16_MATMUL};
    for (int i = 0; i < 2 && n < max && !k->base; i++) {
        memset(&hw[n], 0, sizeof hw[n]);
        cs[n] = g2f_cause_of(G2F_DIAG_BIT(prec[i]), s < 0 ? G2F_STAGE_EMBED : (g2f_stage)s);
        if (!precision_how((chk *)k, cs[n].codes, &hw[n])) break;
        /* a no-op at this stage (nothing to round): not a hypothesis */
        int at_ln_f = s == G2F_STAGE_LN_F, at_embed = s == G2F_STAGE_EMBED;
        if ((!at_ln_f && (hw[n].wte_r || hw[n].wpe_r || hw[n].head_r || hw[n].uw > 0)) ||
            ((s < 0 || at_ln_f) && hw[n].ln_f_r) || (hw[n].gemm_in && !at_embed && !at_ln_f))
            n++;
    }
    return n;
}

/* The model-level bugs that act on stage s (s = -1: the ones a whole rerun
 * tries), each computed with the accepted precision, n of them at most
 * max; returns the count. */
static size_t hypotheses(const chk *k, int s, g2f_model_how *hw, g2f_cause *cs, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof model_hyps / sizeof model_hyps[0]; i++) {
        const model_hyp *y = &model_hyps[i];
        if (s < 0 ? !y->rerun : (int)y->stage != s) continue;
        for (int v = 0; v < y->variants && n < max; v++) {
            memset(&hw[n], 0, sizeof hw[n]);
            with_precision(&hw[n], k->base);
            cs[n] = g2f_cause_of(G2F_DIAG_BIT(y->code), y->stage);
            if (y->apply(k, v, &hw[n], &cs[n])) n++;
        }
    }
    return precision_hypotheses(k, s, hw, cs, n, max);
}

static void add_cause(g2f_stage_result *r, const g2f_cause *c) { g2f_stage_result_add(r, c, G2F_MODEL_MAX_CAUSES); }

/* ---- the check ----------------------------------------------------------------- */

static void join_causes(const g2f_stage_result *r, char *buf, size_t n) {
    g2f_causes_join(r->causes, r->n_causes, buf, n);
}

/* The chained stages after the first divergence follow from it: they get
 * propagated:<where> (never "unexplained", which is for a divergence nothing
 * upstream explains); the first divergence itself, when it is a model-level
 * stage, gets its isolated or rerun diagnosis. */
static void mark_downstream(g2f_model_result *out) {
    if (!out->diverged || !out->chained) return;
    char where[48];
    const char *fs = g2f_stage_name(out->first_stage);
    if (out->first_layer >= 0) snprintf(where, sizeof where, "h.%ld.%s", out->first_layer, fs);
    else snprintf(where, sizeof where, "%s", fs);
    /* model order: embed, the blocks, ln_f, logits */
    int first_m = out->first_layer >= 0 ? G2F_STAGE_EMBED : (int)out->first_stage;
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        g2f_stage_result *r = &out->chain[s];
        if (!r->checked || r->pass) continue;
        if (s == first_m && out->first_layer < 0) { /* the first divergence: its own diagnosis */
            for (size_t k = 0; k < out->iso[s].n_causes && k < G2F_MODEL_MAX_CAUSES; k++)
                r->causes[r->n_causes++] = out->iso[s].causes[k];
        } else if (s > first_m || out->first_layer >= 0) {
            snprintf(r->propagated, sizeof r->propagated, "%s", where);
        }
    }
}

/* Every chained comparison passes (the forward reproduces the fixture). */
static int chain_clean(const g2f_model_result *r) {
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s))
        if (r->chain[s].checked && !r->chain[s].pass) return 0;
    for (size_t L = 0; L < r->n_layers; L++)
        if (r->layers[L].diverged) return 0;
    return 1;
}

/* Whether the whole forward can run: n_head known and every weight it needs
 * held (g2f_model_forward_ready; an FFN-only checkpoint has no attention).
 * note gets why not ("" when it can); the isolated stages are checked
 * either way. */
static g2f_status chain_possible(const g2f_model *m, const g2f_embed *e, const g2f_forward_params *p, char *note,
                                 size_t n, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t H = p->n_head ? p->n_head : mi->n_head;
    note[0] = '\0';
    if (!H) {
        snprintf(note, n, "the forward from input_ids not computed: n_head unknown (config.json n_head, or --n-head N)");
        return G2F_OK;
    }
    char why[512];
    g2f_status st = g2f_model_forward_ready(m, e, why, sizeof why, err);
    if (st == G2F_OK && why[0]) snprintf(note, n, "the forward from input_ids not computed: %s", why);
    return st;
}

/* What one judgment of the model-level stages works with. */
typedef struct fwd {
    const g2f_model *m;
    const g2f_fixture *f;
    const g2f_forward_params *p;
    const g2f_embed *e;
    chk *k;
    iso_buf *ib;
    const int64_t *ids;           /* NULL without input_ids */
    const g2f_tensor *iso_in[G2F_STAGE_COUNT];
    size_t n_seq, T;
} fwd;

/* The chained forward from input_ids under how, compared stage by stage. */
static g2f_status chained_pass(fwd *w, const g2f_model_how *how, g2f_model_result *out, g2f_error *err) {
    chk *k = w->k;
    chk_reset(k);
    g2f_forward_hooks hk = {k, h_embed, NULL, NULL, h_ln_f, h_logits};
    out->agree.positions = out->agree.top1_agree = out->agree.n_differing = 0;
    out->agree.computed = 0;
    k->agree = k->tg[G2F_STAGE_LOGITS].t ? &out->agree : NULL;
    g2f_status st = g2f_forward_run(w->m, w->e, w->ids, w->n_seq, w->T, w->p, how, w->f, &hk, out->layers, err);
    k->agree = NULL;
    if (st != G2F_OK) return st;
    out->chained = 1;
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) fill_mstage(&out->chain[s], k, s);
    return G2F_OK;
}

/* A precision hypothesis (rounded weights, ggml's F16 matmul) fits only without a trend: its
 * tolerance is wide enough to take a wrong scale, which rounding noise of either sign does not make
 * (g2f_cmp.trend, as the FFN's diagnosis; a float32 bug in the LayerNorm, the attention scale or
 * the logits was named f16_matmul on a fixture of the logits alone). */
static int precision_trended(const g2f_cause *c, const g2f_stage_result *r, int n, double lambda) {
    if (!(c->codes & G2F_ACCEPT_PRECISION)) return 0;
    for (int s = 0; s < n; s++)
        if (r[s].checked && fabs(r[s].worst.trend) > lambda) return 1;
    return 0;
}

/* Nor unless it brings the recomputation closer to the reference than the plain one (r against
 * plain, stage by stage where plain fails: a larger signal-to-noise ratio). Its tolerance is wide
 * enough to take a small float32 bug upstream (an epsilon, a gain, the attention scale) on a
 * fixture of the logits alone, but its rounding then only adds to the distance; a port that does
 * round is reproduced up to its flips, far closer. */
static int precision_not_closer(const g2f_cause *c, const g2f_model_how *hw, const g2f_stage_result *r,
                                const g2f_stage_result *plain, int n) {
    if (!(c->codes & G2F_ACCEPT_PRECISION) || hw->uw > 0) return 0; /* uw: the checkpoint is the rounded side, nothing
                                                            recomputed otherwise: only the tolerance widens */
    for (int s = 0; s < n; s++)
        if (r[s].checked && plain[s].checked && !plain[s].pass && !(r[s].worst.sqnr_db > plain[s].worst.sqnr_db))
            return 1;
    return 0;
}

/* The isolated stages from their recorded inputs under how; with
 * diagnose, a failing one recomputed under the model-level bugs. */
static void isolated_pass(fwd *w, const g2f_model_how *how, int diagnose, g2f_model_result *out) {
    g2f_model_how plain;
    memset(&plain, 0, sizeof plain);
    if (!how) how = &plain;
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        if (!w->k->tg[s].t || (s == G2F_STAGE_EMBED ? !w->ids : !w->iso_in[s]) || out->not_computable[s]) continue;
        iso_stage(w->k, s, w->ids, how, w->iso_in[s], w->ib, w->p, &out->iso[s]);
        if (out->iso[s].pass || !diagnose) continue;
        if (out->iso[s].worst.nonfinite) { /* NaN or Inf: named, no bug makes one */
            g2f_cause nf = {.codes = G2F_DIAG_BIT(G2F_DIAG_NONFINITE), .stage = (g2f_stage)s, .margin = INFINITY};
            add_cause(&out->iso[s], &nf);
            continue;
        }
        g2f_model_how hw[16];
        g2f_cause cs[16];
        size_t n = hypotheses(w->k, s, hw, cs, 16);
        for (size_t i = 0; i < n; i++) {
            g2f_stage_result r;
            iso_stage(w->k, s, w->ids, &hw[i], w->iso_in[s], w->ib, w->p, &r);
            out->iso[s].hypotheses_tried++;
            if (r.pass && !precision_trended(&cs[i], &r, 1, w->k->lambda) &&
                !precision_not_closer(&cs[i], &hw[i], &r, &out->iso[s], 1)) {
                cs[i].margin = r.margin;
                add_cause(&out->iso[s], &cs[i]);
            }
        }
    }
}

/* A divergence no isolated check explains: the whole forward rerun under
 * each model-level bug; the ones that make every recorded stage match go
 * to *found. */
static g2f_status rerun_whole(fwd *w, g2f_model_result *out, g2f_stage_result *found, g2f_error *err) {
    g2f_model_how hw[16];
    g2f_cause cs[16];
    size_t n = hypotheses(w->k, -1, hw, cs, 16);
    g2f_model_result tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.n_layers = out->n_layers;
    tmp.layers = calloc(out->n_layers ? out->n_layers : 1, sizeof *tmp.layers);
    if (!tmp.layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    g2f_forward_hooks hk = {w->k, h_embed, NULL, NULL, h_ln_f, h_logits};
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < n && st == G2F_OK; i++) {
        chk_reset(w->k);
        st = g2f_forward_run(w->m, w->e, w->ids, w->n_seq, w->T, w->p, &hw[i], w->f, &hk, tmp.layers, err);
        for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) fill_mstage(&tmp.chain[s], w->k, s);
        out->iso[G2F_STAGE_EMBED].hypotheses_tried++;
        if (st == G2F_OK && chain_clean(&tmp) && !precision_trended(&cs[i], tmp.chain, G2F_STAGE_COUNT, w->k->lambda) &&
            !precision_not_closer(&cs[i], &hw[i], tmp.chain, out->chain, G2F_STAGE_COUNT)) {
            double mg = 0;
            for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s))
                if (tmp.chain[s].checked && tmp.chain[s].margin > mg) mg = tmp.chain[s].margin;
            cs[i].margin = mg;
            add_cause(found, &cs[i]);
        }
    }
    free(tmp.layers);
    return st;
}

/* The first divergence in model order (chained, else isolated), and its
 * diagnosis: the isolated stage's, else (with diagnose) a whole rerun's. */
static g2f_status first_divergence(fwd *w, int diagnose, g2f_model_result *out, g2f_error *err) {
    const g2f_stage_result *res = out->chained ? out->chain : out->iso;
    int first_m = -1;
    if (res[G2F_STAGE_EMBED].checked && !res[G2F_STAGE_EMBED].pass) first_m = G2F_STAGE_EMBED;
    for (size_t L = 0; first_m < 0 && out->chained && L < out->n_layers; L++)
        if (out->layers[L].diverged) {
            out->diverged = 1;
            out->first_layer = (long)L;
            out->first_stage = out->layers[L].first_stage;
            out->first_tensor = out->layers[L].first_tensor;
            out->first_margin = out->layers[L].first_margin;
            break;
        }
    for (int s = G2F_STAGE_LN_F; first_m < 0 && !out->diverged && s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s))
        if (res[s].checked && !res[s].pass) first_m = s;
    if (first_m < 0 && !out->chained) /* isolated results beyond the first in order */
        for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT && first_m < 0; s = g2f_model_stage_next(s))
            if (out->iso[s].checked && !out->iso[s].pass) first_m = s;
    if (first_m < 0) return G2F_OK;
    const g2f_stage_result *fr = &res[first_m];
    out->diverged = 1;
    out->first_stage = (g2f_stage)first_m;
    out->first_tensor = fr->worst_tensor;
    out->first_margin = fr->margin;
    g2f_stage_result *iso = &out->iso[first_m];
    if (fr->worst.nonfinite && !iso->n_causes) { /* NaN or Inf in the chained comparison: no bug makes one */
        snprintf(out->first_codes, sizeof out->first_codes, "%s", g2f_diag_name(G2F_DIAG_NONFINITE));
    } else if (iso->n_causes) {
        join_causes(iso, out->first_codes, sizeof out->first_codes);
    } else if (out->chained && diagnose) {
        g2f_stage_result found = {0};
        g2f_status st = rerun_whole(w, out, &found, err);
        if (st != G2F_OK) return st;
        join_causes(&found, out->first_codes, sizeof out->first_codes);
        /* kept on the stage so that reports show it */
        for (size_t i = 0; i < found.n_causes && i < G2F_MODEL_MAX_CAUSES; i++) {
            g2f_cause one = found.causes[i]; /* a copy: GCC -O3 cannot see found is written */
            add_cause(iso, &one);
        }
    }
    return G2F_OK;
}

/* A fresh judgment in out (the arrays kept). */
static void judgment_reset(g2f_model_result *out) {
    memset(out->chain, 0, sizeof out->chain);
    memset(out->iso, 0, sizeof out->iso);
    for (size_t L = 0; out->layers && L < out->n_layers; L++) memset(&out->layers[L], 0, sizeof out->layers[L]);
    out->chained = out->diverged = 0;
    out->first_layer = -1;
    out->first_stage = G2F_STAGE_NONE;
    out->first_tensor = NULL;
    out->first_margin = 0;
    out->first_codes[0] = '\0';
    out->compared = 0;
    out->failed = 0;
    out->pass = 0;
}

/* The model-level stages judged under how: chained, isolated, the first
 * divergence and what follows it, the counts and the verdict. */
static g2f_status judge(fwd *w, const g2f_model_how *how, int diagnose, g2f_model_result *out, g2f_error *err) {
    judgment_reset(out);
    g2f_status st = G2F_OK;
    if (w->ids && !out->chain_note[0] && (st = chained_pass(w, how, out, err)) != G2F_OK) return st;
    isolated_pass(w, how, diagnose, out);
    if ((st = first_divergence(w, diagnose, out, err)) != G2F_OK) return st;
    mark_downstream(out);
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        out->compared += (size_t)out->chain[s].checked + (size_t)out->iso[s].checked;
        out->failed += (size_t)(out->chain[s].checked && !out->chain[s].pass) +
                       (size_t)(out->iso[s].checked && !out->iso[s].pass);
    }
    for (size_t L = 0; L < out->n_layers; L++)
        for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
            const g2f_stage_result *sr = &out->layers[L].stage[s];
            out->compared += (size_t)sr->checked;
            out->failed += (size_t)(sr->checked && !sr->pass);
        }
    out->pass = !out->diverged && out->compared > 0;
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s))
        if (out->iso[s].checked && !out->iso[s].pass) out->pass = 0;
    return G2F_OK;
}

/* The precisions --accept takes for the whole model (weights_f16_rounded,
 * f16_matmul): after a failing judgment, the model judged again computed
 * that way; when it then passes, that judgment stands, marked accepted. */
static g2f_status judge_accepted(fwd *w, g2f_model_result *out, g2f_error *err) {
    g2f_diag_set acc = w->p->accept & (G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_F16_ROUNDED) | G2F_DIAG_BIT(G2F_DIAG_F16_MATMUL));
    g2f_model_how hw;
    memset(&hw, 0, sizeof hw);
    if (out->pass || !acc || !precision_how(w->k, acc, &hw)) return G2F_OK;
    /* judged and diagnosed with that precision: what remains is the port's other bugs */
    w->k->base = &hw;
    g2f_model_result again = *out; /* the arrays are shared: the plain judgment is redone if this is not kept */
    g2f_status st = judge(w, &hw, 1, &again, err);
    w->k->base = NULL;
    if (st != G2F_OK) return st;
    /* kept when it passes, when a cause explains the rest, or when the first divergence is a block's
     * stage (the block check diagnoses it under the same accept) */
    if (again.pass || again.first_codes[0] || (again.diverged && again.first_layer >= 0)) {
        *out = again;
        out->accepted = acc;
        return G2F_OK;
    }
    return judge(w, NULL, 1, out, err); /* nothing explains it under the accept: the plain diagnosis */
}

/* The references of the model-level stages: embed, else TransformerLens'
 * two halves, else h.0.in; ln_f.out; the logits. */
static void find_targets(chk *k, const g2f_fixture *f) {
    static const g2f_act acts[3] = {G2F_ACT_EMBED, G2F_ACT_LN_F, G2F_ACT_LOGITS};
    static const g2f_stage stages[3] = {G2F_STAGE_EMBED, G2F_STAGE_LN_F, G2F_STAGE_LOGITS};
    for (int i = 0; i < 3; i++)
        if ((k->tg[stages[i]].t = g2f_fixture_act(f, 0, acts[i]))) k->tg[stages[i]].name = k->tg[stages[i]].t->name;
    const g2f_tensor *tok = g2f_fixture_act(f, 0, G2F_ACT_TOK_EMBED), *pos = g2f_fixture_act(f, 0, G2F_ACT_POS_EMBED);
    target *te = &k->tg[G2F_STAGE_EMBED];
    if (te->t) return;
    if (tok && pos) *te = (target){tok, pos, "hook_embed + hook_pos_embed"};
    else if ((te->t = g2f_fixture_act(f, 0, G2F_ACT_IN))) te->name = te->t->name;
}

/* The check's rows: references, tolerances and the isolated stages' work
 * (rows of max(d, V), enough for a chunk of logits or one sequence), and
 * with tids the ids and the logits' differing positions. */
static g2f_status work_alloc(chk *k, iso_buf *ib, const g2f_tensor *tids, int64_t **ids, size_t **differing,
                             g2f_error *err) {
    size_t R = k->N < G2F_FORWARD_LOGIT_ROWS ? k->N : G2F_FORWARD_LOGIT_ROWS, w = k->d > k->V ? k->d : k->V;
    size_t rows = R > k->T ? R : k->T;
    k->cap = rows * w;
    k->ebuf = g2f_alloc_work(rows, 2 * w, sizeof(double), "verify: the model's reference rows", err);
    k->tol = k->ebuf ? g2f_alloc_work(rows, 7 * w, sizeof(float), "verify: the model's work rows", err) : NULL;
    ib->rstd = k->tol ? g2f_alloc_work(rows, 1, sizeof(double), "verify: ln_f's statistics", err) : NULL;
    *ids = ib->rstd && tids ? g2f_alloc_work(k->N, 1, sizeof(int64_t), "verify: input_ids", err) : NULL;
    *differing = *ids ? g2f_alloc_work(k->N, 3, sizeof(size_t), "verify: the logits' positions", err) : NULL;
    if (!ib->rstd || (tids && !*differing)) return err ? err->status : G2F_ERR_NOMEM;
    k->ebuf2 = k->ebuf + rows * w;
    ib->a = k->tol + rows * w, ib->va = ib->a + rows * w, ib->b = ib->va + rows * w, ib->vb = ib->b + rows * w;
    ib->a2 = ib->vb + rows * w;
    ib->ar = ib->a2 + rows * w;
    return G2F_OK;
}

g2f_status g2f_forward_check(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p,
                             g2f_model_result *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    out->first_layer = -1;
    out->first_stage = G2F_STAGE_NONE;
    if (!g2f_fixture_has_model(f)) return G2F_OK;
    const g2f_model_info *mi = g2f_model_get_info(m);
    out->present = 1;
    if (!mi->has_wte) { /* an FFN-only file: the layers are verified, the model's ends cannot be */
        out->skipped = 1;
        snprintf(out->chain_note, sizeof out->chain_note, "the model-level stages not checked: the checkpoint holds "
                 "no token embedding (wte), as an FFN-only file");
        return G2F_OK;
    }
    g2f_embed e;
    g2f_status st = g2f_model_embed_load(m, &e, err);
    if (st != G2F_OK) return st;
    size_t n_seq, T;
    if ((st = g2f_fixture_check_model(f, e.d, e.vocab, e.wpe ? e.n_pos : 0, &n_seq, &T, err)) != G2F_OK) {
        g2f_embed_free(&e);
        return st;
    }
    out->n_seq = n_seq, out->T = T, out->vocab = e.vocab;
    out->head_desc = e.head_desc;
    out->head_tied = e.tied;
    chk k;
    memset(&k, 0, sizeof k);
    k.f = f, k.e = &e, k.d = e.d, k.V = e.vocab, k.n_seq = n_seq, k.T = T, k.N = n_seq * T;
    k.lambda = g2f_tol_lambda(p->tol);
    k.n_threads = p->n_threads;
    k.wdtype = mi->dtype;
    find_targets(&k, f);
    const g2f_tensor *tids = g2f_fixture_act(f, 0, G2F_ACT_IDS);
    int64_t *ids = NULL;
    iso_buf ib;
    memset(&ib, 0, sizeof ib);
    if ((st = work_alloc(&k, &ib, tids, &ids, &out->agree.differing, err)) != G2F_OK) goto done;
    if (out->agree.differing) out->agree.ref_top1 = out->agree.differing + k.N, out->agree.our_top1 = out->agree.ref_top1 + k.N;
    if (tids) g2f_fixture_read_ids(tids, 0, k.N, ids);
    out->has_ids = tids != NULL;
    /* chained, from input_ids: it needs every block's attention */
    if (tids && (st = chain_possible(m, &e, p, out->chain_note, sizeof out->chain_note, err)) != G2F_OK) goto done;
    if (tids && !out->chain_note[0]) {
        out->n_layers = mi->n_layer;
        out->layers = calloc(mi->n_layer ? mi->n_layer : 1, sizeof *out->layers);
        if (!out->layers) {
            st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    /* GPT-2's embedding needs wpe, ln_f its gain: a checkpoint without them
     * cannot compute those stages (never a comparison against a stand-in) */
    out->not_computable[G2F_STAGE_EMBED] = e.wpe ? NULL : "the checkpoint holds no position embedding (wpe)";
    out->not_computable[G2F_STAGE_LN_F] = e.ln_f.found ? NULL : "the checkpoint holds no final LayerNorm (ln_f)";
    fwd fw = {m, f, p, &e, &k, &ib, tids ? ids : NULL,
              {[G2F_STAGE_LN_F] = mi->n_layer ? g2f_fixture_act(f, mi->n_layer - 1, G2F_ACT_OUT) : NULL,
               [G2F_STAGE_LOGITS] = k.tg[G2F_STAGE_LN_F].t},
              n_seq, T};
    if ((st = judge(&fw, NULL, 1, out, err)) == G2F_OK) st = judge_accepted(&fw, out, err);
done:
    g2f_ffn_ws_free(&ib.ws);
    free(ib.rstd);
    free(k.r16);
    free(k.tol);
    free(k.ebuf);
    free(ids);
    g2f_embed_free(&e);
    if (st != G2F_OK) g2f_model_result_free(out);
    return st;
}

void g2f_model_result_free(g2f_model_result *r) {
    if (!r) return;
    free(r->layers);
    free(r->agree.differing);
    memset(r, 0, sizeof *r);
    r->first_layer = -1;
    r->first_stage = G2F_STAGE_NONE;
}
