#!/usr/bin/env python3
"""PyTorch peer for scripts/bench --only attn: causal self-attention of one
sequence as HF GPT2Attention's eager path computes it (q k^T / sqrt(d_head),
the causal mask by torch.where with the dtype's minimum, softmax in float32,
probs @ v, heads merged), float32, torch.inference_mode(), on the same shapes
and inputs' distribution as `bench_ffn attn` (qkv ~ N(0, 1)). Median of 9
timed calls after a warm-up. Prints one line per case:

  torch shape=124M T=1024 threads=2 ms=12.3

Usage: bench_attn_torch.py [T]
"""
import os
import statistics
import sys
import time

import torch

SHAPES = [("124M", 768, 12), ("1.5B", 1600, 25)]


def attention(qkv, H):
    T, three_d = qkv.shape
    d = three_d // 3
    q, k, v = qkv.split(d, dim=1)
    q = q.view(T, H, d // H).transpose(0, 1)
    k = k.view(T, H, d // H).transpose(0, 1)
    v = v.view(T, H, d // H).transpose(0, 1)
    w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], (d // H) ** 0.5)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    w = torch.where(mask, w, torch.finfo(w.dtype).min)
    w = torch.softmax(w, dim=-1)
    z = torch.matmul(w, v)
    return z.transpose(0, 1).reshape(T, d)


def main():
    T = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    torch.manual_seed(0)
    n = os.cpu_count() or 1
    for threads in (1, n) if n > 1 else (1,):
        torch.set_num_threads(threads)
        for name, d, H in SHAPES:
            qkv = torch.randn(T, 3 * d)
            with torch.inference_mode():
                attention(qkv, H)
                times = []
                for _ in range(9):
                    t0 = time.perf_counter()
                    attention(qkv, H)
                    times.append(time.perf_counter() - t0)
            print("torch shape=%s T=%d threads=%d ms=%.3f" % (name, T, threads, statistics.median(times) * 1e3))


if __name__ == "__main__":
    main()
