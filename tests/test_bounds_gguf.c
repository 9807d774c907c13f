/* GGUF reader: every bound of the checklist in formats/g2f_gguf.h and of
 * SECURITY.md's Limits table, at the exact limit (accepted) and one past it
 * (refused with the check's message). */
#include "bounds.h"
#include "g2f_gguf.h"

enum { T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_UINT64,
       T_INT64, T_FLOAT64 };
enum { G_F32 = 0, G_Q8_0 = 8, G_I8 = 24 };

/* ---- a GGUF builder ---- */

static void g_header(bytes *b, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    b_str(b, "GGUF");
    b_u32(b, 3);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}
/* A GGUF string: u64 length, then the bytes. */
static void g_strn(bytes *b, const char *s, size_t n) {
    b_u64(b, n);
    b_bytes(b, s, n);
}
static void g_str(bytes *b, const char *s) { g_strn(b, s, strlen(s)); }
static void g_kv_u8(bytes *b, const char *key, unsigned v) {
    g_str(b, key);
    b_u32(b, T_UINT8);
    b_u8(b, v);
}
static void g_kv_u32(bytes *b, const char *key, uint32_t v) {
    g_str(b, key);
    b_u32(b, T_UINT32);
    b_u32(b, v);
}
static void g_tinfo(bytes *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset) {
    g_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) b_u64(b, ne[d]);
    b_u32(b, type);
    b_u64(b, offset);
}
static void g_pad(bytes *b, size_t align) {
    while (b->n % align) b_u8(b, 0);
}

static g2f_status g_parse(const bytes *b, size_t *count, g2f_error *err) {
    return parse_exact(g2f_gguf_parse, b, "b.gguf", count, err);
}

/* One F32 tensor 't' of ne {n} at offset 0, data included: a valid file. */
static void g_one_tensor(bytes *b, uint64_t n) {
    g_header(b, 1, 0);
    g_tinfo(b, "t", 1, &n, G_F32, 0);
    g_pad(b, 32);
    b_fill(b, 0, (size_t)n * 4);
}

/* gguf checklist 1: the file holds the 4-byte magic */
static void gguf_should_need_the_four_magic_bytes(void) {
    bytes b = {0};
    g2f_error err;
    b_str(&b, "GGUF");
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "magic", "version at byte 4 needs 4 bytes but only 0 remain");
    b.n = 3;
    REFUSED(g_parse(&b, NULL, &err), err, "magic at byte 0 needs 4 bytes but only 3 remain");
    b_free(&b);
}

/* gguf checklist 2: version 2 or 3 */
static void gguf_should_read_versions_two_and_three_only(void) {
    bytes b = {0};
    g2f_error err;
    g_header(&b, 0, 0);
    for (uint32_t v = 1; v <= 4; v++) {
        b_put(&b, 4, v, 4);
        if (v == 2 || v == 3) ACCEPTED(g_parse(&b, NULL, &err), err);
        else REFUSED(g_parse(&b, NULL, &err), err,
                     v == 1 ? "GGUF version 1 is not supported" : "GGUF version 4 is not supported");
    }
    b_free(&b);
}

/* gguf checklist 3: n_tensors <= G2F_GGUF_MAX_TENSORS, n_kv <= G2F_GGUF_MAX_KV */
static void gguf_should_take_counts_up_to_their_limits(void) {
    bytes b = {0};
    g2f_error err;
    /* a million tensors: the limit lets them through, the bytes that should
     * hold their infos are not there */
    g_header(&b, G2F_GGUF_MAX_TENSORS, 0);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "must be in [0, 1000000]", "can hold at most 0 tensor infos");
    g_header(&b, G2F_GGUF_MAX_TENSORS + 1, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "number of tensors is 1000001 but must be in [0, 1000000]");
    /* 100,000 key-value pairs, all there: accepted */
    g_header(&b, 0, G2F_GGUF_MAX_KV);
    for (unsigned i = 0; i < G2F_GGUF_MAX_KV; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%05u", i);
        g_kv_u8(&b, key, i & 0xff);
    }
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b_put(&b, 16, G2F_GGUF_MAX_KV + 1, 8);
    g_kv_u8(&b, "k100000", 0);
    REFUSED(g_parse(&b, NULL, &err), err, "number of key-value pairs is 100001 but must be in [0, 100000]");
    b_free(&b);
}

/* gguf checklist 3: the bytes after the header can hold n_tensors minimal
 * tensor infos (25 bytes) plus n_kv minimal pairs (14 bytes) */
