/* What kinds of files the readers open (SECURITY.md, "No hang"): only
 * regular files, or symlinks to them. A FIFO named as a checkpoint, a shard,
 * an index, a config.json or a fixture's .npy used to block open() forever;
 * now every one is refused at once with a message saying what it is, through
 * the library and through the CLI. Every case runs under alarm(), so a
 * regression fails instead of hanging. argv[1] is the fixtures folder,
 * argv[2] the CLI. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "g2f_file.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_npy.h"
#include "g2f_sha256.h"
#include "g2f_source.h"
#include "test_util.h"

#define CASE_TIMEOUT_S 30

static const char *fixtures, *cli;
static char dir[256];
static const char *current_case = "";

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_file_kinds: timed out (blocked on a special file?) in ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, current_case, strlen(current_case)) < 0 || write(2, "\n", 1) < 0)
        _exit(3);
    _exit(3);
}

/* Every case under a watchdog: a blocking open() becomes a failure. */
#define GUARDED(test)              \
    do {                           \
        current_case = #test;      \
        alarm(CASE_TIMEOUT_S);     \
        RUN(test);                 \
        alarm(0);                  \
    } while (0)

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void make_fifo(const char *name) {
    char p[512];
    path_in(p, sizeof p, name);
    unlink(p);
    CHECK(mkfifo(p, 0600) == 0);
}

static void make_dir(const char *name) {
    char p[512];
    path_in(p, sizeof p, name);
    mkdir(p, 0700);
}

static void write_text(const char *name, const char *text) {
    char p[512];
    path_in(p, sizeof p, name);
    CHECK(write_bytes(p, text, strlen(text)) == 0);
}

/* name -> the bundled tiny checkpoint, through a symlink (allowed). */
static void link_tiny(const char *name) {
    char p[512], target[4200];
    path_in(p, sizeof p, name);
    snprintf(target, sizeof target, "%s/tiny/model.safetensors", fixtures);
    char abs[4200];
    CHECK(realpath(target, abs) != NULL);
    unlink(p);
    CHECK(symlink(abs, p) == 0);
}

