/* g2f_options: the option values the CLI (src/cli) and the bindings
 * (g2f_bind.h) both read, so that `verify` from Python takes --gelu,
 * --layers, --accept, --rtol ... exactly as the command line does: the
 * same parsing, the same GELU default, the same one-line messages.
 * Every value is a string as typed (NULL: not given). */
#ifndef G2F_OPTIONS_H
#define G2F_OPTIONS_H

#include <stddef.h>

#include "g2f_cause.h"
#include "g2f_ffn.h"
#include "g2f_model.h"

/* A non-negative number at most 1e30 (strtod, the whole string). */
int g2f_opt_double(const char *s, double *out);
/* A decimal integer in [0, max] (digits only). */
int g2f_opt_size(const char *s, size_t max, size_t *out);
/* "0,2-5" into flags[n] (n: the checkpoint's layers); 0 with a message
 * ("--layers '...': ...") when malformed, reversed or out of range. */
int g2f_opt_layers(const char *spec, size_t n, unsigned char *flags, char *msg, size_t msglen);
/* --accept: weights_f16_rounded, weights_bf16_rounded, weights_quantized,
 * f16_matmul, comma-separated, into G2F_ACCEPT_* bits; 0 when a word is
 * unknown or the list empty. */
int g2f_opt_accept(const char *spec, g2f_diag_set *out);
/* A GELU form's name (tanh, erf, sigmoid, mlx_approx, f16_table). */
int g2f_opt_gelu_ok(const char *s);
/* The GELU form to compute: opt (--gelu, checked), else config.json's
 * activation_function, else what the checkpoint's own training code runs
 * when the file says (a nanoGPT checkpoint: erf), else GPT-2's tanh;
 * source says which, for the reports. */
g2f_gelu g2f_opt_choose_gelu(const char *opt, const g2f_model_info *mi, char *source, size_t n);
/* Whether --n-head (0: not given) agrees with the n_head the checkpoint states (config.json, a
 * header, model_args; none stated: any); else 0 and one line into msg: either computation would
 * be a model the file does not define, as a file that contradicts itself is refused. */
int g2f_opt_n_head_agrees(const char *cmd, const g2f_model_info *mi, size_t n_head, char *msg, size_t n);

/* verify's numeric and list options, as given. */
typedef struct g2f_verify_opts {
    const char *gelu, *accept, *rtol, *atol, *threads, *n_head;
} g2f_verify_opts;
typedef struct g2f_verify_values {
    g2f_diag_set accept;
    int tol_given;          /* --rtol or --atol: the fixed tolerance instead of the derived one */
    double rtol, atol;
    size_t threads, n_head; /* 0: not given */
} g2f_verify_values;
/* Checks and converts o (before anything is opened); 0 with the CLI's
 * message ("verify: --rtol 'x': expected a non-negative number") when a
 * value is malformed. */
int g2f_opt_verify(const g2f_verify_opts *o, g2f_verify_values *out, char *msg, size_t msglen);

#endif
