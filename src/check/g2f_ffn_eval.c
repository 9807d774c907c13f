/* g2f_ffn_eval: see g2f_ffn_eval.h. */
#include "g2f_ffn_eval.h"

#include "g2f_cpu.h"
#include "g2f_layernorm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 4096 /* elements per parallel task in the element-wise loops */

void g2f_ffn_eval_ws_free(g2f_ffn_eval_ws *ws) {
    if (!ws) return;
    free(ws->buf);
    free(ws->track_buf);
    ws->buf = ws->track_buf = NULL;
    ws->cap = ws->track_cap = 0;
    g2f_ffn_ws_free(&ws->ffn);
    g2f_tol_f16_free(&ws->tol_f16);
}

void g2f_ffn_eval_result_free(g2f_ffn_eval_result *r) {
    if (!r) return;
    free(r->profile.col_out);
    free(r->profile.col_pre);
    free(r->profile.col_act);
    memset(&r->profile, 0, sizeof r->profile);
}

int g2f_ffn_eval_match(const g2f_ffn_eval_result *r) {
    return r->out.mismatched == 0 && (!r->has_pre || r->pre.mismatched == 0) &&
           (!r->has_act || r->act.mismatched == 0);
}

double g2f_ffn_eval_margin(const g2f_ffn_eval_result *r) {
    double m = r->out.margin;
    if (r->has_pre && r->pre.margin > m) m = r->pre.margin;
    if (r->has_act && r->act.margin > m) m = r->act.margin;
    return m;
}

/* max_i |a_i - b_i| / tol_i (NaN skipped: the comparison reports it), in
 * fixed blocks; a maximum does not depend on the order. */
static double separation(const float *a, const float *b, const float *tol, size_t n, int n_threads) {
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    double m = 0;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : m) num_threads(g2f_threads(n_threads))
#endif
    for (long k = 0; k < blocks; k++) {
        size_t i0 = (size_t)k * BLOCK, i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
        double part = g2f_separation(a + i0, b + i0, tol + i0, i1 - i0);
        if (part > m) m = part;
    }
    return m;
}

/* The chunk's buffers: floats x, out, v (= tol_out), out2, xg, a2 (C, d); pre, act,
 * s (= q), tol_pre, tol_act, act2, s_fc (C, h); doubles e_out (C, d), e_pre,
 * e_act (C, h). */
typedef struct chunk {
    size_t cap; /* tokens */
    float *x, *out, *tol_out, *out2, *pre, *act, *q, *tol_pre, *tol_act, *act2;
    float *xg, *a2; /* (C, d): c_fc's input after LayerNorm / rounding, and its A2 operand */
    float *pre_u, *act_u, *out_u; /* (C, h), (C, h), (C, d): before a port's roundings */
    float *s_fc; /* (C, h): c_fc's sums of squares, kept for the other forms (q is overwritten) */
    float *fl_pre, *fl_act1, *fl_act2, *fl_out; /* (C, h) x 3, (C, d): rounding flips as steps (g2f_flips) */
    float *noise_out; /* (C, d): the error variance out's tolerance stands for (g2f_tol_ffn_out_x) */
    float *f_act, *f_q, *f_out, *f_v; /* the other forms' c_proj, stacked: (F C, h), (F C, h), (F C, d), (F C, d) */
    double *e_out, *e_pre, *e_act;
    double *x_pre, *x_out; /* (C): per-token variances from uncertain weights (how->wvar_*) */
} chunk;

/* Bytes per token of the chunk's buffers with F other forms; SIZE_MAX on
 * overflow. */
static size_t bytes_per_token(size_t d, size_t h, size_t F) {
    size_t a, b, r;
    if (__builtin_mul_overflow(h, (size_t)64 + 8 * F, &a) || __builtin_mul_overflow(d, (size_t)44 + 8 * F, &b) ||
        __builtin_add_overflow(a, b, &r) || __builtin_add_overflow(r, (size_t)16, &r))
        return SIZE_MAX;
    return r;
}

/* Chunks of whole multiples of this many rows: the kernels' row block
 * (mc, a multiple of 24 up to 192) then splits them without a small
 * remainder; chunks of 221 rows (GPT-2 small in 48 MiB: a 192-row block
 * and 29 rows, each packing the weights again) against 192 rows (one
 * product that reads them in place): gpt2ffn verify of 12 layers x 1024
 * tokens 1.32-1.33 s against 1.39-1.46 s (2 threads, Intel Xeon AVX-512),
 * peak memory 124 MiB against 147. A constant, not the CPU's mc, so that
 * every machine cuts the same chunks (the comparisons' sums follow them). */
#define CHUNK_ROWS 96

/* The chunk's buffers for up to want tokens with F other forms; tf forms
 * more on G2F_EVAL_TRACK rows (opts.tracked_forms: the tracked tokens'
 * evaluation, when want fits in one chunk; then F + tf forms' areas of
 * min(cap, G2F_EVAL_TRACK) rows). */
static g2f_status chunk_make(float **buf, size_t *buf_cap, size_t layer, size_t want, size_t d, size_t h, size_t F,
                             size_t tf, chunk *c, g2f_error *err) {
    size_t per = bytes_per_token(d, h, F);
    size_t cap = per == SIZE_MAX ? 16 : G2F_EVAL_CHUNK_BYTES / per;
    if (cap < 16) cap = 16;
    if (cap >= CHUNK_ROWS) cap = cap / CHUNK_ROWS * CHUNK_ROWS;
    if (cap < want) tf = 0; /* more than one chunk: no tracked evaluation in the pass */
    if (cap > want) cap = want ? want : 1;
    /* the forms' areas: F forms on cap rows, or F + tf on the tracked rows */
    size_t fr = tf && !F && cap > G2F_EVAL_TRACK ? G2F_EVAL_TRACK : cap, nf = F + tf;
    size_t base = bytes_per_token(d, h, 0), one = bytes_per_token(d, h, 1), bytes, a, b, f;
    int over = base == SIZE_MAX || one == SIZE_MAX || __builtin_mul_overflow(cap, base, &a) ||
               __builtin_mul_overflow(nf, fr, &b) || __builtin_mul_overflow(b, one - base, &f) ||
               __builtin_add_overflow(a, f, &bytes);
    if (over) bytes = SIZE_MAX;
    if (!*buf || *buf_cap < bytes) {
        free(*buf);
        *buf = NULL;
        *buf_cap = 0;
        char what[128];
        snprintf(what, sizeof what, "layer %zu: the work buffers for %zu tokens at a time", layer, cap);
        /* one block: doubles first, for their alignment */
        /* named per token, as cap x bytes a token */
        *buf = g2f_alloc_work(cap, over ? SIZE_MAX : (bytes + cap - 1) / cap, 1, what, err);
        if (!*buf) return err ? err->status : G2F_ERR_NOMEM;
        *buf_cap = (bytes + cap - 1) / cap * cap;
    }
    double *dp = (double *)(void *)*buf;
    c->cap = cap;
    c->e_out = dp; dp += cap * d;
    c->e_pre = dp; dp += cap * h;
    c->e_act = dp; dp += cap * h;
    c->x_pre = dp; dp += cap;
    c->x_out = dp; dp += cap;
    float *fp = (float *)(void *)dp;
    c->x = fp; fp += cap * d;
    c->out = fp; fp += cap * d;
    c->tol_out = fp; fp += cap * d;
    c->out2 = fp; fp += cap * d;
    c->xg = fp; fp += cap * d;
    c->a2 = fp; fp += cap * d;
    c->out_u = fp; fp += cap * d;
    c->pre_u = fp; fp += cap * h;
    c->act_u = fp; fp += cap * h;
    c->pre = fp; fp += cap * h;
    c->act = fp; fp += cap * h;
    c->q = fp; fp += cap * h;
    c->tol_pre = fp; fp += cap * h;
    c->tol_act = fp; fp += cap * h;
    c->act2 = fp; fp += cap * h;
    c->s_fc = fp; fp += cap * h;
    c->fl_pre = fp; fp += cap * h;
    c->fl_act1 = fp; fp += cap * h;
    c->fl_act2 = fp; fp += cap * h;
    c->fl_out = fp; fp += cap * d;
    c->noise_out = fp; fp += cap * d;
    c->f_act = fp; fp += nf * fr * h;
    c->f_q = fp; fp += nf * fr * h;
    c->f_out = fp; fp += nf * fr * d;
    c->f_v = fp;
    return G2F_OK;
}

