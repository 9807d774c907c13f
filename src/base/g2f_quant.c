/* g2f_quant: ggml block formats; see g2f_quant.h for the layouts, the bounds
 * and the failure model.
 *
 * Written from ggml's block definitions (ggml-common.h) and reference
 * routines (ggml-quants.c: dequantize_row_*, quantize_row_*_ref,
 * make_qkx2_quants, make_qx_quants). Blocks are decoded byte by byte. The
 * quantizers follow ggml's float32 operations one by one, in ggml's order,
 * so that they give ggml's bytes; each float-to-integer conversion ggml does
 * with a cast is clamped first where an out-of-range value would be
 * undefined behaviour in C (only non-finite inputs get there). */
#include "g2f_quant.h"

#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF /* ggml's arithmetic, one rounding per operation (GCC: off under -std=c11) */
#endif

static void quantize_block(g2f_dtype t, const float *x, unsigned char *y);

#define QK 32
#define QK_K 256

static const struct {
    g2f_dtype dtype;
    g2f_quant_info info;
} quant_types[] = {
    {G2F_DTYPE_Q4_0, {"Q4_0", 2, QK, 2 + QK / 2}},
    {G2F_DTYPE_Q4_1, {"Q4_1", 3, QK, 4 + QK / 2}},
    {G2F_DTYPE_Q5_0, {"Q5_0", 6, QK, 2 + 4 + QK / 2}},
    {G2F_DTYPE_Q5_1, {"Q5_1", 7, QK, 4 + 4 + QK / 2}},
    {G2F_DTYPE_Q8_0, {"Q8_0", 8, QK, 2 + QK}},
    {G2F_DTYPE_Q4_K, {"Q4_K", 12, QK_K, 4 + 12 + QK_K / 2}},
    {G2F_DTYPE_Q5_K, {"Q5_K", 13, QK_K, 4 + 12 + QK_K / 8 + QK_K / 2}},
    {G2F_DTYPE_Q6_K, {"Q6_K", 14, QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2}},
};
#define N_QUANT (sizeof quant_types / sizeof quant_types[0])
_Static_assert(N_QUANT == G2F_DTYPE_Q6_K - G2F_DTYPE_Q4_0 + 1, "one entry per quantized dtype");

const g2f_quant_info *g2f_quant_info_of(g2f_dtype dtype) {
    if (dtype < G2F_DTYPE_Q4_0 || dtype > G2F_DTYPE_Q6_K) return NULL;
    return &quant_types[dtype - G2F_DTYPE_Q4_0].info;
}

g2f_dtype g2f_quant_from_ggml(uint32_t ggml_type) {
    for (size_t i = 0; i < N_QUANT; i++)
        if (quant_types[i].info.ggml_type == ggml_type) return quant_types[i].dtype;
    return G2F_DTYPE_OPAQUE;
}

bool g2f_quant_nbytes(g2f_dtype dtype, uint64_t numel, uint64_t *nbytes) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    if (!qi || numel % qi->block) return false;
    return g2f_mul_u64(numel / qi->block, qi->bytes, nbytes);
}

/* ---- bytes ---- */

