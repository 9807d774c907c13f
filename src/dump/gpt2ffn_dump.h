/* gpt2ffn_dump.h: write a GPT-2 port's activations under gpt2ffn's stage
 * names, for `gpt2ffn verify CHECKPOINT DUMP`. One header, C11 and the C
 * library only (plus POSIX mkdir / opendir for the folder form): copy it
 * into the port, or include it from an installed gpt2ffn (it is installed
 * beside the library's headers, but needs nothing of the library). It
 * compiles as C++11 too, for ggml and llama.cpp ports (tests/test_dump_cxx).
 * docs/dump.md says how to use it and what verify then says.
 *
 *     g2f_dump *d = g2f_dump_open("dump.safetensors", G2F_DUMP_AUTO, B);
 *     g2f_dump_ids(d, tokens, T);                        // int (B, T)
 *     g2f_dump_model(d, "embed", acts.encoded, T, C);    // float (B, T, C)
 *     for (int l = 0; l < L; l++) {
 *         g2f_dump_stage(d, l, "ln_1.out", acts.ln1 + l * B * T * C, T, C);
 *         g2f_dump_stage(d, l, "attn.qkv", acts.qkv + l * B * T * 3 * C, T, 3 * C);
 *         g2f_dump_attn_probs(d, l, acts.att + l * B * NH * T * T, NH, T);
 *         ...                                            // one line per stage
 *     }
 *     g2f_dump_model(d, "ln_f.out", acts.lnf, T, C);
 *     g2f_dump_logits(d, acts.logits, T, V, Vp);         // (B, T, Vp) cut to V
 *     char msg[G2F_DUMP_MSG_MAX];
 *     if (g2f_dump_close(d, msg, sizeof msg) != G2F_DUMP_OK) fprintf(stderr, "%s\n", msg);
 *
 * Output (chosen by g2f_dump_format; AUTO: a path ending in ".safetensors"
 * is one safetensors file, anything else a folder of .npy files):
 *   safetensors  every tensor in one file, F32 / I32, little-endian, the
 *                header padded to 8 bytes; __metadata__ {"producer":
 *                "gpt2ffn_dump.h"}; offsets below 2^53 (the JSON limit)
 *   .npy folder  PATH/NAME.npy per tensor ('<f4' / '<i4', C order, header
 *                version 1 padded to 64 bytes), as numpy.save writes them
 * Names (g2f_dump_stages below, the one list): per layer L "h.L.<stage>",
 * the model's ends by their own name, exactly the names gpt2ffn's fixture
 * reader maps to its stages (tests/test_dump_names holds the two to it).
 * Shapes: B (given to g2f_dump_open) is the leading dimension of every
 * tensor, and every stage must have the same T:
 *   input_ids (B, T) int32; rows (B, T, width) float32; attention
 *   probabilities (B, n_head, T, T); logits (B, T, V) float32.
 * Widths are checked against each other: the first n_embd-wide stage sets
 * n_embd, attn.qkv must be 3 n_embd wide, the others n_embd (mlp.pre /
 * mlp.act: any width, n_inner).
 *
 * Atomic output: everything goes to PATH.tmp-dump-N (a file, or a folder of
 * .npy files; safetensors data first to PATH.spill-dump-N, since its header
 * needs every tensor's size), created exclusively, and becomes PATH only in
 * g2f_dump_close, by rename: a failed or interrupted dump never leaves a
 * partial PATH, nor replaces a good one. A safetensors PATH is replaced; a
 * folder PATH must not exist yet, or be empty (rename cannot replace a
 * folder that holds files, and an old dump's layers must not mix with a
 * new one's): g2f_dump_open refuses it. A process killed meanwhile leaves
 * its PATH.tmp-dump-N / PATH.spill-dump-N behind (no signal handler here).
 *
 * Failure model: no function prints, exits or aborts. Every size is
 * overflow-checked before use. The first error is kept in the dump (a
 * status and a one-line message naming PATH and the tensor), every later
 * call returns it without writing, and g2f_dump_close reports it and
 * removes the temporaries: a port may check every call, or only the close.
 * g2f_dump_open returns NULL only when out of memory, and every function
 * takes a NULL dump (G2F_DUMP_ERR_NOMEM).
 */
