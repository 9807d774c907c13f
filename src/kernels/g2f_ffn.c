/* g2f_ffn: FFN kernels.
 *
 * The fast matmul packs blocks of A and B and runs a register-tiled
 * micro-kernel over them, chosen at run time (kern_of): 12 x 32 with
 * AVX-512 (g2f_simd_avx512.c), 6 x 16 with AVX2 + FMA, a portable C 6 x 16
 * tile otherwise; GPT2FFN_ISA caps the choice. Goto's loop order: for each
 * block of columns the threads pack B together once, then take row blocks
 * of A each. k is never split between threads and the depth blocking is
 * the same on every machine, so every output element is summed in the same
 * order whatever the number of threads, the tile shape or the caches:
 * bitwise identical results (the AVX-512 and AVX2 tiles too: one FMA per
 * term in k order; test_ffn_bits pins the bits).
 *
 * Blocking:
 *   KC = 256:  a B micro-panel (KC x 16 or 32 floats, 16 or 32 KiB) stays in
 *              L1 while a tile's accumulators live in registers; fixed,
 *              since it is where each sum is cut (C += one depth block's sum);
 *   mc:        a thread's packed A block (mc x 256) in a quarter of the L2
 *              read at run time (g2f_cpu_features), between 48 and 192 rows
 *              (96 KiB to 192 KiB on today's 512 KiB - 2 MiB L2s);
 *   NC:        the shared packed B column block is k x NC floats, packed at
 *              once so that a column block costs two barriers, with NC as
 *              wide as fits in half the L3 (between 2 and 16 MiB; 512 to
 *              2048 columns, the blocks of a matrix made equal). Every
 *              column block repacks A, so wider blocks pack A less often;
 *              measured against a fixed NC of 512, calls alternating in one
 *              process, 4-7% faster on 2 threads (1024 tokens) and 5-12% at
 *              64 tokens. Each depth step reads KC x NC of it from L2/L3.
 * Few rows (m <= mc, Conv1D B): B is not packed ahead but read where it
 *   lies, each panel by the one task that uses it (matmul_direct); A is
 *   packed once for all. bench-ab against packing B (2 threads, an Intel
 *   Xeon with AVX-512 on a busy host): 1.6x at d 768 and 2.1x at d 1600 for
 *   64 tokens, 1.7x at d 1600 for 128; the same bits.
 *   With AVX-512 (without AMX, and while all of packed A fits in
 *   A_SHARED_MAX), more rows take that path too, in row blocks of mc_direct
 *   rows whose tasks each read their panels of B again (from memory or
 *   L3, copied into L1 with the fetches spread over the tiles as below):
 *   no packing of B and no barrier before the first FMA. bench-ab against
 *   matmul_goto (2 threads, AMD EPYC Zen 5 with AVX-512, a busy PVM
 *   guest): 1.02x at d 768 and 1.05x at d 1600 for 1024 tokens, 1.10x at
 *   d 1600 for 512, 1.14x at d 768 for 256; 0.99x on one thread; the same
 *   bits. The AVX2 tile reads B in place and loses there (0.77x at d 768
 *   for 1024 tokens): it keeps matmul_goto.
 *   Edge tiles of at most 4 or 8 rows do only their rows' FMAs (64 tokens:
 *   5 x 12 + 4 rows): bench-ab 1.04-1.05x at 64 tokens.
 *   With AVX-512 each panel is copied into a thread's own KC x 32 buffer
 *   (by its first tile, below), from L2, where the tiles of the panel
 *   three before fetched it a row every few depth steps (direct_fetch): in
 *   place its rows lie one row of B apart (25.6 KB for c_fc of GPT-2 XL),
 *   so they fall into 4 to 16 of L1's 64 sets, the 32 KiB panel cannot stay
 *   in L1 and every tile read it from L2 again (perf: half of the tile's
 *   time stalled on its B loads). `gpt2ffn run` of GPT-2 XL's FFN at 64
 *   tokens per layer, whole processes interleaved (2 threads, Intel Xeon
 *   with AVX-512): 0.66 s against 0.90 s read in place, the same bits. The
 *   AVX2 path reads in place, its first tile fetching the next panel into
 *   L2: the copy measured 0.99-1.05 s against 0.84 s there (the same
 *   Xeon, GPT2FFN_ISA=avx2). Tried and left out: the copy fetching the
 *   panel two ahead into L1 in one burst (the spread fetch is 0.94x its
 *   time), prefetches into L1 spread over all of a panel's tiles (0.75-0.80 s
 *   against 0.66 s), the task's panels packed per depth block (0.75 s), its
 *   next depth block's rows fetched into L2 row by row over the tiles
 *   (1.02-1.05x the burst). The copy is no pass of its own: the panel's
 *   first tile reads it in place and stores each row into the buffer as it
 *   loads it (g2f_simd512_tile_pack; two stores a depth step beside 24
 *   FMAs), the other tiles read the buffer. bench-ab against the copy (2
 *   threads, AMD EPYC Zen 5): 1.04x at d 768 and 1.05x at d 1600 for 64
 *   tokens, 1.02x for 1024; the same bits.
 * Packing: B rows are copied in 64-byte pieces with a prefetch a few rows
 * ahead (the weights come from memory, once per call); A and Linear B are
 * transposed 8 x 8 in registers (g2f_simd_pack_cols; rows 8-11 of a
 * 12-row A panel 4 x 4, g2f_simd_pack_cols4). c_fc's epilogue storing act
 * as c_proj's packed A instead (no pass over act) measured 1.00x (bench-ab,
 * AMD EPYC Zen 5): its scattered stores cost what the pass did.
 * The epilogue (bias; for c_fc then GELU into act) runs on each tile of the
 * last depth block before it leaves the registers, instead of a pass over
 * the hidden buffer (alternating calls: within 1% of a pass per row block
 * while in L2; the GELU's arithmetic, not memory, is its cost); the AVX-512
 * tile streams act's aligned rows past the caches (put_act), so each
 * thread fences before the barrier that ends a product. When the shared B
 * buffer cannot be allocated, independent (MB x NB) tasks with their own
 * packing give the same results.
 * One token (m = 1) is a matrix-vector product limited by memory bandwidth:
 * it streams the weights once, front to back: Conv1D weights in 8 fixed
 * slices of rows, eight rows per pass over the partial sums
 * (g2f_simd_axpy_rows); Linear weights as dot products (g2f_simd_gemv_dots).
 */
#include "g2f_ffn.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "g2f_gelu_deriv.h"
#include "g2f_gelu_math.h"
#include "g2f_cpu.h"
#include "g2f_simd.h"
#include "g2f_tensor.h"

#define KC 256
#define NC_MIN 512
#define NC_MAX 2048
#define PREFETCH_ROWS 4
#define MB 96
#define NB 128

static int simd_ok(void) { return g2f_cpu_features()->avx2_fma; }

enum { ISA_PORTABLE, ISA_AVX2, ISA_AVX512 };

/* The kernel path and its blocking, from the CPU (g2f_cpu_features, fixed
 * for the process): the tile of the instruction set, the rows of a
 * thread's packed A block and the bytes of the shared packed B column
 * block from the caches. Only KC never changes: it is where a sum is cut
 * into depth blocks (C += one block's sum), so it fixes the bits, which
 * must be the same on every machine; the rest only decides who computes
 * which whole sum when. */
typedef struct kern {
    int isa;
    size_t mr, nr;   /* the tile */
    size_t mc;       /* rows of a thread's A block */
    size_t mc_direct; /* rows of a row block on matmul_direct's path, when more than mc */
    size_t task_panels; /* at most this many B panels in a column task of such a row block */
    size_t nc_bytes; /* the shared B column block */
    int amx;         /* sums of squares on the AMX tile unit (g2f_amx_sq) */
    int dpbf;        /* sums of squares with VDPBF16PS (g2f_dpbf_tile): their panels as bfloat16 pairs */
} kern;

