#!/usr/bin/python3
"""Write a GPT-2 checkpoint under TransformerLens' names (HookedTransformer's
state_dict), from an HF-named safetensors checkpoint, for gpt2ffn's
TransformerLens path (fixtures/formats2/tiny_tl.safetensors).

The conversion is TransformerLens' convert_gpt2_weights without any of
from_pretrained's processing (fold_ln=False, center_writing_weights=False,
center_unembed=False: HookedTransformer.from_pretrained_no_processing), so
the LayerNorms keep their ln1.w/b, ln2.w/b, ln_final.w/b:

  embed.W_E                 [vocab, d]           wte
  pos_embed.W_pos           [n_ctx, d]           wpe
  blocks.L.ln1.w / .b       [d]                  h.L.ln_1
  blocks.L.attn.W_Q/W_K/W_V [n_head, d, d_head]  c_attn.weight [d, 3d] split in three along
                                                 the output, each "m (i h) -> i m h"
  blocks.L.attn.b_Q/b_K/b_V [n_head, d_head]     c_attn.bias split likewise
  blocks.L.attn.W_O         [n_head, d_head, d]  attn.c_proj.weight [d, d], "(i h) m -> i h m"
  blocks.L.attn.b_O         [d]                  attn.c_proj.bias
  blocks.L.attn.mask        [n_ctx, n_ctx] BOOL  TransformerLens' causal-mask buffer (tril)
  blocks.L.attn.IGNORE      [] F32 (-inf)        its masked-score buffer
  blocks.L.ln2.w / .b       [d]                  h.L.ln_2
  blocks.L.mlp.W_in / b_in  [d, 4d] / [4d]       mlp.c_fc (Conv1D layout, as is)
  blocks.L.mlp.W_out/b_out  [4d, d] / [d]        mlp.c_proj
  ln_final.w / .b           [d]                  ln_f
  unembed.W_U               [d, vocab]           wte transposed (GPT-2's tied head)
  unembed.b_U               [vocab]              zeros (GPT-2 has no head bias)

n_head comes from config.json beside the input checkpoint; the output has
none (TransformerLens keeps its config in Python): readers take n_head from
W_Q's shape. Layout as export_fixtures.py's write_safetensors (tensors sorted
by item size, then name; header padded to 8), extended to BOOL and 0-d
tensors. Deterministic: the same bytes each run.

Usage: scripts/export_tl_checkpoint.py [--checkpoint fixtures/tiny] --out FILE
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


def tl_state_dict(w, n_head, n_ctx):
    d = w["wte.weight"].shape[1]
    dh = d // n_head
    n_layer = len({k.split(".")[1] for k in w if k.startswith("h.")})
    sd = {"embed.W_E": w["wte.weight"], "pos_embed.W_pos": w["wpe.weight"]}
    mask = np.tril(np.ones((n_ctx, n_ctx), dtype=np.bool_))
    for L in range(n_layer):
        h, b = "h.%d." % L, "blocks.%d." % L
        sd[b + "ln1.w"], sd[b + "ln1.b"] = w[h + "ln_1.weight"], w[h + "ln_1.bias"]
        W = w[h + "attn.c_attn.weight"]          # Conv1D [d, 3d]: q, k, v columns
        B = w[h + "attn.c_attn.bias"]
        for i, x in enumerate("QKV"):
            Wx = W[:, i * d:(i + 1) * d]             # [d, d] = m (i h)
            sd[b + "attn.W_" + x] = Wx.reshape(d, n_head, dh).permute(1, 0, 2).contiguous()  # i m h
            sd[b + "attn.b_" + x] = B[i * d:(i + 1) * d].reshape(n_head, dh).contiguous()
        sd[b + "attn.W_O"] = w[h + "attn.c_proj.weight"].reshape(n_head, dh, d).contiguous()
        sd[b + "attn.b_O"] = w[h + "attn.c_proj.bias"]
        sd[b + "attn.mask"] = mask
        sd[b + "attn.IGNORE"] = np.array(-np.inf, dtype=np.float32)
        sd[b + "ln2.w"], sd[b + "ln2.b"] = w[h + "ln_2.weight"], w[h + "ln_2.bias"]
        sd[b + "mlp.W_in"], sd[b + "mlp.b_in"] = w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"]
        sd[b + "mlp.W_out"], sd[b + "mlp.b_out"] = w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"]
    sd["ln_final.w"], sd["ln_final.b"] = w["ln_f.weight"], w["ln_f.bias"]
    sd["unembed.W_U"] = w["wte.weight"].t().contiguous()
    sd["unembed.b_U"] = torch.zeros(w["wte.weight"].shape[0])
    return sd


def write_safetensors(path, tensors, metadata):
    arrays = {}
    for k, v in tensors.items():
        a = v.detach().numpy() if isinstance(v, torch.Tensor) else v
        arrays[k] = np.ascontiguousarray(a.astype(np.bool_ if a.dtype == np.bool_ else "<f4"))
    tag = {k: "BOOL" if a.dtype == np.bool_ else "F32" for k, a in arrays.items()}
    header = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}}
    blobs, off = [], 0
    for name in sorted(arrays, key=lambda n: (-arrays[n].itemsize, n)):
        b = arrays[name].tobytes()
        header[name] = {"dtype": tag[name], "shape": [int(s) for s in arrays[name].shape],
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)) + hjson + b"".join(blobs))
    return 8 + len(hjson) + off


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="fixtures/tiny", help="folder with model.safetensors + config.json")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(os.path.join(a.checkpoint, "config.json")) as f:
        cfg = json.load(f)
    w = load_checkpoint(a.checkpoint)
    sd = tl_state_dict(w, cfg["n_head"], cfg["n_positions"])
    n = write_safetensors(a.out, sd, {"producer": "scripts/export_tl_checkpoint.py",
                                      "names": "TransformerLens (from_pretrained_no_processing)",
                                      "checkpoint": a.checkpoint})
    print("wrote %s (%d tensors, %d bytes)" % (a.out, len(sd), n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
