/* diff: each kind of difference between an original and a "port", made here
 * from fixtures/tiny; and inspect's statistics. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_diff.h"
#include "g2f_inspect.h"
#include "g2f_safetensors.h"
#define ZIP_WRITER_BUF (1 << 21)
#include "pickle_writer.h"
#include "zip_writer.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

enum { MUT_NONE, MUT_F16_FILE, MUT_F16_VALUES, MUT_LINEAR, MUT_MISREAD, MUT_SWAP, MUT_SCALE, MUT_SCALE_SLIGHT, MUT_NO_BIAS, MUT_NOISE };

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
        } else if (mut == MUT_SCALE_SLIGHT && weight && fc && L == 3) {
            /* half a percent: far beyond any rounding, so a scale, not noise */
            for (uint64_t k = 0; k < x->numel; k++) f[k] *= 1.005f;
        } else if (mut == MUT_NOISE && weight && !fc && L == 0) {
            for (uint64_t k = 0; k < x->numel; k++) f[k] += rnd_unit(&seed) * 1e-3f;
        }
        bufs[n++] = f;
    }
    /* ln_2 tells n_embd, so the Linear port's layout is decided from shapes
     * (tiny's own: diff compares it, layer 0 being the only one both hold) */
    float ln[64] = {0};
    for (size_t i = 0; i < t->count; i++)
        if (!strcmp(t->tensors[i].name, "transformer.h.0.ln_2.weight")) g2f_tensor_read_f32(&t->tensors[i], 0, 64, ln);
    e[n] = (st_entry){"h.0.ln_2.weight", "F32", 1, {64}, ln, sizeof ln};
    bufs[n++] = NULL;
    for (size_t i = 0; i < n - 1; i++)
        if (mut == MUT_LINEAR || mut == MUT_MISREAD) memmove(names[i], names[i] + 12, strlen(names[i]) - 11);
    if (mut != MUT_LINEAR && mut != MUT_MISREAD) e[n - 1].name = "transformer.h.0.ln_2.weight";
    CHECK(st_write(dst, NULL, e, n, 1) == 0);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    g2f_safetensors_close(st);
}

/* Runs diff tiny vs port (the FFN alone for write_port's FFN-only files, as
 * --only ffn does, everything for a whole copy). */
/* diff of two paths in scope; 0 (the error printed) when it cannot run. */
static int diff_paths(const char *a, const char *b, g2f_diff_scope scope, g2f_diff_result *r) {
    g2f_model *ma = NULL, *mb = NULL;
    g2f_error err = {0};
    int ok = g2f_model_open(a, NULL, &ma, &err) == G2F_OK && g2f_model_open(b, NULL, &mb, &err) == G2F_OK &&
             g2f_diff_run_scoped(ma, mb, scope, r, &err) == G2F_OK;
    if (!ok) fprintf(stderr, "%s vs %s: %s\n", a, b, err.msg);
    g2f_model_close(ma);
    g2f_model_close(mb);
    return ok;
}

static int diff_port_scoped(const char *name, g2f_diff_scope scope, g2f_diff_result *r) {
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(b, sizeof b, "%s/%s", dir, name);
    return diff_paths(a, b, scope, r);
}

static int diff_port(const char *name, g2f_diff_result *r) { return diff_port_scoped(name, G2F_DIFF_SCOPE_FFN, r); }