static kern kern_of(const g2f_cpu *c) {
    kern k = {ISA_PORTABLE, G2F_MR, G2F_NR, 96, 192, 1, (size_t)16 << 20, 0, 0};
    if (c->avx2_fma) k.isa = ISA_AVX2;
    if (c->avx2_fma && c->avx512f) k.isa = ISA_AVX512, k.mr = G2F_MR512, k.nr = G2F_NR512;
    k.amx = k.isa == ISA_AVX512 && c->amx_bf16;
    k.dpbf = k.isa == ISA_AVX512 && !k.amx && c->dpbf16;
    /* A block (mc x KC) in a quarter of the L2, the rest for the B panels
     * streaming through and C; at most 192 rows, so that 1024 tokens still
     * make 6 row blocks to share out (a wider row block splits the columns
     * instead, and each part packs its A again) */
    size_t l2 = c->l2 ? c->l2 : (size_t)512 << 10, mc = l2 / 4 / (KC * sizeof(float));
    mc = mc < 48 ? 48 : mc > 192 ? 192 : mc;
    k.mc = mc / 24 * 24; /* whole 6-, 8- and 12-row panels */
    /* matmul_direct's row blocks (B not packed: each row block reads it
     * again) twice as tall: 1024 tokens, 2 threads, 1 MiB L2 (bench-ab
     * against mc rows): 1.02x at d 768, 1.07x at d 1600; 264 rows alike,
     * 516 and 576 rows 0.93-0.98x */
    k.mc_direct = 2 * k.mc;
    /* such a task's C block (mc_direct rows, added to at every depth step)
     * in half the L2, beside the row block's A: GPT-2 XL's c_fc at 1024
     * tokens had 34 panels a task, 1.6 MiB of C in a 1 MiB L2 (bench-ab
     * with the split of the last row block below, 2 threads, AMD EPYC Zen
     * 5: 1.05x at d 1600, 1.02x at 512 tokens) */
    k.task_panels = l2 / 2 / (k.mc_direct * k.nr * sizeof(float));
    if (k.task_panels < 1) k.task_panels = 1;
    /* the B column block in half the L3 (shared with the other cores and
     * the A blocks), between 2 and 16 MiB */
    size_t l3 = c->l3 ? c->l3 : (size_t)32 << 20, nb = l3 / 2;
    k.nc_bytes = nb < ((size_t)2 << 20) ? (size_t)2 << 20 : nb > ((size_t)16 << 20) ? (size_t)16 << 20 : nb;
    return k;
}

const char *g2f_ffn_isa(void) {
    static const char *const names[] = {"portable", "avx2", "avx512"};
    kern kn = kern_of(g2f_cpu_features());
    return kn.amx ? "amx" : kn.dpbf ? "avx512_bf16" : names[kn.isa];
}

int g2f_ffn_squares_bf16(void) {
    kern kn = kern_of(g2f_cpu_features());
    return kn.amx || kn.dpbf;
}

static const char *const gelu_names[] = {"tanh", "erf", "sigmoid", "mlx_approx", "f16_table"};
_Static_assert(sizeof gelu_names / sizeof gelu_names[0] == G2F_GELU_COUNT, "one name per GELU form");

const char *g2f_gelu_name(g2f_gelu g) { return (unsigned)g < G2F_GELU_COUNT ? gelu_names[g] : "?"; }

int g2f_gelu_from_name(const char *name, g2f_gelu *out) {
    for (int g = 0; g < G2F_GELU_COUNT; g++)
        if (name && strcmp(name, gelu_names[g]) == 0) {
            *out = (g2f_gelu)g;
            return 1;
        }
    return 0;
}

g2f_gelu g2f_gelu_other(g2f_gelu g) { return g == G2F_GELU_TANH ? G2F_GELU_ERF : G2F_GELU_TANH; }

const char *g2f_layout_name(g2f_layout l) {
    return l == G2F_LAYOUT_LINEAR ? "Linear [out, in]" : "Conv1D [in, out]";
}

/* Double precision, rounded once: within 1 ulp of the correctly rounded GELU
 * (test_gelu measures it), where float formulas lose tens of ulp to the
 * cancellation in 1 + tanh(u) for negative x. */
float g2f_gelu_tanh(float x) { return x != x ? x : (float)g2f_gelu_tanh_d(x); }
float g2f_gelu_erf(float x) { return x != x ? x : (float)g2f_gelu_erf_d(x); }
float g2f_gelu_sigmoid(float x) { return x != x ? x : (float)g2f_gelu_sigmoid_d(x); }
float g2f_gelu_mlx(float x) { return x != x ? x : (float)g2f_gelu_mlx_d(x); }

/* ggml_gelu_f32 as the table is filled (see g2f_ffn.h): float arithmetic in
 * ggml's order, the contracted fma written out (this build is ISO C and
 * never contracts on its own). */
static float gelu_ggml_f32(float x) {
    float inner = fmaf(0.044715f * x, x, 1.0f);
    return 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * inner));
}

static float round_f16(float x) { return g2f_f16_to_f32(g2f_f32_to_f16(x)); }

/* ggml_vec_gelu_f32 with GGML_GELU_FP16: the clamps, else the table entry
 * of x rounded to half (NaN falls through to the table's NaN). Computed per
 * element instead of kept as a table: no global state, and the cost (a
 * tanhf) only matters to a diagnosis that recomputes this form. */
float g2f_gelu_f16_table(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return round_f16(gelu_ggml_f32(round_f16(x)));
}

float g2f_gelu_eval(g2f_gelu g, float x) {
    switch (g) {
    case G2F_GELU_ERF: return g2f_gelu_erf(x);
    case G2F_GELU_SIGMOID: return g2f_gelu_sigmoid(x);
    case G2F_GELU_MLX: return g2f_gelu_mlx(x);
    case G2F_GELU_F16_TABLE: return g2f_gelu_f16_table(x);
    default: return g2f_gelu_tanh(x);
    }
}

/* The textbook formulas in double, for the reference kernel and tests. */
double g2f_gelu_tanh_f64(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double g2f_gelu_erf_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); }

void g2f_gelu_deriv_span(const float *x, float *g, size_t n) {
    if (g2f_cpu_features()->avx512f) g2f_simd512_gelu_deriv(x, g, n);
    else if (simd_ok()) g2f_simd_gelu_deriv(x, g, n);
    else g2f_gelu_deriv_loop(x, g, n);
}

double g2f_gelu_sigmoid_f64(double x) { return x / (1.0 + exp(-G2F_GELU_SIGMOID_K * x)); }

double g2f_gelu_mlx_f64(double x) {
    return x / (1.0 + exp(-G2F_GELU_MLX_K * x * (1.0 + G2F_GELU_MLX_C * x * x)));
}

double g2f_gelu_f16_table_f64(double x) { return g2f_gelu_f16_table((float)x); }

double g2f_gelu_eval_f64(g2f_gelu g, double x) {
    switch (g) {
    case G2F_GELU_ERF: return g2f_gelu_erf_f64(x);
    case G2F_GELU_SIGMOID: return g2f_gelu_sigmoid_f64(x);
    case G2F_GELU_MLX: return g2f_gelu_mlx_f64(x);
    case G2F_GELU_F16_TABLE: return g2f_gelu_f16_table_f64(x);
    default: return g2f_gelu_tanh_f64(x);
    }
}

double g2f_gelu_deriv(double x) {
    return 0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x);
}

/* x s(v(x)) has derivative s + x s (1 - s) v', s = sigmoid(v); s and 1 - s
 * are each formed without cancellation. */
static double deriv_sigmoid_form(double x, double v, double dv) {
    double s = 1.0 / (1.0 + exp(-v)), s1 = 1.0 / (1.0 + exp(v));
    return s + x * s * s1 * dv;
}

double g2f_gelu_deriv_of(g2f_gelu g, double x) {
    switch (g) {
    case G2F_GELU_ERF: return g2f_gelu_deriv(x);
    case G2F_GELU_SIGMOID: return deriv_sigmoid_form(x, G2F_GELU_SIGMOID_K * x, G2F_GELU_SIGMOID_K);
    case G2F_GELU_MLX:
        return deriv_sigmoid_form(x, G2F_GELU_MLX_K * x * (1.0 + G2F_GELU_MLX_C * x * x),
                                  G2F_GELU_MLX_K * (1.0 + 3.0 * G2F_GELU_MLX_C * x * x));
    default: { /* TANH, and F16_TABLE, which rounds it */
        double a = G2F_SQRT_2_OVER_PI, u = a * (x + 0.044715 * x * x * x), t = tanh(u);
        /* 1 - t^2 = 4 / (e^u + e^-u)^2, without cancellation for large |u| */
        double c = cosh(u), sech2 = 1.0 / (c * c);
        return 0.5 * (1.0 + t) + 0.5 * x * sech2 * a * (1.0 + 3.0 * 0.044715 * x * x);
    }
    }
}

float g2f_round_tf32(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7f800000u) == 0x7f800000u) { /* Inf as is; NaN quieted, never rounded into Inf */
        if (b & 0x7fffffu) b |= 0x400000u;
    } else { /* add half an ulp of TF32 (less one when the kept bit is even: ties to even), then cut */
        b += 0xfffu + ((b >> 13) & 1u);
        b &= ~(uint32_t)0x1fffu;
    }
    memcpy(&x, &b, sizeof x);
    return x;
}

