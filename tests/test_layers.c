/* The code's layers (docs/contributing.md: Code map) hold: every #include "..." in src/
 * and formats/ names a header of its own folder or of a folder its layer
 * may use, by its plain name (no path), and every header lives in exactly
 * one folder. The build refuses most violations already (a higher layer's
 * folder is not on a lower layer's include path); this test names the file
 * and the include, and also catches a relative path ("../check/x.h") that
 * the include path would not stop. argv[1] is the fixtures folder (the
 * source tree is its parent). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct layer {
    const char *name, *dir;
    const char *uses; /* the layers it may include, comma-separated */
} layer;

static const layer layers[] = {
    {"base", "src/base", ""},
    {"formats", "formats", "base"},
    {"kernels", "src/kernels", "base"},
    {"load", "src/load", "base,formats,kernels"},
    {"check", "src/check", "base,formats,kernels,load"},
    {"report", "src/report", "base,formats,kernels,load,check"},
    {"bind", "src/bind", "base,formats,kernels,load,check,report"},
    {"cli", "src/cli", "base,formats,kernels,load,check,report,bind"},
    {"api", "src", "base,kernels,load,check,report"}, /* gpt2ffn.h, the umbrella header */
};
#define N_LAYERS (sizeof layers / sizeof layers[0])

static char root[1024];

/* The layer whose folder holds header `name`, or -1 (a system header). */
static int home_of(const char *name) {
    int found = -1;
    for (size_t i = 0; i < N_LAYERS; i++) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s/%s", root, layers[i].dir, name);
        FILE *fp = fopen(p, "r");
        if (!fp) continue;
        fclose(fp);
        if (found >= 0) {
            fprintf(stderr, "header %s is in both %s and %s\n", name, layers[found].dir, layers[i].dir);
            check_failures++;
        }
        found = (int)i;
    }
    return found;
}

static int may_use(int from, int to) {
    if (from == to) return 1;
    const char *u = layers[from].uses, *n = layers[to].name;
    size_t len = strlen(n);
    for (const char *p = u; (p = strstr(p, n)) != NULL; p += len)
        if ((p == u || p[-1] == ',') && (p[len] == '\0' || p[len] == ',')) return 1;
    return 0;
}

static size_t includes_seen;

static void check_file(int li, const char *path, const char *shown) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot read %s\n", path);
        check_failures++;
        return;
    }
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "#include \"", 10) != 0) continue;
        p += 10;
        const char *q = strchr(p, '"');
        if (!q) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(q - p), p);
        includes_seen++;
        if (strchr(name, '/')) {
            fprintf(stderr, "%s:%d: includes \"%s\" by a path: include headers by name, from the layers below\n",
                    shown, lineno, name);
            check_failures++;
            continue;
        }
        int to = home_of(name);
        if (to < 0) {
            fprintf(stderr, "%s:%d: includes \"%s\", which is in no layer's folder\n", shown, lineno, name);
            check_failures++;
        } else if (!may_use(li, to)) {
            fprintf(stderr, "%s:%d: %s layer includes \"%s\" from the %s layer, which it may not use (it uses: %s)\n",
                    shown, lineno, layers[li].name, name, layers[to].name, *layers[li].uses ? layers[li].uses : "nothing");
            check_failures++;
        }
    }
    fclose(fp);
}

static void every_include_should_respect_the_layers(void) {
    size_t files = 0;
    for (size_t i = 0; i < N_LAYERS; i++) {
        char dir[1536];
        snprintf(dir, sizeof dir, "%s/%s", root, layers[i].dir);
        DIR *d = opendir(dir);
        CHECK(d != NULL);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t n = strlen(e->d_name);
            if (n < 3 || e->d_name[n - 2] != '.' || (e->d_name[n - 1] != 'c' && e->d_name[n - 1] != 'h')) continue;
            char p[2048], shown[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            snprintf(shown, sizeof shown, "%s/%s", layers[i].dir, e->d_name);
            check_file((int)i, p, shown);
            files++;
        }
        closedir(d);
    }
    CHECK(files > 40);           /* the walk found the tree */
    CHECK(includes_seen > 100);
}

/* The rule itself: a lower layer including a higher one is caught. */
static void a_violation_should_be_reported(void) {
    int before = check_failures;
    char p[1536];
    snprintf(p, sizeof p, "%s/violation_probe.c", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    FILE *fp = fopen(p, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs("#include \"g2f_verify.h\"\n#include \"../src/check/g2f_tol.h\"\n", fp);
    fclose(fp);
    check_file(0, p, "base/violation_probe.c (a probe, expected to fail twice)");
    int caught = check_failures - before;
    check_failures = before;
    remove(p);
    CHECK(caught == 2);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    snprintf(root, sizeof root, "%s/..", argv[1]);
    RUN(every_include_should_respect_the_layers);
    RUN(a_violation_should_be_reported);
    CHECK_EXIT();
}