static void diff_should_classify_each_kind_of_port(void) {
    typedef struct port_case {
        const char *file;
        int mut, equivalent;
        size_t layer;
        int tensor;
        g2f_diff_kind kind;
    } port_case;
    static const port_case cases[] = {
        {"same.safetensors", MUT_NONE, 1, 0, G2F_FFN_FC_W, G2F_DIFF_IDENTICAL},
        {"f16.safetensors", MUT_F16_FILE, 1, 2, G2F_FFN_PROJ_W, G2F_DIFF_ROUNDED},
        {"f16vals.safetensors", MUT_F16_VALUES, 0, 1, G2F_FFN_FC_W, G2F_DIFF_F16_ROUNDED},
        {"linear.safetensors", MUT_LINEAR, 1, 3, G2F_FFN_PROJ_W, G2F_DIFF_IDENTICAL},
        {"misread.safetensors", MUT_MISREAD, 0, 0, G2F_FFN_FC_W, G2F_DIFF_TRANSPOSED},
        {"swap.safetensors", MUT_SWAP, 0, 1, G2F_FFN_PROJ_W, G2F_DIFF_FROM_LAYER},
        {"scaled.safetensors", MUT_SCALE, 0, 3, G2F_FFN_FC_W, G2F_DIFF_SCALED},
        {"scaled_slightly.safetensors", MUT_SCALE_SLIGHT, 0, 3, G2F_FFN_FC_W, G2F_DIFF_SCALED},
        {"nobias.safetensors", MUT_NO_BIAS, 0, 2, G2F_FFN_FC_B, G2F_DIFF_MISSING},
        {"noise.safetensors", MUT_NOISE, 0, 0, G2F_FFN_PROJ_W, G2F_DIFF_DIFFERENT},
    };
    /* each with the tensors read out of the files and viewed in the mapping (g2f_model_tensor_read) */
    for (size_t i = 0; i < 2 * (sizeof cases / sizeof cases[0]); i++) {
        const port_case *c = &cases[i / 2];
        if (i % 2 == 0) write_port(c->file, c->mut);
        setenv("GPT2FFN_WEIGHTS", i % 2 ? "map" : "read", 1);
        g2f_diff_result r;
        int ran = diff_port(c->file, &r);
        unsetenv("GPT2FFN_WEIGHTS");
        if (!ran) { check_failures++; continue; }
        const g2f_diff_tensor *t = &r.tensors[c->layer][c->tensor];
        if (r.equivalent != c->equivalent || t->kind != c->kind) {
            fprintf(stderr, "%s: equivalent %d (want %d), layer %zu %s is %s (want %s)\n", c->file, r.equivalent,
                    c->equivalent, c->layer, g2f_model_tensor_role(c->tensor),
                    g2f_diff_kind_name(t->kind), g2f_diff_kind_name(c->kind));
            check_failures++;
        }
        if (c->kind == G2F_DIFF_FROM_LAYER) CHECK(t->from_layer == 2);
        if (c->kind == G2F_DIFF_SCALED) CHECK_NEAR(t->scale, c->mut == MUT_SCALE ? 0.5 : 1.005, 1e-6);
        if (c->mut == MUT_SWAP) CHECK(r.tensors[0][0].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
}

static char out_text[1 << 17];

/* Runs the CLI; its standard output in out_text. */
static int run(const char *args) {
    char cmd[1600], p[400];
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s/out.txt' 2>&1", cli, args, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    FILE *fp = fopen(p, "rb");
    size_t got = fp ? fread(out_text, 1, sizeof out_text - 1, fp) : 0;
    out_text[got] = '\0';
    if (fp) fclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void diff_and_inspect_should_exit_with_documented_codes(void) {
    char args[1000];
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/f16.safetensors' --only ffn", fixtures, dir);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/f16.safetensors'", fixtures, dir);
    CHECK(run(args) == 1); /* the FFN alone: everything else is held by tiny only */
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/f16.safetensors' --only attn", fixtures, dir);
    CHECK(run(args) == 2);
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
    /* the same statistics with every tensor read out of the file (g2f_model_tensor_read) */
    setenv("GPT2FFN_WEIGHTS", "read", 1);
    g2f_inspect_result rr;
    CHECK(g2f_inspect_run(m, &rr, &err) == G2F_OK);
    unsetenv("GPT2FFN_WEIGHTS");
    for (size_t L = 0; L < r.n_layers && rr.n_layers == r.n_layers; L++)
        for (int k = 0; k < G2F_LAYER_TENSORS; k++)
            CHECK(rr.layers[L].tensor[k] == r.layers[L].tensor[k] &&
                  memcmp(&rr.layers[L].stats[k], &r.layers[L].stats[k], sizeof(g2f_stats)) == 0);
    g2f_inspect_result_free(&rr);
    g2f_inspect_result_free(&r);
    g2f_model_close(m);
    const float v[5] = {1, 2, NAN, INFINITY, 3};
    g2f_stats st;
    g2f_stats_compute(v, 5, &st);
    CHECK(st.nan == 1 && st.inf == 1 && st.min == 1 && st.max == 3 && st.mean == 2);
    CHECK_NEAR(st.std, 0.816496580927726, 1e-12);
}

/* ---- tensors larger than diff's blocks ----------------------------------- */

enum { BD = 192, BH = 768 }; /* 147456 elements a weight: three blocks of 65536 and a part */

/* Two layers with weights w[L][k] (logical order: c_fc (BD, BH), c_proj
 * (BH, BD)), written Conv1D, or Linear (each weight transposed in the file). */
static void write_big(const char *name, float *const w[2][4], int linear) {
    char path[400], names[9][64];
    st_entry e[9];
    float *tr[2][2] = {{NULL, NULL}, {NULL, NULL}};
    static float ln[BD];
    size_t n = 0;
    for (int L = 0; L < 2; L++)
        for (int k = 0; k < 4; k++) {
            static const char *const role[] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
            uint64_t r = k == 0 ? BD : BH, c = k == 0 ? BH : BD, len = k == 1 ? BH : k == 3 ? BD : r * c;
            snprintf(names[n], sizeof names[n], "h.%d.mlp.%s", L, role[k]);
            const float *data = w[L][k];
            if (linear && (k == 0 || k == 2)) {
                float *t = tr[L][k / 2] = malloc(len * sizeof *t);
                for (uint64_t i = 0; i < r; i++)
                    for (uint64_t j = 0; j < c; j++) t[j * r + i] = data[i * c + j];
                data = t;
                e[n] = (st_entry){names[n], "F32", 2, {c, r}, data, len * 4};
            } else {
                e[n] = (st_entry){names[n], "F32", k == 1 || k == 3 ? 1 : 2, {k == 1 || k == 3 ? len : r, c}, data,
                                  len * 4};
            }
            n++;
        }
    e[n++] = (st_entry){"h.0.ln_2.weight", "F32", 1, {BD}, ln, sizeof ln};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    CHECK(st_write(path, NULL, e, n, 1) == 0);
    for (int L = 0; L < 2; L++) free(tr[L][0]), free(tr[L][1]);
}

static int diff_dirs(const char *a, const char *b, g2f_diff_result *r) {
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    return diff_paths(pa, pb, G2F_DIFF_SCOPE_ALL, r);
}

static char *slurp_cmd(const char *cmd) {
    FILE *p = popen(cmd, "r");
    static char buf[1 << 16];
    size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[n] = '\0';
    if (p) pclose(p);
    return strdup(buf);
}

/* Blocks are merged in order into what one serial walk over the logical
 * values finds (largest difference and where, the rounding tests over every
 * block, even those that waited), whatever the layouts and the threads. */
static void diff_should_stream_tensors_larger_than_a_block(void) {
    static float base[2][4][BH * BD], other[2][4][BH * BD];
    float *wa[2][4], *wb[2][4];
    uint64_t s = 5;
    for (int L = 0; L < 2; L++)
        for (int k = 0; k < 4; k++) {
            size_t n = k == 1 ? BH : k == 3 ? BD : (size_t)BH * BD;
            for (size_t i = 0; i < n; i++) base[L][k][i] = other[L][k][i] = rnd_unit(&s) * 0.3f;
            wa[L][k] = base[L][k];
            wb[L][k] = other[L][k];
        }
    write_big("big_a", wa, 0);
    write_big("big_a_linear", wa, 1);
    /* one element off in the third block of layer 1's c_proj, logical (700, 100) */
    size_t at = 700 * BD + 100;
    other[1][2][at] += 0.125f;
    write_big("big_b", wb, 0);
    write_big("big_b_linear", wb, 1);
    const char *pairs[][2] = {{"big_a", "big_a_linear"}, {"big_a", "big_b"}, {"big_a", "big_b_linear"},
                              {"big_a_linear", "big_b_linear"}};
    for (int i = 0; i < 4; i++) {
        g2f_diff_result r;
        if (!diff_dirs(pairs[i][0], pairs[i][1], &r)) {
            check_failures++;
            continue;
        }
        const g2f_diff_tensor *t = &r.tensors[1][G2F_FFN_PROJ_W];
        if (i == 0) {
            CHECK(r.equivalent && t->kind == G2F_DIFF_IDENTICAL && t->max_abs == 0);
        } else {
            double want = fabs((double)base[1][2][at] - other[1][2][at]);
            CHECK(!r.equivalent && r.differing == 1 && t->kind == G2F_DIFF_DIFFERENT);
            CHECK(t->max_abs == want && t->worst == at);
            CHECK(t->max_rel == want / fabs(base[1][2][at]));
        }
        g2f_diff_result_free(&r);
    }
    /* f16-rounded values in the last block only: the blocks before it are
     * identical, their rounding test waits, and then rules f16_rounded out */
    for (size_t i = 0; i < (size_t)BH * BD; i++) {
        other[1][2][i] = base[1][2][i];
        if (i >= 2 * 65536) other[1][2][i] = g2f_f16_to_f32(g2f_f32_to_f16(base[1][2][i]));
    }
    write_big("big_part_f16", wb, 0);
    g2f_diff_result r;
    if (diff_dirs("big_a", "big_part_f16", &r)) {
        CHECK(r.tensors[1][G2F_FFN_PROJ_W].kind == G2F_DIFF_DIFFERENT);
        g2f_diff_result_free(&r);
    }
    for (size_t i = 0; i < (size_t)BH * BD; i++) other[1][2][i] = g2f_f16_to_f32(g2f_f32_to_f16(base[1][2][i]));
    write_big("big_all_f16", wb, 1);
    if (diff_dirs("big_a", "big_all_f16", &r)) {
        CHECK(r.tensors[1][G2F_FFN_PROJ_W].kind == G2F_DIFF_F16_ROUNDED);
        CHECK(r.tensors[1][G2F_FFN_FC_W].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
    /* the same report, byte for byte, on one thread and on three */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 '%s' diff '%s/big_a' '%s/big_b_linear' --json -", cli, dir, dir);
    char *one = slurp_cmd(cmd);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=3 '%s' diff '%s/big_a' '%s/big_b_linear' --json -", cli, dir, dir);
    char *three = slurp_cmd(cmd);
    CHECK(one && three && strlen(one) > 1000 && !strcmp(one, three));
    free(one);
    free(three);
}

/* ---- copies of a checkpoint with edits ----------------------------------- */

/* An edit of a copy: called for each tensor of the source table t (its
 * name, float values and shape, which it may change in place); returns 0 to
 * drop it. */
typedef int (*edit_fn)(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim);

typedef struct extra {
    const char *name;
    uint64_t rows, cols;
    float value; /* every element; NAN: data's values times `value2` */
    float value2;
    const float *data;
} extra;

static float tiny_wte[96 * 64], tl_wu[64 * 96]; /* tiny's wte, tiny_tl's W_U [d, vocab] */

static void read_tensor(const char *rel, const char *name, float *dst, size_t n) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", fixtures, rel);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(path, &st, &err) != G2F_OK) { check_failures++; return; }
    const g2f_tensor *t = g2f_table_find(g2f_safetensors_table(st), name);
    CHECK(t && t->numel == n);
    if (t && t->numel == n) g2f_tensor_read_f32(t, 0, n, dst);
    g2f_safetensors_close(st);
}

/* dir/name/model.safetensors: every tensor of src (a safetensors file under
 * fixtures) through edit, as F32, then the extras. */
static void write_copy(const char *src_rel, const char *name, edit_fn edit, const extra *extras, size_t n_extras) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/%s", fixtures, src_rel);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    mkdir(dst, 0700);
    snprintf(dst, sizeof dst, "%s/%s/model.safetensors", dir, name);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) { check_failures++; return; }
    const g2f_table *t = g2f_safetensors_table(st);
    static st_entry e[160];
    float *bufs[160] = {0};
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 150; i++) {
        const g2f_tensor *x = &t->tensors[i];
        float *f = bufs[n] = malloc((size_t)x->numel * sizeof *f + 4);
        g2f_tensor_read_f32(x, 0, x->numel, f);
        e[n] = (st_entry){x->name, "F32", x->ndim, {0}, f, (size_t)x->numel * sizeof *f};
        for (size_t dd = 0; dd < x->ndim; dd++) e[n].shape[dd] = x->shape[dd];
        if (x->dtype == G2F_DTYPE_BOOL) { /* TransformerLens' mask: kept as it is */
            e[n].dtype = "BOOL";
            memcpy(f, x->data, (size_t)x->nbytes);
            e[n].nbytes = (size_t)x->nbytes;
        } else if (edit && !edit(t, x->name, f, e[n].shape, x->ndim)) {
            free(f);
            bufs[n] = NULL;
            continue;
        }
        n++;
    }
    for (size_t k = 0; k < n_extras; k++) {
        size_t cnt = (size_t)(extras[k].rows * extras[k].cols);
        float *f = bufs[n] = malloc(cnt * sizeof *f);
        for (size_t i = 0; i < cnt; i++) f[i] = isnan(extras[k].value) ? extras[k].data[i] * extras[k].value2 : extras[k].value;
        e[n] = (st_entry){extras[k].name, "F32", 2, {extras[k].rows, extras[k].cols}, f, cnt * sizeof *f};
        n++;
    }
    CHECK(st_write(dst, NULL, e, n, 1) == 0);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    g2f_safetensors_close(st);
}

/* A bias one file lacks: the difference is the bias itself, and the text
 * says how large it is, not a max_abs of 0. */
/* Every tensor of tiny copied, with three of the block's changed: layer 2's
 * ln_1.weight halved, layer 1's attn.c_proj.weight taken from layer 3, layer
 * 0's attn.c_attn.bias given noise. diff names each; the FFN's and the rest
 * stay identical; against tiny's FFN-only GGUF export the block's tensors are
 * not compared, and the FFN is still equivalent. */
/* tiny with layer 2's ln_1.weight halved, layer 1's attn.c_proj.weight
 * taken from layer 3, layer 0's attn.c_attn.bias given noise. */
static int blockport_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    uint64_t n = ndim == 2 ? shape[0] * shape[1] : shape[0], seed = 7;
    if (!strcmp(name, "transformer.h.1.attn.c_proj.weight"))
        g2f_tensor_read_f32(g2f_table_find(t, "transformer.h.3.attn.c_proj.weight"), 0, n, v);
    if (!strcmp(name, "transformer.h.2.ln_1.weight"))
        for (uint64_t k = 0; k < n; k++) v[k] *= 0.5f;
    if (!strcmp(name, "transformer.h.0.attn.c_attn.bias"))
        for (uint64_t k = 0; k < n; k++) v[k] += rnd_unit(&seed) * 1e-2f;
    return 1;
}

