#!/usr/bin/python3
"""ggml's block quantization in numpy: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.

quantize() follows ggml's reference quantizers (ggml-quants.c quantize_row_*_ref,
with make_qkx2_quants / make_qx_quants for the K-quants) operation by operation in
float32: every sum is accumulated in ggml's order (element by element, not numpy's
pairwise sum), every product and quotient rounded to float32, no fused multiply-add,
f16 conversions round to nearest even. So the bytes equal those of ggml built
without FMA contraction (and of gpt2ffn's C port, src/base/g2f_quant.c;
tests/test_quant.c checks both on fixtures/quant/blocks.safetensors).
dequantize() is ggml's dequantize_row_*: every scale x code product is exact in
float32, so there is one rounding per added min.

Block layouts: see src/base/g2f_quant.h (the C header is the specification).

Usage as a module (scripts/ is on sys.path of the other export scripts):
    import ggml_quant as gq
    blocks = gq.quantize(x, "Q4_K")          # x: float32, size a multiple of 256
    back = gq.dequantize(blocks, "Q4_K")     # float32, as ggml reads it

As a script:
    scripts/ggml_quant.py blocks --out fixtures/quant/blocks.safetensors
        writes, per type T, T.x (the inputs: random and corner-case blocks), T.blocks
        (U8, the quantized bytes) and T.deq (F32, their dequantization)
    scripts/ggml_quant.py check FILE.f32 TYPE BLOCKS DEQ
        compares this module with bytes and values from elsewhere (e.g. ggml itself)
"""
import argparse
import os
import sys

import numpy as np

f32 = np.float32

# name: (ggml type id, elements per block, bytes per block)
TYPES = {
    "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24),
    "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210),
}
BASIC = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")  # the types with a C quantizer in diagnosis
GROUP_MAX_EPS = f32(1e-15)


def block_size(qtype):
    return TYPES[qtype][1]


def nbytes(qtype, n):
    _, blk, size = TYPES[qtype]
    if n % blk:
        raise ValueError("%s: %d values is not a multiple of the block size %d" % (qtype, n, blk))
    return n // blk * size


# ---------------------------------------------------------------------------
# float32 helpers with ggml's C semantics
# ---------------------------------------------------------------------------

def _f16_bits(v):
    """float32 -> IEEE half bits, round to nearest even (ggml's GGML_FP32_TO_FP16)."""
    with np.errstate(over="ignore"):
        return np.asarray(v, dtype=f32).astype(np.float16).view(np.uint16)


def _f16_value(bits):
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(f32)


def _nearest_int(v):
    """ggml's nearest_int: add 1.5 * 2^23 in float32, keep the mantissa bits."""
    w = (np.asarray(v, dtype=f32) + f32(12582912.0)).astype(f32)
    return (w.view(np.int32) & 0x007FFFFF) - 0x00400000


def _trunc(v, lo, hi):
    """C's cast of a float to an integer type (toward zero) for values in range;
    out-of-range and NaN clamped as src/base/g2f_quant.c does (ggml never gets there
    with finite weights)."""
    v = np.asarray(v, dtype=f32)
    r = np.trunc(np.where(v >= f32(lo), v, f32(lo))).astype(np.float64)
    r = np.where(v >= f32(hi + 1), hi, r)
    return r.astype(np.int64)


def _div(a, b):
    """a / b in float32 where b != 0 (the C code never divides by zero there), 0 elsewhere."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=f32), np.asarray(b, dtype=f32))
    out = np.zeros(a.shape, dtype=f32)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _seq_sum(terms):
    """Sum over the last axis in order, one float32 rounding per addition."""
    acc = np.zeros(terms.shape[:-1], dtype=f32)
    for i in range(terms.shape[-1]):
        acc = (acc + terms[..., i]).astype(f32)
    return acc


def _u32_le(bits):
    """(n,) uint32 -> (n, 4) uint8 little-endian."""
    return np.asarray(bits, dtype="<u4").view(np.uint8).reshape(-1, 4)


def _abs_argmax_first(x):
    """Per row: (amax, the value with the largest |v|, the first one on ties) as
    ggml's `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`."""
    ax = np.abs(x)
    idx = np.argmax(ax, axis=1)  # first maximum
    rows = np.arange(x.shape[0])
    amax = ax[rows, idx]
    return amax, np.where(amax > 0, x[rows, idx], f32(0))  # ggml starts from max = +0


