/* g2f_genreport: a generation's report; see g2f_genreport.h. */
#include "g2f_genreport.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "g2f_html.h"
#include "g2f_text.h"

/* A token as reports show it: "' the' (262)" with a tokenizer, else "262". */
static void token(const g2f_genreport_ctx *c, int64_t id, char *buf, size_t n) {
    if (!c->tokenizer) {
        snprintf(buf, n, "%lld", (long long)id);
        return;
    }
    char t[80];
    g2f_tokenizer_token_text(c->tokenizer, id, t, sizeof t);
    snprintf(buf, n, "%s (%lld)", t, (long long)id);
}

int g2f_genreport_pass(const g2f_genreport_ctx *c) {
    return c->gen->pass && (!c->teacher || c->teacher->result->pass);
}

/* The causes of the first divergence: "cache_position_reset (positions
 * restarted at 0 for each decode step)", alternatives " | ", or why none. */
static void causes_text(const g2f_gen_result *g, char *buf, size_t n) {
    if (!g->n_causes) {
        if (g->nonfinite) snprintf(buf, n, "nonfinite (the port's logits hold NaN or Inf)");
        else if (g->first.port_top >= 0)
            snprintf(buf, n, "not_greedy (the port's token is not the largest of its own logits: a choice no "
                             "rounding makes, whatever the model computes)");
        else if (g->hypotheses_tried)
            snprintf(buf, n, "unexplained (none of the %zu port bugs tried reproduces it)", g->hypotheses_tried);
        else snprintf(buf, n, "not diagnosed");
        return;
    }
    char codes[400], words[300];
    g2f_causes_join(g->causes, g->n_causes, codes, sizeof codes);
    g2f_cause_words(&g->causes[0], words, sizeof words);
    /* tokens alone are a few bits at each divergence (a near-tie flipped either way): what reproduces them
     * is consistent with the port, not shown to be its bug (a right-padded batch matched ln_eps:0.001) */
    snprintf(buf, n, "%s%s (%s%s)", g->has_logits ? "" : "consistent with ", codes, words,
             !g->has_logits ? "; token ids only: these reproduce the port's tokens, which a bug not in the list may do "
                              "too; record step_logits to tell"
             : g->n_causes > 1 ? "; the steps cannot tell these apart"
                               : "");
}

/* Why step s is a divergence: the token beyond the tie window, its logits beyond the tolerance. */
static void why_text(const g2f_gen_step *s, char *buf, size_t n) {
    int used = 0;
    if (s->ours != s->port)
        used = snprintf(buf, n, "gap %.3g %s the tie window %.3g", s->gap, s->gap > s->window ? "beyond" : "within",
                        s->window);
    else used = snprintf(buf, n, "the same token");
    if (s->logits_checked && !(s->logits_margin <= 1) && used >= 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ", its logits beyond the tolerance (margin %.3g)",
                         s->logits_margin);
    if (s->port_top >= 0 && used >= 0 && (size_t)used < n)
        snprintf(buf + used, n - (size_t)used, ", but below its own logit of %lld", (long long)s->port_top);
}

void g2f_genreport_verdict(const g2f_genreport_ctx *c, char *buf, size_t n) {
    const g2f_gen_result *g = c->gen;
    if (!g->diverged) {
        int used = snprintf(buf, n, "the port's generation is GPT-2's greedy one: the same token at %zu of %zu compared "
                            "step%s", g->same, g->compared, g->compared == 1 ? "" : "s");
        if (g->n_flips && used >= 0 && (size_t)used < n)
            used += snprintf(buf + used, n - (size_t)used, ", %zu tie flip%s (expected: the two tokens' logits within "
                             "their tolerance)", g->n_flips, g->n_flips == 1 ? "" : "s");
        if (g->logits_steps && used >= 0 && (size_t)used < n)
            snprintf(buf + used, n - (size_t)used, "; its logits within the tolerance at every step");
        return;
    }
    char ref[128], port[128], why[200], causes[800];
    token(c, g->first.ours, ref, sizeof ref);
    token(c, g->first.port, port, sizeof port);
    why_text(&g->first, why, sizeof why);
    causes_text(g, causes, sizeof causes);
    snprintf(buf, n, "first divergence at sequence %zu, step %zu: reference %s, port %s (%s): %s", g->first.seq,
             g->first.step, ref, port, why, causes);
}