static void diff_should_compare_every_block_tensor(void) {
    write_copy("tiny/model.safetensors", "blockport", blockport_edit, NULL, 0);
    g2f_error err = {0};
    g2f_diff_result r;
    if (!diff_port_scoped("blockport", G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    /* every layer's tensors and wte, wpe, ln_f (the head is tied in both: not a tensor) */
    CHECK(!r.equivalent && r.differing == 3 && r.compared == 4 * G2F_LAYER_TENSORS + 4 && !r.held_by_one);
    CHECK(r.ends[G2F_END_HEAD].kind == G2F_DIFF_TIED && r.ends[G2F_END_WTE].kind == G2F_DIFF_IDENTICAL);
    CHECK(r.tensors[2][G2F_BLK_LN1_W].kind == G2F_DIFF_SCALED);
    CHECK_NEAR(r.tensors[2][G2F_BLK_LN1_W].scale, 0.5, 1e-6);
    CHECK(r.tensors[1][G2F_BLK_APROJ_W].kind == G2F_DIFF_FROM_LAYER && r.tensors[1][G2F_BLK_APROJ_W].from_layer == 3);
    CHECK(r.tensors[0][G2F_BLK_ATTN_B].kind == G2F_DIFF_DIFFERENT);
    CHECK(r.tensors[3][G2F_BLK_ATTN_W].kind == G2F_DIFF_IDENTICAL && r.tensors[3][G2F_BLK_LN2_B].kind == G2F_DIFF_IDENTICAL);
    g2f_diff_result_free(&r);
    /* tiny against its FFN-only GGUF export (which keeps ln_2 and wte): the
     * attention, ln_1, wpe and ln_f are held by tiny only, so not equivalent;
     * --only ffn and --only block say what the export is a port of */
    g2f_model *ma = NULL, *mb = NULL;
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(b, sizeof b, "%s/formats2/tiny.gguf", fixtures);
    CHECK(g2f_model_open(a, NULL, &ma, &err) == G2F_OK && g2f_model_open(b, NULL, &mb, &err) == G2F_OK);
    for (int sc = 0; ma && mb && sc < G2F_DIFF_SCOPE_COUNT; sc++) {
        if (g2f_diff_run_scoped(ma, mb, (g2f_diff_scope)sc, &r, &err) != G2F_OK) { check_failures++; continue; }
        const g2f_diff_tensor *w = &r.tensors[1][G2F_BLK_ATTN_W];
        if (sc == G2F_DIFF_SCOPE_FFN) {
            CHECK(r.equivalent && r.differing == 0 && r.compared == 4 * G2F_FFN_TENSORS && !r.held_by_one);
            CHECK(w->kind == G2F_DIFF_OUTSIDE && r.tensors[1][G2F_BLK_LN2_W].kind == G2F_DIFF_OUTSIDE);
            CHECK(r.ends[G2F_END_WTE].kind == G2F_DIFF_OUTSIDE && r.excused == 4 * 8 + 4); /* and wte, wpe, ln_f */
        } else {
            CHECK(!r.equivalent && r.differing == 0 && w->kind == G2F_DIFF_HELD_BY_ONE && w->missing_in == 'A');
            CHECK(r.tensors[1][G2F_BLK_LN2_W].kind == G2F_DIFF_IDENTICAL && !strcmp(w->name_a, "transformer.h.1.attn.c_attn.weight"));
            /* per layer ln_1 and attention (weights and biases) only in tiny; wpe and ln_f too when all */
            CHECK(r.held_by_one == 4 * 6 + (sc == G2F_DIFF_SCOPE_ALL ? 3 : 0));
            CHECK(sc != G2F_DIFF_SCOPE_ALL || r.ends[G2F_END_WTE].kind == G2F_DIFF_IDENTICAL);
        }
        g2f_diff_result_free(&r);
    }
    g2f_model_close(ma);
    g2f_model_close(mb);
}

static void diff_should_give_the_size_of_a_missing_bias(void) {
    write_port("nobias2.safetensors", MUT_NO_BIAS);
    g2f_diff_result r;
    if (!diff_port("nobias2.safetensors", &r)) {
        check_failures++;
        return;
    }
    const g2f_diff_tensor *t = &r.tensors[2][G2F_FFN_FC_B];
    CHECK(t->kind == G2F_DIFF_MISSING && t->missing_in == 'A' && t->missing_values == 256);
    char path[400];
    snprintf(path, sizeof path, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(path, &st, &err) == G2F_OK) {
        const g2f_tensor *b = g2f_table_find(g2f_safetensors_table(st), "transformer.h.2.mlp.c_fc.bias");
        float v[256];
        g2f_tensor_read_f32(b, 0, 256, v);
        double mx = 0;
        for (int i = 0; i < 256; i++) mx = fabs(v[i]) > mx ? fabs(v[i]) : mx;
        CHECK(t->max_abs == mx && mx > 0 && t->max_rel == 1);
    }
    g2f_safetensors_close(st);
    g2f_diff_result_free(&r);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' diff '%s/tiny' '%s/nobias2.safetensors'", cli, fixtures, dir);
    char *text = slurp_cmd(cmd);
    CHECK_CONTAINS(text, "missing (only A has it: 256 values, largest |value| ");
    CHECK(text && !strstr(text, "c_fc.bias        0.000e+00"));
    free(text);
}

/* ---- every tensor, and the layout of every 2-D weight -------------------- */

static int scale_wte_zero_lnf_bias(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t;
    uint64_t n = ndim == 2 ? shape[0] * shape[1] : shape[0];
    if (!strcmp(name, "transformer.wte.weight"))
        for (uint64_t i = 0; i < n; i++) v[i] *= 1.5f;
    if (!strcmp(name, "transformer.ln_f.bias"))
        for (uint64_t i = 0; i < n; i++) v[i] = 0;
    return 1;
}

static int keep(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t;
    (void)name, (void)v, (void)shape, (void)ndim;
    return 1;
}

/* Runs the CLI on fixtures/a and dir/b; its exit code (the text in out_text). */
static int diff_cli(const char *a, const char *b, const char *opts) {
    char args[1200];
    snprintf(args, sizeof args, "diff '%s/%s' '%s/%s' %s", fixtures, a, dir, b, opts);
    return run(args);
}

/* Class 1 of issue 23: the model's ends and every other tensor count. On
 * main a copy of tiny with wte scaled by 1.5 and ln_f.bias zeroed was
 * "EQUIVALENT (0 of 48 tensors differ)", exit 0; a tensor only one file holds
 * was never seen. */
static void diff_should_compare_the_ends_and_every_other_tensor(void) {
    read_tensor("tiny/model.safetensors", "transformer.wte.weight", tiny_wte, 96 * 64);
    write_copy("tiny/model.safetensors", "ends", scale_wte_zero_lnf_bias, NULL, 0);
    g2f_diff_result r;
    if (diff_port_scoped("ends", G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(!r.equivalent && r.differing == 2 && !r.held_by_one);
        CHECK(r.ends[G2F_END_WTE].kind == G2F_DIFF_SCALED);
        CHECK_NEAR(r.ends[G2F_END_WTE].scale, 1.5, 1e-6);
        CHECK(r.ends[G2F_END_LNF_B].kind == G2F_DIFF_DIFFERENT && r.ends[G2F_END_WPE].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
    CHECK(diff_cli("tiny", "ends", "") == 1);
    CHECK_CONTAINS(out_text, "wte                  ");
    CHECK_CONTAINS(out_text, "scaled:1.5");
    CHECK(diff_cli("tiny", "ends", "--only block") == 0); /* a port of the blocks says so */
    /* a tensor one file holds (a classifier head), a buffer, an untied head */
    static const extra score = {"score.weight", 2, 64, 0.25f, 0, NULL}, mask = {"transformer.h.0.attn.bias", 1, 32, 1, 0, NULL};
    const extra head_copy = {"lm_head.weight", 96, 64, NAN, 1, tiny_wte}, head_twice = {"lm_head.weight", 96, 64, NAN, 2, tiny_wte};
    write_copy("tiny/model.safetensors", "score", keep, &score, 1);
    CHECK(diff_cli("tiny", "score", "") == 1);
    CHECK_CONTAINS(out_text, "score.weight                 -           -  held_by_one (only B holds it)  <-");
    CHECK_CONTAINS(out_text, "held by one file only: B's score.weight");
    CHECK(diff_cli("tiny", "score", "--json -") == 1);
    CHECK_CONTAINS(out_text, "\"held_by_one\":\t1");
    CHECK_CONTAINS(out_text, "\"tensor\":\t\"score.weight\",\n\t\t\t\"layer\":\tnull,\n\t\t\t\"held_by\":\t\"B\"");
    write_copy("tiny/model.safetensors", "mask", keep, &mask, 1);
    CHECK(diff_cli("tiny", "mask", "") == 0);
    CHECK_CONTAINS(out_text, "1 buffer (h.0.attn.bias): not parameters (causal masks), not compared");
    write_copy("tiny/model.safetensors", "head_copy", keep, &head_copy, 1);
    CHECK(diff_cli("tiny", "head_copy", "") == 0);
    CHECK_CONTAINS(out_text, "A stores no head (tied to its wte): B's head is compared with A's wte");
    write_copy("tiny/model.safetensors", "head_twice", keep, &head_twice, 1);
    CHECK(diff_cli("tiny", "head_twice", "") == 1);
    CHECK_CONTAINS(out_text, "head                 ");
    CHECK_CONTAINS(out_text, "scaled:2");
}

static int transpose_layer1_attn_proj(const g2f_table *tab, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)tab;
    (void)shape, (void)ndim;
    if (strcmp(name, "transformer.h.1.attn.c_proj.weight")) return 1;
    float t[64 * 64];
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++) t[j * 64 + i] = v[i * 64 + j];
    memcpy(v, t, sizeof t);
    return 1;
}

/* nanoGPT's layout (nn.Linear [out, in]): every 2-D weight of the blocks
 * transposed, as its from_pretrained does, but layer 2's c_attn: the Conv1D
 * bytes kept and only the shape changed to [3d, d] (a misread buffer). */
static int linear_but_c_attn_2(const g2f_table *tab, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)tab;
    if (ndim != 2 || !strstr(name, ".h.") || !strstr(name, "weight")) return 1;
    uint64_t r = shape[0], c = shape[1];
    shape[0] = c, shape[1] = r;
    if (!strcmp(name, "transformer.h.2.attn.c_attn.weight")) return 1;
    float *t = malloc(r * c * sizeof *t);
    for (uint64_t i = 0; i < r; i++)
        for (uint64_t j = 0; j < c; j++) t[j * r + i] = v[i * c + j];
    memcpy(v, t, r * c * sizeof *t);
    free(t);
    return 1;
}

/* Class 2 of issue 23: the layout verdicts for every 2-D weight. On main the
 * square attn.c_proj copied without its transpose and the misread c_attn
 * buffer were "different", and the heads were not compared at all. */
static void diff_should_name_the_layout_of_every_2d_weight(void) {
    g2f_diff_result r;
    write_copy("tiny/model.safetensors", "proj_t", transpose_layer1_attn_proj, NULL, 0);
    if (diff_port_scoped("proj_t", G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(r.tensors[1][G2F_BLK_APROJ_W].kind == G2F_DIFF_TRANSPOSED && r.differing == 1);
        g2f_diff_result_free(&r);
    }
    CHECK(diff_cli("tiny", "proj_t", "") == 1);
    CHECK_CONTAINS(out_text, "    1 attn.c_proj.weight   ");
    CHECK_CONTAINS(out_text, "transposed  <-");
    write_copy("tiny/model.safetensors", "linear_misread", linear_but_c_attn_2, NULL, 0);
    if (diff_port_scoped("linear_misread", G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(r.tensors[2][G2F_BLK_ATTN_W].kind == G2F_DIFF_TRANSPOSED && r.differing == 1);
        CHECK(r.tensors[1][G2F_BLK_ATTN_W].kind == G2F_DIFF_IDENTICAL); /* Linear, faithfully */
        g2f_diff_result_free(&r);
    }
    CHECK(diff_cli("tiny", "linear_misread", "") == 1);
    CHECK_CONTAINS(out_text, "    2 attn.c_attn.weight   ");
    /* the head: TransformerLens' W_U [d, vocab] against its bytes saved as an
     * HF lm_head [vocab, d] without the transpose */
    read_tensor("formats2/tiny_tl.safetensors", "unembed.W_U", tl_wu, 64 * 96);
    const extra wu = {"lm_head.weight", 96, 64, NAN, 1, tl_wu};
    write_copy("tiny/model.safetensors", "wu_bytes", keep, &wu, 1);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/formats2/tiny_tl.safetensors", fixtures);
    snprintf(b, sizeof b, "%s/wu_bytes", dir);
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(r.ends[G2F_END_HEAD].kind == G2F_DIFF_TRANSPOSED && r.ends[G2F_END_HEAD_B].kind == G2F_DIFF_ZERO_BIAS);
    g2f_diff_result_free(&r);
}

static int perturb_tl_wk1(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t;
    (void)shape, (void)ndim;
    if (!strcmp(name, "blocks.1.attn.W_K")) v[(1 * 64 + 7) * 16 + 5] += 0.01f; /* [head 1, input 7, d_head 5] */
    return 1;
}

/* TransformerLens' W_Q/W_K/W_V/W_O are compared as the c_attn / c_proj they
 * stand for; on main they were "not_compared" and a changed W_K left the
 * diff EQUIVALENT. */
static void diff_should_compare_split_attention_as_c_attn(void) {
    write_copy("formats2/tiny_tl.safetensors", "tl_wk", perturb_tl_wk1, NULL, 0);
    g2f_diff_result r;
    if (diff_port_scoped("tl_wk", G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(r.tensors[1][G2F_BLK_ATTN_W].kind == G2F_DIFF_DIFFERENT && r.differing == 1);
        CHECK(r.tensors[0][G2F_BLK_ATTN_W].kind == G2F_DIFF_IDENTICAL && r.tensors[0][G2F_BLK_APROJ_W].kind == G2F_DIFF_IDENTICAL);
        CHECK(r.tensors[1][G2F_BLK_ATTN_W].name_b && strstr(r.tensors[1][G2F_BLK_ATTN_W].name_b, "W_Q + W_K + W_V"));
        /* the worst element: logical (input 7, k's columns at d + head 1 * 16 + 5) */
        CHECK(r.tensors[1][G2F_BLK_ATTN_W].worst == 7 * 192 + 64 + 16 + 5);
        g2f_diff_result_free(&r);
    } else {
        check_failures++;
    }
    CHECK(diff_cli("tiny", "tl_wk", "") == 1);
    CHECK(diff_cli("formats2/tiny_tl.safetensors", "tl_wk", "") == 1);
}

/* tiny with one value of layer 1's c_fc.weight made +inf, -inf or NaN */
static float nonfinite_value;
static int nonfinite_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t, (void)shape, (void)ndim;
    if (!strcmp(name, "transformer.h.1.mlp.c_fc.weight")) v[3 * 256 + 5] = nonfinite_value;
    return 1;
}

/* Two files holding the same bits, an Inf or a NaN at the same place: the
 * same bytes, never "identical" nor equivalent (NaN or Inf never passes). */
static void diff_should_never_count_nonfinite_values_as_equal(void) {
    const float values[] = {INFINITY, -INFINITY, NAN};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        nonfinite_value = values[k];
        write_copy("tiny/model.safetensors", "nonfinite_a", nonfinite_edit, NULL, 0);
        write_copy("tiny/model.safetensors", "nonfinite_b", nonfinite_edit, NULL, 0);
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/nonfinite_a", dir);
        snprintf(b, sizeof b, "%s/nonfinite_b", dir);
        g2f_diff_result r;
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; continue; }
        const g2f_diff_tensor *w = &r.tensors[1][G2F_FFN_FC_W];
        CHECK(!r.equivalent && r.differing == 1 && !w->equivalent && w->kind == G2F_DIFF_DIFFERENT);
        CHECK(r.tensors[0][G2F_FFN_FC_W].kind == G2F_DIFF_IDENTICAL); /* the others stay identical */
        g2f_diff_result_free(&r);
    }
}

/* tiny's weights, byte for byte, under a config.json that changes one value */
static void write_config_variant(const char *name, const char *from, const char *to) {
    char src[400], dst[400];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    mkdir(dst, 0700);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(dst, sizeof dst, "%s/%s/model.safetensors", dir, name);
    CHECK(copy_file(src, dst) == 0);
    snprintf(src, sizeof src, "%s/tiny/config.json", fixtures);
    char *text = read_whole_file(src, NULL), *at = text ? strstr(text, from) : NULL;
    CHECK(at != NULL);
    if (!at) return free(text);
    char out[4096];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    snprintf(dst, sizeof dst, "%s/%s/config.json", dir, name);
    CHECK(write_bytes(dst, out, strlen(out)) == 0);
    free(text);
}

/* The same tensors under configs that define other models: another head
 * count (another attention), another GELU, another LayerNorm epsilon. Not
 * equivalent, and said; n_head and the epsilon are outside --only ffn. */
static void diff_should_compare_what_the_configs_define(void) {
    /* the GELU a checkpoint's own code runs counts as said: nanoGPT's training checkpoint runs erf */
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(b, sizeof b, "%s/torch/nanogpt_full_ckpt.pt", fixtures);
    g2f_diff_result nr;
    if (diff_paths(a, b, G2F_DIFF_SCOPE_FFN, &nr)) {
        CHECK(!nr.equivalent && nr.differing == 0 && strstr(nr.config_msg, "erf in B (the checkpoint's own code)"));
        g2f_diff_result_free(&nr);
    } else {
        check_failures++;
    }
    static const struct {
        const char *name, *from, *to, *says;
        int in_ffn;
    } cases[] = {{"cfg_nh8", "\"n_head\": 4", "\"n_head\": 8", "n_head 4 in A, 8 in B", 0},
                 {"cfg_erf", "\"gelu_new\"", "\"gelu\"", "the GELU: tanh in A (gelu_new), erf in B (gelu)", 1},
                 {"cfg_eps", "1e-05", "1e-12", "layer_norm_epsilon", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_config_variant(cases[i].name, cases[i].from, cases[i].to);
        g2f_diff_result r;
        for (int ffn = 0; ffn < 2; ffn++) {
            if (!diff_port_scoped(cases[i].name, ffn ? G2F_DIFF_SCOPE_FFN : G2F_DIFF_SCOPE_ALL, &r)) {
                check_failures++;
                continue;
            }
            int differs = !ffn || cases[i].in_ffn;
            CHECK(r.differing == 0 && r.compared > 0 && r.equivalent == !differs);
            CHECK(differs ? strstr(r.config_msg, cases[i].says) != NULL : r.config_msg[0] == '\0');
            g2f_diff_result_free(&r);
        }
    }
}

/* dir/name: torch.save of a flat state dict, every tensor of tiny under "model." (a wrapper
 * module's prefix) and then the extra ones ([16, 1], every element its value), all views
 * into one storage. */
static void write_flat_torch(const char *name, const char *const *extra_names, const float *extra_values, size_t n_extra) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) { check_failures++; return; }
    const g2f_table *t = g2f_safetensors_table(st);
    static float store[300000];
    size_t used = 0;
    start();
    op('}');
    op('(');
    char key[200];
    for (size_t i = 0; i < t->count + n_extra; i++) {
        const g2f_tensor *x = i < t->count ? &t->tensors[i] : NULL;
        int shape[2] = {x ? (int)x->shape[0] : 16, x && x->ndim > 1 ? (int)x->shape[1] : 1}, stride[2] = {shape[1], 1};
        size_t numel = x ? (size_t)x->numel : 16;
        if (used + numel > sizeof store / sizeof store[0]) { check_failures++; break; }
        if (x) g2f_tensor_read_f32(x, 0, numel, store + used);
        else
            for (size_t k = 0; k < numel; k++) store[used + k] = extra_values[i - t->count];
        snprintf(key, sizeof key, "%s%s", x ? "model." : "", x ? x->name : extra_names[i - t->count]);
        ustr(key);
        tensor("FloatStorage", "0", 300000, (int)used, x ? (int)x->ndim : 2, shape, stride);
        used += numel;
    }
    op('u');
    op('.');
    g2f_safetensors_close(st);
    zent e[3] = {{"archive/data.pkl", pk, pn, 0, 0}, {"archive/byteorder", "little", 6, 0, 0},
                 {"archive/data/0", store, sizeof store, 0, 0}};
    size_t n = zip_write(e, 3);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    CHECK(write_bytes(dst, zbuf, n) == 0);
}

/* Beside a state dict under "model.", only a training checkpoint's own keys are training state:
 * a flat state dict of a wrapper module reads the same, and its other parameters (a score head)
 * are compared, not excused. */
static void diff_should_excuse_only_training_keys(void) {
    const char *const names[] = {"score.weight", "optimizer.state.0.exp_avg", "iter_num"};
    const float values[] = {0.0f, 1.0f, 2.0f};
    write_flat_torch("wrapper.pt", names, values, 3);
    /* the same weights with a score head of ones */
    const extra ones = {"score.weight", 16, 1, 1.0f, 0, NULL};
    write_copy("tiny/model.safetensors", "scored", NULL, &ones, 1);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/scored", dir);
    snprintf(b, sizeof b, "%s/wrapper.pt", dir);
    g2f_diff_result r;
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    size_t training = 0, score = 0;
    for (size_t i = 0; i < r.n_others; i++) {
        training += r.others[i].kind == G2F_DIFF_TRAINING;
        if (r.others[i].label && !strcmp(r.others[i].label, "score.weight")) {
            score++;
            CHECK(r.others[i].kind == G2F_DIFF_DIFFERENT);
        }
    }
    CHECK(!r.equivalent && score == 1 && training == 2 && r.differing == 1);
    g2f_diff_result_free(&r);
}

/* B holds two tensors that are one name after the container prefixes: neither is taken for A's,
 * none is dropped. */
static void diff_should_not_drop_a_twin_name(void) {
    const extra a1 = {"score.weight", 16, 1, 1.0f, 0, NULL};
    const extra b2[2] = {{"transformer.score.weight", 16, 1, 0.0f, 0, NULL}, {"model.score.weight", 16, 1, 1.0f, 0, NULL}};
    write_copy("tiny/model.safetensors", "twin_a", NULL, &a1, 1);
    write_copy("tiny/model.safetensors", "twin_b", NULL, b2, 2);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/twin_a", dir);
    snprintf(b, sizeof b, "%s/twin_b", dir);
    g2f_diff_result r;
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(!r.equivalent && r.held_by_one == 3 && r.n_others == 3);
    g2f_diff_result_free(&r);
}

/* One tensor of a converted copy: x's values into a malloc'd buffer (*nbytes), named dtype. */
typedef void *(*convert_fn)(const g2f_tensor *x, size_t *nbytes);

/* dir/name/model.safetensors: every float tensor of src (a safetensors path) through conv, then
 * `more` (or NULL). */
static void write_converted(const char *src, const char *name, const char *dtype, convert_fn conv,
                            const st_entry *more) {
    char dst[400];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    mkdir(dst, 0700);
    snprintf(dst, sizeof dst, "%s/%s/model.safetensors", dir, name);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) { check_failures++; return; }
    const g2f_table *t = g2f_safetensors_table(st);
    static st_entry e[160];
    void *bufs[160] = {0};
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 150; i++) {
        const g2f_tensor *x = &t->tensors[i];
        if (!g2f_dtype_is_float(x->dtype)) continue;
        size_t nb = (size_t)x->nbytes;
        const void *d = conv ? (bufs[n] = conv(x, &nb)) : x->data;
        e[n] = (st_entry){x->name, dtype, x->ndim, {0}, d, nb};
        for (size_t k = 0; k < x->ndim; k++) e[n].shape[k] = x->shape[k];
        n++;
    }
    if (more) e[n++] = *more;
    CHECK(st_write(dst, NULL, e, n, 1) == 0);
    for (size_t i = 0; i < n; i++) free(bufs[i]);
    g2f_safetensors_close(st);
}

