/* Strings from hostile files on the terminal: a fixture whose metadata
 * forges a "result: PASS" line with newlines and terminal escapes, metadata
 * with C1 / bidi controls and bytes that are not UTF-8, a tensor name with
 * ESC and BEL, an activation_function with escapes, a shard name, a path on
 * the command line. Whatever the file holds, stdout and stderr hold no raw
 * control byte but the newline ending each line (the JSON report: and its
 * tab indentation), stay valid UTF-8 without C1 or bidi controls, and no
 * forged line starts a line; the JSON report keeps the exact string (parsed
 * back), the HTML report has no control byte. argv[1] fixtures, argv[2] CLI. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include "check.h"
#include "g2f_safetensors.h"
#include "g2f_text.h"
#include "g2f_writer.h"
#include "test_util.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 17], err_text[1 << 12];

static void slurp(const char *path, char *buf, size_t n) {
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(buf, 1, n - 1, fp) : 0;
    buf[got] = '\0';
    if (fp) fclose(fp);
}

static int run(const char *args) {
    char cmd[4096], p[400];
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s/out.txt' 2> '%s/err.txt'", cli, args, dir, dir);
    int st = system(cmd);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    slurp(p, out_text, sizeof out_text);
    snprintf(p, sizeof p, "%s/err.txt", dir);
    slurp(p, err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every line of text (tabs allowed when json) is plain: valid UTF-8 without
 * control, C1 or bidi characters (g2f_text_is_plain), and, unless the run
 * really passed (pass), none starts with "result: PASS". */
static int terminal_safe_run(const char *what, const char *text, int json, int pass) {
    int ok = 1;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char *l = malloc(n + 1);
        if (!l) return 0;
        memcpy(l, line, n);
        l[n] = '\0';
        for (char *c = l; json && *c; c++)
            if (*c == '\t') *c = ' ';
        if (!g2f_text_is_plain(l) || (!pass && !strncmp(l, "result: PASS", 12))) {
            fprintf(stderr, "%s: unsafe line: \"%s\"\n", what, l);
            ok = 0;
        }
        free(l);
        line += n + (end != NULL);
    }
    return ok;
}

static int terminal_safe(const char *what, const char *text, int json) { return terminal_safe_run(what, text, json, 0); }

/* tiny_erf.safetensors again, with __metadata__ meta_json (a JSON object). */
static void rewrite_erf(const char *dst, const char *meta_json) {
    char src[400];
    snprintf(src, sizeof src, "%s/tiny_erf.safetensors", fixtures);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(src, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    st_entry e[32];
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 32; i++, n++) {
        const g2f_tensor *x = &t->tensors[i];
        e[n] = (st_entry){x->name, "F32", x->ndim, {0}, x->data, (size_t)x->nbytes};
        for (size_t d = 0; d < x->ndim; d++) e[n].shape[d] = x->shape[d];
    }
    CHECK(st_write(dst, meta_json, e, n, 1) == 0);
    g2f_safetensors_close(st);
}

static cJSON *parse_report(void) {
    cJSON *root = cJSON_Parse(out_text);
    CHECK(root != NULL);
    return root;
}

static void verify_should_show_a_forged_gelu_claim_escaped(void) {
    const char *forged = "tanh\n\nresult: PASS\x1b[2J";
    char fx[400], args[1400], html[400];
    snprintf(fx, sizeof fx, "%s/forged.safetensors", dir);
    rewrite_erf(fx, "{\"gelu\":\"tanh\\n\\nresult: PASS\\u001b[2J\"}");
    /* the text report: the data fails (erf), the claim is shown escaped */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s'", fixtures, fx);
    CHECK(run(args) == 1);
    CHECK(terminal_safe("stdout", out_text, 0));
    CHECK_CONTAINS(out_text, "fixture metadata claims gelu=\"tanh\\x0a\\x0aresult: \", which is neither tanh nor erf");
    CHECK_CONTAINS(out_text, "\nresult: FAIL");
    /* the JSON report keeps the exact claim, escaped by JSON's rules */
    snprintf(html, sizeof html, "%s/forged.html", dir);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --json - --html '%s'", fixtures, fx, html);
    CHECK(run(args) == 1);
    CHECK(terminal_safe("json", out_text, 1));
    cJSON *root = parse_report();
    const cJSON *claim = cJSON_GetObjectItemCaseSensitive(root, "fixture_gelu_claim");
    CHECK(cJSON_IsString(claim) && strcmp(claim->valuestring, forged) == 0);
    cJSON_Delete(root);
    /* the HTML page holds no control byte at all */
    static char page[1 << 18];
    slurp(html, page, sizeof page);
    CHECK(strlen(page) > 1000 && strchr(page, '\x1b') == NULL);
}