void g2f_genreport_counts(const g2f_genreport_ctx *c, char *buf, size_t n) {
    const g2f_gen_result *g = c->gen;
    int used = snprintf(buf, n, "%zu step%s compared, %zu the same token, %zu tie flip%s, %zu diverged", g->compared,
                        g->compared == 1 ? "" : "s", g->same, g->n_flips, g->n_flips == 1 ? "" : "s",
                        g->diverged_steps);
    if (g->rows_diverged && g->n_seq > 1 && used >= 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, " (in %zu of %zu rows)", g->rows_diverged, g->n_seq);
    if (g->after_eos && used >= 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, "; %zu after eos not compared", g->after_eos);
    size_t total = 0;
    if (c->fixture) g2f_fixture_n_unknown(c->fixture, &total);
    if (total && used >= 0 && (size_t)used < n) /* a misspelt step_logits must not pass unseen */
        snprintf(buf + used, n - (size_t)used, "; %zu fixture tensor%s not compared (see the notes)", total,
                 total == 1 ? "" : "s");
}


/* "generation of 20 steps after 2 prompts of 5 tokens; step logits F32; ..." */
static void fixture_text(const g2f_gen_result *g, char *buf, size_t n) {
    char plen[48], mask[64] = "", eos[48] = "";
    if (g->prompt_min == g->prompt_max) snprintf(plen, sizeof plen, "%zu", g->prompt_min);
    else snprintf(plen, sizeof plen, "%zu to %zu", g->prompt_min, g->prompt_max);
    if (g->has_mask) snprintf(mask, sizeof mask, "; attention_mask: %zu of %zu rows padded", g->padded_rows, g->n_seq);
    if (g->has_eos) snprintf(eos, sizeof eos, "; eos_token_id %lld", (long long)g->eos);
    snprintf(buf, n, "a generation of %zu step%s after %zu prompt%s of %s tokens; step logits: %s%s%s", g->steps,
             g->steps == 1 ? "" : "s", g->n_seq, g->n_seq == 1 ? "" : "s", plen,
             g->has_logits ? g2f_dtype_name(g->logits_dtype) : "none (tokens only)", mask, eos);
}

/* A flip's or the divergence's line: "sequence 0, step 12: reference X, port Y (2nd of ours): gap G ..." */
static void step_line(const g2f_genreport_ctx *c, const g2f_gen_step *s, char *buf, size_t n) {
    char ref[128], port[128];
    token(c, s->ours, ref, sizeof ref);
    token(c, s->port, port, sizeof port);
    int used = snprintf(buf, n, "sequence %zu, step %zu: reference %s, port %s (rank %zu of ours): gap %.3g, tie "
                        "window %.3g", s->seq, s->step, ref, port, s->rank + 1, s->gap, s->window);
    if (s->logits_checked && used >= 0 && (size_t)used < n)
        snprintf(buf + used, n - (size_t)used, "; logits margin %.3g", s->logits_margin);
}

