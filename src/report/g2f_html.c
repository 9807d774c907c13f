/* g2f_html: see g2f_html.h. One pass over the verify result appends the page
 * to a growable buffer; the buffer's sticky failure flag is checked once at
 * the end. Pages are small (a few kB per layer), so plain doubling growth is
 * plenty. */
#include "g2f_html.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_text.h"

/* ---- growable buffer ------------------------------------------------- */

/* Makes room for `extra` more bytes plus the NUL; 0 or -1 (overflow or
 * allocation failure, which sets b->failed). */
static int buf_reserve(g2f_html_buf *b, size_t extra) {
    if (b->failed) return -1;
    size_t need;
    if (__builtin_add_overflow(b->len, extra, &need) || __builtin_add_overflow(need, (size_t)1, &need)) {
        b->failed = 1;
        return -1;
    }
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (__builtin_mul_overflow(cap, (size_t)2, &cap)) {
            cap = need;
            break;
        }
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

static void buf_putn(g2f_html_buf *b, const char *s, size_t n) {
    if (buf_reserve(b, n) != 0) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_put(g2f_html_buf *b, const char *s) { buf_putn(b, s, strlen(s)); }

/* Formatted append, for markup and numbers only (strings from files go
 * through g2f_html_escape_append). */
__attribute__((format(printf, 2, 3))) static void buf_printf(g2f_html_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n) != 0) {
        b->failed = 1;
        va_end(ap2);
        return;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void g2f_html_buf_free(g2f_html_buf *b) {
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

int g2f_html_escape_append(g2f_html_buf *b, const char *s) {
    if (!b) return -1;
    if (!s || b->failed) return b->failed ? -1 : 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        /* copy the longest run that needs no escaping in one go */
        const unsigned char *run = p;
        size_t k;
        while (*p && *p != '&' && *p != '<' && *p != '>' && *p != '"' && *p != '\'' &&
               (*p >= 0x20 || *p == '\t' || *p == '\n' || *p == '\r') && *p != 0x7F && (k = g2f_utf8_len(p)) != 0)
            p += k;
        if (p > run) buf_putn(b, (const char *)run, (size_t)(p - run));
        if (!*p) break;
        switch (*p) {
        case '&': buf_put(b, "&amp;"); break;
        case '<': buf_put(b, "&lt;"); break;
        case '>': buf_put(b, "&gt;"); break;
        case '"': buf_put(b, "&quot;"); break;
        case '\'': buf_put(b, "&#39;"); break;
        default: buf_put(b, "\xEF\xBF\xBD"); break; /* control byte or invalid UTF-8: U+FFFD */
        }
        p++;
    }
    return b->failed ? -1 : 0;
}

static void esc(g2f_html_buf *b, const char *s) { (void)g2f_html_escape_append(b, s); }

/* %.3g, or "nan" / "inf" / "-inf" as text. */
static void put_num(g2f_html_buf *b, double v) {
    if (isnan(v)) buf_put(b, "nan");
    else if (isinf(v)) buf_put(b, v > 0 ? "inf" : "-inf");
    else buf_printf(b, "%.3g", v);
}

/* A cosine near 1 is "1 - d" with d at %.3g, since %.3g of the cosine itself
 * would print 1 for every layer, failing or not. */
static void put_cosine(g2f_html_buf *b, double v) {
    if (isfinite(v) && v < 1 && v > 0.999) {
        buf_put(b, "1 &minus; ");
        put_num(b, 1 - v);
    } else {
        put_num(b, v);
    }
}

/* A code list escaped, with break opportunities after ':' and ',' so a
 * narrow column wraps "weights_from_layer:3" between words, not inside. */
static void esc_codes(g2f_html_buf *b, const char *s) {
    while (*s) {
        size_t n = strcspn(s, ":,");
        char span[256];
        if (n >= sizeof span) { /* not a code list we made; no breaks then */
            esc(b, s);
            return;
        }
        memcpy(span, s, n);
        span[n] = '\0';
        esc(b, span);
        s += n;
        if (*s) {
            buf_putn(b, s, 1);
            buf_put(b, "<wbr>");
            s++;
        }
    }
}

/* The diagnosis codes as the text report writes them: the causes'
 * codes, alternatives separated by " | ", else the flags, else "-". */
static void put_codes(g2f_html_buf *b, const g2f_layer_result *r) {
    if (r->diag.n_causes) {
        char codes[1024];
        g2f_causes_join(r->diag.causes, r->diag.n_causes, codes, sizeof codes);
        esc_codes(b, codes);
        return;
    }
    int any = 0;
    for (int d = 0; d < G2F_DIAG_COUNT; d++)
        if (r->diagnosis & G2F_DIAG_BIT(d)) {
            if (any++) buf_put(b, ",<wbr>");
            esc(b, g2f_diag_name((g2f_diag)d));
        }
    if (!any) buf_put(b, "-");
}

/* The note on the fixture's GELU claim, worded as in the text report. */
static void put_claim_note(g2f_html_buf *b, const g2f_report_ctx *c) {
    const char *claim = c->fixture_claim;
    g2f_verify_summary sum;
    g2f_verify_summarize(c->result, &sum);
    size_t tanh_n = sum.best_tanh, erf_n = sum.best_erf;
    int is_tanh = !strcmp(claim, "tanh"), is_erf = !strcmp(claim, "erf");
    buf_put(b, "fixture metadata claims gelu=");
    if (!is_tanh && !is_erf) {
        buf_put(b, "&quot;");
        esc(b, claim);
        buf_put(b, "&quot;, which is neither tanh nor erf");
    } else if ((is_tanh && erf_n) || (is_erf && tanh_n)) {
        size_t k = is_tanh ? erf_n : tanh_n;
        buf_printf(b, "%s, but the data of %zu %s %s", claim, k, k == 1 ? "layer matches" : "layers match",
                   is_tanh ? "erf" : "tanh");
    } else if (tanh_n + erf_n) {
        buf_printf(b, "%s; the data agrees", claim);
    } else {
        buf_printf(b, "%s; the data cannot confirm it", claim);
    }
}

/* ---- page parts ------------------------------------------------------- */

static const char css[] =
    "*{box-sizing:border-box}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif;color:#1f2328;"
    "background:#fff;margin:0 auto;max-width:1180px;padding:20px 28px 32px}"
    "h1{font-size:21px;margin:0 0 10px;display:flex;align-items:center;gap:12px;flex-wrap:wrap}"
    "h1 .what{min-width:0;overflow-wrap:anywhere}code{overflow-wrap:anywhere}"
    "h2{font-size:16px;margin:26px 0 8px;padding-bottom:4px;border-bottom:1px solid #d0d7de}"
    "h3{font-size:15px;margin:0 0 6px}"
    ".badge{display:inline-block;padding:2px 12px;border-radius:4px;font-size:15px;font-weight:700;color:#fff;"
    "letter-spacing:.04em}"
    ".badge.pass{background:#1a7f37}.badge.fail{background:#c62828}"
    ".verdict{font-size:16px;margin:4px 0 14px;padding:9px 14px;border-left:5px solid #1a7f37;background:#eef8f0}"
    ".verdict.fail{border-color:#c62828;background:#fcefee}"
    ".verdict.warn{border-color:#b26b00;background:#fff6e5}.verdict.hint{border-color:#0b5cad;background:#eef4fb}"
    ".verdict{overflow-wrap:anywhere}"
    "dl.meta{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:1px 16px;margin:0}"
    "dl.meta dt{color:#59636e}dl.meta dd{margin:0;overflow-wrap:anywhere}"
    ".muted{color:#59636e}"
    "code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12.5px}"
    "figure{margin:6px 0 0}figcaption{color:#59636e;font-size:12.5px;margin-top:2px}"
    "svg{display:block;max-width:100%;height:auto}svg text{font-family:inherit}"
    "table{border-collapse:collapse;width:100%;font-size:12.5px}"
    "th,td{padding:3px 7px;border-bottom:1px solid #e1e5e9;text-align:right;vertical-align:top;"
    "font-variant-numeric:tabular-nums}td{white-space:nowrap}"
    "th{background:#f3f5f7;font-weight:600;border-bottom:1px solid #c9d1d9;vertical-align:bottom}"
    "th.l,td.l{text-align:left}td.expl{text-align:left;white-space:normal;min-width:200px;overflow-wrap:break-word}"
    "td.diag{white-space:normal;overflow-wrap:break-word}.scroll{overflow-x:auto}"
    "tr.fail td{background:#fcefee}tr.skipped td{color:#8b949e}"
    "td.sg-pass{background:#e9f6ec}td.sg-fail{background:#fcefee;color:#c62828;font-weight:700}"
    "td.sg-none{color:#8b949e}"
    ".st{font-weight:700}tr.pass .st{color:#1a7f37}tr.fail .st{color:#c62828}"
    "a{color:#0b5cad}"
    "section.layer{overflow-wrap:anywhere;border:1px solid #e3b5b5;border-left:5px solid #c62828;border-radius:4px;padding:12px 16px;"
    "margin:12px 0;break-inside:avoid}"
    ".cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.1fr);gap:18px;align-items:start}"
    ".lead{margin:0 0 8px}"
    "ul.causes{margin:2px 0 6px;padding-left:20px}"
    "table.small{width:auto;margin-top:6px}"
    "footer{margin-top:24px;color:#59636e;font-size:12px}"
    "@media (max-width:800px){.cols{grid-template-columns:1fr}}"
    "@media print{body{padding:0;max-width:none}.scroll{overflow:visible}a{color:inherit;text-decoration:none}"
    "tr.fail td,.verdict,.badge,svg{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
    "h2{break-after:avoid}}";

/* The badge, the title and the verdict's sentences (those of the text
 * report: g2f_report_verdict and the rest). */
static void put_verdict(g2f_html_buf *b, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    const char *word = res->pass ? "PASS" : "FAIL";
    const char *cls = res->pass ? "pass" : "fail";

    buf_printf(b, "<header>\n<h1><span class=\"badge %s\">%s</span> <span class=\"what\">gpt2ffn verify: ", cls, word);
    esc(b, c->checkpoint_arg);
    buf_put(b, "</span></h1>\n");

    char line[1400], prefix[64];
    g2f_report_verdict(c, line, sizeof line);
    buf_printf(b, "<p class=\"verdict %s\" id=\"verdict\">", cls);
    int n = res->first_fail >= 0 ? snprintf(prefix, sizeof prefix, "first divergence at layer %ld: ", res->first_fail) : 0;
    if (n > 0 && !strncmp(line, prefix, (size_t)n)) {
        buf_printf(b, "<strong>first divergence at layer <a href=\"#fail-%ld\">%ld</a>:</strong> ", res->first_fail,
                   res->first_fail);
        esc(b, line + n);
    } else {
        buf_put(b, "<strong>");
        esc(b, line);
        buf_put(b, "</strong>");
    }
    g2f_report_counts(c, line, sizeof line);
    buf_put(b, " <span class=\"muted\">(");
    esc(b, line);
    buf_put(b, ")</span></p>\n");
    if (g2f_report_gelu_caveat(c, line, sizeof line)) {
        buf_put(b, "<p class=\"verdict warn\" id=\"gelu-unverified\"><strong>PASS, but</strong> ");
        esc(b, line);
        buf_put(b, "</p>\n");
    }
    if (g2f_report_hint(c, line, sizeof line)) {
        buf_put(b, "<p class=\"verdict hint\" id=\"hint\"><strong>hint:</strong> ");
        esc(b, line);
        buf_put(b, "</p>\n");
    }
}

/* checkpoint, naming and layout rows of the header's list. */
static void put_meta_checkpoint(g2f_html_buf *b, const g2f_model_info *mi) {
    buf_put(b, "<dl class=\"meta\">\n<dt>checkpoint</dt><dd><code>");
    esc(b, mi->path);
    buf_put(b, "</code> (");
    esc(b, mi->format);
    buf_printf(b, ", %s, %zu layer%s, n_embd %zu, n_inner %zu, ", g2f_dtype_name(mi->dtype), mi->n_layer,
               mi->n_layer == 1 ? "" : "s", mi->n_embd, mi->n_inner);
    esc(b, g2f_layout_name(mi->layout));
    buf_printf(b, ", %s)</dd>\n",
               mi->has_fc_bias && mi->has_proj_bias                ? "with biases"
               : (mi->has_fc_bias || mi->has_proj_bias)            ? "one bias missing"
                                                                   : "no biases");
    buf_put(b, "<dt>naming</dt><dd>");
    esc(b, mi->naming);
    if (mi->prefix && *mi->prefix) {
        buf_put(b, " under <code>");
        esc(b, mi->prefix);
        buf_put(b, "</code>");
    }
    buf_put(b, "</dd>\n<dt>layout</dt><dd>");
    esc(b, g2f_layout_name(mi->layout));
    buf_put(b, ": ");
    esc(b, mi->layout_source);
    buf_put(b, "</dd>\n");
}

/* The config row: its path, how it was found (unless beside the
 * checkpoint) and its activation_function, or why there is none. */
static void put_meta_config(g2f_html_buf *b, const g2f_model_info *mi) {
    buf_put(b, "<dt>config</dt><dd>");
    const char *how = mi->config_source && strcmp(mi->config_source, "config.json beside the checkpoint") != 0
                          ? mi->config_source
                          : NULL;
    if (mi->config_path) {
        buf_put(b, "<code>");
        esc(b, mi->config_path);
        buf_put(b, "</code>");
        if (how || mi->config_activation) buf_put(b, " (");
        esc(b, how);
        if (how && mi->config_activation) buf_put(b, "; ");
        if (mi->config_activation) {
            buf_put(b, "activation_function &quot;");
            esc(b, mi->config_activation);
            buf_put(b, "&quot;");
        }
        if (how || mi->config_activation) buf_put(b, ")");
    } else {
        esc(b, how ? how : "none beside the checkpoint");
    }
    buf_put(b, "</dd>\n");
}

/* fixtures, GELU and tolerance rows. */
static void put_meta_check(g2f_html_buf *b, const g2f_report_ctx *c) {
    buf_put(b, "<dt>fixtures</dt><dd><code>");
    esc(b, c->fixtures_arg);
    buf_printf(b, "</code> (%s)</dd>\n", g2f_dtype_name(c->fixture_dtype));
    buf_printf(b, "<dt>GELU</dt><dd><strong>%s</strong> (", g2f_gelu_name(c->result->gelu));
    esc(b, c->gelu_source);
    buf_put(b, ")</dd>\n<dt>tolerance</dt><dd>");
    if (c->tol->user) {
        buf_put(b, "|err| &le; atol + rtol |expected| with atol ");
        put_num(b, c->tol->atol);
        buf_put(b, ", rtol ");
        put_num(b, c->tol->rtol);
        buf_put(b, " (from the command line)");
    } else {
        put_num(b, g2f_tol_lambda(c->tol));
        buf_put(b, " sigma of fp32 rounding per element, plus the fixture dtype&#39;s (README: Tolerance)");
    }
    buf_put(b, "</dd>\n<dt>kernels</dt><dd>");
    buf_put(b, g2f_ffn_isa());
    buf_put(b, " (");
    buf_put(b, g2f_report_squares_words(c->tol->user));
    buf_put(b, ")</dd>\n");
}

/* The fixture's claim, the provenance and the other notes, then the list's end. */
static void put_meta_notes(g2f_html_buf *b, const g2f_report_ctx *c) {
    char line[1400];
    if (c->fixture_claim) {
        buf_put(b, "<dt>note</dt><dd>");
        put_claim_note(b, c);
        buf_put(b, "</dd>\n");
    }
    if (g2f_report_provenance(c, line, sizeof line)) {
        int match = g2f_report_sha256_match(c) == 1;
        buf_printf(b, "<dt>%s</dt><dd id=\"provenance\"%s>", match ? "provenance" : "warning",
                   match ? "" : " class=\"st\" style=\"color:#c62828\"");
        esc(b, line);
        buf_put(b, "</dd>\n");
    }
    const char *label;
    for (size_t i = 0; g2f_report_note(c, i, &label, line, sizeof line); i++) {
        buf_printf(b, "<dt>%s</dt><dd%s>", label, strcmp(label, "capture") ? "" : " class=\"st\" style=\"color:#c62828\"");
        esc(b, line);
        buf_put(b, "</dd>\n");
    }
    buf_put(b, "</dl>\n</header>\n");
}

static void put_header(g2f_html_buf *b, const g2f_report_ctx *c) {
    put_verdict(b, c);
    put_meta_checkpoint(b, c->model);
    put_meta_config(b, c->model);
    put_meta_check(b, c);
    put_meta_notes(b, c);
}

/* Chart geometry (SVG user units; the SVG scales down to its container). */
enum { CH_W = 1100, CH_H = 330, CH_L = 70, CH_R = 74, CH_T = 44, CH_B = 52 };
#define CH_LOG_LO (-3.0)
#define CH_LOG_HI 7.0

/* y of a margin on the clamped log scale; NaN and +inf go to the top. */
static double chart_y(double m) {
    double l;
    if (isnan(m) || m > 1e7) l = CH_LOG_HI;
    else if (m < 1e-3) l = CH_LOG_LO;
    else l = log10(m);
    if (l > CH_LOG_HI) l = CH_LOG_HI;
    if (l < CH_LOG_LO) l = CH_LOG_LO;
    return CH_T + (CH_LOG_HI - l) / (CH_LOG_HI - CH_LOG_LO) * (CH_H - CH_T - CH_B);
}

static const char *decade_label(int e) {
    static const char *const labels[] = {"0.001", "0.01", "0.1", "1", "10", "100", "1e3", "1e4", "1e5", "1e6", "1e7"};
    return labels[e + 3];
}

/* The chart's geometry and the two GELU forms' names, for its parts. */
typedef struct chart_geom {
    double pw, ph;     /* the plot's width and height */
    double sw, bw;     /* a layer's slot and its bar's width */
    double y_tol, y_bot;
    double dx;         /* the other form's markers sit just right of the bar, clear of its value label */
    const char *req, *oth;
} chart_geom;

/* The SVG's opening, the failing region, the decade grid and the y axis. */
static void chart_open(g2f_html_buf *b, const chart_geom *g) {
    buf_printf(b,
               "<figure id=\"chart\">\n<svg width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"chart-title\">\n"
               "<title id=\"chart-title\">Margin per layer (max |err| / tolerance, log scale): requested GELU %s "
               "against the other GELU %s</title>\n",
               CH_W, CH_H, CH_W, CH_H, g->req, g->oth);
    /* the region above the tolerance, where a layer fails */
    buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcf1f0\"/>\n", CH_L, CH_T, g->pw,
               g->y_tol - CH_T);
    /* decade grid and y labels */
    for (int e = -3; e <= 7; e++) {
        double y = chart_y(pow(10.0, e));
        buf_printf(b,
                   "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e8ec\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#59636e\">%s</text>\n",
                   CH_L, CH_L + g->pw, y, y, CH_L - 7, y + 4, decade_label(e));
    }
    buf_printf(b,
               "<text transform=\"translate(18 %.1f) rotate(-90)\" font-size=\"12.5\" text-anchor=\"middle\" "
               "fill=\"#1f2328\">margin = max |err| / tolerance (log)</text>\n",
               CH_T + g->ph / 2);
}

static void chart_bars(g2f_html_buf *b, const g2f_verify_result *res, const chart_geom *g) {
    /* x labels: at most one per ~22 units so GPT-2 XL's 48 layers stay legible */
    size_t step = 1;
    while (g->sw * (double)step < 22) step++;
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        double cx = CH_L + ((double)i + 0.5) * g->sw;
        int skipped = r->status == G2F_LAYER_SKIPPED;
        if (i % step == 0 || (r->status == G2F_LAYER_FAIL && step == 1))
            buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"%s\"%s>%zu</text>\n",
                       cx, g->y_bot + 16, skipped ? "#a0a7ae" : "#1f2328",
                       r->status == G2F_LAYER_FAIL ? " font-weight=\"700\"" : "", r->layer);
        if (skipped) continue;
        double m = g2f_layer_result_totals(r).margin, y = chart_y(m);
        int fail = r->status == G2F_LAYER_FAIL;
        buf_printf(b, "<a href=\"#layer-%zu\"><rect class=\"bar %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                      "fill=\"%s\"><title>layer %zu, %s GELU: margin ",
                   r->layer, fail ? "fail" : "pass", cx - g->bw / 2, y, g->bw, g->y_bot - y > 1 ? g->y_bot - y : 1,
                   fail ? "#d64541" : "#2f9e5a", r->layer, g->req);
        put_num(b, m);
        buf_printf(b, " (%s)</title></rect></a>\n", fail ? "FAIL" : "pass");
        if (g->sw >= 34) {
            /* the value above the bar, or inside it when the bar reaches the top */
            int inside = y < CH_T + 16;
            buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"%s\">",
                       cx, inside ? y + 13 : y - 4, inside ? "#fff" : "#1f2328");
            put_num(b, m);
            buf_put(b, "</text>\n");
        }
    }
}