static void gguf_should_bound_counts_by_the_bytes_after_the_header(void) {
    bytes b = {0};
    g2f_error err;
    /* three minimal pairs (1-byte key, UINT8 value): exactly 3 x 14 bytes */
    g_header(&b, 0, 3);
    g_kv_u8(&b, "a", 1);
    g_kv_u8(&b, "b", 2);
    g_kv_u8(&b, "c", 3);
    CHECK(b.n == 24 + 3 * 14);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err,
            "number of key-value pairs is 3 but the 41 bytes after the header and 0 tensor infos can hold at most 2");
    /* two minimal tensor infos (1-byte name, no dims): exactly 2 x 25 bytes */
    g_header(&b, 2, 0);
    g_tinfo(&b, "a", 0, NULL, G_F32, 0);
    g_tinfo(&b, "b", 0, NULL, G_F32, 32);
    CHECK(b.n == 24 + 2 * 25);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "can hold at most", "run past the end of the file"); /* no data */
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err,
            "number of tensors is 2 but the 49 bytes after the header can hold at most 1 tensor infos");
    /* both: one info and two pairs, exactly 25 + 2 x 14 bytes */
    g_header(&b, 1, 2);
    g_kv_u8(&b, "a", 1);
    g_kv_u8(&b, "b", 2);
    g_tinfo(&b, "t", 0, NULL, G_F32, 0);
    CHECK(b.n == 24 + 25 + 2 * 14);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "can hold at most", "run past the end of the file");
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err,
            "number of key-value pairs is 2 but the 52 bytes after the header and 1 tensor infos can hold at most 1");
    b_free(&b);
}

/* gguf checklist 4: every fixed-size read stays inside the file */
static void gguf_should_read_values_up_to_the_last_byte(void) {
    bytes b = {0};
    g2f_error err;
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_UINT64);
    b_u64(&b, 7); /* the last 8 bytes of the file */
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err, "key 'k': value at byte 37 needs 8 bytes but only 7 remain");
    b_free(&b);
}

/* gguf checklist 4: every string ends inside the file (a string one byte past
 * the end would leave the cursor past it, and the bytes remaining would wrap) */
static void gguf_should_end_strings_at_the_file_end_at_most(void) {
    bytes b = {0};
    g2f_error err;
    /* a string value whose last byte is the file's last byte */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_STRING);
    g_str(&b, "value");
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b_put(&b, b.n - 13, 6, 8);
    REFUSED(g_parse(&b, NULL, &err), err,
            "string value length 6 at byte 37 runs past the end of the file (5 bytes remain)");
    /* the same in an array of strings */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_STRING);
    b_u64(&b, 2);
    g_str(&b, "x");
    g_str(&b, "yz");
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b_put(&b, b.n - 10, 3, 8);
    REFUSED(g_parse(&b, NULL, &err), err,
            "array string length 3 at byte 58 runs past the end of the file (2 bytes remain)");
    /* a key, then a tensor name, ending at the end of the file: the next
     * field is missing, the string itself is fine */
    g_header(&b, 0, 1);
    g_str(&b, "abcdef"); /* 14 bytes: what the count check asks of one pair */
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "runs past the end",
                 "value type at byte 38 needs 4 bytes but only 0 remain");
    b_put(&b, 24, 7, 8);
    REFUSED(g_parse(&b, NULL, &err), err, "key length 7 at byte 24 runs past the end of the file (6 bytes remain)");
    g_header(&b, 1, 0);
    g_str(&b, "a_name_of_25_bytes_at_end");
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "runs past the end", "number of dimensions at byte 57 needs 4 bytes");
    b_put(&b, 24, 26, 8);
    REFUSED(g_parse(&b, NULL, &err), err,
            "tensor name length 26 at byte 24 runs past the end of the file (25 bytes remain)");
    b_free(&b);
}

/* gguf checklist 4 and Limits: keys <= G2F_GGUF_MAX_KEY, tensor names <=
 * G2F_GGUF_MAX_NAME, string values <= G2F_GGUF_MAX_STRING bytes */
