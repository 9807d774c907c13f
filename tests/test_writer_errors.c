/* g2f_writer when the disk refuses a write: the error names the file, the
 * temporary file is removed, and everything the writer allocated is freed
 * (a failed fwrite in the .npz writer leaked the member's name: caught by
 * LeakSanitizer in the sanitizer build, which checks each child at exit).
 * The write fails for real: the child lowers RLIMIT_FSIZE below the file's
 * size and ignores SIGXFSZ, so write() returns EFBIG. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_writer.h"
#include "test_util.h"

static char dir[256];

static int leftovers(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* Writes n_tensors tensors of 1000 floats (with metadata) in format f to
 * dir/out.*; returns the status, the message in err. */
static g2f_status write_file(g2f_out_format f, int n_tensors, char *path, size_t pathsz, g2f_error *errp) {
    static float data[1000];
    g2f_out_spec specs[3] = {{"h.0.mlp.in", 2, {10, 100}}, {"h.0.mlp.out", 2, {10, 100}}, {"h.1.mlp.in", 2, {10, 100}}};
    const g2f_out_meta meta[2] = {{"producer", "test"}, {"gelu", "tanh"}};
    snprintf(path, pathsz, "%s/out.%s", dir, f == G2F_OUT_NPZ ? "npz" : "safetensors");
    g2f_writer *w = NULL;
    g2f_status st = g2f_writer_open(path, f, specs, (size_t)n_tensors, meta, 2, &w, errp);
    for (int i = 0; st == G2F_OK && i < n_tensors; i++) st = g2f_writer_put(w, data, errp);
    g2f_status cs = w ? g2f_writer_close(w, st == G2F_OK, st == G2F_OK ? errp : NULL) : G2F_OK;
    return st == G2F_OK ? cs : st;
}

/* In a child limited to `limit` bytes per file: the same write must fail.
 * Exits 0 when every check held; at exit LeakSanitizer (when built in)
 * fails the child with its own code on any leak. */
static void child(g2f_out_format f, rlim_t limit, int n_tensors) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) exit(10);
    char path[400];
    g2f_error err = {0};
    g2f_status st = write_file(f, n_tensors, path, sizeof path, &err);
    int ok = st == G2F_ERR_IO && strstr(err.msg, path) && strstr(err.msg, "cannot write");
    if (!ok) fprintf(stderr, "child: status %d, message: %s\n", (int)st, err.msg);
    exit(ok ? 0 : 11);
}

static void run_child(g2f_out_format f, rlim_t limit, int n_tensors, int line) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) child(f, limit, n_tensors);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    int ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    if (!ok)
        fprintf(stderr, "line %d: format %d, limit %lu: child %s %d\n", line, (int)f, (unsigned long)limit,
                WIFEXITED(ws) ? "exited" : "killed by signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    CHECK(ok);
    CHECK(leftovers() == 0); /* the temporary file is gone, nothing under the name */
}

/* The size of the complete file (written without a limit, then removed). */
static rlim_t full_size(g2f_out_format f) {
    char path[400];
    g2f_error err = {0};
    CHECK(write_file(f, 3, path, sizeof path, &err) == G2F_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    unlink(path);
    return (rlim_t)st.st_size;
}

static void writer_should_free_everything_when_a_write_fails(void) {
    for (int f = 0; f < G2F_OUT_FORMAT_COUNT; f++) {
        rlim_t size = full_size((g2f_out_format)f);
        CHECK(size > 12000);
        /* in the first tensor, a later one, the last bytes (npz: the central
         * directory and end record that g2f_writer_close writes) */
        run_child((g2f_out_format)f, 100, 3, __LINE__);
        run_child((g2f_out_format)f, size / 2, 3, __LINE__);
        run_child((g2f_out_format)f, size - 10, 3, __LINE__);
        run_child((g2f_out_format)f, size - 1, 3, __LINE__);
    }
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "writer") != 0) return 1;
    RUN(writer_should_free_everything_when_a_write_fails);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
