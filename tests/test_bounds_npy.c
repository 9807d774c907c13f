/* NumPy reader: every bound of formats/g2f_npy.h (.npy header and data,
 * .npz members and __metadata__) and of SECURITY.md's Limits table, at the
 * exact limit (accepted) and one past it (refused with the check's
 * message). */
#include "bounds.h"
#include "g2f_npy.h"
#include "test_util.h"

static char dir[256];

/* A .npy image: magic, version major.0, the header length (2 bytes for
 * version 1, 4 otherwise) = hlen, the dict text padded with spaces to hlen
 * bytes ending in '\n' (hlen 0: to a multiple of 64 in all), data zeros. */
static void npy(bytes *b, unsigned major, const char *dict, size_t hlen, size_t data) {
    const size_t pre = major == 1 ? 10 : 12;
    if (!hlen) {
        hlen = strlen(dict) + 1;
        while ((pre + hlen) % 64) hlen++;
    }
    b->n = 0;
    b_bytes(b, "\x93NUMPY", 6);
    b_u8(b, major);
    b_u8(b, 0);
    b_le(b, hlen, major == 1 ? 2 : 4);
    const size_t at = b->n;
    b_str(b, dict);
    if (b->n - at < hlen) b_fill(b, ' ', hlen - (b->n - at));
    b->p[at + hlen - 1] = '\n';
    b->n = at + hlen;
    b_fill(b, 0, data);
}

static g2f_status n_parse(const bytes *b, g2f_error *err) {
    unsigned char *q = b_exact(b);
    g2f_tensor t;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_npy_parse(q, b->n, "b.npy", &t, err);
    if (st == G2F_OK && t.nbytes) {
        volatile unsigned char x = t.data[0];
        x = t.data[t.nbytes - 1];
        (void)x;
    }
    free(q);
    return st;
}

static const char *f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";

/* npy: the magic and the header length field: 10 bytes for version 1, 12
 * for versions 2 and 3; versions 1 to 3 */
static void npy_should_need_the_whole_preamble(void) {
    bytes b = {0};
    g2f_error err;
    npy(&b, 1, "", 1, 0);
    b.n = 10;
    b_put(&b, 8, 0, 2);
    PASSES_CHECK(n_parse(&b, &err), err, "no \\x93NUMPY magic", "header is not a dict literal");
    b.n = 9;
    REFUSED(n_parse(&b, &err), err, "not a .npy array (no \\x93NUMPY magic)");
    npy(&b, 2, "", 1, 0);
    b.n = 12;
    b_put(&b, 8, 0, 4);
    PASSES_CHECK(n_parse(&b, &err), err, "truncated", "header is not a dict literal");
    b.n = 11;
    REFUSED(n_parse(&b, &err), err, "truncated .npy header");
    for (unsigned v = 0; v <= 4; v++) {
        npy(&b, v == 0 || v == 4 ? 2 : v, f4, 0, 12);
        b.p[6] = (unsigned char)v;
        if (v >= 1 && v <= 3) ACCEPTED(n_parse(&b, &err), err);
        else REFUSED(n_parse(&b, &err), err, v ? ".npy version 4.0 is not 1, 2 or 3" : ".npy version 0.0 is not");
    }
    b_free(&b);
}

/* npy: header length <= G2F_NPY_MAX_HEADER (65536) and within the file */
static void npy_should_take_a_header_of_up_to_64_kib_inside_the_file(void) {
    bytes b = {0};
    g2f_error err;
    npy(&b, 2, f4, G2F_NPY_MAX_HEADER, 12);
    ACCEPTED(n_parse(&b, &err), err);
    npy(&b, 2, f4, G2F_NPY_MAX_HEADER + 1, 12);
    REFUSED(n_parse(&b, &err), err, ".npy header length 65537 runs past the end or the 65536-byte limit");
    /* a header ending exactly at the end of the file (no data: shape (0,)) */
    npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 0, 0);
    ACCEPTED(n_parse(&b, &err), err);
    b_put(&b, 8, b.n - 10 + 1, 2);
    char needle[96];
    snprintf(needle, sizeof needle, ".npy header length %zu runs past the end", b.n - 10 + 1);
    REFUSED(n_parse(&b, &err), err, needle);
    b_free(&b);
}

/* npy: the header is text: no control bytes but tab, LF and CR; ASCII for
 * versions 1 and 2, UTF-8 in version 3 */
