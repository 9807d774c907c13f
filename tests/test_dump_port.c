/* A port in C dumps every stage with src/dump/gpt2ffn_dump.h, one line per
 * stage plus open and close, and verify checks the dump: a naive GPT-2
 * forward written here as a C port would write it (llm.c's way: float
 * accumulation, (B, T, C) activations, logits in a (B, T, Vp) buffer whose
 * padding holds garbage), on fixtures/tiny's weights read with the
 * library's safetensors reader. `gpt2ffn verify fixtures/tiny DUMP` (the
 * CLI, argv[2]) passes with every stage of every layer compared (each
 * stage's element count in the JSON report is every tensor of it), the
 * whole forward chained from input_ids and the logits cut to the real
 * vocabulary, as safetensors and as a folder of .npy files; the same port
 * with the erf GELU fails at layer 0's mlp, named gelu_erf. argv[1] is the
 * fixtures folder. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "gpt2ffn_dump.h"
#include "test_util.h"

static const char *fixtures, *cli;

enum { L = 4, C = 64, NH = 4, V = 96, VP = 128, NPOS = 32, B = 2, T = 7 };

/* ---- the port: weights, kernels, forward -------------------------------- */

typedef struct layer_w {
    float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fcpw, *fcpb;
} layer_w;
typedef struct port_w {
    float *wte, *wpe, *lnfw, *lnfb;
    layer_w l[L];
} port_w;

static float *load(const g2f_table *t, const char *name, int layer) {
    char full[128];
    if (layer >= 0) snprintf(full, sizeof full, "transformer.h.%d.%s", layer, name);
    else snprintf(full, sizeof full, "transformer.%s", name);
    const g2f_tensor *x = g2f_table_find(t, full);
    float *v = x ? malloc(x->numel * sizeof *v) : NULL;
    if (v) g2f_tensor_read_f32(x, 0, x->numel, v);
    else fprintf(stderr, "missing %s\n", full);
    return v;
}

static void load_weights(const g2f_table *t, port_w *w) {
    w->wte = load(t, "wte.weight", -1), w->wpe = load(t, "wpe.weight", -1);
    w->lnfw = load(t, "ln_f.weight", -1), w->lnfb = load(t, "ln_f.bias", -1);
    for (int l = 0; l < L; l++) {
        layer_w *x = &w->l[l];
        x->ln1w = load(t, "ln_1.weight", l), x->ln1b = load(t, "ln_1.bias", l);
        x->qkvw = load(t, "attn.c_attn.weight", l), x->qkvb = load(t, "attn.c_attn.bias", l);
        x->projw = load(t, "attn.c_proj.weight", l), x->projb = load(t, "attn.c_proj.bias", l);
        x->ln2w = load(t, "ln_2.weight", l), x->ln2b = load(t, "ln_2.bias", l);
        x->fcw = load(t, "mlp.c_fc.weight", l), x->fcb = load(t, "mlp.c_fc.bias", l);
        x->fcpw = load(t, "mlp.c_proj.weight", l), x->fcpb = load(t, "mlp.c_proj.bias", l);
    }
}

static void free_weights(port_w *w) {
    free(w->wte), free(w->wpe), free(w->lnfw), free(w->lnfb);
    for (int l = 0; l < L; l++) {
        float **p = &w->l[l].ln1w;
        for (int k = 0; k < 12; k++) free(p[k]);
    }
}

/* out (N, C) = LayerNorm(in) with gain g and bias b, float statistics */
static void layernorm(float *out, const float *in, const float *g, const float *b, int N) {
    for (int n = 0; n < N; n++) {
        const float *x = in + n * C;
        float m = 0, v = 0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        const float r = 1.0f / sqrtf(v / C + 1e-5f);
        for (int i = 0; i < C; i++) out[n * C + i] = (x[i] - m) * r * g[i] + b[i];
    }
}

/* out (N, oc) = in (N, ic) W (ic, oc) + bias: HF's Conv1D layout */
static void matmul(float *out, const float *in, const float *W, const float *bias, int N, int ic, int oc) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < oc; o++) {
            float s = bias[o];
            for (int i = 0; i < ic; i++) s += in[n * ic + i] * W[i * oc + o];
            out[n * oc + o] = s;
        }
}

/* merged (B, T, C) and probs (B, NH, T, T) from qkv (B, T, 3C), causal */
static void attention(float *merged, float *probs, const float *qkv) {
    const int hs = C / NH;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + (b * T + t) * 3 * C + h * hs;
                float *p = probs + ((b * NH + h) * T + t) * T, mx = -INFINITY, sum = 0;
                for (int u = 0; u <= t; u++) {
                    const float *k = qkv + (b * T + u) * 3 * C + C + h * hs;
                    float s = 0;
                    for (int i = 0; i < hs; i++) s += q[i] * k[i];
                    p[u] = s / sqrtf((float)hs);
                    mx = p[u] > mx ? p[u] : mx;
                }
                for (int u = 0; u <= t; u++) sum += p[u] = expf(p[u] - mx);
                for (int u = 0; u < T; u++) p[u] = u <= t ? p[u] / sum : 0.0f;
                float *y = merged + (b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    float s = 0;
                    for (int u = 0; u <= t; u++) s += p[u] * qkv[(b * T + u) * 3 * C + 2 * C + h * hs + i];
                    y[i] = s;
                }
            }
}

