/* gpt2ffn command-line tool: argument parsing and subcommands. The only code
 * that prints to the terminal or chooses an exit code:
 *   0 pass / equivalent, 1 mismatch / different, 2 usage error or bad input
 *   (also: an output that is an input, standard output not writable).
 * Everything it prints that came from a file or the command line goes
 * through g2f_escape (g2f_text.h). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_decode.h"
#include "cli_msg.h"
#include "cli_sigbus.h"
#include "g2f_cpu.h"
#include "g2f_diff.h"
#include "g2f_digest_cache.h"
#include "g2f_fixture.h"
#include "g2f_genverify.h"
#include "g2f_html.h"
#include "g2f_inspect.h"
#include "g2f_model.h"
#include "g2f_names.h"
#include "g2f_options.h"
#include "g2f_report.h"
#include "g2f_run.h"
#include "g2f_text.h"
#include "g2f_verify.h"


typedef struct opt_spec {
    const char *name; /* "--gelu" */
    const char *value; /* metavariable, NULL for a flag */
} opt_spec;

typedef struct command {
    const char *name;
    const char *usage;  /* full help text */
    int n_pos;          /* positional arguments at most */
    int min_pos;        /* ... and at least (run --ids: no INPUTS) */
    const opt_spec *opts;
    int n_opts;
    int (*run)(const char **pos, const char **vals);
} command;

/* One line on stderr (cli_msg.h). */
#define bad cli_bad

/* farther than 3 edits is no suggestion */
static const char *closest(const char *word, const char *const *names, size_t stride, size_t n) {
    return g2f_closest_name(word, names, stride, n, 3);
}

/* Parses argv against c's options. Returns -1 to go on, else an exit code. */
static int parse(const command *c, int argc, char **argv, const char **pos, const char **vals) {
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(c->usage, stdout);
            return 0;
        }
        if (a[0] == '-' && a[1] != '\0' && strcmp(a, "-") != 0) {
            int which = -1;
            const char *val = NULL;
            for (int k = 0; k < c->n_opts; k++) {
                size_t n = strlen(c->opts[k].name);
                if (!strncmp(a, c->opts[k].name, n) && (a[n] == '\0' || a[n] == '=')) {
                    which = k;
                    val = a[n] == '=' ? a + n + 1 : NULL;
                }
            }
            if (which < 0) {
                char word[64];
                snprintf(word, sizeof word, "%.*s", (int)strcspn(a, "="), a);
                const char *s = closest(word, &c->opts[0].name, sizeof c->opts[0], (size_t)c->n_opts);
                if (s) return bad("%s: unknown option '%s'; did you mean '%s'? (see gpt2ffn %s --help)", c->name, word, s, c->name);
                return bad("%s: unknown option '%s' (see gpt2ffn %s --help)", c->name, word, c->name);
            }
            if (!c->opts[which].value) {
                if (val) return bad("%s: option '%s' takes no value", c->name, c->opts[which].name);
                vals[which] = "1";
                continue;
            }
            if (!val) {
                if (i + 1 >= argc) return bad("%s: option '%s' needs a value (%s)", c->name, a, c->opts[which].value);
                val = argv[++i];
            }
            vals[which] = val;
            continue;
        }
        if (npos == c->n_pos) return bad("%s: unexpected argument '%s' (see gpt2ffn %s --help)", c->name, a, c->name);
        pos[npos++] = a;
    }
    if (npos < c->min_pos || npos > c->n_pos) {
        fputs(c->usage, stderr);
        return EXIT_BAD;
    }
    return -1;
}

/* Writes json (taking ownership) to path, "-" meaning stdout; returns 0, or
 * 1 after printing the error. */
static int emit_json(const char *path, char *json) {
    g2f_error err = {0};
    int rc = 0;
    if (!json) {
        bad("out of memory writing the JSON report");
        return 1;
    }
    if (!strcmp(path, "-")) {
        puts(json);
    } else if (g2f_write_file_atomic(path, json, &err) != G2F_OK) {
        bad("%s", err.msg);
        rc = 1;
    }
    free(json);
    return rc;
}

/* Writes text (taking ownership) to path atomically; 0, or 1 after printing. */
static int emit_file(const char *path, char *text) {
    if (!strcmp(path, "-")) {
        free(text);
        bad("--html needs a file name");
        return 1;
    }
    return emit_json(path, text);
}

/* A progress line on stderr, only when it is a terminal. */
typedef struct progress {
    double start;
} progress;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void show_progress(void *user, size_t done, size_t total, unsigned long long bytes) {
    progress *pg = user;
    double dt = now_seconds() - pg->start;
    fprintf(stderr, "\rverify: %zu/%zu layers, %.0f MB of weights at %.0f MB/s\033[K", done, total, bytes / 1e6,
            dt > 0 ? bytes / 1e6 / dt : 0.0);
    if (done == total) fputs("\r\033[K", stderr);
    fflush(stderr);
}

static int use_color(FILE *fp) {
    const char *nc = getenv("NO_COLOR");
    return isatty(fileno(fp)) && !(nc && *nc);
}

/* Opens the checkpoint and the fixture/inputs file and parses --layers:
 * the start both verify and run share. Returns 0, or prints and returns 1. */
typedef struct opened {
    g2f_model *model;
    g2f_fixture *fx;
    unsigned char *select; /* NULL: every layer */
} opened;

static void opened_close(opened *o) {
    free(o->select);
    g2f_fixture_close(o->fx);
    g2f_model_close(o->model);
    memset(o, 0, sizeof *o);
}

/* Refuses outputs that are inputs (README: Exit codes): each path in outs
 * (NULL and "-" skipped) against every file the models and the fixture were
 * read from. Before anything is written. 0, or 1 after printing. */