void g2f_round_tf32_buf(const float *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = g2f_round_tf32(in[i]);
}

static void gelu_span(g2f_gelu g, const float *in, float *out, size_t n) {
    int simd = simd_ok();
    switch (g) {
    case G2F_GELU_TANH:
    case G2F_GELU_ERF:
        if (simd && g2f_cpu_features()->avx512f) g2f_simd512_gelu(g == G2F_GELU_ERF, in, out, n);
        else if (simd) g2f_simd_gelu(g == G2F_GELU_ERF, in, out, n);
        else
            for (size_t i = 0; i < n; i++) out[i] = g == G2F_GELU_ERF ? g2f_gelu_erf(in[i]) : g2f_gelu_tanh(in[i]);
        return;
    case G2F_GELU_SIGMOID:
    case G2F_GELU_MLX:
        if (simd) g2f_simd_gelu_sigmoid(g == G2F_GELU_MLX, in, out, n);
        else
            for (size_t i = 0; i < n; i++) out[i] = g == G2F_GELU_MLX ? g2f_gelu_mlx(in[i]) : g2f_gelu_sigmoid(in[i]);
        return;
    default:
        for (size_t i = 0; i < n; i++) out[i] = g2f_gelu_eval(g, in[i]);
        return;
    }
}

/* Packs B[k0 : k0+kc, j0 : j0+nb] as ceil(nb/NR) micro-panels of (kc x NR),
 * zero-filling columns past n. */
static void pack_b(const kern *kn, const float *b, int b_trans, size_t k, size_t n, size_t k0, size_t kc, size_t j0,
                   size_t nb, float *restrict buf) {
    const size_t NR = kn->nr;
    size_t panels = (nb + NR - 1) / NR;
    if (!b_trans) { /* row by row: each row of B is read once, front to back */
        for (size_t kk = 0; kk < kc; kk++) {
            const float *row = b + (k0 + kk) * n + j0;
            if (kk + PREFETCH_ROWS < kc) /* the weights come from memory: ask early, a few rows ahead */
                for (size_t j = 0; j < nb; j += 16) __builtin_prefetch(row + PREFETCH_ROWS * n + j, 0, 0);
            size_t full = nb / NR;
            if (NR == G2F_NR)
                for (size_t s = 0; s < full; s++) /* a constant size: inlined as vector moves */
                    memcpy(buf + s * KC * G2F_NR + kk * G2F_NR, row + s * G2F_NR, G2F_NR * sizeof(float));
            else
                for (size_t s = 0; s < full; s++)
                    memcpy(buf + s * KC * G2F_NR512 + kk * G2F_NR512, row + s * G2F_NR512, G2F_NR512 * sizeof(float));
            if (full < panels) {
                float *dst = buf + full * KC * NR + kk * NR;
                size_t w = nb - full * NR;
                memcpy(dst, row + full * NR, w * sizeof(float));
                for (size_t jj = w; jj < NR; jj++) dst[jj] = 0.0f;
            }
        }
        return;
    }
    for (size_t s = 0; s < panels; s++) { /* Linear: column j of B is row j of the buffer */
        float *panel = buf + s * KC * NR;
        if (kn->isa != ISA_PORTABLE) { /* 8-row pieces, 8 x 8 register transposes */
            for (size_t h = 0; h < NR; h += 8) {
                size_t j = s * NR + h, rows = j >= nb ? 0 : nb - j < 8 ? nb - j : 8;
                g2f_simd_pack_cols(b + (j0 + (rows ? j : 0)) * k + k0, k, rows, kc, NR, panel + h);
            }
            continue;
        }
        for (size_t jj = 0; jj < NR; jj++) {
            size_t j = j0 + s * NR + jj;
            if (j < j0 + nb) {
                const float *src = b + j * k + k0;
                for (size_t kk = 0; kk < kc; kk++) panel[kk * NR + jj] = src[kk];
            } else {
                for (size_t kk = 0; kk < kc; kk++) panel[kk * NR + jj] = 0.0f;
            }
        }
    }
}

/* Packs A[i0 : i0+mb, k0 : k0+kc] as ceil(mb/MR) micro-panels of (kc x MR),
 * rows past mb zero; nothing outside the panels is written, so that
 * threads may pack neighbouring panels at once. */
static void pack_a(const kern *kn, const float *a, size_t k, size_t i0, size_t mb, size_t k0, size_t kc,
                   float *restrict buf) {
    const size_t MR = kn->mr;
    for (size_t p = 0; p * MR < mb; p++) {
        float *panel = buf + p * KC * MR;
        size_t rows = mb - p * MR < MR ? mb - p * MR : MR;
        const float *src = a + (i0 + p * MR) * k + k0;
        if (kn->isa != ISA_PORTABLE) { /* 8 x 8 register transposes */
            if (MR > 8) g2f_simd_pack_cols4(rows > 8 ? src + 8 * k : src, k, rows > 8 ? rows - 8 : 0, kc, MR, panel + 8);
            g2f_simd_pack_cols(src, k, rows < 8 ? rows : 8, kc, MR, panel);
            continue;
        }
        for (size_t kk = 0; kk < kc; kk++)
            for (size_t r = 0; r < MR; r++) panel[kk * MR + r] = r < rows ? src[r * k + kk] : 0.0f;
    }
}

/* The portable micro-kernel: the same tile, multiply then add. */
static void tile_c(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first) {
    enum { MR = G2F_MR, NR = G2F_NR };
    float acc[MR][NR] = {{0}};
    for (size_t kk = 0; kk < kc; kk++)
        for (size_t r = 0; r < MR; r++) {
            float av = ap[kk * MR + r];
            for (size_t j = 0; j < NR; j++) acc[r][j] += av * bp[kk * NR + j];
        }
    for (size_t r = 0; r < mr; r++)
        for (size_t j = 0; j < nr; j++) c[r * ldc + j] = first ? acc[r][j] : c[r * ldc + j] + acc[r][j];
}

typedef struct epilogue {
    const float *bias;  /* (n) or NULL */
    int gelu;           /* 0: none; else 1 + g2f_gelu */
    float *act;         /* (m, n) when gelu */
} epilogue;

static void finish_block(float *c, size_t n, size_t i0, size_t mb, size_t j0, size_t nb, const epilogue *ep) {
    for (size_t i = 0; i < mb; i++) {
        float *row = c + (i0 + i) * n + j0;
        if (ep->bias)
            for (size_t j = 0; j < nb; j++) row[j] += ep->bias[j0 + j];
        if (ep->gelu) gelu_span((g2f_gelu)(ep->gelu - 1), row, ep->act + (i0 + i) * n + j0, nb);
    }
}

/* One token. Conv1D weights (B rows contiguous): the rows are cut into
 * GEMV_SLICES fixed slices, each streamed front to back into its own partial
 * sum vector, and the partial sums are added in slice order: a fixed order
 * whatever the thread count, and every weight byte read once, sequentially.
 * Linear weights (B (n, k)): one dot product per output, rows split in
 * 64-row tasks. Returns 0 when the partial sums cannot be allocated. */
#define GEMV_SLICES 8
static int gemv(const float *a, size_t k, const float *b, int b_trans, size_t n, float *c, int n_threads) {
    (void)n_threads;
    if (b_trans) {
        long tasks = (long)((n + 63) / 64);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(g2f_threads(n_threads))
#endif
        for (long t = 0; t < tasks; t++) {
            size_t j0 = (size_t)t * 64, j1 = j0 + 64 < n ? j0 + 64 : n;
            g2f_simd_gemv_dots(a, k, b, j0, j1, c);
        }
        return 1;
    }
    size_t slices = k < GEMV_SLICES ? k : GEMV_SLICES;
    float *part = g2f_alloc_array(slices * n, sizeof(float));
    if (!part) return 0;
    long ls = (long)slices;
#ifdef _OPENMP
#pragma omp parallel num_threads(g2f_threads(n_threads))
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long q = 0; q < ls; q++) {
            size_t k0 = (size_t)q * k / slices, k1 = (size_t)(q + 1) * k / slices;
            g2f_simd_axpy_rows(a + k0, k1 - k0, b + k0 * n, n, part + (size_t)q * n);
        }
        long chunks = (long)((n + 255) / 256);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long t = 0; t < chunks; t++) {
            size_t j0 = (size_t)t * 256, j1 = j0 + 256 < n ? j0 + 256 : n;
            for (size_t j = j0; j < j1; j++) {
                float sum = part[j];
                for (size_t q = 1; q < slices; q++) sum += part[q * n + j];
                c[j] = sum;
            }
        }
    }
    free(part);
    return 1;
}

