/* g2f_loss_stage: see g2f_loss_stage.h. */
#include "g2f_loss_stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_tol.h"

/* Rows of logits read at a time for the isolated check (about 1 Mi floats). */
static size_t chunk_rows(size_t V) { return V < ((size_t)1 << 20) ? ((size_t)1 << 20) / V : 1; }

/* targets: token ids of input_ids' shape; loss: one float. */
static g2f_status check_tensors(const g2f_fixture *f, const g2f_tensor *ids, const g2f_tensor *tg,
                                const g2f_tensor *ls, g2f_error *err) {
    char a[128], b[128];
    g2f_shape_format(tg, a, sizeof a);
    g2f_shape_format(ids, b, sizeof b);
    if (tg->dtype != G2F_DTYPE_I32 && tg->dtype != G2F_DTYPE_I64)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor 'targets': dtype %s, expected I32 or I64 token ids",
                             g2f_fixture_path(f), g2f_tensor_type_name(tg));
    int same = tg->ndim == ids->ndim;
    for (size_t i = 0; same && i < tg->ndim; i++) same = tg->shape[i] == ids->shape[i];
    if (!same)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor 'targets': shape %s, but input_ids' is %s",
                             g2f_fixture_path(f), a, b);
    g2f_shape_format(ls, a, sizeof a);
    if (!g2f_dtype_is_float(ls->dtype) || ls->numel != 1)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor 'loss': %s %s, expected one float (the mean loss)",
                             g2f_fixture_path(f), g2f_tensor_type_name(ls), a);
    return G2F_OK;
}

/* The targets widened, each checked against the vocabulary; *out owned. */
static g2f_status read_targets(const g2f_fixture *f, const g2f_tensor *tg, size_t N, size_t T, size_t V,
                               int64_t **out, g2f_error *err) {
    char what[300];
    snprintf(what, sizeof what, "%s: targets", g2f_fixture_path(f));
    int64_t *t = g2f_alloc_work(N, 1, sizeof *t, what, err);
    if (!t) return err ? err->status : G2F_ERR_NOMEM;
    g2f_fixture_read_ids(tg, 0, N, t);
    for (size_t i = 0; i < N; i++)
        if (t[i] < 0 || (uint64_t)t[i] >= V) {
            long long bad = (long long)t[i];
            free(t);
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: targets: token id %lld at position %zu (sequence %zu, token %zu) is outside the "
                                 "vocabulary 0..%zu", g2f_fixture_path(f), bad, i, i / T, i % T, V - 1);
        }
    *out = t;
    return G2F_OK;
}

static void side_finish(const g2f_loss_acc *acc, double reference, g2f_loss_side *s) {
    g2f_loss_finish(acc, &s->r);
    s->checked = 1;
    s->margin = g2f_loss_margin(&s->r, reference);
    s->pass = g2f_loss_matches(&s->r, reference);
}

/* The reference's own logits against the targets. */
static g2f_status isolated(const g2f_tensor *z, const int64_t *tg, size_t N, size_t V, double lambda,
                           double reference, g2f_loss_side *s, g2f_error *err) {
    size_t R = chunk_rows(V);
    float *buf = g2f_alloc_work(R, V, sizeof *buf, "the loss: a chunk of logits", err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    g2f_loss_acc acc;
    g2f_loss_init(&acc, V, lambda);
    g2f_status st = G2F_OK;
    for (size_t r0 = 0; r0 < N && st == G2F_OK; r0 += R) {
        size_t n = N - r0 < R ? N - r0 : R;
        g2f_tensor_read_f32(z, (uint64_t)r0 * V, (uint64_t)n * V, buf);
        st = g2f_loss_add(&acc, buf, NULL, tg + r0, n, err);
    }
    free(buf);
    if (st == G2F_OK) side_finish(&acc, reference, s);
    return st;
}

/* The chained side: our logits, a chunk at a time from the forward. */
typedef struct chained_ctx {
    const g2f_tensor *ref;  /* the recorded logits (for their stored dtype's rounding), or NULL */
    const int64_t *targets;
    size_t V;
    double lambda;
    g2f_loss_acc acc;
    double *tol, *zref;     /* cap rows of V */
    size_t cap;
} chained_ctx;

static g2f_status on_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    chained_ctx *c = u;
    if (n > c->cap) {
        free(c->tol);
        c->tol = g2f_alloc_work(2 * n, c->V, sizeof *c->tol, "the loss: a chunk's tolerances", err);
        if (!c->tol) return err ? err->status : G2F_ERR_NOMEM;
        c->zref = c->tol + n * c->V;
        c->cap = n;
    }
    size_t cnt = n * c->V;
    double us = c->ref ? g2f_dtype_store_roundoff(c->ref->dtype) : 0;
    double fl = c->ref ? g2f_dtype_store_floor(c->ref->dtype) : 0;
    if (us > 0) g2f_tensor_read_f64(c->ref, (uint64_t)row0 * c->V, cnt, c->zref);
    for (size_t i = 0; i < cnt; i++) /* as the logits stage's tolerance */
        c->tol[i] = (vz ? c->lambda * sqrt((double)vz[i]) : 0.0) + (us > 0 ? us * fabs(c->zref[i]) + fl : 0.0);
    return g2f_loss_add(&c->acc, z, c->tol, c->targets + row0, n, err);
}