#ifndef GPT2FFN_DUMP_H
#define GPT2FFN_DUMP_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum g2f_dump_status {
    G2F_DUMP_OK = 0,
    G2F_DUMP_ERR_USAGE, /* a wrong name, shape or order of calls */
    G2F_DUMP_ERR_IO,    /* a file or folder cannot be made or written */
    G2F_DUMP_ERR_NOMEM  /* out of memory, or a size that overflows */
} g2f_dump_status;

typedef enum g2f_dump_format { G2F_DUMP_AUTO, G2F_DUMP_SAFETENSORS, G2F_DUMP_NPY } g2f_dump_format;

/* How a stage is written (its call and shape). */
typedef enum g2f_dump_kind {
    G2F_DUMP_IDS,    /* g2f_dump_ids:        int32 (B, T) */
    G2F_DUMP_ROWS,   /* g2f_dump_stage / _model: float32 (B, T, width) */
    G2F_DUMP_PROBS,  /* g2f_dump_attn_probs: float32 (B, n_head, T, T) */
    G2F_DUMP_LOGITS  /* g2f_dump_logits:     float32 (B, T, V) */
} g2f_dump_kind;

typedef struct g2f_dump_stage_name {
    const char *name;  /* per layer written as "h.L.<name>" */
    int per_layer;
    g2f_dump_kind kind;
    unsigned width;    /* ROWS: width in units of n_embd (1 or 3); 0: any (n_inner) */
    const char *what;  /* what a port records there */
} g2f_dump_stage_name;

/* Every stage the header writes: the one list (the fixture reader's names:
 * docs/model.md). */
static const g2f_dump_stage_name g2f_dump_stages[] = {
    {"input_ids", 0, G2F_DUMP_IDS, 0, "the token ids"},
    {"embed", 0, G2F_DUMP_ROWS, 1, "wte[ids] + wpe[positions]"},
    {"in", 1, G2F_DUMP_ROWS, 1, "the block's input (the residual stream)"},
    {"ln_1.out", 1, G2F_DUMP_ROWS, 1, "ln_1's output"},
    {"attn.qkv", 1, G2F_DUMP_ROWS, 3, "c_attn's output, q k v side by side"},
    {"attn.probs", 1, G2F_DUMP_PROBS, 0, "softmax of the causal scores (0 above the diagonal)"},
    {"attn.merged", 1, G2F_DUMP_ROWS, 1, "the heads' outputs merged: attn.c_proj's input"},
    {"attn.out", 1, G2F_DUMP_ROWS, 1, "attn.c_proj's output, before the residual add"},
    {"mid", 1, G2F_DUMP_ROWS, 1, "in + attn.out"},
    {"mlp.in", 1, G2F_DUMP_ROWS, 1, "ln_2's output: the FFN's input"},
    {"mlp.pre", 1, G2F_DUMP_ROWS, 0, "c_fc's output, before GELU"},
    {"mlp.act", 1, G2F_DUMP_ROWS, 0, "after GELU"},
    {"mlp.out", 1, G2F_DUMP_ROWS, 1, "mlp.c_proj's output, before the residual add"},
    {"out", 1, G2F_DUMP_ROWS, 1, "mid + mlp.out: the block's output"},
    {"ln_f.out", 0, G2F_DUMP_ROWS, 1, "ln_f's output"},
    {"logits", 0, G2F_DUMP_LOGITS, 0, "the head's output over the real vocabulary"},
};
#define G2F_DUMP_N_STAGES (sizeof g2f_dump_stages / sizeof g2f_dump_stages[0])

#define G2F_DUMP_MSG_MAX 512
#define G2F_DUMP_MAX_LAYERS 4096           /* the fixture reader's layer limit */
#define G2F_DUMP_MAX_OFFSET ((uint64_t)1 << 53) /* safetensors offsets are JSON numbers */
#define G2F_DUMP_NAME_MAX 64

typedef struct g2f_dump_entry {
    char name[G2F_DUMP_NAME_MAX];
    int i32;
    size_t ndim;
    uint64_t shape[4];
    uint64_t begin, end; /* safetensors data offsets */
} g2f_dump_entry;

