/* g2f_fixture: see g2f_fixture.h. */
#include "g2f_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_model.h"
#include "g2f_names.h"
#include "g2f_normread.h"
#include "g2f_source.h"

#define MAX_LAYERS G2F_STAGE_MAX_LAYERS

static int is_ffn_act(int a) { return g2f_act_is_ffn((g2f_act)a); }

/* A block stage's tensor that needs n_head to be read (split heads, probabilities). */
static int is_head_act(int a) {
    return a == G2F_ACT_Q || a == G2F_ACT_K || a == G2F_ACT_V || a == G2F_ACT_Z || a == G2F_ACT_PROBS;
}

struct g2f_fixture {
    const g2f_tensor *top[G2F_ACT_COUNT]; /* the model-level activations */
    g2f_source *src;                      /* NULL for a caller's table (g2f_fixture_from_table) */
    const g2f_table *table;               /* src's, or the caller's */
    char *path;
    size_t n_slots;                       /* max layer index + 1 */
    const g2f_tensor *(*slots)[G2F_ACT_COUNT]; /* per layer, by activation */
    g2f_fixture_alias *aliases;           /* (table count) at most */
    size_t n_aliases;
    g2f_fixture_unknown unknown[G2F_FIXTURE_UNKNOWN_MAX];
    size_t n_unknown, n_unknown_total;
    g2f_fixture_norm *norms;              /* the hook_normalized captures (g2f_fixture_read_norms) */
    const g2f_tensor **norm_orig;         /* each one's tensor as read from the file */
    g2f_tensor *norm_conv;                /* each one's LayerNorm output when read before gain and bias */
    void **norm_data;                     /* their data, owned */
    size_t n_norms;
};

/* Edits allowed for a suggestion: a third of the word, 1 to 3. */
static size_t max_edits(const char *w) {
    size_t n = strlen(w) / 3;
    return n < 1 ? 1 : n > 3 ? 3 : n;
}

/* The nearest known name to a name with a layer index written another way
 * (h.00., h.+1., H.0.MLP.OUT, model.h.0.mlp.out): the canonical name when
 * the index, the case or a leading prefix is all that differs, else "". */
static void near_spelling(const char *name, char *buf, size_t n) {
    char low[128], canon[160];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof low; i++) low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    low[i] = '\0';
    buf[0] = '\0';
    for (const char *p = low; p; p = strchr(p, '.') ? strchr(p, '.') + 1 : NULL) { /* drop leading parts */
        const char *d = strchr(p, '.');
        if (!d) break;
        size_t bl = (size_t)(d - p);
        if (!((bl == 1 && p[0] == 'h') || (bl == 6 && !strncmp(p, "blocks", 6)))) continue;
        const char *q = d + 1, *digits;
        if (*q == '+') q++;
        digits = q;
        while (*q >= '0' && *q <= '9') q++;
        if (q == digits || *q != '.' || q - digits > 4) continue;
        long v = strtol(digits, NULL, 10);
        snprintf(canon, sizeof canon, "%.*s.%ld.%s", (int)bl, p, v, q + 1);
        size_t layer;
        int tl;
        if (g2f_act_match(canon, &layer, &tl) >= 0 && strcmp(canon, name)) {
            size_t cl = strlen(canon);
            if (cl < n) memcpy(buf, canon, cl + 1);
            return;
        }
    }
}

/* Records a tensor the comparisons do not read: its name is not one gpt2ffn
 * knows. Every one is noted (a fixture's tensor silently left out could
 * hide a layer), with the nearest known name, or none. */
static void note_unknown(g2f_fixture *f, const char *name) {
    static const char *const read_by_name[] = {"__metadata__", "targets", "loss"}; /* npz metadata, the loss stage */
    for (size_t k = 0; k < sizeof read_by_name / sizeof read_by_name[0]; k++)
        if (!strcmp(name, read_by_name[k])) return;
    const char *p = name, *rest = NULL, *near = NULL, *known[48];
    char pre[48] = "", spelled[112];
    near_spelling(name, spelled, sizeof spelled);
    if (!strncmp(p, "transformer.", 12)) p += 12;
    long v = g2f_act_layer_prefix(p, "h", &rest);
    int tl = v < 0 && (v = g2f_act_layer_prefix(p, "blocks", &rest)) >= 0;
    if (spelled[0]) {
        rest = NULL;
    } else if (v >= 0) {
        size_t n = g2f_act_known_names(1, tl, known, 48);
        near = g2f_closest_name(rest, known, sizeof known[0], n, max_edits(rest));
    } else {
        size_t n = g2f_act_known_names(0, 0, known, 48);
        near = g2f_closest_name(p, known, sizeof known[0], n, max_edits(p));
        rest = p;
    }
    if (rest) snprintf(pre, sizeof pre, "%.*s", (int)(rest - name) < 47 ? (int)(rest - name) : 47, name);
    f->n_unknown_total++;
    if (f->n_unknown >= G2F_FIXTURE_UNKNOWN_MAX) return;
    g2f_fixture_unknown *u = &f->unknown[f->n_unknown++];
    snprintf(u->name, sizeof u->name, "%s", name);
    u->suggestion[0] = '\0';
    u->why[0] = '\0';
    if (spelled[0]) snprintf(u->suggestion, sizeof u->suggestion, "%s", spelled);
    else if (near) snprintf(u->suggestion, sizeof u->suggestion, "%s%s", pre, near);
}