static double f64_bump, f64_big;

/* F64: layer 1's c_fc.weight[0] times (1 + f64_bump), layer 2's c_proj.weight[0] f64_big (when nonzero) */
static void *to_f64(const g2f_tensor *x, size_t *nbytes) {
    double *d = malloc((size_t)x->numel * sizeof *d + 8);
    g2f_tensor_read_f64(x, 0, x->numel, d);
    if (!strcmp(x->name, "transformer.h.1.mlp.c_fc.weight")) d[0] *= 1 + f64_bump;
    if (f64_big != 0 && !strcmp(x->name, "transformer.h.2.mlp.c_proj.weight")) d[0] = f64_big;
    *nbytes = (size_t)x->numel * sizeof *d;
    return d;
}

static void *to_bf16(const g2f_tensor *x, size_t *nbytes) {
    float *f = malloc((size_t)x->numel * sizeof *f + 4);
    uint16_t *h = malloc((size_t)x->numel * sizeof *h + 2);
    g2f_tensor_read_f32(x, 0, x->numel, f);
    for (uint64_t k = 0; k < x->numel; k++) h[k] = g2f_f32_to_bf16(f[k]);
    free(f);
    *nbytes = (size_t)x->numel * sizeof *h;
    return h;
}

/* dir/name/model.safetensors: tiny's tensors as F64 (to_f64 with bump and big). */
static void write_f64(const char *name, double bump, double big) {
    char src[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    f64_bump = bump, f64_big = big;
    write_converted(src, name, "F64", to_f64, NULL);
}

/* F64 tensors are compared in double: a difference below float's precision, or between two
 * values beyond its range, is a difference; the same values are identical, even beyond float's
 * range; tiny's F32 values stored as F64 are identical to tiny. */
static void diff_should_compare_f64_in_double(void) {
    write_f64("f64_a", 0, 1e300);
    write_f64("f64_b", 1e-12, 1e300);
    write_f64("f64_c", 0, 1e40);
    write_f64("f64_tiny", 0, 0);
    char a[400], b[400];
    static const struct { const char *a, *b; int equivalent; } cases[] = {
        {"f64_a", "f64_a", 1}, {"f64_a", "f64_b", 0}, {"f64_a", "f64_c", 0}, {NULL, "f64_tiny", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].a) snprintf(a, sizeof a, "%s/%s", dir, cases[i].a);
        else snprintf(a, sizeof a, "%s/tiny", fixtures);
        snprintf(b, sizeof b, "%s/%s", dir, cases[i].b);
        g2f_diff_result r;
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; continue; }
        if (r.equivalent != cases[i].equivalent) fprintf(stderr, "  %s vs %s: equivalent %d\n", a, b, r.equivalent);
        CHECK(r.equivalent == cases[i].equivalent && r.differing == (size_t)!cases[i].equivalent);
        if (!cases[i].equivalent) CHECK(r.tensors[0][G2F_FFN_FC_W].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
}

static int subnormal_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t, (void)shape, (void)ndim;
    if (!strcmp(name, "transformer.h.0.mlp.c_fc.bias")) v[0] = 1e-40f, v[1] = -3e-39f;
    return 1;
}

