/* g2f_report: text and JSON reports written from one verify result, so the
 * two never disagree (the per-layer totals come from g2f_layer_result_totals,
 * as in the HTML report). The JSON schema is documented in docs/json.md and
 * checked against it by tests/test_json_schema. */
#ifndef G2F_REPORT_H
#define G2F_REPORT_H

#include <stdio.h>

#include "g2f_error.h"
#include "g2f_file.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_diff.h"
#include "g2f_inspect.h"
#include "g2f_tokenizer.h"
#include "g2f_verify.h"

typedef struct g2f_report_ctx {
    const char *checkpoint_arg;  /* as given on the command line */
    const char *fixtures_arg;
    const g2f_model_info *model;
    const char *gelu_source;     /* where the GELU choice came from */
    const char *fixture_claim;   /* metadata "gelu", or NULL */
    g2f_dtype fixture_dtype;
    const g2f_tol_params *tol;
    const g2f_verify_result *result;
    int color;                   /* ANSI colours in the text report (a TTY without NO_COLOR) */
    /* provenance: the fixture's metadata checkpoint_sha256 (NULL when it
     * records none) and this checkpoint's (g2f_model_sha256; NULL when not
     * computed, which is only done when the fixture records one) */
    const char *fixture_sha256;
    const char *checkpoint_sha256;
    int checkpoint_sha256_cached; /* 1: that digest came from the digest cache (g2f_digest_cache) */
    /* the checkpoint's tokenizer (--tokenizer, or found beside it), or NULL:
     * where the top-1 tokens differ, the reports show them as text */
    const g2f_tokenizer *tokenizer;
} g2f_report_ctx;

/* The sentences every verify report (text, JSON, HTML) shares, written
 * unescaped into buf (escape them for where they go):
 *   verdict: "all 4 compared layers match the reference" (the text and
 *     JSON reports add ", but " and the caveat below), "first divergence at
 *     layer N: <explanation>", or, when every compared layer is unexplained
 *     with |cosine| < G2F_UNRELATED_COSINE (or the fixture records another
 *     checkpoint's digest), that the fixture was most likely not made from
 *     this checkpoint;
 *   caveat (0 when the GELU form is verified on every compared layer and
 *     every recorded stage was checked, or the run fails): "these inputs
 *     cannot tell erf from tanh GELU (separation X of the tolerance): the
 *     GELU form is not verified", and/or why a recorded stage was not
 *     checked ("attention not checked: n_head unknown ...");
 *   hint (0 when none): when every compared layer fails with exactly the
 *     other GELU form, the option that would pass ("rerun with --gelu erf
 *     ...");
 *   provenance (0 when the fixture records no checkpoint digest): whether
 *     the digest it records is this checkpoint's, and when this checkpoint's
 *     came from the digest cache, that it did.
 * Each returns 1 when it wrote a sentence. */
int g2f_report_verdict(const g2f_report_ctx *c, char *buf, size_t n);
int g2f_report_gelu_caveat(const g2f_report_ctx *c, char *buf, size_t n);
int g2f_report_hint(const g2f_report_ctx *c, char *buf, size_t n);
int g2f_report_provenance(const g2f_report_ctx *c, char *buf, size_t n);
/* The counts beside the verdict, the same in text and HTML: "4 compared, 0
 * failed, 0 skipped" (layers), then what else decides the verdict: "; whole
 * model: 21 stages compared, 2 failed" and "; capture: 1 pair of names
 * disagrees", so that a FAIL's counts show what failed. */
void g2f_report_counts(const g2f_report_ctx *c, char *buf, size_t n);
/* The note on a fixture tensor nothing compares: "'X' is not a name gpt2ffn knows (did you mean 'Y'?):
 * not compared", or a known one "recorded but not compared (why)". Shared by verify's and the
 * generation's reports. */
void g2f_report_unknown_line(const g2f_fixture_unknown *u, char *buf, size_t n);
/* The fixture's notes, i = 0, 1, ... until it returns 0: a pair of names
 * for one stage that hold different values (label "capture": the capture
 * is inconsistent), the pairs that hold the same values (label "aliases",
 * one sentence for all), tensors under names that look like stages' but
 * are not ones the tool knows (label "note", with the nearest known name).
 * *label gets a static word for the text report's margin. */
int g2f_report_note(const g2f_report_ctx *c, size_t i, const char **label, char *buf, size_t n);

/* The loss stage (g2f_loss_stage.h) as every report shows it; 0 when the
 * fixture records none. Its row of the whole-model table: the chained and
 * isolated margin cells as the other stages' ("0.031", "1.2e+03!", "-"),
 * the diagnosis ("-"; "propagated:h.0.mlp" when an earlier stage diverged;
 * "unexplained"; "not checked: <why>"); and one sentence with the values:
 * what the reference records, the cross-entropy of its logits and of ours,
 * each with its bound and margin. */
int g2f_report_loss(const g2f_report_ctx *c, char *chained, char *isolated, size_t cn, char *diag, size_t dn,
                    char *line, size_t ln);

/* 1 when both digests are known and equal (case-insensitive hex), 0 when
 * they differ, -1 when the fixture records none. */
int g2f_report_sha256_match(const g2f_report_ctx *c);

/* The whole model's rows as every report shows them: how the forward ran
 * (chained from input_ids, or why not; static or borrowed from mr), and a
 * model-level stage's diagnosis ("-", the codes " | "-joined, "unexplained",
 * or "not checked: <why>"). */
const char *g2f_report_model_how(const g2f_model_result *mr);
/* Layer L's row of the whole-model table: its chained margin cell ("0.217",
 * "1.13e+05!", "-"), what it says ("first: attn (attn.probs)", "every
 * recorded stage") and its diagnosis (the first divergence's codes, or
 * propagated:<where> after it, or "-"). */
void g2f_report_chain_layer(const g2f_model_result *mr, size_t L, char *cell, size_t cn, char *what, size_t wn,
                            char *diag, size_t dn);
void g2f_report_mstage_codes(const g2f_model_result *mr, int s, char *buf, size_t n);

/* Human-readable report: a one-sentence verdict, then the per-layer table.
 * Strings from files and from the command line are escaped for the
 * terminal (g2f_text.h), here and in the inspect and diff reports. */
void g2f_report_text(FILE *fp, const g2f_report_ctx *c);

/* JSON report as a malloc'd string the caller frees; NULL when any
 * allocation fails (never a partial report). Strings from files are escaped
 * for JSON: control, DEL, C1 and bidi characters as \uXXXX, bytes that are
 * not UTF-8 as U+FFFD; non-finite numbers are written as null. The same for
 * the inspect and diff reports below. */
char *g2f_report_json(const g2f_report_ctx *c);

/* inspect: the checkpoint's description and per-layer tensor statistics. */
void g2f_report_inspect_text(FILE *fp, const g2f_model_info *mi, const g2f_inspect_result *r);
char *g2f_report_inspect_json(const char *checkpoint_arg, const g2f_model_info *mi, const g2f_inspect_result *r);

/* diff: per layer and tensor, the difference of B against A and its kind. */
void g2f_report_diff_text(FILE *fp, const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r);
char *g2f_report_diff_json(const g2f_model_info *a, const g2f_model_info *b, const g2f_diff_result *r);

/* g2f_write_file_atomic (g2f_file.h) writes a report to a file atomically. */

/* What the kernels' path (g2f_ffn_isa) means for a verify report's
 * tolerance, as the text and HTML reports say it beside the path: the sums
 * of squares' kind (float32, or bfloat16 factors rounded up), or, with a
 * user tolerance, that nothing is derived. */
const char *g2f_report_squares_words(int user);

#endif
