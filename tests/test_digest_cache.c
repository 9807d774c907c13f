/* The checkpoint digest cache (g2f_digest_cache): a miss computes and
 * stores, a hit reads; a stale key (the file touched, or rewritten with its
 * old mtime), a corrupt or foreign entry and a link are misses that
 * recompute the right digest; a read-only or impossible folder is no error;
 * a file changed within a timestamp tick of the hash is not stored; the
 * environment picks the folder or turns the cache off; and end to end,
 * `verify` and `run` say when the digest came from the cache (text, JSON
 * and run's line) and record the same digest either way.
 * argv[1] = fixtures folder, argv[2] = CLI. Never touches ~/.cache: every
 * cache here is a folder of the test's own. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "g2f_digest_cache.h"
#include "g2f_model.h"
#include "g2f_sha256.h"
#include "g2f_source.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256], ck[400];
static char want[65]; /* the digest of the checkpoint copy, computed */

static void cache_at(g2f_digest_cache *c, const char *sub) {
    memset(c, 0, sizeof *c);
    c->enabled = 1;
    c->min_age_ns = 0; /* the copies here are seconds old: no tick rule unless a test asks */
    snprintf(c->dir, sizeof c->dir, "%s/%s", dir, sub);
}

/* The digest through the cache, and whether it came from it. */
static int digest(const g2f_digest_cache *c, char hex[65]) {
    g2f_model *m = NULL;
    g2f_error err = {0};
    int from = -1;
    CHECK(g2f_model_open(ck, NULL, &m, &err) == G2F_OK);
    if (m) CHECK(g2f_digest_cache_model(c, m, hex, &from, &err) == G2F_OK);
    g2f_model_close(m);
    return from;
}

/* The one entry in cache folder sub (its path into p); 0 when none or more. */
static int entry_path(const char *sub, char *p, size_t n) {
    char cmd[600], line[512] = "";
    snprintf(cmd, sizeof cmd, "ls '%s/%s' 2>/dev/null", dir, sub);
    FILE *fp = popen(cmd, "r");
    int count = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(p, n, "%s/%s/%s", dir, sub, line);
        count++;
    }
    if (fp) pclose(fp);
    return count == 1;
}

static void cache_should_compute_once_then_read(void) {
    g2f_digest_cache c;
    cache_at(&c, "c1");
    char hex[65], p[700];
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(entry_path("c1", p, sizeof p));
    CHECK(digest(&c, hex) == 1 && !strcmp(hex, want));
    char *text = read_whole_file(p, NULL);
    CHECK(text && !strncmp(text, "gpt2ffn digest cache 1\nfile ", 28));
    CHECK(text && strstr(text, want) != NULL);
    free(text);
    /* a disabled cache, or none: computed, and nothing read */
    c.enabled = 0;
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(digest(NULL, hex) == 0 && !strcmp(hex, want));
}

/* Rewrites byte `at` of the checkpoint with b, then puts its old mtime back. */
static void rewrite_keeping_mtime(size_t at, unsigned char b) {
    struct stat st;
    CHECK(stat(ck, &st) == 0);
    int fd = open(ck, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, &b, 1, (off_t)at) == 1);
    if (fd >= 0) close(fd);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    CHECK(utimensat(AT_FDCWD, ck, t, 0) == 0);
}

static void cache_should_recompute_for_a_stale_key(void) {
    g2f_digest_cache c;
    cache_at(&c, "c2");
    char hex[65];
    CHECK(digest(&c, hex) == 0 && digest(&c, hex) == 1);
    /* touched: the mtime (and ctime) change */
    struct timespec later[2] = {{0, UTIME_NOW}, {time(NULL) + 100, 0}};
    CHECK(utimensat(AT_FDCWD, ck, later, 0) == 0);
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(digest(&c, hex) == 1 && !strcmp(hex, want)); /* the entry follows the new key */
    /* the content changed, size and mtime kept: the ctime still tells */
    struct stat st;
    CHECK(stat(ck, &st) == 0);
    size_t last = (size_t)st.st_size - 1; /* a weight's byte: the model still opens */
    unsigned char old = 0;
    FILE *fp = fopen(ck, "rb");
    CHECK(fp && fseek(fp, (long)last, SEEK_SET) == 0 && fread(&old, 1, 1, fp) == 1);
    if (fp) fclose(fp);
    rewrite_keeping_mtime(last, (unsigned char)(old ^ 1));
    char changed[65];
    CHECK(digest(&c, changed) == 0 && strcmp(changed, want) != 0);
    rewrite_keeping_mtime(last, old);
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
}

