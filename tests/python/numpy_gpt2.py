"""A GPT-2 forward written as numpy functions, the shape of a picoGPT-style
port (written for these tests), over a checkpoint's weights read by the
package's own safetensors reader. Each function looks the others up in
this module's globals at call time, as picoGPT's do, so a test can wrap
them with Recorder.wrap."""
import numpy as np

from gpt2ffn import load


def weights(path):
    """The checkpoint's tensors without the "transformer." prefix, float32."""
    w = load(path)
    return {k[len("transformer."):] if k.startswith("transformer.") else k: np.asarray(w[k], np.float32) for k in w}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * x ** 3)))


def gelu_erf(x):
    from math import erf
    return (0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))).astype(np.float32)


def layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return g * (x - mean) / np.sqrt(var + np.float32(eps)) + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(x, w, b, wo, bo, n_head):
    qkv = x @ w + b
    T, d = x.shape
    q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(T, n_head, d // n_head).transpose(1, 0, 2) for i in range(3))
    mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    probs = softmax(q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(d // n_head)) + mask)
    merged = (probs @ v).transpose(1, 0, 2).reshape(T, d)
    return merged @ wo + bo


def ffn(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def block(x, W, L, n_head):
    p = "h.%d." % L
    x = x + attention(layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"]), W[p + "attn.c_attn.weight"],
                      W[p + "attn.c_attn.bias"], W[p + "attn.c_proj.weight"], W[p + "attn.c_proj.bias"], n_head)
    return x + ffn(layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"]), W[p + "mlp.c_fc.weight"],
                   W[p + "mlp.c_fc.bias"], W[p + "mlp.c_proj.weight"], W[p + "mlp.c_proj.bias"])


def block_inplace(x, W, L, n_head):
    """block with the residuals added in place (x += ...), as some ports write it: the same values,
    but every array that held x before now holds the block's output."""
    p = "h.%d." % L
    x += attention(layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"]), W[p + "attn.c_attn.weight"],
                   W[p + "attn.c_attn.bias"], W[p + "attn.c_proj.weight"], W[p + "attn.c_proj.bias"], n_head)
    x += ffn(layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"]), W[p + "mlp.c_fc.weight"],
             W[p + "mlp.c_fc.bias"], W[p + "mlp.c_proj.weight"], W[p + "mlp.c_proj.bias"])
    return x


def gpt2(ids, W, n_head):
    ids = np.asarray(ids)
    x = W["wte.weight"][ids] + W["wpe.weight"][np.arange(len(ids))]
    L = 0
    while "h.%d.ln_1.weight" % L in W:
        x = block(x, W, L, n_head)
        L += 1
    return layer_norm(x, W["ln_f.weight"], W["ln_f.bias"]) @ W["wte.weight"].T
