/* g2f_bind: the library's entry points for other languages (the Python
 * package python/gpt2ffn calls them through ctypes, from libgpt2ffn.so):
 * plain C types only, each call opens what it names, does one command's
 * work as the CLI does (the same options, parsed by g2f_options, the same
 * checks and refusals, the same report writers) and returns the CLI's exit
 * code, so that a binding gets the verdict and the JSON of
 * `gpt2ffn verify --json -`, byte for byte.
 *
 * Return value: 0 pass / equivalent, 1 mismatch / different, 2 usage error
 * or bad input; with 2, msg gets the one line the CLI prints (without its
 * "gpt2ffn: " and unescaped: the binding shows it as a string). Reports are
 * malloc'd strings the caller frees with g2f_bind_free; NULL when not
 * asked for (a NULL pointer) or when the call returns 2.
 *
 * Activations in memory (g2f_bind_verify with tensors): each is checked as
 * a file's reader checks its entries before anything is computed: a name
 * (1 to 1023 bytes, given once), a dtype the fixtures hold (F32, F16, BF16,
 * F64, I32, I64: safetensors' names), at most G2F_MAX_DIMS dimensions whose
 * product does not overflow, and nbytes equal to that product times the
 * dtype's size, data not NULL unless nbytes is 0. A violation is 2 with a
 * message naming the tensor. The bytes are read in place (borrowed for the
 * call), C order, little-endian; nothing is written to a file.
 */
#ifndef G2F_BIND_H
#define G2F_BIND_H

#include <stddef.h>
#include <stdint.h>

/* One activation held by the caller. */
typedef struct g2f_bind_tensor {
    const char *name;      /* a stage's name as a fixture file would hold it ("h.0.mlp.in") */
    const char *dtype;     /* "F32", "F16", "BF16", "F64", "I32", "I64" */
    size_t ndim;
    const uint64_t *shape; /* ndim sizes, outermost first */
    const void *data;
    uint64_t nbytes;
} g2f_bind_tensor;

/* verify's options, as the CLI's strings (NULL: not given). */
typedef struct g2f_bind_verify_opts {
    const char *config;  /* --config FILE */
    const char *gelu;    /* --gelu FORM */
    const char *layers;  /* --layers LIST */
    const char *accept;  /* --accept CODES */
    const char *rtol, *atol, *threads, *n_head;
    const char *tl_normalized; /* --tl-normalized auto|after|before */
} g2f_bind_verify_opts;

/* gpt2ffn verify CHECKPOINT FIXTURES: the activations from the file
 * fixture_path (then n must be 0), or else the n tensors t with metadata
 * meta (n_meta key, value pairs: 2 n_meta strings, e.g. "gelu", "tanh": the
 * producer's claim, as a file's __metadata__) under label (the name the
 * reports give the activations, as they give a fixture's path). json and
 * text (each may be NULL) get the JSON and the text report (no colours). */
int g2f_bind_verify(const char *checkpoint, const char *fixture_path, const g2f_bind_tensor *t, size_t n,
                    const char *const *meta, size_t n_meta, const char *label, const g2f_bind_verify_opts *o,
                    char **json, char **text, char *msg, size_t msglen);

/* gpt2ffn diff A B [--accept LIST] [--only ffn|block]. */
int g2f_bind_diff(const char *a, const char *b, const char *accept, const char *only, char **json, char **text,
                  char *msg, size_t msglen);

/* run's options for the whole model, as the CLI's strings (NULL: not given). */
typedef struct g2f_bind_run_opts {
    const char *config, *gelu, *save, *names, *threads, *n_head;
} g2f_bind_run_opts;

/* gpt2ffn run CHECKPOINT --ids ... -o out_path: the whole forward of ids
 * (n_seq * T token ids; lead: the lead_ndim sizes before T, whose product
 * is n_seq), written to out_path as safetensors (atomically: g2f_writer).
 * 0 when written, 2 otherwise. */
int g2f_bind_run(const char *checkpoint, const int64_t *ids, const uint64_t *lead, size_t lead_ndim, size_t T,
                 const g2f_bind_run_opts *o, const char *out_path, char *msg, size_t msglen);

/* The library's version ("0.1.0"), static. */
const char *g2f_bind_version(void);
/* Frees a report returned above; NULL is a no-op. */
void g2f_bind_free(char *s);

#endif
