"""Minimal GPT-2 modules with the module names (and forward structure) of
HF transformers' GPT2LMHeadModel, nanoGPT's and minGPT's GPT and
TransformerLens' HookedTransformer, written for these tests (the real
libraries are not installed here), with a checkpoint's weights loaded."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from gpt2ffn import load


def weights(path):
    w = load(path)
    return {k[len("transformer."):] if k.startswith("transformer.") else k: torch.from_numpy(np.array(w[k])) for k in w}


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def causal_attention(q, k, v, n_head, dropout, probs=None):
    """q, k, v [B, T, d] -> [B, T, d], the probabilities through dropout (a
    module: it can be hooked; or a function, as newer HF versions do), and
    appended to probs when it is a list."""
    B, T, d = q.shape
    q, k, v = (t.view(B, T, n_head, d // n_head).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // n_head))
    att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    att = dropout(F.softmax(att, dim=-1))
    if probs is not None:
        probs.append(att)
    return (att @ v).transpose(1, 2).contiguous().view(B, T, d)


# ---- HF transformers: Conv1D layers, blocks returning tuples -------------------------------------------

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(x.shape[:-1] + (self.weight.shape[1],))


class HFAttention(nn.Module):
    """new_hf: as newer HF versions, the dropout a function and the
    probabilities returned beside the output (output_attentions)."""

    def __init__(self, d, n_head, new_hf=False):
        super().__init__()
        self.c_attn, self.c_proj = Conv1D(3 * d, d), Conv1D(d, d)
        self.resid_dropout = nn.Dropout(0.1)
        if not new_hf:
            self.attn_dropout = nn.Dropout(0.1)
        self.n_head, self.new_hf = n_head, new_hf

    def forward(self, x, layer_past=None, attention_mask=None):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        if self.new_hf:
            probs = []
            z = causal_attention(q, k, v, self.n_head, lambda p: F.dropout(p, 0.1, self.training), probs)
            return self.resid_dropout(self.c_proj(z)), probs[0]
        return (self.resid_dropout(self.c_proj(causal_attention(q, k, v, self.n_head, self.attn_dropout))), None)


class HFMLP(nn.Module):
    def __init__(self, d, inner, act):
        super().__init__()
        self.c_fc, self.c_proj, self.act, self.dropout = Conv1D(inner, d), Conv1D(d, inner), act, nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class HFBlock(nn.Module):
    def __init__(self, d, n_head, act, new_hf):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(d), HFAttention(d, n_head, new_hf), nn.LayerNorm(d)
        self.mlp = HFMLP(d, 4 * d, act)

    def forward(self, hidden_states, layer_past=None, attention_mask=None):
        a = self.attn(self.ln_1(hidden_states))[0]
        h = hidden_states + a
        return (h + self.mlp(self.ln_2(h)), None)


class HFModel(nn.Module):  # GPT2Model
    def __init__(self, vocab, n_pos, d, n_layer, n_head, act, new_hf=False):
        super().__init__()
        self.wte, self.wpe, self.drop = nn.Embedding(vocab, d), nn.Embedding(n_pos, d), nn.Dropout(0.1)
        self.h = nn.ModuleList([HFBlock(d, n_head, act(), new_hf) for _ in range(n_layer)])  # HF: an instance each
        self.ln_f = nn.LayerNorm(d)

    def forward(self, input_ids):
        x = self.drop(self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[-1])))
        for block in self.h:
            x = block(x, None, attention_mask=None)[0]
        return (self.ln_f(x),)


class HFLMHead(nn.Module):  # GPT2LMHeadModel
    def __init__(self, vocab, n_pos, d, n_layer, n_head, act=None, new_hf=False):
        super().__init__()
        self.transformer = HFModel(vocab, n_pos, d, n_layer, n_head, act or NewGELU, new_hf)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids):
        return (self.lm_head(self.transformer(input_ids)[0]),)

    def load(self, w):
        sd = {"transformer." + k: v for k, v in w.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
        sd["lm_head.weight"] = w["wte.weight"]
        self.load_state_dict(sd)
        return self.eval()


# ---- nanoGPT and minGPT: nn.Linear layers ----------------------------------------------------------

class NanoAttention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
        self.n_head = n_head

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        return self.resid_dropout(self.c_proj(causal_attention(q, k, v, self.n_head, self.attn_dropout)))


class NanoMLP(nn.Module):
    def __init__(self, d, gelu):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj, self.dropout = nn.Linear(d, 4 * d), gelu, nn.Linear(4 * d, d), nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class NanoBlock(nn.Module):
    def __init__(self, d, n_head, gelu, mingpt):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(d), NanoAttention(d, n_head), nn.LayerNorm(d)
        if mingpt:  # minGPT: the MLP is a ModuleDict run by a lambda, never called as a module
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(d, 4 * d), c_proj=nn.Linear(4 * d, d), act=NewGELU(),
                                          dropout=nn.Dropout(0.1)))
            m = self.mlp
            self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))
        else:
            self.mlp = NanoMLP(d, gelu)
        self.mingpt = mingpt
        self.inplace = False

    def forward(self, x):
        if self.inplace:  # the same values; the tensor the previous block returned now holds this one's output
            x += self.attn(self.ln_1(x))
            x += (self.mlpf if self.mingpt else self.mlp)(self.ln_2(x))
            return x
        x = x + self.attn(self.ln_1(x))
        return x + (self.mlpf if self.mingpt else self.mlp)(self.ln_2(x))


class NanoGPT(nn.Module):
    """nanoGPT's GPT (mingpt=True: minGPT's). Without targets nanoGPT
    computes the logits of the last position only, as the real one does."""

    def __init__(self, vocab, n_pos, d, n_layer, n_head, gelu=None, mingpt=False):
        super().__init__()
        self.mingpt = mingpt
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, d), wpe=nn.Embedding(n_pos, d), drop=nn.Dropout(0.1),
            h=nn.ModuleList([NanoBlock(d, n_head, gelu if gelu is not None else nn.GELU(), mingpt)
                             for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(d)))
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        t = idx.size(1)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t)))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None and not self.mingpt:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def load(self, w):
        sd = {}
        for k, v in w.items():
            linear = k.endswith(".weight") and any(s in k for s in ("c_attn", "c_proj", "c_fc"))
            sd["transformer." + k] = v.t().contiguous() if linear else v
        sd["lm_head.weight"] = w["wte.weight"]
        self.load_state_dict(sd)
        return self.eval()


# ---- TransformerLens: hook points ---------------------------------------------------------------------

class HookPoint(nn.Module):
    def forward(self, x):
        return x


class TLLayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.hook_scale, self.hook_normalized = HookPoint(), HookPoint()

    def forward(self, x):
        x = x - x.mean(-1, keepdim=True)
        scale = self.hook_scale((x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt())
        return self.hook_normalized(x / scale) * self.w + self.b  # TransformerLens: the hook before w and b


class TLAttention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        dh = d // n_head
        for n in "QKV":
            setattr(self, "W_" + n, nn.Parameter(torch.empty(n_head, d, dh)))
            setattr(self, "b_" + n, nn.Parameter(torch.empty(n_head, dh)))
        self.W_O, self.b_O = nn.Parameter(torch.empty(n_head, dh, d)), nn.Parameter(torch.empty(d))
        for n in ("hook_q", "hook_k", "hook_v", "hook_z", "hook_attn_scores", "hook_pattern"):
            setattr(self, n, HookPoint())

    def forward(self, x):
        q = self.hook_q(torch.einsum("btd,hde->bthe", x, self.W_Q) + self.b_Q)
        k = self.hook_k(torch.einsum("btd,hde->bthe", x, self.W_K) + self.b_K)
        v = self.hook_v(torch.einsum("btd,hde->bthe", x, self.W_V) + self.b_V)
        T, dh = x.shape[1], q.shape[-1]
        s = torch.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(dh)
        s = self.hook_attn_scores(s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")))
        z = self.hook_z(torch.einsum("bhqk,bkhe->bqhe", self.hook_pattern(F.softmax(s, dim=-1)), v))
        return torch.einsum("bqhe,hed->bqd", z, self.W_O) + self.b_O


class TLMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.W_in, self.b_in = nn.Parameter(torch.empty(d, 4 * d)), nn.Parameter(torch.empty(4 * d))
        self.W_out, self.b_out = nn.Parameter(torch.empty(4 * d, d)), nn.Parameter(torch.empty(d))
        self.hook_pre, self.hook_post = HookPoint(), HookPoint()
        self.act = NewGELU()

    def forward(self, x):
        return self.hook_post(self.act(self.hook_pre(x @ self.W_in + self.b_in))) @ self.W_out + self.b_out


class TLBlock(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = TLLayerNorm(d), TLAttention(d, n_head), TLLayerNorm(d), TLMLP(d)
        for n in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"):
            setattr(self, n, HookPoint())

    def forward(self, resid_pre):
        resid_pre = self.hook_resid_pre(resid_pre)
        mid = self.hook_resid_mid(resid_pre + self.hook_attn_out(self.attn(self.ln1(resid_pre))))
        return self.hook_resid_post(mid + self.hook_mlp_out(self.mlp(self.ln2(mid))))


class Embed(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.W_E = nn.Parameter(torch.empty(vocab, d))

    def forward(self, tokens):
        return self.W_E[tokens]


class PosEmbed(nn.Module):
    def __init__(self, n_pos, d):
        super().__init__()
        self.W_pos = nn.Parameter(torch.empty(n_pos, d))

    def forward(self, tokens):
        return self.W_pos[: tokens.shape[-1]].expand(tokens.shape + (self.W_pos.shape[1],))


class Unembed(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.W_U, self.b_U = nn.Parameter(torch.empty(d, vocab)), nn.Parameter(torch.zeros(vocab))

    def forward(self, x):
        return x @ self.W_U + self.b_U


class HookedTransformer(nn.Module):
    def __init__(self, vocab, n_pos, d, n_layer, n_head):
        super().__init__()
        self.embed, self.hook_embed = Embed(vocab, d), HookPoint()
        self.pos_embed, self.hook_pos_embed = PosEmbed(n_pos, d), HookPoint()
        self.blocks = nn.ModuleList([TLBlock(d, n_head) for _ in range(n_layer)])
        self.ln_final, self.unembed = TLLayerNorm(d), Unembed(d, vocab)
        self.n_head = n_head

    def forward(self, tokens):
        x = self.hook_embed(self.embed(tokens)) + self.hook_pos_embed(self.pos_embed(tokens))
        for b in self.blocks:
            x = b(x)
        return self.unembed(self.ln_final(x))

    def load(self, w):
        """HF-named weights converted as TransformerLens' GPT-2 loader does (without processing)."""
        H, sd = self.n_head, {"embed.W_E": w["wte.weight"], "pos_embed.W_pos": w["wpe.weight"]}
        d = w["wte.weight"].shape[1]
        for L in range(len(self.blocks)):
            h, b = "h.%d." % L, "blocks.%d." % L
            for tl, hf in (("ln1", "ln_1"), ("ln2", "ln_2")):
                sd[b + tl + ".w"], sd[b + tl + ".b"] = w[h + hf + ".weight"], w[h + hf + ".bias"]
            W, B = w[h + "attn.c_attn.weight"], w[h + "attn.c_attn.bias"]
            for i, n in enumerate("QKV"):
                sd[b + "attn.W_" + n] = W[:, i * d:(i + 1) * d].reshape(d, H, d // H).permute(1, 0, 2)
                sd[b + "attn.b_" + n] = B[i * d:(i + 1) * d].reshape(H, d // H)
            sd[b + "attn.W_O"] = w[h + "attn.c_proj.weight"].reshape(H, d // H, d)
            sd[b + "attn.b_O"] = w[h + "attn.c_proj.bias"]
            sd[b + "mlp.W_in"], sd[b + "mlp.b_in"] = w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"]
            sd[b + "mlp.W_out"], sd[b + "mlp.b_out"] = w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"]
        sd["ln_final.w"], sd["ln_final.b"] = w["ln_f.weight"], w["ln_f.bias"]
        sd["unembed.W_U"], sd["unembed.b_U"] = w["wte.weight"].t(), torch.zeros(w["wte.weight"].shape[0])
        self.load_state_dict({k: v.contiguous() for k, v in sd.items()})
        return self.eval()