# ---------------------------------------------------------------------------
# Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (blocks of 32)
# ---------------------------------------------------------------------------

def _pack_nibbles(lo, hi):
    return ((lo & 0x0F) | ((hi & 0x0F) << 4)).astype(np.uint8)


def _qh_bits(xi0, xi1):
    """bit j: bit 4 of element j; bit j + 16: bit 4 of element j + 16."""
    sh = np.arange(16, dtype=np.uint64)
    qh = (((xi0 & 0x10) >> 4).astype(np.uint64) << sh).sum(axis=1)
    qh += (((xi1 & 0x10) >> 4).astype(np.uint64) << (sh + 16)).sum(axis=1)
    return _u32_le(qh.astype(np.uint32))


def _q_sym(x, nlevels):
    """Q4_0 (nlevels 16) / Q5_0 (32): d = max / -(nlevels/2), q = MIN(top, (int8_t)(x/d + half + 0.5))."""
    half = nlevels // 2
    _, mx = _abs_argmax_first(x)
    d = (mx / f32(-half)).astype(f32)
    idv = _div(f32(1.0), d)
    xs = (x * idv[:, None]).astype(f32)
    s = (xs + f32(half + 0.5)).astype(f32)
    xi = np.minimum(nlevels - 1, _trunc(s, -128, 127)) & 0xFF
    xi0, xi1 = xi[:, :16], xi[:, 16:]
    parts = [_f16_bits(d).reshape(-1, 1).view(np.uint8)]
    if nlevels == 32:
        parts.append(_qh_bits(xi0, xi1))
    parts.append(_pack_nibbles(xi0, xi1))
    return np.concatenate(parts, axis=1)


def _q_asym(x, nlevels):
    """Q4_1 (16) / Q5_1 (32): d = (max - min) / (nlevels - 1), m = min, q = (x - min)/d + 0.5 truncated."""
    mn, mx = x.min(axis=1), x.max(axis=1)
    d = ((mx - mn) / f32(nlevels - 1)).astype(f32)
    idv = _div(f32(1.0), d)
    xs = ((x - mn[:, None]).astype(f32) * idv[:, None]).astype(f32)
    s = (xs + f32(0.5)).astype(f32)
    if nlevels == 16:
        xi = np.minimum(15, _trunc(s, -128, 127)) & 0xFF
    else:
        xi = _trunc(s, 0, 255)
    xi0, xi1 = xi[:, :16], xi[:, 16:]
    parts = [_f16_bits(d).reshape(-1, 1).view(np.uint8), _f16_bits(mn).reshape(-1, 1).view(np.uint8)]
    if nlevels == 32:
        parts.append(_qh_bits(xi0, xi1))
    parts.append(_pack_nibbles(xi0, xi1))
    return np.concatenate(parts, axis=1)


def _q8_0(x):
    amax = np.abs(x).max(axis=1)
    d = (amax / f32(127)).astype(f32)
    idv = _div(f32(1.0), d)
    xs = (x * idv[:, None]).astype(f32)
    ax = np.abs(xs).astype(np.float64)
    r = np.sign(xs) * np.floor(ax + 0.5)  # roundf: half away from zero (exact in float64)
    q = _trunc(r.astype(f32), -128, 127).astype(np.int8).view(np.uint8)
    return np.concatenate([_f16_bits(d).reshape(-1, 1).view(np.uint8), q], axis=1)


# ---------------------------------------------------------------------------
# K-quants (super-blocks of 256)
# ---------------------------------------------------------------------------

