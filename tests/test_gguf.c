/* GGUF reader: one small corrupt image per validation rule, built here in C,
 * each asserting the status and the message; valid images (every scalar
 * metadata type, v2 and v3, quantized tensors); and the committed
 * fixtures/formats2/tiny*.gguf checked value by value against the safetensors
 * checkpoint they were exported from. argv[1] is the fixtures folder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_gguf.h"
#include "g2f_safetensors.h"
#include "test_util.h"

static const char *fixtures = "fixtures";

/* ---- a tiny GGUF byte builder ---- */

typedef struct gb {
    unsigned char p[1 << 14];
    size_t n;
} gb;

static void gb_bytes(gb *b, const void *d, size_t n) {
    if (b->n + n > sizeof b->p) abort(); /* a test bug, not a reader bug */
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void gb_u8(gb *b, uint8_t v) { gb_bytes(b, &v, 1); }
static void gb_u32(gb *b, uint32_t v) {
    unsigned char x[4];
    for (int i = 0; i < 4; i++) x[i] = (unsigned char)(v >> (8 * i));
    gb_bytes(b, x, 4);
}
static void gb_u64(gb *b, uint64_t v) {
    unsigned char x[8];
    for (int i = 0; i < 8; i++) x[i] = (unsigned char)(v >> (8 * i));
    gb_bytes(b, x, 8);
}
static void gb_str(gb *b, const char *s) {
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}
static void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
enum { T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_UINT64, T_INT64,
       T_FLOAT64 };
static void gb_kv_u32(gb *b, const char *key, uint32_t v) {
    gb_str(b, key);
    gb_u32(b, T_UINT32);
    gb_u32(b, v);
}
static void gb_kv_str(gb *b, const char *key, const char *v) {
    gb_str(b, key);
    gb_u32(b, T_STRING);
    gb_str(b, v);
}
/* A tensor info with up to 4 ne values. */
static void gb_tinfo(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}
static void gb_align(gb *b, size_t a) {
    while (b->n % a) gb_u8(b, 0);
}
static void gb_zeros(gb *b, size_t n) {
    while (n--) gb_u8(b, 0);
}

/* A file with one KV and one F32 tensor 'w' of ne [4, 2] at offset 0. */
static void gb_valid(gb *b) {
    const uint64_t ne[2] = {4, 2};
    gb_header(b, 3, 1, 1);
    gb_kv_str(b, "general.architecture", "gpt2");
    gb_tinfo(b, "w", 2, ne, 0, 0);
    gb_align(b, 32);
    gb_zeros(b, 32);
}

static void expect_error(const gb *b, const char *needle, int line) {
    g2f_table t;
    g2f_error err = {0};
    g2f_status s = g2f_gguf_parse(b->p, b->n, "bad.gguf", &t, &err);
    if (s != G2F_ERR_FORMAT || !strstr(err.msg, needle) || !strstr(err.msg, "bad.gguf")) {
        fprintf(stderr, "line %d: status %d, message \"%s\", wanted \"%s\"\n", line, s, err.msg, needle);
        check_failures++;
    }
    CHECK(t.count == 0 && t.tensors == NULL && t.meta == NULL);
}
#define EXPECT_ERROR(b, needle) expect_error(b, needle, __LINE__)

/* ---- corrupt images, one per rule ---- */

static void gguf_should_reject_bad_magic(void) {
    gb b;
    gb_valid(&b);
    memcpy(b.p, "GGML", 4);
    EXPECT_ERROR(&b, "bad magic 'GGML'");
    b.n = 3;
    memcpy(b.p, "GGU", 3);
    EXPECT_ERROR(&b, "magic at byte 0 needs 4 bytes but only 3 remain");
}

static void gguf_should_reject_unsupported_versions(void) {
    gb b;
    gb_valid(&b);
    b.p[4] = 1;
    EXPECT_ERROR(&b, "GGUF version 1 is not supported");
    b.p[4] = 4;
    EXPECT_ERROR(&b, "GGUF version 4 is not supported (2 or 3 expected)");
    b.p[4] = 0;
    b.p[7] = 3; /* 0x03000000: version 3 written big-endian */
    EXPECT_ERROR(&b, "big-endian");
    b.n = 6;
    EXPECT_ERROR(&b, "version at byte 4 needs 4 bytes");
}

static void gguf_should_reject_counts_the_file_cannot_hold(void) {
    gb b;
    gb_header(&b, 3, 1000, 0); /* 1000 tensor infos cannot fit in 100 bytes */
    gb_zeros(&b, 100);
    EXPECT_ERROR(&b, "number of tensors is 1000 but the 100 bytes after the header can hold at most 4 tensor infos");
    gb_header(&b, 3, 1ull << 40, 0);
    EXPECT_ERROR(&b, "number of tensors is 1099511627776 but must be in [0, 1000000]");
    gb_header(&b, 3, 0, 1ull << 62);
    EXPECT_ERROR(&b, "number of key-value pairs is 4611686018427387904 but must be in [0, 100000]");
    gb_header(&b, 3, 2, 50); /* 50 pairs + 2 infos need >= 750 bytes */
    gb_zeros(&b, 200);
    EXPECT_ERROR(&b, "number of key-value pairs is 50 but the 200 bytes after the header and 2 tensor infos can hold at most 10");
    gb_header(&b, 3, 0, 0);
    b.n = 20; /* counts cut off */
    EXPECT_ERROR(&b, "key-value count at byte 16 needs 8 bytes but only 4 remain");
}

static void gguf_should_reject_bad_strings(void) {
    gb b;
    gb_header(&b, 3, 0, 2);
    gb_u64(&b, 1000); /* key length past the end */
    gb_zeros(&b, 30);
    EXPECT_ERROR(&b, "key-value pair 0: key length 1000 at byte 24 runs past the end of the file (30 bytes remain)");
    gb_header(&b, 3, 0, 2);
    gb_u64(&b, 70000);
    gb_zeros(&b, 30);
    EXPECT_ERROR(&b, "key length is 70000 but must be in [0, 65535]");
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "", "x");
    EXPECT_ERROR(&b, "key-value pair 0: key is empty");
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "a\nb", "x");
    EXPECT_ERROR(&b, "key contains control byte 0x0a at offset 1");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, T_STRING);
    gb_u64(&b, 1ull << 31); /* value length above ggml's 2^30 limit */
    gb_zeros(&b, 16);
    EXPECT_ERROR(&b, "key 'general.name': string value length is 2147483648 but must be in [0, 1073741824]");
    gb_header(&b, 3, 1, 0);
    const uint64_t ne[1] = {1};
    gb_tinfo(&b, "a_tensor_name_that_is_longer_than_ggml_allows_which_is_63_bytes!", 1, ne, 0, 0);
    EXPECT_ERROR(&b, "tensor info 0: tensor name length is 64 but must be in [0, 63]");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "", 1, ne, 0, 0);
    EXPECT_ERROR(&b, "tensor info 0: tensor name is empty");
}