static int check_outputs(const char *const *outs, size_t n_outs, const g2f_model *a, const g2f_model *b,
                         const g2f_fixture *fx) {
    g2f_error err = {0};
    g2f_path_list inputs = {0};
    g2f_status st = G2F_OK;
    if (a) st = g2f_model_files(a, &inputs, &err);
    if (st == G2F_OK && b) st = g2f_model_files(b, &inputs, &err);
    if (st == G2F_OK && fx) st = g2f_fixture_files(fx, &inputs, &err);
    for (size_t i = 0; i < n_outs && st == G2F_OK; i++)
        if (outs[i] && strcmp(outs[i], "-") != 0) st = g2f_output_check(outs[i], &inputs, &err);
    g2f_path_list_free(&inputs);
    if (st != G2F_OK) bad("%s", err.msg);
    return st != G2F_OK;
}

/* After the checkpoint (or the fixture) could not be read as such: when
 * the file is the other kind (the arguments swapped, or a fixture given
 * twice), say that instead of the reader's complaint. 1 when it printed. */
static int explain_swapped(const char *cmd, const char *checkpoint, const char *fixture, int checkpoint_failed) {
    g2f_error e2 = {0};
    g2f_fixture *fx = NULL;
    g2f_model *m = NULL;
    int ck_is_fx = 0, fx_is_ck = 0;
    if (checkpoint_failed && g2f_fixture_open(checkpoint, &fx, &e2) == G2F_OK) ck_is_fx = 1;
    g2f_fixture_close(fx);
    if (g2f_model_open(fixture, NULL, &m, &e2) == G2F_OK) fx_is_ck = 1;
    g2f_model_close(m);
    if (ck_is_fx && fx_is_ck) {
        bad("%s: the arguments are swapped: %s holds fixture tensors (h.N.mlp.in / h.N.mlp.out) and %s checkpoint "
            "tensors (h.N.mlp.c_fc ...); the checkpoint comes first: gpt2ffn %s %s %s",
            cmd, checkpoint, fixture, cmd, fixture, checkpoint);
        return 1;
    }
    if (ck_is_fx) {
        bad("%s: %s holds fixture tensors (h.N.mlp.in / h.N.mlp.out), not a checkpoint's FFN weights; the "
            "checkpoint comes first: gpt2ffn %s CHECKPOINT %s",
            cmd, checkpoint, cmd, cmd[0] == 'r' ? "INPUTS" : "FIXTURES");
        return 1;
    }
    if (!checkpoint_failed && fx_is_ck) {
        bad("%s: %s holds checkpoint tensors (h.N.mlp.c_fc ...), not fixture tensors (h.N.mlp.in / h.N.mlp.out)%s",
            cmd, fixture, cmd[0] == 'r' ? "" : "; a fixture is made by gpt2ffn run or by scripts/export_fixtures.py");
        return 1;
    }
    return 0;
}

static int open_inputs(const char *cmd, const char *checkpoint, const char *config, const char *fixture,
                       const char *layers, const char *tl_normalized, opened *o) {
    g2f_error err = {0};
    memset(o, 0, sizeof *o);
    g2f_norm_mode mode = G2F_NORM_MODE_AUTO;
    if (tl_normalized && !g2f_norm_mode_parse(tl_normalized, &mode)) {
        bad("%s: --tl-normalized is auto, after or before, not '%s'", cmd, tl_normalized);
        return 1;
    }
    if (g2f_model_open(checkpoint, config, &o->model, &err) != G2F_OK) {
        if (err.status != G2F_ERR_FORMAT || !explain_swapped(cmd, checkpoint, fixture, 1)) bad("%s", err.msg);
        return 1;
    }
    if (g2f_fixture_open_for(fixture, o->model, mode, &o->fx, &err) != G2F_OK) {
        if (err.status != G2F_ERR_FORMAT || !explain_swapped(cmd, checkpoint, fixture, 0)) bad("%s", err.msg);
        return 1;
    }
    size_t n = g2f_model_get_info(o->model)->n_layer;
    if (layers) {
        char msg[256];
        o->select = calloc(n ? n : 1, 1);
        if (!o->select || !g2f_opt_layers(layers, n, o->select, msg, sizeof msg)) {
            bad("%s: %s", cmd, o->select ? msg : "out of memory");
            return 1;
        }
    }
    return 0;
}

/* ---- verify ---------------------------------------------------------- */

static const opt_spec verify_opts[] = {{"--gelu", "FORM"},     {"--layers", "LIST"}, {"--rtol", "R"},
                                       {"--atol", "A"},        {"--threads", "N"},   {"--json", "FILE|-"},
                                       {"--config", "FILE"},   {"--html", "FILE"},   {"--quiet", NULL},
                                       {"--accept", "CODES"},  {"--n-head", "N"},    {"--tokenizer", "DIR|FILE"},
                                       {"--tl-normalized", "WHEN"}};
enum { V_GELU, V_LAYERS, V_RTOL, V_ATOL, V_THREADS, V_JSON, V_CONFIG, V_HTML, V_QUIET, V_ACCEPT, V_NHEAD, V_TOKENIZER,
       V_TLNORM, V_COUNT };

_Static_assert(sizeof verify_opts / sizeof verify_opts[0] == V_COUNT, "one spec per option");

