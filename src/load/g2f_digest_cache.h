/* g2f_digest_cache: the checkpoint's SHA-256 (g2f_model_sha256) read once
 * per version of its files. Hashing a GPT-2 XL checkpoint reads 6 GB (about
 * 4 s); a user who reruns `verify` or `run` while debugging a port pays for
 * it once, and a run beside the work (g2f_digest_job) costs no wall time.
 *
 * Where: DIR = $XDG_CACHE_HOME/gpt2ffn when XDG_CACHE_HOME is an absolute
 * path, else $HOME/.cache/gpt2ffn (created, mode 0700, when first written);
 * no cache when neither is set or GPT2FFN_NO_DIGEST_CACHE is set and not
 * "0" (tests set it, so that they never write to a user's cache). A folder
 * that is missing, unreadable or read-only is no error: the digest is then
 * computed, as without a cache.
 *
 * One entry per checkpoint, DIR/sha256-<32 hex>, named by the device and
 * inode of every file the model was read from (g2f_model_files: the file,
 * or the index and its shards, and the config.json read): a file replaced
 * in place overwrites its entry. The entry is this text, exactly:
 *
 *     gpt2ffn digest cache 1
 *     file DEV INO SIZE MTIME_S.MTIME_NS CTIME_S.CTIME_NS     (one line per file, in order)
 *     sha256 <64 lowercase hex digits>
 *     check <64 lowercase hex digits: SHA-256 of the lines above, newlines included>
 *
 * A lookup stats the files, forms the expected text up to "sha256 ", and
 * takes the digest only when the entry is that text byte for byte, then 64
 * lowercase hex digits, a newline, and a check line that matches: a stale
 * key (any file touched, replaced, grown), a torn or corrupt entry, another
 * format version, a link or a non-regular file are all a miss, and a miss
 * recomputes. The cache never decides a digest, it only remembers one.
 *
 * Stored only when the files' stat is the same after hashing as before it,
 * and every file's ctime is at least min_age_ns older than the moment the
 * hash began: a file written again within the same timestamp tick as the
 * version hashed would otherwise keep its key (file systems stamp in ticks
 * of up to 2 s). Written atomically (g2f_write_file_atomic: a temporary and
 * a rename), so a reader never sees half an entry.
 *
 * What it does not defend against: someone who can write DIR can also
 * write the checkpoint; and a file rewritten through a shared mapping whose
 * mtime the kernel has not yet updated.
 */
#ifndef G2F_DIGEST_CACHE_H
#define G2F_DIGEST_CACHE_H

#include <pthread.h>

#include "g2f_error.h"
#include "g2f_model.h"

typedef struct g2f_digest_cache {
    int enabled;          /* 0: every digest is computed and nothing is written */
    char dir[4096];       /* DIR, without a trailing slash */
    long long min_age_ns; /* see above; 2 s from the environment */
} g2f_digest_cache;

/* The cache the environment names (see above): enabled, or not. */
void g2f_digest_cache_from_env(g2f_digest_cache *c);

/* The checkpoint's digest into hex[65] (g2f_model_sha256's), from the cache
 * when it holds a valid entry for these files (*from_cache = 1), else
 * computed and stored (*from_cache = 0). c may be NULL or disabled: always
 * computed. Fails only as g2f_model_sha256 fails (the cache's own I/O
 * errors are misses, or entries not written). */
g2f_status g2f_digest_cache_model(const g2f_digest_cache *c, const g2f_model *m, char hex[65], int *from_cache,
                                  g2f_error *err);

/* The digest on a thread of its own, beside the work: `verify` and `run`
 * start it before they compute and finish it when they need the digest
 * (run: just before its output is renamed into place). Without a thread
 * (pthread_create fails) finish computes it.
 *
 *     g2f_digest_job j;
 *     g2f_digest_job_start(&j, model, &cache);
 *     ... the work ...
 *     if (g2f_digest_job_finish(&j) != G2F_OK) report(j.err.msg); else use(j.hex, j.from_cache);
 *
 * Every job started is finished before the model is closed (finish is a
 * no-op the second time, and on a job zeroed and never started). */
typedef struct g2f_digest_job {
    const g2f_model *model;          /* borrowed */
    const g2f_digest_cache *cache;   /* borrowed, or NULL */
    char hex[65];
    int from_cache;
    g2f_status st;
    g2f_error err;
    pthread_t thread;
    int started, finished;
} g2f_digest_job;

void g2f_digest_job_start(g2f_digest_job *j, const g2f_model *m, const g2f_digest_cache *c);
/* Waits for (or computes) the digest; j->st, also returned. */
g2f_status g2f_digest_job_finish(g2f_digest_job *j);

#endif
