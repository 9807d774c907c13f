/* safetensors reader: every rule of the format, one corrupt image per rule,
 * each asserting the status and the message; valid files incl. unaligned. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "test_util.h"

/* Builds [u64 len][header][data_len bytes of 0x11] in a static buffer. */
static unsigned char image[1 << 16];
static size_t make_image(const char *header, size_t data_len) {
    size_t n = strlen(header);
    for (int i = 0; i < 8; i++) image[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(image + 8, header, n);
    memset(image + 8 + n, 0x11, data_len);
    return 8 + n + data_len;
}

static void expect_error(const char *header, size_t data_len, const char *needle, int line) {
    size_t n = make_image(header, data_len);
    g2f_table t;
    g2f_error err = {0};
    g2f_status s = g2f_safetensors_parse(image, n, "bad.safetensors", &t, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "bad.safetensors")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(t.count == 0 && t.tensors == NULL);
}
#define EXPECT_ERROR(h, n, needle) expect_error(h, n, needle, __LINE__)

static void safetensors_should_reject_short_or_lying_lengths(void) {
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_safetensors_parse(image, 5, "bad.safetensors", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "too short");
    unsigned char big[16] = {0};
    big[3] = 0x10; /* 2^28 > 100,000,000 */
    CHECK(g2f_safetensors_parse(big, sizeof big, "bad.safetensors", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "exceeds the limit");
    unsigned char past[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    CHECK(g2f_safetensors_parse(past, sizeof past, "bad.safetensors", &t, &err) == G2F_ERR_FORMAT);
    CHECK_CONTAINS(err.msg, "runs past the end");
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    CHECK(g2f_safetensors_parse(huge, sizeof huge, "bad.safetensors", &t, &err) == G2F_ERR_FORMAT);
}

static void safetensors_should_reject_bad_header_text(void) {
    EXPECT_ERROR("[1, 2]  ", 0, "does not start with '{'");
    EXPECT_ERROR("{\"a\":\xff}", 0, "not valid UTF-8");
    EXPECT_ERROR("{\"a\":\"\xc0\xaf\"}", 0, "not valid UTF-8"); /* overlong encoding */
    EXPECT_ERROR("{\"a\x01\":1}", 0, "not valid UTF-8");
    EXPECT_ERROR("{\"a\": {", 0, "not valid JSON");
    EXPECT_ERROR("{} {}", 0, "trailing bytes");
    EXPECT_ERROR("{\"__metadata__\": [1]}", 0, "__metadata__ must be an object");
    EXPECT_ERROR("{\"__metadata__\": {\"k\": 1}}", 0, "value for key 'k' is not a string");
}

static void safetensors_should_reject_bad_tensor_entries(void) {
    EXPECT_ERROR("{\"w\": 3}", 0, "tensor 'w': entry is not an object");
    EXPECT_ERROR("{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "tensor 'w': missing or non-string \"dtype\"");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F33\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "unknown dtype \"F33\"");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4, "non-array \"shape\"");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", 4, "shape[0] is not a non-negative integer");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", 4, "shape[0] is not a non-negative integer");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4, "9 dimensions");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 4]}}", 4, "element count overflows");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F64\", \"shape\": [4503599627370496, 1024], \"data_offsets\": [0, 4]}}", 4, "byte size overflows");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", 4, "two non-negative integers");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", 8, "begin 8 > end 4");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}", 4, "needs 8 bytes but data_offsets span 4");
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                 " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "tensor 'w' appears twice");
}

