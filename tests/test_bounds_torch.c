/* torch.save reader: every bound of the checklist in formats/g2f_torch.h and
 * of SECURITY.md's Limits table (data.pkl size, walk depth and visits, name
 * length, storage sizes and offsets), at the exact limit (accepted) and one
 * past it (refused with the check's message). The zip and pickle bounds
 * underneath have their own tests (test_bounds_zip, test_bounds_pickle). */
#include "bounds.h"
#include "g2f_pickle.h"
#include "g2f_torch.h"

static const float storage[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* A torch.save zip: arch/data.pkl (pkl) and one storage, arch/data/0, of
 * storage_bytes bytes. */
static void torch_archive(bytes *out, const bytes *pkl, size_t storage_bytes) {
    const zentry e[] = {{"arch/data.pkl", pkl->p, pkl->n, 0, NULL, 0, 0},
                        {"arch/data/0", storage, storage_bytes, 0, NULL, 0, 0}};
    zlay lay;
    out->n = 0;
    zip_write(out, e, 2, 0, 0, &lay);
}

static g2f_status t_parse(const bytes *b, size_t *count, g2f_error *err) {
    return parse_exact(g2f_torch_parse, b, "b.pt", count, err);
}

static void start(bytes *b) {
    b->n = 0;
    pk_op(b, 0x80);
    pk_op(b, 2);
}
/* A tensor of shape [n] at offset off of FloatStorage "0" of numel elements. */
static void tensor1(bytes *b, uint32_t numel, uint32_t off, uint32_t n) {
    const uint32_t one = 1;
    pk_tensor(b, "FloatStorage", "0", numel, off, 1, &n, &one);
}
static void memo_put(bytes *b, uint32_t i) {
    pk_op(b, 'r');
    b_u32(b, i);
}
static void memo_get(bytes *b, uint32_t i) {
    pk_op(b, 'j');
    b_u32(b, i);
}

/* torch checklist 5 and Limits: a deflated data.pkl of at most
 * G2F_TORCH_MAX_PICKLE (1 GiB) inflated */
static void torch_should_inflate_a_pickle_of_up_to_one_gibibyte(void) {
    const size_t c = 1000000; /* compressed bytes: 1 GiB is then above 1000:1 */
    unsigned char *junk = calloc(c, 1);
    CHECK(junk != NULL);
    if (!junk) return;
    bytes b = {0};
    zlay lay;
    g2f_error err;
    for (uint64_t size = G2F_TORCH_MAX_PICKLE; size <= G2F_TORCH_MAX_PICKLE + 1; size++) {
        const zentry e[] = {{"arch/data.pkl", NULL, (size_t)size, 1, junk, c, 0}};
        b.n = 0;
        zip_write(&b, e, 1, 0, 0, &lay);
        if (size == G2F_TORCH_MAX_PICKLE)
            PASSES_CHECK(t_parse(&b, NULL, &err), err, "above the limit",
                         "claims 1073741824 bytes from 1000000 compressed, a ratio above 1000:1");
        else
            REFUSED(t_parse(&b, NULL, &err), err,
                    "member 'arch/data.pkl' is 1073741825 bytes, above the limit of 1073741824");
    }
    free(junk);
    b_free(&b);
}

/* torch checklist 6: the walk goes at most G2F_TORCH_MAX_DEPTH (64) levels
 * deep. The chain of dicts is built through the memo, each dict set into its
 * parent while still empty, so the pickle machine's own nesting count (which
 * sees depth 2) does not stop it first. */
static void torch_should_walk_down_to_the_depth_limit(void) {
    bytes p = {0}, b = {0};
    g2f_error err;
    for (uint32_t depth = G2F_TORCH_MAX_DEPTH; depth <= G2F_TORCH_MAX_DEPTH + 1; depth++) {
        const uint32_t dicts = depth; /* the root at depth 0, the tensor at depth `dicts` */
        start(&p);
        pk_op(&p, '}');
        memo_put(&p, 0);
        for (uint32_t i = 1; i < dicts; i++) {
            memo_get(&p, i - 1);
            pk_ustr(&p, "a");
            pk_op(&p, '}');
            memo_put(&p, i);
            pk_op(&p, 's');
        }
        memo_get(&p, dicts - 1);
        pk_ustr(&p, "w");
        tensor1(&p, 1, 0, 1);
        pk_op(&p, 's');
        memo_get(&p, 0);
        pk_op(&p, '.');
        torch_archive(&b, &p, 4);
        size_t count = 0;
        if (depth == G2F_TORCH_MAX_DEPTH) {
            ACCEPTED(t_parse(&b, &count, &err), err);
            CHECK(count == 1);
        } else {
            REFUSED(t_parse(&b, NULL, &err), err, "is nested deeper than 64 levels (or cyclic)");
        }
    }
    b_free(&p);
    b_free(&b);
}

/* torch checklist 6: at most G2F_TORCH_VISITS_PER_VALUE (4) x values + 1024
 * nodes visited: a list holding the one shared None n times has 2 values,
 * so 1032 visits (the list and 1031 items) are allowed, not 1033 */
static void torch_should_visit_up_to_the_budget(void) {
    bytes p = {0}, b = {0};
    g2f_error err;
    for (size_t n = 1031; n <= 1032; n++) {
        start(&p);
        pk_op(&p, ']');
        pk_op(&p, '(');
        b_fill(&p, 'N', n);
        pk_op(&p, 'e');
        pk_op(&p, '.');
        g2f_pickle *pk = NULL;
        CHECK(g2f_pickle_parse(p.p, p.n, "data.pkl", &pk, &err) == G2F_OK);
        CHECK(pk && g2f_pickle_value_count(pk) == 2);
        g2f_pickle_free(pk);
        torch_archive(&b, &p, 4);
        if (n == 1031) ACCEPTED(t_parse(&b, NULL, &err), err);
        else REFUSED(t_parse(&b, NULL, &err), err, "more than 1032 nodes to visit (containers shared too often)");
    }
    b_free(&p);
    b_free(&b);
}

/* torch checklist 6: tensor names of at most G2F_TORCH_MAX_NAME (4096)
 * bytes, dots included */
static void torch_should_take_names_up_to_the_limit(void) {
    char *key = malloc(G2F_TORCH_MAX_NAME + 2);
    CHECK(key != NULL);
    if (!key) return;
    bytes p = {0}, b = {0};
    g2f_error err;
    for (size_t len = G2F_TORCH_MAX_NAME; len <= G2F_TORCH_MAX_NAME + 1; len++) {
        /* one key of len bytes */
        memset(key, 'k', len);
        key[len] = '\0';
        start(&p);
        pk_op(&p, '}');
        pk_ustr(&p, key);
        tensor1(&p, 1, 0, 1);
        pk_op(&p, 's');
        pk_op(&p, '.');
        torch_archive(&b, &p, 4);
        if (len == G2F_TORCH_MAX_NAME) ACCEPTED(t_parse(&b, NULL, &err), err);
        else REFUSED(t_parse(&b, NULL, &err), err, "tensor at '' cannot be named: a key above it is too long");
        /* two keys joined by a dot: 2047 + 1 + (len - 2048) bytes */
        start(&p);
        pk_op(&p, '}');
        key[2047] = '\0';
        pk_ustr(&p, key);
        pk_op(&p, '}');
        key[2047] = 'k';
        pk_ustr(&p, key + 2048);
        tensor1(&p, 1, 0, 1);
        pk_op(&p, 's');
        pk_op(&p, 's');
        pk_op(&p, '.');
        torch_archive(&b, &p, 4);
        /* (the message quotes the 2047-byte path first: the reason is cut off) */
        if (len == G2F_TORCH_MAX_NAME) ACCEPTED(t_parse(&b, NULL, &err), err);
        else REFUSED(t_parse(&b, NULL, &err), err, "b.pt: tensor at 'kkkkkkkk");
    }
    free(key);
    b_free(&p);
    b_free(&b);
}

/* torch checklist 7: a storage member holds exactly numel x dtype size
 * bytes, and storage offset + element count <= the storage's numel */
static void torch_should_fit_tensors_to_their_storage_to_the_byte(void) {
    bytes p = {0}, b = {0};
    g2f_error err;
    start(&p);
    tensor1(&p, 3, 0, 3);
    pk_op(&p, '.');
    torch_archive(&b, &p, 12);
    ACCEPTED(t_parse(&b, NULL, &err), err);
    torch_archive(&b, &p, 13);
    REFUSED(t_parse(&b, NULL, &err), err,
            "storage 'arch/data/0' holds 13 bytes but its FloatStorage of 3 elements needs 12");
    torch_archive(&b, &p, 11);
    REFUSED(t_parse(&b, NULL, &err), err,
            "storage 'arch/data/0' holds 11 bytes but its FloatStorage of 3 elements needs 12");
    /* 4 elements at offset 2 of a 6-element storage end at its end */
    start(&p);
    tensor1(&p, 6, 2, 4);
    pk_op(&p, '.');
    torch_archive(&b, &p, 24);
    ACCEPTED(t_parse(&b, NULL, &err), err);
    start(&p);
    tensor1(&p, 6, 3, 4);
    pk_op(&p, '.');
    torch_archive(&b, &p, 24);
    REFUSED(t_parse(&b, NULL, &err), err,
            "storage offset 3 + 4 elements runs past the end of storage 'arch/data/0' (6 elements)");
    b_free(&p);
    b_free(&b);
}

/* torch checklist 1: the legacy magic (14 bytes) is recognised in a file of
 * exactly 14 bytes, the zip signature in one of exactly 4 */
static void torch_should_recognise_magics_in_the_shortest_files(void) {
    static const unsigned char legacy[14] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                             0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    bytes b = {0};
    g2f_error err;
    b_bytes(&b, legacy, sizeof legacy);
    REFUSED(t_parse(&b, NULL, &err), err, "legacy (pre-1.6) torch.save format is not supported");
    CHECK(g2f_torch_is_legacy(b.p, 14) && !g2f_torch_is_legacy(b.p, 13));
    b.n = 13;
    REFUSED(t_parse(&b, NULL, &err), err,
            "not a zip archive, so not a torch.save (>= 1.6) checkpoint (it is a raw pickle)");
    b.n = 2;
    REFUSED(t_parse(&b, NULL, &err), err, "(it is a raw pickle)");
    b.n = 0;
    b_str(&b, "PK\x03\x04");
    PASSES_CHECK(t_parse(&b, NULL, &err), err, "not a zip archive", "4 bytes is too short for a zip archive");
    b.n = 3;
    REFUSED(t_parse(&b, NULL, &err), err, "not a zip archive, so not a torch.save (>= 1.6) checkpoint");
    b_free(&b);
}

int main(void) {
    RUN(torch_should_recognise_magics_in_the_shortest_files);
    RUN(torch_should_inflate_a_pickle_of_up_to_one_gibibyte);
    RUN(torch_should_walk_down_to_the_depth_limit);
    RUN(torch_should_visit_up_to_the_budget);
    RUN(torch_should_take_names_up_to_the_limit);
    RUN(torch_should_fit_tensors_to_their_storage_to_the_byte);
    CHECK_EXIT();
}
