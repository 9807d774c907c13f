/* zip reader: every bound of the checklist in formats/g2f_zip.h, of
 * g2f_zip_extract and of SECURITY.md's Limits table, at the exact limit
 * (accepted) and one past it (refused with the check's message). Archives are
 * written by zip_write (tests/bounds.h), then one field is moved. */
#include "bounds.h"
#include "g2f_zip.h"

/* Opens an exact copy of b; on success checks every member's local header
 * and data lie inside the input (ASan) by reading them, then closes. */
static g2f_status z_open(const bytes *b, size_t *count, g2f_error *err) {
    unsigned char *q = b_exact(b);
    g2f_zip *z = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_zip_open_mapping(q, b->n, "b.zip", &z, err);
    if (st == G2F_OK) {
        if (count) *count = g2f_zip_count(z);
        CHECK(g2f_zip_entry(z, g2f_zip_count(z)) == NULL); /* entries [0, count) and no further */
        CHECK(g2f_zip_count(z) == 0 || g2f_zip_entry(z, g2f_zip_count(z) - 1) != NULL);
        for (size_t i = 0; i < g2f_zip_count(z); i++) {
            const g2f_zip_member *m = g2f_zip_entry(z, i);
            volatile unsigned char x = 0;
            if (m->compressed_size) x = m->data[0], x = m->data[m->compressed_size - 1];
            (void)x;
        }
        g2f_zip_close(z);
    }
    free(q);
    return st;
}

static const zentry two[] = {{"a", "hello", 5, 0, NULL, 0, 0}, {"b", "world!", 6, 0, NULL, 0, 0}};

/* zip checklist 1: an EOCD whose comment ends exactly at the end of the
 * file, searched over the last 22 + 65,535 bytes */
static void zip_should_find_the_end_record_at_its_farthest(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    size_t count = 9;
    zip_write(&b, NULL, 0, 0, 0, &lay); /* the empty archive: the EOCD alone */
    CHECK(b.n == 22);
    ACCEPTED(z_open(&b, &count, &err), err);
    CHECK(count == 0);
    b.n = 21;
    REFUSED(z_open(&b, NULL, &err), err, "21 bytes is too short for a zip archive");
    /* the longest comment puts the EOCD 65,557 bytes before the end */
    b.n = 0;
    zip_write(&b, two, 2, 0, 65535, &lay);
    CHECK(b.n - lay.eocd == 65557);
    ACCEPTED(z_open(&b, &count, &err), err);
    CHECK(count == 2);
    /* a comment one byte short of the end of the file, or one byte past it */
    b_u8(&b, 'c');
    REFUSED(z_open(&b, NULL, &err), err, "no end of central directory record in the last 65557 bytes");
    b.n = 0;
    zip_write(&b, two, 2, 0, 10, &lay);
    b_put(&b, lay.eocd + EOCD_COMMENT_LEN, 11, 2);
    REFUSED(z_open(&b, NULL, &err), err, "no end of central directory record");
    b_put(&b, lay.eocd + EOCD_COMMENT_LEN, 10, 2);
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_free(&b);
}

/* zip checklist 3: the ZIP64 end record lies inside the file, ending at the
 * locator at the latest */
static void zip_should_end_the_zip64_record_at_its_locator_at_most(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 1, 0, &lay);
    CHECK(lay.loc64 - lay.rec64 == 56); /* the record right before the locator */
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.loc64 + 8, lay.rec64 + 1, 8);
    char needle[96];
    snprintf(needle, sizeof needle, "ZIP64 end of central directory offset %zu is outside the file (must be <= %zu)",
             lay.rec64 + 1, lay.rec64);
    REFUSED(z_open(&b, NULL, &err), err, needle);
    b_free(&b);
}

/* zip checklist 3: a ZIP64 locator is looked for right before the EOCD, even
 * when it starts the file */
