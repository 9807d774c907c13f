/* cli_decode: see cli_decode.h. */
#include "cli_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_msg.h"
#include "g2f_genreport.h"
#include "g2f_genrun.h"
#include "g2f_genverify.h"
#include "g2f_text.h"

int cli_open_tokenizer(const char *cmd, const char *path, const char *checkpoint, const g2f_model *m, int need,
                       g2f_tokenizer **out) {
    g2f_error err = {0};
    *out = NULL;
    g2f_status st = path ? g2f_tokenizer_open(path, out, &err) : g2f_tokenizer_open_beside(checkpoint, out, &err);
    if (st != G2F_OK) return cli_bad("%s: %s", cmd, err.msg);
    if (!*out) {
        if (!need) return 0;
        return cli_bad("%s: --prompt: no tokenizer beside %s (tokenizer.json, vocab.json + merges.txt, or "
                       "encoder.json + vocab.bpe); give --tokenizer DIR|FILE", cmd, checkpoint);
    }
    const g2f_tokenizer_info *ti = g2f_tokenizer_get_info(*out);
    size_t V = g2f_model_get_info(m)->vocab;
    if (V && ti->vocab_size > V) {
        cli_bad("%s: the tokenizer %s holds %zu tokens but the checkpoint's vocabulary has %zu: it is not this "
                "model's tokenizer (give --tokenizer DIR|FILE)", cmd, ti->vocab_path, ti->vocab_size, V);
        g2f_tokenizer_close(*out);
        *out = NULL;
        return EXIT_BAD;
    }
    return 0;
}

int cli_prompt_ids(const char *cmd, const g2f_tokenizer *tok, const g2f_model *m, const char *text, int64_t **ids,
                   size_t *T) {
    g2f_error err = {0};
    g2f_tokens t = {0};
    *ids = NULL;
    *T = 0;
    if (g2f_tokenizer_encode(tok, text, strlen(text), &t, &err) != G2F_OK) return cli_bad("%s: --prompt: %s", cmd, err.msg);
    if (t.count == 0) {
        g2f_tokens_free(&t);
        return cli_bad("%s: --prompt: the text encodes to no tokens", cmd);
    }
    size_t V = g2f_model_get_info(m)->vocab;
    for (size_t i = 0; V && i < t.count; i++)
        if ((uint64_t)t.ids[i] >= V) {
            cli_bad("%s: --prompt: token %zu is id %lld, outside the checkpoint's vocabulary 0..%zu", cmd, i,
                    (long long)t.ids[i], V - 1);
            g2f_tokens_free(&t);
            return EXIT_BAD;
        }
    printf("prompt: %zu token%s:", t.count, t.count == 1 ? "" : "s");
    for (size_t i = 0; i < t.count && i < 64; i++) printf(" %lld", (long long)t.ids[i]);
    printf("%s%s\n", t.count > 64 ? " ..." : "", t.replaced ? " (invalid UTF-8 replaced by U+FFFD first)" : "");
    *ids = t.ids;
    *T = t.count;
    return 0;
}

/* "sequence 0: generated 5 tokens: 3 17 ..." and its text when tok is known. */
static void show_generated(const g2f_tokenizer *tok, size_t seq, const int64_t *ids, size_t N) {
    printf("sequence %zu: generated %zu token%s:", seq, N, N == 1 ? "" : "s");
    for (size_t i = 0; i < N && i < 64; i++) printf(" %lld", (long long)ids[i]);
    printf("%s\n", N > 64 ? " ..." : "");
    unsigned char *bytes = NULL;
    size_t len = 0;
    g2f_error err = {0};
    if (!tok || g2f_tokenizer_decode(tok, ids, N, &bytes, &len, &err) != G2F_OK) return;
    for (size_t i = 0; i < len; i++) /* shown as one line: a NUL ends no string early */
        if (!bytes[i]) bytes[i] = 0x01;
    char *shown = g2f_escape_dup((const char *)bytes);
    printf("sequence %zu: text: \"%s\"\n", seq, shown ? shown : "?");
    free(shown);
    free(bytes);
}

