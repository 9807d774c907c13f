/* Fixture mapping: canonical and TransformerLens names, and every shape or
 * naming fault named in one message. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_safetensors.h"
#include "g2f_verify.h"
#include "test_util.h"

static const char *fixtures;
static char dir[256];

/* Copies tiny_tanh.safetensors' tensors to a new file, renaming them. */
static int copy_renamed(const char *out, const char *(*rename)(const char *name, char *buf, size_t n)) {
    char src[400];
    snprintf(src, sizeof src, "%s/tiny_tanh.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) return -1;
    const g2f_table *t = g2f_safetensors_table(st);
    st_entry e[32];
    char names[32][96];
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 32; i++) {
        const g2f_tensor *x = &t->tensors[i];
        const char *nm = rename(x->name, names[n], sizeof names[n]);
        if (!nm) continue;
        e[n] = (st_entry){nm, "F32", x->ndim, {0}, x->data, x->nbytes};
        for (size_t d = 0; d < x->ndim; d++) e[n].shape[d] = x->shape[d];
        n++;
    }
    int rc = st_write(out, NULL, e, n, 1);
    g2f_safetensors_close(st);
    return rc;
}

static const char *to_tlens(const char *name, char *buf, size_t n) {
    int L;
    char kind[8];
    if (sscanf(name, "h.%d.mlp.%7s", &L, kind) != 2) return NULL;
    const char *tl = !strcmp(kind, "in") ? "ln2.hook_normalized" : !strcmp(kind, "out") ? "hook_mlp_out"
                   : !strcmp(kind, "pre") ? "mlp.hook_pre" : "mlp.hook_post";
    snprintf(buf, n, "blocks.%d.%s", L, tl);
    return buf;
}

