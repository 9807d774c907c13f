/* run: outputs that verify against the checkpoint and match PyTorch's export,
 * in both output formats and both namings, with metadata; write-safety. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "g2f_ffn.h"
#include "g2f_model.h"
#include "g2f_source.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 14];

static int run(const char *args) {
    char cmd[2048], p[400];
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s/out.txt' 2>&1", cli, args, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    FILE *fp = fopen(p, "rb");
    size_t n = fp ? fread(out_text, 1, sizeof out_text - 1, fp) : 0;
    out_text[n] = '\0';
    if (fp) fclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Max |a - b| over two tensors of two tables. */
static double max_diff(const g2f_table *a, const char *na, const g2f_table *b, const char *nb) {
    const g2f_tensor *x = g2f_table_find(a, na), *y = g2f_table_find(b, nb);
    if (!x || !y || x->numel != y->numel) return INFINITY;
    double *u = malloc(x->numel * sizeof(double)), *v = malloc(y->numel * sizeof(double)), m = 0;
    g2f_tensor_read_f64(x, 0, x->numel, u);
    g2f_tensor_read_f64(y, 0, y->numel, v);
    for (uint64_t i = 0; i < x->numel; i++)
        if (fabs(u[i] - v[i]) > m || isnan(u[i] - v[i])) m = fabs(u[i] - v[i]);
    free(u);
    free(v);
    return m;
}

static void run_should_write_a_fixture_that_verifies_and_matches_pytorch(void) {
    const char *outs[] = {"out.safetensors", "out.npz"};
    for (int i = 0; i < 2; i++) {
        char args[1200];
        snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/%s' --save pre,act", fixtures,
                 fixtures, dir, outs[i]);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "4 layers, 16 tensors, tanh GELU");
        snprintf(args, sizeof args, "verify '%s/tiny' '%s/%s'", fixtures, dir, outs[i]);
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "fixture metadata claims gelu=tanh; the data agrees");
        /* and against PyTorch's own export of the same inputs */
        char ours[400], theirs[400];
        snprintf(ours, sizeof ours, "%s/%s", dir, outs[i]);
        snprintf(theirs, sizeof theirs, "%s/tiny_tanh.safetensors", fixtures);
        g2f_source *a = NULL, *b = NULL;
        g2f_error err = {0};
        CHECK(g2f_source_open(ours, &a, &err) == G2F_OK && g2f_source_open(theirs, &b, &err) == G2F_OK);
        if (a && b) {
            const g2f_table *ta = g2f_source_table(a), *tb = g2f_source_table(b);
            CHECK(max_diff(ta, "h.3.mlp.in", tb, "h.3.mlp.in") == 0);
            CHECK(max_diff(ta, "h.3.mlp.out", tb, "h.3.mlp.out") < 2e-6);
            CHECK(max_diff(ta, "h.1.mlp.act", tb, "h.1.mlp.act") < 2e-6);
            CHECK(g2f_table_meta(ta, "checkpoint_sha256") != NULL);
            /* the recorded digest is the checkpoint's, as sha256sum computes it */
            char cmd[600], line[128] = "";
            snprintf(cmd, sizeof cmd, "sha256sum '%s/tiny/model.safetensors'", fixtures);
            FILE *p = popen(cmd, "r");
            if (p) {
                if (!fgets(line, sizeof line, p)) line[0] = '\0';
                pclose(p);
            }
            const char *rec = g2f_table_meta(ta, "checkpoint_sha256");
            CHECK(rec && strlen(rec) == 64 && strncmp(line, rec, 64) == 0);
            CHECK(g2f_table_meta(ta, "tool") && strstr(g2f_table_meta(ta, "tool"), "gpt2ffn"));
        }
        g2f_source_close(a);
        g2f_source_close(b);
    }
}

static void run_should_keep_the_inputs_naming_and_honour_options(void) {
    char args[1200], path[400];
    snprintf(path, sizeof path, "%s/tl.npz", dir);
    snprintf(args, sizeof args, "run '%s/tiny' '%s/npz/tiny_tanh_tlens.npz' -o '%s' --layers 1,3 --gelu erf", fixtures,
             fixtures, path);
    CHECK(run(args) == 0);
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(path, &s, &err) == G2F_OK);
    if (s) {
        const g2f_table *t = g2f_source_table(s);
        CHECK(g2f_table_find(t, "blocks.1.hook_mlp_out") && g2f_table_find(t, "blocks.3.ln2.hook_normalized"));
        CHECK(!g2f_table_find(t, "blocks.0.hook_mlp_out") && !g2f_table_find(t, "blocks.1.mlp.hook_pre"));
        CHECK(g2f_table_meta(t, "gelu") && !strcmp(g2f_table_meta(t, "gelu"), "erf"));
        g2f_source_close(s);
    }
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --gelu erf", fixtures, path);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/x' --save post", fixtures, fixtures, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(out_text, "--save 'post'");
    snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(out_text, "-o OUT is required");
}

