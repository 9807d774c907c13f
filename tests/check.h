/* Tiny test harness: CHECK prints file:line and the expression on failure and
 * counts it; each test program returns non-zero when any check failed. */
#ifndef G2F_CHECK_H
#define G2F_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                        \
    do {                                                                                             \
        double a_ = (a), b_ = (b);                                                                   \
        if (!(fabs(a_ - b_) <= (tol))) {                                                             \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g (tol %g)\n", __FILE__,  \
                    __LINE__, #a, a_, #b, b_, (double)(tol));                                        \
            check_failures++;                                                                        \
        }                                                                                            \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                              \
    do {                                                                                              \
        const char *h_ = (haystack);                                                                  \
        if (!h_ || !strstr(h_, (needle))) {                                                           \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" not in \"%s\"\n", __FILE__, __LINE__, \
                    (needle), h_ ? h_ : "(null)");                                                    \
            check_failures++;                                                                         \
        }                                                                                             \
    } while (0)

#define RUN(test)                                  \
    do {                                           \
        int before_ = check_failures;              \
        test();                                    \
        fprintf(stderr, "%s %s\n", check_failures == before_ ? "ok  " : "FAIL", #test); \
    } while (0)

#define CHECK_EXIT() return check_failures ? 1 : 0

#endif
