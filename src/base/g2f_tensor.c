/* g2f_tensor: dtypes, tensor tables, conversions and checked sizes.
 * Conversions are per element with memcpy loads because data may be
 * unaligned; they run once per layer, not in the FFN's hot loop. */
#include "g2f_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "g2f_cpu.h"
#include "g2f_quant.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpt2ffn reads little-endian files on little-endian hosts only"
#endif

static const struct {
    const char *name;
    size_t size;
} dtype_info[] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"BOOL", 1}, {"U8", 1},
    {"I8", 1},  {"I16", 2}, {"U16", 2},  {"I32", 4}, {"U32", 4},  {"I64", 8},
    {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"Q4_0", 0}, {"Q4_1", 0}, {"Q5_0", 0}, {"Q5_1", 0}, {"Q8_0", 0}, {"Q4_K", 0}, {"Q5_K", 0}, {"Q6_K", 0}, /* blocks */
    {"OPAQUE", 0},
};
_Static_assert(sizeof dtype_info / sizeof dtype_info[0] == G2F_DTYPE_COUNT, "one entry per dtype");

const char *g2f_dtype_name(g2f_dtype dtype) {
    return (unsigned)dtype < G2F_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

bool g2f_dtype_from_name(const char *name, g2f_dtype *out) {
    for (int i = 0; i < G2F_DTYPE_OPAQUE; i++) { /* OPAQUE is never a file's name */
        if (g2f_dtype_is_quant((g2f_dtype)i)) continue; /* ggml's names, not safetensors dtypes */
        if (strcmp(name, dtype_info[i].name) == 0) {
            *out = (g2f_dtype)i;
            return true;
        }
    }
    return false;
}

const char *g2f_tensor_type_name(const g2f_tensor *t) {
    return t->dtype == G2F_DTYPE_OPAQUE && t->type_name ? t->type_name : g2f_dtype_name(t->dtype);
}

size_t g2f_dtype_size(g2f_dtype dtype) {
    return (unsigned)dtype < G2F_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

bool g2f_dtype_is_float(g2f_dtype dtype) {
    return dtype == G2F_DTYPE_F32 || dtype == G2F_DTYPE_F16 || dtype == G2F_DTYPE_BF16 ||
           dtype == G2F_DTYPE_F64;
}

bool g2f_dtype_is_quant(g2f_dtype dtype) { return g2f_quant_info_of(dtype) != NULL; }

bool g2f_dtype_is_convertible(g2f_dtype dtype) { return g2f_dtype_is_float(dtype) || g2f_dtype_is_quant(dtype); }

double g2f_dtype_store_floor(g2f_dtype dtype) {
    return dtype == G2F_DTYPE_F16 ? ldexp(1.0, -25) : dtype == G2F_DTYPE_BF16 ? ldexp(1.0, -134) : 0.0;
}

double g2f_dtype_store_roundoff(g2f_dtype dtype) {
    switch (dtype) {
    case G2F_DTYPE_F16: return ldexp(1.0, -11);
    case G2F_DTYPE_BF16: return ldexp(1.0, -8);
    default: return 0.0;
    }
}

/* [*lo, *hi]: the reals that round to the finite v on a grid of p significant bits with least
 * normal exponent emin, ties either way; p 0: v alone. */
static void rounding_interval(double v, int p, int emin, double *lo, double *hi) {
    *lo = *hi = v;
    if (!p) return;
    double m = fabs(v);
    int e = emin;
    if (m >= ldexp(1.0, emin)) frexp(m, &e), e -= 1; /* m in [2^e, 2^(e+1)) */
    double gap = ldexp(1.0, e - p + 1), below = m == ldexp(1.0, e) && e > emin ? gap / 2 : gap;
    double toward = m == 0 ? gap / 2 : below / 2; /* toward zero; away from it gap / 2 */
    if (v < 0) *lo = v - gap / 2, *hi = v + toward;
    else *lo = v - toward, *hi = v + gap / 2;
}

static void grid_of(g2f_dtype d, int *p, int *emin) {
    *p = d == G2F_DTYPE_F16 ? 11 : d == G2F_DTYPE_BF16 ? 8 : d == G2F_DTYPE_F32 ? 24 : 0;
    *emin = d == G2F_DTYPE_F16 ? -14 : -126;
}

bool g2f_dtype_values_agree(double x, g2f_dtype dx, double y, g2f_dtype dy) {
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    if (dx == dy || !isfinite(x) || !isfinite(y)) return x == y;
    int px, py, ex, ey;
    grid_of(dx, &px, &ex), grid_of(dy, &py, &ey);
    double lx, hx, ly, hy;
    rounding_interval(x, px, ex, &lx, &hx), rounding_interval(y, py, ey, &ly, &hy);
    return (lx > ly ? lx : ly) <= (hx < hy ? hx : hy);
}

bool g2f_dtype_is_int(g2f_dtype d) {
    return d == G2F_DTYPE_I64 || d == G2F_DTYPE_I32 || d == G2F_DTYPE_I8 || d == G2F_DTYPE_U8 || d == G2F_DTYPE_BOOL;
}

int64_t g2f_tensor_int_at(const g2f_tensor *t, uint64_t i) {
    const unsigned char *p = t->data + i * g2f_dtype_size(t->dtype);
    switch (t->dtype) {
    case G2F_DTYPE_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    case G2F_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case G2F_DTYPE_I8: return (int8_t)p[0];
    default: return p[0]; /* U8, BOOL */
    }
}

void g2f_table_free(g2f_table *table) {
    if (!table) return;
    for (size_t i = 0; i < table->count; i++) free((char *)table->tensors[i].name);
    free(table->tensors);
    for (size_t i = 0; i < table->meta_count; i++) {
        free(table->meta[i].key);
        free(table->meta[i].value);
    }
    free(table->meta);
    memset(table, 0, sizeof *table);
}

const g2f_tensor *g2f_table_find(const g2f_table *table, const char *name) {
    for (size_t i = 0; i < table->count; i++)
        if (strcmp(table->tensors[i].name, name) == 0) return &table->tensors[i];
    return NULL;
}

const char *g2f_table_meta(const g2f_table *table, const char *key) {
    for (size_t i = 0; i < table->meta_count; i++)
        if (strcmp(table->meta[i].key, key) == 0) return table->meta[i].value;
    return NULL;
}

void g2f_shape_format(const g2f_tensor *t, char *buf, size_t size) {
    size_t used = 0;
    if (size == 0) return;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)t->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

float g2f_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: value = mant * 2^-24 exactly */
            float v = (float)mant * 0x1p-24f;
            memcpy(&bits, &v, sizeof bits);
            bits |= sign;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float g2f_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t g2f_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu)) /* NaN stays NaN */
        return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

