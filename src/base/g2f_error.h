/* g2f_error: status codes and the caller-owned error record every gpt2ffn
 * function fills in on failure.
 *
 * Failure model: a function that fails returns a status other than G2F_OK,
 * writes one line into err->msg naming the file, tensor or field, the value
 * and what was expected, and leaves its outputs unset (or NULL). Library code
 * never prints, aborts or exits; only the CLI maps a status to an exit code.
 *
 *     g2f_error err = {0};
 *     g2f_model *model = NULL;
 *     if (g2f_model_open(path, NULL, &model, &err) != G2F_OK) // NULL: config.json beside it
 *         fprintf(stderr, "gpt2ffn: %s\n", err.msg);
 */
#ifndef G2F_ERROR_H
#define G2F_ERROR_H

#include <stddef.h>

typedef enum g2f_status {
    G2F_OK = 0,
    G2F_ERR_USAGE,   /* bad argument or option from the caller */
    G2F_ERR_IO,      /* file cannot be opened, mapped or written */
    G2F_ERR_FORMAT,  /* file contents violate the format or GPT-2 expectations */
    G2F_ERR_NOMEM,   /* allocation failed or a size overflowed */
    G2F_STATUS_COUNT
} g2f_status;

#define G2F_ERROR_MSG_MAX 512

typedef struct g2f_error {
    g2f_status status;
    char msg[G2F_ERROR_MSG_MAX];
} g2f_error;

/* Records status and a printf-style message in err (which may be NULL) and
 * returns status, so callers can write `return g2f_error_set(err, ...)`. */
g2f_status g2f_error_set(g2f_error *err, g2f_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
