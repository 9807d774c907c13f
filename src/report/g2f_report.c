/* g2f_report: see g2f_report.h. */
#include "g2f_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_text.h"

/* ---- strings from files on the terminal -------------------------------- */

/* Escaped copies (g2f_text.h) of the file-derived strings a text report
 * prints, freed together when the report (or one row of it) is done. A
 * plain string is used as it is, without a copy; when memory runs out the
 * string is shown as "?". */
typedef struct esc_pool {
    char *s[16];
    size_t n;
} esc_pool;

static const char *esc(esc_pool *p, const char *s) {
    if (!s) return "";
    if (g2f_text_is_plain(s)) return s;
    if (p->n == sizeof p->s / sizeof p->s[0]) return "?";
    char *d = g2f_escape_dup(s);
    return d ? (p->s[p->n++] = d) : "?";
}

static void esc_pool_free(esc_pool *p) {
    for (size_t i = 0; i < p->n; i++) free(p->s[i]);
    p->n = 0;
}

/* ---- JSON that is complete or absent ----------------------------------- */

/* Every builder goes through these: any cJSON allocation that fails (or a
 * NULL parent left by an earlier failure) sets `failed`, and the builder then
 * returns NULL instead of printing a partial tree. */
typedef struct jb {
    int failed;
} jb;

static cJSON *j_check(jb *b, cJSON *item) {
    if (!item) b->failed = 1;
    return item;
}

static void j_num(jb *b, cJSON *o, const char *k, double v) { j_check(b, o ? cJSON_AddNumberToObject(o, k, v) : NULL); }
static void j_bool(jb *b, cJSON *o, const char *k, int v) { j_check(b, o ? cJSON_AddBoolToObject(o, k, v) : NULL); }
static void j_null(jb *b, cJSON *o, const char *k) { j_check(b, o ? cJSON_AddNullToObject(o, k) : NULL); }
static cJSON *j_obj(jb *b, cJSON *o, const char *k) { return j_check(b, o ? cJSON_AddObjectToObject(o, k) : NULL); }
static cJSON *j_arr(jb *b, cJSON *o, const char *k) { return j_check(b, o ? cJSON_AddArrayToObject(o, k) : NULL); }

/* Attaches item (a fresh tree, or NULL after a failure) to object o under
 * k, or to array o when k is NULL; frees it when it cannot be attached. */
static void j_add(jb *b, cJSON *o, const char *k, cJSON *item) {
    int ok = o && item && (k ? cJSON_AddItemToObject(o, k, item) : cJSON_AddItemToArray(o, item));
    if (!ok) {
        cJSON_Delete(item);
        b->failed = 1;
    }
}

/* A JSON string literal for s where cJSON's own escaping is not enough:
 * cJSON escapes only '"', '\\' and C0 controls, and copies DEL, C1 and bidi
 * controls and bytes that are not UTF-8 as they are, so `--json -` could
 * still drive a terminal or print invalid UTF-8. Here those are \u escapes
 * (invalid bytes become U+FFFD: JSON text is UTF-8). NULL when out of
 * memory. */
static char *json_literal(const char *s) {
    size_t cap = 3 + 6 * strlen(s), used = 0; /* at most 6 bytes ("\uXXXX") per input byte */
    char *d = malloc(cap);
    if (!d) return NULL;
    d[used++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = g2f_utf8_len(p);
        if (n == 0) { /* not UTF-8 */
            used += (size_t)snprintf(d + used, cap - used, "\\ufffd");
            p++;
            continue;
        }
        char one[5] = {0};
        memcpy(one, p, n);
        unsigned cp = n == 1 ? p[0]
                    : n == 2 ? (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F)
                    : n == 3 ? (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F)
                             : 0x10000; /* four-byte characters are all printable */
        if (cp == '"' || cp == '\\') {
            d[used++] = '\\';
            d[used++] = (char)cp;
        } else if (cp == '\n' || cp == '\t' || cp == '\r' || cp == '\b' || cp == '\f') { /* as cJSON writes them */
            d[used++] = '\\';
            d[used++] = cp == '\n' ? 'n' : cp == '\t' ? 't' : cp == '\r' ? 'r' : cp == '\b' ? 'b' : 'f';
        } else if (!g2f_text_is_plain(one)) {
            used += (size_t)snprintf(d + used, cap - used, "\\u%04x", cp);
        } else {
            memcpy(d + used, p, n);
            used += n;
        }
        p += n;
    }
    d[used++] = '"';
    d[used] = '\0';
    return d;
}

/* A string member; cJSON's own string when that is safe (every report of
 * an ordinary fixture), else json_literal's. */
static void j_str(jb *b, cJSON *o, const char *k, const char *s) {
    if (!o) {
        b->failed = 1;
        return;
    }
    if (g2f_text_is_plain(s)) {
        j_check(b, cJSON_AddStringToObject(o, k, s));
        return;
    }
    char *lit = json_literal(s);
    j_check(b, lit ? cJSON_AddRawToObject(o, k, lit) : NULL);
    free(lit);
}

/* Prints and frees the tree; NULL when anything failed. */
static char *j_finish(jb *b, cJSON *root) {
    char *s = b->failed || !root ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

/* The note on the fixture's GELU claim; the claim is escaped and cut to 20
 * bytes. */
static const char *claim_check(const g2f_report_ctx *c, char *buf, size_t n) {
    if (!c->fixture_claim) return NULL;
    char claim[21];
    g2f_escape(c->fixture_claim, claim, sizeof claim);
    g2f_verify_summary sum;
    g2f_verify_summarize(c->result, &sum);
    size_t tanh_n = sum.best_tanh, erf_n = sum.best_erf;
    int is_tanh = !strcmp(c->fixture_claim, "tanh"), is_erf = !strcmp(c->fixture_claim, "erf");
    if (!is_tanh && !is_erf)
        snprintf(buf, n, "fixture metadata claims gelu=\"%s\", which is neither tanh nor erf", claim);
    else if ((is_tanh && erf_n) || (is_erf && tanh_n))
        snprintf(buf, n, "fixture metadata claims gelu=%s, but the data of %zu %s %s", claim,
                 is_tanh ? erf_n : tanh_n, (is_tanh ? erf_n : tanh_n) == 1 ? "layer matches" : "layers match",
                 is_tanh ? "erf" : "tanh");
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
        g2f_causes_join(r->diag.causes, r->diag.n_causes, buf, n);
        return;
    }
    for (int d = 0; d < G2F_DIAG_COUNT && used < n; d++)
        if (r->diagnosis & G2F_DIAG_BIT(d))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", g2f_diag_name(d));
    if (!used) snprintf(buf, n, "-");
}

/* ---- the sentences every verify report shares ---------------------------- */

/* Why recorded stages were not checked (attention without n_head or
 * weights, the forward without n_head, wpe or ln_f), "; "-joined into buf;
 * 0 when every recorded stage was. */
static int unchecked_note(const g2f_verify_result *res, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < res->n_layers; i++)
        if (res->layers[i].status != G2F_LAYER_SKIPPED && res->layers[i].has_block && res->layers[i].block.attn_skipped) {
            used += (size_t)snprintf(buf, n, "%s", res->layers[i].block.note);
            break;
        }
    if (res->model.present && res->model.chain_note[0] && used < n)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "; " : "", res->model.chain_note);
    return used > 0;
}

int g2f_report_gelu_caveat(const g2f_report_ctx *c, char *buf, size_t n) {
    const g2f_verify_result *res = c->result;
    g2f_verify_summary sum;
    g2f_verify_summarize(res, &sum);
    char unchecked[400];
    int any_unchecked = unchecked_note(res, unchecked, sizeof unchecked);
    if (!res->pass || (sum.gelu_unverified == 0 && !any_unchecked)) return 0;
    size_t used = 0;
    buf[0] = '\0';
    if (sum.gelu_unverified == res->compared && sum.gelu_unverified)
        used = (size_t)snprintf(buf, n,
                                "these inputs cannot tell erf from tanh GELU (separation %.2g of the tolerance): the "
                                "GELU form is not verified",
                                sum.unverified_sep);
    else if (sum.gelu_unverified)
        used = (size_t)snprintf(buf, n,
                                "on %zu of the %zu compared layers these inputs cannot tell erf from tanh GELU "
                                "(separation at most %.2g of the tolerance): the GELU form is not verified there",
                                sum.gelu_unverified, res->compared, sum.unverified_sep);
    if (any_unchecked && used < n) snprintf(buf + used, n - used, "%s%s", used ? "; and " : "", unchecked);
    return 1;
}

int g2f_report_verdict(const g2f_report_ctx *c, char *buf, size_t n) {
    const g2f_verify_result *res = c->result;
    g2f_verify_summary sum;
    g2f_verify_summarize(res, &sum);
    const g2f_model_result *mr = &res->model;
    if (mr->present && mr->diverged) { /* the whole forward's, in model order */
        char where[64];
        const char *fs = g2f_stage_name(mr->first_stage);
        if (mr->first_layer >= 0) snprintf(where, sizeof where, "layer %ld, %s", mr->first_layer, fs);
        else snprintf(where, sizeof where, "%s", fs);
        snprintf(buf, n, "first divergence: %s: %s (%s margin %.3g)", where,
                 mr->first_codes[0]           ? mr->first_codes
                 : mr->first_not_diagnosed[0] ? mr->first_not_diagnosed
                                              : "no known cause explains it",
                 mr->first_tensor ? mr->first_tensor : "", mr->first_margin);
        return 1;
    }
    if (res->first_fail >= 0 && (size_t)res->first_fail < res->n_layers) {
        /* every layer unexplained, and either uncorrelated or the fixture
         * records another checkpoint's digest */
        if (sum.unrelated)
            snprintf(buf, n,
                     "first divergence at layer %ld: the fixture was most likely not made from this checkpoint "
                     "(another model, or its layers in another order): %s compared layer is unexplained and "
                     "uncorrelated with the reference (|cosine| < %g)",
                     res->first_fail, res->compared == 1 ? "the only" : "every", G2F_UNRELATED_COSINE);
        else if (sum.all_unexplained && g2f_report_sha256_match(c) == 0)
            snprintf(buf, n,
                     "first divergence at layer %ld: the fixture was most likely not made from this checkpoint "
                     "(another model, or its layers in another order): %s compared layer is unexplained, and the "
                     "fixture records another checkpoint's sha256",
                     res->first_fail, res->compared == 1 ? "the only" : "every");
        else
            snprintf(buf, n, "first divergence at layer %ld: %s", res->first_fail,
                     res->layers[res->first_fail].explanation);
        return 1;
    }
    if (res->loss.checked && !res->loss.pass) { /* everything before it matches */
        const g2f_loss_stage *l = &res->loss;
        const g2f_loss_side *sd = l->isolated.checked && !l->isolated.pass ? &l->isolated : &l->chained;
        snprintf(buf, n, "first divergence: loss: the mean cross-entropy of %s against the targets is %.9g, but the "
                 "reference records %.9g (loss margin %.3g; bound %.3g)",
                 sd == &l->isolated ? "the reference's own logits" : "the logits computed from input_ids", sd->r.loss,
                 l->reference, sd->margin, sd->r.bound);
        return 1;
    }
    if (res->aliases_differ && res->failed == 0 && (!mr->present || mr->pass)) {
        const g2f_alias_check *a = res->aliases;
        while (a->same) a++;
        snprintf(buf, n, "the capture is inconsistent: '%s' and '%s' name one stage but hold different values%s "
                 "(every compared stage matches '%s')", a->kept, a->other,
                 res->aliases_differ > 1 ? ", and more pairs (capture lines)" : "", a->kept);
        return 1;
    }
    if (mr->present && mr->chained && res->pass) {
        snprintf(buf, n, "the whole forward from input_ids matches the reference (%zu layers%s%s; top-1 token agrees "
                 "at %zu of %zu positions)", res->n_layers, mr->chain[G2F_STAGE_LOGITS].checked ? ", logits" : "",
                 res->loss.checked ? ", loss" : "", mr->agree.top1_agree, mr->agree.positions);
        return 1;
    }
    if (mr->present && !mr->compared && !res->compared) {
        snprintf(buf, n, "nothing was compared: the fixture holds input_ids but no stage of the model to compare");
        return 1;
    }
    if (!res->pass && !res->compared) {
        snprintf(buf, n, "no layer was compared");
        return 1;
    }
    if (!res->pass) {
        snprintf(buf, n, "the model's stages do not match the reference");
        return 1;
    }
    if (res->compared == 1) snprintf(buf, n, "the 1 compared layer matches the reference");
    else snprintf(buf, n, "all %zu compared layers match the reference", res->compared);
    return 1;
}

