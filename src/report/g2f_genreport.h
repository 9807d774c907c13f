/* g2f_genreport: the report of a generation's check (g2f_genverify) as
 * text, JSON and an HTML page, all three from one g2f_gen_result and the
 * same sentences (g2f_genreport_verdict), so that they say the same thing:
 * the verdict, the steps compared, every tie flip with its gap and window,
 * the first divergence with both tokens and what reproduces it. Tokens are
 * shown as ids, and as text too when a tokenizer is known ("' the' (262)").
 * When the same file also holds a teacher-forced fixture (run --generate
 * --save), its verify result is part of the verdict: the text report
 * prints verify's report first, JSON holds verify's under
 * "teacher_forced", HTML its verdict and counts.
 *
 * Strings from files are escaped for where they go (g2f_text.h for the
 * terminal, JSON's syntax, HTML entities). JSON and HTML are malloc'd
 * strings the caller frees; NULL when an allocation fails (never a partial
 * report).
 */
#ifndef G2F_GENREPORT_H
#define G2F_GENREPORT_H

#include <stdio.h>

#include "g2f_genverify.h"
#include "g2f_report.h"
#include "g2f_tokenizer.h"

typedef struct g2f_genreport_ctx {
    const char *checkpoint_arg;      /* as given */
    const char *fixture_arg;
    const g2f_model_info *model;
    g2f_gelu gelu;
    const char *gelu_source;
    double lambda;
    const g2f_gen_result *gen;
    const g2f_tokenizer *tokenizer;  /* or NULL */
    const g2f_report_ctx *teacher;   /* the teacher-forced verify of the same file, or NULL */
    const g2f_fixture *fixture;      /* for the tensors it holds that nothing compares, or NULL */
    const char *teacher_note;        /* why the file's other tensors are not checked teacher-forced (they hold no
                                        stage beside its input), or NULL */
} g2f_genreport_ctx;

/* 1 when the verdict of everything (the generation and, with a teacher,
 * its stages) is a pass. */
int g2f_genreport_pass(const g2f_genreport_ctx *c);
/* The one-sentence verdict of the generation, unescaped: "the port's
 * generation is GPT-2's greedy one: ..." or "first divergence at sequence
 * 0, step 7: reference ' cat' (3797), port ' dog' (3290) ...: <causes>". */
void g2f_genreport_verdict(const g2f_genreport_ctx *c, char *buf, size_t n);
/* "40 steps compared, 38 the same token, 2 tie flips, 0 diverged". */
void g2f_genreport_counts(const g2f_genreport_ctx *c, char *buf, size_t n);

void g2f_genreport_text(FILE *fp, const g2f_genreport_ctx *c);
char *g2f_genreport_json(const g2f_genreport_ctx *c);
char *g2f_genreport_html(const g2f_genreport_ctx *c);

#endif
