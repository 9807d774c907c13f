/* g2f_report: see g2f_report.h. */
#include "g2f_report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *claim_check(const g2f_report_ctx *c, char *buf, size_t n) {
    const char *claim = c->fixture_claim;
    if (!claim) return NULL;
    size_t tanh_n = 0, erf_n = 0, other = 0;
    for (size_t i = 0; i < c->result->n_layers; i++) {
        const g2f_layer_result *r = &c->result->layers[i];
        if (r->status == G2F_LAYER_SKIPPED) continue;
        if (r->best_gelu == G2F_BEST_TANH) tanh_n++;
        else if (r->best_gelu == G2F_BEST_ERF) erf_n++;
        else other++;
    }
    if (strcmp(claim, "tanh") != 0 && strcmp(claim, "erf") != 0)
        snprintf(buf, n, "fixture metadata claims gelu=\"%.20s\", which is neither tanh nor erf", claim);
    else if ((!strcmp(claim, "tanh") && erf_n) || (!strcmp(claim, "erf") && tanh_n))
        snprintf(buf, n, "fixture metadata claims gelu=%s, but the data of %zu layer(s) matches %s", claim,
                 !strcmp(claim, "tanh") ? erf_n : tanh_n, !strcmp(claim, "tanh") ? "erf" : "tanh");
    else if (tanh_n + erf_n)
        snprintf(buf, n, "fixture metadata claims gelu=%s; the data agrees", claim);
    else
        snprintf(buf, n, "fixture metadata claims gelu=%s; the data cannot confirm it", claim);
    return buf;
}

/* The layer's codes with their details; alternatives (undetermined) are
 * separated by " | ". */
static void diag_codes(const g2f_layer_result *r, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    if (r->diag.n_causes) {
        for (size_t i = 0; i < r->diag.n_causes && used < n; i++) {
            char one[128];
            g2f_cause_codes(&r->diag.causes[i], one, sizeof one);
            used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " | " : "", one);
        }
        return;
    }
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++)
        if (r->diagnosis & (1u << d))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", g2f_diag_name(d));
    if (!used) snprintf(buf, n, "-");
}

/* The checkpoint's description, shared by every report. */
static cJSON *model_json(const g2f_model_info *mi) {
    cJSON *model = cJSON_CreateObject();
    if (!model) return NULL;
    cJSON_AddStringToObject(model, "path", mi->path);
    cJSON_AddStringToObject(model, "format", mi->format);
    cJSON_AddStringToObject(model, "naming", mi->naming);
    cJSON_AddStringToObject(model, "prefix", mi->prefix);
    cJSON_AddStringToObject(model, "dtype", g2f_dtype_name(mi->dtype));
    cJSON_AddStringToObject(model, "layout", mi->layout == G2F_LAYOUT_LINEAR ? "linear" : "conv1d");
    cJSON_AddStringToObject(model, "layout_source", mi->layout_source);
    cJSON_AddNumberToObject(model, "n_layer", (double)mi->n_layer);
    cJSON_AddNumberToObject(model, "n_embd", (double)mi->n_embd);
    cJSON_AddNumberToObject(model, "n_inner", (double)mi->n_inner);
    cJSON_AddBoolToObject(model, "fc_bias", mi->has_fc_bias);
    cJSON_AddBoolToObject(model, "proj_bias", mi->has_proj_bias);
    if (mi->config_path) cJSON_AddStringToObject(model, "config", mi->config_path);
    else cJSON_AddNullToObject(model, "config");
    if (mi->config_activation) cJSON_AddStringToObject(model, "activation_function", mi->config_activation);
    return model;
}