void g2f_report_unknown_line(const g2f_fixture_unknown *u, char *buf, size_t n) {
    if (u->why[0]) snprintf(buf, n, "'%s' is recorded but not compared (%s)", u->name, u->why);
    else if (u->suggestion[0])
        snprintf(buf, n, "'%s' is not a name gpt2ffn knows (did you mean '%s'?): not compared", u->name, u->suggestion);
    else snprintf(buf, n, "'%s' is not a name gpt2ffn knows: not compared", u->name);
}

void g2f_report_counts(const g2f_report_ctx *c, char *buf, size_t n) {
    const g2f_verify_result *res = c->result;
    const g2f_model_result *mr = &res->model;
    int used = snprintf(buf, n, "%zu compared, %zu failed, %zu skipped", res->compared, res->failed,
                        res->n_layers - res->compared);
    if (used > 0 && (size_t)used < n && mr->present && !mr->skipped)
        used += snprintf(buf + used, n - (size_t)used, "; whole model: %zu stage%s compared, %zu failed", mr->compared,
                         mr->compared == 1 ? "" : "s", mr->failed);
    if (used > 0 && (size_t)used < n && res->loss.checked)
        used += snprintf(buf + used, n - (size_t)used, "; loss: %s", res->loss.pass ? "matches" : "does not match");
    if (used > 0 && (size_t)used < n && res->aliases_differ)
        used += snprintf(buf + used, n - (size_t)used, "; capture: %zu pair%s of names disagree%s",
                         res->aliases_differ, res->aliases_differ == 1 ? "" : "s", res->aliases_differ == 1 ? "s" : "");
    /* what the fixture holds and nothing read: said in the verdict's own line */
    if (used > 0 && (size_t)used < n && res->n_unknown_total)
        snprintf(buf + used, n - (size_t)used, "; %zu fixture tensor%s not compared (see the notes)",
                 res->n_unknown_total, res->n_unknown_total == 1 ? "" : "s");
}

/* s as one shell word: as it is when it holds only safe characters, else
 * in single quotes ('\'' for a quote). Cut to fit n. */
static void shell_word(const char *s, char *buf, size_t n) {
    int plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("_./-:=+,@%", *p);
    if (plain) {
        snprintf(buf, n, "%s", s);
        return;
    }
    size_t used = 0;
    if (n < 3) return;
    buf[used++] = '\'';
    for (const char *p = s; *p && used + 6 < n; p++) {
        if (*p == '\'') {
            memcpy(buf + used, "'\\''", 4);
            used += 4;
        } else {
            buf[used++] = *p;
        }
    }
    buf[used++] = '\'';
    buf[used] = '\0';
}

/* What a GELU form is, for the hint. */
static const char *gelu_words(g2f_gelu g) {
    switch (g) {
    case G2F_GELU_TANH: return "the tanh GELU approximation (GPT-2's, HF 'gelu_new')";
    case G2F_GELU_ERF: return "the exact erf GELU (torch F.gelu's default, HF 'gelu')";
    case G2F_GELU_SIGMOID: return "the sigmoid GELU x sigmoid(1.702 x) (HF 'quick_gelu')";
    case G2F_GELU_MLX: return "MLX's former gelu_approx";
    default: return "ggml's float16 GELU table (llama.cpp's CPU GELU)";
    }
}

int g2f_report_hint(const g2f_report_ctx *c, char *buf, size_t n) {
    g2f_verify_summary sum;
    g2f_verify_summarize(c->result, &sum);
    if (!sum.other_gelu_explains) return 0;
    g2f_gelu asked = c->result->gelu, g = sum.other_gelu;
    const char *form = g2f_gelu_name(g);
    char ck[300], fx[300], cmd[800];
    shell_word(c->checkpoint_arg ? c->checkpoint_arg : "CHECKPOINT", ck, sizeof ck);
    shell_word(c->fixtures_arg ? c->fixtures_arg : "FIXTURES", fx, sizeof fx);
    /* the codes found beside the form: named, and the ones --accept takes added to the command */
    char with[200] = "", acc[100] = "";
    if (sum.other_gelu_beside) {
        char names[120], words[160] = "";
        g2f_diag_set_format(sum.other_gelu_beside, names, sizeof names);
        size_t used = 0; /* "a,b" -> "a or b": alternatives, as the causes list them */
        for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok && used < sizeof words;
             tok = strtok_r(NULL, ",", &save))
            used += (size_t)snprintf(words + used, sizeof words - used, "%s%s", used ? " or " : "", tok);
        snprintf(with, sizeof with, " (computed with %s: see the causes)", words);
        g2f_diag_set_format(sum.other_gelu_with, acc, sizeof acc);
    }
    snprintf(cmd, sizeof cmd, "gpt2ffn verify %s %s --gelu %s%s%s", ck, fx, form, acc[0] ? " --accept " : "", acc);
    /* two readings: the reference is right (the choice of form here is
     * wrong), or the fixture is the port's (its GELU is the bug) */
    if ((g == G2F_GELU_ERF || g == G2F_GELU_TANH) && (asked == G2F_GELU_ERF || asked == G2F_GELU_TANH))
        snprintf(buf, n,
                 "every compared layer matches %s, not %s%s. If the reference is right and the checkpoint's config is "
                 "wrong: rerun with --gelu %s (%s), or name a config whose activation_function is \"%s\" with --config "
                 "FILE. If the fixture came from your port: the port's GELU is the bug (it runs %s on weights trained "
                 "with %s); make it use the %s form, and do not pass --gelu %s",
                 gelu_words(g), g2f_gelu_name(asked), with, form, cmd, g == G2F_GELU_ERF ? "gelu" : "gelu_new", form,
                 g2f_gelu_name(asked), g2f_gelu_name(asked), form);
    else
        snprintf(buf, n,
                 "every compared layer matches %s, not %s%s. If your port runs it on purpose (%s): rerun with --gelu %s "
                 "(%s) to check the rest of the port against it. If not, the port's GELU is the bug: make it use the "
                 "%s form",
                 gelu_words(g), g2f_gelu_name(asked), with,
                 g == G2F_GELU_F16_TABLE ? "ggml and llama.cpp's CPU path do" : "a deliberate approximation", form, cmd,
                 g2f_gelu_name(asked));
    return 1;
}

/* One note on the hook_normalized captures read as r says (0 when none):
 * how many, the first's name, and why. */
static int norm_note(const g2f_verify_result *res, g2f_norm_reading r, char *buf, size_t n) {
    size_t count = 0, forced = 0;
    const char *first = NULL;
    for (size_t i = 0; i < res->n_norms; i++)
        if (res->norms[i].reading == r) {
            if (!count++) first = res->norms[i].name;
            forced += res->norms[i].forced;
        }
    if (!count) return 0;
    const char *how = forced ? "as --tl-normalized says" : "as their values say";
    if (r == G2F_NORM_UNDECIDED)
        snprintf(buf, n, "%zu TransformerLens hook_normalized capture%s ('%s'%s) not compared: %s values do not tell "
                 "whether %s recorded before the LayerNorm's gain and bias (TransformerLens 3) or after them "
                 "(TransformerLens 2); say which with --tl-normalized before|after", count, count == 1 ? "" : "s",
                 first, count > 1 ? ", ..." : "", count == 1 ? "its" : "their", count == 1 ? "it was" : "they were");
    else if (r == G2F_NORM_SAME)
        snprintf(buf, n, "%zu TransformerLens hook_normalized capture%s ('%s'%s): the checkpoint's gain is 1 and its "
                 "bias 0, so before and after them are the same values", count, count == 1 ? "" : "s", first,
                 count > 1 ? ", ..." : "");
    else
        snprintf(buf, n, "%zu TransformerLens hook_normalized capture%s ('%s'%s) read %s, %s", count,
                 count == 1 ? "" : "s", first, count > 1 ? ", ..." : "", g2f_norm_reading_phrase(r), how);
    return 1;
}

/* The i-th note on the fixture's names (see g2f_report_note). */
int g2f_report_note(const g2f_report_ctx *c, size_t i, const char **label, char *buf, size_t n) {
    const g2f_verify_result *r = c->result;
    for (size_t k = 0; k < r->n_aliases; k++) {
        const g2f_alias_check *a = &r->aliases[k];
        if (a->same || i--) continue;
        *label = "capture";
        if (a->shapes_differ)
            snprintf(buf, n, "'%s' and '%s' name one stage but have different shapes: the capture is inconsistent; "
                     "'%s' was compared", a->kept, a->other, a->kept);
        else
            snprintf(buf, n, "'%s' and '%s' name one stage but differ at %zu of %zu elements (largest |difference| "
                     "%.3g, first at element %zu): the capture is inconsistent; '%s' was compared", a->kept, a->other,
                     a->differing, a->total, a->max_abs, a->first, a->kept);
        return 1;
    }
    size_t same = r->n_aliases - r->aliases_differ;
    if (same && i-- == 0) {
        const g2f_alias_check *a = r->aliases;
        while (!a->same) a++;
        *label = "aliases";
        snprintf(buf, n, "%zu pair%s of names for one stage hold%s the same values ('%s' = '%s'%s)", same,
                 same == 1 ? "" : "s", same == 1 ? "s" : "", a->kept, a->other, same > 1 ? ", ..." : "");
        return 1;
    }
    if (i < r->n_unknown) {
        const g2f_fixture_unknown *u = &r->unknown[i];
        *label = "note";
        g2f_report_unknown_line(u, buf, n);
        return 1;
    }
    i -= r->n_unknown;
    if (r->n_unknown_total > r->n_unknown && i-- == 0) {
        *label = "note";
        snprintf(buf, n, "and %zu more tensors not compared", r->n_unknown_total - r->n_unknown);
        return 1;
    }
    for (int k = G2F_NORM_AFTER; k <= G2F_NORM_UNDECIDED; k++)
        if (norm_note(r, (g2f_norm_reading)k, buf, n) && i-- == 0) {
            *label = "reading";
            return 1;
        }
    if (r->loss.gradients && i == 0) {
        *label = "note";
        snprintf(buf, n, "the file holds %llu parameter gradients: not checked (gradients are out of scope: verify "
                 "checks the forward, the logits and the loss)", (unsigned long long)r->loss.gradients);
        return 1;
    }
    return 0;
}

static void loss_cell(const g2f_loss_side *s, char *buf, size_t n) {
    if (!s->checked) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.3g%s", s->margin, s->pass ? "" : "!");
}

/* "SEP WHAT: X (bound B, margin M)" appended to buf (used of n); the new length. */
static size_t loss_part(const g2f_loss_side *s, const char *sep, const char *what, char *buf, size_t n, size_t used) {
    if (!s->checked || used >= n) return used;
    int k = snprintf(buf + used, n - used, "%s%s: %.9g (bound %.3g, margin %.3g)", sep, what, s->r.loss, s->r.bound,
                     s->margin);
    return k > 0 ? used + (size_t)k : used;
}

