/* g2f_compare: see g2f_compare.h. */
#include "g2f_compare.h"

#include "g2f_cpu.h"
#include "g2f_tol.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void g2f_cmp_acc_init(g2f_cmp_acc *a, int with_tol) {
    memset(a, 0, sizeof *a);
    a->worst_score = -1;
    a->lambda = G2F_TOL_LAMBDA;
    a->with_tol = with_tol;
}

/* The histogram bin of |err| / tol (g2f_compare.h): the number of bin edges
 * 10^(-6 + 0.5 b), b = 0..24, at or below score (0 for NaN and score <=
 * 0). A binary search's branches follow the scores, which wander over
 * decades: they mispredicted about half the time (the comparisons were 5%
 * of gpt2ffn verify of GPT-2 XL x 64 tokens). Here 2 log10(score) + 13
 * from the float's exponent and mantissa, (m - 1) for log2(m) on [1, 2)
 * (low by at most 0.087, so the guess is the count or one below it; never
 * above: log2(m) >= m - 1 there, and 1e-6 less for the roundings), then
 * one exact comparison with the edge above it: the count, without a branch
 * on the score's size;
 * test_compare_edges checks it against the search. */
int g2f_cmp_hist_bin(double score) {
    static const double edge[G2F_HIST_BINS - 1] = {
        1e-06, 3.162277660168379e-06, 1e-05, 3.1622776601683795e-05, 0.0001, 0.000316227766016838, 0.001, 0.0031622776601683794, 0.01, 0.0316227766016838, 0.1, 0.316227766016838, 1.0, 3.1622776601683795, 10.0, 31.622776601683796, 100.0, 316.22776601683796, 1000.0, 3162.2776601683795, 10000.0, 31622.776601683796, 100000.0, 316227.76601683797, 1000000.0};
    if (!(score > 0)) return 0;
    if (score >= edge[G2F_HIST_BINS - 2]) return G2F_HIST_BINS - 1; /* every edge (infinity too) */
    uint64_t bits, mb;
    memcpy(&bits, &score, sizeof bits);
    int e = (int)(bits >> 52) - 1023; /* subnormals: -1023, far below the first edge anyway */
    mb = (bits & 0xfffffffffffffULL) | 0x3ff0000000000000ULL;
    double m;
    memcpy(&m, &mb, sizeof m);
    /* 2 log10(2); less 1e-6 so that the roundings never lift the guess
     * over the count (just below 1, 13 - 1e-16 rounded to 13) */
    double guess = ((double)e + (m - 1.0)) * 0.6020599913279624 + (13.0 - 1e-6);
    int n = guess < 0 ? 0 : (int)guess; /* below 25: score < 1e6 */
    return n + (edge[n] <= score);
}

/* The distance of an error d >= 0 to what the flips can make: 0, f1, f2,
 * f1 + f2, |f1 - f2|. */
static double off_flips(double d, double f1, double f2) {
    double m = d, c[4] = {f1, f2, f1 + f2, fabs(f1 - f2)};
    for (int k = 0; k < 4; k++)
        if (c[k] > 0 && fabs(d - c[k]) < m) m = fabs(d - c[k]);
    return m;
}

