/* llm.c reader: every bound of the checklist in formats/g2f_llmc.h and of
 * SECURITY.md's Limits table (header dimensions, exact file size), at the
 * exact limit (accepted) and one past it (refused with the check's message).
 * A file at the largest dimensions is up to 200 GB: it is an anonymous
 * mapping that reserves nothing, since the reader only reads the header. */
#include "bounds.h"
#include "g2f_llmc.h"

typedef struct dims {
    int32_t version, maxT, V, L, NH, C, Vp;
} dims;

static const dims small = {3, 8, 10, 2, 2, 4, 12};

/* Parameters of a checkpoint (g2f_llmc.h: wte, wpe, 12 per layer, lnf). */
static uint64_t params(const dims *d) {
    const uint64_t C = (uint64_t)d->C;
    return (uint64_t)d->Vp * C + (uint64_t)d->maxT * C + (uint64_t)d->L * (12 * C * C + 13 * C) + 2 * C;
}
static uint64_t file_size(const dims *d) { return 1024 + params(d) * (d->version == 3 ? 4 : 2); }

static void header(unsigned char *p, const dims *d) {
    const int32_t h[8] = {G2F_LLMC_MAGIC, d->version, d->maxT, d->V, d->L, d->NH, d->C, d->Vp};
    memset(p, 0, 1024);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++) p[4 * i + k] = (unsigned char)((uint32_t)h[i] >> (8 * k));
}

/* Parses a file of d's header and size + delta bytes (zeros after the
 * header), from a mapping that reserves no memory; touches every view. */
static g2f_status l_parse(const dims *d, long long delta, size_t *count, g2f_error *err) {
    const uint64_t size = (uint64_t)((long long)file_size(d) + delta);
    memset(err, 0, sizeof *err);
    unsigned char *p = zero_map(size);
    if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "no mapping of %llu bytes", (unsigned long long)size);
    header(p, d);
    g2f_table t;
    g2f_status st = g2f_llmc_parse(p, size, "b.bin", &t, err);
    if (st == G2F_OK) {
        for (size_t i = 0; i < t.count; i++) {
            volatile unsigned char x = t.tensors[i].data[0];
            x = t.tensors[i].data[t.tensors[i].nbytes - 1];
            (void)x;
        }
        if (count) *count = t.count;
        g2f_table_free(&t);
    }
    zero_unmap(p, size);
    return st;
}

/* Accepted; or, on a machine that refuses a mapping this large, at least
 * past the range checks (refused only for its size, the one it implies). */
static void accepted_or_sized(const dims *d, int line) {
    g2f_error err;
    g2f_status st = l_parse(d, 0, NULL, &err);
    if (st == G2F_ERR_NOMEM && strstr(err.msg, "no mapping")) {
        fprintf(stderr, "line %d: %s: checked the size the header implies instead\n", line, err.msg);
        bytes b = {0};
        b_fill(&b, 0, 1024);
        header(b.p, d);
        char needle[64];
        snprintf(needle, sizeof needle, "implies %llu bytes", (unsigned long long)file_size(d));
        st = parse_exact(g2f_llmc_parse, &b, "b.bin", NULL, &err);
        expect_passes(st, &err, "must be in", needle, line);
        b_free(&b);
        return;
    }
    expect_ok(st, &err, line);
}
#define ACCEPTED_OR_SIZED(d) accepted_or_sized((d), __LINE__)

/* llmc checklist 1 and 2: the file holds the 4-byte magic, then the
 * 1024-byte header */
static void llmc_should_need_the_magic_then_the_whole_header(void) {
    bytes b = {0};
    g2f_error err;
    b_fill(&b, 0, 1024);
    header(b.p, &small);
    b.n = 4;
    PASSES_CHECK(parse_exact(g2f_llmc_parse, &b, "b.bin", NULL, &err), err, "too short for the llm.c magic",
                 "file is 4 bytes, too short for the 1024-byte llm.c header");
    b.n = 3;
    REFUSED(parse_exact(g2f_llmc_parse, &b, "b.bin", NULL, &err), err,
            "file is 3 bytes, too short for the llm.c magic");
    b.n = 1024;
    PASSES_CHECK(parse_exact(g2f_llmc_parse, &b, "b.bin", NULL, &err), err, "too short", "implies");
    b.n = 1023;
    REFUSED(parse_exact(g2f_llmc_parse, &b, "b.bin", NULL, &err), err,
            "file is 1023 bytes, too short for the 1024-byte llm.c header");
    b_free(&b);
}

