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
           --pre-act h.L.mlp.pre / h.L.mlp.act).
  hf       capture the same tensors from a real HF model via forward hooks on
           every block's .mlp (needs `transformers`; exits 2 without it).

Fixture metadata: {"gelu": "tanh"|"erf" (the claim; --claim can lie or omit it),
"producer": "scripts/export_fixtures.py", "checkpoint": <basename>}.

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


def parse_layers(spec, available):
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
        sys.exit("error: layers %s not in checkpoint (has %s)" % (missing, available))
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


def mutate(pre, act, out, weights, args):
    """Seam for future fault-injection flags (corrupt pre/act/out, swap weights...).

    Returns (pre, act, out) to be stored. Currently the identity.
    """
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
        t[p + "mlp.c_fc.weight"] = N((d, ni), std=0.8 / math.sqrt(d) * 2.5)
        t[p + "mlp.c_fc.bias"] = N((ni,), -0.3, 0.3)
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
            pre, act, y = gpt2_mlp(x.reshape(-1, d), w, a.gelu)
            pre, act, y = mutate(pre, act, y, w, a)
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
    write_safetensors(a.out, out, meta, a.dtype, pad=not a.unpadded_header)
    print("wrote %s (layers %s, shape %s, gelu %s, claim %s, dtype %s)"
          % (a.out, layers, list(shape), a.gelu, claim, a.dtype))


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
    s.add_argument("--dtype", choices=dtypes, default="F32")
    px = s.add_mutually_exclusive_group()
    px.add_argument("--no-prefix", action="store_true", help="bare keys (no transformer.)")
    px.add_argument("--prefix", default="transformer.", help="key prefix (default transformer.)")
    s.add_argument("--unpadded-header", action="store_true",
                   help="do not space-pad the JSON header to a multiple of 8")
    s.set_defaults(fn=cmd_synth)

    f = sub.add_parser("fixture", help="compute reference FFN activations from a checkpoint")
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