uint16_t g2f_f32_to_f16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
    if (a < 0x1p-14f) { /* subnormal half: multiples of 2^-24, round to nearest even */
        float q = nearbyintf(a * 0x1p24f);
        return (uint16_t)(sign | (uint16_t)q);
    }
    uint32_t abits;
    memcpy(&abits, &a, sizeof abits);
    uint32_t exp = (abits >> 23) - 112u;
    uint32_t mant = abits & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* may carry into exponent: correct */
    return (uint16_t)(sign | h);
}


static float load_f32(const unsigned char *p) { float v; memcpy(&v, p, 4); return v; }
static double load_f64(const unsigned char *p) { double v; memcpy(&v, p, 8); return v; }
static uint16_t load_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }

void g2f_tensor_read_f32(const g2f_tensor *t, uint64_t start, uint64_t count, float *dst) {
    if (g2f_dtype_is_quant(t->dtype)) {
        g2f_quant_dequantize(t->dtype, t->data, start, count, dst);
        return;
    }
    const unsigned char *p = t->data + start * g2f_dtype_size(t->dtype);
    switch (t->dtype) {
    case G2F_DTYPE_F32: memcpy(dst, p, count * sizeof(float)); break;
    case G2F_DTYPE_F16:
        if (g2f_cpu_features()->f16c) { /* hardware conversion, exact like the software one */
            g2f_cpu_f16_to_f32(p, dst, (size_t)count);
            break;
        }
        for (uint64_t i = 0; i < count; i++) dst[i] = g2f_f16_to_f32(load_u16(p + 2 * i));
        break;
    case G2F_DTYPE_BF16: for (uint64_t i = 0; i < count; i++) dst[i] = g2f_bf16_to_f32(load_u16(p + 2 * i)); break;
    case G2F_DTYPE_F64: for (uint64_t i = 0; i < count; i++) dst[i] = (float)load_f64(p + 8 * i); break;
    default: for (uint64_t i = 0; i < count; i++) dst[i] = NAN; break;
    }
}