static void model_text(FILE *fp, const char *label, const g2f_model_info *mi) {
    fprintf(fp, "%-11s %s (%s, %s, %zu layers, n_embd %zu, n_inner %zu, %s, %s)\n", label, mi->path, mi->format,
            g2f_dtype_name(mi->dtype), mi->n_layer, mi->n_embd, mi->n_inner, g2f_layout_name(mi->layout),
            mi->has_fc_bias && mi->has_proj_bias ? "with biases"
            : (mi->has_fc_bias || mi->has_proj_bias) ? "one bias missing"
                                                     : "no biases");
    fprintf(fp, "naming      %s%s%s%s\n", mi->naming, *mi->prefix ? " under '" : "", mi->prefix,
            *mi->prefix ? "'" : "");
    fprintf(fp, "layout      %s\n", mi->layout_source);
    if (mi->config_path)
        fprintf(fp, "config      %s%s%s%s\n", mi->config_path, mi->config_activation ? " (activation_function \"" : "",
                mi->config_activation ? mi->config_activation : "", mi->config_activation ? "\")" : "");
    else
        fprintf(fp, "config      none beside the checkpoint\n");
}

void g2f_report_text(FILE *fp, const g2f_report_ctx *c) {
    const g2f_model_info *mi = c->model;
    const g2f_verify_result *res = c->result;
    model_text(fp, "checkpoint", mi);
    fprintf(fp, "fixtures    %s (%s)\n", c->fixtures_arg, g2f_dtype_name(c->fixture_dtype));
    fprintf(fp, "gelu        %s (%s)\n", g2f_gelu_name(res->gelu), c->gelu_source);
    if (c->tol->user)
        fprintf(fp, "tolerance   |err| <= atol + rtol |expected| with atol %g, rtol %g (from the command line)\n",
                c->tol->atol, c->tol->rtol);
    else
        fprintf(fp, "tolerance   per element, %g sigma of fp32 rounding plus the fixture dtype's (README: Tolerance)\n",
                c->tol->lambda > 0 ? c->tol->lambda : G2F_TOL_LAMBDA);
    char note[256];
    if (claim_check(c, note, sizeof note)) fprintf(fp, "note        %s\n", note);
    fprintf(fp, "\n");
    if (res->first_fail >= 0)
        fprintf(fp, "first divergence at layer %ld: %s\n\n", res->first_fail,
                res->layers[res->first_fail].explanation);
    else if (res->pass)
        fprintf(fp, "all %zu compared layers match the reference\n\n", res->compared);

    fprintf(fp, "%5s %7s %11s %11s %9s %17s %10s %8s %7s %17s  %s\n", "layer", "tokens", "max_abs_err", "max_rel_err",
            "margin", "mismatched/total", "cosine", "sqnr_db", "verdict", "gelu", "diagnosis");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED) {
            /* a run of skipped layers takes one row */
            size_t j = i;
            while (j + 1 < res->n_layers && res->layers[j + 1].status == G2F_LAYER_SKIPPED) j++;
            char span[48];
            if (j > i) snprintf(span, sizeof span, "%zu-%zu", i, j);
            else snprintf(span, sizeof span, "%zu", i);
            fprintf(fp, "%5s %7s %11s %11s %9s %17s %10s %8s %7s %17s  %s\n", span, "-", "-", "-", "-", "-", "-", "-",
                    "skipped", "-", "-");
            i = j;
            continue;
        }
        size_t mism = r->out.mismatched + (r->has_pre ? r->pre.mismatched : 0) + (r->has_act ? r->act.mismatched : 0);
        size_t total = r->out.total + (r->has_pre ? r->pre.total : 0) + (r->has_act ? r->act.total : 0);
        double margin = r->out.margin;
        if (r->has_pre && r->pre.margin > margin) margin = r->pre.margin;
        if (r->has_act && r->act.margin > margin) margin = r->act.margin;
        char frac[40], codes[512];
        snprintf(frac, sizeof frac, "%zu/%zu", mism, total);
        diag_codes(r, codes, sizeof codes);
        const char *on = !c->color ? "" : r->status == G2F_LAYER_PASS ? "\033[32m" : "\033[1;31m";
        fprintf(fp, "%5zu %7zu %11.3e %11.3e %9.3g %17s %10.8f %8.1f %s%7s%s %17s  %s\n", r->layer, r->tokens,
                r->out.max_abs, r->out.max_rel, margin, frac, r->out.cosine, r->out.sqnr_db, on,
                r->status == G2F_LAYER_PASS ? "PASS" : "FAIL", c->color ? "\033[0m" : "", g2f_best_gelu_name(r->best_gelu),
                codes);
    }
    fprintf(fp, "\nworst element per layer (token, channel: expected / computed, tolerance):\n");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED) continue;
        fprintf(fp, "  layer %zu: out[%zu, %zu] %.9g / %.9g, tol %.3g\n", r->layer, r->out.worst / c->model->n_embd,
                r->out.worst % c->model->n_embd, r->out.worst_expected, r->out.worst_computed, r->out.worst_tol);
    }
    fprintf(fp, "\n");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_FAIL && (long)i != res->first_fail) fprintf(fp, "  %s\n", r->explanation);
    }
    fprintf(fp, "result: %s%s%s (%zu compared, %zu failed, %zu skipped)\n",
            !c->color ? "" : res->pass ? "\033[32m" : "\033[1;31m", res->pass ? "PASS" : "FAIL", c->color ? "\033[0m" : "",
            res->compared, res->failed, res->n_layers - res->compared);
}

