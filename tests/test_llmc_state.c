/* llm.c's debug state (formats/g2f_llmc_state.h): a state written here from
 * the library's own forward of fixtures/formats2/tiny_llmc.bin and its
 * cross-entropy (g2f_loss) reads back bit for bit, with llm.c's (B, T, V)
 * logits and with padded (B, T, Vp) ones cut to V; the committed
 * fixtures/llmc/tiny_debug_state.bin (scripts/export_llmc_state.py, the bytes
 * of llm.c's own write_state) has the layout write_state writes, its logits
 * match the library's forward of the same checkpoint within the derived
 * tolerance, and its loss matches g2f_loss's, from its own logits and from
 * ours; the source opens a state only with its checkpoint's sizes, from a
 * file or a folder; the corrupt corpus' llmc_state cases (tests/corrupt/
 * MANIFEST) fail with their messages. argv[1] is the fixtures folder. */
#include "bounds.h" /* first: it asks for MAP_ANONYMOUS */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_forward.h"
#include "g2f_llmc_state.h"
#include "g2f_loss.h"
#include "g2f_probe.h"
#include "g2f_source.h"
#include "test_util.h"

static const char *fixtures = "fixtures";

/* ---- writing a state as write_state does ---------------------------------- */

typedef struct state_in {
    uint64_t B, T, V, Vl; /* Vl: the logits' stored width (V, or Vp with padding) */
    const int32_t *x, *y;
    const float *logits;  /* (B T, V) */
    float pad;            /* the value of the padding columns (Vl > V) */
    float loss;
    uint64_t P;           /* gradient floats (zeros) */
} state_in;

static void put_f32(bytes *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    b_u32(b, u);
}

static void state_image(bytes *b, const state_in *s) {
    const uint64_t n = s->B * s->T;
    b->n = 0;
    b_u32(b, G2F_LLMC_STATE_MAGIC);
    b_u32(b, G2F_LLMC_STATE_VERSION);
    b_u32(b, (uint32_t)s->B);
    b_u32(b, (uint32_t)s->T);
    b_fill(b, 0, 1024 - 16);
    for (uint64_t i = 0; i < n; i++) b_u32(b, (uint32_t)s->x[i]);
    for (uint64_t i = 0; i < n; i++) b_u32(b, (uint32_t)s->y[i]);
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < s->Vl; j++) put_f32(b, j < s->V ? s->logits[i * s->V + j] : s->pad);
    put_f32(b, s->loss);
    b_fill(b, 0, 4 * s->P);
}

static g2f_llmc_state_dims tiny_dims(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/formats2/tiny_llmc.bin", fixtures);
    g2f_llmc *ck = NULL;
    g2f_llmc_state_dims d = {0};
    g2f_error err = {0};
    CHECK(g2f_llmc_open(path, &ck, &err) == G2F_OK);
    if (ck) CHECK(g2f_llmc_state_dims_from_llmc(g2f_llmc_table(ck), &d, &err) == G2F_OK);
    g2f_llmc_close(ck);
    return d;
}

/* The logits of every row, as the forward hands them. */
typedef struct rows {
    float *z, *vz;
    size_t V;
} rows;

static g2f_status take_logits(void *u, size_t row0, size_t n, const float *z, const float *vz, g2f_error *err) {
    (void)err;
    rows *r = u;
    memcpy(r->z + row0 * r->V, z, n * r->V * sizeof *z);
    if (vz && r->vz) memcpy(r->vz + row0 * r->V, vz, n * r->V * sizeof *vz);
    return G2F_OK;
}

/* The library's forward of ids (n_seq, T) on ckpt: logits (and with f their
 * variances) into r, allocated here. */
static g2f_status forward_logits(const char *ckpt, const int64_t *ids, size_t n_seq, size_t T, const g2f_fixture *f,
                                 rows *r, g2f_error *err) {
    g2f_model *m = NULL;
    g2f_embed e;
    memset(&e, 0, sizeof e);
    g2f_status st = g2f_model_open(ckpt, NULL, &m, err);
    if (st == G2F_OK) st = g2f_model_embed_load(m, &e, err);
    if (st == G2F_OK) {
        r->V = e.vocab;
        r->z = calloc(n_seq * T * e.vocab, sizeof *r->z);
        r->vz = f ? calloc(n_seq * T * e.vocab, sizeof *r->vz) : NULL;
        g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
        g2f_forward_params p = {0, &tol, G2F_GELU_TANH, 2, 1, 0};
        g2f_forward_hooks hk = {r, NULL, NULL, NULL, NULL, take_logits};
        st = r->z && (!f || r->vz) ? g2f_forward_run(m, &e, ids, n_seq, T, &p, NULL, f, &hk, NULL, err)
                                   : g2f_error_set(err, G2F_ERR_NOMEM, "test: out of memory");
    }
    g2f_embed_free(&e);
    g2f_model_close(m);
    return st;
}