static void chart_other_form(g2f_html_buf *b, const g2f_verify_result *res, const chart_geom *g) {
    /* the other GELU form: markers joined within runs of compared layers */
    for (size_t i = 0; i + 1 < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i], *s = &res->layers[i + 1];
        if (r->status == G2F_LAYER_SKIPPED || s->status == G2F_LAYER_SKIPPED) continue;
        buf_printf(b,
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#3b5bdb\" stroke-width=\"1.3\" "
                   "stroke-dasharray=\"4 3\"/>\n",
                   CH_L + ((double)i + 0.5) * g->sw + g->dx, chart_y(r->out_other.margin),
                   CH_L + ((double)i + 1.5) * g->sw + g->dx, chart_y(s->out_other.margin));
    }
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED) continue;
        double cx = CH_L + ((double)i + 0.5) * g->sw + g->dx, y = chart_y(r->out_other.margin), d = 5.5;
        buf_printf(b,
                   "<path class=\"other\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"#fff\" "
                   "stroke=\"#3b5bdb\" stroke-width=\"2\"><title>layer %zu, other GELU (%s): margin ",
                   cx, y - d, cx + d, y, cx, y + d, cx - d, y, r->layer, g->oth);
        put_num(b, r->out_other.margin);
        buf_put(b, "</title></path>\n");
    }
}

