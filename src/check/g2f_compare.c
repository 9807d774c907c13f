/* g2f_compare: see g2f_compare.h. */
#include "g2f_compare.h"

#include <math.h>
#include <string.h>

void g2f_compare(const double *expected, const float *computed, const float *tol, size_t n, g2f_cmp *o) {
    memset(o, 0, sizeof *o);
    o->total = n;
    double dot = 0, ee = 0, cc = 0, noise = 0;
    double worst_score = -1;
    for (size_t i = 0; i < n; i++) {
        double e = expected[i], c = computed[i];
        if (!isfinite(e) || !isfinite(c)) {
            if (tol) o->hist[G2F_HIST_BINS - 1]++;
            if (o->nonfinite++ == 0) {
                o->first_nonfinite = i;
                o->nonfinite_in_expected = !isfinite(e);
            }
            o->mismatched++;
            continue;
        }
        double diff = fabs(c - e);
        double rel = diff / (fabs(e) > 0 ? fabs(e) : 1.0);
        if (diff > o->max_abs) o->max_abs = diff;
        if (fabs(e) > 0 && rel > o->max_rel) o->max_rel = rel;
        dot += e * c;
        ee += e * e;
        cc += c * c;
        noise += (c - e) * (c - e);
        double score = diff;
        if (tol) {
            double t = tol[i];
            if (!isfinite(t)) {
                o->mismatched++;
                score = INFINITY;
            } else {
                score = t > 0 ? diff / t : (diff > 0 ? INFINITY : 0.0);
                if (diff > t) o->mismatched++;
            }
        }
        if (tol) {
            int bin = 0;
            if (score > 0) {
                double b = floor((log10(score) - G2F_HIST_LO) / G2F_HIST_STEP) + 1;
                bin = b < 0 ? 0 : b > G2F_HIST_BINS - 1 ? G2F_HIST_BINS - 1 : (int)b;
            }
            o->hist[bin]++;
        }
        if (score > worst_score) {
            worst_score = score;
            o->worst = i;
            o->worst_expected = e;
            o->worst_computed = c;
            o->worst_tol = tol ? tol[i] : 0;
        }
    }
    o->margin = tol ? (worst_score < 0 ? 0 : worst_score) : 0;
    o->cosine = ee > 0 && cc > 0 ? dot / sqrt(ee * cc) : (ee == cc ? 1.0 : 0.0);
    o->sqnr_db = noise > 0 ? 10.0 * log10(ee / noise) : INFINITY;
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
