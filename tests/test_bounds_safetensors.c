/* safetensors reader: every bound of the checklist in formats/g2f_safetensors.h
 * and of SECURITY.md's Limits table, at the exact limit (accepted) and one
 * past it (refused with the check's message). */
#include "bounds.h"
#include "g2f_safetensors.h"

/* An image: the 8-byte length N = strlen(json) + n_delta, the JSON, then
 * data_bytes bytes of data (zeros). */
static void st_image(bytes *b, const char *json, long long n_delta, size_t data_bytes) {
    b->n = 0;
    b_u64(b, (uint64_t)((long long)strlen(json) + n_delta));
    b_str(b, json);
    b_fill(b, 0, data_bytes);
}

static g2f_status st_parse(const bytes *b, size_t *count, g2f_error *err) {
    return parse_exact(g2f_safetensors_parse, b, "b.safetensors", count, err);
}

/* A header of one tensor: "t" with the given dtype, shape and offsets. */
static const char *one(const char *dtype, const char *shape, const char *offsets) {
    static char h[512];
    snprintf(h, sizeof h, "{\"t\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":%s}}", dtype, shape, offsets);
    return h;
}

/* safetensors checklist 1: the file holds at least the 8 length bytes */
static void safetensors_should_need_the_eight_length_bytes(void) {
    bytes b = {0};
    g2f_error err;
    b_u64(&b, 0);
    PASSES_CHECK(st_parse(&b, NULL, &err), err, "too short", "does not start with '{'"); /* 8 bytes */
    b.n = 7;
    REFUSED(st_parse(&b, NULL, &err), err, "file is 7 bytes, too short for the 8-byte header length");
    st_image(&b, "{}", 0, 0); /* the smallest valid file: 10 bytes */
    ACCEPTED(st_parse(&b, NULL, &err), err);
    CHECK(g2f_safetensors_probe(b.p, b.n)); /* the probe: at least 10 bytes, N >= 2 */
    CHECK(!g2f_safetensors_probe(b.p, 9));
    st_image(&b, "{", 0, 1);
    CHECK(!g2f_safetensors_probe(b.p, b.n));
    b_free(&b);
}

/* safetensors checklist 2: N <= G2F_SAFETENSORS_MAX_HEADER (100,000,000) */
static void safetensors_should_take_a_header_of_exactly_the_limit(void) {
    const uint64_t n = G2F_SAFETENSORS_MAX_HEADER;
    /* "{}" then spaces: 100 MB that the reader must read (UTF-8, trailing
     * whitespace), built in place rather than copied */
    unsigned char *p = malloc(8 + n + 1);
    CHECK(p != NULL);
    if (!p) return;
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(n >> (8 * i));
    p[8] = '{';
    p[9] = '}';
    memset(p + 10, ' ', n - 1);
    g2f_table t;
    g2f_error err = {0};
    g2f_status st = g2f_safetensors_parse(p, 8 + n, "b.safetensors", &t, &err);
    ACCEPTED(st, err);
    if (st == G2F_OK) {
        CHECK(t.count == 0);
        g2f_table_free(&t);
    }
    CHECK(g2f_safetensors_probe(p, 8 + n));
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)((n + 1) >> (8 * i));
    REFUSED(g2f_safetensors_parse(p, 8 + n + 1, "b.safetensors", &t, &err), err,
            "header length 100000001 exceeds the limit of 100000000 bytes");
    CHECK(!g2f_safetensors_probe(p, 8 + n + 1));
    free(p);
}

