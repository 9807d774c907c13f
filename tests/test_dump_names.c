/* The contract between src/dump/gpt2ffn_dump.h and the fixture reader
 * (src/load/g2f_fixture): a dump holding one tensor under every name the
 * header can write (its g2f_dump_stages, per-layer ones for two layers),
 * as safetensors and as a folder of .npy files, is read by g2f_fixture_open
 * with every tensor mapped to a stage (none unknown, none an alias of
 * another) and refused by none of its checks (g2f_fixture_check, _block,
 * _model with the model's sizes), and every stage the reader knows under
 * HF names has a writer in the header (but h.L.ln_2.out, the same tensor
 * as h.L.mlp.in). Also: the header's own refusals (wrong call for a stage,
 * widths that disagree, T that changes, a name twice, a folder that holds
 * files) are errors with messages, kept until close, which leaves nothing
 * behind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_source.h"
#include "gpt2ffn_dump.h"
#include "test_util.h"

enum { B = 2, T = 3, C = 8, H = 2, NI = 32, V = 5, VP = 8, LAYERS = 2 };

/* Writes every stage of the list (per-layer ones for each layer). */
static g2f_dump_status dump_everything(const char *path, g2f_dump_format fmt) {
    static float x[B * T * VP * C * 4]; /* large enough for every tensor */
    static int ids[B * T];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 17) * 0.125f;
    for (int i = 0; i < B * T; i++) ids[i] = i % V;
    g2f_dump *d = g2f_dump_open(path, fmt, B);
    for (size_t k = 0; k < G2F_DUMP_N_STAGES; k++) {
        const g2f_dump_stage_name *s = &g2f_dump_stages[k];
        const size_t w = s->width ? s->width * C : NI;
        for (size_t L = 0; L < (s->per_layer ? LAYERS : 1); L++) {
            if (s->kind == G2F_DUMP_IDS) g2f_dump_ids(d, ids, T);
            else if (s->kind == G2F_DUMP_LOGITS) g2f_dump_logits(d, x, T, V, VP);
            else if (s->kind == G2F_DUMP_PROBS) g2f_dump_attn_probs(d, L, x, H, T);
            else if (s->per_layer) g2f_dump_stage(d, L, s->name, x, T, w);
            else g2f_dump_model(d, s->name, x, T, w);
        }
    }
    char msg[G2F_DUMP_MSG_MAX];
    g2f_dump_status st = g2f_dump_close(d, msg, sizeof msg);
    if (st != G2F_DUMP_OK) fprintf(stderr, "dump: %s\n", msg);
    return st;
}

/* t is among the tensors the reader mapped for layers < LAYERS and the model. */
static int mapped(const g2f_fixture *f, const char *name) {
    for (size_t L = 0; L < LAYERS; L++)
        for (int k = 0; k < G2F_ACT_COUNT; k++) {
            const g2f_tensor *t = g2f_fixture_act(f, L, (g2f_act)k);
            if (t && !strcmp(t->name, name)) return 1;
        }
    return 0;
}

