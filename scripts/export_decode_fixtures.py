#!/usr/bin/python3
"""Generation fixtures for gpt2ffn's decode checks (docs/decode.md), written
into fixtures/decode/gen/ by a port of GPT-2 with a KV cache in PyTorch.

The port is HF GPT2LMHeadModel's arithmetic in float32 eager (addmm, the
causal mask as finfo.min, softmax, tanh GELU; HF's GPT2Attention with
layer_past: the past keys and values concatenated with the new ones),
generating greedily: the prompt in one forward that returns every layer's
keys and values, then one token per step against them. It shares no code
with the C decoder. Each KV-cache bug is injected where a port makes it:

  cache_position_reset   decode steps at position 0
  cache_not_appended     a decode step's keys and values never stored
  cache_offset:K         a preallocated cache (zeros) whose past length is K
                         off from the first decode step on (positions too)
  cache_k_scaled         keys stored multiplied by 1/sqrt(d_head), the
                         scores still scaled
  cache_kv_before_bias   keys and values stored from c_attn without its bias
  cache_kv_swapped       the key cache holds the values and vice versa
  padding_positions      a left-padded batch whose positions count the
                         padding (HF's are the attention mask's cumsum - 1)

and bugs of every block, which a generation shows only through its tokens:

  gelu_erf               the exact erf GELU (torch's F.gelu) instead of tanh
  attn_scale_missing     the scores not divided by sqrt(d_head)
  qkv_order_kqv          c_attn's output split as k, q, v

The clean batch with left padding is HF's generate(): attention_mask, the
position ids from its cumulative sum (masked_fill(mask == 0, 1)), the mask
extended by ones per step. The near-tie fixture runs on a small model of
its own (fixtures/decode/near_tie) with two tokens whose logits differ by
far less than float32 rounding at a step: the port takes the other one.

Usage: scripts/export_decode_fixtures.py   (from anywhere; rewrites the files)
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_fixtures as ef  # noqa: E402

ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "fixtures", "decode", "gen")
PRODUCER = "scripts/export_decode_fixtures.py"


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Port:
    """GPT-2 with a KV cache; bug names one of the module docstring's."""

    def __init__(self, ck, bug=None, offset=0):
        self.w = ef.load_checkpoint(ck)
        cfg = ef.load_config(ck)
        self.d, self.H, self.L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.n_ctx = cfg["n_positions"]
        self.bug, self.offset = bug, offset
        self.head = self.w.get("lm_head.weight", self.w["wte.weight"])

    def ln(self, x, p):
        return torch.nn.functional.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], self.eps)

    def heads(self, t):  # (B, n, d) -> (B, H, n, dh)
        B, n, _ = t.shape
        return t.view(B, n, self.H, self.d // self.H).transpose(1, 2)

    def attend(self, q, k, v, keymask):
        """q (B, H, n, dh) against k, v (B, H, S, dh); keymask (B, n, S) True where seen."""
        s = torch.matmul(q, k.transpose(-1, -2))
        if self.bug != "attn_scale_missing":
            s = s / math.sqrt(self.d // self.H)
        s = torch.where(keymask[:, None], s, torch.finfo(s.dtype).min)
        z = torch.matmul(torch.softmax(s, dim=-1), v)
        B, _, n, _ = z.shape
        return z.transpose(1, 2).reshape(B, n, self.d)

    def forward(self, ids, pos, cache, keymask, decode, hidden=False):
        """ids, pos (B, n); cache: per layer [k, v] (B, H, S, dh), updated; keymask (B, n, S + n).
        The logits (B, n, V), or with hidden ln_f's output."""
        w = self.w
        x = w["wte.weight"][ids] + w["wpe.weight"][pos]
        for L in range(self.L):
            p = "h.%d." % L
            a = self.ln(x, p + "ln_1")
            W, b = w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]
            nb = torch.matmul(a, W)
            qkv = nb + b
            q, k, v = (self.heads(t) for t in qkv.split(self.d, dim=2))
            if self.bug == "qkv_order_kqv":  # k, q, v = qkv.split(d)
                k, q = q, k
            ks, vs = k, v  # what the cache stores
            if self.bug == "cache_kv_before_bias":
                _, ks, vs = (self.heads(t) for t in nb.split(self.d, dim=2))
            if self.bug == "cache_k_scaled":
                ks = k / math.sqrt(self.d // self.H)
            if self.bug == "cache_kv_swapped":
                ks, vs = v, k
            pk, pv = cache[L]
            z = self.attend(q, torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2), keymask)
            if not (decode and self.bug == "cache_not_appended"):
                cache[L] = [torch.cat([pk, ks], dim=2), torch.cat([pv, vs], dim=2)]
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], z.reshape(-1, self.d),
                                w[p + "attn.c_proj.weight"]).view_as(x)
            gelu = torch.nn.functional.gelu if self.bug == "gelu_erf" else gelu_tanh
            hdn = gelu(torch.matmul(self.ln(x, p + "ln_2"), w[p + "mlp.c_fc.weight"]) + w[p + "mlp.c_fc.bias"])
            x = x + torch.matmul(hdn, w[p + "mlp.c_proj.weight"]) + w[p + "mlp.c_proj.bias"]
        y = self.ln(x, "ln_f")
        return y if hidden else torch.matmul(y, self.head.t())

    def empty_cache(self, B):
        z = torch.zeros(B, self.H, 0, self.d // self.H)
        return [[z, z] for _ in range(self.L)]

    def generate(self, prompt, N, mask=None, choose=None):
        """Greedy: prompt (B, T0) with mask (B, T0) or None; choose(k, logits) may override a row's token.
        Returns (generated (B, N), step logits (B, N, V))."""
        B, T0 = prompt.shape
        mask = torch.ones(B, T0, dtype=torch.long) if mask is None else mask
        if self.bug == "padding_positions":
            pos = torch.arange(T0).expand(B, T0)
        else:  # HF: cumsum - 1, padding at 1
            pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        keymask = (torch.ones(T0, T0).tril().bool()[None] & mask.bool()[:, None, :])
        cache = self.empty_cache(B)
        if self.bug == "cache_offset":
            return self.generate_buffer(prompt, N, mask, pos, keymask)
        z = self.forward(prompt, pos, cache, keymask, False)[:, -1]
        gen, steps = [], []
        for k in range(N):
            t = z.argmax(-1)
            if choose:
                t = choose(k, z, t)
            gen.append(t)
            steps.append(z)
            if k + 1 == N:
                break
            mask = torch.cat([mask, torch.ones(B, 1, dtype=torch.long)], dim=1)
            if self.bug == "cache_position_reset":
                p = torch.zeros(B, 1, dtype=torch.long)
            elif self.bug == "padding_positions":
                p = torch.full((B, 1), mask.shape[1] - 1, dtype=torch.long)
            else:
                p = (mask.sum(-1, keepdim=True) - 1)
            S = cache[0][0].shape[2]
            km = mask.bool()[:, None, -(S + 1):] if S + 1 <= mask.shape[1] else torch.ones(B, 1, S + 1).bool()
            if self.bug == "cache_not_appended":
                km = torch.cat([mask.bool()[:, None, :T0], torch.ones(B, 1, 1).bool()], dim=2)
            z = self.forward(t[:, None], p, cache, km, True)[:, -1]
        return torch.stack(gen, 1), torch.stack(steps, 1)

    def generate_buffer(self, prompt, N, mask, pos, keymask):
        """A port with a preallocated cache of n_ctx rows (zeros) and a past length n_past that is off by
        self.offset from the first decode step on: position n_past, written at row n_past, rows
        0..n_past read (llama.cpp-style: write, then attend to the buffer)."""
        B, T0 = prompt.shape
        dh = self.d // self.H
        buf = [[torch.zeros(B, self.H, self.n_ctx, dh), torch.zeros(B, self.H, self.n_ctx, dh)] for _ in range(self.L)]
        cache = self.empty_cache(B)
        z = self.forward(prompt, pos, cache, keymask, False)[:, -1]
        for L in range(self.L):
            buf[L][0][:, :, :T0], buf[L][1][:, :, :T0] = cache[L]
        n_past = T0 + self.offset
        gen, steps = [], []
        for k in range(N):
            t = z.argmax(-1)
            gen.append(t)
            steps.append(z)
            if k + 1 == N:
                break
            w = self.w
            x = w["wte.weight"][t[:, None]] + w["wpe.weight"][torch.full((B, 1), n_past)]
            for L in range(self.L):
                p = "h.%d." % L
                a = self.ln(x, p + "ln_1")
                qkv = torch.matmul(a, w[p + "attn.c_attn.weight"]) + w[p + "attn.c_attn.bias"]
                q, kk, v = (self.heads(u) for u in qkv.split(self.d, dim=2))
                buf[L][0][:, :, n_past], buf[L][1][:, :, n_past] = kk[:, :, 0], v[:, :, 0]
                S = n_past + 1
                zz = self.attend(q, buf[L][0][:, :, :S], buf[L][1][:, :, :S], torch.ones(B, 1, S).bool())
                x = x + torch.addmm(w[p + "attn.c_proj.bias"], zz.reshape(-1, self.d),
                                    w[p + "attn.c_proj.weight"]).view_as(x)
                gelu = torch.nn.functional.gelu if self.bug == "gelu_erf" else gelu_tanh
                hdn = gelu(torch.matmul(self.ln(x, p + "ln_2"), w[p + "mlp.c_fc.weight"]) + w[p + "mlp.c_fc.bias"])
                x = x + torch.matmul(hdn, w[p + "mlp.c_proj.weight"]) + w[p + "mlp.c_proj.bias"]
            z = torch.matmul(self.ln(x, "ln_f"), self.head.t())[:, -1]
            n_past += 1
        return torch.stack(gen, 1), torch.stack(steps, 1)


def write(name, prompt, gen, logits=None, mask=None, eos=None, ids_dtype="I64", logits_dtype="F32", note=""):
    t = {"prompt_ids": prompt, "generated_ids": gen}
    dt = {"prompt_ids": ids_dtype, "generated_ids": ids_dtype}
    if logits is not None:
        t["step_logits"] = logits
    if mask is not None:
        t["attention_mask"] = mask
        dt["attention_mask"] = "I64"
    if eos is not None:
        t["eos_token_id"] = torch.tensor([eos])
        dt["eos_token_id"] = "I64"
    path = os.path.join(OUT, name + ".safetensors")
    ef.write_safetensors(path, t, {"producer": PRODUCER, "kind": "generation", "note": note}, dtype=logits_dtype,
                         dtypes=dt)
    print("wrote %s (%s)" % (os.path.relpath(path, ROOT), note or "clean"))


def near_tie_model(path):
    """A small model (2 layers, d 32, 64 tokens) in which token B's embedding is token A's moved so that,
    after the prompt and two steps, B's logit is 3e-7 below A's (A the greedy choice): far less than
    float32 rounding can move either. B appears nowhere before, so only its logit changes."""
    ef.main(["synth", "--out", path, "--layers", "2", "--n-embd", "32", "--n-head", "4", "--vocab", "64",
             "--n-ctx", "32", "--seed", "23"])
    port = Port(path)
    prompt = torch.tensor([[3, 14, 15, 9, 26]])
    gen, _ = port.generate(prompt, 3)
    a = int(gen[0, 2])
    used = set(prompt[0].tolist()) | set(gen[0].tolist())
    b = next(i for i in range(63, 0, -1) if i not in used)
    seq = torch.cat([prompt, gen[:, :2]], 1)
    T = seq.shape[1]
    y = port.forward(seq, torch.arange(T)[None], port.empty_cache(1), torch.ones(T, T).tril().bool()[None], False,
                     hidden=True)[0, -1].double()
    tensors, meta = ef.read_safetensors(os.path.join(path, "model.safetensors"))
    key = "transformer.wte.weight" if "transformer.wte.weight" in tensors else "wte.weight"
    tensors[key][b] = (tensors[key][a].double() - 3e-7 * y / (y @ y)).float()
    ef.write_safetensors(os.path.join(path, "model.safetensors"), tensors, meta)
    return prompt, a, b


def main():
    os.makedirs(OUT, exist_ok=True)
    tiny = os.path.join(ROOT, "fixtures", "tiny")
    prompt = torch.tensor([[5, 17, 3, 42, 9], [60, 2, 71, 33, 8]])
    N = 12
    gen, z = Port(tiny).generate(prompt, N)
    write("clean", prompt, gen, z, note="HF-style greedy generation with a KV cache")
    write("clean_ids_i32", prompt, gen, None, ids_dtype="I32", note="the same, token ids only, I32")
    write("clean_f16_logits", prompt, gen, z, logits_dtype="F16", note="the same, step logits stored as F16")
    for bug in ["cache_position_reset", "cache_not_appended", "cache_k_scaled", "cache_kv_before_bias",
                "cache_kv_swapped"]:
        g, zz = Port(tiny, bug).generate(prompt, N)
        write(bug, prompt, g, zz, note=bug)
    # bugs of every block, which a generation shows only through its tokens and logits
    for bug in ["gelu_erf", "attn_scale_missing", "qkv_order_kqv"]:
        g, zz = Port(tiny, bug).generate(prompt, N)
        write(bug, prompt, g, zz, note=bug + " in every block")
    g, _ = Port(tiny, "cache_position_reset").generate(prompt, N)
    write("cache_position_reset_ids", prompt, g, None, note="cache_position_reset, token ids only")
    for K in [1, -1]:
        g, zz = Port(tiny, "cache_offset", K).generate(prompt, N)
        write("cache_offset_%s" % (str(K) if K > 0 else "m%d" % -K), prompt, g, zz, note="cache_offset:%d" % K)
    # an unexplained divergence: step 4's logits of the clean run moved by 1e-3 at one token
    zu = z.clone()
    zu[1, 4, 7] += 1e-3
    write("unexplained", prompt, gen, zu, note="clean, step 4's logit 7 of row 1 moved by 1e-3")
    # HF's left-padded batch: rows of 3 and 6 tokens, pad id 0
    pp = torch.tensor([[0, 0, 0, 11, 23, 5], [40, 7, 19, 2, 61, 30]])
    mask = torch.tensor([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    g, zz = Port(tiny).generate(pp, 10, mask)
    write("padded", pp, g, zz, mask=mask, note="HF left padding, attention_mask, positions from its cumsum")
    g, zz = Port(tiny, "padding_positions").generate(pp, 10, mask)
    write("padding_positions", pp, g, zz, mask=mask, note="positions counted through the padding")
    # eos: row 0 stops at its step 3 token, then holds the pad (eos) id, as HF's generate() fills it
    eos = int(gen[0, 3])
    ge, ze = gen.clone(), z.clone()
    ge[0, 4:] = eos
    ze[0, 4:] = 0.0  # the port's steps after eos: not compared
    write("eos", prompt, ge, ze, eos=eos, note="row 0 finished at its eos (step 3), padded after")
    # a near-tie on fixtures/decode/near_tie
    nt = os.path.join(ROOT, "fixtures", "decode", "near_tie")
    p1, a, b = near_tie_model(nt)
    port = Port(nt)

    def flipped(reorder):
        """At a near-tie of A and B the port takes the other of the two; with reorder its logits of A and B
        are swapped there (a port whose own rounding ordered the tie the other way: its token is the largest
        of its logits, each still within the tolerance), else kept (a token below another of its own
        logits: a choice that is not greedy)."""
        def other(k, zk, t):
            if int(t[0]) in (a, b) and abs(float(zk[0, a].double() - zk[0, b].double())) < 1e-5:
                if reorder:
                    zk[0, [a, b]] = zk[0, [b, a]].clone()
                return torch.tensor([b if int(t[0]) == a else a])
            return t
        return other

    g, zz = port.generate(p1, 8, choose=flipped(True))
    g0, z0 = port.generate(p1, 8)
    print("near tie: tokens %d / %d; reference %s, port %s; gap at step 2 %.3g" % (
        a, b, g0[0].tolist(), g[0].tolist(), float(z0[0, 2, a] - z0[0, 2, b])))
    write("tie_flip", p1, g, zz, note="tokens %d and %d tied within rounding; the port's logits order them the "
          "other way, and it takes the other" % (a, b))
    g, zz = port.generate(p1, 8, choose=flipped(False))
    write("not_greedy", p1, g, zz, note="tokens %d and %d tied within rounding; the port takes the one its own "
          "logits put second" % (a, b))


if __name__ == "__main__":
    main()