static void mapping_should_refuse_each_kind_of_special_file_by_name(void) {
    g2f_mapping m;
    g2f_error err = {0};
    char p[512];
    make_fifo("pipe");
    path_in(p, sizeof p, "pipe");
    CHECK(g2f_mapping_open(p, &m, &err) == G2F_ERR_IO && !m.data && m.size == 0);
    CHECK_CONTAINS(err.msg, "pipe: is a FIFO (named pipe), not a regular file");
    CHECK(g2f_mapping_open("/dev/null", &m, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "/dev/null: is a character device");
    CHECK(g2f_mapping_open(dir, &m, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "is a directory");
    /* a socket */
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    path_in(p, sizeof p, "sock");
    if (strlen(p) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, p, strlen(p) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
        CHECK(g2f_mapping_open(p, &m, &err) == G2F_ERR_IO);
        CHECK_CONTAINS(err.msg, "sock: is a socket");
        close(fd);
        unlink(p);
    }
    /* a symlink to a FIFO is a FIFO; to a regular file, a regular file */
    char target[512];
    path_in(target, sizeof target, "pipe");
    path_in(p, sizeof p, "link_to_pipe");
    unlink(p);
    CHECK(symlink(target, p) == 0);
    CHECK(g2f_mapping_open(p, &m, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "link_to_pipe: is a FIFO (named pipe)");
    link_tiny("link_to_tiny");
    path_in(p, sizeof p, "link_to_tiny");
    CHECK(g2f_mapping_open(p, &m, &err) == G2F_OK && m.size > 0);
    g2f_mapping_close(&m);
    /* small whole-file reads and hashing go through the same check */
    char *text = NULL;
    size_t len = 0;
    path_in(p, sizeof p, "pipe");
    CHECK(g2f_read_small_file(p, 1 << 20, &text, &len, &err) == G2F_ERR_IO && !text);
    CHECK_CONTAINS(err.msg, "is a FIFO");
    char hex[65];
    CHECK(g2f_sha256_file(p, hex, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "is a FIFO");
}

static void checkpoint_should_refuse_a_fifo_in_every_role(void) {
    g2f_source *s = NULL;
    g2f_model *m = NULL;
    g2f_error err = {0};
    char p[512], cfg[512];
    /* the checkpoint itself, and an index that is a FIFO */
    make_fifo("ck.safetensors");
    path_in(p, sizeof p, "ck.safetensors");
    CHECK(g2f_source_open(p, &s, &err) == G2F_ERR_IO && !s);
    CHECK_CONTAINS(err.msg, "ck.safetensors: is a FIFO (named pipe)");
    make_fifo("ck.safetensors.index.json");
    path_in(p, sizeof p, "ck.safetensors.index.json");
    CHECK(g2f_source_open(p, &s, &err) == G2F_ERR_IO && !s);
    CHECK_CONTAINS(err.msg, "index.json: is a FIFO");
    /* a shard named in an index */
    make_dir("sharded");
    make_fifo("sharded/model-00001-of-00001.safetensors");
    write_text("sharded/model.safetensors.index.json",
               "{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"model-00001-of-00001.safetensors\"}}");
    path_in(p, sizeof p, "sharded");
    CHECK(g2f_source_open(p, &s, &err) == G2F_ERR_IO && !s);
    CHECK_CONTAINS(err.msg, "model-00001-of-00001.safetensors: is a FIFO");
    /* model.safetensors in a folder: refused by name, not skipped */
    make_dir("fifo_model");
    make_fifo("fifo_model/model.safetensors");
    path_in(p, sizeof p, "fifo_model");
    CHECK(g2f_source_open(p, &s, &err) == G2F_ERR_IO && !s);
    CHECK_CONTAINS(err.msg, "model.safetensors: is a FIFO");
    /* config.json beside the checkpoint, and one given explicitly */
    make_dir("fifo_config");
    link_tiny("fifo_config/model.safetensors");
    make_fifo("fifo_config/config.json");
    path_in(p, sizeof p, "fifo_config");
    CHECK(g2f_model_open(p, NULL, &m, &err) == G2F_ERR_IO && !m);
    CHECK_CONTAINS(err.msg, "config.json: is a FIFO");
    path_in(p, sizeof p, "fifo_config/model.safetensors");
    path_in(cfg, sizeof cfg, "pipe");
    make_fifo("pipe");
    CHECK(g2f_model_open(p, cfg, &m, &err) == G2F_ERR_IO && !m);
    CHECK_CONTAINS(err.msg, "pipe: is a FIFO");
    /* a folder named config.json is not a config to skip either */
    make_dir("dir_config");
    link_tiny("dir_config/model.safetensors");
    make_dir("dir_config/config.json");
    path_in(p, sizeof p, "dir_config");
    CHECK(g2f_model_open(p, NULL, &m, &err) == G2F_ERR_IO && !m);
    CHECK_CONTAINS(err.msg, "config.json: is a directory");
}

static void fixture_folder_should_refuse_a_fifo_npy(void) {
    g2f_fixture *f = NULL;
    g2f_npz *z = NULL;
    g2f_error err = {0};
    char p[512];
    make_dir("fx");
    make_fifo("fx/h.0.mlp.in.npy");
    path_in(p, sizeof p, "fx");
    CHECK(g2f_npz_open(p, &z, &err) == G2F_ERR_IO && !z);
    CHECK_CONTAINS(err.msg, "h.0.mlp.in.npy: is a FIFO (named pipe)");
    CHECK(g2f_fixture_open(p, &f, &err) == G2F_ERR_IO && !f);
    CHECK_CONTAINS(err.msg, "h.0.mlp.in.npy: is a FIFO");
}

/* How many mappings of this process are of the file with inode ino. */
static int mappings_of(unsigned long long ino) {
    FILE *fp = fopen("/proc/self/maps", "r");
    if (!fp) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long long lo, hi, off, inode;
        char perms[8], dev[16];
        if (sscanf(line, "%llx-%llx %7s %llx %15s %llu", &lo, &hi, perms, &off, dev, &inode) == 6 && inode == ino) n++;
    }
    fclose(fp);
    return n;
}

/* One shard file reached through three names (itself, a hard link, a
 * symlink): opened and mapped once, its tensors found through every name. */
static void shard_index_should_open_a_file_under_several_names_once(void) {
    char src[4200], p[512], q[512];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    make_dir("links");
    path_in(p, sizeof p, "links/model-00001-of-00003.safetensors");
    FILE *in = fopen(src, "rb"), *out = fopen(p, "wb");
    CHECK(in && out);
    if (!in || !out) return;
    char buf[65536];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, r, out) == r);
    fclose(in);
    CHECK(fclose(out) == 0);
    path_in(q, sizeof q, "links/model-00002-of-00003.safetensors");
    CHECK(link(p, q) == 0);
    path_in(q, sizeof q, "links/model-00003-of-00003.safetensors");
    CHECK(symlink("model-00001-of-00003.safetensors", q) == 0);
    write_text("links/model.safetensors.index.json",
               "{\"weight_map\": {"
               "\"transformer.h.0.mlp.c_fc.weight\": \"model-00001-of-00003.safetensors\","
               "\"transformer.h.0.mlp.c_fc.bias\": \"model-00002-of-00003.safetensors\","
               "\"transformer.h.0.mlp.c_proj.weight\": \"model-00003-of-00003.safetensors\","
               "\"transformer.h.0.mlp.c_proj.bias\": \"model-00002-of-00003.safetensors\"}}");
    struct stat st;
    CHECK(stat(p, &st) == 0);
    g2f_source *s = NULL;
    g2f_error err = {0};
    path_in(p, sizeof p, "links");
    CHECK(g2f_source_open(p, &s, &err) == G2F_OK);
    if (!s) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    /* the 4 mapped, and the shard's others beside them (a whole-shard loader holds them too) */
    size_t all = 0;
    {
        g2f_source *whole = NULL;
        CHECK(g2f_source_open(src, &whole, &err) == G2F_OK);
        all = whole ? g2f_source_table(whole)->count : 0;
        g2f_source_close(whole);
    }
    CHECK(all > 4 && g2f_source_table(s)->count == all);
    CHECK(mappings_of((unsigned long long)st.st_ino) == 1); /* was 3: one mapping per name */
    CHECK_CONTAINS(g2f_source_description(s), "safetensors, 1 shard under 3 names");
    const g2f_tensor *w = g2f_table_find(g2f_source_table(s), "transformer.h.0.mlp.c_proj.weight");
    CHECK(w && w->shape[0] == 256 && w->shape[1] == 64);
    g2f_source_close(s);
    CHECK(mappings_of((unsigned long long)st.st_ino) == 0);
    /* and through the model: every layer of the shard loads */
    g2f_model *m = NULL;
    CHECK(g2f_model_open(p, NULL, &m, &err) == G2F_OK);
    if (m) {
        CHECK(g2f_model_get_info(m)->n_layer == 4 && g2f_model_get_info(m)->n_inner == 256);
        g2f_layer l;
        CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
        g2f_layer_free(&l);
    }
    g2f_model_close(m);
}

/* Runs argv with stdout/stderr into files; returns the exit status, or
 * 128 + signal, or -1. The child has its own watchdog. */
static int run_cli(char *const argv[], const char *out, const char *errf) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0) _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        signal(SIGALRM, SIG_DFL);
        alarm(CASE_TIMEOUT_S);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    char *r = malloc(n + 1);
    if (r) memcpy(r, buf, n + 1);
    return r;
}