static void gguf_should_reject_bad_values(void) {
    gb b;
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, 13);
    gb_u32(&b, 0);
    EXPECT_ERROR(&b, "key 'k': value type 13 is unknown, must be in [0, 12]");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, T_ARRAY);
    gb_u32(&b, T_ARRAY);
    gb_u64(&b, 1);
    gb_zeros(&b, 16);
    EXPECT_ERROR(&b, "key 'k': arrays of arrays are not supported");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, T_ARRAY);
    gb_u32(&b, T_UINT32);
    gb_u64(&b, 1000000); /* 4 MB of elements promised, 8 bytes present */
    gb_zeros(&b, 8);
    EXPECT_ERROR(&b, "key 'k': array of 1000000 UINT32 needs at least 4000000 bytes but only 8 remain");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, T_ARRAY);
    gb_u32(&b, T_STRING);
    gb_u64(&b, 1ull << 40);
    EXPECT_ERROR(&b, "key 'k': array count is 1099511627776 but must be in [0, 1073741824]");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, T_ARRAY);
    gb_u32(&b, T_STRING);
    gb_u64(&b, 2);
    gb_str(&b, "ok");
    gb_u64(&b, 100); /* second element's length runs past the end */
    gb_zeros(&b, 4);
    EXPECT_ERROR(&b, "array string length 100");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, T_UINT64);
    gb_zeros(&b, 4); /* 4 of the 8 value bytes */
    EXPECT_ERROR(&b, "key 'k': value at byte 37 needs 8 bytes but only 4 remain");
    gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "a", 1);
    gb_kv_u32(&b, "b", 2);
    gb_kv_u32(&b, "a", 3);
    EXPECT_ERROR(&b, "duplicate key 'a' (key-value pairs 0 and 2)");
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 48);
    EXPECT_ERROR(&b, "alignment 48 is not a power of two in [1, 1048576]");
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0);
    EXPECT_ERROR(&b, "alignment 0 is not a power of two");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, T_UINT64);
    gb_u64(&b, 32);
    EXPECT_ERROR(&b, "key 'general.alignment': must be of type UINT32 but is UINT64");
}

