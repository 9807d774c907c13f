/* g2f_bind: see g2f_bind.h. */
#include "g2f_bind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_diff.h"
#include "g2f_file.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_names.h"
#include "g2f_options.h"
#include "g2f_report.h"
#include "g2f_run.h"
#include "g2f_verify.h"

#define BAD 2

/* Copies text into msg and returns BAD. */
static int bad(char *msg, size_t n, const char *text) {
    if (n) snprintf(msg, n, "%s", text);
    return BAD;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- activations in memory as a table -------------------------------------- */

/* One caller's tensor checked and described into out (its name copied). */
static g2f_status tensor_of(const g2f_bind_tensor *b, size_t i, const char *label, g2f_tensor *out, g2f_error *err) {
    g2f_dtype dt;
    size_t len = b->name ? strlen(b->name) : 0;
    if (len == 0 || len > 1023)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor %zu: a name of 1 to 1023 bytes is needed", label, i);
    if (!b->dtype || !g2f_dtype_from_name(b->dtype, &dt) ||
        !(g2f_dtype_is_float(dt) || dt == G2F_DTYPE_I32 || dt == G2F_DTYPE_I64))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: tensor '%s': dtype '%.16s' is not F32, F16, BF16, F64, I32 or I64",
                             label, b->name, b->dtype ? b->dtype : "(none)");
    if (b->ndim > G2F_MAX_DIMS || (b->ndim && !b->shape))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': %zu dimensions (at most %d)", label, b->name,
                             b->ndim, G2F_MAX_DIMS);
    uint64_t numel = 1, nbytes;
    for (size_t d = 0; d < b->ndim; d++)
        if (!g2f_mul_u64(numel, b->shape[d], &numel))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': its shape's element count overflows", label,
                                 b->name);
    if (!g2f_mul_u64(numel, g2f_dtype_size(dt), &nbytes) || nbytes != b->nbytes)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': %llu elements of %s are not the %llu bytes given",
                             label, b->name, (unsigned long long)numel, g2f_dtype_name(dt),
                             (unsigned long long)b->nbytes);
    if (nbytes && !b->data)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': no data", label, b->name);
    memset(out, 0, sizeof *out);
    if (!(out->name = dup_str(b->name))) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    out->dtype = dt;
    out->ndim = b->ndim;
    for (size_t d = 0; d < b->ndim; d++) out->shape[d] = b->shape[d];
    out->numel = numel;
    out->data = b->data;
    out->nbytes = nbytes;
    return G2F_OK;
}

/* Metadata pairs copied into t. */
static g2f_status meta_of(const char *const *meta, size_t n_meta, const char *label, g2f_table *t, g2f_error *err) {
    if (!n_meta) return G2F_OK;
    if (!meta || !(t->meta = g2f_alloc_array(n_meta, sizeof *t->meta)))
        return g2f_error_set(err, meta ? G2F_ERR_NOMEM : G2F_ERR_USAGE, "%s: metadata: %s", label,
                             meta ? "out of memory" : "no pairs given");
    for (size_t i = 0; i < n_meta; i++) {
        const char *k = meta[2 * i], *v = meta[2 * i + 1];
        if (!k || !v) return g2f_error_set(err, G2F_ERR_USAGE, "%s: metadata pair %zu is incomplete", label, i);
        g2f_meta_entry *e = &t->meta[t->meta_count];
        e->key = dup_str(k);
        e->value = dup_str(v);
        t->meta_count++; /* freed by g2f_table_free whatever succeeded */
        if (!e->key || !e->value) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    }
    return G2F_OK;
}

/* The caller's tensors as a table (names copied, data borrowed), each
 * checked, every name given once. */
static g2f_status table_of(const g2f_bind_tensor *t, size_t n, const char *const *meta, size_t n_meta,
                           const char *label, g2f_table *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (n && !t) return g2f_error_set(err, G2F_ERR_USAGE, "%s: no tensors given", label);
    if (!(out->tensors = g2f_alloc_array(n ? n : 1, sizeof *out->tensors)))
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory for %zu tensors", n);
    g2f_status st = G2F_OK;
    for (size_t i = 0; i < n && st == G2F_OK; i++)
        if ((st = tensor_of(&t[i], i, label, &out->tensors[i], err)) == G2F_OK) out->count++;
    if (st == G2F_OK) {
        g2f_name_ref *r = g2f_names_of_table(out);
        size_t d = r ? g2f_names_find_dup(r, out->count) : 0;
        if (!r) st = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        else if (d) st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' is given twice", label, r[d].s);
        free(r);
    }
    if (st == G2F_OK) st = meta_of(meta, n_meta, label, out, err);
    if (st != G2F_OK) g2f_table_free(out);
    return st;
}

