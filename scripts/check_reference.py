#!/usr/bin/python3
"""Checks of the exporter's reference arithmetic (scripts/gpt2_reference.py).

Not part of the C tests (they never run Python); run by hand after changing the
exporter:

  scripts/check_reference.py selfcheck [--checkpoint fixtures/tiny]
      The portable block/model arithmetic against torch's own building blocks on the
      clean computation: F.layer_norm, causal attention (F.scaled_dot_product_attention
      with is_causal=True where this torch has it, else softmax(QK^T/sqrt(d)+mask)V with
      torch.matmul; and F.multi_head_attention_forward with a causal mask, which also
      gives the per-head probabilities), F.gelu(approximate='tanh'), torch.addmm; then a
      whole forward written with those ops from the same ids. Prints max |difference|
      per stage (absolute, and relative to the largest |value|); exit 1 when one is
      beyond float32 rounding (relative 1e-5).
      Also the GELU table of gelu_f16_table: how many of the f16 inputs in (-10, 10)
      get another table entry when tanhf is torch's float32 tanh or when
      1 + 0.044715*x*x is contracted to an FMA (as a compiler may do in ggml).
  scripts/check_reference.py table [--by-layer] CLEAN FILE...
      Markdown rows: for each FILE, max |FILE - CLEAN| per stage (the maximum over the
      layers, or per layer with --by-layer); transformer. prefixes dropped and ln_2.out
      read as mlp.in; stages that are identical are left out.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as ref  # noqa: E402
from export_fixtures import (load_checkpoint, load_config, read_safetensors,  # noqa: E402
                             realistic_hidden)

TOL_REL = 1e-5


def causal_attention_torch(a, W, H):
    """q/k/v from torch.addmm, attention by SDPA (if present) or matmul+softmax."""
    B, T, d = a.shape
    dh = d // H
    qkv = torch.addmm(W["attn.c_attn.bias"], a.reshape(-1, d), W["attn.c_attn.weight"]).reshape(B, T, 3 * d)
    q, k, v = (t.reshape(B, T, H, dh).transpose(1, 2) for t in qkv.split(d, -1))
    if hasattr(F, "scaled_dot_product_attention"):
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        how = "F.scaled_dot_product_attention(is_causal=True)"
    else:
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        s = s.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
        z = torch.matmul(torch.softmax(s, -1), v)
        how = "softmax(QK^T/sqrt(d_head) + causal -inf) V (torch %s has no SDPA)" % torch.__version__
    merged = z.transpose(1, 2).reshape(B, T, d)
    out = torch.addmm(W["attn.c_proj.bias"], merged.reshape(-1, d), W["attn.c_proj.weight"]).reshape(B, T, d)
    return qkv, merged, out, how


def mha_torch(a, W, H):
    """F.multi_head_attention_forward with a causal mask: (attn.out, probs [B,H,T,T])."""
    B, T, d = a.shape
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    x = a.transpose(0, 1)  # [T, B, d]
    out, probs = F.multi_head_attention_forward(
        x, x, x, d, H, W["attn.c_attn.weight"].t(), W["attn.c_attn.bias"], None, None, False, 0.0,
        W["attn.c_proj.weight"].t(), W["attn.c_proj.bias"], training=False, need_weights=True,
        attn_mask=mask, average_attn_weights=False)
    return out.transpose(0, 1), probs


def report(rows, name, got, want):
    diff = (got - want).abs().max().item()
    scale = want.abs().max().item() or 1.0
    rows.append((name, diff, diff / scale))


def selfcheck(a):
    torch.set_num_threads(1)
    weights = load_checkpoint(a.checkpoint)
    cfg = load_config(a.checkpoint)
    H, eps = cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    n_layer = cfg["n_layer"]
    ar = ref.Arith("portable")
    rows, how = [], ""
    with torch.no_grad():
        # 1. the block, stage by stage, from its own recorded inputs
        g = torch.Generator().manual_seed(1)
        x = 0.1 * realistic_hidden((2, 6), weights["wte.weight"].shape[1], g)
        for L in range(n_layer):
            st = ref.block(ar, x, weights, L, H, eps, "tanh", {})
            W = ref.block_weights(weights, L)
            d = x.shape[-1]
            report(rows, "h.%d.ln_1.out  vs F.layer_norm" % L, st["ln_1.out"],
                   F.layer_norm(st["in"], (d,), W["ln_1.weight"], W["ln_1.bias"], eps))
            qkv, merged, out, how = causal_attention_torch(st["ln_1.out"], W, H)
            report(rows, "h.%d.attn.qkv  vs torch.addmm" % L, st["attn.qkv"], qkv)
            report(rows, "h.%d.attn.merged vs SDPA/matmul" % L, st["attn.merged"], merged)
            report(rows, "h.%d.attn.out  vs SDPA/matmul path" % L, st["attn.out"], out)
            mout, mprobs = mha_torch(st["ln_1.out"], W, H)
            report(rows, "h.%d.attn.probs vs F.multi_head_attention_forward" % L, st["attn.probs"], mprobs)
            report(rows, "h.%d.attn.out  vs F.multi_head_attention_forward" % L, st["attn.out"], mout)
            report(rows, "h.%d.mid       vs in + attn.out" % L, st["mid"], st["in"] + st["attn.out"])
            report(rows, "h.%d.mlp.in    vs F.layer_norm" % L, st["mlp.in"],
                   F.layer_norm(st["mid"], (d,), W["ln_2.weight"], W["ln_2.bias"], eps))
            pre = torch.addmm(W["mlp.c_fc.bias"], st["mlp.in"].reshape(-1, d), W["mlp.c_fc.weight"])
            report(rows, "h.%d.mlp.pre   vs torch.addmm" % L, st["mlp.pre"].reshape(-1, pre.shape[1]), pre)
            report(rows, "h.%d.mlp.act   vs F.gelu(tanh)" % L, st["mlp.act"],
                   F.gelu(st["mlp.pre"], approximate="tanh"))
            mo = torch.addmm(W["mlp.c_proj.bias"], st["mlp.act"].reshape(-1, pre.shape[1]), W["mlp.c_proj.weight"])
            report(rows, "h.%d.mlp.out   vs torch.addmm" % L, st["mlp.out"].reshape(-1, d), mo)
            report(rows, "h.%d.out       vs mid + mlp.out" % L, st["out"], st["mid"] + st["mlp.out"])
            x = st["out"]
        # 2. the whole model from ids, chained, against a forward made of torch's ops
        ids = torch.randint(0, weights["wte.weight"].shape[0], (2, 6), generator=g)
        ms = ref.model(ar, ids, weights, H, eps, "tanh", {}, {}, n_layer)
        h = weights["wte.weight"][ids] + weights["wpe.weight"][torch.arange(6)]
        report(rows, "model embed    vs wte[ids] + wpe[pos]", ms["embed"], h)
        d = h.shape[-1]
        for L in range(n_layer):
            W = ref.block_weights(weights, L)
            a_ = F.layer_norm(h, (d,), W["ln_1.weight"], W["ln_1.bias"], eps)
            _, _, att, _ = causal_attention_torch(a_, W, H)
            mid = h + att
            m_ = F.layer_norm(mid, (d,), W["ln_2.weight"], W["ln_2.bias"], eps)
            act = F.gelu(torch.addmm(W["mlp.c_fc.bias"], m_.reshape(-1, d), W["mlp.c_fc.weight"]),
                         approximate="tanh")
            h = mid + torch.addmm(W["mlp.c_proj.bias"], act, W["mlp.c_proj.weight"]).reshape(mid.shape)
            report(rows, "model h.%d.out  vs torch forward (chained)" % L, ms["h.%d.out" % L], h)
        y = F.layer_norm(h, (d,), weights["ln_f.weight"], weights["ln_f.bias"], eps)
        report(rows, "model ln_f.out vs torch forward (chained)", ms["ln_f.out"], y)
        logits = y @ weights.get("lm_head.weight", weights["wte.weight"]).t()
        report(rows, "model logits   vs torch forward (chained)", ms["logits"], logits)
        # 3. Arith("blas") against Arith("portable") on the same block
        xb = 0.1 * realistic_hidden((2, 6), d, torch.Generator().manual_seed(1))
        sp = ref.block(ar, xb, weights, 0, H, eps, "tanh", {})
        sb = ref.block(ref.Arith("blas"), xb, weights, 0, H, eps, "tanh", {})
        for k in ("attn.probs", "attn.out", "mlp.act", "out"):
            report(rows, "h.0.%s portable vs blas arith" % k, sp[k], sb[k])
    print("attention reference: %s" % how)
    print("%-52s %12s %12s" % ("stage", "max |diff|", "relative"))
    bad = 0
    for name, dv, rel in rows:
        flag = "" if rel <= TOL_REL else "  <-- beyond float32 rounding"
        bad += bool(flag)
        print("%-52s %12.3g %12.3g%s" % (name, dv, rel, flag))
    gelu_table_check(ar)
    return 1 if bad else 0


def gelu_table_check(ar):
    bits = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16)
    x = bits.view(torch.float16).to(torch.float32)
    x = x[torch.isfinite(x) & (x > -10) & (x < 10)]
    base = ref.round_f16(ar.gelu_ggml(x))
    s = torch.tensor(0.79788456080286535587989211986876, dtype=torch.float32)
    A = torch.tensor(0.044715, dtype=torch.float32)
    inner32 = (s * x) * (1.0 + (A * x) * x)
    alt_tanh = ref.round_f16((0.5 * x) * (1.0 + torch.tanh(inner32)))
    fma = ((A * x).double() * x.double() + 1.0).float()  # 1 + (A*x)*x with one rounding
    alt_fma = ref.round_f16((0.5 * x) * (1.0 + ar.tanh((s * x) * fma)))
    n = x.numel()
    print("gelu_f16_table: %d f16 inputs in (-10, 10); entries that change with torch's float32 "
          "tanh: %d, with an FMA in 1 + 0.044715*x*x: %d (max change %.3g)"
          % (n, int((alt_tanh != base).sum()), int((alt_fma != base).sum()),
             max((alt_tanh - base).abs().max().item(), (alt_fma - base).abs().max().item())))


def _norm(name):
    if name.startswith("transformer."):
        name = name[len("transformer."):]
    return name.replace(".ln_2.out", ".mlp.in")


def table(a):
    clean = {_norm(k): v for k, v in read_safetensors(a.clean)[0].items()}
    for f in a.files:
        t = {_norm(k): v for k, v in read_safetensors(f)[0].items()}
        per, common = {}, 0
        for k, v in sorted(t.items(), key=lambda kv: kv[0].split(".")[1:2] + [kv[0]]):
            if k not in clean or v.dtype == torch.int64:
                continue
            common += 1
            layered = k.startswith("h.") or k.startswith("blocks.")
            stage = k if (a.by_layer or not layered) else k.split(".", 2)[2]
            dv = (v - clean[k]).abs()
            if not torch.isfinite(dv).all():
                per[stage] = "NaN"
            elif per.get(stage) != "NaN":
                per[stage] = max(per.get(stage, 0.0), dv.max().item())
        cells = ["%s %s" % (s, v if v == "NaN" else "%.2g" % v) for s, v in per.items() if v != 0.0]
        print("| `%s` | %s |" % (os.path.basename(f), ", ".join(cells) or
                                 ("identical" if common else "no common tensors")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("selfcheck")
    s.add_argument("--checkpoint", default="fixtures/tiny")
    t = sub.add_parser("table")
    t.add_argument("--by-layer", action="store_true", help="one column per layer's stage")
    t.add_argument("clean")
    t.add_argument("files", nargs="+")
    a = ap.parse_args()
    sys.exit(selfcheck(a) if a.cmd == "selfcheck" else table(a))


if __name__ == "__main__":
    main()