/* The tolerance line, the axes, the legend and the caption. */
static void chart_close(g2f_html_buf *b, const chart_geom *g) {
    /* tolerance line, axes */
    buf_printf(b,
               "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" stroke-width=\"1.6\" "
               "stroke-dasharray=\"7 4\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#c62828\" "
               "font-weight=\"600\">tolerance</text>\n",
               CH_L, CH_L + g->pw, g->y_tol, g->y_tol, CH_L + g->pw + 5, g->y_tol + 4);
    buf_printf(b,
               "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.1f\" stroke=\"#57606a\"/>"
               "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>\n",
               CH_L, CH_L, CH_T, g->y_bot, CH_L, CH_L + g->pw, g->y_bot, g->y_bot);
    buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12.5\" text-anchor=\"middle\">layer</text>\n",
               CH_L + g->pw / 2, g->y_bot + 36.0);
    /* legend, in one row above the plot */
    buf_printf(b,
               "<g font-size=\"12.5\" fill=\"#1f2328\">"
               "<rect x=\"%d\" y=\"12\" width=\"14\" height=\"14\" fill=\"#2f9e5a\"/>"
               "<rect x=\"%d\" y=\"12\" width=\"14\" height=\"14\" fill=\"#d64541\"/>"
               "<text x=\"%d\" y=\"24\">requested GELU (%s): pass / fail</text>"
               "<path d=\"M%d 13L%d 19L%d 25L%d 19Z\" fill=\"#fff\" stroke=\"#3b5bdb\" stroke-width=\"2\"/>"
               "<text x=\"%d\" y=\"24\">other GELU (%s), same inputs</text>"
               "<line x1=\"%d\" x2=\"%d\" y1=\"19\" y2=\"19\" stroke=\"#c62828\" stroke-width=\"1.6\" "
               "stroke-dasharray=\"7 4\"/>"
               "<text x=\"%d\" y=\"24\">tolerance (margin 1): above it a layer fails</text>"
               "</g>\n",
               CH_L, CH_L + 17, CH_L + 38, g->req, CH_L + 310, CH_L + 316, CH_L + 310, CH_L + 304, CH_L + 324, g->oth,
               CH_L + 560, CH_L + 590, CH_L + 598);
    buf_put(b, "</svg>\n<figcaption>One bar per compared layer (the largest |err| / tolerance over out");
    buf_put(b, ", and pre/act when the fixture has them), clamped to [0.001, 1e7]; gaps are skipped layers. "
               "The diamonds recompute each layer with the other GELU form: when they sit far above the "
               "tolerance while the bars sit below, the fixture really was made with the requested form; "
               "the reverse points at a GELU mix-up.</figcaption>\n</figure>\n");
}