static int leftovers(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp") != NULL;
    if (d) closedir(d);
    return n;
}

static void run_should_never_leave_a_partial_file(void) {
    char args[1200], path[400];
    struct stat st;
    snprintf(path, sizeof path, "%s/never.safetensors", dir);
    /* inputs for a layer the checkpoint lacks: refused before writing */
    snprintf(args, sizeof args, "run '%s/diag/tiny_pre' '%s/tiny_tanh.safetensors' -o '%s'", fixtures, fixtures, path);
    CHECK(run(args) == 2);
    CHECK(stat(path, &st) != 0);
    /* an unwritable destination */
    snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/no/such/dir/x.safetensors'", fixtures,
             fixtures, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(out_text, "cannot write");
    CHECK(leftovers() == 0);
}

/* The bytes of a file, or NULL (for before / after comparisons). */
static char *slurp_all(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = len >= 0 ? malloc((size_t)len + 1) : NULL;
    *n = b ? fread(b, 1, (size_t)len, fp) : 0;
    fclose(fp);
    return b;
}

/* Runs args and checks: exit 2, one line naming the output as an input, and
 * `victim` byte for byte as before. */
static void check_refused(const char *args, const char *victim) {
    size_t n0 = 0, n1 = 0;
    char *before = slurp_all(victim, &n0);
    CHECK(before != NULL);
    int rc = run(args);
    if (rc != 2) fprintf(stderr, "exit %d for: %s\n%s", rc, args, out_text);
    CHECK(rc == 2);
    CHECK(strstr(out_text, "writing there would replace it") != NULL);
    CHECK(strchr(out_text, '\n') == out_text + strlen(out_text) - 1);
    char *after = slurp_all(victim, &n1);
    CHECK(after && n0 == n1 && before && memcmp(before, after, n0) == 0);
    CHECK(leftovers() == 0);
    free(before);
    free(after);
}

static void run_should_refuse_to_overwrite_its_inputs(void) {
    char cmd[2048], args[2400], a[400], b[400];
    /* a writable copy of the checkpoint, the inputs, a sharded checkpoint and a folder of .npy */
    snprintf(cmd, sizeof cmd,
             "cp -r '%s/tiny' '%s/ck' && cp '%s/tiny_tanh.safetensors' '%s/in.safetensors' && "
             "cp -r '%s/torch/sharded' '%s/sh' && cp -r '%s/npz/tiny_tanh_npy' '%s/npy'",
             fixtures, dir, fixtures, dir, fixtures, dir, fixtures, dir);
    CHECK(system(cmd) == 0);
    const char *victims[] = {"in.safetensors", "ck/model.safetensors", "ck/config.json"};
    for (size_t i = 0; i < sizeof victims / sizeof victims[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", dir, victims[i]);
        snprintf(args, sizeof args, "run '%s/ck' '%s/in.safetensors' -o '%s'", dir, dir, a);
        check_refused(args, a);
    }
    /* the same file under another name: a hard link to the inputs, a symlink to the weights */
    snprintf(a, sizeof a, "%s/in.safetensors", dir);
    snprintf(b, sizeof b, "%s/hard.safetensors", dir);
    CHECK(link(a, b) == 0);
    snprintf(args, sizeof args, "run '%s/ck' '%s' -o '%s'", dir, a, b);
    check_refused(args, a);
    snprintf(a, sizeof a, "%s/ck/model.safetensors", dir);
    snprintf(b, sizeof b, "%s/sym.safetensors", dir);
    CHECK(symlink(a, b) == 0);
    snprintf(args, sizeof args, "run '%s/ck' '%s/in.safetensors' -o '%s'", dir, dir, b);
    check_refused(args, a);
    CHECK_CONTAINS(out_text, "is the same file as the input");
    /* a shard and the index of a sharded checkpoint; a .npy of a fixture folder */
    const char *shard_files[] = {"sh/pytorch_model-00002-of-00002.bin", "sh/pytorch_model.bin.index.json"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", dir, shard_files[i]);
        snprintf(args, sizeof args, "run '%s/sh' '%s/in.safetensors' -o '%s'", dir, dir, a);
        check_refused(args, a);
    }
    snprintf(a, sizeof a, "%s/npy/h.2.mlp.in.npy", dir);
    snprintf(args, sizeof args, "run '%s/ck' '%s/npy' -o '%s'", dir, dir, a);
    check_refused(args, a);
    /* another name beside them is fine */
    snprintf(args, sizeof args, "run '%s/ck' '%s/npy' -o '%s/npy/out.safetensors'", dir, dir, dir);
    CHECK(run(args) == 0);
}

/* sha256sum's digest of a file or of several files' sha256sum lines */
static void shell_digest(const char *cmd, char out[65]) {
    FILE *p = popen(cmd, "r");
    out[0] = '\0';
    if (p) {
        if (!fgets(out, 65, p)) out[0] = '\0';
        pclose(p);
    }
}

static void run_should_record_the_documented_digest_of_a_sharded_checkpoint(void) {
    char args[1200], path[400], cmd[800], want[65];
    snprintf(path, sizeof path, "%s/from_shards.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/torch/sharded' '%s/tiny_tanh.safetensors' -o '%s'", fixtures, fixtures, path);
    CHECK(run(args) == 0);
    /* docs/usage.md, run: the digest of what sha256sum prints for the shards, in name order */
    snprintf(cmd, sizeof cmd,
             "cd '%s/torch/sharded' && LC_ALL=C sha256sum pytorch_model-00001-of-00002.bin "
             "pytorch_model-00002-of-00002.bin | sha256sum",
             fixtures);
    shell_digest(cmd, want);
    CHECK(strlen(want) == 64);
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(path, &s, &err) == G2F_OK);
    const char *rec = s ? g2f_table_meta(g2f_source_table(s), "checkpoint_sha256") : NULL;
    CHECK(rec && strcmp(rec, want) == 0);
    CHECK_CONTAINS(out_text, want);
    g2f_source_close(s);
}

