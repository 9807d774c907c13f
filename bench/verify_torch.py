#!/usr/bin/env python3
"""PyTorch peer of `gpt2ffn verify` for scripts/bench: the few lines a user
would write instead. Reads the same safetensors checkpoint and fixture with
numpy memmaps (no copies but the tensors used), runs each layer's FFN as HF
GPT2MLP does (Conv1D addmm, gelu_new written out, addmm) in float32, and
checks it with torch.testing.assert_close (float32 defaults: rtol 1.3e-6,
atol 1e-5). Prints one line and exits 0 when every layer matches, 1 when
one does not.

    verify_torch.py CHECKPOINT.safetensors FIXTURE.safetensors [--threads N]

on gpt2ffn's default thread count unless --threads says otherwise.
"""
import json
import math
import struct
import sys

import warnings

import numpy as np
import torch

from torch_peer import set_threads


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    mm = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        dt = {"F32": np.float32, "F16": np.float16}[t["dtype"]]
        out[name] = mm[a:b].view(dt).reshape(t["shape"])
    return out


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def main():
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    args = sys.argv[1:]
    set_threads(args)  # as many as gpt2ffn (bench/torch_peer.py)
    ck, fx = tensors(args[0]), tensors(args[1])
    layers = sorted({int(k.split(".")[1]) for k in fx if k.endswith(".mlp.in")})
    failed = 0
    with torch.inference_mode():
        for L in layers:
            p = "h.%d.mlp." % L
            w = [torch.from_numpy(np.ascontiguousarray(ck[p + s])) for s in
                 ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias")]
            x = torch.from_numpy(np.asarray(fx[p + "in"], dtype=np.float32)).reshape(-1, w[0].shape[0])
            expected = torch.from_numpy(np.asarray(fx[p + "out"], dtype=np.float32)).reshape(-1, w[2].shape[1])
            out = torch.addmm(w[3], gelu_new(torch.addmm(w[1], x, w[0])), w[2])
            try:
                torch.testing.assert_close(out, expected)
            except AssertionError:
                failed += 1
    print("verify_torch: %d layers, %d failed" % (len(layers), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
