#!/usr/bin/python3
"""Write an llm.c debug state (gpt2_124M_debug_state.bin) for a GPT-2 checkpoint, byte for byte as
karpathy/llm.c train_gpt2.py write_state writes it, for gpt2ffn's state reader
(formats/g2f_llmc_state.h) and fixtures/llmc/.

llm.c's own script cannot run on the tiny checkpoint: its pad_vocab asserts a vocabulary of
50257 ("just being defensive here"), its main needs tiktoken and token shards, and Debian's torch
has no torch._inductor. So this script does what train_gpt2.py does for its debug state, with its
arithmetic and its file layout, written here (no llm.c code is copied):

  model      llm.c's GPT in float32 train mode (it has no dropout): nn.Linear weights [out, in]
             (HF's Conv1D weights transposed), LayerNorm eps 1e-5, causal attention by the
             "manual implementation" (scores * 1/sqrt(hs), masked_fill -inf, softmax), the tanh
             GELU, lm_head tied to wte (vocab_size rows: the logits are not padded)
  batch      B*T+1 tokens; x = tokens[:-1], y = tokens[1:], each viewed (B, T), as its
             DistributedDataLoader.next_batch
  loss       F.cross_entropy(logits.view(-1, V), y.view(-1), ignore_index=-1); loss.backward()
  file       header: 256 int32 zeros with [0] = 20240327, [1] = 2, [2] = B, [3] = T; then x and y
             as int32, the logits (B, T, V) and the loss as float32, then the gradients in
             write_tensors' order (wte, wpe, then per kind all layers: ln_1 w/b, c_attn w/b,
             attn c_proj w/b, ln_2 w/b, c_fc w/b, mlp c_proj w/b, then ln_f w/b) with wte's
             gradient padded by pad_vocab to a multiple of 128 rows (zeros)

--padded-logits writes the logits as (B, T, Vp) instead (zero columns past V), the layout a port
that dumps its own padded buffer would write; gpt2ffn reads both.

With --llmc DIR (a checkout of karpathy/llm.c), the state is also written by llm.c's own
train_gpt2.py: its GPT class and write_state, with torch._inductor stubbed, pad_vocab's
V == 50257 assertion lifted (the same rounding up to 128) and its random init skipped (the
checkpoint's weights are loaded over it), and the two files compared byte for byte (exit 1 if
they differ).

Example
  scripts/export_llmc_state.py --checkpoint fixtures/tiny --out fixtures/llmc/tiny_debug_state.bin
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import types

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_fixtures import load_checkpoint  # noqa: E402  (strips "transformer.")

MAGIC, VERSION, PAD = 20240327, 2, 128
# write_tensors' order: (key under h.L., Conv1D weight to transpose)
LAYER_PARAMS = [("ln_1.weight", False), ("ln_1.bias", False), ("attn.c_attn.weight", True),
                ("attn.c_attn.bias", False), ("attn.c_proj.weight", True), ("attn.c_proj.bias", False),
                ("ln_2.weight", False), ("ln_2.bias", False), ("mlp.c_fc.weight", True),
                ("mlp.c_fc.bias", False), ("mlp.c_proj.weight", True), ("mlp.c_proj.bias", False)]


def llmc_params(w, L):
    """The checkpoint as llm.c's GPT holds it: {llm.c name: leaf tensor requiring grad}."""
    p = {"transformer.wte.weight": w["wte.weight"], "transformer.wpe.weight": w["wpe.weight"],
         "transformer.ln_f.weight": w["ln_f.weight"], "transformer.ln_f.bias": w["ln_f.bias"]}
    for i in range(L):
        for key, conv1d in LAYER_PARAMS:
            t = w["h.%d.%s" % (i, key)]
            p["transformer.h.%d.%s" % (i, key)] = t.t() if conv1d else t
    return {k: v.detach().to(torch.float32).contiguous().requires_grad_(True) for k, v in p.items()}