static void npy_should_take_header_text_up_to_its_edges(void) {
    bytes b = {0};
    g2f_error err;
    npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\t\r", 0, 12);
    ACCEPTED(n_parse(&b, &err), err);
    b.p[10 + 1] = 0x1f;
    REFUSED(n_parse(&b, &err), err, ".npy header byte 1 is not header text");
    /* 0x7f is text, 0x80 is not (in versions 1 and 2) */
    npy(&b, 2, f4, 0, 12);
    b.p[12 + 58] = 0x7f; /* in the padding after the dict */
    PASSES_CHECK(n_parse(&b, &err), err, "not header text", "must hold exactly descr, fortran_order and shape");
    b.p[12 + 58] = 0x80;
    REFUSED(n_parse(&b, &err), err, ".npy header byte 58 is not header text");
    for (unsigned v = 2; v <= 3; v++) {
        npy(&b, v, "{'descr': '<f\xc3\xa9', 'fortran_order': False, 'shape': (3,), }", 0, 12);
        if (v == 3) PASSES_CHECK(n_parse(&b, &err), err, "not header text", "is not supported");
        else REFUSED(n_parse(&b, &err), err, ".npy header byte 13 is not header text");
    }
    b_free(&b);
}

/* npy: the header parser's own buffers: keys of at most 31 bytes, a descr
 * of at most 15 */
static void npy_should_copy_keys_and_descr_up_to_their_buffers(void) {
    bytes b = {0};
    g2f_error err;
    char dict[160];
    const char *k31 = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", *d15 = "<f4xxxxxxxxxxxx";
    CHECK(strlen(k31) == 31 && strlen(d15) == 15);
    snprintf(dict, sizeof dict, "{'%s': 1}", k31);
    npy(&b, 1, dict, 0, 0);
    PASSES_CHECK(n_parse(&b, &err), err, "expected 'key': value", "unexpected or repeated key 'kkkk");
    snprintf(dict, sizeof dict, "{'%sk': 1}", k31);
    npy(&b, 1, dict, 0, 0);
    REFUSED(n_parse(&b, &err), err, ".npy header: expected 'key': value");
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }", d15);
    npy(&b, 1, dict, 0, 12);
    PASSES_CHECK(n_parse(&b, &err), err, "not a simple string", ".npy dtype '<f4xxxxxxxxxxxx' is not supported");
    snprintf(dict, sizeof dict, "{'descr': '%sx', 'fortran_order': False, 'shape': (3,), }", d15);
    npy(&b, 1, dict, 0, 12);
    REFUSED(n_parse(&b, &err), err, "'descr' is not a simple string");
    b_free(&b);
}

/* npy: 'shape' holds at most G2F_MAX_DIMS (8) integers, each below 2^64,
 * whose product does not overflow */
static void npy_should_take_shapes_up_to_their_limits(void) {
    static const struct {
        const char *shape, *needle; /* needle NULL: accepted */
        int passes;                 /* refused by the size check, not the shape's */
    } cases[] = {
        {"(1, 1, 1, 1, 1, 1, 1, 3)", NULL, 0},
        {"(1, 1, 1, 1, 1, 1, 1, 1, 3)", "'shape' must be at most 8 non-negative integers", 0},
        {"(18446744073709551615,)", "promises 18446744073709551615 x 1 bytes", 1},
        {"(18446744073709551616,)", "'shape' must be at most 8 non-negative integers", 0},
        {"(4294967295, 4294967297)", "promises 18446744073709551615 x 1 bytes", 1},
        {"(4294967296, 4294967296)", ".npy shape element count overflows", 0},
    };
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dict[160];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", i < 2 ? "<f4" : "|u1",
                 cases[i].shape);
        npy(&b, 1, dict, 0, 12);
        if (!cases[i].needle) ACCEPTED(n_parse(&b, &err), err);
        else if (cases[i].passes) PASSES_CHECK(n_parse(&b, &err), err, "'shape'", cases[i].needle);
        else REFUSED(n_parse(&b, &err), err, cases[i].needle);
    }
    b_free(&b);
}

/* npy: the header scanner never reads past the header: cut anywhere, the
 * header is refused the same way whether the file ends there (a read past
 * it is a heap overflow under ASan) or the rest of the dict follows as data
 * (which a scanner reading one byte too far would take) */