static const char usage_verify[] =
    "usage: gpt2ffn verify CHECKPOINT FIXTURES [options]\n"
    "\n"
    "Compares every stage the fixture records with the checkpoint's computation:\n"
    "every layer's FFN, the block's other stages (LayerNorms, attention, residual\n"
    "adds: each from its recorded input, and the whole block chained from h.N.in),\n"
    "and with input_ids the whole forward (embedding, every block, ln_f, logits,\n"
    "with the top-1 token per position). A failing stage is diagnosed (wrong GELU\n"
    "form, missing bias, residual, rounded or quantized weights, misread layout,\n"
    "swapped layers, causal mask, attention scale, q/k/v order, LayerNorm epsilon,\n"
    "position embedding, ln_f, untied head, ...).\n"
    "\n"
    "CHECKPOINT  a GPT-2 checkpoint: safetensors (or its shard index), a torch.save\n"
    "            zip (pytorch_model.bin, nanoGPT/minGPT ckpt.pt), GGUF or llm.c file,\n"
    "            or the folder holding it (HF names first, else its only checkpoint\n"
    "            file); config.json beside it, else its only *config*.json, is read\n"
    "FIXTURES    reference activations h.N.mlp.in / h.N.mlp.out (optionally .pre /\n"
    "            .act), or TransformerLens names (blocks.N.ln2.hook_normalized,\n"
    "            blocks.N.hook_mlp_out, blocks.N.mlp.hook_pre / hook_post), in any of:\n"
    "              safetensors, NumPy .npz (np.savez, np.savez_compressed), a folder\n"
    "              of .npy files named like the tensors, a torch.save .pt dict of\n"
    "              tensors; or a folder holding exactly one such file\n"
    "            Block stages: h.N.in, h.N.ln_1.out, h.N.attn.qkv/probs/merged/out,\n"
    "            h.N.mid, h.N.out; the model: input_ids, embed, ln_f.out, logits\n"
    "            (TransformerLens hook names too; docs/model.md)\n"
    "\n"
    "options:\n"
    "  --gelu FORM       GELU form to compute: tanh, erf, sigmoid, mlx_approx, f16_table\n"
    "                    (default: config.json's activation_function, else erf for a\n"
    "                    nanoGPT training checkpoint, else tanh, GPT-2's)\n"
    "  --accept CODES    what the port does on purpose: weights_f16_rounded, weights_bf16_rounded,\n"
    "                    weights_quantized, f16_matmul (comma-separated); a stage whose only\n"
    "                    explanation is an accepted one passes, judged computed that way\n"
    "  --layers LIST     layers to check, e.g. 0,2-5 (default: all)\n"
    "  --n-head N        attention heads where the checkpoint does not say (config.json n_head,\n"
    "                    GGUF/llm.c headers, nanoGPT model_args, TransformerLens weight shapes);\n"
    "                    one that disagrees with them is refused\n"
    "  --rtol R          use |err| <= atol + rtol*|expected| instead of the derived tolerance\n"
    "  --atol A          (either one switches; the other then defaults to 0)\n"
    "  --config FILE     config.json to cross-check (default: config.json beside\n"
    "                    CHECKPOINT, else the only *config*.json there)\n"
    "  --threads N       OpenMP threads (default: all cores); results do not depend on it\n"
    "  --json FILE|-     also write the JSON report (to stdout with '-', then no text report)\n"
    "  --html FILE       also write a self-contained HTML report (charts, diagnosis)\n"
    "  --tokenizer DIR|FILE  shows the tokens where the top-1 differs as text (default: the\n"
    "                    tokenizer beside CHECKPOINT, if any)\n"
    "  --tl-normalized WHEN  TransformerLens' *.hook_normalized: after the LayerNorm's gain\n"
    "                    and bias (TransformerLens 2), before them (3), or auto: told apart\n"
    "                    by their values with the checkpoint's gain and bias (default)\n"
    "  --quiet           no progress line on stderr (there is none unless stderr is a terminal)\n"
    "  -h, --help        this help\n"
    "\n"
    "Colours are used only on a terminal and never when NO_COLOR is set.\n"
    "exit codes: 0 every compared stage matches, 1 a mismatch, 2 usage error, bad input\n"
    "or nothing compared\n"
    "\n"
    "examples:\n"
    "  gpt2ffn verify fixtures/tiny fixtures/tiny_erf.safetensors\n"
    "  gpt2ffn verify model.safetensors ref.safetensors --layers 0-3 --json report.json\n";

/* --n-head against the checkpoint's own: one line and 0 when they disagree. */
static int n_head_agrees(const char *cmd, const g2f_model_info *mi, size_t n_head) {
    char msg[1024];
    if (g2f_opt_n_head_agrees(cmd, mi, n_head, msg, sizeof msg)) return 1;
    bad("%s", msg);
    return 0;
}

