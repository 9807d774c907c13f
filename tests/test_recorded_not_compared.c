/* Everything a fixture records is compared, or the report says it is not.
 * From fixtures/model/clean.safetensors (every stage of fixtures/tiny):
 *   - an HF output_hidden_states dump (input_ids, h.L.in, logits): each
 *     h.L+1.in is block L's output, compared; wrong values there fail;
 *   - the residual stream under both its names (h.L.out and h.L+1.in, embed
 *     and h.0.in, embed and hook_embed + hook_pos_embed) must agree: a
 *     capture whose two names differ fails as inconsistent;
 *   - a hook_embed without its hook_pos_embed, and names the tool does not
 *     know (h.00.mlp.in, H.0.MLP.OUT, model.h.0.mlp.out), are listed as not
 *     compared, with the canonical name, and counted in the result line;
 *   - a generation's misspelt step_logits too.
 * argv[1] = fixtures, argv[2] = CLI. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

enum { B = 2, T = 6, D = 64, MAXT = 8 };

typedef struct tens {
    char name[64];
    const char *dtype;
    size_t ndim;
    uint64_t shape[4];
    void *data;
    size_t nbytes;
} tens;

static tens clean[64];
static size_t n_clean;

static void load_clean(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/model/clean.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    for (size_t i = 0; i < t->count && n_clean < 64; i++) {
        const g2f_tensor *x = &t->tensors[i];
        tens *c = &clean[n_clean++];
        snprintf(c->name, sizeof c->name, "%s", x->name);
        c->dtype = x->dtype == G2F_DTYPE_I64 ? "I64" : "F32";
        c->ndim = x->ndim;
        for (size_t k = 0; k < x->ndim; k++) c->shape[k] = x->shape[k];
        c->nbytes = (size_t)x->nbytes;
        c->data = malloc(c->nbytes);
        if (c->data) memcpy(c->data, x->data, c->nbytes);
    }
    g2f_safetensors_close(st);
}

static const tens *find(const char *name) {
    for (size_t i = 0; i < n_clean; i++)
        if (!strcmp(clean[i].name, name)) return &clean[i];
    return NULL;
}

/* One entry of an edited copy: clean's `from` under `as`, its floats times `scale` plus `shift`. */
typedef struct pick {
    const char *from, *as;
    float scale, shift;
} pick;

static void write_picks(const char *file, const pick *p, size_t n) {
    st_entry e[MAXT * 8];
    void *bufs[MAXT * 8] = {0};
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const tens *c = find(p[i].from);
        CHECK(c != NULL);
        if (!c) continue;
        float *f = bufs[m] = malloc(c->nbytes);
        memcpy(f, c->data, c->nbytes);
        if (!strcmp(c->dtype, "F32"))
            for (size_t k = 0; k < c->nbytes / 4; k++) f[k] = f[k] * p[i].scale + p[i].shift;
        e[m] = (st_entry){p[i].as ? p[i].as : c->name, c->dtype, c->ndim, {0}, f, c->nbytes};
        for (size_t k = 0; k < c->ndim; k++) e[m].shape[k] = c->shape[k];
        m++;
    }
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    CHECK(st_write(path, NULL, e, m, 1) == 0);
    for (size_t i = 0; i < m; i++) free(bufs[i]);
}

/* verify's exit code, its stdout in out, its JSON report parsed into *json (owned) */
static int verify(const char *file, char *out, size_t n, cJSON **json) {
    char args[1400], err[2048], jpath[400];
    snprintf(jpath, sizeof jpath, "%s/r.json", dir);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/%s' --json '%s'", fixtures, dir, file, jpath);
    int rc = run_cli_in("NO_COLOR=1", cli, args, dir, out, n, err, sizeof err);
    char *text = read_whole_file(jpath, NULL);
    *json = text ? cJSON_Parse(text) : NULL;
    free(text);
    remove(jpath);
    if (rc == 2) fprintf(stderr, "  %s: %s\n", file, err);
    return rc;
}

