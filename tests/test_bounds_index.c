/* Shard indexes (g2f_source_open on *.index.json): every bound of
 * formats/g2f_source.h and of SECURITY.md's Limits table (index size, shard
 * and entry counts, total_size, shard names), at the exact limit (accepted)
 * and one past it (refused with the check's message). */
#include "bounds.h"
#include "g2f_source.h"
#include "test_util.h"

static char dir[256];

/* dir/name, in a static buffer. */
static const char *in_dir(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* A shard holding one U8 [n] tensor named name. */
static void shard(const char *file, const char *name, size_t n) {
    static const unsigned char data[16];
    const st_entry e = {name, "U8", 1, {n}, data, n};
    CHECK(st_write(in_dir(file), NULL, &e, 1, 1) == 0);
}

/* Opens dir/<index>; the tensor count goes to *count. */
static g2f_status open_index(const bytes *text, size_t *count, g2f_error *err) {
    const char *path = in_dir("model.safetensors.index.json");
    CHECK(write_bytes(path, text->p, text->n) == 0);
    g2f_source *s = NULL;
    memset(err, 0, sizeof *err);
    g2f_status st = g2f_source_open(path, &s, err);
    if (st == G2F_OK && count) *count = g2f_source_table(s)->count;
    g2f_source_close(s);
    return st;
}

/* {"weight_map": {"<tensor>": "<file>", ...}} of n entries t<i> -> file
 * (or s<i>.safetensors when file is NULL), with metadata before the map
 * when given. */
static void index_text(bytes *b, size_t n, const char *file, const char *metadata) {
    b->n = 0;
    b_str(b, "{");
    if (metadata) {
        b_str(b, "\"metadata\": ");
        b_str(b, metadata);
        b_str(b, ", ");
    }
    b_str(b, "\"weight_map\": {");
    for (size_t i = 0; i < n; i++) {
        char e[96];
        if (file) snprintf(e, sizeof e, "%s\"t%zu\": \"%s\"", i ? ", " : "", i, file);
        else snprintf(e, sizeof e, "%s\"t%zu\": \"s%zu.safetensors\"", i ? ", " : "", i, i);
        b_str(b, e);
    }
    b_str(b, "}}");
}

/* shard index: the index file is at most 64 MiB (INDEX_MAX_BYTES) */
static void index_should_take_a_file_of_up_to_64_mib(void) {
    const size_t limit = 64u << 20;
    shard("s.safetensors", "t0", 1);
    bytes b = {0};
    g2f_error err;
    b_str(&b, "{");
    b_fill(&b, ' ', limit - b.n - strlen("\"weight_map\": {\"t0\": \"s.safetensors\"}}"));
    b_str(&b, "\"weight_map\": {\"t0\": \"s.safetensors\"}}");
    CHECK(b.n == limit);
    ACCEPTED(open_index(&b, NULL, &err), err);
    b.n = 1;
    b_fill(&b, ' ', limit + 1 - b.n - strlen("\"weight_map\": {\"t0\": \"s.safetensors\"}}"));
    b_str(&b, "\"weight_map\": {\"t0\": \"s.safetensors\"}}");
    REFUSED(open_index(&b, NULL, &err), err, "bytes, larger than the 67108864-byte limit for this file");
    b_free(&b);
}

/* shard index: at most 4096 distinct shard files (MAX_SHARDS) */
static void index_should_take_up_to_4096_shards(void) {
    bytes b = {0};
    g2f_error err;
    for (size_t i = 0; i < 4096; i++) {
        char f[32], t[32];
        snprintf(f, sizeof f, "s%zu.safetensors", i);
        snprintf(t, sizeof t, "t%zu", i);
        shard(f, t, 1);
    }
    size_t count = 0;
    index_text(&b, 4096, NULL, NULL);
    ACCEPTED(open_index(&b, &count, &err), err);
    CHECK(count == 4096);
    index_text(&b, 4097, NULL, NULL);
    REFUSED(open_index(&b, NULL, &err), err, "more than 4096 shard files");
    b_free(&b);
}

/* shard index: at most 1,000,000 weight_map entries (MAX_INDEX_ENTRIES): a
 * million pass the count (and then name a shard that is not there). One
 * more is refused in test_resource_bounds
 * (shard_index_should_refuse_more_than_a_million_entries): each such index
 * costs seconds under ASan, so it is parsed once per suite. */
static void index_should_take_up_to_a_million_entries(void) {
    bytes b = {0};
    g2f_error err;
    index_text(&b, 1000000, "absent.safetensors", NULL);
    PASSES_CHECK(open_index(&b, NULL, &err), err, "more than 1000000 entries", "absent.safetensors: cannot open");
    b_free(&b);
}

/* shard index: metadata.total_size equals the bytes of the mapped tensors */
static void index_should_match_total_size_to_the_byte(void) {
    bytes b = {0};
    g2f_error err;
    shard("s0.safetensors", "t0", 5);
    shard("s1.safetensors", "t1", 7);
    for (int total = 11; total <= 13; total++) {
        char meta[64];
        snprintf(meta, sizeof meta, "{\"total_size\": %d}", total);
        index_text(&b, 2, NULL, meta);
        char needle[96];
        snprintf(needle, sizeof needle, "metadata.total_size is %d but the mapped tensors hold 12 bytes", total);
        if (total == 12) ACCEPTED(open_index(&b, NULL, &err), err);
        else REFUSED(open_index(&b, NULL, &err), err, needle);
    }
    b_free(&b);
}

/* shard index: a shard is a plain file name in the index's folder: not
 * empty, no '/', not "." or ".."; "..." and ".x" are plain names */
static void index_should_take_plain_names_only(void) {
    static const struct {
        const char *file;
        int plain;
    } names[] = {{"...", 1}, {".x", 1}, {"..", 0}, {".", 0}, {"", 0}, {"sub/x", 0}, {"/x", 0}};
    bytes b = {0};
    g2f_error err;
    shard("...", "t0", 1);
    shard(".x", "t0", 1);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        index_text(&b, 1, names[i].file, NULL);
        if (names[i].plain) ACCEPTED(open_index(&b, NULL, &err), err);
        else REFUSED(open_index(&b, NULL, &err), err, "is not a plain file name in the index's folder");
    }
    b_free(&b);
}

