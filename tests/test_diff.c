/* diff: each kind of difference between an original and a "port", made here
 * from fixtures/tiny; and inspect's statistics. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_diff.h"
#include "g2f_inspect.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

enum { MUT_NONE, MUT_F16_FILE, MUT_F16_VALUES, MUT_LINEAR, MUT_MISREAD, MUT_SWAP, MUT_SCALE, MUT_NO_BIAS, MUT_NOISE };

/* Writes the FFN tensors of fixtures/tiny to dir/name with one mutation. */
static void write_port(const char *name, int mut) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) { check_failures++; return; }
    const g2f_table *t = g2f_safetensors_table(st);
    st_entry e[32];
    void *bufs[32];
    char names[32][80];
    size_t n = 0;
    uint64_t seed = 1;
    for (size_t i = 0; i < t->count; i++) {
        const g2f_tensor *x = &t->tensors[i];
        int L;
        char what[32];
        if (sscanf(x->name, "transformer.h.%d.mlp.%31s", &L, what) != 2) continue;
        int weight = strstr(what, "weight") != NULL, fc = strstr(what, "c_fc") != NULL;
        if (mut == MUT_NO_BIAS && !weight && fc) continue;
        const g2f_tensor *from = x;
        if (mut == MUT_SWAP && L == 1) { /* layer 1 gets layer 2's tensor */
            char other[96];
            snprintf(other, sizeof other, "transformer.h.2.mlp.%s", what);
            from = g2f_table_find(t, other);
        }
        float *f = malloc(x->numel * sizeof(float));
        g2f_tensor_read_f32(from, 0, from->numel, f);
        uint64_t r = x->shape[0], c = x->ndim > 1 ? x->shape[1] : 0;
        e[n] = (st_entry){names[n], "F32", x->ndim, {r, c}, f, x->numel * 4};
        snprintf(names[n], sizeof names[n], "%s", x->name);
        if (mut == MUT_F16_FILE) {
            uint16_t *h = malloc(x->numel * 2);
            for (uint64_t k = 0; k < x->numel; k++) h[k] = g2f_f32_to_f16(f[k]);
            free(f);
            f = (float *)h;
            e[n] = (st_entry){names[n], "F16", x->ndim, {r, c}, h, x->numel * 2};
        } else if (mut == MUT_F16_VALUES) {
            for (uint64_t k = 0; k < x->numel; k++) f[k] = g2f_f16_to_f32(g2f_f32_to_f16(f[k]));
        } else if ((mut == MUT_LINEAR || mut == MUT_MISREAD) && weight) {
            e[n].shape[0] = c; /* the other shape */
            e[n].shape[1] = r;
            if (mut == MUT_LINEAR) { /* a faithful transpose */
                float *tr = malloc(x->numel * sizeof(float));
                for (uint64_t a = 0; a < r; a++)
                    for (uint64_t b = 0; b < c; b++) tr[b * r + a] = f[a * c + b];
                free(f);
                f = tr;
                e[n].data = tr;
            }
        } else if (mut == MUT_SCALE && weight && fc && L == 3) {
            for (uint64_t k = 0; k < x->numel; k++) f[k] *= 0.5f;
        } else if (mut == MUT_NOISE && weight && !fc && L == 0) {
            for (uint64_t k = 0; k < x->numel; k++) f[k] += rnd_unit(&seed) * 1e-3f;
        }
        bufs[n++] = f;
    }
    /* ln_2 tells n_embd, so the Linear port's layout is decided from shapes */
    float ln[64] = {0};
    e[n] = (st_entry){"h.0.ln_2.weight", "F32", 1, {64}, ln, sizeof ln};
    bufs[n++] = NULL;
    for (size_t i = 0; i < n - 1; i++)
        if (mut == MUT_LINEAR || mut == MUT_MISREAD) memmove(names[i], names[i] + 12, strlen(names[i]) - 11);
    if (mut != MUT_LINEAR && mut != MUT_MISREAD) e[n - 1].name = "transformer.h.0.ln_2.weight";
    CHECK(st_write(dst, NULL, e, n, 1) == 0);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    g2f_safetensors_close(st);
}

/* Runs diff tiny vs port; returns the verdict string of (layer, tensor). */
static int diff_port(const char *name, g2f_diff_result *r) {
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(b, sizeof b, "%s/%s", dir, name);
    g2f_model *ma = NULL, *mb = NULL;
    g2f_error err = {0};
    int ok = g2f_model_open(a, NULL, &ma, &err) == G2F_OK && g2f_model_open(b, NULL, &mb, &err) == G2F_OK &&
             g2f_diff_run(ma, mb, r, &err) == G2F_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", name, err.msg);
    g2f_model_close(ma);
    g2f_model_close(mb);
    return ok;
}