/* Owned by the caller from g2f_dump_open to g2f_dump_close / _discard;
 * its fields are the header's own. */
typedef struct g2f_dump {
    g2f_dump_format format;
    g2f_dump_status status;      /* the first error, kept */
    char msg[G2F_DUMP_MSG_MAX];
    char *path, *tmp, *spill;    /* PATH, PATH.tmp-dump-N, PATH.spill-dump-N (safetensors) */
    FILE *data;                  /* safetensors: the spill file */
    size_t batch, T, n_embd;     /* T and n_embd: 0 until the first stage sets them */
    uint64_t bytes;              /* safetensors data written */
    g2f_dump_entry *entries;
    size_t n, cap;
} g2f_dump;

/* ---- internals ------------------------------------------------------------ */

/* Records the first error (printf-style message) and returns the status kept. */
static inline g2f_dump_status g2f_dump__fail(g2f_dump *d, g2f_dump_status st, const char *fmt, ...) {
    if (d->status != G2F_DUMP_OK) return d->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->status = st;
    return st;
}

static inline int g2f_dump__mul(uint64_t a, uint64_t b, uint64_t *out) {
    if (a && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static inline char *g2f_dump__strcat3(const char *a, const char *b, const char *c) {
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *s = (char *)malloc(na + nb + nc + 1);
    if (s) memcpy(s, a, na), memcpy(s + na, b, nb), memcpy(s + na + nb, c, nc + 1);
    return s;
}

/* n 32-bit values from src (floats or ints, host order) to f, little-endian. */
static inline int g2f_dump__write32(FILE *f, const void *src, uint64_t n) {
    unsigned char buf[4096];
    const unsigned char *s = (const unsigned char *)src;
    for (uint64_t i = 0; i < n;) {
        size_t k = n - i < sizeof buf / 4 ? (size_t)(n - i) : sizeof buf / 4;
        for (size_t j = 0; j < k; j++) {
            uint32_t u;
            memcpy(&u, s + 4 * (i + j), 4);
            for (int b = 0; b < 4; b++) buf[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (fwrite(buf, 4, k, f) != k) return 0;
        i += k;
    }
    return 1;
}

/* An exclusive temporary beside path: base + ".tmp-dump-N" (or the given
 * tag), a file (dir 0) or a folder; NULL with the error recorded. */
static inline char *g2f_dump__temp(g2f_dump *d, const char *tag, int dir, FILE **f) {
    char suffix[48];
    for (int n = 0; n < 100; n++) {
        snprintf(suffix, sizeof suffix, ".%s-dump-%d", tag, n);
        char *p = g2f_dump__strcat3(d->path, suffix, "");
        if (!p) return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: out of memory", d->path), (char *)NULL;
        int made = dir ? mkdir(p, 0777) == 0 : (*f = fopen(p, "w+bx")) != NULL;
        if (made) return p;
        int e = errno;
        free(p);
        if (e != EEXIST) {
            g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: cannot create %s%s: %s", d->path, d->path, suffix, strerror(e));
            return NULL;
        }
    }
    g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: %s.%s-dump-0 .. 99 all exist (left by interrupted dumps?)", d->path,
                   d->path, tag);
    return NULL;
}

/* A folder PATH may be replaced only when it does not exist or is empty. */
static inline void g2f_dump__check_folder(g2f_dump *d) {
    struct stat st;
    if (stat(d->path, &st) != 0) return; /* absent: made by the rename */
    DIR *dir = S_ISDIR(st.st_mode) ? opendir(d->path) : NULL;
    int empty = dir != NULL;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    if (dir) closedir(dir);
    if (!empty)
        g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: exists and is %s; a dump folder is written whole (remove it, "
                       "or dump to a new folder)", d->path, S_ISDIR(st.st_mode) ? "not empty" : "not a folder");
}

/* ---- opening ------------------------------------------------------------- */

/* Starts a dump of batch sequences (the leading dimension of every tensor)
 * to path. NULL only when out of memory; any other failure is kept in the
 * dump and reported by g2f_dump_close. */
static inline g2f_dump *g2f_dump_open(const char *path, g2f_dump_format format, size_t batch) {
    g2f_dump *d = (g2f_dump *)calloc(1, sizeof *d);
    if (!d) return NULL;
    d->batch = batch;
    d->path = g2f_dump__strcat3(path ? path : "", "", "");
    if (!d->path) return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "out of memory"), d;
    size_t n = strlen(d->path);
    if (format == G2F_DUMP_AUTO)
        format = n > 12 && !strcmp(d->path + n - 12, ".safetensors") ? G2F_DUMP_SAFETENSORS : G2F_DUMP_NPY;
    d->format = format;
    if (!n || batch == 0 || (format != G2F_DUMP_SAFETENSORS && format != G2F_DUMP_NPY)) {
        g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: a dump needs a path, a batch of at least 1 (got %zu) and a "
                       "format", d->path, batch);
        return d;
    }
    struct stat st;
    if (format == G2F_DUMP_SAFETENSORS && stat(d->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* the finished file is renamed over path: a device or pipe (/dev/null) would be replaced */
        g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: exists and is not a regular file; a dump replaces it", d->path);
        return d;
    }
    if (format == G2F_DUMP_NPY) {
        g2f_dump__check_folder(d);
        if (d->status == G2F_DUMP_OK) d->tmp = g2f_dump__temp(d, "tmp", 1, NULL);
    } else {
        d->spill = g2f_dump__temp(d, "spill", 0, &d->data);
    }
    return d;
}

/* ---- writing --------------------------------------------------------------- */

/* The stage's entry in g2f_dump_stages, or NULL. */
static inline const g2f_dump_stage_name *g2f_dump_find_stage(const char *stage) {
    for (size_t i = 0; stage && i < G2F_DUMP_N_STAGES; i++)
        if (!strcmp(g2f_dump_stages[i].name, stage)) return &g2f_dump_stages[i];
    return NULL;
}

/* Writes the tensor name, shape[0..ndim) of 4-byte values (floats, or
 * ints when i32), from src: contiguous when stride is 0, else rows of
 * shape[ndim-1] values taken every stride values (padded logits cut). */
static inline g2f_dump_status g2f_dump__put(g2f_dump *d, const char *name, int i32, size_t ndim, const uint64_t *shape,
                                            const void *src, uint64_t stride) {
    uint64_t numel = 1, nbytes;
    for (size_t k = 0; k < ndim; k++)
        if (!g2f_dump__mul(numel, shape[k], &numel))
            return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: tensor '%s': its size overflows", d->path, name);
    if (!g2f_dump__mul(numel, 4, &nbytes) || nbytes > SIZE_MAX || nbytes >= G2F_DUMP_MAX_OFFSET - d->bytes)
        return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: tensor '%s': %llu elements do not fit a dump", d->path,
                              name, (unsigned long long)numel);
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->entries[i].name, name))
            return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: tensor '%s' written twice", d->path, name);
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        g2f_dump_entry *e = cap <= SIZE_MAX / sizeof *e ? (g2f_dump_entry *)realloc(d->entries, cap * sizeof *e) : NULL;
        if (!e) return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: out of memory", d->path);
        d->entries = e, d->cap = cap;
    }
    FILE *f = d->data;
    char *file = NULL;
    int ok = 1;
    if (d->format == G2F_DUMP_NPY) {
        char tail[G2F_DUMP_NAME_MAX + 8];
        snprintf(tail, sizeof tail, "/%s.npy", name);
        if (!(file = g2f_dump__strcat3(d->tmp, tail, "")))
            return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: out of memory", d->path);
        if (!(f = fopen(file, "wbx"))) {
            g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: cannot create %s: %s", d->path, file, strerror(errno));
            free(file);
            return d->status;
        }
        char hdr[256];
        int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", i32 ? "<i4" : "<f4");
        for (size_t k = 0; k < ndim; k++)
            h += snprintf(hdr + h, sizeof hdr - (size_t)h, "%s%llu", k ? ", " : "", (unsigned long long)shape[k]);
        h += snprintf(hdr + h, sizeof hdr - (size_t)h, "%s), }", ndim == 1 ? "," : "");
        while ((10 + h + 1) % 64) hdr[h++] = ' '; /* numpy pads its header to 64 bytes, '\n' last */
        hdr[h++] = '\n';
        const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)h, (unsigned char)(h >> 8)};
        ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)h, f) == (size_t)h;
    }
    const uint64_t len = stride ? shape[ndim - 1] : numel, rows = stride ? numel / len : 1;
    for (uint64_t r = 0; ok && r < rows; r++) ok = g2f_dump__write32(f, (const unsigned char *)src + 4 * r * stride, len);
    if (file) {
        ok = fclose(f) == 0 && ok;
        if (!ok) remove(file);
        free(file);
    }
    if (!ok) return g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: tensor '%s': write failed: %s", d->path, name, strerror(errno));
    g2f_dump_entry *e = &d->entries[d->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->i32 = i32, e->ndim = ndim, e->begin = d->bytes, e->end = d->bytes + nbytes;
    memcpy(e->shape, shape, ndim * sizeof *shape);
    if (d->format == G2F_DUMP_SAFETENSORS) d->bytes += nbytes;
    return G2F_DUMP_OK;
}

