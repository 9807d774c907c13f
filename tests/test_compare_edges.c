/* g2f_compare at its edges, the rules a reader of the reports relies on
 * and which an off-by-one would move without changing a clean run:
 * a score exactly on a histogram edge goes to the bin above it (bin k holds
 * [10^(-6 + (k-1)/2), 10^(-6 + k/2))); an error equal to its tolerance is
 * not a mismatch, one above it is; a zero reference against a nonzero
 * computation has cosine 0 (two zeros, 1). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "g2f_compare.h"

static g2f_cmp compare1(double expected, float computed, float tol) {
    g2f_cmp c;
    g2f_compare(&expected, &computed, &tol, 1, &c);
    return c;
}

static void hist_should_put_a_score_on_an_edge_in_the_bin_above(void) {
    /* scores 1, 10, 100 are exact (integer ratios): bins 13, 15, 17 */
    CHECK(compare1(0.0, 1.0f, 1.0f).hist[13] == 1);
    CHECK(compare1(0.0, 10.0f, 1.0f).hist[15] == 1);
    CHECK(compare1(0.0, 100.0f, 1.0f).hist[17] == 1);
    CHECK(compare1(0.0, 1e6f, 1.0f).hist[25] == 1); /* 10^6: the last bin */
    CHECK(compare1(0.0, 0.0f, 1.0f).hist[0] == 1);  /* exact: bin 0 */
    CHECK(compare1(0.0, 1.5f, 1.0f).hist[13] == 1); /* inside [1, 10^0.5) */
}

static void mismatch_should_count_errors_above_their_tolerance_only(void) {
    CHECK(compare1(0.0, 1.0f, 1.0f).mismatched == 0);
    CHECK(compare1(0.0, 1.25f, 1.0f).mismatched == 1);
    CHECK(compare1(2.0, 3.5f, 1.0f).mismatched == 1);
    g2f_cmp c = compare1(2.0, 3.5f, 1.0f);
    CHECK(c.max_abs == 1.5 && c.margin == 1.5);
}

static void cosine_should_be_0_for_a_zero_reference_against_nonzero_values(void) {
    double e[3] = {0, 0, 0};
    float c[3] = {0.5f, -1, 2}, z[3] = {0, 0, 0}, t[3] = {1, 1, 1};
    g2f_cmp r;
    g2f_compare(e, c, t, 3, &r);
    CHECK(r.cosine == 0.0);
    g2f_compare(e, z, t, 3, &r);
    CHECK(r.cosine == 1.0);
    double e2[3] = {1, 2, 3};
    g2f_compare(e2, z, t, 3, &r);
    CHECK(r.cosine == 0.0);
}

/* The count of edges at or below s by the plain search (what
 * g2f_cmp_hist_bin computed before it guessed from the exponent). */
static int bin_by_search(double s) {
    static const double edge[G2F_HIST_BINS - 1] = {
        1e-06, 3.162277660168379e-06, 1e-05, 3.1622776601683795e-05, 0.0001, 0.000316227766016838, 0.001,
        0.0031622776601683794, 0.01, 0.0316227766016838, 0.1, 0.316227766016838, 1.0, 3.1622776601683795, 10.0,
        31.622776601683796, 100.0, 316.22776601683796, 1000.0, 3162.2776601683795, 10000.0, 31622.776601683796,
        100000.0, 316227.76601683797, 1000000.0};
    int n = 0;
    for (int k = 0; k < G2F_HIST_BINS - 1; k++) n += edge[k] <= s;
    return n;
}

/* Every edge and its 4096 neighbours either side, every power of two and
 * its neighbours, 2^22 scores spread over 10^-320 .. 10^310 and the
 * specials: the bin is the search's. */
static void hist_bin_should_count_the_edges_below_exactly(void) {
    size_t bad = 0, n = 0;
    for (int b = 0; b < G2F_HIST_BINS - 1; b++) {
        double lo = pow(10.0, -6 + 0.5 * b), hi = lo; /* within an ulp or two of the table's double */
        for (int k = 0; k < 4096; k++, n += 2) {
            bad += g2f_cmp_hist_bin(lo) != bin_by_search(lo) || g2f_cmp_hist_bin(hi) != bin_by_search(hi);
            lo = nextafter(lo, 0), hi = nextafter(hi, INFINITY);
        }
    }
    for (int p2 = -1074; p2 <= 1023; p2++) {
        double s = ldexp(1.0, p2), below = nextafter(s, 0), above = nextafter(s, INFINITY);
        bad += g2f_cmp_hist_bin(s) != bin_by_search(s) || g2f_cmp_hist_bin(below) != bin_by_search(below) ||
               g2f_cmp_hist_bin(above) != bin_by_search(above);
        n += 3;
    }
    uint64_t st = 99;
    for (int k = 0; k < (1 << 22); k++, n++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        double s = pow(10.0, -320.0 + 630.0 * (double)(st >> 11) / 9007199254740992.0);
        bad += g2f_cmp_hist_bin(s) != bin_by_search(s);
    }
    const double special[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY, 4.9e-324, DBL_MAX};
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++, n++)
        bad += g2f_cmp_hist_bin(special[k]) != bin_by_search(special[k]);
    fprintf(stderr, "  %zu scores, %zu binned differently from the search\n", n, bad);
    CHECK(bad == 0);
    CHECK(g2f_cmp_hist_bin(INFINITY) == G2F_HIST_BINS - 1 && g2f_cmp_hist_bin(NAN) == 0);
}

int main(void) {
    RUN(hist_should_put_a_score_on_an_edge_in_the_bin_above);
    RUN(hist_bin_should_count_the_edges_below_exactly);
    RUN(mismatch_should_count_errors_above_their_tolerance_only);
    RUN(cosine_should_be_0_for_a_zero_reference_against_nonzero_values);
    CHECK_EXIT();
}
