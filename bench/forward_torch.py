#!/usr/bin/env python3
"""PyTorch peer for scripts/bench --only forward: GPT-2's whole forward from
token ids to logits as HF GPT2LMHeadModel computes it in eval mode (the
arithmetic scripts/export_fixtures.py writes out: wte + wpe, per block
ln_1, Conv1D c_attn, causal softmax(q k^T / sqrt(d_head)) v, c_proj,
residual, ln_2, c_fc, tanh GELU, c_proj, residual; ln_f; logits = x wte^T),
float32 eager, torch.inference_mode(). Reads the same model.safetensors and
ids file as `gpt2ffn run`, and writes the logits as a safetensors file like
gpt2ffn does, so both processes do the same work end to end.

Usage: forward_torch.py CHECKPOINT_DIR IDS_CSV OUT
"""
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import export_fixtures as ef  # noqa: E402
from torch_peer import set_threads  # noqa: E402


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def main():
    args = sys.argv[1:]
    set_threads(args)  # as many as gpt2ffn (bench/torch_peer.py)
    ck, ids_csv, out = args[0:3]
    cfg = json.load(open(os.path.join(ck, "config.json")))
    w = {k.replace("transformer.", ""): v for k, v in ef.read_safetensors(os.path.join(ck, "model.safetensors"))[0].items()}
    ids = torch.tensor([int(x) for x in ids_csv.split(",")], dtype=torch.long)
    d, H, eps = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    T = ids.numel()
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (d,), w[p + ".weight"], w[p + ".bias"], eps)
    t0 = time.perf_counter()
    with torch.inference_mode():
        x = w["wte.weight"][ids] + w["wpe.weight"][:T]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for L in range(cfg["n_layer"]):
            p = "h.%d." % L
            a = ln(x, p + "ln_1")
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], a, w[p + "attn.c_attn.weight"])
            q, k, v = (t.view(T, H, d // H).transpose(0, 1) for t in qkv.split(d, dim=1))
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // H)
            s = torch.where(mask, s, torch.finfo(s.dtype).min)
            z = torch.matmul(torch.softmax(s, dim=-1), v).transpose(0, 1).reshape(T, d)
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], z, w[p + "attn.c_proj.weight"])
            hdn = gelu_tanh(torch.addmm(w[p + "mlp.c_fc.bias"], ln(x, p + "ln_2"), w[p + "mlp.c_fc.weight"]))
            x = x + torch.addmm(w[p + "mlp.c_proj.bias"], hdn, w[p + "mlp.c_proj.weight"])
        logits = torch.matmul(ln(x, "ln_f"), w["wte.weight"].t())
    print("forward_sec=%.3f" % (time.perf_counter() - t0))
    ef.write_safetensors(out, {"logits": logits.contiguous()}, {"producer": "bench/forward_torch.py"})


if __name__ == "__main__":
    main()