/* dir/name/model.safetensors: dir/from's tensors rounded to BF16 (round to nearest even). */
static void write_bf16_of(const char *from, const char *name) {
    char src[400];
    snprintf(src, sizeof src, "%s/%s/model.safetensors", dir, from);
    write_converted(src, name, "BF16", to_bf16, NULL);
}

/* A BF16 port rounded correctly is equivalent, subnormal weights too (their rounding is
 * absolute: half of BF16's subnormal step), not "bf16_rounded". */
static void diff_should_accept_subnormals_rounded_to_bf16(void) {
    write_copy("tiny/model.safetensors", "sub_f32", subnormal_edit, NULL, 0);
    write_bf16_of("sub_f32", "sub_bf16");
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/sub_f32", dir);
    snprintf(b, sizeof b, "%s/sub_bf16", dir);
    g2f_diff_result r;
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(r.equivalent && r.tensors[0][G2F_FFN_FC_B].kind == G2F_DIFF_ROUNDED);
    g2f_diff_result_free(&r);
}

static int binade_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t, (void)shape, (void)ndim;
    if (!strcmp(name, "transformer.h.0.mlp.c_fc.weight"))
        v[0] = 1.0f, v[1] = -0.5f, v[2] = 1.0f + 0x1p-8f, v[3] = 1.0f + 0x1p-11f; /* [2]: a BF16 tie, [3]: an F16 one */
    return 1;
}