/* safetensors checklist 2: 8 + N <= file size */
static void safetensors_should_end_the_header_at_the_file_end_at_most(void) {
    bytes b = {0};
    g2f_error err;
    size_t count = 9;
    /* the header ends exactly at the end of the file (a zero-byte tensor) */
    st_image(&b, one("F32", "[0]", "[0,0]"), 0, 0);
    ACCEPTED(st_parse(&b, &count, &err), err);
    CHECK(count == 1);
    CHECK(g2f_safetensors_probe(b.p, b.n));
    /* one byte more than the file holds */
    st_image(&b, one("F32", "[0]", "[0,0]"), 1, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "runs past the end of the file");
    CHECK(!g2f_safetensors_probe(b.p, b.n));
    /* the same with data after the header: N may not reach into it... it may,
     * but then the JSON has trailing bytes; past the file it may not */
    st_image(&b, one("F32", "[1]", "[0,4]"), 0, 4);
    ACCEPTED(st_parse(&b, &count, &err), err);
    b_put(&b, 0, b.n - 8, 8); /* N = the whole rest of the file */
    PASSES_CHECK(st_parse(&b, NULL, &err), err, "runs past the end", "is not valid UTF-8"); /* zeros: control bytes */
    b_put(&b, 0, b.n - 7, 8);
    REFUSED(st_parse(&b, NULL, &err), err, "runs past the end of the file");
    b_free(&b);
}

/* safetensors checklist 3: N >= 1 (the header starts with '{'), and every
 * UTF-8 sequence ends inside the header */
static void safetensors_should_keep_utf8_sequences_inside_the_header(void) {
    static const struct {
        const char *complete; /* a sequence ending on the header's last byte */
    } seq[] = {{"\xc3\xa9"}, {"\xe2\x82\xac"}, {"\xf0\x9f\x98\x80"}};
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        char h[32];
        snprintf(h, sizeof h, "{\"%s", seq[i].complete); /* not JSON, but valid UTF-8 */
        st_image(&b, h, 0, 0);
        PASSES_CHECK(st_parse(&b, NULL, &err), err, "UTF-8", "is not valid JSON");
        st_image(&b, h, -1, 0); /* the last byte of the sequence is cut off */
        b.n--;
        REFUSED(st_parse(&b, NULL, &err), err, "header byte 2 (0x");
        REFUSED(st_parse(&b, NULL, &err), err, "is not valid UTF-8 JSON text");
    }
    /* a sequence cut by the end of the header is refused even when the
     * byte that would complete it follows (in the data) */
    st_image(&b, "{\"\xc3", 0, 0);
    b_u8(&b, 0xa9);
    REFUSED(st_parse(&b, NULL, &err), err, "header byte 2 (0xc3) is not valid UTF-8 JSON text");
    /* 0x7f is ASCII, 0x80 alone is not UTF-8 */
    st_image(&b, "{\"__metadata__\":{\"k\":\"\x7f\"}}", 0, 0);
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, "{\"__metadata__\":{\"k\":\"\x80\"}}", 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "(0x80) is not valid UTF-8 JSON text");
    /* control bytes: 0x1f refused, 0x20 (and tab, LF, CR) allowed */
    st_image(&b, "{\"__metadata__\":{\"k\":\"\x1f\"}}", 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "(0x1f) is not valid UTF-8 JSON text");
    st_image(&b, "{\"__metadata__\":{\"k\":\" \"}}\t\r\n", 0, 0);
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, "", 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "header does not start with '{'");
    b_free(&b);
}

/* safetensors checklist 3: UTF-8 code points at the edges of each encoding
 * length (shortest form only), of the Unicode range and of the surrogates */
static void safetensors_should_take_code_points_up_to_their_edges(void) {
    static const struct {
        const char *seq;
        int valid;
    } cps[] = {
        {"\xc1\xbf", 0},         {"\xc2\x80", 1},         /* U+007F overlong, U+0080 */
        {"\xe0\x9f\xbf", 0},     {"\xe0\xa0\x80", 1},     /* U+07FF overlong, U+0800 */
        {"\xf0\x8f\xbf\xbf", 0}, {"\xf0\x90\x80\x80", 1}, /* U+FFFF overlong, U+10000 */
        {"\xf4\x8f\xbf\xbf", 1}, {"\xf4\x90\x80\x80", 0}, /* U+10FFFF, U+110000 */
        {"\xed\x9f\xbf", 1},     {"\xed\xa0\x80", 0},     /* U+D7FF, U+D800 */
        {"\xed\xbf\xbf", 0},     {"\xee\x80\x80", 1},     /* U+DFFF, U+E000 */
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        char h[64];
        snprintf(h, sizeof h, "{\"__metadata__\":{\"k\":\"%s\"}}", cps[i].seq);
        st_image(&b, h, 0, 0);
        if (cps[i].valid) ACCEPTED(st_parse(&b, NULL, &err), err);
        else REFUSED(st_parse(&b, NULL, &err), err, "header byte 22 (0x");
    }
    b_free(&b);
}