static void npy_should_never_read_past_a_cut_header(void) {
    const size_t len = strlen(f4);
    bytes alone = {0}, followed = {0};
    g2f_error e1, e2;
    for (size_t k = 0; k < len; k++) {
        alone.n = followed.n = 0;
        b_bytes(&alone, "\x93NUMPY\x01\x00", 8);
        b_u16(&alone, (unsigned)k);
        b_bytes(&alone, f4, k);
        b_bytes(&followed, alone.p, alone.n);
        b_str(&followed, f4 + k);
        g2f_status s1 = n_parse(&alone, &e1), s2 = n_parse(&followed, &e2);
        char what[32];
        snprintf(what, sizeof what, "cut at %zu", k);
        if (s1 == G2F_OK || s2 == G2F_OK || strcmp(e1.msg, e2.msg) != 0) {
            fprintf(stderr, "%s: \"%s\" / \"%s\"\n", what, e1.msg, e2.msg);
            CHECK(!"a cut header refused the same way, whatever follows it");
        }
    }
    /* and where the cut falls decides the message: inside a value's quotes,
     * or right after a complete word */
    static const struct {
        const char *header, *needle;
    } cuts[] = {{"{'descr': '<f", "'descr' is not a simple string"},
                {"{'descr': '<f4', 'fortran_order': False", "expected ',' or '}'"}};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        alone.n = 0;
        b_bytes(&alone, "\x93NUMPY\x01\x00", 8);
        b_u16(&alone, (unsigned)strlen(cuts[i].header));
        b_str(&alone, cuts[i].header);
        REFUSED(n_parse(&alone, &e1), e1, cuts[i].needle);
    }
    b_free(&alone);
    b_free(&followed);
}

/* npy: fortran_order True is refused from 2 dimensions on (a 1-dimensional
 * array has the same layout either way) */
static void npy_should_take_fortran_order_up_to_one_dimension(void) {
    bytes b = {0};
    g2f_error err;
    npy(&b, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 0, 12);
    ACCEPTED(n_parse(&b, &err), err);
    npy(&b, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }", 0, 12);
    REFUSED(n_parse(&b, &err), err, ".npy array is in Fortran order");
    b_free(&b);
}

/* npy: element count x item size == the bytes after the header, exactly */
static void npy_should_match_the_data_to_the_byte(void) {
    bytes b = {0};
    g2f_error err;
    npy(&b, 1, f4, 0, 12);
    ACCEPTED(n_parse(&b, &err), err);
    npy(&b, 1, f4, 0, 13);
    REFUSED(n_parse(&b, &err), err, ".npy header promises 3 x 4 bytes but 13 follow it");
    npy(&b, 1, f4, 0, 11);
    REFUSED(n_parse(&b, &err), err, ".npy header promises 3 x 4 bytes but 11 follow it");
    b_free(&b);
}

/* Writes b to dir/name; returns the path (static). */
static const char *put(const char *name, const bytes *b) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(write_bytes(path, b->p, b->n) == 0);
    return path;
}

/* npz (Limits): a __metadata__ member of at most 1 MiB of JSON is read, a
 * larger one ignored */
static void npz_should_read_metadata_of_up_to_one_mebibyte(void) {
    bytes t = {0}, m = {0}, z = {0};
    zlay lay;
    npy(&t, 1, f4, 0, 12);
    for (size_t size = 1u << 20; size <= (1u << 20) + 1; size++) {
        char dict[160];
        snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%zu,), }", size);
        npy(&m, 1, dict, 0, 0);
        const size_t at = m.n;
        b_str(&m, "{\"k\": \"v\"");
        b_fill(&m, ' ', size - (m.n - at) - 1);
        b_str(&m, "}");
        const zentry e[] = {{"t.npy", t.p, t.n, 0, NULL, 0, 0}, {"__metadata__.npy", m.p, m.n, 0, NULL, 0, 0}};
        z.n = 0;
        zip_write(&z, e, 2, 0, 0, &lay);
        g2f_npz *npz = NULL;
        g2f_error err = {0};
        g2f_status st = g2f_npz_open(put("meta.npz", &z), &npz, &err);
        ACCEPTED(st, err);
        if (st == G2F_OK) {
            const char *v = g2f_table_meta(g2f_npz_table(npz), "k");
            if (size == 1u << 20) CHECK(v && strcmp(v, "v") == 0);
            else CHECK(v == NULL);
        }
        g2f_npz_close(npz);
    }
    b_free(&t);
    b_free(&m);
    b_free(&z);
}

/* npz: members are NAME.npy with a NAME of at least one byte; a zip is an
 * npz when it has at least one member and all are .npy */
