/* ggml's quantized types (src/base/g2f_quant.h) end to end: the block
 * fixtures written by scripts/ggml_quant.py (dequantization and the C
 * quantizers bit for bit), one hand-computed block per type, the error
 * bounds on reference-quantized data, the validation of sizes and scales,
 * and the quantized GGUF fixtures through the model, inspect, diff and
 * verify. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "g2f_diff.h"
#include "g2f_gguf.h"
#include "g2f_model.h"
#include "g2f_quant.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];

static const g2f_dtype all_types[] = {G2F_DTYPE_Q4_0, G2F_DTYPE_Q4_1, G2F_DTYPE_Q5_0, G2F_DTYPE_Q5_1,
                                      G2F_DTYPE_Q8_0, G2F_DTYPE_Q4_K, G2F_DTYPE_Q5_K, G2F_DTYPE_Q6_K};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static void put_f16(unsigned char *p, float v) {
    uint16_t h = g2f_f32_to_f16(v);
    p[0] = (unsigned char)(h & 0xff);
    p[1] = (unsigned char)(h >> 8);
}

/* A tensor of n elements of type t over bytes b. */
static g2f_tensor tensor_of(g2f_dtype t, const unsigned char *b, uint64_t n, const char *name) {
    g2f_tensor x;
    memset(&x, 0, sizeof x);
    const g2f_quant_info *qi = g2f_quant_info_of(t);
    x.name = name;
    x.dtype = t;
    x.ndim = 1;
    x.shape[0] = n;
    x.numel = n;
    x.data = b;
    x.nbytes = n / qi->block * qi->bytes;
    return x;
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* ---- the type table ---- */

static void quant_should_describe_ggml_types(void) {
    const struct { const char *name; uint32_t id, block, bytes; } want[] = {
        {"Q4_0", 2, 32, 18},  {"Q4_1", 3, 32, 20},    {"Q5_0", 6, 32, 22},    {"Q5_1", 7, 32, 24},
        {"Q8_0", 8, 32, 34},  {"Q4_K", 12, 256, 144}, {"Q5_K", 13, 256, 176}, {"Q6_K", 14, 256, 210},
    };
    for (size_t i = 0; i < N_TYPES; i++) {
        const g2f_quant_info *qi = g2f_quant_info_of(all_types[i]);
        CHECK(qi && !strcmp(qi->name, want[i].name) && qi->ggml_type == want[i].id && qi->block == want[i].block &&
              qi->bytes == want[i].bytes);
        CHECK(!strcmp(g2f_dtype_name(all_types[i]), want[i].name));
        CHECK(g2f_quant_from_ggml(want[i].id) == all_types[i]);
        CHECK(!strcmp(g2f_gguf_type_name(want[i].id), want[i].name)); /* the reader's table agrees */
        CHECK(g2f_dtype_is_quant(all_types[i]) && g2f_dtype_is_convertible(all_types[i]));
        CHECK(!g2f_dtype_is_float(all_types[i]) && g2f_dtype_size(all_types[i]) == 0);
        g2f_dtype d;
        CHECK(!g2f_dtype_from_name(want[i].name, &d)); /* not a safetensors dtype */
    }
    CHECK(g2f_quant_info_of(G2F_DTYPE_F16) == NULL && g2f_quant_from_ggml(10) == G2F_DTYPE_OPAQUE); /* Q2_K */
    uint64_t nb = 0;
    CHECK(g2f_quant_nbytes(G2F_DTYPE_Q4_K, 512, &nb) && nb == 288);
    CHECK(!g2f_quant_nbytes(G2F_DTYPE_Q4_K, 300, &nb) && nb == 288);
    CHECK(!g2f_quant_nbytes(G2F_DTYPE_Q8_0, UINT64_MAX / 32 * 32, &nb)); /* overflow */
}

/* ---- the Python fixture ---- */

static g2f_safetensors *open_blocks(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/quant/blocks.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    if (g2f_safetensors_open(path, &st, &err) != G2F_OK) fprintf(stderr, "%s\n", err.msg);
    return st;
}

static const g2f_tensor *find(const g2f_table *t, g2f_dtype type, const char *what) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", g2f_dtype_name(type), what);
    return g2f_table_find(t, name);
}

static void dequantize_should_equal_python_bit_for_bit(void) {
    g2f_safetensors *st = open_blocks();
    CHECK(st != NULL);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    for (size_t k = 0; k < N_TYPES; k++) {
        const g2f_dtype ty = all_types[k];
        const g2f_tensor *b = find(t, ty, "blocks"), *d = find(t, ty, "deq");
        CHECK(b && d && b->dtype == G2F_DTYPE_U8 && d->dtype == G2F_DTYPE_F32);
        if (!b || !d) continue;
        const uint64_t n = d->numel;
        g2f_tensor q = tensor_of(ty, b->data, n, "blocks");
        CHECK(q.nbytes == b->nbytes);
        float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        double *got64 = malloc(n * sizeof *got64);
        g2f_tensor_read_f32(d, 0, n, want);
        g2f_tensor_read_f32(&q, 0, n, got);
        if (!same_bits(want, got, n)) {
            fprintf(stderr, "%s: dequantization differs from scripts/ggml_quant.py\n", g2f_dtype_name(ty));
            check_failures++;
        }
        g2f_tensor_read_f64(&q, 0, n, got64);
        int ok64 = 1;
        for (uint64_t i = 0; i < n; i++) ok64 &= got64[i] == (double)want[i] || (isnan(got64[i]) && isnan(want[i]));
        CHECK(ok64);
        /* ranges that start and end inside blocks */
        const uint64_t starts[] = {0, 1, 31, 33, 255, 257, n - 7};
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            uint64_t count = n - starts[s] < 300 ? n - starts[s] : 300;
            memset(got, 0xff, count * sizeof *got);
            g2f_tensor_read_f32(&q, starts[s], count, got);
            CHECK(same_bits(want + starts[s], got, count));
        }
        free(want);
        free(got);
        free(got64);
    }
    g2f_safetensors_close(st);
}

static void quantizers_should_equal_python_bit_for_bit(void) {
    g2f_safetensors *st = open_blocks();
    CHECK(st != NULL);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    for (size_t k = 0; k < N_TYPES; k++) {
        const g2f_dtype ty = all_types[k];
        const g2f_tensor *x = find(t, ty, "x"), *b = find(t, ty, "blocks");
        CHECK(x && b);
        if (!x || !b) continue;
        float *xv = malloc(x->numel * sizeof *xv), *back = malloc(x->numel * sizeof *back);
        float *deq = malloc(x->numel * sizeof *deq);
        unsigned char *q = malloc(b->nbytes);
        g2f_tensor_read_f32(x, 0, x->numel, xv);
        CHECK(g2f_quant_can_quantize(ty));
        CHECK(g2f_quant_quantize(ty, xv, x->numel, q));
        if (memcmp(q, b->data, b->nbytes) != 0) {
            fprintf(stderr, "%s: C quantizer differs from scripts/ggml_quant.py\n", g2f_dtype_name(ty));
            check_failures++;
        }
        /* roundtrip = dequantize(quantize) */
        CHECK(g2f_quant_roundtrip(ty, xv, x->numel, back));
        g2f_quant_dequantize(ty, b->data, 0, x->numel, deq);
        CHECK(same_bits(back, deq, x->numel));
        CHECK(!g2f_quant_quantize(ty, xv, x->numel - 1, q) && !g2f_quant_roundtrip(ty, xv, 16, back));
        free(xv);
        free(back);
        free(deq);
        free(q);
    }
    g2f_safetensors_close(st);
}

