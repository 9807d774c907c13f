/* llm.c debug-state reader: every bound of the checklist in
 * formats/g2f_llmc_state.h and of SECURITY.md's Limits table (header B and
 * T, the caller's V, Vp and P, the sizes' overflow, the exact file size
 * with logits of V or Vp, the token ids), at the exact limit (accepted) and
 * one past it (refused with the check's message). Files at the largest
 * sizes are anonymous mappings that reserve nothing: the reader touches the
 * header and the ids only, and this test the first and last byte of every
 * view. */
#include "bounds.h"
#include "g2f_llmc_state.h"

typedef struct sdims {
    int32_t version, B, T;
    uint64_t V, Vp, P; /* the checkpoint's sizes */
    uint64_t Vl;       /* the logits' width in the file */
} sdims;

/* B=2, T=3, V=5 padded to 8, 7 gradient floats; logits unpadded. */
static const sdims small = {2, 2, 3, 5, 8, 7, 5};

static uint64_t st_size(const sdims *d) {
    const uint64_t bt = (uint64_t)d->B * (uint64_t)d->T;
    return 1024 + 8 * bt + 4 * bt * d->Vl + 4 + 4 * d->P;
}

/* A poke: the int32 v at token index `at` of x (which 0) or y (which 1). */
typedef struct poke {
    int on, which;
    uint64_t at;
    int32_t v;
} poke;

/* Parses a file of d's header and size + delta bytes (zeros after the
 * header, but the poke), from a mapping that reserves no memory, with d's
 * sizes (or none: nodims); touches every view. */
static g2f_status s_parse(const sdims *d, long long delta, int nodims, poke pk, g2f_error *err) {
    const uint64_t size = (uint64_t)((long long)st_size(d) + delta);
    memset(err, 0, sizeof *err);
    unsigned char *p = zero_map(size);
    if (!p) return g2f_error_set(err, G2F_ERR_NOMEM, "no mapping of %llu bytes", (unsigned long long)size);
    const int32_t h[4] = {G2F_LLMC_STATE_MAGIC, d->version, d->B, d->T};
    for (int i = 0; i < 4; i++) b_put(&(bytes){p, size, size}, 4 * (size_t)i, (uint32_t)h[i], 4);
    if (pk.on) {
        const uint64_t at = 1024 + 4 * (pk.which * (uint64_t)d->B * (uint64_t)d->T + pk.at);
        b_put(&(bytes){p, size, size}, (size_t)at, (uint32_t)pk.v, 4);
    }
    const g2f_llmc_state_dims dims = {d->V, d->Vp, d->P};
    g2f_table t;
    float *cut = NULL;
    g2f_status st = g2f_llmc_state_parse(p, size, "s.bin", nodims ? NULL : &dims, &t, &cut, err);
    if (st == G2F_OK) {
        for (size_t i = 0; i < t.count; i++) {
            volatile unsigned char x = t.tensors[i].data[0];
            x = t.tensors[i].data[t.tensors[i].nbytes - 1];
            (void)x;
        }
        CHECK(t.count == 4 && (cut != NULL) == (d->Vl != d->V));
        g2f_table_free(&t);
        free(cut);
    } else {
        CHECK(t.count == 0 && t.tensors == NULL && cut == NULL);
    }
    zero_unmap(p, size);
    return st;
}

static const poke none = {0, 0, 0, 0};
#define PARSE(d, delta) s_parse((d), (delta), 0, none, &err)

/* The header and zeros, n bytes in all (or the header's first n). */
static g2f_status s_header(const sdims *d, size_t n, g2f_error *err) {
    bytes b = {0};
    b_fill(&b, 0, n > 1024 ? n : 1024);
    const int32_t h[4] = {G2F_LLMC_STATE_MAGIC, d->version, d->B, d->T};
    for (int i = 0; i < 4; i++) b_put(&b, 4 * (size_t)i, (uint32_t)h[i], 4);
    b.n = n;
    unsigned char *q = b_exact(&b);
    const g2f_llmc_state_dims dims = {d->V, d->Vp, d->P};
    g2f_table t;
    float *cut;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_llmc_state_parse(q, n, "s.bin", &dims, &t, &cut, err);
    if (st == G2F_OK) g2f_table_free(&t), free(cut);
    free(q);
    b_free(&b);
    return st;
}

