/* Write-safety: every file gpt2ffn writes goes to a temporary name and is
 * renamed into place only when complete, so a failed or interrupted write
 * never leaves a half-written file under the requested name, nor replaces a
 * good one. Covers g2f_outfile (the one implementation), through
 * g2f_write_file_atomic (reports) and g2f_writer (run outputs); the
 * temporary is created afresh (never written through a file or link already
 * there) and is removed by the signal cleanup. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "g2f_report.h"
#include "g2f_source.h"
#include "g2f_writer.h"
#include "test_util.h"

static char dir[256];

static int tmp_leftovers(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp") != NULL;
    if (d) closedir(d);
    return n;
}

static char *read_all(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *b = calloc(1, 4096);
    if (b) {
        size_t r = fread(b, 1, 4095, fp);
        (void)r;
    }
    fclose(fp);
    return b;
}

static void report_write_should_replace_whole_or_not_at_all(void) {
    char path[400];
    g2f_error err = {0};
    snprintf(path, sizeof path, "%s/report.json", dir);
    CHECK(g2f_write_file_atomic(path, "{\"a\": 1}", &err) == G2F_OK);
    char *t = read_all(path);
    CHECK(t && strcmp(t, "{\"a\": 1}\n") == 0);
    free(t);
    CHECK(g2f_write_file_atomic(path, "{\"b\": 2}", &err) == G2F_OK);
    t = read_all(path);
    CHECK(t && strcmp(t, "{\"b\": 2}\n") == 0);
    free(t);
    /* the rename fails (the target is a folder): the folder is untouched and
     * the temporary file is gone */
    char sub[400];
    snprintf(sub, sizeof sub, "%s/folder", dir);
    CHECK(mkdir(sub, 0700) == 0);
    CHECK(g2f_write_file_atomic(sub, "{}", &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "cannot write");
    struct stat st;
    CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(tmp_leftovers() == 0);
    rmdir(sub);
    unlink(path);
}

/* A legal name of NAME_MAX (255) bytes is written: the temporary has a
 * short name of its own (before, OUT.tmp-PID was too long: ENAMETOOLONG). */
static void report_write_should_take_a_255_byte_name(void) {
    char path[600], name[256];
    g2f_error err = {0};
    memset(name, 'r', 255);
    memcpy(name + 250, ".json", 6);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(g2f_write_file_atomic(path, "{}", &err) == G2F_OK);
    char *t = read_all(path);
    CHECK(t && strcmp(t, "{}\n") == 0);
    free(t);
    CHECK(tmp_leftovers() == 0);
    unlink(path);
}

static void writer_should_show_nothing_until_commit(void) {
    char path[400];
    g2f_error err = {0};
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    CHECK(write_bytes(path, "old", 3) == 0);
    for (int f = 0; f < G2F_OUT_FORMAT_COUNT; f++) {
        g2f_out_spec spec = {"h.0.mlp.out", 2, {2, 3}};
        float data[6] = {1, 2, 3, 4, 5, 6};
        g2f_writer *w = NULL;
        /* abandoned: the old file stays as it was, no temporary is left */
        CHECK(g2f_writer_open(path, (g2f_out_format)f, &spec, 1, NULL, 0, &w, &err) == G2F_OK);
        if (!w) continue;
        CHECK(g2f_writer_put(w, data, &err) == G2F_OK);
        char *t = read_all(path);
        CHECK(t && strcmp(t, "old") == 0);
        free(t);
        CHECK(g2f_writer_close(w, 0, &err) == G2F_OK);
        t = read_all(path);
        CHECK(t && strcmp(t, "old") == 0);
        free(t);
        CHECK(tmp_leftovers() == 0);
        /* committed: replaced in one rename */
        CHECK(g2f_writer_open(path, (g2f_out_format)f, &spec, 1, NULL, 0, &w, &err) == G2F_OK);
        if (!w) continue;
        CHECK(g2f_writer_put(w, data, &err) == G2F_OK);
        CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
        struct stat st;
        CHECK(stat(path, &st) == 0 && st.st_size > 24);
        CHECK(tmp_leftovers() == 0);
        CHECK(write_bytes(path, "old", 3) == 0);
    }
    unlink(path);
}

/* A metadata value known only after the data (run's digest, hashed beside
 * the work) replaces its placeholder in place, in either format, and the
 * file reads back whole; a value that would change the header's length, or
 * a key never given, is refused and nothing is written. */