/* llmc checklist 3: version 3 (float32) or 5 (bfloat16) */
static void llmc_should_read_versions_three_and_five_only(void) {
    g2f_error err;
    for (int32_t v = 2; v <= 6; v++) {
        dims d = small;
        d.version = v;
        if (v == 3 || v == 5) ACCEPTED(l_parse(&d, 0, NULL, &err), err);
        else REFUSED(l_parse(&d, 0, NULL, &err), err, "header[1] version is");
    }
}

/* llmc checklist 4: maxT in [1, 2^20], V in [1, 2^24], L in [1, 1024], C in
 * [1, 65536], NH in [1, C] dividing C, Vp in [V, 2^24] */
static void llmc_should_take_each_dimension_up_to_its_limits(void) {
    static const struct {
        int field; /* 0 maxT, 1 V, 2 L, 3 C */
        int32_t hi;
        const char *name;
        int index;
    } f[] = {{0, G2F_LLMC_MAX_SEQ_LEN, "max_seq_len", 2},
             {1, G2F_LLMC_MAX_VOCAB, "vocab_size", 3},
             {2, G2F_LLMC_MAX_LAYERS, "num_layers", 4},
             {3, G2F_LLMC_MAX_CHANNELS, "channels", 6}};
    g2f_error err;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const int32_t values[4] = {0, 1, f[i].hi, f[i].hi + 1};
        for (int k = 0; k < 4; k++) {
            dims d = {3, 1, 1, 1, 1, 1, 1};
            int32_t *slot = f[i].field == 0 ? &d.maxT : f[i].field == 1 ? &d.V : f[i].field == 2 ? &d.L : &d.C;
            *slot = values[k];
            if (f[i].field == 1) d.Vp = d.V; /* Vp >= V */
            char needle[96];
            snprintf(needle, sizeof needle, "header[%d] %s is %ld but must be in [1, %ld]", f[i].index, f[i].name,
                     (long)values[k], (long)f[i].hi);
            if (k == 0 || k == 3) REFUSED(l_parse(&d, 0, NULL, &err), err, needle);
            else ACCEPTED_OR_SIZED(&d);
        }
    }
    /* heads: in [1, C], dividing C */
    dims d = small; /* C = 4 */
    for (int32_t nh = 0; nh <= 5; nh++) {
        d.NH = nh;
        char needle[96];
        snprintf(needle, sizeof needle, "header[5] num_heads is %d but must be in [1, 4]", (int)nh);
        if (nh == 0 || nh == 5) REFUSED(l_parse(&d, 0, NULL, &err), err, needle);
        else if (nh == 3) REFUSED(l_parse(&d, 0, NULL, &err), err, "header[5] num_heads 3 does not divide channels 4");
        else ACCEPTED(l_parse(&d, 0, NULL, &err), err);
    }
    /* padded vocabulary: in [V, 2^24] */
    d = small; /* V = 10 */
    const int32_t vps[4] = {9, 10, G2F_LLMC_MAX_VOCAB, G2F_LLMC_MAX_VOCAB + 1};
    for (int k = 0; k < 4; k++) {
        d.Vp = vps[k];
        char needle[128];
        snprintf(needle, sizeof needle,
                 "header[7] padded_vocab_size (at least vocab_size) is %ld but must be in [10, %d]", (long)vps[k],
                 G2F_LLMC_MAX_VOCAB);
        if (k == 0 || k == 3) REFUSED(l_parse(&d, 0, NULL, &err), err, needle);
        else ACCEPTED_OR_SIZED(&d);
    }
}

/* llmc checklist 6: the file is exactly 1024 + parameters x dtype size bytes */
static void llmc_should_be_exactly_the_size_the_header_implies(void) {
    g2f_error err;
    size_t count = 0;
    for (int32_t v = 3; v <= 5; v += 2) {
        dims d = small;
        d.version = v;
        ACCEPTED(l_parse(&d, 0, &count, &err), err);
        CHECK(count == 4 + 12 * (size_t)d.L);
        REFUSED(l_parse(&d, -1, NULL, &err), err, ": truncated");
        REFUSED(l_parse(&d, 1, NULL, &err), err, ": trailing bytes");
        char needle[96];
        snprintf(needle, sizeof needle, "implies %llu bytes", (unsigned long long)file_size(&d));
        REFUSED(l_parse(&d, 1, NULL, &err), err, needle);
    }
}

int main(void) {
    RUN(llmc_should_need_the_magic_then_the_whole_header);
    RUN(llmc_should_read_versions_three_and_five_only);
    RUN(llmc_should_take_each_dimension_up_to_its_limits);
    RUN(llmc_should_be_exactly_the_size_the_header_implies);
    CHECK_EXIT();
}