static void zip_should_read_a_locator_that_starts_the_file(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    b_u32(&b, 0x07064b50); /* a locator pointing at offset 0: no room for a record */
    b_u32(&b, 0);
    b_u64(&b, 0);
    b_u32(&b, 1);
    zip_write(&b, NULL, 0, 0, 0, &lay);
    CHECK(lay.eocd == 20);
    REFUSED(z_open(&b, NULL, &err), err, "ZIP64 end of central directory offset 0 is outside the file");
    b_free(&b);
}

/* zip checklist 4: entries <= G2F_ZIP_MAX_ENTRIES (1,000,000) */
static void zip_should_take_entry_counts_up_to_the_limit(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 1, 0, &lay);
    /* a million entries pass the limit, and cannot fit the directory */
    b_put(&b, lay.rec64 + REC64_ENTRIES_DISK, G2F_ZIP_MAX_ENTRIES, 8);
    b_put(&b, lay.rec64 + REC64_ENTRIES, G2F_ZIP_MAX_ENTRIES, 8);
    PASSES_CHECK(z_open(&b, NULL, &err), err, "more than the limit", "1000000 members cannot fit a");
    b_put(&b, lay.rec64 + REC64_ENTRIES_DISK, G2F_ZIP_MAX_ENTRIES + 1, 8);
    b_put(&b, lay.rec64 + REC64_ENTRIES, G2F_ZIP_MAX_ENTRIES + 1, 8);
    REFUSED(z_open(&b, NULL, &err), err, "1000001 zip members, more than the limit of 1000000");
    b_free(&b);
}

/* zip checklist 4: entries x 46 <= directory size, and the directory
 * [offset, offset + size) ends before the end records */
static void zip_should_fit_the_directory_to_the_byte(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 0, 0, &lay);
    /* 2 x 46 bytes: enough for the counts, not for the second entry's name */
    b_put(&b, lay.eocd + EOCD_CD_SIZE, 2 * 46, 4);
    PASSES_CHECK(z_open(&b, NULL, &err), err, "cannot fit", "central directory entry 1 at offset");
    b_put(&b, lay.eocd + EOCD_CD_SIZE, 2 * 46 - 1, 4);
    REFUSED(z_open(&b, NULL, &err), err, "2 members cannot fit a 91-byte central directory");
    /* the second entry's fixed 46 bytes exactly, then its name past the end */
    b_put(&b, lay.eocd + EOCD_CD_SIZE, 47 + 46, 4);
    REFUSED(z_open(&b, NULL, &err), err, "central directory entry 1 runs past the directory's end");
    b_put(&b, lay.eocd + EOCD_CD_SIZE, 47 + 45, 4);
    REFUSED(z_open(&b, NULL, &err), err, "central directory entry 1 at offset");
    /* the directory ends where the EOCD starts, or one byte into it */
    b_put(&b, lay.eocd + EOCD_CD_SIZE, lay.cd_size, 4);
    CHECK(lay.cd + lay.cd_size == lay.eocd);
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.eocd + EOCD_CD_SIZE, lay.cd_size + 1, 4);
    char needle[96];
    snprintf(needle, sizeof needle, "central directory [%zu, +%zu) runs past its end record at %zu", lay.cd,
             lay.cd_size + 1, lay.eocd);
    REFUSED(z_open(&b, NULL, &err), err, needle);
    /* with ZIP64, the directory ends at the ZIP64 record at the latest */
    b.n = 0;
    zip_write(&b, two, 2, 1, 0, &lay);
    CHECK(lay.cd + lay.cd_size == lay.rec64);
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.rec64 + REC64_CD_SIZE, lay.cd_size + 1, 8);
    snprintf(needle, sizeof needle, "runs past its end record at %zu", lay.rec64);
    REFUSED(z_open(&b, NULL, &err), err, needle);
    b_free(&b);
}

/* zip checklist 5: each central entry (46 bytes + name + extra + comment)
 * inside the directory */
