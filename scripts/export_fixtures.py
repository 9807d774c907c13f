#!/usr/bin/python3
"""Export GPT-2 test fixtures for gpt2ffn: the FFN, the whole block, the whole model.

gpt2ffn checks a GPT-2 checkpoint's computation against reference activations.
This script produces both sides of that check as safetensors files, using only
torch + numpy (no safetensors / transformers packages needed, so a tiny
reader/writer for the format is included here).  The arithmetic lives in
scripts/gpt2_reference.py: HF GPT2MLP / GPT2Block / GPT2LMHeadModel (eval mode)
written out in torch float32, with each porting bug injectable.

Subcommands
  synth    write DIR/model.safetensors + DIR/config.json: a synthetic GPT-2 with the
           full HF tensor set; trained-GPT-2-like magnitudes (default) or small random
           weights (--init small); optional hot FFN units and an untied lm_head.
  fixture  FFN fixtures: a realistic FFN input per layer (layer_norm with that
           layer's ln_2) through GPT2MLP; h.L.mlp.in / h.L.mlp.out (--pre-act: also
           h.L.mlp.pre / h.L.mlp.act).  --mutate injects porting bugs, GELU variants
           and precision paths into the reference (`fixture --help`).
  block    block fixtures: every stage of GPT2Block for each layer, the layers
           chained (layer L's input is layer L-1's output), HF or TransformerLens
           names, --mutate for the block codes (`block --help`).
  model    model fixtures: token ids -> embeddings -> every block -> ln_f -> logits
           (`model --help`).
  hf       the same stages captured from a real transformers GPT-2 by forward hooks
           (needs `transformers`; exits 2 without it).

Metadata (strings, for humans and provenance; the C tool reads only what its docs
say): producer, checkpoint (basename), gelu (the claim; --claim can lie or omit it),
and for block/model/hf: checkpoint_sha256 (sha256 of the checkpoint file), n_head,
layer_norm_epsilon, names, arith, input; "mutations" / "mutated_layers" with --mutate.

Examples
  scripts/export_fixtures.py synth --out fixtures/tiny --layers 4 --n-embd 64
  scripts/export_fixtures.py fixture --checkpoint fixtures/tiny --gelu tanh \\
      --shape 2,6 --pre-act --out fixtures/tiny_tanh.safetensors
  scripts/export_fixtures.py block --checkpoint fixtures/tiny --shape 2,6 \\
      --mutate attn_scale_missing@1 --out block.safetensors
  scripts/export_fixtures.py model --checkpoint fixtures/tiny --ids 5,17,3,42 \\
      --names tl --out model.safetensors
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as ref  # noqa: E402

PRODUCER = "scripts/export_fixtures.py"
LN_EPS = 1e-5

# ---------------------------------------------------------------------------
# Minimal safetensors reader / writer
# ---------------------------------------------------------------------------

# dtype tag -> (numpy little-endian dtype used for the raw bytes, item size)
_RAW = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}
_INT = {"I64": ("<i8", 8), "I32": ("<i4", 4)}


def _to_bytes(t, dtype):
    """tensor -> little-endian bytes in `dtype` (float rounding happens here)."""
    if dtype in _INT:
        return t.detach().contiguous().numpy().astype(_INT[dtype][0]).tobytes()
    t = t.detach().to(torch.float32).contiguous()
    if dtype == "BF16":
        # torch's float32->bfloat16 conversion is round-to-nearest-even;
        # the int16 view gives the raw upper 16 bits.
        bits = t.to(torch.bfloat16).view(torch.int16).numpy()
        return bits.astype("<i2").tobytes()
    return t.numpy().astype(_RAW[dtype][0]).tobytes()


def _from_bytes(buf, dtype, shape):
    """raw bytes -> float32 torch tensor (int64 for I64/I32)."""
    if dtype in _INT:
        return torch.from_numpy(np.frombuffer(buf, dtype=_INT[dtype][0]).astype(np.int64).reshape(shape))
    if dtype not in _RAW:
        raise ValueError("unsupported dtype %r (only F32/F16/BF16/F64/I64/I32)" % dtype)
    a = np.frombuffer(buf, dtype=_RAW[dtype][0])
    if dtype == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return torch.from_numpy(a.astype(np.float32).reshape(shape))


def write_safetensors(path, tensors, metadata=None, dtype="F32", pad=True, dtypes=None):
    """Write {name: tensor} as safetensors; float tensors stored in `dtype`,
    integer tensors in dtypes[name] (I64 or I32).

    Layout follows the reference library: __metadata__ first, tensors sorted by
    item size (largest first, so every tensor is aligned) and then by name,
    contiguous data, header space-padded to a multiple of 8.  With one dtype
    this is a plain name sort.
    """
    if dtype not in _RAW:
        raise ValueError("unsupported dtype %r" % dtype)
    dtypes = dtypes or {}
    tag = {n: dtypes.get(n, dtype) for n in tensors}
    size = {n: (_INT.get(tag[n]) or _RAW[tag[n]])[1] for n in tensors}
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name in sorted(tensors, key=lambda n: (-size[n], n)):
        b = _to_bytes(tensors[name], tag[name])
        header[name] = {"dtype": tag[name], "shape": [int(s) for s in tensors[name].shape],
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if pad:
        hjson += b" " * (-len(hjson) % 8)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Return ({name: float32 tensor (int64 for I64/I32)}, metadata dict). Validates the layout."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header length %d exceeds file size" % (path, n))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    buf = data[8 + n:]
    meta = header.pop("__metadata__", None) or {}
    out, spans = {}, []
    for name, info in header.items():
        dt, shape = info["dtype"], info["shape"]
        b, e = info["data_offsets"]
        if not 0 <= b <= e <= len(buf):
            raise ValueError("%s: tensor %s offsets %s outside the %d-byte buffer"
                             % (path, name, [b, e], len(buf)))
        if dt not in _RAW and dt not in _INT:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        if e - b != int(np.prod(shape, dtype=np.int64)) * (_INT.get(dt) or _RAW[dt])[1]:
            raise ValueError("%s: tensor %s byte size does not match shape" % (path, name))
        spans.append((b, e, name))
        out[name] = _from_bytes(buf[b:e], dt, shape)
    # The buffer must be covered exactly: no gaps, no overlap, nothing trailing.
    pos = 0
    for b, e, name in sorted(spans):
        if b != pos:
            raise ValueError("%s: gap/overlap before tensor %s" % (path, name))
        pos = e
    if pos != len(buf):
        raise ValueError("%s: data buffer not fully covered" % path)
    return out, meta


# ---------------------------------------------------------------------------
# Checkpoint helpers
# ---------------------------------------------------------------------------

def resolve_checkpoint(path):
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    return path


def load_checkpoint(path):
    """Read a checkpoint; strip the optional `transformer.` prefix from keys."""
    tensors, _ = read_safetensors(resolve_checkpoint(path))
    w = {}
    for k, v in tensors.items():
        w[k[len("transformer."):] if k.startswith("transformer.") else k] = v
    return w


def load_config(path):
    """config.json beside the checkpoint ({} when there is none)."""
    d = path if os.path.isdir(path) else os.path.dirname(path)
    p = os.path.join(d, "config.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def layer_ids(weights):
    ids = set()
    for k in weights:
        p = k.split(".")
        if len(p) > 3 and p[0] == "h" and p[2] == "mlp" and p[1].isdigit():
            ids.add(int(p[1]))
    return sorted(ids)


def parse_layers(spec, available, where="checkpoint"):
    if spec is None:
        return list(available)
    sel = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            sel.extend(range(int(a), int(b) + 1))
        elif part:
            sel.append(int(part))
    missing = [l for l in sel if l not in available]
    if missing:
        sys.exit("error: layers %s not in %s (has %s)" % (missing, where, available))
    return sel


# ---------------------------------------------------------------------------
# Mutations: porting bugs injected into the *reference* (--mutate CODE[@LAYERS])
# ---------------------------------------------------------------------------

FFN_HELP = """\
FFN codes (fixture, block and model; CODE@LAYERS, repeatable, they compose):
  fc_bias_missing        pre = x @ W_fc            (no c_fc.bias)
  proj_bias_missing      out = act @ W_proj        (no c_proj.bias)
  residual_included      out = x + FFN(x)          (x = the stored mlp.in; float32 add)
  weights_from_layer:K   fixture: the FFN weights+biases of checkpoint layer K (the input
                         is still made with the layer's own ln_2); block/model: every
                         weight of the block (ln_1, attn, ln_2, mlp) from layer K
  weights_f16_rounded    weights and biases rounded to float16 (RNE) before the float32
                         computation: the four FFN tensors (fixture) or every weight of
                         the block (block/model; in `model` without @: also wte, wpe,
                         ln_f and an untied lm_head)
  weights_bf16_rounded   ... to bfloat16
  weights_quantized:TYPE the two FFN weight matrices quantized to ggml's TYPE (Q8_0,
                         Q4_0, Q4_1, Q5_0, Q5_1; Q4_K, Q5_K, Q6_K when n_embd and
                         n_inner are multiples of 256) with ggml's reference rounding
                         and dequantized back, as llama.cpp stores them (rows of the
                         Linear [out, in] transpose); biases stay float32 (fixture only)
  layout_misread:fc|proj|both   (also c_fc, c_proj)
                         Conv1D [in,out] bytes read as nn.Linear [out,in] without a
                         transpose: c_fc M = W.view(n_inner, n_embd), pre = x @ M.T + b;
                         c_proj P = Wp.view(n_embd, n_inner), out = act @ P.T + b
  perturb_act:K          act[..., K] += 0.05 before c_proj
  perturb_proj:J         out[..., J] += 0.01 after c_proj
  nonfinite              out[token 1, channel 3] = NaN (flattened token index)
