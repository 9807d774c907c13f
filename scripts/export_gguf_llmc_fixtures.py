#!/usr/bin/python3
"""Export the tiny GPT-2 checkpoint as GGUF and llm.c files, for the gpt2ffn
GGUF and llm.c readers' tests (fixtures/formats2/).

No `gguf` package is needed: the GGUF writer below follows the format
(ggml docs/gguf.md) directly and lays the data out as ggml's own writer does
(tensor offsets in info order, each tensor padded to the alignment), so the
files also load in ggml. The llm.c writer follows karpathy/llm.c
train_gpt2.py write_model: a 256-int32 header, then every parameter in
llm.c's fixed order, nn.Linear [out, in] weights, wte padded with zero rows.

Subcommands
  gguf --dtype F32|F16|Q8_0|Q4_0|Q4_1|Q5_0|Q5_1|Q4_K|Q5_K|Q6_K [--quantize-embeddings] --out FILE
        llama.cpp GPT-2 names and layout: token_embd.weight, blk.N.ffn_norm.{weight,bias}
        (ln_2), blk.N.ffn_up.{weight,bias} (c_fc), blk.N.ffn_down.{weight,bias} (c_proj).
        With --full the whole model, in the converter's order: token_embd, output (the tied
        head again), position_embd, per layer attn_norm (ln_1), attn_qkv (c_attn), attn_output
        (attn.c_proj), ffn_norm, ffn_up, ffn_down, then output_norm (ln_f); attn_qkv / attn_output
        weights get the FFN weights' type.
        Weights are the HF Conv1D tensors transposed to torch Linear [out, in], written as is,
        so ggml's ne (fastest first) is the reverse: ffn_up ne = [n_embd, n_inner].
        F16 stores the 2-D weights (and token_embd) as F16 and the 1-D tensors as F32, as
        llama.cpp's converter does; Q8_0 stores the four FFN weight matrices as Q8_0 blocks
        (32 values -> f16 scale + 32 int8, gguf-py's rounding) and the rest as F32.
        The other quantized types (and Q8_0) go through scripts/ggml_quant.py, ggml's
        reference quantizers (quantize_row_*_ref): the 2-D FFN weights in the type,
        biases and norms F32, as llama.cpp's quantize does; with --quantize-embeddings
        token_embd too (llama.cpp quantizes it with the rest unless told otherwise).
        K-quants need rows (n_embd and n_inner) that are multiples of 256.
  llmc --dtype F32|BF16 --out FILE [--padded-vocab N]
        llm.c checkpoint, version 3 (F32) or 5 (BF16), every parameter taken from the checkpoint.

Examples
  scripts/export_gguf_llmc_fixtures.py gguf --dtype F32 --out fixtures/formats2/tiny.gguf
  scripts/export_gguf_llmc_fixtures.py llmc --dtype BF16 --out fixtures/formats2/tiny_llmc_bf16.bin
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_fixtures import load_checkpoint  # noqa: E402  (strips "transformer.")
import ggml_quant  # noqa: E402

def load_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# GGUF writer
# ---------------------------------------------------------------------------

GGUF_UINT32, GGUF_FLOAT32, GGUF_STRING = 4, 6, 8
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
QK8_0 = 32
# llama_ftype of a file whose 2-D weights are all of one quantized type
QUANT_FILE_TYPES = {"Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K": 14, "Q5_K": 16, "Q6_K": 18}


def _gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _gguf_value(vtype, v):
    if vtype == GGUF_UINT32:
        return struct.pack("<I", v)
    if vtype == GGUF_FLOAT32:
        return struct.pack("<f", v)
    if vtype == GGUF_STRING:
        return _gguf_str(v)
    raise ValueError("unsupported GGUF value type %d" % vtype)


def _pad(n, align):
    return -n % align


def write_gguf(path, kvs, tensors, alignment=32):
    """kvs: [(key, value type, value)]; tensors: [(name, ggml type, ne, raw bytes)].

    Layout: "GGUF", u32 version 3, u64 n_tensors, u64 n_kv, the KV pairs, the
    tensor infos (name, u32 n_dims, u64 ne[], u32 type, u64 offset), zero
    padding to the alignment, then each tensor's bytes padded to the alignment.
    """
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        out += _gguf_str(key) + struct.pack("<I", vtype) + _gguf_value(vtype, value)
    offset = 0
    for name, gtype, ne, data in tensors:
        out += _gguf_str(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", int(n)) for n in ne)
        out += struct.pack("<IQ", gtype, offset)
        offset += len(data) + _pad(len(data), alignment)
    out += b"\0" * _pad(len(out), alignment)
    for _, _, _, data in tensors:
        out += data + b"\0" * _pad(len(data), alignment)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(out)
    return len(out)


def quantize_q8_0(a):
    """Rows of a float32 array -> Q8_0 blocks, as gguf-py's quants.py does:
    d = max|x| / 127 (stored f16), q = round-half-away-from-zero(x / d)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    blocks = a.reshape(-1, QK8_0)
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    x = blocks * inv
    ax = np.abs(x)
    q = np.sign(x) * (np.floor(ax) + np.floor(2 * (ax - np.floor(ax))))
    dh = d.astype(np.float16).view(np.uint8)
    qs = q.astype(np.int8).view(np.uint8)
    return np.concatenate([dh, qs], axis=1).tobytes()