static void tile(const kern *kn, const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr,
                 size_t nr, int first) {
    if (kn->isa == ISA_AVX512) g2f_simd512_tile(ap, bp, kc, c, ldc, mr, nr, first, NULL);
    else if (kn->isa == ISA_AVX2) g2f_simd_tile(ap, bp, kc, c, ldc, mr, nr, first, NULL);
    else tile_c(ap, bp, kc, c, ldc, mr, nr, first);
}

/* The tile at C[i, j] of a depth step; the last one (last) also applies the
 * epilogue, to the SIMD tile while in registers, else to its stored rows
 * while in L1: the same float operations in the same order either way. */
static void tile_last(const kern *kn, const float *ap, const float *bp, size_t kc, float *c, size_t n, size_t i,
                      size_t j, size_t mr, size_t nr, int first, int last, const epilogue *ep) {
    float *ct = c + i * n + j;
    if (!last) {
        tile(kn, ap, bp, kc, ct, n, mr, nr, first);
        return;
    }
    if (kn->isa != ISA_PORTABLE) {
        g2f_simd_epilogue e = {ep->bias ? ep->bias + j : NULL, ep->gelu, ep->gelu ? ep->act + i * n + j : NULL, n};
        if (kn->isa == ISA_AVX512) g2f_simd512_tile(ap, bp, kc, ct, n, mr, nr, first, &e);
        else g2f_simd_tile(ap, bp, kc, ct, n, mr, nr, first, &e);
        return;
    }
    tile_c(ap, bp, kc, ct, n, mr, nr, first);
    finish_block(c, n, i, mr, j, nr, ep);
}

void g2f_ffn_ws_free(g2f_ffn_ws *ws) {
    if (!ws) return;
    free(ws->buf);
    free(ws->f16_gelu);
    ws->buf = ws->f16_gelu = NULL;
    ws->cap = 0;
}

/* A 64-byte aligned buffer of n floats: ws's, grown when too small, or
 * without ws a fresh one that the caller frees. NULL when out of memory. */
static float *ws_take(g2f_ffn_ws *ws, size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64; /* n <= k x NC_MAX: no overflow for a k that fits in memory */
    if (!ws) return aligned_alloc(64, bytes);
    if (ws->cap < n || !ws->buf) {
        free(ws->buf);
        ws->buf = aligned_alloc(64, bytes);
        ws->cap = ws->buf ? n : 0;
    }
    return ws->buf;
}

/* The optional second product of a call: C2 = A2 (B o B), in the same pass
 * over B (its squares packed beside it). A2 is a2, or A o A when a2 is NULL
 * (squared as it is packed). c2 NULL: no second product. */
typedef struct second {
    const float *a2;
    float *c2;
} second;

/* Squares n packed floats into dst. */
static void square_into(const float *src, float *restrict dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i] * src[i];
}

/* The second product's B panel from B's packed panel (kc x NR): its
 * squares, or with dpbf their bfloat16 pairs. */
static void square_panel(const kern *kn, const float *panel, size_t kc, float *restrict dst) {
    if (kn->dpbf) g2f_dpbf_pairs(panel, kc, kn->nr, 1, dst);
    else square_into(panel, dst, kc * kn->nr);
}

/* A2's block for the second product: packed from a2, or A's packed block
 * squared; with dpbf as bfloat16 pairs, panel by panel. */
static void pack_a2(const kern *kn, const second *sc, const float *ap, size_t k, size_t i0, size_t mb, size_t k0,
                    size_t kc, float *restrict buf) {
    size_t MR = kn->mr, panels = (mb + MR - 1) / MR;
    if (sc->a2) pack_a(kn, sc->a2, k, i0, mb, k0, kc, buf);
    if (kn->dpbf)
        for (size_t p = 0; p < panels; p++)
            g2f_dpbf_pairs(sc->a2 ? buf + p * KC * MR : ap + p * KC * MR, kc, MR, !sc->a2, buf + p * KC * MR);
    else if (!sc->a2)
        square_into(ap, buf, panels * KC * MR);
}

/* The second product's tile, on panels from pack_a2 and square_panel. */
static void tile_sq(const kern *kn, const float *ap2, const float *bp2, size_t kc, float *c, size_t ldc, size_t mr,
                    size_t nr, int first) {
    if (kn->dpbf) g2f_dpbf_tile(ap2, bp2, kc, c, ldc, mr, nr, first);
    else tile(kn, ap2, bp2, kc, c, ldc, mr, nr, first);
}

/* The column block: as wide as fits in nc_bytes (between NC_MIN and
 * NC_MAX columns), the blocks of the matrix made equal, whole panels. */
static size_t column_block(const kern *kn, size_t k, size_t n) {
    size_t NR = kn->nr, ncb = kn->nc_bytes / (k * sizeof(float)) / NR * NR; /* k > 0 here */
    ncb = ncb < NC_MIN ? NC_MIN : ncb > NC_MAX ? NC_MAX : ncb;
    size_t col_blocks = (n + ncb - 1) / ncb;
    return ((n + col_blocks - 1) / col_blocks + NR - 1) / NR * NR;
}

/* Floats of rows rows of A packed for one depth block (MR-row panels of
 * KC x MR), a 64-byte multiple. */
static size_t packed_a_floats(size_t MR, size_t rows) {
    return ((rows + MR - 1) / MR * MR * KC + 15) / 16 * 16;
}

/* How many column groups each of row_blocks row blocks is split into: at
 * least 8 tasks per thread, taken dynamically, so that uneven blocks still
 * balance; with few rows (few tokens) the columns are split too; at most
 * one group a panel. Which thread does what never changes a sum. */
static long column_groups(long row_blocks, long panels, int threads) {
    long groups = row_blocks >= 8L * threads ? 1 : (8L * threads + row_blocks - 1) / row_blocks;
    return groups < panels ? groups : panels;
}

/* The operands of one product as matmul_goto shares them with its threads. */
typedef struct gemm {
    const float *a, *b;
    size_t m, k, n;
    int b_trans;
    float *c;
    const epilogue *ep;
    const second *sc;
    const kern *kn;
    const uint16_t *amx_a2; /* with sc->c2: A2 packed for g2f_amx_panel (matmul_direct's squares on AMX) */
} gemm;

/* Packs the depth blocks of B's column block [jc, jc + nc) (and its
 * squares) into bp (bp2), in pieces of 8 panels shared out statically. */
static void pack_column_block(const gemm *g, size_t jc, size_t nc, size_t block_floats, float *bp, float *bp2) {
    size_t NR = g->kn->nr, depth_blocks = (g->k + KC - 1) / KC;
    long panels = (long)((nc + NR - 1) / NR), groups8 = (panels + 7) / 8;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (long q = 0; q < (long)depth_blocks * groups8; q++) {
        size_t pb = (size_t)q / (size_t)groups8, gi = (size_t)q % (size_t)groups8;
        size_t pc = pb * KC, kc = g->k - pc < KC ? g->k - pc : KC;
        size_t j = gi * 8 * NR, w = nc - j < 8 * NR ? nc - j : 8 * NR;
        size_t off = pb * block_floats + gi * 8 * KC * NR;
        pack_b(g->kn, g->b, g->b_trans, g->k, g->n, pc, kc, jc + j, w, bp + off);
        if (bp2) /* while the panels are in cache */
            for (size_t p = 0; p * NR < w; p++) square_panel(g->kn, bp + off + p * KC * NR, kc, bp2 + off + p * KC * NR);
    }
    /* the loop's implicit barrier: B is packed before anyone uses it */
}

/* One task of a column block: rows [i0, i0 + mc) against panels [s0, s1),
 * every depth block, its A block packed into ap (ap2) per depth step. */
/* A packed once for every task (pack_all_a), or NULL: each task packs its own. */
typedef struct shared_a {
    const float *a, *a2;
    size_t block; /* floats per depth block */
} shared_a;

