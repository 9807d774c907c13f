#!/usr/bin/python3
"""Export GPT-2 FFN (MLP) test fixtures for gpt2ffn.

gpt2ffn checks the feed-forward blocks of a GPT-2 checkpoint against reference
activations.  This script produces both sides of that check as safetensors
files, using only torch + numpy (no safetensors / transformers packages needed,
so a tiny reader/writer for the format is included here).

Subcommands
  synth    write DIR/model.safetensors + DIR/config.json: a synthetic GPT-2 with
           the full HF tensor set and trained-GPT-2-like magnitudes (so that the
           erf and tanh GELU give clearly different FFN outputs).
  fixture  read a checkpoint, build a realistic FFN input per layer
           (layer_norm with that layer's ln_2) and run exactly HF GPT2MLP's
           float32 arithmetic; store h.L.mlp.in / h.L.mlp.out (and with
           --pre-act h.L.mlp.pre / h.L.mlp.act).  --mutate injects classic porting
           bugs into that reference (missing biases, residual added, wrong layer's
           weights, f16/bf16-rounded weights, Conv1D/Linear layout misread, NaN,
           small act/out perturbations); see `fixture --help`.
  hf       capture the same tensors from a real HF model via forward hooks on
           every block's .mlp (needs `transformers`; exits 2 without it).

Fixture metadata: {"gelu": "tanh"|"erf" (the claim; --claim can lie or omit it),
"producer": "scripts/export_fixtures.py", "checkpoint": <basename>}, plus
"mutations" / "mutated_layers" when --mutate is used.

Examples
  scripts/export_fixtures.py synth --out fixtures/tiny --layers 4 --n-embd 64
  scripts/export_fixtures.py fixture --checkpoint fixtures/tiny --gelu tanh \\
      --shape 2,6 --pre-act --out fixtures/tiny_tanh.safetensors
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

PRODUCER = "scripts/export_fixtures.py"
LN_EPS = 1e-5

# ---------------------------------------------------------------------------
# Minimal safetensors reader / writer
# ---------------------------------------------------------------------------

# dtype tag -> (numpy little-endian dtype used for the raw bytes, item size)
_RAW = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


def _to_bytes(t, dtype):
    """float tensor -> little-endian bytes in `dtype` (rounding happens here)."""
    t = t.detach().to(torch.float32).contiguous()
    if dtype == "BF16":
        # torch's float32->bfloat16 conversion is round-to-nearest-even;
        # the int16 view gives the raw upper 16 bits.
        bits = t.to(torch.bfloat16).view(torch.int16).numpy()
        return bits.astype("<i2").tobytes()
    return t.numpy().astype(_RAW[dtype][0]).tobytes()


def _from_bytes(buf, dtype, shape):
    """raw bytes -> float32 torch tensor."""
    if dtype not in _RAW:
        raise ValueError("unsupported dtype %r (only F32/F16/BF16/F64)" % dtype)
    a = np.frombuffer(buf, dtype=_RAW[dtype][0])
    if dtype == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return torch.from_numpy(a.astype(np.float32).reshape(shape))


def write_safetensors(path, tensors, metadata=None, dtype="F32", pad=True):
    """Write {name: tensor} as safetensors, all tensors stored in `dtype`.

    Layout follows the reference library: __metadata__ first, tensors sorted by
    name (all share one dtype, so the library's dtype-alignment sort reduces to
    a name sort), contiguous data, header space-padded to a multiple of 8.
    """
    if dtype not in _RAW:
        raise ValueError("unsupported dtype %r" % dtype)
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name in sorted(tensors):
        b = _to_bytes(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": [int(s) for s in tensors[name].shape],
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
    """Return ({name: float32 tensor}, metadata dict). Validates the layout."""
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
        if dt not in _RAW:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        if e - b != int(np.prod(shape, dtype=np.int64)) * _RAW[dt][1]:
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
# The FFN itself (HF GPT2MLP arithmetic, float32)
# ---------------------------------------------------------------------------

def gelu_new(x):
    # Written exactly as HF NewGELUActivation so the float32 rounding matches.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gelu_erf(x):
    return torch.nn.functional.gelu(x)


GELUS = {"tanh": gelu_new, "erf": gelu_erf}


def gpt2_mlp(x2d, w, gelu):
    """x2d: (tokens, d). Returns (pre, act, out) exactly like GPT2MLP."""
    pre = torch.addmm(w["c_fc.bias"], x2d, w["c_fc.weight"])  # Conv1D: x @ W + b
    act = GELUS[gelu](pre)
    out = torch.addmm(w["c_proj.bias"], act, w["c_proj.weight"])
    return pre, act, out


# ---------------------------------------------------------------------------
# Mutations: classic porting bugs injected into the *reference* (fixture --mutate)
# ---------------------------------------------------------------------------

MUTATIONS_HELP = """\
mutations (fixture --mutate CODE[@LAYERS], repeatable, they compose):
  fc_bias_missing        pre = x @ W_fc            (torch.mm, no c_fc.bias)
  proj_bias_missing      out = act @ W_proj        (torch.mm, no c_proj.bias)
  residual_included      stored out = x + FFN(x)   (x = the stored in; float32 add)
  weights_from_layer:K   FFN weights+biases of checkpoint layer K (the input is
                         still generated with the layer's own ln_2)
  weights_f16_rounded    all four FFN tensors rounded to float16 (t.half().float())
  weights_bf16_rounded   ... to bfloat16 (t.bfloat16().float()); both RNE
  weights_quantized:TYPE the two FFN weight matrices quantized to ggml's TYPE (Q8_0,
                         Q4_0, Q4_1, Q5_0, Q5_1; Q4_K, Q5_K, Q6_K when n_embd and
                         n_inner are multiples of 256) with ggml's reference rounding
                         and dequantized back, as llama.cpp stores them (rows of the
                         Linear [out, in] transpose); biases stay float32
  layout_misread:fc|proj|both
                         Conv1D [in,out] bytes read as nn.Linear [out,in] without a
                         transpose: c_fc M = W.view(n_inner, n_embd), pre = x @ M.T + b;
                         c_proj P = Wp.view(n_embd, n_inner), out = act @ P.T + b
  perturb_act:K          act[:, K] += 0.05 before c_proj (pre matches, act/out do not)
  perturb_proj:J         out[:, J] += 0.01 after c_proj (pre/act match, out does not)
  nonfinite              out[token 1, channel 3] = NaN (flattened token index)
