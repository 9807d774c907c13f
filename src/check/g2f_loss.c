/* g2f_loss: cross-entropy in double with its bound; the derivation is in
 * the header. One row at a time, in the order given. */
#include "g2f_loss.h"

#include <math.h>
#include <string.h>

#define U32 0x1p-24 /* float32 unit roundoff */

void g2f_loss_init(g2f_loss_acc *a, size_t vocab, double lambda) {
    memset(a, 0, sizeof *a);
    a->vocab = vocab;
    a->lambda = lambda;
}

/* ceil(log2 n) for n >= 1: a tree's levels. */
static double levels(size_t n) {
    double k = 0;
    for (size_t w = 1; w < n; w *= 2) k++;
    return k;
}

/* Part 2 of one row (header): its deterministic error bound and the
 * variance of its random one; m the row's max, s its sum, l its loss. */
static void row_rounding(g2f_loss_acc *a, const float *z, double m, double s, double amax, size_t y, double l) {
    const size_t V = a->vocab;
    const double g = exp(2 * amax) * (1 + 4 * U32), logv = log((double)V);
    double elem = 0, lost = 0, big = 0, P = 0;
    for (size_t j = 0; j < V; j++) {
        const double t = exp((double)z[j] - m), d = m - (double)z[j] + 2 * amax;
        elem += t / s * (U32 * d + 2 * U32);
        P += t;
        if (t < 4 * U32 * P) lost += t < U32 * P ? t : U32 * P;
        else big += P * P;
    }
    const double eps = g * (elem + lost / s + U32 * levels(V)), dy = m - (double)z[y] + 2 * amax;
    const double det = eps < 1 ? -log1p(-eps) + 2 * U32 * (logv + eps) +
                                     U32 * (dy + fabs(m) + amax + logv + eps) + U32 * (l + eps)
                               : INFINITY;
    a->sum_det += det;
    a->sum_var += U32 * U32 * g * g * big / (s * s);
}

/* One row: adds l_i and its parts to a; 0 when a value is not finite. */
static int add_row(g2f_loss_acc *a, const float *z, const double *tol, size_t y) {
    const size_t V = a->vocab;
    double m = z[0], mn = z[0], amax = 0, s = 0;
    for (size_t j = 0; j < V; j++) {
        if (!isfinite(z[j]) || (tol && !(tol[j] >= 0 && isfinite(tol[j])))) return 0;
        m = z[j] > m ? z[j] : m;
        mn = z[j] < mn ? z[j] : mn;
        if (tol && tol[j] > amax) amax = tol[j];
    }
    for (size_t j = 0; j < V; j++) s += exp((double)z[j] - m);
    const double logs = log(s), l = m + logs - (double)z[y];
    double first = 0, second = 0;
    for (size_t j = 0; tol && j < V; j++) { /* part 1 */
        const double p = exp((double)z[j] - m) / s;
        first += fabs(p - (j == y)) * tol[j];
        second += 0.5 * p * tol[j] * tol[j] * exp(tol[j]);
    }
    row_rounding(a, z, m, s, amax, y, l);
    a->sum_loss += l; /* the mean's sum in row order: lost rows, or random roundings */
    if (l < 4 * U32 * a->sum_loss) a->rows_lost += l < U32 * a->sum_loss ? l : U32 * a->sum_loss;
    else a->rows_var += a->sum_loss * a->sum_loss;
    a->sum_tol += first + second;
    if (fabs(m) + (m - mn) > a->max_scale) a->max_scale = fabs(m) + (m - mn);
    return 1;
}

g2f_status g2f_loss_add(g2f_loss_acc *a, const float *z, const double *tol, const int64_t *targets, size_t n,
                        g2f_error *err) {
    if (a->vocab == 0) return g2f_error_set(err, G2F_ERR_USAGE, "loss: a vocabulary of 0 logits");
    for (size_t i = 0; i < n; i++)
        if (targets[i] < 0 || (uint64_t)targets[i] >= a->vocab)
            return g2f_error_set(err, G2F_ERR_FORMAT, "loss: target %lld of row %zu is outside the vocabulary 0..%zu",
                                 (long long)targets[i], a->rows + i, a->vocab - 1);
    for (size_t i = 0; i < n; i++)
        if (!add_row(a, z + i * a->vocab, tol ? tol + i * a->vocab : NULL, (size_t)targets[i])) a->nonfinite = 1;
    a->rows += n;
    return G2F_OK;
}

void g2f_loss_finish(const g2f_loss_acc *a, g2f_loss_result *out) {
    memset(out, 0, sizeof *out);
    out->rows = a->rows;
    if (a->rows == 0 || a->nonfinite) {
        out->loss = out->bound = out->bound_logits = out->bound_round = out->bound_own = NAN;
        return;
    }
    const double N = (double)a->rows, L = a->sum_loss / N;
    out->loss = L;
    out->bound_logits = a->sum_tol / N;
    /* part 2: the rows', the float32 sum's (lost rows, a tree's levels, random roundings), the division */
    out->bound_round = (a->sum_det + a->rows_lost + U32 * a->sum_loss * levels(a->rows) +
                        a->lambda * sqrt(a->sum_var + U32 * U32 * a->rows_var)) / N +
                       U32 * L;
    out->bound_own = ((double)a->vocab + N + 8) * 0x1p-52 * (1 + a->max_scale + log((double)a->vocab) + fabs(L));
    out->bound = out->bound_logits + out->bound_round + out->bound_own;
}

int g2f_loss_matches(const g2f_loss_result *r, double reference) {
    return isfinite(reference) && isfinite(r->loss) && isfinite(r->bound) && fabs(reference - r->loss) <= r->bound;
}

double g2f_loss_margin(const g2f_loss_result *r, double reference) {
    const double d = fabs(reference - r->loss);
    if (!isfinite(reference) || !isfinite(r->loss) || !isfinite(r->bound)) return NAN;
    return d == 0 ? 0 : d / r->bound;
}