static void row_task(const gemm *g, size_t jc, size_t nc, size_t i0, size_t mc, long s0, long s1,
                     size_t block_floats, const float *bp, const float *bp2, const shared_a *sa, float *ap,
                     float *ap2) {
    size_t MR = g->kn->mr, NR = g->kn->nr, depth_blocks = (g->k + KC - 1) / KC;
    for (size_t pb = 0; pb < depth_blocks; pb++) {
        size_t pc = pb * KC, kc = g->k - pc < KC ? g->k - pc : KC;
        const float *bblock = bp + pb * block_floats, *ab = ap, *ab2 = ap2;
        if (sa->a) { /* the row block's panels in the shared A (i0 is a multiple of MR) */
            ab = sa->a + pb * sa->block + i0 / MR * KC * MR;
            ab2 = bp2 ? sa->a2 + pb * sa->block + i0 / MR * KC * MR : NULL;
        } else {
            pack_a(g->kn, g->a, g->k, i0, mc, pc, kc, ap);
            if (bp2) pack_a2(g->kn, g->sc, ap, g->k, i0, mc, pc, kc, ap2);
        }
        for (long s = s0; s < s1; s++) { /* a B micro-panel stays in L1 across the A panels */
            size_t j = (size_t)s * NR, nr = nc - j < NR ? nc - j : NR;
            for (size_t p = 0; p * MR < mc; p++) {
                size_t mr = mc - p * MR < MR ? mc - p * MR : MR;
                tile_last(g->kn, ab + p * KC * MR, bblock + (size_t)s * KC * NR, kc, g->c, g->n, i0 + p * MR,
                          jc + j, mr, nr, pc == 0, pb + 1 == depth_blocks, g->ep);
                if (bp2)
                    tile_sq(g->kn, ab2 + p * KC * MR, bp2 + pb * block_floats + (size_t)s * KC * NR, kc,
                            g->sc->c2 + (i0 + p * MR) * g->n + jc + j, g->n, mr, nr, pc == 0);
            }
        }
    }
}

static void pack_all_a(const gemm *g, float *ap, float *ap2, size_t a_block);

/* The main path (Goto's loop order): the threads pack all of A once (when
 * it takes at most A_SHARED_MAX bytes; else each task packs its own A block
 * per depth step, as many times as the columns are split); then for each
 * block of ncb columns they first pack all of B's rows for it together (k x
 * ncb, in KC-deep micro-panel blocks), then split the rows in mc blocks
 * (and the columns too when there are few rows). Two barriers per column
 * block: a thread that the OS puts aside costs the others little. B is
 * packed once. The shared buffers (and any per-thread A blocks) come from
 * ws. Returns 0 when they cannot be allocated (the caller then uses
 * matmul_tasks, which gives bitwise the same results: the same tiles sum
 * the same terms in the same order). Packing A once instead of once per
 * column task: 4-5% of a 1024-token call's time on one thread (perf). */
#define A_SHARED_MAX ((size_t)64 << 20)
static int matmul_goto(const gemm *g, int n_threads, g2f_ffn_ws *ws) {
    const kern *kn = g->kn;
    size_t NR = kn->nr, MR = kn->mr, MC = kn->mc, ncb = column_block(kn, g->k, g->n);
    size_t ncap = g->n < ncb ? g->n : ncb, depth_blocks = (g->k + KC - 1) / KC;
    size_t block_floats = (ncap + NR - 1) / NR * KC * NR; /* one depth block of the column block */
    size_t a_floats = packed_a_floats(MR, MC); /* a thread's A block, 64-byte multiple */
    size_t a_block = packed_a_floats(MR, g->m); /* all of A, one depth block */
    int two = g->sc && g->sc->c2, threads = g2f_threads(n_threads);
    size_t b_total = (two ? 2 : 1) * depth_blocks * block_floats, a_total = (two ? 2 : 1) * depth_blocks * a_block;
    int share = a_total <= A_SHARED_MAX / sizeof(float);
    if (!share) a_total = (size_t)threads * (two ? 2 : 1) * a_floats;
    float *bp = ws_take(ws, b_total + a_total);
    if (!bp) return 0;
    float *bp2 = two ? bp + depth_blocks * block_floats : NULL; /* B's squares, same layout */
    float *all = bp + b_total;
    shared_a sa = {share ? all : NULL, share && two ? all + depth_blocks * a_block : NULL, a_block};
    long row_blocks = (long)((g->m + MC - 1) / MC);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
#ifdef _OPENMP
        int me = omp_get_thread_num();
#else
        int me = 0;
#endif
        float *ap = share ? NULL : all + (size_t)me * (two ? 2 : 1) * a_floats, *ap2 = two && ap ? ap + a_floats : NULL;
        if (share) pack_all_a(g, all, two ? all + depth_blocks * a_block : NULL, a_block);
        for (size_t jc = 0; jc < g->n; jc += ncb) {
            size_t nc = g->n - jc < ncb ? g->n - jc : ncb;
            long panels = (long)((nc + NR - 1) / NR);
            pack_column_block(g, jc, nc, block_floats, bp, bp2);
            long groups = column_groups(row_blocks, panels, threads);
            long per_group = (panels + groups - 1) / groups;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (long t = 0; t < row_blocks * groups; t++) {
                long ib = t / groups, s0 = t % groups * per_group, s1 = s0 + per_group < panels ? s0 + per_group : panels;
                size_t i0 = (size_t)ib * MC, mc = g->m - i0 < MC ? g->m - i0 : MC;
                if (s0 < s1) row_task(g, jc, nc, i0, mc, s0, s1, block_floats, bp, bp2, &sa, ap, ap2);
            }
            /* and this loop's barrier keeps the next column block's packing
             * from overwriting B while it is still in use */
        }
        g2f_simd_stream_fence(); /* act, before the region's barrier */
    }
    if (!ws) free(bp);
    return 1;
}

/* A tile on B from src, squared when sq; the epilogue on the last depth
 * block; with AVX-512 fetching f's rows of a later panel meanwhile (or f
 * NULL). AVX-512 tiles read packed panels, but for the one that packs its
 * panel as it reads it in place (src->pack); the squares' tile comes after
 * it, on the packed panel. */
static void tile_b(const kern *kn, const float *ap, const g2f_simd_bsrc *src, int sq, size_t kc, float *c, size_t n,
                   size_t i, size_t j, size_t mr, size_t nr, int first, const epilogue *ep, const g2f_simd_fetch *f) {
    g2f_simd_epilogue e = {ep && ep->bias ? ep->bias + j : NULL, ep ? ep->gelu : 0,
                           ep && ep->gelu ? ep->act + i * n + j : NULL, n};
    float *cij = c + i * n + j;
    if (kn->isa != ISA_AVX512) g2f_simd_tile_b(ap, src, sq, kc, cij, n, mr, nr, first, ep ? &e : NULL);
    else if (sq) g2f_simd512_tile_sq(ap, src->b, kc, cij, n, mr, nr, first);
    else if (src->pack) g2f_simd512_tile_pack(ap, src->b, src->ldb, src->pack, kc, cij, n, mr, nr, first, ep ? &e : NULL, f);
    else g2f_simd512_tile_fetch(ap, src->b, kc, cij, n, mr, nr, first, ep ? &e : NULL, f);
}

/* Packs every depth block of A (and A2) once, shared: for few rows, where
 * every column task would otherwise pack the same A again. The threads
 * take panels, each read front to back across its depth blocks (whole
 * rows: shared out by depth block, each read 1 KiB runs a row apart): with
 * the 12-row panels packed without spilling past them (g2f_simd_pack_cols4),
 * bench-ab 1.02x at d 768 and 1.04x at d 1600 for 1024 tokens, 1.01x for
 * 64 (2 threads, AMD EPYC Zen 5); the same bits. */
static void pack_all_a(const gemm *g, float *ap, float *ap2, size_t a_block) {
    size_t MR = g->kn->mr, depth_blocks = (g->k + KC - 1) / KC;
    long panels = (long)((g->m + MR - 1) / MR);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (long q = 0; q < panels; q++) { /* a panel's rows, read whole, into every depth block */
        size_t i0 = (size_t)q * MR, mb = g->m - i0 < MR ? g->m - i0 : MR;
        for (size_t pb = 0; pb < depth_blocks; pb++) {
            size_t pc = pb * KC, kc = g->k - pc < KC ? g->k - pc : KC, at = pb * a_block + i0 * KC;
            pack_a(g->kn, g->a, g->k, i0, mb, pc, kc, ap + at);
            if (ap2) pack_a2(g->kn, g->sc, ap + at, g->k, i0, mb, pc, kc, ap2 + at);
        }
    }
    /* the loop's barrier: A is packed before anyone uses it */
}

/* The panel that a column task [s0, s1) reads `ahead` panels after panel s
 * of depth block pb (in place): in this block, or the next block's (its
 * depth block into *pb_ahead, when not NULL); NULL past its last or on a
 * partial one. */
static const float *panel_ahead(const gemm *g, long s0, long s1, size_t pb, long s, long ahead, size_t *pb_ahead) {
    long per = s1 - s0, t = (long)pb * per + (s - s0) + ahead;
    size_t pb2 = (size_t)(t / per), j = (size_t)(s0 + t % per) * g->kn->nr;
    if (pb2 * KC >= g->k || j + g->kn->nr > g->n) return NULL;
    if (pb_ahead) *pb_ahead = pb2;
    return g->b + pb2 * KC * g->n + j;
}