static void zip_should_keep_central_entries_inside_the_directory(void) {
    static const zentry e[] = {{"abcd", "x", 1, 0, NULL, 0, 0}};
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, e, 1, 0, 0, &lay);
    ACCEPTED(z_open(&b, NULL, &err), err);
    /* the same 50 bytes read as 46 + 2 name + 2 comment: still inside (the
     * name "ab" then disagrees with the local header), 3 comment bytes not */
    b_put(&b, lay.central[0] + CEN_NAME_LEN, 2, 2);
    b_put(&b, lay.central[0] + CEN_COMMENT_LEN, 2, 2);
    PASSES_CHECK(z_open(&b, NULL, &err), err, "runs past the directory's end", "local header disagrees");
    b_put(&b, lay.central[0] + CEN_COMMENT_LEN, 3, 2);
    REFUSED(z_open(&b, NULL, &err), err, "central directory entry 0 runs past the directory's end");
    b_put(&b, lay.central[0] + CEN_COMMENT_LEN, 0, 2);
    b_put(&b, lay.central[0] + CEN_EXTRA_LEN, 3, 2);
    REFUSED(z_open(&b, NULL, &err), err, "central directory entry 0 runs past the directory's end");
    b_free(&b);
}

/* zip checklist 5: names of 1 to G2F_ZIP_MAX_NAME (4096) bytes */
static void zip_should_take_names_up_to_the_limit(void) {
    char *name = malloc(G2F_ZIP_MAX_NAME + 2);
    CHECK(name != NULL);
    if (!name) return;
    bytes b = {0};
    zlay lay;
    g2f_error err;
    for (size_t len = G2F_ZIP_MAX_NAME; len <= G2F_ZIP_MAX_NAME + 1; len++) {
        memset(name, 'n', len);
        name[len] = '\0';
        zentry e[] = {{name, "x", 1, 0, NULL, 0, 0}};
        b.n = 0;
        zip_write(&b, e, 1, 0, 0, &lay);
        if (len == G2F_ZIP_MAX_NAME) ACCEPTED(z_open(&b, NULL, &err), err);
        else REFUSED(z_open(&b, NULL, &err), err, "name of 4097 bytes must be 1..4096 bytes without NUL");
    }
    static const zentry one[] = {{"a", "x", 1, 0, NULL, 0, 0}};
    b.n = 0;
    zip_write(&b, one, 1, 0, 0, &lay);
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.central[0] + CEN_NAME_LEN, 0, 2);
    b_put(&b, lay.central[0] + CEN_COMMENT_LEN, 1, 2); /* same entry size */
    REFUSED(z_open(&b, NULL, &err), err, "name of 0 bytes must be 1..4096 bytes without NUL");
    free(name);
    b_free(&b);
}

/* zip checklist 5: a stored member's two sizes are equal; a ZIP64 extra
 * field ends inside the extra bytes and holds every field marked 0xffffffff */
static void zip_should_check_sizes_and_zip64_fields_to_the_byte(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 0, 0, &lay);
    b_put(&b, lay.central[0] + CEN_CSIZE, 6, 4);
    REFUSED(z_open(&b, NULL, &err), err, "stored member 'a' has compressed size 6 != size 5");
    b_put(&b, lay.central[0] + CEN_CSIZE, 4, 4);
    REFUSED(z_open(&b, NULL, &err), err, "stored member 'a' has compressed size 4 != size 5");

    b.n = 0;
    zip_write(&b, two, 2, 1, 0, &lay);
    const size_t extra = lay.central[0] + CEN_NAME + 1; /* after the name "a" */
    CHECK(b.p[extra] == 1 && b.p[extra + 2] == 24);    /* id 0x0001, 24 bytes: the whole 28-byte extra */
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, extra + 2, 25, 2);
    REFUSED(z_open(&b, NULL, &err), err, "member 'a': extra field 0x0001 runs past its end");
    b_put(&b, extra + 2, 23, 2); /* three fields marked, 23 bytes for them */
    REFUSED(z_open(&b, NULL, &err), err, "member 'a': ZIP64 extra field is too short for its 64-bit sizes");
    /* a field that is only its 4-byte header, ending the extra bytes: read */
    b_put(&b, extra + 2, 0, 2);
    b_put(&b, lay.central[0] + CEN_EXTRA_LEN, 4, 2);
    b_put(&b, lay.central[0] + CEN_COMMENT_LEN, 24, 2); /* the entry keeps its size */
    REFUSED(z_open(&b, NULL, &err), err, "member 'a': ZIP64 extra field is too short for its 64-bit sizes");
    b_free(&b);
}