/* The mean cross-entropy of n rows of z against y, with tolerances tol (or NULL). */
static g2f_loss_result loss_of(const float *z, const double *tol, const int32_t *y, size_t n, size_t V) {
    int64_t *t = malloc(n * sizeof *t);
    g2f_loss_acc acc;
    g2f_loss_result r;
    g2f_error err = {0};
    for (size_t i = 0; t && i < n; i++) t[i] = y[i];
    g2f_loss_init(&acc, V, G2F_TOL_LAMBDA);
    CHECK(t && g2f_loss_add(&acc, z, tol, t, n, &err) == G2F_OK);
    g2f_loss_finish(&acc, &r);
    free(t);
    return r;
}

static const float *f32_of(const g2f_table *t, const char *name) {
    const g2f_tensor *x = g2f_table_find(t, name);
    return x && x->dtype == G2F_DTYPE_F32 ? (const float *)(const void *)x->data : NULL;
}

/* The table read back holds exactly s (logits cut to V). */
static void expect_table(const g2f_table *t, const state_in *s) {
    const uint64_t n = s->B * s->T;
    CHECK(t->count == 4);
    const g2f_tensor *x = g2f_table_find(t, "input_ids"), *y = g2f_table_find(t, "targets");
    const g2f_tensor *z = g2f_table_find(t, "logits"), *l = g2f_table_find(t, "loss");
    CHECK(x && x->dtype == G2F_DTYPE_I32 && x->ndim == 2 && x->shape[0] == s->B && x->shape[1] == s->T);
    CHECK(y && y->dtype == G2F_DTYPE_I32 && y->ndim == 2 && y->numel == n);
    CHECK(z && z->dtype == G2F_DTYPE_F32 && z->ndim == 3 && z->shape[2] == s->V && z->numel == n * s->V);
    CHECK(l && l->dtype == G2F_DTYPE_F32 && l->ndim == 0 && l->numel == 1 && l->nbytes == 4);
    if (!x || !y || !z || !l) return;
    CHECK(!memcmp(x->data, s->x, n * 4) && !memcmp(y->data, s->y, n * 4));
    CHECK(!memcmp(z->data, s->logits, n * s->V * 4)); /* the padding never read */
    CHECK(!memcmp(l->data, &s->loss, 4));
    char vl[32];
    snprintf(vl, sizeof vl, "%llu", (unsigned long long)s->Vl);
    CHECK(!strcmp(g2f_table_meta(t, "format"), "llm.c debug state"));
    CHECK(!strcmp(g2f_table_meta(t, "logits_vocab"), vl));
}

/* A state written from the library's own forward and loss reads back bit
 * for bit, unpadded and padded (the padding NaN: a port's garbage, cut). */