static void put_chart(g2f_html_buf *b, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    size_t n = res->n_layers ? res->n_layers : 1;
    chart_geom g = {.pw = CH_W - CH_L - CH_R, .ph = CH_H - CH_T - CH_B};
    g.sw = g.pw / (double)n;
    g.bw = g.sw * 0.56 > 46 ? 46 : g.sw * 0.56;
    g.y_tol = chart_y(1.0);
    g.y_bot = CH_T + g.ph;
    g.dx = g.sw >= 34 ? g.bw / 2 + 10 : 0;
    g.req = g2f_gelu_name(res->gelu);
    g.oth = g2f_gelu_name(g2f_gelu_other(res->gelu));
    chart_open(b, &g);
    chart_bars(b, res, &g);
    chart_other_form(b, res, &g);
    chart_close(b, &g);
}

static void put_table(g2f_html_buf *b, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    buf_put(b,
            "<div class=\"scroll\"><table id=\"layers\">\n<thead><tr><th>layer</th><th class=\"l\">status</th>"
            "<th class=\"l\">FFN</th><th>tokens</th>"
            "<th>max abs err</th><th>max rel err</th><th>margin</th><th>mismatched / total</th><th>cosine</th>"
            "<th>SQNR dB</th><th class=\"l\">best GELU</th><th>sep out</th><th>sep act</th><th class=\"l\">diagnosis</th>"
            "<th class=\"l\">explanation</th></tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        const char *cls = r->status == G2F_LAYER_PASS ? "pass" : r->status == G2F_LAYER_FAIL ? "fail" : "skipped";
        buf_printf(b, "<tr id=\"layer-%zu\" class=\"%s\"><td>%zu</td>", r->layer, cls, r->layer);
        if (r->status == G2F_LAYER_SKIPPED) {
            buf_put(b, "<td class=\"l st\">skipped</td><td class=\"l\">-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>"
                       "<td>-</td><td class=\"l\">-</td><td>-</td><td>-</td><td class=\"l\">-</td><td class=\"expl\">");
            esc(b, r->explanation);
            buf_put(b, "</td></tr>\n");
            continue;
        }
        if (r->status == G2F_LAYER_FAIL)
            buf_printf(b, "<td class=\"l st\"><a href=\"#fail-%zu\">FAIL</a></td>", r->layer);
        else
            buf_put(b, "<td class=\"l st\">pass</td>");
        if (!r->has_ffn) { /* block stages only: the stage grid has them */
            buf_put(b, "<td class=\"l\">-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td class=\"l\">-</td>"
                       "<td>-</td><td>-</td><td class=\"l\">-</td><td class=\"expl\">");
            esc(b, r->explanation);
            buf_put(b, "</td></tr>\n");
            continue;
        }
        /* the FFN's own verdict beside the layer's (which fails when any stage does) */
        buf_printf(b, "<td class=\"l\">%s</td><td>%zu</td><td>", r->ffn_status == G2F_LAYER_PASS ? "pass" : "FAIL",
                   r->tokens);
        put_num(b, r->out.max_abs);
        buf_put(b, "</td><td>");
        put_num(b, r->out.max_rel);
        buf_put(b, "</td><td>");
        g2f_layer_totals tot = g2f_layer_result_totals(r);
        put_num(b, tot.margin);
        buf_printf(b, "</td><td>%zu / %zu</td><td>", tot.mismatched, tot.total);
        put_cosine(b, r->out.cosine);
        buf_put(b, "</td><td>");
        put_num(b, r->out.sqnr_db);
        /* a pass that did not verify the GELU form says so here too (a
         * failing layer's row already says what it matches) */
        int unverified = r->status == G2F_LAYER_PASS && !g2f_layer_gelu_verified(r);
        buf_printf(b, "</td><td class=\"l\">%s%s</td><td>", g2f_layer_gelu_shown(r),
                   unverified ? "<br><span class=\"muted unverified\">not verified</span>" : "");
        put_num(b, r->sep_out);
        buf_put(b, "</td><td>");
        if (r->has_act) put_num(b, r->sep_act);
        else buf_put(b, "-");
        buf_put(b, "</td><td class=\"l mono diag\">");
        put_codes(b, r);
        buf_put(b, "</td><td class=\"expl\">");
        esc(b, r->explanation);
        buf_put(b, "</td></tr>\n");
    }
    buf_put(b, "</tbody>\n</table></div>\n<p class=\"muted\">Errors, cosine and SQNR are of <code>out</code> with the "
               "requested GELU; margin and mismatched count <code>pre</code>/<code>act</code> too when the fixture "
               "has them. sep out is max |out<sub>tanh</sub> &minus; out<sub>erf</sub>| / tolerance over "
               "<code>out</code>, sep act the same over <code>act</code>: the GELU form is verified on a layer when "
               "its data matches exactly one form, which takes a separation above 1.</p>\n");
}