/* checklist 1 and 2: the 4-byte magic, then the 1024-byte header */
static void state_should_need_the_magic_then_the_whole_header(void) {
    g2f_error err;
    PASSES_CHECK(s_header(&small, 4, &err), err, "too short for the llm.c state magic",
                 "file is 4 bytes, too short for the 1024-byte llm.c state header");
    REFUSED(s_header(&small, 3, &err), err, "file is 3 bytes, too short for the llm.c state magic");
    PASSES_CHECK(s_header(&small, 1024, &err), err, "too short", "file is 1024 bytes but B=2, T=3");
    REFUSED(s_header(&small, 1023, &err), err, "file is 1023 bytes, too short for the 1024-byte llm.c state header");
    REFUSED(s_header(&small, 0, &err), err, "file is 0 bytes");
}

/* checklist 3: version 2 only */
static void state_should_read_version_two_only(void) {
    g2f_error err;
    for (int32_t v = 0; v <= 3; v++) {
        sdims d = small;
        d.version = v;
        if (v == 2) ACCEPTED(PARSE(&d, 0), err);
        else REFUSED(PARSE(&d, 0), err, "header[1] version is");
    }
}

/* checklist 4: B in [1, 2^20], T in [1, 2^20] */
static void state_should_take_batch_and_length_up_to_their_limits(void) {
    g2f_error err;
    const int32_t values[] = {INT32_MIN, -1, 0, 1, 1 << 20, (1 << 20) + 1, INT32_MAX};
    for (int field = 0; field < 2; field++)
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            sdims d = {2, 1, 1, 1, 1, 1, 1};
            const int32_t v = values[k];
            *(field ? &d.T : &d.B) = v;
            char needle[96];
            snprintf(needle, sizeof needle, "header[%d] %s is %ld but must be in [1, 1048576]", field ? 3 : 2,
                     field ? "seq_len" : "batch_size", (long)v);
            if (v >= 1 && v <= (1 << 20)) ACCEPTED(PARSE(&d, 0), err);
            else REFUSED(s_header(&d, 1024, &err), err, needle);
        }
}

/* checklist 5: the caller's V in [1, 2^24], Vp in [V, 2^24], P in [1, 2^48] */
static void state_should_take_the_checkpoint_sizes_up_to_their_limits(void) {
    g2f_error err;
    REFUSED(s_parse(&small, 0, 1, none, &err), err, "s.bin: an llm.c debug state (B=2, T=3) is read with its checkpoint");
    CHECK(err.status == G2F_ERR_USAGE);
    const uint64_t vs[] = {0, 1, 1 << 24, (1 << 24) + 1};
    for (size_t k = 0; k < 4; k++) {
        sdims d = {2, 1, 1, vs[k], vs[k], 1, vs[k]};
        if (k == 1 || k == 2) ACCEPTED(PARSE(&d, 0), err);
        else REFUSED(s_header(&d, 1024, &err), err, "need V in [1, 16777216], Vp in [V, 16777216], P in [1, 2^48]");
    }
    const uint64_t vps[] = {4, 5, 1 << 24, (1 << 24) + 1}; /* V = 5 */
    for (size_t k = 0; k < 4; k++) {
        sdims d = small;
        d.Vp = vps[k];
        if (k == 1 || k == 2) ACCEPTED(PARSE(&d, 0), err);
        else REFUSED(PARSE(&d, 0), err, "padded vocab");
    }
    const uint64_t ps[] = {0, 1, (uint64_t)1 << 48, ((uint64_t)1 << 48) + 1};
    for (size_t k = 0; k < 4; k++) {
        sdims d = small;
        d.P = ps[k];
        if (k == 1) ACCEPTED(PARSE(&d, 0), err);
        else if (k == 2) PASSES_CHECK(s_header(&d, 4096, &err), err, "need V in", "gradient floats imply");
        else REFUSED(s_header(&d, 4096, &err), err, "parameters: need V in");
    }
}

