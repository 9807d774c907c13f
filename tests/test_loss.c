/* g2f_loss: the mean cross-entropy in double and its bound (src/check/
 * g2f_loss.h). The value on cases with a known answer; a float32 reference
 * (PyTorch's log-softmax order, sequential and pairwise sums, glibc's
 * expf / logf) within the rounding part with room to spare on 160 cases of
 * vocabularies 2 .. 50257; logits perturbed within their tolerances within
 * the logits' part, which the worst perturbation nearly reaches (the bound
 * is not loose); the wrong loss a port computes (not shifted targets, the
 * mean over sequences) far outside; NaN, infinite or negative inputs never
 * match; chunks give the same bits as one call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_loss.h"
#include "g2f_tol.h"
#include "test_util.h"

static g2f_loss_result loss_of(const float *z, const double *tol, const int64_t *y, size_t n, size_t V) {
    g2f_loss_acc a;
    g2f_loss_result r;
    g2f_error err = {0};
    g2f_loss_init(&a, V, G2F_TOL_LAMBDA);
    CHECK(g2f_loss_add(&a, z, tol, y, n, &err) == G2F_OK);
    g2f_loss_finish(&a, &r);
    return r;
}

static void loss_should_be_the_mean_cross_entropy(void) {
    float z[14];
    int64_t y[2] = {3, 0};
    for (int j = 0; j < 7; j++) z[j] = 0.3f;                 /* uniform: log 7 */
    for (int j = 0; j < 7; j++) z[7 + j] = (float)j * 0.5f;  /* by hand below */
    double s = 0;
    for (int j = 0; j < 7; j++) s += exp(j * 0.5);
    g2f_loss_result r = loss_of(z, NULL, y, 2, 7);
    CHECK_NEAR(r.loss, (log(7.0) + log(s)) / 2, 1e-14);
    r = loss_of(z, NULL, y, 1, 7);
    CHECK_NEAR(r.loss, log(7.0), 1e-15);
    CHECK(r.rows == 1 && r.bound > 0 && r.bound_logits == 0 && r.bound_own < 1e-12);
}

/* PyTorch's float32 cross-entropy: per row m = max, s = sum expf(z - m)
 * (sequential, or pairwise in blocks of 8 like a vectorised sum), out =
 * (z_y - m) - logf(s), then the mean: a float32 sum / N. */
static float sum_f32(const float *v, size_t n, int pairwise) {
    if (!pairwise || n <= 8) {
        float s = 0;
        for (size_t i = 0; i < n; i++) s += v[i];
        return s;
    }
    return sum_f32(v, n / 2, 1) + sum_f32(v + n / 2, n - n / 2, 1);
}

static float reference_f32(const float *z, const int64_t *y, size_t N, size_t V, int pairwise, float *buf, float *rows) {
    for (size_t i = 0; i < N; i++) {
        const float *r = z + i * V;
        float m = r[0];
        for (size_t j = 1; j < V; j++) m = r[j] > m ? r[j] : m;
        for (size_t j = 0; j < V; j++) buf[j] = expf(r[j] - m);
        float s = sum_f32(buf, V, pairwise);
        rows[i] = -((r[y[i]] - m) - logf(s));
    }
    return sum_f32(rows, N, pairwise) / (float)N;
}

static void float32_reference_should_lie_within_the_rounding_part(void) {
    static const size_t vocabs[] = {2, 10, 96, 1000, 50257};
    static const size_t ns[] = {1, 7, 64, 256};
    static const float spreads[] = {1, 8, 30, 0}; /* uniform in +-spread, or (0) GPT-2-like: -100 + 3 N(0, 1) */
    uint64_t seed = 42;
    double worst = 0, gpt2_err = 0, gpt2_bound = 0;
    size_t cases = 0;
    for (size_t iv = 0; iv < 5; iv++)
        for (size_t in = 0; in < 4; in++)
            for (size_t is = 0; is < 4; is++) {
                const size_t V = vocabs[iv], N = vocabs[iv] > 1000 && ns[in] > 7 ? 7 : ns[in];
                float *z = malloc(N * V * sizeof *z), *buf = malloc(V * sizeof *buf), *rows = malloc(N * sizeof *rows);
                int64_t *y = malloc(N * sizeof *y);
                if (!z || !buf || !rows || !y) abort();
                for (size_t k = 0; k < N * V; k++)
                    z[k] = spreads[is] ? spreads[is] * rnd_unit(&seed) + 3.0f
                                       : -100.0f + 3.0f * (rnd_unit(&seed) + rnd_unit(&seed) + rnd_unit(&seed));
                for (size_t i = 0; i < N; i++) y[i] = (int64_t)((rnd_unit(&seed) + 1) / 2 * (double)V) % (int64_t)V;
                g2f_loss_result r = loss_of(z, NULL, y, N, V);
                for (int pw = 0; pw < 2; pw++) {
                    double ref = reference_f32(z, y, N, V, pw, buf, rows), margin = g2f_loss_margin(&r, ref);
                    CHECK(g2f_loss_matches(&r, ref));
                    if (V == 50257 && !spreads[is] && fabs(ref - r.loss) > gpt2_err)
                        gpt2_err = fabs(ref - r.loss), gpt2_bound = r.bound;
                    worst = margin > worst ? margin : worst;
                    cases++;
                }
                free(z), free(buf), free(rows), free(y);
            }
    fprintf(stderr, "  %zu float32 references: largest |ref - L| / bound %.3g; GPT-2-like logits (V 50257): "
                    "largest |ref - L| %.3g (a sum in index order), its bound %.3g\n", cases, worst, gpt2_err, gpt2_bound);
    CHECK(cases == 160 && worst <= 0.5);
}