/* A failing block stage's codes, " | " between alternatives. */
static void stage_codes(const g2f_stage_result *st, char *buf, size_t n) {
    if (!st->n_causes) snprintf(buf, n, "unexplained");
    else g2f_causes_join(st->causes, st->n_causes, buf, n);
}

/* The layer x stage grid of margins (docs/model.md: Block), when any layer
 * records block stages. */
static void put_stage_grid(g2f_html_buf *b, const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    int any = 0;
    for (size_t i = 0; i < res->n_layers && !any; i++)
        any = res->layers[i].status != G2F_LAYER_SKIPPED && res->layers[i].has_block;
    if (!any) return;
    buf_put(b, "<h2>Block stages</h2>\n<div class=\"scroll\"><table id=\"stages\">\n<thead><tr><th>layer</th>");
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) buf_printf(b, "<th>%s</th>", g2f_stage_name((g2f_stage)s));
    buf_put(b, "<th class=\"l\">chained from h.L.in</th></tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < res->n_layers; i++) {
        const g2f_layer_result *r = &res->layers[i];
        if (r->status == G2F_LAYER_SKIPPED || !r->has_block) continue;
        buf_printf(b, "<tr><td>%zu</td>", r->layer);
        for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
            const g2f_stage_result *st = &r->block.stage[s];
            if (!st->checked) {
                buf_put(b, "<td class=\"sg-none\">-</td>");
                continue;
            }
            buf_printf(b, "<td class=\"%s\"", st->pass ? "sg-pass" : "sg-fail");
            if (!st->pass && s != G2F_STAGE_MLP) {
                char codes[512];
                stage_codes(st, codes, sizeof codes);
                buf_put(b, " title=\"");
                esc(b, codes);
                buf_put(b, "\"");
            }
            buf_put(b, ">");
            put_num(b, st->margin);
            if (st->accepted && s != G2F_STAGE_MLP) { /* judged on an accepted cause (--accept) */
                char acc[128];
                g2f_diag_set_format(st->accepted, acc, sizeof acc);
                buf_put(b, "<br><span class=\"mono\">accepted ");
                esc(b, acc);
                buf_put(b, "</span>");
            }
            if (!st->pass && s != G2F_STAGE_MLP) {
                char codes[512];
                stage_codes(st, codes, sizeof codes);
                buf_put(b, "<br><span class=\"mono\">");
                esc(b, codes);
                buf_put(b, "</span>");
            }
            buf_put(b, "</td>");
        }
        const g2f_block_result *br = &r->block;
        buf_put(b, "<td class=\"l\">");
        if (!br->chained) {
            buf_put(b, "-");
        } else if (!br->diverged) {
            buf_put(b, br->chain_accepted ? "matches (accepted)" : "matches");
        } else {
            buf_printf(b, "first diverges at %s (", g2f_stage_name(br->first_stage));
            esc(b, br->first_tensor ? br->first_tensor : "");
            buf_put(b, ", margin ");
            put_num(b, br->first_margin);
            buf_put(b, ")");
        }
        buf_put(b, "</td></tr>\n");
    }
    buf_put(b, "</tbody>\n</table></div>\n<p class=\"muted\">Each cell is the stage's margin (largest |err| / "
               "tolerance, &le; 1 matches), computed from the stage's own recorded input, so one wrong stage does "
               "not colour the next; a failing stage shows the porting bug its recomputation names. The last column "
               "computes the whole block from <code>h.L.in</code> and names the first stage that does not match.");
    for (size_t i = 0; i < res->n_layers; i++)
        if (res->layers[i].status != G2F_LAYER_SKIPPED && res->layers[i].has_block && res->layers[i].block.attn_skipped) {
            buf_put(b, " ");
            esc(b, res->layers[i].block.note);
            buf_put(b, ".");
            break;
        }
    buf_put(b, "</p>\n");
}

/* A model-level stage's cell. */
static void put_mstage_cell(g2f_html_buf *b, const g2f_stage_result *r) {
    if (!r->checked) {
        buf_put(b, "<td class=\"sg-none\">-</td>");
        return;
    }
    buf_printf(b, "<td class=\"%s\">", r->pass ? "sg-pass" : "sg-fail");
    put_num(b, r->margin);
    buf_put(b, "</td>");
}

/* The whole forward (docs/model.md): model-level stages chained and
 * isolated, each layer's chained verdict, the logits' agreement. */