static int run_verify(const char **pos, const char **v) {
    char msg[4096];
    g2f_verify_opts vo = {v[V_GELU], v[V_ACCEPT], v[V_RTOL], v[V_ATOL], v[V_THREADS], v[V_NHEAD]};
    g2f_verify_values vv;
    if (!g2f_opt_verify(&vo, &vv, msg, sizeof msg)) return bad("%s", msg);
    size_t n_head = vv.n_head;

    g2f_error err = {0};
    g2f_verify_result res = {0};
    int rc = EXIT_BAD;
    opened o;
    g2f_digest_job hash = {0};
    g2f_digest_cache cache;
    g2f_digest_cache_from_env(&cache);
    g2f_tokenizer *tok = NULL;
    if (open_inputs("verify", pos[0], v[V_CONFIG], pos[1], v[V_LAYERS], v[V_TLNORM], &o) != 0) goto done;
    const char *outs[] = {v[V_JSON], v[V_HTML]};
    if (check_outputs(outs, 2, o.model, NULL, o.fx) != 0) goto done;
    g2f_model *model = o.model;
    g2f_fixture *fx = o.fx;
    unsigned char *select = o.select;
    if (cli_open_tokenizer("verify", v[V_TOKENIZER], pos[0], model, 0, &tok) != 0) goto done;
    const g2f_model_info *mi = g2f_model_get_info(model);
    if (!n_head_agrees("verify", mi, n_head)) goto done;
    char gelu_source[256];
    g2f_verify_params p = {0};
    p.gelu = g2f_opt_choose_gelu(v[V_GELU], mi, gelu_source, sizeof gelu_source);
    p.gelu_source = gelu_source;
    p.select = select;
    p.tol = (g2f_tol_params){vv.tol_given, vv.rtol, vv.atol, G2F_TOL_LAMBDA};
    p.accept = vv.accept;
    p.n_head = n_head;
    p.n_threads = (int)vv.threads;
    g2f_threads_set_default(p.n_threads);
    progress pg = {now_seconds()};
    if (!v[V_QUIET] && isatty(STDERR_FILENO)) {
        p.progress = show_progress;
        p.progress_user = &pg;
    }
    /* provenance: a fixture that records its checkpoint's digest (gpt2ffn
     * run writes it) is checked against this checkpoint's, which costs one
     * read of the checkpoint (none when the digest cache has it), on a
     * thread of its own beside the comparison */
    if (g2f_genverify_present(fx)) { /* a generation (docs/decode.md) */
        if (v[V_RTOL] || v[V_ATOL] || v[V_ACCEPT] || v[V_LAYERS]) {
            bad("verify: %s holds a generation: --rtol, --atol, --accept and --layers are not for it", pos[1]);
            goto done;
        }
        rc = cli_verify_generation(model, fx, pos[0], pos[1], &p, tok, v[V_JSON], v[V_HTML]);
        goto done;
    }
    if (cli_check_teacher_mask("verify", fx) != 0) goto done;
    const char *fx_sha = g2f_fixture_meta(fx, "checkpoint_sha256");
    if (fx_sha) g2f_digest_job_start(&hash, model, &cache);
    if (g2f_verify_run(model, fx, &p, &res, &err) != G2F_OK) {
        bad("%s", err.msg);
        goto done;
    }
    if (fx_sha && g2f_digest_job_finish(&hash) != G2F_OK) {
        bad("%s", hash.err.msg);
        goto done;
    }
    const char *ck_sha = hash.hex;
    /* a verdict on nothing compared would be false */
    if (res.compared == 0 && !res.model.compared && !res.loss.checked) {
        char why[1024];
        g2f_verify_nothing_compared(fx, why, sizeof why);
        bad("verify: nothing was compared%s: %s", v[V_LAYERS] ? " in the selected layers" : "", why);
        goto done;
    }
    /* the reports say which n_head the attention stages used */
    g2f_model_info shown = *mi;
    if (n_head) {
        shown.n_head = n_head;
        shown.n_head_source = "given with --n-head";
    }
    g2f_report_ctx ctx = {pos[0], pos[1], &shown, gelu_source, g2f_fixture_gelu_claim(fx), g2f_fixture_dtype(fx), &p.tol, &res,
                          use_color(stdout), fx_sha, fx_sha ? ck_sha : NULL, hash.from_cache, tok};
    if (v[V_JSON] && emit_json(v[V_JSON], g2f_report_json(&ctx)) != 0) goto done;
    if (v[V_HTML] && emit_file(v[V_HTML], g2f_report_html(&ctx)) != 0) goto done;
    if (!v[V_JSON] || strcmp(v[V_JSON], "-") != 0) g2f_report_text(stdout, &ctx);
    rc = res.pass ? 0 : EXIT_MISMATCH;
done:
    g2f_digest_job_finish(&hash); /* before the model closes */
    g2f_tokenizer_close(tok);
    g2f_verify_result_free(&res);
    opened_close(&o);
    return rc;
}

/* ---- inspect --------------------------------------------------------- */

static const opt_spec inspect_opts[] = {{"--json", "FILE|-"}, {"--config", "FILE"}};
enum { I_JSON, I_CONFIG, I_COUNT };
_Static_assert(sizeof inspect_opts / sizeof inspect_opts[0] == I_COUNT, "one spec per option");

static const char usage_inspect[] =
    "usage: gpt2ffn inspect CHECKPOINT [options]\n"
    "\n"
    "Shows what gpt2ffn finds in a checkpoint: format, naming, layout (and how it was\n"
    "decided), n_layer / n_embd / n_inner / n_head, config.json, and per layer the\n"
    "block's tensors (the FFN's four, ln_1, attention, ln_2) with shape, dtype, min,\n"
    "max, mean, std and NaN/Inf counts.\n"
    "\n"
    "options:\n"
    "  --config FILE     config.json to cross-check (default: config.json beside\n"
    "                    CHECKPOINT, else the only *config*.json there)\n"
    "  --json FILE|-     also write the JSON report (to stdout with '-', then no text)\n"
    "  -h, --help        this help\n"
    "\n"
    "example:\n"
    "  gpt2ffn inspect fixtures/tiny\n";

static int run_inspect(const char **pos, const char **v) {
    g2f_error err = {0};
    g2f_model *model = NULL;
    g2f_inspect_result r = {0};
    int rc = EXIT_BAD;
    if (g2f_model_open(pos[0], v[I_CONFIG], &model, &err) != G2F_OK || g2f_inspect_run(model, &r, &err) != G2F_OK) {
        bad("%s", err.msg);
        goto done;
    }
    if (check_outputs(&v[I_JSON], 1, model, NULL, NULL) != 0) goto done;
    const g2f_model_info *mi = g2f_model_get_info(model);
    if (v[I_JSON] && emit_json(v[I_JSON], g2f_report_inspect_json(pos[0], mi, &r)) != 0) goto done;
    if (!v[I_JSON] || strcmp(v[I_JSON], "-") != 0) g2f_report_inspect_text(stdout, mi, &r);
    rc = 0;
done:
    g2f_inspect_result_free(&r);
    g2f_model_close(model);
    return rc;
}

/* ---- diff ------------------------------------------------------------ */