static void gelu(float *out, const float *in, int n, int erf_bug) {
    for (int i = 0; i < n; i++) {
        const float x = in[i];
        out[i] = erf_bug ? 0.5f * x * (1.0f + erff(x / sqrtf(2.0f)))
                         : 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

static void add(float *out, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* The port's forward of ids (B, T), every stage dumped to path. */
static g2f_dump_status port_forward(const port_w *w, const int *ids, int erf_bug, const char *path, char *msg) {
    const int N = B * T;
    float *x = malloc(N * C * 4), *ln = malloc(N * C * 4), *qkv = malloc(N * 3 * C * 4), *att = malloc(B * NH * T * T * 4);
    float *mrg = malloc(N * C * 4), *ao = malloc(N * C * 4), *mid = malloc(N * C * 4), *ln2 = malloc(N * C * 4);
    float *pre = malloc(N * 4 * C * 4), *act = malloc(N * 4 * C * 4), *mo = malloc(N * C * 4), *z = malloc(N * VP * 4);
    if (!x || !ln || !qkv || !att || !mrg || !ao || !mid || !ln2 || !pre || !act || !mo || !z) abort();
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) x[n * C + i] = w->wte[ids[n] * C + i] + w->wpe[(n % T) * C + i];

    g2f_dump *d = g2f_dump_open(path, G2F_DUMP_AUTO, B);
    g2f_dump_ids(d, ids, T);
    g2f_dump_model(d, "embed", x, T, C);
    for (int l = 0; l < L; l++) {
        const layer_w *lw = &w->l[l];
        g2f_dump_stage(d, l, "in", x, T, C);
        layernorm(ln, x, lw->ln1w, lw->ln1b, N);
        g2f_dump_stage(d, l, "ln_1.out", ln, T, C);
        matmul(qkv, ln, lw->qkvw, lw->qkvb, N, C, 3 * C);
        g2f_dump_stage(d, l, "attn.qkv", qkv, T, 3 * C);
        attention(mrg, att, qkv);
        g2f_dump_attn_probs(d, l, att, NH, T);
        g2f_dump_stage(d, l, "attn.merged", mrg, T, C);
        matmul(ao, mrg, lw->projw, lw->projb, N, C, C);
        g2f_dump_stage(d, l, "attn.out", ao, T, C);
        add(mid, x, ao, N * C);
        g2f_dump_stage(d, l, "mid", mid, T, C);
        layernorm(ln2, mid, lw->ln2w, lw->ln2b, N);
        g2f_dump_stage(d, l, "mlp.in", ln2, T, C);
        matmul(pre, ln2, lw->fcw, lw->fcb, N, C, 4 * C);
        g2f_dump_stage(d, l, "mlp.pre", pre, T, 4 * C);
        gelu(act, pre, N * 4 * C, erf_bug);
        g2f_dump_stage(d, l, "mlp.act", act, T, 4 * C);
        matmul(mo, act, lw->fcpw, lw->fcpb, N, 4 * C, C);
        g2f_dump_stage(d, l, "mlp.out", mo, T, C);
        add(x, mid, mo, N * C);
        g2f_dump_stage(d, l, "out", x, T, C);
    }
    layernorm(ln, x, w->lnfw, w->lnfb, N);
    g2f_dump_model(d, "ln_f.out", ln, T, C);
    for (int n = 0; n < N; n++) /* the tied head into a padded buffer, as llm.c's */
        for (int v = 0; v < VP; v++) {
            float s = 0;
            for (int i = 0; v < V && i < C; i++) s += ln[n * C + i] * w->wte[v * C + i];
            z[n * VP + v] = v < V ? s : NAN;
        }
    g2f_dump_logits(d, z, T, V, VP);
    g2f_dump_status st = g2f_dump_close(d, msg, G2F_DUMP_MSG_MAX);

    free(x), free(ln), free(qkv), free(att), free(mrg), free(ao), free(mid), free(ln2), free(pre), free(act), free(mo);
    free(z);
    return st;
}

/* ---- verify on the dump ------------------------------------------------- */

/* Runs verify fixtures/tiny dump --json json; its exit code. */
static int verify(const char *dump, const char *json) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' verify '%s/tiny' '%s' --json '%s' > /dev/null 2>&1", cli, fixtures, dump, json);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Every stage of every layer passed, each compared whole (its element count
 * is that of every tensor the port dumped for it); prints the largest margin. */
static void expect_every_stage_compared(const cJSON *r) {
    double worst = 0;
    static const struct { const char *stage; double total; } want[] = {
        {"ln_1", B * T * C},
        {"attn", B * T * 3 * C + B * NH * T * T + 2 * B * T * C}, /* qkv, probs, merged, out */
        {"mid", B * T * C},
        {"ln_2", B * T * C},
        {"mlp", 2 * B * T * 4 * C + B * T * C}, /* pre, act, out */
        {"out", B * T * C},
    };
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(r, "layers");
    CHECK(cJSON_GetArraySize(layers) == L);
    for (int l = 0; l < L; l++) {
        const cJSON *stages = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, l), "stages");
        CHECK(cJSON_GetArraySize(stages) == 6);
        for (int k = 0; k < 6; k++) {
            const cJSON *s = cJSON_GetArrayItem(stages, k);
            int ok = !strcmp(str(s, "stage"), want[k].stage) && !strcmp(str(s, "status"), "pass") &&
                     num(s, "total") == want[k].total;
            if (!ok)
                fprintf(stderr, "  layer %d stage %s: %s, %g compared (want %s, %g)\n", l, str(s, "stage"),
                        str(s, "status"), num(s, "total"), want[k].stage, want[k].total);
            CHECK(ok);
            worst = num(s, "margin") > worst ? num(s, "margin") : worst;
        }
    }
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(r, "forward");
    CHECK(!strcmp(str(fw, "status"), "pass") && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fw, "chained")));
    static const struct { const char *stage; double total; } ends[] = {
        {"embed", B * T * C}, {"ln_f", B * T * C}, {"logits", B * T * V}};
    for (int iso = 0; iso < 2; iso++)
        for (int k = 0; k < 3; k++) {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(fw, iso ? "isolated_stages" : "chained_stages"), ends[k].stage);
            CHECK(!strcmp(str(s, "status"), "pass") && num(s, "total") == ends[k].total);
            worst = num(s, "margin") > worst ? num(s, "margin") : worst;
        }
    fprintf(stderr, "  every stage compared: largest margin %.3g\n", worst);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "unknown_tensors")) == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "aliases")) == 0);
}