/* ---- reports as strings ------------------------------------------------------ */

/* A text report written by fn into a malloc'd string, NULL when out of memory. */
typedef void (*text_fn)(FILE *fp, const void *arg);
static char *text_of(text_fn fn, const void *arg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp) return NULL;
    fn(fp, arg);
    if (fclose(fp) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void verify_text(FILE *fp, const void *ctx) { g2f_report_text(fp, ctx); }

/* ---- verify -------------------------------------------------------------------- */

typedef struct opened {
    g2f_model *model;
    g2f_table table;        /* the caller's tensors (memory mode) */
    g2f_fixture *fx;
    unsigned char *select;  /* --layers, NULL: every layer */
    g2f_verify_result res;
} opened;

static void opened_close(opened *b) {
    g2f_verify_result_free(&b->res);
    free(b->select);
    g2f_fixture_close(b->fx);
    g2f_table_free(&b->table);
    g2f_model_close(b->model);
}

static int open_all(const char *checkpoint, const char *fixture_path, const g2f_bind_tensor *t, size_t n,
                    const char *const *meta, size_t n_meta, const char *label, const g2f_bind_verify_opts *o,
                    opened *b, char *msg, size_t msglen) {
    g2f_error err = {0};
    if (!checkpoint) return bad(msg, msglen, "verify: no checkpoint given");
    if (fixture_path && (n || n_meta)) return bad(msg, msglen, "verify: give a fixture file or tensors, not both");
    g2f_norm_mode mode = G2F_NORM_MODE_AUTO;
    if (o->tl_normalized && !g2f_norm_mode_parse(o->tl_normalized, &mode)) {
        snprintf(msg, msglen, "verify: --tl-normalized is auto, after or before, not '%s'", o->tl_normalized);
        return BAD;
    }
    if (g2f_model_open(checkpoint, o->config, &b->model, &err) != G2F_OK) return bad(msg, msglen, err.msg);
    g2f_status st = fixture_path ? g2f_fixture_open_for(fixture_path, b->model, mode, &b->fx, &err)
                                 : table_of(t, n, meta, n_meta, label, &b->table, &err);
    if (st == G2F_OK && !fixture_path) st = g2f_fixture_from_table(&b->table, label, &b->fx, &err);
    if (st == G2F_OK && !fixture_path) st = g2f_fixture_read_norms(b->fx, b->model, mode, &err);
    if (st != G2F_OK) return bad(msg, msglen, err.msg);
    size_t layers = g2f_model_get_info(b->model)->n_layer;
    if (o->layers) {
        char m[256];
        b->select = calloc(layers ? layers : 1, 1);
        if (!b->select) return bad(msg, msglen, "verify: out of memory");
        if (!g2f_opt_layers(o->layers, layers, b->select, m, sizeof m)) {
            snprintf(msg, msglen, "verify: %s", m);
            return BAD;
        }
    }
    return 0;
}

static int run_and_report(opened *b, const g2f_verify_values *vv, const g2f_bind_verify_opts *o,
                          const char *checkpoint, const char *label, char **json, char **text, char *msg,
                          size_t msglen) {
    g2f_error err = {0};
    const g2f_model_info *mi = g2f_model_get_info(b->model);
    char gelu_source[256], hex[65] = "";
    if (!g2f_opt_n_head_agrees("verify", mi, vv->n_head, msg, msglen)) return BAD;
    g2f_verify_params p = {0};
    p.gelu = g2f_opt_choose_gelu(o->gelu, mi, gelu_source, sizeof gelu_source);
    p.gelu_source = gelu_source;
    p.select = b->select;
    p.tol = (g2f_tol_params){vv->tol_given, vv->rtol, vv->atol, G2F_TOL_LAMBDA};
    p.accept = vv->accept;
    p.n_head = vv->n_head;
    p.n_threads = (int)vv->threads;
    if (g2f_verify_run(b->model, b->fx, &p, &b->res, &err) != G2F_OK) return bad(msg, msglen, err.msg);
    /* provenance: a recorded checkpoint digest is checked, as the CLI does */
    const char *fx_sha = g2f_fixture_meta(b->fx, "checkpoint_sha256");
    if (fx_sha && g2f_model_sha256(b->model, hex, &err) != G2F_OK) return bad(msg, msglen, err.msg);
    /* a verdict on nothing compared would be false */
    if (b->res.compared == 0 && !b->res.model.compared && !b->res.loss.checked) {
        char why[1024];
        g2f_verify_nothing_compared(b->fx, why, sizeof why);
        snprintf(msg, msglen, "verify: nothing was compared%s: %s", o->layers ? " in the selected layers" : "", why);
        return BAD;
    }
    g2f_model_info shown = *mi; /* the reports say which n_head the attention stages used */
    if (vv->n_head) {
        shown.n_head = vv->n_head;
        shown.n_head_source = "given with --n-head";
    }
    g2f_report_ctx ctx = {checkpoint, label, &shown, gelu_source, g2f_fixture_gelu_claim(b->fx),
                          g2f_fixture_dtype(b->fx), &p.tol, &b->res, 0, fx_sha, fx_sha ? hex : NULL, 0, NULL};
    if (json && !(*json = g2f_report_json(&ctx))) return bad(msg, msglen, "out of memory writing the JSON report");
    if (text && !(*text = text_of(verify_text, &ctx))) {
        free(json ? *json : NULL);
        if (json) *json = NULL;
        return bad(msg, msglen, "out of memory writing the text report");
    }
    return b->res.pass ? 0 : 1;
}

int g2f_bind_verify(const char *checkpoint, const char *fixture_path, const g2f_bind_tensor *t, size_t n,
                    const char *const *meta, size_t n_meta, const char *label, const g2f_bind_verify_opts *o,
                    char **json, char **text, char *msg, size_t msglen) {
    static const g2f_bind_verify_opts none = {0};
    if (!o) o = &none;
    if (json) *json = NULL;
    if (text) *text = NULL;
    if (msglen) msg[0] = '\0';
    g2f_verify_opts vo = {o->gelu, o->accept, o->rtol, o->atol, o->threads, o->n_head};
    g2f_verify_values vv;
    if (!g2f_opt_verify(&vo, &vv, msg, msglen)) return BAD;
    const char *shown = fixture_path ? fixture_path : label ? label : "(activations in memory)";
    opened b;
    memset(&b, 0, sizeof b);
    int rc = open_all(checkpoint, fixture_path, t, n, meta, n_meta, shown, o, &b, msg, msglen);
    if (rc == 0) rc = run_and_report(&b, &vv, o, checkpoint, shown, json, text, msg, msglen);
    opened_close(&b);
    return rc;
}

/* ---- diff ------------------------------------------------------------------------ */

typedef struct diff_args {
    const g2f_model_info *a, *b;
    const g2f_diff_result *r;
} diff_args;

static void diff_text(FILE *fp, const void *arg) {
    const diff_args *d = arg;
    g2f_report_diff_text(fp, d->a, d->b, d->r);
}

int g2f_bind_diff(const char *a, const char *b, const char *accept, const char *only, char **json, char **text,
                  char *msg, size_t msglen) {
    g2f_error err = {0};
    g2f_model *ma = NULL, *mb = NULL;
    g2f_diff_result r = {0};
    unsigned classes = 0;
    g2f_diff_scope scope = G2F_DIFF_SCOPE_ALL;
    int rc = BAD;
    if (json) *json = NULL;
    if (text) *text = NULL;
    if (msglen) msg[0] = '\0';
    if (accept && !g2f_diff_accept_parse(accept, &classes))
        return snprintf(msg, msglen, "diff: --accept '%s': unknown class (known: weights_quantized)", accept), BAD;
    if (only && !g2f_diff_scope_parse(only, &scope))
        return snprintf(msg, msglen, "diff: --only '%s': expected ffn or block", only), BAD;
    if (!a || !b) return bad(msg, msglen, "diff: two checkpoints are needed");
    if (g2f_model_open(a, NULL, &ma, &err) != G2F_OK || g2f_model_open(b, NULL, &mb, &err) != G2F_OK ||
        g2f_diff_run_scoped(ma, mb, scope, &r, &err) != G2F_OK) {
        bad(msg, msglen, err.msg);
        goto done;
    }
    g2f_diff_accept(&r, classes);
    diff_args d = {g2f_model_get_info(ma), g2f_model_get_info(mb), &r};
    if ((json && !(*json = g2f_report_diff_json(d.a, d.b, &r))) || (text && !(*text = text_of(diff_text, &d)))) {
        if (json) free(*json), *json = NULL;
        bad(msg, msglen, "out of memory writing the diff report");
        goto done;
    }
    rc = r.equivalent || r.all_accepted ? 0 : 1;
done:
    g2f_diff_result_free(&r);
    g2f_model_close(mb);
    g2f_model_close(ma);
    return rc;
}

/* ---- run ------------------------------------------------------------------------- */

/* run's option values, checked with the CLI's messages; 0 and msg when one is wrong. */
static int run_values(const g2f_bind_run_opts *o, size_t *threads, size_t *n_head, unsigned *save, char *msg,
                      size_t n) {
    char m[256];
    *threads = *n_head = 0;
    *save = 0;
    if (o->gelu && !g2f_opt_gelu_ok(o->gelu))
        return snprintf(msg, n, "run: --gelu '%s': expected tanh, erf, sigmoid, mlx_approx or f16_table", o->gelu), 0;
    if (o->threads && (!g2f_opt_size(o->threads, 1024, threads) || *threads == 0))
        return snprintf(msg, n, "run: --threads '%s': expected 1 to 1024", o->threads), 0;
    if (o->n_head && (!g2f_opt_size(o->n_head, 1 << 20, n_head) || *n_head == 0))
        return snprintf(msg, n, "run: --n-head '%s': expected a positive integer", o->n_head), 0;
    if (o->names && strcmp(o->names, "hf") && strcmp(o->names, "tl"))
        return snprintf(msg, n, "run: --names '%s': expected hf or tl", o->names), 0;
    if (o->save && !g2f_run_parse_save(o->save, save, m, sizeof m))
        return snprintf(msg, n, "run: --save: %s", m), 0;
    return 1;
}

int g2f_bind_run(const char *checkpoint, const int64_t *ids, const uint64_t *lead, size_t lead_ndim, size_t T,
                 const g2f_bind_run_opts *o, const char *out_path, char *msg, size_t msglen) {
    static const g2f_bind_run_opts none = {0};
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_path_list inputs = {0};
    size_t threads, n_head;
    unsigned save;
    char sha[65], gelu_source[256];
    if (!o) o = &none;
    if (msglen) msg[0] = '\0';
    if (!run_values(o, &threads, &n_head, &save, msg, msglen)) return BAD;
    if (!checkpoint || !out_path || !ids || (lead_ndim && !lead))
        return bad(msg, msglen, "run: a checkpoint, token ids and an output path are needed");
    if (g2f_model_open(checkpoint, o->config, &m, &err) != G2F_OK || g2f_model_files(m, &inputs, &err) != G2F_OK ||
        g2f_output_check(out_path, &inputs, &err) != G2F_OK || g2f_model_sha256(m, sha, &err) != G2F_OK)
        goto done;
    if (!g2f_opt_n_head_agrees("run", g2f_model_get_info(m), n_head, msg, msglen)) {
        g2f_path_list_free(&inputs);
        g2f_model_close(m);
        return BAD;
    }
    g2f_run_params p = {0};
    p.gelu = g2f_opt_choose_gelu(o->gelu, g2f_model_get_info(m), gelu_source, sizeof gelu_source);
    p.gelu_source = gelu_source;
    p.format = G2F_OUT_SAFETENSORS;
    p.checkpoint_label = checkpoint;
    p.checkpoint_sha256 = sha;
    p.n_threads = (int)threads;
    g2f_run_model_params mp = {&p, n_head, save, o->names && !strcmp(o->names, "tl")};
    g2f_run_result r;
    g2f_run_model(m, ids, lead, lead_ndim, T, out_path, &mp, &r, &err);
done:
    g2f_path_list_free(&inputs);
    g2f_model_close(m);
    if (err.status != G2F_OK) return bad(msg, msglen, err.msg);
    return 0;
}

const char *g2f_bind_version(void) { return GPT2FFN_VERSION; }

void g2f_bind_free(char *s) { free(s); }