GELU variants (replace the GELU; with --gelu tanh):
  gelu_sigmoid           act = x * sigmoid(1.702 x)                 (HF quick_gelu)
  gelu_mlx_approx        act = x * sigmoid(1.60033 x (1 + 0.0433603 x^2))
  gelu_f16_table         ggml's CPU GELU: 0 for x <= -10, x for x >= 10, else
                         f16(g(f16(x))) with g = ggml_gelu_f32, i.e.
                         0.5f*x*(1+tanhf(0.7978845608f*x*(1+0.044715f*x*x))) evaluated
                         left to right in float32 (no FMA); RNE f16 rounding
  gelu_clipped           act = clamp(GELU(x), -10, 10) with the --gelu form
                         (--gelu erf: HF gelu_10)
Precision paths:
  tf32_matmul            both GEMMs with x/W_fc and act/W_proj rounded to TF32 (10-bit
                         mantissa, RNE), products exact, float32 accumulation, float32 bias
  f16_matmul             ggml's F16 path: every product's weights and input rounded to f16
                         (RNE), float32 accumulation and bias; in `block` and `model` also
                         c_attn and attn.c_proj, and in `model` without @LAYERS the ends:
                         the embedding from f16(wte), the logits f16(ln_f.out) f16(head)^T
                         (with --mutate gelu_f16_table: the arithmetic of ggml's GPT-2 example)
  act_f16_rounded        pre = f16(x @ W_fc + b); act = f16(GELU(pre)); weights float32
  act_bf16_rounded       ... bfloat16
  autocast_f16           as torch.autocast: x, weights and biases rounded to f16; each GEMM
                         accumulates in float32, adds the (rounded) bias in float32 and
                         rounds its output: pre = f16(.), out = f16(.); the GELU runs in
                         float32 on pre and is rounded once: act = f16(GELU(pre))
  autocast_bf16          ... bfloat16
  ln2_input_captured     (fixture only) the stored mlp.in is ln_2's *input* h (the residual
                         stream) and out = FFN(LayerNorm_2(h)), eps from config.json
                         layer_norm_epsilon (default 1e-5); pre/act are those of LayerNorm_2(h)