int g2f_report_loss(const g2f_report_ctx *c, char *chained, char *isolated, size_t cn, char *diag, size_t dn,
                    char *line, size_t ln) {
    const g2f_loss_stage *l = &c->result->loss;
    const g2f_model_result *mr = &c->result->model;
    if (!l->present) return 0;
    loss_cell(&l->chained, chained, cn);
    loss_cell(&l->isolated, isolated, cn);
    if (!l->checked) {
        snprintf(diag, dn, "not checked: %s", l->why ? l->why : "-");
        snprintf(line, ln, "loss not checked: %s", l->why ? l->why : "-");
        return 1;
    }
    if (l->pass) snprintf(diag, dn, "-");
    else if (l->isolated.checked && !l->isolated.pass) snprintf(diag, dn, "unexplained");
    else if (mr->diverged && mr->first_layer >= 0)
        snprintf(diag, dn, "propagated:h.%ld.%s", mr->first_layer, g2f_stage_name(mr->first_stage));
    else if (mr->diverged) snprintf(diag, dn, "propagated:%s", g2f_stage_name(mr->first_stage));
    else snprintf(diag, dn, "unexplained");
    int k = snprintf(line, ln, "the reference records %.9g (the mean over %zu positions); the cross-entropy against "
                     "the targets", l->reference, l->rows);
    size_t used = k > 0 ? (size_t)k : 0;
    used = loss_part(&l->isolated, " of ", "its logits", line, ln, used);
    loss_part(&l->chained, l->isolated.checked ? "; of " : " of ", "the logits computed from input_ids", line, ln, used);
    return 1;
}

/* Lower-case hex of at most 64 digits, for comparing digests. */
static int same_digest(const char *a, const char *b) {
    size_t i = 0;
    for (; a[i] && b[i] && i < 64; i++) {
        int x = a[i] >= 'A' && a[i] <= 'F' ? a[i] + 32 : a[i], y = b[i] >= 'A' && b[i] <= 'F' ? b[i] + 32 : b[i];
        if (x != y) return 0;
    }
    return i == 64 && !a[i] && !b[i];
}

int g2f_report_sha256_match(const g2f_report_ctx *c) {
    if (!c->fixture_sha256) return -1;
    return c->checkpoint_sha256 && same_digest(c->fixture_sha256, c->checkpoint_sha256);
}

int g2f_report_provenance(const g2f_report_ctx *c, char *buf, size_t n) {
    int m = g2f_report_sha256_match(c);
    if (m < 0) return 0;
    const char *cached = c->checkpoint_sha256_cached ? " (this checkpoint's digest from the digest cache)" : "";
    if (m)
        snprintf(buf, n, "the fixture records this checkpoint's sha256 (%.16s...): it was made from this file%s",
                 c->checkpoint_sha256, cached);
    else if (c->checkpoint_sha256)
        snprintf(buf, n,
                 "the fixture records checkpoint_sha256 %.72s, but this checkpoint's is %s: the fixture was made from "
                 "another file%s",
                 c->fixture_sha256, c->checkpoint_sha256, cached);
    else
        snprintf(buf, n, "the fixture records checkpoint_sha256 %.72s; this checkpoint's was not computed",
                 c->fixture_sha256);
    return 1;
}

/* The checkpoint's description, shared by every report. */
static cJSON *model_json(jb *b, const g2f_model_info *mi) {
    cJSON *model = j_check(b, cJSON_CreateObject());
    j_str(b, model, "path", mi->path);
    j_str(b, model, "format", mi->format);
    j_str(b, model, "naming", mi->naming);
    j_str(b, model, "prefix", mi->prefix);
    j_str(b, model, "dtype", g2f_dtype_name(mi->dtype));
    j_str(b, model, "layout", mi->layout == G2F_LAYOUT_LINEAR ? "linear" : "conv1d");
    j_str(b, model, "layout_source", mi->layout_source);
    j_num(b, model, "n_layer", (double)mi->n_layer);
    j_num(b, model, "n_embd", (double)mi->n_embd);
    j_num(b, model, "n_inner", (double)mi->n_inner);
    j_bool(b, model, "fc_bias", mi->has_fc_bias);
    j_bool(b, model, "proj_bias", mi->has_proj_bias);
    if (mi->config_path) j_str(b, model, "config", mi->config_path);
    else j_null(b, model, "config");
    j_str(b, model, "config_source", mi->config_source ? mi->config_source : "none beside the checkpoint");
    if (mi->config_activation) j_str(b, model, "activation_function", mi->config_activation);
    if (mi->n_head) j_num(b, model, "n_head", (double)mi->n_head);
    else j_null(b, model, "n_head");
    if (mi->n_head && mi->n_head_source) j_str(b, model, "n_head_source", mi->n_head_source);
    else j_null(b, model, "n_head_source");
    return model;
}

static void model_text(FILE *fp, const char *label, const g2f_model_info *mi) {
    esc_pool ep = {{0}, 0};
    fprintf(fp, "%-11s %s (%s, %s, %zu layer%s, n_embd %zu, n_inner %zu, %s, %s)\n", label, esc(&ep, mi->path),
            esc(&ep, mi->format), g2f_dtype_name(mi->dtype), mi->n_layer, mi->n_layer == 1 ? "" : "s", mi->n_embd,
            mi->n_inner,
            g2f_layout_name(mi->layout),
            mi->has_fc_bias && mi->has_proj_bias ? "with biases"
            : (mi->has_fc_bias || mi->has_proj_bias) ? "one bias missing"
                                                     : "no biases");
    fprintf(fp, "naming      %s%s%s%s\n", esc(&ep, mi->naming), *mi->prefix ? " under '" : "", esc(&ep, mi->prefix),
            *mi->prefix ? "'" : "");
    fprintf(fp, "layout      %s\n", esc(&ep, mi->layout_source));
    /* config.json beside the checkpoint goes without saying; another name
     * (the only *config*.json there, --config) is said */
    const char *how = mi->config_source && strcmp(mi->config_source, "config.json beside the checkpoint") != 0
                          ? mi->config_source
                          : NULL;
    if (mi->config_path)
        fprintf(fp, "config      %s%s%s%s%s%s%s\n", esc(&ep, mi->config_path), how || mi->config_activation ? " (" : "",
                how ? esc(&ep, how) : "", how && mi->config_activation ? "; " : "",
                mi->config_activation ? "activation_function \"" : "", esc(&ep, mi->config_activation),
                mi->config_activation ? "\")" : how ? ")" : "");
    else
        fprintf(fp, "config      %s\n", how ? esc(&ep, how) : "none beside the checkpoint");
    /* attention needs n_head: say where it came from, or that nothing says */
    if (mi->n_head)
        fprintf(fp, "n_head      %zu (%s)\n", mi->n_head, mi->n_head_source ? esc(&ep, mi->n_head_source) : "?");
    else
        fprintf(fp, "n_head      unknown (no config.json n_head, GGUF head_count, llm.c header, nanoGPT "
                    "model_args or TransformerLens W_Q; verify --n-head N gives it)\n");
    esc_pool_free(&ep);
}

/* The block's stages, one row per layer that records any: each stage's
 * margin (<= 1 matches) or "-" when not recorded, then the chained pass's
 * first divergence and each failing stage's codes. */
static void stages_text(FILE *fp, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    int any = 0;
    for (size_t i = 0; i < res->n_layers && !any; i++)
        any = res->layers[i].status != G2F_LAYER_SKIPPED && res->layers[i].has_block;
    if (!any) return;
    fprintf(fp, "\nblock stages per layer (margin: largest |err|/tolerance, <= 1 matches; - not recorded;\n"
                "each stage from its recorded input; chained: the block computed from h.L.in):\n");
    fprintf(fp, "%5s", "layer");
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) fprintf(fp, " %9s", g2f_stage_name((g2f_stage)s));
    fprintf(fp, "  %-28s %-7s %s\n", "chained", "layer", "diagnosis");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED || !r->has_block) continue;
        const g2f_block_result *b = &r->block;
        fprintf(fp, "%5zu", r->layer);
        for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
            const g2f_stage_result *st = &b->stage[s];
            char cell[32];
            if (!st->checked) snprintf(cell, sizeof cell, "-");
            else snprintf(cell, sizeof cell, "%.3g%s", st->margin, st->pass ? "" : "!");
            fprintf(fp, " %9s", cell);
        }
        char chain[64];
        if (!b->chained) snprintf(chain, sizeof chain, "-");
        else if (!b->diverged) snprintf(chain, sizeof chain, b->chain_accepted ? "matches (accepted)" : "matches");
        else snprintf(chain, sizeof chain, "%s %s %.3g", g2f_stage_name(b->first_stage),
                      b->first_tensor ? b->first_tensor : "", b->first_margin);
        char codes[512] = "";
        size_t used = 0;
        for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST && used < sizeof codes; s++) {
            const g2f_stage_result *st = &b->stage[s];
            if (st->checked && st->accepted && s != G2F_STAGE_MLP) { /* judged on an accepted cause */
                char acc[128];
                g2f_diag_set_format(st->accepted, acc, sizeof acc);
                used += (size_t)snprintf(codes + used, sizeof codes - used, "%s%s: accepted %s", used ? "; " : "",
                                         g2f_stage_name((g2f_stage)s), acc);
                continue;
            }
            if (!st->checked || st->pass || s == G2F_STAGE_MLP) continue;
            used += (size_t)snprintf(codes + used, sizeof codes - used, "%s%s: ", used ? "; " : "",
                                     g2f_stage_name((g2f_stage)s));
            if (used < sizeof codes) {
                char alt[256] = "unexplained";
                if (st->n_causes) g2f_causes_join(st->causes, st->n_causes, alt, sizeof alt);
                used += (size_t)snprintf(codes + used, sizeof codes - used, "%s", alt);
            }
        }
        fprintf(fp, "  %-28s %-7s %s\n", chain, r->status == G2F_LAYER_PASS ? "PASS" : "FAIL", used ? codes : "-");
    }
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status != G2F_LAYER_SKIPPED && r->has_block && r->block.attn_skipped) {
            fprintf(fp, "  note: layer %zu: %s\n", r->layer, r->block.note);
            break; /* the same reason for every layer */
        }
    }
}

/* A model-level stage's cell: margin, "!" when failing, "-" when not compared. */
static void mstage_cell(const g2f_stage_result *r, char *buf, size_t n) {
    if (!r->checked) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.3g%s", r->margin, r->pass ? "" : "!");
}

static void mstage_codes(const g2f_stage_result *r, const char *why_not, char *buf, size_t n);

void g2f_report_mstage_codes(const g2f_model_result *mr, int s, char *buf, size_t n) {
    const g2f_stage_result *ch = &mr->chain[s], *iso = &mr->iso[s];
    /* the isolated check's diagnosis when it fails, else the chained one's */
    mstage_codes(iso->checked && !iso->pass ? iso : ch->checked ? ch : iso, mr->not_computable[s], buf, n);
}

void g2f_report_chain_layer(const g2f_model_result *mr, size_t L, char *cell, size_t cn, char *what, size_t wn,
                            char *diag, size_t dn) {
    const g2f_chain_verdict *v = &mr->layers[L];
    double worst = 0;
    int any = 0;
    for (int k = G2F_BLOCK_FIRST; k <= G2F_BLOCK_LAST; k++)
        if (v->stage[k].checked) {
            any = 1;
            if (!(v->stage[k].margin <= worst)) worst = v->stage[k].margin;
        }
    if (!any) snprintf(cell, cn, "-");
    else snprintf(cell, cn, "%.3g%s", v->diverged ? v->first_margin : worst, v->diverged ? "!" : "");
    if (v->diverged)
        snprintf(what, wn, "first: %s (%s)", g2f_stage_name(v->first_stage), v->first_tensor ? v->first_tensor : "");
    else snprintf(what, wn, "%s", any ? "every recorded stage" : "nothing recorded");
    snprintf(diag, dn, "-");
    if (!v->diverged || !mr->diverged) return;
    if (mr->first_layer == (long)L) /* the first divergence: the diagnosis at that stage */
        snprintf(diag, dn, "%s", mr->first_codes[0] ? mr->first_codes : mr->first_not_diagnosed[0] ? "not diagnosed" : "unexplained");
    else if (mr->first_layer >= 0 && (long)L > mr->first_layer)
        snprintf(diag, dn, "%s:h.%ld.%s", g2f_diag_name(G2F_DIAG_PROPAGATED), mr->first_layer,
                 g2f_stage_name(mr->first_stage));
    else if (mr->first_layer < 0 && mr->first_stage == G2F_STAGE_EMBED)
        snprintf(diag, dn, "%s:embed", g2f_diag_name(G2F_DIAG_PROPAGATED));
}