static void gguf_should_take_strings_up_to_their_limits(void) {
    bytes b = {0};
    g2f_error err;
    char *key = malloc(G2F_GGUF_MAX_KEY + 1);
    CHECK(key != NULL);
    if (!key) return;
    memset(key, 'k', G2F_GGUF_MAX_KEY + 1);
    g_header(&b, 0, 1);
    g_strn(&b, key, G2F_GGUF_MAX_KEY);
    b_u32(&b, T_UINT8);
    b_u8(&b, 1);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    g_header(&b, 0, 1);
    g_strn(&b, key, G2F_GGUF_MAX_KEY + 1);
    b_u32(&b, T_UINT8);
    b_u8(&b, 1);
    REFUSED(g_parse(&b, NULL, &err), err, "key length is 65536 but must be in [0, 65535]");
    free(key);

    const char *name63 = "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";
    CHECK(strlen(name63) == G2F_GGUF_MAX_NAME);
    uint64_t ne = 1;
    g_header(&b, 1, 0);
    g_tinfo(&b, name63, 1, &ne, G_F32, 0);
    g_pad(&b, 32);
    b_u32(&b, 0);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    char name64[80];
    snprintf(name64, sizeof name64, "%sn", name63);
    g_header(&b, 1, 0);
    g_tinfo(&b, name64, 1, &ne, G_F32, 0);
    g_pad(&b, 32);
    b_u32(&b, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "tensor name length is 64 but must be in [0, 63]");

    /* 1 GiB strings: the limit lets the length through (the bytes are not
     * there); one more byte is refused by the limit */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_STRING);
    b_u64(&b, G2F_GGUF_MAX_STRING);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "must be in [0,", "string value length 1073741824 at byte 37 runs past");
    b_put(&b, 37, G2F_GGUF_MAX_STRING + 1, 8);
    REFUSED(g_parse(&b, NULL, &err), err, "string value length is 1073741825 but must be in [0, 1073741824]");
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_STRING);
    b_u64(&b, 1);
    b_u64(&b, G2F_GGUF_MAX_STRING);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "must be in [0,", "array string length 1073741824 at byte 49 runs past");
    b_put(&b, 49, G2F_GGUF_MAX_STRING + 1, 8);
    REFUSED(g_parse(&b, NULL, &err), err, "array string length is 1073741825 but must be in [0, 1073741824]");
    b_free(&b);
}

/* gguf checklist 5: keys are non-empty without control bytes; value types
 * are in [0, 12] */
static void gguf_should_check_keys_and_value_types_at_their_edges(void) {
    static const struct {
        const char *key;
        size_t len;
        const char *needle; /* NULL: accepted */
    } keys[] = {
        {"", 0, "key-value pair 0: key is empty"},
        {"k", 1, NULL},
        {"a b~", 4, NULL},               /* 0x20 and 0x7e are text */
        {"a\x1f", 2, "key contains control byte 0x1f at offset 1"},
        {"a\x7f", 2, "key contains control byte 0x7f at offset 1"},
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        g_header(&b, 0, 1);
        g_strn(&b, keys[i].key, keys[i].len);
        b_u32(&b, T_UINT8);
        b_u8(&b, 0);
        b_u8(&b, 0); /* a pair with an empty key is 13 bytes, one short of the minimal pair */
        if (keys[i].needle) REFUSED(g_parse(&b, NULL, &err), err, keys[i].needle);
        else ACCEPTED(g_parse(&b, NULL, &err), err);
    }
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_FLOAT64);
    b_u64(&b, 0);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b_put(&b, 33, T_FLOAT64 + 1, 4);
    REFUSED(g_parse(&b, NULL, &err), err, "value type 13 is unknown, must be in [0, 12]");
    /* array element types: the same range, and no arrays of arrays */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_FLOAT64);
    b_u64(&b, 1);
    b_u64(&b, 0);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b_put(&b, 37, T_FLOAT64 + 1, 4);
    REFUSED(g_parse(&b, NULL, &err), err, "array element type 13 is unknown, must be in [0, 12]");
    b_put(&b, 37, T_ARRAY, 4);
    REFUSED(g_parse(&b, NULL, &err), err, "arrays of arrays are not supported");
    b_free(&b);
}

/* gguf checklist 5 and Limits: array counts <= G2F_GGUF_MAX_ARRAY, and count
 * x element size (x 8 for strings) <= bytes remaining */