/* safetensors checklist 5: at most G2F_MAX_DIMS (8) dimensions */
static void safetensors_should_take_at_most_eight_dimensions(void) {
    bytes b = {0};
    g2f_error err;
    st_image(&b, one("F32", "[1,1,1,1,1,1,1,1]", "[0,4]"), 0, 4);
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, one("F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), 0, 4);
    REFUSED(st_parse(&b, NULL, &err), err, "shape has 9 dimensions, at most 8 supported");
    b_free(&b);
}

/* safetensors checklist 5 and Limits (JSON integers): integers are read as
 * doubles, so every one must be below 2^53; 2^53 + 1 would read as 2^53 */
static void safetensors_should_take_integers_below_two_to_the_53(void) {
    bytes b = {0};
    g2f_error err;
    st_image(&b, one("F32", "[9007199254740991,0]", "[0,0]"), 0, 0); /* 2^53 - 1 */
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, one("F32", "[9007199254740992,0]", "[0,0]"), 0, 0); /* 2^53 */
    REFUSED(st_parse(&b, NULL, &err), err, "shape[0] is not a non-negative integer below 2^53");
    st_image(&b, one("F32", "[9007199254740993,0]", "[0,0]"), 0, 0); /* 2^53 + 1, read as 2^53 */
    REFUSED(st_parse(&b, NULL, &err), err, "shape[0] is not a non-negative integer below 2^53");
    st_image(&b, one("F32", "[0]", "[9007199254740991,9007199254740991]"), 0, 0);
    PASSES_CHECK(st_parse(&b, NULL, &err), err, "two non-negative integers", "past the data buffer");
    st_image(&b, one("F32", "[0]", "[9007199254740992,9007199254740992]"), 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "\"data_offsets\" must be two non-negative integers");
    b_free(&b);
}

/* safetensors checklist 6: element count x dtype size == end - begin,
 * computed without overflow */
static void safetensors_should_match_sizes_to_the_byte_without_overflow(void) {
    bytes b = {0};
    g2f_error err;
    st_image(&b, one("F32", "[3]", "[0,12]"), 0, 12);
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, one("F32", "[3]", "[0,13]"), 0, 13);
    REFUSED(st_parse(&b, NULL, &err), err, "shape [3] of F32 needs 12 bytes but data_offsets span 13");
    st_image(&b, one("F32", "[3]", "[0,11]"), 0, 11);
    REFUSED(st_parse(&b, NULL, &err), err, "needs 12 bytes but data_offsets span 11");
    /* element count: 2^64 - 1 = (2^32 - 1)(2^32 + 1) fits, 2^64 does not */
    st_image(&b, one("U8", "[4294967295,4294967297]", "[0,0]"), 0, 0);
    PASSES_CHECK(st_parse(&b, NULL, &err), err, "overflows", "needs 18446744073709551615 bytes");
    st_image(&b, one("U8", "[4294967296,4294967296]", "[0,0]"), 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "element count overflows 64 bits");
    /* byte size: 2 x (2^63 - 1) fits, 2 x 2^63 does not */
    st_image(&b, one("F16", "[153092023,60247241209]", "[0,0]"), 0, 0); /* 2^63 - 1 = 153092023 x 60247241209 */
    PASSES_CHECK(st_parse(&b, NULL, &err), err, "overflows", "needs 18446744073709551614 bytes");
    st_image(&b, one("F16", "[2147483648,4294967296]", "[0,0]"), 0, 0); /* 2^63 */
    REFUSED(st_parse(&b, NULL, &err), err, "byte size overflows 64 bits");
    b_free(&b);
}

