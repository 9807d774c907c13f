#!/usr/bin/env python3
"""PyTorch peer for scripts/bench: the GPT-2 FFN as HF GPT2MLP computes it.

Conv1D c_fc (torch.addmm(bias, x, W)), gelu_new written out
(0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), Conv1D c_proj, float32,
under torch.inference_mode(). Same shapes, token counts, weight magnitudes and
timing as bench/bench_ffn.c: the weights are held in several copies
(>= 256 MiB) and the timed calls rotate through them; median seconds per call
after a warm-up. Prints one line per case:

  torch d=768 tokens=1024 threads=2 sec=0.0123 gflops=123.4 disturbed=0.00

(16 d^2 tokens flops per FFN), after a line with the plain matmul's speed
and the BLAS library the process loaded, so that a reader can check the peer
is OpenBLAS (Debian's python3-torch falls back to the reference BLAS, about
2 GFLOP/s, without libopenblas0-pthread):

  torch matmul m=1024 k=768 n=3072 threads=2 gflops=123.4 blas=libopenblasp-r0.3.21.so

Usage: bench_torch.py [--quick]
"""
import math
import os
import statistics
import sys
import time

import torch

from torch_peer import matmul_line

SHAPES = [768, 1024, 1600]
TOKENS = [1, 64, 1024]
MAX_THREADS = 2


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def mlp(x, w):
    h = gelu_new(torch.addmm(w[1], x, w[0]))
    return torch.addmm(w[3], h, w[2])


def make_layers(d, gen):
    h = 4 * d
    per_layer = (2 * d * h + h + d) * 4
    nl = max(2, -(-(256 << 20) // per_layer))
    base = [
        torch.randn(d, h, generator=gen) * (2.0 / math.sqrt(d)),
        torch.randn(h, generator=gen) * 0.3 - 0.3,
        torch.randn(h, d, generator=gen) * (0.5 / math.sqrt(h)),
        torch.randn(d, generator=gen) * 0.02,
    ]
    return [[t.clone() for t in base] for _ in range(nl)]


def cpu_snapshot():
    """(busy CPU seconds of the machine, this process's CPU seconds, wall)."""
    with open("/proc/stat") as f:
        v = [int(a) for a in f.readline().split()[1:9]]
    tick = os.sysconf("SC_CLK_TCK")
    t = os.times()
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / tick, t.user + t.system, time.perf_counter()


def other_load_since(a, threads=0):
    """Share of the CPUs used by other processes since snapshot a, beyond the
    CPUs a run on `threads` threads leaves free (0: all)."""
    b = cpu_snapshot()
    wall = b[2] - a[2]
    other = (b[0] - a[0]) - (b[1] - a[1])
    if 0 < threads < os.cpu_count():
        other -= (os.cpu_count() - threads) * wall
    return max(0.0, other / (wall * os.cpu_count())) if wall > 0 else 0.0


QUIET = 0.05  # as bench_ffn.c: a measurement with more load elsewhere is redone
wait_budget = [60.0]


def wait_quiet():
    while True:
        a = cpu_snapshot()
        time.sleep(0.3)
        if other_load_since(a) < QUIET or wait_budget[0] <= 0:
            return
        wait_budget[0] -= 0.3


def time_ffn_quiet(layers, x, budget, threads):
    for _ in range(3):
        wait_quiet()
        a = cpu_snapshot()
        sec = time_ffn(layers, x, budget)
        dist = other_load_since(a, threads)
        if dist < QUIET or wait_budget[0] <= 0:
            break
    return sec, dist


def time_ffn(layers, x, budget):
    t0 = time.perf_counter()
    mlp(x, layers[-1])  # warm-up
    est = time.perf_counter() - t0
    if est < 0.02:
        t0 = time.perf_counter()
        for w in layers:
            mlp(x, w)
        est = (time.perf_counter() - t0) / len(layers)
    reps = min(201, max(5, int(budget / est)))
    v = []
    for r in range(reps):
        a = time.perf_counter()
        mlp(x, layers[r % len(layers)])
        v.append(time.perf_counter() - a)
    return statistics.median(v)


def main():
    budget = 0.15 if "--quick" in sys.argv[1:] else 0.6
    gen = torch.Generator().manual_seed(0)
    print("torch version=%s threads=%d mkldnn=%s" % (torch.__version__, torch.get_num_threads(),
                                                       torch.backends.mkldnn.is_available()), flush=True)
    with torch.inference_mode():
        for threads in range(MAX_THREADS, 0, -1):
            print(matmul_line(threads, gen), flush=True)
    with torch.inference_mode():
        for d in SHAPES:
            layers = make_layers(d, gen)
            for t in TOKENS:
                x = torch.randn(t, d, generator=gen)
                for threads in range(MAX_THREADS, 0, -1):
                    if threads != MAX_THREADS and t != 1024:
                        continue
                    torch.set_num_threads(threads)
                    sec, dist = time_ffn_quiet(layers, x, budget, threads)
                    gflops = 16.0 * d * d * t / sec * 1e-9
                    print("torch d=%d tokens=%d threads=%d sec=%.6f gflops=%.2f disturbed=%.2f"
                          % (d, t, threads, sec, gflops, dist), flush=True)
            del layers


if __name__ == "__main__":
    main()
