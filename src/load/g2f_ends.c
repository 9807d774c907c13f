/* g2f_ends: the model's ends (token and position embeddings, ln_f, the
 * head) found, checked and viewed as floats; see g2f_model_embed_load and
 * g2f_model_end_tensors in g2f_model.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_file.h"
#include "g2f_model_impl.h"
#include "g2f_quant.h"

/* Rows of an (rows, d) table, minGPT's pos_emb [1, rows, d] too; 0 when the
 * shape is not that. */
static uint64_t rows_of(const g2f_tensor *x, size_t d) {
    if (x->ndim == 2 && x->shape[1] == d) return x->shape[0];
    if (x->ndim == 3 && x->shape[0] == 1 && x->shape[2] == d) return x->shape[1];
    return 0;
}

/* The vocabulary behind wte's rows: llm.c pads wte to padded_vocab_size. */
static uint64_t vocab_of(const g2f_model *m, uint64_t rows) {
    const char *v = g2f_source_format(m->src) == G2F_FORMAT_LLMC
                        ? g2f_table_meta(g2f_source_table(m->src), "vocab_size") : NULL;
    char *end;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    return v && *v && !*end && n > 0 && n <= rows ? (uint64_t)n : rows;
}

void g2f_model_note_ends(g2f_model *m) {
    size_t d = m->info.n_embd;
    const g2f_tensor *wte = g2f_model_find_end(m, G2F_EMB_WTE), *wpe = g2f_model_find_end(m, G2F_EMB_WPE);
    m->info.vocab = wte ? (size_t)vocab_of(m, rows_of(wte, d)) : 0;
    m->info.n_positions = wpe ? (size_t)rows_of(wpe, d) : 0;
    m->info.has_lm_head = g2f_model_find_end(m, G2F_EMB_HEAD) != NULL;
    m->info.has_wte = wte != NULL;
}

/* A float view of a whole tensor, or a converted copy in *owned. */
static g2f_status whole_view(const g2f_model *m, const g2f_tensor *x, const char *role, float **owned,
                             const float **view, g2f_error *err) {
    if (!g2f_dtype_is_convertible(x->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): dtype %s is not a float or quantized type",
                             m->path, x->name, role, g2f_tensor_type_name(x));
    g2f_status st = g2f_quant_check(x, m->path, err);
    if (st != G2F_OK) return st;
    if (g2f_model_in_place(x)) {
        *view = (const float *)(const void *)x->data;
        g2f_mapping_populate(x->data, x->nbytes);
        return G2F_OK;
    }
    char what[320];
    snprintf(what, sizeof what, "%s: tensor '%s' converted to float32", m->path, x->name);
    float *buf = g2f_alloc_work((size_t)x->numel ? (size_t)x->numel : 1, 1, sizeof(float), what, err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    g2f_tensor_read_f32(x, 0, x->numel, buf);
    *owned = buf;
    *view = buf;
    return G2F_OK;
}

static g2f_status shape_error(const g2f_model *m, const g2f_tensor *x, const char *role, const char *want,
                              g2f_error *err) {
    char sh[128];
    g2f_shape_format(x, sh, sizeof sh);
    return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): shape %s, expected %s", m->path, x->name, role, sh,
                         want);
}

/* The shapes of the ends found in x against n_embd, wte and config.json:
 * *rows wte's stored rows (0 without wte), *vocab, *n_pos, *head_dv. */