/* binade_bits[k] replaces element k of h.0's c_fc.weight in the narrow copy (0: keep). */
static uint16_t binade_bits[4];
static int binade_f16;

static void *to_narrow_edited(const g2f_tensor *x, size_t *nbytes) {
    float *f = malloc((size_t)x->numel * sizeof *f + 4);
    uint16_t *h = malloc((size_t)x->numel * sizeof *h + 2);
    g2f_tensor_read_f32(x, 0, x->numel, f);
    for (uint64_t k = 0; k < x->numel; k++) h[k] = binade_f16 ? g2f_f32_to_f16(f[k]) : g2f_f32_to_bf16(f[k]);
    if (!strcmp(x->name, "transformer.h.0.mlp.c_fc.weight"))
        for (int k = 0; k < 4; k++)
            if (binade_bits[k]) h[k] = binade_bits[k];
    free(f);
    *nbytes = (size_t)x->numel * sizeof *h;
    return h;
}

/* Storage rounding is the nearest value, not a relative distance: one step below 1.0 or -0.5 (the
 * bottom of a binade, where the step halves) is within 2^-8 (2^-11) of it but is not 1.0 rounded,
 * and is a difference; an exact tie rounded either way is rounding. BF16 and F16 alike. */
static void diff_should_call_one_step_off_at_a_binade_bottom_different(void) {
    write_copy("tiny/model.safetensors", "binade_f32", binade_edit, NULL, 0);
    char src[400], a[400], b[400];
    snprintf(src, sizeof src, "%s/binade_f32/model.safetensors", dir);
    snprintf(a, sizeof a, "%s/binade_f32", dir);
    snprintf(b, sizeof b, "%s/binade_narrow", dir);
    static const struct { int f16; uint16_t bits[4]; int equivalent; } cases[] = {
        {0, {0}, 1},
        {0, {0x3f7f}, 0},              /* BF16 0.99609375 for 1.0 */
        {0, {0, 0xbeff}, 0},           /* BF16 -0.49804688 for -0.5 */
        {0, {0, 0, 0x3f81}, 1},        /* the tie 1 + 2^-8 rounded up, not to even */
        {0, {0, 0, 0x3f82}, 0},        /* two steps */
        {1, {0}, 1},
        {1, {0x3bff}, 0},              /* F16 0.99951172 for 1.0 */
        {1, {0, 0, 0, 0x3c01}, 1},     /* the tie 1 + 2^-11 rounded up */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        binade_f16 = cases[i].f16;
        memcpy(binade_bits, cases[i].bits, sizeof binade_bits);
        write_converted(src, "binade_narrow", cases[i].f16 ? "F16" : "BF16", to_narrow_edited, NULL);
        g2f_diff_result r;
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_FFN, &r)) { check_failures++; continue; }
        g2f_diff_kind k = r.tensors[0][G2F_FFN_FC_W].kind;
        if (r.equivalent != cases[i].equivalent) fprintf(stderr, "  case %zu: equivalent %d, kind %d\n", i, r.equivalent, (int)k);
        CHECK(r.equivalent == cases[i].equivalent);
        CHECK(cases[i].equivalent ? k == G2F_DIFF_ROUNDED : k != G2F_DIFF_ROUNDED);
        g2f_diff_result_free(&r);
    }
}

/* F32: each value of a BF16 file widened, plus 3/8 of half its BF16 step (not on BF16's grid). */
static void *widen_noisy(const g2f_tensor *x, size_t *nbytes) {
    float *f = malloc((size_t)x->numel * sizeof *f + 4);
    g2f_tensor_read_f32(x, 0, x->numel, f);
    for (uint64_t k = 0; k < x->numel; k++) {
        int e;
        frexpf(f[k], &e);
        if (f[k] != 0) f[k] += ldexpf(3.0f / 16, e - 8);
    }
    *nbytes = (size_t)x->numel * sizeof *f;
    return f;
}

/* F64: h.0's c_fc.bias[0] 1 + 2^-11 + 2^-40, just above F16's midpoint (1 + 2^-11), which its float
 * is; F16: the same with that value rounded through float first (1.0, one F16 step off) or
 * directly (1 + 2^-10). */
static int mid_nearest;
static void *to_f64_mid(const g2f_tensor *x, size_t *nbytes) {
    double *d = malloc((size_t)x->numel * sizeof *d + 8);
    g2f_tensor_read_f64(x, 0, x->numel, d);
    if (!strcmp(x->name, "transformer.h.0.mlp.c_fc.bias")) d[0] = 1 + 0x1p-11 + 0x1p-40;
    *nbytes = (size_t)x->numel * sizeof *d;
    return d;
}
static void *to_f16_mid(const g2f_tensor *x, size_t *nbytes) {
    uint16_t *h = malloc((size_t)x->numel * sizeof *h + 2);
    float *f = malloc((size_t)x->numel * sizeof *f + 4);
    g2f_tensor_read_f32(x, 0, x->numel, f);
    for (uint64_t k = 0; k < x->numel; k++) h[k] = g2f_f32_to_f16(f[k]);
    if (!strcmp(x->name, "transformer.h.0.mlp.c_fc.bias")) h[0] = mid_nearest ? 0x3c01 : 0x3c00;
    free(f);
    *nbytes = (size_t)x->numel * sizeof *h;
    return h;
}