/* source: a name ending in ".npy" needs one byte before it to make a folder
 * a fixture folder, and a path is an index when it ends in ".index.json"
 * after at least one byte */
static void source_should_match_suffixes_from_one_byte_on(void) {
    char sub[300], cwd[4096];
    snprintf(sub, sizeof sub, "%s/suffixes", dir);
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(sub, sizeof sub, "%s/suffixes/.npy", dir);
    CHECK(write_bytes(sub, "x", 1) == 0);
    snprintf(sub, sizeof sub, "%s/suffixes", dir);
    g2f_source *s = NULL;
    g2f_error err = {0};
    REFUSED(g2f_source_open(sub, &s, &err), err, "folder holds none of");
    g2f_source_close(s);
    /* relative paths: "a.index.json" is an index (not a valid one), the
     * bare ".index.json" a data file */
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(sub) == 0);
    CHECK(write_bytes("a.index.json", "{}", 2) == 0);
    CHECK(write_bytes(".index.json", "{}", 2) == 0);
    s = NULL;
    REFUSED(g2f_source_open("a.index.json", &s, &err), err, "a.index.json: not a shard index");
    g2f_source_close(s);
    s = NULL;
    REFUSED(g2f_source_open(".index.json", &s, &err), err, ".index.json: is a JSON file, not a file of tensors");
    g2f_source_close(s);
    CHECK(chdir(cwd) == 0);
}

int main(void) {
    if (fast_tmpdir(dir, sizeof dir, "bounds_index") != 0) return 1;
    RUN(index_should_take_a_file_of_up_to_64_mib);
    RUN(index_should_take_up_to_4096_shards);
    RUN(index_should_take_up_to_a_million_entries);
    RUN(index_should_match_total_size_to_the_byte);
    RUN(index_should_take_plain_names_only);
    RUN(source_should_match_suffixes_from_one_byte_on);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