static void hidden_states_should_be_compared_as_block_outputs(void) {
    static char out[16384];
    cJSON *j = NULL;
    const pick good[] = {{"input_ids", NULL, 1, 0}, {"h.0.in", NULL, 1, 0}, {"h.1.in", NULL, 1, 0},
                         {"h.2.in", NULL, 1, 0},    {"h.3.in", NULL, 1, 0}, {"logits", NULL, 1, 0}};
    write_picks("hidden.safetensors", good, 6);
    CHECK(verify("hidden.safetensors", out, sizeof out, &j) == 0);
    /* block L's output against h.L+1.in: three blocks' outputs compared on the way to the logits */
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(j, "forward");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fw, "compared")) >= 5);
    cJSON_Delete(j);
    for (int garbled = 1; garbled <= 3; garbled++) { /* one hidden state garbled: caught */
        pick bad[6];
        memcpy(bad, good, sizeof bad);
        bad[1 + garbled].scale = 0, bad[1 + garbled].shift = 7;
        write_picks("hidden_bad.safetensors", bad, 6);
        int rc = verify("hidden_bad.safetensors", out, sizeof out, &j);
        if (rc != 1) fprintf(stderr, "  h.%d.in garbled: exit %d\n", garbled, rc);
        CHECK(rc == 1);
        cJSON_Delete(j);
    }
}

static void two_names_of_the_stream_should_agree(void) {
    static char out[16384];
    cJSON *j = NULL;
    /* every stage, clean: the links agree and are not listed */
    const pick all[] = {{"input_ids", NULL, 1, 0}, {"embed", NULL, 1, 0}, {"h.0.in", NULL, 1, 0},
                        {"h.0.out", NULL, 1, 0},   {"h.1.in", NULL, 1, 0}, {"logits", NULL, 1, 0}};
    write_picks("links.safetensors", all, 6);
    CHECK(verify("links.safetensors", out, sizeof out, &j) == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "aliases")) == 0);
    cJSON_Delete(j);
    /* h.0.out and h.1.in differ; embed and h.0.in differ: each a capture that disagrees with itself */
    for (int which = 0; which < 2; which++) {
        pick p[6];
        memcpy(p, all, sizeof p);
        p[which ? 2 : 4].shift = 1e-3f;
        write_picks("links_bad.safetensors", p, 6);
        CHECK(verify("links_bad.safetensors", out, sizeof out, &j) == 1);
        CHECK_CONTAINS(out, "capture");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "aliases")) == 1);
        cJSON_Delete(j);
    }
    /* TransformerLens' hook_embed + hook_pos_embed beside embed: their sum must be embed */
    const pick tl[] = {{"input_ids", NULL, 1, 0}, {"embed", NULL, 1, 0}, {"embed", "hook_embed", 0.5f, 0},
                       {"embed", "hook_pos_embed", 0.5f, 0}, {"logits", NULL, 1, 0}};
    write_picks("tl_ok.safetensors", tl, 5);
    CHECK(verify("tl_ok.safetensors", out, sizeof out, &j) == 0);
    cJSON_Delete(j);
    pick tl_bad[5];
    memcpy(tl_bad, tl, sizeof tl_bad);
    tl_bad[2].shift = 7;
    write_picks("tl_bad.safetensors", tl_bad, 5);
    CHECK(verify("tl_bad.safetensors", out, sizeof out, &j) == 1);
    CHECK_CONTAINS(out, "hook_embed + hook_pos_embed");
    cJSON_Delete(j);
}

static void what_is_not_compared_should_be_said(void) {
    static char out[16384];
    cJSON *j = NULL;
    /* hook_embed alone: known, not compared, said */
    const pick half[] = {{"input_ids", NULL, 1, 0}, {"embed", "hook_embed", 0, 7}, {"logits", NULL, 1, 0}};
    write_picks("half.safetensors", half, 3);
    CHECK(verify("half.safetensors", out, sizeof out, &j) == 0);
    CHECK_CONTAINS(out, "'hook_embed' is recorded but not compared");
    CHECK_CONTAINS(out, "1 fixture tensor not compared");
    const cJSON *u = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "unknown_tensors"), 0);
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(u, "why")));
    cJSON_Delete(j);
    /* layers under names written another way: each noted with its canonical name */
    const pick odd[] = {{"h.0.mlp.in", NULL, 1, 0},      {"h.0.mlp.out", NULL, 1, 0},
                        {"h.1.mlp.in", "h.01.mlp.in", 1, 0}, {"h.1.mlp.out", "h.01.mlp.out", 1, 0},
                        {"h.2.mlp.in", "H.2.MLP.IN", 1, 0},  {"h.3.mlp.in", "model.h.3.mlp.in", 1, 0}};
    write_picks("odd.safetensors", odd, 6);
    CHECK(verify("odd.safetensors", out, sizeof out, &j) == 0); /* layer 0 compared and right */
    CHECK_CONTAINS(out, "'h.01.mlp.in' is not a name gpt2ffn knows (did you mean 'h.1.mlp.in'?)");
    CHECK_CONTAINS(out, "(did you mean 'h.2.mlp.in'?)");
    CHECK_CONTAINS(out, "(did you mean 'h.3.mlp.in'?)");
    CHECK_CONTAINS(out, "4 fixture tensors not compared");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "unknown_tensors_total")) == 4);
    cJSON_Delete(j);
}