static void gguf_should_reject_bad_tensor_infos(void) {
    gb b;
    const uint64_t ne5[5] = {1, 1, 1, 1, 1};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 5, ne5, 0, 0);
    EXPECT_ERROR(&b, "tensor 'w': number of dimensions is 5 but must be in [0, 4]");
    const uint64_t neg[2] = {4, 1ull << 63};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, neg, 0, 0);
    EXPECT_ERROR(&b, "tensor 'w': ne[1] is 9223372036854775808, must be below 2^63");
    const uint64_t ne[2] = {32, 2};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 4, 0); /* Q4_2: removed from ggml */
    EXPECT_ERROR(&b, "tensor 'w': unknown ggml type id 4");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 40, 0);
    EXPECT_ERROR(&b, "tensor 'w': unknown ggml type id 40");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 0xffffffffu, 0);
    EXPECT_ERROR(&b, "unknown ggml type id 4294967295");
    const uint64_t ne48[2] = {48, 2};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne48, 8, 0);
    EXPECT_ERROR(&b, "tensor 'w': ne[0] = 48 is not a multiple of the Q8_0 block size 32");
    const uint64_t big[2] = {1ull << 40, 1ull << 40};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, big, 0, 0);
    EXPECT_ERROR(&b, "tensor 'w': element count or byte size overflows");
    const uint64_t big8[2] = {1ull << 61, 4}; /* numel 2^63: above ggml's int64 */
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, big8, 24, 0);
    EXPECT_ERROR(&b, "tensor 'w': element count or byte size overflows");
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "w", 2, ne, 0, 0);
    gb_tinfo(&b, "w", 2, ne, 0, 256);
    gb_align(&b, 32);
    gb_zeros(&b, 512);
    EXPECT_ERROR(&b, "tensor 'w' appears twice (tensor infos 0 and 1)");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 0, 0);
    b.n -= 3; /* offset cut off */
    EXPECT_ERROR(&b, "tensor 'w': data offset at byte");
}

static void gguf_should_reject_bad_offsets(void) {
    gb b;
    const uint64_t ne[2] = {4, 2}; /* F32: 32 bytes */
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 0, 4);
    gb_align(&b, 32);
    gb_zeros(&b, 64);
    EXPECT_ERROR(&b, "tensor 'w': offset 4 is not a multiple of the alignment 32");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 0, 32);
    gb_align(&b, 32);
    gb_zeros(&b, 40);
    EXPECT_ERROR(&b, "tensor 'w': 32 bytes at offset 32 (data section at byte 96) run past the end of the file (136 bytes)");
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 2, ne, 0, UINT64_MAX - 31); /* data start + offset overflows */
    gb_align(&b, 32);
    gb_zeros(&b, 32);
    EXPECT_ERROR(&b, "run past the end of the file");
    const uint64_t ne16[1] = {16}; /* 64 bytes */
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "a", 1, ne16, 0, 0);
    gb_tinfo(&b, "b", 2, ne, 0, 32); /* [32, 64) inside a's [0, 64) */
    gb_align(&b, 32);
    gb_zeros(&b, 64);
    EXPECT_ERROR(&b, "tensor 'b': data [32, 64) overlaps tensor 'a'");
    /* The same with a custom alignment of 16 and the tensors out of order. */
    gb_header(&b, 3, 2, 1);
    gb_kv_u32(&b, "general.alignment", 16);
    gb_tinfo(&b, "b", 2, ne, 0, 48);
    gb_tinfo(&b, "a", 1, ne16, 0, 0); /* [0, 64) */
    gb_align(&b, 16);
    gb_zeros(&b, 96);
    EXPECT_ERROR(&b, "tensor 'b': data [48, 80) overlaps tensor 'a'");
}

/* ---- valid images ---- */