static void writer_should_set_a_metadata_value_after_the_data(void) {
    char path[400];
    g2f_error err = {0};
    snprintf(path, sizeof path, "%s/late.safetensors", dir);
    for (int f = 0; f < G2F_OUT_FORMAT_COUNT; f++) {
        g2f_out_spec spec = {"h.0.mlp.out", 2, {2, 3}};
        float data[6] = {1, 2, 3, 4, 5, 6};
        g2f_out_meta meta[3] = {{"tool", "t"}, {"checkpoint_sha256", "0000"}, {"gelu", "tanh"}};
        g2f_writer *w = NULL;
        CHECK(g2f_writer_open(path, (g2f_out_format)f, &spec, 1, meta, 3, &w, &err) == G2F_OK);
        if (!w) continue;
        CHECK(g2f_writer_put(w, data, &err) == G2F_OK);
        CHECK(g2f_writer_set_meta(w, "checkpoint_sha256", "a1b2", &err) == G2F_OK);
        CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
        g2f_source *s = NULL;
        CHECK(g2f_source_open(path, &s, &err) == G2F_OK);
        const g2f_table *t = s ? g2f_source_table(s) : NULL;
        const char *v = t ? g2f_table_meta(t, "checkpoint_sha256") : NULL;
        CHECK(v && !strcmp(v, "a1b2"));
        CHECK(t && g2f_table_meta(t, "gelu") && !strcmp(g2f_table_meta(t, "gelu"), "tanh"));
        const g2f_tensor *x = t ? g2f_table_find(t, "h.0.mlp.out") : NULL;
        float back[6] = {0};
        if (x) g2f_tensor_read_f32(x, 0, 6, back);
        CHECK(x && !memcmp(back, data, sizeof data));
        g2f_source_close(s);
        unlink(path);
        /* longer, and unknown: refused, no file */
        const char *keys[2] = {"checkpoint_sha256", "nokey"}, *vals[2] = {"a1b2c", "x"};
        for (int k = 0; k < 2; k++) {
            CHECK(g2f_writer_open(path, (g2f_out_format)f, &spec, 1, meta, 3, &w, &err) == G2F_OK);
            if (!w) continue;
            CHECK(g2f_writer_put(w, data, &err) == G2F_OK);
            CHECK(g2f_writer_set_meta(w, keys[k], vals[k], &err) == G2F_ERR_USAGE);
            CHECK_CONTAINS(err.msg, keys[k]);
            CHECK(g2f_writer_close(w, 1, &err) != G2F_OK);
            struct stat st;
            CHECK(stat(path, &st) != 0 && tmp_leftovers() == 0);
        }
    }
}

/* A file or link already at the temporary's name is neither followed nor
 * truncated: the write goes to another temporary name. */
static void outfile_should_never_write_through_an_existing_temporary(void) {
    char path[400], tmp[450], victim[400];
    g2f_error err = {0};
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s/.gpt2ffn-%ld.tmp", dir, (long)getpid());
    snprintf(victim, sizeof victim, "%s/victim", dir);
    CHECK(write_bytes(victim, "precious", 8) == 0);
    CHECK(symlink(victim, tmp) == 0);
    g2f_out_spec spec = {"h.0.mlp.out", 2, {2, 3}};
    float data[6] = {1, 2, 3, 4, 5, 6};
    g2f_writer *w = NULL;
    CHECK(g2f_writer_open(path, G2F_OUT_SAFETENSORS, &spec, 1, NULL, 0, &w, &err) == G2F_OK);
    if (w) {
        CHECK(g2f_writer_put(w, data, &err) == G2F_OK);
        CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
    }
    char *t = read_all(victim);
    CHECK(t && strcmp(t, "precious") == 0);
    free(t);
    struct stat st;
    CHECK(lstat(tmp, &st) == 0 && S_ISLNK(st.st_mode)); /* not ours: left alone */
    CHECK(stat(path, &st) == 0 && st.st_size > 24);
    CHECK(g2f_write_file_atomic(path, "{}", &err) == G2F_OK);
    t = read_all(victim);
    CHECK(t && strcmp(t, "precious") == 0);
    free(t);
    unlink(tmp);
    unlink(victim);
    unlink(path);
    CHECK(tmp_leftovers() == 0);
}

/* What the CLI's SIGINT / SIGTERM handler calls: every temporary being
 * written is unlinked (then the process dies); the commit that would have
 * followed fails instead of publishing anything. More files open at once
 * than there are slots are still written atomically. */
static void outfile_temporaries_should_go_with_the_signal_cleanup(void) {
    enum { N = G2F_OUTFILE_SLOTS + 3 };
    g2f_outfile *f[N] = {0};
    g2f_error err = {0};
    char path[N][400];
    for (int i = 0; i < N; i++) {
        snprintf(path[i], sizeof path[i], "%s/report%d.json", dir, i);
        CHECK(g2f_outfile_open(path[i], &f[i], &err) == G2F_OK);
        if (f[i]) fputs("{}", g2f_outfile_stream(f[i]));
    }
    CHECK(tmp_leftovers() == N);
    g2f_outfile_remove_temporaries();
    CHECK(tmp_leftovers() == N - G2F_OUTFILE_SLOTS); /* the unregistered ones */
    struct stat st;
    for (int i = 0; i < N; i++) {
        g2f_status s = g2f_outfile_close(f[i], 1, &err);
        CHECK(i < G2F_OUTFILE_SLOTS ? s == G2F_ERR_IO : s == G2F_OK);
        CHECK((stat(path[i], &st) == 0) == (i >= G2F_OUTFILE_SLOTS));
        unlink(path[i]);
    }
    CHECK(tmp_leftovers() == 0);
    /* slots are free again once closed: a new file is registered */
    g2f_outfile *g = NULL;
    CHECK(g2f_outfile_open(path[0], &g, &err) == G2F_OK);
    g2f_outfile_remove_temporaries();
    CHECK(tmp_leftovers() == 0);
    CHECK(g2f_outfile_close(g, 0, &err) == G2F_OK);
    CHECK(g2f_outfile_close(NULL, 1, &err) == G2F_OK);
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "atomic") != 0) return 1;
    RUN(report_write_should_replace_whole_or_not_at_all);
    RUN(report_write_should_take_a_255_byte_name);
    RUN(writer_should_show_nothing_until_commit);
    RUN(writer_should_set_a_metadata_value_after_the_data);
    RUN(outfile_should_never_write_through_an_existing_temporary);
    RUN(outfile_temporaries_should_go_with_the_signal_cleanup);
    rmdir(dir);
    CHECK_EXIT();
}