static void put_model(g2f_html_buf *b, const g2f_report_ctx *c) {
    const g2f_model_result *mr = &c->result->model;
    if (!mr->present) return;
    buf_put(b, "<h2>Whole model</h2>\n<p class=\"muted\">");
    esc(b, g2f_report_model_how(mr));
    buf_printf(b, "; %zu sequence%s of %zu tokens, vocabulary %zu; head: ", mr->n_seq, mr->n_seq == 1 ? "" : "s", mr->T,
               mr->vocab);
    esc(b, mr->head_desc ? mr->head_desc : "-");
    buf_put(b, ".</p>\n<div class=\"scroll\"><table id=\"model\">\n<thead><tr><th class=\"l\">stage</th><th>chained</th>"
               "<th>isolated</th><th class=\"l\">reference</th><th class=\"l\">diagnosis</th></tr></thead>\n<tbody>\n");
    for (int s = G2F_STAGE_EMBED; s < G2F_STAGE_COUNT; s = g2f_model_stage_next(s)) {
        const g2f_stage_result *ch = &mr->chain[s], *iso = &mr->iso[s];
        buf_printf(b, "<tr><td class=\"l\">%s</td>", g2f_stage_name((g2f_stage)s));
        put_mstage_cell(b, ch);
        put_mstage_cell(b, iso);
        buf_put(b, "<td class=\"l mono\">");
        esc(b, ch->worst_tensor ? ch->worst_tensor : iso->worst_tensor ? iso->worst_tensor : "-");
        buf_put(b, "</td><td class=\"l mono\">");
        char codes[256];
        g2f_report_mstage_codes(mr, s, codes, sizeof codes);
        esc(b, codes);
        buf_put(b, "</td></tr>\n");
        for (size_t L = 0; s == G2F_STAGE_EMBED && L < mr->n_layers; L++) {
            char cell[32], what[96], diag[300];
            g2f_report_chain_layer(mr, L, cell, sizeof cell, what, sizeof what, diag, sizeof diag);
            const g2f_chain_verdict *v = &mr->layers[L];
            buf_printf(b, "<tr><td class=\"l\">h.%zu</td><td class=\"%s\">", L,
                       !strcmp(cell, "-") ? "sg-none" : v->diverged ? "sg-fail" : "sg-pass");
            esc(b, cell);
            buf_put(b, "</td><td class=\"sg-none\"></td><td class=\"l mono\">");
            esc(b, what);
            buf_put(b, "</td><td class=\"l mono\">");
            esc(b, diag);
            buf_put(b, "</td></tr>\n");
        }
    }
    char lc[32], li[32], ld[300], line[700];
    int loss = g2f_report_loss(c, lc, li, sizeof lc, ld, sizeof ld, line, sizeof line);
    if (loss) {
        const g2f_loss_stage *l = &c->result->loss;
        buf_printf(b, "<tr><td class=\"l\">loss</td><td class=\"%s\">%s</td><td class=\"%s\">%s</td>",
                   !l->chained.checked ? "sg-none" : l->chained.pass ? "sg-pass" : "sg-fail", lc,
                   !l->isolated.checked ? "sg-none" : l->isolated.pass ? "sg-pass" : "sg-fail", li);
        buf_put(b, "<td class=\"l mono\">loss</td><td class=\"l mono\">");
        esc(b, ld);
        buf_put(b, "</td></tr>\n");
    }
    buf_put(b, "</tbody>\n</table></div>\n");
    if (loss) {
        buf_put(b, "<p id=\"loss\">Loss: ");
        esc(b, line);
        buf_put(b, ".</p>\n");
    }
    const g2f_logit_agreement *a = &mr->agree;
    if (a->computed) {
        buf_printf(b, "<p id=\"agreement\">Logits: the top-1 token is the same at <strong>%zu of %zu</strong> positions; "
                      "the largest KL(reference &#8214; ours) is ", a->top1_agree, a->positions);
        put_num(b, a->max_kl);
        buf_printf(b, " nats (position %zu)", a->max_kl_position);
        if (a->n_differing) {
            buf_put(b, "; top-1 differs at (sequence:token)");
            for (size_t i = 0; i < a->n_differing && i < 32; i++) {
                buf_printf(b, " %zu:%zu", a->differing[i] / (mr->T ? mr->T : 1), a->differing[i] % (mr->T ? mr->T : 1));
                if (!c->tokenizer) continue;
                char ref[80], ours[80]; /* the tokens, as text */
                g2f_tokenizer_token_text(c->tokenizer, (int64_t)a->ref_top1[i], ref, sizeof ref);
                g2f_tokenizer_token_text(c->tokenizer, (int64_t)a->our_top1[i], ours, sizeof ours);
                buf_put(b, " (reference <code>");
                esc(b, ref);
                buf_put(b, "</code>, ours <code>");
                esc(b, ours);
                buf_put(b, "</code>)");
            }
            if (a->n_differing > 32) buf_printf(b, " &hellip; (%zu in all)", a->n_differing);
        }
        buf_put(b, ".</p>\n");
    }
}

/* The FFN itself failed (not only another stage of its block). */
static int ffn_failed(const g2f_layer_result *r) {
    if (!r->has_ffn) return 0;
    return r->has_block ? !r->block.stage[G2F_STAGE_MLP].pass : r->status == G2F_LAYER_FAIL;
}

/* A count in at most five characters: 998, 5.0k, 498k, 1.6M, 210M. */
static void compact_count(size_t n, char *buf, size_t cap) {
    double v = (double)n;
    if (n < 1000) snprintf(buf, cap, "%zu", n);
    else if (v < 9950) snprintf(buf, cap, "%.1fk", v / 1e3);
    else if (v < 999500) snprintf(buf, cap, "%.0fk", v / 1e3);
    else if (v < 9.95e6) snprintf(buf, cap, "%.1fM", v / 1e6);
    else if (v < 999.5e6) snprintf(buf, cap, "%.0fM", v / 1e6);
    else snprintf(buf, cap, "%.1fG", v / 1e9);
}

/* Histogram geometry. Bins as in g2f_compare.h: bin 0 below 1e-6, bins
 * 1..24 half-decades from 1e-6 to 1e6, bin 25 above 1e6 or non-finite. */
enum { HI_W = 600, HI_H = 250, HI_L = 58, HI_R = 14, HI_T = 22, HI_B = 50 };

/* The histogram's geometry, for its parts. */
typedef struct hist_geom {
    double pw, ph, bw, y_bot;
    double lmax;  /* log10 of the largest count + 1: the bars' scale */
    int tol_bin;  /* index of the boundary at err/tol = 1: bins at or right of it fail */
} hist_geom;

/* The SVG's opening, the failing region and the count grid. */
static void hist_open(g2f_html_buf *b, const g2f_layer_result *r, const hist_geom *g) {
    buf_printf(b,
               "<figure class=\"hist\">\n<svg id=\"hist-%zu\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"hist-%zu-title\">\n"
               "<title id=\"hist-%zu-title\">Layer %zu: elements of out by |err| / tolerance</title>\n",
               r->layer, HI_W, HI_H, HI_W, HI_H, r->layer, r->layer, r->layer);
    buf_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcf1f0\"/>\n",
               HI_L + g->tol_bin * g->bw, HI_T, g->pw - g->tol_bin * g->bw, g->ph);
    /* count grid at powers of ten */
    for (int e = 0; e <= (int)floor(g->lmax); e++) {
        double v = pow(10.0, e), y = g->y_bot - log10(v + 1.0) / g->lmax * g->ph;
        buf_printf(b,
                   "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e8ec\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#59636e\">%.0f</text>\n",
                   HI_L, HI_L + g->pw, y, y, HI_L - 5, y + 4, v);
    }
}