/* Writes text over the cache's one entry (or, link != 0, a symlink to a
 * copy of the valid entry in its place); the next digest must be a miss
 * with the right value. */
static void corrupt_and_check(const char *what, const char *text, int link) {
    g2f_digest_cache c;
    cache_at(&c, "c3");
    char hex[65], p[700];
    int from = digest(&c, hex);
    if (from == 0) from = digest(&c, hex);
    CHECK(from == 1);
    CHECK(entry_path("c3", p, sizeof p));
    char *good = read_whole_file(p, NULL);
    char *bad = text ? malloc(strlen(text) + 300 + (good ? strlen(good) : 0)) : NULL;
    if (link) {
        char copy[720];
        snprintf(copy, sizeof copy, "%s/valid_entry", dir);
        CHECK(write_bytes(copy, good, strlen(good)) == 0 && unlink(p) == 0 && symlink(copy, p) == 0);
    } else if (good && bad) {
        /* text: "F" flips a hex digit of the digest (still hex), "T" cuts
         * the last 20 bytes, "A" appends a line, "V" another version, else
         * as given */
        strcpy(bad, good);
        char *d = strstr(bad, "sha256 ");
        if (!strcmp(text, "F") && d) d[7 + 10] = d[7 + 10] == 'a' ? 'b' : 'a';
        else if (!strcmp(text, "T")) bad[strlen(bad) - 20] = '\0';
        else if (!strcmp(text, "A")) strcat(bad, "sha256 0000\n");
        else if (!strcmp(text, "V")) bad[strlen("gpt2ffn digest cache ")] = '2';
        else strcpy(bad, text);
        CHECK(write_bytes(p, bad, strlen(bad)) == 0);
    }
    from = digest(&c, hex);
    if (from != 0 || strcmp(hex, want) != 0) fprintf(stderr, "  corrupt entry (%s) was taken\n", what);
    CHECK(from == 0 && !strcmp(hex, want));
    unlink(p);
    free(good);
    free(bad);
}

static void cache_should_never_take_a_corrupt_entry(void) {
    corrupt_and_check("a digest digit flipped", "F", 0);
    corrupt_and_check("truncated", "T", 0);
    corrupt_and_check("a line appended", "A", 0);
    corrupt_and_check("another format version", "V", 0);
    corrupt_and_check("empty", "", 0);
    corrupt_and_check("not text", "\x01\x02\xff", 0);
    corrupt_and_check("a symlink to a valid entry", NULL, 1);
}

static void cache_should_work_without_a_writable_folder(void) {
    char hex[65], p[700];
    g2f_digest_cache c;
    /* read-only (for a user other than root) */
    cache_at(&c, "ro");
    snprintf(p, sizeof p, "%s/ro", dir);
    CHECK(mkdir(p, 0500) == 0);
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(digest(&c, hex) == (geteuid() == 0)); /* root writes anyway */
    chmod(p, 0700);
    /* under a regular file: nothing can be made there, not even by root */
    snprintf(p, sizeof p, "%s/plain", dir);
    CHECK(write_bytes(p, "x", 1) == 0);
    cache_at(&c, "plain/gpt2ffn");
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    /* missing, with a missing parent: made */
    cache_at(&c, "new/gpt2ffn");
    CHECK(digest(&c, hex) == 0 && digest(&c, hex) == 1 && !strcmp(hex, want));
}

static void cache_should_not_store_a_file_changed_within_a_tick(void) {
    g2f_digest_cache c;
    cache_at(&c, "tick");
    c.min_age_ns = 3600LL * 1000000000LL; /* the copy changed less than an hour ago */
    char hex[65], p[700];
    CHECK(digest(&c, hex) == 0 && !strcmp(hex, want));
    CHECK(!entry_path("tick", p, sizeof p));
    CHECK(digest(&c, hex) == 0);
}