const char *g2f_report_model_how(const g2f_model_result *mr) {
    return mr->chained        ? "chained from input_ids"
           : mr->chain_note[0] ? mr->chain_note
                               : "no input_ids: stages from their recorded inputs only";
}

static void mstage_codes(const g2f_stage_result *r, const char *why_not, char *buf, size_t n) {
    buf[0] = '\0';
    if (why_not) {
        snprintf(buf, n, "not checked: %s", why_not);
        return;
    }
    if (!r->checked || r->pass) {
        snprintf(buf, n, "-");
        return;
    }
    if (r->propagated[0]) {
        snprintf(buf, n, "%s:%s", g2f_diag_name(G2F_DIAG_PROPAGATED), r->propagated);
        return;
    }
    g2f_causes_join(r->causes, r->n_causes, buf, n);
    if (!buf[0]) snprintf(buf, n, "unexplained");
}

/* The whole forward (docs/model.md): the model-level stages chained from
 * input_ids and isolated from their recorded inputs, each layer's chained
 * verdict, and the logits' agreement. */
static void model_section_text(FILE *fp, const g2f_report_ctx *c) {
    const g2f_model_result *mr = &c->result->model;
    if (!mr->present) return;
    char acc[128] = "";
    if (mr->accepted) {
        char codes[100];
        g2f_diag_set_format(mr->accepted, codes, sizeof codes);
        snprintf(acc, sizeof acc, "; accepted: %s", codes);
    }
    fprintf(fp, "\nwhole model (%s%s; %zu sequence%s of %zu tokens, vocab %zu; head: %s)\n", g2f_report_model_how(mr),
            acc, mr->n_seq, mr->n_seq == 1 ? "" : "s", mr->T, mr->vocab, mr->head_desc ? mr->head_desc : "-");
    fprintf(fp, "%-8s %10s %10s  %-24s %s\n", "stage", "chained", "isolated", "reference", "diagnosis");
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        const g2f_stage_result *ch = &mr->chain[s], *iso = &mr->iso[s];
        char a[32], b[32], codes[256];
        mstage_cell(ch, a, sizeof a);
        mstage_cell(iso, b, sizeof b);
        g2f_report_mstage_codes(mr, s, codes, sizeof codes);
        fprintf(fp, "%-8s %10s %10s  %-24s %s\n", g2f_stage_name((g2f_stage)s), a, b,
                ch->worst_tensor ? ch->worst_tensor : iso->worst_tensor ? iso->worst_tensor : "-", codes);
        if (s == G2F_STAGE_EMBED && mr->chained) {
            for (size_t L = 0; L < mr->n_layers; L++) {
                char cell[32], name[32], what[96], diag[300];
                g2f_report_chain_layer(mr, L, cell, sizeof cell, what, sizeof what, diag, sizeof diag);
                snprintf(name, sizeof name, "h.%zu", L);
                fprintf(fp, "%-8s %10s %10s  %-24s %s\n", name, cell, "", what, diag);
            }
        }
    }
    char lc[32], li[32], ld[300], line[700];
    if (g2f_report_loss(c, lc, li, sizeof lc, ld, sizeof ld, line, sizeof line)) {
        fprintf(fp, "%-8s %10s %10s  %-24s %s\n", "loss", lc, li, "loss", ld);
        fprintf(fp, "loss: %s\n", line);
    }
    const g2f_logit_agreement *a = &mr->agree;
    if (a->computed) {
        fprintf(fp, "logits agreement: top-1 token the same at %zu of %zu positions, largest KL(reference || ours) "
                    "%.3g nats (position %zu)", a->top1_agree, a->positions, a->max_kl, a->max_kl_position);
        if (a->n_differing && !c->tokenizer) {
            fprintf(fp, "; top-1 differs at");
            for (size_t i = 0; i < a->n_differing && i < 16; i++)
                fprintf(fp, " %zu:%zu", a->differing[i] / (mr->T ? mr->T : 1), a->differing[i] % (mr->T ? mr->T : 1));
            if (a->n_differing > 16) fprintf(fp, " ... (%zu in all)", a->n_differing);
            fprintf(fp, " (sequence:token)");
        }
        fprintf(fp, "\n");
        for (size_t i = 0; c->tokenizer && i < a->n_differing && i < 16; i++) { /* the tokens, as text */
            char ref[80], ours[80];
            g2f_tokenizer_token_text(c->tokenizer, (int64_t)a->ref_top1[i], ref, sizeof ref);
            g2f_tokenizer_token_text(c->tokenizer, (int64_t)a->our_top1[i], ours, sizeof ours);
            fprintf(fp, "  position %zu:%zu: reference %s, ours %s\n", a->differing[i] / (mr->T ? mr->T : 1),
                    a->differing[i] % (mr->T ? mr->T : 1), ref, ours);
        }
        if (c->tokenizer && a->n_differing > 16) fprintf(fp, "  ... (%zu positions in all)\n", a->n_differing);
    }
}

const char *g2f_report_squares_words(int user) {
    if (user) return "the tolerance given, nothing derived";
    return g2f_ffn_squares_bf16() ? "sums of squares from bfloat16 factors rounded up: docs/diagnosis.md#tolerance"
                                  : "sums of squares in float32";
}

/* The run's settings: the checkpoint, the fixtures, the GELU, the
 * tolerance and the notes, then a blank line. */
static void text_settings(FILE *fp, const g2f_report_ctx *c) {
    esc_pool ep = {{0}, 0};
    model_text(fp, "checkpoint", c->model);
    fprintf(fp, "fixtures    %s (%s)\n", esc(&ep, c->fixtures_arg), g2f_dtype_name(c->fixture_dtype));
    fprintf(fp, "gelu        %s (%s)\n", g2f_gelu_name(c->result->gelu), esc(&ep, c->gelu_source));
    if (c->tol->user)
        fprintf(fp, "tolerance   |err| <= atol + rtol |expected| with atol %g, rtol %g (from the command line)\n",
                c->tol->atol, c->tol->rtol);
    else
        fprintf(fp, "tolerance   per element, %g sigma of fp32 rounding plus the fixture dtype's (README: Tolerance)\n",
                g2f_tol_lambda(c->tol));
    fprintf(fp, "kernels     %s (%s)\n", g2f_ffn_isa(), g2f_report_squares_words(c->tol->user));
    char note[256], line[1400];
    if (claim_check(c, note, sizeof note)) fprintf(fp, "note        %s\n", note);
    if (g2f_report_provenance(c, line, sizeof line))
        fprintf(fp, "%-11s %s\n", g2f_report_sha256_match(c) ? "provenance" : "warning", esc(&ep, line));
    const char *label;
    for (size_t i = 0; g2f_report_note(c, i, &label, line, sizeof line); i++) {
        fprintf(fp, "%-11s %s\n", label, esc(&ep, line));
        esc_pool_free(&ep);
    }
    esc_pool_free(&ep);
    fprintf(fp, "\n");
}

/* The row of layer i in the per-layer table; a run of skipped layers from
 * i takes one row. Returns the last layer the row covers. */
static size_t text_layer_row(FILE *fp, const g2f_report_ctx *c, size_t i) {
    const g2f_verify_result *res = c->result;
    const g2f_layer_result *r = &res->layers[i];
    if (r->status == G2F_LAYER_SKIPPED) {
        size_t j = i;
        while (j + 1 < res->n_layers && res->layers[j + 1].status == G2F_LAYER_SKIPPED) j++;
        char span[48];
        if (j > i) snprintf(span, sizeof span, "%zu-%zu", i, j);
        else snprintf(span, sizeof span, "%zu", i);
        fprintf(fp, "%5s %7s %11s %11s %9s %17s %10s %8s %7s %17s %8s %8s  %s\n", span, "-", "-", "-", "-", "-", "-",
                "-", "skipped", "-", "-", "-", "-");
        return j;
    }
    if (!r->has_ffn) { /* block stages only: the stage table below has them */
        fprintf(fp, "%5zu %7s %11s %11s %9s %17s %10s %8s %7s %17s %8s %8s  %s\n", r->layer, "-", "-", "-", "-",
                "-", "-", "-", "-", "-", "-", "-", "no FFN recorded; stages below");
        return i;
    }
    g2f_layer_totals tot = g2f_layer_result_totals(r);
    char frac[48], codes[512], sep_act[32];
    snprintf(frac, sizeof frac, "%zu/%zu", tot.mismatched, tot.total);
    if (r->has_act) snprintf(sep_act, sizeof sep_act, "%.3g", r->sep_act);
    else snprintf(sep_act, sizeof sep_act, "-");
    diag_codes(r, codes, sizeof codes);
    /* the FFN's own verdict: a layer failing at another stage says so in the stage table */
    int ffn_pass = r->ffn_status == G2F_LAYER_PASS;
    const char *on = !c->color ? "" : ffn_pass ? "\033[32m" : "\033[1;31m";
    if (ffn_pass && r->status == G2F_LAYER_FAIL && codes[0] == '-')
        snprintf(codes, sizeof codes, "- (the layer fails at another stage: below)");
    fprintf(fp, "%5zu %7zu %11.3e %11.3e %9.3g %17s %10.8f %8.1f %s%7s%s %17s %8.3g %8s  %s\n", r->layer, r->tokens,
            r->out.max_abs, r->out.max_rel, tot.margin, frac, r->out.cosine, r->out.sqnr_db, on,
            ffn_pass ? "PASS" : "FAIL", c->color ? "\033[0m" : "", g2f_layer_gelu_shown(r),
            r->sep_out, sep_act, codes);
    return i;
}

static void text_layer_table(FILE *fp, const g2f_report_ctx *c) {
    fprintf(fp, "%5s %7s %11s %11s %9s %17s %10s %8s %7s %17s %8s %8s  %s\n", "layer", "tokens", "max_abs_err",
            "max_rel_err", "margin", "mismatched/total", "cosine", "sqnr_db", "verdict", "gelu", "sep_out", "sep_act",
            "diagnosis");
    for (size_t i = 0; i < c->result->n_layers; i++) i = text_layer_row(fp, c, i);
}

static void text_worst_elements(FILE *fp, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    fprintf(fp, "\nworst element per layer (token, channel: expected / computed, tolerance):\n");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED || !r->has_ffn) continue;
        fprintf(fp, "  layer %zu: out[%zu, %zu] %.9g / %.9g, tol %.3g\n", r->layer, r->out.worst / c->model->n_embd,
                r->out.worst % c->model->n_embd, r->out.worst_expected, r->out.worst_computed, r->out.worst_tol);
    }
}

/* Each GELU form's margin per layer (and against the recorded pre/act). */
static void text_gelu_forms(FILE *fp, const g2f_verify_result *res) {
    fprintf(fp, "\nGELU forms per layer (margin of each form recomputed; <= 1 fits; on N tokens, or on the first "
                "few where the form already fails%s):\n",
            "; pre/act: act against each form of the recorded pre");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED || !r->has_ffn) continue;
        fprintf(fp, "  layer %zu (N %zu):", r->layer, r->gelu_tokens);
        for (int g = 0; g < G2F_GELU_COUNT; g++) {
            fprintf(fp, " %s %.3g", g2f_gelu_name((g2f_gelu)g), r->gelu_margin[g]);
            if (r->gelu_form_tokens[g] < r->gelu_tokens) fprintf(fp, " (first %zu)", r->gelu_form_tokens[g]);
            fprintf(fp, "%s", g + 1 < G2F_GELU_COUNT ? "," : "");
        }
        if (r->has_gelu_pa) {
            fprintf(fp, "; pre/act:");
            for (int g = 0; g < G2F_GELU_COUNT; g++)
                fprintf(fp, " %s %.3g%s", g2f_gelu_name((g2f_gelu)g), r->gelu_margin_pa[g],
                        g + 1 < G2F_GELU_COUNT ? "," : "");
        }
        fprintf(fp, "\n");
    }
    fprintf(fp, "\n");
}