/* Records a known tensor that is not compared, and why: it needs `missing` beside it. */
static void note_unknown_why(g2f_fixture *f, const char *name, const char *missing) {
    f->n_unknown_total++;
    if (f->n_unknown >= G2F_FIXTURE_UNKNOWN_MAX) return;
    g2f_fixture_unknown *u = &f->unknown[f->n_unknown++];
    snprintf(u->name, sizeof u->name, "%s", name);
    u->suggestion[0] = '\0';
    snprintf(u->why, sizeof u->why, "the embedding is compared as hook_embed + hook_pos_embed: %s is missing", missing);
}

/* "; the fixture holds 'X', which is not a name gpt2ffn knows (did you
 * mean 'want'?)" when an unknown name is nearest to want, else "". */
static void unknown_hint(const g2f_fixture *f, const char *want, char *buf, size_t n) {
    buf[0] = '\0';
    size_t wl = strlen(want);
    for (size_t i = 0; i < f->n_unknown; i++) {
        const char *sg = f->unknown[i].suggestion;
        size_t sl = strlen(sg);
        if (sl >= wl && !strcmp(sg + sl - wl, want)) {
            snprintf(buf, n, "; the fixture holds '%s', which is not a name gpt2ffn knows (did you mean '%s'?)",
                     f->unknown[i].name, sg);
            return;
        }
    }
}

size_t g2f_fixture_n_unknown(const g2f_fixture *f, size_t *total) {
    if (total) *total = f->n_unknown_total;
    return f->n_unknown;
}

const g2f_fixture_unknown *g2f_fixture_unknown_at(const g2f_fixture *f, size_t i) {
    return i < f->n_unknown ? &f->unknown[i] : NULL;
}

size_t g2f_fixture_n_aliases(const g2f_fixture *f) { return f->n_aliases; }

const g2f_fixture_alias *g2f_fixture_alias_at(const g2f_fixture *f, size_t i) {
    return i < f->n_aliases ? &f->aliases[i] : NULL;
}

static void alias_ints(const g2f_fixture_alias *a, g2f_alias_values *o) {
    for (uint64_t j = 0; j < a->kept->numel; j++) {
        int64_t x = g2f_tensor_int_at(a->kept, j), y = g2f_tensor_int_at(a->other, j);
        if (x == y) continue;
        if (!o->differing++) o->first = (size_t)j;
        double d = fabs((double)x - (double)y);
        if (d > o->max_abs) o->max_abs = d;
    }
}

/* Whether x and the alias's y (y2 added: a sum) agree; u: the sum's rounding. */
static int alias_agree(const g2f_fixture_alias *a, double x, double y, double u) {
    if (!a->other2) return g2f_dtype_values_agree(x, a->kept->dtype, y, a->other->dtype);
    return (isnan(x) && isnan(y)) || fabs(x - y) <= u * fmax(fabs(x), fabs(y));
}