/* zip checklist 7: the local header (30 bytes + name + extra) inside the file */
static void zip_should_keep_local_headers_inside_the_file(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    static const zentry one[] = {{"a", "hello", 5, 0, NULL, 0, 0}};
    zip_write(&b, one, 1, 0, 0, &lay);
    /* 30 bytes before the end: inside (and not a local header) */
    b_put(&b, lay.central[0] + CEN_OFFSET, b.n - 30, 4);
    PASSES_CHECK(z_open(&b, NULL, &err), err, "is past the end of the file", "no local header signature");
    b_put(&b, lay.central[0] + CEN_OFFSET, b.n - 29, 4);
    char needle[96];
    snprintf(needle, sizeof needle, "member 'a': local header offset %zu is past the end of the file", b.n - 29);
    REFUSED(z_open(&b, NULL, &err), err, needle);

    /* a copy of the local header as the archive comment, its extra field
     * reaching exactly the end of the file, then one byte past it */
    const size_t k = 7;
    b.n = 0;
    zip_write(&b, one, 1, 0, 31 + k, &lay);
    const size_t copy = lay.eocd + 22;
    memcpy(b.p + copy, b.p + lay.local[0], 31);
    b_put(&b, copy + 28, k, 2);
    b_put(&b, lay.central[0] + CEN_OFFSET, copy, 4);
    PASSES_CHECK(z_open(&b, NULL, &err), err, "local header runs past", "runs past the end of the member data");
    b_put(&b, copy + 28, k + 1, 2);
    REFUSED(z_open(&b, NULL, &err), err, "member 'a': local header runs past the end of the file");
    b_free(&b);
}

/* zip checklist 7: a member's data ends at the central directory at the
 * latest */
static void zip_should_end_member_data_at_the_central_directory(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 0, 0, &lay);
    CHECK(lay.data[1] + 6 == lay.cd); /* 'b' ends where the directory starts */
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.central[1] + CEN_CSIZE, 7, 4);
    b_put(&b, lay.central[1] + CEN_SIZE, 7, 4);
    char needle[96];
    snprintf(needle, sizeof needle, "member 'b': data [%zu, +7) runs past the end of the member data (%zu)",
             lay.data[1], lay.cd);
    REFUSED(z_open(&b, NULL, &err), err, needle);
    /* ZIP64 sizes: the same bound */
    b.n = 0;
    zip_write(&b, two, 2, 1, 0, &lay);
    ACCEPTED(z_open(&b, NULL, &err), err);
    const size_t extra = lay.central[1] + CEN_NAME + 1;
    b_put(&b, extra + CEN64_SIZE, 7, 8);
    b_put(&b, extra + CEN64_CSIZE, 7, 8);
    REFUSED(z_open(&b, NULL, &err), err, "runs past the end of the member data");
    b_free(&b);
}

/* zip checklist 8: sorted by offset, a member ends where the next starts at
 * the latest */
static void zip_should_refuse_a_one_byte_overlap(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 2, 0, 0, &lay);
    CHECK(lay.data[0] + 5 == lay.local[1]); /* 'a' ends where 'b' starts */
    ACCEPTED(z_open(&b, NULL, &err), err);
    b_put(&b, lay.central[0] + CEN_CSIZE, 6, 4);
    b_put(&b, lay.central[0] + CEN_SIZE, 6, 4);
    char needle[96];
    snprintf(needle, sizeof needle, "member 'b' at offset %zu overlaps member 'a' (ends at %zu)", lay.local[1],
             lay.local[1] + 1);
    REFUSED(z_open(&b, NULL, &err), err, needle);
    b_free(&b);
}