/* The failing layers' explanations, when any failed. */
static void text_failing_layers(FILE *fp, const g2f_verify_result *res) {
    if (!res->failed) return;
    esc_pool ep = {{0}, 0};
    if (res->failed == 1 && res->compared == 1) fprintf(fp, "failing layer (the only one compared):\n");
    else if (res->failed == res->compared) fprintf(fp, "failing layers (all %zu compared):\n", res->compared);
    else fprintf(fp, "failing layer%s (%zu of the %zu compared):\n", res->failed == 1 ? "" : "s", res->failed,
                 res->compared);
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status != G2F_LAYER_FAIL) continue;
        fprintf(fp, "  %s\n", esc(&ep, r->explanation));
        esc_pool_free(&ep);
    }
    fprintf(fp, "\n");
}

void g2f_report_text(FILE *fp, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    text_settings(fp, c);
    char caveat[300], line[1400];
    int unverified = g2f_report_gelu_caveat(c, caveat, sizeof caveat);
    esc_pool ep = {{0}, 0};
    if (g2f_report_verdict(c, line, sizeof line) && (res->compared || res->model.present))
        fprintf(fp, "%s%s%s\n\n", esc(&ep, line), unverified ? ", but " : "", unverified ? caveat : "");
    esc_pool_free(&ep);

    text_layer_table(fp, c);
    stages_text(fp, c);
    model_section_text(fp, c);
    text_worst_elements(fp, c);
    text_gelu_forms(fp, res);
    text_failing_layers(fp, res);
    char counts[200];
    g2f_report_counts(c, counts, sizeof counts);
    fprintf(fp, "result: %s%s%s%s%s (%s)\n", !c->color ? "" : res->pass ? "\033[32m" : "\033[1;31m",
            res->pass ? "PASS" : "FAIL", c->color ? "\033[0m" : "", unverified ? ", but " : "", unverified ? caveat : "",
            counts);
    if (g2f_report_hint(c, line, sizeof line)) fprintf(fp, "hint: %s\n", line);
}

static cJSON *cmp_json(jb *b, const g2f_cmp *c, size_t width) {
    cJSON *o = j_check(b, cJSON_CreateObject());
    j_num(b, o, "max_abs_err", c->max_abs);
    j_num(b, o, "max_rel_err", c->max_rel);
    j_num(b, o, "margin", c->margin);
    j_num(b, o, "mismatched", (double)c->mismatched);
    j_num(b, o, "total", (double)c->total);
    j_num(b, o, "nonfinite", (double)c->nonfinite);
    j_num(b, o, "cosine", c->cosine);
    if (isfinite(c->sqnr_db)) j_num(b, o, "sqnr_db", c->sqnr_db);
    else j_null(b, o, "sqnr_db");
    cJSON *w = j_obj(b, o, "worst");
    j_num(b, w, "token", (double)(c->worst / width));
    j_num(b, w, "index", (double)(c->worst % width));
    j_num(b, w, "expected", c->worst_expected);
    j_num(b, w, "computed", c->worst_computed);
    j_num(b, w, "tolerance", c->worst_tol);
    return o;
}

/* The block's stages of a layer ("stages": docs/json.md): one entry
 * per stage, in block order, whether recorded or not, so that a reader can
 * index them; and the chained pass from h.L.in. */
/* An array of a code set's names under key. */
static void set_json(jb *b, cJSON *o, const char *key, g2f_diag_set set) {
    char names[256];
    g2f_diag_set_format(set, names, sizeof names);
    cJSON *arr = j_arr(b, o, key);
    for (char *save = NULL, *tok = strtok_r(names, ",", &save); arr && tok; tok = strtok_r(NULL, ",", &save))
        j_add(b, arr, NULL, cJSON_CreateString(tok));
}

static void stages_json(jb *b, cJSON *l, const g2f_layer_result *r) {
    const g2f_block_result *br = &r->block;
    cJSON *arr = j_arr(b, l, "stages");
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST && arr; s++) {
        const g2f_stage_result *st = &br->stage[s];
        cJSON *o = j_check(b, cJSON_CreateObject());
        j_str(b, o, "stage", g2f_stage_name((g2f_stage)s));
        j_str(b, o, "status", !st->checked ? "not_checked" : st->pass ? "pass" : "fail");
        if (st->checked) {
            j_num(b, o, "margin", st->margin);
            j_num(b, o, "mismatched", (double)st->mismatched);
            j_num(b, o, "total", (double)st->total);
            j_num(b, o, "cosine", st->worst.cosine);
            cJSON *w = j_obj(b, o, "worst");
            j_str(b, w, "tensor", st->worst_tensor ? st->worst_tensor : "");
            j_num(b, w, "index", (double)st->worst.worst);
            j_num(b, w, "expected", st->worst.worst_expected);
            j_num(b, w, "computed", st->worst.worst_computed);
            j_num(b, w, "tolerance", st->worst.worst_tol);
            cJSON *codes = j_arr(b, o, "diagnosis");
            cJSON *causes = j_arr(b, o, "causes");
            if (s == G2F_STAGE_MLP) { /* the FFN's own, as the layer's fields */
                for (size_t k = 0; codes && causes && k < r->diag.n_causes; k++) {
                    char one[128];
                    g2f_cause_codes(&r->diag.causes[k], one, sizeof one);
                    cJSON *cause = j_check(b, cJSON_CreateObject()), *list = j_arr(b, cause, "codes");
                    for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                        j_add(b, list, NULL, cJSON_CreateString(tok));
                        j_add(b, codes, NULL, cJSON_CreateString(tok));
                    }
                    j_num(b, cause, "margin", r->diag.causes[k].margin);
                    j_add(b, causes, NULL, cause);
                }
            } else {
                for (size_t k = 0; codes && causes && k < st->n_causes; k++) {
                    char one[128];
                    g2f_cause_codes(&st->causes[k], one, sizeof one);
                    cJSON *cause = j_check(b, cJSON_CreateObject()), *list = j_arr(b, cause, "codes");
                    for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                        j_add(b, list, NULL, cJSON_CreateString(tok));
                        j_add(b, codes, NULL, cJSON_CreateString(tok));
                    }
                    j_num(b, cause, "margin", st->causes[k].margin);
                    j_add(b, causes, NULL, cause);
                }
                if (!st->pass && !st->n_causes && codes) j_add(b, codes, NULL, cJSON_CreateString("unexplained"));
            }
            g2f_diag_set acc = s == G2F_STAGE_MLP ? r->accepted : st->accepted;
            if (acc) set_json(b, o, "accepted", acc); /* judged on that cause (--accept) */
        }
        j_add(b, arr, NULL, o);
    }
    if (!br->chained) {
        j_null(b, l, "chained");
    } else {
        cJSON *ch = j_obj(b, l, "chained");
        j_bool(b, ch, "diverged", br->diverged);
        if (br->chain_accepted) set_json(b, ch, "accepted", br->chain_accepted);
        if (br->diverged) {
            j_str(b, ch, "first_stage", g2f_stage_name(br->first_stage));
            j_str(b, ch, "tensor", br->first_tensor ? br->first_tensor : "");
            j_num(b, ch, "margin", br->first_margin);
        } else {
            j_null(b, ch, "first_stage");
        }
    }
    if (br->attn_skipped) j_str(b, l, "attention_note", br->note);
}

/* One element of the "layers" array of the verify report. */
static cJSON *layer_json(jb *b, const g2f_report_ctx *c, const g2f_layer_result *r) {
    const g2f_model_info *mi = c->model;
    cJSON *l = j_check(b, cJSON_CreateObject());
    j_num(b, l, "layer", (double)r->layer);
    j_str(b, l, "status", g2f_layer_status_name(r->status));
    if (r->status != G2F_LAYER_SKIPPED && r->has_ffn) j_str(b, l, "ffn_status", g2f_layer_status_name(r->ffn_status));
    j_str(b, l, "explanation", r->explanation);
    if (r->status == G2F_LAYER_SKIPPED) return l;
    j_bool(b, l, "ffn_compared", r->has_ffn);
    if (r->has_block) stages_json(b, l, r);
    if (!r->has_ffn) return l; /* the fields below describe the FFN */
    g2f_layer_totals tot = g2f_layer_result_totals(r);
    j_num(b, l, "tokens", (double)r->tokens);
    j_num(b, l, "max_abs_err", r->out.max_abs);
    j_num(b, l, "max_rel_err", r->out.max_rel);
    j_num(b, l, "mismatched", (double)tot.mismatched);
    j_num(b, l, "total", (double)tot.total);
    j_num(b, l, "margin", tot.margin);
    j_str(b, l, "best_gelu", g2f_best_gelu_name(r->best_gelu));
    j_bool(b, l, "gelu_verified", g2f_layer_gelu_verified(r));
    j_num(b, l, "sep_out", r->sep_out);
    if (r->has_act) j_num(b, l, "sep_act", r->sep_act);
    else j_null(b, l, "sep_act");
    j_num(b, l, "gelu_separation", r->gelu_separation);
    cJSON *gm = j_obj(b, l, "gelu_margins");
    for (int g = 0; g < G2F_GELU_COUNT; g++) j_num(b, gm, g2f_gelu_name((g2f_gelu)g), r->gelu_margin[g]);
    j_num(b, l, "gelu_tokens", (double)r->gelu_tokens);
    cJSON *gt = j_obj(b, l, "gelu_margin_tokens");
    for (int g = 0; g < G2F_GELU_COUNT; g++) j_num(b, gt, g2f_gelu_name((g2f_gelu)g), (double)r->gelu_form_tokens[g]);
    if (r->has_gelu_pa) {
        cJSON *pa = j_obj(b, l, "gelu_margins_pre_act");
        for (int g = 0; g < G2F_GELU_COUNT; g++) j_num(b, pa, g2f_gelu_name((g2f_gelu)g), r->gelu_margin_pa[g]);
    }
    cJSON *codes = j_arr(b, l, "diagnosis");
    cJSON *causes = j_arr(b, l, "causes");
    for (size_t k = 0; codes && causes && k < r->diag.n_causes; k++) {
        char one[128];
        g2f_cause_codes(&r->diag.causes[k], one, sizeof one);
        cJSON *cause = j_check(b, cJSON_CreateObject());
        cJSON *list = j_arr(b, cause, "codes");
        for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            j_add(b, list, NULL, cJSON_CreateString(tok));
            j_add(b, codes, NULL, cJSON_CreateString(tok));
        }
        j_num(b, cause, "margin", r->diag.causes[k].margin);
        j_add(b, causes, NULL, cause);
    }
    for (int d = G2F_DIAG_NONFINITE; codes && d < G2F_DIAG_COUNT; d++)
        if (r->diagnosis & G2F_DIAG_BIT(d)) j_add(b, codes, NULL, cJSON_CreateString(g2f_diag_name(d)));
    j_bool(b, l, "undetermined", r->diag.undetermined);
    if (r->accepted) {
        char one[128];
        g2f_cause_codes(&r->accepted_cause, one, sizeof one);
        cJSON *acc = j_arr(b, l, "accepted");
        for (char *save = NULL, *tok = strtok_r(one, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            j_add(b, acc, NULL, cJSON_CreateString(tok));
    }
    if (r->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED))) j_str(b, l, "where", r->diag.where);
    if (r->status == G2F_LAYER_FAIL && !(r->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_NONFINITE))))
        j_num(b, l, "hypotheses_tried", (double)r->diag.hypotheses_tried);
    cJSON *cmp = j_obj(b, l, "compared");
    j_add(b, cmp, "out", cmp_json(b, &r->out, mi->n_embd));
    j_add(b, cmp, "out_other_gelu", cmp_json(b, &r->out_other, mi->n_embd));
    if (r->has_pre) j_add(b, cmp, "pre", cmp_json(b, &r->pre, mi->n_inner));
    if (r->has_act) j_add(b, cmp, "act", cmp_json(b, &r->act, mi->n_inner));
    return l;
}

