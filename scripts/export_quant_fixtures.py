#!/usr/bin/python3
"""Checkpoint for the K-quant fixtures (fixtures/quant/k256/).

ggml's K-quants (Q4_K, Q5_K, Q6_K) quantize rows in super-blocks of 256 values,
so both n_embd (the rows of ffn_up) and n_inner (the rows of ffn_down) must be
multiples of 256; the bundled tiny checkpoint has n_embd 64. This writes a
synthetic GPT-2 (scripts/export_fixtures.py synth: trained-like magnitudes) with
n_embd 256, n_inner 512 and one layer, keeping only the tensors gpt2ffn and the
GGUF exporter read (wte, ln_2, the FFN), so the committed folder stays small.

Subcommands
  checkpoint --out DIR [--n-embd 256] [--n-inner 512] [--layers 1] [--seed 3] [--dtype F16]
        DIR/model.safetensors + DIR/config.json. --dtype F16 stores the weights as
        float16 (the values every other fixture is made from, so exact; half the bytes).

Example (scripts/make_fixtures runs this, then the GGUF exporter on DIR):
  scripts/export_quant_fixtures.py checkpoint --out fixtures/quant/k256
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_fixtures as ef  # noqa: E402

KEEP = ("wte.weight", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
        "mlp.c_proj.weight", "mlp.c_proj.bias")


def cmd_checkpoint(a):
    tmp = tempfile.mkdtemp(prefix="g2f_quant_")
    try:
        ef.main(["synth", "--out", tmp, "--layers", str(a.layers), "--n-embd", str(a.n_embd),
                 "--n-inner", str(a.n_inner), "--vocab", "16", "--n-ctx", "8", "--seed", str(a.seed)])
        tensors, meta = ef.read_safetensors(os.path.join(tmp, "model.safetensors"))
        kept = {k: v for k, v in tensors.items() if k.endswith(KEEP)}
        os.makedirs(a.out, exist_ok=True)
        ef.write_safetensors(os.path.join(a.out, "model.safetensors"), kept, meta, a.dtype)
        with open(os.path.join(tmp, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
    finally:
        shutil.rmtree(tmp)
    print("wrote %s (%d tensors of %d, %s)" % (a.out, len(kept), len(tensors), a.dtype))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("checkpoint", help="the small synthetic checkpoint with rows of 256")
    c.add_argument("--out", required=True)
    c.add_argument("--n-embd", type=int, default=256)
    c.add_argument("--n-inner", type=int, default=512)
    c.add_argument("--layers", type=int, default=1)
    c.add_argument("--seed", type=int, default=3)
    c.add_argument("--dtype", choices=["F32", "F16"], default="F16")
    c.set_defaults(fn=cmd_checkpoint)
    a = p.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
