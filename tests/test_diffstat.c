/* g2f_diffstat: diff's per-block statistics. The dispatching entry (AVX2
 * where the CPU has it) against the portable code, bit for bit, on data
 * with ties, zeros, NaN, infinities and every length around the 8-element
 * groups; and the portable code against a plain serial walk written out
 * here, so that the block statistics are what g2f_diff.h promises. */
#include <stdlib.h>

#include "check.h"
#include "g2f_cpu.h"
#include "g2f_diffstat.h"
#include "test_util.h"

static int same(const g2f_diffstat *x, const g2f_diffstat *y) {
    int ok = x->neq == y->neq && x->out_tol == y->out_tol && x->nan == y->nan && x->worst == y->worst &&
             !memcmp(&x->max_abs, &y->max_abs, sizeof x->max_abs) && !memcmp(&x->max_rel, &y->max_rel, sizeof x->max_rel) &&
             !memcmp(x->sab, y->sab, sizeof x->sab) && !memcmp(x->saa, y->saa, sizeof x->saa);
    if (!ok)
        fprintf(stderr, "  max_abs %.17g / %.17g worst %zu / %zu max_rel %.17g / %.17g neq %d/%d out %d/%d nan %d/%d\n",
                x->max_abs, y->max_abs, x->worst, y->worst, x->max_rel, y->max_rel, x->neq, y->neq, x->out_tol,
                y->out_tol, x->nan, y->nan);
    return ok;
}

/* a and b: b a slightly perturbed copy of a, with the specials of `kind`. */
static void make(float *a, float *b, size_t n, int kind, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        a[i] = rnd_unit(s) * 2;
        b[i] = a[i] + (rnd_unit(s) > 0.6f ? rnd_unit(s) * 1e-3f : 0);
        if (kind == 1 && i % 7 == 3) a[i] = 0, b[i] = 0.25f;          /* relative to 1, not to 0 */
        if (kind == 2 && i % 11 == 5) b[i] = a[i] + 0.5f;             /* ties of the largest difference */
        if (kind == 3 && (i == n / 3 || i == n / 2)) b[i] = NAN;      /* the last NaN wins */
        if (kind == 4 && i == n / 4) a[i] = INFINITY, b[i] = INFINITY; /* inf - inf = NaN */
        if (kind == 5) b[i] = a[i];                                    /* identical */
    }
}

static void diffstat_should_match_the_portable_code_bit_for_bit(void) {
    if (!g2f_cpu_features()->avx2_fma) fprintf(stderr, "  (no AVX2 here: the dispatch is the portable code)\n");
    uint64_t s = 7;
    static float a[4100], b[4100];
    size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096, 4099};
    for (int kind = 0; kind < 6; kind++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            size_t n = lengths[li];
            make(a, b, n, kind, &s);
            for (int t = 0; t < 2; t++) {
                double rel = t ? 0x1p-11 : 0, abs = t ? 0x1p-25 : 0;
                g2f_diffstat x, y;
                memset(&x, 0, sizeof x);
                memset(&y, 0, sizeof y);
                g2f_diffstat_run(a, b, n, 0, rel, abs, &x);
                g2f_diffstat_run_ref(a, b, n, 0, rel, abs, &y);
                if (!same(&x, &y)) {
                    fprintf(stderr, "kind %d, n %zu, tol %d differ\n", kind, n, t);
                    check_failures++;
                }
                /* fed in two pieces, continuing the state: the same */
                memset(&x, 0, sizeof x);
                size_t h = n / 2 & ~(size_t)3;
                g2f_diffstat_run(a, b, h, 0, rel, abs, &x);
                g2f_diffstat_run(a + h, b + h, n - h, h, rel, abs, &x);
                if (!same(&x, &y)) {
                    fprintf(stderr, "kind %d, n %zu, tol %d differ in two pieces\n", kind, n, t);
                    check_failures++;
                }
            }
        }
}

static void diffstat_should_be_a_serial_walk(void) {
    uint64_t s = 11;
    static float a[1000], b[1000];
    for (int kind = 0; kind < 6; kind++) {
        make(a, b, 1000, kind, &s);
        g2f_diffstat x;
        memset(&x, 0, sizeof x);
        g2f_diffstat_run(a, b, 1000, 0, 0x1p-11, 0, &x);
        double mx = 0, mr = 0, sab = 0;
        size_t worst = 0;
        int neq = 0, out = 0;
        for (size_t i = 0; i < 1000; i++) {
            double d = fabs((double)a[i] - b[i]), r = d / (fabs(a[i]) > 0 ? fabs(a[i]) : 1.0);
            if (d > mx || isnan(d)) mx = d, worst = i;
            if (r > mr) mr = r;
            neq |= a[i] != b[i];
            out |= !(d <= 0x1p-11 * fabs(a[i]));
            sab += (double)a[i] * b[i];
        }
        CHECK(x.worst == worst && x.neq == neq && x.out_tol == out && x.nan == (int)isnan(mx));
        CHECK((isnan(mx) && isnan(x.max_abs)) || x.max_abs == mx);
        CHECK(x.max_rel == mr);
        double sum = (x.sab[0] + x.sab[1]) + (x.sab[2] + x.sab[3]);
        CHECK(isnan(sab) ? isnan(sum) : sum == sab || fabs(sum - sab) <= 1e-9 * fabs(sab) + 1e-12);
    }
}

int main(void) {
    RUN(diffstat_should_match_the_portable_code_bit_for_bit);
    RUN(diffstat_should_be_a_serial_walk);
    CHECK_EXIT();
}