void g2f_tensor_read_f64(const g2f_tensor *t, uint64_t start, uint64_t count, double *dst) {
    if (g2f_dtype_is_quant(t->dtype)) { /* in pieces of one block, widened */
        float buf[G2F_QUANT_MAX_BLOCK];
        for (uint64_t done = 0; done < count;) {
            uint64_t n = count - done < G2F_QUANT_MAX_BLOCK ? count - done : G2F_QUANT_MAX_BLOCK;
            g2f_quant_dequantize(t->dtype, t->data, start + done, n, buf);
            for (uint64_t i = 0; i < n; i++) dst[done + i] = buf[i];
            done += n;
        }
        return;
    }
    const unsigned char *p = t->data + start * g2f_dtype_size(t->dtype);
    switch (t->dtype) {
    case G2F_DTYPE_F32: for (uint64_t i = 0; i < count; i++) dst[i] = load_f32(p + 4 * i); break;
    case G2F_DTYPE_F16: for (uint64_t i = 0; i < count; i++) dst[i] = g2f_f16_to_f32(load_u16(p + 2 * i)); break;
    case G2F_DTYPE_BF16: for (uint64_t i = 0; i < count; i++) dst[i] = g2f_bf16_to_f32(load_u16(p + 2 * i)); break;
    case G2F_DTYPE_F64: memcpy(dst, p, count * sizeof(double)); break;
    default: for (uint64_t i = 0; i < count; i++) dst[i] = NAN; break;
    }
}

bool g2f_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool g2f_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

void *g2f_alloc_array(size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) return NULL;
    return malloc(total ? total : 1);
}

uint64_t g2f_physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t b;
    if (pages <= 0 || page <= 0 || !g2f_mul_u64((uint64_t)pages, (uint64_t)page, &b)) return UINT64_MAX;
    return b;
}

/* "1.5 GB" */
static void human_bytes(double b, char *buf, size_t n) {
    static const char *const unit[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB", "ZB"};
    int u = 0;
    while (b >= 1000 && u < 7) b /= 1000, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

void *g2f_alloc_work(size_t rows, size_t cols, size_t elsize, const char *what, g2f_error *err) {
    size_t n, bytes;
    char need[32], have[32];
    if (__builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, elsize, &bytes) || bytes > SIZE_MAX - 64) {
        human_bytes((double)rows * (double)cols * (double)elsize, need, sizeof need);
        g2f_error_set(err, G2F_ERR_NOMEM, "%s: %zu x %zu values need %s of memory, beyond what any machine can address",
                      what, rows, cols, need);
        return NULL;
    }
    uint64_t phys = g2f_physical_memory();
    if ((uint64_t)bytes > phys) {
        human_bytes((double)bytes, need, sizeof need);
        human_bytes((double)phys, have, sizeof have);
        g2f_error_set(err, G2F_ERR_NOMEM, "%s: %zu x %zu values need %s of memory, more than this machine's %s", what,
                      rows, cols, need, have);
        return NULL;
    }
    /* whole 64-byte lines: the kernels stream whole lines into work
     * buffers (the AVX-512 epilogue's act rows), and only into aligned ones */
    void *p = aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
    if (!p) {
        human_bytes((double)bytes, need, sizeof need);
        g2f_error_set(err, G2F_ERR_NOMEM, "%s: cannot allocate %s of memory", what, need);
    }
    return p;
}
