/* g2f_simd: the x86-64 AVX2 + FMA kernels, in their own translation unit
 * compiled with -mavx2 -mfma (the rest of the build stays baseline x86-64)
 * and called only when the CPU has both (g2f_cpu_features()->avx2_fma),
 * and the AVX-512 tile (g2f_simd_avx512.c, -mavx512f, only when
 * g2f_cpu_features()->avx512f too).
 * Internal to the kernels layer (not installed). In a build without the x86
 * kernels (GPT2FFN_SIMD=OFF, or another architecture) the declarations
 * below are stubs that are never called.
 *
 * Packed layouts (made by g2f_ffn.c), MR x NR = G2F_MR x G2F_NR or
 * G2F_MR512 x G2F_NR512:
 *   A panel: kc x MR floats, a[kk * MR + r] = A[row r, col kk]
 *   B panel: kc x NR floats, b[kk * NR + j] = B[row kk, col j]
 */
#ifndef G2F_SIMD_H
#define G2F_SIMD_H

#include <stddef.h>
#include <stdint.h>

#define G2F_MR 6
#define G2F_NR 16
/* the AVX-512 tile (g2f_simd_avx512.c), on panels of these widths */
#define G2F_MR512 12
#define G2F_NR512 32


/* What the last depth step of a tile does to it before it leaves the
 * registers: add the bias (the tile's nr columns), then store GELU of the
 * sums to act as well (gelu 1: tanh, 2: erf; row stride ld_act). */
typedef struct g2f_simd_epilogue {
    const float *bias; /* or NULL */
    int gelu;          /* 0: none */
    float *act;
    size_t ld_act;
} g2f_simd_epilogue;
/* Orders the calling thread's streamed stores (the AVX-512 epilogue writes
 * act past the caches) before its later stores: each thread that ran tiles
 * with an epilogue calls it before the barrier after which others read act. */
void g2f_simd_stream_fence(void);

/* C tile (mr <= MR rows, nr <= NR cols, row stride ldc) (+)= A panel x B
 * panel over kc: first starts from zero instead of C; sums in kk order with
 * one FMA per term; then ep (or NULL): the same results as a separate pass
 * of bias adds and g2f_simd_gelu over the stored tile. */
void g2f_simd_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first, const g2f_simd_epilogue *ep);

/* The same for a G2F_MR512 x G2F_NR512 tile, with AVX-512 (only when
 * g2f_cpu_features()->avx512f): bitwise g2f_simd_tile's sums and epilogue. */
void g2f_simd512_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                      int first, const g2f_simd_epilogue *ep);

/* Lines of a later B panel that an AVX-512 tile fetches into L2 while it
 * works (g2f_simd512_tile_fetch): `rows` rows of 128 bytes (at most the
 * tile's kc), row r at base + r * ld, three lines each (0, 64 and 127 bytes
 * in: any alignment), spread evenly over the tile's depth steps (one row a
 * step at most). And, unless NULL, the packed A panel of a later tile
 * (kc x G2F_MR512 floats at a_next), MR floats a depth step. */
typedef struct g2f_simd_fetch {
    const char *base;
    size_t ld; /* bytes */
    size_t rows;
    const float *a_next;
} g2f_simd_fetch;

/* g2f_simd512_tile, fetching f's lines meanwhile (f may be NULL). */
void g2f_simd512_tile_fetch(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                            int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f);

/* g2f_simd512_tile_fetch on a B panel read in place (row kk, G2F_NR512
 * floats at any alignment, at b + kk * ldb), each row also stored into
 * pack (kc x G2F_NR512) as it is loaded: the first tile on a panel packs
 * it for the others, without a pass of its own. The same sums, bit for
 * bit, as on the panel packed. */
void g2f_simd512_tile_pack(const float *ap, const float *b, size_t ldb, float *pack, size_t kc, float *c, size_t ldc,
                           size_t mr, size_t nr, int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f);

/* Where a tile on B read in place (g2f_simd_tile_b) gets its panel: row kk
 * (NR floats, any alignment) at b + kk * ldb; meanwhile it fetches into L2
 * the rows of pf (the panel used next, rows pf_ld apart; or NULL). */
typedef struct g2f_simd_bsrc {
    const float *b;
    size_t ldb;
    const float *pf;
    size_t pf_ld;
    float *pack; /* AVX-512 (g2f_simd512_tile_pack): where the tile packs the panel as it reads it, or NULL */
} g2f_simd_bsrc;

/* g2f_simd_tile on B read from src, squared first when sq (each b * b
 * rounded to float, as the packed squares of a second product are). The
 * same sums, bit for bit, as on the panel packed. */
void g2f_simd_tile_b(const float *ap, const g2f_simd_bsrc *src, int sq, size_t kc, float *c, size_t ldc, size_t mr,
                     size_t nr, int first, const g2f_simd_epilogue *ep);

/* g2f_simd512_tile (no epilogue) on the squares of the packed B panel, each
 * b * b rounded to float as the packed squares of a second product are:
 * bitwise the tile on those squares packed. */
void g2f_simd512_tile_sq(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                         int first);

/* Copies a B panel of G2F_NR512 floats a row, row kk at b + kk * ldb (any
 * alignment), into dst (kc x G2F_NR512, packed). */
