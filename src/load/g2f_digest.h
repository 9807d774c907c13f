/* g2f_digest: a checkpoint's SHA-256, internal to the loader (the public
 * entry point is g2f_model_sha256, whose comment defines the digest):
 *   - one file: the digest of that file (what `sha256sum FILE` prints);
 *   - sharded: the digest of the text `sha256sum` prints for the shards in
 *     byte order of their names, "<digest>  <name>\n" per shard.
 * It reads every byte of the checkpoint once; kept apart from the model so
 * that a cache of digests has one place to go. */
#ifndef G2F_DIGEST_H
#define G2F_DIGEST_H

#include "g2f_error.h"
#include "g2f_source.h"

/* hex[65]: 64 lowercase hex digits and a NUL. */
g2f_status g2f_digest_checkpoint(const g2f_source *src, char hex[65], g2f_error *err);

#endif