/* Extracts member 0 of b with max_size. */
static g2f_status z_extract(const bytes *b, uint64_t max_size, uint64_t *size, g2f_error *err) {
    unsigned char *q = b_exact(b), *out = NULL;
    g2f_zip *z = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_zip_open_mapping(q, b->n, "b.zip", &z, err);
    if (st == G2F_OK) st = g2f_zip_extract(z, g2f_zip_entry(z, 0), max_size, &out, err);
    if (st == G2F_OK && size) *size = g2f_zip_entry(z, 0)->size;
    free(out);
    g2f_zip_close(z);
    free(q);
    return st;
}

/* g2f_zip_extract: size <= max_size; a deflated member expands at most
 * G2F_ZIP_MAX_RATIO (1000) times; the stream produces exactly the declared
 * size */
static void zip_should_extract_up_to_the_size_and_ratio_limits(void) {
    bytes b = {0};
    zlay lay;
    g2f_error err;
    zip_write(&b, two, 1, 0, 0, &lay);
    ACCEPTED(z_extract(&b, 5, NULL, &err), err);
    REFUSED(z_extract(&b, 4, NULL, &err), err, "member 'a' is 5 bytes, above the limit of 4");

    /* 1,000,000 and 1,000,001 zeros, each stream padded to 1000 bytes */
    const size_t c = 1000;
    unsigned char *zeros = calloc(1000 * c + 1, 1);
    CHECK(zeros != NULL);
    if (!zeros) return;
    for (size_t n = 1000 * c; n <= 1000 * c + 1; n++) {
        bytes s = {0};
        zip_deflate(zeros, n, &s);
        CHECK(s.n <= c);
        b_fill(&s, 0, c - s.n);
        zentry e[] = {{"z", NULL, n, 1, s.p, c, (uint32_t)crc32(0, zeros, (uInt)n)}};
        b.n = 0;
        zip_write(&b, e, 1, 0, 0, &lay);
        uint64_t got = 0;
        if (n == 1000 * c) {
            ACCEPTED(z_extract(&b, UINT64_MAX, &got, &err), err);
            CHECK(got == n);
        } else {
            REFUSED(z_extract(&b, UINT64_MAX, NULL, &err), err,
                    "member 'z' claims 1000001 bytes from 1000 compressed, a ratio above 1000:1");
        }
        b_free(&s);
    }
    free(zeros);

    /* the declared size, to the byte */
    static const char text[] = "hello, deflated world";
    static const zentry d[] = {{"d", text, sizeof text - 1, 1, NULL, 0, 0}};
    b.n = 0;
    zip_write(&b, d, 1, 0, 0, &lay);
    ACCEPTED(z_extract(&b, UINT64_MAX, NULL, &err), err);
    b_put(&b, lay.central[0] + CEN_SIZE, sizeof text - 2, 4);
    REFUSED(z_extract(&b, UINT64_MAX, NULL, &err), err, "member 'd' inflates to more than its declared 20 bytes");
    b_put(&b, lay.central[0] + CEN_SIZE, sizeof text, 4);
    REFUSED(z_extract(&b, UINT64_MAX, NULL, &err), err, "member 'd' inflates to 21 bytes but the directory says 22");
    b_free(&b);
}

int main(void) {
    RUN(zip_should_find_the_end_record_at_its_farthest);
    RUN(zip_should_end_the_zip64_record_at_its_locator_at_most);
    RUN(zip_should_read_a_locator_that_starts_the_file);
    RUN(zip_should_take_entry_counts_up_to_the_limit);
    RUN(zip_should_fit_the_directory_to_the_byte);
    RUN(zip_should_keep_central_entries_inside_the_directory);
    RUN(zip_should_take_names_up_to_the_limit);
    RUN(zip_should_check_sizes_and_zip64_fields_to_the_byte);
    RUN(zip_should_keep_local_headers_inside_the_file);
    RUN(zip_should_end_member_data_at_the_central_directory);
    RUN(zip_should_refuse_a_one_byte_overlap);
    RUN(zip_should_extract_up_to_the_size_and_ratio_limits);
    CHECK_EXIT();
}