static void npz_should_take_member_names_of_one_byte_or_more(void) {
    bytes t = {0}, z = {0};
    zlay lay;
    npy(&t, 1, f4, 0, 12);
    for (int stem = 1; stem >= 0; stem--) {
        const zentry e[] = {{stem ? "a.npy" : ".npy", t.p, t.n, 0, NULL, 0, 0}};
        z.n = 0;
        zip_write(&z, e, 1, 0, 0, &lay);
        g2f_npz *npz = NULL;
        g2f_error err = {0};
        g2f_status st = g2f_npz_open(put("names.npz", &z), &npz, &err);
        if (stem) ACCEPTED(st, err);
        else REFUSED(st, err, "member '.npy' is not an .npy array");
        CHECK(g2f_npz_probe_members(z.p, z.n) == stem);
        g2f_npz_close(npz);
    }
    z.n = 0;
    zip_write(&z, NULL, 0, 0, 0, &lay);
    CHECK(!g2f_npz_probe_members(z.p, z.n)); /* no members: not an npz */
    b_free(&t);
    b_free(&z);
}

/* npz (Limits): a deflated member inflates to at most G2F_NPZ_MAX_MEMBER
 * (16 GiB): 16 GiB passes (and is then above 1000:1), one byte more not */
static void npz_should_inflate_members_of_up_to_16_gib(void) {
    const size_t c = 1000000;
    unsigned char *junk = calloc(c, 1);
    CHECK(junk != NULL);
    if (!junk) return;
    bytes z = {0};
    zlay lay;
    for (uint64_t size = G2F_NPZ_MAX_MEMBER; size <= G2F_NPZ_MAX_MEMBER + 1; size++) {
        const zentry e[] = {{"t.npy", NULL, (size_t)size, 1, junk, c, 0}};
        z.n = 0;
        zip_write(&z, e, 1, 1, 0, &lay);
        g2f_npz *npz = NULL;
        g2f_error err = {0};
        g2f_status st = g2f_npz_open(put("big.npz", &z), &npz, &err);
        if (size == G2F_NPZ_MAX_MEMBER)
            PASSES_CHECK(st, err, "above the limit", "claims 17179869184 bytes from 1000000 compressed, a ratio above");
        else
            REFUSED(st, err, "member 't.npy' is 17179869185 bytes, above the limit of 17179869184");
        g2f_npz_close(npz);
    }
    free(junk);
    b_free(&z);
}

/* .npy folder (Limits): at most G2F_NPY_MAX_FILES (4096) .npy files. Each
 * is one memory mapping, and Linux allows a process 65,530 by default
 * (vm.max_map_count): the limit must be well below that to be the error a
 * big folder meets, rather than "cannot mmap" part way through. */
static void npy_folder_should_take_up_to_the_file_limit(void) {
    const size_t limit = 4096;
    char sub[300], path[400];
    if (fast_tmpdir(sub, sizeof sub, "bounds_npy_folder") != 0) {
        CHECK(!"a scratch folder");
        return;
    }
    bytes t = {0};
    npy(&t, 1, f4, 0, 12);
    for (size_t i = 0; i <= limit; i++) {
        if (i == limit) {
            g2f_npz *z = NULL;
            g2f_error err = {0};
            g2f_status st = g2f_npz_open(sub, &z, &err);
            ACCEPTED(st, err);
            CHECK(st != G2F_OK || g2f_npz_table(z)->count == limit);
            g2f_npz_close(z);
        }
        snprintf(path, sizeof path, "%s/t%05zu.npy", sub, i);
        CHECK(write_bytes(path, t.p, t.n) == 0);
    }
    g2f_npz *z = NULL;
    g2f_error err = {0};
    REFUSED(g2f_npz_open(sub, &z, &err), err, "more than 4096 .npy files");
    g2f_npz_close(z);
    remove_tmpdir(sub);
    b_free(&t);
}

int main(void) {
    if (make_tmpdir(dir, sizeof dir, "bounds_npy") != 0) return 1;
    RUN(npy_should_need_the_whole_preamble);
    RUN(npy_should_take_a_header_of_up_to_64_kib_inside_the_file);
    RUN(npy_should_take_header_text_up_to_its_edges);
    RUN(npy_should_copy_keys_and_descr_up_to_their_buffers);
    RUN(npy_should_take_shapes_up_to_their_limits);
    RUN(npy_should_never_read_past_a_cut_header);
    RUN(npy_should_take_fortran_order_up_to_one_dimension);
    RUN(npy_should_match_the_data_to_the_byte);
    RUN(npz_should_take_member_names_of_one_byte_or_more);
    RUN(npz_should_read_metadata_of_up_to_one_mebibyte);
    RUN(npz_should_inflate_members_of_up_to_16_gib);
    RUN(npy_folder_should_take_up_to_the_file_limit);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
