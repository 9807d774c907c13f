#!/usr/bin/env python3
"""PyTorch peer for scripts/bench --only decode: greedy generation with a KV
cache as HF GPT2LMHeadModel runs it in eval mode (the prompt in one forward
that returns every layer's keys and values, then one token per step with
the past keys and values concatenated: GPT2Attention with layer_past),
float32 eager, torch.inference_mode(). Reads the same model.safetensors as
`gpt2ffn run`, prints the decode steps' tokens per second measured inside
the process (steps 1..N-1, the prompt's step excluded) and the generated
ids, so that the two processes can be checked to generate the same tokens.

Usage: decode_torch.py CHECKPOINT_DIR IDS_CSV N
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
    ck, ids_csv, N = args[0], args[1], int(args[2])
    cfg = json.load(open(os.path.join(ck, "config.json")))
    w = {k.replace("transformer.", ""): v for k, v in ef.read_safetensors(os.path.join(ck, "model.safetensors"))[0].items()}
    d, H, eps, n_layer = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5), cfg["n_layer"]
    dh = d // H
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (d,), w[p + ".weight"], w[p + ".bias"], eps)
    head = w.get("lm_head.weight", w["wte.weight"])

    def forward(ids, pos0, past):
        T = ids.numel()
        x = w["wte.weight"][ids] + w["wpe.weight"][pos0:pos0 + T]
        for L in range(n_layer):
            p = "h.%d." % L
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], ln(x, p + "ln_1"), w[p + "attn.c_attn.weight"])
            q, k, v = (t.view(T, H, dh).transpose(0, 1) for t in qkv.split(d, dim=1))
            if past[L] is not None:
                k = torch.cat([past[L][0], k], dim=1)
                v = torch.cat([past[L][1], v], dim=1)
            past[L] = (k, v)
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
            if T > 1:
                S = k.shape[1]
                mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
                s = torch.where(mask, s, torch.finfo(s.dtype).min)
            z = torch.matmul(torch.softmax(s, dim=-1), v).transpose(0, 1).reshape(T, d)
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], z, w[p + "attn.c_proj.weight"])
            hdn = gelu_tanh(torch.addmm(w[p + "mlp.c_fc.bias"], ln(x, p + "ln_2"), w[p + "mlp.c_fc.weight"]))
            x = x + torch.addmm(w[p + "mlp.c_proj.bias"], hdn, w[p + "mlp.c_proj.weight"])
        return torch.matmul(ln(x[-1:], "ln_f"), head.t())[0]

    prompt = torch.tensor([int(t) for t in ids_csv.split(",")], dtype=torch.long)
    out = []
    with torch.inference_mode():
        past = [None] * n_layer
        z = forward(prompt, 0, past)
        t0 = time.perf_counter()
        for k in range(N):
            tok = int(torch.argmax(z))
            out.append(tok)
            if k + 1 < N:
                z = forward(torch.tensor([tok]), prompt.numel() + k, past)
        dt = time.perf_counter() - t0
    print("decode_tok_s=%.3f" % ((N - 1) / dt if N > 1 and dt > 0 else 0.0))
    print("generated=" + ",".join(str(t) for t in out))


if __name__ == "__main__":
    main()