static void dumped_port_should_verify_and_its_bug_be_named(void) {
    char ck[512], dir[256], dump[512], json[512], msg[G2F_DUMP_MSG_MAX];
    snprintf(ck, sizeof ck, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(ck, &st, &err) == G2F_OK);
    if (!st) return;
    port_w w;
    load_weights(g2f_safetensors_table(st), &w);
    g2f_safetensors_close(st);
    int ids[B * T];
    for (int i = 0; i < B * T; i++) ids[i] = (i * 37 + 5) % V;
    CHECK(make_tmpdir(dir, sizeof dir, "dump_port") == 0);
    snprintf(json, sizeof json, "%s/report.json", dir);
    static const char *const outs[] = {"port.safetensors", "port_npy"};
    for (int bug = 0; bug < 2; bug++)
        for (int o = 0; o < 2; o++) {
            snprintf(dump, sizeof dump, "%s/%s%s", dir, bug ? "erf_" : "", outs[o]);
            CHECK(port_forward(&w, ids, bug, dump, msg) == G2F_DUMP_OK);
            if (msg[0]) fprintf(stderr, "  dump: %s\n", msg);
            int rc = verify(dump, json);
            char *text = read_whole_file(json, NULL);
            cJSON *r = text ? cJSON_Parse(text) : NULL;
            CHECK(r != NULL);
            char first[64] = "none";
            if (num(r, "first_divergence") >= 0)
                snprintf(first, sizeof first, "layer %g, %s", num(r, "first_divergence"), str(r, "first_stage"));
            fprintf(stderr, "  %s: exit %d, %s, first divergence %s\n", dump + strlen(dir) + 1, rc, str(r, "status"),
                    first);
            if (!bug) {
                CHECK(rc == 0 && !strcmp(str(r, "status"), "pass"));
                if (r) expect_every_stage_compared(r);
            } else { /* the erf GELU: layer 0's mlp is where it diverges, and why */
                CHECK(rc == 1 && !strcmp(str(r, "status"), "fail") && num(r, "first_divergence") == 0 &&
                      !strcmp(str(r, "first_stage"), "mlp"));
                const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "layers"), 0);
                const cJSON *diag = cJSON_GetObjectItemCaseSensitive(l0, "diagnosis");
                CHECK(cJSON_IsArray(diag) && cJSON_GetArraySize(diag) == 1 &&
                      !strcmp(cJSON_GetArrayItem(diag, 0)->valuestring, "gelu_erf"));
            }
            cJSON_Delete(r);
            free(text);
        }
    free_weights(&w);
    remove_tmpdir(dir);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    fixtures = argv[1];
    cli = argv[2];
    RUN(dumped_port_should_verify_and_its_bug_be_named);
    CHECK_EXIT();
}