static void add_seq(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol, const float *f1,
                    const float *f2, size_t n, size_t index0) {
    g2f_cmp *o = &a->c;
    o->total += n;
    const double il2 = 1.0 / (a->lambda * a->lambda); /* tol^2 / lambda^2: the deviation squared, for trend */
    for (size_t i = 0; i < n; i++) {
        double e = expected[i], c = computed[i];
        if (!isfinite(e) || !isfinite(c)) {
            if (tol) o->hist[G2F_HIST_BINS - 1]++;
            if (o->nonfinite++ == 0) {
                o->first_nonfinite = index0 + i;
                o->nonfinite_in_expected = !isfinite(e);
            }
            o->mismatched++;
            continue;
        }
        double diff = fabs(c - e);
        double rel = diff / (fabs(e) > 0 ? fabs(e) : 1.0);
        if (diff > o->max_abs) o->max_abs = diff;
        if (fabs(e) > 0 && rel > o->max_rel) o->max_rel = rel;
        a->dot += e * c;
        a->ee += e * e;
        a->cc += c * c;
        a->noise += (c - e) * (c - e);
        double score = diff, off = f1 || f2 ? off_flips(diff, f1 ? f1[i] : 0, f2 ? f2[i] : 0) : diff;
        if (tol) {
            double t = tol[i];
            if (!isfinite(t)) { /* the tolerance overflowed (values near float's range): never a pass */
                o->mismatched++;
                if (o->nonfinite++ == 0)
                    o->first_nonfinite = index0 + i, o->nonfinite_in_expected = 0, o->nonfinite_in_tol = 1;
                score = INFINITY;
            } else {
                score = t > 0 ? off / t : (off > 0 ? INFINITY : 0.0);
                if (off > t) o->mismatched++;
                double s2 = t * t * il2 + (f1 ? (double)f1[i] * f1[i] : 0) +
                            (f2 ? (double)f2[i] * f2[i] : 0);
                if (s2 > 0) {
                    double w = c / s2; /* one division per element: this loop is on every comparison */
                    a->tdc += (c - e) * w, a->tcc += c * w;
                }
            }
            o->hist[g2f_cmp_hist_bin(score)]++;
        }
        if (score > a->worst_score) {
            a->worst_score = score;
            o->worst = index0 + i;
            o->worst_expected = e;
            o->worst_computed = c;
            o->worst_tol = tol ? tol[i] : 0;
        }
    }
}

void g2f_cmp_acc_merge(g2f_cmp_acc *a, const g2f_cmp_acc *b) {
    g2f_cmp *o = &a->c;
    const g2f_cmp *p = &b->c;
    if (p->nonfinite && !o->nonfinite) {
        o->first_nonfinite = p->first_nonfinite;
        o->nonfinite_in_expected = p->nonfinite_in_expected;
        o->nonfinite_in_tol = p->nonfinite_in_tol;
    }
    o->total += p->total;
    o->mismatched += p->mismatched;
    o->nonfinite += p->nonfinite;
    if (p->max_abs > o->max_abs) o->max_abs = p->max_abs;
    if (p->max_rel > o->max_rel) o->max_rel = p->max_rel;
    for (int k = 0; k < G2F_HIST_BINS; k++) o->hist[k] += p->hist[k];
    a->dot += b->dot;
    a->ee += b->ee;
    a->cc += b->cc;
    a->noise += b->noise;
    a->tdc += b->tdc;
    a->tcc += b->tcc;
    if (b->worst_score > a->worst_score) { /* strictly: the earlier element wins a tie, as in one pass */
        a->worst_score = b->worst_score;
        o->worst = p->worst;
        o->worst_expected = p->worst_expected;
        o->worst_computed = p->worst_computed;
        o->worst_tol = p->worst_tol;
    }
}

void g2f_cmp_acc_add(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol, size_t n,
                     size_t index0, int n_threads) {
    g2f_cmp_acc_add_flips(a, expected, computed, tol, NULL, NULL, n, index0, n_threads);
}

void g2f_cmp_acc_add_flips(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol,
                           const float *f1, const float *f2, size_t n, size_t index0, int n_threads) {
#define AT(p, i0) ((p) ? (p) + (i0) : NULL)
    if (n <= G2F_CMP_BLOCK) {
        g2f_cmp_acc part;
        g2f_cmp_acc_init(&part, a->with_tol);
        part.lambda = a->lambda;
        add_seq(&part, expected, computed, tol, f1, f2, n, index0);
        g2f_cmp_acc_merge(a, &part);
        return;
    }
    size_t blocks = (n + G2F_CMP_BLOCK - 1) / G2F_CMP_BLOCK;
    g2f_cmp_acc *parts = malloc(blocks * sizeof *parts);
    if (!parts) { /* no room for the partial results: one block at a time, the same bits */
        for (size_t b = 0; b < blocks; b++) {
            size_t i0 = b * G2F_CMP_BLOCK, m = n - i0 < G2F_CMP_BLOCK ? n - i0 : G2F_CMP_BLOCK;
            g2f_cmp_acc part;
            g2f_cmp_acc_init(&part, a->with_tol);
            part.lambda = a->lambda;
            add_seq(&part, expected + i0, computed + i0, AT(tol, i0), AT(f1, i0), AT(f2, i0), m, index0 + i0);
            g2f_cmp_acc_merge(a, &part);
        }
        return;
    }
    long nb = (long)blocks;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long b = 0; b < nb; b++) {
        size_t i0 = (size_t)b * G2F_CMP_BLOCK, m = n - i0 < G2F_CMP_BLOCK ? n - i0 : G2F_CMP_BLOCK;
        g2f_cmp_acc_init(&parts[b], a->with_tol);
        parts[b].lambda = a->lambda;
        add_seq(&parts[b], expected + i0, computed + i0, AT(tol, i0), AT(f1, i0), AT(f2, i0), m, index0 + i0);
    }
    for (size_t b = 0; b < blocks; b++) g2f_cmp_acc_merge(a, &parts[b]);
    free(parts);
