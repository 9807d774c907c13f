/* g2f_compare: the one comparison routine: non-finite scan, per-element
 * tolerance, error statistics and the worst element.
 *
 * An element passes when both values are finite, the tolerance is finite and
 * |computed - expected| <= tol. NaN or Inf anywhere is a failure, never a
 * pass. margin = max |computed - expected| / tol over finite elements (a
 * pass has margin <= 1; how close it came is visible).
 */
#ifndef G2F_COMPARE_H
#define G2F_COMPARE_H

#include <stddef.h>

/* Histogram of log10(|err| / tol): bin 0 holds everything below 10^-6
 * (including exact matches), bins 1..24 half-decades from 10^-6 to 10^6,
 * bin 25 everything above (and non-finite). */
#define G2F_HIST_BINS 26
#define G2F_HIST_LO (-6.0)
#define G2F_HIST_STEP 0.5

/* The bin of a score |err| / tol: how many of the edges 10^(-6 + 0.5 b),
 * b = 0..24, lie at or below it (0 for NaN and score <= 0). */
int g2f_cmp_hist_bin(double score);

typedef struct g2f_cmp {
    size_t total, mismatched;
    size_t nonfinite;             /* elements with NaN/Inf on either side, or a non-finite tolerance */
    size_t first_nonfinite;       /* flat index, valid when nonfinite > 0 */
    int nonfinite_in_expected;    /* of the first non-finite element */
    int nonfinite_in_tol;         /* ... its tolerance (overflowed; values and computation finite) */
    double max_abs, max_rel, margin;
    size_t worst;                 /* flat index of the largest err/tol */
    double worst_expected, worst_computed, worst_tol;
    double cosine, sqnr_db;       /* of computed against expected */
    /* With a tolerance: the error's component along the computed values, in standard deviations,
     * sum (c - e) c / s^2 / sqrt(sum c^2 / s^2), s^2 = (tol / lambda)^2 plus each flip's step
     * squared (the deviation each element's tolerance stands for, at least): what a wrong scale
     * leaves behind, which rounding noise of either sign does not (a few deviations at most). */
    double trend;
    size_t hist[G2F_HIST_BINS];   /* with a tolerance only */
} g2f_cmp;

/* Compares n elements. tol may be NULL for statistics only (nothing then
 * counts as mismatched except non-finite values). */
void g2f_compare(const double *expected, const float *computed, const float *tol, size_t n, g2f_cmp *out);

/* The same comparison over data that arrives in pieces (chunks of tokens):
 * init, add the pieces in order, finish. The result equals g2f_compare over
 * the concatenation, except that the sums behind cosine and sqnr are added
 * per block of G2F_CMP_BLOCK elements and the blocks then in order (so the
 * last bits of those two can differ; every count, maximum and the worst
 * element are the same). */
#define G2F_CMP_BLOCK 16384
typedef struct g2f_cmp_acc {
    g2f_cmp c;                   /* counts, maxima, worst, histogram so far */
    double dot, ee, cc, noise;   /* sums for cosine and sqnr */
    double worst_score;          /* -1 before the first finite element */
    double tdc, tcc;             /* sums for trend */
    double lambda;               /* the deviations a tolerance stands for: G2F_TOL_LAMBDA unless set after init */
    int with_tol;
} g2f_cmp_acc;
void g2f_cmp_acc_init(g2f_cmp_acc *a, int with_tol);
/* Adds n elements at flat indices index0 .. index0 + n - 1 (tol NULL iff the
 * accumulator was made without tolerances). OpenMP over fixed blocks of
 * G2F_CMP_BLOCK elements merged in order: the same bits for any thread count. */
void g2f_cmp_acc_add(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol, size_t n,
                     size_t index0, int n_threads);
/* The same with rounding flips (a hypothesis that rounds between stages,
 * g2f_tol.h): two computations of a value within its float32 tolerance
 * round to the same value or, when a rounding boundary lies between them,
 * to neighbours one step apart. flip1 / flip2 (each may be NULL) hold per
 * element the steps such flips can make (0: none possible); the error of
 * an element is its distance to the nearest of 0, f1, f2, f1 + f2 and
 * |f1 - f2|, so a flip counts as what it is, not as an error at the edge of
 * a widened tolerance, and an error no flip can make still fails. */
void g2f_cmp_acc_add_flips(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol,
                           const float *flip1, const float *flip2, size_t n, size_t index0, int n_threads);

/* Rows of a list: row r (width elements at r * width of each array) with
 * flat indices from row_index[r] * width, bitwise as one
 * g2f_cmp_acc_add_flips per row in order; the rows' blocks are summed in
 * parallel, then merged in that order. */
void g2f_cmp_acc_add_rows(g2f_cmp_acc *a, const double *expected, const float *computed, const float *tol,
                          const float *f1, const float *f2, size_t rows, size_t width, const size_t *row_index,
                          int n_threads);
/* Appends b, whose elements come after a's. */
void g2f_cmp_acc_merge(g2f_cmp_acc *a, const g2f_cmp_acc *b);
void g2f_cmp_acc_finish(const g2f_cmp_acc *a, g2f_cmp *out);

/* max_i |a_i - b_i| / tol_i: how far apart two computations are in units of
 * the tolerance (used to tell whether the GELU forms are distinguishable). */
double g2f_separation(const float *a, const float *b, const float *tol, size_t n);

#endif