static void check_dump(const char *path) {
    g2f_source *src = NULL;
    g2f_fixture *f = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open_as(path, G2F_SOURCE_FIXTURE, &src, &err) == G2F_OK);
    CHECK(g2f_fixture_open(path, &f, &err) == G2F_OK);
    if (!src || !f) {
        fprintf(stderr, "%s\n", err.msg);
        g2f_source_close(src);
        g2f_fixture_close(f);
        return;
    }
    const g2f_table *t = g2f_source_table(src);
    size_t expected = 0, total = 0;
    for (size_t k = 0; k < G2F_DUMP_N_STAGES; k++) expected += g2f_dump_stages[k].per_layer ? LAYERS : 1;
    CHECK(t->count == expected);
    for (size_t i = 0; i < t->count; i++) {
        if (!mapped(f, t->tensors[i].name)) fprintf(stderr, "  '%s' maps to no stage\n", t->tensors[i].name);
        CHECK(mapped(f, t->tensors[i].name));
    }
    CHECK(g2f_fixture_n_unknown(f, &total) == 0 && total == 0);
    /* no name twice; the residual stream under its two names (h.L.out and h.L+1.in,
     * embed and h.0.in) is a link verify checks, one a layer boundary */
    size_t links = 0;
    for (size_t i = 0; i < g2f_fixture_n_aliases(f); i++) links += g2f_fixture_alias_at(f, i)->stream;
    CHECK(links == g2f_fixture_n_aliases(f) && links == LAYERS);
    /* none refused: the reader's checks with the model's sizes */
    size_t n_seq = 0, TT = 0;
    CHECK(g2f_fixture_check(f, LAYERS, C, NI, &err) == G2F_OK);
    CHECK(g2f_fixture_check_block(f, LAYERS, C, H, &err) == G2F_OK);
    CHECK(g2f_fixture_check_model(f, C, V, 16, &n_seq, &TT, &err) == G2F_OK);
    if (err.msg[0]) fprintf(stderr, "  %s\n", err.msg);
    CHECK(n_seq == B && TT == T);
    /* and the other way: every stage the reader knows under HF names is written */
    for (size_t L = 0; L < LAYERS; L++) {
        for (int k = G2F_ACT_IN; k <= G2F_ACT_OUT; k++) /* every layer stage HF names */
            CHECK(!g2f_act_info_of((g2f_act)k)->hf || g2f_fixture_act(f, L, (g2f_act)k) != NULL);
    }
    for (int k = 0; k <= G2F_ACT_FORWARD_LAST; k++) /* a forward's (a generation's tensors are not a dump's) */
        CHECK(g2f_act_per_layer((g2f_act)k) || !g2f_act_info_of((g2f_act)k)->hf || g2f_fixture_act(f, 0, (g2f_act)k) != NULL);
    const g2f_tensor *z = g2f_fixture_act(f, 0, G2F_ACT_LOGITS), *ids = g2f_fixture_act(f, 0, G2F_ACT_IDS);
    CHECK(z && z->dtype == G2F_DTYPE_F32 && z->ndim == 3 && z->shape[0] == B && z->shape[2] == V);
    CHECK(ids && ids->dtype == G2F_DTYPE_I32 && ids->ndim == 2 && ids->shape[0] == B && ids->shape[1] == T);
    if (z) { /* each row's first V of VP, cut */
        float row1[V];
        g2f_tensor_read_f32(z, V, V, row1);
        for (int j = 0; j < V; j++) CHECK(row1[j] == (float)((VP + j) % 17) * 0.125f);
    }
    g2f_fixture_close(f);
    g2f_source_close(src);
}

static void every_name_the_header_writes_should_map_to_a_stage(void) {
    char dir[256], path[512];
    CHECK(make_tmpdir(dir, sizeof dir, "dump_names") == 0);
    snprintf(path, sizeof path, "%s/all.safetensors", dir);
    CHECK(dump_everything(path, G2F_DUMP_AUTO) == G2F_DUMP_OK);
    check_dump(path);
    snprintf(path, sizeof path, "%s/all_npy", dir);
    CHECK(dump_everything(path, G2F_DUMP_AUTO) == G2F_DUMP_OK);
    check_dump(path);
    remove_tmpdir(dir);
}

/* A folder's entries, "." and ".." not counted. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* The first error is kept and reported by close, which removes the
 * temporaries; a good dump replaces a safetensors file atomically. */