static const opt_spec diff_opts[] = {{"--json", "FILE|-"}, {"--accept", "LIST"}, {"--only", "ffn|block"}};
enum { D_JSON, D_ACCEPT, D_ONLY, D_COUNT };
_Static_assert(sizeof diff_opts / sizeof diff_opts[0] == D_COUNT, "one spec per option");

static const char usage_diff[] =
    "usage: gpt2ffn diff A B [options]\n"
    "\n"
    "Validates ported weights B against the original A, no fixture needed: the same\n"
    "sizes, then every tensor either file holds (each layer's, wte, wpe, ln_f, the head,\n"
    "and any other, matched by name), the largest differences (each file's layout\n"
    "undone) and what they are: identical, rounded (within the lower dtype's rounding),\n"
    "f16_rounded, bf16_rounded, transposed, from_layer:K, scaled:C, quantized:T (a GGUF\n"
    "Q8_0, Q4_K, ... tensor within the error bound of ggml's reference rounding of A's\n"
    "values, about half a step; the largest error is given in steps),\n"
    "quant_inconsistent:T (a block ggml's reference quantizer cannot have written),\n"
    "missing, different, shape_differs, held_by_one (only one file holds it). Causal-mask\n"
    "buffers and training state are excused.\n"
    "\n"
    "options:\n"
    "  --json FILE|-     also write the JSON report (to stdout with '-', then no text)\n"
    "  --accept LIST     also accept these non-equivalent verdicts (exit 0, status\n"
    "                    'accepted'): weights_quantized (quantized:T)\n"
    "  --only SCOPE      compare only ffn (the FFN tensors of every layer) or block (every\n"
    "                    tensor of every layer); the rest is excused: a port of that part\n"
    "  -h, --help        this help\n"
    "\n"
    "exit codes: 0 equivalent within the dtypes' rounding (or accepted): every tensor\n"
    "compared is, and none is held by one file only unless excused; 1 different; 2 bad\n"
    "input\n"
    "\n"
    "examples:\n"
    "  gpt2ffn diff original/model.safetensors port/model.gguf\n"
    "  gpt2ffn diff original/model.safetensors port/model-q8_0.gguf --accept weights_quantized\n"
    "  gpt2ffn diff original/model.safetensors port/ffn-only.safetensors --only ffn\n";

static int run_diff(const char **pos, const char **v) {
    g2f_error err = {0};
    g2f_model *a = NULL, *b = NULL;
    g2f_diff_result r = {0};
    int rc = EXIT_BAD;
    unsigned accept = 0;
    g2f_diff_scope scope = G2F_DIFF_SCOPE_ALL;
    if (v[D_ACCEPT] && !g2f_diff_accept_parse(v[D_ACCEPT], &accept))
        return bad("diff: --accept '%s': unknown class (known: weights_quantized)", v[D_ACCEPT]);
    if (v[D_ONLY] && !g2f_diff_scope_parse(v[D_ONLY], &scope))
        return bad("diff: --only '%s': expected ffn or block", v[D_ONLY]);
    if (g2f_model_open(pos[0], NULL, &a, &err) != G2F_OK || g2f_model_open(pos[1], NULL, &b, &err) != G2F_OK ||
        g2f_diff_run_scoped(a, b, scope, &r, &err) != G2F_OK) {
        bad("%s", err.msg);
        goto done;
    }
    if (check_outputs(&v[D_JSON], 1, a, b, NULL) != 0) goto done;
    const g2f_model_info *ia = g2f_model_get_info(a), *ib = g2f_model_get_info(b);
    g2f_diff_accept(&r, accept);
    if (v[D_JSON] && emit_json(v[D_JSON], g2f_report_diff_json(ia, ib, &r)) != 0) goto done;
    if (!v[D_JSON] || strcmp(v[D_JSON], "-") != 0) g2f_report_diff_text(stdout, ia, ib, &r);
    rc = r.equivalent || r.all_accepted ? 0 : EXIT_MISMATCH;
done:
    g2f_diff_result_free(&r);
    g2f_model_close(b);
    g2f_model_close(a);
    return rc;
}

/* ---- run ------------------------------------------------------------- */

static const opt_spec run_opts[] = {{"-o", "OUT"},       {"--gelu", "FORM"},    {"--layers", "LIST"},
                                    {"--save", "STAGES"}, {"--threads", "N"},    {"--config", "FILE"},
                                    {"--ids", "LIST"},    {"--names", "hf|tl"},  {"--n-head", "N"},
                                    {"--prompt", "TEXT"}, {"--tokenizer", "DIR|FILE"}, {"--generate", "N"},
                                    {"--tl-normalized", "WHEN"}};
enum { R_OUT, R_GELU, R_LAYERS, R_SAVE, R_THREADS, R_CONFIG, R_IDS, R_NAMES, R_NHEAD, R_PROMPT, R_TOKENIZER, R_GENERATE,
       R_TLNORM, R_COUNT };
_Static_assert(sizeof run_opts / sizeof run_opts[0] == R_COUNT, "one spec per option");