static g2f_status ends_shapes(const g2f_model *m, const g2f_tensor *const x[G2F_EMB_COUNT], uint64_t *rows,
                              size_t *vocab, size_t *n_pos, int *head_dv, g2f_error *err) {
    const g2f_model_info *in = &m->info;
    size_t d = in->n_embd;
    char want[128];
    *rows = 0, *vocab = 0, *n_pos = 0, *head_dv = x[G2F_EMB_HEAD] && m->scheme == G2F_SCHEME_TLENS;
    if (x[G2F_EMB_WTE]) {
        *rows = rows_of(x[G2F_EMB_WTE], d);
        snprintf(want, sizeof want, "[vocab, %zu] (n_embd %zu)", d, d);
        if (!*rows) return shape_error(m, x[G2F_EMB_WTE], "token embedding", want, err);
        *vocab = (size_t)vocab_of(m, *rows);
        if (in->config_vocab > 0 && (uint64_t)in->config_vocab != *vocab)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: vocab_size is %ld but tensor '%s' has %zu rows",
                                 in->config_path, in->config_vocab, x[G2F_EMB_WTE]->name, *vocab);
    }
    if (x[G2F_EMB_WPE]) {
        uint64_t np = rows_of(x[G2F_EMB_WPE], d);
        snprintf(want, sizeof want, "[n_positions, %zu] (n_embd %zu)", d, d);
        if (!np) return shape_error(m, x[G2F_EMB_WPE], "position embedding", want, err);
        *n_pos = (size_t)np;
        if (in->config_n_positions > 0 && (uint64_t)in->config_n_positions != np)
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: n_positions is %ld (%s) but tensor '%s' has %llu rows",
                                 in->path, in->config_n_positions, in->n_positions_said_by, x[G2F_EMB_WPE]->name,
                                 (unsigned long long)np);
    }
    const g2f_tensor *h = x[G2F_EMB_HEAD], *hb = x[G2F_EMB_HEAD_B];
    if (h) { /* without wte, the head's own vocabulary */
        uint64_t v = *rows ? *vocab : h->ndim == 2 ? h->shape[*head_dv ? 1 : 0] : 0, r = *rows ? *rows : v;
        int ok = h->ndim == 2 && v && (*head_dv ? h->shape[0] == d && h->shape[1] == v : h->shape[0] == r && h->shape[1] == d);
        if (*head_dv) snprintf(want, sizeof want, "[%zu, %llu] (n_embd, vocab)", d, (unsigned long long)v);
        else snprintf(want, sizeof want, "[%llu, %zu] (vocab, n_embd)", (unsigned long long)r, d);
        if (!ok) return shape_error(m, h, "output head", want, err);
        if (!*rows) *vocab = (size_t)v;
    }
    if (hb && (hb->ndim != 1 || !*vocab || hb->shape[0] != *vocab)) {
        snprintf(want, sizeof want, "[%zu] (vocab)", *vocab);
        return shape_error(m, hb, "output head bias", want, err);
    }
    return G2F_OK;
}

g2f_status g2f_model_end_tensors(const g2f_model *m, g2f_model_ends *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    if (!m->by_name) return G2F_OK;
    const g2f_tensor *x[G2F_EMB_COUNT];
    for (int r = 0; r < G2F_EMB_COUNT; r++) x[r] = g2f_model_find_end(m, r);
    uint64_t rows;
    g2f_status st = ends_shapes(m, x, &rows, &out->vocab, &out->n_pos, &out->head_dv, err);
    out->wte_rows = (size_t)rows;
    const g2f_scheme *S = g2f_model_scheme(m);
    const g2f_tensor *lnf[2] = {g2f_model_find(m, S->ln_f[0], -1), g2f_model_find(m, S->ln_f[1], -1)};
    for (int k = 0; st == G2F_OK && k < 2; k++)
        if (lnf[k] && (!g2f_dtype_is_float(lnf[k]->dtype) || lnf[k]->numel != m->info.n_embd))
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): %s, expected %zu floats", m->path,
                               lnf[k]->name, k ? "LayerNorm bias" : "LayerNorm gain", g2f_tensor_type_name(lnf[k]),
                               m->info.n_embd);
    const g2f_tensor *t[G2F_END_TENSORS] = {x[G2F_EMB_WTE], x[G2F_EMB_WPE], lnf[0],
                                            lnf[1], x[G2F_EMB_HEAD], x[G2F_EMB_HEAD_B]};
    for (int k = 0; st == G2F_OK && k < G2F_END_TENSORS; k++) {
        if (t[k] && !g2f_dtype_is_convertible(t[k]->dtype))
            st = g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s' (%s): dtype %s is not a float or quantized type",
                               m->path, t[k]->name, g2f_model_end_role(k), g2f_tensor_type_name(t[k]));
        if (st == G2F_OK && t[k]) st = g2f_quant_check(t[k], m->path, err);
    }
    if (st != G2F_OK) return st;
    memcpy(out->t, t, sizeof t);
    return G2F_OK;
}