static cJSON *mstage_json(jb *b, const g2f_stage_result *r, size_t width) {
    cJSON *o = j_check(b, cJSON_CreateObject());
    j_str(b, o, "status", !r->checked ? "not_checked" : r->pass ? "pass" : "fail");
    if (!r->checked) return o;
    j_str(b, o, "tensor", r->worst_tensor ? r->worst_tensor : "");
    j_num(b, o, "margin", r->margin);
    j_num(b, o, "mismatched", (double)r->mismatched);
    j_num(b, o, "total", (double)r->total);
    j_num(b, o, "cosine", r->worst.cosine);
    cJSON *w = j_obj(b, o, "worst");
    j_num(b, w, "token", (double)(r->worst.worst / (width ? width : 1)));
    j_num(b, w, "index", (double)(r->worst.worst % (width ? width : 1)));
    j_num(b, w, "expected", r->worst.worst_expected);
    j_num(b, w, "computed", r->worst.worst_computed);
    j_num(b, w, "tolerance", r->worst.worst_tol);
    cJSON *codes = j_arr(b, o, "diagnosis");
    if (r->propagated[0]) {
        char one[96];
        snprintf(one, sizeof one, "%s:%s", g2f_diag_name(G2F_DIAG_PROPAGATED), r->propagated);
        j_add(b, codes, NULL, cJSON_CreateString(one));
        return o;
    }
    for (size_t k = 0; codes && k < r->n_causes; k++) {
        char one[96];
        g2f_cause_codes(&r->causes[k], one, sizeof one);
        j_add(b, codes, NULL, cJSON_CreateString(one));
    }
    if (!r->pass && !r->n_causes && codes) j_add(b, codes, NULL, cJSON_CreateString("unexplained"));
    return o;
}

/* The loss stage ("forward"."loss", only when the fixture records one). */
static cJSON *loss_side_json(jb *b, const g2f_loss_side *sd) {
    if (!sd->checked) return j_check(b, cJSON_CreateNull());
    cJSON *o = j_check(b, cJSON_CreateObject());
    j_str(b, o, "status", sd->pass ? "pass" : "fail");
    j_num(b, o, "loss", sd->r.loss);
    j_num(b, o, "bound", sd->r.bound);
    j_num(b, o, "margin", sd->margin);
    return o;
}

static cJSON *loss_json(jb *b, const g2f_report_ctx *c) {
    const g2f_loss_stage *l = &c->result->loss;
    cJSON *o = j_check(b, cJSON_CreateObject());
    char lc[32], li[32], ld[300], line[700];
    g2f_report_loss(c, lc, li, sizeof lc, ld, sizeof ld, line, sizeof line);
    j_str(b, o, "status", !l->checked ? "not_checked" : l->pass ? "pass" : "fail");
    if (l->why) j_str(b, o, "why", l->why);
    else j_null(b, o, "why");
    j_num(b, o, "reference", l->reference);
    j_num(b, o, "positions", (double)l->rows);
    j_add(b, o, "chained", loss_side_json(b, &l->chained));
    j_add(b, o, "isolated", loss_side_json(b, &l->isolated));
    cJSON *codes = j_arr(b, o, "diagnosis"); /* the text row's words */
    if (codes && l->checked && !l->pass) j_add(b, codes, NULL, cJSON_CreateString(ld));
    j_num(b, o, "gradients_not_checked", (double)l->gradients);
    return o;
}

/* The chained layers of the forward ("forward.layers"). */
static void chain_layers_json(jb *b, cJSON *o, const g2f_model_result *mr) {
    cJSON *layers = j_arr(b, o, "layers");
    for (size_t L = 0; layers && L < mr->n_layers; L++) {
        const g2f_chain_verdict *v = &mr->layers[L];
        cJSON *l = j_check(b, cJSON_CreateObject());
        j_num(b, l, "layer", (double)L);
        j_bool(b, l, "diverged", v->diverged);
        if (v->diverged) {
            j_str(b, l, "first_stage", g2f_stage_name(v->first_stage));
            j_str(b, l, "tensor", v->first_tensor ? v->first_tensor : "");
            j_num(b, l, "margin", v->first_margin);
        } else {
            j_null(b, l, "first_stage");
        }
        cJSON *m = j_obj(b, l, "margins");
        for (int k = G2F_BLOCK_FIRST; m && k <= G2F_BLOCK_LAST; k++)
            if (v->stage[k].checked) j_num(b, m, g2f_stage_name((g2f_stage)k), v->stage[k].margin);
        char cell[32], what[96], diag[300];
        g2f_report_chain_layer(mr, L, cell, sizeof cell, what, sizeof what, diag, sizeof diag);
        cJSON *codes = j_arr(b, l, "diagnosis"); /* the same words as the text row's */
        for (char *save = NULL, *tok = strtok_r(diag, " |", &save); codes && tok && strcmp(diag, "-");
             tok = strtok_r(NULL, " |", &save))
            j_add(b, codes, NULL, cJSON_CreateString(tok));
        j_add(b, layers, NULL, l);
    }
}

/* The logits' top-1 agreement ("forward.logits_agreement"), with the
 * tokens as text where a tokenizer is known. */
static void agreement_json(jb *b, cJSON *o, const g2f_model_result *mr, const g2f_tokenizer *tkz) {
    const g2f_logit_agreement *a = &mr->agree;
    if (!a->computed) {
        j_null(b, o, "logits_agreement");
    } else {
        cJSON *ag = j_obj(b, o, "logits_agreement");
        j_num(b, ag, "top1_agree", (double)a->top1_agree);
        j_num(b, ag, "positions", (double)a->positions);
        j_num(b, ag, "max_kl", a->max_kl);
        j_num(b, ag, "max_kl_position", (double)a->max_kl_position);
        cJSON *dp = j_arr(b, ag, "differing_positions");
        for (size_t i = 0; dp && i < a->n_differing; i++) {
            cJSON *pos = j_check(b, cJSON_CreateObject());
            j_num(b, pos, "sequence", (double)(a->differing[i] / (mr->T ? mr->T : 1)));
            j_num(b, pos, "token", (double)(a->differing[i] % (mr->T ? mr->T : 1)));
            for (int side = 0; tkz && side < 2; side++) { /* with a tokenizer: the two top-1 tokens, id and text */
                char text[80];
                size_t id = side ? a->our_top1[i] : a->ref_top1[i];
                cJSON *t = j_obj(b, pos, side ? "ours" : "reference");
                g2f_tokenizer_token_text(tkz, (int64_t)id, text, sizeof text);
                j_num(b, t, "id", (double)id);
                j_str(b, t, "text", text);
            }
            j_add(b, dp, NULL, pos);
        }
    }
}

/* The whole forward ("forward": docs/json.md). */
static cJSON *forward_json(jb *b, const g2f_report_ctx *c, size_t d) {
    const g2f_model_result *mr = &c->result->model;
    cJSON *o = j_check(b, cJSON_CreateObject());
    j_str(b, o, "status", mr->skipped ? "not_checked" : mr->pass ? "pass" : "fail");
    set_json(b, o, "accepted", mr->accepted);
    j_num(b, o, "compared", (double)mr->compared);
    j_num(b, o, "failed", (double)mr->failed);
    j_bool(b, o, "chained", mr->chained);
    if (mr->chain_note[0]) j_str(b, o, "chain_note", mr->chain_note);
    else j_null(b, o, "chain_note");
    j_num(b, o, "sequences", (double)mr->n_seq);
    j_num(b, o, "tokens", (double)mr->T);
    j_num(b, o, "vocab", (double)mr->vocab);
    j_str(b, o, "head", mr->head_tied ? "tied" : "untied");
    if (!mr->diverged) {
        j_null(b, o, "first_divergence");
    } else {
        cJSON *fd = j_obj(b, o, "first_divergence");
        if (mr->first_layer >= 0) j_num(b, fd, "layer", (double)mr->first_layer);
        else j_null(b, fd, "layer");
        j_str(b, fd, "stage", mr->first_stage != G2F_STAGE_NONE ? g2f_stage_name(mr->first_stage) : "");
        j_str(b, fd, "tensor", mr->first_tensor ? mr->first_tensor : "");
        j_num(b, fd, "margin", mr->first_margin);
        cJSON *codes = j_arr(b, fd, "codes");
        char buf[sizeof mr->first_codes];
        snprintf(buf, sizeof buf, "%s", mr->first_codes);
        for (char *save = NULL, *tok = strtok_r(buf, " |", &save); codes && tok; tok = strtok_r(NULL, " |", &save))
            j_add(b, codes, NULL, cJSON_CreateString(tok));
        if (mr->first_not_diagnosed[0]) j_str(b, fd, "not_diagnosed", mr->first_not_diagnosed);
    }
    size_t w[G2F_STAGE_COUNT] = {[G2F_STAGE_EMBED] = d, [G2F_STAGE_LN_F] = d, [G2F_STAGE_LOGITS] = mr->vocab};
    cJSON *ch = j_obj(b, o, "chained_stages"), *iso = j_obj(b, o, "isolated_stages");
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        j_add(b, ch, g2f_stage_name((g2f_stage)s), mstage_json(b, &mr->chain[s], w[s]));
        j_add(b, iso, g2f_stage_name((g2f_stage)s), mstage_json(b, &mr->iso[s], w[s]));
    }
    chain_layers_json(b, o, mr);
    agreement_json(b, o, mr, c->tokenizer);
    if (c->result->loss.present) j_add(b, o, "loss", loss_json(b, c));
    return o;
}

/* What the reports say about the fixture's names: aliases, unknown names,
 * how TransformerLens' hook_normalized captures were read. */
static void names_json(jb *bp, cJSON *root, const g2f_verify_result *res) {
    cJSON *al = j_arr(bp, root, "aliases");
    for (size_t i = 0; al && i < res->n_aliases; i++) {
        const g2f_alias_check *a = &res->aliases[i];
        cJSON *o = j_check(bp, cJSON_CreateObject());
        j_str(bp, o, "kept", a->kept);
        j_str(bp, o, "other", a->other);
        j_bool(bp, o, "same", a->same);
        j_bool(bp, o, "shapes_differ", a->shapes_differ);
        j_num(bp, o, "differing", (double)a->differing);
        j_num(bp, o, "total", (double)a->total);
        j_num(bp, o, "max_abs_diff", a->max_abs);
        j_add(bp, al, NULL, o);
    }
    cJSON *uk = j_arr(bp, root, "unknown_tensors");
    for (size_t i = 0; uk && i < res->n_unknown; i++) {
        cJSON *o = j_check(bp, cJSON_CreateObject());
        j_str(bp, o, "name", res->unknown[i].name);
        if (res->unknown[i].suggestion[0]) j_str(bp, o, "did_you_mean", res->unknown[i].suggestion);
        else j_null(bp, o, "did_you_mean");
        if (res->unknown[i].why[0]) j_str(bp, o, "why", res->unknown[i].why);
        j_add(bp, uk, NULL, o);
    }
    j_num(bp, root, "unknown_tensors_total", (double)res->n_unknown_total);
    static const char *const readings[] = {"after", "before", "same", "undecided"};
    cJSON *nr = j_arr(bp, root, "tl_normalized");
    for (size_t i = 0; nr && i < res->n_norms; i++) {
        cJSON *o = j_check(bp, cJSON_CreateObject());
        j_str(bp, o, "tensor", res->norms[i].name);
        j_str(bp, o, "reading", readings[res->norms[i].reading]);
        j_bool(bp, o, "forced", res->norms[i].forced);
        j_add(bp, nr, NULL, o);
    }
}

