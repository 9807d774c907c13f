/* g2f_compare at its edges, the rules a reader of the reports relies on
 * and which an off-by-one would move without changing a clean run:
 * a score exactly on a histogram edge goes to the bin above it (bin k holds
 * [10^(-6 + (k-1)/2), 10^(-6 + k/2))); an error equal to its tolerance is
 * not a mismatch, one above it is; a zero reference against a nonzero
 * computation has cosine 0 (two zeros, 1). */
#include <stddef.h>

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

int main(void) {
    RUN(hist_should_put_a_score_on_an_edge_in_the_bin_above);
    RUN(mismatch_should_count_errors_above_their_tolerance_only);
    RUN(cosine_should_be_0_for_a_zero_reference_against_nonzero_values);
    CHECK_EXIT();
}