/* checklist 6: the sizes in 64 bits: B T V x 4 = 2^63 fits, 2^64 does not */
static void state_sizes_should_not_overflow(void) {
    g2f_error err;
    sdims d = {2, 1 << 20, 1 << 20, (uint64_t)1 << 21, (uint64_t)1 << 21, 1, (uint64_t)1 << 21};
    PASSES_CHECK(s_header(&d, 1024, &err), err, "overflow", "imply 9223380832947799048 bytes");
    d.V = d.Vp = (uint64_t)1 << 22;
    REFUSED(s_header(&d, 1024, &err), err, "sizes for B=1048576, T=1048576, V=4194304, Vp=4194304 overflow");
    d.V = (uint64_t)1 << 21; /* V fits, Vp does not */
    REFUSED(s_header(&d, 1024, &err), err, "overflow");
}

/* checklist 7: exactly 1024 + 8BT + 4BT Vl + 4 + 4P bytes, Vl = V or Vp */
static void state_should_be_exactly_the_size_of_v_or_vp_logits(void) {
    g2f_error err;
    for (int padded = 0; padded < 2; padded++) {
        sdims d = small;
        d.Vl = padded ? d.Vp : d.V;
        ACCEPTED(PARSE(&d, 0), err);
        REFUSED(PARSE(&d, -1), err, padded ? "more than V's logits and less than Vp's" : "truncated");
        REFUSED(PARSE(&d, 1), err, padded ? "trailing bytes" : "more than V's logits and less than Vp's");
        REFUSED(PARSE(&d, -4), err, "imply 1224 bytes (1024 + x, y (B, T) int32 + logits (B, T, V) + loss + "
                                    "gradients) (or 1296 with logits (B, T, Vp=8))");
    }
    sdims d = small; /* logits between V and Vp wide: neither */
    d.Vl = 6;
    REFUSED(PARSE(&d, 0), err, "file is 1248 bytes but B=2, T=3 with the checkpoint's V=5 and 7 gradient floats imply "
                               "1224 bytes");
    REFUSED(PARSE(&d, 0), err, "more than V's logits and less than Vp's");
    d = small; /* nothing padded: one size */
    d.Vp = d.V;
    ACCEPTED(PARSE(&d, 0), err);
    REFUSED(PARSE(&d, 4), err, "imply 1224 bytes (1024 + x, y (B, T) int32 + logits (B, T, V) + loss + gradients): "
                               "trailing bytes");
}

/* checklist 8: every x and y in [0, V), the last one included */
static void state_token_ids_should_lie_in_the_vocabulary(void) {
    g2f_error err;
    const int32_t ids[] = {INT32_MIN, -1, 0, 4, 5, INT32_MAX}; /* V = 5 */
    for (int which = 0; which < 2; which++)
        for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
            const poke pk = {1, which, 5, ids[k]}; /* [1, 2]: the last of B=2, T=3 */
            char needle[128];
            snprintf(needle, sizeof needle, "s.bin: %s [1, 2] is token id %ld, outside the vocabulary 0..4",
                     which ? "targets (y)" : "input_ids (x)", (long)ids[k]);
            if (ids[k] >= 0 && ids[k] < 5) ACCEPTED(s_parse(&small, 0, 0, pk, &err), err);
            else REFUSED(s_parse(&small, 0, 0, pk, &err), err, needle);
        }
}

int main(void) {
    RUN(state_should_need_the_magic_then_the_whole_header);
    RUN(state_should_read_version_two_only);
    RUN(state_should_take_batch_and_length_up_to_their_limits);
    RUN(state_should_take_the_checkpoint_sizes_up_to_their_limits);
    RUN(state_sizes_should_not_overflow);
    RUN(state_should_be_exactly_the_size_of_v_or_vp_logits);
    RUN(state_token_ids_should_lie_in_the_vocabulary);
    CHECK_EXIT();
}