static float ld_f16(const unsigned char *p) { return g2f_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }
static uint32_t ld_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void st_f16(unsigned char *p, float v) {
    uint16_t h = g2f_f32_to_f16(v);
    p[0] = (unsigned char)(h & 0xff);
    p[1] = (unsigned char)(h >> 8);
}

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block j (ggml's get_scale_min_k4). */
static void scale_min_k4(int j, const unsigned char *s, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* ---- decoding: codes and scales of one block ----
 * Every type reduces to, per element i: value = a_i * c_i - b_i or
 * a_i * c_i + b_i with an integer code c_i, where a_i is the (sub-)block
 * scale and b_i the (sub-)block offset. decode() fills those; dequantize and
 * bounds share it. */

typedef struct decoded {
    float a[G2F_QUANT_MAX_BLOCK];  /* scale of the element's (sub-)block */
    float b[G2F_QUANT_MAX_BLOCK];  /* offset: added (Q4_1, Q5_1), subtracted (K-quants) */
    int c[G2F_QUANT_MAX_BLOCK];    /* signed code */
    float extra[G2F_QUANT_MAX_BLOCK]; /* added to the bound at clamped codes (see g2f_quant.h) */
    float d, m;                    /* the block's f16 scale and min/dmin */
} decoded;

/* K-quants at an end code or in a sub-block of scale 0: one step, the
 * rounding of the sub-block's integer scale (half a unit of d over nmax
 * codes, 0.55 with the f16 rounding of d; a whole unit where Q6_K's
 * MIN(127, ...) may have clamped it), half a unit of dmin for the min. */
static float extra_k(float a, float d, float dmin, int c, int sc, int lo, int hi, double nmax, double unit) {
    if (sc != 0 && c != lo && c != hi) return 0;
    return (float)(fabs((double)a) + (unit * nmax + 1) * fabs((double)d) + fabs((double)dmin) / 2);
}

static void decode(g2f_dtype t, const unsigned char *p, decoded *o) {
    switch (t) {
    case G2F_DTYPE_Q4_0:
    case G2F_DTYPE_Q4_1:
    case G2F_DTYPE_Q5_0:
    case G2F_DTYPE_Q5_1: {
        const int has_m = t == G2F_DTYPE_Q4_1 || t == G2F_DTYPE_Q5_1;
        const int five = t == G2F_DTYPE_Q5_0 || t == G2F_DTYPE_Q5_1;
        const unsigned char *qs = p + (has_m ? 4 : 2) + (five ? 4 : 0);
        const uint32_t qh = five ? ld_u32(p + (has_m ? 4 : 2)) : 0;
        const int offset = has_m ? 0 : five ? 16 : 8;
        o->d = ld_f16(p);
        o->m = has_m ? ld_f16(p + 2) : 0;
        for (int j = 0; j < QK / 2; j++) {
            int lo = qs[j] & 0xF, hi = qs[j] >> 4;
            if (five) {
                lo |= (int)((qh >> j) << 4 & 0x10);
                hi |= (int)((qh >> (j + 12)) & 0x10);
            }
            o->c[j] = lo - offset;
            o->c[j + QK / 2] = hi - offset;
        }
        const int top = (five ? 31 : 15) - offset;
        for (int i = 0; i < QK; i++) {
            o->a[i] = o->d;
            o->b[i] = o->m;
            /* Q4_0, Q5_0: x/d up to +8 (+16) is clamped to the top code 7 (15) */
            o->extra[i] = !has_m && o->c[i] == top ? fabsf(o->d) / 2 : 0;
        }
        break;
    }
    case G2F_DTYPE_Q8_0:
        o->d = ld_f16(p);
        o->m = 0;
        for (int i = 0; i < QK; i++) {
            o->c[i] = (int8_t)p[2 + i];
            o->a[i] = o->d;
            o->b[i] = 0;
            o->extra[i] = 0;
        }
        break;
    case G2F_DTYPE_Q4_K:
    case G2F_DTYPE_Q5_K: {
        const int five = t == G2F_DTYPE_Q5_K;
        const unsigned char *scales = p + 4, *qh = p + 16, *qs = p + 16 + (five ? 32 : 0);
        const int top = five ? 31 : 15;
        o->d = ld_f16(p);
        o->m = ld_f16(p + 2);
        for (int ch = 0; ch < 4; ch++) {
            for (int half = 0; half < 2; half++) {
                int sc, mn;
                scale_min_k4(2 * ch + half, scales, &sc, &mn);
                const float a = o->d * (float)sc, b = o->m * (float)mn; /* exact */
                for (int l = 0; l < 32; l++) {
                    const int e = 64 * ch + 32 * half + l;
                    int q = half ? qs[32 * ch + l] >> 4 : qs[32 * ch + l] & 0xF;
                    if (five && (qh[l] >> (2 * ch + half) & 1)) q += 16;
                    o->c[e] = q;
                    o->a[e] = a;
                    o->b[e] = b;
                    o->extra[e] = extra_k(a, o->d, o->m, q, sc, 0, top, top, 0.55);
                }
            }
        }
        break;
    }
    case G2F_DTYPE_Q6_K: {
        const unsigned char *ql = p, *qh = p + 128;
        o->d = ld_f16(p + 208);
        o->m = 0;
        for (int h = 0; h < 2; h++) {
            for (int l = 0; l < 32; l++) {
                const unsigned char lo0 = ql[64 * h + l], lo1 = ql[64 * h + 32 + l], hb = qh[32 * h + l];
                const int q[4] = {(lo0 & 0xF) | ((hb >> 0) & 3) << 4, (lo1 & 0xF) | ((hb >> 2) & 3) << 4,
                                  (lo0 >> 4) | ((hb >> 4) & 3) << 4, (lo1 >> 4) | ((hb >> 6) & 3) << 4};
                for (int k = 0; k < 4; k++) {
                    const int e = 128 * h + 32 * k + l;
                    const int sc = (int8_t)p[192 + e / 16];
                    o->c[e] = q[k] - 32;
                    o->a[e] = o->d * (float)sc; /* exact */
                    o->b[e] = 0;
                    o->extra[e] = extra_k(o->a[e], o->d, 0, q[k], sc, 0, 63, 32, sc == 127 ? 1.1 : 0.55);
                }
            }
        }
        break;
    }
    default: break;
    }
}

static float value_of(g2f_dtype t, const decoded *o, int i) {
    const float v = o->a[i] * (float)o->c[i]; /* exact in float32 */
    if (t == G2F_DTYPE_Q4_1 || t == G2F_DTYPE_Q5_1) return v + o->b[i];
    if (t == G2F_DTYPE_Q4_K || t == G2F_DTYPE_Q5_K) return v - o->b[i];
    return v;
}

/* Runs fn over the blocks that [start, start + count) touches, giving each
 * the part of the range inside it. */
typedef void (*block_fn)(g2f_dtype t, const decoded *o, uint32_t from, uint32_t to, uint64_t out_index, void *ctx);

static void for_blocks(g2f_dtype t, const unsigned char *blocks, uint64_t start, uint64_t count, block_fn fn,
                       void *ctx) {
    const g2f_quant_info *qi = g2f_quant_info_of(t);
    if (!qi || count == 0) return;
    decoded o;
    uint64_t first = start / qi->block, last = (start + count - 1) / qi->block;
    for (uint64_t blk = first; blk <= last; blk++) {
        uint64_t b0 = blk * qi->block;
        uint32_t from = blk == first ? (uint32_t)(start - b0) : 0;
        uint32_t to = blk == last ? (uint32_t)(start + count - b0) : qi->block;
        decode(t, blocks + blk * qi->bytes, &o);
        fn(t, &o, from, to, b0 + from - start, ctx);
    }
}

static void dequant_fn(g2f_dtype t, const decoded *o, uint32_t from, uint32_t to, uint64_t out, void *ctx) {
    float *dst = (float *)ctx + out;
    for (uint32_t i = from; i < to; i++) *dst++ = value_of(t, o, (int)i);
}

void g2f_quant_dequantize(g2f_dtype dtype, const unsigned char *blocks, uint64_t start, uint64_t count, float *dst) {
    for_blocks(dtype, blocks, start, count, dequant_fn, dst);
}

/* ---- bounds ---- */

/* The largest f16 rounding error of a scale that rounded to v. */
static double h16(double v) {
    double r = ldexp(fabs(v), -11);
    return r > 0x1p-25 ? r : 0x1p-25;
}

typedef struct bounds_ctx {
    float *step, *bound;
    double m_err; /* Q4_1 / Q5_1 from known values: |m - min| exactly; < 0: unknown, h16(m) */
} bounds_ctx;

static void bounds_fn(g2f_dtype t, const decoded *o, uint32_t from, uint32_t to, uint64_t out, void *vctx) {
    bounds_ctx *c = vctx;
    const int k_quant = t == G2F_DTYPE_Q4_K || t == G2F_DTYPE_Q5_K || t == G2F_DTYPE_Q6_K;
    for (uint32_t i = from; i < to; i++, out++) {
        const double s = fabs((double)o->a[i]);
        const double q = fabs((double)o->c[i]);
        double b;
        if (!k_quant) {
            b = s / 2 + (q + 1) * h16(o->d);
            if (t == G2F_DTYPE_Q4_1 || t == G2F_DTYPE_Q5_1)
                b += (c->m_err >= 0 ? c->m_err : h16(o->m)) + ldexp(fabs(o->m) + 32 * s, -22);
        } else {
            const double v = fabs((double)value_of(t, o, (int)i));
            b = s / 2 + ldexp(v + fabs((double)o->b[i]) + 32 * s, -20);
        }
        b += o->extra[i];
        if (c->step) c->step[out] = (float)s;
        if (c->bound) c->bound[out] = (float)(b * (1 + 0x1p-20)); /* rounded up past float's rounding */
    }
}

void g2f_quant_bounds(g2f_dtype dtype, const unsigned char *blocks, uint64_t start, uint64_t count, float *step,
                      float *bound) {
    bounds_ctx c = {step, bound, -1};
    for_blocks(dtype, blocks, start, count, bounds_fn, &c);
}

/* ---- consistency with ggml's reference quantizers ----
 * The conditions and their argument are in g2f_quant.h; each function
 * checks one block and returns 0 with a phrase in why when it fails. */

__attribute__((format(printf, 3, 4))) static int why_set(char *why, size_t n, const char *fmt, ...) {
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int f16_negative(const unsigned char *p) { return (p[1] & 0x80) != 0; }

/* Q8_0, Q4_0, Q5_0, Q4_1, Q5_1: the code of the block's extreme values. */
static int consistent_32(g2f_dtype t, const unsigned char *p, char *why, size_t n) {
    decoded o;
    decode(t, p, &o);
    if (t == G2F_DTYPE_Q8_0) {
        int amax = 0;
        for (int i = 0; i < QK; i++) amax = abs(o.c[i]) > amax ? abs(o.c[i]) : amax;
        if (o.d == 0 || amax == 127) return 1;
        return why_set(why, n, "scale d = %g but its largest |code| is %d, not 127 (the code of the block's largest "
                               "|value| in ggml's quantize_row_q8_0_ref)", o.d, amax);
    }
    const int has_m = t == G2F_DTYPE_Q4_1 || t == G2F_DTYPE_Q5_1, top = t == G2F_DTYPE_Q5_0 || t == G2F_DTYPE_Q5_1 ? 31 : 15;
    const int offset = has_m ? 0 : (top + 1) / 2;
    int lo = top, hi = 0;
    for (int i = 0; i < QK; i++) {
        const int q = o.c[i] + offset; /* the stored code */
        lo = q < lo ? q : lo;
        hi = q > hi ? q : hi;
    }
    if (has_m && f16_negative(p))
        return why_set(why, n, "scale d = %g is negative ((max - min) / %d cannot be)", o.d, top);
    if (o.d == 0) return 1;
    if (lo != 0 && has_m)
        return why_set(why, n, "scale d = %g but no element has code 0 (the block's smallest value's in the "
                               "reference quantizer)", o.d);
    if (lo != 0)
        return why_set(why, n, "scale d = %g but no element has code 0 (value -%d d: the block's largest |value|'s "
                               "in the reference quantizer)", o.d, offset);
    if (has_m && hi != top)
        return why_set(why, n, "scale d = %g but no element has the top code %d (the block's largest value's in the "
                               "reference quantizer)", o.d, top);
    return 1;
}

/* The largest code T that element x_max of a K-quant sub-block must reach
 * (see g2f_quant.h): c the proven ratio (x_max - min) / scale, sc the
 * sub-block's integer scale, d the f16 scale, em the largest offset error. */
static int k_floor(double c, int sc, double d, double em) {
    const double v = c * (1 - 0.5 / sc) * (1 - h16(d) / fabs(d)) - em / (fabs(d) * sc) - 0.5;
    return v >= 1 ? (int)ceil(v) : 0;
}

static int consistent_k45(g2f_dtype t, const unsigned char *p, char *why, size_t n) {
    const int five = t == G2F_DTYPE_Q5_K, top = five ? 31 : 15;
    const double c = five ? 10.0 : 4.5; /* (x_max - min) / scale, proven: g2f_quant.h */
    decoded o;
    decode(t, p, &o);
    if (f16_negative(p) || f16_negative(p + 2))
        return why_set(why, n, "scale d = %g or min scale dmin = %g is negative (ggml's are maxima / 63 of "
                               "non-negative values)", o.d, o.m);
    int sc[8], mn[8], sc_max = 0, m_max = 0;
    for (int j = 0; j < 8; j++) {
        scale_min_k4(j, p + 4, &sc[j], &mn[j]);
        sc_max = sc[j] > sc_max ? sc[j] : sc_max;
        m_max = mn[j] > m_max ? mn[j] : m_max;
    }
    if (o.d != 0 && sc_max != 63)
        return why_set(why, n, "scale d = %g but its largest sub-block scale is %d, not 63 (the largest sub-block's "
                               "in the reference quantizer)", o.d, sc_max);
    if (o.m != 0 && m_max != 63)
        return why_set(why, n, "min scale dmin = %g but its largest sub-block min is %d, not 63 (the largest "
                               "min's in the reference quantizer)", o.m, m_max);
    const double em = fabs(o.m) / 2 + 63.5 * h16(o.m); /* dmin m_j against the searched min */
    for (int j = 0; o.d != 0 && j < 8; j++) {
        if (sc[j] == 0) continue;
        int hi = 0;
        for (int i = 32 * j; i < 32 * j + 32; i++) hi = o.c[i] > hi ? o.c[i] : hi;
        const int need = k_floor(c, sc[j], o.d, em);
        if (hi < (need < top ? need : top))
            return why_set(why, n, "scale d = %g: sub-block %d (scale %d) has codes up to %d, below %d (its largest "
                                   "value's least code in the reference quantizer)", o.d, j, sc[j], hi,
                           need < top ? need : top);
    }
    return 1;
}

static int consistent_q6k(const unsigned char *p, char *why, size_t n) {
    decoded o;
    decode(G2F_DTYPE_Q6_K, p, &o);
    if (o.d == 0) return 1;
    int any = 0;
    for (int j = 0; j < 16; j++) any |= (int8_t)p[192 + j] == -128;
    if (!any)
        return why_set(why, n, "scale d = %g but no sub-block has the scale -128 (the largest sub-block's in "
                               "quantize_row_q6_K_ref)", o.d);
    for (int j = 0; j < 16; j++) {
        const int sc = (int8_t)p[192 + j];
        if (sc == 0) continue;
        int lo = 31;
        for (int i = 16 * j; i < 16 * j + 16; i++) lo = o.c[i] < lo ? o.c[i] : lo;
        int need = k_floor(20.5, sc < 0 ? -sc : sc, o.d, 0);
        need = need < 32 ? need : 32;
        if (lo > -need)
            return why_set(why, n, "scale d = %g: sub-block %d (scale %d) has codes down to %d only, above -%d (its "
                                   "largest |value|'s least code in the reference quantizer)", o.d, j, sc, lo, need);
    }
    return 1;
}

static int block_consistent(g2f_dtype t, const unsigned char *p, char *why, size_t n) {
    switch (t) {
    case G2F_DTYPE_Q4_K:
    case G2F_DTYPE_Q5_K: return consistent_k45(t, p, why, n);
    case G2F_DTYPE_Q6_K: return consistent_q6k(p, why, n);
    default: return consistent_32(t, p, why, n);
    }
}

bool g2f_quant_consistent(g2f_dtype dtype, const unsigned char *blocks, uint64_t first, uint64_t count, uint64_t *bad,
                          char *why, size_t why_len) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    if (!qi) return true;
    for (uint64_t b = first; b < first + count; b++)
        if (!block_consistent(dtype, blocks + b * qi->bytes, why, why_len)) {
            if (bad) *bad = b;
            return false;
        }
    return true;
}

/* Q4_0 / Q5_0 clamp the element of the sign opposite to the block's max
 * whose |x| is within 1/16 of it; which sign is the max (ties, or a rounded
 * copy of the values) decides which element, so every candidate gets the
 * clamp's half step: the bound holds for either choice. */
static void clamp_envelope(g2f_dtype t, const float *x, const unsigned char *blk, float *bound) {
    if (t != G2F_DTYPE_Q4_0 && t != G2F_DTYPE_Q5_0) return;
    decoded o;
    decode(t, blk, &o);
    const int top = t == G2F_DTYPE_Q5_0 ? 15 : 7;
    float amax = 0;
    for (int i = 0; i < QK; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    for (int i = 0; i < QK; i++)
        if (o.c[i] != top && fabsf(x[i]) >= amax * (15.0f / 16 - 0x1p-10f))
            bound[i] = (float)((bound[i] + fabs(o.d) / 2) * (1 + 0x1p-20));
}

bool g2f_quant_bounds_of_values(g2f_dtype dtype, const float *x, uint64_t n, float *step, float *bound) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    unsigned char blk[256];
    if (!qi || n % qi->block) return false;
    for (uint64_t b = 0; b < n / qi->block; b++) {
        const uint64_t at = b * qi->block;
        quantize_block(dtype, x + at, blk);
        /* Q4_1 / Q5_1: the min the block stores is the values' own rounded to f16, its error known
         * exactly (a worst case h16(m) took a scrambled block whose min is large beside its spread) */
        bounds_ctx c = {step ? step + at : NULL, bound ? bound + at : NULL, -1};
        if (dtype == G2F_DTYPE_Q4_1 || dtype == G2F_DTYPE_Q5_1) {
            double mn = x[at];
            for (uint64_t i = 1; i < qi->block; i++) mn = x[at + i] < mn ? x[at + i] : mn;
            c.m_err = fabs((double)ld_f16(blk + 2) - mn);
        }
        for_blocks(dtype, blk, 0, qi->block, bounds_fn, &c);
        if (bound) clamp_envelope(dtype, x + at, blk, bound + at);
    }
    return true;
}

/* ---- validation ---- */

g2f_status g2f_quant_check(const g2f_tensor *t, const char *label, g2f_error *err) {
    const g2f_quant_info *qi = g2f_quant_info_of(t->dtype);
    if (!qi) return G2F_OK;
    uint64_t want;
    if (t->numel % qi->block)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': %llu elements is not a multiple of the %s block size %lu", label,
                             t->name, (unsigned long long)t->numel, qi->name, (unsigned long)qi->block);
    if (!g2f_quant_nbytes(t->dtype, t->numel, &want) || want != t->nbytes)
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': %llu bytes for %llu %s blocks, expected %llu x %lu", label, t->name,
                             (unsigned long long)t->nbytes, (unsigned long long)(t->numel / qi->block), qi->name,
                             (unsigned long long)(t->numel / qi->block), (unsigned long)qi->bytes);
    /* the f16 fields of each block: d at 0, m / dmin at 2, Q6_K's d at 208 */
    const int two = t->dtype == G2F_DTYPE_Q4_1 || t->dtype == G2F_DTYPE_Q5_1 || t->dtype == G2F_DTYPE_Q4_K ||
                    t->dtype == G2F_DTYPE_Q5_K;
    const uint32_t d_at = t->dtype == G2F_DTYPE_Q6_K ? 208 : 0;
    const int k_quant = t->dtype == G2F_DTYPE_Q4_K || t->dtype == G2F_DTYPE_Q5_K;
    const uint64_t n = t->numel / qi->block;
    for (uint64_t blk = 0; blk < n; blk++) {
        const unsigned char *p = t->data + blk * qi->bytes;
        for (int f = 0; f < 1 + two; f++) {
            const unsigned char *h = p + (f ? 2 : d_at);
            const uint16_t bits = (uint16_t)(h[0] | h[1] << 8);
            if ((bits & 0x7c00u) != 0x7c00u) continue;
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: tensor '%s': %s block %llu (elements [%llu, %llu)) has %s %s = %s (f16 0x%04x); "
                                 "a quantized block's scales must be finite",
                                 label, t->name, qi->name, (unsigned long long)blk,
                                 (unsigned long long)(blk * qi->block), (unsigned long long)((blk + 1) * qi->block),
                                 f ? (k_quant ? "min scale" : "min") : "scale", f ? (k_quant ? "dmin" : "m") : "d",
                                 (bits & 0x3ffu) ? "NaN" : (bits & 0x8000u) ? "-Inf" : "+Inf", (unsigned)bits);
        }
    }
    return G2F_OK;
}