/* Reads rows [i0, i0 + n) of the evaluated token list into the chunk. */
static void read_rows(const g2f_tensor *t, const size_t *tokens, size_t i0, size_t n, size_t width, float *f,
                      double *dbl) {
    if (!tokens) {
        if (f) g2f_tensor_read_f32(t, (uint64_t)i0 * width, (uint64_t)n * width, f);
        else g2f_tensor_read_f64(t, (uint64_t)i0 * width, (uint64_t)n * width, dbl);
        return;
    }
    for (size_t r = 0; r < n; r++) {
        uint64_t at = (uint64_t)tokens[i0 + r] * width;
        if (f) g2f_tensor_read_f32(t, at, width, f + r * width);
        else g2f_tensor_read_f64(t, at, width, dbl + r * width);
    }
}

/* Adds a chunk's comparison: one call for a range of tokens, one per row
 * for a list (so each row keeps its own flat index); f1, f2: rounding
 * flips as discrete steps, or NULL (g2f_cmp_acc_add_flips). */
static void cmp_rows_f(g2f_cmp_acc *a, const double *e, const float *c, const float *tol, const float *f1,
                       const float *f2, const size_t *tokens, size_t i0, size_t n, size_t width, int n_threads) {
    if (!tokens) {
        g2f_cmp_acc_add_flips(a, e, c, tol, f1, f2, n * width, i0 * width, n_threads);
        return;
    }
    g2f_cmp_acc_add_rows(a, e, c, tol, f1, f2, n, width, tokens + i0, n_threads);
}

static void cmp_rows(g2f_cmp_acc *a, const double *e, const float *c, const float *tol, const size_t *tokens,
                     size_t i0, size_t n, size_t width, int n_threads) {
    cmp_rows_f(a, e, c, tol, NULL, NULL, tokens, i0, n, width, n_threads);
}

/* The tracked tokens: the largest scores, ties to the earlier token. */
typedef struct tracker {
    size_t n;
    size_t tok[G2F_EVAL_TRACK];
    double score[G2F_EVAL_TRACK];
} tracker;