static void safetensors_should_reject_bad_data_layout(void) {
    EXPECT_ERROR("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 4, "past the data buffer");
    EXPECT_ERROR("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "overlap tensor 'a'");
    EXPECT_ERROR("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "gap of 4 uncovered bytes");
    EXPECT_ERROR("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 12, "trailing bytes");
}

static void safetensors_should_read_valid_files_in_any_order(void) {
    size_t n = make_image("{\"b\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [8, 12]},"
                          " \"__metadata__\": {\"gelu\": \"erf\"},"
                          " \"e\": {\"dtype\": \"BF16\", \"shape\": [0, 3], \"data_offsets\": [12, 12]},"
                          " \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
                          12);
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_safetensors_parse(image, n, "ok.safetensors", &t, &err) == G2F_OK);
    CHECK(t.count == 3);
    const g2f_tensor *a = g2f_table_find(&t, "a");
    CHECK(a && a->dtype == G2F_DTYPE_F32 && a->numel == 2 && a->nbytes == 8);
    const g2f_tensor *e = g2f_table_find(&t, "e");
    CHECK(e && e->numel == 0 && e->ndim == 2);
    CHECK(g2f_table_meta(&t, "gelu") && strcmp(g2f_table_meta(&t, "gelu"), "erf") == 0);
    g2f_table_free(&t);
    CHECK(g2f_safetensors_probe(image, n));
}

/* A hand-written file: header length 5 mod 8, so the F32 data is unaligned. */
static void safetensors_should_read_unaligned_data_correctly(void) {
    char dir[256], path[300];
    CHECK(make_tmpdir(dir, sizeof dir, "st") == 0);
    snprintf(path, sizeof path, "%s/unpadded.safetensors", dir);
    const float v[3] = {1.5f, -2.25f, 3e-3f};
    const double dv[2] = {0.1, -7.0};
    uint16_t hv[2] = {0x3c00, 0xc000}; /* F16 1.0, -2.0 */
    uint16_t bv[1] = {0x3fc0};         /* BF16 1.5 */
    st_entry e[4] = {{"x", "F32", 1, {3}, v, sizeof v}, {"y", "F64", 1, {2}, dv, sizeof dv},
                     {"h", "F16", 1, {2}, hv, sizeof hv}, {"b", "BF16", 1, {1}, bv, sizeof bv}};
    CHECK(st_write(path, NULL, e, 4, 0) == 0);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (st) {
        const g2f_table *t = g2f_safetensors_table(st);
        const g2f_tensor *x = g2f_table_find(t, "x");
        CHECK(x && ((uintptr_t)x->data % 4) != 0); /* the case under test */
        float got[3];
        double gd[2];
        g2f_tensor_read_f32(x, 0, 3, got);
        CHECK(memcmp(got, v, sizeof v) == 0);
        g2f_tensor_read_f64(g2f_table_find(t, "y"), 0, 2, gd);
        CHECK(gd[0] == 0.1 && gd[1] == -7.0);
        g2f_tensor_read_f32(g2f_table_find(t, "h"), 0, 2, got);
        CHECK(got[0] == 1.0f && got[1] == -2.0f);
        g2f_tensor_read_f32(g2f_table_find(t, "b"), 0, 1, got);
        CHECK(got[0] == 1.5f);
    }
    g2f_safetensors_close(st);
    remove(path);
    rmdir(dir);
}

static void safetensors_open_should_name_missing_files(void) {
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open("/nonexistent/x.safetensors", &st, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "/nonexistent/x.safetensors");
    CHECK(st == NULL);
}

static void half_conversions_should_round_to_nearest_even(void) {
    CHECK(g2f_f32_to_f16(1.0f) == 0x3c00);
    CHECK(g2f_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(g2f_f32_to_f16(1e6f) == 0x7c00);
    CHECK(g2f_f32_to_f16(0x1p-24f) == 0x0001);
    CHECK(g2f_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);             /* tie to even */
    CHECK(g2f_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);         /* tie to even, up */
    CHECK(g2f_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
    for (uint32_t h = 0; h < 0x7c00; h++) CHECK(g2f_f32_to_f16(g2f_f16_to_f32((uint16_t)h)) == h);
    /* the tensor reader (F16C when the CPU has it) agrees with the software
     * conversion on every half, from an unaligned buffer */
    static unsigned char buf[2 * 65536 + 1];
    static float got[65536];
    for (uint32_t h = 0; h < 65536; h++) memcpy(buf + 1 + 2 * h, &(uint16_t){(uint16_t)h}, 2);
    g2f_tensor t = {.dtype = G2F_DTYPE_F16, .ndim = 1, .shape = {65536}, .numel = 65536, .data = buf + 1, .nbytes = 131072};
    g2f_tensor_read_f32(&t, 0, 65536, got);
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float want = g2f_f16_to_f32((uint16_t)h);
        bad += !(memcmp(&want, &got[h], 4) == 0 || (isnan(want) && isnan(got[h])));
    }
    CHECK(bad == 0);
}

int main(void) {
    RUN(safetensors_should_reject_short_or_lying_lengths);
    RUN(safetensors_should_reject_bad_header_text);
    RUN(safetensors_should_reject_bad_tensor_entries);
    RUN(safetensors_should_reject_bad_data_layout);
    RUN(safetensors_should_read_valid_files_in_any_order);
    RUN(safetensors_should_read_unaligned_data_correctly);
    RUN(safetensors_open_should_name_missing_files);
    RUN(half_conversions_should_round_to_nearest_even);
    CHECK_EXIT();
}
