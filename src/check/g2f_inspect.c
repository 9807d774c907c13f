/* g2f_inspect: see g2f_inspect.h. One layer is loaded at a time. */
#include "g2f_inspect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g2f_cpu.h"

void g2f_stats_compute(const float *v, size_t n, g2f_stats *o) {
    memset(o, 0, sizeof *o);
    o->count = n;
    double mean = 0, m2 = 0;
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        if (isnan(x)) { o->nan++; continue; }
        if (isinf(x)) { o->inf++; continue; }
        if (k == 0 || x < o->min) o->min = x;
        if (k == 0 || x > o->max) o->max = x;
        k++;
        double d = x - mean;
        mean += d / (double)k;
        m2 += d * (x - mean);
    }
    o->mean = mean;
    o->std = k > 1 ? sqrt(m2 / (double)k) : 0;
}

/* Statistics of one of a block's other tensors (at most 3 d^2 floats):
 * read out of the file where rd finds that faster than the mapping, else
 * converted whole into a buffer. */
static g2f_status other_stats(const g2f_model *m, const g2f_tensor *t, g2f_layer_reader *rd, g2f_stats *o,
                              g2f_error *err) {
    const float *f = g2f_model_tensor_read(m, t, rd);
    if (f) {
        g2f_stats_compute(f, (size_t)t->numel, o);
        return G2F_OK;
    }
    float *buf = g2f_alloc_work((size_t)t->numel, 1, sizeof(float), t->name, err);
    if (!buf) return err ? err->status : G2F_ERR_NOMEM;
    g2f_tensor_read_f32(t, 0, (size_t)t->numel, buf);
    g2f_stats_compute(buf, (size_t)t->numel, o);
    free(buf);
    g2f_model_release(m, t);
    return G2F_OK;
}

/* One tensor's statistics: the values v (the FFN's, read with the layer)
 * or the tensor t (another one, read by the worker's reader). */
typedef struct stat_job {
    const float *v;
    size_t n;
    const g2f_tensor *t;
} stat_job;

#define INSPECT_WORKERS 8 /* at most; the thread count decides */

/* Jobs to workers, largest first to the least loaded: each tensor's
 * statistics stay one sequential pass (the same digits however many
 * workers); on two workers GPT-2's four matrices (4, 4, 3 and 1 d^2) split 7 : 5
 * instead of running one after another. who[k] = the worker of job k. */
static void share_jobs(const stat_job *job, int count, int workers, int *who) {
    size_t load[INSPECT_WORKERS] = {0};
    int done[G2F_LAYER_TENSORS] = {0};
    for (int round = 0; round < count; round++) {
        int big = -1;
        for (int k = 0; k < count; k++)
            if (!done[k] && (big < 0 || job[k].n > job[big].n)) big = k;
        int w = 0;
        for (int i = 1; i < workers; i++)
            if (load[i] < load[w]) w = i;
        done[big] = 1, who[big] = w, load[w] += job[big].n;
    }
}

/* The jobs of worker me, in order, up to its first failure (recorded in
 * st[k] and err[k]: the caller reports the first in tensor order, whatever
 * worker had it). */
static void run_jobs(const g2f_model *m, const stat_job *job, const int *who, int count, int me,
                     g2f_layer_reader *rd, g2f_inspect_layer *il, g2f_status *st, g2f_error *err) {
    for (int k = 0; k < count; k++) {
        if (who[k] != me) continue;
        if (job[k].v) g2f_stats_compute(job[k].v, job[k].n, &il->stats[k]);
        else if (job[k].t && (st[k] = other_stats(m, job[k].t, rd, &il->stats[k], &err[k])) != G2F_OK) return;
    }
}

/* Layer L's jobs: the FFN's tensors from l (their sources into il), the
 * block's others from all. */
