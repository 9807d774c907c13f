/* No function in src/check, src/load or src/report is over 80 lines
 * (docs/contributing.md: functions short enough to read at once; the
 * format parsers, linear checklists, live in formats/ and may be longer).
 * A function is counted from its signature's first line (an identifier at
 * column 0, a '(' and no ';' before the body's '{') to the '}' at column 0
 * that closes it. argv[1] is the fixtures folder (the source tree is its
 * parent). The scan is checked on a made-up source first, so that a broken
 * scan cannot pass by counting nothing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_util.h"

#define MAX_LINES 80

/* Functions over MAX_LINES in text (NUL-terminated), each reported with
 * name; *n_funcs counts every function seen. */
static size_t long_functions(const char *name, const char *text, size_t *n_funcs) {
    size_t over = 0, line = 0, start = 0;
    int in_body = 0, pending = 0; /* pending: a signature seen, its '{' not yet */
    char fname[96] = "";
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        line++;
        int col0_ident = (p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'));
        const char *paren = memchr(p, '(', len), *semi = memchr(p, ';', len), *eq = memchr(p, '=', len);
        if (!in_body && !pending && col0_ident && paren && (!eq || eq > paren) && strncmp(p, "typedef", 7) &&
            strncmp(p, "struct", 6) && strncmp(p, "enum", 4) && strncmp(p, "union", 5)) {
            pending = 1, start = line;
            const char *q = paren;
            while (q > p && (q[-1] == ' ')) q--;
            const char *b = q;
            while (b > p && (b[-1] == '_' || (b[-1] >= 'a' && b[-1] <= 'z') || (b[-1] >= 'A' && b[-1] <= 'Z') ||
                             (b[-1] >= '0' && b[-1] <= '9')))
                b--;
            snprintf(fname, sizeof fname, "%.*s", (int)(q - b), b);
        }
        if (pending) {
            if (semi) pending = 0; /* a declaration */
            else if (len && p[len - 1] == '{') pending = 0, in_body = 1;
            else if (line - start > 8) pending = 0;
        } else if (in_body && p[0] == '}') {
            in_body = 0;
            (*n_funcs)++;
            size_t n = line - start + 1;
            if (n > MAX_LINES) {
                fprintf(stderr, "%s:%zu: %s is %zu lines (at most %d)\n", name, start, fname, n, MAX_LINES);
                over++;
            }
        }
        p = e ? e + 1 : p + len;
    }
    return over;
}

static void scan_should_count_and_catch_a_long_function(void) {
    char src[8192];
    size_t used = (size_t)snprintf(src, sizeof src, "static int ok(int a,\n           int b) {\n    return a + b;\n}\n"
                                                    "int decl(void);\nstatic int long_one(void) {\n");
    for (int i = 0; i < MAX_LINES; i++) used += (size_t)snprintf(src + used, sizeof src - used, "    x++;\n");
    snprintf(src + used, sizeof src - used, "}\n");
    size_t funcs = 0;
    CHECK(long_functions("made-up.c", src, &funcs) == 1);
    CHECK(funcs == 2);
}

static void layers_should_have_no_function_over_80_lines(const char *root) {
    static const char *const dirs[] = {"src/check", "src/load", "src/report"};
    size_t over = 0, funcs = 0, files = 0;
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/%s", root, dirs[k]);
        DIR *d = opendir(dir);
        CHECK(d != NULL);
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            size_t n = strlen(e->d_name);
            if (n < 3 || strcmp(e->d_name + n - 2, ".c")) continue;
            char path[1400 + 256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            char *text = read_whole_file(path, NULL);
            CHECK(text != NULL);
            if (!text) continue;
            files++;
            over += long_functions(path, text, &funcs);
            free(text);
        }
        if (d) closedir(d);
    }
    CHECK(files >= 10 && funcs >= 200); /* the scan saw the code */
    CHECK(over == 0);
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: test_function_size FIXTURES\n"), 2;
    char root[1024];
    snprintf(root, sizeof root, "%s/..", argv[1]);
    scan_should_count_and_catch_a_long_function();
    layers_should_have_no_function_over_80_lines(root);
    CHECK_EXIT();
}
