/* g2f_config: what a checkpoint says about itself beside its tensors,
 * internal to the loader (the rules are at the top of g2f_model.h):
 *   - which config.json to read, and why (g2f_config_find);
 *   - what it says, cross-checked against the tensors found
 *     (g2f_config_check): n_layer, n_embd, n_inner, n_head, vocab_size,
 *     n_positions, layer_norm_epsilon and the GELU form;
 *   - n_head from the file's own words when no config says
 *     (g2f_config_head_count);
 *   - the GELU form a nanoGPT training checkpoint implies
 *     (g2f_config_file_gelu).
 * Each fills fields of a g2f_model_info whose n_layer, n_embd, n_inner
 * and path the tensors have already set. */
#ifndef G2F_CONFIG_H
#define G2F_CONFIG_H

#include <stddef.h>

#include "g2f_error.h"
#include "g2f_model.h"
#include "g2f_source.h"
#include "g2f_tensor.h"

/* The config to read (*out, malloc'd; NULL for none) and why, in why
 * (info.config_source): the one given; else config.json in dir (anything
 * but a folder: a FIFO named config.json is refused when read, not
 * skipped); else the only *config*.json in dir. Several: none, and why
 * lists them. */
g2f_status g2f_config_find(const char *dir, const char *given, char *why, size_t why_size, char **out,
                           g2f_error *err);

/* Reads the config file cfg (a regular file of at most 1 MiB holding a JSON
 * object, no key twice in one object) and cross-checks it against in;
 * sets in's n_head (and n_head_source), config_vocab, config_n_positions,
 * ln_eps, config_gelu and config_activation, which points into
 * *activation (malloc'd, the caller frees it; NULL when the config names
 * no activation). Fails with G2F_ERR_FORMAT naming cfg and the field. */
g2f_status g2f_config_check(const char *cfg, g2f_model_info *in, char **activation, g2f_error *err);

/* n_head when the config does not say: GGUF's gpt2.attention.head_count,
 * llm.c's header, a torch checkpoint's (format f) nanoGPT model_args or
 * config dict, TransformerLens' W_Q of layer 0 (tl_wq; NULL for other
 * schemes) of shape (n_head, d_model, d_head). Sets in->n_head and
 * in->n_head_source, or leaves them when nothing says. */
g2f_status g2f_config_head_count(const g2f_table *t, g2f_format f, const g2f_tensor *tl_wq, g2f_model_info *in,
                                 g2f_error *err);
/* A GGUF's general.architecture (gpt2), block_count, embedding_length and
 * feed_forward_length against the tensors, and its layer_norm_epsilon
 * against config.json's, then into in (config_has_ln_eps: said); other
 * formats: nothing. */
g2f_status g2f_config_gguf_words(const g2f_table *t, g2f_format f, g2f_model_info *in, g2f_error *err);

/* A nanoGPT training checkpoint (a torch.save dict with model_args beside
 * the model) says which GELU its code runs: sets in->file_has_gelu,
 * file_gelu and file_gelu_why. */
void g2f_config_file_gelu(const g2f_table *t, g2f_format f, g2f_model_info *in);

#endif