def _make_qkx2_quants(x, w, nmax, rmin, rdelta, nstep):
    """ggml's make_qkx2_quants for rows of x (n, 32) with weights w: (scale, -min, L)."""
    n = x.shape[1]
    mn, mx = x[:, 0].copy(), x[:, 0].copy()
    sum_w = w[:, 0].copy()
    sum_x = (sum_w * x[:, 0]).astype(f32)
    for i in range(1, n):
        mn = np.where(x[:, i] < mn, x[:, i], mn)
        mx = np.where(x[:, i] > mx, x[:, i], mx)
        sum_w = (sum_w + w[:, i]).astype(f32)
        sum_x = (sum_x + (w[:, i] * x[:, i]).astype(f32)).astype(f32)
    mn = np.where(mn > 0, f32(0), mn).astype(f32)
    flat = mx == mn
    rng = np.where(flat, f32(1), (mx - mn).astype(f32))
    xm = (x - mn[:, None]).astype(f32)

    iscale = (f32(nmax) / rng).astype(f32)
    scale = (f32(1) / iscale).astype(f32)
    L = np.clip(_nearest_int((iscale[:, None] * xm).astype(f32)), 0, nmax)
    diff = ((scale[:, None] * L.astype(f32)).astype(f32) + mn[:, None]).astype(f32)
    diff = (diff - x).astype(f32)
    best_mad = _seq_sum((w * (diff * diff).astype(f32)).astype(f32))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for step in range(nstep + 1):
            # ggml updates `min` in place when a step wins, and the later steps use it
            rng = np.where(flat, f32(1), (mx - mn).astype(f32))
            xm = (x - mn[:, None]).astype(f32)
            iscale = ((f32(rmin) + (f32(rdelta) * f32(step)).astype(f32) + f32(nmax)).astype(f32) / rng).astype(f32)
            la = np.clip(_nearest_int((iscale[:, None] * xm).astype(f32)), 0, nmax)
            lf = la.astype(f32)
            wl = (w * lf).astype(f32)
            sum_l = _seq_sum(wl)
            sum_l2 = _seq_sum((wl * lf).astype(f32))
            sum_xl = _seq_sum((wl * x).astype(f32))
            D = ((sum_w * sum_l2).astype(f32) - (sum_l * sum_l).astype(f32)).astype(f32)
            ok = D > 0
            Ds = np.where(ok, D, f32(1))
            this_scale = (((sum_w * sum_xl).astype(f32) - (sum_x * sum_l).astype(f32)).astype(f32) / Ds).astype(f32)
            this_min = (((sum_l2 * sum_x).astype(f32) - (sum_l * sum_xl).astype(f32)).astype(f32) / Ds).astype(f32)
            pos = this_min > 0
            this_min = np.where(pos, f32(0), this_min).astype(f32)
            this_scale = np.where(pos, _div(sum_xl, sum_l2), this_scale).astype(f32)
            diff = ((this_scale[:, None] * lf).astype(f32) + this_min[:, None]).astype(f32)
            diff = (diff - x).astype(f32)
            mad = _seq_sum((w * (diff * diff).astype(f32)).astype(f32))
            upd = ok & (mad < best_mad) & ~flat
            L = np.where(upd[:, None], la, L)
            best_mad = np.where(upd, mad, best_mad)
            scale = np.where(upd, this_scale, scale)
            mn = np.where(upd, this_min, mn)
    scale = np.where(flat, f32(0), scale).astype(f32)
    L = np.where(flat[:, None], 0, L)
    return scale, (-mn).astype(f32), L


