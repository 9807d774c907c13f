#!/usr/bin/env python3
"""What every PyTorch peer of scripts/bench shares: the thread count and the
check that the peer is OpenBLAS.

Each peer runs on as many threads as gpt2ffn does by default (OpenMP's
default: every CPU this process may run on), unless told otherwise with
--threads N: torch's own default is its count of physical cores, which on
some virtual machines is 1 while gpt2ffn uses 2 (Debian's torch 1.13 on a
2-CPU AMD EPYC guest), and a peer on half the CPUs makes every ratio
meaningless. Run as a script, prints the plain matmul's speed on that many
threads and the BLAS library loaded, for the bench's tables:

  torch matmul m=1024 k=768 n=3072 threads=2 gflops=123.4 blas=libopenblasp-r0.3.21.so
"""
import os
import statistics
import sys
import time

import torch


def default_threads():
    """The CPUs this process may run on: gpt2ffn's OpenMP default."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def set_threads(args):
    """Takes --threads N out of args (a list) and sets torch's thread count
    to it, or to default_threads(); returns the count."""
    n = default_threads()
    if "--threads" in args:
        i = args.index("--threads")
        n = int(args[i + 1])
        del args[i:i + 2]
    torch.set_num_threads(n)
    return n


def blas_library():
    """The BLAS shared library mapped into this process (after a matmul), with
    OpenBLAS's core (the kernel it chose for this CPU), or "unknown"."""
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if "blas" in base or "mkl" in base:
                paths.add(path)
    names = []
    for path in sorted(paths):
        name = os.path.basename(path)
        if "openblas" in name:
            try:
                import ctypes
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                name += "(core " + lib.openblas_get_corename().decode() + ")"
            except (OSError, AttributeError):
                pass
        names.append(name)
    return ",".join(names) or "unknown"


def matmul_gflops(threads, gen):
    """Median GFLOP/s of (1024 x 768) @ (768 x 3072), GPT-2 small's c_fc at 1024 tokens."""
    torch.set_num_threads(threads)
    a = torch.randn(1024, 768, generator=gen)
    b = torch.randn(768, 3072, generator=gen)
    torch.mm(a, b)
    v = []
    for _ in range(9):
        t0 = time.perf_counter()
        torch.mm(a, b)
        v.append(time.perf_counter() - t0)
    return 2.0 * 1024 * 768 * 3072 / statistics.median(v) * 1e-9


def matmul_line(threads, gen):
    return "torch matmul m=1024 k=768 n=3072 threads=%d gflops=%.1f blas=%s" % (
        threads, matmul_gflops(threads, gen), blas_library())


if __name__ == "__main__":
    args = sys.argv[1:]
    n = set_threads(args)
    with torch.inference_mode():
        print(matmul_line(n, torch.Generator().manual_seed(0)), flush=True)