static void cache_should_follow_the_environment(void) {
    g2f_digest_cache c;
    setenv("GPT2FFN_NO_DIGEST_CACHE", "0", 1);
    setenv("XDG_CACHE_HOME", "/somewhere", 1);
    g2f_digest_cache_from_env(&c);
    CHECK(c.enabled && !strcmp(c.dir, "/somewhere/gpt2ffn") && c.min_age_ns == 2000000000LL);
    setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: HOME's */
    setenv("HOME", "/home/u", 1);
    g2f_digest_cache_from_env(&c);
    CHECK(c.enabled && !strcmp(c.dir, "/home/u/.cache/gpt2ffn"));
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    g2f_digest_cache_from_env(&c);
    CHECK(!c.enabled);
    setenv("XDG_CACHE_HOME", "/somewhere", 1);
    setenv("GPT2FFN_NO_DIGEST_CACHE", "1", 1);
    g2f_digest_cache_from_env(&c);
    CHECK(!c.enabled);
}

static char out_text[1 << 16];

/* The CLI with args and the cache in DIR/cli (turned on); its exit code. */
static int run_cli(const char *args) {
    char cmd[2400], p[400];
    snprintf(cmd, sizeof cmd, "GPT2FFN_NO_DIGEST_CACHE=0 XDG_CACHE_HOME='%s/cli' '%s' %s > '%s/out.txt' 2>&1", dir, cli,
             args, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *t = read_whole_file(p, NULL);
    snprintf(out_text, sizeof out_text, "%s", t ? t : "");
    free(t);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The committed checkpoint (changed long ago, so the tick rule lets it in). */
static void commands_should_say_when_the_digest_came_from_the_cache(void) {
    char args[1600];
    const char *fx = "diag/driven.safetensors"; /* passes, and records fixtures/tiny's digest */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/%s' --json -", fixtures, fixtures, fx);
    CHECK(run_cli(args) == 0);
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_match\":\ttrue");
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_cached\":\tfalse");
    CHECK(run_cli(args) == 0);
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_match\":\ttrue");
    CHECK_CONTAINS(out_text, "\"checkpoint_sha256_cached\":\ttrue");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/%s'", fixtures, fixtures, fx);
    CHECK(run_cli(args) == 0);
    CHECK_CONTAINS(out_text, "it was made from this file (this checkpoint's digest from the digest cache)\n");
    /* run: the digest recorded is the same, hashed beside the work or read */
    char sum[65] = "", cmd[600];
    snprintf(cmd, sizeof cmd, "sha256sum '%s/tiny/model.safetensors'", fixtures);
    FILE *fp = popen(cmd, "r");
    if (fp) {
        if (!fgets(sum, sizeof sum, fp)) sum[0] = '\0';
        pclose(fp);
    }
    const char *outs[] = {"o.safetensors", "o.npz"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "run '%s/tiny' '%s/tiny_tanh.safetensors' -o '%s/%s'", fixtures, fixtures, dir,
                 outs[i]);
        CHECK(run_cli(args) == 0);
        CHECK_CONTAINS(out_text, "(from the digest cache)\n"); /* verify above stored it */
        char p[400];
        snprintf(p, sizeof p, "%s/%s", dir, outs[i]);
        g2f_source *s = NULL;
        g2f_error err = {0};
        CHECK(g2f_source_open(p, &s, &err) == G2F_OK);
        const char *rec = s ? g2f_table_meta(g2f_source_table(s), "checkpoint_sha256") : NULL;
        CHECK(rec && strlen(sum) == 64 && !strcmp(rec, sum));
        g2f_source_close(s);
    }
    /* without the cache: computed beside the work, the same digest */
    snprintf(args, sizeof args, "run '%s/tiny' --ids 1,2,3 -o '%s/m.safetensors'", fixtures, dir);
    char cmd2[2000];
    snprintf(cmd2, sizeof cmd2, "GPT2FFN_NO_DIGEST_CACHE=1 '%s' %s > '%s/out.txt' 2>&1", cli, args, dir);
    CHECK(system(cmd2) == 0);
    char p[400];
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *t = read_whole_file(p, NULL);
    CHECK(t && strstr(t, sum) && !strstr(t, "digest cache"));
    free(t);
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "digest") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    char src[400];
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(ck, sizeof ck, "%s/model.safetensors", dir);
    g2f_error err = {0};
    if (copy_file(src, ck) != 0 || g2f_sha256_file(ck, want, &err) != G2F_OK) return 1;
    RUN(cache_should_compute_once_then_read);
    RUN(cache_should_recompute_for_a_stale_key);
    RUN(cache_should_never_take_a_corrupt_entry);
    RUN(cache_should_work_without_a_writable_folder);
    RUN(cache_should_not_store_a_file_changed_within_a_tick);
    RUN(commands_should_say_when_the_digest_came_from_the_cache);
    RUN(cache_should_follow_the_environment);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