/* Logits moved by at most tol: within the logits' part; moved the worst way
 * (against the gradient, -tol sign(p - onehot)), nearly at it. */
static void perturbed_logits_should_stay_within_the_logits_part(void) {
    enum { N = 16, V = 300 };
    float *z = malloc(N * V * sizeof *z), *zp = malloc(N * V * sizeof *zp);
    double *tol = malloc(N * V * sizeof *tol);
    int64_t y[N];
    uint64_t seed = 3;
    if (!z || !zp || !tol) abort();
    for (size_t k = 0; k < N * V; k++) z[k] = 6 * rnd_unit(&seed), tol[k] = 1e-3 * (1.5 + rnd_unit(&seed));
    for (size_t i = 0; i < N; i++) y[i] = (int64_t)(i * 37 % V);
    g2f_loss_result base = loss_of(z, tol, y, N, V), plain = loss_of(z, NULL, y, N, V);
    CHECK(base.bound_logits > 0 && plain.bound_logits == 0 && base.bound > plain.bound);
    double worst_random = 0, adversarial;
    for (int trial = 0; trial < 20; trial++) {
        for (size_t k = 0; k < N * V; k++) zp[k] = (float)(z[k] + tol[k] * rnd_unit(&seed) * 0.999);
        double d = fabs(loss_of(zp, NULL, y, N, V).loss - base.loss) / base.bound_logits;
        worst_random = d > worst_random ? d : worst_random;
    }
    for (size_t i = 0; i < N; i++) { /* the first-order worst case */
        double m = z[i * V], s = 0;
        for (size_t j = 0; j < V; j++) m = z[i * V + j] > m ? z[i * V + j] : m;
        for (size_t j = 0; j < V; j++) s += exp(z[i * V + j] - m);
        for (size_t j = 0; j < V; j++) {
            double g = exp(z[i * V + j] - m) / s - ((int64_t)j == y[i]);
            zp[i * V + j] = (float)(z[i * V + j] + (g > 0 ? 0.999 : -0.999) * tol[i * V + j]);
        }
    }
    adversarial = fabs(loss_of(zp, NULL, y, N, V).loss - base.loss) / base.bound_logits;
    fprintf(stderr, "  logits within tol: random %.3g, worst-case %.3g of the logits' part\n", worst_random,
            adversarial);
    CHECK(worst_random <= 1 && adversarial <= 1 && adversarial > 0.9);
    CHECK(g2f_loss_matches(&base, loss_of(zp, NULL, y, N, V).loss));
    free(z), free(zp), free(tol);
}

/* What a port gets wrong: the targets not shifted (y = x), the mean over
 * sequences instead of tokens: far outside the bound. */
static void wrong_losses_should_not_match(void) {
    enum { B = 4, T = 16, V = 96 };
    float *z = malloc(B * T * V * sizeof *z);
    int64_t x[B * T + 1];
    uint64_t seed = 11;
    if (!z) abort();
    for (size_t k = 0; k < B * T * V; k++) z[k] = 4 * rnd_unit(&seed);
    for (size_t i = 0; i <= B * T; i++) x[i] = (int64_t)(i * 29 % V);
    g2f_loss_result r = loss_of(z, NULL, x + 1, B * T, V);
    double unshifted = loss_of(z, NULL, x, B * T, V).loss, per_sequence = r.loss * T;
    fprintf(stderr, "  loss %.6f bound %.3g; unshifted margin %.3g, per-sequence mean margin %.3g\n", r.loss, r.bound,
            g2f_loss_margin(&r, unshifted), g2f_loss_margin(&r, per_sequence));
    CHECK(g2f_loss_matches(&r, r.loss) && g2f_loss_margin(&r, r.loss) == 0);
    CHECK(!g2f_loss_matches(&r, unshifted) && g2f_loss_margin(&r, unshifted) > 100);
    CHECK(!g2f_loss_matches(&r, per_sequence) && !g2f_loss_matches(&r, r.loss + 1.01 * r.bound));
    CHECK(g2f_loss_matches(&r, r.loss - 0.99 * r.bound));
    free(z);
}