void g2f_simd512_copy_panel(const float *b, size_t ldb, size_t kc, float *dst);

/* Packs up to 8 rows of A (row r at a + r * lda, rows >= `rows` read as zero)
 * column by column: dst[kk * width + r] = A[r, kk] for kk < kc, r < 8, where
 * width is 6 (lanes 6 and 7 of each column are scratch that the next column
 * overwrites; the last column writes only its 6) or >= 8. */
void g2f_simd_pack_cols(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst);

/* The same for up to 4 rows: dst[kk * width + r] = A[r, kk] for r < 4
 * (width >= 4), nothing else written (rows 8-11 of a 12-row panel). */
void g2f_simd_pack_cols4(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst);

/* out[i] = GELU(in[i]) in double precision (see g2f_gelu_math.h); erf != 0
 * for the exact form. in and out may be the same. */
void g2f_simd_gelu(int erf, const float *in, float *out, size_t n);

/* g2f_simd_gelu with AVX-512 (only when g2f_cpu_features()->avx512f):
 * bitwise its results; tanh 64 at a time, erf by branch in blocks of 1024
 * (g2f_simd_avx512.c). */
void g2f_simd512_gelu(int erf, const float *in, float *out, size_t n);

/* The sums of squares with VDPBF16PS (g2f_simd_dpbf.c; only when
 * g2f_cpu_features()->dpbf16). A packed panel of kc rows of `width` floats
 * (row kk at src + kk * width; squared first when square) as bfloat16
 * pairs, each factor rounded up: lane p * width + c of dst holds rows 2p
 * (low half) and 2p + 1 (high half, zero past kc) of column c, in a float's
 * 32 bits. dst may be src (a row is read before it is overwritten). */
void g2f_dpbf_pairs(const float *src, size_t kc, size_t width, int square, float *dst);
/* C tile (mr <= G2F_MR512 rows, nr <= G2F_NR512 cols, row stride ldc) (+)=
 * A2 x B2 over kc depth steps, on an A panel and a B panel of pairs
 * (g2f_dpbf_pairs, widths G2F_MR512 and G2F_NR512): each element one chain
 * of VDPBF16PS from zero over the pairs, then added to C unless first. */
void g2f_dpbf_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first);

/* c2 (m, n) = A2 (B o B) on the AMX tile unit (only when
 * g2f_cpu_features()->amx_bf16), every factor rounded up to bfloat16 first
 * (g2f_amx.c): A2 is a2 (m, k; variances, >= 0), or a squared when a2 is NULL; B is (k, n),
 * or stored (n, k) when b_trans. Each element is the same chain for any m,
 * n and thread count. Returns 0 (c2 untouched) without memory. */
int g2f_amx_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n, float *c2,
               int threads);
/* g2f_amx_sq in two parts, for a product that walks B panel by panel
 * (matmul_direct): A2 packed once (owned by the caller: free; NULL
 * without memory), then c2's 32 columns from j0 over the depth steps
 * [k0, k0 + kc) (k0 a multiple of 256, kc <= 256) from the floats of B's
 * panel there (kc rows of 32, ldp apart, zero past n), from zero at k0 = 0:
 * the same chains as g2f_amx_sq, so the same bits. */
uint16_t *g2f_amx_pack_a2(const float *a, const float *a2, size_t m, size_t k, int threads);
void g2f_amx_panel(const uint16_t *ap, size_t m, size_t k, size_t k0, size_t kc, const float *panel, size_t ldp,
                   float *c2, size_t n, size_t j0);

/* g[i] = GELU'(x[i]) (g2f_gelu_deriv.h), 8 at a time. */
void g2f_simd_gelu_deriv(const float *x, float *g, size_t n);
/* The same, 16 at a time (AVX-512 F). */
void g2f_simd512_gelu_deriv(const float *x, float *g, size_t n);

/* out[i] = x sigmoid(v(x)) (see g2f_gelu_math.h) for the HF quick_gelu form
 * (mlx 0) or MLX's (mlx 1): bitwise g2f_gelu_sigmoid_d / g2f_gelu_mlx_d
 * rounded to float. in and out may be the same. */
void g2f_simd_gelu_sigmoid(int mlx, const float *in, float *out, size_t n);

/* Softmax of one row of scores in place (g2f_attn): s_j = float(s_j *
 * scale) (the product in double, rounded once); m = max_j s_j; e_j =
 * float(exp(double(s_j - m))), the exp a degree-9 polynomial in double
 * (the correctly rounded float but within 1e-4 ulp of a tie); sum = the
 * e_j added in double (four lanes, combined in a fixed order, then the
 * tail); s_j = float(e_j * (1 / sum)). n >= 1. */
void g2f_simd_softmax(float *s, size_t n, double scale);

/* y (n) = x (k) B, B (k, n) row-major: y = 0, then y += x[kk] B[kk, :] for
 * kk in order (one FMA per term). Streams the rows of B front to back. */
void g2f_simd_axpy_rows(const float *x, size_t k, const float *b, size_t n, float *y);
/* y[j] = dot(x, B[j, :]) for j in [j0, j1), B (n, k) row-major: four times
 * eight lanes of partial sums combined in a fixed order. */
void g2f_simd_gemv_dots(const float *x, size_t k, const float *b, size_t j0, size_t j1, float *y);

#endif