/* One bar per non-empty bin, with its count. */
static void hist_bars(g2f_html_buf *b, const g2f_layer_result *r, const hist_geom *g) {
    for (int k = 0; k < G2F_HIST_BINS; k++) {
        size_t cnt = r->out.hist[k];
        double x = HI_L + k * g->bw;
        if (!cnt) continue;
        double h = log10((double)cnt + 1.0) / g->lmax * g->ph;
        buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>", x + 1,
                   g->y_bot - h, g->bw - 2, h, k >= g->tol_bin ? "#d64541" : "#2f9e5a");
        if (k == 0) buf_put(b, "|err| / tol below 1e-6 (or exact)");
        else if (k == G2F_HIST_BINS - 1) buf_put(b, "|err| / tol above 1e6, or non-finite");
        else
            buf_printf(b, "|err| / tol in [10^%g, 10^%g)", G2F_HIST_LO + (k - 1) * G2F_HIST_STEP,
                       G2F_HIST_LO + k * G2F_HIST_STEP);
        buf_printf(b, ": %zu elements</title></rect>\n", cnt);
        /* the count, written upwards so that neighbours never overlap (a
         * bin is narrower than "1638400"): above the bar where it fits,
         * else inside it */
        char label[16];
        compact_count(cnt, label, sizeof label);
        double len = 5.6 * (double)strlen(label) + 4, top = g->y_bot - h;
        int above = top - HI_T >= len;
        buf_printf(b,
                   "<text transform=\"translate(%.1f %.1f) rotate(-90)\" dy=\"0.35em\" font-size=\"9.5\" "
                   "text-anchor=\"%s\" fill=\"%s\">%s</text>\n",
                   x + g->bw / 2, above ? top - 3 : top + 3, above ? "start" : "end", above ? "#1f2328" : "#fff", label);
    }
}

/* The x ticks, the tolerance line, the axes and the caption. */
static void hist_close(g2f_html_buf *b, const g2f_layer_result *r, const hist_geom *g) {
    /* x ticks: every decade boundary from 1e-6 to 1e6, labelled every other */
    for (int j = 1; j < G2F_HIST_BINS; j += 2) {
        double x = HI_L + j * g->bw, l = G2F_HIST_LO + (j - 1) * G2F_HIST_STEP;
        buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>", x, x, g->y_bot,
                   g->y_bot + 4);
        if ((j - 1) % 4 == 0)
            buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#59636e\">%s</text>",
                       x, g->y_bot + 16, l == 0 ? "1" : l == -6 ? "1e-6" : l == -4 ? "1e-4" : l == -2 ? "0.01"
                                               : l == 2 ? "100" : l == 4 ? "1e4" : "1e6");
        buf_put(b, "\n");
    }
    double xt = HI_L + g->tol_bin * g->bw;
    buf_printf(b,
               "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#c62828\" stroke-width=\"1.6\" "
               "stroke-dasharray=\"7 4\"/>"
               "<text x=\"%.1f\" y=\"%d\" font-size=\"11.5\" fill=\"#c62828\" font-weight=\"600\">tolerance</text>\n",
               xt, xt, HI_T, g->y_bot, xt + 4, HI_T - 6); /* above the plot, where no count goes */
    buf_printf(b,
               "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%.1f\" stroke=\"#57606a\"/>"
               "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>\n",
               HI_L, HI_L, HI_T, g->y_bot, HI_L, HI_L + g->pw, g->y_bot, g->y_bot);
    buf_printf(b,
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">|err| / tolerance "
               "(log; half-decade bins, outer bins open-ended)</text>\n"
               "<text transform=\"translate(14 %.1f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">"
               "elements (log)</text>\n</svg>\n",
               HI_L + g->pw / 2, g->y_bot + 36.0, HI_T + g->ph / 2);
    buf_printf(b, "<figcaption>Elements of <code>out</code> (%zu) by |err| / tolerance with the requested GELU; "
                  "red bars are mismatches (%zu).</figcaption>\n</figure>\n",
               r->out.total, r->out.mismatched);
}

static void put_histogram(g2f_html_buf *b, const g2f_layer_result *r) {
    hist_geom g = {.pw = HI_W - HI_L - HI_R, .ph = HI_H - HI_T - HI_B};
    g.bw = g.pw / G2F_HIST_BINS;
    g.y_bot = HI_T + g.ph;
    size_t max = 0;
    for (int k = 0; k < G2F_HIST_BINS; k++)
        if (r->out.hist[k] > max) max = r->out.hist[k];
    g.lmax = log10((double)max + 1.0);
    if (g.lmax <= 0) g.lmax = 1;
    g.tol_bin = 1 + (int)lround((0.0 - G2F_HIST_LO) / G2F_HIST_STEP);
    hist_open(b, r, &g);
    hist_bars(b, r, &g);
    hist_close(b, r, &g);
}

static void put_cmp_row(g2f_html_buf *b, const char *name, const g2f_cmp *m) {
    buf_printf(b, "<tr><td class=\"l\">%s</td><td>%zu / %zu</td><td>", name, m->mismatched, m->total);
    put_num(b, m->max_abs);
    buf_put(b, "</td><td>");
    put_num(b, m->max_rel);
    buf_put(b, "</td><td>");
    put_num(b, m->margin);
    buf_put(b, "</td></tr>\n");
}

/* A layer whose FFN matches but another stage of its block does not. */
static void put_block_failure(g2f_html_buf *b, const g2f_layer_result *r) {
    buf_printf(b, "<section class=\"layer\" id=\"fail-%zu\">\n<h3>Layer %zu: FAIL</h3>\n<p class=\"lead\">",
               r->layer, r->layer);
    esc(b, r->explanation);
    buf_put(b, "</p>\n<table class=\"small\"><thead><tr><th class=\"l\">stage</th><th class=\"l\">diagnosis</th>"
               "<th>mismatched / total</th><th>margin</th><th class=\"l\">worst tensor</th><th>worst element: "
               "expected / computed, tolerance</th></tr></thead>\n<tbody>\n");
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
        const g2f_stage_result *st = &r->block.stage[s];
        if (!st->checked || st->pass) continue;
        char codes[512];
        stage_codes(st, codes, sizeof codes);
        buf_printf(b, "<tr><td class=\"l\">%s</td><td class=\"l mono\">", g2f_stage_name((g2f_stage)s));
        esc(b, codes);
        buf_printf(b, "</td><td>%zu / %zu</td><td>", st->mismatched, st->total);
        put_num(b, st->margin);
        buf_put(b, "</td><td class=\"l mono\">");
        esc(b, st->worst_tensor ? st->worst_tensor : "");
        buf_printf(b, "</td><td>[%zu] ", st->worst.worst);
        put_num(b, st->worst.worst_expected);
        buf_put(b, " / ");
        put_num(b, st->worst.worst_computed);
        buf_put(b, ", ");
        put_num(b, st->worst.worst_tol);
        buf_put(b, "</td></tr>\n");
    }
    buf_put(b, "</tbody></table>\n</section>\n");
}

/* The diagnosis: the causes found by recomputation (each with its margin),
 * or what no known cause explains. */