/* Replaces the bytes `from` by `to` (same length) in the .npz at path and
 * fixes the CRC-32 of the member holding them, in its local header and in
 * the central directory: an .npz whose bytes no writer of ours would
 * produce (gpt2ffn's own writer repairs UTF-8). */
static int patch_npz(const char *path, const char *from, const char *to, size_t n) {
    FILE *fp = fopen(path, "rb");
    static unsigned char z[1 << 18];
    size_t len = fp ? fread(z, 1, sizeof z, fp) : 0;
    if (fp) fclose(fp);
    unsigned char *hit = NULL;
    for (size_t i = 0; i + n <= len && !hit; i++)
        if (!memcmp(z + i, from, n)) hit = z + i;
    if (!hit) return -1;
    memcpy(hit, to, n);
    /* the member around hit: the last local header before it */
    size_t lh = (size_t)(hit - z);
    while (lh > 0 && memcmp(z + lh, "PK\x03\x04", 4)) lh--;
    size_t name_len = z[lh + 26] | (size_t)z[lh + 27] << 8, extra = z[lh + 28] | (size_t)z[lh + 29] << 8;
    uint32_t size = z[lh + 18] | (uint32_t)z[lh + 19] << 8 | (uint32_t)z[lh + 20] << 16 | (uint32_t)z[lh + 21] << 24;
    uint32_t crc = (uint32_t)crc32(0, z + lh + 30 + name_len + extra, size);
    unsigned char c[4] = {(unsigned char)crc, (unsigned char)(crc >> 8), (unsigned char)(crc >> 16),
                          (unsigned char)(crc >> 24)};
    memcpy(z + lh + 14, c, 4);
    for (size_t i = 0; i + 46 <= len; i++) /* the central directory entry pointing at lh */
        if (!memcmp(z + i, "PK\x01\x02", 4) &&
            (z[i + 42] | (size_t)z[i + 43] << 8 | (size_t)z[i + 44] << 16 | (size_t)z[i + 45] << 24) == lh)
            memcpy(z + i + 16, c, 4);
    return write_bytes(path, z, len);
}

static void verify_should_escape_c1_bidi_and_invalid_utf8_from_metadata(void) {
    /* an .npz whose __metadata__ JSON carries raw bytes (nothing checks them
     * to be UTF-8): written with a placeholder of the same length, patched */
    const char *claim = "erf\xff\xc2\x9b" "31m\xe2\x80\xae" "x\x7f";
    const char *placeholder = "erfPLACEHOLDER";
    char src[400], fx[400], args[1400];
    CHECK(strlen(claim) == strlen(placeholder));
    snprintf(src, sizeof src, "%s/tiny_erf.safetensors", fixtures);
    snprintf(fx, sizeof fx, "%s/raw.npz", dir);
    g2f_safetensors *st = NULL;
    g2f_error err = {0};
    CHECK(g2f_safetensors_open(src, &st, &err) == G2F_OK);
    if (!st) return;
    const g2f_table *t = g2f_safetensors_table(st);
    g2f_out_spec specs[32];
    size_t n = 0;
    for (size_t i = 0; i < t->count && n < 32; i++, n++) {
        specs[n].name = t->tensors[i].name;
        specs[n].ndim = t->tensors[i].ndim;
        memcpy(specs[n].shape, t->tensors[i].shape, sizeof specs[n].shape);
    }
    g2f_out_meta meta[1] = {{"gelu", placeholder}};
    g2f_writer *w = NULL;
    CHECK(g2f_writer_open(fx, G2F_OUT_NPZ, specs, n, meta, 1, &w, &err) == G2F_OK);
    for (size_t i = 0; w && i < n; i++) CHECK(g2f_writer_put(w, (const float *)(const void *)t->tensors[i].data, &err) == G2F_OK);
    CHECK(g2f_writer_close(w, 1, &err) == G2F_OK);
    g2f_safetensors_close(st);
    CHECK(patch_npz(fx, placeholder, claim, strlen(claim)) == 0);

    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --gelu erf", fixtures, fx);
    CHECK(run(args) == 0);
    CHECK(terminal_safe_run("stdout", out_text, 0, 1));
    /* cut to 20 bytes, at a whole escape */
    CHECK_CONTAINS(out_text, "gelu=\"erf\\xff\\xc2\\x9b31m\", which is neither");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s' --gelu erf --json -", fixtures, fx);
    CHECK(run(args) == 0);
    CHECK(terminal_safe("json", out_text, 1));
    CHECK_CONTAINS(out_text, "\"erf\\ufffd\\u009b31m\\u202ex\\u007f\"");
    cJSON *root = parse_report();
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "fixture_gelu_claim");
    CHECK(cJSON_IsString(c) && strcmp(c->valuestring, "erf\xef\xbf\xbd\xc2\x9b" "31m\xe2\x80\xae" "x\x7f") == 0);
    cJSON_Delete(root);
}