static g2f_status alias_floats(const g2f_fixture_alias *a, g2f_alias_values *o, g2f_error *err) {
    const g2f_tensor *b2 = a->other2;
    double u = 0; /* a sum: its own float32 rounding, and the coarsest of the three */
    if (b2) u = fmax(fmax(0x1p-24, g2f_dtype_store_roundoff(b2->dtype)),
                     fmax(g2f_dtype_store_roundoff(a->kept->dtype), g2f_dtype_store_roundoff(a->other->dtype)));
    enum { CH = 4096 };
    double *buf = g2f_alloc_work(3, CH, sizeof(double), "comparing a fixture's aliases", err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    for (uint64_t i0 = 0; i0 < a->kept->numel; i0 += CH) {
        uint64_t n = a->kept->numel - i0 < CH ? a->kept->numel - i0 : CH;
        g2f_tensor_read_f64(a->kept, i0, n, buf);
        g2f_tensor_read_f64(a->other, i0, n, buf + CH);
        if (b2) {
            g2f_tensor_read_f64(b2, i0, n, buf + 2 * CH);
            for (uint64_t i = 0; i < n; i++) buf[CH + i] += buf[2 * CH + i];
        }
        for (uint64_t i = 0; i < n; i++) {
            double x = buf[i], y = buf[CH + i], dd = fabs(x - y);
            if (alias_agree(a, x, y, u)) continue;
            if (!o->differing++) o->first = (size_t)(i0 + i);
            if (!(dd <= o->max_abs)) o->max_abs = dd; /* NaN sticks */
        }
    }
    free(buf);
    return G2F_OK;
}

g2f_status g2f_fixture_alias_values(const g2f_fixture_alias *a, g2f_alias_values *o, g2f_error *err) {
    memset(o, 0, sizeof *o);
    const g2f_tensor *b2 = a->other2;
    o->total = (size_t)a->kept->numel;
    int ints = g2f_dtype_is_int(a->kept->dtype) && g2f_dtype_is_int(a->other->dtype) && !b2;
    int floats = g2f_dtype_is_float(a->kept->dtype) && g2f_dtype_is_float(a->other->dtype) &&
                 (!b2 || g2f_dtype_is_float(b2->dtype));
    if (a->kept->numel != a->other->numel || (b2 && b2->numel != a->kept->numel) || !(ints || floats)) {
        o->not_comparable = 1;
        return G2F_OK;
    }
    if (ints) return alias_ints(a, o), G2F_OK;
    return alias_floats(a, o, err);
}

/* The residual stream under its other names: h.L+1.in is block L's output
 * (h.L.out) and h.0.in the embedding (embed, or TransformerLens' hook_embed
 * + hook_pos_embed). One recorded under one name is compared under the
 * other (an HF output_hidden_states dump holds the inputs alone); recorded
 * under both, they are an alias that verify checks to hold the same values
 * (reported only when they differ: every full capture holds both).
 * A hook_embed or hook_pos_embed without its other half is noted: it is
 * not compared. */
static g2f_status link_stream(g2f_fixture *f, g2f_error *err) {
    size_t cap = f->table->count + f->n_slots + 2;
    g2f_fixture_alias *a = realloc(f->aliases, cap * sizeof *a);
    if (!a) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    f->aliases = a;
    for (size_t L = 0; L + 1 < f->n_slots; L++) {
        const g2f_tensor *next_in = f->slots[L + 1][G2F_ACT_IN];
        if (!next_in) continue;
        if (f->slots[L][G2F_ACT_OUT]) f->aliases[f->n_aliases++] = (g2f_fixture_alias){f->slots[L][G2F_ACT_OUT], next_in, NULL, 1};
        else f->slots[L][G2F_ACT_OUT] = next_in;
    }
    const g2f_tensor *emb = f->top[G2F_ACT_EMBED], *in0 = f->n_slots ? f->slots[0][G2F_ACT_IN] : NULL;
    const g2f_tensor *tok = f->top[G2F_ACT_TOK_EMBED], *pos = f->top[G2F_ACT_POS_EMBED];
    if (emb && in0) f->aliases[f->n_aliases++] = (g2f_fixture_alias){emb, in0, NULL, 1};
    const g2f_tensor *stream0 = emb ? emb : in0;
    if (tok && pos && stream0) f->aliases[f->n_aliases++] = (g2f_fixture_alias){stream0, tok, pos, 1};
    if (!tok != !pos) note_unknown_why(f, tok ? tok->name : pos->name, tok ? "hook_pos_embed" : "hook_embed");
    return G2F_OK;
}

/* Maps f->table's tensors to activations: the model's, each layer's slots,
 * aliases and unknown names. */
static g2f_status map_tensors(g2f_fixture *f, g2f_error *err) {
    const g2f_table *t = f->table;
    const char *path = f->path;
    size_t layer;
    if (!(f->aliases = g2f_alloc_array(t->count ? t->count : 1, sizeof *f->aliases)))
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->count; i++) {
        int tl, k = g2f_act_match(t->tensors[i].name, &layer, &tl);
        if (k == -2)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': layer index is %d or more", path,
                                 t->tensors[i].name, MAX_LAYERS);
        int per = k >= 0 && g2f_act_per_layer((g2f_act)k);
        if (per && layer + 1 > f->n_slots) f->n_slots = layer + 1;
        if (k >= 0 && !per && f->top[k]) f->aliases[f->n_aliases++] = (g2f_fixture_alias){f->top[k], &t->tensors[i], NULL, 0};
        else if (k >= 0 && !per) f->top[k] = &t->tensors[i];
        if (k == -1) note_unknown(f, t->tensors[i].name);
    }
    if (f->n_slots == 0 && !g2f_fixture_has_model(f))
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: no fixture tensors (h.N.mlp.in / h.N.mlp.out, or TransformerLens "
                             "blocks.N.ln2.hook_normalized / blocks.N.hook_mlp_out, or input_ids) among its %zu tensors",
                             path, t->count);
    f->slots = calloc(f->n_slots ? f->n_slots : 1, sizeof *f->slots);
    if (!f->slots) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->count; i++) {
        int tl, k = g2f_act_match(t->tensors[i].name, &layer, &tl);
        if (k < 0 || !g2f_act_per_layer((g2f_act)k)) continue;
        if (f->slots[layer][k]) /* another name of the same stage: checked by verify to hold the same values */
            f->aliases[f->n_aliases++] = (g2f_fixture_alias){f->slots[layer][k], &t->tensors[i], NULL, 0};
        else
            f->slots[layer][k] = &t->tensors[i];
    }
    return link_stream(f, err);
}

/* A fixture named path (a copy kept), its tensors read from the file path
 * (with hints, may be NULL) when table is NULL, else table's (borrowed). */