def gelu_tanh(x):  # llm.c's NewGELU
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(p, x, L, NH):
    """llm.c's GPT.forward with targets: logits (B, T, V), every op as its modules run them."""
    B, T = x.shape
    h = p["transformer.wte.weight"][x] + p["transformer.wpe.weight"][torch.arange(T)]
    C = h.shape[-1]
    mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    for i in range(L):
        g = lambda k: p["transformer.h.%d.%s" % (i, k)]  # noqa: E731
        a = F.layer_norm(h, (C,), g("ln_1.weight"), g("ln_1.bias"))
        q, k, v = F.linear(a, g("attn.c_attn.weight"), g("attn.c_attn.bias")).split(C, dim=2)
        k, q, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (k, q, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        h = h + F.linear(y, g("attn.c_proj.weight"), g("attn.c_proj.bias"))
        m = F.layer_norm(h, (C,), g("ln_2.weight"), g("ln_2.bias"))
        m = F.linear(gelu_tanh(F.linear(m, g("mlp.c_fc.weight"), g("mlp.c_fc.bias"))),
                     g("mlp.c_proj.weight"), g("mlp.c_proj.bias"))
        h = h + m
    h = F.layer_norm(h, (C,), p["transformer.ln_f.weight"], p["transformer.ln_f.bias"])
    return F.linear(h, p["transformer.wte.weight"])


def padded_rows(t, n):
    return t if t.shape[0] == n else F.pad(t, (0, 0, 0, n - t.shape[0]))


def state_bytes(grads, x, y, logits, loss, L, B, T):
    header = np.zeros(256, dtype="<i4")
    header[:4] = [MAGIC, VERSION, B, T]
    f32 = lambda t: t.detach().cpu().to(torch.float32).numpy().astype("<f4").tobytes()  # noqa: E731
    out = [header.tobytes(), x.numpy().astype("<i4").tobytes(), y.numpy().astype("<i4").tobytes(), f32(logits),
           f32(loss), f32(grads["transformer.wte.weight"]), f32(grads["transformer.wpe.weight"])]
    for key, _ in LAYER_PARAMS:
        out += [f32(grads["transformer.h.%d.%s" % (i, key)]) for i in range(L)]
    out += [f32(grads["transformer.ln_f.weight"]), f32(grads["transformer.ln_f.bias"])]
    return b"".join(out)


def batch(V, B, T, seed):
    g = torch.Generator().manual_seed(seed)
    buf = torch.randint(0, V, (B * T + 1,), generator=g)
    return buf[:-1].view(B, T), buf[1:].view(B, T)


def ours(w, cfg, x, y, padded_logits):
    L, NH = cfg["n_layer"], cfg["n_head"]
    p = llmc_params(w, L)
    logits = forward(p, x, L, NH)
    V = logits.shape[-1]
    loss = F.cross_entropy(logits.view(-1, V), y.view(-1), ignore_index=-1)
    loss.backward()
    grads = {k: v.grad for k, v in p.items()}
    Vp = (V + PAD - 1) // PAD * PAD
    grads["transformer.wte.weight"] = padded_rows(grads["transformer.wte.weight"], Vp)
    if padded_logits:
        logits = F.pad(logits, (0, Vp - V))
    return state_bytes(grads, x, y, logits, loss, L, *x.shape), loss.item(), V, Vp


def llmc_own(llmc_dir, w, cfg, x, y, tmp):
    """The same state by llm.c's train_gpt2.py (its GPT and write_state), into tmp."""
    ind, conf = types.ModuleType("torch._inductor"), types.ModuleType("torch._inductor.config")
    ind.config = conf
    sys.modules.setdefault("torch._inductor", ind)
    sys.modules.setdefault("torch._inductor.config", conf)
    spec = importlib.util.spec_from_file_location("llmc_train_gpt2", os.path.join(llmc_dir, "train_gpt2.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    # pad_vocab without its V == 50257 assertion: the same rounding up to a multiple of 128
    m.pad_vocab = lambda t, multiple=PAD, value=0: padded_rows(t, (t.shape[0] + multiple - 1) // multiple * multiple)
    # its random init (normal_(generator=...) needs torch >= 2) is overwritten by the checkpoint anyway
    m.GPT._init_weights = lambda self, module: None
    V = w["wte.weight"].shape[0]
    conf_ = m.GPTConfig(block_size=w["wpe.weight"].shape[0], vocab_size=V, n_layer=cfg["n_layer"],
                        n_head=cfg["n_head"], n_embd=cfg["n_embd"])
    model = m.GPT(conf_)
    sd = {k: v.detach() for k, v in llmc_params(w, cfg["n_layer"]).items()}
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and all(k.endswith(".attn.bias") for k in missing), (missing, unexpected)
    model.train()
    logits, loss = model(x, y)
    loss.backward()
    m.write_state(model, x, y, logits, loss, tmp)
    with open(tmp, "rb") as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="fixtures/tiny", help="folder with model.safetensors + config.json")
    ap.add_argument("--batch", type=int, default=4, help="B (llm.c's test: 4)")
    ap.add_argument("--seq-len", type=int, default=16, help="T, at most the checkpoint's positions")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--padded-logits", action="store_true", help="logits (B, T, Vp) instead of llm.c's (B, T, V)")
    ap.add_argument("--llmc", help="a karpathy/llm.c checkout: also write the state with its train_gpt2.py and "
                                   "compare the bytes")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    torch.manual_seed(42)
    torch.set_num_threads(1)  # a fixed order of every reduction
    w = load_checkpoint(a.checkpoint)
    with open(os.path.join(a.checkpoint, "config.json")) as f:
        cfg = json.load(f)
    V = w["wte.weight"].shape[0]
    x, y = batch(V, a.batch, a.seq_len, a.seed)
    data, loss, V, Vp = ours(w, cfg, x, y, a.padded_logits)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "wb") as f:
        f.write(data)
    print("wrote %s (B=%d T=%d V=%d Vp=%d, logits (B, T, %d), loss %.9g, %d bytes)"
          % (a.out, a.batch, a.seq_len, V, Vp, Vp if a.padded_logits else V, loss, len(data)))
    if a.llmc:
        theirs = llmc_own(a.llmc, w, cfg, x, y, a.out + ".llmc.tmp")
        os.remove(a.out + ".llmc.tmp")
        if a.padded_logits:
            print("llm.c's write_state writes (B, T, V) logits: not compared with --padded-logits")
        elif theirs == data:
            print("llm.c's own train_gpt2.py write_state wrote the same %d bytes" % len(theirs))
        else:
            n = next((i for i in range(min(len(data), len(theirs))) if data[i] != theirs[i]), None)
            print("llm.c's write_state differs: %d vs %d bytes, first difference at byte %s"
                  % (len(theirs), len(data), n))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
