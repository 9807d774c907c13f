/* gpt2ffn command-line tool: argument parsing and subcommands. The only code
 * that prints to the terminal or chooses an exit code:
 *   0 every compared layer passes, 1 a mismatch, 2 usage error or bad input. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_report.h"
#include "g2f_verify.h"

#define EXIT_MISMATCH 1
#define EXIT_BAD 2

static const char usage_main[] =
    "usage: gpt2ffn <command> [options]\n"
    "\n"
    "commands:\n"
    "  verify CHECKPOINT FIXTURES   check every layer's FFN against reference activations\n"
    "\n"
    "Run 'gpt2ffn verify --help' for the options. Exit codes: 0 pass, 1 mismatch,\n"
    "2 usage error or unreadable/malformed input.\n";

static const char usage_verify[] =
    "usage: gpt2ffn verify CHECKPOINT FIXTURES [options]\n"
    "\n"
    "CHECKPOINT  a GPT-2 safetensors file, or the folder holding model.safetensors\n"
    "            (config.json beside it is read when present)\n"
    "FIXTURES    safetensors with h.N.mlp.in / h.N.mlp.out (and optionally .pre / .act)\n"
    "\n"
    "options:\n"
    "  --gelu tanh|erf   GELU form to compute (default: config.json's activation_function,\n"
    "                    else tanh, GPT-2's)\n"
    "  --layers LIST     layers to check, e.g. 0,2-5 (default: all)\n"
    "  --rtol R          use |err| <= atol + rtol*|expected| instead of the derived tolerance\n"
    "  --atol A          (either one switches; the other then defaults to 0)\n"
    "  --config FILE     config.json to cross-check (default: config.json beside CHECKPOINT)\n"
    "  --threads N       OpenMP threads (default: all cores); results do not depend on it\n"
    "  --json FILE|-     also write the JSON report (to stdout with '-', then no text report)\n"
    "  -h, --help        this help\n"
    "\n"
    "example:\n"
    "  gpt2ffn verify fixtures/tiny fixtures/tiny_erf.safetensors --json report.json\n";

static int bad(const char *fmt, const char *arg) {
    fprintf(stderr, "gpt2ffn: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return EXIT_BAD;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e30) return 0;
    *out = v;
    return 1;
}

static int parse_size(const char *s, size_t max, size_t *out) {
    if (*s < '0' || *s > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return 0;
    *out = (size_t)v;
    return 1;
}

/* "0,2-5" into flags[n]; 0 with a message on error. */
static int parse_layers(const char *spec, size_t n, unsigned char *flags, char *msg, size_t msglen) {
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
        if (!parse_size(tok, (size_t)1 << 30, &a) || (dash && !parse_size(dash + 1, (size_t)1 << 30, &b))) {
            snprintf(msg, msglen, "--layers '%.40s': expected a list like 0,2-5", spec);
            return 0;
        }
        if (!dash) b = a;
        if (a > b || b >= n) {
            snprintf(msg, msglen, "--layers '%.40s': layer %zu is out of range (the checkpoint has %zu layers, 0-%zu)",
                     spec, a > b ? a : b, n, n ? n - 1 : 0);
            return 0;
        }
        for (size_t i = a; i <= b; i++) flags[i] = 1;
    }
    return 1;
}

typedef struct verify_opts {
    const char *checkpoint, *fixtures, *gelu, *layers, *json, *config;
    int user_tol;
    double rtol, atol;
    int threads;
} verify_opts;