char *g2f_report_json(const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    jb b = {0};
    cJSON *root = j_check(&b, cJSON_CreateObject());
    j_str(&b, root, "checkpoint", c->checkpoint_arg);
    j_str(&b, root, "fixtures", c->fixtures_arg);
    j_str(&b, root, "gelu", g2f_gelu_name(res->gelu));
    j_str(&b, root, "gelu_source", c->gelu_source);
    j_str(&b, root, "status", res->pass ? "pass" : "fail");
    char verdict[1400], caveat[300];
    size_t vlen = 0;
    if (g2f_report_verdict(c, verdict, sizeof verdict)) vlen = strlen(verdict);
    if (g2f_report_gelu_caveat(c, caveat, sizeof caveat) && vlen < sizeof verdict)
        snprintf(verdict + vlen, sizeof verdict - vlen, ", but %s", caveat);
    j_str(&b, root, "verdict", verdict);
    char hint[1400];
    if (g2f_report_hint(c, hint, sizeof hint)) j_str(&b, root, "hint", hint);
    else j_null(&b, root, "hint");
    g2f_verify_summary sum;
    g2f_verify_summarize(res, &sum);
    j_bool(&b, root, "gelu_verified", sum.gelu_verified);
    if (c->fixture_sha256) j_str(&b, root, "fixture_checkpoint_sha256", c->fixture_sha256);
    else j_null(&b, root, "fixture_checkpoint_sha256");
    int match = g2f_report_sha256_match(c);
    if (match < 0) j_null(&b, root, "checkpoint_sha256_match");
    else j_bool(&b, root, "checkpoint_sha256_match", match);
    if (c->checkpoint_sha256) j_bool(&b, root, "checkpoint_sha256_cached", c->checkpoint_sha256_cached);
    else j_null(&b, root, "checkpoint_sha256_cached");
    j_add(&b, root, "model", model_json(&b, c->model));
    cJSON *tol = j_obj(&b, root, "tolerance");
    j_str(&b, tol, "mode", c->tol->user ? "user" : "derived");
    if (c->tol->user) {
        j_num(&b, tol, "rtol", c->tol->rtol);
        j_num(&b, tol, "atol", c->tol->atol);
    } else {
        j_num(&b, tol, "sigmas", g2f_tol_lambda(c->tol));
        j_str(&b, tol, "sums_of_squares", g2f_ffn_squares_bf16() ? "bfloat16_up" : "float32");
    }
    j_str(&b, tol, "kernels", g2f_ffn_isa());
    j_str(&b, root, "fixture_dtype", g2f_dtype_name(c->fixture_dtype));
    if (c->fixture_claim) j_str(&b, root, "fixture_gelu_claim", c->fixture_claim);
    else j_null(&b, root, "fixture_gelu_claim");
    names_json(&b, root, res);
    if (res->first_fail >= 0) j_num(&b, root, "first_divergence", (double)res->first_fail);
    else j_null(&b, root, "first_divergence");
    if (res->first_fail >= 0 && res->first_stage != G2F_STAGE_NONE)
        j_str(&b, root, "first_stage", g2f_stage_name(res->first_stage));
    else j_null(&b, root, "first_stage");
    cJSON *layers = j_arr(&b, root, "layers");
    for (size_t i = 0; !b.failed && i < res->n_layers; i++) j_add(&b, layers, NULL, layer_json(&b, c, &res->layers[i]));
    if (res->model.present) j_add(&b, root, "forward", forward_json(&b, c, c->model->n_embd));
    else j_null(&b, root, "forward");
    return j_finish(&b, root);
}

void g2f_report_inspect_text(FILE *fp, const g2f_model_info *mi, const g2f_inspect_result *r) {
    model_text(fp, "checkpoint", mi);
    fprintf(fp, "ffn params  %zu per layer, %zu in all\n\n", r->ffn_params, r->ffn_params * r->n_layers);
    fprintf(fp, "%5s %-18s %-5s %-14s %11s %11s %11s %11s %5s %5s\n", "layer", "tensor", "dtype", "shape", "min",
            "max", "mean", "std", "nan", "inf");
    for (size_t L = 0; L < r->n_layers; L++) {
        for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
            const g2f_tensor *t = r->layers[L].tensor[k];
            const g2f_stats *st = &r->layers[L].stats[k];
            if (!t) {
                /* the FFN's roles always show; the block's only when stored */
                if (k < G2F_FFN_TENSORS) fprintf(fp, "%5zu %-18s (absent)\n", L, g2f_model_tensor_role(k));
                continue;
            }
            char sh[64];
            g2f_shape_format(t, sh, sizeof sh);
            fprintf(fp, "%5zu %-18s %-5s %-14s %11.4g %11.4g %11.4g %11.4g %5llu %5llu\n", L, g2f_model_tensor_role(k),
                    g2f_tensor_type_name(t), sh, st->min, st->max, st->mean, st->std, (unsigned long long)st->nan,
                    (unsigned long long)st->inf);
        }
        if (r->layers[L].attn_split)
            fprintf(fp, "%5zu %-18s (q, k, v and the output stored apart: W_Q, W_K, W_V, W_O)\n", L, "attention");
    }
}

static cJSON *shape_json(jb *b, const g2f_tensor *t) {
    cJSON *a = j_check(b, cJSON_CreateArray());
    for (size_t d = 0; a && d < t->ndim; d++) j_add(b, a, NULL, cJSON_CreateNumber((double)t->shape[d]));
    return a;
}

char *g2f_report_inspect_json(const char *checkpoint_arg, const g2f_model_info *mi, const g2f_inspect_result *r) {
    jb b = {0};
    cJSON *root = j_check(&b, cJSON_CreateObject());
    j_str(&b, root, "checkpoint", checkpoint_arg);
    j_add(&b, root, "model", model_json(&b, mi));
    j_num(&b, root, "ffn_params_per_layer", (double)r->ffn_params);
    cJSON *layers = j_arr(&b, root, "layers");
    for (size_t L = 0; !b.failed && L < r->n_layers; L++) {
        cJSON *l = j_check(&b, cJSON_CreateObject());
        j_num(&b, l, "layer", (double)L);
        if (r->layers[L].attn_split) j_bool(&b, l, "attn_split", 1);
        cJSON *ts = j_arr(&b, l, "tensors");
        for (int k = 0; ts && k < G2F_LAYER_TENSORS; k++) {
            const g2f_tensor *t = r->layers[L].tensor[k];
            if (!t) continue;
            const g2f_stats *st = &r->layers[L].stats[k];
            cJSON *o = j_check(&b, cJSON_CreateObject());
            j_str(&b, o, "role", g2f_model_tensor_role(k));
            j_str(&b, o, "name", t->name);
            j_str(&b, o, "dtype", g2f_tensor_type_name(t));
            j_add(&b, o, "shape", shape_json(&b, t));
            j_num(&b, o, "min", st->min);
            j_num(&b, o, "max", st->max);
            j_num(&b, o, "mean", st->mean);
            j_num(&b, o, "std", st->std);
            j_num(&b, o, "nan", (double)st->nan);
            j_num(&b, o, "inf", (double)st->inf);
            j_add(&b, ts, NULL, o);
        }
        j_add(&b, layers, NULL, l);
    }
    return j_finish(&b, root);
}

static void diff_verdict(const g2f_diff_tensor *t, char *buf, size_t n) {
    if (t->kind == G2F_DIFF_FROM_LAYER) snprintf(buf, n, "from_layer:%ld", t->from_layer);
    else if (t->kind == G2F_DIFF_QUANTIZED || t->kind == G2F_DIFF_QUANT_INCONSISTENT)
        snprintf(buf, n, "%s:%s", g2f_diff_kind_name(t->kind), g2f_dtype_name(t->quant));
    else if (t->kind == G2F_DIFF_SCALED) snprintf(buf, n, "scaled:%.6g", t->scale);
    else snprintf(buf, n, "%s", g2f_diff_kind_name(t->kind));
}

/* A verdict in words beyond its code, for the text report. */
static void diff_detail(const g2f_diff_tensor *t, char *buf, size_t n) {
    buf[0] = '\0';
    if (t->kind == G2F_DIFF_QUANTIZED)
        snprintf(buf, n, " (%.2f steps)%s", t->max_steps, t->accepted ? ", accepted" : "");
    else if (t->kind == G2F_DIFF_MISSING || t->kind == G2F_DIFF_ZERO_BIAS) /* the size of what is missing */
        snprintf(buf, n, " (only %c has it: %zu value%s, largest |value| %.3g)", t->missing_in ? t->missing_in : '?',
                 t->missing_values, t->missing_values == 1 ? "" : "s", t->max_abs);
    else if (t->kind == G2F_DIFF_HELD_BY_ONE)
        snprintf(buf, n, " (only %c holds it)", t->missing_in ? t->missing_in : '?');
}

/* One row of the diff table: where (a layer or blank), the tensor, the
 * numbers when compared, the verdict and, on the next line, its note. */
static void diff_row(FILE *fp, const char *where, const char *label, const g2f_diff_tensor *t) {
    esc_pool ep = {{0}, 0};
    char v[64], q[128], num[32] = "", rel[32] = "";
    diff_verdict(t, v, sizeof v);
    diff_detail(t, q, sizeof q);
    int cmp = g2f_diff_kind_compared(t->kind) && t->kind != G2F_DIFF_SHAPE;
    if (cmp) snprintf(num, sizeof num, "%11.3e", t->max_abs), snprintf(rel, sizeof rel, "%11.3e", t->max_rel);
    else snprintf(num, sizeof num, "%11s", "-"), snprintf(rel, sizeof rel, "%11s", "-");
    fprintf(fp, "%5s %-18s %s %s  %s%s%s\n", where, esc(&ep, label), num, rel, v, q,
            t->equivalent || t->accepted || g2f_diff_kind_excused(t->kind) ? "" : "  <-");
    if (t->note[0]) fprintf(fp, "%5s %-18s   %s\n", "", "", esc(&ep, t->note));
    esc_pool_free(&ep);
}

/* Per-layer tensors not compared, one line per role, kind and file: "all
 * ln_1.weight held by one file only: only A holds it". */
static void diff_layer_summary(FILE *fp, const g2f_diff_result *r) {
    static const g2f_diff_kind kinds[] = {G2F_DIFF_HELD_BY_ONE, G2F_DIFF_OUTSIDE};
    static const int who[] = {'A', 'B', 0};
    for (int k = 0; k < G2F_LAYER_TENSORS; k++)
        for (int c = 0; c < 2; c++)
            for (int w = 0; w < 3; w++) {
                size_t n = 0;
                for (size_t L = 0; L < r->n_layers; L++)
                    n += r->tensors[L][k].kind == kinds[c] && r->tensors[L][k].missing_in == who[w];
                if (!n) continue;
                char where[48], held[32] = "";
                if (n == r->n_layers) snprintf(where, sizeof where, "all");
                else snprintf(where, sizeof where, "%zu of %zu", n, r->n_layers);
                if (who[w]) snprintf(held, sizeof held, " (only %c holds it)", who[w]);
                if (kinds[c] == G2F_DIFF_HELD_BY_ONE)
                    fprintf(fp, "%5s %-18s held by one file only%s  <-\n", where, g2f_model_tensor_role(k), held);
                else
                    fprintf(fp, "%5s %-18s outside --only %s%s: excused\n", where, g2f_model_tensor_role(k),
                            g2f_diff_scope_name(r->scope), held);
            }
}

