/* g2f_ffn_eval with opts.forms: every other GELU form evaluated from the
 * chunk's c_fc (one c_fc for all forms) must give, bitwise, the margin of a
 * separate evaluation with how.gelu set to that form: for the plain
 * computation (fused c_fc + GELU), a port's precision path (stored
 * roundings, TF32 inputs, clipping, the residual), the user's tolerance, a
 * list of tokens, and the F16 table (its own tolerance units). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "g2f_ffn_eval.h"
#include "g2f_model.h"

static const char *fixtures;

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Forms evaluated beside others that stopped on the first tokens (they
 * failed there), and forms of more than that many tokens evaluated on all
 * (they fitted there), of which those whose margin the later tokens
 * raised: each must occur in this program. */
static int stopped, went_on, beyond;

/* Form g of how alone on tokens (NULL: the first n of the fixture), its margin. */
static double alone_margin(const g2f_ffn_how *how, g2f_gelu g, const g2f_fixture_views *fx, const g2f_tol_params *p,
                           const size_t *tokens, size_t n, g2f_ffn_eval_ws *ws) {
    size_t first[8];
    for (size_t i = 0; !tokens && i < n && i < 8; i++) first[i] = i;
    g2f_ffn_how one = *how;
    one.gelu = g;
    g2f_ffn_eval_opts alone = {tokens ? tokens : n < fx->n_tokens ? first : NULL, n, G2F_EVAL_OTHER_NONE, 0, 0, 0,
                               NULL, NULL, NULL};
    g2f_ffn_eval_result e;
    g2f_error err = {0};
    double m = NAN;
    if (g2f_ffn_eval(&one, fx, 0, p, &alone, 1, ws, &e, &err) == G2F_OK) m = g2f_ffn_eval_margin(&e);
    else check_failures++;
    g2f_ffn_eval_result_free(&e);
    return m;
}

/* Evaluates how with every form beside it, then each form alone, and
 * checks the margins agree bit for bit: on every token, or for a form
 * that stopped on the first 8 (neither how's nor the other form; only
 * when it fails there), on those 8, below its margin on every token. */
static void forms_should_match_separate_evaluations(const char *fixture, const char *variant, g2f_ffn_how how,
                                                    int user, const size_t *tokens, size_t n_tokens) {
    char mp[400], fp[400];
    snprintf(mp, sizeof mp, "%s/%s", fixtures, strstr(fixture, "small") ? "small" : "tiny");
    snprintf(fp, sizeof fp, "%s/%s", fixtures, fixture);
    g2f_error err = {0};
    g2f_model *m = NULL;
    g2f_fixture *f = NULL;
    g2f_fixture_views fx;
    g2f_layer lw;
    if (g2f_model_open(mp, NULL, &m, &err) != G2F_OK || g2f_fixture_open(fp, &f, &err) != G2F_OK ||
        g2f_fixture_layer_views(f, 0, &fx, &err) != G2F_OK || g2f_model_layer_load(m, 0, &lw, &err) != G2F_OK) {
        fprintf(stderr, "%s: %s\n", fixture, err.msg);
        check_failures++;
        g2f_fixture_close(f);
        g2f_model_close(m);
        return;
    }
    how.w = &lw.w;
    g2f_tol_params p = {user, 1e-3, 1e-4, G2F_TOL_LAMBDA};
    g2f_ffn_eval_ws ws = {0};
    g2f_ffn_eval_opts all = {tokens, n_tokens, G2F_EVAL_OTHER_FULL, 0, (1u << G2F_GELU_COUNT) - 1u, 0, NULL, NULL, NULL};
    g2f_ffn_eval_result r;
    CHECK(g2f_ffn_eval(&how, &fx, 0, &p, &all, 2, &ws, &r, &err) == G2F_OK);
    size_t n = tokens ? n_tokens : fx.n_tokens;
    int distinct = 0;
    for (int g = 0; g < G2F_GELU_COUNT; g++) {
        double want = alone_margin(&how, (g2f_gelu)g, &fx, &p, tokens, n, &ws), got = r.form_margin[g];
        if (r.form_tokens[g] < n) { /* stopped: on the first 8, where it fails */
            double head = alone_margin(&how, (g2f_gelu)g, &fx, &p, tokens, 8, &ws);
            int ok = r.form_tokens[g] == 8 && g != (int)how.gelu && g != (int)g2f_gelu_other(how.gelu) &&
                     same_bits(got, head) && got > 1 && got <= want;
            if (!ok) {
                fprintf(stderr, "%s (%s): %s stopped on %zu tokens at margin %.17g (%.17g alone on 8, %.17g on all)\n",
                        fixture, variant, g2f_gelu_name((g2f_gelu)g), r.form_tokens[g], got, head, want);
                check_failures++;
            }
            stopped++;
        } else {
            if (r.form_tokens[g] != n || !same_bits(got, want)) {
                fprintf(stderr, "%s (%s): %s margin %.17g on %zu tokens with the other forms, %.17g alone\n", fixture,
                        variant, g2f_gelu_name((g2f_gelu)g), got, r.form_tokens[g], want);
                check_failures++;
            }
            if (n > 8 && g != (int)how.gelu && g != (int)g2f_gelu_other(how.gelu)) {
                double head = alone_margin(&how, (g2f_gelu)g, &fx, &p, tokens, 8, &ws);
                went_on++;
                beyond += got > head; /* the rows after the first 8 counted */
                fprintf(stderr, "%s (%s): %s fits on the first 8 tokens (%.3g): %.3g on all %zu\n", fixture, variant,
                        g2f_gelu_name((g2f_gelu)g), head, got, n);
            }
        }
        if (g != (int)how.gelu && !same_bits(want, r.form_margin[how.gelu])) distinct++;
    }
    CHECK(distinct > 0); /* the forms were told apart, so agreement says something */
    g2f_ffn_eval_result_free(&r);
    g2f_ffn_eval_ws_free(&ws);
    g2f_layer_free(&lw);
    g2f_fixture_close(f);
    g2f_model_close(m);
}

