/* g2f_html: the verify report as one self-contained HTML5 page, written from
 * the same g2f_report_ctx as the text and JSON reports (g2f_report), so the
 * three never disagree.
 *
 * The page holds no script and loads nothing: inline CSS and inline SVG only,
 * so it can be archived with a CI run, mailed, or opened offline, and it
 * prints. It shows, top to bottom:
 *   1. the header: checkpoint (format, naming, layout and why), config,
 *      fixtures, the GELU form and where the choice came from, the tolerance
 *      mode, the overall PASS/FAIL and the one-sentence verdict of the text
 *      report ("all N compared layers match the reference" or "first
 *      divergence at layer N: <explanation>");
 *   2. a chart per layer: margin = max |err| / tolerance on a log scale
 *      clamped to [1e-3, 1e7], a bar per compared layer coloured pass/fail
 *      for the requested GELU form, a marker per layer for the other form
 *      (out_other.margin), the tolerance (margin 1) as a labelled line,
 *      skipped layers as gaps;
 *   3. a table with one row per layer (id "layer-N", class "pass", "fail" or
 *      "skipped"): tokens, max abs / rel error, margin, cosine, SQNR, the
 *      GELU form the data matches, the GELU separation, the diagnosis codes
 *      and the explanation;
 *   4. per failing layer (id "fail-N"): the diagnosis in words, where the
 *      error lives when no hypothesis explains it, the worst element, the
 *      tensors compared, and a histogram of log10(|err| / tol) of its output
 *      (g2f_cmp.hist, half-decades from 1e-6 to 1e6, the tolerance at 1).
 *
 * Every string that comes from a file or the command line (paths, tensor
 * names, config strings, explanations) is HTML-escaped; numbers are printed
 * with %.3g and non-finite ones as "nan", "inf", "-inf".
 *
 * Usage:
 *     char *html = g2f_report_html(&ctx);
 *     if (!html) ... out of memory ...
 *     g2f_write_file_atomic("report.html", html, &err);
 *     free(html);
 *
 * Failure model: allocation failure (or a size that would overflow) makes
 * the functions return NULL / -1; nothing is printed, nothing aborts.
 */
#ifndef G2F_HTML_H
#define G2F_HTML_H

#include <stddef.h>

#include "g2f_report.h"

/* The page as a malloc'd NUL-terminated string; the caller frees it. NULL on
 * allocation failure. c and everything it points to are only read. */
char *g2f_report_html(const g2f_report_ctx *c);

/* A growable string. Zero-initialise it ({0}); data is NULL or
 * NUL-terminated. Growth is overflow-checked; after a failed append `failed`
 * stays set and later appends do nothing, so a writer checks once at the
 * end. */
typedef struct g2f_html_buf {
    char *data;  /* owned; free with g2f_html_buf_free */
    size_t len;  /* bytes used, excluding the NUL */
    size_t cap;  /* bytes allocated */
    int failed;  /* sticky: an allocation failed or a size overflowed */
} g2f_html_buf;

/* Appends s HTML-escaped for text and for quoted attribute values:
 * & < > " ' become entities; C0 control bytes (other than tab, newline,
 * carriage return), DEL and bytes that are not valid UTF-8 become U+FFFD, so
 * the page stays valid UTF-8 whatever the file names hold. NULL appends
 * nothing. Returns 0, or -1 when the buffer has failed. */
int g2f_html_escape_append(g2f_html_buf *b, const char *s);

/* Frees the data and zeroes b; NULL is a no-op. */
void g2f_html_buf_free(g2f_html_buf *b);

#endif
