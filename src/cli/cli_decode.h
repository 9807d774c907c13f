/* cli_decode: the CLI's text and generation side (docs/decode.md): the
 * tokenizer a command uses, --prompt, run --generate and verify of a
 * generation fixture. Prints and chooses exit codes like cli.c. */
#ifndef CLI_DECODE_H
#define CLI_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "g2f_model.h"
#include "g2f_run.h"
#include "g2f_verify.h"
#include "g2f_tokenizer.h"

/* The tokenizer for cmd: the one at path (--tokenizer DIR|FILE) when not
 * NULL, else the one beside checkpoint (g2f_tokenizer_open_beside); *out
 * NULL when there is none and need is 0. A tokenizer with more tokens than
 * the checkpoint's vocabulary is not this model's: refused. Returns 0, or
 * EXIT_BAD after printing one line (need and none found: what to give). */
int cli_open_tokenizer(const char *cmd, const char *path, const char *checkpoint, const g2f_model *m, int need,
                       g2f_tokenizer **out);

/* --prompt TEXT encoded: *ids (malloc'd, the caller frees) and *T of them;
 * prints "prompt: N tokens: ..." on stdout. 0, or EXIT_BAD after printing
 * (an empty encoding, an id outside the checkpoint's vocabulary). */
int cli_prompt_ids(const char *cmd, const g2f_tokenizer *tok, const g2f_model *m, const char *text, int64_t **ids,
                   size_t *T);

/* run --generate N: the sequences' prompts ids (n_seq = product of lead,
 * T0 each) generated greedily by g2f_run_generate into out (the checkpoint
 * hashed first), then a line per sequence with the ids generated and, when
 * a tokenizer is known (tok_path, else beside checkpoint), their text.
 * spec is --generate's value. Returns the exit code (after printing). */
int cli_run_generate(const g2f_model *m, const char *checkpoint, const int64_t *ids, const uint64_t *lead,
                     size_t lead_ndim, size_t T0, const char *out, const g2f_run_params *p, size_t n_head,
                     unsigned save, const char *spec, const char *tok_path, int tl_names);

/* verify CHECKPOINT FIXTURE when the fixture holds a generation
 * (g2f_genverify_present): its tensors checked, the generation verified
 * (and, when the file also holds a teacher-forced fixture, that too, with
 * vp), the reports written (json / html: paths, "-" for stdout, or NULL)
 * and the text report printed unless JSON goes to stdout. tok may be NULL.
 * Returns the exit code (after printing). */
int cli_verify_generation(const g2f_model *m, const g2f_fixture *fx, const char *ck_arg, const char *fx_arg,
                          const g2f_verify_params *vp, const g2f_tokenizer *tok, const char *json, const char *html);

/* A teacher-forced fixture's attention_mask (no generation): every value 1
 * masks nothing and is fine; a 0 (padding) is refused, since the padded
 * positions are what HF computed for padding, not GPT-2 (verify checks a
 * padded batch as a generation). 0, or EXIT_BAD after printing. */
int cli_check_teacher_mask(const char *cmd, const g2f_fixture *fx);

#endif