int main(int argc, char **argv) {
    fixtures = argc > 1 ? argv[1] : "fixtures";
    g2f_ffn_how plain = {0};
    plain.gelu = G2F_GELU_TANH;
    forms_should_match_separate_evaluations("tiny_tanh.safetensors", "plain tanh", plain, 0, NULL, 0);
    forms_should_match_separate_evaluations("diag/small_driven.safetensors", "plain tanh", plain, 0, NULL, 0);
    g2f_ffn_how erf = plain;
    erf.gelu = G2F_GELU_ERF;
    forms_should_match_separate_evaluations("tiny_erf.safetensors", "plain erf", erf, 0, NULL, 0);
    g2f_ffn_how table = plain;
    table.gelu = G2F_GELU_F16_TABLE;
    forms_should_match_separate_evaluations("diag/gelu_f16_table.safetensors", "f16 table", table, 0, NULL, 0);
    g2f_ffn_how stored = plain;
    stored.store = G2F_ROUND_F16;
    stored.out_round = G2F_ROUND_F16;
    forms_should_match_separate_evaluations("diag/small_autocast_f16.safetensors", "f16 stores", stored, 0, NULL, 0);
    g2f_ffn_how tf32 = plain;
    tf32.gemm_in = G2F_ROUND_TF32;
    forms_should_match_separate_evaluations("diag/small_tf32_matmul.safetensors", "tf32 inputs", tf32, 0, NULL, 0);
    g2f_ffn_how clip = plain;
    clip.clip = 1;
    clip.residual = 1;
    forms_should_match_separate_evaluations("diag/small_gelu_clipped.safetensors", "clip + residual", clip, 0, NULL,
                                            0);
    forms_should_match_separate_evaluations("diag/small_driven_f16.safetensors", "user tolerance", plain, 1, NULL, 0);
    /* float16 and bfloat16 references: forms that fit on the first tokens go on */
    forms_should_match_separate_evaluations("diag/small_driven_f16.safetensors", "f16 reference", plain, 0, NULL, 0);
    forms_should_match_separate_evaluations("tiny_tanh_f16.safetensors", "f16 reference", plain, 0, NULL, 0);
    forms_should_match_separate_evaluations("diag/small_act_bf16_rounded.safetensors", "bf16 act", stored, 0, NULL, 0);
    const size_t many[] = {0, 2, 3, 5, 6, 7, 8, 9, 10, 11};
    forms_should_match_separate_evaluations("diag/small_driven_bf16.safetensors", "10 tokens", plain, 0, many, 10);
    const size_t some[] = {1, 4, 7, 11};
    forms_should_match_separate_evaluations("diag/small_driven_bf16.safetensors", "4 tokens", plain, 0, some, 4);
    fprintf(stderr, "forms stopped on the first tokens: %d; evaluated on all after them: %d (%d higher there)\n",
            stopped, went_on, beyond);
    CHECK(stopped > 0 && went_on > 0 && beyond > 0);
    return check_failures ? 1 : 0;
}