/* Checks the call against the list and the shapes written so far; fills
 * name ("h.<layer>.<stage>", or "<stage>" when per_layer is 0). width: ROWS'
 * width (0 for the others). */
static inline g2f_dump_status g2f_dump__check(g2f_dump *d, int per_layer, size_t layer, const char *stage,
                                              g2f_dump_kind kind, const void *data, size_t T, size_t width,
                                              char *name) {
    const g2f_dump_stage_name *s = g2f_dump_find_stage(stage);
    if (d->status != G2F_DUMP_OK) return d->status;
    if (!s || s->kind != kind || s->per_layer != per_layer) {
        const char *use = !s                          ? ""
                          : s->kind == G2F_DUMP_IDS    ? ": use g2f_dump_ids"
                          : s->kind == G2F_DUMP_PROBS  ? ": use g2f_dump_attn_probs"
                          : s->kind == G2F_DUMP_LOGITS ? ": use g2f_dump_logits"
                          : s->per_layer               ? ": use g2f_dump_stage (a layer's)"
                                                       : ": use g2f_dump_model (the model's)";
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: '%s' is not a stage this call writes%s (gpt2ffn_dump.h: "
                              "g2f_dump_stages)", d->path, stage ? stage : "(null)", use);
    }
    if (per_layer && layer >= G2F_DUMP_MAX_LAYERS)
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: layer %zu of '%s': at most %d layers", d->path, layer,
                              stage, G2F_DUMP_MAX_LAYERS);
    if (per_layer) snprintf(name, G2F_DUMP_NAME_MAX, "h.%zu.%s", layer, stage);
    else snprintf(name, G2F_DUMP_NAME_MAX, "%s", stage);
    if (!data || T == 0 || (kind == G2F_DUMP_ROWS && width == 0))
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: '%s': no data, or T or the width is 0", d->path, name);
    if (d->T && T != d->T)
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: '%s' has T = %zu but the stages before it %zu: every stage "
                              "holds the same tokens", d->path, name, T, d->T);
    d->T = T;
    if (kind == G2F_DUMP_ROWS && s->width) {
        if (!d->n_embd && width % s->width == 0) d->n_embd = width / s->width;
        if (width != s->width * d->n_embd)
            return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: '%s' is %zu wide but must be %u n_embd = %zu (n_embd "
                                  "from the stages before it)", d->path, name, width, s->width,
                                  s->width * d->n_embd);
    }
    return G2F_DUMP_OK;
}