static g2f_status verify_file(const char *fx_path, g2f_verify_result *res, g2f_error *err) {
    char model_path[400];
    snprintf(model_path, sizeof model_path, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    memset(res, 0, sizeof *res);
    g2f_status s = g2f_model_open(model_path, NULL, &m, err);
    if (s == G2F_OK) s = g2f_fixture_open(fx_path, &f, err);
    if (s == G2F_OK) {
        g2f_verify_params p = {.gelu = G2F_GELU_TANH, .gelu_source = "test", .select = NULL, .tol = {0, 0, 0, G2F_TOL_LAMBDA}, .n_threads = 1};
        s = g2f_verify_run(m, f, &p, res, err);
    }
    g2f_fixture_close(f);
    g2f_model_close(m);
    return s;
}

static void fixture_should_accept_transformerlens_cache_names(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/tlens.safetensors", dir);
    CHECK(copy_renamed(path, to_tlens) == 0);
    g2f_verify_result res;
    g2f_error err = {0};
    g2f_status st = verify_file(path, &res, &err);
    CHECK(st == G2F_OK);
    if (st != G2F_OK) return; /* res is empty: nothing more to look at */
    CHECK(res.pass && res.compared == 4);
    CHECK(res.layers[0].has_pre && res.layers[0].has_act);
    g2f_verify_result_free(&res);
}

static void fixture_should_name_each_fault(void) {
    static float in[2 * 64], out[2 * 64], wide[2 * 65], pre[3 * 256];
    static int32_t ints[2 * 64];
    struct {
        st_entry e[3];
        size_t n;
        const char *msg;
    } cases[] = {
        {{{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in}}, 1, "layer 0 has no 'h.0.mlp.out' tensor"},
        {{{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in}, {"h.0.mlp.output", "F32", 2, {2, 64}, out, sizeof out}},
         2, "layer 0 has no 'h.0.mlp.out' tensor; the fixture holds 'h.0.mlp.output', which is not a name gpt2ffn "
            "knows (did you mean 'h.0.mlp.out'?)"},
        {{{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in}, {"h.0.mlp.out", "F32", 2, {2, 65}, wide, sizeof wide}},
         2, "expected last dimension 64 (n_embd)"},
        {{{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in}, {"h.0.mlp.out", "F32", 2, {2, 64}, out, sizeof out},
          {"h.0.mlp.pre", "F32", 2, {3, 256}, pre, sizeof pre}},
         3, "has 3 tokens but 'in' has 2"},
        {{{"h.7.mlp.in", "F32", 2, {2, 64}, in, sizeof in}, {"h.7.mlp.out", "F32", 2, {2, 64}, out, sizeof out}},
         2, "layer 7 but the checkpoint has 4 layers"},
        {{{"h.0.mlp.in", "I32", 2, {2, 64}, ints, sizeof ints}, {"h.0.mlp.out", "F32", 2, {2, 64}, out, sizeof out}},
         2, "dtype I32"},
        {{{"h.0.mlp.in", "F32", 2, {0, 64}, in, 0}, {"h.0.mlp.out", "F32", 2, {0, 64}, out, 0}}, 2, "holds no tokens"},
        {{{"wte.weight", "F32", 2, {2, 64}, in, sizeof in}}, 1, "no fixture tensors"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/bad%zu.safetensors", dir, i);
        CHECK(st_write(path, NULL, cases[i].e, cases[i].n, 1) == 0);
        g2f_verify_result res;
        g2f_error err = {0};
        g2f_status s = verify_file(path, &res, &err);
        if (s != G2F_ERR_FORMAT || !strstr(err.msg, cases[i].msg) || !strstr(err.msg, path)) {
            fprintf(stderr, "case %zu: status %d, \"%s\", wanted \"%s\"\n", i, s, err.msg, cases[i].msg);
            check_failures++;
        }
        g2f_verify_result_free(&res);
    }
}

/* Two names of one stage (what a hook on every module writes) are taken
 * when they hold the same values; when they differ, the run fails with the
 * pair named (the capture is inconsistent), never a refusal; h.L.ln_2.out /
 * h.L.mlp.in and an HF / TransformerLens pair alike. */
static void fixture_should_check_aliases_value_for_value(void) {
    static float in[2 * 64], out[2 * 64];
    char tanh_path[400];
    snprintf(tanh_path, sizeof tanh_path, "%s/tiny_tanh.safetensors", fixtures);
    g2f_error err = {0};
    g2f_fixture *ref = NULL;
    CHECK(g2f_fixture_open(tanh_path, &ref, &err) == G2F_OK);
    if (!ref) return;
    g2f_fixture_views v;
    CHECK(g2f_fixture_layer_views(ref, 0, &v, &err) == G2F_OK);
    g2f_tensor_read_f32(v.t[G2F_ACT_MLP_IN], 0, 2 * 64, in);
    g2f_tensor_read_f32(v.t[G2F_ACT_MLP_OUT], 0, 2 * 64, out);
    g2f_fixture_close(ref);
    static float moved[2 * 64];
    memcpy(moved, in, sizeof in);
    moved[70] += 0.25f;
    const char *second[] = {"h.0.ln_2.out", "blocks.0.ln2.hook_normalized"};
    for (int k = 0; k < 2; k++)
        for (int differ = 0; differ < 2; differ++) {
            st_entry e[3] = {{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in},
                             {second[k], "F32", 2, {2, 64}, differ ? moved : in, sizeof in},
                             {"h.0.mlp.out", "F32", 2, {2, 64}, out, sizeof out}};
            char path[400];
            snprintf(path, sizeof path, "%s/alias%d%d.safetensors", dir, k, differ);
            CHECK(st_write(path, NULL, e, 3, 1) == 0);
            g2f_verify_result res;
            CHECK(verify_file(path, &res, &err) == G2F_OK);
            CHECK(res.compared == 1 && res.failed == 0 && res.n_aliases == 1);
            CHECK(res.aliases_differ == (size_t)differ && res.pass == !differ);
            if (res.n_aliases) {
                CHECK(!strcmp(res.aliases[0].kept, "h.0.mlp.in") && !strcmp(res.aliases[0].other, second[k]));
                CHECK(res.aliases[0].differing == (size_t)differ && res.aliases[0].total == 128);
            }
            g2f_verify_result_free(&res);
        }
}

/* An alias stored in a narrower dtype agrees when it is the other rounded to nearest, not when it
 * is within the relative roundoff: BF16 0.99609375 beside F32 1.0 (one step off at the bottom of
 * a binade) differs; 1.0 itself, and an exact tie rounded either way, agree. */
static void fixture_aliases_should_agree_only_by_rounding(void) {
    static float in[2 * 64], out[2 * 64];
    static uint16_t narrow[2 * 64];
    memset(out, 0, sizeof out);
    for (size_t i = 0; i < 2 * 64; i++) in[i] = 0.01f * (float)i - 0.5f;
    in[5] = 1.0f, in[6] = 1.0f + 0x1p-8f; /* [6]: a BF16 tie */
    static const struct { uint16_t at5, at6; int differ; } cases[] = {
        {0x3f80, 0x3f80, 0}, {0x3f80, 0x3f81, 0}, {0x3f7f, 0x3f80, 1}, {0x3f80, 0x3f82, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t i = 0; i < 2 * 64; i++) narrow[i] = g2f_f32_to_bf16(in[i]);
        narrow[5] = cases[c].at5, narrow[6] = cases[c].at6;
        st_entry e[3] = {{"h.0.mlp.in", "F32", 2, {2, 64}, in, sizeof in},
                         {"h.0.ln_2.out", "BF16", 2, {2, 64}, narrow, sizeof narrow},
                         {"h.0.mlp.out", "F32", 2, {2, 64}, out, sizeof out}};
        char path[400];
        snprintf(path, sizeof path, "%s/alias_bf16_%zu.safetensors", dir, c);
        CHECK(st_write(path, NULL, e, 3, 1) == 0);
        g2f_verify_result res;
        g2f_error err = {0};
        CHECK(verify_file(path, &res, &err) == G2F_OK);
        CHECK(res.n_aliases == 1 && res.aliases_differ == (size_t)cases[c].differ);
        if (res.n_aliases) CHECK(res.aliases[0].differing == (size_t)cases[c].differ);
        g2f_verify_result_free(&res);
    }
}

/* The tensor t read as float (f32) or double, against got: 1 when equal bit for bit. */
static int holds(const g2f_tensor *t, const void *got, int f32) {
    size_t n = (size_t)t->numel, size = f32 ? sizeof(float) : sizeof(double);
    void *want = malloc(n * size);
    if (!want) return 0;
    if (f32) g2f_tensor_read_f32(t, 0, t->numel, want);
    else g2f_tensor_read_f64(t, 0, t->numel, want);
    int same = got && memcmp(want, got, n * size) == 0;
    free(want);
    return same;
}

/* g2f_fixture_layer_load (a layer whole in memory, for library callers)
 * holds what the views read, value for value (in as float, the others as
 * double), with each tensor's dtype; an F32 fixture with pre / act and an
 * F16 one without; a layer the
 * fixture lacks is a usage error that leaves *out empty. */
static void layer_load_should_hold_what_the_views_read(void) {
    const char *files[] = {"tiny_tanh.safetensors", "tiny_tanh_f16.safetensors"};
    const g2f_dtype dtypes[] = {G2F_DTYPE_F32, G2F_DTYPE_F16};
    for (int i = 0; i < 2; i++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", fixtures, files[i]);
        g2f_error err = {0};
        g2f_fixture *f = NULL;
        CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
        if (!f) continue;
        CHECK(g2f_fixture_check(f, 4, 64, 256, &err) == G2F_OK); /* fixtures/tiny's sizes */
        size_t layers = 0, with_pre_act = 0;
        for (size_t L = 0; L < g2f_fixture_n_slots(f); L++) {
            if (!g2f_fixture_has_layer(f, L)) continue;
            layers++;
            g2f_fixture_views v;
            g2f_fixture_layer l;
            CHECK(g2f_fixture_layer_views(f, L, &v, &err) == G2F_OK);
            CHECK(g2f_fixture_layer_load(f, L, 64, 256, &l, &err) == G2F_OK);
            CHECK(l.n_tokens == v.n_tokens && l.n_tokens > 0);
            CHECK(holds(v.t[G2F_ACT_MLP_IN], l.in, 1) && holds(v.t[G2F_ACT_MLP_OUT], l.out, 0));
            const g2f_tensor *pre = v.t[G2F_ACT_MLP_PRE], *act = v.t[G2F_ACT_MLP_ACT];
            CHECK(pre ? holds(pre, l.pre, 0) : l.pre == NULL);
            CHECK(act ? holds(act, l.act, 0) : l.act == NULL);
            with_pre_act += pre && act;
            for (int k = 0; k < 4; k++) {
                g2f_act a = g2f_ffn_act(k);
                CHECK(!v.t[a] || l.dtype[a] == dtypes[i]);
            }
            g2f_fixture_layer_free(&l);
            CHECK(l.in == NULL && l.out == NULL && l.pre == NULL && l.act == NULL && l.n_tokens == 0);
        }
        CHECK(layers == 4 && with_pre_act == (i == 0 ? 4u : 0u)); /* the F16 fixture records no pre / act */
        g2f_fixture_layer none;
        CHECK(g2f_fixture_layer_load(f, 4, 64, 256, &none, &err) == G2F_ERR_USAGE);
        CHECK(none.in == NULL && none.out == NULL && none.pre == NULL && none.act == NULL);
        CHECK_CONTAINS(err.msg, "no layer 4");
        g2f_fixture_close(f);
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || make_tmpdir(dir, sizeof dir, "fixture") != 0) return 1;
    fixtures = argv[1];
    RUN(fixture_should_accept_transformerlens_cache_names);
    RUN(fixture_should_name_each_fault);
    RUN(fixture_should_check_aliases_value_for_value);
    RUN(fixture_aliases_should_agree_only_by_rounding);
    RUN(layer_load_should_hold_what_the_views_read);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
