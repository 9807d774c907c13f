/* g2f_probe: see g2f_probe.h. */
#include "g2f_probe.h"

#include <string.h>

#include "g2f_safetensors.h"

static const char *const descriptions[] = {
    "a file of unknown format",
    "safetensors",
    "a torch.save zip",
    "a pickle (legacy PyTorch torch.save)",
    "a GGUF file",
    "an llm.c checkpoint",
    "NumPy .npy",
    "NumPy .npz",
    "an llm.c debug state",
};
_Static_assert(sizeof descriptions / sizeof descriptions[0] == G2F_FORMAT_COUNT, "one description per format");

const char *g2f_format_describe(g2f_format f) {
    return (unsigned)f < G2F_FORMAT_COUNT ? descriptions[f] : descriptions[0];
}

g2f_format g2f_format_probe(const unsigned char *p, uint64_t n) {
    if (n >= 4 && !memcmp(p, "PK\x03\x04", 4)) return G2F_FORMAT_ZIP;
    if (n >= 4 && !memcmp(p, "GGUF", 4)) return G2F_FORMAT_GGUF;
    if (n >= 6 && !memcmp(p, "\x93NUMPY", 6)) return G2F_FORMAT_NPY;
    if (n >= 4 && p[0] == 0xc6 && p[1] == 0xd7 && p[2] == 0x34 && p[3] == 0x01) return G2F_FORMAT_LLMC;
    if (n >= 4 && p[0] == 0xc7 && p[1] == 0xd7 && p[2] == 0x34 && p[3] == 0x01) return G2F_FORMAT_LLMC_STATE;
    /* safetensors before pickle: its header length may start 80 02 .. 80 05
     * (0x280 .. 0x580 bytes), and its test (a length that fits, then '{')
     * is the stricter: a pickle's bytes 2..7 are opcodes, never that */
    if (g2f_safetensors_probe(p, n)) return G2F_FORMAT_SAFETENSORS;
    if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5) return G2F_FORMAT_PICKLE;
    return G2F_FORMAT_UNKNOWN;
}