/* ids: B T token ids, (B, T) row-major: "input_ids", int32 (B, T). */
static inline g2f_dump_status g2f_dump_ids(g2f_dump *d, const int *ids, size_t T) {
    char name[G2F_DUMP_NAME_MAX];
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (g2f_dump__check(d, 0, 0, "input_ids", G2F_DUMP_IDS, ids, T, 0, name) != G2F_DUMP_OK) return d->status;
    if (sizeof(int) != 4) /* int32 on disk: ids are copied 4 bytes at a time */
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: input_ids: int is not 32 bits here", d->path);
    const uint64_t shape[2] = {d->batch, T};
    return g2f_dump__put(d, name, 1, 2, shape, ids, 0);
}

/* x: layer's stage, (B, T, width) row-major: "h.<layer>.<stage>". */
static inline g2f_dump_status g2f_dump_stage(g2f_dump *d, size_t layer, const char *stage, const float *x, size_t T,
                                             size_t width) {
    char name[G2F_DUMP_NAME_MAX];
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (g2f_dump__check(d, 1, layer, stage, G2F_DUMP_ROWS, x, T, width, name) != G2F_DUMP_OK) return d->status;
    const uint64_t shape[3] = {d->batch, T, width};
    return g2f_dump__put(d, name, 0, 3, shape, x, 0);
}

