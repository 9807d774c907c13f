/* g2f_normread: see g2f_normread.h. */
#include "g2f_normread.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Slack for a row's statistics: a fixed 1e-3 (float32 rounding of a
 * LayerNorm moves a row's mean by about 1e-7 of its scale, so this is far
 * above any rounding and far below what the other reading's gain and bias
 * move it by in a trained GPT-2), plus the capture's own storage rounding
 * (2^-8 per element for BF16) and float32's for the arithmetic behind it. */
#define ROW_SLACK 1e-3

static double unit_roundoff(g2f_dtype dt) {
    double u = g2f_dtype_store_roundoff(dt);
    return u > 0x1p-23 ? u : 0x1p-23;
}

/* Whether the row z (d values), each known to within err_j, is a
 * normalized row: mean 0, mean square at most 1. */
static int row_fits(const double *z, const double *zerr, size_t d) {
    double s = 0, s2 = 0, e = 0, e2 = 0;
    for (size_t j = 0; j < d; j++) {
        s += z[j];
        s2 += z[j] * z[j];
        e += zerr[j];
        e2 += 2 * fabs(z[j]) * zerr[j];
    }
    double mean = s / (double)d, ms = s2 / (double)d;
    return fabs(mean) <= ROW_SLACK + 4 * e / (double)d && ms <= 1 + ROW_SLACK + 4 * e2 / (double)d;
}

/* Both readings of one row y: before (y itself) and after ((y - b) / w). */
static void row_readings(const double *y, const g2f_ln *ln, double u, double *z, double *zerr, int *before,
                         int *after) {
    size_t d = ln->d;
    for (size_t j = 0; j < d; j++) zerr[j] = u * fabs(y[j]);
    *before = *before && row_fits(y, zerr, d);
    if (!*after) return;
    for (size_t j = 0; j < d; j++) {
        double w = ln->w[j], b = ln->b ? ln->b[j] : 0.0;
        z[j] = (y[j] - b) / w;
        zerr[j] = u * (fabs(y[j]) + fabs(b)) / fabs(w);
    }
    *after = row_fits(z, zerr, d);
}

/* The gain's state: 0 usable, 1 exactly 1 with bias 0 (both readings the
 * same), -1 absent or with a zero (after cannot be tested). */
static int gain_state(const g2f_ln *ln) {
    if (!ln->found || !ln->w) return -1;
    int identity = 1;
    for (size_t j = 0; j < ln->d; j++) {
        if (ln->w[j] == 0.0f || !isfinite(ln->w[j])) return -1;
        identity &= ln->w[j] == 1.0f && (!ln->b || ln->b[j] == 0.0f);
    }
    return identity;
}

g2f_status g2f_norm_decide(const g2f_tensor *t, const g2f_ln *ln, g2f_norm_decision *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    size_t d = ln->d;
    int gs = gain_state(ln);
    if (gs == 1) return out->reading = G2F_NORM_SAME, out->before_fits = out->after_fits = 1, G2F_OK;
    if (!d || t->numel % d) return g2f_error_set(err, G2F_ERR_FORMAT, "tensor '%s': not rows of %zu", t->name, d);
    double *buf = g2f_alloc_array(3 * d, sizeof *buf);
    if (!buf) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    double u = unit_roundoff(t->dtype);
    int before = 1, after = gs == 0;
    out->after_testable = after;
    for (uint64_t r = 0; r < t->numel / d && (before || after); r++) {
        g2f_tensor_read_f64(t, r * d, d, buf);
        row_readings(buf, ln, u, buf + d, buf + 2 * d, &before, &after);
    }
    free(buf);
    out->before_fits = before;
    out->after_fits = after;
    if (before && (after || !out->after_testable)) out->reading = G2F_NORM_UNDECIDED;
    else out->reading = before ? G2F_NORM_BEFORE : G2F_NORM_AFTER;
    return G2F_OK;
}

/* n w + b as TransformerLens computes it in float32: the product rounded,
 * then the sum (volatile keeps the compiler from fusing them). */
static float affine_f32(float n, float w, float b) {
    volatile float p = n * w;
    return p + b;
}

static void store(g2f_dtype dt, unsigned char *dst, uint64_t i, double n, float w, float b) {
    if (dt == G2F_DTYPE_F64) {
        double y = n * (double)w + (double)b;
        memcpy(dst + 8 * i, &y, 8);
        return;
    }
    float y = affine_f32((float)n, w, b);
    if (dt == G2F_DTYPE_F32) {
        memcpy(dst + 4 * i, &y, 4);
        return;
    }
    uint16_t h = dt == G2F_DTYPE_F16 ? g2f_f32_to_f16(y) : g2f_f32_to_bf16(y);
    memcpy(dst + 2 * i, &h, 2);
}

g2f_status g2f_norm_apply(const g2f_tensor *t, const g2f_ln *ln, g2f_tensor *out, void **owned, g2f_error *err) {
    *owned = NULL;
    size_t d = ln->d;
    if (!ln->w || !d || t->numel % d)
        return g2f_error_set(err, G2F_ERR_USAGE, "tensor '%s': no gain of %zu to apply", t->name, d);
    g2f_dtype dt = t->dtype == G2F_DTYPE_F16 || t->dtype == G2F_DTYPE_BF16 || t->dtype == G2F_DTYPE_F64
                       ? t->dtype : G2F_DTYPE_F32;
    unsigned char *data = g2f_alloc_work(t->numel, 1, g2f_dtype_size(dt), t->name, err);
    double *row = data ? g2f_alloc_array(d, sizeof *row) : NULL;
    if (!row) {
        free(data);
        return data ? g2f_error_set(err, G2F_ERR_NOMEM, "out of memory") : err->status;
    }
    for (uint64_t r = 0; r < t->numel / d; r++) {
        g2f_tensor_read_f64(t, r * d, d, row);
        for (size_t j = 0; j < d; j++) store(dt, data, r * d + j, row[j], ln->w[j], ln->b ? ln->b[j] : 0.0f);
    }
    free(row);
    *out = *t;
    out->dtype = dt;
    out->data = data;
    out->nbytes = t->numel * g2f_dtype_size(dt);
    *owned = data;
    return G2F_OK;
}

const char *g2f_norm_reading_phrase(g2f_norm_reading r) {
    switch (r) {
    case G2F_NORM_AFTER: return "after gain and bias (TransformerLens 2)";
    case G2F_NORM_BEFORE: return "before gain and bias (TransformerLens 3) and the checkpoint's gain and bias applied";
    case G2F_NORM_SAME: return "gain 1 and bias 0: the same values either way";
    case G2F_NORM_UNDECIDED: break;
    }
    return "undecided";
}

int g2f_norm_mode_parse(const char *word, g2f_norm_mode *out) {
    static const char *const words[] = {"auto", "after", "before"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(word, words[i])) return *out = (g2f_norm_mode)i, 1;
    return 0;
}