Order inside one layer: weights_from_layer, then f16/bf16 rounding and
weights_quantized, then
layout_misread; bias drops; GELU (--gelu; erf is a mutation of its own);
perturb_act; c_proj; perturb_proj; residual_included; nonfinite.
Layers: CODE@LAYERS (e.g. perturb_proj:5@1, fc_bias_missing@0,2-3) applies CODE to
those layers; a CODE without @ applies to --mutate-layers (default: all exported
layers). Unmutated layers are computed exactly as without --mutate.  Metadata gets
"mutations" ("code1,code2") and "mutated_layers" ("code1@0,1;code2@3") for humans.
"""

_PARAM_CODES = {"weights_from_layer", "layout_misread", "perturb_act", "perturb_proj", "weights_quantized"}
_PLAIN_CODES = {"fc_bias_missing", "proj_bias_missing", "residual_included",
                "weights_f16_rounded", "weights_bf16_rounded", "nonfinite"}
PERTURB_ACT = 0.05
PERTURB_PROJ = 0.01


def parse_mutation(code):
    """'name[:param]' -> (name, param) or exit with a usage error."""
    name, _, param = code.partition(":")
    if name in _PLAIN_CODES:
        if param:
            sys.exit("error: mutation %s takes no parameter" % name)
        return name, None
    if name not in _PARAM_CODES:
        sys.exit("error: unknown mutation %r (see --help)" % code)
    if name == "weights_quantized":
        return name, parse_quant_type(param)
    if name == "layout_misread":
        if param not in ("fc", "proj", "both"):
            sys.exit("error: layout_misread needs :fc, :proj or :both")
        return name, param
    try:
        return name, int(param)
    except ValueError:
        sys.exit("error: mutation %s needs an integer parameter (%s:N)" % (name, name))


def plan_mutations(a, layers):
    """-> {layer: [(name, param, code)]} from --mutate / --mutate-layers."""
    where = "the exported layers"
    default = parse_layers(a.mutate_layers, layers, where) if a.mutate_layers else list(layers)
    plan = {}
    for spec in a.mutate or []:
        code, at, lspec = spec.partition("@")
        name, param = parse_mutation(code)
        sel = parse_layers(lspec, layers, where) if at else default
        for L in sel:
            plan.setdefault(L, []).append((name, param, code))
    return plan


def _swap_weights(weights, K):
    p = "h.%d.mlp." % K
    try:
        return {k: weights[p + k] for k in
                ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias")}
    except KeyError:
        sys.exit("error: weights_from_layer:%d: checkpoint has no layer %d" % (K, K))


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


def mutated_mlp(x2d, w, gelu, muts, weights):
    """GPT2MLP with the porting bugs `muts` injected (see MUTATIONS_HELP).

    Same float32 ops as gpt2_mlp (addmm), torch.mm where a bias is dropped.
    """
    has = {}
    for name, param, _ in muts:
        has.setdefault(name, []).append(param)
    if "weights_from_layer" in has:
        w = _swap_weights(weights, has["weights_from_layer"][-1])
    if "weights_f16_rounded" in has:
        w = {k: v.half().float() for k, v in w.items()}
    if "weights_bf16_rounded" in has:
        w = {k: v.bfloat16().float() for k, v in w.items()}
    if "weights_quantized" in has:
        w = quantized_weights(w, has["weights_quantized"][-1])
    d, ni = w["c_fc.weight"].shape
    wfc, wproj = w["c_fc.weight"], w["c_proj.weight"]
    lm = set(has.get("layout_misread", []))
    if lm & {"fc", "both"}:
        # same bytes, the other shape, then used as nn.Linear (x @ M.T)
        wfc = wfc.contiguous().view(ni, d).t()
    if lm & {"proj", "both"}:
        wproj = wproj.contiguous().view(d, ni).t()
    if "fc_bias_missing" in has:
        pre = torch.mm(x2d, wfc)
    else:
        pre = torch.addmm(w["c_fc.bias"], x2d, wfc)
    act = GELUS[gelu](pre)
    for k in has.get("perturb_act", []):
        if not 0 <= k < ni:
            sys.exit("error: perturb_act:%d outside 0..%d" % (k, ni - 1))
        act = act.clone()
        act[:, k] += PERTURB_ACT
    if "proj_bias_missing" in has:
        out = torch.mm(act, wproj)
    else:
        out = torch.addmm(w["c_proj.bias"], act, wproj)
    for j in has.get("perturb_proj", []):
        if not 0 <= j < d:
            sys.exit("error: perturb_proj:%d outside 0..%d" % (j, d - 1))
        out[:, j] += PERTURB_PROJ
    if "residual_included" in has:
        out = x2d + out
    if "nonfinite" in has:
        if out.shape[0] < 2 or out.shape[1] < 4:
            sys.exit("error: nonfinite needs at least 2 tokens and 4 channels")
        out[1, 3] = float("nan")
    return pre, act, out


def layer_norm(h, weight, bias):
    d = h.shape[-1]
    if weight is None:
        return torch.nn.functional.layer_norm(h, (d,), eps=LN_EPS)
    return torch.nn.functional.layer_norm(h, (d,), weight, bias, eps=LN_EPS)


def realistic_hidden(shape, d, gen):
    """Residual-stream-like states: N(0,1) plus a few large 'outlier' channels."""
    h = torch.randn(*shape, d, generator=gen)
    k = max(1, d // 32)
    chans = torch.randperm(d, generator=gen)[:k]
    scale = 3.0 + 5.0 * torch.rand(k, generator=gen)
    h[..., chans] *= scale
    return h


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------

def cmd_synth(a):
    torch.manual_seed(a.seed)  # belt and braces; all draws use `g` below
    g = torch.Generator().manual_seed(a.seed)
    d, ni = a.n_embd, a.n_inner or 4 * a.n_embd
    if d % a.n_head:
        sys.exit("error: --n-embd must be divisible by --n-head")

    def N(shape, mean=0.0, std=1.0):
        return torch.randn(*shape, generator=g) * std + mean

    t = {"wte.weight": N((a.vocab, d), std=0.14), "wpe.weight": N((a.n_ctx, d), std=0.02)}
    for L in range(a.layers):
        p = "h.%d." % L
        # Attention tensors exist only so the checkpoint looks complete.
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
    prefix = "" if a.no_prefix else a.prefix
    t = {prefix + k: v for k, v in t.items()}

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
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    print("wrote %s (%d tensors, dtype %s)" % (a.out, len(t), a.dtype))


def cmd_fixture(a):
    torch.set_num_threads(1)  # reproducible float32 reductions
    weights = load_checkpoint(a.checkpoint)
    layers = parse_layers(a.layers, layer_ids(weights))
    if a.shape:
        shape = tuple(int(s) for s in a.shape.split(",") if s.strip())
    else:
        shape = (a.tokens,)
    plan = plan_mutations(a, layers)
    g = torch.Generator().manual_seed(a.seed)
    out = {}
    for L in layers:
        p = "h.%d." % L
        try:
            w = {k: weights[p + "mlp." + k] for k in
                 ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias")}
        except KeyError as e:
            sys.exit("error: checkpoint lacks %s" % e)
        d, ni = w["c_fc.weight"].shape
        with torch.no_grad():
            # Fresh draws per layer from one generator -> each layer gets its own input.
            h = realistic_hidden(shape, d, g)
            x = layer_norm(h, weights.get(p + "ln_2.weight"), weights.get(p + "ln_2.bias"))
            if L in plan:
                pre, act, y = mutated_mlp(x.reshape(-1, d), w, a.gelu, plan[L], weights)
            else:
                pre, act, y = gpt2_mlp(x.reshape(-1, d), w, a.gelu)
        out[p + "mlp.in"] = x.reshape(*shape, d)
        out[p + "mlp.out"] = y.reshape(*shape, d)
        if a.pre_act:
            out[p + "mlp.pre"] = pre.reshape(*shape, ni)
            out[p + "mlp.act"] = act.reshape(*shape, ni)
    claim = a.claim or a.gelu
    meta = {"producer": PRODUCER,
            "checkpoint": os.path.basename(os.path.normpath(a.checkpoint))}
    if claim != "none":
        meta["gelu"] = claim
    if plan:  # for humans only; the C tool does not read these
        codes = []
        for spec in a.mutate:
            c = spec.partition("@")[0]
            if c not in codes:
                codes.append(c)
        meta["mutations"] = ",".join(codes)
        meta["mutated_layers"] = ";".join(
            "%s@%s" % (c, ",".join(str(L) for L in sorted(plan) if
                                   any(c == pc for _, _, pc in plan[L])))
            for c in codes)
    write_safetensors(a.out, out, meta, a.dtype, pad=not a.unpadded_header)
    print("wrote %s (layers %s, shape %s, gelu %s, claim %s, dtype %s%s)"
          % (a.out, layers, list(shape), a.gelu, claim, a.dtype,
             ", mutated %s" % meta["mutated_layers"] if plan else ""))


def cmd_hf(a):
    try:
        import transformers
    except ImportError:
        print("error: the hf subcommand needs the `transformers` package, which is not importable",
              file=sys.stderr)
        sys.exit(2)
    torch.set_num_threads(1)
    tok = transformers.AutoTokenizer.from_pretrained(a.model)
    model = transformers.GPT2Model.from_pretrained(a.model, torch_dtype=torch.float32).eval()
    act_fn = model.config.activation_function
    gelu = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh",
            "gelu": "erf"}.get(act_fn)
    if gelu is None:
        sys.exit("error: unsupported activation_function %r" % act_fn)
    captured = {}

    def hook(L):
        def fn(module, inputs, output):
            # inputs[0] is ln_2's output; drop the batch dimension (batch is 1).
            captured["h.%d.mlp.in" % L] = inputs[0][0].detach().clone()
            captured["h.%d.mlp.out" % L] = output[0].detach().clone()
        return fn

    handles = [blk.mlp.register_forward_hook(hook(L)) for L, blk in enumerate(model.h)]
    with torch.no_grad():
        model(**tok(a.prompt, return_tensors="pt"))
    for hnd in handles:
        hnd.remove()
    meta = {"gelu": gelu, "producer": PRODUCER,
            "checkpoint": os.path.basename(os.path.normpath(a.model))}
    write_safetensors(a.out, captured, meta, a.dtype)
    print("wrote %s (%d layers, gelu %s)" % (a.out, len(model.h), gelu))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    dtypes = list(_RAW)

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
    s.add_argument("--fc-scale", type=float, default=1.0, metavar="S",
                   help="multiply the c_fc.weight std by S (default 1)")
    s.add_argument("--fc-bias-scale", type=float, default=1.0, metavar="S",
                   help="multiply the c_fc.bias mean and std by S (default 1; 0 gives "
                        "all-zero biases). E.g. --fc-scale 0.01 --fc-bias-scale 0 gives "
                        "|pre| ~< 0.05, where erf and tanh GELU agree")
    s.add_argument("--dtype", choices=dtypes, default="F32")
    px = s.add_mutually_exclusive_group()
    px.add_argument("--no-prefix", action="store_true", help="bare keys (no transformer.)")
    px.add_argument("--prefix", default="transformer.", help="key prefix (default transformer.)")
    s.add_argument("--unpadded-header", action="store_true",
                   help="do not space-pad the JSON header to a multiple of 8")
    s.set_defaults(fn=cmd_synth)

    f = sub.add_parser("fixture", help="compute reference FFN activations from a checkpoint",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=MUTATIONS_HELP)
    f.add_argument("--checkpoint", required=True, help="model.safetensors or its folder")
    f.add_argument("--out", required=True)
    f.add_argument("--gelu", choices=sorted(GELUS), default="tanh")
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
    f.add_argument("--mutate", action="append", metavar="CODE[@LAYERS]",
                   help="inject a porting bug into the reference (repeatable; codes "
                        "below): fc_bias_missing, proj_bias_missing, residual_included, "
                        "weights_from_layer:K, weights_f16_rounded, weights_bf16_rounded, "
                        "layout_misread:fc|proj|both, perturb_act:K, perturb_proj:J, "
                        "nonfinite")
    f.add_argument("--mutate-layers", metavar="LIST",
                   help="layers that --mutate codes without @LAYERS apply to, e.g. 1,3 "
                        "(default: all exported layers); other layers stay clean")
    f.set_defaults(fn=cmd_fixture)

    h = sub.add_parser("hf", help="capture MLP in/out from a transformers GPT-2")
    h.add_argument("--model", required=True, help="hub name or local directory")
    h.add_argument("--out", required=True)
    h.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog.")
    h.add_argument("--dtype", choices=dtypes, default="F32")
    h.set_defaults(fn=cmd_hf)

    a = ap.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