static g2f_status fixture_new(const char *path, const g2f_table *table, const g2f_source_hints *hints,
                              g2f_fixture **out, g2f_error *err) {
    *out = NULL;
    g2f_fixture *f = calloc(1, sizeof *f);
    g2f_status s;
    if (!f) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    size_t n = strlen(path) + 1;
    f->path = malloc(n);
    if (!f->path) {
        s = g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(f->path, path, n);
    if (!table && (s = g2f_source_open_hinted(path, G2F_SOURCE_FIXTURE, hints, &f->src, err)) != G2F_OK) goto fail;
    f->table = table ? table : g2f_source_table(f->src);
    if ((s = map_tensors(f, err)) != G2F_OK) goto fail;
    *out = f;
    return G2F_OK;
fail:
    g2f_fixture_close(f);
    return s;
}

g2f_status g2f_fixture_open(const char *path, g2f_fixture **out, g2f_error *err) {
    return fixture_new(path, NULL, NULL, out, err);
}

g2f_status g2f_fixture_open_for(const char *path, const g2f_model *m, g2f_norm_mode mode, g2f_fixture **out,
                                g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    g2f_llmc_state_dims dims;
    g2f_error ignored = {0};
    g2f_source_hints hints = {NULL};
    /* without a vocabulary (an FFN-only file) the state's reader says what it misses */
    if (mi->vocab && g2f_llmc_state_dims_for_model(mi->vocab, mi->n_positions, mi->n_layer, mi->n_embd, &dims,
                                                   &ignored) == G2F_OK)
        hints.llmc_state = &dims;
    g2f_status st = fixture_new(path, NULL, &hints, out, err);
    if (st == G2F_OK && (st = g2f_fixture_read_norms(*out, m, mode, err)) != G2F_OK) {
        g2f_fixture_close(*out);
        *out = NULL;
    }
    return st;
}

g2f_status g2f_fixture_from_table(const g2f_table *table, const char *label, g2f_fixture **out, g2f_error *err) {
    return fixture_new(label, table, NULL, out, err);
}

const g2f_tensor *g2f_fixture_named(const g2f_fixture *f, const char *name) { return g2f_table_find(f->table, name); }

static uint64_t tokens_of(const g2f_tensor *t) {
    return t->ndim && t->shape[t->ndim - 1] ? t->numel / t->shape[t->ndim - 1] : 0;
}

g2f_status g2f_fixture_check(const g2f_fixture *f, size_t n_layer, size_t n_embd, size_t n_inner,
                             g2f_error *err) {
    for (size_t L = 0; L < f->n_slots; L++) {
        const g2f_tensor *const *sl = f->slots[L];
        int any = 0, any_block = 0;
        for (int k = G2F_ACT_IN; k <= G2F_ACT_OUT; k++) *(is_ffn_act(k) ? &any : &any_block) |= sl[k] != NULL;
        if ((any || any_block) && L >= n_layer)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: has tensors for layer %zu but the checkpoint has %zu layers",
                                 f->path, L, n_layer);
        if (!any || (any_block && !sl[G2F_ACT_MLP_OUT] && !sl[G2F_ACT_MLP_PRE] && !sl[G2F_ACT_MLP_ACT]))
            continue; /* no FFN stage (a block fixture may record ln_2.out without the FFN's out) */
        for (int i = 0; i < 2; i++) { /* a block fixture may record mlp.out without mlp.in (TransformerLens) */
            g2f_act k = g2f_ffn_act(i);
            if (!sl[k] && (k == G2F_ACT_MLP_OUT || !any_block)) {
                char want[64], hint[480];
                g2f_act_name(k, (long)L, 0, want, sizeof want);
                unknown_hint(f, want, hint, sizeof hint);
                const g2f_fixture_norm *nr = g2f_fixture_norm_of(f, L, k);
                if (nr && nr->reading == G2F_NORM_UNDECIDED)
                    snprintf(hint, sizeof hint, "; '%s' is not compared: its values do not tell whether it was "
                             "recorded before the LayerNorm's gain and bias (TransformerLens 3) or after them "
                             "(TransformerLens 2); say which with --tl-normalized before|after", nr->name);
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: layer %zu has no '%s' tensor%s", f->path, L, want, hint);
            }
        }
        uint64_t tokens = tokens_of(sl[G2F_ACT_MLP_IN] ? sl[G2F_ACT_MLP_IN] : sl[G2F_ACT_MLP_OUT]);
        for (int i = 0; i < 4; i++) {
            g2f_act k = g2f_ffn_act(i);
            const g2f_tensor *t = sl[k];
            if (!t) continue;
            int wide = g2f_act_info_of(k)->width == G2F_WIDTH_INNER;
            size_t want = wide ? n_inner : n_embd;
            char sh[128];
            g2f_shape_format(t, sh, sizeof sh);
            if (!g2f_dtype_is_float(t->dtype))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s is not F32, F16, BF16 or F64",
                                     f->path, t->name, g2f_tensor_type_name(t));
            if (t->ndim == 0 || t->shape[t->ndim - 1] != want)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected last dimension %zu (%s)",
                                     f->path, t->name, sh, want, wide ? "n_inner" : "n_embd");
            if (tokens_of(t) != tokens)
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s has %llu tokens but 'in' has %llu",
                                     f->path, t->name, sh, (unsigned long long)tokens_of(t), (unsigned long long)tokens);
        }
        if (tokens == 0)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: layer %zu: 'in' holds no tokens", f->path, L);
    }
    return G2F_OK;
}

int g2f_fixture_has_layer(const g2f_fixture *f, size_t layer) {
    return layer < f->n_slots && f->slots[layer][G2F_ACT_MLP_IN] && f->slots[layer][G2F_ACT_MLP_OUT];
}

const char *g2f_fixture_gelu_claim(const g2f_fixture *f) {
    return g2f_table_meta(f->table, "gelu");
}

g2f_dtype g2f_fixture_dtype(const g2f_fixture *f) {
    for (size_t L = 0; L < f->n_slots; L++)
        if (f->slots[L][G2F_ACT_MLP_OUT]) return f->slots[L][G2F_ACT_MLP_OUT]->dtype;
    return G2F_DTYPE_F32;
}

const char *g2f_fixture_path(const g2f_fixture *f) { return f->path; }

g2f_status g2f_fixture_layer_views(const g2f_fixture *f, size_t layer, g2f_fixture_views *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (!g2f_fixture_has_layer(f, layer))
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: no layer %zu", f->path, layer);
    for (int i = 0; i < 4; i++) out->t[g2f_ffn_act(i)] = f->slots[layer][g2f_ffn_act(i)];
    out->n_tokens = (size_t)tokens_of(f->slots[layer][G2F_ACT_MLP_IN]);
    return G2F_OK;
}