void g2f_genreport_text(FILE *fp, const g2f_genreport_ctx *c) {
    const g2f_gen_result *g = c->gen;
    char line[2048], e1[4 * sizeof line];
    if (c->teacher) {
        g2f_report_text(fp, c->teacher);
        fprintf(fp, "\n");
    }
    fprintf(fp, "checkpoint  %s (%s)\n", g2f_escape(c->model->path, e1, sizeof e1), c->model->format);
    fixture_text(g, line, sizeof line);
    fprintf(fp, "generation  %s: %s\n", g2f_escape(c->fixture_arg, e1, sizeof e1), line);
    fprintf(fp, "gelu        %s (%s)\n", g2f_gelu_name(c->gelu), g2f_escape(c->gelu_source, e1, sizeof e1));
    fprintf(fp, "tolerance   per logit, %g sigma of fp32 rounding (the full recompute's variance), the port's logits "
                "also within their stored dtype's rounding; another token within the two logits' fp32 tolerances "
                "is a tie flip\n", c->lambda);
    size_t total = 0, shown = c->fixture ? g2f_fixture_n_unknown(c->fixture, &total) : 0;
    for (size_t i = 0; i < shown; i++) {
        g2f_report_unknown_line(g2f_fixture_unknown_at(c->fixture, i), line, sizeof line);
        fprintf(fp, "note        %s\n", g2f_escape(line, e1, sizeof e1));
    }
    if (total > shown) fprintf(fp, "note        and %zu more tensors not compared\n", total - shown);
    if (c->teacher_note) fprintf(fp, "note        %s\n", g2f_escape(c->teacher_note, e1, sizeof e1));
    for (size_t i = 0; i < g->n_flips && i < G2F_GEN_MAX_FLIPS; i++) {
        step_line(c, &g->flips[i], line, sizeof line);
        fprintf(fp, "tie flip    %s (tie_flip: expected)\n", g2f_escape(line, e1, sizeof e1));
    }
    if (g->n_flips > G2F_GEN_MAX_FLIPS) fprintf(fp, "tie flip    ... (%zu in all)\n", g->n_flips);
    if (g->logits_steps)
        fprintf(fp, "logits      %zu step%s compared, %zu beyond the tolerance, largest margin %.3g\n", g->logits_steps,
                g->logits_steps == 1 ? "" : "s", g->logits_failed, g->logits_margin);
    if (g->diverged) {
        step_line(c, &g->first, line, sizeof line);
        fprintf(fp, "divergence  %s\n", g2f_escape(line, e1, sizeof e1));
        if (g->later) fprintf(fp, "            %zu later step%s of the row diverge too\n", g->later, g->later == 1 ? "" : "s");
        causes_text(g, line, sizeof line);
        fprintf(fp, "diagnosis   %s; %zu hypotheses tried\n", g2f_escape(line, e1, sizeof e1), g->hypotheses_tried);
    }
    g2f_genreport_verdict(c, line, sizeof line);
    fprintf(fp, "\n%s\n", g2f_escape(line, e1, sizeof e1));
    g2f_genreport_counts(c, line, sizeof line);
    fprintf(fp, "result: %s (%s%s)\n", g2f_genreport_pass(c) ? "PASS" : "FAIL", line,
            c->teacher ? (c->teacher->result->pass ? "; teacher-forced stages pass" : "; teacher-forced stages fail")
                       : "");
}

/* ---- JSON --------------------------------------------------------------------- */

/* cJSON with a sticky failure: any NULL along the way makes the report NULL. */
typedef struct jb {
    int failed;
} jb;

static cJSON *jc(jb *b, cJSON *x) {
    if (!x) b->failed = 1;
    return x;
}
static void jnum(jb *b, cJSON *o, const char *k, double v) {
    jc(b, o ? (isfinite(v) ? cJSON_AddNumberToObject(o, k, v) : cJSON_AddNullToObject(o, k)) : NULL);
}
/* s from a file or the command line: made UTF-8 first. */
static void jstr(jb *b, cJSON *o, const char *k, const char *s) {
    char *u = g2f_utf8_repair_dup(s ? s : "");
    jc(b, o && u ? cJSON_AddStringToObject(o, k, u) : NULL);
    free(u);
}

static void jtoken(jb *b, const g2f_genreport_ctx *c, cJSON *o, const char *k, int64_t id) {
    cJSON *t = jc(b, o ? cJSON_AddObjectToObject(o, k) : NULL);
    jnum(b, t, "id", (double)id);
    if (!c->tokenizer) return;
    char text[80];
    g2f_tokenizer_token_text(c->tokenizer, id, text, sizeof text);
    jstr(b, t, "text", text);
}

static cJSON *jstep(jb *b, const g2f_genreport_ctx *c, const g2f_gen_step *s) {
    cJSON *o = jc(b, cJSON_CreateObject());
    jnum(b, o, "sequence", (double)s->seq);
    jnum(b, o, "step", (double)s->step);
    jtoken(b, c, o, "reference", s->ours);
    jtoken(b, c, o, "port", s->port);
    jnum(b, o, "gap", s->gap);
    jnum(b, o, "window", s->window);
    jnum(b, o, "rank", (double)(s->rank + 1));
    if (s->logits_checked) jnum(b, o, "logits_margin", s->logits_margin);
    else jc(b, o ? cJSON_AddNullToObject(o, "logits_margin") : NULL);
    if (s->port_top >= 0) jtoken(b, c, o, "port_own_top", s->port_top);
    else jc(b, o ? cJSON_AddNullToObject(o, "port_own_top") : NULL);
    return o;
}