static cJSON *cmp_json(const g2f_cmp *c, size_t width) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "max_abs_err", c->max_abs);
    cJSON_AddNumberToObject(o, "max_rel_err", c->max_rel);
    cJSON_AddNumberToObject(o, "margin", c->margin);
    cJSON_AddNumberToObject(o, "mismatched", (double)c->mismatched);
    cJSON_AddNumberToObject(o, "total", (double)c->total);
    cJSON_AddNumberToObject(o, "nonfinite", (double)c->nonfinite);
    cJSON_AddNumberToObject(o, "cosine", c->cosine);
    if (isfinite(c->sqnr_db)) cJSON_AddNumberToObject(o, "sqnr_db", c->sqnr_db);
    else cJSON_AddNullToObject(o, "sqnr_db");
    cJSON *w = cJSON_AddObjectToObject(o, "worst");
    if (w) {
        cJSON_AddNumberToObject(w, "token", (double)(c->worst / width));
        cJSON_AddNumberToObject(w, "index", (double)(c->worst % width));
        cJSON_AddNumberToObject(w, "expected", c->worst_expected);
        cJSON_AddNumberToObject(w, "computed", c->worst_computed);
        cJSON_AddNumberToObject(w, "tolerance", c->worst_tol);
    }
    return o;
}