static void put_diagnosis(g2f_html_buf *b, const g2f_layer_result *r) {
    if (r->diag.n_causes) {
        if (r->diag.undetermined)
            buf_put(b, "undetermined: more than one explanation fits and the data cannot tell them apart");
        buf_put(b, "<ul class=\"causes\">\n");
        for (size_t k = 0; k < r->diag.n_causes; k++) {
            char words[512], codes[256];
            g2f_cause_words(&r->diag.causes[k], words, sizeof words);
            g2f_cause_codes(&r->diag.causes[k], codes, sizeof codes);
            buf_put(b, "<li>");
            esc(b, words);
            buf_put(b, " <code>");
            esc(b, codes);
            if (r->diag.causes[k].codes == G2F_DIAG_BIT(G2F_DIAG_WEIGHTS_QUANT_INCONSISTENT)) {
                buf_put(b, "</code> <span class=\"muted\">(read from the checkpoint's blocks: ");
                esc(b, r->diag.quant_why);
                buf_put(b, ")</span></li>\n");
                continue;
            }
            buf_put(b, "</code> <span class=\"muted\">(recomputed, margin ");
            put_num(b, r->diag.causes[k].margin);
            buf_put(b, ")</span></li>\n");
        }
        buf_put(b, "</ul>");
    } else if (r->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_NONFINITE))) {
        buf_put(b, "<code>nonfinite</code>: NaN or Inf in the reference or the computation");
    } else if (r->diagnosis & (G2F_DIAG_BIT(G2F_DIAG_UNEXPLAINED))) {
        buf_put(b, "<code>unexplained</code>: none of the known porting mistakes reproduces the reference");
    } else {
        put_codes(b, r);
    }
}

/* The worst element of out, and the first non-finite one; width: n_embd. */
static void put_worst(g2f_html_buf *b, const g2f_layer_result *r, size_t width) {
    const g2f_cmp *o = &r->out;
    buf_printf(b, "<dt>worst element</dt><dd>token %zu, index %zu: expected ", o->worst / width, o->worst % width);
    put_num(b, o->worst_expected);
    buf_put(b, ", computed ");
    put_num(b, o->worst_computed);
    buf_put(b, ", tolerance ");
    put_num(b, o->worst_tol);
    buf_put(b, " (|err| / tol ");
    put_num(b, o->margin);
    buf_put(b, ")</dd>\n");
    if (o->nonfinite)
        buf_printf(b, "<dt>non-finite</dt><dd>%zu element(s); the first at token %zu, index %zu, in the %s</dd>\n",
                   o->nonfinite, o->first_nonfinite / width, o->first_nonfinite % width,
                   o->nonfinite_in_expected ? "expected values" : o->nonfinite_in_tol ? "tolerance (it overflows float)" : "computation");
}

static void put_failure(g2f_html_buf *b, const g2f_report_ctx *c, const g2f_layer_result *r) {
    if (!ffn_failed(r)) {
        put_block_failure(b, r);
        return;
    }
    const g2f_model_info *mi = c->model;
    const g2f_gelu g = c->result->gelu;
    size_t width = mi->n_embd ? mi->n_embd : 1;
    buf_printf(b, "<section class=\"layer\" id=\"fail-%zu\">\n<h3>Layer %zu: FAIL <span class=\"muted\">"
                  "(margin ", r->layer, r->layer);
    g2f_layer_totals tot = g2f_layer_result_totals(r);
    put_num(b, tot.margin);
    buf_printf(b, ", %zu of %zu elements outside the tolerance)</span></h3>\n", tot.mismatched, tot.total);
    buf_put(b, "<div class=\"cols\">\n<div>\n<p class=\"lead\">");
    esc(b, r->explanation);
    buf_put(b, "</p>\n<dl class=\"meta\">\n<dt>diagnosis</dt><dd>");
    put_diagnosis(b, r);
    buf_put(b, "</dd>\n");
    if (r->diag.hypotheses_tried)
        buf_printf(b, "<dt>hypotheses tried</dt><dd>%zu (screened on %zu tokens)</dd>\n", r->diag.hypotheses_tried,
                   r->diag.sample_tokens);
    if (r->diag.where[0] && !strstr(r->explanation, r->diag.where)) {
        buf_put(b, "<dt>where</dt><dd>");
        esc(b, r->diag.where);
        buf_put(b, "</dd>\n");
    }
    buf_printf(b, "<dt>best GELU</dt><dd>%s (separation: out ", g2f_layer_gelu_shown(r));
    put_num(b, r->sep_out);
    if (r->has_act) {
        buf_put(b, ", act ");
        put_num(b, r->sep_act);
    }
    buf_put(b, ")</dd>\n");
    put_worst(b, r, width);
    buf_put(b, "</dl>\n<table class=\"small\"><thead><tr><th class=\"l\">compared</th><th>mismatched / total</th>"
               "<th>max abs err</th><th>max rel err</th><th>margin</th></tr></thead>\n<tbody>\n");
    char name[64];
    snprintf(name, sizeof name, "out (%s)", g2f_gelu_name(g));
    put_cmp_row(b, name, &r->out);
    snprintf(name, sizeof name, "out (%s, other)", g2f_gelu_name(g2f_gelu_other(g)));
    put_cmp_row(b, name, &r->out_other);
    if (r->has_pre) put_cmp_row(b, "pre", &r->pre);
    if (r->has_act) put_cmp_row(b, "act", &r->act);
    buf_put(b, "</tbody></table>\n</div>\n<div>\n");
    put_histogram(b, r);
    buf_put(b, "</div>\n</div>\n</section>\n");
}

char *g2f_report_html(const g2f_report_ctx *c) {
    const g2f_verify_result *res = c->result;
    g2f_html_buf b = {0};
    buf_put(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>gpt2ffn verify: ");
    buf_put(&b, res->pass ? "PASS" : "FAIL");
    buf_put(&b, " &ndash; ");
    esc(&b, c->checkpoint_arg);
    buf_put(&b, " against ");
    esc(&b, c->fixtures_arg);
    buf_printf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
    put_header(&b, c);
    buf_put(&b, "<main>\n<h2>Margin per layer</h2>\n");
    put_chart(&b, c);
    buf_put(&b, "<h2>Layers</h2>\n");
    put_table(&b, c);
    put_stage_grid(&b, c);
    put_model(&b, c);
    if (res->failed) {
        buf_printf(&b, "<h2>Failing layers (%zu)</h2>\n", res->failed);
        for (size_t i = 0; i < res->n_layers; i++)
            if (res->layers[i].status == G2F_LAYER_FAIL) put_failure(&b, c, &res->layers[i]);
    }
    buf_put(&b, "</main>\n<footer>Written by gpt2ffn"
#ifdef GPT2FFN_VERSION
                " " GPT2FFN_VERSION
#endif
                " from the same data as its text and JSON reports. Self-contained: no scripts, nothing loaded "
                "from the network.</footer>\n</body>\n</html>\n");
    if (b.failed) {
        g2f_html_buf_free(&b);
        return NULL;
    }
    return b.data;
}