/* exit 2, nothing on stdout, one stderr line holding want */
static void expect_cli(char *const argv[], const char *want, int line) {
    char out[512], errf[512];
    path_in(out, sizeof out, "cli.out");
    path_in(errf, sizeof errf, "cli.err");
    int rc = run_cli(argv, out, errf);
    char *so = slurp(out), *se = slurp(errf);
    size_t nl = 0;
    for (const char *c = se; c && *c; c++) nl += *c == '\n';
    int ok = rc == 2 && so && !so[0] && se && nl == 1 && strstr(se, want);
    if (!ok) fprintf(stderr, "line %d: exit %d, stderr: %s", line, rc, se ? se : "(none)\n");
    CHECK(ok);
    free(so);
    free(se);
}

static void cli_should_exit_2_naming_a_fifo(void) {
    char ck[512], fx[512], tiny[4200], tanh[4200], cfg[512], sh[512];
    snprintf(tiny, sizeof tiny, "%s/tiny", fixtures);
    snprintf(tanh, sizeof tanh, "%s/tiny_tanh.safetensors", fixtures);
    make_fifo("cli_ck.safetensors");
    path_in(ck, sizeof ck, "cli_ck.safetensors");
    char *a1[] = {(char *)cli, "inspect", ck, NULL};
    expect_cli(a1, "cli_ck.safetensors: is a FIFO (named pipe), not a regular file", __LINE__);
    char *a2[] = {(char *)cli, "verify", ck, tanh, NULL};
    expect_cli(a2, "cli_ck.safetensors: is a FIFO", __LINE__);
    make_dir("cli_fx");
    make_fifo("cli_fx/h.0.mlp.in.npy");
    path_in(fx, sizeof fx, "cli_fx");
    char *a3[] = {(char *)cli, "verify", tiny, fx, NULL};
    expect_cli(a3, "h.0.mlp.in.npy: is a FIFO", __LINE__);
    make_fifo("cli_config.json");
    path_in(cfg, sizeof cfg, "cli_config.json");
    char *a4[] = {(char *)cli, "verify", tiny, tanh, "--config", cfg, NULL};
    expect_cli(a4, "cli_config.json: is a FIFO", __LINE__);
    make_dir("cli_sharded");
    make_fifo("cli_sharded/model-00001-of-00001.safetensors");
    write_text("cli_sharded/model.safetensors.index.json",
               "{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"model-00001-of-00001.safetensors\"}}");
    path_in(sh, sizeof sh, "cli_sharded");
    char *a5[] = {(char *)cli, "inspect", sh, NULL};
    expect_cli(a5, "model-00001-of-00001.safetensors: is a FIFO", __LINE__);
    char outp[512];
    path_in(outp, sizeof outp, "cli_run.safetensors");
    char *a6[] = {(char *)cli, "run", sh, tanh, "-o", outp, NULL};
    expect_cli(a6, "is a FIFO", __LINE__);
    char *a7[] = {(char *)cli, "inspect", "/dev/zero", NULL};
    expect_cli(a7, "/dev/zero: is a character device", __LINE__);
}