def _k_scale_bytes(ls, lm):
    """8 6-bit scales and mins -> the 12 packed bytes (ggml's layout)."""
    nb = ls.shape[0]
    s = np.zeros((nb, 12), dtype=np.int64)
    s[:, 0:4] = ls[:, 0:4]
    s[:, 4:8] = lm[:, 0:4]
    s[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    s[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    s[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    return s.astype(np.uint8)


def _k_scale_min(scales):
    """(nb, 12) packed bytes -> (sc, m), each (nb, 8): ggml's get_scale_min_k4."""
    s = scales.astype(np.int64)
    sc = np.empty((s.shape[0], 8), dtype=np.int64)
    m = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    m[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _seq_max_pos(v):
    """`if (v > best) best = v` from best = 0, over the last axis."""
    best = np.zeros(v.shape[:-1], dtype=f32)
    for j in range(v.shape[-1]):
        best = np.where(v[..., j] > best, v[..., j], best)
    return best


def _q45_k(x, five):
    nb = x.shape[0]
    nmax = 31 if five else 15
    xs = x.reshape(nb * 8, 32)
    sum_x2 = _seq_sum((xs * xs).astype(f32))
    av_x = np.sqrt((sum_x2 / f32(32)).astype(f32)).astype(f32)
    w = (av_x[:, None] + np.abs(xs)).astype(f32)
    scales, mins, L = _make_qkx2_quants(xs, w, nmax, -0.5 if five else -1.0, 0.1, 15 if five else 20)
    scales, mins, L = scales.reshape(nb, 8), mins.reshape(nb, 8), L.reshape(nb, 8, 32)
    max_scale, max_min = _seq_max_pos(scales), _seq_max_pos(mins)
    inv_scale = np.where(max_scale > 0, _div(f32(63), max_scale), f32(0)).astype(f32)
    inv_min = np.where(max_min > 0, _div(f32(63), max_min), f32(0)).astype(f32)
    ls = np.minimum(63, _nearest_int((inv_scale[:, None] * scales).astype(f32)) & 0xFF)
    lm = np.minimum(63, _nearest_int((inv_min[:, None] * mins).astype(f32)) & 0xFF)
    sbytes = _k_scale_bytes(ls, lm)
    dh = _f16_bits((max_scale / f32(63)).astype(f32))
    mh = _f16_bits((max_min / f32(63)).astype(f32))
    sc, m = _k_scale_min(sbytes)
    d = (_f16_value(dh)[:, None] * sc.astype(f32)).astype(f32)
    dm = (_f16_value(mh)[:, None] * m.astype(f32)).astype(f32)
    xb = x.reshape(nb, 8, 32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (((xb + dm[:, :, None]).astype(f32)) / np.where(d == 0, f32(1), d)[:, :, None]).astype(f32)
    l = np.clip(_nearest_int(q), 0, nmax)
    L = np.where((d != 0)[:, :, None], l, L).reshape(nb, 256)
    parts = [dh.reshape(-1, 1).view(np.uint8), mh.reshape(-1, 1).view(np.uint8), sbytes]
    chunks = L.reshape(nb, 4, 2, 32)  # chunk c: elements 64c + l (low nibble), 64c + 32 + l (high)
    if five:
        hb = (chunks >> 4) & 1  # (nb, 4, 2, 32)
        qh = np.zeros((nb, 32), dtype=np.int64)
        for c in range(4):
            qh |= hb[:, c, 0, :] << (2 * c)
            qh |= hb[:, c, 1, :] << (2 * c + 1)
        parts.append(qh.astype(np.uint8))
    qs = (chunks[:, :, 0, :] & 0xF) | ((chunks[:, :, 1, :] & 0xF) << 4)
    parts.append(qs.reshape(nb, 128).astype(np.uint8))
    return np.concatenate(parts, axis=1)


def _make_qx_quants(x, nmax):
    """ggml's make_qx_quants(n, nmax, x, L, rmse_type=1, qw=NULL) for rows of x (n, 16): (scale, L)."""
    amax, mx = _seq_absmax_strict(x)
    zero = amax < GROUP_MAX_EPS
    mxs = np.where(zero, f32(1), mx).astype(f32)
    w = (x * x).astype(f32)

    def sums(iscale):
        l = np.clip(_nearest_int((iscale[:, None] * x).astype(f32)), -nmax, nmax - 1)
        lf = l.astype(f32)
        sumlx = _seq_sum((((w * x).astype(f32)) * lf).astype(f32))
        suml2 = _seq_sum((((w * lf).astype(f32)) * lf).astype(f32))
        return l, sumlx, suml2

    iscale = (f32(-nmax) / mxs).astype(f32)
    l, sumlx, suml2 = sums(iscale)
    L = l + nmax
    scale = np.where(suml2 != 0, _div(sumlx, suml2), f32(0)).astype(f32)
    best = (scale * sumlx).astype(f32)
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = (-((f32(nmax) + (f32(0.1) * f32(step)).astype(f32)).astype(f32)) / mxs).astype(f32)
        l, sumlx, suml2 = sums(iscale)
        upd = (suml2 > 0) & ((sumlx * sumlx).astype(f32) > (best * suml2).astype(f32))
        L = np.where(upd[:, None], l + nmax, L)
        scale = np.where(upd, _div(sumlx, suml2), scale).astype(f32)
        best = np.where(upd, (scale * sumlx).astype(f32), best).astype(f32)
    scale = np.where(zero, f32(0), scale).astype(f32)
    L = np.where(zero[:, None], 0, L)
    return scale, L


def _seq_absmax_strict(x):
    """`if (ax > amax) { amax = ax; max = x; }` from 0: the first of equal maxima."""
    amax = np.zeros(x.shape[0], dtype=f32)
    mx = np.zeros(x.shape[0], dtype=f32)
    for i in range(x.shape[1]):
        ax = np.abs(x[:, i])
        c = ax > amax
        amax = np.where(c, ax, amax)
        mx = np.where(c, x[:, i], mx)
    return amax, mx


def _q6_k(x):
    nb = x.shape[0]
    xs = x.reshape(nb * 16, 16)
    scales, L = _make_qx_quants(xs, 32)
    scales, L = scales.reshape(nb, 16), L.reshape(nb, 16, 16)
    max_abs, max_scale = _seq_absmax_strict(scales)
    zero = max_abs < GROUP_MAX_EPS
    ms = np.where(zero, f32(1), max_scale).astype(f32)
    iscale = (f32(-128) / ms).astype(f32)
    dh = _f16_bits((f32(1) / iscale).astype(f32))
    sc = np.minimum(127, _nearest_int((iscale[:, None] * scales).astype(f32))).astype(np.int8)  # wraps like int8_t
    d = (_f16_value(dh)[:, None] * sc.astype(f32)).astype(f32)
    xb = x.reshape(nb, 16, 16)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (xb / np.where(d == 0, f32(1), d)[:, :, None]).astype(f32)
    l = np.clip(_nearest_int(q), -32, 31) + 32
    L = np.where((d != 0)[:, :, None], l, L).reshape(nb, 256).astype(np.int64)
    ql = np.zeros((nb, 128), dtype=np.int64)
    qh = np.zeros((nb, 64), dtype=np.int64)
    for h in range(2):
        a = L[:, 128 * h:128 * h + 128].reshape(nb, 4, 32)  # k = 0..3: elements 128h + 32k + l
        ql[:, 64 * h:64 * h + 32] = (a[:, 0] & 0xF) | ((a[:, 2] & 0xF) << 4)
        ql[:, 64 * h + 32:64 * h + 64] = (a[:, 1] & 0xF) | ((a[:, 3] & 0xF) << 4)
        qh[:, 32 * h:32 * h + 32] = (a[:, 0] >> 4) | ((a[:, 1] >> 4) << 2) | ((a[:, 2] >> 4) << 4) | ((a[:, 3] >> 4) << 6)
    out = np.concatenate([ql.astype(np.uint8), qh.astype(np.uint8), sc.view(np.uint8),
                          dh.reshape(-1, 1).view(np.uint8)], axis=1)
    out[zero] = 0  # ggml: memset of the block, d = +0
    return out


def quantize(x, qtype):
    """float values (any shape; ggml rows along the flattened order) -> (blocks, bytes) uint8."""
    x = np.ascontiguousarray(np.asarray(x, dtype=f32).reshape(-1))
    _, blk, size = TYPES[qtype]
    nbytes(qtype, x.size)
    xb = x.reshape(-1, blk)
    with np.errstate(invalid="ignore", over="ignore"):
        out = {"Q4_0": lambda: _q_sym(xb, 16), "Q5_0": lambda: _q_sym(xb, 32),
               "Q4_1": lambda: _q_asym(xb, 16), "Q5_1": lambda: _q_asym(xb, 32),
               "Q8_0": lambda: _q8_0(xb), "Q4_K": lambda: _q45_k(xb, False),
               "Q5_K": lambda: _q45_k(xb, True), "Q6_K": lambda: _q6_k(xb)}[qtype]()
    assert out.shape == (xb.shape[0], size), (qtype, out.shape)
    return np.ascontiguousarray(out, dtype=np.uint8)


# ---------------------------------------------------------------------------
# Dequantization (ggml's dequantize_row_*)
# ---------------------------------------------------------------------------

def _nibbles(qs):
    return (qs & 0xF).astype(np.int64), (qs >> 4).astype(np.int64)


def _high_bits(qh4):
    qh = qh4.copy().view("<u4").reshape(-1).astype(np.int64)
    j = np.arange(16)
    return ((qh[:, None] >> j) & 1) << 4, ((qh[:, None] >> (j + 16)) & 1) << 4


def dequantize(blocks, qtype):
    """(blocks, bytes) or flat uint8 -> float32 values (flat), exactly as ggml."""
    _, blk, size = TYPES[qtype]
    b = np.ascontiguousarray(np.asarray(blocks, dtype=np.uint8)).reshape(-1, size)
    nb = b.shape[0]
    if qtype in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        has_m, five = qtype.endswith("_1"), qtype.startswith("Q5")
        d = _f16_value(b[:, 0:2].copy().view("<u2").reshape(-1))
        m = _f16_value(b[:, 2:4].copy().view("<u2").reshape(-1)) if has_m else None
        at = 4 if has_m else 2
        lo, hi = _nibbles(b[:, at + (4 if five else 0):])
        if five:
            h0, h1 = _high_bits(b[:, at:at + 4])
            lo, hi = lo | h0, hi | h1
        q = np.concatenate([lo, hi], axis=1)
        if not has_m:
            q = q - (16 if five else 8)
        v = (q.astype(f32) * d[:, None]).astype(f32)
        if has_m:
            v = (v + m[:, None]).astype(f32)
        return v.reshape(-1)
    if qtype == "Q8_0":
        d = _f16_value(b[:, 0:2].copy().view("<u2").reshape(-1))
        q = b[:, 2:].view(np.int8).astype(f32)
        return (q * d[:, None]).astype(f32).reshape(-1)
    if qtype in ("Q4_K", "Q5_K"):
        five = qtype == "Q5_K"
        d = _f16_value(b[:, 0:2].copy().view("<u2").reshape(-1))
        dmin = _f16_value(b[:, 2:4].copy().view("<u2").reshape(-1))
        sc, m = _k_scale_min(b[:, 4:16])
        a = (d[:, None] * sc.astype(f32)).astype(f32)       # (nb, 8)
        off = (dmin[:, None] * m.astype(f32)).astype(f32)
        qs = b[:, 48:176] if five else b[:, 16:144]
        q = np.empty((nb, 4, 2, 32), dtype=np.int64)
        qq = qs.reshape(nb, 4, 32).astype(np.int64)
        q[:, :, 0, :], q[:, :, 1, :] = qq & 0xF, qq >> 4
        if five:
            qh = b[:, 16:48].astype(np.int64)
            for c in range(4):
                q[:, c, 0, :] += ((qh >> (2 * c)) & 1) << 4
                q[:, c, 1, :] += ((qh >> (2 * c + 1)) & 1) << 4
        q = q.reshape(nb, 8, 32).astype(f32)
        v = ((a[:, :, None] * q).astype(f32) - off[:, :, None]).astype(f32)
        return v.reshape(-1)
    if qtype == "Q6_K":
        ql, qh = b[:, 0:128].astype(np.int64), b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].view(np.int8).astype(f32)
        d = _f16_value(b[:, 208:210].copy().view("<u2").reshape(-1))
        q = np.empty((nb, 256), dtype=np.int64)
        for h in range(2):
            l0, l1, hb = ql[:, 64 * h:64 * h + 32], ql[:, 64 * h + 32:64 * h + 64], qh[:, 32 * h:32 * h + 32]
            base = 128 * h
            q[:, base + 0:base + 32] = (l0 & 0xF) | (((hb >> 0) & 3) << 4)
            q[:, base + 32:base + 64] = (l1 & 0xF) | (((hb >> 2) & 3) << 4)
            q[:, base + 64:base + 96] = (l0 >> 4) | (((hb >> 4) & 3) << 4)
            q[:, base + 96:base + 128] = (l1 >> 4) | (((hb >> 6) & 3) << 4)
        a = (d[:, None] * sc).astype(f32)  # (nb, 16): exact
        v = (np.repeat(a, 16, axis=1) * (q - 32).astype(f32)).astype(f32)
        return v.reshape(-1)
    raise ValueError("unknown type %s" % qtype)


def roundtrip(x, qtype):
    """x quantized with ggml's reference rounding and dequantized back (same shape)."""
    x = np.asarray(x, dtype=f32)
    return dequantize(quantize(x, qtype), qtype).reshape(x.shape)


def roundtrip_linear(w, qtype):
    """A 2-D weight in torch nn.Linear [out, in] layout (ggml rows of length in),
    quantized row by row as llama.cpp does, and dequantized back."""
    w = np.asarray(w, dtype=f32)
    return roundtrip(w, qtype)


# ---------------------------------------------------------------------------
# Test blocks: random and corner cases, for fixtures/quant/blocks.safetensors
# ---------------------------------------------------------------------------

def test_inputs(qtype, seed=0):
    """Inputs exercising every code path of qtype's quantizer: 4 x 256 values."""
    rng = np.random.default_rng(seed + TYPES[qtype][0])
    parts = [
        rng.standard_normal(256) * 0.05,                          # trained-like weights
        rng.uniform(-1, 1, 256) * np.where(rng.random(256) < 0.05, 20, 1),  # outliers
        rng.laplace(0, 0.02, 256) + 1.5,                          # large offset (min rounding)
    ]
    c = np.zeros(256)
    c[0:32] = 0.0                                                 # all zero
    c[32:64] = 0.3                                                # constant
    c[64:96] = rng.standard_normal(32) * 1e-6                     # f16 subnormal scales
    c[96:128] = np.linspace(-1, 1, 32)                            # +max and -max: Q4_0/Q5_0 clamp
    c[128:160] = rng.standard_normal(32) * 3e3                    # large values
    c[160:192] = np.abs(rng.standard_normal(32))                  # all positive (K: min forced to 0)
    c[192:224] = -np.abs(rng.standard_normal(32)) * 0.1           # all negative
    c[224:256] = np.round(rng.standard_normal(32) * 4) / 8        # ties for round-half cases
    parts.append(c)
    return np.concatenate(parts).astype(f32)


def _write_safetensors(path, tensors):
    """Minimal safetensors writer: {name: numpy array} (F32 or U8)."""
    import json
    import struct
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8"}[a.dtype]
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"producer": "scripts/ggml_quant.py blocks"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for r in blobs:
            f.write(r)


def cmd_blocks(a):
    out = {}
    for t in TYPES:
        x = test_inputs(t)
        q = quantize(x, t)
        out[t + ".x"] = x
        out[t + ".blocks"] = q
        out[t + ".deq"] = dequantize(q, t)
    _write_safetensors(a.out, out)
    print("wrote %s (%s)" % (a.out, ", ".join("%s %d blocks" % (t, out[t + ".blocks"].shape[0]) for t in TYPES)))


def cmd_check(a):
    x = np.fromfile(a.input, dtype="<f4")
    q = quantize(x, a.type)
    ref_q = np.fromfile(a.blocks, dtype=np.uint8)
    ref_y = np.fromfile(a.deq, dtype="<f4")
    same_q = ref_q.size == q.size and np.array_equal(ref_q, q.reshape(-1))
    y = dequantize(ref_q, a.type)
    same_y = np.array_equal(y.view(np.uint32), ref_y.view(np.uint32))
    nbad = int((ref_q != q.reshape(-1)).sum()) if ref_q.size == q.size else -1
    print("%s: %d values, bytes %s (%d differ), dequantization %s" % (
        a.type, x.size, "equal" if same_q else "DIFFER", nbad, "equal" if same_y else "DIFFERS"))
    return 0 if same_q and same_y else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("blocks", help="write the block fixtures for tests/test_quant.c")
    b.add_argument("--out", required=True)
    b.set_defaults(fn=cmd_blocks)
    c = sub.add_parser("check", help="compare with another implementation's bytes and values")
    c.add_argument("input", help="raw little-endian float32 values")
    c.add_argument("type", choices=sorted(TYPES))
    c.add_argument("blocks", help="raw quantized bytes to compare with")
    c.add_argument("deq", help="raw float32 dequantization to compare with")
    c.set_defaults(fn=cmd_check)
    a = p.parse_args(argv)
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main())