/* A generation whose step_logits is misspelt: its tokens are compared, and the report says the
 * logits were not (a typo must not pass unseen). */
static void a_generation_should_say_what_it_did_not_compare(void) {
    char path[400], out_path[400];
    snprintf(path, sizeof path, "%s/decode/gen/clean.safetensors", fixtures);
    snprintf(out_path, sizeof out_path, "%s/typo.safetensors", dir);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    st_entry e[8];
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 8; i++) {
        const g2f_tensor *x = &t->tensors[i];
        e[n] = (st_entry){strcmp(x->name, "step_logits") ? x->name : "step_logit",
                          x->dtype == G2F_DTYPE_I64 ? "I64" : x->dtype == G2F_DTYPE_I32 ? "I32" : "F32",
                          x->ndim, {0}, x->data, (size_t)x->nbytes};
        for (size_t k = 0; k < x->ndim; k++) e[n].shape[k] = x->shape[k];
        n++;
    }
    CHECK(st_write(out_path, NULL, e, n, 1) == 0);
    g2f_safetensors_close(st);
    static char out[16384];
    cJSON *j = NULL;
    CHECK(verify("typo.safetensors", out, sizeof out, &j) == 0); /* the tokens are the greedy ones */
    CHECK_CONTAINS(out, "'step_logit' is not a name gpt2ffn knows (did you mean 'step_logits'?)");
    CHECK_CONTAINS(out, "1 fixture tensor not compared");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "unknown_tensors_total")) == 1);
    cJSON_Delete(j);
}

/* A NaN in a block's or the model's reference is nonfinite (never "unexplained" with a margin
 * below 1), and a first divergence in a layer left out with --layers is said to be undiagnosed,
 * not that no known cause explains it. */
static void nonfinite_and_undiagnosed_should_be_said(void) {
    static char out[16384];
    cJSON *j = NULL;
    tens *t = (tens *)find("h.3.out");
    CHECK(t != NULL);
    if (!t) return;
    float keep = ((float *)t->data)[5];
    ((float *)t->data)[5] = NAN;
    const pick all[] = {{"input_ids", NULL, 1, 0}, {"h.3.mid", NULL, 1, 0}, {"h.3.mlp.out", NULL, 1, 0},
                        {"h.3.out", NULL, 1, 0}, {"logits", NULL, 1, 0}};
    write_picks("nan.safetensors", all, 5);
    ((float *)t->data)[5] = keep;
    CHECK(verify("nan.safetensors", out, sizeof out, &j) == 1);
    CHECK_CONTAINS(out, "nonfinite");
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "forward"), "first_divergence");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(fd, "codes"), 0);
    CHECK(cJSON_IsString(c0) && !strcmp(c0->valuestring, "nonfinite"));
    cJSON_Delete(j);
    char args[1400], err[2048];
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/model/attn_scale_missing_layer2.safetensors' --layers 3", fixtures,
             fixtures);
    CHECK(run_cli_in("NO_COLOR=1", cli, args, dir, out, sizeof out, err, sizeof err) == 1);
    CHECK_CONTAINS(out, "layer 2, attn: not diagnosed: the layer is outside --layers");
    CHECK(strstr(out, "no known cause") == NULL);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "notcmp") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    load_clean();
    RUN(hidden_states_should_be_compared_as_block_outputs);
    RUN(two_names_of_the_stream_should_agree);
    RUN(what_is_not_compared_should_be_said);
    RUN(a_generation_should_say_what_it_did_not_compare);
    RUN(nonfinite_and_undiagnosed_should_be_said);
    for (size_t i = 0; i < n_clean; i++) free(clean[i].data);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