/* The tiny checkpoint with its header padded by pad spaces (JSON allows
 * trailing whitespace), so that parsing it takes a while; *keep is the size
 * that leaves the header whole and the tensor data gone. 0 on success. */
static int write_padded_tiny(const char *path, size_t pad, off_t *keep) {
    char src[4200];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    FILE *in = fopen(src, "rb");
    if (!in) return -1;
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    if (n < 8) return -1;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | buf[i];
    uint64_t nh = h + pad;
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)(nh >> (8 * i));
    FILE *out = fopen(path, "wb");
    if (!out) return -1;
    int ok = fwrite(lb, 1, 8, out) == 8 && fwrite(buf + 8, 1, (size_t)h, out) == h;
    static char spaces[1 << 16];
    memset(spaces, ' ', sizeof spaces);
    for (size_t done = 0; ok && done < pad; done += sizeof spaces)
        ok = fwrite(spaces, 1, pad - done < sizeof spaces ? pad - done : sizeof spaces, out) > 0;
    ok = ok && fwrite(buf + 8 + h, 1, n - 8 - (size_t)h, out) == n - 8 - h;
    *keep = (off_t)(8 + nh);
    return fclose(out) == 0 && ok ? 0 : -1;
}

/* Whether process pid has a mapping of inode ino. */
static int maps_inode(pid_t pid, unsigned long long ino) {
    char p[64], line[4096];
    snprintf(p, sizeof p, "/proc/%ld/maps", (long)pid);
    FILE *fp = fopen(p, "r");
    if (!fp) return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) {
        unsigned long long lo, hi, off, inode;
        char perms[8], dev[16];
        found = sscanf(line, "%llx-%llx %7s %llx %15s %llu", &lo, &hi, perms, &off, dev, &inode) == 6 && inode == ino;
    }
    fclose(fp);
    return found;
}

/* SECURITY.md, "Mapped files": a checkpoint truncated by another process
 * while gpt2ffn has it mapped raises SIGBUS on the next read of a lost page;
 * the CLI turns it into one line and exit 2 (it used to die by the signal,
 * exit 135, no message). The test truncates the file as soon as the CLI has
 * mapped it (it is busy parsing a header padded with 48 MiB of spaces) and
 * retries when the truncation came before the open or after the reads. */
