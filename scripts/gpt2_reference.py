"""GPT-2 reference arithmetic for the fixture exporter (scripts/export_fixtures.py).

HF GPT2Block / GPT2LMHeadModel (eval mode) written out in torch float32, without
`transformers`, with every porting bug of gpt2ffn's diagnosis codes injectable at
the stage where it applies (the bug then propagates downstream, as in a buggy port).

Two arithmetic modes (class Arith):
  portable  every matrix product is a float32 sum in a fixed order (k = 0, 1, ...,
            each product and each partial sum rounded to float32, no FMA: one torch
            elementwise op per term), the bias added after the sum (as a BLAS
            beta=1 GEMM does); exp/tanh/erf/sigmoid are evaluated in float64 and
            rounded once to float32 (correctly rounded float32 results); + - * /
            sqrt are IEEE float32.  The result does not depend on the BLAS library,
            the CPU or the thread count: the same bytes on any machine.
  blas      torch.addmm / torch.mm through whatever BLAS torch is linked against,
            and torch's own float32 GELU (what `fixture` always did; kept so that
            the older FFN fixtures are made exactly as before).
Both are float32 evaluations of the same formulas; they differ by float32 rounding.
"""
import math

import torch

F32_MIN = torch.finfo(torch.float32).min


# ---------------------------------------------------------------------------
# Rounding helpers
# ---------------------------------------------------------------------------

def round_f16(t):
    return t.to(torch.float16).to(torch.float32)  # RNE


def round_bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)  # RNE


def round_tf32(t):
    """float32 -> TF32 (1+8+10 bits) with round to nearest, ties to even; back as float32."""
    t = t.contiguous().to(torch.float32)
    bits = t.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    lsb = (bits >> 13) & 1
    bits = (bits + 0xFFF + lsb) & ~0x1FFF
    finite = torch.isfinite(t)
    out = (bits & 0xFFFFFFFF).to(torch.int64)
    out = torch.where(out >= 2 ** 31, out - 2 ** 32, out).to(torch.int32).view(torch.float32)
    return torch.where(finite, out, t)


ROUNDERS = {"f16": round_f16, "bf16": round_bf16, "tf32": round_tf32}


def _r64(fn, x):
    """fn evaluated in float64, rounded once to float32."""
    return fn(x.to(torch.float64)).to(torch.float32)


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------

def sum_last(x):
    """Sequential float32 sum over the last dimension (index 0 first)."""
    acc = x[..., 0]
    for k in range(1, x.shape[-1]):
        acc = acc + x[..., k]
    return acc


def mm_ordered(x, w):
    """x [..., K] @ w [K, N] as fixed-order float32 sums."""
    acc = x[..., 0:1] * w[0]
    for k in range(1, x.shape[-1]):
        acc = acc + x[..., k:k + 1] * w[k]
    return acc


def qk_ordered(q, k):
    """q [..., M, K], k [..., N, K] -> q @ k^T [..., M, N], fixed-order float32."""
    acc = q[..., :, None, 0] * k[..., None, :, 0]
    for i in range(1, q.shape[-1]):
        acc = acc + q[..., :, None, i] * k[..., None, :, i]
    return acc


def pv_ordered(p, v):
    """p [..., M, N] @ v [..., N, K], fixed-order float32 (sum over N)."""
    acc = p[..., :, 0:1] * v[..., 0:1, :]
    for j in range(1, p.shape[-1]):
        acc = acc + p[..., :, j:j + 1] * v[..., j:j + 1, :]
    return acc