static void roundtrip_cols_should_quantize_along_columns(void) {
    /* a (64, 3) Conv1D-like matrix: its ggml rows are the 3 columns of 64 */
    float w[64 * 3], col[64], want[64], got[64 * 3];
    uint64_t s = 7;
    for (int i = 0; i < 64 * 3; i++) w[i] = rnd_unit(&s) * 0.1f;
    for (size_t k = 0; k < N_TYPES; k++) {
        const g2f_dtype ty = all_types[k];
        if (g2f_quant_info_of(ty)->block > 64) {
            CHECK(!g2f_quant_roundtrip_cols(ty, w, 64, 3, got)); /* 64 rows: not a multiple of 256 */
            continue;
        }
        CHECK(g2f_quant_roundtrip_cols(ty, w, 64, 3, got));
        for (int c = 0; c < 3; c++) {
            for (int r = 0; r < 64; r++) col[r] = w[r * 3 + c];
            g2f_quant_roundtrip(ty, col, 64, want);
            int same = 1;
            for (int r = 0; r < 64; r++) same &= got[r * 3 + c] == want[r];
            CHECK(same);
        }
    }
}

/* ---- one block per type, computed by hand from its bytes ---- */

static void check_block(g2f_dtype ty, const unsigned char *blk, const float *want) {
    const g2f_quant_info *qi = g2f_quant_info_of(ty);
    float got[256];
    g2f_quant_dequantize(ty, blk, 0, qi->block, got);
    for (uint32_t i = 0; i < qi->block; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr, "%s element %u: %.9g, by hand %.9g\n", qi->name, i, got[i], want[i]);
            check_failures++;
            return;
        }
    }
}

static void dequantize_should_match_hand_computed_blocks(void) {
    unsigned char b[256];
    float want[256];

    /* Q8_0: d = 0.5, q_i = i - 16 */
    put_f16(b, 0.5f);
    for (int i = 0; i < 32; i++) b[2 + i] = (unsigned char)(int8_t)(i - 16), want[i] = (float)(i - 16) * 0.5f;
    check_block(G2F_DTYPE_Q8_0, b, want);
    CHECK(want[0] == -8.0f && want[31] == 7.5f);

    /* Q4_0: d = 0.25; byte j: low nibble j (element j), high nibble 15 - j (element j + 16) */
    put_f16(b, 0.25f);
    for (int j = 0; j < 16; j++) {
        b[2 + j] = (unsigned char)(j | (15 - j) << 4);
        want[j] = (float)(j - 8) * 0.25f;
        want[j + 16] = (float)(15 - j - 8) * 0.25f;
    }
    check_block(G2F_DTYPE_Q4_0, b, want);
    CHECK(want[0] == -2.0f && want[16] == 1.75f);

    /* Q4_1: d = 0.5, m = -1; byte j = j | (15 - j) << 4 */
    put_f16(b, 0.5f);
    put_f16(b + 2, -1.0f);
    for (int j = 0; j < 16; j++) {
        b[4 + j] = (unsigned char)(j | (15 - j) << 4);
        want[j] = (float)j * 0.5f - 1.0f;
        want[j + 16] = (float)(15 - j) * 0.5f - 1.0f;
    }
    check_block(G2F_DTYPE_Q4_1, b, want);
    CHECK(want[16] == 6.5f);

    /* Q5_0: d = 1; qh = 0x80000001: bit 4 of element 0 and of element 31;
     * qs[0] = 0x21, qs[15] = 0xF3, the others 0 */
    put_f16(b, 1.0f);
    b[2] = 0x01, b[3] = 0x00, b[4] = 0x00, b[5] = 0x80;
    memset(b + 6, 0, 16);
    b[6] = 0x21, b[6 + 15] = 0xF3;
    for (int i = 0; i < 32; i++) want[i] = -16.0f; /* code 0 - 16 */
    want[0] = 1.0f;   /* (1 | 16) - 16 */
    want[16] = -14.0f; /* 2 - 16 */
    want[15] = -13.0f; /* 3 - 16 */
    want[31] = 15.0f; /* (15 | 16) - 16 */
    check_block(G2F_DTYPE_Q5_0, b, want);

    /* Q5_1: d = 0.5, m = 2; qh = 0x00010002 (elements 1 and 16); every qs 0x43 */
    put_f16(b, 0.5f);
    put_f16(b + 2, 2.0f);
    b[4] = 0x02, b[5] = 0x00, b[6] = 0x01, b[7] = 0x00;
    memset(b + 8, 0x43, 16);
    for (int i = 0; i < 16; i++) want[i] = 3 * 0.5f + 2, want[16 + i] = 4 * 0.5f + 2;
    want[1] = 19 * 0.5f + 2;  /* 3 | 16 */
    want[16] = 20 * 0.5f + 2; /* 4 | 16 */
    check_block(G2F_DTYPE_Q5_1, b, want);

    /* Q4_K: d = 0.5, dmin = 0.25, sub-block scales sc = {1, 2, 3, 4, 17, 33, 50, 63} and mins
     * m = {0, 5, 10, 63, 16, 31, 47, 62}, packed by hand: bytes 0-3 sc_j | (sc_{j+4} >> 4) << 6,
     * bytes 4-7 m_j | (m_{j+4} >> 4) << 6, bytes 8-11 (sc_{j+4} & 15) | (m_{j+4} & 15) << 4 */
    static const int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63}, mn[8] = {0, 5, 10, 63, 16, 31, 47, 62};
    static const unsigned char packed[12] = {65, 130, 195, 196, 64, 69, 138, 255, 1, 241, 242, 239};
    put_f16(b, 0.5f);
    put_f16(b + 2, 0.25f);
    memcpy(b + 4, packed, 12);
    for (int c = 0; c < 4; c++) /* qs[32c + l]: low nibble l & 15 (sub-block 2c), high 15 - (l & 15) */
        for (int l = 0; l < 32; l++) {
            b[16 + 32 * c + l] = (unsigned char)((l & 15) | (15 - (l & 15)) << 4);
            want[64 * c + l] = 0.5f * (float)sc[2 * c] * (float)(l & 15) - 0.25f * (float)mn[2 * c];
            want[64 * c + 32 + l] = 0.5f * (float)sc[2 * c + 1] * (float)(15 - (l & 15)) - 0.25f * (float)mn[2 * c + 1];
        }
    check_block(G2F_DTYPE_Q4_K, b, want);
    CHECK(want[255] == 0.5f * 63 * 0 - 0.25f * 62 && want[64 * 3 + 15] == 0.5f * 50 * 15 - 0.25f * 47);

    /* Q5_K: the same scales; qh[l] = 37 l (mod 256): bit 2c adds 16 to element 64c + l, bit
     * 2c + 1 to element 64c + 32 + l; qs[32c + l] = (l & 15) | (l >> 1) << 4 */
    put_f16(b, 0.5f);
    put_f16(b + 2, 0.25f);
    memcpy(b + 4, packed, 12);
    for (int l = 0; l < 32; l++) b[16 + l] = (unsigned char)(37 * l);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            b[48 + 32 * c + l] = (unsigned char)((l & 15) | (l >> 1) << 4);
            const int qh = (37 * l) & 255;
            const int q0 = (l & 15) + ((qh >> (2 * c)) & 1) * 16, q1 = (l >> 1) + ((qh >> (2 * c + 1)) & 1) * 16;
            want[64 * c + l] = 0.5f * (float)sc[2 * c] * (float)q0 - 0.25f * (float)mn[2 * c];
            want[64 * c + 32 + l] = 0.5f * (float)sc[2 * c + 1] * (float)q1 - 0.25f * (float)mn[2 * c + 1];
        }
    check_block(G2F_DTYPE_Q5_K, b, want);
    /* element 1: qh[1] = 37 = 0b100101, bit 0 set: q = 1 + 16 = 17, sub-block 0 (sc 1, m 0) */
    CHECK(want[1] == 0.5f * 17);

    /* Q6_K: ql[i] = 7i, qh[i] = 13i (mod 256), sc[s] = s - 8, d = 0.125. Element 128h + 32k + l:
     * low 4 bits from ql[64h + l] (k = 0: low nibble, k = 2: high) or ql[64h + 32 + l] (k = 1, 3),
     * bits 4-5 = (qh[32h + l] >> 2k) & 3, value d sc[e / 16] (q - 32) */
    for (int i = 0; i < 128; i++) b[i] = (unsigned char)(7 * i);
    for (int i = 0; i < 64; i++) b[128 + i] = (unsigned char)(13 * i);
    for (int s = 0; s < 16; s++) b[192 + s] = (unsigned char)(int8_t)(s - 8);
    put_f16(b + 208, 0.125f);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) {
                const int e = 128 * h + 32 * k + l;
                const int lbyte = (7 * (64 * h + (k & 1) * 32 + l)) & 255;
                const int low = k < 2 ? lbyte & 15 : lbyte >> 4;
                const int high = (((13 * (32 * h + l)) & 255) >> (2 * k)) & 3;
                want[e] = 0.125f * (float)(e / 16 - 8) * (float)((low | high << 4) - 32);
            }
    check_block(G2F_DTYPE_Q6_K, b, want);
    CHECK(want[0] == 32.0f); /* q = 0: 0.125 * -8 * -32 */
}

