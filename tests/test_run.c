/* run: outputs that verify against the checkpoint and match PyTorch's export,
 * in both output formats and both namings, with metadata; write-safety. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
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

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "run") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(run_should_write_a_fixture_that_verifies_and_matches_pytorch);
    RUN(run_should_keep_the_inputs_naming_and_honour_options);
    RUN(run_should_never_leave_a_partial_file);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