class Arith:
    def __init__(self, mode="portable"):
        if mode not in ("portable", "blas"):
            raise ValueError(mode)
        self.mode = mode
        self.portable = mode == "portable"

    # -- products -----------------------------------------------------------
    def linear(self, x, w, b=None):
        """Conv1D: x [..., K] @ w [K, N] (+ b)."""
        if self.portable:
            y = mm_ordered(x, w)
            return y if b is None else y + b
        lead, K = x.shape[:-1], x.shape[-1]
        x2 = x.reshape(-1, K)
        y = torch.mm(x2, w) if b is None else torch.addmm(b, x2, w)
        return y.reshape(*lead, w.shape[1])

    def qk(self, q, k):
        return qk_ordered(q, k) if self.portable else torch.matmul(q, k.transpose(-1, -2))

    def pv(self, p, v):
        return pv_ordered(p, v) if self.portable else torch.matmul(p, v)

    # -- pointwise ------------------------------------------------------------
    def exp(self, x):
        return _r64(torch.exp, x) if self.portable else torch.exp(x)

    def tanh(self, x):
        return _r64(torch.tanh, x) if self.portable else torch.tanh(x)

    def erf(self, x):
        return _r64(torch.erf, x) if self.portable else torch.erf(x)

    def sigmoid(self, x):
        return _r64(torch.sigmoid, x) if self.portable else torch.sigmoid(x)

    def sum_last(self, x):
        return sum_last(x) if self.portable else x.sum(-1)

    # -- GELU variants (act = f(pre), float32) --------------------------------
    def gelu_tanh(self, x):
        # HF NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)));
        # torch.pow(x, 3.0) is evaluated as x*x*x.
        if not self.portable:
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                               (x + 0.044715 * torch.pow(x, 3.0))))
        return 0.5 * x * (1.0 + self.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))

    def gelu_erf(self, x):
        # torch F.gelu (approximate='none'): x * 0.5 * (1 + erf(x * M_SQRT1_2))
        if not self.portable:
            return torch.nn.functional.gelu(x)
        return x * 0.5 * (1.0 + self.erf(x * 0.7071067811865476))

    def gelu_sigmoid(self, x):
        # HF QuickGELUActivation: x * sigmoid(1.702 * x)
        return x * self.sigmoid(1.702 * x)

    def gelu_mlx_approx(self, x):
        # MLX's former gelu_approx: x * sigmoid(1.60033 * x * (1 + 0.0433603 * x^2))
        return x * self.sigmoid(1.60033 * x * (1.0 + 0.0433603 * (x * x)))

    def gelu_ggml(self, x):
        # ggml_gelu_f32: 0.5f*x*(1.0f + tanhf(SQRT_2_OVER_PI*x*(1.0f + GELU_COEF_A*x*x))),
        # C left-to-right evaluation, float32 constants, no FMA contraction.
        s = torch.tensor(0.79788456080286535587989211986876, dtype=torch.float32)
        a = torch.tensor(0.044715, dtype=torch.float32)
        inner = (s * x) * (1.0 + (a * x) * x)
        return (0.5 * x) * (1.0 + self.tanh(inner))

    def gelu_f16_table(self, x):
        # ggml's CPU GELU (GGML_GELU_FP16): 0 for x <= -10, x for x >= 10, otherwise
        # the 65536-entry table ggml_table_gelu_f16[f16(x)] = f16(ggml_gelu_f32(f16(x))).
        xh = round_f16(x)
        y = round_f16(self.gelu_ggml(xh))
        y = torch.where(x >= 10.0, x, y)
        return torch.where(x <= -10.0, torch.zeros_like(x), y)


# ---------------------------------------------------------------------------
# LayerNorm, attention, FFN, block, model
# ---------------------------------------------------------------------------

def layer_norm(ar, x, w, b, eps):
    """(x - mean) / sqrt(var + eps) * w + b, biased variance, float32.

    blas mode uses F.layer_norm; portable mode writes it out with ordered sums.
    w or b None: that term left out."""
    d = x.shape[-1]
    if not ar.portable:
        return torch.nn.functional.layer_norm(x, (d,), w, b, eps=eps)
    mean = ar.sum_last(x) / d
    xc = x - mean[..., None]
    var = ar.sum_last(xc * xc) / d
    rstd = 1.0 / torch.sqrt(var + eps)
    y = xc * rstd[..., None]
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


# --- FFN -------------------------------------------------------------------

GELU_VARIANTS = ("gelu_sigmoid", "gelu_mlx_approx", "gelu_f16_table")
PRECISION_CODES = ("tf32_matmul", "f16_matmul", "act_f16_rounded", "act_bf16_rounded",
                   "autocast_f16", "autocast_bf16")
PERTURB_ACT = 0.05
PERTURB_PROJ = 0.01


class MutationError(Exception):
    pass


