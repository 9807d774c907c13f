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
        err->status = status;
    }
    return status;
}

const char *g2f_status_name(g2f_status status) {
    return (unsigned)status < G2F_STATUS_COUNT ? status_names[status] : "unknown status";
}