/* Others excused in bulk: "8 buffers (blocks.0.attn.IGNORE, ...)". */
static void diff_excused_summary(FILE *fp, const g2f_diff_result *r, g2f_diff_kind kind, const char *what,
                                 const char *why) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_others; i++) n += r->others[i].kind == kind;
    if (!n) return;
    fprintf(fp, "  %zu %s%s (", n, what, n == 1 ? "" : "s");
    esc_pool ep = {{0}, 0};
    for (size_t i = 0, shown = 0; i < r->n_others && shown < 4; i++)
        if (r->others[i].kind == kind) {
            fprintf(fp, "%s%s", shown ? ", " : "", esc(&ep, r->others[i].label));
            esc_pool_free(&ep);
            shown++;
        }
    fprintf(fp, "%s): %s, not compared\n", n > 4 ? ", ..." : "", why);
}

/* The tensors held by one file only, each named: a per-layer role once
 * for the layers it is held in ("A's ln_1.weight in all 4 layers
 * (transformer.h.0.ln_1.weight, ...)"), then the ends and the others. */
static void diff_held_names(FILE *fp, const g2f_diff_result *r) {
    if (!r->held_by_one) return;
    fprintf(fp, "held by one file only:");
    int first = 1;
    esc_pool ep = {{0}, 0};
    for (int k = 0; k < G2F_LAYER_TENSORS; k++)
        for (int w = 'A'; w <= 'B'; w++) {
            size_t n = 0, L0 = 0;
            for (size_t L = 0; L < r->n_layers; L++)
                if (r->tensors[L][k].kind == G2F_DIFF_HELD_BY_ONE && r->tensors[L][k].missing_in == w && !n++) L0 = L;
            if (!n) continue;
            const g2f_diff_tensor *t = &r->tensors[L0][k];
            fprintf(fp, "%s %c's %s in %s%zu layer%s (%s%s)", first ? "" : ",", w, g2f_model_tensor_role(k),
                    n == r->n_layers ? "all " : "", n, n == 1 ? "" : "s", esc(&ep, w == 'A' ? t->name_a : t->name_b),
                    n > 1 ? ", ..." : "");
            esc_pool_free(&ep);
            first = 0;
        }
    for (size_t i = r->n_layers * G2F_LAYER_TENSORS; i < g2f_diff_entries(r); i++) {
        const char *label;
        const g2f_diff_tensor *t = g2f_diff_entry(r, i, NULL, &label);
        if (t->kind != G2F_DIFF_HELD_BY_ONE) continue;
        const char *name = t->missing_in == 'A' ? t->name_a : t->name_b;
        fprintf(fp, "%s %c's %s", first ? "" : ",", t->missing_in, esc(&ep, label));
        if (name && strcmp(name, label)) fprintf(fp, " (%s)", esc(&ep, name));
        esc_pool_free(&ep);
        first = 0;
    }
    fprintf(fp, "\n");
}

void g2f_report_diff_text(FILE *fp, const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r) {
    model_text(fp, "A", a);
    model_text(fp, "B", b);
    if (r->scope != G2F_DIFF_SCOPE_ALL)
        fprintf(fp, "scope       --only %s: %s; everything else is excused\n", g2f_diff_scope_name(r->scope),
                r->scope == G2F_DIFF_SCOPE_FFN ? "the FFN tensors of every layer" : "every tensor of every layer");
    fprintf(fp, "\n");
    if (!r->same_sizes) {
        fprintf(fp, "%s\nresult: DIFFERENT\n", r->sizes_msg);
        return;
    }
    fprintf(fp, "%5s %-18s %11s %11s  %s\n", "layer", "tensor", "max_abs", "max_rel", "verdict");
    for (size_t L = 0; L < r->n_layers; L++)
        for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
            const g2f_diff_tensor *t = &r->tensors[L][k];
            if (t->kind == G2F_DIFF_ABSENT || t->kind == G2F_DIFF_HELD_BY_ONE || t->kind == G2F_DIFF_OUTSIDE) continue;
            char where[24];
            snprintf(where, sizeof where, "%zu", L);
            diff_row(fp, where, g2f_model_tensor_role(k), t);
        }
    diff_layer_summary(fp, r);
    fprintf(fp, "\n%5s %-18s %11s %11s  %s\n", "", "model tensor", "max_abs", "max_rel", "verdict");
    for (int k = 0; k < G2F_END_TENSORS; k++)
        if (r->ends[k].kind != G2F_DIFF_ABSENT) diff_row(fp, "", g2f_model_end_role(k), &r->ends[k]);
    if (r->n_others) {
        fprintf(fp, "\n%5s %-18s %11s %11s  %s\n", "", "other tensor", "max_abs", "max_rel", "verdict");
        for (size_t i = 0; i < r->n_others; i++)
            if (!g2f_diff_kind_excused(r->others[i].kind)) diff_row(fp, "", r->others[i].label, &r->others[i]);
        diff_excused_summary(fp, r, G2F_DIFF_BUFFER, "buffer", "not parameters (causal masks)");
        diff_excused_summary(fp, r, G2F_DIFF_TRAINING, "training-state tensor",
                             "beside the model's state dict (optimizer state)");
        diff_excused_summary(fp, r, G2F_DIFF_OUTSIDE, "other tensor", "outside --only");
    }
    if (r->config_msg[0]) fprintf(fp, "\nconfig      the two files define other models: %s\n", r->config_msg);
    size_t quantized = 0, unaccepted = 0;
    for (size_t i = 0; i < g2f_diff_entries(r); i++) {
        const g2f_diff_tensor *t = g2f_diff_entry(r, i, NULL, NULL);
        quantized += t->kind == G2F_DIFF_QUANTIZED;
        unaccepted += t->kind == G2F_DIFF_QUANTIZED && !t->accepted;
    }
    fprintf(fp, "\nresult: %s (%zu tensor%s compared, %zu differ%s, %zu held by one file only, %zu excused; rounding "
                "allowed: %.3g relative)\n",
            r->equivalent ? "EQUIVALENT" : r->all_accepted ? "ACCEPTED" : "DIFFERENT", r->compared,
            r->compared == 1 ? "" : "s", r->differing, r->differing == 1 ? "s" : "", r->held_by_one, r->excused,
            r->roundoff);
    diff_held_names(fp, r);
    if (quantized)
        fprintf(fp, "%zu tensors are quantized weights within the bound of ggml's reference rounding (%s)\n", quantized,
                unaccepted ? "not equivalent; --accept weights_quantized accepts them"
                           : "accepted as weights_quantized");
}

/* One tensor of the diff as JSON. */
static cJSON *diff_entry_json(jb *j, const char *label, const g2f_diff_tensor *t) {
    char v[64];
    diff_verdict(t, v, sizeof v);
    cJSON *o = j_check(j, cJSON_CreateObject());
    j_str(j, o, "tensor", label);
    j_str(j, o, "verdict", v);
    j_bool(j, o, "equivalent", t->equivalent);
    if (t->accept_class) j_str(j, o, "accept_class", g2f_diff_accept_name(t->accept_class));
    if (t->accepted) j_str(j, o, "accepted_as", g2f_diff_accept_name(t->accept_class));
    else j_null(j, o, "accepted_as");
    int cmp = g2f_diff_kind_compared(t->kind) && t->kind != G2F_DIFF_SHAPE;
    j_num(j, o, "max_abs_err", cmp && isfinite(t->max_abs) ? t->max_abs : -1);
    j_num(j, o, "max_rel_err", cmp && isfinite(t->max_rel) ? t->max_rel : -1);
    if (t->name_a) j_str(j, o, "name_a", t->name_a);
    else j_null(j, o, "name_a");
    if (t->name_b) j_str(j, o, "name_b", t->name_b);
    else j_null(j, o, "name_b");
    if (t->missing_in) {
        char in[2] = {(char)t->missing_in, 0};
        j_str(j, o, "held_by", in);
    }
    if (t->kind == G2F_DIFF_QUANTIZED) {
        cJSON *q = j_obj(j, o, "quantized");
        j_str(j, q, "type", g2f_dtype_name(t->quant));
        j_num(j, q, "max_err_steps", isfinite(t->max_steps) ? t->max_steps : -1);
        j_num(j, q, "max_err_bound_ratio", t->bound_ratio);
    }
    if (t->kind == G2F_DIFF_QUANT_INCONSISTENT) {
        cJSON *q = j_obj(j, o, "inconsistent");
        j_str(j, q, "type", g2f_dtype_name(t->quant));
        j_num(j, q, "block", (double)t->bad_block);
    }
    if (t->note[0]) j_str(j, o, "note", t->note);
    return o;
}

char *g2f_report_diff_json(const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r) {
    jb j = {0};
    cJSON *root = j_check(&j, cJSON_CreateObject());
    j_add(&j, root, "a", model_json(&j, a));
    j_add(&j, root, "b", model_json(&j, b));
    j_str(&j, root, "status", r->equivalent ? "equivalent" : r->all_accepted ? "accepted" : "different");
    cJSON *acc = j_arr(&j, root, "accept");
    for (unsigned c = 1; !j.failed && c; c <<= 1)
        if ((r->accept & c) && g2f_diff_accept_name(c)) j_add(&j, acc, NULL, j_check(&j, cJSON_CreateString(g2f_diff_accept_name(c))));
    if (r->scope != G2F_DIFF_SCOPE_ALL) j_str(&j, root, "only", g2f_diff_scope_name(r->scope));
    else j_null(&j, root, "only");
    if (!r->same_sizes) j_str(&j, root, "sizes", r->sizes_msg);
    if (r->config_msg[0]) j_str(&j, root, "config_differs", r->config_msg);
    j_num(&j, root, "roundoff", r->roundoff);
    j_num(&j, root, "compared", (double)r->compared);
    j_num(&j, root, "differing", (double)r->differing);
    j_num(&j, root, "held_by_one", (double)r->held_by_one);
    j_num(&j, root, "excused", (double)r->excused);
    cJSON *layers = j_arr(&j, root, "layers");
    for (size_t L = 0; !j.failed && L < r->n_layers; L++) {
        cJSON *l = j_check(&j, cJSON_CreateObject());
        j_num(&j, l, "layer", (double)L);
        cJSON *ts = j_arr(&j, l, "tensors");
        for (int k = 0; ts && k < G2F_LAYER_TENSORS; k++)
            if (r->tensors[L][k].kind != G2F_DIFF_ABSENT)
                j_add(&j, ts, NULL, diff_entry_json(&j, g2f_model_tensor_role(k), &r->tensors[L][k]));
        j_add(&j, layers, NULL, l);
    }
    cJSON *ends = j_arr(&j, root, "model_tensors");
    for (int k = 0; r->same_sizes && k < G2F_END_TENSORS; k++)
        if (r->ends[k].kind != G2F_DIFF_ABSENT) j_add(&j, ends, NULL, diff_entry_json(&j, g2f_model_end_role(k), &r->ends[k]));
    cJSON *others = j_arr(&j, root, "other_tensors");
    for (size_t i = 0; i < r->n_others; i++) j_add(&j, others, NULL, diff_entry_json(&j, r->others[i].label, &r->others[i]));
    cJSON *held = j_arr(&j, root, "held_by_one_tensors");
    for (size_t i = 0; i < g2f_diff_entries(r); i++) {
        long L;
        const char *label;
        const g2f_diff_tensor *t = g2f_diff_entry(r, i, &L, &label);
        if (t->kind != G2F_DIFF_HELD_BY_ONE) continue;
        cJSON *h = j_check(&j, cJSON_CreateObject());
        j_str(&j, h, "tensor", label);
        if (L >= 0) j_num(&j, h, "layer", (double)L);
        else j_null(&j, h, "layer");
        char in[2] = {(char)t->missing_in, 0};
        j_str(&j, h, "held_by", in);
        j_str(&j, h, "name", t->missing_in == 'A' ? t->name_a : t->name_b);
        j_add(&j, held, NULL, h);
    }
    return j_finish(&j, root);
}