static void gguf_should_read_quantized_tensors(void) {
    gb b;
    const uint64_t q8[2] = {64, 3}, q4k[1] = {512}, f16[1] = {2}, q2k[1] = {256};
    gb_header(&b, 3, 4, 0);
    gb_tinfo(&b, "q8", 2, q8, 8, 0);     /* 3 rows x 2 blocks x 34 bytes = 204 */
    gb_tinfo(&b, "q4k", 1, q4k, 12, 224); /* 2 blocks x 144 bytes = 288 */
    gb_tinfo(&b, "h", 1, f16, 1, 512);
    gb_tinfo(&b, "q2k", 1, q2k, 10, 544); /* 1 block x 84 bytes */
    gb_align(&b, 32);
    gb_zeros(&b, 628);
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_gguf_parse(b.p, b.n, "q.gguf", &t, &err) == G2F_OK);
    const g2f_tensor *q = g2f_table_find(&t, "q8");
    CHECK(q && q->dtype == G2F_DTYPE_Q8_0); /* dequantized by g2f_tensor_read_f32 (tests/test_quant.c) */
    CHECK(q && q->ndim == 2 && q->shape[0] == 3 && q->shape[1] == 64 && q->numel == 192 && q->nbytes == 204);
    CHECK(q && strcmp(g2f_tensor_type_name(q), "Q8_0") == 0);
    const g2f_tensor *k = g2f_table_find(&t, "q4k");
    CHECK(k && k->dtype == G2F_DTYPE_Q4_K && strcmp(g2f_tensor_type_name(k), "Q4_K") == 0 && k->nbytes == 288);
    const g2f_tensor *k2 = g2f_table_find(&t, "q2k"); /* a type gpt2ffn does not decode: OPAQUE, named */
    CHECK(k2 && k2->dtype == G2F_DTYPE_OPAQUE && strcmp(k2->type_name, "Q2_K") == 0 && k2->nbytes == 84);
    const g2f_tensor *h = g2f_table_find(&t, "h");
    CHECK(h && h->dtype == G2F_DTYPE_F16 && h->type_name == NULL && h->nbytes == 4);
    g2f_table_free(&t);
    CHECK(strcmp(g2f_gguf_type_name(30), "BF16") == 0 && g2f_gguf_type_name(31) == NULL);
}

static void gguf_should_read_metadata_shapes_and_values(void) {
    gb b;
    gb_header(&b, 2, 2, 9); /* version 2: same layout as 3 */
    gb_kv_u32(&b, "general.alignment", 8);
    gb_kv_str(&b, "general.architecture", "gpt2");
    gb_str(&b, "i8");
    gb_u32(&b, T_INT8);
    gb_u8(&b, 0xfe);
    gb_str(&b, "i16");
    gb_u32(&b, T_INT16);
    gb_u8(&b, 0x00);
    gb_u8(&b, 0x80);
    gb_str(&b, "i64");
    gb_u32(&b, T_INT64);
    gb_u64(&b, (uint64_t)-5);
    gb_str(&b, "f32");
    gb_u32(&b, T_FLOAT32);
    gb_u32(&b, 0x3fc00000u); /* 1.5f */
    gb_str(&b, "f64");
    gb_u32(&b, T_FLOAT64);
    gb_u64(&b, 0x3fb999999999999aull); /* 0.1 */
    gb_str(&b, "flag");
    gb_u32(&b, T_BOOL);
    gb_u8(&b, 1);
    gb_str(&b, "tokens"); /* arrays are validated and skipped */
    gb_u32(&b, T_ARRAY);
    gb_u32(&b, T_STRING);
    gb_u64(&b, 2);
    gb_str(&b, "a");
    gb_str(&b, "bc");
    const uint64_t ne[2] = {3, 2}, ne1[1] = {2};
    gb_tinfo(&b, "x", 2, ne, 0, 0);  /* row-major [2, 3] */
    gb_tinfo(&b, "d", 1, ne1, 28, 24); /* F64 */
    gb_align(&b, 8);
    const float xv[6] = {1, 2, 3, 4, 5, 6};
    const double dv[2] = {0.25, -8};
    gb_bytes(&b, xv, sizeof xv);
    gb_bytes(&b, dv, sizeof dv);
    g2f_table t;
    g2f_error err = {0};
    CHECK(g2f_gguf_parse(b.p, b.n, "v2.gguf", &t, &err) == G2F_OK);
    CHECK(t.count == 2 && t.meta_count == 8);
    CHECK(strcmp(g2f_table_meta(&t, "general.architecture"), "gpt2") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "general.alignment"), "8") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "i8"), "-2") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "i16"), "-32768") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "i64"), "-5") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "f32"), "1.5") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "f64"), "0.10000000000000001") == 0);
    CHECK(strcmp(g2f_table_meta(&t, "flag"), "true") == 0);
    CHECK(g2f_table_meta(&t, "tokens") == NULL);
    const g2f_tensor *x = g2f_table_find(&t, "x");
    CHECK(x && x->dtype == G2F_DTYPE_F32 && x->ndim == 2 && x->shape[0] == 2 && x->shape[1] == 3);
    if (x) {
        float got[6];
        g2f_tensor_read_f32(x, 0, 6, got);
        CHECK(memcmp(got, xv, sizeof xv) == 0);
    }
    const g2f_tensor *d = g2f_table_find(&t, "d");
    if (d) {
        double gd[2];
        g2f_tensor_read_f64(d, 0, 2, gd);
        CHECK(d->dtype == G2F_DTYPE_F64 && gd[0] == 0.25 && gd[1] == -8);
    }
    g2f_table_free(&t);

    /* Zero tensors and zero keys: a valid, empty file. */
    gb_header(&b, 3, 0, 0);
    CHECK(g2f_gguf_parse(b.p, b.n, "empty.gguf", &t, &err) == G2F_OK && t.count == 0);
    g2f_table_free(&t);
}