def ffn(ar, x, w, gelu, has):
    """GPT2MLP on x [..., d] with the FFN porting bugs in `has` ({name: [params]}).

    w: {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"} (already swapped /
    rounded / misread by the caller). Returns (pre, act, out).
    Order: autocast/tf32 input rounding; c_fc (+bias unless fc_bias_missing);
    pre rounding (autocast, act_*_rounded); GELU (variant, then gelu_clipped);
    act rounding; perturb_act; c_proj (tf32 rounds its inputs); out rounding
    (autocast); perturb_proj; residual_included; nonfinite."""
    wfc, bfc, wpj, bpj = w["c_fc.weight"], w["c_fc.bias"], w["c_proj.weight"], w["c_proj.bias"]
    if "fc_bias_missing" in has:
        bfc = None
    if "proj_bias_missing" in has:
        bpj = None
    auto = "f16" if "autocast_f16" in has else "bf16" if "autocast_bf16" in has else None
    actr = "f16" if "act_f16_rounded" in has else "bf16" if "act_bf16_rounded" in has else None
    if auto and actr:
        raise MutationError("autocast_* and act_*_rounded do not combine")
    tf32 = "tf32_matmul" in has
    if tf32 and auto:
        raise MutationError("tf32_matmul and autocast_* do not combine")
    # ggml's F16 path: F16 weights, each product's input rounded to F16, float32 sums and biases
    f16mm = "f16_matmul" in has
    if f16mm and (auto or tf32):
        raise MutationError("f16_matmul and autocast_* / tf32_matmul do not combine")
    xin = x
    if auto:
        R = ROUNDERS[auto]
        xin, wfc, wpj = R(xin), R(wfc), R(wpj)
        bfc = R(bfc) if bfc is not None else None
        bpj = R(bpj) if bpj is not None else None
    if tf32:
        pre = ar.linear(round_tf32(xin), round_tf32(wfc), bfc)
    elif f16mm:
        pre = ar.linear(round_f16(xin), round_f16(wfc), bfc)
    else:
        pre = ar.linear(xin, wfc, bfc)
    if auto or actr:
        pre = ROUNDERS[auto or actr](pre)
    variants = [v for v in GELU_VARIANTS if v in has]
    if len(variants) > 1:
        raise MutationError("at most one of %s" % ", ".join(GELU_VARIANTS))
    if variants and gelu != "tanh":
        raise MutationError("%s replaces the GELU: use it with --gelu tanh" % variants[0])
    if variants:
        act = getattr(ar, variants[0])(pre)
    else:
        act = ar.gelu_tanh(pre) if gelu == "tanh" else ar.gelu_erf(pre)
    if "gelu_clipped" in has:
        act = torch.clamp(act, -10.0, 10.0)
    if auto or actr:
        act = ROUNDERS[auto or actr](act)
    ni, d = wfc.shape[1], wpj.shape[1]
    for k in has.get("perturb_act", []):
        if not 0 <= k < ni:
            raise MutationError("perturb_act:%d outside 0..%d" % (k, ni - 1))
        act = act.clone()
        act[..., k] += PERTURB_ACT
    if tf32:
        out = ar.linear(round_tf32(act), round_tf32(wpj), bpj)
    elif f16mm:
        out = ar.linear(round_f16(act), round_f16(wpj), bpj)
    else:
        out = ar.linear(act, wpj, bpj)
    if auto:
        out = ROUNDERS[auto](out)
    for j in has.get("perturb_proj", []):
        if not 0 <= j < d:
            raise MutationError("perturb_proj:%d outside 0..%d" % (j, d - 1))
        out[..., j] += PERTURB_PROJ
    if "residual_included" in has:
        out = x + out
    if "nonfinite" in has:
        flat = out.reshape(-1, d)
        if flat.shape[0] < 2 or d < 4:
            raise MutationError("nonfinite needs at least 2 tokens and 4 channels")
        flat[1, 3] = float("nan")
    return pre, act, out


def misread_ffn(w, which):
    """layout_misread:fc|proj|both on the FFN weights (Conv1D bytes read as Linear)."""
    w = dict(w)
    d, ni = w["c_fc.weight"].shape
    if which in ("fc", "both"):
        w["c_fc.weight"] = w["c_fc.weight"].contiguous().view(ni, d).t()
    if which in ("proj", "both"):
        w["c_proj.weight"] = w["c_proj.weight"].contiguous().view(d, ni).t()
    return w


# --- attention ---------------------------------------------------------------

def split_heads(t, n_head, interleaved=False):
    """[B, T, d] -> [B, H, T, dh]; interleaved: the port's [dh, H] split."""
    B, T, d = t.shape
    dh = d // n_head
    if interleaved:
        return t.reshape(B, T, dh, n_head).permute(0, 3, 1, 2)
    return t.reshape(B, T, n_head, dh).permute(0, 2, 1, 3)


def merge_heads(z, interleaved=False):
    """[B, H, T, dh] -> [B, T, d] (interleaved: [B, T, dh, H] flattened)."""
    B, H, T, dh = z.shape
    if interleaved:
        return z.permute(0, 2, 3, 1).reshape(B, T, H * dh)
    return z.permute(0, 2, 1, 3).reshape(B, T, H * dh)


def softmax_last(ar, s):
    if not ar.portable:
        return torch.softmax(s, dim=-1)
    m = s.max(dim=-1, keepdim=True).values
    e = ar.exp(s - m)
    return e / ar.sum_last(e)[..., None]