/* Tracks tok with its score; the slot it took, or -1. */
static long track(tracker *t, size_t tok, double score) {
    if (!(score == score)) score = INFINITY; /* a NaN difference is worth a look */
    if (t->n < G2F_EVAL_TRACK) {
        t->tok[t->n] = tok;
        t->score[t->n] = score;
        return (long)t->n++;
    }
    size_t lo = 0;
    for (size_t i = 1; i < t->n; i++)
        if (t->score[i] < t->score[lo] || (t->score[i] == t->score[lo] && t->tok[i] > t->tok[lo])) lo = i;
    if (!(score > t->score[lo])) return -1;
    t->tok[lo] = tok;
    t->score[lo] = score;
    return (long)lo;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void profile_rows(g2f_ffn_profile *pf, const double *e, const float *c, const float *tol, size_t *cols,
                         const size_t *tokens, size_t i0, size_t n, size_t width, int flag_tokens) {
    for (size_t r = 0; r < n; r++) {
        size_t bad = 0;
        for (size_t j = 0; j < width; j++) {
            size_t i = r * width + j;
            if (!(fabs((double)c[i] - e[i]) <= tol[i])) bad++, cols[j]++;
        }
        if (flag_tokens && bad) {
            if (pf->tokens_flagged < 8) pf->first_flagged[pf->tokens_flagged] = tokens ? tokens[i0 + r] : i0 + r;
            pf->tokens_flagged++;
        }
    }
}

/* act = GELU form g of pre as `how` has it: act_u before the port's
 * roundings (clipped to [-10, 10] for HF gelu_10), act after the store's
 * (act may be act_u: nothing to round then). */
static void act_gelu(const g2f_ffn_how *how, g2f_gelu g, const float *pre, size_t nh, float *act_u, float *act,
                     int n_threads, g2f_ffn_ws *ws) {
    g2f_ffn_gelu_ws(g, pre, nh, act_u, n_threads, ws);
    if (how->clip)
        for (size_t i = 0; i < nh; i++) act_u[i] = act_u[i] > 10.0f ? 10.0f : act_u[i] < -10.0f ? -10.0f : act_u[i];
    if (act != act_u) g2f_round_span(how->store, act_u, act, nh);
}

/* What the part after c_fc needs, the same for every GELU form. */
typedef struct tail_ctx {
    const g2f_ffn_how *how;
    const g2f_tol_params *p;     /* with user: NULL for the values alone (g2f_ffn_eval_rows without vx) */
    int has_pre, has_act;        /* their tolerances wanted */
    const float *fc_in;          /* what c_fc multiplied (for the weights' variance) */
    const float *pre_u;          /* c_fc's output before the store's rounding (c.pre when none) */
    size_t d, h;
    double lambda;
    int user, n_threads;
    int flips;                   /* the computation rounds between stages: flips are compared as steps */
    g2f_ffn_ws *fws;
} tail_ctx;

/* After c_fc and a GELU form: the tolerances of pre and act (into
 * c->tol_pre, c->tol_act) and q, c_proj's A2 operand (the coefficient of
 * W_proj^2 in V_out), from c->pre (and t->pre_u), that form's act before
 * (act_u) and after (act) the port's roundings and c_fc's sums of squares
 * s. un: the form's units. */
static void hidden(const tail_ctx *t, const chunk *c, size_t n, const float *act_u, const float *act, const float *s,
                   const g2f_tol_units *un, float *q) {
    const g2f_ffn_how *how = t->how;
    const size_t d = t->d, h = t->h, nh = n * h;
    const double u = ldexp(1.0, -24);
    if (t->user) {
        if (t->has_pre) g2f_tol_user(t->p, c->e_pre, nh, c->tol_pre);
        if (t->has_act) g2f_tol_user(t->p, c->e_act, nh, c->tol_act);
        return;
    }
    const double *xp = NULL;
    if (how->wvar_fc) { /* sum_i x_i^2 wvar_fc[i] per token, in units of u^2 */
        for (size_t r = 0; r < n; r++) {
            double acc = 0;
            for (size_t i = 0; i < d; i++) acc += (double)t->fc_in[r * d + i] * t->fc_in[r * d + i] * how->wvar_fc[i];
            c->x_pre[r] = acc / (u * u);
        }
        xp = c->x_pre;
    }
    g2f_flips fl = {c->fl_pre, c->fl_act1, c->fl_act2}; /* read by the comparisons when t->flips */
    g2f_tol_ffn_hidden_x(nh, d, h, t->pre_u, c->pre, act_u, act, s, t->has_pre ? c->e_pre : NULL,
                         t->has_act ? c->e_act : NULL, un, t->lambda, xp, t->has_pre ? c->tol_pre : NULL,
                         t->has_act ? c->tol_act : NULL, q, t->flips ? &fl : NULL, t->n_threads);
}

/* c_proj's input: act, or its rounding (TF32 inputs) into dst. */
static const float *proj_input(const tail_ctx *t, const float *act, size_t nh, float *dst) {
    const g2f_ffn_how *how = t->how;
    if (how->gemm_in == G2F_ROUND_NONE || how->gemm_in == how->store) return act;
    g2f_round_span(how->gemm_in, act, dst, nh);
    return dst;
}

/* After c_proj: prod (n, d) is its product, v its sums of squares (any
 * values in user mode); out gets the stored value (prod's rounding, or prod
 * itself when out is prod) plus the residual, v the tolerance in place.
 * act_in: c_proj's input. */
static void out_tail(const tail_ctx *t, const chunk *c, size_t n, const float *act_in, const float *prod, float *out,
                     float *v, float *noise, const g2f_tol_units *un) {
    const g2f_ffn_how *how = t->how;
    const size_t d = t->d, h = t->h, nd = n * d;
    const double u = ldexp(1.0, -24);
    const float *out_u = out;
    if (how->out_round != G2F_ROUND_NONE) {
        g2f_round_span(how->out_round, prod, out, nd);
        out_u = prod;
    }
    if (t->user) {
        if (t->p) g2f_tol_user(t->p, c->e_out, nd, v);
    } else {
        const double *xo = NULL;
        if (how->wvar_proj) { /* sum_k act_k^2 wvar_proj[k] per token */
            for (size_t r = 0; r < n; r++) {
                double acc = 0;
                for (size_t k = 0; k < h; k++) acc += (double)act_in[r * h + k] * act_in[r * h + k] * how->wvar_proj[k];
                c->x_out[r] = acc / (u * u);
            }
            xo = c->x_out;
        }
        g2f_tol_ffn_out_x(nd, h, d, out_u, v, c->e_out, un, t->lambda, xo, v, t->flips ? c->fl_out : NULL, noise,
                          t->n_threads);
    }
    if (how->residual)
        for (size_t i = 0; i < nd; i++) {
            out[i] += c->x[i];
            v[i] += (float)(u * fabs(out[i])); /* the add's own rounding */
            if (noise && !t->user) noise[i] += (float)(u * u * out[i] * out[i] / 3);
        }
}

/* How many forms of mask are not g. */
static size_t count_forms(unsigned mask, g2f_gelu g) {
    unsigned m = mask & ((1u << G2F_GELU_COUNT) - 1u) & ~(1u << g);
    size_t n = 0;
    for (int k = 0; k < G2F_GELU_COUNT; k++) n += (m >> k) & 1u;
    return n;
}

/* One evaluation's state, shared by its per-chunk steps. */
typedef struct eval {
    const g2f_ffn_how *how;
    const g2f_ffn_eval_opts *opts;
    const g2f_tensor *tin, *tout, *tpre, *tact;
    const size_t *tokens;
    size_t d, h;
    unsigned forms;               /* the other forms asked for */
    int keep_s;                   /* c_fc's sums of squares kept in s_fc (opts.tracked_out) */
    size_t n_forms;
    int plain;                    /* bias + GELU fused into c_fc's last tiles */
    int user, n_threads;
    g2f_gelu other;
    double u_in_fixture, f_in_fixture; /* the fixture input's rounding, relative and absolute */
    g2f_tol_units un, form_un[G2F_GELU_COUNT];
    const float *vx;              /* the chunk's rows of the caller's input variance (g2f_ffn_eval_rows), or NULL */
    tail_ctx t;
    const float *fpre, *fa1, *fa2, *fout; /* the flips the comparisons take off (NULL: none) */
    g2f_cmp_acc a_out, a_pre, a_act, a_act2, a_out2;
    g2f_cmp_acc a_form[G2F_GELU_COUNT][3]; /* out, pre, act */
    size_t form_rows[G2F_GELU_COUNT];    /* the rows each form was evaluated on */
    tracker tr;
    chunk *store;                 /* over several chunks: the tracked tokens' rows, row = tracker slot (or NULL) */
    g2f_ffn_ws *fws;
    g2f_ffn_eval_result *res;
} eval;

static void store_row(const eval *ev, const chunk *c, size_t r, size_t slot);

/* Reads rows [i0, i0 + n) of the fixture into the chunk; the first
 * non-finite input is noted. */
static void read_chunk(eval *ev, chunk *c, size_t i0, size_t n) {
    const size_t d = ev->d, h = ev->h, nd = n * d;
    const size_t *tokens = ev->tokens;
    g2f_ffn_eval_result *res = ev->res;
    read_rows(ev->tin, tokens, i0, n, d, c->x, NULL);
    read_rows(ev->tout, tokens, i0, n, d, NULL, c->e_out);
    if (ev->tpre) read_rows(ev->tpre, tokens, i0, n, h, NULL, c->e_pre);
    if (ev->tact) read_rows(ev->tact, tokens, i0, n, h, NULL, c->e_act);
    if (res->bad_in >= 0) return;
    for (size_t i = 0; i < nd; i++)
        if (!isfinite(c->x[i])) {
            res->bad_in = (long)((tokens ? tokens[i0 + i / d] : i0 + i / d) * d + i % d);
            res->bad_in_value = c->x[i];
            return;
        }
}

/* c_fc's A2 operand, a2 = xr^2 + k2 var (k2 = g2f_tol_var_coef: sum var
 * W^2 / u^2 enters V_pre as it is), xr c_fc's input and var the absolute
 * variance of x; with r, both sides round an uncertain x (ggml's F16
 * matmul): a flip's second moment (g2f_round_flip_var) in place of var.
 * a2 may be var. */
static void input_a2(const float *xr, const float *x, const float *var, g2f_round r, double k2, double lambda,
                     size_t n, float *a2) {
    if (r == G2F_ROUND_NONE)
        for (size_t i = 0; i < n; i++) a2[i] = (float)((double)xr[i] * xr[i] + k2 * var[i]);
    else
        for (size_t i = 0; i < n; i++)
            a2[i] = (float)((double)xr[i] * xr[i] + k2 * g2f_round_flip_var(r, x[i], var[i], lambda));
}

/* c_fc's input as the port computes it: LayerNorm(x) (its rounding an
 * input variance in c->a2), rounded (the reference's own rounding: nothing
 * to add); or x with the caller's variance ev->vx (g2f_ffn_eval_rows). *a2
 * the A2 operand or NULL. */
static const float *fc_input(eval *ev, chunk *c, size_t n, const float **a2) {
    const g2f_ffn_how *how = ev->how;
    const size_t d = ev->d, nd = n * d;
    const double k2 = g2f_tol_var_coef(d, &ev->un);
    const float *xin = c->x;
    *a2 = NULL;
    if (how->ln) {
        g2f_ln_forward(c->x, n, d, how->ln->w, how->ln->b, how->ln->eps, c->xg, NULL, NULL, ev->n_threads);
        xin = c->xg;
        if (!ev->user) {
            g2f_tol_layernorm_var(c->x, c->xg, n, d, how->ln->w, how->ln->b, how->ln->eps, ev->u_in_fixture,
                                  ev->f_in_fixture, c->a2, ev->n_threads);
            input_a2(c->xg, c->xg, c->a2, G2F_ROUND_NONE, k2, ev->t.lambda, nd, c->a2);
            *a2 = c->a2;
        }
    }
    if (how->gemm_in != G2F_ROUND_NONE) {
        g2f_round_span(how->gemm_in, xin, c->xg, nd);
        xin = c->xg;
    }
    if (ev->vx && !ev->user) {
        input_a2(xin, c->x, ev->vx, how->gemm_in, k2, ev->t.lambda, nd, c->a2);
        *a2 = c->a2;
    } else if (ev->un.f_in > 0 && !ev->user) { /* the fixture's absolute floor: an input variance */
        for (size_t i = 0; i < nd; i++) c->a2[i] = (float)(ev->un.f_in * ev->un.f_in);
        input_a2(xin, c->x, c->a2, how->gemm_in, k2, ev->t.lambda, nd, c->a2);
        *a2 = c->a2;
    }
    return xin;
}

/* c_fc and the GELU with x^2 W_fc^2 beside them: c->pre, c->act, c->q;
 * *pre_u, *act_u the values before the port's roundings. */
static void fc_gelu_step(eval *ev, chunk *c, size_t n, const float **pre_u, const float **act_u) {
    const g2f_ffn_how *how = ev->how;
    const g2f_ffn_weights *w = how->w;
    const size_t h = ev->h, nh = n * h;
    *pre_u = c->pre, *act_u = c->act;
    if (ev->plain) {
        g2f_ffn_fc_gelu_sq(w, c->x, n, how->gelu, c->pre, c->act, ev->user ? NULL : c->q, ev->n_threads, ev->fws);
        ev->t.fc_in = c->x;
        return;
    }
    const float *a2, *xin = fc_input(ev, c, n, &a2);
    ev->t.fc_in = xin;
    g2f_matmul_sq(xin, a2, n, ev->d, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, h, w->b_fc, c->pre_u,
                  ev->user ? NULL : c->q, ev->n_threads, ev->fws);
    *pre_u = c->pre_u;
    g2f_round_span(how->store, c->pre_u, c->pre, nh); /* NONE: a copy */
    act_gelu(how, how->gelu, c->pre, nh, c->act_u, c->act, ev->n_threads, ev->fws);
    *act_u = c->act_u;
}

/* The hidden tolerances, c_proj with q W_proj^2 beside it and out's tail:
 * c->out and c->tol_out. */
static void proj_step(eval *ev, chunk *c, size_t n, const float *act_u) {
    const g2f_ffn_how *how = ev->how;
    const size_t nh = n * ev->h;
    if ((ev->n_forms || ev->keep_s) && !ev->user) { /* c_fc's sums kept: q goes beside them, then the names swap */
        hidden(&ev->t, c, n, act_u, c->act, c->q, &ev->un, c->s_fc);
        float *q = c->s_fc;
        c->s_fc = c->q, c->q = q;
    } else {
        hidden(&ev->t, c, n, act_u, c->act, c->q, &ev->un, c->q); /* q computed in place */
    }
    const float *act_in = proj_input(&ev->t, c->act, nh, c->act2);
    float *prod = how->out_round != G2F_ROUND_NONE ? c->out_u : c->out;
    g2f_ffn_proj_sq(how->w, act_in, ev->user ? NULL : c->q, n, prod, ev->user ? NULL : c->tol_out, ev->n_threads,
                    ev->fws);
    out_tail(&ev->t, c, n, act_in, prod, c->out, c->tol_out, c->noise_out, &ev->un);
}

/* out's rows kept (opts.keep_out) and set against opts.base_out's (res->base_*), in token order. */
static void base_rows(eval *ev, const chunk *c, size_t i0, size_t n) {
    const size_t d = ev->d;
    g2f_ffn_eval_result *res = ev->res;
    for (size_t r = 0; r < n; r++) {
        size_t tok = ev->tokens ? ev->tokens[i0 + r] : i0 + r;
        const float *o = c->out + r * d;
        const double *e = c->e_out + r * d;
        if (ev->opts->keep_out) memcpy(ev->opts->keep_out + tok * d, o, d * sizeof(float));
        if (!ev->opts->base_out) continue;
        const float *b = ev->opts->base_out + tok * d;
        for (size_t j = 0; j < d; j++) {
            double delta = (double)o[j] - b[j], eb = (double)b[j] - e[j];
            res->base_dd += delta * delta, res->base_de += delta * eb, res->base_dde += delta * delta * eb * eb;
            res->base_ee += eb * eb;
        }
    }
}

/* out's squared error and the variance its tolerance stands for, summed
 * (res->noise_err, res->noise_var): each row in order, then the rows in
 * order (any thread count, the same sums). */
static void noise_rows(eval *ev, const chunk *c, size_t n) {
    const size_t d = ev->d;
    double *se = c->x_pre, *sv = c->x_out; /* (C) doubles, free here */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(ev->n_threads))
#endif
    for (long r = 0; r < (long)n; r++) {
        double a = 0, b = 0;
        for (size_t j = (size_t)r * d; j < ((size_t)r + 1) * d; j++) {
            double e = (double)c->out[j] - c->e_out[j];
            a += e * e, b += c->noise_out[j];
        }
        se[r] = a, sv[r] = b;
    }
    for (size_t r = 0; r < n; r++) ev->res->noise_err += se[r], ev->res->noise_var += sv[r];
}