/* Where direct_task's tiles read panel s of depth block pb: a last partial
 * panel packed into panel (KC x NR), zero-filled; with AVX-512 every panel
 * copied there (in place, a panel's rows are one row of B apart and fall in
 * a few of L1's sets: the later tiles would read it from L2 again), from L2
 * where the tiles three panels before fetched it (direct_fetch; a task's
 * first three from memory): by its first tile (src.pack), or now when
 * copy_now (the squares' pairs are made from it before any tile); with
 * AVX2 read in place, its first tile fetching the next panel into L2. */
static g2f_simd_bsrc panel_src(const gemm *g, long s0, long s1, size_t pb, long s, float *panel, int copy_now) {
    const kern *kn = g->kn;
    size_t NR = kn->nr, n = g->n, j = (size_t)s * NR, pc = pb * KC, kc = g->k - pc < KC ? g->k - pc : KC;
    g2f_simd_bsrc src = {g->b + pc * n + j, n, panel_ahead(g, s0, s1, pb, s, 1, NULL), n, NULL};
    if (n - j < NR) {
        pack_b(kn, g->b, 0, g->k, n, pc, kc, j, n - j, panel);
        src.b = panel, src.ldb = NR;
    } else if (kn->isa == ISA_AVX512 && copy_now) {
        g2f_simd512_copy_panel(src.b, n, kc, panel);
        src.b = panel, src.ldb = NR, src.pf = NULL;
    } else if (kn->isa == ISA_AVX512) { /* the first tile packs it (src_packed after it) */
        src.pack = panel, src.pf = NULL;
    }
    return src;
}

/* src once its first tile has run: the panel that tile packed, if it did. */
static g2f_simd_bsrc src_packed(g2f_simd_bsrc src, size_t NR) {
    if (src.pack) src.b = src.pack, src.ldb = NR, src.pack = NULL;
    src.pf = NULL; /* fetched once */
    return src;
}

/* With AVX-512, the share of panel b (FETCH_AHEAD panels after the one
 * worked on; in depth block pb2; or NULL) that A's panel p of a_panels
 * fetches into L2 while its tile works: each A panel's tile an equal part of its rows, a
 * row every few depth steps (g2f_simd512_tile_fetch). A core has few fill
 * buffers, so a burst of prefetches (all 768 lines of the panel two ahead
 * while copying a panel, the earlier way) stalls like the misses it meant
 * to hide; spread over the tiles they overlap the FMAs. `gpt2ffn run` of
 * GPT-2 XL's FFN at 64 tokens per layer, whole processes in interleaved
 * pairs (2 threads, Intel Xeon with AVX-512): 0.94-0.96x the time of the
 * burst; 2 or 4 panels ahead measured alike. */
#define FETCH_AHEAD 3
static g2f_simd_fetch direct_fetch(const gemm *g, const float *b, size_t pb2, size_t p, size_t a_panels) {
    g2f_simd_fetch f = {NULL, g->n * sizeof(float), 0, NULL};
    if (!b) return f;
    size_t kc = g->k - pb2 * KC < KC ? g->k - pb2 * KC : KC;
    size_t per = (kc + a_panels - 1) / a_panels, r0 = p * per;
    if (r0 >= kc) return f;
    f.base = (const char *)(b + r0 * g->n);
    f.rows = kc - r0 < per ? kc - r0 : per;
    return f;
}

/* The packed A panel that a task's tile (depth block pb, B panel s, A panel
 * p) fetches for a later tile, or NULL. A row block's packed A (every depth
 * block: 1.1 MiB for 384 rows of GPT-2 small's c_fc, 4.5 MiB of its c_proj)
 * is beyond L2, and half of it was packed by the other thread: the first
 * pass over a depth block (s == s0) reads it from L3, so it fetches the
 * next A panel, and the last pass the next depth block's first (MR
 * floats a depth step, into L2). bench-ab against none (AMD EPYC Zen 5):
 * the FFN at 1024 tokens 1.055x at d 768, 1.048x at d 1024, 1.075x at d
 * 1600 (2 threads), 1.059x at d 768 (1 thread); 1.027x at d 1600 for 64
 * tokens; c_proj alone 1.09-1.10x, c_fc 1.02x. Only the first pass: every
 * pass measured alike. */
static const float *a_ahead(const gemm *g, const float *ap, size_t a_block, size_t pb, long s, long s0, long s1,
                            size_t p, size_t p0, size_t p1) {
    size_t MR = g->kn->mr;
    if (s == s0 && p + 1 < p1) return ap + pb * a_block + (p + 1) * KC * MR;
    if (s + 1 == s1 && p + 1 == p1 && (pb + 1) * KC < g->k) return ap + (pb + 1) * a_block + p0 * KC * MR;
    return NULL;
}

/* One task of matmul_direct: panels [s0, s1) of every depth block
 * (panel_src), each through A's panels [p0, p1). */
static void direct_task(const gemm *g, size_t p0, size_t p1, long s0, long s1, const float *ap, const float *ap2,
                        size_t a_block, float *panel, float *pairs) {
    const kern *kn = g->kn;
    size_t MR = kn->mr, NR = kn->nr, n = g->n, depth_blocks = (g->k + KC - 1) / KC;
    for (size_t pb = 0; pb < depth_blocks; pb++) {
        size_t pc = pb * KC, kc = g->k - pc < KC ? g->k - pc : KC;
        const float *ab = ap + pb * a_block, *ab2 = ap2 ? ap2 + pb * a_block : NULL;
        for (long s = s0; s < s1; s++) {
            size_t j = (size_t)s * NR, nr = n - j < NR ? n - j : NR;
            g2f_simd_bsrc src = panel_src(g, s0, s1, pb, s, panel, ab2 && kn->dpbf);
            if (ab2 && kn->dpbf) square_panel(kn, src.b, kc, pairs); /* src.b is packed (copied now), NR a row */
            size_t pb_ahead = 0;
            const float *ahead = kn->isa == ISA_AVX512 ? panel_ahead(g, s0, s1, pb, s, FETCH_AHEAD, &pb_ahead) : NULL;
            for (size_t p = p0; p < p1; p++) {
                size_t mr = g->m - p * MR < MR ? g->m - p * MR : MR;
                g2f_simd_fetch f = direct_fetch(g, ahead, pb_ahead, p - p0, p1 - p0);
                f.a_next = a_ahead(g, ap, a_block, pb, s, s0, s1, p, p0, p1);
                tile_b(kn, ab + p * KC * MR, &src, 0, kc, g->c, n, p * MR, j, mr, nr, pc == 0,
                       pb + 1 == depth_blocks ? g->ep : NULL, &f);
                src = src_packed(src, NR);
                if (ab2 && kn->dpbf)
                    g2f_dpbf_tile(ab2 + p * KC * MR, pairs, kc, g->sc->c2 + p * MR * n + j, n, mr, nr, pc == 0);
                else if (ab2)
                    tile_b(kn, ab2 + p * KC * MR, &src, 1, kc, g->sc->c2, n, p * MR, j, mr, nr, pc == 0, NULL, NULL);
            }
            if (g->amx_a2) g2f_amx_panel(g->amx_a2, g->m, g->k, pc, kc, src.b, src.ldb, g->sc->c2, n, j);
        }
    }
}

/* matmul_direct's column tasks a thread when m <= mc (more rows: at least
 * 8 tasks a thread, as matmul_goto, each on its row block's A only). Each
 * task reads all of packed A
 * (every depth block, 1.6 MiB for 64 rows of GPT-2 XL's c_proj: beyond L2
 * once the fetched B panels pass through) again, so fewer tasks read A
 * less; a few keep some balance when a core is busy elsewhere. g2f_matmul
 * of 64 and 128 rows on GPT-2 XL's c_proj (k 6400, n 1600): 206 and 250
 * GFLOP/s against 187 and 242 with 8 tasks a thread (c_fc 235 and 283
 * against 216 and 246; 1 task a thread 222-305); `gpt2ffn run` of XL's FFN
 * x 64 tokens 0.96x the time (2 threads, Intel Xeon with AVX-512). The
 * tasks' sizes differ by one panel at most, the larger first. */
#define TASKS_PER_THREAD 2L

/* How matmul_direct shares out an m x n product: row blocks of rb_panels
 * A panels (all of them when m <= mc), each one's panels of B in tasks:
 * tasks of them a row block, tasks_last in the last row block. */
