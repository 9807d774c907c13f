/* The figures of g2f_block's stages hold together, through g2f_verify_run
 * on every block fixture of fixtures/block (each a tiny-checkpoint GPT-2
 * block with one porting bug from layer 1, or clean): on every checked
 * stage a stage passes iff no element is off, and its margin (the largest
 * over its tensors, the worst tensor's) exceeds 1 iff some element is; and,
 * as a cross-check of the fixtures, the clean ones pass and each bug's
 * first divergence is at the layer and stage it was put in, named by its
 * code. argv[1] is the fixtures folder. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "g2f_fixture.h"
#include "g2f_model.h"
#include "g2f_verify.h"

static const char *fixtures;

typedef struct block_case {
    const char *file;
    long layer;      /* the first failing layer, -1: the fixture passes */
    g2f_stage stage; /* there */
    const char *code;
} block_case;

static const block_case cases[] = {
    {"clean", -1, 0, NULL},
    {"clean_8", -1, 0, NULL},
    {"clean_f16", -1, 0, NULL},
    {"clean_tl", -1, 0, NULL},
    {"partial", -1, 0, NULL},
    {"attn_bias_missing_c_attn", 1, G2F_STAGE_ATTN, "attn_bias_missing"},
    {"attn_bias_missing_c_proj", 1, G2F_STAGE_ATTN, "attn_bias_missing"},
    {"attn_mask_missing", 1, G2F_STAGE_ATTN, "attn_mask_missing"},
    {"attn_scale_layer_idx", 1, G2F_STAGE_ATTN, "attn_scale_layer_idx"},
    {"attn_scale_missing", 1, G2F_STAGE_ATTN, "attn_scale_missing"},
    {"fc_bias_missing", 1, G2F_STAGE_MLP, "fc_bias_missing"},
    {"heads_interleaved", 1, G2F_STAGE_ATTN, "heads_interleaved"},
    {"layout_misread_attn_c_proj", 1, G2F_STAGE_ATTN, "layout_misread"},
    {"layout_misread_c_attn", 1, G2F_STAGE_ATTN, "layout_misread"},
    {"ln_bias_missing", 1, G2F_STAGE_LN1, "ln_bias_missing"},
    {"ln_eps_1e-12", 0, G2F_STAGE_LN1, "ln_eps"},
    {"ln_eps_1e-6", 0, G2F_STAGE_LN1, "ln_eps"},
    {"ln_weight_missing_ln_2", 1, G2F_STAGE_LN2, "ln_weight_missing"},
    {"qkv_order_kqv", 1, G2F_STAGE_ATTN, "qkv_order"},
    {"residual_missing_mid", 1, G2F_STAGE_MID, "residual_missing"},
    {"residual_missing_out", 1, G2F_STAGE_OUT, "residual_missing"},
    {"weights_bf16_rounded", 1, G2F_STAGE_LN1, "weights_bf16_rounded"},
    {"weights_f16_rounded", 1, G2F_STAGE_LN1, "weights_f16_rounded"},
    {"weights_from_layer_0", 1, G2F_STAGE_LN1, "weights_from_layer"},
};

static int names_code(g2f_diag_set codes, const char *name) {
    for (int d = 0; d < G2F_DIAG_COUNT; d++)
        if ((codes & G2F_DIAG_BIT(d)) && !strcmp(g2f_diag_name((g2f_diag)d), name)) return 1;
    return 0;
}

static void stages_should_hold_together(const block_case *c, const g2f_layer_result *r) {
    for (int s = G2F_BLOCK_FIRST; s <= G2F_BLOCK_LAST; s++) {
        const g2f_stage_result *st = &r->block.stage[s];
        if (!st->checked || s == G2F_STAGE_MLP) continue;
        int off = st->mismatched > 0, wide = !(st->margin <= 1); /* NaN counts as off */
        if (st->pass != !off || off != wide || st->margin != st->worst.margin) {
            fprintf(stderr, "%s layer %zu %s: pass %d, %zu of %zu off, margin %g (worst %g)\n", c->file, r->layer,
                    g2f_stage_name((g2f_stage)s), st->pass, st->mismatched, st->total, st->margin, st->worst.margin);
            check_failures++;
        }
    }
}

static void block_fixtures_should_fail_where_their_bug_is(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny", fixtures);
    g2f_model *m = NULL;
    g2f_error err = {0};
    CHECK(g2f_model_open(path, NULL, &m, &err) == G2F_OK);
    for (size_t i = 0; m && i < sizeof cases / sizeof cases[0]; i++) {
        const block_case *c = &cases[i];
        g2f_fixture *f = NULL;
        g2f_verify_result res = {0};
        g2f_verify_params p = {0};
        p.gelu = G2F_GELU_TANH;
        p.gelu_source = "test";
        p.tol = (g2f_tol_params){0, 0, 0, G2F_TOL_LAMBDA};
        p.n_threads = 1;
        snprintf(path, sizeof path, "%s/block/%s.safetensors", fixtures, c->file);
        if (g2f_fixture_open(path, &f, &err) != G2F_OK || g2f_verify_run(m, f, &p, &res, &err) != G2F_OK) {
            fprintf(stderr, "%s: %s\n", c->file, err.msg);
            check_failures++;
            g2f_fixture_close(f);
            continue;
        }
        int ok = res.compared > 0 && res.pass == (c->layer < 0) && res.first_fail == c->layer;
        if (ok && c->layer >= 0) {
            const g2f_layer_result *r = &res.layers[c->layer];
            ok = res.first_stage == (int)c->stage;
            if (c->stage == G2F_STAGE_MLP) ok = ok && names_code(r->diagnosis, c->code);
            else ok = ok && r->block.stage[c->stage].n_causes > 0 &&
                      names_code(r->block.stage[c->stage].causes[0].codes, c->code);
        }
        if (!ok) {
            fprintf(stderr, "%s: pass %d, first fail %ld (want %ld), first stage %d (want %d, %s)\n", c->file,
                    res.pass, res.first_fail, c->layer, res.first_stage, (int)c->stage, c->code ? c->code : "-");
            check_failures++;
        }
        for (size_t L = 0; L < res.n_layers; L++)
            if (res.layers[L].status != G2F_LAYER_SKIPPED && res.layers[L].has_block)
                stages_should_hold_together(c, &res.layers[L]);
        g2f_verify_result_free(&res);
        g2f_fixture_close(f);
    }
    g2f_model_close(m);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fixtures = argv[1];
    RUN(block_fixtures_should_fail_where_their_bug_is);
    CHECK_EXIT();
}
