/* A safetensors file rewritten into another, for tests that make a variant of a
 * committed fixture or checkpoint: each tensor kept as it is, converted
 * (F16, BF16, F32 with a factor), or left out, then extra entries appended.
 * One copy of the read-convert-write loop the tests had written each their
 * own way. Include after test_util.h (st_entry, st_write). */
#ifndef G2F_TEST_ST_REWRITE_H
#define G2F_TEST_ST_REWRITE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "g2f_cpu.h"
#include "g2f_safetensors.h"
#include "g2f_tensor.h"

/* What happens to one tensor: keep (the bytes as stored), drop, or store its
 * values times scale in dtype "F32", "F16" or "BF16"; under name when set
 * (copied at once: a buffer of the callback's may hold it). */
typedef struct st_how {
    enum { ST_KEEP, ST_DROP, ST_CONVERT } what;
    const char *dtype;
    float scale;
    const char *name;
} st_how;

/* Decides per tensor; NULL keeps every tensor. */
typedef st_how (*st_edit_fn)(void *u, const g2f_tensor *t);

/* The values of t times scale, as dtype, in a new buffer (*nbytes its size). */
static inline void *st_convert(const g2f_tensor *t, const char *dtype, float scale, size_t *nbytes) {
    size_t w = strcmp(dtype, "F32") ? 2 : 4;
    float *f = malloc(t->numel * sizeof *f + 1);
    unsigned char *out = malloc(t->numel * w + 1);
    if (!f || !out) {
        free(f);
        free(out);
        return NULL;
    }
    g2f_tensor_read_f32(t, 0, t->numel, f);
    for (uint64_t i = 0; i < t->numel; i++) {
        float v = f[i] * scale;
        uint16_t h = !strcmp(dtype, "F16") ? g2f_f32_to_f16(v) : g2f_f32_to_bf16(v);
        if (w == 4) memcpy(out + i * 4, &v, 4);
        else memcpy(out + i * 2, &h, 2);
    }
    free(f);
    *nbytes = t->numel * w;
    return out;
}

/* src rewritten into dst under edit, extra (n_extra entries) appended. 0 on
 * success, -1 when src cannot be read or dst written. */
static inline int st_rewrite(const char *src, const char *dst, st_edit_fn edit, void *u, const st_entry *extra,
                             size_t n_extra) {
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(src, &st, &err) != G2F_OK) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    const g2f_table *t = g2f_safetensors_table(st);
    size_t cap = t->count + n_extra + 1, n = 0;
    st_entry *e = calloc(cap, sizeof *e);
    void **owned = calloc(cap, sizeof *owned);
    char **names = calloc(cap, sizeof *names);
    int rc = e && owned && names ? 0 : -1;
    for (size_t i = 0; i < t->count && rc == 0; i++) {
        const g2f_tensor *x = &t->tensors[i];
        st_how h = edit ? edit(u, x) : (st_how){ST_KEEP, NULL, 1.0f, NULL};
        if (h.what == ST_DROP) continue;
        e[n] = (st_entry){x->name, g2f_dtype_name(x->dtype), x->ndim, {0}, x->data, (size_t)x->nbytes};
        if (h.name && !(e[n].name = names[n] = strdup(h.name))) rc = -1;
        for (size_t d = 0; d < x->ndim && d < 4; d++) e[n].shape[d] = x->shape[d];
        if (h.what == ST_CONVERT) {
            e[n].dtype = h.dtype;
            e[n].data = owned[n] = st_convert(x, h.dtype, h.scale, &e[n].nbytes);
            if (!owned[n]) rc = -1;
        }
        n++;
    }
    for (size_t i = 0; i < n_extra && rc == 0; i++) e[n++] = extra[i];
    if (rc == 0) rc = st_write(dst, NULL, e, n, 1);
    for (size_t i = 0; owned && i < cap; i++) free(owned[i]);
    for (size_t i = 0; names && i < cap; i++) free(names[i]);
    free(owned);
    free(names);
    free(e);
    g2f_safetensors_close(st);
    return rc;
}

/* A checkpoint folder ck (made here) for a test: model.safetensors is src rewritten under edit
 * (NULL: copied as it is), config.json is config_text when given, else a copy of config_src
 * (neither: none). 0 on success. */
static inline int st_checkpoint_dir(const char *ck, const char *src, st_edit_fn edit, void *u, const char *config_src,
                                    const char *config_text) {
    char dst[1024];
    if (mkdir(ck, 0700) != 0) return -1;
    snprintf(dst, sizeof dst, "%s/model.safetensors", ck);
    if ((edit ? st_rewrite(src, dst, edit, u, NULL, 0) : copy_file(src, dst)) != 0) return -1;
    snprintf(dst, sizeof dst, "%s/config.json", ck);
    if (config_text) {
        FILE *fp = fopen(dst, "w");
        int bad = !fp || fputs(config_text, fp) < 0;
        if (fp && fclose(fp) != 0) bad = 1;
        return bad ? -1 : 0;
    }
    return config_src ? copy_file(config_src, dst) : 0;
}

#endif
