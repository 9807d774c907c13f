#!/usr/bin/python3
"""Write the torch.save fixtures of fixtures/torch/ from fixtures/tiny.

gpt2ffn reads torch.save zip checkpoints with its own zip reader and a
restricted pickle machine (formats/g2f_torch.h).  These files are what its
tests read: the same tiny 4-layer GPT-2 (n_embd 64, n_inner 256) as
fixtures/tiny/model.safetensors, saved the ways real trainers save it.

  hf_tiny.bin            the full HF state dict (Conv1D [in, out], keys with the
                         `transformer.` prefix), like pytorch_model.bin
  nanogpt_ckpt.pt        nanoGPT's checkpoint dict {'model', 'optimizer',
                         'model_args', 'iter_num', 'best_val_loss', 'config'};
                         'model' holds `_orig_mod.transformer.h.N.mlp.c_fc.weight`
                         (torch.compile's prefix) in nn.Linear [out, in] layout
  mingpt_ckpt.pt         {'model_state': `blocks.N.mlp.c_fc.weight` Linear layout
                         with biases, 'config', 'stoi', 'itos'}
  nobias_ckpt.pt         nanoGPT style with bias=False: no FFN or ln_2 biases
  hf_tiny_noncontig.bin  HF layout, layer 0's c_fc.weight saved as a transposed
                         (non-contiguous) view: the reader must refuse it
  nanogpt_full_ckpt.pt   nanoGPT's checkpoint dict with the whole model (wte, wpe,
                         every block's ln_1, attn.c_attn, attn.c_proj, ln_2, mlp,
                         ln_f, lm_head tied to wte), nn.Linear layout
  mingpt_full_ckpt.pt    the minGPT-style dict with whole blocks (blocks.N.attn.c_attn
                         ...), tok_emb, pos_emb, ln_f, head

To stay under 1 MB each, all but hf_tiny.bin and the two *_full_ckpt.pt hold
only the FFN tensors and ln_2.  The nanoGPT optimizer is a real AdamW with nanoGPT's two parameter groups
(2-D weights decayed, the rest not) over those tensors, stepped once with
gradients on the 1-D tensors only, so its state holds exp_avg/exp_avg_sq for
those alone (a full state would triple the file).

Usage: scripts/export_torch_fixtures.py [--checkpoint fixtures/tiny] [--out fixtures/torch]
Needs torch and numpy (Debian python3-torch); no transformers.  The output is
deterministic (torch.save's zip has fixed timestamps; no randomness here).
"""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_fixtures import read_safetensors, resolve_checkpoint  # noqa: E402

N_LAYER_KEYS = ("ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                "mlp.c_proj.weight", "mlp.c_proj.bias")


def layers_of(sd):
    return sorted({int(k.split(".")[2]) for k in sd if k.startswith("transformer.h.")})


def ffn_subset(sd, prefix, linear, bias=True):
    """{prefix + 'N.<key>': tensor} for the FFN and ln_2 of every layer.
    linear=True transposes the Conv1D [in, out] weights to nn.Linear [out, in]."""
    out = collections.OrderedDict()
    for L in layers_of(sd):
        for k in N_LAYER_KEYS:
            if not bias and k.endswith(".bias"):
                continue
            t = sd["transformer.h.%d.%s" % (L, k)]
            if linear and k.endswith("weight") and t.dim() == 2:
                t = t.t().contiguous()
            out["%s%d.%s" % (prefix, L, k)] = t.clone()
    return out


def adamw_state(params):
    """A real AdamW state_dict with nanoGPT's two groups, stepped once with
    gradients on the 1-D tensors only (the 2-D ones get no state)."""
    decay = [p for p in params if p.dim() >= 2]
    nodecay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95))
    for p in nodecay:
        p.grad = torch.full_like(p, 0.01)
    opt.step()
    return opt.state_dict()


def nanogpt(sd, bias):
    model = ffn_subset(sd, "_orig_mod.transformer.h.", linear=True, bias=bias)
    params = [torch.nn.Parameter(t.clone()) for t in model.values()]
    n_embd = sd["transformer.wte.weight"].shape[1]
    model_args = dict(n_layer=len(layers_of(sd)), n_head=4, n_embd=int(n_embd), block_size=32,
                      bias=bias, vocab_size=96, dropout=0.0)
    return {
        "model": model,
        "optimizer": adamw_state(params),
        "model_args": model_args,
        "iter_num": 5,
        "best_val_loss": torch.tensor(1.5),
        "config": dict(model_args, learning_rate=6e-4, dataset="shakespeare_char",
                       compile=True, dtype="float32", betas=(0.9, 0.95)),
    }


CONV1D_WEIGHTS = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
BLOCK_KEYS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
              "attn.c_proj.bias") + N_LAYER_KEYS


def block_subset(sd, prefix):
    """{prefix + 'N.<key>': tensor} for every tensor of every block, Conv1D
    weights transposed to nn.Linear [out, in] (nanoGPT's and minGPT's
    c_attn is nn.Linear(d, 3d): weight [3d, d])."""
    out = collections.OrderedDict()
    for L in layers_of(sd):
        for k in BLOCK_KEYS:
            t = sd["transformer.h.%d.%s" % (L, k)]
            if k in CONV1D_WEIGHTS:
                t = t.t().contiguous()
            out["%s%d.%s" % (prefix, L, k)] = t.clone()
    return out


