#!/usr/bin/python3
"""Reference fixtures for the checkpoint formats whose weights are not
fixtures/tiny's exactly, so each format has a verify that passes:

  fixtures/formats2/tiny_f16_ref.safetensors  for tiny_f16.gguf: weights rounded
      to float16 (GGUF keeps 1-D tensors, the biases, in F32), computed in fp32
  fixtures/torch/nobias_ref.safetensors  for nobias_ckpt.pt: no c_fc/c_proj
      biases (nanoGPT bias=False)
  fixtures/torch/sharded/  hf_tiny.bin's FFN tensors (plus ln_2) split into two
      torch.save shards with a pytorch_model.bin.index.json, as HF writes them

Both use the inputs of fixtures/tiny_tanh.safetensors (--shape 2,6 --seed 1).
Usage: scripts/export_format_refs.py   (from the repository root)
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export_fixtures import read_safetensors, write_safetensors  # noqa: E402

EXPORT = [sys.executable, os.path.join(HERE, "export_fixtures.py"), "fixture", "--shape", "2,6", "--seed", "1"]


def main():
    tensors, meta = read_safetensors("fixtures/tiny/model.safetensors")
    with tempfile.TemporaryDirectory() as tmp:
        rounded = {n: (t.half().float() if n.endswith(".weight") and ".mlp." in n else t) for n, t in tensors.items()}
        write_safetensors(os.path.join(tmp, "model.safetensors"), rounded, meta)
        subprocess.run(EXPORT + ["--checkpoint", tmp, "--out", "fixtures/formats2/tiny_f16_ref.safetensors"],
                       check=True)
    subprocess.run(EXPORT + ["--checkpoint", "fixtures/tiny", "--mutate", "fc_bias_missing", "--mutate",
                             "proj_bias_missing", "--out", "fixtures/torch/nobias_ref.safetensors"], check=True)


def sharded():
    import json

    import torch
    sd = torch.load("fixtures/torch/hf_tiny.bin", map_location="cpu")
    keys = sorted(k for k in sd if ".mlp." in k or ".ln_2." in k)
    out = "fixtures/torch/sharded"
    os.makedirs(out, exist_ok=True)
    halves = [keys[: len(keys) // 2], keys[len(keys) // 2:]]
    weight_map, total = {}, 0
    for i, part in enumerate(halves):
        name = "pytorch_model-%05d-of-%05d.bin" % (i + 1, len(halves))
        torch.save({k: sd[k].clone() for k in part}, os.path.join(out, name))
        for k in part:
            weight_map[k] = name
            total += sd[k].numel() * sd[k].element_size()
    with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    print("wrote", out)


if __name__ == "__main__":
    sharded()
    main()
