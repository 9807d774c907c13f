/* The GELU's curvature in the derived tolerance (g2f_gelu_curv.h, used by
 * g2f_tol.c): C0 min(1, K / a^4) bounds |GELU''| / 2 of every form at every
 * |x| >= a (closed forms here, on points other than the generator's grid,
 * up to 200), and with it the tolerance of huge but finite inputs stays float32
 * rounding's: fixtures/tiny's FFN on its reference inputs scaled by 1e4
 * to 1e11, made by `gpt2ffn run`, passes, while the
 * same outputs times 0.8 or with 0.2% noise fail (a global curvature bound
 * grew the tolerance as pre^2: 0.8x passed at 1e11). At 1e19 the tolerance
 * overflows float: a failure named as the tolerance's non-finite value,
 * never a pass. argv[1] = fixtures, argv[2] = CLI. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_gelu_curv.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

/* x s(v(x)) with v' and v'': its second derivative; s the logistic function */
static double xsig_dd(double x, double v, double v1, double v2) {
    double e = exp(-fabs(v)), s1 = e / ((1 + e) * (1 + e)), s2 = s1 * -tanh(v / 2);
    return 2 * s1 * v1 + x * (s2 * v1 * v1 + s1 * v2);
}

/* the largest |GELU''(x)| over the forms: erf, tanh, sigmoid 1.702 x, MLX's */
static double curvature(double x) {
    const double pi = 3.14159265358979323846, c = sqrt(2 / pi), a = 0.044715, k = 1.60033, q = 0.0433603;
    double f[4] = {exp(-x * x / 2) / sqrt(2 * pi) * (2 - x * x),
                   xsig_dd(x, 2 * c * (x + a * x * x * x), 2 * c * (1 + 3 * a * x * x), 2 * c * 6 * a * x),
                   xsig_dd(x, 1.702 * x, 1.702, 0),
                   xsig_dd(x, k * x * (1 + q * x * x), k * (1 + 3 * q * x * x), k * 6 * q * x)};
    double m = 0;
    for (int i = 0; i < 4; i++) m = fabs(f[i]) > m ? fabs(f[i]) : m;
    return m;
}

/* g2f_tol.c's bound on |GELU''| / 2 over |x| >= a */
static double bound_at(double a) {
    double r = G2F_GELU_CURV_K / (a * a * (a * a));
    return G2F_GELU_CURV_C0 * (r < 1 ? r : 1);
}

static void bound_should_hold_for_every_form(void) {
    CHECK(G2F_GELU_CURV_C0 >= 1.702 * 0.25); /* half the sigmoid form's 0.851 at zero, above erf's 0.798 */
    size_t bad = 0, n = 0;
    uint64_t seed = 11;
    for (double x = 0; x < 200; x += x < 90 ? 3.3e-5 : 1e-2, n++) { /* off the generator's 1e-4 grid */
        double y = fabs(x + 1e-5 * rnd_unit(&seed));
        /* the bound falls with a: |x| >= a is worst at a = |x| */
        for (int sgn = -1; sgn <= 1; sgn += 2)
            if (!(curvature(sgn * y) / 2 <= bound_at(y))) {
                if (bad++ < 5) fprintf(stderr, "  |GELU''(%g)| / 2 = %g above the bound %g\n", sgn * y, curvature(y) / 2, bound_at(y));
            }
    }
    CHECK(bad == 0 && n > 2000000);
    /* and it is tight enough to matter: far from zero, nothing like the global bound */
    CHECK(bound_at(10) < 1e-3 && bound_at(1e3) < 1e-11 && bound_at(0) == G2F_GELU_CURV_C0);
}

