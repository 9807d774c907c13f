"""capture(model): every stage of a PyTorch GPT-2 recorded by forward hooks,
under the tool's names, while the model runs.

Known models, by their module names (no import of their libraries):
  HF transformers GPT2LMHeadModel / GPT2Model, nanoGPT's and minGPT's GPT:
    [transformer.]wte, drop, h.L.{ln_1, attn.c_attn, attn.attn_dropout,
    attn.c_proj, ln_2, mlp.c_fc, mlp.act | mlp.gelu, mlp.c_proj}, ln_f,
    lm_head
  TransformerLens HookedTransformer: its hook points (blocks.L.hook_*,
    attn.hook_q/k/v/z/pattern, mlp.hook_pre/post), embed, ln1, ln2,
    ln_final, unembed.
Names written are HF's (h.L.mlp.in, ...) for every model: TransformerLens'
q/k/v become attn.qkv and its z attn.merged (the same values, reshaped),
and LayerNorm outputs are taken from the LayerNorm modules, since
TransformerLens' hook_normalized is recorded before the gain and bias.
"""
import warnings

from ._arrays import Activations

def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


class capture(Activations):
    """Records one forward pass of model (the first one inside the block):

        with gpt2ffn.capture(model) as cap:
            model(ids)
        gpt2ffn.verify("gpt2/", cap)          # or cap.save("ref.safetensors")

    Later passes (generation) are not recorded; cap.passes counts them all.
    cap.notes says which stages could not be recorded and why (nanoGPT's
    logits of the last position only, attention probabilities of a fused
    kernel). probs=False leaves the attention probabilities out (they are
    n_head T^2 per layer)."""

    def __init__(self, model, probs=True):  # noqa: D107
        super().__init__(metadata={"producer": "gpt2ffn.capture"})
        self.model = model
        self.kind = None
        self.passes = 0
        self._probs = probs
        self._handles = []
        self._expected = []
        self._pending = {}
        self._planned = {}  # (module id, "in" / "out") -> (module, [(name, fn)])
        self._calls = []

    def __enter__(self):
        try:  # every name of a module several blocks share (one GELU instance)
            mods = dict(self.model.named_modules(remove_duplicate=False))
        except TypeError:
            mods = dict(self.model.named_modules())
        if getattr(self.model, "training", False):
            warnings.warn("gpt2ffn.capture: the model is in training mode (dropout is active): call model.eval() "
                          "first", stacklevel=2)
        if "blocks.0.hook_resid_pre" in mods:
            self._plan_tl(mods)
        else:
            self._plan_gpt2(mods)
        self._register()
        self.metadata["producer"] = "gpt2ffn.capture (%s)" % self.kind
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        missing = [n for n in self._expected if n not in self]
        if self.passes and missing:
            self.notes.append("not recorded: %s" % ", ".join(missing[:8] + (["..."] if len(missing) > 8 else [])))
        return False

    # ---- hooks ---------------------------------------------------------------
    # A module may serve several stages (one activation instance shared by
    # every block): its hook records the k-th call of a pass under the k-th
    # name planned for it. Hooks are registered when the plan is complete.

    def _rec(self, name, value):
        if self.passes <= 1 and name not in self:
            self.put(name, value)

    def _out(self, mod, name, fn=None):
        self._plan(mod, "out", name, fn)

    def _in(self, mod, name):
        self._plan(mod, "in", name, None)

    def _plan(self, mod, where, name, fn):
        self._expected.append(name)
        self._planned.setdefault((id(mod), where), (mod, []))[1].append((name, fn))

    def _register(self):
        for (_, where), (mod, names) in self._planned.items():
            calls = [0]
            self._calls.append(calls)

            def record(value, names=names, calls=calls):
                k = calls[0]
                calls[0] += 1
                if k < len(names):
                    name, fn = names[k]
                    self._rec(name, fn(value) if fn else value)
            if where == "in":
                self._handles.append(mod.register_forward_pre_hook(
                    lambda m, args, record=record: record(args[0]) if args else None))
            else:
                self._handles.append(mod.register_forward_hook(lambda m, args, out, record=record: record(_first(out))))

    def _entry(self, mod, name):
        """The model's entry (the token embedding): each call starts a pass."""
        def hook(m, args):
            self.passes += 1
            for c in self._calls:
                c[0] = 0
            if args:
                self._rec(name, args[0])
        self._expected.append(name)
        self._handles.append(mod.register_forward_pre_hook(hook))

    # ---- HF, nanoGPT, minGPT ---------------------------------------------------

    def _plan_gpt2(self, mods):
        prefix = next((k[:-len("h.0")] for k in mods if k.endswith("h.0") and k[:-3] + "h.0.ln_1" in mods), None)
        if prefix is None:
            raise TypeError("gpt2ffn.capture: %s is not a GPT-2 gpt2ffn knows: no [transformer.]h.0.ln_1 module "
                            "(HF GPT2LMHeadModel / GPT2Model, nanoGPT or minGPT GPT) and no blocks.0.hook_resid_pre "
                            "(TransformerLens HookedTransformer)" % type(self.model).__name__)
        c_attn = mods.get(prefix + "h.0.attn.c_attn")
        self.kind = "HF transformers" if type(c_attn).__name__ == "Conv1D" else \
            "nanoGPT" if prefix + "h.0.mlp.gelu" in mods else "minGPT" if prefix + "h.0.mlp.act" in mods else "GPT-2"
        if prefix + "wte" in mods:
            self._entry(mods[prefix + "wte"], "input_ids")
        if prefix + "drop" in mods:
            self._out(mods[prefix + "drop"], "embed")
        L = 0
        while prefix + "h.%d" % L in mods:
            self._plan_block(mods, prefix + "h.%d." % L, "h.%d." % L)
            self._out(mods[prefix + "h.%d" % L], "h.%d.out" % L)
            L += 1
        if prefix + "ln_f" in mods:
            self._out(mods[prefix + "ln_f"], "ln_f.out")
        head = mods.get("lm_head")
        if head is not None:
            self._expected.append("logits")
            self._handles.append(head.register_forward_hook(self._logits_hook))

    def _plan_block(self, mods, p, h):
        get = lambda k: mods.get(p + k)  # noqa: E731
        self._in(get("ln_1"), h + "in")
        self._out(get("ln_1"), h + "ln_1.out")
        for k, name, hook in (("attn.c_attn", "attn.qkv", self._out), ("attn.c_proj", "attn.merged", self._in),
                              ("attn.c_proj", "attn.out", self._out), ("ln_2", "mid", self._in),
                              ("ln_2", "mlp.in", self._out), ("mlp.c_fc", "mlp.pre", self._out),
                              ("mlp.c_proj", "mlp.out", self._out)):
            if get(k) is not None:
                hook(get(k), h + name)
        act = get("mlp.act") or get("mlp.gelu")
        if act is not None:
            self._out(act, h + "mlp.act")
        if self._probs and get("attn.attn_dropout") is not None:
            self._out(get("attn.attn_dropout"), h + "attn.probs")
        if self._probs and get("attn") is not None:  # HF returns them with output_attentions=True
            self._handles.append(get("attn").register_forward_hook(self._probs_hook(h + "attn.probs")))
            if get("attn.attn_dropout") is None:
                self._expected.append(h + "attn.probs")

    def _probs_hook(self, name):
        def hook(m, args, output):
            for x in output[1:] if isinstance(output, (tuple, list)) else ():
                if getattr(x, "dim", lambda: 0)() == 4 and x.shape[-1] == x.shape[-2]:
                    self._rec(name, x)
        return hook

    def _logits_hook(self, m, args, output):
        z = _first(output)
        ids = self.get("input_ids")
        if ids is not None and self.passes <= 1 and "logits" not in self and z.shape[:-1] != ids.shape:
            self.notes.append("logits not recorded: lm_head ran on %d of %d positions (nanoGPT computes only the "
                              "last position's without targets: call model(idx, targets))" %
                              (z.shape[-2] if z.dim() > 1 else 1, ids.shape[-1]))
            self._expected.remove("logits")
            return
        self._rec("logits", z)

    # ---- TransformerLens ---------------------------------------------------------

    def _plan_tl(self, mods):
        self.kind = "TransformerLens"
        self._entry(mods["embed"], "input_ids")
        for k in ("hook_embed", "hook_pos_embed"):
            if k in mods:
                self._handles.append(mods[k].register_forward_hook(self._tl_embed_hook(k)))
        self._expected.append("embed")
        L = 0
        while "blocks.%d" % L in mods:
            b, h = "blocks.%d." % L, "h.%d." % L
            for k, name in (("hook_resid_pre", "in"), ("ln1", "ln_1.out"), ("attn.hook_z", "attn.merged"),
                            ("hook_attn_out", "attn.out"), ("hook_resid_mid", "mid"), ("ln2", "mlp.in"),
                            ("mlp.hook_pre", "mlp.pre"), ("mlp.hook_post", "mlp.act"), ("hook_mlp_out", "mlp.out"),
                            ("hook_resid_post", "out")):
                if b + k in mods:
                    self._out(mods[b + k], h + name, (lambda z: z.flatten(-2)) if k == "attn.hook_z" else None)
            if self._probs and b + "attn.hook_pattern" in mods:
                self._out(mods[b + "attn.hook_pattern"], h + "attn.probs")
            for part in "qkv":
                if b + "attn.hook_" + part in mods:
                    self._handles.append(mods[b + "attn.hook_" + part].register_forward_hook(
                        self._tl_qkv_hook(h, part)))
            self._expected.append(h + "attn.qkv")
            L += 1
        for k, name in (("ln_final", "ln_f.out"), ("unembed", "logits")):
            if k in mods:
                self._out(mods[k], name)

    def _tl_embed_hook(self, k):
        def hook(m, args, output):
            self._pending[k] = output.detach().clone()  # a later in-place op must not reach it
            if len(self._pending.keys() & {"hook_embed", "hook_pos_embed"}) == 2:
                self._rec("embed", self._pending.pop("hook_embed") + self._pending.pop("hook_pos_embed"))
        return hook

    def _tl_qkv_hook(self, h, part):
        import torch

        def hook(m, args, output):
            got = self._pending.setdefault(h, {})
            got[part] = output.detach().flatten(-2).clone()
            if len(got) == 3:
                self._rec(h + "attn.qkv", torch.cat([got["q"], got["k"], got["v"]], dim=-1))
                del self._pending[h]
        return hook