/* ---- ggml's reference quantizers ---- */

/* ggml's nearest_int: round to nearest even through the float mantissa
 * (valid for |v| <= 2^22, ggml asserts; the bits are kept whatever v is). */
static int nearest_int(float v) {
    float w = v + 12582912.f;
    int32_t i;
    memcpy(&i, &w, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* A C cast to an integer type, made total: ggml only casts values in range
 * for finite inputs; NaN and out-of-range values (from Inf/NaN weights) are
 * clamped instead of being undefined behaviour. */
static int trunc_clamped(float v, int lo, int hi) {
    if (!(v >= (float)lo)) return lo;
    if (v >= (float)hi + 1) return hi;
    return (int)v;
}

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* The block's element of largest magnitude, with its sign (the first of a
 * tie, as ggml's loop keeps it): Q4_0 and Q5_0 scale by it. */
static float signed_absmax(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; j++) {
        const float v = x[j];
        if (amax < fabsf(v)) {
            amax = fabsf(v);
            max = v;
        }
    }
    return max;
}

static void quant_q4_0(const float *x, unsigned char *y) {
    const float max = signed_absmax(x);
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    st_f16(y, d);
    for (int j = 0; j < QK / 2; j++) {
        const float x0 = x[j] * id;
        const float x1 = x[QK / 2 + j] * id;
        const float s0 = x0 + 8.5f, s1 = x1 + 8.5f;
        const unsigned xi0 = (unsigned)imin(15, trunc_clamped(s0, -128, 127)) & 0xFFu; /* ggml's uint8_t */
        const unsigned xi1 = (unsigned)imin(15, trunc_clamped(s1, -128, 127)) & 0xFFu;
        y[2 + j] = (unsigned char)(xi0 | xi1 << 4);
    }
}

static void quant_q4_1_q5_1(const float *x, unsigned char *y, int five) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < QK; j++) {
        const float v = x[j];
        if (v < min) min = v;
        if (v > max) max = v;
    }
    const float d = (max - min) / (float)(five ? 31 : 15);
    const float id = d ? 1.0f / d : 0.0f;
    st_f16(y, d);
    st_f16(y + 2, min);
    uint32_t qh = 0;
    unsigned char *qs = y + (five ? 8 : 4);
    for (int j = 0; j < QK / 2; j++) {
        const float x0 = (x[j] - min) * id;
        const float x1 = (x[QK / 2 + j] - min) * id;
        const float s0 = x0 + 0.5f, s1 = x1 + 0.5f;
        if (five) { /* (uint8_t) cast, no clamp in ggml */
            const unsigned xi0 = (unsigned)trunc_clamped(s0, 0, 255), xi1 = (unsigned)trunc_clamped(s1, 0, 255);
            qs[j] = (unsigned char)((xi0 & 0x0Fu) | (xi1 & 0x0Fu) << 4);
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
        } else { /* MIN(15, (int8_t)...) into a uint8_t */
            const unsigned xi0 = (unsigned)imin(15, trunc_clamped(s0, -128, 127)) & 0xFFu;
            const unsigned xi1 = (unsigned)imin(15, trunc_clamped(s1, -128, 127)) & 0xFFu;
            qs[j] = (unsigned char)(xi0 | xi1 << 4);
        }
    }
    if (five)
        for (int b = 0; b < 4; b++) y[4 + b] = (unsigned char)(qh >> (8 * b));
}

