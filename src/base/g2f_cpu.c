/* g2f_cpu: see g2f_cpu.h. */
#define _DEFAULT_SOURCE /* syscall (arch_prctl) */
#include "g2f_cpu.h"
#include "g2f_tensor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int g2f_threads(int n_threads) {
#ifdef _OPENMP
    return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
    (void)n_threads;
    return 1;
#endif
}

void g2f_threads_set_default(int n_threads) {
#ifdef _OPENMP
    if (n_threads > 0) omp_set_num_threads(n_threads);
#else
    (void)n_threads;
#endif
}

#if defined(GPT2FFN_X86_KERNELS) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Linux hands out the AMX tile data only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): once, for the whole process. */
static int amx_permit(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return 0;
#endif
}

static void detect(g2f_cpu *c) {
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return;
    int fma = (cx >> 12) & 1, sse41 = (cx >> 19) & 1, osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1;
    int f16c = (cx >> 29) & 1;
    /* the OS saves XMM and YMM (bits 1, 2) and, for AVX-512, opmask and ZMM (5-7) */
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    int ymm = (xcr0 & 6) == 6, zmm = (xcr0 & 0xe6) == 0xe6;
    unsigned b7 = 0, sub7 = 0, leaves = __get_cpuid_max(0, NULL);
    if (leaves >= 7) __cpuid_count(7, 0, sub7, b7, cx, d);
    int avx2 = (b7 >> 5) & 1, sha = (b7 >> 29) & 1, avx512f = (b7 >> 16) & 1;
    c->avx2_fma = avx && avx2 && fma && ymm;
    c->f16c = avx && f16c && ymm;
    c->sha = sha && sse41;
    c->avx512f = avx512f && zmm;
    /* AMX: BF16 and TILE (EDX bits 22, 24), the OS saving the tile state
     * (XCR0 bits 17, 18), and Linux's permission for this process to use it */
    int amx = (d >> 22) & 1 && (d >> 24) & 1 && (xcr0 & 0x60000) == 0x60000;
    c->amx_bf16 = c->avx512f && amx && amx_permit();
    /* AVX512_BF16: leaf 7 subleaf 1 (when leaf 7 has one), EAX bit 5; the vendor from leaf 0 */
    unsigned a71 = 0, vb = 0, vc = 0, vd = 0;
    if (leaves >= 7 && sub7 >= 1) __cpuid_count(7, 1, a71, b, cx, d);
    __cpuid(0, a, vb, vc, vd);
    int amd = vb == 0x68747541u && vd == 0x69746e65u && vc == 0x444d4163u; /* "AuthenticAMD" */
    c->dpbf16 = c->avx512f && (a71 >> 5) & 1 && amd;
}
#else
static void detect(g2f_cpu *c) { (void)c; }
/* never called (f16c reads 0), but linked */
void g2f_cpu_f16_to_f32(const unsigned char *src, float *dst, size_t n) {
    (void)src;
    (void)dst;
    (void)n;
}
unsigned short g2f_cpu_f32_to_f16(float v) { return g2f_f32_to_f16(v); }
float g2f_cpu_round_f16(float v) { return g2f_f16_to_f32(g2f_f32_to_f16(v)); }
void g2f_cpu_round_f16_span(const float *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = g2f_cpu_round_f16(in[i]);
}
void g2f_cpu_f32_to_f16_span(const float *in, unsigned short *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = g2f_f32_to_f16(in[i]);
}
#endif

/* The size of the level-`level` data or unified cache from sysfs (cpu0), 0 if none. */
static size_t sysfs_cache(int level) {
    for (int i = 0; i < 8; i++) {
        char path[96], type[32] = "";
        int lv = 0;
        unsigned long kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        int ok = fscanf(f, "%d", &lv) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (ok && (f = fopen(path, "r"))) {
            ok = fscanf(f, "%31s", type) == 1;
            fclose(f);
        }
        if (!ok || lv != level || !strcmp(type, "Instruction")) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(path, "r"))) {
            ok = fscanf(f, "%luK", &kib) == 1;
            fclose(f);
            if (ok) return (size_t)kib << 10;
        }
    }
    return 0;
}

static size_t cache_size(int level) {
    long v = 0;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
#endif
    return v > 0 ? (size_t)v : sysfs_cache(level);
}

/* GPT2FFN_ISA: at most that ISA for the kernels (see g2f_cpu.h). */
static void cap_isa(g2f_cpu *c) {
    const char *isa = getenv("GPT2FFN_ISA");
    c->isa_env = isa;
    c->isa_env_ok = !isa || !strcmp(isa, "portable") || !strcmp(isa, "avx2") || !strcmp(isa, "avx512") ||
                    !strcmp(isa, "avx512_bf16") || !strcmp(isa, "amx");
    if (!isa || !c->isa_env_ok) return;
    if (strcmp(isa, "amx") != 0) c->amx_bf16 = 0;
    if (strcmp(isa, "avx512_bf16") != 0) c->dpbf16 = 0;
    if (!strcmp(isa, "portable") || !strcmp(isa, "avx2")) c->avx512f = 0;
    if (!strcmp(isa, "portable")) c->avx2_fma = 0;
}

static g2f_cpu features;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    detect(&features);
    cap_isa(&features);
    features.l1d = cache_size(1);
    features.l2 = cache_size(2);
    features.l3 = cache_size(3);
}

const g2f_cpu *g2f_cpu_features(void) {
    pthread_once(&once, init);
    return &features;
}
