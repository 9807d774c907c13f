/* g2f_error: see g2f_error.h. */
#include "g2f_error.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[] = {
    "ok", "usage error", "I/O error", "format error", "out of memory",
};
_Static_assert(sizeof status_names / sizeof status_names[0] == G2F_STATUS_COUNT,
               "one name per status");

g2f_status g2f_error_set(g2f_error *err, g2f_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* Messages quote names and values from untrusted files: a newline
         * would break the one-line promise, an escape byte could drive the
         * user's terminal. Control bytes become '?'. */
        for (char *c = err->msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        err->status = status;
    }
    return status;
}

const char *g2f_status_name(g2f_status status) {
    return (unsigned)status < G2F_STATUS_COUNT ? status_names[status] : "unknown status";
}