/* p: layer's attention probabilities, (B, n_head, T, T) row-major (0 above
 * the diagonal): "h.<layer>.attn.probs". */
static inline g2f_dump_status g2f_dump_attn_probs(g2f_dump *d, size_t layer, const float *p, size_t n_head, size_t T) {
    char name[G2F_DUMP_NAME_MAX];
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (g2f_dump__check(d, 1, layer, "attn.probs", G2F_DUMP_PROBS, p, T, 0, name) != G2F_DUMP_OK) return d->status;
    if (n_head == 0) return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: '%s': n_head is 0", d->path, name);
    const uint64_t shape[4] = {d->batch, n_head, T, T};
    return g2f_dump__put(d, name, 0, 4, shape, p, 0);
}

/* x: a model-level stage ("embed", "ln_f.out"), (B, T, width). */
static inline g2f_dump_status g2f_dump_model(g2f_dump *d, const char *stage, const float *x, size_t T, size_t width) {
    char name[G2F_DUMP_NAME_MAX];
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (g2f_dump__check(d, 0, 0, stage, G2F_DUMP_ROWS, x, T, width, name) != G2F_DUMP_OK) return d->status;
    const uint64_t shape[3] = {d->batch, T, width};
    return g2f_dump__put(d, name, 0, 3, shape, x, 0);
}

/* logits: (B, T, Vp) row-major, the first V of each row written: "logits"
 * (B, T, V). Vp = V when nothing is padded; llm.c's Vp is V rounded up to a
 * multiple of 128 (50304 for GPT-2's 50257), its padding columns never
 * read. */
static inline g2f_dump_status g2f_dump_logits(g2f_dump *d, const float *logits, size_t T, size_t V, size_t Vp) {
    char name[G2F_DUMP_NAME_MAX];
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (g2f_dump__check(d, 0, 0, "logits", G2F_DUMP_LOGITS, logits, T, 0, name) != G2F_DUMP_OK) return d->status;
    if (V == 0 || Vp < V)
        return g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: logits: V = %zu, Vp = %zu: need 1 <= V <= Vp", d->path, V,
                              Vp);
    const uint64_t shape[3] = {d->batch, T, V};
    uint64_t rows, all; /* the source's extent: B T Vp floats */
    if (!g2f_dump__mul(d->batch, T, &rows) || !g2f_dump__mul(rows, Vp, &all) || all > SIZE_MAX / 4)
        return g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: logits: B T Vp overflows", d->path);
    return g2f_dump__put(d, name, 0, 3, shape, logits, Vp);
}

/* ---- closing ------------------------------------------------------------- */

/* Removes every temporary (the files written, the folder, the spill). */
static inline void g2f_dump__cleanup(g2f_dump *d) {
    if (d->data) fclose(d->data), d->data = NULL;
    if (d->spill) remove(d->spill);
    for (size_t i = 0; d->format == G2F_DUMP_NPY && d->tmp && i < d->n; i++) {
        char tail[G2F_DUMP_NAME_MAX + 8];
        snprintf(tail, sizeof tail, "/%s.npy", d->entries[i].name);
        char *f = g2f_dump__strcat3(d->tmp, tail, "");
        if (f) remove(f);
        free(f);
    }
    if (d->tmp) remove(d->tmp);
}