/* The comparisons of out, pre and act (and their profile). */
static void compare_step(eval *ev, chunk *c, size_t i0, size_t n) {
    const size_t d = ev->d, h = ev->h;
    const int nt = ev->n_threads;
    if (ev->opts->keep_out || ev->opts->base_out) base_rows(ev, c, i0, n);
    if (!ev->user) noise_rows(ev, c, n);
    cmp_rows_f(&ev->a_out, c->e_out, c->out, c->tol_out, ev->fout, NULL, ev->tokens, i0, n, d, nt);
    if (ev->tpre) cmp_rows_f(&ev->a_pre, c->e_pre, c->pre, c->tol_pre, ev->fpre, NULL, ev->tokens, i0, n, h, nt);
    if (ev->tact) cmp_rows_f(&ev->a_act, c->e_act, c->act, c->tol_act, ev->fa1, ev->fa2, ev->tokens, i0, n, h, nt);
    if (ev->opts->profile) {
        g2f_ffn_profile *pf = &ev->res->profile;
        profile_rows(pf, c->e_out, c->out, c->tol_out, pf->col_out, ev->tokens, i0, n, d, 1);
        if (ev->tpre) profile_rows(pf, c->e_pre, c->pre, c->tol_pre, pf->col_pre, ev->tokens, i0, n, h, 0);
        if (ev->tact) profile_rows(pf, c->e_act, c->act, c->tol_act, pf->col_act, ev->tokens, i0, n, h, 0);
    }
}

/* Where the forms differ most, relative to out's tolerance: one row per
 * task, each summed in order (any thread count, the same scores), then
 * tracked in token order. */
static void track_rows(eval *ev, chunk *c, size_t i0, size_t n) {
    const size_t d = ev->d, h = ev->h;
    double *score = c->x_out; /* (C) doubles, free here: out_tail is done with them */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(ev->n_threads))
#endif
    for (long r = 0; r < (long)n; r++) {
        double dd = 0, tt = 0;
        const float *a2 = c->act2 + (size_t)r * h, *a1 = c->act + (size_t)r * h, *to = c->tol_out + (size_t)r * d;
        for (size_t k = 0; k < h; k++) {
            double e = (double)a2[k] - a1[k];
            dd += e * e;
        }
        for (size_t j = 0; j < d; j++) tt += (double)to[j] * to[j];
        score[r] = tt > 0 ? sqrt(dd / (tt / (double)d)) : INFINITY;
    }
    for (size_t r = 0; r < n; r++) {
        long slot = track(&ev->tr, ev->tokens ? ev->tokens[i0 + r] : i0 + r, score[r]);
        if (slot >= 0 && ev->store) store_row(ev, c, r, (size_t)slot);
    }
}