static void layer_jobs(const g2f_model *m, const g2f_layer *l, const g2f_tensor *const *all, g2f_inspect_layer *il,
                       stat_job *job) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    size_t d = mi->n_embd, h = mi->n_inner;
    const float *v[G2F_FFN_TENSORS] = {l->w.w_fc, l->w.b_fc, l->w.w_proj, l->w.b_proj};
    const size_t n[G2F_FFN_TENSORS] = {d * h, h, d * h, d};
    for (int k = 0; k < G2F_LAYER_TENSORS; k++) {
        job[k] = (stat_job){NULL, 0, NULL};
        if (k < G2F_FFN_TENSORS) {
            il->tensor[k] = l->src[k];
            if (v[k]) job[k] = (stat_job){v[k], n[k], NULL};
        } else if (all[k]) {
            job[k] = (stat_job){NULL, (size_t)all[k]->numel, all[k]};
        }
    }
}

/* Layer L's tensors and their statistics into il, the tensors shared out
 * to the workers (share_jobs); rd reads the FFN's weights, rd_other[w] the
 * others of worker w (where reading beats first touches of the mapping, as
 * in run and diff). */
static g2f_status inspect_layer(const g2f_model *m, size_t L, g2f_layer_reader *rd, g2f_layer_reader *rd_other,
                                g2f_inspect_layer *il, g2f_error *err) {
    g2f_layer l;
    g2f_status s = g2f_model_layer_read(m, L, rd, &l, err);
    if (s != G2F_OK) return s;
    const g2f_tensor *all[G2F_LAYER_TENSORS];
    if ((s = g2f_model_layer_tensors_all(m, L, all, &il->attn_split, err)) != G2F_OK) {
        g2f_layer_free(&l);
        return s;
    }
    stat_job job[G2F_LAYER_TENSORS];
    layer_jobs(m, &l, all, il, job);
    int who[G2F_LAYER_TENSORS], threads = g2f_threads(0), workers = threads < INSPECT_WORKERS ? threads : INSPECT_WORKERS;
    g2f_status st[G2F_LAYER_TENSORS];
    g2f_error errs[G2F_LAYER_TENSORS]; /* a tensor's, set with its st */
    for (int k = 0; k < G2F_LAYER_TENSORS; k++) st[k] = G2F_OK;
    for (int w = 0; w < INSPECT_WORKERS; w++)
        if (rd_other[w].mode == G2F_READ_UNDECIDED) rd_other[w].mode = rd->mode; /* one decision for the walk */
    share_jobs(job, G2F_LAYER_TENSORS, workers, who);
#ifdef _OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(workers)
#endif
    for (int w = 0; w < workers; w++) run_jobs(m, job, who, G2F_LAYER_TENSORS, w, &rd_other[w], il, st, errs);
    g2f_layer_free(&l);
    for (int k = G2F_FFN_TENSORS; k < G2F_LAYER_TENSORS; k++) {
        if (st[k] != G2F_OK) { /* the first failure in tensor order */
            if (err) *err = errs[k];
            return st[k];
        }
        if (all[k]) il->tensor[k] = all[k];
    }
    return G2F_OK;
}

g2f_status g2f_inspect_run(const g2f_model *m, g2f_inspect_result *out, g2f_error *err) {
    const g2f_model_info *mi = g2f_model_get_info(m);
    memset(out, 0, sizeof *out);
    out->layers = calloc(mi->n_layer ? mi->n_layer : 1, sizeof *out->layers);
    if (!out->layers) return g2f_error_set(err, G2F_ERR_NOMEM, "out of memory");
    out->n_layers = mi->n_layer;
    out->ffn_params = g2f_model_ffn_params(m);
    g2f_layer_reader rd = {0}, rd_other[INSPECT_WORKERS] = {{0}};
    g2f_status s = G2F_OK;
    for (size_t L = 0; L < mi->n_layer && s == G2F_OK; L++) s = inspect_layer(m, L, &rd, rd_other, &out->layers[L], err);
    g2f_layer_reader_free(&rd);
    for (int w = 0; w < INSPECT_WORKERS; w++) g2f_layer_reader_free(&rd_other[w]);
    if (s != G2F_OK) g2f_inspect_result_free(out);
    return s;
}

void g2f_inspect_result_free(g2f_inspect_result *r) {
    if (!r) return;
    free(r->layers);
    memset(r, 0, sizeof *r);
}
