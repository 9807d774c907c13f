"""Every name the Python package writes or accepts is the stage table's
(src/base/g2f_stage.c), read from libgpt2ffn.so itself: the same entries
in the same model order, widths and per-layer flags, and parse() agrees
with the fixture reader's g2f_act_match on tricky names."""
import ctypes

from util import check, finish

import gpt2ffn
from gpt2ffn import _stages


class ActInfo(ctypes.Structure):
    _fields_ = [("hf", ctypes.c_char_p), ("hf_alias", ctypes.c_char_p), ("tl", ctypes.c_char_p),
                ("stage", ctypes.c_int), ("width", ctypes.c_int), ("save", ctypes.c_char_p),
                ("save_alias", ctypes.c_char_p)]


WIDTHS = ["ids", "d", "3d", "inner", "heads", "probs", "vocab", "scalar"]  # g2f_act_width's order

lib = ctypes.CDLL(gpt2ffn.library_path())
lib.g2f_act_info_of.restype = ctypes.POINTER(ActInfo)
lib.g2f_act_info_of.argtypes = [ctypes.c_int]
lib.g2f_act_per_layer.argtypes = [ctypes.c_int]
lib.g2f_act_match.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]

acts = []
a = 0
while lib.g2f_act_info_of(a):
    i = lib.g2f_act_info_of(a).contents
    dec = lambda s: s.decode() if s else None  # noqa: E731
    acts.append((a, dec(i.hf), dec(i.hf_alias), dec(i.tl), WIDTHS[i.width], bool(lib.g2f_act_per_layer(a))))
    a += 1
check(len(acts) > 20, "the table has %d activations" % len(acts))
# the forward's activations end with the logits (G2F_ACT_FORWARD_LAST); the entries after them are a
# generation fixture's tensors (prompt_ids, step_logits, ...: docs/decode.md), which no capture writes
last = [k for k, hf, _, _, _, per in acts if hf == "logits" and not per]
check(len(last) == 1, "the table has one logits entry")
acts = acts[:last[0] + 1] if last else acts

# the table's entries, in model order, against the package's
c_model = [(hf, tl, w) for _, hf, _, tl, w, per in acts if not per and hf]
c_layer = [(hf, tl, w) for _, hf, _, tl, w, per in acts if per and hf]
c_alias = {al: hf for _, hf, al, _, _, per in acts if per and al}
c_tl_model = [(tl, w) for _, hf, _, tl, w, per in acts if not per and not hf]
c_tl_layer = [(tl, w) for _, hf, _, tl, w, per in acts if per and not hf]
check(c_model == list(_stages.MODEL), "model-level names: C %s, Python %s" % (c_model, _stages.MODEL))
check(c_layer == list(_stages.LAYER), "layer names: C %s, Python %s" % (c_layer, _stages.LAYER))
check(c_alias == _stages.LAYER_ALIASES, "aliases: C %s, Python %s" % (c_alias, _stages.LAYER_ALIASES))
check(c_tl_model == list(_stages.TL_ONLY_MODEL), "TransformerLens-only model names: C %s" % c_tl_model)
check(c_tl_layer == list(_stages.TL_ONLY_LAYER), "TransformerLens-only layer names: C %s" % c_tl_layer)


def c_match(name):
    layer, tl = ctypes.c_size_t(), ctypes.c_int()
    k = lib.g2f_act_match(name.encode(), ctypes.byref(layer), ctypes.byref(tl))
    if k < 0 or k >= len(acts):
        return None
    _, hf, _, tln, w, per = acts[k]
    return (layer.value if per else None), w, bool(tl.value)


names = []
for hf, tl, _ in _stages.MODEL:
    names += [hf, "transformer." + hf] + ([tl] if tl else [])
for n, _ in _stages.TL_ONLY_MODEL:
    names += [n, "transformer." + n]
for hf, tl, _ in _stages.LAYER:
    names += ["h.0." + hf, "h.37.%s" % hf, "transformer.h.4095." + hf, "h.4096." + hf, "h.01." + hf, "h.." + hf]
    if tl:
        names += ["blocks.2." + tl, "transformer.blocks.2." + tl, "blocks.4096." + tl]
for n, _ in _stages.TL_ONLY_LAYER:
    names += ["blocks.0." + n, "h.0." + n]
names += ["h.0.ln_2.out", "h.0.mlp.output", "h.x.in", "h.0", "h.0.", "in", "mlp.in", "logit", "", "h.-1.in",
          "h.\u0663.in", "blocks.0.hook_embed", "h.0.logits", "ln_final.hook_normalized", "transformer.transformer.logits"]
for n in names:
    p = _stages.parse(n)
    c = c_match(n)
    check((p and (p[0], p[2], p[3])) == c, "%r: Python %s, C %s" % (n, p, c))

# every name the package writes is one the reader knows
for hf, _, _ in _stages.LAYER:
    check(c_match(gpt2ffn.stage_name(hf, 3)) is not None, hf)
finish()