g2f_status g2f_fixture_layer_load(const g2f_fixture *f, size_t layer, size_t n_embd, size_t n_inner,
                                  g2f_fixture_layer *out, g2f_error *err) {
    (void)n_embd;
    (void)n_inner; /* shapes were validated by g2f_fixture_check */
    memset(out, 0, sizeof *out);
    if (!g2f_fixture_has_layer(f, layer))
        return g2f_error_set(err, G2F_ERR_USAGE, "%s: no layer %zu", f->path, layer);
    const g2f_tensor *const *sl = f->slots[layer];
    out->n_tokens = (size_t)tokens_of(sl[G2F_ACT_MLP_IN]);
    for (int i = 0; i < 4; i++) out->dtype[g2f_ffn_act(i)] = sl[g2f_ffn_act(i)] ? sl[g2f_ffn_act(i)]->dtype : G2F_DTYPE_F32;
    /* numel fits the file's bytes, but a sparse file can declare more than
     * the machine holds: each buffer is checked against its memory */
    char what[96];
    snprintf(what, sizeof what, "%s: layer %zu", f->path, layer);
    if (!(out->in = g2f_alloc_work((size_t)sl[G2F_ACT_MLP_IN]->numel, 1, sizeof(float), what, err)) ||
        !(out->out = g2f_alloc_work((size_t)sl[G2F_ACT_MLP_OUT]->numel, 1, sizeof(double), what, err)) ||
        (sl[G2F_ACT_MLP_PRE] && !(out->pre = g2f_alloc_work((size_t)sl[G2F_ACT_MLP_PRE]->numel, 1, sizeof(double), what, err))) ||
        (sl[G2F_ACT_MLP_ACT] && !(out->act = g2f_alloc_work((size_t)sl[G2F_ACT_MLP_ACT]->numel, 1, sizeof(double), what, err)))) {
        g2f_fixture_layer_free(out);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    g2f_tensor_read_f32(sl[G2F_ACT_MLP_IN], 0, sl[G2F_ACT_MLP_IN]->numel, out->in);
    g2f_tensor_read_f64(sl[G2F_ACT_MLP_OUT], 0, sl[G2F_ACT_MLP_OUT]->numel, out->out);
    if (out->pre) g2f_tensor_read_f64(sl[G2F_ACT_MLP_PRE], 0, sl[G2F_ACT_MLP_PRE]->numel, out->pre);
    if (out->act) g2f_tensor_read_f64(sl[G2F_ACT_MLP_ACT], 0, sl[G2F_ACT_MLP_ACT]->numel, out->act);
    return G2F_OK;
}

void g2f_fixture_layer_free(g2f_fixture_layer *l) {
    if (!l) return;
    free(l->in);
    free(l->out);
    free(l->pre);
    free(l->act);
    memset(l, 0, sizeof *l);
}

g2f_status g2f_fixture_check_inputs(const g2f_fixture *f, size_t n_layer, size_t n_embd, g2f_error *err) {
    size_t found = 0;
    for (size_t L = 0; L < f->n_slots; L++) {
        const g2f_tensor *t = f->slots[L][G2F_ACT_MLP_IN];
        if (!t) continue;
        found++;
        char sh[128];
        g2f_shape_format(t, sh, sizeof sh);
        if (L >= n_layer)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: has inputs for layer %zu but the checkpoint has %zu layers",
                                 f->path, L, n_layer);
        if (!g2f_dtype_is_float(t->dtype))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s is not F32, F16, BF16 or F64", f->path,
                                 t->name, g2f_tensor_type_name(t));
        if (t->ndim == 0 || t->shape[t->ndim - 1] != n_embd)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected last dimension %zu (n_embd)",
                                 f->path, t->name, sh, n_embd);
        if (tokens_of(t) == 0) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' holds no tokens", f->path, t->name);
    }
    if (!found) return g2f_error_set(err, G2F_ERR_FORMAT, "%s: no FFN inputs (h.N.mlp.in)", f->path);
    return G2F_OK;
}

int g2f_fixture_has_input(const g2f_fixture *f, size_t layer) {
    return layer < f->n_slots && f->slots[layer][G2F_ACT_MLP_IN] != NULL;
}

const g2f_tensor *g2f_fixture_input(const g2f_fixture *f, size_t layer) {
    return layer < f->n_slots ? f->slots[layer][G2F_ACT_MLP_IN] : NULL;
}

void g2f_fixture_name_for(const g2f_fixture *f, size_t layer, g2f_act kind, char *buf, size_t n) {
    const g2f_tensor *in = g2f_fixture_input(f, layer);
    int tl = in && strncmp(in->name, "blocks.", 7) == 0, prefixed = in && !strncmp(in->name, "transformer.", 12);
    char name[96];
    g2f_act_name(kind, (long)layer, tl, name, sizeof name);
    snprintf(buf, n, "%s%s", prefixed ? "transformer." : "", name);
}

void g2f_fixture_close(g2f_fixture *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_norms; i++) free(f->norm_data[i]);
    free(f->norms);
    free(f->norm_orig);
    free(f->norm_conv);
    free(f->norm_data);
    g2f_source_close(f->src);
    free(f->aliases);
    free(f->slots);
    free(f->path);
    free(f);
}

g2f_status g2f_fixture_files(const g2f_fixture *f, g2f_path_list *out, g2f_error *err) {
    return f->src ? g2f_source_files(f->src, out, err) : G2F_OK; /* a caller's table: no file */
}

const g2f_tensor *g2f_fixture_act(const g2f_fixture *f, size_t layer, g2f_act a) {
    if ((unsigned)a >= G2F_ACT_COUNT) return NULL;
    if (!g2f_act_per_layer(a)) return f->top[a];
    return layer < f->n_slots ? f->slots[layer][a] : NULL;
}

int g2f_fixture_has_block(const g2f_fixture *f, size_t layer) {
    for (int k = G2F_ACT_IN; layer < f->n_slots && k <= G2F_ACT_OUT; k++)
        if (!is_ffn_act(k) && f->slots[layer][k]) return 1;
    return 0;
}

size_t g2f_fixture_n_slots(const g2f_fixture *f) { return f->n_slots; }

