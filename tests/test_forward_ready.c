/* A checkpoint without what the whole forward computes with is refused by
 * run (exit 2, the file and tensor named, nothing written) and by generate,
 * and verify says the forward was not computed: a position embedding
 * (run computed the model without one, exit 0), a LayerNorm gain of one
 * layer (computed as 1), a bias of some layers only (computed as 0). A
 * checkpoint without any bias (nanoGPT's bias=False) is a model, computed;
 * minGPT's position embedding as an nn.Embedding (pos_emb.weight) is read
 * (it was left out); a stored head unlike wte under a config.json that ties
 * them (HF's default) is refused. argv[1] = fixtures folder, argv[2] = the CLI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"
#include "test_util.h"
#include "st_rewrite.h"

static const char *fixtures, *cli;
static char dir[256];
static char out_text[1 << 16], err_text[1 << 12];

static int run(const char *args) {
    return run_cli_in("", cli, args, dir, out_text, sizeof out_text, err_text, sizeof err_text);
}

/* Leaves out the tensor named by u, or every bias when u is "*.bias". */
static st_how drop(void *u, const g2f_tensor *t) {
    const char *name = u;
    size_t n = strlen(t->name);
    int gone = !strcmp(name, "*.bias") ? n > 5 && !strcmp(t->name + n - 5, ".bias") : !strcmp(t->name, name);
    return (st_how){gone ? ST_DROP : ST_KEEP, NULL, 1.0f, NULL};
}

/* dir/<sub>: tiny's folder without the tensor `name`. */
static void make_without(const char *sub, const char *name, char *ck, size_t n) {
    char src[400], cfg[400];
    snprintf(ck, n, "%s/%s", dir, sub);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(cfg, sizeof cfg, "%s/tiny/config.json", fixtures);
    CHECK(st_checkpoint_dir(ck, src, drop, (void *)name, cfg, NULL) == 0);
}

static void a_model_with_a_part_missing_should_not_be_computed(void) {
    static const struct {
        const char *sub, *tensor, *says;
    } cases[] = {
        {"no_wpe", "transformer.wpe.weight", "no position embedding (wpe.weight)"},
        {"no_ln1_w", "transformer.h.1.ln_1.weight", "tensor 'transformer.h.1.ln_1.weight' is missing"},
        {"no_ln2_b", "transformer.h.1.ln_2.bias", "'transformer.h.1.ln_2.bias' is missing but layer 0 has one"},
        {"no_aproj_b", "transformer.h.2.attn.c_proj.bias", "'transformer.h.2.attn.c_proj.bias' is missing but layer 0"},
        {"no_ln_f_b", "transformer.ln_f.bias", "the final LayerNorm has no bias (ln_f.bias)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ck[300], out[400], args[1400];
        make_without(cases[i].sub, cases[i].tensor, ck, sizeof ck);
        snprintf(out, sizeof out, "%s/%s.safetensors", dir, cases[i].sub);
        snprintf(args, sizeof args, "run '%s' --ids 5,17,3 -o '%s'", ck, out);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, cases[i].says);
        CHECK_CONTAINS(err_text, "the whole model cannot be computed");
        struct stat sb;
        CHECK(stat(out, &sb) != 0); /* nothing written */
        snprintf(args, sizeof args, "run '%s' --ids 5,17,3 --generate 2 -o '%s'", ck, out);
        CHECK(run(args) == 2);
        CHECK_CONTAINS(err_text, cases[i].says);
        snprintf(args, sizeof args, "verify '%s' '%s/model/clean.safetensors'", ck, fixtures);
        int rc = run(args);
        CHECK(rc == 0 || rc == 1);
        CHECK_CONTAINS(out_text, "the forward from input_ids not computed");
        CHECK_CONTAINS(out_text, cases[i].says);
    }
}

static void models_without_any_bias_and_with_mingpts_embedding_should_be_computed(void) {
    char ck[300], out[400], args[1400];
    make_without("no_bias", "*.bias", ck, sizeof ck);
    snprintf(out, sizeof out, "%s/no_bias.safetensors", dir);
    snprintf(args, sizeof args, "run '%s' --ids 5,17,3 -o '%s'", ck, out);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "verify '%s/torch/mingpt_emb_ckpt.pt' '%s/model/clean.safetensors'", fixtures, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "whole model: 30 stages compared, 0 failed");
}

/* small stores its own head; without config.json's tie_word_embeddings false HF ties it to wte (its
 * default), keeping whichever values its load order leaves: the logits are not defined, refused
 * (run computed them with the stored head). */
/* The LayerNorms' legacy names, as HF's loader renames them (gamma: weight, beta: bias). */
static st_how legacy_ln(void *u, const g2f_tensor *t) {
    char *buf = u;
    size_t n = strlen(t->name);
    int ln = strstr(t->name, "ln_") != NULL, w = n > 7 && !strcmp(t->name + n - 7, ".weight"),
        b = n > 5 && !strcmp(t->name + n - 5, ".bias");
    if (!ln || !(w || b)) return (st_how){ST_KEEP, NULL, 1.0f, NULL};
    snprintf(buf, 256, "%.*s.%s", (int)(n - (w ? 7 : 5)), t->name, w ? "gamma" : "beta");
    return (st_how){ST_KEEP, NULL, 1.0f, buf};
}

/* Under the legacy names the LayerNorms are the same (run left them out: a gain of 1, no bias). */
static void legacy_layernorm_names_should_be_read(void) {
    char ck[300], src[400], cfg[400], args[1400], buf[256];
    snprintf(ck, sizeof ck, "%s/gamma", dir);
    snprintf(src, sizeof src, "%s/tiny/model.safetensors", fixtures);
    snprintf(cfg, sizeof cfg, "%s/tiny/config.json", fixtures);
    CHECK(st_checkpoint_dir(ck, src, legacy_ln, buf, cfg, NULL) == 0);
    snprintf(args, sizeof args, "verify '%s' '%s/model/clean.safetensors'", ck, fixtures);
    CHECK(run(args) == 0);
    CHECK_CONTAINS(out_text, "whole model: 30 stages compared, 0 failed");
}

static void a_head_config_json_ties_should_be_refused(void) {
    char ck[300], src[400], args[1400];
    snprintf(ck, sizeof ck, "%s/tied_by_config", dir);
    snprintf(src, sizeof src, "%s/small/model.safetensors", fixtures);
    CHECK(st_checkpoint_dir(ck, src, NULL, NULL, NULL,
                            "{\"model_type\": \"gpt2\", \"activation_function\": \"gelu_new\", \"n_layer\": 2, "
                            "\"n_embd\": 32, \"n_head\": 4, \"n_positions\": 16, \"vocab_size\": 32}\n") == 0);
    snprintf(args, sizeof args, "run '%s' --ids 1,2,3 -o '%s/tied.safetensors'", ck, dir);
    CHECK(run(args) == 2);
    CHECK_CONTAINS(err_text, "does not set tie_word_embeddings false");
    snprintf(args, sizeof args, "run '%s/small' --ids 1,2,3 -o '%s/untied.safetensors'", fixtures, dir);
    CHECK(run(args) == 0); /* its own config says false */
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES CLI\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    cli = argv[2];
    if (make_tmpdir(dir, sizeof dir, "ready") != 0) return 1;
    RUN(a_model_with_a_part_missing_should_not_be_computed);
    RUN(models_without_any_bias_and_with_mingpts_embedding_should_be_computed);
    RUN(a_head_config_json_ties_should_be_refused);
    RUN(legacy_layernorm_names_should_be_read);
    remove_tmpdir(dir);
    CHECK_EXIT();
}