static void gguf_should_take_arrays_up_to_their_limits(void) {
    bytes b = {0};
    g2f_error err;
    /* 2^30 UINT8 elements, all there: a 1 GiB file that costs nothing (the
     * reader skips the elements, so the pages are never touched) */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_UINT8);
    b_u64(&b, G2F_GGUF_MAX_ARRAY);
    uint64_t size = b.n + G2F_GGUF_MAX_ARRAY;
    unsigned char *big = zero_map(size);
    if (big) {
        memcpy(big, b.p, b.n);
        g2f_table t;
        err = (g2f_error){0};
        g2f_status st = g2f_gguf_parse(big, size, "b.gguf", &t, &err);
        ACCEPTED(st, err);
        if (st == G2F_OK) g2f_table_free(&t);
        zero_unmap(big, size);
    } else {
        fprintf(stderr, "gguf: no 1 GiB mapping on this machine; the array limit is only tested from above\n");
    }
    b_put(&b, 41, G2F_GGUF_MAX_ARRAY + 1, 8);
    REFUSED(g_parse(&b, NULL, &err), err, "array count is 1073741825 but must be in [0, 1073741824]");
    /* count x size against the bytes remaining, to the byte */
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_UINT32);
    b_u64(&b, 3);
    b_fill(&b, 0, 12);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err, "array of 3 UINT32 needs at least 12 bytes but only 11 remain");
    g_header(&b, 0, 1);
    g_str(&b, "k");
    b_u32(&b, T_ARRAY);
    b_u32(&b, T_STRING);
    b_u64(&b, 3);
    b_fill(&b, 0, 24); /* three empty strings */
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err, "array of 3 STRING needs at least 24 bytes but only 23 remain");
    b_free(&b);
}

/* gguf checklist 6: general.alignment is a UINT32 power of two in
 * [1, G2F_GGUF_MAX_ALIGNMENT] */
static void gguf_should_take_alignments_up_to_one_mebibyte(void) {
    static const struct {
        uint32_t a;
        const char *needle; /* NULL: accepted */
    } cases[] = {
        {0, "alignment 0 is not a power of two in [1, 1048576]"},
        {1, NULL},
        {3, "alignment 3 is not a power of two in [1, 1048576]"},
        {1u << 20, NULL},
        {(1u << 20) + 1, "alignment 1048577 is not a power of two"},
        {1u << 21, "alignment 2097152 is not a power of two in [1, 1048576]"},
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t ne = 1;
        g_header(&b, 1, 1);
        g_kv_u32(&b, "general.alignment", cases[i].a);
        g_tinfo(&b, "t", 1, &ne, G_F32, 0);
        if (cases[i].a) g_pad(&b, cases[i].a); /* the data starts at the next multiple */
        b_fill(&b, 0, 4);
        if (cases[i].needle) REFUSED(g_parse(&b, NULL, &err), err, cases[i].needle);
        else ACCEPTED(g_parse(&b, NULL, &err), err);
    }
    b_free(&b);
}

/* gguf checklist 7: n_dims <= 4, ne < 2^63, known type ids, ne[0] a multiple
 * of the block size, element count < 2^63 and byte size without overflow */
static void gguf_should_check_tensor_infos_at_their_edges(void) {
    bytes b = {0};
    g2f_error err;
    const uint64_t ones[5] = {1, 1, 1, 1, 1};
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 4, ones, G_F32, 0);
    g_pad(&b, 32);
    b_fill(&b, 0, 4);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 5, ones, G_F32, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "tensor 't': number of dimensions is 5 but must be in [0, 4]");

    const uint64_t ne_max = (uint64_t)INT64_MAX, ne_past = (uint64_t)INT64_MAX + 1;
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &ne_max, G_I8, 0); /* 2^63 - 1 one-byte elements */
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "below 2^63", "9223372036854775807 bytes at offset 0");
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &ne_past, G_I8, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "ne[0] is 9223372036854775808, must be below 2^63");

    /* element count: (2^63 - 1) / 7 x 7 fits, 2^62 x 2 does not */
    const uint64_t count_max[2] = {1317624576693539401ull, 7}, count_past[2] = {1ull << 62, 2};
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 2, count_max, G_I8, 0);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "overflows", "9223372036854775807 bytes at offset 0");
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 2, count_past, G_I8, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "element count or byte size overflows");
    /* byte size: 4 x (2^62 - 1) fits, 4 x 2^62 does not */
    const uint64_t f32_max = (1ull << 62) - 1, f32_past = 1ull << 62;
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &f32_max, G_F32, 0);
    PASSES_CHECK(g_parse(&b, NULL, &err), err, "overflows", "18446744073709551612 bytes at offset 0");
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &f32_past, G_F32, 0);
    REFUSED(g_parse(&b, NULL, &err), err, "element count or byte size overflows");

    /* type ids: each edge of ggml's holes (4-5, 31-33, 36-38) and of the table */
    static const struct {
        uint32_t type;
        int known;
    } types[] = {{3, 1}, {4, 0}, {5, 0}, {6, 1}, {30, 1}, {31, 0}, {33, 0}, {34, 1},
                 {35, 1}, {36, 0}, {38, 0}, {39, 1}, {40, 0}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        uint64_t ne = 256; /* a multiple of every block size */
        g_header(&b, 1, 0);
        g_tinfo(&b, "t", 1, &ne, types[i].type, 0);
        g_pad(&b, 32);
        b_fill(&b, 0, 1024); /* more than 256 elements of any type need */
        char needle[64];
        snprintf(needle, sizeof needle, "unknown ggml type id %u", types[i].type);
        if (types[i].known) ACCEPTED(g_parse(&b, NULL, &err), err);
        else REFUSED(g_parse(&b, NULL, &err), err, needle);
    }
    CHECK(strcmp(g2f_gguf_type_name(39), "MXFP4") == 0); /* the table's last entry, and past it */
    CHECK(g2f_gguf_type_name(40) == NULL && g2f_gguf_type_name(4) == NULL);
    /* ne[0] a multiple of the block size: Q8_0 blocks are 32 elements, 34 bytes */
    uint64_t ne = 32;
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &ne, G_Q8_0, 0);
    g_pad(&b, 32);
    b_fill(&b, 0, 34);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    ne = 33;
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &ne, G_Q8_0, 0);
    g_pad(&b, 32);
    b_fill(&b, 0, 68);
    REFUSED(g_parse(&b, NULL, &err), err, "ne[0] = 33 is not a multiple of the Q8_0 block size 32");
    b_free(&b);
}