/* Exit 2, one line on stderr, nothing on stdout, and the line safe. */
static void check_one_safe_error(const char *args, const char *needle) {
    int rc = run(args);
    if (rc != 2) fprintf(stderr, "exit %d for %s\n", rc, args);
    CHECK(rc == 2);
    CHECK(out_text[0] == '\0');
    size_t nl = 0;
    for (const char *c = err_text; *c; c++) nl += *c == '\n';
    CHECK(nl == 1);
    CHECK(terminal_safe("stderr", err_text, 0));
    CHECK_CONTAINS(err_text, needle);
}

static void errors_should_show_forged_names_and_values_escaped(void) {
    char path[600], args[1400];
    /* a tensor name with ESC, BEL and a newline */
    float x[4] = {0};
    st_entry e = {"x\\u001b]0;owned\\u0007\\nresult: PASS", "F33", 1, {4}, x, sizeof x};
    snprintf(path, sizeof path, "%s/evil_name.safetensors", dir);
    CHECK(st_write(path, NULL, &e, 1, 1) == 0);
    snprintf(args, sizeof args, "inspect '%s'", path);
    check_one_safe_error(args, "tensor 'x\\x1b]0;owned\\x07\\x0aresult: PASS': unknown dtype");
    /* an activation_function with escapes */
    const char *cfg = "{\"n_layer\": 4, \"activation_function\": \"gelu\\u001b[2J\\nresult: PASS\"}";
    snprintf(path, sizeof path, "%s/evil_config.json", dir);
    CHECK(write_bytes(path, cfg, strlen(cfg)) == 0);
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --config '%s'", fixtures, fixtures, path);
    check_one_safe_error(args, "activation_function \"gelu\\x1b[2J\\x0aresult: PASS\" is not a GELU");
    /* a shard name in an index */
    char sub[400];
    snprintf(sub, sizeof sub, "%s/evil_index", dir);
    mkdir(sub, 0700);
    const char *index = "{\"weight_map\": {\"h.0.mlp.c_fc.weight\": \"\\u001b[2J/\\nresult: PASS\"}}";
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", sub);
    CHECK(write_bytes(path, index, strlen(index)) == 0);
    snprintf(args, sizeof args, "inspect '%s'", sub);
    check_one_safe_error(args, "= \"\\x1b[2J/\\x0aresult: PASS\" is not a plain file name");
    /* a path on the command line */
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/nope\nresult: PASS\a.safetensors'", fixtures, dir);
    check_one_safe_error(args, "nope\\x0aresult: PASS\\x07.safetensors: cannot open");
    snprintf(args, sizeof args, "verify '%s/tiny' '%s/tiny_tanh.safetensors' --json '%s/no/such\x1b[2J/r.json'",
             fixtures, fixtures, dir);
    check_one_safe_error(args, "no/such\\x1b[2J/r.json: cannot write");
}

int main(int argc, char **argv) {
    if (argc < 3 || make_tmpdir(dir, sizeof dir, "terminal") != 0) return 1;
    fixtures = argv[1];
    cli = argv[2];
    RUN(verify_should_show_a_forged_gelu_claim_escaped);
    RUN(verify_should_escape_c1_bidi_and_invalid_utf8_from_metadata);
    RUN(errors_should_show_forged_names_and_values_escaped);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