def nanogpt_full(sd):
    """nanoGPT's whole GPT as train.py saves it (torch.compile'd, so under
    `_orig_mod.`), in its state_dict order: wte, wpe, the blocks, ln_f and
    lm_head.weight, which nanoGPT ties to wte (one shared storage in the
    file). No attn.bias mask buffer: nanoGPT registers it only without
    flash attention (torch < 2.0)."""
    p = "_orig_mod."
    model = collections.OrderedDict()
    wte = sd["transformer.wte.weight"].clone()
    model[p + "transformer.wte.weight"] = wte
    model[p + "transformer.wpe.weight"] = sd["transformer.wpe.weight"].clone()
    model.update(block_subset(sd, p + "transformer.h."))
    model[p + "transformer.ln_f.weight"] = sd["transformer.ln_f.weight"].clone()
    model[p + "transformer.ln_f.bias"] = sd["transformer.ln_f.bias"].clone()
    model[p + "lm_head.weight"] = wte  # tied: the same tensor
    n_embd = int(wte.shape[1])
    model_args = dict(n_layer=len(layers_of(sd)), n_head=4, n_embd=n_embd, block_size=32, bias=True,
                      vocab_size=int(wte.shape[0]), dropout=0.0)
    params = [torch.nn.Parameter(t.clone()) for k, t in model.items() if not k.endswith("lm_head.weight")]
    return {
        "model": model,
        "optimizer": adamw_state(params),
        "model_args": model_args,
        "iter_num": 5,
        "best_val_loss": torch.tensor(1.5),
        "config": dict(model_args, learning_rate=6e-4, dataset="shakespeare_char",
                       compile=True, dtype="float32", betas=(0.9, 0.95)),
    }


def mingpt_full(sd):
    """The minGPT-style checkpoint of mingpt_ckpt.pt with whole blocks
    (blocks.N.ln_1, attn.c_attn, attn.c_proj, ln_2, mlp) and minGPT's
    model-level tensors: tok_emb.weight, pos_emb [1, block_size, d] (an
    nn.Parameter), ln_f and an untied head.weight (here a copy of wte)."""
    model = collections.OrderedDict()
    model["tok_emb.weight"] = sd["transformer.wte.weight"].clone()
    model["pos_emb"] = sd["transformer.wpe.weight"].clone().unsqueeze(0)
    model.update(block_subset(sd, "blocks."))
    model["ln_f.weight"] = sd["transformer.ln_f.weight"].clone()
    model["ln_f.bias"] = sd["transformer.ln_f.bias"].clone()
    model["head.weight"] = sd["transformer.wte.weight"].clone()
    return {"model_state": model,
            "config": {"n_layer": 4, "n_embd": 64, "n_head": 4, "block_size": 32, "vocab_size": 96},
            "stoi": {"a": 0}, "itos": {0: "a"}}


def mingpt_embedding(sd):
    """mingpt_full_ckpt.pt with the position embedding an nn.Embedding, as minGPT-style models also
    write it (pos_emb.weight [block_size, d], not the [1, block_size, d] parameter)."""
    ck = mingpt_full(sd)
    ck["model_state"]["pos_emb.weight"] = ck["model_state"].pop("pos_emb").squeeze(0).contiguous()
    return ck


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--checkpoint", default=os.path.join(here, "fixtures", "tiny"))
    ap.add_argument("--out", default=os.path.join(here, "fixtures", "torch"))
    a = ap.parse_args(argv)
    tensors, _ = read_safetensors(resolve_checkpoint(a.checkpoint))
    sd = collections.OrderedDict((k, tensors[k]) for k in sorted(tensors))
    os.makedirs(a.out, exist_ok=True)

    def save(obj, name):
        path = os.path.join(a.out, name)
        torch.save(obj, path)
        print("%-24s %7d bytes" % (name, os.path.getsize(path)))

    save(sd, "hf_tiny.bin")
    save(nanogpt(sd, bias=True), "nanogpt_ckpt.pt")
    save(nanogpt(sd, bias=False), "nobias_ckpt.pt")
    save({"model_state": ffn_subset(sd, "blocks.", linear=True),
          "config": {"n_layer": 4, "n_embd": 64, "n_head": 4, "block_size": 32, "vocab_size": 96},
          "stoi": {"a": 0}, "itos": {0: "a"}}, "mingpt_ckpt.pt")
    nc = ffn_subset(sd, "transformer.h.", linear=False)
    w = nc["transformer.h.0.mlp.c_fc.weight"]            # Conv1D [64, 256]
    nc["transformer.h.0.mlp.c_fc.weight"] = w.t().contiguous().t()  # same values, strides (1, 64)
    assert not nc["transformer.h.0.mlp.c_fc.weight"].is_contiguous()
    save(nc, "hf_tiny_noncontig.bin")
    save(nanogpt_full(sd), "nanogpt_full_ckpt.pt")
    save(mingpt_full(sd), "mingpt_full_ckpt.pt")
    save(mingpt_embedding(sd), "mingpt_emb_ckpt.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