/* ---- error bounds ---- */

static void check_bounds(g2f_dtype ty, const float *x, const unsigned char *q, size_t n, const char *what) {
    float *y = malloc(n * sizeof *y), *step = malloc(n * sizeof *step), *bound = malloc(n * sizeof *bound);
    g2f_quant_dequantize(ty, q, 0, n, y);
    g2f_quant_bounds(ty, q, 0, n, step, bound);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)y[i] - x[i]);
        if (!(e <= bound[i]) || !(step[i] >= 0)) {
            if (!bad) first = i;
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "%s %s: %zu of %zu errors beyond the bound, first at %zu: x %.9g, deq %.9g, step %.3g, bound %.3g\n",
                g2f_dtype_name(ty), what, bad, n, first, x[first], y[first], step[first], bound[first]);
        check_failures++;
    }
    /* bounds of a sub-range equal the slice */
    if (n > 600) {
        float st2[300], bd2[300];
        g2f_quant_bounds(ty, q, 257, 300, st2, bd2);
        CHECK(same_bits(st2, step + 257, 300) && same_bits(bd2, bound + 257, 300));
    }
    free(y);
    free(step);
    free(bound);
}

static double gauss(uint64_t *s) {
    double a = (rnd_unit(s) + 1.0) / 2 + 1e-12, b = rnd_unit(s);
    return sqrt(-2 * log(a)) * cos(3.141592653589793 * b);
}

static void bounds_should_hold_for_reference_quantized_data(void) {
    /* the Python fixture: inputs and ggml's bytes */
    g2f_safetensors *st = open_blocks();
    CHECK(st != NULL);
    if (st) {
        const g2f_table *t = g2f_safetensors_table(st);
        for (size_t k = 0; k < N_TYPES; k++) {
            const g2f_tensor *x = find(t, all_types[k], "x"), *b = find(t, all_types[k], "blocks");
            if (!x || !b) continue;
            float *xv = malloc(x->numel * sizeof *xv);
            g2f_tensor_read_f32(x, 0, x->numel, xv);
            check_bounds(all_types[k], xv, b->data, x->numel, "python blocks");
            free(xv);
        }
        g2f_safetensors_close(st);
    }
    /* random data of several shapes through the C quantizers */
    const size_t n = 256 * 64;
    float *x = malloc(n * sizeof *x);
    unsigned char *q = malloc(n * 2);
    static const char *const dists[] = {"normal", "uniform", "outliers", "heavy tail", "offset", "one loud sub-block"};
    for (int dist = 0; dist < 6; dist++) {
        uint64_t s = 1234 + (uint64_t)dist;
        for (size_t i = 0; i < n; i++) {
            double g = gauss(&s);
            switch (dist) {
            case 0: x[i] = (float)(0.02 * g); break;
            case 1: x[i] = rnd_unit(&s); break;
            case 2: x[i] = (float)(0.02 * g * (rnd_unit(&s) > 0.96f ? 30 : 1)); break;
            case 3: x[i] = (float)(1e-4 * g / (fabs(rnd_unit(&s)) + 1e-3)); break;
            case 4: x[i] = (float)(1.5 + 0.01 * g); break;
            default: x[i] = (float)(g * ((i / 32) % 8 == 0 ? 1.0 : 0.01)); break;
            }
        }
        for (size_t k = 0; k < N_TYPES; k++) {
            CHECK(g2f_quant_quantize(all_types[k], x, n, q));
            check_bounds(all_types[k], x, q, n, dists[dist]);
        }
    }
    /* Q8_0's bound is the half step plus the f16 scale's rounding: at most 0.5 + 128 2^-11 steps */
    float step[32], bound[32];
    CHECK(g2f_quant_quantize(G2F_DTYPE_Q8_0, x, 32, q));
    g2f_quant_bounds(G2F_DTYPE_Q8_0, q, 0, 32, step, bound);
    for (int i = 0; i < 32; i++) CHECK(bound[i] >= step[i] / 2 && bound[i] <= step[i] * (0.5 + 129 * 0x1p-11) * 1.0001);
    free(x);
    free(q);
}

/* ---- consistency: what ggml's reference quantizers write ---- */

/* A block as forged to decode to 0 while carrying the largest f16 scale
 * (65504): the attack of issue 23, one byte image per type. */
static void forge_zero_block(g2f_dtype ty, unsigned char *b) {
    const g2f_quant_info *qi = g2f_quant_info_of(ty);
    memset(b, 0, qi->bytes);
    switch (ty) {
    case G2F_DTYPE_Q4_0: memset(b + 2, 0x88, 16); break;      /* codes 8: value 0 */
    case G2F_DTYPE_Q5_0: memset(b + 2, 0xff, 4); break;       /* qh: codes 16 */
    case G2F_DTYPE_Q4_K:
    case G2F_DTYPE_Q5_K: memset(b + 4, 63, 4); memset(b + 8, 0xff, 4); b[8] = b[9] = b[10] = b[11] = 0x0f; break;
    case G2F_DTYPE_Q6_K: memset(b + 128, 0xaa, 64); memset(b + 192, 127, 16); break; /* codes 32, scales 127 */
    default: break;
    }
    put_f16(b + (ty == G2F_DTYPE_Q6_K ? 208 : 0), 65504.0f);
}