int cli_run_generate(const g2f_model *m, const char *checkpoint, const int64_t *ids, const uint64_t *lead,
                     size_t lead_ndim, size_t T0, const char *out, const g2f_run_params *p, size_t n_head,
                     unsigned save, const char *spec, const char *tok_path, int tl_names) {
    char *end;
    unsigned long long N = strtoull(spec, &end, 10);
    if (*spec < '0' || *spec > '9' || *end || N == 0 || N > (1u << 20))
        return cli_bad("run: --generate '%.40s': expected the number of tokens to generate, 1 to %u", spec, 1u << 20);
    if (tl_names) return cli_bad("run: --generate writes HF names (--names tl is for the forward of --ids)");
    g2f_tokenizer *tok = NULL;
    if (cli_open_tokenizer("run", tok_path, checkpoint, m, 0, &tok) != 0) return EXIT_BAD;
    g2f_error err = {0};
    char sha[65];
    g2f_run_params rp = *p;
    rp.checkpoint_sha256 = sha;
    g2f_genrun_params gp = {&rp, n_head, (size_t)N, save};
    g2f_genrun_result r = {0};
    int rc = 0;
    if (g2f_model_sha256(m, sha, &err) != G2F_OK ||
        g2f_run_generate(m, ids, lead, lead_ndim, T0, out, &gp, &r, &err) != G2F_OK) {
        rc = cli_bad("%s", err.msg);
    } else {
        char *shown = g2f_escape_dup(out);
        printf("wrote %s: %zu token%s generated greedily after each of %zu prompt%s of %zu tokens (one step a token, "
               "keys and values cached), %zu tensors, %s GELU, checkpoint sha256 %s\n", shown ? shown : "?", r.steps,
               r.steps == 1 ? "" : "s", r.n_seq, r.n_seq == 1 ? "" : "s", r.T0, r.tensors, g2f_gelu_name(p->gelu), sha);
        free(shown);
        for (size_t s = 0; s < r.n_seq; s++) show_generated(tok, s, r.generated + s * r.steps, r.steps);
    }
    g2f_genrun_result_free(&r);
    g2f_tokenizer_close(tok);
    return rc;
}

/* ---- verify of a generation ------------------------------------------------------ */

/* The report text (taken) to path, "-" meaning stdout; 0, or EXIT_BAD after printing. */
static int emit(const char *path, char *text, const char *what) {
    g2f_error err = {0};
    int rc = 0;
    if (!text) return cli_bad("out of memory writing the %s report", what);
    if (!strcmp(path, "-")) {
        if (what[0] == 'H') rc = cli_bad("--html needs a file name");
        else puts(text);
    } else if (g2f_write_file_atomic(path, text, &err) != G2F_OK) {
        rc = cli_bad("%s", err.msg);
    }
    free(text);
    return rc;
}

/* The file holds a teacher-forced fixture beside the generation. */
static int has_forward(const g2f_fixture *fx) {
    for (int k = 0; k <= G2F_ACT_FORWARD_LAST; k++)
        if (!g2f_act_per_layer((g2f_act)k) && g2f_fixture_act(fx, 0, (g2f_act)k)) return 1;
    return g2f_fixture_n_slots(fx) > 0;
}

/* The teacher-forced verify of fx into res and its report context (provenance checked when fx records it). */
static int verify_teacher(const g2f_model *m, const g2f_fixture *fx, const g2f_verify_params *vp, g2f_verify_result *res,
                          char ck_sha[65], g2f_error *err) {
    if (g2f_verify_run(m, fx, vp, res, err) != G2F_OK) return cli_bad("%s", err->msg);
    if (g2f_fixture_meta(fx, "checkpoint_sha256") && g2f_model_sha256(m, ck_sha, err) != G2F_OK)
        return cli_bad("%s", err->msg);
    return 0;
}