g2f_status g2f_model_embed_load(const g2f_model *m, g2f_embed *out, g2f_error *err) {
    memset(out, 0, sizeof *out);
    size_t d = m->info.n_embd;
    out->d = d;
    const g2f_tensor *x[G2F_EMB_COUNT];
    for (int r = 0; r < G2F_EMB_COUNT; r++) out->src[r] = x[r] = m->by_name ? g2f_model_find_end(m, r) : NULL;
    if (!x[G2F_EMB_WTE])
        return g2f_error_set(err, G2F_ERR_FORMAT,
                             "%s: no token embedding (wte.weight, tok_emb.weight, embed.W_E or token_embd.weight): "
                             "the whole model cannot be computed", m->path);
    uint64_t rows;
    g2f_status sh = ends_shapes(m, x, &rows, &out->vocab, &out->n_pos, &out->head_dv, err);
    if (sh != G2F_OK) return sh;
    static const char *const end_roles[G2F_EMB_COUNT] = {"token embedding", "position embedding", "output head",
                                               "output head bias"};
    const float **views[G2F_EMB_COUNT] = {&out->wte, &out->wpe, &out->head, &out->head_b};
    g2f_status st = G2F_OK;
    for (int r = 0; r < G2F_EMB_COUNT && st == G2F_OK; r++)
        if (x[r]) st = whole_view(m, x[r], end_roles[r], &out->owned[r], views[r], err);
    if (st == G2F_OK) st = g2f_model_ln_load(m, 0, 0, &out->ln_f, err);
    if (st != G2F_OK) {
        g2f_embed_free(out);
        return st;
    }
    out->head_stored = x[G2F_EMB_HEAD] != NULL;
    if (!x[G2F_EMB_HEAD]) {
        out->head = out->wte;
        out->tied = 1;
        out->head_desc = "tied to the token embedding (no output head stored)";
    } else {
        /* a stored copy equal to wte value for value is tied (nanoGPT, HF and
         * TransformerLens save the tied weight twice) */
        int same = 1;
        size_t V = out->vocab;
        for (size_t i = 0; out->head_b && same && i < V; i++) same = out->head_b[i] == 0.0f; /* TL's b_U is zeros */
        for (size_t i = 0; same && i < V; i++)
            for (size_t j = 0; same && j < d; j++) {
                float a = out->wte[i * d + j], b = out->head_dv ? out->head[j * V + i] : out->head[i * d + j];
                same = memcmp(&a, &b, sizeof a) == 0;
            }
        out->tied = same;
        out->head_desc = same ? "a stored copy equal to the token embedding (tied)"
                              : "its own output head (untied: not equal to the token embedding)";
        if (!same && m->info.config_path && !m->info.config_untied) { /* HF ties them: which values it keeps is its
                                                                         load order's, not the file's */
            g2f_status cs = g2f_error_set(err, G2F_ERR_FORMAT, "%s: '%s' differs from the token embedding, but %s does not "
                                          "set tie_word_embeddings false (HF's default ties the two): the logits are "
                                          "not defined; set it false if the head is the model's own", m->path,
                                          x[G2F_EMB_HEAD]->name, m->info.config_path);
            g2f_embed_free(out);
            return cs;
        }
    }
    return G2F_OK;
}

void g2f_embed_free(g2f_embed *e) {
    if (!e) return;
    for (int r = 0; r < G2F_EMB_COUNT; r++) {
        if (e->src[r] && !e->owned[r]) g2f_mapping_release(e->src[r]->data, e->src[r]->nbytes);
        free(e->owned[r]);
    }
    g2f_ln_free(&e->ln_f);
    memset(e, 0, sizeof *e);
}