/* The other form's out (c->out2) against the reference and against out. */
static void other_out_compare(eval *ev, chunk *c, size_t i0, size_t n) {
    const size_t d = ev->d;
    cmp_rows(&ev->a_out2, c->e_out, c->out2, c->tol_out, ev->tokens, i0, n, d, ev->n_threads);
    double so = separation(c->out, c->out2, c->tol_out, n * d, ev->n_threads);
    if (so > ev->res->sep_out) ev->res->sep_out = so;
}

/* Whether the other form's full out comes from forms_step: it is one of the
 * forms and nothing rounds between the stages, so its rows of the stacked
 * c_proj are bitwise what other_form_step's own product would give (the
 * same GELU of the same pre, rows independent, the same bias and residual
 * adds). */
static int other_in_forms(const eval *ev) {
    return ev->plain && ev->opts->other == G2F_EVAL_OTHER_FULL && (ev->forms >> ev->other & 1u);
}

/* The other GELU form of the same pre-activations: act2 (and out2)
 * compared, the separations, the tracked tokens. */
static void other_form_step(eval *ev, chunk *c, size_t i0, size_t n) {
    const g2f_ffn_how *how = ev->how;
    const g2f_ffn_weights *w = how->w;
    const size_t d = ev->d, h = ev->h, nh = n * h, nd = n * d;
    const int nt = ev->n_threads;
    g2f_ffn_eval_result *res = ev->res;
    g2f_ffn_gelu(ev->other, c->pre, nh, c->act2, nt);
    if (ev->tact) {
        cmp_rows(&ev->a_act2, c->e_act, c->act2, c->tol_act, ev->tokens, i0, n, h, nt);
        double sa = separation(c->act, c->act2, c->tol_act, nh, nt);
        if (sa > res->sep_act) res->sep_act = sa;
    }
    track_rows(ev, c, i0, n);
    if (ev->opts->other != G2F_EVAL_OTHER_FULL || other_in_forms(ev)) return;
    g2f_matmul_sq(c->act2, NULL, n, h, w->w_proj, w->layout_proj == G2F_LAYOUT_LINEAR, d, w->b_proj, c->out2, NULL,
                  nt, ev->fws);
    if (how->residual)
        for (size_t i = 0; i < nd; i++) c->out2[i] += c->x[i];
    other_out_compare(ev, c, i0, n);
}

/* The forms of `forms`, from rows [0, n) of this chunk's pre and c_fc's
 * sums of squares (what a g2f_ffn_eval with how.gelu = g computes, step
 * for step), the forms of `heads` on its first `head` rows only; their
 * c_proj stacked into one product (rows are independent: the same bits,
 * one packing of W_proj). */
static void forms_pass(eval *ev, chunk *c, size_t i0, size_t n, unsigned forms, unsigned heads, size_t head) {
    const g2f_ffn_how *how = ev->how;
    const size_t d = ev->d, h = ev->h;
    const int nt = ev->n_threads;
    size_t rows[G2F_GELU_COUNT] = {0}, at = 0;
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        if (!(forms & (1u << g))) continue;
        size_t m = heads >> g & 1u ? head : n, mh = m * h;
        float *fa = c->f_act + at * h, *fq = c->f_q + at * h;
        float *au = ev->plain ? c->act : c->act_u;
        act_gelu(how, (g2f_gelu)g, c->pre, mh, au, c->act, nt, ev->fws);
        hidden(&ev->t, c, m, au, c->act, c->s_fc, &ev->form_un[g], fq);
        if (ev->tpre)
            cmp_rows_f(&ev->a_form[g][1], c->e_pre, c->pre, c->tol_pre, ev->fpre, NULL, ev->tokens, i0, m, h, nt);
        if (ev->tact)
            cmp_rows_f(&ev->a_form[g][2], c->e_act, c->act, c->tol_act, ev->fa1, ev->fa2, ev->tokens, i0, m, h, nt);
        const float *ai = proj_input(&ev->t, c->act, mh, fa);
        if (ai != fa) memcpy(fa, ai, mh * sizeof(float));
        rows[g] = m, at += m;
    }
    g2f_ffn_proj_sq(how->w, c->f_act, ev->user ? NULL : c->f_q, at, c->f_out, ev->user ? NULL : c->f_v, nt, ev->fws);
    at = 0;
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        if (!(forms & (1u << g))) continue;
        size_t m = rows[g];
        float *fo = c->f_out + at * d, *fv = c->f_v + at * d;
        float *o = how->out_round != G2F_ROUND_NONE ? c->out : fo;
        out_tail(&ev->t, c, m, c->f_act + at * h, fo, o, fv, NULL, &ev->form_un[g]);
        cmp_rows_f(&ev->a_form[g][0], c->e_out, o, fv, ev->fout, NULL, ev->tokens, i0, m, d, nt);
        if (g == (int)ev->other && other_in_forms(ev)) memcpy(c->out2, o, m * d * sizeof(float));
        ev->form_rows[g] += m;
        at += m;
    }
    if (forms >> ev->other & 1u && other_in_forms(ev)) other_out_compare(ev, c, i0, n);
}

/* Form g's margin so far (its comparisons of out, pre and act). */
static double form_margin_now(const eval *ev, int g) {
    g2f_ffn_eval_result fr = {0};
    fr.has_pre = ev->tpre != NULL;
    fr.has_act = ev->tact != NULL;
    g2f_cmp_acc_finish(&ev->a_form[g][0], &fr.out);
    g2f_cmp_acc_finish(&ev->a_form[g][1], &fr.pre);
    g2f_cmp_acc_finish(&ev->a_form[g][2], &fr.act);
    return g2f_ffn_eval_margin(&fr);
}

/* Chunk c from its row r0 on: each per-row array advanced (the forms'
 * stacked areas stay where they are). */
static chunk chunk_from(const chunk *c, size_t r0, size_t d, size_t h) {
    chunk v = *c;
    float **fd[] = {&v.x, &v.out, &v.tol_out, &v.out2, &v.xg, &v.a2, &v.out_u, &v.fl_out, &v.noise_out};
    float **fh[] = {&v.pre_u, &v.act_u, &v.pre, &v.act, &v.q, &v.tol_pre, &v.tol_act, &v.act2, &v.s_fc,
                    &v.fl_pre, &v.fl_act1, &v.fl_act2};
    for (size_t i = 0; i < sizeof fd / sizeof *fd; i++) *fd[i] += r0 * d;
    for (size_t i = 0; i < sizeof fh / sizeof *fh; i++) *fh[i] += r0 * h;
    v.e_out += r0 * d, v.e_pre += r0 * h, v.e_act += r0 * h, v.x_pre += r0, v.x_out += r0;
    v.cap = c->cap - r0;
    return v;
}

/* A row more than this, and the three forms that neither the asked one
 * nor the other (the GELU separation's) start on this many rows: where a
 * form fails there (margin > 1) more rows can only raise its margin, so
 * its verdict is settled and the margin on those rows reported (as
 * verify's other form on the tracked tokens); where it fits, its other
 * rows follow. So a form is said to fit exactly where it fits on every
 * row, for a third of the products (GPT-2 XL's FFN, 32 tracked tokens). */