def attention(ar, a, W, n_head, layer_idx, has, st):
    """GPT2Attention on a [B, T, d] (the ln_1 output); records into st."""
    B, T, d = a.shape
    dh = d // n_head
    wq, bq = W["attn.c_attn.weight"], W["attn.c_attn.bias"]
    wp, bp = W["attn.c_proj.weight"], W["attn.c_proj.bias"]
    lm = set(has.get("layout_misread", []))
    if "c_attn" in lm:
        wq = wq.contiguous().view(3 * d, d).t()
    if "attn.c_proj" in lm:
        wp = wp.contiguous().view(d, d).t()
    ab = set(has.get("attn_bias_missing", []))
    mm = round_f16 if "f16_matmul" in has else (lambda t: t)  # ggml's F16 products
    qkv = ar.linear(mm(a), mm(wq), None if "c_attn" in ab else bq)
    st["attn.qkv"] = qkv
    perm = (has.get("qkv_order") or ["qkv"])[-1]
    # the port calls the i-th third of c_attn's output perm[i]
    thirds = [qkv[..., 0:d], qkv[..., d:2 * d], qkv[..., 2 * d:3 * d]]
    parts = {perm[i]: thirds[i] for i in range(3)}
    inter = "heads_interleaved" in has
    q, k, v = (split_heads(parts[n], n_head, inter) for n in "qkv")
    st["attn.q"], st["attn.k"], st["attn.v"] = (t.permute(0, 2, 1, 3) for t in (q, k, v))
    s = ar.qk(q, k)
    if "attn_scale" in has:
        c = has["attn_scale"][-1]
        c = 1.0 / math.sqrt(d) if c == "nembd" else 1.0 / dh if c == "dhead" else float(c)
        s = s * torch.tensor(c, dtype=torch.float32)
    elif "attn_scale_missing" not in has:
        # HF: attn_weights / torch.full([], value.size(-1) ** 0.5)
        s = s / torch.tensor(dh ** 0.5, dtype=torch.float32)
    if "attn_scale_layer_idx" in has:
        s = s / float(layer_idx + 1)
    if "attn_mask_missing" not in has:
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        s = torch.where(causal, s, torch.tensor(F32_MIN, dtype=torch.float32))
    probs = softmax_last(ar, s)
    st["attn.probs"] = probs
    z = ar.pv(probs, v)
    st["attn.z"] = z.permute(0, 2, 1, 3)
    merged = merge_heads(z, inter)
    st["attn.merged"] = merged
    out = ar.linear(mm(merged), mm(wp), None if "c_proj" in ab else bp)
    st["attn.out"] = out
    return out


# --- the block -----------------------------------------------------------------

BLOCK_WEIGHTS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                 "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                 "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")


def block_weights(weights, L):
    p = "h.%d." % L
    missing = [p + k for k in BLOCK_WEIGHTS if p + k not in weights]
    if missing:
        raise MutationError("checkpoint lacks %s" % ", ".join(missing))
    return {k: weights[p + k] for k in BLOCK_WEIGHTS}


def _ln_sel(params):
    """qualifiers of ln_bias_missing / ln_weight_missing -> set of LN names."""
    sel = set()
    for q in params:
        sel |= {"ln_1", "ln_2", "ln_f"} if q is None else {q}
    return sel


def block(ar, x, weights, L, n_head, eps, gelu, has):
    """HF GPT2Block on x [B, T, d] with the bugs `has` at this layer.

    Returns {stage: tensor}: in, ln_1.out, attn.qkv, attn.q/k/v, attn.probs,
    attn.z, attn.merged, attn.out, mid, mlp.in, mlp.pre, mlp.act, mlp.out, out."""
    W = block_weights(weights, L)
    if "weights_from_layer" in has:
        W = block_weights(weights, has["weights_from_layer"][-1])
    if "weights_f16_rounded" in has:
        W = {k: round_f16(v) for k, v in W.items()}
    if "weights_bf16_rounded" in has:
        W = {k: round_bf16(v) for k, v in W.items()}
    if has.get("ln_eps"):
        eps = has["ln_eps"][-1]
    nob = _ln_sel(has.get("ln_bias_missing", []))
    now = _ln_sel(has.get("ln_weight_missing", []))
    res = set()
    for q in has.get("residual_missing", []):
        res |= {"mid", "out"} if q is None else {q}

    st = {"in": x}

    def ln(name, t):
        # before gain and bias: TransformerLens 3's hook_normalized
        st[name + ".norm"] = layer_norm(ar, t, None, None, eps)
        return layer_norm(ar, t, None if name in now else W[name + ".weight"],
                          None if name in nob else W[name + ".bias"], eps)

    a = ln("ln_1", x)
    st["ln_1.out"] = a
    attn = attention(ar, a, W, n_head, L, has, st)
    mid = attn if "mid" in res else attn + x  # HF: attn_output + residual
    st["mid"] = mid
    m_in = ln("ln_2", mid)
    st["mlp.in"] = m_in
    wf = {k[4:]: W[k] for k in W if k.startswith("mlp.")}
    lm = set(has.get("layout_misread", []))
    if lm & {"fc", "both"}:
        wf = misread_ffn(wf, "fc")
    if lm & {"proj", "both"}:
        wf = misread_ffn(wf, "proj")
    pre, act, mo = ffn(ar, m_in, wf, gelu, has)
    st["mlp.pre"], st["mlp.act"], st["mlp.out"] = pre, act, mo
    st["out"] = mo if "out" in res else mid + mo  # HF: residual + feed_forward_hidden_states
    return st