def _gguf_tensor(name, t, gtype):
    """A torch tensor in row-major [outer, ..., inner] -> (name, type, ne, bytes);
    ggml's ne lists the fastest-varying dimension first, so it is the reverse."""
    a = t.detach().to(torch.float32).contiguous().numpy()
    ne = list(reversed(a.shape))
    if gtype == GGML_F32:
        data = a.astype("<f4").tobytes()
    elif gtype == GGML_F16:
        data = a.astype("<f2").tobytes()
    elif gtype == GGML_Q8_0:
        if a.shape[-1] % QK8_0:
            raise ValueError("%s: row length %d is not a multiple of %d" % (name, a.shape[-1], QK8_0))
        data = quantize_q8_0(a)
    elif isinstance(gtype, str):  # a ggml_quant type name: ggml's reference quantizer
        blk = ggml_quant.block_size(gtype)
        if a.shape[-1] % blk:
            raise ValueError("%s: row length %d is not a multiple of the %s block size %d" % (name, a.shape[-1], gtype, blk))
        data = ggml_quant.quantize(a, gtype).tobytes()
        return (name, ggml_quant.TYPES[gtype][0], ne, data)
    else:
        raise ValueError("unsupported ggml type %d" % gtype)
    return (name, gtype, ne, data)


def cmd_gguf(a):
    w = load_checkpoint(a.checkpoint)
    cfg = load_config(a.checkpoint)
    n_layer, d = cfg["n_layer"], cfg["n_embd"]
    ni = cfg.get("n_inner") or 4 * d
    if a.dtype in ("F32", "F16") or (a.dtype == "Q8_0" and not a.quantize_embeddings):
        # the historical fixtures: gguf-py's Q8_0, token_embd F32 (byte-identical to before)
        weight_type = {"F32": GGML_F32, "F16": GGML_F16, "Q8_0": GGML_Q8_0}[a.dtype]
    else:
        weight_type = a.dtype
    if a.dtype == "F16":  # token_embd
        matrix_type = GGML_F16
    else:
        matrix_type = a.dtype if a.quantize_embeddings and a.dtype in QUANT_FILE_TYPES else GGML_F32
    file_type = {"F32": 0, "F16": 1}.get(a.dtype) if a.dtype in ("F32", "F16") else QUANT_FILE_TYPES[a.dtype]

    kvs = [
        ("general.architecture", GGUF_STRING, "gpt2"),
        ("general.name", GGUF_STRING, a.name),
        ("general.alignment", GGUF_UINT32, 32),
        ("general.file_type", GGUF_UINT32, file_type),
        ("gpt2.block_count", GGUF_UINT32, n_layer),
        ("gpt2.context_length", GGUF_UINT32, cfg["n_positions"]),
        ("gpt2.embedding_length", GGUF_UINT32, d),
        ("gpt2.feed_forward_length", GGUF_UINT32, ni),
        ("gpt2.attention.head_count", GGUF_UINT32, cfg["n_head"]),
        ("gpt2.attention.layer_norm_epsilon", GGUF_FLOAT32, cfg["layer_norm_epsilon"]),
    ]
    if a.dtype not in ("F32", "F16"):
        kvs.append(("general.quantization_version", GGUF_UINT32, 2))

    tensors = [_gguf_tensor("token_embd.weight", w["wte.weight"], matrix_type)]  # ne [d, vocab]
    if a.full:
        # llama.cpp's convert_hf_to_gguf.py (GPT2Model) writes the tied head
        # again as output.weight, right after token_embd, then wpe.
        tensors += [_gguf_tensor("output.weight", w["wte.weight"], matrix_type),
                    _gguf_tensor("position_embd.weight", w["wpe.weight"], matrix_type)]  # ne [d, n_ctx]
    for L in range(n_layer):
        h, b = "h.%d." % L, "blk.%d." % L
        # HF Conv1D stores [in, out]; llama.cpp's converter transposes to Linear [out, in].
        up = w[h + "mlp.c_fc.weight"].t()        # [ni, d] -> ne [d, ni]
        down = w[h + "mlp.c_proj.weight"].t()    # [d, ni] -> ne [ni, d]
        if a.full:  # the state dict's order: ln_1, attention, then ln_2 and the FFN
            qkv = w[h + "attn.c_attn.weight"].t()   # [3d, d] -> ne [d, 3d]
            out = w[h + "attn.c_proj.weight"].t()   # [d, d] (out, in) -> ne [d(in), d(out)]
            tensors += [
                _gguf_tensor(b + "attn_norm.weight", w[h + "ln_1.weight"], GGML_F32),
                _gguf_tensor(b + "attn_norm.bias", w[h + "ln_1.bias"], GGML_F32),
                _gguf_tensor(b + "attn_qkv.weight", qkv, weight_type),
                _gguf_tensor(b + "attn_qkv.bias", w[h + "attn.c_attn.bias"], GGML_F32),
                _gguf_tensor(b + "attn_output.weight", out, weight_type),
                _gguf_tensor(b + "attn_output.bias", w[h + "attn.c_proj.bias"], GGML_F32),
            ]
        tensors += [
            _gguf_tensor(b + "ffn_norm.weight", w[h + "ln_2.weight"], GGML_F32),
            _gguf_tensor(b + "ffn_norm.bias", w[h + "ln_2.bias"], GGML_F32),
            _gguf_tensor(b + "ffn_up.weight", up, weight_type),
            _gguf_tensor(b + "ffn_up.bias", w[h + "mlp.c_fc.bias"], GGML_F32),
            _gguf_tensor(b + "ffn_down.weight", down, weight_type),
            _gguf_tensor(b + "ffn_down.bias", w[h + "mlp.c_proj.bias"], GGML_F32),
        ]
    if a.full:
        tensors += [_gguf_tensor("output_norm.weight", w["ln_f.weight"], GGML_F32),
                    _gguf_tensor("output_norm.bias", w["ln_f.bias"], GGML_F32)]
    n = write_gguf(a.out, kvs, tensors)
    print("wrote %s (%d tensors, %s, %d bytes)" % (a.out, len(tensors), a.dtype, n))