#define FORM_HEAD 8

/* The other forms asked for, on the chunk's rows (forms_pass): on an
 * evaluation of one chunk, the three others first on FORM_HEAD rows, then
 * those that fit there on the rest. */
static void forms_step(eval *ev, chunk *c, size_t i0, size_t n, size_t total) {
    unsigned heads = i0 == 0 && n == total && n > FORM_HEAD ? ev->forms & ~(1u << ev->other) : 0, rest = 0;
    forms_pass(ev, c, i0, n, ev->forms, heads, FORM_HEAD);
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if ((heads >> g & 1u) && form_margin_now(ev, g) <= 1) rest |= 1u << g;
    if (!rest) return;
    eval e = *ev; /* the same evaluation from row FORM_HEAD on */
    chunk v = chunk_from(c, FORM_HEAD, ev->d, ev->h);
    const size_t dr = FORM_HEAD * ev->d, hr = FORM_HEAD * ev->h;
    if (e.fpre) e.fpre += hr, e.fa1 += hr, e.fa2 += hr, e.fout += dr;
    if (e.t.fc_in) e.t.fc_in += dr;
    if (e.t.pre_u) e.t.pre_u += hr;
    forms_pass(&e, &v, i0 + FORM_HEAD, n - FORM_HEAD, rest, 0, 0);
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if (rest >> g & 1u) {
            memcpy(ev->a_form[g], e.a_form[g], sizeof ev->a_form[g]);
            ev->form_rows[g] = e.form_rows[g];
        }
}

/* The units of the computation how describes (its roundings), from the
 * dtypes of its input, out, pre and act. */
static void eval_units(eval *ev, g2f_dtype din, g2f_dtype dout, g2f_dtype dpre, g2f_dtype dact) {
    const g2f_ffn_how *how = ev->how;
    g2f_tol_units *un = &ev->un;
    *un = g2f_tol_units_for(din, dout, dpre, dact, how->weight_roundoff);
    ev->u_in_fixture = un->u_in, ev->f_in_fixture = un->f_in;
    if (how->ln) un->u_in = un->f_in = 0; /* folded into the LayerNorm's output variance */
    un->store = how->store;
    un->table_in = how->gelu == G2F_GELU_F16_TABLE; /* ggml rounds the table's input to float16 */
    un->gemm_act = how->gemm_in != how->store ? how->gemm_in : G2F_ROUND_NONE;
    un->out_round = how->out_round;
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        ev->form_un[g] = *un;
        ev->form_un[g].table_in = g == G2F_GELU_F16_TABLE;
    }
}

/* The f16 table form's halves tabulated in ws (g2f_tol_f16) for the units
 * that have that form; without memory they are computed per element. */
static void eval_f16(eval *ev, g2f_ffn_eval_ws *ws, double lambda) {
    if (!ev->un.table_in && !(ev->forms >> G2F_GELU_F16_TABLE & 1u)) return;
    if (!g2f_tol_f16_make(&ws->tol_f16, lambda)) return;
    ev->un.f16 = &ws->tol_f16;
    for (int g = 0; g < G2F_GELU_COUNT; g++) ev->form_un[g].f16 = &ws->tol_f16;
}

/* The evaluation's state from its inputs (the chunk made by the caller). */
static void eval_init(eval *ev, const g2f_ffn_how *how, const g2f_fixture_views *fx, const g2f_tol_params *p,
                      const g2f_ffn_eval_opts *opts, int n_threads, g2f_ffn_eval_ws *ws, const chunk *c,
                      g2f_ffn_eval_result *res) {
    memset(ev, 0, sizeof *ev);
    ev->how = how, ev->opts = opts, ev->res = res, ev->fws = &ws->ffn, ev->n_threads = n_threads;
    ev->tin = fx->t[G2F_ACT_MLP_IN], ev->tout = fx->t[G2F_ACT_MLP_OUT];
    ev->tpre = fx->t[G2F_ACT_MLP_PRE], ev->tact = fx->t[G2F_ACT_MLP_ACT];
    ev->tokens = opts->tokens;
    ev->d = how->w->n_embd, ev->h = how->w->n_inner;
    ev->forms = opts->forms & ((1u << G2F_GELU_COUNT) - 1u) & ~(1u << how->gelu);
    ev->n_forms = count_forms(opts->forms, how->gelu);
    ev->user = p->user;
    ev->other = g2f_gelu_other(how->gelu);
    eval_units(ev, ev->tin->dtype, ev->tout->dtype, ev->tpre ? ev->tpre->dtype : G2F_DTYPE_F32,
               ev->tact ? ev->tact->dtype : G2F_DTYPE_F32);
    /* (an input floor takes c_fc's A2 operand, which the fused path has not) */
    ev->plain = !how->clip && how->gemm_in == G2F_ROUND_NONE && how->store == G2F_ROUND_NONE &&
                how->out_round == G2F_ROUND_NONE && !how->ln && !(ev->un.f_in > 0 && !ev->user);
    if (!ev->user) eval_f16(ev, ws, g2f_tol_lambda(p));
    g2f_cmp_acc *accs[5] = {&ev->a_out, &ev->a_pre, &ev->a_act, &ev->a_act2, &ev->a_out2};
    for (int k = 0; k < 5; k++) g2f_cmp_acc_init(accs[k], 1), accs[k]->lambda = g2f_tol_lambda(p);
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        for (int k = 0; k < 3; k++) g2f_cmp_acc_init(&ev->a_form[g][k], 1), ev->a_form[g][k].lambda = g2f_tol_lambda(p);
    ev->t = (tail_ctx){how, p, ev->tpre != NULL, ev->tact != NULL, NULL, NULL, ev->d, ev->h, g2f_tol_lambda(p),
                       ev->user, n_threads, !ev->user, &ws->ffn};
    if (ev->t.flips) ev->fpre = c->fl_pre, ev->fa1 = c->fl_act1, ev->fa2 = c->fl_act2, ev->fout = c->fl_out;
}

/* The comparisons' verdicts into res. */
static void eval_finish(eval *ev, g2f_ffn_eval_result *res) {
    g2f_cmp_acc_finish(&ev->a_out, &res->out);
    g2f_cmp_acc_finish(&ev->a_pre, &res->pre);
    g2f_cmp_acc_finish(&ev->a_act, &res->act);
    g2f_cmp_acc_finish(&ev->a_act2, &res->act_other);
    g2f_cmp_acc_finish(&ev->a_out2, &res->out_other);
    res->form_margin[ev->how->gelu] = g2f_ffn_eval_margin(res);
    res->form_tokens[ev->how->gelu] = res->tokens;
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        if (!(ev->forms & (1u << g))) continue;
        res->form_margin[g] = form_margin_now(ev, g);
        res->form_tokens[g] = ev->form_rows[g];
    }
    res->n_tracked = ev->tr.n;
    memcpy(res->tracked, ev->tr.tok, ev->tr.n * sizeof(size_t));
    qsort(res->tracked, res->n_tracked, sizeof(size_t), cmp_size);
}

/* The profile's per-column counts (opts->profile). */
static g2f_status profile_alloc(g2f_ffn_eval_result *res, size_t d, size_t h, size_t layer, g2f_error *err) {
    res->profile.col_out = calloc(d ? d : 1, sizeof(size_t));
    if (res->has_pre) res->profile.col_pre = calloc(h ? h : 1, sizeof(size_t));
    if (res->has_act) res->profile.col_act = calloc(h ? h : 1, sizeof(size_t));
    if (!res->profile.col_out || (res->has_pre && !res->profile.col_pre) || (res->has_act && !res->profile.col_act)) {
        g2f_ffn_eval_result_free(res);
        return g2f_error_set(err, G2F_ERR_NOMEM, "layer %zu: out of memory", layer);
    }
    return G2F_OK;
}