int cli_verify_generation(const g2f_model *m, const g2f_fixture *fx, const char *ck_arg, const char *fx_arg,
                          const g2f_verify_params *vp, const g2f_tokenizer *tok, const char *json, const char *html) {
    g2f_error err = {0};
    if (g2f_genverify_check(m, fx, &err) != G2F_OK) return cli_bad("%s", err.msg);
    g2f_model_info shown = *g2f_model_get_info(m); /* the reports say which n_head was used */
    if (vp->n_head) shown.n_head = vp->n_head, shown.n_head_source = "given with --n-head";
    g2f_verify_result res = {0};
    g2f_gen_result gr = {0};
    char ck_sha[65] = "";
    int teacher = has_forward(fx), rc = EXIT_BAD;
    const char *fx_sha = g2f_fixture_meta(fx, "checkpoint_sha256");
    g2f_report_ctx tctx = {ck_arg, fx_arg, &shown, vp->gelu_source, g2f_fixture_gelu_claim(fx), g2f_fixture_dtype(fx),
                           &vp->tol, &res, 0, fx_sha, fx_sha ? ck_sha : NULL, 0, tok};
    double lambda = vp->tol.lambda > 0 ? vp->tol.lambda : G2F_TOL_LAMBDA;
    g2f_genverify_params gp = {vp->n_head, vp->gelu, vp->n_threads, lambda, 1};
    if (teacher && verify_teacher(m, fx, vp, &res, ck_sha, &err) != 0) goto done;
    /* tensors beside the generation with no stage to compare (HF's input_ids: prompt and generation
     * together): not a teacher-forced part, whose verdict on nothing would be a false FAIL; said */
    char note[1400] = "", why[1200];
    if (teacher && res.compared == 0 && !res.model.compared && !res.loss.checked) {
        g2f_verify_nothing_compared(fx, why, sizeof why);
        snprintf(note, sizeof note, "not checked teacher-forced: %s", why);
        teacher = 0;
    }
    if (g2f_genverify_run(m, fx, &gp, &gr, &err) != G2F_OK) {
        cli_bad("%s", err.msg);
        goto done;
    }
    g2f_genreport_ctx gc = {ck_arg, fx_arg, &shown, vp->gelu, vp->gelu_source, lambda, &gr, tok, teacher ? &tctx : NULL,
                            fx, note[0] ? note : NULL};
    if (json && emit(json, g2f_genreport_json(&gc), "JSON") != 0) goto done;
    if (html && emit(html, g2f_genreport_html(&gc), "HTML") != 0) goto done;
    if (!json || strcmp(json, "-") != 0) g2f_genreport_text(stdout, &gc);
    rc = g2f_genreport_pass(&gc) ? 0 : EXIT_MISMATCH;
done:
    g2f_verify_result_free(&res);
    return rc;
}

int cli_check_teacher_mask(const char *cmd, const g2f_fixture *fx) {
    const g2f_tensor *t = g2f_fixture_act(fx, 0, G2F_ACT_ATTENTION_MASK);
    if (!t || g2f_genverify_present(fx)) return 0;
    size_t es = g2f_dtype_size(t->dtype);
    int ints = t->dtype == G2F_DTYPE_I64 || t->dtype == G2F_DTYPE_I32 || t->dtype == G2F_DTYPE_U8 ||
               t->dtype == G2F_DTYPE_I8 || t->dtype == G2F_DTYPE_BOOL;
    if (!ints || t->nbytes < t->numel * es)
        return cli_bad("%s: %s: tensor '%s': dtype %s, expected integers or booleans (0 or 1)", cmd,
                       g2f_fixture_path(fx), t->name, g2f_tensor_type_name(t));
    for (uint64_t i = 0; i < t->numel; i++) {
        int64_t v = 0;
        if (es == 8) memcpy(&v, t->data + i * 8, 8);
        else if (es == 4) { int32_t w; memcpy(&w, t->data + i * 4, 4); v = w; }
        else v = t->dtype == G2F_DTYPE_I8 ? (int8_t)t->data[i] : t->data[i];
        if (v == 1) continue;
        return cli_bad("%s: %s: tensor '%s' holds %lld at element %llu: a padded batch's padded positions are "
                       "not GPT-2's; export each row without padding, or check the batch as a generation "
                       "(prompt_ids, generated_ids, attention_mask: docs/decode.md)", cmd, g2f_fixture_path(fx),
                       t->name, (long long)v, (unsigned long long)i);
    }
    return 0;
}