static void quant_q5_0(const float *x, unsigned char *y) {
    const float max = signed_absmax(x);
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    st_f16(y, d);
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; j++) {
        const float x0 = x[j] * id;
        const float x1 = x[QK / 2 + j] * id;
        const float s0 = x0 + 16.5f, s1 = x1 + 16.5f;
        const unsigned xi0 = (unsigned)imin(31, trunc_clamped(s0, -128, 127)) & 0xFFu;
        const unsigned xi1 = (unsigned)imin(31, trunc_clamped(s1, -128, 127)) & 0xFFu;
        y[6 + j] = (unsigned char)((xi0 & 0x0Fu) | (xi1 & 0x0Fu) << 4);
        qh |= ((xi0 & 0x10u) >> 4) << j;
        qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
    }
    for (int b = 0; b < 4; b++) y[2 + b] = (unsigned char)(qh >> (8 * b));
}

static void quant_q8_0(const float *x, unsigned char *y) {
    float amax = 0.0f;
    for (int j = 0; j < QK; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a; /* ggml's MAX(amax, fabsf(v)) */
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    st_f16(y, d);
    for (int j = 0; j < QK; j++) {
        const float x0 = x[j] * id;
        const float r = roundf(x0);
        y[2 + j] = (unsigned char)(int8_t)trunc_clamped(r, -128, 127);
    }
}

/* ggml's make_qkx2_quants (Q4_K, Q5_K): a scale and a min (returned as
 * -min >= 0 in *the_min) for n values, searching nstep + 1 scales around
 * nmax / (max - min) for the least weighted squared error. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_mad = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)imax(0, imin(nmax, l));
        float diff = scale * (float)L[i] + min - x[i];
        diff = diff * diff;
        const float w = weights[i];
        best_mad += w * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = imax(0, imin(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float mad = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = diff * diff;
                const float w = weights[i];
                mad += w * diff;
            }
            if (mad < best_mad) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

static void quant_q45_k(const float *x, unsigned char *y, int five) {
    uint8_t L[QK_K], Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    const int nmax = five ? 31 : 15;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, five ? -0.5f : -1.f,
                                     0.1f, five ? 15 : 20);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    unsigned char *sc = y + 4;
    memset(sc, 0, 12);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]); /* wraps like ggml's uint8_t */
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = (uint8_t)imin(63, ls);
        lm = (uint8_t)imin(63, lm);
        if (j < 4) {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    st_f16(y, max_scale / 63.f);
    st_f16(y + 2, max_min / 63.f);
    const float d16 = ld_f16(y), dmin16 = ld_f16(y + 2);
    for (int j = 0; j < QK_K / 32; ++j) {
        int s, m;
        scale_min_k4(j, sc, &s, &m);
        const float d = d16 * (float)s;
        if (!d) continue;
        const float dm = dmin16 * (float)m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)imax(0, imin(nmax, l));
        }
    }
    if (!five) {
        unsigned char *q = y + 16;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; ++l) q[l] = (unsigned char)(L[j + l] | (L[j + l + 32] << 4));
            q += 32;
        }
        return;
    }
    unsigned char *qh = y + 16, *ql = y + 48;
    memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = (unsigned char)(l1 | (l2 << 4));
        }
        m1 = (uint8_t)(m1 << 2);
        m2 = (uint8_t)(m2 << 2);
        ql += 32;
    }
}