/* A checkpoint path is bytes; the output's header must be UTF-8 (our own
 * reader refuses one that is not), so a byte that is not UTF-8 is recorded
 * as U+FFFD, and the output is still a fixture that verifies. */
static void run_should_write_a_readable_header_whatever_the_checkpoint_path(void) {
    char cmd[1200], args[1400], out[400];
    snprintf(cmd, sizeof cmd, "cp -r '%s/tiny' '%s/ck\xff\x1b'", fixtures, dir);
    CHECK(system(cmd) == 0);
    snprintf(out, sizeof out, "%s/from_odd_path.safetensors", dir);
    snprintf(args, sizeof args, "run '%s/ck\xff\x1b' '%s/tiny_tanh.safetensors' -o '%s'", dir, fixtures, out);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, out);
    CHECK(run(args) == 0);
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_source_open(out, &s, &err) == G2F_OK);
    const char *ck = s ? g2f_table_meta(g2f_source_table(s), "checkpoint") : NULL;
    CHECK(ck && strstr(ck, "/ck\xef\xbf\xbd\x1b") != NULL);
    g2f_source_close(s);
}

/* Whether tensor name of t holds exactly the n floats of want. */
static int holds(const g2f_table *t, const char *name, const float *want, size_t n) {
    const g2f_tensor *x = g2f_table_find(t, name);
    float *v = x && x->numel == n ? malloc(n * sizeof *v) : NULL;
    if (!v) return 0;
    g2f_tensor_read_f32(x, 0, n, v);
    int same = memcmp(v, want, n * sizeof *v) == 0;
    free(v);
    return same;
}

/* Layers of fixtures/tiny (d 64, h 256: 19660 tokens a chunk of work
 * buffers) with 20000 tokens (two chunks, each pass recomputing), then 3
 * (one chunk, smaller than the buffers left by the layer before): every
 * output tensor bit for bit the FFN computed on all of the layer's tokens
 * at once (g2f_ffn_fc_gelu_sq, g2f_ffn_proj_sq). */