# ---------------------------------------------------------------------------
# llm.c writer
# ---------------------------------------------------------------------------

LLMC_MAGIC = 20240326


def cmd_llmc(a):
    w = load_checkpoint(a.checkpoint)
    cfg = load_config(a.checkpoint)
    L, C = cfg["n_layer"], cfg["n_embd"]
    V, maxT, NH = w["wte.weight"].shape[0], w["wpe.weight"].shape[0], cfg["n_head"]
    Vp = a.padded_vocab or V
    if Vp < V:
        sys.exit("error: --padded-vocab must be >= vocab size %d" % V)
    version = {"F32": 3, "BF16": 5}[a.dtype]

    header = np.zeros(256, dtype="<i4")
    header[:8] = [LLMC_MAGIC, version, maxT, V, L, NH, C, Vp]

    wte = torch.zeros(Vp, C)
    wte[:V] = w["wte.weight"]  # llm.c pads the vocabulary with zero rows

    def lin(k):  # HF Conv1D [in, out] -> llm.c / nn.Linear [out, in]
        return w[k].t()

    order = [wte, w["wpe.weight"]]
    per_layer = [
        ("ln_1.weight", None), ("ln_1.bias", None),
        ("attn.c_attn.weight", lin), ("attn.c_attn.bias", None),
        ("attn.c_proj.weight", lin), ("attn.c_proj.bias", None),
        ("ln_2.weight", None), ("ln_2.bias", None),
        ("mlp.c_fc.weight", lin), ("mlp.c_fc.bias", None),      # (4C, C)
        ("mlp.c_proj.weight", lin), ("mlp.c_proj.bias", None),  # (C, 4C)
    ]
    for key, f in per_layer:
        for i in range(L):
            k = "h.%d.%s" % (i, key)
            order.append(f(k) if f else w[k])
    order += [w["ln_f.weight"], w["ln_f.bias"]]

    blobs = []
    for t in order:
        t = t.detach().to(torch.float32).contiguous()
        if a.dtype == "F32":
            blobs.append(t.numpy().astype("<f4").tobytes())
        else:  # as write_bf16: torch's round-to-nearest-even, raw upper 16 bits
            blobs.append(t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes())
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "wb") as f:
        f.write(header.tobytes())
        for b in blobs:
            f.write(b)
    n = 1024 + sum(len(b) for b in blobs)
    print("wrote %s (llm.c version %d, L=%d C=%d V=%d Vp=%d maxT=%d, %d bytes)" % (a.out, version, L, C, V, Vp, maxT, n))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gguf", help="write a llama.cpp-style GPT-2 GGUF file")
    g.add_argument("--checkpoint", default="fixtures/tiny", help="folder with model.safetensors + config.json")
    g.add_argument("--dtype", choices=["F32", "F16"] + list(QUANT_FILE_TYPES), default="F32")
    g.add_argument("--quantize-embeddings", action="store_true",
                   help="token_embd in the quantized type too (default F32)")
    g.add_argument("--full", action="store_true",
                   help="the whole model as llama.cpp's converter writes GPT-2: also output (the tied head), "
                        "position_embd, blk.N.attn_norm/attn_qkv/attn_output and output_norm "
                        "(default: token_embd and the FFN with ffn_norm only)")
    g.add_argument("--name", default="gpt2ffn tiny", help="general.name")
    g.add_argument("--out", required=True)
    g.set_defaults(fn=cmd_gguf)
    m = sub.add_parser("llmc", help="write an llm.c checkpoint")
    m.add_argument("--checkpoint", default="fixtures/tiny", help="folder with model.safetensors + config.json")
    m.add_argument("--dtype", choices=["F32", "BF16"], default="F32")
    m.add_argument("--padded-vocab", type=int, default=0, help="Vp (default: the vocab size)")
    m.add_argument("--out", required=True)
    m.set_defaults(fn=cmd_llmc)
    a = p.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