char *g2f_report_json(const g2f_report_ctx *c) {
    const g2f_model_info *mi = c->model;
    const g2f_verify_result *res = c->result;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "checkpoint", c->checkpoint_arg);
    cJSON_AddStringToObject(root, "fixtures", c->fixtures_arg);
    cJSON_AddStringToObject(root, "gelu", g2f_gelu_name(res->gelu));
    cJSON_AddStringToObject(root, "gelu_source", c->gelu_source);
    cJSON_AddStringToObject(root, "status", res->pass ? "pass" : "fail");
    cJSON_AddItemToObject(root, "model", model_json(mi));
    cJSON *tol = cJSON_AddObjectToObject(root, "tolerance");
    if (tol) {
        cJSON_AddStringToObject(tol, "mode", c->tol->user ? "user" : "derived");
        if (c->tol->user) {
            cJSON_AddNumberToObject(tol, "rtol", c->tol->rtol);
            cJSON_AddNumberToObject(tol, "atol", c->tol->atol);
        } else {
            cJSON_AddNumberToObject(tol, "sigmas", c->tol->lambda > 0 ? c->tol->lambda : G2F_TOL_LAMBDA);
        }
    }
    cJSON_AddStringToObject(root, "fixture_dtype", g2f_dtype_name(c->fixture_dtype));
    if (c->fixture_claim) cJSON_AddStringToObject(root, "fixture_gelu_claim", c->fixture_claim);
    else cJSON_AddNullToObject(root, "fixture_gelu_claim");
    if (res->first_fail >= 0) cJSON_AddNumberToObject(root, "first_divergence", (double)res->first_fail);
    else cJSON_AddNullToObject(root, "first_divergence");
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (size_t i = 0; layers && i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        cJSON *l = cJSON_CreateObject();
        if (!l) break;
        cJSON_AddItemToArray(layers, l);
        cJSON_AddNumberToObject(l, "layer", (double)r->layer);
        cJSON_AddStringToObject(l, "status", g2f_layer_status_name(r->status));
        cJSON_AddStringToObject(l, "explanation", r->explanation);
        if (r->status == G2F_LAYER_SKIPPED) continue;
        cJSON_AddNumberToObject(l, "tokens", (double)r->tokens);
        cJSON_AddNumberToObject(l, "max_abs_err", r->out.max_abs);
        cJSON_AddNumberToObject(l, "max_rel_err", r->out.max_rel);
        size_t mism = r->out.mismatched + (r->has_pre ? r->pre.mismatched : 0) + (r->has_act ? r->act.mismatched : 0);
        size_t total = r->out.total + (r->has_pre ? r->pre.total : 0) + (r->has_act ? r->act.total : 0);
        cJSON_AddNumberToObject(l, "mismatched", (double)mism);
        cJSON_AddNumberToObject(l, "total", (double)total);
        double margin = r->out.margin;
        if (r->has_pre && r->pre.margin > margin) margin = r->pre.margin;
        if (r->has_act && r->act.margin > margin) margin = r->act.margin;
        cJSON_AddNumberToObject(l, "margin", margin);
        cJSON_AddStringToObject(l, "best_gelu", g2f_best_gelu_name(r->best_gelu));
        cJSON_AddNumberToObject(l, "gelu_separation", r->gelu_separation);
        cJSON *codes = cJSON_AddArrayToObject(l, "diagnosis");
        cJSON *causes = cJSON_AddArrayToObject(l, "causes");
        for (size_t k = 0; codes && causes && k < r->diag.n_causes; k++) {
            char one[128];
            g2f_cause_codes(&r->diag.causes[k], one, sizeof one);
            cJSON *cause = cJSON_CreateObject();
            cJSON *list = cJSON_AddArrayToObject(cause, "codes");
            for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                cJSON_AddItemToArray(list, cJSON_CreateString(tok));
                cJSON_AddItemToArray(codes, cJSON_CreateString(tok));
            }
            cJSON_AddNumberToObject(cause, "margin", r->diag.causes[k].margin);
            cJSON_AddItemToArray(causes, cause);
        }
        for (int d = G2F_DIAG_NONFINITE; codes && d < G2F_DIAG_COUNT; d++)
            if (r->diagnosis & (1u << d)) cJSON_AddItemToArray(codes, cJSON_CreateString(g2f_diag_name(d)));
        cJSON_AddBoolToObject(l, "undetermined", r->diag.undetermined);
        if (r->diagnosis & (1u << G2F_DIAG_UNEXPLAINED)) cJSON_AddStringToObject(l, "where", r->diag.where);
        if (r->status == G2F_LAYER_FAIL && !(r->diagnosis & (1u << G2F_DIAG_NONFINITE)))
            cJSON_AddNumberToObject(l, "hypotheses_tried", (double)r->diag.hypotheses_tried);
        cJSON *cmp = cJSON_AddObjectToObject(l, "compared");
        if (cmp) {
            cJSON_AddItemToObject(cmp, "out", cmp_json(&r->out, mi->n_embd));
            cJSON_AddItemToObject(cmp, "out_other_gelu", cmp_json(&r->out_other, mi->n_embd));
            if (r->has_pre) cJSON_AddItemToObject(cmp, "pre", cmp_json(&r->pre, mi->n_inner));
            if (r->has_act) cJSON_AddItemToObject(cmp, "act", cmp_json(&r->act, mi->n_inner));
        }
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

void g2f_report_inspect_text(FILE *fp, const g2f_model_info *mi, const g2f_inspect_result *r) {
    model_text(fp, "checkpoint", mi);
    fprintf(fp, "ffn params  %zu per layer, %zu in all\n\n", r->ffn_params, r->ffn_params * r->n_layers);
    fprintf(fp, "%5s %-14s %-5s %-14s %11s %11s %11s %11s %5s %5s\n", "layer", "tensor", "dtype", "shape", "min", "max",
            "mean", "std", "nan", "inf");
    for (size_t L = 0; L < r->n_layers; L++) {
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            const g2f_tensor *t = r->layers[L].tensor[k];
            const g2f_stats *st = &r->layers[L].stats[k];
            if (!t) {
                fprintf(fp, "%5zu %-14s (absent)\n", L, g2f_diff_tensor_name(k));
                continue;
            }
            char sh[64];
            g2f_shape_format(t, sh, sizeof sh);
            fprintf(fp, "%5zu %-14s %-5s %-14s %11.4g %11.4g %11.4g %11.4g %5llu %5llu\n", L, g2f_diff_tensor_name(k),
                    g2f_tensor_type_name(t), sh, st->min, st->max, st->mean, st->std, (unsigned long long)st->nan,
                    (unsigned long long)st->inf);
        }
    }
}

