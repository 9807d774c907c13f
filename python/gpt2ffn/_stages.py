"""The stage names gpt2ffn reads (its stage table, src/base/g2f_stage.c).

Every name a capture or a Recorder writes is one of these; the test
tests/python/test_python_stages.py checks them against the library's own
table (g2f_act_info_of, g2f_act_match), so the two cannot drift apart.

Widths (the last dimensions, in the model's sizes):
  ids    [..., T]               d      [..., T, n_embd]
  3d     [..., T, 3 n_embd]     inner  [..., T, n_inner]
  heads  [..., T, n_head, d_head]
  probs  [..., n_head, T, T]    vocab  [..., T, vocab]
"""

# (HF name, TransformerLens name or None, width), model order
MODEL = (
    ("input_ids", "input_ids", "ids"),
    ("embed", None, "d"),
    ("ln_f.out", "ln_final.hook_normalized", "d"),
    ("logits", "logits", "vocab"),
)
# per layer, after "h.L." (TransformerLens: after "blocks.L.")
LAYER = (
    ("in", "hook_resid_pre", "d"),
    ("ln_1.out", "ln1.hook_normalized", "d"),
    ("attn.qkv", None, "3d"),
    ("attn.probs", "attn.hook_pattern", "probs"),
    ("attn.merged", None, "d"),
    ("attn.out", "hook_attn_out", "d"),
    ("mid", "hook_resid_mid", "d"),
    ("mlp.in", "ln2.hook_normalized", "d"),
    ("mlp.pre", "mlp.hook_pre", "inner"),
    ("mlp.act", "mlp.hook_post", "inner"),
    ("mlp.out", "hook_mlp_out", "d"),
    ("out", "hook_resid_post", "d"),
)
# another HF name the tool reads for a layer's stage
LAYER_ALIASES = {"ln_2.out": "mlp.in"}
# names only TransformerLens has (its split of qkv, merged and embed)
TL_ONLY_MODEL = (("hook_embed", "d"), ("hook_pos_embed", "d"))
TL_ONLY_LAYER = (("attn.hook_q", "heads"), ("attn.hook_k", "heads"), ("attn.hook_v", "heads"),
                 ("attn.hook_z", "heads"))

_MODEL_W = {hf: w for hf, _, w in MODEL}
_LAYER_W = {hf: w for hf, _, w in LAYER}
_MODEL_W.update({tl: w for _, tl, w in MODEL if tl})
_MODEL_W.update(dict(TL_ONLY_MODEL))
_LAYER_W.update({a: _LAYER_W[b] for a, b in LAYER_ALIASES.items()})
_TL_LAYER_W = {tl: w for _, tl, w in LAYER if tl}
_TL_LAYER_W.update(dict(TL_ONLY_LAYER))

MAX_LAYERS = 4096  # G2F_STAGE_MAX_LAYERS


def _layer_prefix(name, block):
    """(layer, rest) for "<block>.<N>.<rest>" (N without leading zeros), else None."""
    if not name.startswith(block + "."):
        return None
    num, dot, rest = name[len(block) + 1:].partition(".")
    if not dot or not num.isdigit() or not num.isascii() or (len(num) > 1 and num[0] == "0"):
        return None
    return int(num), rest


def parse(name):
    """A fixture tensor's name as (layer or None, stage, width, tl), or None
    when the tool does not know it (the fixture reader's g2f_act_match):
    an optional "transformer." before HF names, h.L.<stage> or a model-level
    name, or TransformerLens' blocks.L.<hook> / model-level hook."""
    p = name[len("transformer."):] if name.startswith("transformer.") else name
    hit = _layer_prefix(p, "h")
    if hit:
        layer, rest = hit
        if layer < MAX_LAYERS and rest in _LAYER_W:
            return layer, rest, _LAYER_W[rest], False
        return None
    hit = _layer_prefix(name, "blocks")
    if hit:
        layer, rest = hit
        if layer < MAX_LAYERS and rest in _TL_LAYER_W:
            return layer, rest, _TL_LAYER_W[rest], True
        return None
    if p in _MODEL_W:
        tl = p not in {hf for hf, _, _ in MODEL}
        return None, p, _MODEL_W[p], tl
    return None


def name(stage, layer=None):
    """The fixture name of stage: "h.3.mlp.in" for stage "mlp.in", layer 3;
    a model-level stage ("logits") needs no layer; a full name is returned
    as is. ValueError, with the nearest known name, when the tool would not
    read it."""
    if layer is None:
        if parse(stage):
            return stage
        if stage in _LAYER_W or stage in _TL_LAYER_W:
            raise ValueError("stage '%s' is per layer: give its layer" % stage)
    else:
        layer = int(layer)
        if not 0 <= layer < MAX_LAYERS:
            raise ValueError("layer %d is outside 0..%d" % (layer, MAX_LAYERS - 1))
        if stage in _LAYER_W:
            return "h.%d.%s" % (layer, stage)
        if stage in _TL_LAYER_W:
            return "blocks.%d.%s" % (layer, stage)
        if parse(stage):
            raise ValueError("stage '%s' is a model-level one: it takes no layer" % stage)
    raise ValueError("'%s' is not a stage gpt2ffn reads%s" % (stage, _suggest(stage)))


def known_names():
    """Every stage name, HF and TransformerLens (per-layer ones after "L.")."""
    return ([hf for hf, _, _ in MODEL] + [tl for _, tl, _ in MODEL if tl] + [n for n, _ in TL_ONLY_MODEL] +
            [hf for hf, _, _ in LAYER] + list(LAYER_ALIASES) + [tl for _, tl, _ in LAYER if tl] +
            [n for n, _ in TL_ONLY_LAYER])


def _edits(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _suggest(word):
    """"; did you mean 'h.0.mlp.out'?" for the nearest known name within a
    few edits (a third of the word, 1 to 3, as the fixture reader's), else ""."""
    head, tail = "", word
    for block in ("h", "blocks"):
        hit = _layer_prefix(word, block)
        if hit:
            head, tail = word[:len(word) - len(hit[1])], hit[1]
    best = min(known_names(), key=lambda k: _edits(tail, k))
    near = _edits(tail, best) <= max(1, min(3, len(tail) // 3))
    return "; did you mean '%s%s'?" % (head, best) if near else ""