/* The tensor's (n_seq, T) given its trailing shape: width for [..., T, w],
 * or the head layout for [..., T, H, dh] (split) / [..., H, T, T] (probs). */
static int seq_shape(const g2f_tensor *t, int kind, size_t d, size_t H, uint64_t *n_seq, uint64_t *T) {
    size_t nd = t->ndim;
    const uint64_t *s = t->shape;
    if (kind != G2F_ACT_PROBS && is_head_act(kind)) {
        if (nd < 3 || !H || s[nd - 2] != H || s[nd - 1] != d / H) return 0;
        *T = s[nd - 3];
    } else if (kind == G2F_ACT_PROBS) {
        if (nd < 3 || !H || s[nd - 3] != H || s[nd - 1] != s[nd - 2]) return 0;
        *T = s[nd - 1];
    } else {
        uint64_t w = kind == G2F_ACT_QKV ? 3 * d : d;
        if (nd < 2 || s[nd - 1] != w) return 0;
        *T = s[nd - 2];
    }
    uint64_t per = t->numel / (*T ? *T : 1);
    if (kind != G2F_ACT_PROBS && is_head_act(kind)) per /= d;
    else if (kind == G2F_ACT_PROBS) per /= H * *T;
    else per /= kind == G2F_ACT_QKV ? 3 * d : d;
    *n_seq = per;
    return *T > 0;
}

/* The block's stages in the order they are checked, then mlp.in and
 * mlp.out, which share the sequences. */
static const g2f_act block_order[] = {G2F_ACT_IN,    G2F_ACT_LN1,    G2F_ACT_QKV, G2F_ACT_Q,        G2F_ACT_K,
                                      G2F_ACT_V,     G2F_ACT_PROBS,  G2F_ACT_MERGED, G2F_ACT_Z,  G2F_ACT_ATTN_OUT,
                                      G2F_ACT_MID,   G2F_ACT_OUT,    G2F_ACT_MLP_IN, G2F_ACT_MLP_OUT};

g2f_status g2f_fixture_check_block(const g2f_fixture *f, size_t n_layer, size_t n_embd, size_t n_head,
                                   g2f_error *err) {
    for (size_t L = 0; L < f->n_slots; L++) {
        if (!g2f_fixture_has_block(f, L)) continue;
        if (L >= n_layer)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: has tensors for layer %zu but the checkpoint has %zu layers",
                                 f->path, L, n_layer);
        uint64_t ns0 = 0, T0 = 0;
        const g2f_tensor *first = NULL;
        for (int i = 0; i < (int)(sizeof block_order / sizeof block_order[0]); i++) {
            g2f_act k = block_order[i];
            const g2f_tensor *t = f->slots[L][k];
            if (!t) continue;
            int needs_heads = is_head_act(k);
            if (needs_heads && !n_head) continue; /* checked once n_head is known; the stage is skipped */
            char sh[128];
            g2f_shape_format(t, sh, sizeof sh);
            if (!g2f_dtype_is_float(t->dtype))
                return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s is not F32, F16, BF16 or F64",
                                     f->path, t->name, g2f_tensor_type_name(t));
            uint64_t ns, T;
            if (!seq_shape(t, is_ffn_act(k) ? G2F_ACT_IN : (int)k, n_embd, n_head, &ns, &T))
                return g2f_error_set(err, G2F_ERR_FORMAT,
                                     "%s: tensor '%s': shape %s does not fit n_embd %zu%s%s", f->path, t->name, sh,
                                     n_embd, needs_heads ? " and n_head " : "", needs_heads ? "(see --n-head)" : "");
            if (!first) {
                first = t, ns0 = ns, T0 = T;
            } else if (ns != ns0 || T != T0) {
                return g2f_error_set(err, G2F_ERR_FORMAT,
                                     "%s: tensor '%s': %llu sequences of %llu tokens but '%s' has %llu of %llu", f->path,
                                     t->name, (unsigned long long)ns, (unsigned long long)T, first->name,
                                     (unsigned long long)ns0, (unsigned long long)T0);
            }
        }
    }
    return G2F_OK;
}

void g2f_fixture_block_shape(const g2f_fixture *f, size_t layer, size_t *n_seq, size_t *T) {
    *n_seq = *T = 0;
    for (int i = 0; layer < f->n_slots && i < 12; i++) { /* the block's own stages */
        g2f_act k = block_order[i];
        const g2f_tensor *t = f->slots[layer][k];
        if (!t || is_head_act(k)) continue;
        uint64_t ns, TT;
        if (seq_shape(t, k, t->shape[t->ndim - 1] / (k == G2F_ACT_QKV ? 3 : 1), 0, &ns, &TT)) {
            *n_seq = (size_t)ns;
            *T = (size_t)TT;
            return;
        }
    }
}

const char *g2f_fixture_meta(const g2f_fixture *f, const char *key) {
    return g2f_table_meta(f->table, key);
}

/* ---- the model's ends ---------------------------------------------------- */

int g2f_fixture_has_model(const g2f_fixture *f) {
    for (int k = 0; k < G2F_ACT_COUNT; k++)
        if (f->top[k]) return 1;
    return 0;
}

void g2f_fixture_read_ids(const g2f_tensor *ids, uint64_t start, uint64_t count, int64_t *out) {
    size_t es = ids->dtype == G2F_DTYPE_I64 ? 8 : 4;
    const unsigned char *p = ids->data + start * es;
    for (uint64_t i = 0; i < count; i++, p += es) {
        if (es == 8) {
            int64_t v;
            memcpy(&v, p, 8);
            out[i] = v;
        } else {
            int32_t v;
            memcpy(&v, p, 4);
            out[i] = v;
        }
    }
}