/* gguf checklist 8: offsets are multiples of the alignment and data start +
 * offset + byte size <= file size */
static void gguf_should_keep_tensor_data_inside_the_file(void) {
    bytes b = {0};
    g2f_error err;
    g_one_tensor(&b, 3); /* 12 bytes ending at the end of the file */
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err, "tensor 't': 12 bytes at offset 0 (data section at byte 64) run past the end "
                                          "of the file (75 bytes)");
    /* the data section starts at the next multiple of the alignment */
    uint64_t ne = 1;
    g_header(&b, 1, 0);
    g_tinfo(&b, "t", 1, &ne, G_F32, 64); /* infos end at byte 61, data at 64 */
    g_pad(&b, 32);
    b_fill(&b, 0, 64 + 4);
    ACCEPTED(g_parse(&b, NULL, &err), err);
    b.n--;
    REFUSED(g_parse(&b, NULL, &err), err, "4 bytes at offset 64 (data section at byte 64) run past the end");
    for (uint64_t off = 31; off <= 33; off++) {
        g_header(&b, 1, 0);
        g_tinfo(&b, "t", 1, &ne, G_F32, off);
        g_pad(&b, 32);
        b_fill(&b, 0, 64);
        char needle[64];
        snprintf(needle, sizeof needle, "offset %llu is not a multiple of the alignment 32", (unsigned long long)off);
        if (off == 32) ACCEPTED(g_parse(&b, NULL, &err), err);
        else REFUSED(g_parse(&b, NULL, &err), err, needle);
    }
    b_free(&b);
}

/* gguf checklist 9: no two tensors' bytes overlap (with alignment 1, to the
 * byte) */
static void gguf_should_refuse_a_one_byte_overlap(void) {
    bytes b = {0};
    g2f_error err;
    for (uint64_t second = 3; second <= 4; second++) {
        uint64_t ne = 1;
        g_header(&b, 2, 1);
        g_kv_u32(&b, "general.alignment", 1);
        g_tinfo(&b, "a", 1, &ne, G_F32, 0);
        g_tinfo(&b, "b", 1, &ne, G_F32, second);
        b_fill(&b, 0, 8);
        if (second == 4) ACCEPTED(g_parse(&b, NULL, &err), err);
        else REFUSED(g_parse(&b, NULL, &err), err, "tensor 'b': data [3, 7) overlaps tensor 'a'");
    }
    b_free(&b);
}

int main(void) {
    RUN(gguf_should_need_the_four_magic_bytes);
    RUN(gguf_should_read_versions_two_and_three_only);
    RUN(gguf_should_take_counts_up_to_their_limits);
    RUN(gguf_should_bound_counts_by_the_bytes_after_the_header);
    RUN(gguf_should_read_values_up_to_the_last_byte);
    RUN(gguf_should_end_strings_at_the_file_end_at_most);
    RUN(gguf_should_take_strings_up_to_their_limits);
    RUN(gguf_should_check_keys_and_value_types_at_their_edges);
    RUN(gguf_should_take_arrays_up_to_their_limits);
    RUN(gguf_should_take_alignments_up_to_one_mebibyte);
    RUN(gguf_should_check_tensor_infos_at_their_edges);
    RUN(gguf_should_keep_tensor_data_inside_the_file);
    RUN(gguf_should_refuse_a_one_byte_overlap);
    CHECK_EXIT();
}