static const char usage_run[] =
    "usage: gpt2ffn run CHECKPOINT INPUTS -o OUT [options]\n"
    "       gpt2ffn run CHECKPOINT --ids 464,3290,... -o OUT [options]\n"
    "       gpt2ffn run CHECKPOINT --prompt TEXT -o OUT [options]\n"
    "\n"
    "Reproduces reference activations without Python, written as safetensors, or .npz\n"
    "when OUT ends in .npz; the metadata records the GELU form, the checkpoint and its\n"
    "sha256, and the tool version. The output is a fixture: gpt2ffn verify CHECKPOINT\n"
    "OUT passes.\n"
    "\n"
    "The whole model, when INPUTS holds input_ids ([..., T], int64 or int32) or with\n"
    "--ids: token ids through every block to the logits; writes input_ids, logits and\n"
    "the stages --save names.\n"
    "The FFN alone, when INPUTS holds FFN inputs (h.N.mlp.in, or TransformerLens\n"
    "blocks.N.ln2.hook_normalized; safetensors, .npz or a folder of .npy): writes in\n"
    "and out (and pre/act with --save) in the same naming.\n"
    "\n"
    "options:\n"
    "  -o OUT            the file to write (atomically: no partial file on failure)\n"
    "  --ids LIST        token ids instead of INPUTS: 464,3290,... (one sequence), or\n"
    "                    sequences of the same length separated by ';'\n"
    "  --prompt TEXT     text instead of --ids, encoded by GPT-2's tokenizer (one sequence)\n"
    "  --tokenizer DIR|FILE  the tokenizer for --prompt (default: the one beside CHECKPOINT:\n"
    "                    tokenizer.json, vocab.json + merges.txt or encoder.json + vocab.bpe)\n"
    "  --save STAGES     the whole model: also write these stages, comma-separated, or\n"
    "                    all: embed, in, ln_1.out, attn.qkv, attn.probs, attn.merged,\n"
    "                    attn.out, mid, mlp.in, mlp.pre, mlp.act, mlp.out, out, ln_f.out;\n"
    "                    the FFN alone: pre, act or pre,act\n"
    "  --generate N      greedy generation of N tokens after each sequence of --ids or\n"
    "                    --prompt, one token a step with every layer's keys and values\n"
    "                    cached; writes prompt_ids, step_logits and generated_ids (with\n"
    "                    --save also each step's stages as a fixture of the tokens stepped)\n"
    "  --names hf|tl     the whole model's tensor names: HF fixture names (h.L.attn.out,\n"
    "                    ...; default) or TransformerLens' (blocks.L.hook_attn_out, ...;\n"
    "                    *.hook_normalized holds the LayerNorm's output, as in TransformerLens 2)\n"
    "  --tl-normalized WHEN  INPUTS' blocks.N.ln2.hook_normalized: after the gain and bias,\n"
    "                    before them, or auto (default; as verify's)\n"
    "  --gelu FORM       GELU form: tanh, erf, sigmoid, mlx_approx, f16_table (default:\n"
    "                    config.json's activation_function, else erf for a nanoGPT\n"
    "                    training checkpoint, else tanh)\n"
    "  --layers LIST     the FFN alone: layers to run, e.g. 0,2-5 (default: every layer\n"
    "                    with inputs)\n"
    "  --n-head N        attention heads when the checkpoint does not say (config.json,\n"
    "                    a header, model_args); one that disagrees with it is refused\n"
    "  --config FILE     config.json (default: config.json beside CHECKPOINT, else the\n"
    "                    only *config*.json there)\n"
    "  --threads N       OpenMP threads; results do not depend on it\n"
    "  -h, --help        this help\n"
    "\n"
    "examples:\n"
    "  gpt2ffn run fixtures/tiny --ids 5,17,3,42 -o out.safetensors --save all\n"
    "  gpt2ffn run fixtures/decode/tok --prompt 'The cat' --generate 20 -o gen.safetensors\n"
    "  gpt2ffn run fixtures/tiny fixtures/tiny_tanh.safetensors -o out.safetensors --save pre,act\n";

/* --ids: "a,b,c" or "a,b;c,d" into a malloc'd array; 0 and a message when
 * malformed. */
static int parse_ids(const char *spec, int64_t **out, size_t *n_seq, size_t *T, char *msg, size_t n) {
    size_t cap = strlen(spec) / 2 + 1, count = 0, seq = 0, cur = 0;
    int64_t *ids = calloc(cap, sizeof *ids);
    *out = NULL;
    *T = 0;
    if (!ids) return snprintf(msg, n, "out of memory"), 0;
    const char *p = spec;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0) {
            snprintf(msg, n, "--ids: '%.40s' is not a list of token ids (e.g. 464,3290 or 464,3290;50256,318)", p);
            free(ids);
            return 0;
        }
        ids[count++] = v;
        cur++;
        p = end;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ';' || !*p) {
            if (*T && cur != *T) {
                snprintf(msg, n, "--ids: sequence %zu has %zu tokens but the first has %zu", seq, cur, *T);
                free(ids);
                return 0;
            }
            *T = cur, cur = 0, seq++;
            if (!*p) break;
            p++;
            continue;
        }
        snprintf(msg, n, "--ids: unexpected '%c' (token ids separated by ',', sequences by ';')", *p);
        free(ids);
        return 0;
    }
    *out = ids;
    *n_seq = seq;
    return 1;
}