static void diff_should_classify_each_kind_of_port(void) {
    struct {
        const char *file;
        int mut, equivalent;
        size_t layer;
        int tensor;
        g2f_diff_kind kind;
    } cases[] = {
        {"same.safetensors", MUT_NONE, 1, 0, G2F_FFN_FC_W, G2F_DIFF_IDENTICAL},
        {"f16.safetensors", MUT_F16_FILE, 1, 2, G2F_FFN_PROJ_W, G2F_DIFF_ROUNDED},
        {"f16vals.safetensors", MUT_F16_VALUES, 0, 1, G2F_FFN_FC_W, G2F_DIFF_F16_ROUNDED},
        {"linear.safetensors", MUT_LINEAR, 1, 3, G2F_FFN_PROJ_W, G2F_DIFF_IDENTICAL},
        {"misread.safetensors", MUT_MISREAD, 0, 0, G2F_FFN_FC_W, G2F_DIFF_TRANSPOSED},
        {"swap.safetensors", MUT_SWAP, 0, 1, G2F_FFN_PROJ_W, G2F_DIFF_FROM_LAYER},
        {"scaled.safetensors", MUT_SCALE, 0, 3, G2F_FFN_FC_W, G2F_DIFF_SCALED},
        {"nobias.safetensors", MUT_NO_BIAS, 0, 2, G2F_FFN_FC_B, G2F_DIFF_MISSING},
        {"noise.safetensors", MUT_NOISE, 0, 0, G2F_FFN_PROJ_W, G2F_DIFF_DIFFERENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_port(cases[i].file, cases[i].mut);
        g2f_diff_result r;
        if (!diff_port(cases[i].file, &r)) { check_failures++; continue; }
        const g2f_diff_tensor *t = &r.tensors[cases[i].layer][cases[i].tensor];
        if (r.equivalent != cases[i].equivalent || t->kind != cases[i].kind) {
            fprintf(stderr, "%s: equivalent %d (want %d), layer %zu %s is %s (want %s)\n", cases[i].file, r.equivalent,
                    cases[i].equivalent, cases[i].layer, g2f_model_tensor_role(cases[i].tensor),
                    g2f_diff_kind_name(t->kind), g2f_diff_kind_name(cases[i].kind));
            check_failures++;
        }
        if (cases[i].kind == G2F_DIFF_FROM_LAYER) CHECK(t->from_layer == 2);
        if (cases[i].kind == G2F_DIFF_SCALED) CHECK_NEAR(t->scale, 0.5, 1e-6);
        if (cases[i].mut == MUT_SWAP) CHECK(r.tensors[0][0].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
}

static int run(const char *args) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' %s > /dev/null 2>&1", cli, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void diff_and_inspect_should_exit_with_documented_codes(void) {
    char args[1000];
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/f16.safetensors'", fixtures, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/swap.safetensors' --json -", fixtures, dir);
    CHECK(run(args) == 1);
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/diag/tiny_pre'", fixtures, fixtures);
    CHECK(run(args) == 1); /* different sizes */
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/nothing'", fixtures, dir);
    CHECK(run(args) == 2);
    snprintf(args, sizeof args, "inspect '%s/tiny' --json -", fixtures);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "inspect '%s/tiny_tanh.safetensors'", fixtures);
    CHECK(run(args) == 2); /* a fixture is not a checkpoint */
}

static void inspect_should_report_statistics(void) {
    char a[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_error err = {0};
    g2f_inspect_result r;
    CHECK(g2f_model_open(a, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    CHECK(g2f_inspect_run(m, &r, &err) == G2F_OK);
    CHECK(r.n_layers == 4 && r.ffn_params == 2 * 64 * 256 + 256 + 64);
    const g2f_stats *s = &r.layers[0].stats[G2F_FFN_FC_W];
    CHECK(s->count == 64 * 256 && s->nan == 0 && s->inf == 0);
    CHECK(s->min < s->mean && s->mean < s->max && s->std > 0.1 && s->std < 0.5);
    CHECK(strcmp(r.layers[3].tensor[G2F_FFN_PROJ_B]->name, "transformer.h.3.mlp.c_proj.bias") == 0);
    g2f_inspect_result_free(&r);
    g2f_model_close(m);
    const float v[5] = {1, 2, NAN, INFINITY, 3};
    g2f_stats st;
    g2f_stats_compute(v, 5, &st);
    CHECK(st.nan == 1 && st.inf == 1 && st.min == 1 && st.max == 3 && st.mean == 2);
    CHECK_NEAR(st.std, 0.816496580927726, 1e-12);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "diff") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(diff_should_classify_each_kind_of_port);
    RUN(diff_and_inspect_should_exit_with_documented_codes);
    RUN(inspect_should_report_statistics);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
