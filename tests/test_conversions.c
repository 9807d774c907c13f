/* The float conversions every reader and the rounding hypotheses use:
 * g2f_f32_to_f16 against the compiler's _Float16 conversion (IEEE round to
 * nearest even, overflow to infinity, subnormals), and g2f_f32_to_bf16
 * against round to nearest even written out here in double, on every
 * f32 exponent and the mantissa patterns around each rounding edge (below,
 * at and above the tie, with an even and an odd kept part); and both back
 * to f32 exactly. Then the unit roundoff the tolerances and diagnoses use
 * (g2f_round_unit) bounds each rounding's relative error, tightly. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "g2f_cpu.h"
#include "g2f_tensor.h"
#include "g2f_tol.h"

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* bf16 by round to nearest even, the slow way: the two neighbours and a
 * comparison of distances in double (exact for these). */
static uint16_t bf16_reference(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    if (isnan(f)) return (uint16_t)((b >> 16) | 0x40u);
    if (isinf(f)) return (uint16_t)(b >> 16);
    uint32_t lo = b & 0xffff0000u, hi = lo + 0x10000u; /* hi may be infinity: still the next value up */
    double d_lo = fabs((double)f - (double)from_bits(lo)), d_hi = fabs((double)from_bits(hi) - (double)f);
    if (isinf(from_bits(hi))) d_hi = fabs(ldexp(1.0, 128) - fabs((double)f)); /* the rounding's infinity */
    if (d_lo < d_hi || (d_lo == d_hi && !((lo >> 16) & 1u))) return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

static const uint32_t edges[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000};

static void bf16_should_round_to_nearest_even(void) {
    size_t bad = 0;
    for (uint32_t top = 0; top < 0x10000u; top++)
        for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
            float f = from_bits(top << 16 | (edges[e] & 0xffffu));
            uint16_t got = g2f_f32_to_bf16(f), want = bf16_reference(f);
            if (got != want && bad++ < 5)
                fprintf(stderr, "bf16 of %a (0x%08x): 0x%04x, want 0x%04x\n", (double)f, top << 16 | edges[e], got, want);
            if (!isnan(f) && g2f_bf16_to_f32(got) != from_bits((uint32_t)got << 16)) bad++;
        }
    CHECK(bad == 0);
}

static void f16_should_round_like_the_compilers_float16(void) {
#ifdef __FLT16_MANT_DIG__
    size_t bad = 0;
    for (uint32_t top = 0; top < (1u << 19); top++) /* sign, exponent, the 10 kept mantissa bits */
        for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
            float f = from_bits(top << 13 | (edges[e] & 0x1fffu));
            _Float16 h = (_Float16)f;
            uint16_t want, got = g2f_f32_to_f16(f);
            memcpy(&want, &h, sizeof want);
            if (isnan(f) ? (got & 0x7c00u) != 0x7c00u || !(got & 0x3ffu) : got != want) {
                if (bad++ < 5) fprintf(stderr, "f16 of %a: 0x%04x, want 0x%04x\n", (double)f, got, want);
            }
            if (!isnan(f) && g2f_f16_to_f32(got) != (float)h) bad++;
        }
    CHECK(bad == 0);
#else
    fprintf(stderr, "no _Float16 in this compiler: f16 checked by the other tests only\n");
#endif
}

/* With F16C, the hardware conversions the tolerances use
 * (g2f_cpu_f32_to_f16, g2f_cpu_round_f16) give g2f_f32_to_f16's bits and
 * its round trip's value on the same grid of floats (NaN: a NaN). */
static void f16c_conversions_should_equal_the_portable_ones(void) {
    if (!g2f_cpu_features()->f16c) {
        fprintf(stderr, "no F16C on this CPU: the portable conversions only\n");
        return;
    }
    size_t bad = 0;
    for (uint32_t top = 0; top < (1u << 19); top++)
        for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
            float f = from_bits(top << 13 | (edges[e] & 0x1fffu));
            uint16_t want = g2f_f32_to_f16(f), got = g2f_cpu_f32_to_f16(f);
            float r = g2f_cpu_round_f16(f), rw = g2f_f16_to_f32(want);
            if (got != want || (isnan(f) ? !isnan(r) : memcmp(&r, &rw, sizeof r) != 0)) {
                if (bad++ < 5) fprintf(stderr, "f16 of %a: 0x%04x and %a, want 0x%04x and %a\n", (double)f, got, (double)r, want, (double)rw);
            }
        }
    CHECK(bad == 0);
}

/* Counts the elements of out that are not g2f_cpu_round_f16 of in (NaN:
 * a NaN). */
static size_t span_misses(const float *in, const float *out, size_t k) {
    size_t bad = 0;
    for (size_t i = 0; i < k; i++) {
        float want = g2f_cpu_round_f16(in[i]);
        if (isnan(in[i]) ? !isnan(out[i]) : memcmp(&out[i], &want, sizeof want) != 0)
            if (bad++ < 5)
                fprintf(stderr, "span round of %a: %a, want %a\n", (double)in[i], (double)out[i], (double)want);
    }
    return bad;
}

/* The grid of the span tests (every top 19 bits with each of edges' low
 * 13) in chunks of GRID_CHUNK floats (an odd size: every offset of the 8
 * lanes); check(in, k) counts the misses of a chunk. */