static int run_run(const char **pos, const char **v) {
    size_t threads = 0, n_head = 0;
    int save_pre = 0, save_act = 0;
    if (!v[R_OUT]) return bad("run: -o OUT is required (see gpt2ffn run --help)");
    if (!pos[1] && !v[R_IDS] && !v[R_PROMPT]) return bad("run: give INPUTS or --ids, or --prompt (see gpt2ffn run --help)");
    if (!!pos[1] + !!v[R_IDS] + !!v[R_PROMPT] > 1) return bad("run: give one of INPUTS, --ids and --prompt");
    if (v[R_TOKENIZER] && !v[R_PROMPT] && !v[R_GENERATE]) return bad("run: --tokenizer is for --prompt and --generate");
    if (v[R_GELU] && !g2f_opt_gelu_ok(v[R_GELU]))
        return bad("run: --gelu '%s': expected tanh, erf, sigmoid, mlx_approx or f16_table", v[R_GELU]);
    if (v[R_THREADS] && (!g2f_opt_size(v[R_THREADS], 1024, &threads) || threads == 0))
        return bad("run: --threads '%s': expected 1 to 1024", v[R_THREADS]);
    if (v[R_NHEAD] && (!g2f_opt_size(v[R_NHEAD], 1 << 20, &n_head) || n_head == 0))
        return bad("run: --n-head '%s': expected a positive integer", v[R_NHEAD]);
    if (v[R_NAMES] && strcmp(v[R_NAMES], "hf") && strcmp(v[R_NAMES], "tl"))
        return bad("run: --names '%s': expected hf or tl", v[R_NAMES]);
    size_t olen = strlen(v[R_OUT]);
    g2f_out_format fmt = olen > 4 && !strcmp(v[R_OUT] + olen - 4, ".npz") ? G2F_OUT_NPZ : G2F_OUT_SAFETENSORS;
    g2f_error err = {0};
    int rc = EXIT_BAD;
    char msg[300];
    opened o;
    memset(&o, 0, sizeof o);
    g2f_digest_job hash = {0}; /* the checkpoint's digest, hashed beside the work */
    g2f_digest_cache cache;
    g2f_digest_cache_from_env(&cache);
    int64_t *ids = NULL;
    size_t n_seq = 0, T = 0, lead_ndim = 0;
    uint64_t lead[G2F_MAX_DIMS] = {0};
    if (v[R_IDS]) {
        if (!parse_ids(v[R_IDS], &ids, &n_seq, &T, msg, sizeof msg)) return bad("run: %s", msg);
        if (n_seq > 1) lead[lead_ndim++] = n_seq;
        if (g2f_model_open(pos[0], v[R_CONFIG], &o.model, &err) != G2F_OK) {
            bad("%s", err.msg);
            goto done;
        }
    } else if (v[R_PROMPT]) {
        g2f_tokenizer *tok = NULL;
        if (g2f_model_open(pos[0], v[R_CONFIG], &o.model, &err) != G2F_OK) {
            bad("%s", err.msg);
            goto done;
        }
        int trc = cli_open_tokenizer("run", v[R_TOKENIZER], pos[0], o.model, 1, &tok);
        if (trc == 0) trc = cli_prompt_ids("run", tok, o.model, v[R_PROMPT], &ids, &T);
        g2f_tokenizer_close(tok);
        if (trc != 0) goto done;
        n_seq = 1;
    } else if (open_inputs("run", pos[0], v[R_CONFIG], pos[1], v[R_LAYERS], v[R_TLNORM], &o) != 0) {
        goto done;
    }
    if (o.fx && cli_check_teacher_mask("run", o.fx) != 0) goto done;
    const g2f_tensor *tids = o.fx ? g2f_fixture_act(o.fx, 0, G2F_ACT_IDS) : NULL;
    int whole = ids || tids;
    if (check_outputs(&v[R_OUT], 1, o.model, NULL, o.fx) != 0) goto done;
    g2f_model *model = o.model;
    const g2f_model_info *mi = g2f_model_get_info(model);
    if (!n_head_agrees("run", mi, n_head)) goto done;
    unsigned save = 0;
    if (v[R_SAVE] && whole && !g2f_run_parse_save(v[R_SAVE], &save, msg, sizeof msg)) {
        bad("run: --save: %s", msg);
        goto done;
    }
    if (v[R_SAVE] && !whole) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", v[R_SAVE]);
        for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
            if (!strcmp(tok, "pre")) save_pre = 1;
            else if (!strcmp(tok, "act")) save_act = 1;
            else {
                bad("run: --save '%s': expected pre, act or pre,act (INPUTS holds FFN inputs, not input_ids)", v[R_SAVE]);
                goto done;
            }
        }
    }
    if (whole && tids) { /* the ids of INPUTS, checked against the model */
        g2f_embed e;
        size_t ns, TT;
        g2f_status st = g2f_model_embed_load(model, &e, &err);
        if (st == G2F_OK) st = g2f_fixture_check_model(o.fx, e.d, e.vocab, e.wpe ? e.n_pos : 0, &ns, &TT, &err);
        g2f_embed_free(&e);
        if (st != G2F_OK) {
            bad("%s", err.msg);
            goto done;
        }
        n_seq = ns, T = TT;
        for (size_t i = 0; i + 1 < tids->ndim; i++) lead[lead_ndim++] = tids->shape[i];
        ids = g2f_alloc_work(n_seq * T, 1, sizeof *ids, "run: input_ids", &err);
        if (!ids) {
            bad("%s", err.msg);
            goto done;
        }
        g2f_fixture_read_ids(tids, 0, n_seq * T, ids);
    }
    char gelu_source[256];
    g2f_run_params p = {0};
    p.gelu = g2f_opt_choose_gelu(v[R_GELU], mi, gelu_source, sizeof gelu_source);
    p.gelu_source = gelu_source;
    p.select = o.select;
    p.save_pre = save_pre;
    p.save_act = save_act;
    p.format = fmt;
    p.checkpoint_label = pos[0];
    p.checkpoint_digest = &hash;
    p.n_threads = (int)threads;
    g2f_threads_set_default(p.n_threads);
    g2f_run_result r;
    const char *cached = " (from the digest cache)";
    if (whole && v[R_GENERATE]) {
        rc = cli_run_generate(model, pos[0], ids, lead, lead_ndim, T, v[R_OUT], &p, n_head, save, v[R_GENERATE],
                              v[R_TOKENIZER], v[R_NAMES] && !strcmp(v[R_NAMES], "tl"));
        goto done;
    }
    if (v[R_GENERATE]) {
        bad("run: --generate needs token ids: --ids, --prompt or INPUTS holding input_ids");
        goto done;
    }
    if (whole) {
        g2f_run_model_params mp = {&p, n_head, save, v[R_NAMES] && !strcmp(v[R_NAMES], "tl")};
        g2f_digest_job_start(&hash, model, &cache);
        if (g2f_run_model(model, ids, lead, lead_ndim, T, v[R_OUT], &mp, &r, &err) != G2F_OK) {
            bad("%s", err.msg);
            goto done;
        }
        char *shown = g2f_escape_dup(v[R_OUT]), src[4 * sizeof gelu_source];
        printf("wrote %s: the whole model on %zu sequence%s of %zu tokens, %zu tensors, %s GELU (%s), checkpoint "
               "sha256 %s%s\n", shown ? shown : "?", n_seq, n_seq == 1 ? "" : "s", T, r.tensors, g2f_gelu_name(p.gelu),
               g2f_escape(gelu_source, src, sizeof src), hash.hex, hash.from_cache ? cached : "");
        free(shown);
        rc = 0;
        goto done;
    }
    /* checked before the hash starts reading the whole checkpoint */
    if (g2f_run_check(model, o.fx, &p, &err) != G2F_OK) {
        bad("%s", err.msg);
        goto done;
    }
    g2f_digest_job_start(&hash, model, &cache);
    if (g2f_run(model, o.fx, v[R_OUT], &p, &r, &err) != G2F_OK) {
        bad("%s", err.msg);
        goto done;
    }
    char *shown = g2f_escape_dup(v[R_OUT]), src[4 * sizeof gelu_source];
    printf("wrote %s: %zu layers, %zu tensors, %s GELU (%s), checkpoint sha256 %s%s\n", shown ? shown : "?", r.layers,
           r.tensors, g2f_gelu_name(p.gelu), g2f_escape(gelu_source, src, sizeof src), hash.hex,
           hash.from_cache ? cached : "");
    free(shown);
    rc = 0;