/* Every block the C quantizers (ggml's reference, bit for bit) write meets
 * the condition: the six distributions of the bound test, each with random
 * per-block magnitudes from 1e-7 to 1e5 (f16-subnormal and large scales),
 * sparse, constant, two-valued and offset blocks, and the Python fixture;
 * blocks whose f16 scale overflowed (refused by g2f_quant_check) are left
 * out. The forged zero blocks fail, naming the block. */
static void consistency_should_accept_every_reference_block_and_no_forged_one(void) {
    const size_t n = 256 * 512;
    float *x = malloc(n * sizeof *x);
    unsigned char *q = malloc(n * 2);
    size_t checked[N_TYPES] = {0}, rejected[N_TYPES] = {0};
    for (int dist = 0; dist < 12; dist++) {
        uint64_t s = 777 + (uint64_t)dist;
        for (size_t i = 0; i < n; i++) {
            const double g = gauss(&s), mag = exp(12 * rnd_unit(&s) * ((i / 256) % 3 == 0));
            double v;
            switch (dist) {
            case 0: v = 0.02 * g; break;
            case 1: v = rnd_unit(&s); break;
            case 2: v = 0.02 * g * (rnd_unit(&s) > 0.96f ? 30 : 1); break;
            case 3: v = 1e-4 * g / (fabs(rnd_unit(&s)) + 1e-3); break;
            case 4: v = 1.5 + 0.01 * g; break;
            case 5: v = g * ((i / 32) % 8 == 0 ? 1.0 : 0.01); break;
            case 6: v = rnd_unit(&s) < 0.8f ? 0 : g; break;                  /* sparse */
            case 7: v = -3 + 0.001 * g; break;                                /* offset, tiny range */
            case 8: v = (i / 32) % 8 == 3 ? -50 + g : 0.1 * g; break;         /* one offset sub-block */
            case 9: v = floor(2 * (rnd_unit(&s) + 1)) - 1.5; break;          /* four values, ties */
            case 10: v = (i / 32) % 2 ? 0.25 : 0.25 + 0.01 * (g > 0); break; /* constant, two-valued */
            default: v = exp(3 * g) * (g > 0 ? 1 : -1); break;                 /* heavy tails */
            }
            x[i] = (float)(v * (dist == 10 ? 1 : mag));
        }
        for (size_t k = 0; k < N_TYPES; k++) {
            const g2f_quant_info *qi = g2f_quant_info_of(all_types[k]);
            CHECK(g2f_quant_quantize(all_types[k], x, n, q));
            for (uint64_t b = 0; b < n / qi->block; b++) {
                g2f_tensor one = tensor_of(all_types[k], q + b * qi->bytes, qi->block, "w");
                g2f_error err = {0};
                if (g2f_quant_check(&one, "x", &err) != G2F_OK) continue; /* an f16 scale overflowed */
                char why[200];
                checked[k]++;
                if (!g2f_quant_consistent(all_types[k], q, b, 1, NULL, why, sizeof why) && rejected[k]++ < 3)
                    fprintf(stderr, "%s distribution %d block %llu rejected: %s\n", qi->name, dist,
                            (unsigned long long)b, why);
            }
        }
    }
    g2f_safetensors *st = open_blocks();
    for (size_t k = 0; st && k < N_TYPES; k++) {
        const g2f_tensor *b = find(g2f_safetensors_table(st), all_types[k], "blocks");
        const g2f_quant_info *qi = g2f_quant_info_of(all_types[k]);
        for (uint64_t i = 0; b && i < b->nbytes / qi->bytes; i++) {
            g2f_tensor one = tensor_of(all_types[k], b->data + i * qi->bytes, qi->block, "w");
            g2f_error err = {0};
            if (g2f_quant_check(&one, "x", &err) != G2F_OK) continue;
            checked[k]++;
            rejected[k] += !g2f_quant_consistent(all_types[k], b->data, i, 1, NULL, NULL, 0);
        }
    }
    g2f_safetensors_close(st);
    for (size_t k = 0; k < N_TYPES; k++) {
        fprintf(stderr, "%s: %zu reference blocks, %zu rejected\n", g2f_dtype_name(all_types[k]), checked[k],
                rejected[k]);
        CHECK(rejected[k] == 0 && checked[k] >= 5000);
    }
    /* forged: every type, the third of four blocks */
    for (size_t k = 0; k < N_TYPES; k++) {
        const g2f_quant_info *qi = g2f_quant_info_of(all_types[k]);
        CHECK(g2f_quant_quantize(all_types[k], x, 4 * qi->block, q));
        forge_zero_block(all_types[k], q + 2 * qi->bytes);
        float v[256];
        g2f_quant_dequantize(all_types[k], q + 2 * qi->bytes, 0, qi->block, v);
        int zero = 1;
        for (uint32_t i = 0; i < qi->block; i++) zero &= v[i] == 0;
        CHECK(zero);
        uint64_t bad = 99;
        char why[200] = "";
        CHECK(!g2f_quant_consistent(all_types[k], q, 0, 4, &bad, why, sizeof why) && bad == 2);
        CHECK_CONTAINS(why, "scale d = 65504");
        CHECK(g2f_quant_consistent(all_types[k], q, 0, 2, &bad, why, sizeof why));
    }
    free(x);
    free(q);
}

/* ---- validation ---- */

static void check_should_refuse_nonfinite_scales(void) {
    struct { g2f_dtype ty; size_t at; const char *field; uint16_t bits; } cases[] = {
        {G2F_DTYPE_Q8_0, 0, "scale d = NaN", 0x7e00},
        {G2F_DTYPE_Q4_0, 0, "scale d = -Inf", 0xfc00},
        {G2F_DTYPE_Q4_1, 2, "min m = +Inf", 0x7c00},
        {G2F_DTYPE_Q5_0, 0, "scale d = NaN", 0x7c01},
        {G2F_DTYPE_Q5_1, 2, "min m = NaN", 0xffff},
        {G2F_DTYPE_Q4_K, 2, "min scale dmin = +Inf", 0x7c00},
        {G2F_DTYPE_Q5_K, 0, "scale d = NaN", 0x7e00},
        {G2F_DTYPE_Q6_K, 208, "scale d = -Inf", 0xfc00},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const g2f_quant_info *qi = g2f_quant_info_of(cases[i].ty);
        const uint64_t n = 5 * (uint64_t)qi->block;
        unsigned char *b = calloc(5, qi->bytes);
        g2f_tensor t = tensor_of(cases[i].ty, b, n, "blk.0.ffn_up.weight");
        g2f_error err = {0};
        CHECK(g2f_quant_check(&t, "m.gguf", &err) == G2F_OK);
        unsigned char *p = b + 3 * qi->bytes + cases[i].at; /* block 3 */
        p[0] = (unsigned char)(cases[i].bits & 0xff);
        p[1] = (unsigned char)(cases[i].bits >> 8);
        CHECK(g2f_quant_check(&t, "m.gguf", &err) == G2F_ERR_FORMAT);
        char want[160];
        snprintf(want, sizeof want, "m.gguf: tensor 'blk.0.ffn_up.weight': %s block 3 (elements [%u, %u)) has %s",
                 qi->name, 3 * qi->block, 4 * qi->block, cases[i].field);
        CHECK_CONTAINS(err.msg, want);
        free(b);
    }
}