static g2f_status chained(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p, const g2f_embed *e,
                          const int64_t *ids, const int64_t *tg, size_t n_seq, size_t T, double lambda,
                          double reference, g2f_loss_side *s, g2f_error *err) {
    chained_ctx c = {g2f_fixture_act(f, 0, G2F_ACT_LOGITS), tg, e->vocab, lambda, {0}, NULL, NULL, 0};
    g2f_loss_init(&c.acc, e->vocab, lambda);
    g2f_forward_hooks hk = {&c, NULL, NULL, NULL, NULL, on_logits};
    g2f_status st = g2f_forward_run(m, e, ids, n_seq, T, p, NULL, f, &hk, NULL, err);
    free(c.tol);
    if (st == G2F_OK) side_finish(&c.acc, reference, s);
    return st;
}

/* Both sides, once the tensors are known to be there and well-formed. */
static g2f_status check_sides(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p,
                              const g2f_tensor *tids, const g2f_tensor *tg, g2f_loss_stage *out, g2f_error *err) {
    g2f_embed e;
    size_t n_seq, T;
    int64_t *ids = NULL, *targets = NULL;
    double lambda = p->tol && p->tol->lambda > 0 ? p->tol->lambda : G2F_TOL_LAMBDA;
    g2f_status st = g2f_model_embed_load(m, &e, err);
    if (st != G2F_OK) return st;
    st = g2f_fixture_check_model(f, e.d, e.vocab, e.wpe ? e.n_pos : 0, &n_seq, &T, err);
    size_t N = n_seq * T;
    if (st == G2F_OK) st = read_targets(f, tg, N, T, e.vocab, &targets, err);
    if (st == G2F_OK && !(ids = g2f_alloc_work(N, 1, sizeof *ids, "the loss: input_ids", err)))
        st = err ? err->status : G2F_ERR_NOMEM;
    if (st == G2F_OK) {
        g2f_fixture_read_ids(tids, 0, N, ids);
        out->rows = N;
        const g2f_tensor *z = g2f_fixture_act(f, 0, G2F_ACT_LOGITS);
        if (z) st = isolated(z, targets, N, e.vocab, lambda, out->reference, &out->isolated, err);
    }
    if (st == G2F_OK)
        st = chained(m, f, p, &e, ids, targets, n_seq, T, lambda, out->reference, &out->chained, err);
    free(ids);
    free(targets);
    g2f_embed_free(&e);
    return st;
}

g2f_status g2f_loss_stage_check(const g2f_model *m, const g2f_fixture *f, const g2f_forward_params *p,
                                g2f_loss_stage *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    const g2f_tensor *tg = g2f_fixture_named(f, "targets"), *ls = g2f_fixture_named(f, "loss");
    const g2f_tensor *tids = g2f_fixture_act(f, 0, G2F_ACT_IDS);
    const char *grads = g2f_fixture_meta(f, "gradient_floats");
    if (grads) out->gradients = strtoull(grads, NULL, 10);
    if (!tg && !ls) return G2F_OK;
    out->present = 1;
    if (!tg || !ls) {
        out->why = tg ? "the fixture records 'targets' but no 'loss'" : "the fixture records 'loss' but no 'targets'";
        return G2F_OK;
    }
    if (!tids) {
        out->why = "the fixture records no input_ids to compute the logits from";
        return G2F_OK;
    }
    if (!g2f_model_get_info(m)->has_wte) {
        out->why = "the checkpoint holds no token embedding (wte)";
        return G2F_OK;
    }
    g2f_status st = check_tensors(f, tids, tg, ls, err);
    if (st != G2F_OK) return st;
    g2f_tensor_read_f64(ls, 0, 1, &out->reference);
    if ((st = check_sides(m, f, p, tids, tg, out, err)) != G2F_OK) return st;
    out->checked = out->isolated.checked || out->chained.checked;
    out->pass = out->checked && (!out->isolated.checked || out->isolated.pass) &&
                (!out->chained.checked || out->chained.pass);
    return G2F_OK;
}