done:
    g2f_digest_job_finish(&hash); /* before the model closes */
    free(ids);
    opened_close(&o);
    return rc;
}

/* ---- main ------------------------------------------------------------ */

static const command commands[] = {
    {"verify", usage_verify, 2, 2, verify_opts, V_COUNT, run_verify},
    {"inspect", usage_inspect, 1, 1, inspect_opts, I_COUNT, run_inspect},
    {"diff", usage_diff, 2, 2, diff_opts, D_COUNT, run_diff},
    {"run", usage_run, 2, 1, run_opts, R_COUNT, run_run},
};

static const char usage_main[] =
    "gpt2ffn checks a GPT-2 port's whole model against reference activations and names the cause.\n"
    "\n"
    "Every stage the reference records (embeddings, each block's LayerNorms,\n"
    "attention, FFN and residual adds, ln_f, logits) is recomputed on the CPU from its\n"
    "recorded input and chained from the token ids; a stage that does not match is\n"
    "recomputed under the known porting bugs (GELU form, transposed weights, swapped\n"
    "layers, missing bias, f16/bf16/quantized weights, attention mask or scale, q/k/v\n"
    "order, LayerNorm eps).\n"
    "\n"
    "usage: gpt2ffn <command> [options]\n"
    "\n"
    "commands:\n"
    "  verify CHECKPOINT FIXTURES   check every recorded stage, from token ids to logits\n"
    "  inspect CHECKPOINT           show the block tensors gpt2ffn finds, with statistics\n"
    "  diff A B                     compare ported weights B with the original A\n"
    "  run CHECKPOINT INPUTS -o OUT reproduce reference activations (a fixture) without Python:\n"
    "                               the whole model from token ids (--ids), or the FFN alone\n"
    "\n"
    "Run 'gpt2ffn <command> --help' for options and examples; an option's value may\n"
    "also be given as --option=VALUE. 'gpt2ffn --version' prints the version.\n"
    "Exit codes: 0 pass, 1 mismatch, 2 usage error or unreadable/malformed input.\n";

/* SIGINT, SIGTERM, SIGHUP while an output is being written: remove its
 * temporary file (g2f_outfile_remove_temporaries: unlink only, which is
 * async-signal-safe), then die of the same signal, as the shell expects.
 * SA_RESETHAND has already restored the default action, and the signal,
 * blocked during the handler, is delivered when it returns. */
static void on_signal(int sig) {
    int saved = errno;
    g2f_outfile_remove_temporaries();
    raise(sig);
    errno = saved;
}

static void catch_signals(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller ignores (nohup, a background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    }
}

/* Every command ends here: what it printed must have reached stdout (a full
 * disk or a closed pipe is an error, exit 2, not a silent success). */
static int finish(int rc) {
    int e = fflush(stdout) != 0 ? errno : 0;
    if (ferror(stdout)) return bad("cannot write to standard output: %s", e ? strerror(e) : "a write to it failed");
    return rc;
}

static int run_main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_BAD : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("gpt2ffn %s\n", GPT2FFN_VERSION);
        return 0;
    }
    const g2f_cpu *cpu = g2f_cpu_features(); /* GPT2FFN_ISA, for tests and benchmarks */
    if (!cpu->isa_env_ok) return bad("GPT2FFN_ISA '%.40s': expected portable, avx2, avx512, avx512_bf16 or amx", cpu->isa_env);
    size_t n = sizeof commands / sizeof commands[0];
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        const char *pos[4] = {0}, *vals[16] = {0};
        int rc = parse(&commands[i], argc - 2, argv + 2, pos, vals);
        return rc >= 0 ? rc : commands[i].run(pos, vals);
    }
    const char *s = closest(argv[1], &commands[0].name, sizeof commands[0], n);
    if (s) return bad("unknown command '%s'; did you mean '%s'? (see gpt2ffn --help)", argv[1], s);
    return bad("unknown command '%s' (commands: verify, inspect, diff, run; see gpt2ffn --help)", argv[1]);
}

int main(int argc, char **argv) {
    /* Reports go out in one piece at the end when stdout is a file or a
     * pipe, so that a write error surfaces in finish() with its cause. */
    static char out_buf[1 << 18];
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);
    cli_sigbus_install(); /* a mapped input truncated under us: one line, exit 2 */
    catch_signals();
    return finish(run_main(argc, argv));
}
