/* gpt2ffn: the library's umbrella header. Include this, link gpt2ffn
 * (find_package(gpt2ffn) -> gpt2ffn::gpt2ffn, or pkg-config gpt2ffn).
 *
 *   g2f_model    a checkpoint's FFN weights, per layer  (g2f_model.h)
 *   g2f_fixture  reference activations, per layer      (g2f_fixture.h)
 *   g2f_verify   compare, tell the GELU form, diagnose (g2f_verify.h)
 *   g2f_ffn      the kernels                            (g2f_ffn.h)
 *   g2f_tokenizer GPT-2's tokenizer, text <-> token ids (g2f_tokenizer.h)
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