/* ---- the committed fixtures against the checkpoint they came from ---- */

/* Element [i][j] of the transpose of a row-major [in, out] Conv1D weight v:
 * HF c_fc [n_embd, n_inner] transposed is ffn_up [n_inner, n_embd]. */
static float transposed(const float *v, uint64_t n_out, uint64_t i, uint64_t j) { return v[j * n_out + i]; }

static float *read_all(const g2f_tensor *t) {
    float *v = malloc(t->numel * sizeof *v);
    if (v) g2f_tensor_read_f32(t, 0, t->numel, v);
    return v;
}

static float f16_round(float x) { return g2f_f16_to_f32(g2f_f32_to_f16(x)); }

/* kind: 0 F32, 1 F16 weights, 2 Q8_0 weights. */
static void check_fixture(const char *file, int kind, const g2f_table *ref) {
    char path[512];
    snprintf(path, sizeof path, "%s/formats2/%s", fixtures, file);
    g2f_gguf *gg = NULL;
    g2f_error err = {0};
    CHECK(g2f_gguf_open(path, &gg, &err) == G2F_OK);
    if (!gg) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const g2f_table *t = g2f_gguf_table(gg);
    CHECK(t->count == 1 + 6 * 4);
    CHECK(strcmp(g2f_table_meta(t, "general.architecture"), "gpt2") == 0);
    CHECK(strcmp(g2f_table_meta(t, "gpt2.block_count"), "4") == 0);
    CHECK(strcmp(g2f_table_meta(t, "gpt2.embedding_length"), "64") == 0);
    CHECK(strcmp(g2f_table_meta(t, "gpt2.feed_forward_length"), "256") == 0);
    CHECK(strcmp(g2f_table_meta(t, "general.alignment"), "32") == 0);
    const g2f_tensor *emb = g2f_table_find(t, "token_embd.weight");
    CHECK(emb && emb->ndim == 2 && emb->shape[0] == 96 && emb->shape[1] == 64);
    CHECK(emb && emb->dtype == (kind == 1 ? G2F_DTYPE_F16 : G2F_DTYPE_F32));
    for (int L = 0; L < 4; L++) {
        char name[96];
        for (int which = 0; which < 2; which++) { /* ffn_up, ffn_down */
            snprintf(name, sizeof name, "blk.%d.%s.weight", L, which ? "ffn_down" : "ffn_up");
            const g2f_tensor *w = g2f_table_find(t, name);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.%s.weight", L, which ? "c_proj" : "c_fc");
            const g2f_tensor *r = g2f_table_find(ref, name);
            CHECK(w && r);
            if (!w || !r) continue;
            /* Row-major [out, in]: ffn_up [256, 64], ffn_down [64, 256]. */
            const uint64_t rows = which ? 64 : 256, cols = which ? 256 : 64;
            CHECK(w->ndim == 2 && w->shape[0] == rows && w->shape[1] == cols);
            CHECK(r->shape[0] == cols && r->shape[1] == rows); /* Conv1D [in, out] */
            float *rv = read_all(r);
            if (kind == 2) {
                CHECK(w->dtype == G2F_DTYPE_Q8_0 && strcmp(g2f_tensor_type_name(w), "Q8_0") == 0);
                CHECK(w->nbytes == rows * cols / 32 * 34);
                /* Dequantize: per 32 values an f16 scale d then 32 int8 q.
                 * |q d - x| <= d/2 (rounding) + 127 |d - d_f16| (scale
                 * stored in f16, <= 127 d 2^-11 = 0.062 d). */
                double worst = 0;
                int bad = 0;
                for (uint64_t i = 0; i < rows; i++) {
                    for (uint64_t j = 0; j < cols; j++) {
                        const unsigned char *blk = w->data + (i * cols + j) / 32 * 34;
                        uint16_t dh;
                        memcpy(&dh, blk, 2);
                        float d = g2f_f16_to_f32(dh);
                        float q = (float)(int8_t)blk[2 + j % 32];
                        double e = fabs((double)(q * d) - transposed(rv, rows, i, j));
                        if (e > worst) worst = e;
                        bad += e > 0.57 * d;
                    }
                }
                CHECK(bad == 0);
                CHECK(worst > 0); /* it really is quantized */
            } else {
                CHECK(w->dtype == (kind == 1 ? G2F_DTYPE_F16 : G2F_DTYPE_F32));
                float *wv = read_all(w);
                int bad = 0;
                for (uint64_t i = 0; i < rows && wv && rv; i++)
                    for (uint64_t j = 0; j < cols; j++) {
                        float want = transposed(rv, rows, i, j);
                        if (kind == 1) want = f16_round(want);
                        bad += wv[i * cols + j] != want;
                    }
                CHECK(bad == 0);
                free(wv);
            }
            free(rv);
        }
        /* Biases and ln_2 stay F32 in every variant, bit-identical. */
        static const char *const pairs[][2] = {{"ffn_up.bias", "mlp.c_fc.bias"},
                                                {"ffn_down.bias", "mlp.c_proj.bias"},
                                                {"ffn_norm.weight", "ln_2.weight"},
                                                {"ffn_norm.bias", "ln_2.bias"}};
        for (size_t p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "blk.%d.%s", L, pairs[p][0]);
            const g2f_tensor *w = g2f_table_find(t, name);
            snprintf(name, sizeof name, "transformer.h.%d.%s", L, pairs[p][1]);
            const g2f_tensor *r = g2f_table_find(ref, name);
            CHECK(w && r && w->dtype == G2F_DTYPE_F32 && w->ndim == 1 && w->numel == r->numel);
            if (w && r && w->numel == r->numel) CHECK(memcmp(w->data, r->data, r->nbytes) == 0);
        }
    }
    g2f_gguf_close(gg);
}

