/* g2f_options: see g2f_options.h. */
#include "g2f_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int g2f_opt_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e30) return 0;
    *out = v;
    return 1;
}

int g2f_opt_size(const char *s, size_t max, size_t *out) {
    if (*s < '0' || *s > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return 0;
    *out = (size_t)v;
    return 1;
}

int g2f_opt_layers(const char *spec, size_t n, unsigned char *flags, char *msg, size_t msglen) {
    char buf[1024];
    if (strlen(spec) >= sizeof buf || !*spec) {
        snprintf(msg, msglen, "--layers '%.40s': expected a list like 0,2-5", spec);
        return 0;
    }
    strcpy(buf, spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        size_t a, b;
        if (dash) *dash = '\0';
        if (!g2f_opt_size(tok, (size_t)1 << 30, &a) || (dash && !g2f_opt_size(dash + 1, (size_t)1 << 30, &b))) {
            snprintf(msg, msglen, "--layers '%.40s': expected a list like 0,2-5", spec);
            return 0;
        }
        if (!dash) b = a;
        if (a > b) {
            snprintf(msg, msglen, "--layers '%.40s': the range %zu-%zu is reversed; write %zu-%zu", spec, a, b, b, a);
            return 0;
        }
        if (b >= n) {
            snprintf(msg, msglen, "--layers '%.40s': layer %zu is out of range (the checkpoint has %zu layer%s, 0-%zu)",
                     spec, b, n, n == 1 ? "" : "s", n ? n - 1 : 0);
            return 0;
        }
        for (size_t i = a; i <= b; i++) flags[i] = 1;
    }
    return 1;
}

int g2f_opt_accept(const char *spec, g2f_diag_set *out) {
    char buf[256];
    *out = 0;
    if (strlen(spec) >= sizeof buf || !*spec) return 0;
    strcpy(buf, spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "weights_f16_rounded")) *out |= G2F_ACCEPT_F16;
        else if (!strcmp(tok, "weights_bf16_rounded")) *out |= G2F_ACCEPT_BF16;
        else if (!strcmp(tok, "weights_quantized")) *out |= G2F_ACCEPT_QUANTIZED;
        else if (!strcmp(tok, "f16_matmul")) *out |= G2F_ACCEPT_F16_MATMUL;
        else return 0;
    }
    return 1;
}

int g2f_opt_gelu_ok(const char *s) {
    g2f_gelu g;
    return g2f_gelu_from_name(s, &g);
}

g2f_gelu g2f_opt_choose_gelu(const char *opt, const g2f_model_info *mi, char *source, size_t n) {
    if (opt) {
        g2f_gelu g = G2F_GELU_TANH;
        snprintf(source, n, "from --gelu");
        g2f_gelu_from_name(opt, &g); /* checked by the caller */
        return g;
    }
    if (mi->config_has_gelu) {
        snprintf(source, n, "from config.json activation_function \"%.40s\"", mi->config_activation);
        return mi->config_gelu;
    }
    if (mi->file_has_gelu) {
        snprintf(source, n, "from the checkpoint: %s", mi->file_gelu_why);
        return mi->file_gelu;
    }
    snprintf(source, n, "default: GPT-2's tanh approximation; %s",
             mi->config_path ? "config.json names no activation_function" : "no config.json");
    return G2F_GELU_TANH;
}

int g2f_opt_verify(const g2f_verify_opts *o, g2f_verify_values *v, char *msg, size_t n) {
    memset(v, 0, sizeof *v);
    if (o->gelu && !g2f_opt_gelu_ok(o->gelu))
        return snprintf(msg, n, "verify: --gelu '%s': expected tanh, erf, sigmoid, mlx_approx or f16_table", o->gelu), 0;
    if (o->accept && !g2f_opt_accept(o->accept, &v->accept))
        return snprintf(msg, n, "verify: --accept '%.60s': expected weights_f16_rounded, weights_bf16_rounded, "
                        "weights_quantized or f16_matmul, comma-separated", o->accept), 0;
    if (o->rtol && !g2f_opt_double(o->rtol, &v->rtol))
        return snprintf(msg, n, "verify: --rtol '%s': expected a non-negative number", o->rtol), 0;
    if (o->atol && !g2f_opt_double(o->atol, &v->atol))
        return snprintf(msg, n, "verify: --atol '%s': expected a non-negative number", o->atol), 0;
    if (o->threads && (!g2f_opt_size(o->threads, 1024, &v->threads) || v->threads == 0))
        return snprintf(msg, n, "verify: --threads '%s': expected 1 to 1024", o->threads), 0;
    if (o->n_head && (!g2f_opt_size(o->n_head, 1 << 20, &v->n_head) || v->n_head == 0))
        return snprintf(msg, n, "verify: --n-head '%s': expected a positive integer", o->n_head), 0;
    v->tol_given = o->rtol || o->atol;
    return 1;
}

int g2f_opt_n_head_agrees(const char *cmd, const g2f_model_info *mi, size_t n_head, char *msg, size_t n) {
    if (!n_head || !mi->n_head || n_head == mi->n_head) return 1;
    snprintf(msg, n, "%s: --n-head %zu but %s gives %zu (%s): --n-head is for a checkpoint that does not say", cmd,
             n_head, mi->path, mi->n_head, mi->n_head_source ? mi->n_head_source : "the checkpoint");
    return 0;
}