static void check_should_refuse_sizes_that_are_not_whole_blocks(void) {
    unsigned char b[34 * 4] = {0};
    g2f_tensor t = tensor_of(G2F_DTYPE_Q8_0, b, 128, "w");
    g2f_error err = {0};
    CHECK(g2f_quant_check(&t, "m.gguf", &err) == G2F_OK);
    t.numel = 100;
    CHECK(g2f_quant_check(&t, "m.gguf", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 'w': 100 elements is not a multiple of the Q8_0 block size 32");
    t.numel = 128;
    t.nbytes = 34 * 4 - 1;
    CHECK(g2f_quant_check(&t, "m.gguf", &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 'w': 135 bytes for 4 Q8_0 blocks, expected 4 x 34");
}

/* ---- GGUF files ---- */

static unsigned char *slurp_file(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len);
    *n = p && fread(p, 1, (size_t)len, fp) == (size_t)len ? (size_t)len : 0;
    fclose(fp);
    return p;
}

/* Byte offset of tensor `name`'s data in a GGUF image, via the reader. */
static size_t data_offset(const unsigned char *img, size_t n, const char *name) {
    g2f_table t;
    g2f_error err = {0};
    size_t off = 0;
    if (g2f_gguf_parse(img, n, "x", &t, &err) != G2F_OK) return 0;
    const g2f_tensor *x = g2f_table_find(&t, name);
    if (x) off = (size_t)(x->data - img);
    g2f_table_free(&t);
    return off;
}

/* Byte offset of tensor `name`'s ggml type id in the tensor info. */
static size_t type_offset(const unsigned char *img, size_t n, const char *name) {
    const size_t len = strlen(name);
    for (size_t i = 8; i + len + 8 < n; i++)
        if (img[i - 8] == len && !memcmp(img + i, name, len)) {
            uint32_t nd = img[i + len];
            return i + len + 4 + 8 * nd;
        }
    return 0;
}

static int write_variant(const char *src_rel, const char *dst, void (*edit)(unsigned char *, size_t)) {
    char src[400];
    snprintf(src, sizeof src, "%s/%s", fixtures, src_rel);
    size_t n = 0;
    unsigned char *img = slurp_file(src, &n);
    if (!img || !n) return -1;
    edit(img, n);
    int rc = write_bytes(dst, img, n);
    free(img);
    return rc;
}

static void nan_in_block_2(unsigned char *img, size_t n) {
    size_t off = data_offset(img, n, "blk.1.ffn_up.weight");
    if (off) img[off + 2 * 34] = 0x00, img[off + 2 * 34 + 1] = 0x7e; /* Q8_0 block 2's d */
}

static void model_should_refuse_a_nan_scale_when_loading_the_layer(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/nan.gguf", dir);
    CHECK(write_variant("quant/tiny_q8_0.gguf", path, nan_in_block_2) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_OK);
    if (!m) return;
    g2f_layer l;
    CHECK(g2f_model_layer_load(m, 0, &l, &err) == G2F_OK);
    g2f_layer_free(&l);
    CHECK(g2f_model_layer_load(m, 1, &l, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "nan.gguf: tensor 'blk.1.ffn_up.weight': Q8_0 block 2 (elements [64, 96)) has scale d = NaN");
    g2f_model_close(m);
}

static void to_q3_k(unsigned char *img, size_t n) {
    size_t at = type_offset(img, n, "blk.0.ffn_up.weight");
    if (at) img[at] = 11; /* Q4_K -> Q3_K: same block, 110 bytes: still inside the file */
}

static void model_should_refuse_unsupported_quantized_types_and_short_files(void) {
    char path[400];
    snprintf(path, sizeof path, "%s/q3k.gguf", dir);
    CHECK(write_variant("quant/k256_q4_k.gguf", path, to_q3_k) == 0);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "tensor 'blk.0.ffn_up.weight': dtype Q3_K is not F32, F16, BF16 or F64 nor a quantized type");
    /* the last tensor's blocks cut short: the reader checks blocks x block bytes against the file */
    char src[400];
    snprintf(src, sizeof src, "%s/quant/tiny_q4_0.gguf", fixtures);
    size_t n = 0;
    unsigned char *img = slurp_file(src, &n);
    CHECK(img && n > 64);
    snprintf(path, sizeof path, "%s/short.gguf", dir);
    CHECK(img && write_bytes(path, img, n - 40) == 0);
    free(img);
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "run past the end of the file");
    /* ggml's rule: a row (ne[0]) is whole blocks; 64-wide rows cannot be Q4_K */
    snprintf(path, sizeof path, "%s/q4k_rows.gguf", dir);
    CHECK(write_variant("quant/tiny_q4_0.gguf", path, to_q3_k) == 0); /* ne[0] = 64, type Q3_K (block 256) */
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "ne[0] = 64 is not a multiple of the Q3_K block size 256");
}

/* ---- diff, inspect, verify ---- */

typedef struct qcase {
    const char *checkpoint, *gguf, *reference;
    g2f_dtype type;
} qcase;

static const qcase qcases[] = {
    {"tiny", "quant/tiny_q8_0.gguf", "tiny_tanh.safetensors", G2F_DTYPE_Q8_0},
    {"tiny", "quant/tiny_q4_0.gguf", "tiny_tanh.safetensors", G2F_DTYPE_Q4_0},
    {"tiny", "quant/tiny_q4_1.gguf", "tiny_tanh.safetensors", G2F_DTYPE_Q4_1},
    {"tiny", "quant/tiny_q5_0.gguf", "tiny_tanh.safetensors", G2F_DTYPE_Q5_0},
    {"tiny", "quant/tiny_q5_1.gguf", "tiny_tanh.safetensors", G2F_DTYPE_Q5_1},
    {"quant/k256", "quant/k256_q4_k.gguf", "quant/k256_tanh.safetensors", G2F_DTYPE_Q4_K},
    {"quant/k256", "quant/k256_q5_k.gguf", "quant/k256_tanh.safetensors", G2F_DTYPE_Q5_K},
    {"quant/k256", "quant/k256_q6_k.gguf", "quant/k256_tanh.safetensors", G2F_DTYPE_Q6_K},
};
#define N_QCASES (sizeof qcases / sizeof qcases[0])

/* tiny's GGUF exports hold the FFN, ln_2 and wte only: diffed --only ffn
 * against tiny; k256 holds no more than its exports, so everything. */
static g2f_diff_scope scope_of(const char *checkpoint) {
    return strcmp(checkpoint, "tiny") ? G2F_DIFF_SCOPE_ALL : G2F_DIFF_SCOPE_FFN;
}

static g2f_status diff_paths(const char *a_path, const char *b_path, g2f_diff_scope scope, g2f_diff_result *r,
                             g2f_error *err) {
    g2f_model *a = NULL, *b = NULL;
    g2f_status s = g2f_model_open(a_path, NULL, &a, err);
    if (s == G2F_OK) s = g2f_model_open(b_path, NULL, &b, err);
    if (s == G2F_OK) s = g2f_diff_run_scoped(a, b, scope, r, err);
    g2f_model_close(a);
    g2f_model_close(b);
    return s;
}

static void diff_should_name_each_quantized_type(void) {
    for (size_t i = 0; i < N_QCASES; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/%s", fixtures, qcases[i].checkpoint);
        snprintf(b, sizeof b, "%s/%s", fixtures, qcases[i].gguf);
        g2f_diff_result r;
        g2f_error err = {0};
        g2f_diff_scope scope = scope_of(qcases[i].checkpoint);
        CHECK(diff_paths(a, b, scope, &r, &err) == G2F_OK);
        if (!r.tensors) {
            fprintf(stderr, "%s: %s\n", qcases[i].gguf, err.msg);
            continue;
        }
        /* the weights, and wte (quantized too) when everything is compared */
        CHECK(!r.equivalent && !r.all_accepted && r.differing == 2 * r.n_layers + (scope == G2F_DIFF_SCOPE_ALL));
        CHECK(scope != G2F_DIFF_SCOPE_ALL ||
              (r.ends[G2F_END_WTE].kind == G2F_DIFF_QUANTIZED && r.ends[G2F_END_WTE].quant == qcases[i].type));
        for (size_t L = 0; L < r.n_layers; L++)
            for (int k = 0; k < G2F_FFN_TENSORS; k++) {
                const g2f_diff_tensor *t = &r.tensors[L][k];
                if (k == G2F_FFN_FC_B || k == G2F_FFN_PROJ_B) {
                    CHECK(t->kind == G2F_DIFF_IDENTICAL && t->equivalent); /* biases stay F32 */
                    continue;
                }
                if (t->kind != G2F_DIFF_QUANTIZED || t->quant != qcases[i].type) {
                    fprintf(stderr, "%s layer %zu %s: verdict %s\n", qcases[i].gguf, L, g2f_model_tensor_role(k),
                            g2f_diff_kind_name(t->kind));
                    check_failures++;
                    continue;
                }
                CHECK(!t->equivalent && t->accept_class == G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED && !t->accepted);
                CHECK(t->bound_ratio > 0.3 && t->bound_ratio <= 1 && t->max_steps > 0.3);
                if (t->quant == G2F_DTYPE_Q8_0 || t->quant == G2F_DTYPE_Q4_1 || t->quant == G2F_DTYPE_Q5_1)
                    CHECK(t->max_steps < 0.6); /* half a step, plus the f16 scale's rounding */
            }
        g2f_diff_accept(&r, G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
        CHECK(r.all_accepted && r.accepted == r.differing && r.tensors[0][0].accepted);
        g2f_diff_result_free(&r);
    }
    unsigned c = 99;
    CHECK(g2f_diff_accept_parse("weights_quantized", &c) && c == G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
    CHECK(!g2f_diff_accept_parse("weights_quantised", &c) && c == G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
    CHECK(!strcmp(g2f_diff_accept_name(G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED), "weights_quantized"));
}

/* Q4_0 block 5: two codes move by 8 steps, in a byte without code 0 (the
 * block's largest |value|), so the block stays one the reference quantizer
 * could write: the values are wrong, not the scale. */
static void tamper(unsigned char *img, size_t n) {
    size_t off = data_offset(img, n, "blk.2.ffn_down.weight");
    unsigned char *q = img + off + 18 * 5 + 2;
    for (int j = 0; off && j < 16; j++)
        if ((q[j] & 0x0f) && (q[j] & 0xf0)) {
            q[j] ^= 0x88;
            return;
        }
}

static void diff_should_call_a_tampered_file_different(void) {
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/tiny", fixtures);
    snprintf(b, sizeof b, "%s/tampered.gguf", dir);
    CHECK(write_variant("quant/tiny_q4_0.gguf", b, tamper) == 0);
    g2f_diff_result r;
    g2f_error err = {0};
    CHECK(diff_paths(a, b, G2F_DIFF_SCOPE_FFN, &r, &err) == G2F_OK);
    if (!r.tensors) return;
    if (r.tensors[2][G2F_FFN_PROJ_W].kind != G2F_DIFF_DIFFERENT)
        fprintf(stderr, "tampered: %s\n", g2f_diff_kind_name(r.tensors[2][G2F_FFN_PROJ_W].kind));
    CHECK(r.tensors[2][G2F_FFN_PROJ_W].kind == G2F_DIFF_DIFFERENT && !r.tensors[2][G2F_FFN_PROJ_W].accept_class);
    CHECK(r.tensors[2][G2F_FFN_FC_W].kind == G2F_DIFF_QUANTIZED);
    g2f_diff_accept(&r, G2F_DIFF_ACCEPT_WEIGHTS_QUANTIZED);
    CHECK(!r.all_accepted && r.accepted == r.differing - 1);
    g2f_diff_result_free(&r);
}

static char out_text[1 << 17];
static g2f_dtype forge_type;

/* Every block of every layer's ffn_up / ffn_down forged to decode to 0 with
 * d = 65504 (forge_zero_block). */
static void forge_ffn(unsigned char *img, size_t n) {
    const g2f_quant_info *qi = g2f_quant_info_of(forge_type);
    for (int L = 0; L < 64; L++)
        for (int k = 0; k < 2; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", L, k ? "ffn_down" : "ffn_up");
            size_t off = data_offset(img, n, name);
            if (!off) continue;
            g2f_table t;
            g2f_error err = {0};
            if (g2f_gguf_parse(img, n, "x", &t, &err) != G2F_OK) return;
            uint64_t blocks = g2f_table_find(&t, name)->numel / qi->block;
            g2f_table_free(&t);
            for (uint64_t b = 0; b < blocks; b++) forge_zero_block(forge_type, img + off + b * qi->bytes);
        }
}


static int run(const char *args) {
    char cmd[1600], p[400];
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s/out.txt' 2> '%s/err.txt'", cli, args, dir, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    FILE *fp = fopen(p, "rb");
    size_t got = fp ? fread(out_text, 1, sizeof out_text - 1, fp) : 0;
    out_text[got] = '\0';
    if (fp) fclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void cli_should_report_quantized_checkpoints(void) {
    char args[1200];
    for (size_t i = 0; i < N_QCASES; i++) {
        const char *name = g2f_dtype_name(qcases[i].type);
        char want[64];
        /* diff: not equivalent by default, accepted with --accept weights_quantized */
        snprintf(args, sizeof args, "diff '%s/%s' '%s/%s'", fixtures, qcases[i].checkpoint, fixtures, qcases[i].gguf);
        CHECK(run(args) == 1);
        snprintf(want, sizeof want, "quantized:%s (", name);
        CHECK_CONTAINS(out_text, want);
        snprintf(args, sizeof args, "diff '%s/%s' '%s/%s' --accept weights_quantized --json -%s", fixtures,
                 qcases[i].checkpoint, fixtures, qcases[i].gguf,
                 scope_of(qcases[i].checkpoint) == G2F_DIFF_SCOPE_FFN ? " --only ffn" : "");
        CHECK(run(args) == 0);
        CHECK_CONTAINS(out_text, "\"status\":\t\"accepted\"");
        CHECK_CONTAINS(out_text, "\"accepted_as\":\t\"weights_quantized\"");
        snprintf(want, sizeof want, "\"verdict\":\t\"quantized:%s\"", name);
        CHECK_CONTAINS(out_text, want);
        /* inspect: the type, never a float dtype */
        snprintf(args, sizeof args, "inspect '%s/%s' --json -", fixtures, qcases[i].gguf);
        CHECK(run(args) == 0);
        snprintf(want, sizeof want, "\"dtype\":\t\"%s\"", name);
        CHECK_CONTAINS(out_text, want);
        snprintf(args, sizeof args, "inspect '%s/%s'", fixtures, qcases[i].gguf);
        CHECK(run(args) == 0);
        snprintf(want, sizeof want, "(a GGUF file, %s,", name);
        CHECK_CONTAINS(out_text, want);
        /* verify against the float reference: loads, runs, does not match (exit 1, not 2); one
         * layer, two types, since a failing layer's diagnosis is the slow part */
        if (qcases[i].type != G2F_DTYPE_Q8_0 && qcases[i].type != G2F_DTYPE_Q6_K) continue;
        snprintf(args, sizeof args, "verify '%s/%s' '%s/%s' --layers 0", fixtures, qcases[i].gguf, fixtures,
                 qcases[i].reference);
        CHECK(run(args) == 1);
        CHECK_CONTAINS(out_text, "result: FAIL (1 compared, 1 failed");
    }
    /* a reference computed with Q8_0 ... Q5_1 weights matches the GGUF of the same quantization */
    static const char *const basic[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "verify '%s/quant/tiny_%s.gguf' '%s/quant/weights_quantized_%s.safetensors'",
                 fixtures, basic[i], fixtures, basic[i]);
        CHECK(run(args) == 0);
    }
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/quant/weights_quantized_q8_0.safetensors' --layers 1", fixtures,
             fixtures);
    CHECK(run(args) == 1); /* a llama.cpp-style reference against the float checkpoint */
    snprintf(args, sizeof args, "diff '%s/tiny' '%s/quant/tiny_q8_0.gguf' --accept weights", fixtures, fixtures);
    CHECK(run(args) == 2);
    snprintf(args, sizeof args, "inspect '%s/nan.gguf'", dir);
    CHECK(run(args) == 2); /* the NaN scale of model_should_refuse_a_nan_scale_when_loading_the_layer */
}

/* blk.0.ffn_up.weight of k256_q4_k.gguf re-encoded from the original
 * values (k256's c_fc, its column j is ffn_up's row j, one block) with 3x
 * ggml's super-block scale: codes round((x + dmin m_j) / (3 d sc_j)), so
 * every value is within half of its own (3x) step of the original, and the
 * block still ties its scale to its codes. The file's own bound accepts
 * that; ggml's rounding of the original is 3x finer. */
static void coarse_q4k(unsigned char *img, size_t n) {
    char path[400];
    snprintf(path, sizeof path, "%s/quant/k256/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    size_t off = data_offset(img, n, "blk.0.ffn_up.weight");
    if (!off || g2f_safetensors_open(path, &st, &err) != G2F_OK) return;
    const g2f_tensor *w = g2f_table_find(g2f_safetensors_table(st), "transformer.h.0.mlp.c_fc.weight"); /* [256, 512] */
    float *a = malloc(256 * 512 * sizeof *a);
    g2f_tensor_read_f32(w, 0, 256 * 512, a);
    for (int j = 0; j < 512; j++) {
        unsigned char *b = img + off + (size_t)j * 144;
        const float d3 = 3 * g2f_f16_to_f32((uint16_t)(b[0] | b[1] << 8)), dmin = g2f_f16_to_f32((uint16_t)(b[2] | b[3] << 8));
        put_f16(b, d3);
        for (int i = 0; i < 256; i++) {
            const int sub = i / 32, ch = i / 64, hi = (i / 32) & 1;
            const unsigned char *sc = b + 4;
            int s, m;
            if (sub < 4) s = sc[sub] & 63, m = sc[sub + 4] & 63;
            else s = (sc[sub + 4] & 0xF) | ((sc[sub - 4] >> 6) << 4), m = (sc[sub + 4] >> 4) | ((sc[sub] >> 6) << 4);
            long q = s ? lround((a[i * 512 + j] + dmin * (float)m) / (g2f_f16_to_f32(g2f_f32_to_f16(d3)) * (float)s)) : 0;
            q = q < 0 ? 0 : q > 15 ? 15 : q;
            unsigned char *byte = b + 16 + 32 * ch + (i % 32);
            *byte = (unsigned char)(hi ? (*byte & 0x0F) | q << 4 : (*byte & 0xF0) | q);
        }
    }
    free(a);
    g2f_safetensors_close(st);
}

/* diff's bound is ggml's rounding of the original's values, never the
 * quantized file's own scale: the coarse port above is within its own
 * bound (on main: quantized:Q4_K, accepted) but not within ggml's. */
static void diff_bound_should_come_from_the_original(void) {
    char path[400], args[1200];
    snprintf(path, sizeof path, "%s/coarse_q4k.gguf", dir);
    CHECK(write_variant("quant/k256_q4_k.gguf", path, coarse_q4k) == 0);
    size_t n = 0;
    unsigned char *img = slurp_file(path, &n);
    size_t off = img ? data_offset(img, n, "blk.0.ffn_up.weight") : 0;
    CHECK(off && g2f_quant_consistent(G2F_DTYPE_Q4_K, img + off, 0, 512, NULL, NULL, 0)); /* not a forged scale */
    float step_file[256], bound_file[256];
    if (off) g2f_quant_bounds(G2F_DTYPE_Q4_K, img + off, 0, 256, step_file, bound_file);
    CHECK(off && step_file[0] > 0);
    free(img);
    g2f_diff_result r;
    g2f_error err = {0};
    char a[400];
    snprintf(a, sizeof a, "%s/quant/k256", fixtures);
    CHECK(diff_paths(a, path, G2F_DIFF_SCOPE_ALL, &r, &err) == G2F_OK);
    if (r.tensors) {
        const g2f_diff_tensor *t = &r.tensors[0][G2F_FFN_FC_W];
        if (t->kind != G2F_DIFF_DIFFERENT) fprintf(stderr, "coarse Q4_K: %s\n", g2f_diff_kind_name(t->kind));
        CHECK(t->kind == G2F_DIFF_DIFFERENT && !t->accept_class);
        CHECK(r.tensors[0][G2F_FFN_PROJ_W].kind == G2F_DIFF_QUANTIZED); /* the untouched one */
        g2f_diff_result_free(&r);
    }
    snprintf(args, sizeof args, "diff '%s/quant/k256' '%s' --accept weights_quantized", fixtures, path);
    CHECK(run(args) == 1);
}

/* The attack of issue 23 on every type: a GGUF whose FFN blocks decode to
 * 0 but carry d = 65504 claims an error bound of 32752 per weight. verify
 * --accept weights_quantized and diff --accept weights_quantized must not
 * pass it (on main both exit 0 for Q8_0 ... Q5_0, diff for every type), and
 * the diagnosis names the inconsistent block instead of weights_quantized. */
static void forged_scales_should_never_be_accepted(void) {
    char args[1600], path[400], want[160];
    for (size_t i = 0; i < N_QCASES; i++) {
        const char *name = g2f_dtype_name(qcases[i].type);
        forge_type = qcases[i].type;
        snprintf(path, sizeof path, "%s/forged_%s.gguf", dir, name);
        CHECK(write_variant(qcases[i].gguf, path, forge_ffn) == 0);
        snprintf(args, sizeof args, "verify '%s' '%s/%s' --layers 0 --accept weights_quantized", path, fixtures,
                 qcases[i].reference);
        int rc = run(args);
        if (rc != 1) fprintf(stderr, "%s: verify --accept weights_quantized exits %d\n", name, rc);
        CHECK(rc == 1);
        CHECK_CONTAINS(out_text, "result: FAIL (1 compared, 1 failed");
        snprintf(want, sizeof want, "weights_quant_inconsistent:%s", name);
        CHECK_CONTAINS(out_text, want);
        CHECK_CONTAINS(out_text, "c_fc.weight block 0 (elements [0, ");
        CHECK(!strstr(out_text, "weights_quantized:") && !strstr(out_text, "reproduced with weights quantized"));
        if (i == 0) { /* the JSON and HTML reports say the same */
            char html[400];
            snprintf(html, sizeof html, "%s/forged.html", dir);
            snprintf(args, sizeof args, "verify '%s' '%s/%s' --layers 0 --html '%s' --json -", path, fixtures,
                     qcases[i].reference, html);
            CHECK(run(args) == 1);
            CHECK_CONTAINS(out_text, "\"diagnosis\":\t[\"weights_quant_inconsistent:Q8_0\"]");
            CHECK_CONTAINS(out_text, "\"margin\":\tnull");
            CHECK_CONTAINS(out_text, "c_fc.weight block 0 (elements [0, 32))");
            size_t hn = 0;
            unsigned char *page = slurp_file(html, &hn);
            char *text = page ? calloc(1, hn + 1) : NULL;
            if (text) memcpy(text, page, hn);
            CHECK_CONTAINS(text, "weights_quant_inconsistent:Q8_0");
            CHECK_CONTAINS(text, "read from the checkpoint's blocks: scale d = 65504 but its largest |code| is 0");
            free(text);
            free(page);
        }
        const char *only = scope_of(qcases[i].checkpoint) == G2F_DIFF_SCOPE_FFN ? " --only ffn" : "";
        snprintf(args, sizeof args, "diff '%s/%s' '%s' --accept weights_quantized%s", fixtures, qcases[i].checkpoint,
                 path, only);
        rc = run(args);
        if (rc != 1) fprintf(stderr, "%s: diff --accept weights_quantized exits %d\n", name, rc);
        CHECK(rc == 1);
        snprintf(want, sizeof want, "quant_inconsistent:%s", name);
        CHECK_CONTAINS(out_text, want);
        CHECK_CONTAINS(out_text, "block 0 (elements [0, ");
        snprintf(args, sizeof args, "diff '%s/%s' '%s' --accept weights_quantized --json -%s", fixtures,
                 qcases[i].checkpoint, path, only);
        CHECK(run(args) == 1);
        CHECK_CONTAINS(out_text, "\"status\":\t\"different\"");
        snprintf(want, sizeof want, "\"verdict\":\t\"quant_inconsistent:%s\"", name);
        CHECK_CONTAINS(out_text, want);
    }
}

/* Q4_1 / Q5_1 of values whose min is large beside their spread (8 + 0.0005 noise): the stored min's
 * f16 rounding is known exactly from the values, so a block with its two halves swapped (codes 0
 * and the top still there, consistent) is beyond the bound; with the worst case of the min's
 * rounding (23 steps here) it was within, and diff ACCEPTED it. The block as quantized is within. */
static void a_scrambled_block_with_a_large_min_should_be_beyond_the_bound(void) {
    static const g2f_dtype types[2] = {G2F_DTYPE_Q4_1, G2F_DTYPE_Q5_1};
    float x[32], deq[32], step[32], bound[32];
    uint64_t seed = 7;
    for (int i = 0; i < 32; i++) x[i] = 8.0f + 0.0005f * (2 * rnd_unit(&seed) - 1);
    for (int k = 0; k < 2; k++) {
        unsigned char blk[64], swapped[64];
        const g2f_quant_info *qi = g2f_quant_info_of(types[k]);
        CHECK(g2f_quant_quantize(types[k], x, 32, blk));
        CHECK(g2f_quant_bounds_of_values(types[k], x, 32, step, bound));
        g2f_quant_dequantize(types[k], blk, 0, 32, deq);
        int within = 1;
        for (int i = 0; i < 32; i++) within &= fabs((double)x[i] - deq[i]) <= bound[i];
        CHECK(within);
        memcpy(swapped, blk, qi->bytes); /* element j <-> j + 16: low and high nibbles of each byte */
        size_t q0 = qi->bytes - 16;
        for (size_t b = 0; b < 16; b++) swapped[q0 + b] = (unsigned char)(blk[q0 + b] >> 4 | blk[q0 + b] << 4);
        if (types[k] == G2F_DTYPE_Q5_1) { /* the fifth bits: the two halves of qh swapped too */
            uint32_t qh;
            memcpy(&qh, blk + 4, 4);
            qh = qh >> 16 | qh << 16;
            memcpy(swapped + 4, &qh, 4);
        }
        g2f_quant_dequantize(types[k], swapped, 0, 32, deq);
        within = 1;
        for (int i = 0; i < 32; i++) within &= fabs((double)x[i] - deq[i]) <= bound[i];
        CHECK(!within);
    }
}

int main(int argc, char **argv) {
    fixtures = argc > 1 ? argv[1] : "fixtures";
    cli = argc > 2 ? argv[2] : "build/gpt2ffn";
    if (make_tmpdir(dir, sizeof dir, "quant") != 0) return 1;
    RUN(quant_should_describe_ggml_types);
    RUN(dequantize_should_equal_python_bit_for_bit);
    RUN(quantizers_should_equal_python_bit_for_bit);
    RUN(roundtrip_cols_should_quantize_along_columns);
    RUN(dequantize_should_match_hand_computed_blocks);
    RUN(bounds_should_hold_for_reference_quantized_data);
    RUN(consistency_should_accept_every_reference_block_and_no_forged_one);
    RUN(check_should_refuse_nonfinite_scales);
    RUN(check_should_refuse_sizes_that_are_not_whole_blocks);
    RUN(model_should_refuse_a_nan_scale_when_loading_the_layer);
    RUN(model_should_refuse_unsupported_quantized_types_and_short_files);
    RUN(diff_should_name_each_quantized_type);
    RUN(diff_should_call_a_tampered_file_different);
    RUN(cli_should_report_quantized_checkpoints);
    RUN(forged_scales_should_never_be_accepted);
    RUN(diff_bound_should_come_from_the_original);
    RUN(a_scrambled_block_with_a_large_min_should_be_beyond_the_bound);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
