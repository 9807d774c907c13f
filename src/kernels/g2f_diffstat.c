/* g2f_diffstat: see g2f_diffstat.h. */
#include "g2f_diffstat.h"

#include <math.h>

#include "g2f_cpu.h"

void g2f_diffstat_run_ref(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                          g2f_diffstat *st) {
    for (size_t i = 0; i < n; i++) {
        double x = a[i], y = b[i], d = fabs(x - y), ax = fabs(x);
        st->neq |= a[i] != b[i];
        if (d > st->max_abs || isnan(d)) {
            st->max_abs = d;
            st->worst = base + i;
            st->nan = isnan(d);
        }
        double r = d / (ax > 0 ? ax : 1.0);
        if (r > st->max_rel) st->max_rel = r;
        st->out_tol |= !(d <= rel * ax + abs);
        st->sab[(base + i) & 3] += x * y;
        st->saa[(base + i) & 3] += x * x;
    }
}

void g2f_diffstat_run(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                      g2f_diffstat *st) {
    size_t done = (base & 3) == 0 && g2f_cpu_features()->avx2_fma ? g2f_diffstat_avx2(a, b, n, base, rel, abs, st) : 0;
    g2f_diffstat_run_ref(a + done, b + done, n - done, base + done, rel, abs, st);
}

#ifndef GPT2FFN_X86_KERNELS
size_t g2f_diffstat_avx2(const float *a, const float *b, size_t n, size_t base, double rel, double abs,
                         g2f_diffstat *st) {
    (void)a, (void)b, (void)n, (void)base, (void)rel, (void)abs, (void)st;
    return 0;
}
#endif