/* "[1, 3]": the multi-index of flat element i of t. */
static void index_format(const g2f_tensor *t, uint64_t i, char *buf, size_t n) {
    uint64_t idx[G2F_MAX_DIMS];
    for (size_t k = t->ndim; k-- > 0;) {
        idx[k] = t->shape[k] ? i % t->shape[k] : 0;
        i = t->shape[k] ? i / t->shape[k] : 0;
    }
    size_t used = (size_t)snprintf(buf, n, "[");
    for (size_t k = 0; k < t->ndim && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, "%s%llu", k ? ", " : "", (unsigned long long)idx[k]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

g2f_status g2f_fixture_check_model(const g2f_fixture *f, size_t d, size_t vocab, size_t n_pos, size_t *n_seq,
                                   size_t *T, g2f_error *err) {
    *n_seq = *T = 0;
    uint64_t ns0 = 0, T0 = 0;
    const g2f_tensor *first = NULL, *ids = f->top[G2F_ACT_IDS];
    char sh[128];
    if (ids) {
        g2f_shape_format(ids, sh, sizeof sh);
        if (ids->dtype != G2F_DTYPE_I64 && ids->dtype != G2F_DTYPE_I32)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s, expected I64 or I32 token ids",
                                 f->path, ids->name, g2f_tensor_type_name(ids));
        if (ids->ndim == 0 || ids->numel == 0 || ids->shape[ids->ndim - 1] == 0)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s holds no tokens", f->path, ids->name,
                                 sh);
        if (ids->nbytes < ids->numel * (ids->dtype == G2F_DTYPE_I64 ? 8u : 4u))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': %llu bytes for %llu ids", f->path, ids->name,
                                 (unsigned long long)ids->nbytes, (unsigned long long)ids->numel);
        T0 = ids->shape[ids->ndim - 1];
        ns0 = ids->numel / T0;
        first = ids;
        if (n_pos && T0 > n_pos)
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: tensor '%s': sequences of %llu tokens but the checkpoint has %zu positions "
                                 "(wpe)", f->path, ids->name, (unsigned long long)T0, n_pos);
        int64_t buf[256];
        for (uint64_t i0 = 0; i0 < ids->numel; i0 += 256) {
            uint64_t n = ids->numel - i0 < 256 ? ids->numel - i0 : 256;
            g2f_fixture_read_ids(ids, i0, n, buf);
            for (uint64_t i = 0; i < n; i++) {
                if (buf[i] >= 0 && (uint64_t)buf[i] < vocab) continue;
                char at[96];
                index_format(ids, i0 + i, at, sizeof at);
                return g2f_error_set(err, G2F_ERR_FORMAT,
                                     "%s: tensor '%s': token id %lld at position %s (sequence %llu, token %llu) is "
                                     "outside the vocabulary 0..%zu", f->path, ids->name, (long long)buf[i], at,
                                     (unsigned long long)((i0 + i) / T0), (unsigned long long)((i0 + i) % T0),
                                     vocab ? vocab - 1 : 0);
            }
        }
    }
    for (int k = G2F_ACT_EMBED; k <= G2F_ACT_FORWARD_LAST; k++) { /* a generation's tensors: g2f_genverify */
        const g2f_tensor *t = f->top[k];
        if (!t) continue;
        size_t w = k == G2F_ACT_LOGITS ? vocab : d;
        g2f_shape_format(t, sh, sizeof sh);
        if (!g2f_dtype_is_float(t->dtype))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': dtype %s is not F32, F16, BF16 or F64", f->path,
                                 t->name, g2f_tensor_type_name(t));
        if (t->ndim < 2 || t->shape[t->ndim - 1] != w || t->shape[t->ndim - 2] == 0)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected [..., T, %zu] (%s)", f->path,
                                 t->name, sh, w, k == G2F_ACT_LOGITS ? "vocab" : "n_embd");
        uint64_t TT = t->shape[t->ndim - 2], ns = t->numel / w / TT;
        if (!first) {
            first = t, ns0 = ns, T0 = TT;
        } else if (ns != ns0 || TT != T0) {
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: tensor '%s': %llu sequences of %llu tokens but '%s' has %llu of %llu", f->path,
                                 t->name, (unsigned long long)ns, (unsigned long long)TT, first->name,
                                 (unsigned long long)ns0, (unsigned long long)T0);
        }
    }
    if (!first) return G2F_OK;
    if (n_pos && T0 > n_pos)
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': sequences of %llu tokens but the checkpoint has "
                             "%zu positions (wpe)", f->path, first->name, (unsigned long long)T0, n_pos);
    for (size_t L = 0; L < f->n_slots; L++) {
        size_t ns, TT;
        g2f_fixture_block_shape(f, L, &ns, &TT);
        if (TT && (ns != ns0 || TT != T0))
            return g2f_error_set(err, G2F_ERR_FORMAT,
                                 "%s: layer %zu's stages hold %zu sequences of %zu tokens but '%s' has %llu of %llu",
                                 f->path, L, ns, TT, first->name, (unsigned long long)ns0, (unsigned long long)T0);
    }
    *n_seq = (size_t)ns0;
    *T = (size_t)T0;
    return G2F_OK;
}


/* ---- hook_normalized: before or after the gain and bias (g2f_normread.h) ---- */

static int is_norm_act(int a) { return a == G2F_ACT_LN1 || a == G2F_ACT_MLP_IN || a == G2F_ACT_LN_F; }

static const g2f_tensor **slot_of(g2f_fixture *f, g2f_act a, size_t L) {
    return g2f_act_per_layer(a) ? &f->slots[L][a] : &f->top[a];
}

