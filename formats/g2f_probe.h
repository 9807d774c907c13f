/* g2f_probe: names a file's format from its first bytes (never from its
 * extension), so that a file of another format gets a message naming what
 * it is instead of a reader's complaint about a bad header. */
#ifndef G2F_PROBE_H
#define G2F_PROBE_H

#include <stdint.h>

#include "g2f_error.h"

typedef enum g2f_format {
    G2F_FORMAT_UNKNOWN,
    G2F_FORMAT_SAFETENSORS,
    G2F_FORMAT_ZIP,          /* torch.save (>= 1.6) or .npz */
    G2F_FORMAT_PICKLE,       /* legacy torch.save */
    G2F_FORMAT_GGUF,
    G2F_FORMAT_LLMC,         /* llm.c gpt2_*.bin, magic 20240326 */
    G2F_FORMAT_NPY,
    G2F_FORMAT_COUNT
} g2f_format;

/* Short description, e.g. "a zip archive (PyTorch torch.save or .npz)". */
const char *g2f_format_describe(g2f_format f);
g2f_format g2f_format_probe(const unsigned char *buf, uint64_t size);

/* G2F_OK when path looks like safetensors (or nothing else we know: the
 * safetensors reader then says what is wrong); else a format error naming
 * the format found. */
g2f_status g2f_probe_expect_safetensors(const char *path, g2f_error *err);

#endif