Order inside the FFN: weights_from_layer, f16/bf16 weight rounding, layout_misread;
autocast/tf32 input rounding; c_fc (bias unless dropped); pre rounding; GELU variant,
then gelu_clipped; act rounding; perturb_act; c_proj; out rounding; perturb_proj;
residual_included; nonfinite.
"""

BLOCK_HELP = """\
Block codes (block and model), each applied where it acts; everything downstream
(later stages, later layers) is what the buggy port computes from it:
  attn_mask_missing      no causal mask: every query attends to all T positions
  attn_scale_missing     scores not divided by sqrt(d_head)
  attn_scale_layer_idx   scores also divided by (layer index + 1) after sqrt(d_head)
                         (HF scale_attn_by_inverse_layer_idx; a no-op at layer 0)
  attn_scale:C           scores multiplied by C instead of 1/sqrt(d_head): C = nembd
                         (1/sqrt(n_embd), the single-head formula kept for many heads),
                         dhead (1/d_head, muP) or a number
  qkv_order:PERM         PERM is a permutation of qkv naming what the port calls the
                         1st, 2nd and 3rd third of c_attn's output: kqv = k, q, v =
                         qkv.split(d). attn.qkv (c_attn's output) is unchanged; the
                         TransformerLens hook_q/k/v are the port's q, k, v
  heads_interleaved      q, k, v split into heads as [d_head, n_head] (head h = features
                         h, h+n_head, ...), z merged back the same way
  attn_bias_missing:c_attn | :c_proj   that attention bias left out
  layout_misread:c_attn | :attn.c_proj   Conv1D bytes read as Linear: c_attn
                         M = W.view(3d, d), qkv = a @ M.T + b; attn.c_proj: a @ W.T + b
  ln_eps:E               every LayerNorm of the mutated blocks (ln_1 and ln_2) uses
                         epsilon E; in `model` without @LAYERS also ln_f (a port-wide
                         epsilon)
  ln_bias_missing[:ln_1|:ln_2|:ln_f]   that LayerNorm without its bias; without a
                         qualifier: ln_1 and ln_2 (and ln_f in `model` without @LAYERS)
  ln_weight_missing[:ln_1|:ln_2|:ln_f] the same for the gain
  residual_missing[:mid|:out]  mid = attn (no x), or out = mlp.out (no mid); both
                         without a qualifier
  weights_from_layer:K, weights_f16_rounded, weights_bf16_rounded: every block weight
Model codes (model only, no @LAYERS):
  wpe_missing            embed = wte[ids] (no position embedding)
  wpe_offset:K           positions K..K+T-1 instead of 0..T-1
  embed_scaled           wte[ids] multiplied by sqrt(n_embd) before wpe is added
  ln_f_missing           ln_f.out = the last block's output (ln_f skipped)
  lm_head_untied         logits made with wte although the checkpoint stores its own
                         lm_head.weight (the reverse, a head where the checkpoint is
                         tied, is a tied copy of an untied checkpoint: fixtures/README.md)
Layers: CODE@LAYERS (e.g. attn_scale_missing@1, ln_eps:1e-12@0,2-3); a CODE without @
applies to --mutate-layers (block; default the exported layers) or every layer (model).
Metadata gets "mutations" ("code1,code2") and "mutated_layers" ("code1@0,1;code2@3").
"""

_F, _B, _M, _TOP = "fixture", "block", "model", "top"
_ALL = {_F, _B, _M}
_BM = {_B, _M}
# name -> (parameter kind, subcommands that accept it)
CODES = {
    "fc_bias_missing": (None, _ALL), "proj_bias_missing": (None, _ALL),
    "residual_included": (None, _ALL), "weights_from_layer": ("int", _ALL),
    "weights_f16_rounded": (None, _ALL), "weights_bf16_rounded": (None, _ALL),
    "layout_misread": ("layout", _ALL), "perturb_act": ("int", _ALL),
    "perturb_proj": ("int", _ALL), "nonfinite": (None, _ALL), "weights_quantized": ("quant", {_F}),
    "gelu_sigmoid": (None, _ALL), "gelu_mlx_approx": (None, _ALL),
    "gelu_f16_table": (None, _ALL), "gelu_clipped": (None, _ALL),
    "tf32_matmul": (None, _ALL), "f16_matmul": (None, _ALL), "act_f16_rounded": (None, _ALL),
    "act_bf16_rounded": (None, _ALL), "autocast_f16": (None, _ALL),
    "autocast_bf16": (None, _ALL), "ln2_input_captured": (None, {_F}),
    "attn_mask_missing": (None, _BM), "attn_scale_missing": (None, _BM),
    "attn_scale_layer_idx": (None, _BM), "attn_scale": ("scale", _BM), "heads_interleaved": (None, _BM),
    "qkv_order": ("perm", _BM), "attn_bias_missing": ("attn_bias", _BM),
    "ln_eps": ("float", _BM), "ln_bias_missing": ("ln", _BM),
    "ln_weight_missing": ("ln", _BM), "residual_missing": ("residual", _BM),
    "wpe_missing": (None, {_TOP}), "wpe_offset": ("int", {_TOP}), "embed_scaled": (None, {_TOP}),
    "ln_f_missing": (None, {_TOP}), "lm_head_untied": (None, {_TOP}),
}
_LAYOUT = {"fc": "fc", "c_fc": "fc", "proj": "proj", "c_proj": "proj", "both": "both",
           "c_attn": "c_attn", "attn.c_proj": "attn.c_proj"}


def parse_mutation(code, ctx):
    """'name[:param]' -> (name, param) or exit with a usage error."""
    name, _, param = code.partition(":")
    if name not in CODES:
        sys.exit("error: unknown mutation %r (see --help)" % code)
    kind, where = CODES[name]
    if ctx not in where and not (ctx == _M and _TOP in where):
        sys.exit("error: mutation %s is not available in `%s` (see --help)" % (name, ctx))
    if kind is None:
        if param:
            sys.exit("error: mutation %s takes no parameter" % name)
        return name, None
    if kind == "layout":
        v = _LAYOUT.get(param)
        if v is None or (ctx == _F and v in ("c_attn", "attn.c_proj")):
            sys.exit("error: layout_misread needs :fc, :proj or :both%s"
                     % ("" if ctx == _F else ", :c_attn or :attn.c_proj"))
        return name, v
    if kind == "quant":
        return name, parse_quant_type(param)
    if kind == "perm":
        if sorted(param) != ["k", "q", "v"] or param == "qkv":
            sys.exit("error: qkv_order needs a permutation of qkv other than qkv (e.g. qkv_order:kqv)")
        return name, param
    if kind == "attn_bias":
        if param not in ("c_attn", "c_proj"):
            sys.exit("error: attn_bias_missing needs :c_attn or :c_proj")
        return name, param
    if kind == "ln":
        ok = ("ln_1", "ln_2", "ln_f") if ctx == _M else ("ln_1", "ln_2")
        if param and param not in ok:
            sys.exit("error: %s takes no qualifier or one of :%s" % (name, ", :".join(ok)))
        return name, param or None
    if kind == "residual":
        if param and param not in ("mid", "out"):
            sys.exit("error: residual_missing takes no qualifier, :mid or :out")
        return name, param or None
    if kind == "scale":
        if param in ("nembd", "dhead"):
            return name, param
        try:
            v = float(param)
        except ValueError:
            sys.exit("error: attn_scale needs nembd, dhead or a number (e.g. attn_scale:0.3)")
        if not v > 0:
            sys.exit("error: attn_scale needs a positive number")
        return name, v
    if kind == "float":
        try:
            v = float(param)
        except ValueError:
            sys.exit("error: %s needs a number (e.g. %s:1e-12)" % (name, name))
        if not v >= 0:
            sys.exit("error: %s needs a number >= 0" % name)
        return name, v
    try:
        return name, int(param)
    except ValueError:
        sys.exit("error: mutation %s needs an integer parameter (%s:N)" % (name, name))


def plan_mutations(specs, layers, ctx, default_spec=None, default_layers=None):
    """-> ({layer: [(name, param, code)]}, [(name, param, code)] model-level, codes in order).
    A code without @LAYERS applies to default_spec (--mutate-layers), else to
    default_layers (the exported layers), else to every layer in `layers`."""
    where = "the exported layers" if ctx == _F else "the checkpoint's layers"
    if default_spec:
        default = parse_layers(default_spec, layers, where)
    else:
        default = list(layers if default_layers is None else default_layers)
    plan, top, codes = {}, [], []
    for spec in specs or []:
        code, at, lspec = spec.partition("@")
        name, param = parse_mutation(code, ctx)
        if code not in codes:
            codes.append(code)
        if _TOP in CODES[name][1]:
            if at:
                sys.exit("error: %s applies to the whole model: no @LAYERS" % name)
            top.append((name, param, code))
            continue
        if ctx == _M and not at:
            # a port-wide setting also reaches the model-level LayerNorm / weights
            if name in ("ln_eps", "weights_f16_rounded", "weights_bf16_rounded", "f16_matmul") or \
                    (name in ("ln_bias_missing", "ln_weight_missing") and param in (None, "ln_f")):
                top.append((name, param, code))
            if param == "ln_f":
                continue
        elif param == "ln_f":
            sys.exit("error: %s:ln_f takes no @LAYERS" % name)
        sel = parse_layers(lspec, layers, where) if at else default
        for L in sel:
            plan.setdefault(L, []).append((name, param, code))
    return plan, top, codes


def as_has(muts):
    has = {}
    for name, param, _ in muts:
        has.setdefault(name, []).append(param)
    return has


def mutation_meta(plan, top, codes):
    if not codes:
        return {}
    parts = []
    for c in codes:
        ls = [str(L) for L in sorted(plan) if any(c == pc for _, _, pc in plan[L])]
        if any(c == pc for _, _, pc in top):
            ls.append("model")
        parts.append("%s@%s" % (c, ",".join(ls)))
    return {"mutations": ",".join(codes), "mutated_layers": ";".join(parts)}


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def realistic_hidden(shape, d, gen):
    """Residual-stream-like states: N(0,1) plus a few large 'outlier' channels."""
    h = torch.randn(*shape, d, generator=gen)
    k = max(1, d // 32)
    chans = torch.randperm(d, generator=gen)[:k]
    scale = 3.0 + 5.0 * torch.rand(k, generator=gen)
    h[..., chans] *= scale
    return h



DRIVE_TOKENS = "token 1 driven to +V, token N-2 to -V (flattened token index)"


def drive_tokens(h, wfc, bfc, lnw, lnb, eps, V):
    """Edit the residual states h [..., d] in place so that, after LayerNorm (lnw,
    lnb, eps) and c_fc, one hidden unit j gets pre = +V at token 1 and -V at token
    N-2: each of those tokens is moved along the direction that raises (lowers) unit
    j's pre-activation most, by bisection. Returns (j, [(token, target)]).
    The unit is the one whose reachable range covers +-V most easily."""
    d = h.shape[-1]
    flat = h.view(-1, d)
    N = flat.shape[0]
    if N < 4:
        sys.exit("error: --drive-pre needs at least 4 tokens")
    W = wfc.double()
    G = lnw.double() if lnw is not None else torch.ones(d, dtype=torch.float64)
    Bv = lnb.double() if lnb is not None else torch.zeros(d, dtype=torch.float64)
    C = G[:, None] * W
    Cc = C - C.mean(0, keepdim=True)
    base = Bv @ W + bfc.double()
    reach = math.sqrt(d) * Cc.norm(dim=0)
    score = reach - base.abs()
    j = int(score.argmax())
    if float(score[j]) < abs(V) * 1.05:
        sys.exit("error: --drive-pre %g: no hidden unit can reach it through this layer's "
                 "LayerNorm and c_fc (the best reaches about %.2f); see synth --hot-units"
                 % (V, float(score[j])))
    u = Cc[:, j] / Cc[:, j].norm()
    done = []
    for tok, target in ((1, abs(V)), (N - 2, -abs(V))):
        h0 = flat[tok].double()
        s = h0.norm()
        dirn = u if target > 0 else -u

        def f(t):
            ht = (1 - t) * h0 + t * s * dirn
            y = torch.nn.functional.layer_norm(ht, (d,), G, Bv, eps)
            return (float(y @ W[:, j]) + float(bfc[j]) - target) * (1 if target > 0 else -1)
        lo, hi = 0.0, 1.0
        if f(lo) >= 0 or f(hi) <= 0:
            sys.exit("error: --drive-pre: cannot place token %d at %g in unit %d" % (tok, target, j))
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if f(mid) < 0:
                lo = mid
            else:
                hi = mid
        t = 0.5 * (lo + hi)
        flat[tok] = ((1 - t) * h0 + t * s * dirn).float()
        done.append((tok, target))
    return j, done


# ---------------------------------------------------------------------------
# Stage names
# ---------------------------------------------------------------------------

BLOCK_STAGES = ("in", "ln_1.out", "attn.qkv", "attn.probs", "attn.merged", "attn.out",
                "mid", "mlp.in", "mlp.pre", "mlp.act", "mlp.out", "out")
MODEL_STAGES = ("input_ids", "embed", "ln_f.out", "logits")
# stage -> [(TransformerLens name suffix, computed tensor)]
TL_BLOCK = {
    "in": [("hook_resid_pre", "in")],
    "ln_1.out": [("ln1.hook_normalized", "ln_1.out")],
    "attn.qkv": [("attn.hook_q", "attn.q"), ("attn.hook_k", "attn.k"), ("attn.hook_v", "attn.v")],
    "attn.probs": [("attn.hook_pattern", "attn.probs")],
    "attn.merged": [("attn.hook_z", "attn.z")],
    "attn.out": [("hook_attn_out", "attn.out")],
    "mid": [("hook_resid_mid", "mid")],
    "mlp.in": [("ln2.hook_normalized", "mlp.in")],
    "mlp.pre": [("mlp.hook_pre", "mlp.pre")],
    "mlp.act": [("mlp.hook_post", "mlp.act")],
    "mlp.out": [("hook_mlp_out", "mlp.out")],
    "out": [("hook_resid_post", "out")],
}
TL_MODEL = {
    "input_ids": [("input_ids", "input_ids")],
    "embed": [("hook_embed", "wte.out"), ("hook_pos_embed", "wpe.out")],
    "ln_f.out": [("ln_final.hook_normalized", "ln_f.out")],
    "logits": [("logits", "logits")],
}
# --names tl3: TransformerLens 3 records hook_normalized before the gain and bias
TL3_NORM = {"ln_1.out": "ln_1.norm", "mlp.in": "ln_2.norm", "ln_f.out": "ln_f.norm"}
STAGES_HELP = """\
Stages (--stages, comma-separated, default all; "all,-mlp.pre,-mlp.act" removes some):
  name (HF, per layer L)   shape                       TransformerLens (--names tl)
  h.L.in                   [..., T, d]                 blocks.L.hook_resid_pre
  h.L.ln_1.out             [..., T, d]                 blocks.L.ln1.hook_normalized
  h.L.attn.qkv             [..., T, 3d] c_attn output  blocks.L.attn.hook_q/hook_k/hook_v
                                                       [..., T, n_head, d_head] each
  h.L.attn.probs           [..., n_head, T, T]         blocks.L.attn.hook_pattern
  h.L.attn.merged          [..., T, d] c_proj input    blocks.L.attn.hook_z [..., T, n_head, d_head]
  h.L.attn.out             [..., T, d] c_proj output   blocks.L.hook_attn_out
  h.L.mid                  [..., T, d] in + attn.out   blocks.L.hook_resid_mid
  h.L.mlp.in               [..., T, d] ln_2 output     blocks.L.ln2.hook_normalized
                           (--ln2-name ln_2.out writes h.L.ln_2.out instead; stage
                           name mlp.in or ln_2.out)
  h.L.mlp.pre, h.L.mlp.act [..., T, n_inner]           blocks.L.mlp.hook_pre, hook_post
  h.L.mlp.out              [..., T, d]                 blocks.L.hook_mlp_out
  h.L.out                  [..., T, d] mid + mlp.out   blocks.L.hook_resid_post
  model only:
  input_ids                [..., T] I64 (--ids-dtype I32)  input_ids
  embed                    [..., T, d] wte[ids]+wpe[pos]   hook_embed (wte[ids]) and
                                                           hook_pos_embed (wpe[pos])
  ln_f.out                 [..., T, d]                 ln_final.hook_normalized
  logits                   [..., T, vocab]             logits
Leading dims before T are independent sequences, each starting at position 0.
--prefix transformer. puts the HF names h.L.*, embed and ln_f.out under transformer.
(input_ids and logits stay bare).
"""


def parse_stages(spec, allowed):
    keys = []
    for item in (spec or "all").split(","):
        item = item.strip()
        if not item:
            continue
        neg = item.startswith("-")
        k = item[1:] if neg else item
        k = "mlp.in" if k == "ln_2.out" else k
        if k == "all":
            ks = list(allowed)
        elif k in allowed:
            ks = [k]
        else:
            sys.exit("error: unknown stage %r (stages: %s)" % (item, ", ".join(allowed)))
        for s in ks:
            if neg and s in keys:
                keys.remove(s)
            elif not neg and s not in keys:
                keys.append(s)
    if not keys:
        sys.exit("error: --stages selects nothing")
    return keys


def name_tensors(stages, per_layer, top, names, prefix, ln2_name, lead):
    """{fixture name: tensor} for the selected stages.
    per_layer: {L: {computed key: [B, ...] tensor}}; top: {computed key: tensor}."""
    out = {}

    def shaped(t):
        return t.reshape(*lead, *t.shape[1:]).contiguous()
    for L in sorted(per_layer):
        st = per_layer[L]
        for s in stages:
            if s not in BLOCK_STAGES:
                continue
            if names in ("tl", "tl3"):
                for tl, src in TL_BLOCK[s]:
                    src = TL3_NORM.get(src, src) if names == "tl3" else src
                    out["blocks.%d.%s" % (L, tl)] = shaped(st[src])
            else:
                n = ln2_name if s == "mlp.in" else s
                out["%sh.%d.%s" % (prefix, L, n)] = shaped(st[s])
    for s in stages:
        if s not in MODEL_STAGES or not top:
            continue
        if names in ("tl", "tl3"):
            for tl, src in TL_MODEL[s]:
                src = TL3_NORM.get(src, src) if names == "tl3" else src
                out[tl] = shaped(top[src])
        else:
            n = s if s in ("input_ids", "logits") else prefix + s
            out[n] = shaped(top[s])
    return out


def gelu_from_config(cfg):
    act = cfg.get("activation_function", "gelu_new")
    g = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh",
         "gelu": "erf"}.get(act)
    if g is None:
        sys.exit("error: config activation_function %r is neither a tanh nor the erf GELU; "
                 "give --gelu" % act)
    return g


def parse_shape(a, default=None):
    if getattr(a, "shape", None):
        shape = tuple(int(s) for s in a.shape.split(",") if s.strip())
    elif a.tokens is None:
        shape = default
    else:
        shape = (a.tokens,)
    if not shape or min(shape) < 1:
        sys.exit("error: bad --shape")
    return shape


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------

def cmd_synth(a):
    torch.manual_seed(a.seed)  # belt and braces; all draws use `g` below
    g = torch.Generator().manual_seed(a.seed)
    d, ni = a.n_embd, a.n_inner or 4 * a.n_embd
    if d % a.n_head:
        sys.exit("error: --n-embd must be divisible by --n-head")

    small = a.init == "small"

    def N(shape, mean=0.0, std=1.0):
        if small:  # GPT-2-initialization-like: every tensor std 0.02 around 0 (gains 1)
            mean, std = (1.0 if mean == 1.0 else 0.0), 0.02
        return torch.randn(*shape, generator=g) * std + mean

    t = {"wte.weight": N((a.vocab, d), std=0.14), "wpe.weight": N((a.n_ctx, d), std=0.02)}
    for L in range(a.layers):
        p = "h.%d." % L
        # Attention: q/k entries of std ~0.8 give scores of std ~0.6 (row spreads of
        # 1-4 units): attention that is neither uniform nor one-hot.
        t[p + "ln_1.weight"] = N((d,), 1.0, 0.1)
        t[p + "ln_1.bias"] = N((d,), 0.0, 0.05)
        t[p + "attn.c_attn.weight"] = N((d, 3 * d), std=0.8 / math.sqrt(d))
        t[p + "attn.c_attn.bias"] = N((3 * d,), std=0.1)
        t[p + "attn.c_proj.weight"] = N((d, d), std=0.5 / math.sqrt(d))
        t[p + "attn.c_proj.bias"] = N((d,), std=0.02)
        t[p + "ln_2.weight"] = N((d,), 1.0, 0.1)
        t[p + "ln_2.bias"] = N((d,), 0.0, 0.05)
        # LN output has rms ~1, so pre std ~= sqrt(d)*std(W) (+bias spread):
        # 2/sqrt(d) puts it near 2, the range where erf and tanh GELU differ most.
        # --fc-scale / --fc-bias-scale (default 1) shrink pre to make a checkpoint
        # where erf and tanh GELU agree; the draws are the same for any scale.
        t[p + "mlp.c_fc.weight"] = N((d, ni), std=0.8 / math.sqrt(d) * 2.5 * a.fc_scale)
        t[p + "mlp.c_fc.bias"] = N((ni,), -0.3 * a.fc_bias_scale, 0.3 * a.fc_bias_scale)
        if a.fc_bias_scale == 0:
            t[p + "mlp.c_fc.bias"] = torch.zeros(ni)  # exact +0.0 (no -0.0 from -0.3*0)
        t[p + "mlp.c_proj.weight"] = N((ni, d), std=0.5 / math.sqrt(ni))
        t[p + "mlp.c_proj.bias"] = N((d,), std=0.02)
    t["ln_f.weight"] = N((d,), 1.0, 0.1)
    t["ln_f.bias"] = N((d,), 0.0, 0.05)
    # Drawn last, so the same seed without these options gives the same other tensors.
    for L in range(a.layers):
        w = t["h.%d.mlp.c_fc.weight" % L]
        for j in range(a.hot_units):  # hidden units 0..K-1: c_fc column norm set to S
            w[:, j] *= a.hot_norm / w[:, j].norm()
    if a.untied_head:
        t["lm_head.weight"] = N((a.vocab, d), std=0.14)
    prefix = "" if a.no_prefix else a.prefix
    t = {(k if k == "lm_head.weight" else prefix + k): v for k, v in t.items()}

    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), t, {"format": "pt"},
                      a.dtype, pad=not a.unpadded_header)
    cfg = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "activation_function": a.activation,
        "layer_norm_epsilon": LN_EPS,
        "n_layer": a.layers,
        "n_embd": d,
        "n_inner": None if ni == 4 * d else ni,  # HF convention: null means 4*n_embd
        "n_head": a.n_head,
        "n_positions": a.n_ctx,
        "n_ctx": a.n_ctx,
        "vocab_size": a.vocab,
    }
    if a.untied_head:
        cfg["tie_word_embeddings"] = False
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    print("wrote %s (%d tensors, dtype %s)" % (a.out, len(t), a.dtype))


def _exit_on(fn, *args):
    try:
        return fn(*args)
    except ref.MutationError as e:
        sys.exit("error: %s" % e)


def parse_quant_type(param):
    """weights_quantized:TYPE -> TYPE (a ggml block type scripts/ggml_quant.py knows)."""
    import ggml_quant
    if param not in ggml_quant.TYPES:
        sys.exit("error: weights_quantized needs a ggml type: weights_quantized:%s"
                 % "|".join(ggml_quant.TYPES))
    return param


def quantized_weights(w, qtype):
    """The FFN weights a llama.cpp port of this checkpoint computes with: each 2-D
    weight transposed to nn.Linear [out, in] (as llama.cpp's converter does),
    quantized row by row with ggml's reference rounding (scripts/ggml_quant.py),
    dequantized, and transposed back to Conv1D [in, out]; biases unchanged."""
    import ggml_quant
    out = dict(w)
    for k in ("c_fc.weight", "c_proj.weight"):
        lin = w[k].t().contiguous().numpy()  # [out, in]: ggml rows of length in
        if lin.shape[1] % ggml_quant.block_size(qtype):
            sys.exit("error: weights_quantized:%s: %s rows of %d values are not a multiple of the "
                     "block size %d" % (qtype, k, lin.shape[1], ggml_quant.block_size(qtype)))
        out[k] = torch.from_numpy(ggml_quant.roundtrip(lin, qtype)).t().contiguous()
    return out


def ffn_weight_bugs(w, has, weights):
    """weights_from_layer, f16/bf16 rounding, layout_misread on the four FFN tensors."""
    if "weights_from_layer" in has:
        K = has["weights_from_layer"][-1]
        p = "h.%d.mlp." % K
        try:
            w = {k: weights[p + k] for k in ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias")}
        except KeyError:
            sys.exit("error: weights_from_layer:%d: checkpoint has no layer %d" % (K, K))
    if "weights_f16_rounded" in has:
        w = {k: v.half().float() for k, v in w.items()}
    if "weights_bf16_rounded" in has:
        w = {k: v.bfloat16().float() for k, v in w.items()}
    if "weights_quantized" in has:
        w = quantized_weights(w, has["weights_quantized"][-1])
    lm = set(has.get("layout_misread", []))
    if lm & {"fc", "both"}:
        w = ref.misread_ffn(w, "fc")
    if lm & {"proj", "both"}:
        w = ref.misread_ffn(w, "proj")
    return w


def cmd_fixture(a):
    torch.set_num_threads(1)  # reproducible float32 reductions
    ar = ref.Arith(a.arith)
    weights = load_checkpoint(a.checkpoint)
    cfg = load_config(a.checkpoint)
    layers = parse_layers(a.layers, layer_ids(weights))
    shape = parse_shape(a)
    plan, _, codes = plan_mutations(a.mutate, layers, _F, a.mutate_layers)
    g = torch.Generator().manual_seed(a.seed)
    out, driven = {}, []
    for L in layers:
        p = "h.%d." % L
        try:
            w = {k: weights[p + "mlp." + k] for k in
                 ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias")}
        except KeyError as e:
            sys.exit("error: checkpoint lacks %s" % e)
        d, ni = w["c_fc.weight"].shape
        has = as_has(plan.get(L, []))
        lnw, lnb = weights.get(p + "ln_2.weight"), weights.get(p + "ln_2.bias")
        with torch.no_grad():
            # Fresh draws per layer from one generator -> each layer gets its own input.
            h = realistic_hidden(shape, d, g)
            if a.drive_pre:
                j, toks = drive_tokens(h, w["c_fc.weight"], w["c_fc.bias"], lnw, lnb, LN_EPS, a.drive_pre)
                driven.append("layer %d unit %d" % (L, j))
            x = ref.layer_norm(ar, h, lnw, lnb, LN_EPS)
            stored_in = x
            if "ln2_input_captured" in has:
                if lnw is None or lnb is None:
                    sys.exit("error: ln2_input_captured needs h.%d.ln_2.weight/bias" % L)
                eps = float(cfg.get("layer_norm_epsilon", LN_EPS))
                stored_in = h
                x = ref.layer_norm(ar, h, lnw, lnb, eps)
            wl = ffn_weight_bugs(w, has, weights)
            pre, act, y = _exit_on(ref.ffn, ar, x.reshape(-1, d), wl, a.gelu, has)
        out[p + "mlp.in"] = stored_in.reshape(*shape, d)
        out[p + "mlp.out"] = y.reshape(*shape, d)
        if a.pre_act:
            out[p + "mlp.pre"] = pre.reshape(*shape, ni)
            out[p + "mlp.act"] = act.reshape(*shape, ni)
    claim = a.claim or a.gelu
    meta = {"producer": PRODUCER,
            "checkpoint": os.path.basename(os.path.normpath(a.checkpoint))}
    if claim != "none":
        meta["gelu"] = claim
    if a.arith != "blas":
        meta["arith"] = a.arith
    if a.record_sha256:
        meta["checkpoint_sha256"] = sha256_file(resolve_checkpoint(a.checkpoint))
    if driven:
        meta["drive_pre"] = "%g: %s; %s" % (a.drive_pre, DRIVE_TOKENS, ", ".join(driven))
    meta.update(mutation_meta(plan, [], codes))  # for humans only; the C tool does not read these
    write_safetensors(a.out, out, meta, a.dtype, pad=not a.unpadded_header)
    print("wrote %s (layers %s, shape %s, gelu %s, claim %s, dtype %s%s)"
          % (a.out, layers, list(shape), a.gelu, claim, a.dtype,
             ", mutated %s" % meta["mutated_layers"] if plan else ""))


def _common_setup(a):
    torch.set_num_threads(1)
    weights = load_checkpoint(a.checkpoint)
    cfg = load_config(a.checkpoint)
    n_head = a.n_head or cfg.get("n_head")
    if not n_head:
        sys.exit("error: no n_head: config.json beside the checkpoint has none; give --n-head")
    eps = float(cfg.get("layer_norm_epsilon", LN_EPS))
    gelu = a.gelu or gelu_from_config(cfg)
    all_layers = layer_ids(weights)
    d = weights["h.%d.ln_1.weight" % all_layers[0]].shape[0]
    if d % n_head:
        sys.exit("error: n_embd %d is not divisible by n_head %d" % (d, n_head))
    return weights, cfg, int(n_head), eps, gelu, all_layers, d


def _meta(a, kind, n_head, eps, names, input_desc, plan, top, codes):
    meta = {"producer": PRODUCER, "kind": kind,
            "checkpoint": os.path.basename(os.path.normpath(a.checkpoint)),
            "checkpoint_sha256": sha256_file(resolve_checkpoint(a.checkpoint)),
            "n_head": n_head, "layer_norm_epsilon": repr(eps), "names": names,
            "arith": "portable", "input": input_desc}
    claim = a.claim or a.gelu_used
    if claim != "none":
        meta["gelu"] = claim
    meta.update(mutation_meta(plan, top, codes))
    return meta


def cmd_block(a):
    weights, cfg, n_head, eps, gelu, all_layers, d = _common_setup(a)
    a.gelu_used = gelu
    ar = ref.Arith("portable")
    layers = parse_layers(a.layers, all_layers)
    stages = parse_stages(a.stages, BLOCK_STAGES)
    shape = parse_shape(a, (2, 6))
    lead, T = shape[:-1], shape[-1]
    B = int(np.prod(lead, dtype=np.int64)) if lead else 1
    plan, top, codes = plan_mutations(a.mutate, all_layers, _B, a.mutate_layers, layers)
    last = max(layers)
    late = sorted(L for L in plan if L > last)
    if late:
        sys.exit("error: mutations at layers %s come after the last exported layer %d" % (late, last))
    g = torch.Generator().manual_seed(a.seed)
    with torch.no_grad():
        x = a.in_scale * realistic_hidden((B, T), d, g)
        per_layer = {}
        for L in range(last + 1):
            st = _exit_on(ref.block, ar, x, weights, L, n_head, eps, gelu, as_has(plan.get(L, [])))
            if L in layers:
                per_layer[L] = st
            x = st["out"]
    prefix = a.prefix or ""
    tensors = name_tensors(stages, per_layer, None, a.names, prefix, a.ln2_name, lead)
    desc = ("layer 0 input: %g x realistic residual stream (N(0,1) with %d outlier channels "
            "x3-8, seed %d), shape %s; layer L>0 input = layer L-1 output (chained from "
            "layer 0)" % (a.in_scale, max(1, d // 32), a.seed, list(shape)))
    meta = _meta(a, "block", n_head, eps, a.names, desc, plan, top, codes)
    write_safetensors(a.out, tensors, meta, a.dtype)
    print("wrote %s (%d tensors, layers %s, shape %s, gelu %s, dtype %s%s)"
          % (a.out, len(tensors), layers, list(shape), gelu, a.dtype,
             ", mutated %s" % meta["mutated_layers"] if codes else ""))


def parse_ids(a, vocab, g):
    if a.ids:
        rows = [[int(t) for t in r.split(",") if t.strip()] for r in a.ids.split(";") if r.strip()]
        if not rows or len({len(r) for r in rows}) != 1 or not rows[0]:
            sys.exit("error: --ids: sequences separated by ';' must have the same, non-zero length")
        ids = torch.tensor(rows, dtype=torch.int64)
        lead = (len(rows),) if ";" in a.ids else ()
    else:
        try:
            n, t = (int(s) for s in a.random_ids.split(","))
        except ValueError:
            sys.exit("error: --random-ids N,T")
        ids = torch.randint(0, vocab, (n, t), generator=g, dtype=torch.int64)
        lead = (n,)
    for i, v in enumerate(ids.flatten().tolist()):
        if not 0 <= v < vocab:
            sys.exit("error: token id %d at position %d is outside the vocabulary 0..%d"
                     % (v, i, vocab - 1))
    return ids, lead


def cmd_model(a):
    weights, cfg, n_head, eps, gelu, all_layers, d = _common_setup(a)
    a.gelu_used = gelu
    ar = ref.Arith("portable")
    layers = parse_layers(a.layers, all_layers)
    stages = parse_stages(a.stages, BLOCK_STAGES + MODEL_STAGES)
    vocab = weights["wte.weight"].shape[0]
    g = torch.Generator().manual_seed(a.seed)
    ids, lead = parse_ids(a, vocab, g)
    plan, top, codes = plan_mutations(a.mutate, all_layers, _M)
    with torch.no_grad():
        st = _exit_on(ref.model, ar, ids, weights, n_head, eps, gelu,
                      {L: as_has(m) for L, m in plan.items()}, as_has(top), max(all_layers) + 1)
    per_layer = {L: {k.split(".", 2)[2]: v for k, v in st.items() if k.startswith("h.%d." % L)}
                 for L in layers}
    tensors = name_tensors(stages, per_layer, st, a.names, a.prefix or "", a.ln2_name, lead)
    dts = {"input_ids": a.ids_dtype} if "input_ids" in tensors else {}
    desc = ("input_ids %s (%s), positions 0..T-1 per sequence" %
            (list(ids.shape) if lead else [ids.shape[1]],
             "--ids" if a.ids else "random, seed %d" % a.seed))
    meta = _meta(a, "model", n_head, eps, a.names, desc, plan, top, codes)
    meta["lm_head"] = "lm_head.weight" if "lm_head.weight" in weights else "tied to wte"
    write_safetensors(a.out, tensors, meta, a.dtype, dtypes=dts)
    print("wrote %s (%d tensors, ids %s, gelu %s, dtype %s%s)"
          % (a.out, len(tensors), list(ids.shape), gelu, a.dtype,
             ", mutated %s" % meta["mutated_layers"] if codes else ""))


def cmd_hf(a):
    try:
        import transformers
    except ImportError:
        print("error: the hf subcommand needs the `transformers` package, which is not importable",
              file=sys.stderr)
        sys.exit(2)
    torch.set_num_threads(1)
    load = transformers.GPT2LMHeadModel.from_pretrained
    try:  # eager attention: the only implementation that returns the probabilities
        model = load(a.model, torch_dtype=torch.float32, attn_implementation="eager")
    except (TypeError, ValueError):  # transformers < 4.36: eager is all there is
        model = load(a.model, torch_dtype=torch.float32)
    model.eval()
    cfg = model.config
    gelu = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh",
            "gelu": "erf"}.get(cfg.activation_function)
    if gelu is None:
        sys.exit("error: unsupported activation_function %r" % cfg.activation_function)
    for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"):
        if getattr(cfg, flag, False):
            print("note: config sets %s: the fixture records what this model computes" % flag,
                  file=sys.stderr)
    if a.ids:
        ids = torch.tensor([[int(t) for t in r.split(",") if t.strip()]
                            for r in a.ids.split(";") if r.strip()], dtype=torch.int64)
        lead = (ids.shape[0],) if ";" in a.ids else ()
    else:
        tok = transformers.AutoTokenizer.from_pretrained(a.model)
        ids = tok(a.prompt, return_tensors="pt")["input_ids"]
        lead = ()
    tr = model.transformer
    cap, hooks = {}, []

    def out_hook(key):
        def fn(mod, inputs, output):
            cap[key] = (output[0] if isinstance(output, tuple) else output).detach().clone()
        return fn

    def in_hook(key):
        def fn(mod, inputs):
            cap[key] = inputs[0].detach().clone()
        return fn

    def on(mod, key, pre=False):
        hooks.append(mod.register_forward_pre_hook(in_hook(key)) if pre
                     else mod.register_forward_hook(out_hook(key)))
    on(tr.wte, "wte.out")
    on(tr.wpe, "wpe.out")
    for L, blk in enumerate(tr.h):
        p = "h.%d." % L
        on(blk.ln_1, p + "in", pre=True)            # the block input is ln_1's input
        on(blk.ln_1, p + "ln_1.out")
        on(blk.attn.c_attn, p + "attn.qkv")
        on(blk.attn.c_proj, p + "attn.merged", pre=True)
        on(blk.attn.c_proj, p + "attn.out")         # before resid_dropout (eval: identity)
        on(blk.ln_2, p + "mid", pre=True)           # ln_2's input is x + attn
        on(blk.ln_2, p + "mlp.in")
        on(blk.mlp.c_fc, p + "mlp.pre")
        on(blk.mlp.act, p + "mlp.act")
        on(blk.mlp.c_proj, p + "mlp.out")           # before dropout (eval: identity)
        on(blk, p + "out")
    on(tr.ln_f, "ln_f.out")                          # output_hidden_states[-1] is this, not h.last.out
    with torch.no_grad():
        res = model(input_ids=ids, output_attentions=True)
    for hd in hooks:
        hd.remove()
    B, T = ids.shape
    d, H = cfg.n_embd, cfg.n_head
    per_layer = {}
    for L in range(len(tr.h)):
        p = "h.%d." % L
        st = {k[len(p):]: v for k, v in cap.items() if k.startswith(p)}
        if res.attentions is not None and res.attentions[L] is not None:
            st["attn.probs"] = res.attentions[L].detach().clone()
        qkv = st["attn.qkv"]
        for i, n in enumerate("qkv"):
            st["attn." + n] = qkv[..., i * d:(i + 1) * d].reshape(B, T, H, d // H)
        st["attn.z"] = st["attn.merged"].reshape(B, T, H, d // H)
        per_layer[L] = st
    top = {"input_ids": ids, "wte.out": cap["wte.out"],
           "wpe.out": cap["wpe.out"].expand(B, T, d).contiguous(),
           "embed": cap["h.0.in"], "ln_f.out": cap["ln_f.out"], "logits": res.logits.detach()}
    stages = parse_stages(a.stages, BLOCK_STAGES + MODEL_STAGES)
    if "attn.probs" in stages and "attn.probs" not in per_layer[0]:
        print("note: this transformers version returned no attention probabilities; "
              "attn.probs left out", file=sys.stderr)
        stages.remove("attn.probs")
    layers = parse_layers(a.layers, list(range(len(tr.h))), "the model")
    tensors = name_tensors(stages, {L: per_layer[L] for L in layers}, top, a.names,
                           a.prefix or "", a.ln2_name, lead)
    meta = {"gelu": gelu, "producer": PRODUCER, "kind": "model",
            "checkpoint": os.path.basename(os.path.normpath(a.model)), "n_head": H,
            "layer_norm_epsilon": repr(cfg.layer_norm_epsilon), "names": a.names,
            "transformers": transformers.__version__}
    dts = {"input_ids": a.ids_dtype} if "input_ids" in tensors else {}
    write_safetensors(a.out, tensors, meta, a.dtype, dtypes=dts)
    print("wrote %s (%d tensors, %d layers, gelu %s)" % (a.out, len(tensors), len(tr.h), gelu))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    dtypes = list(_RAW)
    RD = argparse.RawDescriptionHelpFormatter

    s = sub.add_parser("synth", help="write a synthetic GPT-2 checkpoint + config.json")
    s.add_argument("--out", required=True, help="output directory")
    s.add_argument("--layers", type=int, default=4)
    s.add_argument("--n-embd", type=int, default=64)
    s.add_argument("--n-inner", type=int, default=None, help="default 4*n_embd")
    s.add_argument("--vocab", type=int, default=96)
    s.add_argument("--n-ctx", type=int, default=32)
    s.add_argument("--n-head", type=int, default=4)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--activation", default="gelu_new", help="config activation_function")
    s.add_argument("--init", choices=["trained", "small"], default="trained",
                   help="trained: trained-GPT-2-like magnitudes (default); small: every tensor "
                        "N(0, 0.02) (LayerNorm gains N(1, 0.02)), like GPT-2's initialization")
    s.add_argument("--fc-scale", type=float, default=1.0, metavar="S",
                   help="multiply the c_fc.weight std by S (default 1)")
    s.add_argument("--fc-bias-scale", type=float, default=1.0, metavar="S",
                   help="multiply the c_fc.bias mean and std by S (default 1; 0 gives "
                        "all-zero biases). E.g. --fc-scale 0.01 --fc-bias-scale 0 gives "
                        "|pre| ~< 0.05, where erf and tanh GELU agree")
    s.add_argument("--hot-units", type=int, default=0, metavar="K",
                   help="in every layer, scale c_fc.weight columns 0..K-1 to norm --hot-norm "
                        "(hidden units that can reach large pre-activations)")
    s.add_argument("--hot-norm", type=float, default=3.0, metavar="S")
    s.add_argument("--untied-head", action="store_true",
                   help="also store lm_head.weight (N(0, 0.14), drawn last) and "
                        "tie_word_embeddings: false")
    s.add_argument("--dtype", choices=dtypes, default="F32")
    px = s.add_mutually_exclusive_group()
    px.add_argument("--no-prefix", action="store_true", help="bare keys (no transformer.)")
    px.add_argument("--prefix", default="transformer.", help="key prefix (default transformer.)")
    s.add_argument("--unpadded-header", action="store_true",
                   help="do not space-pad the JSON header to a multiple of 8")
    s.set_defaults(fn=cmd_synth)

    f = sub.add_parser("fixture", help="compute reference FFN activations from a checkpoint",
                       formatter_class=RD, epilog=FFN_HELP)
    f.add_argument("--checkpoint", required=True, help="model.safetensors or its folder")
    f.add_argument("--out", required=True)
    f.add_argument("--gelu", choices=["tanh", "erf"], default="tanh")
    sh = f.add_mutually_exclusive_group()
    sh.add_argument("--tokens", type=int, default=12)
    sh.add_argument("--shape", help="leading shape, e.g. 2,6")
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--dtype", choices=dtypes, default="F32", help="storage dtype")
    f.add_argument("--pre-act", action="store_true", help="also store h.L.mlp.pre/act")
    f.add_argument("--layers", help="e.g. 0,2-3 (default all)")
    f.add_argument("--claim", choices=["tanh", "erf", "none"],
                   help="metadata gelu claim (default: the --gelu used)")
    f.add_argument("--unpadded-header", action="store_true")
    f.add_argument("--arith", choices=["blas", "portable"], default="blas",
                   help="blas (default, as the older fixtures were made): torch.addmm and "
                        "torch's GELU; portable: fixed-order float32 sums, the same bytes on "
                        "any machine (scripts/gpt2_reference.py)")
    f.add_argument("--drive-pre", type=float, metavar="V",
                   help="per layer, move token 1 and token N-2 so that one hidden unit gets "
                        "pre = +V and -V (inputs that reach |x| >= 10 for gelu_clipped and "
                        "gelu_f16_table); the unit is named in the metadata")
    f.add_argument("--record-sha256", action="store_true",
                   help="record checkpoint_sha256 (of the checkpoint file) in the metadata")
    f.add_argument("--mutate", action="append", metavar="CODE[@LAYERS]",
                   help="inject a porting bug into the reference (repeatable; codes below)")
    f.add_argument("--mutate-layers", metavar="LIST",
                   help="layers that --mutate codes without @LAYERS apply to, e.g. 1,3 "
                        "(default: all exported layers); other layers stay clean")
    f.set_defaults(fn=cmd_fixture)

    def block_opts(p, model):
        p.add_argument("--checkpoint", required=True, help="model.safetensors or its folder "
                       "(config.json beside it gives n_head, layer_norm_epsilon, activation)")
        p.add_argument("--out", required=True)
        p.add_argument("--gelu", choices=["tanh", "erf"],
                       help="default: from config activation_function (gelu_new: tanh)")
        p.add_argument("--claim", choices=["tanh", "erf", "none"],
                       help="metadata gelu claim (default: the GELU used)")
        p.add_argument("--n-head", type=int, help="default: config.json n_head")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32",
                       help="storage dtype of the float tensors (the computation is float32)")
        p.add_argument("--layers", help="layers whose stages are stored, e.g. 0-1 (default all)")
        p.add_argument("--stages", metavar="LIST", help="stages to store (default all; below)")
        p.add_argument("--names", choices=["hf", "tl", "tl3"], default="hf",
                       help="HF names h.L.* (default) or TransformerLens blocks.L.hook_* "
                            "(tl: *.hook_normalized after the LayerNorm's gain and bias, as "
                            "TransformerLens 2 records it; tl3: before them, as TransformerLens 3)")
        p.add_argument("--prefix", choices=["", "transformer."], default="",
                       help="HF names under transformer. (default none)")
        p.add_argument("--ln2-name", choices=["mlp.in", "ln_2.out"], default="mlp.in",
                       help="HF name of ln_2's output (default mlp.in, as the FFN fixtures)")
        p.add_argument("--mutate", action="append", metavar="CODE[@LAYERS]",
                       help="inject a porting bug (repeatable; codes below)")

    b = sub.add_parser("block", help="every stage of GPT2Block per layer, layers chained",
                       formatter_class=RD, epilog=STAGES_HELP + "\n" + BLOCK_HELP + "\n" + FFN_HELP)
    block_opts(b, False)
    sh = b.add_mutually_exclusive_group()
    sh.add_argument("--tokens", type=int, help="one sequence of N tokens: tensors [N, ...]")
    sh.add_argument("--shape", help="leading shape, e.g. 2,6 (the default): 2 sequences of "
                    "6 tokens, tensors [2, 6, ...]")
    b.add_argument("--in-scale", type=float, default=0.1, metavar="S",
                   help="layer 0's input is S x a realistic residual stream (default 0.1: "
                        "variance about 0.02, the scale of GPT-2's embeddings)")
    b.add_argument("--mutate-layers", metavar="LIST",
                   help="layers that --mutate codes without @LAYERS apply to (default: the "
                        "exported layers)")
    b.set_defaults(fn=cmd_block)

    m = sub.add_parser("model", help="token ids -> every block -> ln_f -> logits",
                       formatter_class=RD, epilog=STAGES_HELP + "\n" + BLOCK_HELP + "\n" + FFN_HELP)
    block_opts(m, True)
    ids = m.add_mutually_exclusive_group()
    ids.add_argument("--ids", help="token ids, e.g. 464,3290 (one sequence: input_ids [T]) or "
                     "1,2,3;4,5,6 (sequences of one length: [N, T])")
    ids.add_argument("--random-ids", default="2,6", metavar="N,T",
                     help="N random sequences of T ids from --seed (default 2,6)")
    m.add_argument("--ids-dtype", choices=["I64", "I32"], default="I64")
    m.set_defaults(fn=cmd_model)

    h = sub.add_parser("hf", help="capture every stage from a transformers GPT-2 (hooks)",
                       formatter_class=RD, epilog=STAGES_HELP)
    h.add_argument("--model", required=True, help="hub name or local directory")
    h.add_argument("--out", required=True)
    h.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog.")
    h.add_argument("--ids", help="token ids instead of --prompt (as for `model`)")
    h.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    h.add_argument("--ids-dtype", choices=["I64", "I32"], default="I64")
    h.add_argument("--layers", help="layers whose stages are stored (default all)")
    h.add_argument("--stages", metavar="LIST", help="default all")
    h.add_argument("--names", choices=["hf", "tl"], default="hf")
    h.add_argument("--prefix", choices=["", "transformer."], default="")
    h.add_argument("--ln2-name", choices=["mlp.in", "ln_2.out"], default="mlp.in")
    h.set_defaults(fn=cmd_hf)

    a = ap.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