/* safetensors checklist 7: end <= data buffer size */
static void safetensors_should_keep_tensors_inside_the_data_buffer(void) {
    bytes b = {0};
    g2f_error err;
    st_image(&b, one("U8", "[5]", "[0,5]"), 0, 5);
    ACCEPTED(st_parse(&b, NULL, &err), err);
    st_image(&b, one("U8", "[5]", "[0,5]"), 0, 4);
    REFUSED(st_parse(&b, NULL, &err), err, "data_offsets end 5 is past the data buffer (4 bytes)");
    st_image(&b, one("U8", "[0]", "[5,5]"), 0, 5); /* an empty tensor at the very end... */
    REFUSED(st_parse(&b, NULL, &err), err, "gap of 5 uncovered bytes"); /* ...still leaves the buffer untiled */
    st_image(&b, one("U8", "[0]", "[6,6]"), 0, 5);
    REFUSED(st_parse(&b, NULL, &err), err, "data_offsets end 6 is past the data buffer (5 bytes)");
    b_free(&b);
}

/* safetensors checklist 8: the tensors tile the data buffer exactly */
static void safetensors_should_tile_the_data_buffer_to_the_byte(void) {
    static const struct {
        const char *a, *b; /* data_offsets of tensors a (U8 [3]) and b (U8 [2]) */
        size_t data;
        const char *needle; /* NULL: accepted */
    } cases[] = {
        {"[0,3]", "[3,5]", 5, NULL},
        {"[1,4]", "[4,6]", 6, "tensor 'a': gap of 1 uncovered bytes before its data_offsets begin 1"},
        {"[0,3]", "[2,4]", 4, "tensor 'b': data_offsets [2, 4) overlap tensor 'a'"},
        {"[0,3]", "[4,6]", 6, "tensor 'b': gap of 1 uncovered bytes before its data_offsets begin 4"},
        {"[0,3]", "[3,5]", 6, "data buffer has 6 bytes but the tensors cover only 5 (trailing bytes)"},
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char h[256];
        snprintf(h, sizeof h,
                 "{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":%s},"
                 "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":%s}}",
                 cases[i].a, cases[i].b);
        st_image(&b, h, 0, cases[i].data);
        if (cases[i].needle) REFUSED(st_parse(&b, NULL, &err), err, cases[i].needle);
        else ACCEPTED(st_parse(&b, NULL, &err), err);
    }
    b_free(&b);
}

/* Limits (all): a message is at most G2F_ERROR_MSG_MAX bytes, one line, even
 * when it quotes a name of thousands of bytes */
static void safetensors_should_cut_long_messages_to_one_line(void) {
    char name[2001];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char *h = malloc(2 * sizeof name + 256);
    CHECK(h != NULL);
    if (!h) return;
    sprintf(h, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
               "\"%s\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", name, name);
    bytes b = {0};
    g2f_error err;
    st_image(&b, h, 0, 0);
    REFUSED(st_parse(&b, NULL, &err), err, "b.safetensors: tensor 'nnnnnnnn");
    CHECK(strlen(err.msg) == G2F_ERROR_MSG_MAX - 1);
    CHECK(strchr(err.msg, '\n') == NULL);
    free(h);
    b_free(&b);
}

int main(void) {
    RUN(safetensors_should_need_the_eight_length_bytes);
    RUN(safetensors_should_take_a_header_of_exactly_the_limit);
    RUN(safetensors_should_end_the_header_at_the_file_end_at_most);
    RUN(safetensors_should_keep_utf8_sequences_inside_the_header);
    RUN(safetensors_should_take_code_points_up_to_their_edges);
    RUN(safetensors_should_take_at_most_eight_dimensions);
    RUN(safetensors_should_take_integers_below_two_to_the_53);
    RUN(safetensors_should_match_sizes_to_the_byte_without_overflow);
    RUN(safetensors_should_keep_tensors_inside_the_data_buffer);
    RUN(safetensors_should_tile_the_data_buffer_to_the_byte);
    RUN(safetensors_should_cut_long_messages_to_one_line);
    CHECK_EXIT();
}