static void jarr_add(jb *b, cJSON *a, cJSON *x) {
    if (!a || !x || !cJSON_AddItemToArray(a, x)) {
        cJSON_Delete(x);
        b->failed = 1;
    }
}

static void jdivergence(jb *b, const g2f_genreport_ctx *c, cJSON *root) {
    const g2f_gen_result *g = c->gen;
    if (!g->diverged) {
        jc(b, cJSON_AddNullToObject(root, "divergence"));
        return;
    }
    cJSON *d = jstep(b, c, &g->first);
    if (!d || !cJSON_AddItemToObject(root, "divergence", d)) {
        cJSON_Delete(d);
        b->failed = 1;
        return;
    }
    jnum(b, d, "rows_diverged", (double)g->rows_diverged);
    jnum(b, d, "later_steps", (double)g->later);
    jnum(b, d, "hypotheses_tried", (double)g->hypotheses_tried);
    /* as verify's layers: diagnosis every code of every cause, each cause its codes as a list */
    cJSON *codes = jc(b, cJSON_AddArrayToObject(d, "diagnosis")), *causes = jc(b, cJSON_AddArrayToObject(d, "causes"));
    if (!g->n_causes)
        jarr_add(b, codes, cJSON_CreateString(g->nonfinite              ? "nonfinite"
                                              : g->first.port_top >= 0 ? "not_greedy"
                                                                       : "unexplained"));
    for (size_t i = 0; i < g->n_causes; i++) {
        char one[200], words[300];
        g2f_cause_codes(&g->causes[i], one, sizeof one);
        g2f_cause_words(&g->causes[i], words, sizeof words);
        cJSON *k = jc(b, cJSON_CreateObject()), *list = jc(b, k ? cJSON_AddArrayToObject(k, "codes") : NULL);
        for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            jarr_add(b, list, cJSON_CreateString(tok));
            jarr_add(b, codes, cJSON_CreateString(tok));
        }
        jstr(b, k, "words", words);
        jnum(b, k, "margin", g->causes[i].margin);
        jarr_add(b, causes, k);
    }
}

static void jsummary(jb *b, const g2f_genreport_ctx *c, cJSON *root) {
    const g2f_gen_result *g = c->gen;
    jnum(b, root, "sequences", (double)g->n_seq);
    jnum(b, root, "steps", (double)g->steps);
    jnum(b, root, "vocab", (double)g->vocab);
    jnum(b, root, "prompt_min", (double)g->prompt_min);
    jnum(b, root, "prompt_max", (double)g->prompt_max);
    jnum(b, root, "padded_rows", (double)g->padded_rows);
    if (g->has_logits) jstr(b, root, "step_logits", g2f_dtype_name(g->logits_dtype));
    else jc(b, cJSON_AddNullToObject(root, "step_logits"));
    if (g->has_eos) jnum(b, root, "eos_token_id", (double)g->eos);
    else jc(b, cJSON_AddNullToObject(root, "eos_token_id"));
    jnum(b, root, "compared_steps", (double)g->compared);
    jnum(b, root, "same_token", (double)g->same);
    jnum(b, root, "diverged_steps", (double)g->diverged_steps);
    jnum(b, root, "after_eos", (double)g->after_eos);
    jnum(b, root, "tie_flip_count", (double)g->n_flips);
    cJSON *flips = jc(b, cJSON_AddArrayToObject(root, "tie_flips"));
    for (size_t i = 0; i < g->n_flips && i < G2F_GEN_MAX_FLIPS; i++) jarr_add(b, flips, jstep(b, c, &g->flips[i]));
    if (!g->logits_steps) {
        jc(b, cJSON_AddNullToObject(root, "logits"));
    } else {
        cJSON *l = jc(b, cJSON_AddObjectToObject(root, "logits"));
        jnum(b, l, "compared_steps", (double)g->logits_steps);
        jnum(b, l, "failed_steps", (double)g->logits_failed);
        jnum(b, l, "max_margin", g->logits_margin);
    }
}