/* fixtures/tiny's layer 0 FFN inputs, scaled */
static int write_inputs(double scale, const char *path) {
    char src[400];
    snprintf(src, sizeof src, "%s/tiny_tanh.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) return -1;
    const g2f_tensor *t = g2f_table_find(g2f_safetensors_table(st), "h.0.mlp.in");
    static float x[2 * 6 * 64];
    int ok = t && t->numel == 2 * 6 * 64;
    if (ok) g2f_tensor_read_f32(t, 0, t->numel, x);
    g2f_safetensors_close(st);
    if (!ok) return -1;
    for (size_t i = 0; i < 2 * 6 * 64; i++) x[i] = (float)(x[i] * scale);
    st_entry e = {"h.0.mlp.in", "F32", 3, {2, 6, 64}, x, sizeof x};
    return st_write(path, NULL, &e, 1, 1);
}

/* made (run's output) with its out times `times`, plus `noise` relative */
static int write_altered(const char *made, const char *path, double times, double noise) {
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(made, &st, &err) != G2F_OK) return -1;
    static float in[2 * 6 * 64], out[2 * 6 * 64];
    const g2f_tensor *ti = g2f_table_find(g2f_safetensors_table(st), "h.0.mlp.in");
    const g2f_tensor *to = g2f_table_find(g2f_safetensors_table(st), "h.0.mlp.out");
    int ok = ti && to && ti->numel == 2 * 6 * 64 && to->numel == 2 * 6 * 64;
    if (ok) g2f_tensor_read_f32(ti, 0, ti->numel, in), g2f_tensor_read_f32(to, 0, to->numel, out);
    g2f_safetensors_close(st);
    if (!ok) return -1;
    uint64_t seed = 5;
    for (size_t i = 0; i < 2 * 6 * 64; i++) out[i] = (float)(out[i] * times * (1 + noise * rnd_unit(&seed)));
    st_entry e[2] = {{"h.0.mlp.in", "F32", 3, {2, 6, 64}, in, sizeof in}, {"h.0.mlp.out", "F32", 3, {2, 6, 64}, out, sizeof out}};
    return st_write(path, NULL, e, 2, 1);
}

static int verify_exit(const char *fixture, char *out, size_t n) {
    char args[1200], err[2048];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, fixture);
    return run_cli_in("", cli, args, dir, out, n, err, sizeof err);
}

static void huge_inputs_should_keep_float32_tolerances(void) {
    static const double scales[] = {1e4, 1e8, 1e11};
    char in[400], made[400], bad[400], args[1400], out[8192], err[2048];
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        snprintf(in, sizeof in, "%s/in.safetensors", dir);
        snprintf(made, sizeof made, "%s/made.safetensors", dir);
        snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
        CHECK(write_inputs(scales[k], in) == 0);
        snprintf(args, sizeof args, "run '%s/tiny' '%s' -o '%s'", fixtures, in, made);
        CHECK(run_cli_in("", cli, args, dir, out, sizeof out, err, sizeof err) == 0);
        int rc = verify_exit(made, out, sizeof out);
        if (rc != 0) fprintf(stderr, "  scale %g: the right output, exit %d\n", scales[k], rc);
        CHECK(rc == 0);
        CHECK(write_altered(made, bad, 0.8, 0) == 0);
        rc = verify_exit(bad, out, sizeof out);
        if (rc != 1) fprintf(stderr, "  scale %g: out x 0.8, exit %d\n", scales[k], rc);
        CHECK(rc == 1);
        CHECK(write_altered(made, bad, 1.0, 2e-3) == 0);
        rc = verify_exit(bad, out, sizeof out);
        if (rc != 1) fprintf(stderr, "  scale %g: out with 0.2%% noise, exit %d\n", scales[k], rc);
        CHECK(rc == 1);
    }
    /* beyond float: the tolerance overflows, and says so */
    CHECK(write_inputs(1e19, in) == 0);
    snprintf(args, sizeof args, "run '%s/tiny' '%s' -o '%s'", fixtures, in, made);
    CHECK(run_cli_in("", cli, args, dir, out, sizeof out, err, sizeof err) == 0);
    CHECK(verify_exit(made, out, sizeof out) == 1);
    CHECK_CONTAINS(out, "non-finite value in the tolerance");
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "curv") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(bound_should_hold_for_every_form);
    RUN(huge_inputs_should_keep_float32_tolerances);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