/* Moves rows rows[0..n) (ascending, rows[i] >= i) of a, row_bytes each,
 * to rows 0..n. */
static void compact(void *a, size_t row_bytes, const size_t *rows, size_t n) {
    unsigned char *b = a;
    for (size_t i = 0; i < n; i++)
        if (rows[i] != i) memmove(b + i * row_bytes, b + rows[i] * row_bytes, row_bytes);
}

/* The arrays of chunk c whose rows the evaluation of the tracked tokens
 * reads (the fixture's rows) and would compute again (c_fc, the main
 * form's tolerances, c_proj and flips: rows are independent, so the same
 * bits), each with its bytes a row, into a and rb; how many. The port's
 * rounded input and pre are among them where the pass used its own (the
 * pass's chunk `main` says). */
#define TRACKED_ARRAYS 18
static size_t tracked_arrays(const eval *ev, const chunk *main, const chunk *c, void **a, size_t *rb) {
    const size_t fd = ev->d * sizeof(float), fh = ev->h * sizeof(float);
    float *f_d[] = {c->x, c->out, c->tol_out, c->noise_out, c->fl_out}, *f_h[] = {c->pre, c->act, c->s_fc, c->tol_pre, c->tol_act,
                                                                   c->fl_pre, c->fl_act1, c->fl_act2};
    size_t nfd = ev->t.flips ? 5 : 4, nfh = ev->t.flips ? 8 : 5, k = 0;
    for (size_t i = 0; i < nfd; i++) a[k] = f_d[i], rb[k++] = fd;
    for (size_t i = 0; i < nfh; i++) a[k] = f_h[i], rb[k++] = fh;
    if (ev->t.fc_in == main->xg) a[k] = c->xg, rb[k++] = fd;
    if (ev->t.pre_u == main->pre_u) a[k] = c->pre_u, rb[k++] = fh;
    a[k] = c->e_out, rb[k++] = ev->d * sizeof(double);
    if (ev->tpre) a[k] = c->e_pre, rb[k++] = ev->h * sizeof(double);
    if (ev->tact) a[k] = c->e_act, rb[k++] = ev->h * sizeof(double);
    return k;
}

/* The chunk's rows of the tracked tokens, moved to its first rows. */
static void compact_tracked(const eval *ev, chunk *c, const size_t *rows, size_t n) {
    void *a[TRACKED_ARRAYS];
    size_t rb[TRACKED_ARRAYS], k = tracked_arrays(ev, c, c, a, rb);
    for (size_t i = 0; i < k; i++) compact(a[i], rb[i], rows, n);
}

/* Row r of chunk c (just tracked) into row `slot` of ev->store. */
static void store_row(const eval *ev, const chunk *c, size_t r, size_t slot) {
    void *from[TRACKED_ARRAYS], *to[TRACKED_ARRAYS];
    size_t rb[TRACKED_ARRAYS], k = tracked_arrays(ev, c, c, from, rb);
    tracked_arrays(ev, c, ev->store, to, rb);
    for (size_t i = 0; i < k; i++) memcpy((char *)to[i] + slot * rb[i], (const char *)from[i] + r * rb[i], rb[i]);
}

/* Row i of each array gets row from[i] (a permutation of n rows), a cycle
 * at a time through tmp (a row). */
static void permute(void *a, size_t row_bytes, const size_t *from, size_t n, void *tmp, unsigned char *done) {
    unsigned char *b = a;
    memset(done, 0, n);
    for (size_t i = 0; i < n; i++) {
        if (done[i] || from[i] == i) continue;
        memcpy(tmp, b + i * row_bytes, row_bytes);
        size_t j = i;
        while (from[j] != i) {
            memcpy(b + j * row_bytes, b + from[j] * row_bytes, row_bytes);
            done[j] = 1;
            j = from[j];
        }
        memcpy(b + j * row_bytes, tmp, row_bytes);
        done[j] = 1;
    }
}

/* The evaluation of the tracked tokens tok (n, ascending; as g2f_ffn_eval
 * with {tok, n, G2F_EVAL_OTHER_FULL, 0, forms}) into *out, from rows 0 ..
 * n - 1 of c: what the pass computed for them, c_fc's input at fc_in and
 * its output before the port's roundings at pre_u. */
static void tracked_eval(const eval *ev, chunk *c, const size_t *tok, size_t n, const float *fc_in,
                         const float *pre_u, const g2f_fixture_views *fx, const g2f_tol_params *p,
                         g2f_ffn_eval_ws *ws, unsigned forms, g2f_ffn_eval_result *out) {
    memset(out, 0, sizeof *out);
    out->tokens = n;
    out->bad_in = -1;
    out->has_pre = ev->tpre != NULL;
    out->has_act = ev->tact != NULL;
    g2f_ffn_eval_opts o = {tok, n, G2F_EVAL_OTHER_FULL, 0, forms, 0, NULL, NULL, NULL};
    eval e;
    eval_init(&e, ev->how, fx, p, &o, ev->n_threads, ws, c, out);
    e.t.fc_in = fc_in;
    e.t.pre_u = pre_u;
    compare_step(&e, c, 0, n);
    other_form_step(&e, c, 0, n);
    if (e.n_forms) forms_step(&e, c, 0, n, n);
    eval_finish(&e, out);
}

/* After a pass over every token in one chunk (ev): the tracked tokens'
 * evaluation from the chunk's rows, moved to its first rows. */
static void tracked_step(const eval *ev, chunk *c, const g2f_fixture_views *fx, const g2f_tol_params *p,
                         g2f_ffn_eval_ws *ws, unsigned forms, g2f_ffn_eval_result *out) {
    size_t tok[G2F_EVAL_TRACK], n = ev->tr.n;
    memcpy(tok, ev->tr.tok, n * sizeof(size_t));
    qsort(tok, n, sizeof(size_t), cmp_size);
    compact_tracked(ev, c, tok, n);
    tracked_eval(ev, c, tok, n, ev->t.fc_in, ev->t.pre_u, fx, p, ws, forms, out);
}

/* After a pass over several chunks (ev, its last chunk c): the tracked
 * tokens' evaluation from their rows in ev->store, put in token order
 * first. 0 (nothing done) without memory for a row. */
