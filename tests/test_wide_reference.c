/* A reference computed wider than float32 (float64, as a numpy reference
 * does) and stored as F32 holds each stage rounded once: the residual adds'
 * recorded inputs are then not exactly what was added, and where an add
 * cancels, the recorded sum differs from the sum of the recorded inputs by
 * more than the add's own rounding. Such a reference is right and passes.
 * From fixtures/model/clean.safetensors: every layer's h.L.in and attn.out,
 * mid and mlp.out as recorded, each taken as the rounding of a value up to
 * 0.49 of a float32 step away from it, and mid and out recomputed from
 * those values in double, then rounded: verify passes; mid off by a real
 * error (1e-3 of its scale) still fails. argv[1] = fixtures, argv[2] = CLI. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

enum { MAXT = 80, N = 2 * 6 * 64 };

static st_entry e[MAXT];
static float *data[MAXT];
static size_t n_e;
static char names[MAXT][64];

static float *find(const char *name) {
    for (size_t i = 0; i < n_e; i++)
        if (!strcmp(e[i].name, name)) return data[i];
    return NULL;
}

static void load(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/model/clean.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    for (size_t i = 0; i < t->count && n_e < MAXT; i++) {
        const g2f_tensor *x = &t->tensors[i];
        snprintf(names[n_e], sizeof names[n_e], "%s", x->name);
        data[n_e] = malloc((size_t)x->nbytes);
        memcpy(data[n_e], x->data, (size_t)x->nbytes);
        e[n_e] = (st_entry){names[n_e], x->dtype == G2F_DTYPE_I64 ? "I64" : "F32", x->ndim, {0}, data[n_e],
                            (size_t)x->nbytes};
        for (size_t k = 0; k < x->ndim; k++) e[n_e].shape[k] = x->shape[k];
        n_e++;
    }
    g2f_safetensors_close(st);
}

/* a value that rounds to f: f moved by up to 0.49 of its float32 step */
static double unrounded(float f, uint64_t *seed) {
    double step = nextafterf(fabsf(f), INFINITY) - fabsf(f);
    return (double)f + 0.49 * step * rnd_unit(seed);
}

/* mid = in + attn.out and out = mid + mlp.out of every layer, from unrounded inputs, rounded */
static void widen(double mid_error) {
    uint64_t seed = 3;
    char a[64], b[64], c[64];
    for (int L = 0; L < 4; L++)
        for (int stage = 0; stage < 2; stage++) {
            snprintf(a, sizeof a, stage ? "h.%d.mid" : "h.%d.in", L);
            snprintf(b, sizeof b, stage ? "h.%d.mlp.out" : "h.%d.attn.out", L);
            snprintf(c, sizeof c, stage ? "h.%d.out" : "h.%d.mid", L);
            float *x = find(a), *y = find(b), *z = find(c);
            CHECK(x && y && z);
            if (!x || !y || !z) return;
            for (size_t i = 0; i < N; i++)
                z[i] = (float)(unrounded(x[i], &seed) + unrounded(y[i], &seed) + (stage ? 0 : mid_error * rnd_unit(&seed)));
            snprintf(a, sizeof a, "h.%d.in", L + 1); /* the next block's input is this one's output */
            float *next = stage ? find(a) : NULL;
            if (next) memcpy(next, z, N * sizeof *z);
        }
}

static int verify_copy(const char *file, char *out, size_t n) {
    char path[400], args[1200], err[2048];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    CHECK(st_write(path, NULL, e, n_e, 1) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, path);
    return run_cli_in("NO_COLOR=1", cli, args, dir, out, n, err, sizeof err);
}

static void a_wider_reference_stored_as_f32_should_pass(void) {
    static char out[32768];
    load();
    CHECK(n_e > 40 && find("h.3.out") != NULL);
    widen(0);
    int rc = verify_copy("wide.safetensors", out, sizeof out);
    if (rc != 0) fprintf(stderr, "%s\n", out);
    CHECK(rc == 0);
    widen(1e-3); /* and a real error in mid still fails */
    CHECK(verify_copy("wide_bad.safetensors", out, sizeof out) == 1);
    CHECK_CONTAINS(out, "mid");
    for (size_t i = 0; i < n_e; i++) free(data[i]);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "wide") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(a_wider_reference_stored_as_f32_should_pass);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
