"""Recording a port written as functions (picoGPT-style numpy): by name, or
by wrapping the port's own functions so that each call records its input
and output under a stage's name, layer after layer."""
import functools

from . import _stages
from ._arrays import Activations


class Recorder(Activations):
    """Activations recorded one line per stage:

        rec = gpt2ffn.Recorder()
        rec.record("input_ids", ids)
        rec.record("mlp.in", x, layer=i)        # or rec.record("h.3.mlp.in", x)
        ...
        gpt2ffn.verify("gpt2/", rec)

    Each name must be a stage the tool reads (else ValueError with the
    nearest one), recorded once (a port's later passes, e.g. generation,
    are not recorded: see record's `again`), and its shape must agree with
    what is already recorded (the same sequences and positions, n_embd,
    n_inner, n_head, vocab): the error names both tensors, at the line that
    records the wrong one. The tool checks every shape against the
    checkpoint again."""

    def __init__(self, metadata=None):
        super().__init__(metadata=metadata)
        self._sizes = {}   # "lead" (dims before T), "T", "d", "3d", "inner", "vocab", "heads" (H, dh) -> (value, name)
        self.repeated = 0  # records skipped: a name recorded already (again="skip"), a later pass
        self.passes = 0    # calls of a wrapped entry function (wrap)
        self._counters = []

    def record(self, stage, array, layer=None, again="error"):
        """Records array under stage (with layer for a per-layer stage).
        again: what a second record of the same name does: "error"
        (ValueError), "skip" (counted in .repeated) or "replace"."""
        full = _stages.name(stage, layer)
        if full in self:
            if again == "skip":
                self.repeated += 1
                return full
            if again != "replace":
                raise ValueError("'%s' is recorded twice (again='skip' keeps the first)" % full)
        self.put(full, array)
        try:
            self._check_shape(full)
        except ValueError:
            del self[full]
            raise
        return full

    def wrap(self, fn, out=None, args=()):
        """fn wrapped so that every call records its positional arguments
        under the stage names in args (None skips one) and its result under
        out. Per-layer names ("mlp.in") get the layer of the call: the
        first call is layer 0, the next layer 1, ... (a function called once
        per block). A function with model-level names only (the model's
        entry: input_ids -> logits) starts a forward pass at each call and
        numbers the layers from 0 again; only the first pass is recorded
        (.passes counts them). Assign the result where the port looks the
        function up:

            gpt2.ffn = rec.wrap(gpt2.ffn, args=["mlp.in"], out="mlp.out")
        """
        names = [n for n in list(args) + [out] if n]
        per = [_stages.parse(n) is None for n in names]  # a short per-layer name ("mlp.in")
        for n, p in zip(names, per):
            _stages.name(n, 0 if p else None)  # ValueError for a name the tool does not read
        entry = not any(per)
        calls = [0]
        self._counters.append(calls)

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            if entry:
                self.passes += 1
                for c in self._counters:
                    c[0] = 0
            k = calls[0]
            calls[0] += 1
            if self.passes <= 1:  # the arguments before the call: fn may change them in place
                for i, n in enumerate(args):
                    if n and i < len(a):
                        self.record(n, a[i], layer=k if _stages.parse(n) is None else None, again="skip")
            result = fn(*a, **kw)
            if self.passes <= 1:
                if out:
                    self.record(out, result, layer=k if _stages.parse(out) is None else None, again="skip")
            else:
                self.repeated += 1
            return result
        return wrapper

    def _check_shape(self, full):
        layer, stage, width, tl = _stages.parse(full)
        shape = self.raw(full)[0].shape
        if width == "ids":
            return self._agree(full, "lead", tuple(shape[:-1]), "T", shape[-1:] or (None,))
        if width == "probs":
            if len(shape) < 3 or shape[-1] != shape[-2]:
                raise ValueError("'%s': shape %s, expected [..., n_head, T, T]" % (full, list(shape)))
            self._agree(full, "lead", tuple(shape[:-3]), "T", (shape[-1],))
            return self._set(full, "H", shape[-3])
        if width == "heads":
            if len(shape) < 3:
                raise ValueError("'%s': shape %s, expected [..., T, n_head, d_head]" % (full, list(shape)))
            self._agree(full, "lead", tuple(shape[:-3]), "T", (shape[-3],))
            self._set(full, "H", shape[-2])
            return self._set(full, "d", shape[-2] * shape[-1])
        if len(shape) < 2:
            raise ValueError("'%s': shape %s, expected [..., T, %s]" % (full, list(shape), width))
        self._agree(full, "lead", tuple(shape[:-2]), "T", (shape[-2],))
        if width == "3d":
            if shape[-1] % 3:
                raise ValueError("'%s': last dimension %d is not 3 n_embd" % (full, shape[-1]))
            return self._set(full, "d", shape[-1] // 3)
        return self._set(full, width, shape[-1])

    def _agree(self, full, k1, v1, k2, v2):
        self._set(full, k1, v1)
        self._set(full, k2, v2[0])

    def _set(self, full, key, value):
        if key not in self._sizes:
            self._sizes[key] = (value, full)
            return
        want, by = self._sizes[key]
        if want != value:
            what = {"lead": "sequence dimensions", "T": "positions", "d": "n_embd", "inner": "n_inner",
                    "vocab": "the vocabulary", "H": "n_head"}[key]
            raise ValueError("'%s' has %s %s but '%s' has %s" % (full, what, _fmt(value), by, _fmt(want)))


def _fmt(v):
    return list(v) if isinstance(v, tuple) else v
