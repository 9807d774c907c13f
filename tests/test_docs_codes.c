/* Every diagnosis code the reports can print (the code table of
 * g2f_cause) is documented: written as `name` (or `name:PARAM`) in
 * docs/diagnosis.md, or, for a generation's codes, docs/decode.md. A code
 * added to the table without its line in the docs fails here. argv[1] is
 * the fixtures folder (the docs are in its parent). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_util.h"
#include "g2f_cause.h"

/* `name` or `name:... appears in text. */
static int documented(const char *text, const char *name) {
    char a[80], b[80];
    snprintf(a, sizeof a, "`%s`", name);
    snprintf(b, sizeof b, "`%s:", name);
    return text && (strstr(text, a) || strstr(text, b));
}

static void every_code_should_be_documented(const char *root) {
    char path[1200];
    snprintf(path, sizeof path, "%s/docs/diagnosis.md", root);
    char *diag = read_whole_file(path, NULL);
    snprintf(path, sizeof path, "%s/docs/decode.md", root);
    char *decode = read_whole_file(path, NULL);
    CHECK(diag != NULL && decode != NULL);
    size_t missing = 0;
    for (int d = 0; d < G2F_DIAG_COUNT; d++) {
        const char *name = g2f_diag_name((g2f_diag)d);
        CHECK(strcmp(name, "?") != 0); /* every code has a name */
        if (!documented(diag, name) && !documented(decode, name)) {
            fprintf(stderr, "diagnosis code '%s' is not documented in docs/diagnosis.md or docs/decode.md\n", name);
            missing++;
        }
    }
    CHECK(missing == 0);
    /* the check can fail: a name no page holds */
    CHECK(!documented(diag, "no_such_code_here"));
    free(diag);
    free(decode);
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: test_docs_codes FIXTURES\n"), 2;
    char root[1024];
    snprintf(root, sizeof root, "%s/..", argv[1]);
    every_code_should_be_documented(root);
    CHECK_EXIT();
}