/* The TransformerLens hook_normalized tensors of the table, as read. */
static g2f_status collect_norms(g2f_fixture *f, g2f_error *err) {
    const g2f_table *t = f->table;
    size_t n = 0, layer;
    int tl;
    for (size_t i = 0; i < t->count; i++) n += is_norm_act(g2f_act_match(t->tensors[i].name, &layer, &tl)) && tl;
    f->norms = calloc(n ? n : 1, sizeof *f->norms);
    f->norm_orig = calloc(n ? n : 1, sizeof *f->norm_orig);
    f->norm_conv = calloc(n ? n : 1, sizeof *f->norm_conv);
    f->norm_data = calloc(n ? n : 1, sizeof *f->norm_data);
    if (!f->norms || !f->norm_orig || !f->norm_conv || !f->norm_data)
        return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < t->count; i++) {
        int k = g2f_act_match(t->tensors[i].name, &layer, &tl);
        if (!is_norm_act(k) || !tl) continue;
        g2f_fixture_norm *nr = &f->norms[f->n_norms];
        snprintf(nr->name, sizeof nr->name, "%s", t->tensors[i].name);
        nr->act = (g2f_act)k;
        nr->layer = g2f_act_per_layer((g2f_act)k) ? layer : 0;
        nr->reading = G2F_NORM_AFTER;
        f->norm_orig[f->n_norms++] = &t->tensors[i];
    }
    return G2F_OK;
}

/* Every use of from (the stage's slot, alias pairs) becomes to; to NULL
 * takes the tensor out: an alias under another name then holds the stage. */
static void repoint(g2f_fixture *f, const g2f_tensor *from, const g2f_tensor *to, g2f_act a, size_t L) {
    const g2f_tensor **s = slot_of(f, a, L);
    size_t kept = 0;
    for (size_t i = 0; i < f->n_aliases; i++) {
        g2f_fixture_alias al = f->aliases[i];
        if (al.kept == from) al.kept = to;
        if (al.other == from) al.other = to;
        if (!to && *s == from && al.kept == NULL) *s = al.other, from = NULL; /* the other name holds the stage */
        if (al.kept && al.other) f->aliases[kept++] = al;
    }
    f->n_aliases = kept;
    if (from && *s == from) *s = to;
}

/* Decides (or takes from mode) one capture's reading and applies it. */
static g2f_status read_norm(g2f_fixture *f, const g2f_model *m, g2f_norm_mode mode, size_t i, g2f_error *err) {
    g2f_fixture_norm *nr = &f->norms[i];
    const g2f_tensor *t = f->norm_orig[i];
    const g2f_model_info *mi = g2f_model_get_info(m);
    if (!g2f_dtype_is_float(t->dtype) || !t->ndim || t->shape[t->ndim - 1] != mi->n_embd || !mi->n_embd ||
        (g2f_act_per_layer(nr->act) && nr->layer >= mi->n_layer))
        return G2F_OK; /* left as read: the shape checks name what is wrong */
    g2f_ln ln;
    int which = nr->act == G2F_ACT_LN1 ? 1 : nr->act == G2F_ACT_MLP_IN ? 2 : 0;
    g2f_status st = g2f_model_ln_load(m, which, nr->layer, &ln, err);
    if (st != G2F_OK) return st;
    g2f_norm_decision dc = {0};
    if (mode == G2F_NORM_MODE_AUTO) st = g2f_norm_decide(t, &ln, &dc, err);
    else dc.reading = mode == G2F_NORM_MODE_AFTER ? G2F_NORM_AFTER : G2F_NORM_BEFORE, nr->forced = 1;
    nr->reading = dc.reading;
    if (st == G2F_OK && dc.reading == G2F_NORM_BEFORE && !ln.w)
        st = g2f_error_set(err, G2F_ERR_USAGE, "%s: tensor '%s': --tl-normalized before needs the checkpoint's "
                           "LayerNorm gain and bias, which it does not hold", f->path, t->name);
    if (st == G2F_OK && dc.reading == G2F_NORM_BEFORE &&
        (st = g2f_norm_apply(t, &ln, &f->norm_conv[i], &f->norm_data[i], err)) == G2F_OK)
        repoint(f, t, &f->norm_conv[i], nr->act, nr->layer);
    if (st == G2F_OK && dc.reading == G2F_NORM_UNDECIDED) repoint(f, t, NULL, nr->act, nr->layer);
    g2f_ln_free(&ln);
    return st;
}

g2f_status g2f_fixture_read_norms(g2f_fixture *f, const g2f_model *m, g2f_norm_mode mode, g2f_error *err) {
    if (f->norms) return g2f_error_set(err, G2F_ERR_USAGE, "g2f_fixture_read_norms: called twice");
    g2f_status st = collect_norms(f, err);
    for (size_t i = 0; i < f->n_norms && st == G2F_OK; i++) st = read_norm(f, m, mode, i, err);
    return st;
}

size_t g2f_fixture_n_norms(const g2f_fixture *f) { return f->n_norms; }

const g2f_fixture_norm *g2f_fixture_norm_at(const g2f_fixture *f, size_t i) {
    return i < f->n_norms ? &f->norms[i] : NULL;
}

const g2f_fixture_norm *g2f_fixture_norm_of(const g2f_fixture *f, size_t layer, g2f_act a) {
    for (size_t i = 0; i < f->n_norms; i++)
        if (f->norms[i].act == a && (!g2f_act_per_layer(a) || f->norms[i].layer == layer)) return &f->norms[i];
    return NULL;
}