/* The safetensors file: header, then the spilled data, into PATH.tmp-dump-N. */
static inline void g2f_dump__safetensors(g2f_dump *d) {
    size_t cap = 128 + d->n * (G2F_DUMP_NAME_MAX + 4 * 21 + 2 * 21 + 64), len = 0;
    char *h = (char *)malloc(cap);
    if (!h) {
        g2f_dump__fail(d, G2F_DUMP_ERR_NOMEM, "%s: out of memory", d->path);
        return;
    }
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"producer\":\"gpt2ffn_dump.h\"}");
    for (size_t i = 0; i < d->n; i++) {
        const g2f_dump_entry *e = &d->entries[i];
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", e->name, e->i32 ? "I32" : "F32");
        for (size_t k = 0; k < e->ndim; k++)
            len += (size_t)snprintf(h + len, cap - len, "%s%llu", k ? "," : "", (unsigned long long)e->shape[k]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)e->begin,
                                (unsigned long long)e->end);
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' '; /* cap leaves room: 64 spare bytes per entry */
    FILE *out = NULL;
    d->tmp = g2f_dump__temp(d, "tmp", 0, &out);
    unsigned char lb[8];
    for (int b = 0; b < 8; b++) lb[b] = (unsigned char)((uint64_t)len >> (8 * b));
    int ok = out && fwrite(lb, 1, 8, out) == 8 && fwrite(h, 1, len, out) == len && fflush(d->data) == 0 &&
             fseek(d->data, 0, SEEK_SET) == 0;
    char buf[65536];
    for (size_t r; ok && (r = fread(buf, 1, sizeof buf, d->data)) > 0;) ok = fwrite(buf, 1, r, out) == r;
    ok = ok && !ferror(d->data);
    if (out) ok = fclose(out) == 0 && ok;
    free(h);
    if (!ok && d->status == G2F_DUMP_OK)
        g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: writing %s failed: %s", d->path, d->tmp ? d->tmp : "the file",
                       strerror(errno));
}

/* Finishes the dump: the temporary becomes PATH (rename), unless an error
 * happened before, which is returned with its message in msg (n bytes; may
 * be NULL) and leaves nothing behind. Frees d; NULL reports out of memory. */
static inline g2f_dump_status g2f_dump_close(g2f_dump *d, char *msg, size_t n) {
    if (msg && n) snprintf(msg, n, "%s", d ? "" : "gpt2ffn_dump: out of memory");
    if (!d) return G2F_DUMP_ERR_NOMEM;
    if (d->status == G2F_DUMP_OK && d->n == 0)
        g2f_dump__fail(d, G2F_DUMP_ERR_USAGE, "%s: nothing was written to the dump", d->path);
    if (d->status == G2F_DUMP_OK && d->format == G2F_DUMP_SAFETENSORS) g2f_dump__safetensors(d);
    if (d->status == G2F_DUMP_OK && d->format == G2F_DUMP_NPY) g2f_dump__check_folder(d);
    if (d->status == G2F_DUMP_OK && rename(d->tmp, d->path) != 0)
        g2f_dump__fail(d, G2F_DUMP_ERR_IO, "%s: cannot rename %s to it: %s", d->path, d->tmp, strerror(errno));
    else if (d->status == G2F_DUMP_OK && d->format == G2F_DUMP_NPY)
        d->n = 0, free(d->tmp), d->tmp = NULL; /* the folder is PATH now: nothing to remove */
    else if (d->status == G2F_DUMP_OK)
        free(d->tmp), d->tmp = NULL;
    g2f_dump__cleanup(d);
    g2f_dump_status st = d->status;
    if (msg && n) snprintf(msg, n, "%s", d->msg);
    free(d->path), free(d->tmp), free(d->spill), free(d->entries), free(d);
    return st;
}

/* Abandons the dump: every temporary removed, PATH untouched. Frees d;
 * NULL is a no-op. */
static inline void g2f_dump_discard(g2f_dump *d) {
    if (!d) return;
    g2f_dump__cleanup(d);
    free(d->path), free(d->tmp), free(d->spill), free(d->entries), free(d);
}

/* The first error so far (G2F_DUMP_OK when none) and its message. */
static inline g2f_dump_status g2f_dump_error(const g2f_dump *d, const char **msg) {
    if (msg) *msg = d ? d->msg : "gpt2ffn_dump: out of memory";
    return d ? d->status : G2F_DUMP_ERR_NOMEM;
}

#endif
