/* g2f_diffstat: the per-element statistics `diff` gathers over a block of
 * two tensors' values a and b (g2f_diff.c), in one pass:
 *   neq      some a[i] != b[i] (a NaN counts as different);
 *   max_abs  the largest d_i = |(double)a_i - b_i| as a serial walk finds it:
 *            the first index of the largest, or, once some d_i is NaN, NaN
 *            and the last NaN's index (worst);
 *   max_rel  the largest d_i / (|a_i|, or 1 where a_i == 0), NaN ignored;
 *   out_tol  some d_i is not <= rel |a_i| + abs (a NaN is outside);
 *   sab, saa the sums of a_i b_i and a_i a_i in double, in four partial sums
 *            (element i into sum i mod 4, in order), for a scale.
 * A statistic is continued from *st (zero it to start), so a block may be
 * fed in pieces; base is the index of a[0] for worst.
 *
 * Two implementations with the same results bit for bit: portable C, and an
 * AVX2 one (4 doubles a lane group, no fused multiply-add, lanes combined
 * into the serial answer) chosen at run time (g2f_cpu_features). */
#ifndef G2F_DIFFSTAT_H
#define G2F_DIFFSTAT_H

#include <stddef.h>

typedef struct g2f_diffstat {
    int neq, out_tol, nan;   /* nan: max_abs is NaN */
    double max_abs;
    size_t worst;
    double max_rel;
    double sab[4], saa[4];
} g2f_diffstat;

/* Continues *st over a[0, n), b[0, n) (see above). */
void g2f_diffstat_run(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                      g2f_diffstat *st);
/* The portable implementation alone (the reference the AVX2 one matches). */
void g2f_diffstat_run_ref(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                          g2f_diffstat *st);
/* The AVX2 one over a whole number of 8-element groups: processes
 * n - n % 8 elements and returns that count (0 where the build or the CPU
 * has no AVX2); the caller continues with g2f_diffstat_run_ref. */
size_t g2f_diffstat_avx2(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                         g2f_diffstat *st);

#endif
