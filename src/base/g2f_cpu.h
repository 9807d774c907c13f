/* g2f_cpu: what the CPU can run, read once at run time, so that one binary
 * uses AVX2 + FMA, F16C and the SHA extensions where they exist and the
 * portable C code everywhere else (an older x86-64, another architecture,
 * or a build with GPT2FFN_SIMD=OFF).
 *
 * Read with cpuid and xgetbv (the OS must save the AVX registers), not with
 * __builtin_cpu_supports, whose feature names differ between compilers
 * (clang 14 has no "sha").
 */
#ifndef G2F_CPU_H
#define G2F_CPU_H

#include <stddef.h>

typedef struct g2f_cpu {
    int avx2_fma; /* AVX2 and FMA3: the FFN's micro-kernels */
    int f16c;     /* F16C: half -> float conversion */
    int sha;      /* SHA-NI and SSE4.1: SHA-256 */
    int avx512f;  /* AVX-512 F, with the OS saving the ZMM registers: the FFN's 12 x 32 tile */
    int amx_bf16; /* AMX-BF16 with the OS's permission (and AVX-512 F): the sums of squares (g2f_ffn.h) */
    /* AVX-512 BF16 (and F) on an AMD CPU (Zen 4 and later), where VDPBF16PS
     * runs at the FMA's instruction rate (Zen 5: 6.8 against 7.1 G/s a
     * core), two products each: the sums of squares without AMX. Not on
     * Intel's: Sapphire Rapids runs it at a quarter of the FMA's rate. */
    int dpbf16;
    /* GPT2FFN_ISA as read (NULL when unset) and whether it is one of the
     * words below; a bad value changes nothing (the CLI refuses it) */
    const char *isa_env;
    int isa_env_ok;
    /* cache sizes in bytes, 0 where unknown: the L1 data cache and the L2 of
     * one core, the L3 as the system reports it (shared by several cores,
     * and in a VM maybe by other guests); for the kernels' blocking. From
     * sysconf (_SC_LEVEL*_CACHE_SIZE), else /sys/devices/system/cpu/cpu0/cache. */
    size_t l1d, l2, l3;
} g2f_cpu;

/* The features of this CPU; all 0 where the build has no x86 kernels.
 * Computed on the first call (thread-safe) and never changed afterwards:
 * the CPU does not change under a running process.
 * The environment variable GPT2FFN_ISA (for tests and benchmarks) caps what
 * the arithmetic kernels use: "portable" clears avx2_fma, avx512f,
 * amx_bf16 and dpbf16, "avx2" clears avx512f, amx_bf16 and dpbf16,
 * "avx512" clears amx_bf16 and dpbf16, "avx512_bf16" clears amx_bf16,
 * "amx" clears dpbf16; it never adds what the CPU lacks. F16C and SHA stay: their results are exact either way. */
const g2f_cpu *g2f_cpu_features(void);

/* dst[i] = float of the IEEE half at src + 2 i (src may be unaligned), with
 * F16C; only when g2f_cpu_features()->f16c. Exact, like g2f_f16_to_f32. */
void g2f_cpu_f16_to_f32(const unsigned char *src, float *dst, size_t n);
/* With F16C, only when g2f_cpu_features()->f16c: the IEEE half of v
 * (nearest even), g2f_f32_to_f16's bits for every v; and v rounded to half
 * and back, g2f_f16_to_f32 (g2f_f32_to_f16 (v)) for every v but NaN, which
 * stays as it is. Hardware, for the tolerances' many scalar roundings. */
unsigned short g2f_cpu_f32_to_f16(float v);
float g2f_cpu_round_f16(float v);
/* g2f_cpu_round_f16 of in[0..n) into out (in place allowed), 8 at a time;
 * only when g2f_cpu_features()->f16c. A NaN gives a NaN, not always its own
 * bits. */
void g2f_cpu_round_f16_span(const float *in, float *out, size_t n);
/* g2f_cpu_f32_to_f16 of in[0..n) into out, 8 at a time (NaN too: its
 * bits are g2f_f32_to_f16's); only when g2f_cpu_features()->f16c. */
void g2f_cpu_f32_to_f16_span(const float *in, unsigned short *out, size_t n);

/* The threads a parallel loop of the kernels and checks uses: n_threads
 * when > 0, else OpenMP's default (OMP_NUM_THREADS or the cores); 1 in a
 * build without OpenMP. */
int g2f_threads(int n_threads);
/* Makes n_threads (> 0) OpenMP's default team: what g2f_threads(0) and the
 * library's own parallel regions without a thread count (g2f_file's page
 * table fills) use. The CLI's --threads. No effect without OpenMP. */
void g2f_threads_set_default(int n_threads);

#endif
