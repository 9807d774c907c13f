/* A malloc and an aligned_alloc (g2f_alloc_work's) that fail for the sizes
 * listed in FAIL_SIZES (comma-separated bytes), loaded with LD_PRELOAD into
 * the CLI by test_inspect_nomem: the out-of-memory paths of a real process,
 * where the library gives no hook. aligned_alloc is asked for whole 64-byte
 * lines, so only such sizes can be refused there.
 * Not built under the sanitizers (their runtime must come first). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

static int listed(size_t n) {
    const char *p = getenv("FAIL_SIZES");
    while (p && *p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) return 0;
        if (v == n) return 1;
        p = *end == ',' ? end + 1 : NULL;
    }
    return 0;
}

void *malloc(size_t n) {
    static void *(*real)(size_t);
    if (!real) real = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    if (listed(n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real(n);
}

void *aligned_alloc(size_t align, size_t n) {
    static void *(*real)(size_t, size_t);
    if (!real) real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    if (listed(n)) {
        errno = ENOMEM;
        return NULL;
    }
    return real(align, n);
}
