/* g2f_inspect: the value statistics `inspect` reports (min, max, mean,
 * population std over the finite values, NaN and Inf counted apart), on
 * hand-made values and on every FFN tensor of fixtures/tiny against a
 * direct computation, and every tensor's statistics in its own slot and
 * bit for bit the same on 1, 2 and 3 threads (the tensors are shared out
 * to workers). argv[1] is the fixtures folder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_cpu.h"
#include "g2f_inspect.h"

static const char *fixtures; /* argv[1] */

static void stats_should_cover_the_finite_values_and_count_the_others(void) {
    const float v[] = {3.0f, NAN, -1.0f, INFINITY, 2.0f, 0.5f, -INFINITY};
    g2f_stats s;
    g2f_stats_compute(v, sizeof v / sizeof v[0], &s);
    CHECK(s.count == 7 && s.nan == 1 && s.inf == 2);
    CHECK(s.min == -1.0 && s.max == 3.0);
    CHECK_NEAR(s.mean, 1.125, 1e-15);
    CHECK_NEAR(s.std, sqrt(9.1875 / 4), 1e-15);
    const float falling[] = {5, 4, 3, 2, 1}; /* the extremes at either end */
    g2f_stats_compute(falling, 5, &s);
    CHECK(s.min == 1 && s.max == 5 && s.mean == 3);
    g2f_stats_compute(v + 1, 1, &s); /* only a NaN: zeros */
    CHECK(s.nan == 1 && s.min == 0 && s.max == 0 && s.mean == 0 && s.std == 0);
}

static void inspect_should_give_each_tensors_extremes(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_error err = {0};
    g2f_inspect_result r = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_OK && g2f_inspect_run(m, &r, &err) == G2F_OK);
    for (size_t L = 0; L < r.n_layers; L++)
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            const g2f_tensor *t = r.layers[L].tensor[k];
            const g2f_stats *s = &r.layers[L].stats[k];
            if (!t) continue;
            float *v = malloc((size_t)t->numel * sizeof *v);
            if (!v) { check_failures++; continue; }
            g2f_tensor_read_f32(t, 0, t->numel, v);
            double lo = v[0], hi = v[0];
            for (uint64_t i = 1; i < t->numel; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
            CHECK(s->count == t->numel && s->min == lo && s->max == hi && lo < s->mean && s->mean < hi);
            free(v);
        }
    CHECK(r.n_layers == 4);
    g2f_inspect_result_free(&r);
    g2f_model_close(m);
}

static void inspect_should_match_each_tensor_on_any_thread_count(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    g2f_inspect_result r[3] = {{0}, {0}, {0}};
    for (int th = 1; th <= 3; th++) {
        g2f_threads_set_default(th);
        CHECK(g2f_inspect_run(m, &r[th - 1], &err) == G2F_OK);
    }
    g2f_threads_set_default(2);
    size_t seen = 0;
    for (size_t L = 0; L < r[0].n_layers; L++)
        for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
            const g2f_tensor *t = r[0].layers[L].tensor[k];
            for (int i = 1; i < 3; i++)
                CHECK(r[i].n_layers == r[0].n_layers && r[i].layers[L].tensor[k] == t &&
                      !memcmp(&r[i].layers[L].stats[k], &r[0].layers[L].stats[k], sizeof(g2f_stats)));
            if (!t) continue;
            float *v = malloc((size_t)t->numel * sizeof *v);
            if (!v) { check_failures++; continue; }
            g2f_tensor_read_f32(t, 0, t->numel, v);
            g2f_stats want;
            g2f_stats_compute(v, (size_t)t->numel, &want);
            CHECK(!memcmp(&want, &r[0].layers[L].stats[k], sizeof want));
            free(v);
            seen++;
        }
    CHECK(seen == 4 * (size_t)G2F_LAYER_TENSORS); /* fixtures/tiny has every tensor of every block */
    for (int i = 0; i < 3; i++) g2f_inspect_result_free(&r[i]);
    g2f_model_close(m);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    RUN(stats_should_cover_the_finite_values_and_count_the_others);
    fixtures = argv[1];
    RUN(inspect_should_give_each_tensors_extremes);
    RUN(inspect_should_match_each_tensor_on_any_thread_count);
    CHECK_EXIT();
}
