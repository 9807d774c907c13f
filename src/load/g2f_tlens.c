/* g2f_tlens: TransformerLens' split attention (W_Q, W_K, W_V [n_head, d,
 * d_head], W_O [n_head, d_head, d], their biases) reshaped to HF's Conv1D
 * c_attn (d, 3d) and c_proj (d, d), checked against W_Q's own n_head or
 * the one given; see g2f_model_split_attn in g2f_model.h. */
#include <stdlib.h>
#include <string.h>

#include "g2f_file.h"
#include "g2f_model_impl.h"

static g2f_status tl_shapes(const g2f_model *m, const g2f_tensor *const x[8], size_t d, size_t H, g2f_error *err) {
    size_t dh = d / H;
    for (int k = 0; k < 3; k++) {
        const g2f_tensor *W = x[k], *B = x[3 + k];
        if (W->ndim != 3 || W->shape[0] != H || W->shape[1] != d || W->shape[2] != dh ||
            !g2f_dtype_is_float(W->dtype) || (B && (B->numel != d || !g2f_dtype_is_float(B->dtype))))
            return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected %s [%zu, %zu, %zu] (n_head %zu)",
                                 m->path, W->name, g2f_dtype_is_float(W->dtype) ? "shape" : "a float tensor of shape",
                                 H, d, dh, H);
    }
    const g2f_tensor *O = x[6], *BO = x[7];
    if (O->ndim != 3 || O->shape[0] != H || O->shape[1] != dh || O->shape[2] != d || !g2f_dtype_is_float(O->dtype))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected [%zu, %zu, %zu]", m->path, O->name, H, dh, d);
    if (BO && (BO->numel != d || !g2f_dtype_is_float(BO->dtype)))
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': expected %zu floats", m->path, BO->name, d);
    return G2F_OK;
}

/* The dtype c_attn is assembled in: the parts' own when they share one, else F64 when one is
 * F64 (nothing lost), else F32 (which holds F16 and BF16 exactly). */
static g2f_dtype assembled_dtype(const g2f_tensor *const src[8]) {
    g2f_dtype dt = src[0]->dtype;
    int same = 1, f64 = 0;
    for (int k = 0; k < 6; k++)
        if (src[k]) same &= src[k]->dtype == dt, f64 |= src[k]->dtype == G2F_DTYPE_F64;
    return same ? dt : f64 ? G2F_DTYPE_F64 : G2F_DTYPE_F32;
}

/* t's first n values in dtype dt: its own bytes when it has that dtype, else converted into tmp. */
static const unsigned char *in_dtype(const g2f_tensor *t, g2f_dtype dt, size_t n, unsigned char *tmp) {
    if (t->dtype == dt) return t->data;
    if (dt == G2F_DTYPE_F64) g2f_tensor_read_f64(t, 0, n, (double *)(void *)tmp);
    else g2f_tensor_read_f32(t, 0, n, (float *)(void *)tmp);
    return tmp;
}