static void gguf_should_read_the_exported_fixtures(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/tiny/model.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(path, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *ref = g2f_safetensors_table(st);
    check_fixture("tiny.gguf", 0, ref);
    check_fixture("tiny_f16.gguf", 1, ref);
    check_fixture("tiny_q8.gguf", 2, ref);
    g2f_safetensors_close(st);
}

static void gguf_open_should_name_missing_files(void) {
    g2f_gguf *gg = NULL;
    g2f_error err = {0};
    CHECK(g2f_gguf_open("/nonexistent/x.gguf", &gg, &err) == G2F_ERR_IO);
    CHECK_CONTAINS(err.msg, "/nonexistent/x.gguf");
    CHECK(gg == NULL);
    g2f_gguf_close(NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) fixtures = argv[1];
    RUN(gguf_should_reject_bad_magic);
    RUN(gguf_should_reject_unsupported_versions);
    RUN(gguf_should_reject_counts_the_file_cannot_hold);
    RUN(gguf_should_reject_bad_strings);
    RUN(gguf_should_reject_bad_values);
    RUN(gguf_should_reject_bad_tensor_infos);
    RUN(gguf_should_reject_bad_offsets);
    RUN(gguf_should_read_quantized_tensors);
    RUN(gguf_should_read_metadata_shapes_and_values);
    RUN(gguf_should_read_the_exported_fixtures);
    RUN(gguf_open_should_name_missing_files);
    CHECK_EXIT();
}