#undef AT
}

void g2f_cmp_acc_add_rows(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol,
                          const float *f1, const float *f2, size_t rows, size_t width, const size_t *row_index,
                          int n_threads) {
#define AT(p, i0) ((p) ? (p) + (i0) : NULL)
    size_t per = width <= G2F_CMP_BLOCK ? 1 : (width + G2F_CMP_BLOCK - 1) / G2F_CMP_BLOCK, count = rows * per;
    g2f_cmp_acc *parts = width && count / per == rows ? malloc(count * sizeof *parts) : NULL;
    if (!parts) { /* no room for the parts (or nothing to compare): row by row, the same bits */
        for (size_t r = 0; r < rows && width; r++)
            g2f_cmp_acc_add_flips(a, expected + r * width, computed + r * width, AT(tol, r * width),
                                  AT(f1, r * width), AT(f2, r * width), width, row_index[r] * width, n_threads);
        return;
    }
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long t = 0; t < (long)count; t++) {
        size_t r = (size_t)t / per, i0 = (size_t)t % per * G2F_CMP_BLOCK, o = r * width + i0;
        size_t m = width - i0 < G2F_CMP_BLOCK ? width - i0 : G2F_CMP_BLOCK;
        g2f_cmp_acc_init(&parts[t], a->with_tol);
        parts[t].lambda = a->lambda;
        add_seq(&parts[t], expected + o, computed + o, AT(tol, o), AT(f1, o), AT(f2, o), m, row_index[r] * width + i0);
    }
    for (size_t t = 0; t < count; t++) g2f_cmp_acc_merge(a, &parts[t]);
    free(parts);
#undef AT
}

void g2f_cmp_acc_finish(const g2f_cmp_acc *a, g2f_cmp *o) {
    *o = a->c;
    o->margin = a->with_tol ? (a->worst_score < 0 ? 0 : a->worst_score) : 0;
    if (a->with_tol && o->nonfinite) o->margin = INFINITY; /* a NaN or Inf is the worst there is, never a margin below 1 */
    o->cosine = a->ee > 0 && a->cc > 0 ? a->dot / sqrt(a->ee * a->cc) : (a->ee == a->cc ? 1.0 : 0.0);
    o->sqnr_db = a->noise > 0 ? 10.0 * log10(a->ee / a->noise) : INFINITY;
    o->trend = a->tcc > 0 ? a->tdc / sqrt(a->tcc) : 0;
}

void g2f_compare(const double *expected, const float *computed, const float *tol, size_t n, g2f_cmp *o) {
    g2f_cmp_acc a;
    g2f_cmp_acc_init(&a, tol != NULL);
    add_seq(&a, expected, computed, tol, NULL, NULL, n, 0);
    g2f_cmp_acc_finish(&a, o);
}

double g2f_separation(const float *a, const float *b, const float *tol, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - b[i]);
        if (!(diff == diff)) continue; /* NaN: reported by the comparison itself */
        double s = tol[i] > 0 ? diff / tol[i] : (diff > 0 ? INFINITY : 0);
        if (s > m) m = s;
    }
    return m;
}