static int tracked_from_store(const eval *ev, const chunk *c, const g2f_fixture_views *fx, const g2f_tol_params *p,
                              g2f_ffn_eval_ws *ws, unsigned forms, g2f_ffn_eval_result *out) {
    size_t n = ev->tr.n, tok[G2F_EVAL_TRACK], from[G2F_EVAL_TRACK];
    for (size_t i = 0; i < n; i++) from[i] = i;
    for (size_t i = 1; i < n; i++) /* the slots by token (insertion: 32 at most) */
        for (size_t j = i; j > 0 && ev->tr.tok[from[j - 1]] > ev->tr.tok[from[j]]; j--) {
            size_t t = from[j];
            from[j] = from[j - 1], from[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) tok[i] = ev->tr.tok[from[i]];
    void *a[TRACKED_ARRAYS];
    size_t rb[TRACKED_ARRAYS], k = tracked_arrays(ev, c, ev->store, a, rb), most = 0;
    for (size_t i = 0; i < k; i++) most = rb[i] > most ? rb[i] : most;
    void *tmp = malloc(most);
    unsigned char done[G2F_EVAL_TRACK];
    if (!tmp) return 0;
    for (size_t i = 0; i < k; i++) permute(a[i], rb[i], from, n, tmp, done);
    free(tmp);
    chunk *s = ev->store;
    tracked_eval(ev, s, tok, n, ev->t.fc_in == c->xg ? s->xg : s->x, ev->t.pre_u == c->pre_u ? s->pre_u : s->pre,
                 fx, p, ws, forms, out);
    return 1;
}

g2f_status g2f_ffn_eval(const g2f_ffn_how *how, const g2f_fixture_views *fx, size_t layer, const g2f_tol_params *p,
                        const g2f_ffn_eval_opts *opts, int n_threads, g2f_ffn_eval_ws *ws,
                        g2f_ffn_eval_result *res, g2f_error *err) {
    const size_t d = how->w->n_embd, h = how->w->n_inner;
    const size_t total = opts->tokens ? opts->n_tokens : fx->n_tokens;
    memset(res, 0, sizeof *res);
    res->tokens = total;
    res->bad_in = -1;
    res->has_pre = fx->t[G2F_ACT_MLP_PRE] != NULL;
    res->has_act = fx->t[G2F_ACT_MLP_ACT] != NULL;
    chunk c = {0}, store = {0};
    const size_t n_forms = count_forms(opts->forms, how->gelu);
    /* the tracked tokens' evaluation in this pass */
    const int want_tracked = opts->tracked_out && opts->other == G2F_EVAL_OTHER_ACT && !opts->tokens &&
                             !opts->profile && total > 0;
    const size_t n_tracked_forms = want_tracked ? count_forms(opts->tracked_forms, how->gelu) : 0;
    g2f_status st = chunk_make(&ws->buf, &ws->cap, layer, total, d, h, n_forms, n_tracked_forms, &c, err);
    /* every token in one chunk, and no other forms' pass over it (forms_step
     * rewrites act, the tolerances and flips before the tracked rows are
     * moved up) */
    const int fused = want_tracked && total <= c.cap && n_forms == 0;
    /* else the tracked tokens' rows kept aside as they come (without the
     * memory for them: verify evaluates those tokens again) */
    const int stored = st == G2F_OK && want_tracked && !fused &&
                       chunk_make(&ws->track_buf, &ws->track_cap, layer, G2F_EVAL_TRACK, d, h, 0, n_tracked_forms,
                                  &store, NULL) == G2F_OK &&
                       store.cap >= G2F_EVAL_TRACK;
    if (st == G2F_OK && opts->profile) st = profile_alloc(res, d, h, layer, err);
    if (st != G2F_OK) return st;
    eval ev;
    eval_init(&ev, how, fx, p, opts, n_threads, ws, &c, res);
    ev.keep_s = fused || stored;
    ev.store = stored ? &store : NULL;
    for (size_t i0 = 0; i0 < total; i0 += c.cap) {
        size_t n = total - i0 < c.cap ? total - i0 : c.cap;
        const float *pre_u, *act_u;
        read_chunk(&ev, &c, i0, n);
        fc_gelu_step(&ev, &c, n, &pre_u, &act_u);
        ev.t.pre_u = pre_u;
        proj_step(&ev, &c, n, act_u);
        compare_step(&ev, &c, i0, n);
        if (opts->other != G2F_EVAL_OTHER_NONE) other_form_step(&ev, &c, i0, n);
        if (ev.n_forms) forms_step(&ev, &c, i0, n, total);
    }
    if (fused && ev.tr.n) {
        tracked_step(&ev, &c, fx, p, ws, opts->tracked_forms, opts->tracked_out);
        res->tracked_done = 1;
    } else if (stored && ev.tr.n) {
        res->tracked_done = tracked_from_store(&ev, &c, fx, p, ws, opts->tracked_forms, opts->tracked_out);
    }
    eval_finish(&ev, res);
    return G2F_OK;
}

/* ---- the FFN of rows in memory ---------------------------------------- */

/* A computation of rows (g2f_ffn_eval_rows): nothing read or compared, the
 * inputs and outputs float32 (no fixture rounding), the rounding flips
 * boxed into the tolerances (one comparison takes them, no flip steps);
 * var 0: the values alone (no sums of squares, no tolerance). */
static void rows_init(eval *ev, const g2f_ffn_how *how, int var, double lambda, int n_threads, g2f_ffn_eval_ws *ws) {
    memset(ev, 0, sizeof *ev);
    ev->how = how, ev->fws = &ws->ffn, ev->n_threads = n_threads;
    ev->d = how->w->n_embd, ev->h = how->w->n_inner;
    ev->user = !var;
    eval_units(ev, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32);
    ev->t = (tail_ctx){how, NULL, var, var, NULL, NULL, ev->d, ev->h, lambda, ev->user, n_threads, 0, &ws->ffn};
}

/* A tolerance of lambda standard deviations as the variance. */
static void tol_to_var(const float *tol, size_t n, double lambda, float *var) {
    for (size_t i = 0; i < n; i++) var[i] = (float)((double)tol[i] * tol[i] / (lambda * lambda));
}

/* A chunk's m rows, from row i0, into the caller's buffers. */
static void rows_out(const chunk *c, size_t i0, size_t m, size_t d, size_t h, double lambda, int var,
                     const g2f_ffn_rows *o) {
    memcpy(o->pre + i0 * h, c->pre, m * h * sizeof(float));
    memcpy(o->act + i0 * h, c->act, m * h * sizeof(float));
    memcpy(o->out + i0 * d, c->out, m * d * sizeof(float));
    if (!var) return;
    tol_to_var(c->tol_pre, m * h, lambda, o->var_pre + i0 * h);
    tol_to_var(c->tol_act, m * h, lambda, o->var_act + i0 * h);
    tol_to_var(c->tol_out, m * d, lambda, o->var_out + i0 * d);
}

g2f_status g2f_ffn_eval_rows(const g2f_ffn_how *how, const float *x, const float *vx, size_t n, double lambda,
                             size_t layer, int n_threads, g2f_ffn_eval_ws *ws, const g2f_ffn_rows *out,
                             g2f_error *err) {
    const size_t d = how->w->n_embd, h = how->w->n_inner;
    if (vx && how->ln)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu: an input variance is c_fc's, not a LayerNorm's input",
                             layer);
    chunk c = {0};
    g2f_status st = chunk_make(&ws->buf, &ws->cap, layer, n, d, h, 0, 0, &c, err);
    if (st != G2F_OK) return st;
    eval ev;
    rows_init(&ev, how, vx != NULL, lambda, n_threads, ws);
    /* no stored rounding: the comparison adds it */
    memset(c.e_out, 0, c.cap * d * sizeof(double));
    memset(c.e_pre, 0, c.cap * h * sizeof(double));
    memset(c.e_act, 0, c.cap * h * sizeof(double));
    for (size_t i0 = 0; i0 < n; i0 += c.cap) {
        size_t m = n - i0 < c.cap ? n - i0 : c.cap;
        const float *pre_u, *act_u;
        memcpy(c.x, x + i0 * d, m * d * sizeof(float));
        ev.vx = vx ? vx + i0 * d : NULL;
        fc_gelu_step(&ev, &c, m, &pre_u, &act_u);
        ev.t.pre_u = pre_u;
        proj_step(&ev, &c, m, act_u);
        rows_out(&c, i0, m, d, h, lambda, vx != NULL, out);
    }
    return G2F_OK;
}
