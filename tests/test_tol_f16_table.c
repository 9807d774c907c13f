/* The f16 GELU table form's tolerance with its halves tabulated
 * (g2f_tol_f16): g2f_tol_ffn_hidden_x gives bitwise the tolerances, c_proj
 * coefficients and flips it computes per element without the table, on
 * every half, its neighbours and midpoints, the clamps, NaN, and sums of
 * squares from float32 noise up to windows that span several halves (a pre
 * step widens the entry's window); a table made for another lambda is not
 * used. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn.h"
#include "g2f_tensor.h"
#include "g2f_tol.h"

typedef struct hidden_out {
    float *tol_pre, *tol_act, *q, *f_pre, *f_act1, *f_act2;
} hidden_out;

static int out_alloc(hidden_out *o, size_t n) {
    float *all = calloc(6 * n, sizeof(float));
    float **p[6] = {&o->tol_pre, &o->tol_act, &o->q, &o->f_pre, &o->f_act1, &o->f_act2};
    for (int k = 0; k < 6; k++) *p[k] = all ? all + (size_t)k * n : NULL;
    return all != NULL;
}

static void run_hidden(const g2f_tol_units *un, double lambda, size_t n, const float *pre, const float *act,
                       const float *s, const double *ep, const double *ea, hidden_out *o, int threads) {
    g2f_flips fl = {o->f_pre, o->f_act1, o->f_act2};
    g2f_tol_ffn_hidden_x(n, 768, 3072, pre, pre, act, act, s, ep, ea, un, lambda, NULL, o->tol_pre, o->tol_act,
                         o->q, &fl, threads);
}

static void tol_f16_table_should_give_the_per_element_bits(void) {
    size_t n = 65536 * 4 + 8;
    float *pre = malloc(n * sizeof *pre), *act = malloc(n * sizeof *act), *s = malloc(n * sizeof *s);
    double *ep = malloc(n * sizeof *ep), *ea = malloc(n * sizeof *ea);
    hidden_out want, got;
    int ok = pre && act && s && ep && ea && out_alloc(&want, n) && out_alloc(&got, n);
    CHECK(ok);
    if (!ok) return; /* the test's own allocations: nothing else to check */
    size_t k = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float v = g2f_f16_to_f32((uint16_t)h), w = g2f_f16_to_f32((uint16_t)(h + 1 < 65536 ? h + 1 : h));
        pre[k++] = v;
        pre[k++] = nextafterf(v, INFINITY);
        pre[k++] = nextafterf(v, -INFINITY);
        pre[k++] = (float)(((double)v + w) / 2);
    }
    const float edge[8] = {10.0f, -10.0f, nextafterf(10.0f, 0), NAN, 1e-40f, 65504.0f, -3.0f, 2.7f};
    for (int i = 0; i < 8; i++) pre[k++] = edge[i];
    uint64_t st = 2024;
    for (size_t i = 0; i < n; i++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        act[i] = g2f_gelu_f16_table(pre[i]);
        s[i] = (float)pow(10.0, (double)(st >> 40) / (1 << 24) * 12.0); /* 1 .. 1e12, in units of u^2 */
        ep[i] = pre[i], ea[i] = act[i];
    }
    g2f_tol_units un = g2f_tol_units_for(G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F16, 0);
    un.table_in = 1;
    g2f_tol_f16 tab = {0};
    CHECK(g2f_tol_f16_make(&tab, G2F_TOL_LAMBDA));
    size_t bad = 0;
    for (int threads = 1; threads <= 2; threads++) {
        un.f16 = NULL;
        run_hidden(&un, G2F_TOL_LAMBDA, n, pre, act, s, ep, ea, &want, threads);
        un.f16 = &tab;
        run_hidden(&un, G2F_TOL_LAMBDA, n, pre, act, s, ep, ea, &got, threads);
        bad += memcmp(want.tol_pre, got.tol_pre, 6 * n * sizeof(float)) != 0; /* all six arrays */
    }
    size_t steps = 0;
    for (size_t i = 0; i < n; i++) steps += want.f_act2[i] != 0;
    fprintf(stderr, "  %zu elements, %zu with an entry's own flip as a step\n", n, steps);
    CHECK(steps > 0);
    CHECK(bad == 0);
    /* another lambda: the table is for 6 and must not be taken */
    un.f16 = NULL;
    run_hidden(&un, 3.0, n, pre, act, s, ep, ea, &want, 2);
    un.f16 = &tab;
    run_hidden(&un, 3.0, n, pre, act, s, ep, ea, &got, 2);
    CHECK(memcmp(want.tol_pre, got.tol_pre, 6 * n * sizeof(float)) == 0);
    g2f_tol_f16_free(&tab);
    free(pre), free(act), free(s), free(ep), free(ea), free(want.tol_pre), free(got.tol_pre);
}

int main(void) {
    RUN(tol_f16_table_should_give_the_per_element_bits);
    CHECK_EXIT();
}