typedef struct direct_split {
    size_t a_panels, rb_panels;
    long row_blocks, panels, tasks, tasks_last;
} direct_split;

static direct_split direct_split_of(const kern *kn, size_t m, size_t n, int threads) {
    direct_split sp = {(m + kn->mr - 1) / kn->mr, 0, 1, (long)((n + kn->nr - 1) / kn->nr), TASKS_PER_THREAD * threads, 0};
    sp.rb_panels = sp.a_panels;
    if (m > kn->mc) { /* columns split as matmul_goto splits them, each task's C within task_panels */
        sp.rb_panels = kn->mc_direct / kn->mr;
        sp.row_blocks = (long)((sp.a_panels + sp.rb_panels - 1) / sp.rb_panels);
        sp.tasks = column_groups(sp.row_blocks, sp.panels, threads);
        long fit = (sp.panels + (long)kn->task_panels - 1) / (long)kn->task_panels;
        if (sp.tasks < fit) sp.tasks = fit;
        /* the product ends on tasks half as wide, so that the threads
         * finish closer together (bench-ab 1.01-1.02x at 1024 tokens) */
        sp.tasks_last = 2 * sp.tasks < sp.panels ? 2 * sp.tasks : sp.panels;
        return sp;
    }
    if (sp.tasks > sp.panels) sp.tasks = sp.panels;
    sp.tasks_last = sp.tasks;
    return sp;
}

/* Task u of a split: its row block *ib and its panels [*s0, *s1), the row
 * block's tasks one after the other, their sizes differing by one panel at
 * most (the larger first). */
static void direct_task_of(const direct_split *sp, long u, long *ib, long *s0, long *s1) {
    long head = (sp->row_blocks - 1) * sp->tasks, per = u < head ? sp->tasks : sp->tasks_last;
    long t = u < head ? u % per : u - head, base = sp->panels / per, rem = sp->panels % per;
    *ib = u < head ? u / per : sp->row_blocks - 1;
    *s0 = t * base + (t < rem ? t : rem);
    *s1 = *s0 + base + (t < rem);
}

/* Few rows (m <= mc: one row block; with AVX-512 also more, in row blocks
 * of mc_direct rows, each one's columns split as matmul_goto splits them)
 * and B as Conv1D rows: B is read where it
 * lies, each panel by the one task that uses it (panel_src: with AVX-512
 * packed into the task's L1 buffer by its first tile), instead of all
 * of it being packed for the threads first (that copy wrote as many bytes
 * as it read, and waited at a barrier before any FMA; the weights stream
 * from memory either way). A is packed once for all tasks. The same tiles
 * on the same values in the same order as matmul_goto: bitwise its
 * results. Returns 0 when the buffers cannot be allocated. */
static int matmul_direct(const gemm *g, int n_threads, g2f_ffn_ws *ws) {
    const kern *kn = g->kn;
    size_t MR = kn->mr, NR = kn->nr, depth_blocks = (g->k + KC - 1) / KC;
    size_t a_block = packed_a_floats(MR, g->m);
    int two = g->sc && g->sc->c2 && !g->amx_a2, threads = g2f_threads(n_threads);
    size_t a_total = (two ? 2 : 1) * depth_blocks * a_block;
    size_t per_thread = (two && kn->dpbf ? 2 : 1) * KC * NR; /* a panel (and its squares' pairs) */
    float *ap = ws_take(ws, a_total + (size_t)threads * per_thread);
    if (!ap) return 0;
    float *ap2 = two ? ap + depth_blocks * a_block : NULL;
    direct_split sp = direct_split_of(kn, g->m, g->n, threads);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
#ifdef _OPENMP
        int me = omp_get_thread_num();
#else
        int me = 0;
#endif
        pack_all_a(g, ap, ap2, a_block);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long u = 0; u < (sp.row_blocks - 1) * sp.tasks + sp.tasks_last; u++) {
            long ib, s0, s1;
            direct_task_of(&sp, u, &ib, &s0, &s1);
            size_t p0 = (size_t)ib * sp.rb_panels, p1 = p0 + sp.rb_panels < sp.a_panels ? p0 + sp.rb_panels : sp.a_panels;
            float *panel = ap + a_total + (size_t)me * per_thread;
            if (s0 < s1) direct_task(g, p0, p1, s0, s1, ap, ap2, a_block, panel, panel + KC * NR);
        }
        g2f_simd_stream_fence(); /* act, before the region's barrier */
    }
    if (!ws) free(ap);
    return 1;
}

/* The fallback: independent (MB x NB) tasks, each packing its own blocks. */
static void matmul_tasks(const gemm *g, int n_threads) {
    const kern *kn = g->kn;
    const second *sc = g->sc;
    size_t MR = kn->mr, NR = kn->nr, m = g->m, k = g->k, n = g->n;
    int two = sc && sc->c2;
    size_t row_blocks = (m + MB - 1) / MB, col_blocks = (n + NB - 1) / NB;
    long tasks = (long)(row_blocks * col_blocks);
#ifdef _OPENMP
#pragma omp parallel num_threads(g2f_threads(n_threads))
#else
    (void)n_threads;
#endif
    {
        /* per-thread packing buffers, sized by the blocks (224 KiB of stack) */
        _Alignas(64) float bp[KC * NB];
        _Alignas(64) float ap[KC * MB];
        _Alignas(64) float bp2[KC * NB]; /* the second product's (unused without one) */
        _Alignas(64) float ap2[KC * MB];
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (long t = 0; t < tasks; t++) {
            size_t i0 = (size_t)t / col_blocks * MB, j0 = (size_t)t % col_blocks * NB;
            size_t mb = m - i0 < MB ? m - i0 : MB, nb = n - j0 < NB ? n - j0 : NB;
            if (k == 0)
                for (size_t i = 0; i < mb; i++) {
                    memset(g->c + (i0 + i) * n + j0, 0, nb * sizeof(float));
                    if (two) memset(sc->c2 + (i0 + i) * n + j0, 0, nb * sizeof(float));
                }
            for (size_t k0 = 0; k0 < k; k0 += KC) {
                size_t kc = k - k0 < KC ? k - k0 : KC;
                pack_b(kn, g->b, g->b_trans, k, n, k0, kc, j0, nb, bp);
                pack_a(kn, g->a, k, i0, mb, k0, kc, ap);
                if (two) {
                    for (size_t s = 0; s * NR < nb; s++) square_panel(kn, bp + s * KC * NR, kc, bp2 + s * KC * NR);
                    pack_a2(kn, sc, ap, k, i0, mb, k0, kc, ap2);
                }
                for (size_t s = 0; s * NR < nb; s++) { /* a B micro-panel stays in L1 across the A panels */
                    size_t nr = nb - s * NR < NR ? nb - s * NR : NR;
                    for (size_t p = 0; p * MR < mb; p++) {
                        size_t mr = mb - p * MR < MR ? mb - p * MR : MR;
                        tile(kn, ap + p * KC * MR, bp + s * KC * NR, kc, g->c + (i0 + p * MR) * n + j0 + s * NR, n,
                             mr, nr, k0 == 0);
                        if (two)
                            tile_sq(kn, ap2 + p * KC * MR, bp2 + s * KC * NR, kc,
                                    sc->c2 + (i0 + p * MR) * n + j0 + s * NR, n, mr, nr, k0 == 0);
                    }
                }
            }
            finish_block(g->c, n, i0, mb, j0, nb, g->ep);
        }
    }
}

/* Whether matmul_direct's A (all of it, packed; with two, A2's too) fits
 * in A_SHARED_MAX, as matmul_goto's shared A must. */
static int direct_a_fits(const kern *kn, size_t m, size_t k, int two) {
    size_t MR = kn->mr, depth_blocks = (k + KC - 1) / KC;
    size_t a_block = packed_a_floats(MR, m);
    return a_block <= A_SHARED_MAX / sizeof(float) / ((two ? 2 : 1) * depth_blocks);
}

/* sc NULL: one product, a single row by the GEMV; sc not NULL (even with no
 * c2): never the GEMV, so that a row's results do not depend on how many
 * rows are computed with it (the GEMV sums in another order). */
