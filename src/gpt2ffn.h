/* gpt2ffn: the library's umbrella header. Include this, link gpt2ffn
 * (find_package(gpt2ffn) -> gpt2ffn::gpt2ffn, or pkg-config gpt2ffn).
 *
 *   g2f_error      status codes and the error record every call fills
 *   g2f_model      a checkpoint's GPT-2 weights: per layer, the block, the ends
 *   g2f_fixture    reference activations, per layer and stage
 *   g2f_tokenizer  GPT-2's tokenizer, text <-> token ids
 *   g2f_ffn        the kernels (FFN, GELU forms, matmul)
 *   g2f_verify     compare, tell the GELU form, diagnose, per layer and stage
 *   g2f_forward    the whole forward, token ids to logits, and its check
 *   g2f_diff       ported weights against the original, without fixtures
 *   g2f_inspect    what a checkpoint holds, with value statistics
 *   g2f_report     the text and JSON reports of verify, diff and inspect
 * each in its header of the same name (g2f_model.h, ...), which this one
 * includes with the headers they need.
 * Every function returns a g2f_status and fills a caller-owned g2f_error;
 * nothing prints or exits. See examples/verify_layer.c.
 */
#ifndef GPT2FFN_H
#define GPT2FFN_H

#include "g2f_diff.h"
#include "g2f_error.h"
#include "g2f_ffn.h"
#include "g2f_fixture.h"
#include "g2f_forward.h"
#include "g2f_inspect.h"
#include "g2f_model.h"
#include "g2f_report.h"
#include "g2f_tokenizer.h"
#include "g2f_verify.h"

#endif
