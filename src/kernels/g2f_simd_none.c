/* g2f_simd_none: in a build without the x86 kernels (GPT2FFN_SIMD=OFF, or
 * another architecture) g2f_cpu_features()->avx2_fma is 0, so g2f_ffn.c
 * never calls these; they exist so that it keeps one code path. Empty in a
 * build with the x86 kernels. */
#include "g2f_simd.h"

#ifndef GPT2FFN_X86_KERNELS
void g2f_simd_stream_fence(void) {}
void g2f_simd_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first, const g2f_simd_epilogue *ep) {
    (void)ap, (void)bp, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first, (void)ep;
}
void g2f_simd512_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                      int first, const g2f_simd_epilogue *ep) {
    (void)ap, (void)bp, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first, (void)ep;
}
void g2f_simd_tile_b(const float *ap, const g2f_simd_bsrc *src, int sq, size_t kc, float *c, size_t ldc, size_t mr,
                     size_t nr, int first, const g2f_simd_epilogue *ep) {
    (void)ap, (void)src, (void)sq, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first, (void)ep;
}
void g2f_simd512_tile_sq(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                         int first) {
    (void)ap, (void)bp, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first;
}
void g2f_simd512_tile_fetch(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                            int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f) {
    (void)ap, (void)bp, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first, (void)ep, (void)f;
}
void g2f_simd512_tile_pack(const float *ap, const float *b, size_t ldb, float *pack, size_t kc, float *c, size_t ldc,
                           size_t mr, size_t nr, int first, const g2f_simd_epilogue *ep, const g2f_simd_fetch *f) {
    (void)ap, (void)b, (void)ldb, (void)pack, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first, (void)ep;
    (void)f;
}
void g2f_simd512_copy_panel(const float *b, size_t ldb, size_t kc, float *dst) {
    (void)b, (void)ldb, (void)kc, (void)dst;
}
void g2f_simd_pack_cols(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst) {
    (void)a, (void)lda, (void)rows, (void)kc, (void)width, (void)dst;
}
void g2f_simd_pack_cols4(const float *a, size_t lda, size_t rows, size_t kc, size_t width, float *dst) {
    (void)a, (void)lda, (void)rows, (void)kc, (void)width, (void)dst;
}
void g2f_dpbf_pairs(const float *src, size_t kc, size_t width, int square, float *dst) {
    (void)src, (void)kc, (void)width, (void)square, (void)dst;
}
void g2f_dpbf_tile(const float *ap, const float *bp, size_t kc, float *c, size_t ldc, size_t mr, size_t nr,
                   int first) {
    (void)ap, (void)bp, (void)kc, (void)c, (void)ldc, (void)mr, (void)nr, (void)first;
}
void g2f_simd_gelu(int erf, const float *in, float *out, size_t n) { (void)erf, (void)in, (void)out, (void)n; }
void g2f_simd512_gelu(int erf, const float *in, float *out, size_t n) { (void)erf, (void)in, (void)out, (void)n; }
void g2f_simd_gelu_deriv(const float *x, float *g, size_t n) { (void)x, (void)g, (void)n; }
void g2f_simd512_gelu_deriv(const float *x, float *g, size_t n) { (void)x, (void)g, (void)n; }
void g2f_simd_gelu_sigmoid(int mlx, const float *in, float *out, size_t n) {
    (void)mlx, (void)in, (void)out, (void)n;
}
void g2f_simd_softmax(float *s, size_t n, double scale) { (void)s, (void)n, (void)scale; }
void g2f_simd_axpy_rows(const float *x, size_t k, const float *b, size_t n, float *y) {
    (void)x, (void)k, (void)b, (void)n, (void)y;
}
void g2f_simd_gemv_dots(const float *x, size_t k, const float *b, size_t j0, size_t j1, float *y) {
    (void)x, (void)k, (void)b, (void)j0, (void)j1, (void)y;
}
int g2f_amx_sq(const float *a, const float *a2, size_t m, size_t k, const float *b, int b_trans, size_t n, float *c2,
               int threads) {
    (void)a, (void)a2, (void)m, (void)k, (void)b, (void)b_trans, (void)n, (void)c2, (void)threads;
    return 0;
}
uint16_t *g2f_amx_pack_a2(const float *a, const float *a2, size_t m, size_t k, int threads) {
    (void)a, (void)a2, (void)m, (void)k, (void)threads;
    return NULL;
}
void g2f_amx_panel(const uint16_t *ap, size_t m, size_t k, size_t k0, size_t kc, const float *panel, size_t ldp,
                   float *c2, size_t n, size_t j0) {
    (void)ap, (void)m, (void)k, (void)k0, (void)kc, (void)panel, (void)ldp, (void)c2, (void)n, (void)j0;
}
#else
typedef int g2f_simd_none_is_empty; /* ISO C wants a translation unit to declare something */
#endif