/* The split attention found with n_head H (0: W_Q's own), into s. */
static g2f_status split_attn(const g2f_model *m, size_t L, size_t H, g2f_split_attn *s, g2f_error *err) {
    memset(s, 0, sizeof *s);
    const size_t d = m->info.n_embd;
    const char *const *split = g2f_model_scheme(m)->split_attn;
    if (!split[0] || !m->by_name) return G2F_OK;
    for (int k = 0; k < 8; k++) s->src[k] = g2f_model_find(m, split[k], (int)L);
    if (!s->src[0] || !s->src[1] || !s->src[2] || !s->src[6]) return G2F_OK; /* no attention */
    const g2f_tensor *q = s->src[0];
    if (!H && (q->ndim != 3 || q->shape[0] == 0 || q->shape[1] != d || q->shape[0] * q->shape[2] != d)) {
        char sh[64];
        g2f_shape_format(q, sh, sizeof sh);
        return g2f_error_set(err, G2F_ERR_FORMAT, "%s: tensor '%s': shape %s, expected [n_head, %zu, d_head] with "
                             "n_head d_head = %zu", m->path, q->name, sh, d, d);
    }
    if (!H) H = (size_t)q->shape[0];
    g2f_status st = tl_shapes(m, s->src, d, H, err);
    if (st != G2F_OK) return st;
    size_t dh = d / H;
    g2f_dtype dt = assembled_dtype(s->src);
    size_t es = g2f_dtype_size(dt);
    unsigned char *buf = g2f_alloc_work(3 * d * d + 3 * d, es, 1, "the attention weights", err);
    unsigned char *tmp = buf ? g2f_alloc_work(d * d, es, 1, "the attention weights", err) : NULL;
    if (!tmp) {
        free(buf);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    unsigned char *cw = buf, *cb = buf + 3 * d * d * es;
    for (int k = 0; k < 3; k++) {
        const unsigned char *w = in_dtype(s->src[k], dt, d * d, tmp); /* [h, i, j]: q_h[j] = sum_i x_i W[h, i, j] */
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < d; i++)
                memcpy(cw + (i * 3 * d + k * d + h * dh) * es, w + (h * d + i) * dh * es, dh * es);
        if (s->src[3 + k]) memcpy(cb + k * d * es, in_dtype(s->src[3 + k], dt, d, tmp), d * es);
        else memset(cb + k * d * es, 0, d * es); /* zero bytes: 0 in every float dtype */
    }
    free(tmp);
    s->owned = buf;
    s->n_head = H;
    static const char *const names[4] = {"attn.c_attn.weight (W_Q, W_K, W_V)", "attn.c_attn.bias (b_Q, b_K, b_V)",
                                         "attn.c_proj.weight (W_O)", "attn.c_proj.bias (b_O)"};
    s->t[0] = (g2f_tensor){names[0], dt, 2, {d, 3 * d}, 3 * d * d, cw, 3 * d * d * es, NULL};
    s->t[1] = (g2f_tensor){names[1], dt, 1, {3 * d}, 3 * d, cb, 3 * d * es, NULL};
    s->t[2] = *s->src[6]; /* [h, j, o]: rows h d_head + j of a Conv1D (d, d) */
    s->t[2].ndim = 2;
    s->t[2].shape[0] = s->t[2].shape[1] = d;
    s->t[2].shape[2] = 0;
    if (s->src[7]) s->t[3] = *s->src[7];
    s->present[0] = s->present[2] = 1;
    s->present[1] = s->src[3] || s->src[4] || s->src[5];
    s->present[3] = s->src[7] != NULL;
    return G2F_OK;
}

g2f_status g2f_model_split_attn(const g2f_model *m, size_t layer, g2f_split_attn *out, g2f_error *err) {
    if (layer >= m->info.n_layer)
        return g2f_error_set(err, G2F_ERR_USAGE, "layer %zu out of range (model has %zu)", layer, m->info.n_layer);
    return split_attn(m, layer, 0, out, err);
}

void g2f_split_attn_free(g2f_split_attn *s) {
    if (!s) return;
    free(s->owned);
    memset(s, 0, sizeof *s);
}

/* TransformerLens: the split attention (with n_head H) as the block's
 * Conv1D c_attn (d, 3d), c_proj (d, d) and biases. */
g2f_status g2f_tlens_block_attention(const g2f_model *m, size_t L, size_t H, g2f_block *b, g2f_error *err) {
    const size_t d = m->info.n_embd;
    g2f_split_attn sa;
    g2f_status st = split_attn(m, L, H, &sa, err);
    if (st != G2F_OK || !sa.owned) return st; /* an error, or no attention */
    float *buf = g2f_alloc_work(3 * d * d + 3 * d + d * d + d, 1, sizeof(float), "the attention weights", err);
    if (!buf) {
        g2f_split_attn_free(&sa);
        return err ? err->status : G2F_ERR_NOMEM;
    }
    float *cw = buf, *cb = buf + 3 * d * d, *pw = cb + 3 * d, *pb = pw + d * d;
    g2f_tensor_read_f32(&sa.t[0], 0, 3 * d * d, cw);
    g2f_tensor_read_f32(&sa.t[1], 0, 3 * d, cb);
    g2f_tensor_read_f32(&sa.t[2], 0, d * d, pw);
    if (sa.present[3]) g2f_tensor_read_f32(&sa.t[3], 0, d, pb);
    else memset(pb, 0, d * sizeof(float));
    b->owned = buf;
    b->attn_w = cw;
    b->attn_b = sa.src[3] ? cb : NULL;
    b->aproj_w = pw;
    b->aproj_b = sa.present[3] ? pb : NULL;
    b->layout_attn = b->layout_aproj = G2F_LAYOUT_CONV1D;
    b->has_attn = 1;
    b->src[0] = sa.src[0];
    b->src[1] = sa.src[3];
    b->src[2] = sa.src[6];
    b->src[3] = sa.src[7];
    g2f_split_attn_free(&sa);
    return G2F_OK;
}
