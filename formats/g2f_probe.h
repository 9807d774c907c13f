/* g2f_probe: names a file's format from its first bytes (never from its
 * extension), so that a file of another format gets a message naming what
 * it is instead of a reader's complaint about a bad header. */
#ifndef G2F_PROBE_H
#define G2F_PROBE_H

#include <stdint.h>

typedef enum g2f_format {
    G2F_FORMAT_UNKNOWN,
    G2F_FORMAT_SAFETENSORS,
    G2F_FORMAT_ZIP,          /* a zip: torch.save (>= 1.6) unless its members are all .npy (NPZ) */
    G2F_FORMAT_PICKLE,       /* legacy torch.save */
    G2F_FORMAT_GGUF,
    G2F_FORMAT_LLMC,         /* llm.c gpt2_*.bin, magic 20240326 */
    G2F_FORMAT_NPY,          /* an .npy file, or a folder of them */
    G2F_FORMAT_NPZ,          /* a zip of .npy members (told from ZIP by its members) */
    G2F_FORMAT_LLMC_STATE,   /* llm.c's gpt2_*_debug_state.bin, magic 20240327 */
    G2F_FORMAT_COUNT
} g2f_format;

/* Short description for messages, e.g. "safetensors", "a torch.save zip",
 * "NumPy .npz" (static). */
const char *g2f_format_describe(g2f_format f);
/* The format buf[0, size) starts like; a zip is G2F_FORMAT_ZIP whatever
 * its members (g2f_npz_probe_members tells an .npz). */
g2f_format g2f_format_probe(const unsigned char *buf, uint64_t size);

#endif