/* ggml's make_qx_quants with rmse_type 1 and no importance weights (Q6_K). */
#define GROUP_MAX_EPS 1e-15f
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = imax(-nmax, imin(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = imax(-nmax, imin(nmax - 1, l));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

static void quant_q6_k(const float *x, unsigned char *y) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
        scales[ib] = scale;
        const float abs_scale = fabsf(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(y, 0, 210);
        st_f16(y + 208, 0.f);
        return;
    }
    const float iscale = -128.f / max_scale;
    st_f16(y + 208, 1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
        y[192 + ib] = (unsigned char)(int8_t)imin(127, nearest_int(iscale * scales[ib])); /* int8_t wraps as in ggml */
    const float d16 = ld_f16(y + 208);
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = d16 * (float)(int8_t)y[192 + j];
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = imax(-32, imin(31, l));
            L[16 * j + ii] = (int8_t)(l + 32);
        }
    }
    unsigned char *ql = y, *qh = y + 128;
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = (unsigned char)(q1 | (q3 << 4));
            ql[l + 32] = (unsigned char)(q2 | (q4 << 4));
            qh[l] = (unsigned char)(((uint8_t)L[j + l] >> 4) | (((uint8_t)L[j + l + 32] >> 4) << 2) |
                                    (((uint8_t)L[j + l + 64] >> 4) << 4) | (((uint8_t)L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

static void quantize_block(g2f_dtype t, const float *x, unsigned char *y) {
    switch (t) {
    case G2F_DTYPE_Q4_0: quant_q4_0(x, y); break;
    case G2F_DTYPE_Q4_1: quant_q4_1_q5_1(x, y, 0); break;
    case G2F_DTYPE_Q5_0: quant_q5_0(x, y); break;
    case G2F_DTYPE_Q5_1: quant_q4_1_q5_1(x, y, 1); break;
    case G2F_DTYPE_Q8_0: quant_q8_0(x, y); break;
    case G2F_DTYPE_Q4_K: quant_q45_k(x, y, 0); break;
    case G2F_DTYPE_Q5_K: quant_q45_k(x, y, 1); break;
    case G2F_DTYPE_Q6_K: quant_q6_k(x, y); break;
    default: break;
    }
}

bool g2f_quant_can_quantize(g2f_dtype dtype) { return g2f_quant_info_of(dtype) != NULL; }

bool g2f_quant_quantize(g2f_dtype dtype, const float *x, uint64_t n, unsigned char *dst) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    if (!qi || n % qi->block) return false;
    for (uint64_t b = 0; b < n / qi->block; b++) quantize_block(dtype, x + b * qi->block, dst + b * qi->bytes);
    return true;
}

bool g2f_quant_roundtrip(g2f_dtype dtype, const float *x, uint64_t n, float *out) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    unsigned char blk[256];
    if (!qi || n % qi->block) return false;
    for (uint64_t b = 0; b < n / qi->block; b++) {
        quantize_block(dtype, x + b * qi->block, blk);
        g2f_quant_dequantize(dtype, blk, 0, qi->block, out + b * qi->block);
    }
    return true;
}

bool g2f_quant_roundtrip_cols(g2f_dtype dtype, const float *w, size_t rows, size_t cols, float *out) {
    const g2f_quant_info *qi = g2f_quant_info_of(dtype);
    float col[G2F_QUANT_MAX_BLOCK];
    if (!qi || rows % qi->block) return false;
    for (size_t c = 0; c < cols; c++) {
        for (size_t r0 = 0; r0 < rows; r0 += qi->block) {
            for (uint32_t i = 0; i < qi->block; i++) col[i] = w[(r0 + i) * cols + c];
            g2f_quant_roundtrip(dtype, col, qi->block, col);
            for (uint32_t i = 0; i < qi->block; i++) out[(r0 + i) * cols + c] = col[i];
        }
    }
    return true;
}