/* B is the port, A the original: B in a dtype at least as wide must hold A's values themselves (a
 * BF16 original widened to F32 with noise below half a BF16 step is not "rounded"); a float port of
 * a quantized original holds its dequantized values (tiny's originals beside its Q4_0 are different,
 * quantized only the other way round); an F64 original is rounded to B's dtype from its double, not
 * from its float (which lands on F16's midpoint and took either neighbour). */
static void diff_should_round_from_the_original_only(void) {
    char src[400], a[400], b[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    write_converted(src, "orig_bf16", "BF16", to_bf16, NULL);
    snprintf(src, sizeof src, "%s/orig_bf16/model.safetensors", dir);
    write_converted(src, "widened_noisy", "F32", widen_noisy, NULL);
    snprintf(a, sizeof a, "%s/orig_bf16", dir);
    snprintf(b, sizeof b, "%s/widened_noisy", dir);
    g2f_diff_result r;
    if (diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(!r.equivalent && r.tensors[0][G2F_FFN_FC_W].kind != G2F_DIFF_ROUNDED);
        g2f_diff_result_free(&r);
    }
    if (diff_paths(b, a, G2F_DIFF_SCOPE_ALL, &r)) { /* the other way round: B is A rounded to BF16 */
        CHECK(r.equivalent && r.tensors[0][G2F_FFN_FC_W].kind == G2F_DIFF_ROUNDED);
        g2f_diff_result_free(&r);
    }
    snprintf(a, sizeof a, "%s/quant/tiny_q4_0.gguf", fixtures);
    snprintf(b, sizeof b, "%s/tiny", fixtures);
    for (int k = 0; k < 2; k++) {
        if (!diff_paths(k ? b : a, k ? a : b, G2F_DIFF_SCOPE_FFN, &r)) { check_failures++; continue; }
        g2f_diff_accept(&r, G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
        CHECK(r.all_accepted == k && (r.tensors[0][G2F_FFN_FC_W].kind == G2F_DIFF_QUANTIZED) == k);
        g2f_diff_result_free(&r);
    }
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    write_converted(src, "mid64", "F64", to_f64_mid, NULL);
    snprintf(a, sizeof a, "%s/mid64", dir);
    for (mid_nearest = 0; mid_nearest < 2; mid_nearest++) {
        write_converted(src, "mid16", "F16", to_f16_mid, NULL);
        snprintf(b, sizeof b, "%s/mid16", dir);
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_FFN, &r)) { check_failures++; continue; }
        CHECK(r.equivalent == mid_nearest && (r.tensors[0][G2F_FFN_FC_B].kind == G2F_DIFF_ROUNDED) == mid_nearest);
        g2f_diff_result_free(&r);
    }
}

static void *to_f64_plain(const g2f_tensor *x, size_t *nbytes) {
    double *d = malloc((size_t)x->numel * sizeof *d + 8);
    g2f_tensor_read_f64(x, 0, x->numel, d);
    *nbytes = (size_t)x->numel * sizeof *d;
    return d;
}

/* TransformerLens' c_attn, assembled from W_Q, W_K, W_V, has the dtype they are stored in: a BF16
 * port of the F32 original is "rounded" (it was "bf16_rounded", stored wider, and DIFFERENT), an
 * F64 checkpoint against itself identical in double (the assembled buffer, dropped from memory like
 * a file's pages after the first pass, read back as zeros: DIFFERENT). */
static void diff_should_keep_the_dtype_of_an_assembled_attention(void) {
    char src[400], a[400], b[400];
    snprintf(src, sizeof src, "%s/formats2/tiny_tl.safetensors", fixtures);
    write_converted(src, "tl_bf16", "BF16", to_bf16, NULL);
    write_converted(src, "tl_f64", "F64", to_f64_plain, NULL);
    g2f_diff_result r;
    snprintf(b, sizeof b, "%s/tl_bf16", dir);
    if (diff_paths(src, b, G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(r.equivalent && r.tensors[0][G2F_BLK_ATTN_W].kind == G2F_DIFF_ROUNDED);
        g2f_diff_result_free(&r);
    }
    snprintf(a, sizeof a, "%s/tl_f64", dir);
    if (diff_paths(a, a, G2F_DIFF_SCOPE_ALL, &r)) {
        CHECK(r.equivalent && r.tensors[0][G2F_BLK_ATTN_W].kind == G2F_DIFF_IDENTICAL);
        g2f_diff_result_free(&r);
    }
}

/* dir/name/model.safetensors: tiny's F32 tensors and a 4-byte "flags" of dtype dt (U8, BOOL, F8_*). */
static unsigned char flags[4] = {1, 0, 1, 1};
static void write_with_flags(const char *name, const char *dt) {
    char src[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    const st_entry f = {"flags", dt, 1, {4}, flags, sizeof flags};
    write_converted(src, name, "F32", NULL, &f);
}

/* The same bytes and shape under two dtypes that are not numbers (U8, BOOL): different, not a
 * shape that differs. */
static void diff_should_call_another_dtype_different(void) {
    write_with_flags("flags_u8", "U8");
    write_with_flags("flags_bool", "BOOL");
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/flags_u8", dir);
    snprintf(b, sizeof b, "%s/flags_bool", dir);
    g2f_diff_result r;
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(!r.equivalent && r.n_others == 1 && r.others[0].kind == G2F_DIFF_DIFFERENT);
    g2f_diff_result_free(&r);
}

static int big_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t, (void)shape, (void)ndim;
    if (!strcmp(name, "transformer.h.0.mlp.c_fc.weight")) v[0] = nonfinite_value;
    return 1;
}

/* An Inf, or a value whose block scale overflows float16, beside a quantized port: never within
 * the bound (an infinite bound would take anything), never accepted. */
static void diff_should_not_accept_inf_beside_a_quantized_port(void) {
    const float values[] = {INFINITY, -INFINITY, 1e10f};
    char a[400], b[400];
    snprintf(b, sizeof b, "%s/quant/tiny_q8_0.gguf", fixtures);
    for (size_t k = 0; k < 3; k++) {
        nonfinite_value = values[k];
        write_copy("tiny/model.safetensors", "qinf", big_edit, NULL, 0);
        snprintf(a, sizeof a, "%s/qinf", dir);
        g2f_diff_result r;
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_FFN, &r)) { check_failures++; continue; }
        g2f_diff_accept(&r, G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
        CHECK(!r.all_accepted && !r.tensors[0][G2F_FFN_FC_W].accepted && r.tensors[1][G2F_FFN_FC_W].accepted);
        g2f_diff_result_free(&r);
    }
}

/* 8-bit floats are compared as bytes, but their NaN and Inf never equal. */
static void diff_should_not_count_f8_nonfinite_as_equal(void) {
    static const struct { const char *dt; unsigned char b0; int equivalent; } cases[] = {
        {"F8_E4M3", 0x7F, 0}, {"F8_E4M3", 0xFF, 0}, {"F8_E5M2", 0x7C, 0}, {"F8_E5M2", 0xFE, 0}, {"F8_E4M3", 0x38, 1}};
    char a[400], b[400];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        flags[0] = cases[k].b0;
        write_with_flags("f8_a", cases[k].dt);
        write_with_flags("f8_b", cases[k].dt);
        snprintf(a, sizeof a, "%s/f8_a", dir);
        snprintf(b, sizeof b, "%s/f8_b", dir);
        g2f_diff_result r;
        if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; continue; }
        CHECK(r.equivalent == cases[k].equivalent && r.n_others == 1);
        g2f_diff_result_free(&r);
    }
    flags[0] = 1;
}

/* config.json's n_head against the file's own (TransformerLens' W_Q shape here, 4 heads): the
 * config cannot silently override what the weights are shaped for. */
static void config_n_head_should_agree_with_the_file(void) {
    char src[400], dst[400];
    snprintf(dst, sizeof dst, "%s/tl_cfg8", dir);
    mkdir(dst, 0700);
    snprintf(src, sizeof src, "%s/formats2/tiny_tl.safetensors", fixtures);
    snprintf(dst, sizeof dst, "%s/tl_cfg8/model.safetensors", dir);
    CHECK(copy_file(src, dst) == 0);
    snprintf(dst, sizeof dst, "%s/tl_cfg8/config.json", dir);
    const char *cfg = "{\"n_layer\": 4, \"n_embd\": 64, \"n_head\": 8, \"n_positions\": 32, \"vocab_size\": 96}";
    CHECK(write_bytes(dst, cfg, strlen(cfg)) == 0);
    snprintf(dst, sizeof dst, "%s/tl_cfg8", dir);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(dst, NULL, &m, &err) != G2F_OK && !m);
    CHECK_CONTAINS(err.msg, "config.json n_head is 8 but TransformerLens W_Q's shape is 4");
    g2f_model_close(m);
}

/* dir/name: fixtures/formats2/tiny_full.gguf with the 4-byte value of metadata key `key` (a u32 or
 * f32 one, or a 4-character string's characters) replaced by `value`. */