/* The tensors nothing compares, as verify's unknown_tensors. */
static void junknown(jb *b, const g2f_genreport_ctx *c, cJSON *root) {
    size_t total = 0, shown = c->fixture ? g2f_fixture_n_unknown(c->fixture, &total) : 0;
    cJSON *a = jc(b, cJSON_AddArrayToObject(root, "unknown_tensors"));
    for (size_t i = 0; a && i < shown; i++) {
        const g2f_fixture_unknown *u = g2f_fixture_unknown_at(c->fixture, i);
        cJSON *o = jc(b, cJSON_CreateObject());
        jstr(b, o, "name", u->name);
        if (u->suggestion[0]) jstr(b, o, "did_you_mean", u->suggestion);
        else jc(b, o ? cJSON_AddNullToObject(o, "did_you_mean") : NULL);
        if (u->why[0]) jstr(b, o, "why", u->why);
        jarr_add(b, a, o);
    }
    jnum(b, root, "unknown_tensors_total", (double)total);
}

char *g2f_genreport_json(const g2f_genreport_ctx *c) {
    jb b = {0};
    cJSON *root = jc(&b, cJSON_CreateObject());
    if (!root) return NULL;
    char line[2048];
    jstr(&b, root, "kind", "generation");
    jstr(&b, root, "checkpoint", c->checkpoint_arg);
    jstr(&b, root, "fixture", c->fixture_arg);
    jstr(&b, root, "gelu", g2f_gelu_name(c->gelu));
    jstr(&b, root, "gelu_source", c->gelu_source);
    jnum(&b, root, "lambda", c->lambda);
    jsummary(&b, c, root);
    jdivergence(&b, c, root);
    junknown(&b, c, root);
    g2f_genreport_verdict(c, line, sizeof line);
    jstr(&b, root, "verdict", line);
    g2f_genreport_counts(c, line, sizeof line);
    jstr(&b, root, "counts", line);
    if (c->teacher) { /* verify's own report of the same file, whole */
        char *tf = g2f_report_json(c->teacher);
        cJSON *t = tf ? cJSON_Parse(tf) : NULL;
        free(tf);
        if (!t || !cJSON_AddItemToObject(root, "teacher_forced", t)) cJSON_Delete(t), b.failed = 1;
    } else {
        jc(&b, cJSON_AddNullToObject(root, "teacher_forced"));
    }
    if (c->teacher_note) jstr(&b, root, "teacher_forced_note", c->teacher_note);
    else jc(&b, cJSON_AddNullToObject(root, "teacher_forced_note"));
    jstr(&b, root, "status", g2f_genreport_pass(c) ? "pass" : "fail");
    char *out = b.failed ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

/* ---- HTML ------------------------------------------------------------------- */

/* s HTML-escaped onto fp (g2f_html_escape_append's rules). */
static void h(FILE *fp, const char *s) {
    g2f_html_buf b = {0};
    if (g2f_html_escape_append(&b, s) == 0 && b.data) fputs(b.data, fp);
    else if (s && *s) fputs("\xEF\xBF\xBD", fp);
    g2f_html_buf_free(&b);
}

static void h_row(FILE *fp, const char *label, const char *value) {
    fprintf(fp, "<tr><th>");
    h(fp, label);
    fprintf(fp, "</th><td>");
    h(fp, value);
    fprintf(fp, "</td></tr>\n");
}

static void h_step(FILE *fp, const g2f_genreport_ctx *c, const g2f_gen_step *s) {
    char ref[128], port[128];
    token(c, s->ours, ref, sizeof ref);
    token(c, s->port, port, sizeof port);
    fprintf(fp, "<tr><td>%zu</td><td>%zu</td><td class=\"mono\">", s->seq, s->step);
    h(fp, ref);
    fprintf(fp, "</td><td class=\"mono\">");
    h(fp, port);
    fprintf(fp, "</td><td>%zu</td><td>%.3g</td><td>%.3g</td><td>", s->rank + 1, s->gap, s->window);
    if (s->logits_checked) fprintf(fp, "%.3g", s->logits_margin);
    else fprintf(fp, "-");
    fprintf(fp, "</td></tr>\n");
}

static const char html_head[] =
    "<th>sequence</th><th>step</th><th>reference</th><th>port</th><th>rank</th><th>gap</th><th>tie window</th>"
    "<th>logits margin</th></tr></thead>\n<tbody>\n";

static void h_body(FILE *fp, const g2f_genreport_ctx *c) {
    const g2f_gen_result *g = c->gen;
    char line[2048];
    int pass = g2f_genreport_pass(c);
    g2f_genreport_verdict(c, line, sizeof line);
    fprintf(fp, "<h1>gpt2ffn verify: a generation</h1>\n<p id=\"verdict\" class=\"%s\"><strong>%s</strong> ",
            pass ? "pass" : "fail", pass ? "PASS" : "FAIL");
    h(fp, line);
    fprintf(fp, "</p>\n<table id=\"summary\">\n");
    h_row(fp, "checkpoint", c->checkpoint_arg);
    fixture_text(g, line, sizeof line);
    h_row(fp, "generation", c->fixture_arg);
    h_row(fp, "what it holds", line);
    snprintf(line, sizeof line, "%s (%s)", g2f_gelu_name(c->gelu), c->gelu_source ? c->gelu_source : "");
    h_row(fp, "gelu", line);
    snprintf(line, sizeof line, "per logit, %g sigma of fp32 rounding plus the stored dtype's; another token within "
             "the two logits' tolerances is a tie flip", c->lambda);
    h_row(fp, "tolerance", line);
    g2f_genreport_counts(c, line, sizeof line);
    h_row(fp, "steps", line);
    if (c->teacher_note) h_row(fp, "note", c->teacher_note);
    if (g->logits_steps) {
        snprintf(line, sizeof line, "%zu compared, %zu beyond the tolerance, largest margin %.3g", g->logits_steps,
                 g->logits_failed, g->logits_margin);
        h_row(fp, "logits", line);
    }
    fprintf(fp, "</table>\n");
    fprintf(fp, "<h2>Tie flips (expected)</h2>\n<table id=\"tie-flips\"><thead><tr>%s", html_head);
    for (size_t i = 0; i < g->n_flips && i < G2F_GEN_MAX_FLIPS; i++) h_step(fp, c, &g->flips[i]);
    fprintf(fp, "</tbody></table>\n<p>%zu tie flip%s in all.</p>\n", g->n_flips, g->n_flips == 1 ? "" : "s");
    if (g->diverged) {
        fprintf(fp, "<h2>First divergence</h2>\n<table id=\"divergence\"><thead><tr>%s", html_head);
        h_step(fp, c, &g->first);
        causes_text(g, line, sizeof line);
        fprintf(fp, "</tbody></table>\n<p id=\"diagnosis\">Diagnosis: <code>");
        h(fp, line);
        fprintf(fp, "</code> (%zu hypotheses tried; %zu later step%s of the row diverge too).</p>\n",
                g->hypotheses_tried, g->later, g->later == 1 ? "" : "s");
    }
    if (c->teacher) {
        int tp = c->teacher->result->pass;
        g2f_report_verdict(c->teacher, line, sizeof line);
        fprintf(fp, "<h2>Teacher-forced stages</h2>\n<p id=\"teacher\" class=\"%s\"><strong>%s</strong> ",
                tp ? "pass" : "fail", tp ? "PASS" : "FAIL");
        h(fp, line);
        g2f_report_counts(c->teacher, line, sizeof line);
        fprintf(fp, " (");
        h(fp, line);
        fprintf(fp, ")</p>\n");
    }
}

char *g2f_genreport_html(const g2f_genreport_ctx *c) {
    char *data = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&data, &len);
    if (!fp) return NULL;
    fprintf(fp, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>gpt2ffn: a generation, "
                "%s</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:"
                "collapse}th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left}.pass{color:#060}.fail{color:"
                "#a00}.mono,code{font-family:monospace}</style>\n</head>\n<body>\n",
            g2f_genreport_pass(c) ? "PASS" : "FAIL");
    h_body(fp, c);
    fprintf(fp, "</body>\n</html>\n");
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
        free(data);
        return NULL;
    }
    return data;
}