static int cmd_verify(int argc, char **argv) {
    verify_opts o = {0};
    const char *pos[2];
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_verify, stdout);
            return 0;
        }
        if (a[0] == '-' && a[1] == '-') {
            const char *names[] = {"--gelu", "--layers", "--rtol", "--atol", "--threads", "--json", "--config"};
            const char *val = NULL;
            int which = -1;
            for (int k = 0; k < 7; k++) {
                size_t n = strlen(names[k]);
                if (!strncmp(a, names[k], n) && (a[n] == '\0' || a[n] == '=')) {
                    which = k;
                    val = a[n] == '=' ? a + n + 1 : NULL;
                }
            }
            if (which < 0) return bad("verify: unknown option '%s' (see gpt2ffn verify --help)", a);
            if (!val) {
                if (i + 1 >= argc) return bad("verify: option '%s' needs a value", a);
                val = argv[++i];
            }
            switch (which) {
            case 0:
                if (strcmp(val, "tanh") && strcmp(val, "erf")) return bad("verify: --gelu '%s': expected tanh or erf", val);
                o.gelu = val;
                break;
            case 1: o.layers = val; break;
            case 2:
                if (!parse_double(val, &o.rtol)) return bad("verify: --rtol '%s': expected a non-negative number", val);
                o.user_tol = 1;
                break;
            case 3:
                if (!parse_double(val, &o.atol)) return bad("verify: --atol '%s': expected a non-negative number", val);
                o.user_tol = 1;
                break;
            case 4: {
                size_t t;
                if (!parse_size(val, 1024, &t) || t == 0) return bad("verify: --threads '%s': expected 1 to 1024", val);
                o.threads = (int)t;
                break;
            }
            case 5: o.json = val; break;
            case 6: o.config = val; break;
            }
            continue;
        }
        if (npos == 2) return bad("verify: unexpected argument '%s' (see gpt2ffn verify --help)", a);
        pos[npos++] = a;
    }
    if (npos != 2) {
        fputs(usage_verify, stderr);
        return EXIT_BAD;
    }
    o.checkpoint = pos[0];
    o.fixtures = pos[1];

    g2f_error err = {0};
    g2f_model *model = NULL;
    g2f_fixture *fx = NULL;
    unsigned char *select = NULL;
    g2f_verify_result res = {0};
    char *json = NULL;
    int rc = EXIT_BAD;
    if (g2f_model_open(o.checkpoint, o.config, &model, &err) != G2F_OK || g2f_fixture_open(o.fixtures, &fx, &err) != G2F_OK) {
        fprintf(stderr, "gpt2ffn: %s\n", err.msg);
        goto done;
    }
    const g2f_model_info *mi = g2f_model_get_info(model);
    if (o.layers) {
        char msg[256];
        select = calloc(mi->n_layer ? mi->n_layer : 1, 1);
        if (!select || !parse_layers(o.layers, mi->n_layer, select, msg, sizeof msg)) {
            fprintf(stderr, "gpt2ffn: verify: %s\n", select ? msg : "out of memory");
            goto done;
        }
    }
    char gelu_source[160];
    g2f_verify_params p = {0};
    if (o.gelu) {
        p.gelu = !strcmp(o.gelu, "erf") ? G2F_GELU_ERF : G2F_GELU_TANH;
        snprintf(gelu_source, sizeof gelu_source, "from --gelu");
    } else if (mi->config_has_gelu) {
        p.gelu = mi->config_gelu;
        snprintf(gelu_source, sizeof gelu_source, "from config.json activation_function \"%.40s\"",
                 mi->config_activation);
    } else {
        p.gelu = G2F_GELU_TANH;
        snprintf(gelu_source, sizeof gelu_source, "default: GPT-2's tanh approximation; %s",
                 mi->config_path ? "config.json names no activation_function" : "no config.json");
    }
    p.gelu_source = gelu_source;
    p.select = select;
    p.tol = (g2f_tol_params){o.user_tol, o.rtol, o.atol, G2F_TOL_LAMBDA};
    p.n_threads = o.threads;
    if (g2f_verify_run(model, fx, &p, &res, &err) != G2F_OK) {
        fprintf(stderr, "gpt2ffn: %s\n", err.msg);
        goto done;
    }
    if (res.compared == 0) {
        fprintf(stderr, "gpt2ffn: verify: no layer was compared: %s has none of the %s layers\n", o.fixtures,
                o.layers ? "selected" : "checkpoint's");
        goto done;
    }
    g2f_report_ctx ctx = {o.checkpoint, o.fixtures, mi, gelu_source, g2f_fixture_gelu_claim(fx),
                          g2f_fixture_dtype(fx), &p.tol, &res};
    if (o.json) {
        json = g2f_report_json(&ctx);
        if (!json) {
            fprintf(stderr, "gpt2ffn: out of memory writing the JSON report\n");
            goto done;
        }
        if (strcmp(o.json, "-") == 0) {
            puts(json);
        } else if (g2f_write_file_atomic(o.json, json, &err) != G2F_OK) {
            fprintf(stderr, "gpt2ffn: %s\n", err.msg);
            goto done;
        }
    }
    if (!o.json || strcmp(o.json, "-") != 0) g2f_report_text(stdout, &ctx);
    rc = res.pass ? 0 : EXIT_MISMATCH;
done:
    free(json);
    free(select);
    g2f_verify_result_free(&res);
    g2f_fixture_close(fx);
    g2f_model_close(model);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_BAD : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("gpt2ffn %s\n", GPT2FFN_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "verify")) return cmd_verify(argc - 2, argv + 2);
    fprintf(stderr, "gpt2ffn: unknown command '%s' (commands: verify; see gpt2ffn --help)\n", argv[1]);
    return EXIT_BAD;
}