static void patch_gguf(const char *name, const char *key, const void *value) {
    char src[400], dst[400];
    snprintf(src, sizeof src, "%s/formats2/tiny_full.gguf", fixtures);
    size_t n = 0;
    unsigned char *b = (unsigned char *)read_whole_file(src, &n);
    CHECK(b != NULL);
    if (!b) return;
    size_t kl = strlen(key);
    unsigned char *at = NULL;
    for (size_t i = 8; !at && i + kl + 16 < n; i++) /* the key's string, after its u64 length */
        if (!memcmp(b + i, key, kl) && b[i - 8] == kl) at = b + i + kl;
    CHECK(at != NULL);
    if (at) {
        uint32_t type;
        memcpy(&type, at, 4);
        memcpy(at + 4 + (type == 8 ? 8 : 0), value, 4); /* GGUF string: a u64 length first */
    }
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    CHECK(write_bytes(dst, b, n) == 0);
    free(b);
}

/* A GGUF's own words are the model's: an architecture other than gpt2, or sizes the tensors do
 * not have (a context_length that is not wpe's rows too), are refused; its layer_norm_epsilon is compared like a config's. */
static void gguf_metadata_should_be_checked(void) {
    const uint32_t eight = 8;
    const float eps = 1e-3f;
    patch_gguf("arch.gguf", "general.architecture", "gptj");
    patch_gguf("blocks.gguf", "gpt2.block_count", &eight);
    patch_gguf("eps.gguf", "gpt2.attention.layer_norm_epsilon", &eps);
    char p[400];
    g2f_model *m = NULL;
    g2f_error err = {0};
    snprintf(p, sizeof p, "%s/arch.gguf", dir);
    CHECK(g2f_model_open(p, NULL, &m, &err) != G2F_OK && !m);
    CHECK_CONTAINS(err.msg, "general.architecture is 'gptj', not gpt2");
    snprintf(p, sizeof p, "%s/blocks.gguf", dir);
    CHECK(g2f_model_open(p, NULL, &m, &err) != G2F_OK && !m);
    CHECK_CONTAINS(err.msg, "gpt2.block_count is 8 but the tensors have 4 layers");
    char a[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(p, sizeof p, "%s/eps.gguf", dir);
    g2f_diff_result r;
    if (!diff_paths(a, p, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(!r.equivalent && strstr(r.config_msg, "layer_norm_epsilon 1e-05 in A, 0.001 in B"));
    g2f_diff_result_free(&r);
    const uint32_t ctx = 2048; /* wpe has fewer rows: llama.cpp would read positions past them */
    patch_gguf("ctx.gguf", "gpt2.context_length", &ctx);
    snprintf(p, sizeof p, "%s/ctx.gguf", dir);
    if (g2f_model_open(p, NULL, &m, &err) == G2F_OK) {
        g2f_model_ends ends;
        CHECK(g2f_model_end_tensors(m, &ends, &err) != G2F_OK);
        CHECK_CONTAINS(err.msg, "n_positions is 2048 (the GGUF's gpt2.context_length) but tensor");
        g2f_model_close(m);
    } else {
        CHECK_CONTAINS(err.msg, "n_positions is 2048 (the GGUF's gpt2.context_length) but tensor");
    }
    CHECK(diff_cli("tiny", "ctx.gguf", "") == 2 && strstr(out_text, "gpt2.context_length"));
    snprintf(p, sizeof p, "%s/formats2/tiny_full.gguf", fixtures); /* the unpatched one: the same model */
    if (!diff_paths(a, p, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(r.equivalent);
    g2f_diff_result_free(&r);
}

static int drop_wk_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    (void)t, (void)v, (void)shape, (void)ndim;
    return strstr(name, "attn.W_K") == NULL;
}
static int drop_wk_double_wq_edit(const g2f_table *t, const char *name, float *v, uint64_t *shape, size_t ndim) {
    uint64_t n = shape[0];
    for (size_t k = 1; k < ndim; k++) n *= shape[k];
    if (strstr(name, "attn.W_Q"))
        for (uint64_t k = 0; k < n; k++) v[k] *= 2;
    return drop_wk_edit(t, name, v, shape, ndim);
}

/* TransformerLens' attention without W_K in both files: it cannot be assembled, so its parts are
 * compared by name, and a W_Q that differs is found, not skipped. */
static void diff_should_compare_the_parts_of_an_unassembled_attention(void) {
    write_copy("formats2/tiny_tl.safetensors", "tl_nowk_a", drop_wk_edit, NULL, 0);
    write_copy("formats2/tiny_tl.safetensors", "tl_nowk_b", drop_wk_double_wq_edit, NULL, 0);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tl_nowk_a", dir);
    snprintf(b, sizeof b, "%s/tl_nowk_b", dir);
    g2f_diff_result r;
    if (!diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) { check_failures++; return; }
    CHECK(!r.equivalent && r.differing >= 4);
    g2f_diff_result_free(&r);
}

/* tie_word_embeddings false and no head stored: the model's logits are not defined, not "tied". */
static void an_untied_config_without_a_head_should_be_refused(void) {
    write_config_variant("untied", "\"vocab_size\": 96", "\"vocab_size\": 96, \"tie_word_embeddings\": false");
    char p[400];
    snprintf(p, sizeof p, "%s/untied", dir);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(p, NULL, &m, &err) != G2F_OK && !m);
    CHECK_CONTAINS(err.msg, "tie_word_embeddings is false but");
    write_config_variant("tied", "\"vocab_size\": 96", "\"vocab_size\": 96, \"tie_word_embeddings\": true");
    snprintf(p, sizeof p, "%s/tied", dir);
    CHECK(g2f_model_open(p, NULL, &m, &err) == G2F_OK && m);
    g2f_model_close(m);
}

/* HF's scale_attn_weights false and scale_attn_by_inverse_layer_idx true make another attention:
 * beside the same tensors diff says the configs define other models (it said EQUIVALENT), and
 * verify refuses a fixture the attention feeds (exit 2) while the FFN alone is still checked. */
static void diff_should_compare_the_attention_scale_of_the_configs(void) {
    static const char *const keys[] = {"\"scale_attn_weights\": false", "\"scale_attn_by_inverse_layer_idx\": true"};
    for (int k = 0; k < 2; k++) {
        char with[200], a[400], b[400];
        snprintf(with, sizeof with, "\"vocab_size\": 96, %s", keys[k]);
        write_config_variant("attn_rule", "\"vocab_size\": 96", with);
        snprintf(a, sizeof a, "%s/tiny", fixtures);
        snprintf(b, sizeof b, "%s/attn_rule", dir);
        g2f_diff_result r;
        if (diff_paths(a, b, G2F_DIFF_SCOPE_ALL, &r)) {
            CHECK(!r.equivalent && strstr(r.config_msg, "the attention's scale"));
            g2f_diff_result_free(&r);
        }
        char args[1200];
        snprintf(args, sizeof args, "verify '%s' '%s/model/clean.safetensors'", b, fixtures);
        CHECK(run(args) == 2 && strstr(out_text, "the attention is not GPT-2's"));
        snprintf(args, sizeof args, "verify '%s' '%s/tiny_tanh.safetensors'", b, fixtures);
        CHECK(run(args) == 0);
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "diff") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(diff_should_classify_each_kind_of_port);
    RUN(diff_and_inspect_should_exit_with_documented_codes);
    RUN(inspect_should_report_statistics);
    RUN(diff_should_stream_tensors_larger_than_a_block);
    RUN(diff_should_give_the_size_of_a_missing_bias);
    RUN(diff_should_compare_every_block_tensor);
    RUN(diff_should_compare_the_ends_and_every_other_tensor);
    RUN(diff_should_name_the_layout_of_every_2d_weight);
    RUN(diff_should_compare_split_attention_as_c_attn);
    RUN(diff_should_never_count_nonfinite_values_as_equal);
    RUN(diff_should_compare_what_the_configs_define);
    RUN(diff_should_excuse_only_training_keys);
    RUN(diff_should_not_drop_a_twin_name);
    RUN(diff_should_compare_f64_in_double);
    RUN(diff_should_accept_subnormals_rounded_to_bf16);
    RUN(diff_should_call_one_step_off_at_a_binade_bottom_different);
    RUN(diff_should_round_from_the_original_only);
    RUN(diff_should_keep_the_dtype_of_an_assembled_attention);
    RUN(diff_should_call_another_dtype_different);
    RUN(diff_should_not_accept_inf_beside_a_quantized_port);
    RUN(diff_should_not_count_f8_nonfinite_as_equal);
    RUN(config_n_head_should_agree_with_the_file);
    RUN(gguf_metadata_should_be_checked);
    RUN(diff_should_compare_the_parts_of_an_unassembled_attention);
    RUN(an_untied_config_without_a_head_should_be_refused);
    RUN(diff_should_compare_the_attention_scale_of_the_configs);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