static void matmul_ex(const float *a, size_t m, size_t k, const float *b, int b_trans, size_t n, float *c,
                      const epilogue *ep, const second *sc, int n_threads, g2f_ffn_ws *ws) {
    if (m == 0 || n == 0) return;
    kern kn = kern_of(g2f_cpu_features());
    if (!sc && m == 1 && kn.isa != ISA_PORTABLE && k > 0 && gemv(a, k, b, b_trans, n, c, n_threads)) {
        finish_block(c, n, 0, 1, 0, n, ep);
        return;
    }
    int direct = k > 0 && !b_trans && kn.isa != ISA_PORTABLE &&
                 (m <= kn.mc || (kn.isa == ISA_AVX512 && !kn.amx && direct_a_fits(&kn, m, k, sc && sc->c2)));
    second values_only = {NULL, NULL};
    if (sc && sc->c2 && kn.amx) { /* the sums of squares on AMX: the same chains either way */
        uint16_t *a2p = direct ? g2f_amx_pack_a2(a, sc->a2, m, k, g2f_threads(n_threads)) : NULL;
        gemm g = {a, b, m, k, n, b_trans, c, ep, sc, &kn, a2p};
        int done = a2p && matmul_direct(&g, n_threads, ws); /* panel by panel, beside the values' tiles */
        free(a2p);
        if (done) return;
        /* in a pass of their own, then the values alone (still not by the GEMV) */
        if (g2f_amx_sq(a, sc->a2, m, k, b, b_trans, n, sc->c2, g2f_threads(n_threads))) sc = &values_only;
    }
    gemm g = {a, b, m, k, n, b_trans, c, ep, sc, &kn, NULL};
    if (direct && matmul_direct(&g, n_threads, ws)) return;
    if (k == 0 || !matmul_goto(&g, n_threads, ws)) matmul_tasks(&g, n_threads);
}

void g2f_matmul(const float *a, size_t m, size_t k, const float *b, int b_trans, size_t n, const float *bias,
                float *c, int n_threads, g2f_ffn_ws *ws) {
    epilogue ep = {bias, 0, NULL};
    matmul_ex(a, m, k, b, b_trans, n, c, &ep, NULL, n_threads, ws);
}

void g2f_matmul_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n,
                   const float *bias, float *c, float *c2, int n_threads, g2f_ffn_ws *ws) {
    epilogue ep = {bias, 0, NULL};
    second sc = {a2, c2};
    matmul_ex(a, m, k, b, b_trans, n, c, &ep, &sc, n_threads, ws);
}

void g2f_ffn_fc_gelu(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre, float *act,
                     int n_threads, g2f_ffn_ws *ws) {
    if (g != G2F_GELU_TANH && g != G2F_GELU_ERF) { /* the SIMD tile's epilogue knows these two only */
        g2f_matmul(x, n_tokens, w->n_embd, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, w->n_inner, w->b_fc, pre,
                   n_threads, ws);
        g2f_ffn_gelu_ws(g, pre, n_tokens * w->n_inner, act, n_threads, ws);
        return;
    }
    epilogue ep = {w->b_fc, 1 + (int)g, act};
    matmul_ex(x, n_tokens, w->n_embd, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, w->n_inner, pre, &ep, NULL,
              n_threads, ws);
}

void g2f_ffn_fc_gelu_sq(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                        float *act, float *s, int n_threads, g2f_ffn_ws *ws) {
    int fused = g == G2F_GELU_TANH || g == G2F_GELU_ERF; /* the SIMD tile's epilogue knows these two only */
    epilogue ep = {w->b_fc, fused ? 1 + (int)g : 0, act};
    second sc = {NULL, s};
    matmul_ex(x, n_tokens, w->n_embd, w->w_fc, w->layout_fc == G2F_LAYOUT_LINEAR, w->n_inner, pre, &ep, &sc,
              n_threads, ws);
    if (!fused) g2f_ffn_gelu_ws(g, pre, n_tokens * w->n_inner, act, n_threads, ws);
}

void g2f_ffn_proj_sq(const g2f_ffn_weights *w, const float *act, const float *q, size_t n_tokens, float *out,
                     float *v, int n_threads, g2f_ffn_ws *ws) {
    epilogue ep = {w->b_proj, 0, NULL};
    second sc = {q, v};
    matmul_ex(act, n_tokens, w->n_inner, w->w_proj, w->layout_proj == G2F_LAYOUT_LINEAR, w->n_embd, out, &ep, &sc,
              n_threads, ws);
}

void g2f_ffn_proj(const g2f_ffn_weights *w, const float *act, size_t n_tokens, float *out, int n_threads,
                  g2f_ffn_ws *ws) {
    g2f_matmul(act, n_tokens, w->n_inner, w->w_proj, w->layout_proj == G2F_LAYOUT_LINEAR, w->n_embd, w->b_proj,
               out, n_threads, ws);
}

/* ws's F16_TABLE table (g2f_ffn_gelu_ws), made here on first use; NULL
 * without ws or memory. Entry b is g2f_gelu_f16_table's value at the half
 * b, before its clamps: that function rounds x to half, then looks up. */
static const float *f16_table_of(g2f_ffn_ws *ws) {
    if (!ws) return NULL;
    if (!ws->f16_gelu) {
        float *t = malloc(65536 * sizeof *t);
        if (!t) return NULL;
        for (uint32_t b = 0; b < 65536; b++) t[b] = round_f16(gelu_ggml_f32(g2f_f16_to_f32((uint16_t)b)));
        ws->f16_gelu = t;
    }
    return ws->f16_gelu;
}

/* The table's entries for in[0..n), the halves found 8 at a time with
 * F16C where the CPU has it (the same halves). */
static void f16_table_span(const float *t, const float *in, float *out, size_t n) {
    const int f16c = g2f_cpu_features()->f16c;
    uint16_t hb[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        if (f16c) g2f_cpu_f32_to_f16_span(in + i0, hb, m);
        else
            for (size_t i = 0; i < m; i++) hb[i] = g2f_f32_to_f16(in[i0 + i]);
        for (size_t i = 0; i < m; i++) {
            float x = in[i0 + i];
            out[i0 + i] = x <= -10.0f ? 0.0f : x >= 10.0f ? x : t[hb[i]]; /* g2f_gelu_f16_table's clamps */
        }
    }
}

void g2f_ffn_gelu_ws(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads, g2f_ffn_ws *ws) {
    const float *t = g == G2F_GELU_F16_TABLE ? f16_table_of(ws) : NULL; /* made before the threads start */
    const size_t chunk = 4096;
    long tasks = (long)((count + chunk - 1) / chunk);
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(g2f_threads(n_threads))
#endif
    for (long k = 0; k < tasks; k++) {
        size_t i0 = (size_t)k * chunk, n = count - i0 < chunk ? count - i0 : chunk;
        if (t) f16_table_span(t, pre + i0, act + i0, n);
        else gelu_span(g, pre + i0, act + i0, n);
    }
}

void g2f_ffn_gelu(g2f_gelu g, const float *pre, size_t count, float *act, int n_threads) {
    g2f_ffn_gelu_ws(g, pre, count, act, n_threads, NULL);
}

void g2f_ffn_forward(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g, float *pre,
                     float *act, float *out, int n_threads, g2f_ffn_ws *ws) {
    g2f_ffn_fc_gelu(w, x, n_tokens, g, pre, act, n_threads, ws);
    g2f_ffn_proj(w, act, n_tokens, out, n_threads, ws);
}

g2f_status g2f_ffn_forward_ref(const g2f_ffn_weights *w, const float *x, size_t n_tokens, g2f_gelu g,
                               float *pre, float *act, float *out, g2f_error *err) {
    size_t d = w->n_embd, h = w->n_inner;
    int lin_fc = w->layout_fc == G2F_LAYOUT_LINEAR, lin_proj = w->layout_proj == G2F_LAYOUT_LINEAR;
    double *hid = g2f_alloc_array(h ? h : 1, sizeof *hid);
    if (!hid) return g2f_error_set(err, G2F_ERR_NOMEM, "reference FFN: cannot allocate %zu hidden units", h);
    for (size_t t = 0; t < n_tokens; t++) {
        const float *xt = x + t * d;
        for (size_t u = 0; u < h; u++) {
            double s = w->b_fc ? w->b_fc[u] : 0.0;
            for (size_t i = 0; i < d; i++) s += (double)xt[i] * (lin_fc ? w->w_fc[u * d + i] : w->w_fc[i * h + u]);
            double a = g2f_gelu_eval_f64(g, s);
            if (pre) pre[t * h + u] = (float)s;
            if (act) act[t * h + u] = (float)a;
            hid[u] = a;
        }
        for (size_t j = 0; j < d; j++) {
            double acc = w->b_proj ? w->b_proj[j] : 0.0;
            for (size_t u = 0; u < h; u++) acc += hid[u] * (lin_proj ? w->w_proj[j * h + u] : w->w_proj[u * d + j]);
            out[t * d + j] = (float)acc;
        }
    }
    free(hid);
    return G2F_OK;
}