static void dump_errors_should_be_kept_and_leave_nothing(void) {
    char dir[256], path[512], msg[G2F_DUMP_MSG_MAX];
    static const float x[3 * 4 * 24];
    CHECK(make_tmpdir(dir, sizeof dir, "dump_err") == 0);
    snprintf(path, sizeof path, "%s/d.safetensors", dir);
    static const struct { int call; const char *needle; } cases[] = {
        {0, "'attn.probs' is not a stage this call writes: use g2f_dump_attn_probs"},
        {1, "'ln_f.out' is not a stage this call writes: use g2f_dump_model (the model's)"},
        {2, "'h.0.attn.qkv' is 16 wide but must be 3 n_embd = 24"},
        {3, "'h.1.in' has T = 2 but the stages before it 4"},
        {4, "tensor 'h.0.in' written twice"},
        {5, "logits: V = 9, Vp = 8: need 1 <= V <= Vp"},
        {6, "'ln_2.out' is not a stage this call writes (gpt2ffn_dump.h: g2f_dump_stages)"},
        {7, "layer 4096 of 'in': at most 4096 layers"},
        {8, "nothing was written to the dump"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g2f_dump *d = g2f_dump_open(path, G2F_DUMP_AUTO, 3);
        if (cases[i].call != 8) g2f_dump_stage(d, 0, "in", x, 4, 8); /* n_embd 8, T 4 */
        g2f_dump_status st = G2F_DUMP_OK;
        switch (cases[i].call) {
        case 0: st = g2f_dump_stage(d, 0, "attn.probs", x, 4, 8); break;
        case 1: st = g2f_dump_stage(d, 0, "ln_f.out", x, 4, 8); break;
        case 2: st = g2f_dump_stage(d, 0, "attn.qkv", x, 4, 16); break;
        case 3: st = g2f_dump_stage(d, 1, "in", x, 2, 8); break;
        case 4: st = g2f_dump_stage(d, 0, "in", x, 4, 8); break;
        case 5: st = g2f_dump_logits(d, x, 4, 9, 8); break;
        case 6: st = g2f_dump_stage(d, 0, "ln_2.out", x, 4, 8); break;
        case 7: st = g2f_dump_stage(d, 4096, "in", x, 4, 8); break;
        default: break;
        }
        CHECK(st == (cases[i].call == 8 ? G2F_DUMP_OK : G2F_DUMP_ERR_USAGE));
        CHECK(g2f_dump_model(d, "ln_f.out", x, 4, 8) == (cases[i].call == 8 ? G2F_DUMP_OK : G2F_DUMP_ERR_USAGE));
        if (cases[i].call == 8) { /* a fresh dump, then nothing: close alone fails */
            g2f_dump_discard(d);
            d = g2f_dump_open(path, G2F_DUMP_AUTO, 3);
        }
        CHECK(g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_ERR_USAGE);
        CHECK_CONTAINS(msg, cases[i].needle);
        CHECK_CONTAINS(msg, path);
        CHECK(entries(dir) == 0); /* no temporary, no PATH */
    }
    /* a good one, twice: the second replaces the first; nothing else stays */
    for (int k = 0; k < 2; k++) {
        g2f_dump *d = g2f_dump_open(path, G2F_DUMP_SAFETENSORS, 3);
        CHECK(g2f_dump_stage(d, 0, "in", x, 4, 8 + 8 * k) == G2F_DUMP_OK);
        CHECK(g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_OK && msg[0] == '\0');
        CHECK(entries(dir) == 1);
    }
    /* a folder that holds files is not replaced */
    snprintf(path, sizeof path, "%s/folder", dir);
    CHECK(mkdir(path, 0700) == 0);
    g2f_dump *d = g2f_dump_open(path, G2F_DUMP_NPY, 1);
    CHECK(g2f_dump_stage(d, 0, "in", x, 4, 8) == G2F_DUMP_OK); /* an empty folder is */
    CHECK(g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_OK && entries(path) == 1);
    d = g2f_dump_open(path, G2F_DUMP_NPY, 1);
    CHECK(g2f_dump_stage(d, 0, "in", x, 4, 8) == G2F_DUMP_ERR_USAGE);
    CHECK(g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_ERR_USAGE);
    CHECK_CONTAINS(msg, "folder: exists and is not empty");
    CHECK(entries(dir) == 2 && entries(path) == 1);
    /* a named pipe (or /dev/null) is not renamed over: the dump is refused, the pipe stays */
    snprintf(path, sizeof path, "%s/pipe.safetensors", dir);
    CHECK(mkfifo(path, 0600) == 0);
    d = g2f_dump_open(path, G2F_DUMP_AUTO, 1);
    g2f_dump_stage(d, 0, "in", x, 4, 8);
    CHECK(g2f_dump_close(d, msg, sizeof msg) == G2F_DUMP_ERR_USAGE);
    CHECK_CONTAINS(msg, "pipe.safetensors: exists and is not a regular file");
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISFIFO(st.st_mode));
    unlink(path);
    /* NULL (out of memory at open) is an error everywhere, never a crash */
    CHECK(g2f_dump_stage(NULL, 0, "in", x, 4, 8) == G2F_DUMP_ERR_NOMEM);
    CHECK(g2f_dump_close(NULL, msg, sizeof msg) == G2F_DUMP_ERR_NOMEM);
    CHECK_CONTAINS(msg, "out of memory");
    g2f_dump_discard(NULL);
    remove_tmpdir(dir);
}

int main(void) {
    RUN(every_name_the_header_writes_should_map_to_a_stage);
    RUN(dump_errors_should_be_kept_and_leave_nothing);
    CHECK_EXIT();
}