static cJSON *shape_json(const g2f_tensor *t) {
    cJSON *a = cJSON_CreateArray();
    for (size_t d = 0; a && d < t->ndim; d++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)t->shape[d]));
    return a;
}

char *g2f_report_inspect_json(const char *checkpoint_arg, const g2f_model_info *mi, const g2f_inspect_result *r) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "checkpoint", checkpoint_arg);
    cJSON_AddItemToObject(root, "model", model_json(mi));
    cJSON_AddNumberToObject(root, "ffn_params_per_layer", (double)r->ffn_params);
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (size_t L = 0; layers && L < r->n_layers; L++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddItemToArray(layers, l);
        cJSON_AddNumberToObject(l, "layer", (double)L);
        cJSON *ts = cJSON_AddArrayToObject(l, "tensors");
        for (int k = 0; ts && k < G2F_FFN_TENSORS; k++) {
            const g2f_tensor *t = r->layers[L].tensor[k];
            if (!t) continue;
            const g2f_stats *st = &r->layers[L].stats[k];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(ts, o);
            cJSON_AddStringToObject(o, "role", g2f_diff_tensor_name(k));
            cJSON_AddStringToObject(o, "name", t->name);
            cJSON_AddStringToObject(o, "dtype", g2f_tensor_type_name(t));
            cJSON_AddItemToObject(o, "shape", shape_json(t));
            cJSON_AddNumberToObject(o, "min", st->min);
            cJSON_AddNumberToObject(o, "max", st->max);
            cJSON_AddNumberToObject(o, "mean", st->mean);
            cJSON_AddNumberToObject(o, "std", st->std);
            cJSON_AddNumberToObject(o, "nan", (double)st->nan);
            cJSON_AddNumberToObject(o, "inf", (double)st->inf);
        }
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

static void diff_verdict(const g2f_diff_tensor *t, char *buf, size_t n) {
    if (t->kind == G2F_DIFF_FROM_LAYER) snprintf(buf, n, "from_layer:%ld", t->from_layer);
    else if (t->kind == G2F_DIFF_QUANTIZED) snprintf(buf, n, "quantized:%s", g2f_dtype_name(t->quant));
    else if (t->kind == G2F_DIFF_SCALED) snprintf(buf, n, "scaled:%.6g", t->scale);
    else snprintf(buf, n, "%s", g2f_diff_kind_name(t->kind));
}

void g2f_report_diff_text(FILE *fp, const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r) {
    model_text(fp, "A", a);
    model_text(fp, "B", b);
    fprintf(fp, "\n");
    if (!r->same_sizes) {
        fprintf(fp, "%s\nresult: DIFFERENT\n", r->sizes_msg);
        return;
    }
    fprintf(fp, "%5s %-14s %11s %11s  %s\n", "layer", "tensor", "max_abs", "max_rel", "verdict");
    for (size_t L = 0; L < r->n_layers; L++)
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            const g2f_diff_tensor *t = &r->tensors[L][k];
            char v[64], q[96] = "";
            diff_verdict(t, v, sizeof v);
            if (t->kind == G2F_DIFF_QUANTIZED)
                snprintf(q, sizeof q, " (%.2f steps)%s", t->max_steps, t->accepted ? ", accepted" : "");
            fprintf(fp, "%5zu %-14s %11.3e %11.3e  %s%s%s\n", L, g2f_diff_tensor_name(k), t->max_abs, t->max_rel, v, q,
                    t->equivalent || t->accepted ? "" : "  <-");
        }
    size_t quantized = 0, unaccepted = 0;
    for (size_t L = 0; L < r->n_layers; L++)
        for (int k = 0; k < G2F_FFN_TENSORS; k++) {
            quantized += r->tensors[L][k].kind == G2F_DIFF_QUANTIZED;
            unaccepted += r->tensors[L][k].kind == G2F_DIFF_QUANTIZED && !r->tensors[L][k].accepted;
        }
    fprintf(fp, "\nresult: %s (%zu of %zu tensors differ; rounding allowed: %.3g relative)\n",
            r->equivalent ? "EQUIVALENT" : r->all_accepted ? "ACCEPTED" : "DIFFERENT", r->differing,
            r->n_layers * G2F_FFN_TENSORS, r->roundoff);
    if (quantized)
        fprintf(fp, "%zu tensors are quantized weights within the bound of ggml's reference rounding (%s)\n", quantized,
                unaccepted ? "not equivalent; --accept weights_quantized accepts them"
                           : "accepted as weights_quantized");
}

