/* g2f_digest_cache: see g2f_digest_cache.h. */
#include "g2f_digest_cache.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "g2f_file.h"
#include "g2f_sha256.h"

#define HEAD "gpt2ffn digest cache 1\n"
#define KEY_MAX ((size_t)60 << 10) /* more files than this holds lines for: not cached */
#define TAIL_LEN (7 + 64 + 1 + 6 + 64 + 1) /* "sha256 " hex "\n" "check " hex "\n" */

void g2f_digest_cache_from_env(g2f_digest_cache *c) {
    memset(c, 0, sizeof *c);
    c->min_age_ns = 2000000000LL;
    const char *off = getenv("GPT2FFN_NO_DIGEST_CACHE");
    if (off && *off && strcmp(off, "0") != 0) return;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = -1;
    if (xdg && xdg[0] == '/') n = snprintf(c->dir, sizeof c->dir, "%s/gpt2ffn", xdg);
    else if (home && home[0] == '/') n = snprintf(c->dir, sizeof c->dir, "%s/.cache/gpt2ffn", home);
    c->enabled = n > 0 && (size_t)n < sizeof c->dir;
}

/* The files' identity: the entry's text up to its sha256 line, the entry's
 * name (from devices and inodes) and the newest ctime. */
typedef struct key {
    char text[KEY_MAX];
    size_t len;
    char name[33];
    long long newest_ctime_ns;
} key;

/* 0 when a file cannot be stat'ed or the text would not fit. */
static int key_make(const g2f_path_list *files, key *k) {
    g2f_sha256 ids;
    g2f_sha256_init(&ids);
    k->len = (size_t)snprintf(k->text, sizeof k->text, "%s", HEAD);
    k->newest_ctime_ns = 0;
    for (size_t i = 0; i < files->count; i++) {
        struct stat st;
        if (stat(files->paths[i], &st) != 0 || !S_ISREG(st.st_mode)) return 0;
        int n = snprintf(k->text + k->len, sizeof k->text - k->len, "file %llu %llu %llu %lld.%09ld %lld.%09ld\n",
                         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                         (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
                         (long long)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec);
        if (n < 0 || (size_t)n >= sizeof k->text - k->len) return 0;
        k->len += (size_t)n;
        char id[48];
        int m = snprintf(id, sizeof id, "%llu %llu\n", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        g2f_sha256_update(&ids, id, (size_t)m);
        long long ct = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        if (ct > k->newest_ctime_ns) k->newest_ctime_ns = ct;
    }
    char hex[65];
    g2f_sha256_final_hex(&ids, hex);
    memcpy(k->name, hex, 32);
    k->name[32] = '\0';
    return files->count > 0;
}

/* "check " line's digest: of the entry's text before it. */
static void check_of(const char *text, size_t len, char hex[65]) {
    g2f_sha256 s;
    g2f_sha256_init(&s);
    g2f_sha256_update(&s, text, len);
    g2f_sha256_final_hex(&s, hex);
}

static int lower_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* 1 and the digest when the entry at path is exactly k's text, a digest and
 * its check; 0 for anything else (missing, another size, a link, ...). */
static int entry_read(const char *path, const key *k, char hex[65]) {
    size_t want = k->len + TAIL_LEN;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    char *buf = NULL;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == want && (buf = malloc(want + 1));
    size_t got = 0;
    while (ok && got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r <= 0) ok = 0;
        else got += (size_t)r;
    }
    close(fd);
    if (ok) {
        const char *t = buf + k->len;
        char chk[65];
        check_of(buf, k->len + 72, chk);
        ok = memcmp(buf, k->text, k->len) == 0 && !memcmp(t, "sha256 ", 7) && lower_hex(t + 7, 64) && t[71] == '\n' &&
             !memcmp(t + 72, "check ", 6) && !memcmp(t + 78, chk, 64) && t[142] == '\n';
    }
    if (ok) {
        memcpy(hex, buf + k->len + 7, 64);
        hex[64] = '\0';
    }
    free(buf);
    return ok;
}

/* Best effort: a folder that cannot be made or written keeps no entry. */
static void entry_write(const g2f_digest_cache *c, const char *path, const key *k, const char hex[65]) {
    char parent[sizeof c->dir];
    snprintf(parent, sizeof parent, "%s", c->dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0700); /* $XDG_CACHE_HOME or ~/.cache, when missing */
    }
    mkdir(c->dir, 0700);
    char *text = malloc(k->len + TAIL_LEN + 1);
    if (!text) return;
    memcpy(text, k->text, k->len);
    int n = snprintf(text + k->len, TAIL_LEN + 1, "sha256 %s\n", hex);
    char chk[65];
    check_of(text, k->len + (size_t)n, chk);
    snprintf(text + k->len + n, TAIL_LEN + 1 - (size_t)n, "check %s", chk); /* the writer adds the newline */
    g2f_error ignored = {0};
    g2f_write_file_atomic(path, text, &ignored);
    free(text);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

g2f_status g2f_digest_cache_model(const g2f_digest_cache *c, const g2f_model *m, char hex[65], int *from_cache,
                                  g2f_error *err) {
    *from_cache = 0;
    g2f_path_list files = {0};
    g2f_error ignored = {0};
    key *before = c && c->enabled ? malloc(2 * sizeof *before) : NULL, *after = before ? before + 1 : NULL;
    int keyed = before && g2f_model_files(m, &files, &ignored) == G2F_OK && key_make(&files, before);
    char path[sizeof c->dir + 48];
    if (keyed) snprintf(path, sizeof path, "%s/sha256-%s", c->dir, before->name);
    if (keyed && entry_read(path, before, hex)) {
        *from_cache = 1;
        g2f_path_list_free(&files);
        free(before);
        return G2F_OK;
    }
    long long t0 = now_ns();
    g2f_status st = g2f_model_sha256(m, hex, err);
    /* stored only for files that did not change while hashed, and whose
     * last change is older than a timestamp tick */
    if (st == G2F_OK && keyed && key_make(&files, after) && after->len == before->len &&
        !memcmp(after->text, before->text, before->len) && before->newest_ctime_ns + c->min_age_ns <= t0)
        entry_write(c, path, before, hex);
    g2f_path_list_free(&files);
    free(before);
    return st;
}

static void *job_main(void *arg) {
    g2f_digest_job *j = arg;
    j->st = g2f_digest_cache_model(j->cache, j->model, j->hex, &j->from_cache, &j->err);
    return NULL;
}

void g2f_digest_job_start(g2f_digest_job *j, const g2f_model *m, const g2f_digest_cache *c) {
    memset(j, 0, sizeof *j);
    j->model = m;
    j->cache = c;
    j->started = pthread_create(&j->thread, NULL, job_main, j) == 0;
}

g2f_status g2f_digest_job_finish(g2f_digest_job *j) {
    if (!j->model || j->finished) return j->st;
    if (j->started) pthread_join(j->thread, NULL);
    else job_main(j);
    j->finished = 1;
    return j->st;
}