static void cli_should_exit_2_when_a_mapped_checkpoint_is_truncated(void) {
    char ck[512], out[512], errf[512], tanh[4200];
    /* its own folder: the FIFOs other cases leave (cli_config.json) would be
     * found beside it as its config */
    path_in(ck, sizeof ck, "trunc");
    mkdir(ck, 0700);
    path_in(ck, sizeof ck, "trunc/truncated.safetensors");
    path_in(out, sizeof out, "trunc.out");
    path_in(errf, sizeof errf, "trunc.err");
    snprintf(tanh, sizeof tanh, "%s/tiny_tanh.safetensors", fixtures);
    int hit = 0, attempts = 0;
    for (; !hit && attempts < 16; attempts++) { /* a busy machine (ctest -j2) misses more often */
        off_t keep = 0;
        CHECK(write_padded_tiny(ck, (size_t)48 << 20, &keep) == 0);
        struct stat st;
        CHECK(stat(ck, &st) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fo < 0 || fe < 0) _exit(126);
            dup2(fo, 1);
            dup2(fe, 2);
            signal(SIGALRM, SIG_DFL);
            alarm(CASE_TIMEOUT_S);
            execl(cli, cli, "verify", ck, tanh, (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        if (pid <= 0) return;
        int ws = 0, done = 0;
        struct timespec tick = {0, 200000}; /* 0.2 ms */
        while (!done) {
            if (maps_inode(pid, (unsigned long long)st.st_ino)) {
                CHECK(truncate(ck, keep) == 0);
                break;
            }
            done = waitpid(pid, &ws, WNOHANG) == pid;
            if (!done) nanosleep(&tick, NULL);
        }
        if (!done)
            while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
            }
        char *se = slurp(errf);
        if (WIFSIGNALED(ws)) { /* SIGBUS not handled: the regression */
            fprintf(stderr, "attempt %d: the CLI died of signal %d\n", attempts, WTERMSIG(ws));
            CHECK(!WIFSIGNALED(ws));
            free(se);
            return;
        }
        size_t nl = 0;
        for (const char *c = se; c && *c; c++) nl += *c == '\n';
        hit = WEXITSTATUS(ws) == 2 && se && strstr(se, "(SIGBUS on a mapped page)") && nl == 1;
        if (!hit) fprintf(stderr, "attempt %d missed the window: exit %d, %s", attempts, WEXITSTATUS(ws), se ? se : "\n");
        free(se);
    }
    fprintf(stderr, "truncation caught after %d attempt(s)\n", attempts);
    CHECK(hit);
    unlink(ck);
}

/* An output (a report, run's -o) named as an existing special file is written in place: a rename
 * over /dev/null replaced it by a regular file (as root, for every process on the machine). A pipe
 * with a reader gets the text and stays a pipe; one without is refused at once (no wait); a
 * directory is refused. */
static void outputs_should_write_a_special_file_in_place(void) {
    char p[512], got[64] = {0};
    g2f_error err = {0};
    struct stat st;
    make_fifo("out_fifo");
    path_in(p, sizeof p, "out_fifo");
    int rd = open(p, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK(g2f_write_file_atomic(p, "hello", &err) == G2F_OK);
    CHECK(read(rd, got, sizeof got - 1) == 6 && !strcmp(got, "hello\n"));
    close(rd);
    CHECK(stat(p, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(g2f_write_file_atomic(p, "hello", &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "out_fifo: cannot write: a named pipe with no reader");
    CHECK(stat(p, &st) == 0 && S_ISFIFO(st.st_mode));
    make_dir("out_dir");
    path_in(p, sizeof p, "out_dir");
    CHECK(g2f_write_file_atomic(p, "hello", &err) == G2F_ERR_IO);
    CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    fixtures = argv[1];
    cli = argv[2];
    signal(SIGALRM, on_alarm);
    if (make_tmpdir(dir, sizeof dir, "kinds") != 0) return 1;
    GUARDED(mapping_should_refuse_each_kind_of_special_file_by_name);
    GUARDED(checkpoint_should_refuse_a_fifo_in_every_role);
    GUARDED(fixture_folder_should_refuse_a_fifo_npy);
    GUARDED(cli_should_exit_2_naming_a_fifo);
    GUARDED(shard_index_should_open_a_file_under_several_names_once);
    GUARDED(cli_should_exit_2_when_a_mapped_checkpoint_is_truncated);
    GUARDED(outputs_should_write_a_special_file_in_place);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