# --- the model ---------------------------------------------------------------------

def model(ar, ids, weights, n_head, eps, gelu, plan, mhas, n_layer):
    """HF GPT2LMHeadModel from token ids [B, T] (int64).

    plan: {layer: has} block/FFN bugs per layer; mhas: model-level bugs
    (wpe_missing, wpe_offset, embed_scaled, ln_f_missing, lm_head_untied, and for ln_f:
    ln_eps / ln_bias_missing:ln_f / ln_weight_missing:ln_f / weights_*_rounded).
    Returns {"input_ids", "wte.out", "wpe.out", "embed", "h.L.<stage>", "ln_f.out", "logits"}."""
    B, T = ids.shape
    wte, wpe = weights["wte.weight"], weights["wpe.weight"]
    head = weights.get("lm_head.weight")
    lnf_w, lnf_b = weights["ln_f.weight"], weights["ln_f.bias"]
    rnd = round_f16 if "weights_f16_rounded" in mhas else round_bf16 if "weights_bf16_rounded" in mhas else None
    if rnd:
        wte, wpe, lnf_w, lnf_b = rnd(wte), rnd(wpe), rnd(lnf_w), rnd(lnf_b)
        head = rnd(head) if head is not None else None
    f16mm = "f16_matmul" in mhas  # ggml's F16 wte (the embedding's rows and the logits' product)
    if f16mm:
        wte = round_f16(wte)
        head = round_f16(head) if head is not None else None
    V = wte.shape[0]
    if int(ids.min()) < 0 or int(ids.max()) >= V:
        raise MutationError("token id outside 0..%d" % (V - 1))
    off = (mhas.get("wpe_offset") or [0])[-1]
    pos = torch.arange(T) + off
    if int(pos.max()) >= wpe.shape[0] or int(pos.min()) < 0:
        raise MutationError("positions %d..%d outside wpe's %d rows"
                            % (int(pos.min()), int(pos.max()), wpe.shape[0]))
    st = {"input_ids": ids}
    te = wte[ids]
    if "embed_scaled" in mhas:  # a fairseq/Gemma-style embed_scale GPT-2 does not have
        te = te * math.sqrt(wte.shape[1])
    pe = wpe[pos].expand(B, T, wpe.shape[1])
    if "wpe_missing" in mhas:
        pe = torch.zeros_like(pe)
        x = te.clone()
    else:
        x = te + pe  # HF: inputs_embeds + position_embeds
    st["wte.out"], st["wpe.out"], st["embed"] = te, pe.contiguous(), x
    for L in range(n_layer):
        s = block(ar, x, weights, L, n_head, eps, gelu, plan.get(L, {}))
        for k, v in s.items():
            st["h.%d.%s" % (L, k)] = v
        x = s["out"]
    if "ln_f_missing" in mhas:
        y = x
    else:
        e = mhas["ln_eps"][-1] if mhas.get("ln_eps") else eps
        nob = _ln_sel(mhas.get("ln_bias_missing", []))
        now = _ln_sel(mhas.get("ln_weight_missing", []))
        y = layer_norm(ar, x, None if "ln_f" in now else lnf_w, None if "ln_f" in nob else lnf_b, e)
        st["ln_f.norm"] = layer_norm(ar, x, None, None, e)
    st["ln_f.out"] = y
    if "lm_head_untied" in mhas:
        if head is None:
            raise MutationError("lm_head_untied: the checkpoint stores no lm_head.weight (tied); "
                                "the reverse case is a tied copy of an untied checkpoint, see "
                                "fixtures/README.md")
        head = None  # the port tied the head to wte
    W_U = wte if head is None else head
    st["logits"] = ar.linear(round_f16(y) if f16mm else y, W_U.t())
    return st