static void run_should_give_the_same_values_whatever_the_chunking(void) {
    enum { D = 64, H = 256, T0 = 20000, T1 = 3 };
    char in[400], out[400], ck[400], args[1400];
    snprintf(in, sizeof in, "%s/chunks_in.safetensors", dir);
    snprintf(out, sizeof out, "%s/chunks_out.safetensors", dir);
    snprintf(ck, sizeof ck, "%s/tiny", fixtures);
    const size_t T[2] = {T0, T1};
    float *x[2] = {malloc((size_t)T0 * D * sizeof(float)), malloc((size_t)T1 * D * sizeof(float))};
    uint64_t seed = 11;
    for (int L = 0; L < 2; L++)
        for (size_t i = 0; x[L] && i < T[L] * D; i++) x[L][i] = 3.0f * rnd_unit(&seed);
    st_entry e[2] = {{"h.0.mlp.in", "F32", 2, {T0, D}, x[0], (size_t)T0 * D * sizeof(float)},
                     {"h.1.mlp.in", "F32", 2, {T1, D}, x[1], (size_t)T1 * D * sizeof(float)}};
    CHECK(x[0] && x[1] && st_write(in, NULL, e, 2, 1) == 0);
    snprintf(args, sizeof args, "run '%s' '%s' -o '%s' --save pre,act --threads 2", ck, in, out);
    CHECK(run(args) == 0);
    g2f_model *m = NULL;
    g2f_source *s = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK && g2f_source_open(out, &s, &err) == G2F_OK);
    float *pre = malloc((size_t)T0 * H * sizeof *pre), *act = malloc((size_t)T0 * H * sizeof *act);
    float *o = malloc((size_t)T0 * D * sizeof *o);
    for (int L = 0; L < 2 && m && s && pre && act && o && x[L]; L++) {
        g2f_layer l;
        CHECK(g2f_model_layer_read(m, (size_t)L, NULL, &l, &err) == G2F_OK);
        g2f_ffn_fc_gelu_sq(&l.w, x[L], T[L], G2F_GELU_TANH, pre, act, NULL, 1, NULL);
        g2f_ffn_proj_sq(&l.w, act, NULL, T[L], o, NULL, 1, NULL);
        g2f_layer_free(&l);
        const g2f_table *t = g2f_source_table(s);
        char name[64];
        snprintf(name, sizeof name, "h.%d.mlp.in", L);
        CHECK(holds(t, name, x[L], T[L] * D));
        snprintf(name, sizeof name, "h.%d.mlp.out", L);
        CHECK(holds(t, name, o, T[L] * D));
        snprintf(name, sizeof name, "h.%d.mlp.pre", L);
        CHECK(holds(t, name, pre, T[L] * H));
        snprintf(name, sizeof name, "h.%d.mlp.act", L);
        CHECK(holds(t, name, act, T[L] * H));
    }
    free(pre), free(act), free(o), free(x[0]), free(x[1]);
    g2f_source_close(s);
    g2f_model_close(m);
    unlink(in);
    unlink(out);
}

/* Inputs large enough that `run` is still computing when it is signalled:
 * one layer of 2^17 tokens (32 MiB in, 64 MiB out). */
static void write_big_inputs(const char *path) {
    enum { D = 64, T = 1 << 17 };
    float *x = malloc((size_t)T * D * sizeof *x);
    uint64_t seed = 7;
    for (size_t i = 0; x && i < (size_t)T * D; i++) x[i] = rnd_unit(&seed);
    st_entry e = {"h.0.mlp.in", "F32", 2, {T, D}, x, (size_t)T * D * sizeof *x};
    CHECK(x && st_write(path, NULL, &e, 1, 1) == 0);
    free(x);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_should_remove_its_temporary_file_when_interrupted(void) {
    const int sigs[] = {SIGTERM, SIGINT};
    char in[400], out[400], tmp[450];
    snprintf(in, sizeof in, "%s/big_in.safetensors", dir);
    snprintf(out, sizeof out, "%s/big_out.safetensors", dir);
    write_big_inputs(in);
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        char ck[400];
        snprintf(ck, sizeof ck, "%s/tiny", fixtures);
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stdout);
            freopen("/dev/null", "w", stderr);
            execl(cli, cli, "run", ck, in, "-o", out, "--threads", "1", (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        if (pid <= 0) return;
        /* wait for the temporary to appear, then interrupt */
        snprintf(tmp, sizeof tmp, "%.*s.gpt2ffn-%ld.tmp", (int)(strrchr(out, '/') - out + 1), out, (long)pid);
        struct stat st;
        int seen = 0, status = 0;
        for (double t0 = now_s(); !seen && now_s() - t0 < 60;) {
            seen = stat(tmp, &st) == 0;
            if (!seen && waitpid(pid, &status, WNOHANG) == pid) break; /* finished first: reported below */
            if (!seen) nanosleep(&(struct timespec){0, 200000}, NULL);
        }
        CHECK(seen);
        if (seen) {
            kill(pid, sigs[k]);
            CHECK(waitpid(pid, &status, 0) == pid);
        }
        /* it dies of the signal, as the shell expects, and leaves nothing behind */
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sigs[k]);
        CHECK(stat(tmp, &st) != 0);
        CHECK(stat(out, &st) != 0);
        CHECK(leftovers() == 0);
    }
    unlink(in);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "run") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(run_should_write_a_fixture_that_verifies_and_matches_pytorch);
    RUN(run_should_keep_the_inputs_naming_and_honour_options);
    RUN(run_should_give_the_same_values_whatever_the_chunking);
    RUN(run_should_never_leave_a_partial_file);
    RUN(run_should_refuse_to_overwrite_its_inputs);
    RUN(run_should_record_the_documented_digest_of_a_sharded_checkpoint);
    RUN(run_should_remove_its_temporary_file_when_interrupted);
    RUN(run_should_write_a_readable_header_whatever_the_checkpoint_path);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