static void nonfinite_inputs_should_never_match(void) {
    float z[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    double tol[8] = {0};
    int64_t y[2] = {1, 2};
    g2f_loss_result r = loss_of(z, NULL, y, 2, 4);
    CHECK(g2f_loss_matches(&r, r.loss) && !g2f_loss_matches(&r, NAN) && !g2f_loss_matches(&r, INFINITY));
    z[5] = NAN;
    r = loss_of(z, NULL, y, 2, 4);
    CHECK(isnan(r.loss) && isnan(r.bound) && !g2f_loss_matches(&r, 1.0) && isnan(g2f_loss_margin(&r, 1.0)));
    z[5] = INFINITY;
    r = loss_of(z, NULL, y, 2, 4);
    CHECK(!g2f_loss_matches(&r, r.loss));
    z[5] = 1;
    tol[3] = INFINITY; /* an infinite tolerance would pass anything */
    r = loss_of(z, tol, y, 2, 4);
    CHECK(!g2f_loss_matches(&r, 1.0) && !g2f_loss_matches(&r, r.loss));
    tol[3] = -1e-3;
    r = loss_of(z, tol, y, 2, 4);
    CHECK(!g2f_loss_matches(&r, r.loss));
    g2f_loss_acc a;
    g2f_loss_init(&a, 4, G2F_TOL_LAMBDA);
    g2f_loss_finish(&a, &r); /* nothing added: no loss */
    CHECK(r.rows == 0 && isnan(r.loss) && !g2f_loss_matches(&r, 0.0));
}

static void targets_outside_the_vocabulary_should_be_refused(void) {
    float z[8] = {0};
    int64_t y[2] = {1, 4};
    g2f_loss_acc a;
    g2f_error err = {0};
    g2f_loss_init(&a, 4, G2F_TOL_LAMBDA);
    CHECK(g2f_loss_add(&a, z, NULL, y, 1, &err) == G2F_OK);
    CHECK(g2f_loss_add(&a, z, NULL, y, 2, &err) == G2F_ERR_FORMAT && a.rows == 1);
    CHECK_CONTAINS(err.msg, "loss: target 4 of row 2 is outside the vocabulary 0..3");
    y[1] = -1; /* PyTorch's ignore_index: never in llm.c's data */
    CHECK(g2f_loss_add(&a, z, NULL, y, 2, &err) == G2F_ERR_FORMAT);
    g2f_loss_init(&a, 0, G2F_TOL_LAMBDA);
    CHECK(g2f_loss_add(&a, z, NULL, y, 1, &err) == G2F_ERR_USAGE);
}

/* Rows a chunk at a time (the forward's logits come so) give the same bits. */
static void chunks_should_give_the_same_bits(void) {
    enum { N = 50, V = 33 };
    float z[N * V];
    double tol[N * V];
    int64_t y[N];
    uint64_t seed = 5;
    for (size_t k = 0; k < N * V; k++) z[k] = 5 * rnd_unit(&seed), tol[k] = 1e-5;
    for (size_t i = 0; i < N; i++) y[i] = (int64_t)(i % V);
    g2f_loss_result one = loss_of(z, tol, y, N, V), chunked;
    g2f_loss_acc a;
    g2f_error err = {0};
    g2f_loss_init(&a, V, G2F_TOL_LAMBDA);
    for (size_t i = 0; i < N; i += 7) {
        size_t n = N - i < 7 ? N - i : 7;
        CHECK(g2f_loss_add(&a, z + i * V, tol + i * V, y + i, n, &err) == G2F_OK);
    }
    g2f_loss_finish(&a, &chunked);
    CHECK(!memcmp(&one, &chunked, sizeof one));
}

int main(void) {
    RUN(loss_should_be_the_mean_cross_entropy);
    RUN(float32_reference_should_lie_within_the_rounding_part);
    RUN(perturbed_logits_should_stay_within_the_logits_part);
    RUN(wrong_losses_should_not_match);
    RUN(nonfinite_inputs_should_never_match);
    RUN(targets_outside_the_vocabulary_should_be_refused);
    RUN(chunks_should_give_the_same_bits);
    CHECK_EXIT();
}