char *g2f_report_diff_json(const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddItemToObject(root, "a", model_json(a));
    cJSON_AddItemToObject(root, "b", model_json(b));
    cJSON_AddStringToObject(root, "status", r->equivalent ? "equivalent" : r->all_accepted ? "accepted" : "different");
    cJSON *acc = cJSON_AddArrayToObject(root, "accept");
    for (unsigned c = 1; acc && c; c <<= 1)
        if ((r->accept & c) && g2f_diff_accept_name(c))
            cJSON_AddItemToArray(acc, cJSON_CreateString(g2f_diff_accept_name(c)));
    if (!r->same_sizes) cJSON_AddStringToObject(root, "sizes", r->sizes_msg);
    cJSON_AddNumberToObject(root, "roundoff", r->roundoff);
    cJSON_AddNumberToObject(root, "differing", (double)r->differing);
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (size_t L = 0; layers && L < r->n_layers; L++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddItemToArray(layers, l);
        cJSON_AddNumberToObject(l, "layer", (double)L);
        cJSON *ts = cJSON_AddArrayToObject(l, "tensors");
        for (int k = 0; ts && k < G2F_FFN_TENSORS; k++) {
            const g2f_diff_tensor *t = &r->tensors[L][k];
            char v[64];
            diff_verdict(t, v, sizeof v);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(ts, o);
            cJSON_AddStringToObject(o, "tensor", g2f_diff_tensor_name(k));
            cJSON_AddStringToObject(o, "verdict", v);
            cJSON_AddBoolToObject(o, "equivalent", t->equivalent);
            if (t->accept_class) {
                cJSON_AddStringToObject(o, "accept_class", g2f_diff_accept_name(t->accept_class));
            }
            if (t->accepted) cJSON_AddStringToObject(o, "accepted_as", g2f_diff_accept_name(t->accept_class));
            else cJSON_AddNullToObject(o, "accepted_as");
            cJSON_AddNumberToObject(o, "max_abs_err", isfinite(t->max_abs) ? t->max_abs : -1);
            cJSON_AddNumberToObject(o, "max_rel_err", isfinite(t->max_rel) ? t->max_rel : -1);
            if (t->kind == G2F_DIFF_QUANTIZED) {
                cJSON *q = cJSON_AddObjectToObject(o, "quantized");
                cJSON_AddStringToObject(q, "type", g2f_dtype_name(t->quant));
                cJSON_AddNumberToObject(q, "max_err_steps", isfinite(t->max_steps) ? t->max_steps : -1);
                cJSON_AddNumberToObject(q, "max_err_bound_ratio", t->bound_ratio);
            }
        }
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

g2f_status g2f_write_file_atomic(const char *path, const char *text, g2f_error *err) {
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    snprintf(tmp, n + 16, "%s.tmp%ld", path, (long)getpid() % 100000);
    FILE *fp = fopen(tmp, "w");
    if (!fp) {
        g2f_status s = g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return s;
    }
    size_t len = strlen(text);
    int ok = fwrite(text, 1, len, fp) == len;
    ok &= fputc('\n', fp) != EOF;
    ok &= fclose(fp) == 0;
    if (!ok || rename(tmp, path) != 0) {
        g2f_status s = g2f_error_set(err, G2F_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return s;
    }
    free(tmp);
    return G2F_OK;
}
