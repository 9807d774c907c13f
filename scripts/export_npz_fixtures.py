#!/usr/bin/python3
"""Writes the NumPy fixture files gpt2ffn's tests read, from the committed
safetensors fixtures (so the values are the same references):

  fixtures/npz/tiny_tanh.npz             np.savez (stored members)
  fixtures/npz/tiny_tanh_compressed.npz  np.savez_compressed (deflated)
  fixtures/npz/tiny_tanh_npy/            one NAME.npy per tensor
  fixtures/npz/tiny_tanh_tlens.npz       TransformerLens activation-cache names
  fixtures/npz/tiny_tanh_f64.npz         the same values as float64

Usage: scripts/export_npz_fixtures.py   (from the repository root)
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_fixtures import read_safetensors  # noqa: E402

TLENS = {"in": "ln2.hook_normalized", "out": "hook_mlp_out", "pre": "mlp.hook_pre", "act": "mlp.hook_post"}


def main():
    tensors, _ = read_safetensors("fixtures/tiny_tanh.safetensors")
    arrays = {name: t.numpy().astype(np.float32) for name, t in tensors.items()}
    out = "fixtures/npz"
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, "tiny_tanh.npz"), **arrays)
    np.savez_compressed(os.path.join(out, "tiny_tanh_compressed.npz"), **arrays)
    folder = os.path.join(out, "tiny_tanh_npy")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name, a in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), a)
    tl = {}
    for name, a in arrays.items():
        _, layer, _, kind = name.split(".")  # h.L.mlp.kind
        tl["blocks.%s.%s" % (layer, TLENS[kind])] = a
    np.savez(os.path.join(out, "tiny_tanh_tlens.npz"), **tl)
    np.savez(os.path.join(out, "tiny_tanh_f64.npz"),
             **{n: a.astype(np.float64) for n, a in arrays.items() if n.endswith((".in", ".out"))})
    print("wrote", out)


if __name__ == "__main__":
    main()