enum { GRID_CHUNK = 4099 };
static size_t over_grid(size_t (*check)(const float *in, size_t k)) {
    static float in[GRID_CHUNK];
    size_t bad = 0, k = 0, n_edges = sizeof edges / sizeof edges[0];
    for (uint32_t top = 0; top < (1u << 19); top++)
        for (size_t e = 0; e < n_edges; e++) {
            in[k++] = from_bits(top << 13 | (edges[e] & 0x1fffu));
            if (k < GRID_CHUNK && !(top + 1 == (1u << 19) && e + 1 == n_edges)) continue;
            bad += check(in, k);
            k = 0;
        }
    return bad;
}

/* into another buffer, then in place */
static size_t round_span_misses(const float *in, size_t k) {
    static float out[GRID_CHUNK];
    g2f_cpu_round_f16_span(in, out, k);
    size_t bad = span_misses(in, out, k);
    memcpy(out, in, k * sizeof(float));
    g2f_cpu_round_f16_span(out, out, k);
    return bad + span_misses(in, out, k);
}

/* The span form (8 at a time, g2f_cpu_round_f16_span, which the f16 table
 * form's tolerance uses, in place) gives g2f_cpu_round_f16's bits on the
 * same grid, at every offset of the 8, into another buffer and in place. */
static void f16c_round_span_should_equal_one_at_a_time(void) {
    if (!g2f_cpu_features()->f16c) return; /* said by the test above */
    CHECK(over_grid(round_span_misses) == 0);
}

static size_t half_span_misses(const float *in, size_t k) {
    static unsigned short out[GRID_CHUNK];
    size_t bad = 0;
    g2f_cpu_f32_to_f16_span(in, out, k);
    for (size_t i = 0; i < k; i++)
        if (out[i] != g2f_f32_to_f16(in[i]) && bad++ < 5)
            fprintf(stderr, "span half of %a: 0x%04x, want 0x%04x\n", (double)in[i], out[i], g2f_f32_to_f16(in[i]));
    return bad;
}

/* The halves 8 at a time (g2f_cpu_f32_to_f16_span, which the f16 table
 * form's lookups use) are g2f_f32_to_f16's bits on the same grid, NaN
 * payloads too, at every offset of the 8. */
static void f16c_half_span_should_equal_the_portable_halves(void) {
    if (!g2f_cpu_features()->f16c) return; /* said by the test above */
    CHECK(over_grid(half_span_misses) == 0);
}

/* |round(x) - x| <= u |x| for every normal x, and some x comes within 1% of
 * it (x just below a tie): a unit twice too large or too small fails. */
static void round_unit_should_bound_each_rounding_tightly(void) {
    for (int r = G2F_ROUND_F16; r < G2F_ROUND_COUNT; r++) {
        double u = g2f_round_unit((g2f_round)r), worst = 0;
        for (uint32_t top = 0x1c800u; top < 0x23800u; top++) /* |x| in [2^-13, 2^15), inside f16's normal range */
            for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
                float x = from_bits(top << 13 | (edges[e] & 0x1fffu));
                double rel = fabs((double)g2f_round_value((g2f_round)r, x) - x) / x;
                if (rel > worst) worst = rel;
            }
        if (!(worst <= u && worst > 0.99 * u)) {
            fprintf(stderr, "rounding %d: unit %g, largest relative error %g\n", r, u, worst);
            check_failures++;
        }
    }
    CHECK(g2f_round_unit(G2F_ROUND_NONE) == 0);
}

/* The tolerance's unit for a fixture's input is the rounding reading it to
 * float32 applies: 2^-24 for F64 (read as float), the dtype's own for F16
 * and BF16, 0 for F32; each checked against the largest relative error of
 * that conversion on values just below ties. */
static void tol_units_should_be_the_rounding_of_reading_the_input(void) {
    double worst64 = 0;
    for (uint64_t k = 1; k < 200000; k++) { /* doubles near 1 + (k + 1/2) 2^-23, just below the tie */
        double x = 1.0 + ldexp((double)k + 0.5 - 1e-9, -23);
        double rel = fabs((double)(float)x - x) / x;
        if (rel > worst64) worst64 = rel;
    }
    double u64 = g2f_tol_units_for(G2F_DTYPE_F64, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, 0).u_in;
    CHECK(worst64 <= u64 && worst64 > 0.99 * u64);
    CHECK(g2f_tol_units_for(G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, 0).u_in == 0);
    CHECK(g2f_tol_units_for(G2F_DTYPE_F16, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, 0).u_in ==
          g2f_round_unit(G2F_ROUND_F16));
    CHECK(g2f_tol_units_for(G2F_DTYPE_BF16, G2F_DTYPE_F32, G2F_DTYPE_F32, G2F_DTYPE_F32, 0).u_in ==
          g2f_round_unit(G2F_ROUND_BF16));
}

int main(void) {
    RUN(bf16_should_round_to_nearest_even);
    RUN(f16_should_round_like_the_compilers_float16);
    RUN(f16c_conversions_should_equal_the_portable_ones);
    RUN(f16c_round_span_should_equal_one_at_a_time);
    RUN(f16c_half_span_should_equal_the_portable_halves);
    RUN(round_unit_should_bound_each_rounding_tightly);
    RUN(tol_units_should_be_the_rounding_of_reading_the_input);
    CHECK_EXIT();
}