static void state_should_read_back_what_the_forward_wrote(void) {
    enum { B = 2, T = 7 };
    char ck[512], dir[256], path[512];
    snprintf(ck, sizeof ck, "%s/formats2/tiny_llmc.bin", fixtures);
    const g2f_llmc_state_dims d = tiny_dims();
    CHECK(d.vocab == 96 && d.padded_vocab == 128 && d.n_params == 210304);
    int32_t tok[B * T + 1], x[B * T], y[B * T];
    int64_t ids[B * T];
    uint64_t seed = 7;
    for (int i = 0; i <= B * T; i++) tok[i] = (int32_t)((rnd_unit(&seed) + 1) * 48) % 96;
    for (int i = 0; i < B * T; i++) x[i] = tok[i], y[i] = tok[i + 1], ids[i] = x[i];
    rows r = {0};
    g2f_error err = {0};
    CHECK(forward_logits(ck, ids, B, T, NULL, &r, &err) == G2F_OK && r.V == 96);
    g2f_loss_result lr = loss_of(r.z, NULL, y, B * T, r.V);
    CHECK(isfinite(lr.loss) && lr.loss > 1 && lr.loss < 10);
    state_in s = {B, T, 96, 96, x, y, r.z, NAN, (float)lr.loss, d.n_params};
    bytes b = {0};
    CHECK(make_tmpdir(dir, sizeof dir, "llmc_state") == 0);
    snprintf(path, sizeof path, "%s/state.bin", dir);
    for (int padded = 0; padded < 2; padded++) {
        s.Vl = padded ? d.padded_vocab : d.vocab;
        state_image(&b, &s);
        CHECK(write_bytes(path, b.p, b.n) == 0);
        g2f_llmc_state *st = NULL;
        CHECK(g2f_llmc_state_open(path, &d, &st, &err) == G2F_OK);
        if (st) expect_table(g2f_llmc_state_table(st), &s);
        g2f_llmc_state_close(st);
        /* the source, given the checkpoint's sizes: the file, and a folder holding it */
        const g2f_source_hints h = {&d};
        for (int folder = 0; folder < 2; folder++) {
            g2f_source *src = NULL;
            CHECK(g2f_source_open_hinted(folder ? dir : path, G2F_SOURCE_FIXTURE, &h, &src, &err) == G2F_OK);
            if (src) expect_table(g2f_source_table(src), &s);
            if (src) CHECK(g2f_source_format(src) == G2F_FORMAT_LLMC_STATE);
            g2f_source_close(src);
        }
    }
    CHECK(g2f_format_probe(b.p, 4) == G2F_FORMAT_LLMC_STATE);
    /* without them: refused once the header is read, naming what is missing */
    g2f_source *src = NULL;
    CHECK(g2f_source_open_as(path, G2F_SOURCE_FIXTURE, &src, &err) == G2F_ERR_USAGE && !src);
    CHECK_CONTAINS(err.msg, "state.bin: an llm.c debug state (B=2, T=7) is read with its checkpoint");
    /* a folder with a state is no checkpoint */
    CHECK(g2f_source_open_as(dir, G2F_SOURCE_CHECKPOINT, &src, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "state.bin (an llm.c debug state, not a checkpoint)");
    remove_tmpdir(dir);
    b_free(&b);
    free(r.z);
}

/* A safetensors fixture holding the state's input_ids and logits (the
 * forward's check reads fixtures; verify will read the state itself). */
static int fixture_of_state(const g2f_table *t, const char *path) {
    const g2f_tensor *x = g2f_table_find(t, "input_ids"), *z = g2f_table_find(t, "logits");
    if (!x || !z) return -1;
    st_entry e[2] = {{"input_ids", "I32", 2, {x->shape[0], x->shape[1]}, x->data, x->nbytes},
                     {"logits", "F32", 3, {z->shape[0], z->shape[1], z->shape[2]}, z->data, z->nbytes}};
    return st_write(path, NULL, e, 2, 1);
}

/* The committed state: write_state's layout (y is x shifted by one token
 * across the whole batch, as llm.c's loader cuts them), its logits match
 * the library's forward of the same weights, and its loss (PyTorch's
 * float32 F.cross_entropy) matches g2f_loss from its own logits and from
 * ours with their tolerances; a loss moved by 2 bounds does not. */
static void committed_state_should_match_the_forward_and_its_loss(void) {
    char ck[512], path[512], dir[256], fx[512];
    snprintf(ck, sizeof ck, "%s/formats2/tiny_llmc.bin", fixtures);
    snprintf(path, sizeof path, "%s/llmc/tiny_debug_state.bin", fixtures);
    const g2f_llmc_state_dims d = tiny_dims();
    g2f_llmc_state_dims dm = {0};
    g2f_error err = {0};
    CHECK(g2f_llmc_state_dims_for_model(96, 32, 4, 64, &dm, &err) == G2F_OK); /* tiny's sizes, any format */
    CHECK(dm.vocab == d.vocab && dm.padded_vocab == d.padded_vocab && dm.n_params == d.n_params);
    g2f_llmc_state *st = NULL;
    CHECK(g2f_llmc_state_open(path, &d, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_llmc_state_table(st);
    const g2f_tensor *x = g2f_table_find(t, "input_ids"), *y = g2f_table_find(t, "targets");
    CHECK(x && x->shape[0] == 4 && x->shape[1] == 16 && !strcmp(g2f_table_meta(t, "logits_vocab"), "96"));
    CHECK(!strcmp(g2f_table_meta(t, "gradient_floats"), "210304"));
    const size_t N = 64, V = 96;
    CHECK(!memcmp(x->data + 4, y->data, (N - 1) * 4));
    /* the library's forward checks the state's logits (chained from input_ids) */
    CHECK(make_tmpdir(dir, sizeof dir, "llmc_state") == 0);
    snprintf(fx, sizeof fx, "%s/state_logits.safetensors", dir);
    CHECK(fixture_of_state(t, fx) == 0);
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    g2f_model_result res;
    memset(&res, 0, sizeof res);
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK && g2f_fixture_open(fx, &f, &err) == G2F_OK);
    g2f_tol_params tol = {0, 0, 0, G2F_TOL_LAMBDA};
    g2f_forward_params p = {0, &tol, G2F_GELU_TANH, 2, 0, 0};
    CHECK(m && f && g2f_forward_check(m, f, &p, &res, &err) == G2F_OK);
    CHECK(res.pass && res.chain[G2F_STAGE_LOGITS].checked && res.agree.top1_agree == N);
    fprintf(stderr, "  state logits: chained margin %.3g, max KL %.3g\n", res.chain[G2F_STAGE_LOGITS].margin,
            res.agree.max_kl);
    g2f_model_result_free(&res);
    g2f_model_close(m);
    /* the loss: from the file's logits (isolated), and from ours with their tolerances (chained) */
    const float *zf = f32_of(t, "logits"), *lf = f32_of(t, "loss");
    int64_t ids[64];
    for (size_t i = 0; i < N; i++) g2f_fixture_read_ids(x, i, 1, &ids[i]);
    rows r = {0};
    CHECK(forward_logits(ck, ids, 4, 16, f, &r, &err) == G2F_OK);
    double *a = calloc(N * V, sizeof *a);
    for (size_t i = 0; a && r.vz && i < N * V; i++) a[i] = G2F_TOL_LAMBDA * sqrt((double)r.vz[i]);
    const int32_t *yv = (const int32_t *)(const void *)y->data;
    g2f_loss_result iso = loss_of(zf, NULL, yv, N, V), chained = loss_of(r.z, a, yv, N, V);
    CHECK(lf && g2f_loss_matches(&iso, *lf) && g2f_loss_matches(&chained, *lf));
    if (lf)
        fprintf(stderr, "  loss %.9g: isolated %.9g margin %.3g (bound %.3g), chained %.9g margin %.3g (bound %.3g)\n",
                (double)*lf, iso.loss, g2f_loss_margin(&iso, *lf), iso.bound, chained.loss,
                g2f_loss_margin(&chained, *lf), chained.bound);
    CHECK(lf && !g2f_loss_matches(&chained, *lf + 2 * chained.bound) && !g2f_loss_matches(&iso, *lf - 2 * iso.bound));
    free(a);
    free(r.z);
    free(r.vz);
    g2f_fixture_close(f);
    remove_tmpdir(dir);
    g2f_llmc_state_close(st);
}

/* tests/corrupt/MANIFEST's llmc_state cases: PATH/state.bin read with
 * PATH/checkpoint.bin's sizes fails with the expected message. */
static void corrupt_states_should_fail_with_their_messages(void) {
    char manifest[600];
    snprintf(manifest, sizeof manifest, "%s/../tests/corrupt/MANIFEST", fixtures);
    FILE *fp = fopen(manifest, "r");
    CHECK(fp != NULL);
    if (!fp) return;
    char line[1024];
    size_t cases = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (line[0] == '#' || !sp2 || strncmp(sp1 + 1, "llmc_state ", 11) != 0) continue;
        *sp1 = '\0';
        char ck[1200], state[1200];
        snprintf(ck, sizeof ck, "%s/../tests/corrupt/%s/checkpoint.bin", fixtures, line);
        snprintf(state, sizeof state, "%s/../tests/corrupt/%s/state.bin", fixtures, line);
        g2f_llmc *m = NULL;
        g2f_llmc_state *st = NULL;
        g2f_llmc_state_dims d;
        g2f_error err = {0};
        CHECK(g2f_llmc_open(ck, &m, &err) == G2F_OK);
        if (m) CHECK(g2f_llmc_state_dims_from_llmc(g2f_llmc_table(m), &d, &err) == G2F_OK);
        g2f_status s = m ? g2f_llmc_state_open(state, &d, &st, &err) : G2F_ERR_IO;
        if (s != G2F_ERR_FORMAT || !strstr(err.msg, sp2 + 1) || !strstr(err.msg, line)) {
            fprintf(stderr, "corrupt case %s: status %d, \"%s\", wanted \"%s\"\n", line, (int)s, err.msg, sp2 + 1);
            check_failures++;
        }
        g2f_llmc_state_close(st);
        g2f_llmc_close(m);
        cases++;
    }
    fclose(fp);
    CHECK(cases >= 6);
}

/* The sizes from a table that is not an llm.c checkpoint's, or that
 * overflow, are the caller's error. */
static void dims_should_come_from_an_llmc_table_or_real_sizes(void) {
    g2f_table empty = {0};
    g2f_llmc_state_dims d = {0};
    g2f_error err = {0};
    CHECK(g2f_llmc_state_dims_from_llmc(&empty, &d, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "not an llm.c checkpoint's table");
    CHECK(g2f_llmc_state_dims_for_model(50257, 1024, 12, 768, &d, &err) == G2F_OK);
    CHECK(d.padded_vocab == 50304 && d.n_params == 124475904); /* llm.c's num_parameters for GPT-2 124M */
    CHECK(g2f_llmc_state_dims_for_model(1, 1, UINT64_MAX, 2, &d, &err) == G2F_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "zero or overflow");
    CHECK(g2f_llmc_state_dims_for_model(0, 1, 1, 1, &d, &err) == G2F_ERR_USAGE);
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    RUN(state_should_read_back_what_the_forward_wrote);
    RUN(committed_state_should_match_the_forward_and_its_loss);
    RUN(corrupt_states_should_fail_with_their_messages);
    RUN(dims_should_come_from_an_llmc_table_or_real_sizes);
    CHECK_EXIT();
}
