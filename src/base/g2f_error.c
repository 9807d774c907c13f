/* g2f_error: see g2f_error.h. */
#include "g2f_error.h"

#include <stdarg.h>
#include <stdio.h>

#include "g2f_text.h"

g2f_status g2f_error_set(g2f_error *err, g2f_status status, const char *fmt, ...) {
    if (err) {
        char raw[G2F_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        /* Messages quote names and values from untrusted files: a newline
         * would break the one-line promise, an escape byte could drive the
         * user's terminal. They are shown as \xHH (g2f_text.h). */
        g2f_escape(raw, err->msg, sizeof err->msg);
        err->status = status;
    }
    return status;
}
