"""The package without torch: verify() gives the CLI's JSON report byte for
byte (from a fixture file, and from the same tensors in memory), refuses
what the CLI refuses with its message, refuses hostile in-memory tensors
(exit 2, the tensor named), records a numpy port written as functions
(Recorder.record / .wrap) so that a correct port passes with every stage
compared and an erf-GELU port fails with the cause named, saves fixtures
the CLI verifies, and diff() / run() match the CLI's."""
import ctypes
import os
import stat
import tempfile
import threading

import numpy as np

from util import check, cli, cli_json, finish, fx, raises

import gpt2ffn
import numpy_gpt2
from gpt2ffn import _lib

TINY = fx("tiny")

# ---- verify from a file and from memory: the CLI's report ------------------------------------
CASES = [
    (TINY, fx("tiny_tanh.safetensors"), {}),
    (TINY, fx("tiny_erf.safetensors"), {}),
    (TINY, fx("tiny_erf.safetensors"), {"gelu": "erf"}),
    (TINY, fx("tiny_tanh_f16.safetensors"), {"layers": "0,2-3"}),
    (TINY, fx("diag", "fc_bias_missing.safetensors"), {"rtol": 1e-3, "atol": 1e-4}),
    (TINY, fx("model", "clean.safetensors"), {}),
    (TINY, fx("model", "attn_scale_missing_layer2.safetensors"), {"threads": 1}),
    (TINY, fx("model", "clean_tl_i32.safetensors"), {}),
    (TINY, fx("model", "clean_tl3.safetensors"), {}),  # hook_normalized before gain and bias: told by the values
    (TINY, fx("block", "clean_tl3.safetensors"), {"tl_normalized": "after"}),  # ... or as told: a FAIL
    (TINY, fx("model", "weights_f16_rounded.safetensors"), {"accept": ["weights_f16_rounded"]}),
    (TINY, fx("block", "clean.safetensors"), {"layers": [1, 3], "n_head": 4}),
    (fx("small"), fx("model", "lm_head_untied.safetensors"), {}),
    (fx("torch", "nobias_ckpt.pt"), fx("torch", "nobias_ref.safetensors"), {}),
    (fx("formats2", "tiny_llmc.bin"), fx("llmc", "tiny_debug_state.bin"), {}),  # llm.c's debug state: the loss
]


def cli_args(opts):
    out = []
    for k, v in opts.items():
        out += ["--" + k.replace("_", "-"), ",".join(map(str, v)) if isinstance(v, list) else str(v)]
    return out


r = gpt2ffn.verify(TINY, fx("model", "clean_tl3.safetensors"))
check(r.passed and {x["reading"] for x in r["tl_normalized"]} == {"before"}, "TransformerLens 3 captures read before")
check(raises(gpt2ffn.GPT2FFNError, lambda: gpt2ffn.verify(TINY, fx("model", "clean_tl3.safetensors"),
                                                            tl_normalized="3")), "a bad tl_normalized is refused")

for ck, f, opts in CASES:
    rc, want, err = cli_json("verify", ck, f, *cli_args(opts))
    got = gpt2ffn.verify(ck, f, **opts)
    check(got.exit_code == rc, "%s %s: exit %d, CLI %d" % (f, opts, got.exit_code, rc))
    check(dict(got) == want, "%s %s: the JSON differs from the CLI's" % (f, opts))
    text_rc, text, _ = cli("verify", ck, f, *cli_args(opts))
    check(got.text == text, "%s: the text report differs from the CLI's" % f)
    if f.endswith(".bin"):
        continue  # gpt2ffn.load reads the fixture formats a capture writes, not llm.c's state
    mem = gpt2ffn.verify(ck, gpt2ffn.load(f), label=f, **opts)
    check(mem.exit_code == rc and dict(mem) == want, "%s %s: in memory, the JSON differs from the CLI's" % (f, opts))
    check(mem.text == text, "%s: in memory, the text report differs from the CLI's" % f)
    check(got.passed == (rc == 0), "passed")

# ---- refusals: the CLI's messages ------------------------------------------------------------
for opts in ({"gelu": "erff"}, {"layers": "3-1"}, {"layers": "9"}, {"accept": "nonsense"}, {"rtol": -1},
             {"threads": 0}, {"n_head": "x"}):
    rc, _, err = cli("verify", TINY, fx("tiny_tanh.safetensors"), *cli_args(opts))
    e = raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, fx("tiny_tanh.safetensors"), **opts)
    check(rc == 2 and e is not None and "gpt2ffn: %s\n" % e == err, "%s: %r vs the CLI's %r" % (opts, e, err))
raises(TypeError, gpt2ffn.verify, TINY, fx("tiny_tanh.safetensors"), gelu_form="erf", contains="gelu_form")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, fx("nonexistent"), fx("tiny_tanh.safetensors"), contains="nonexistent")
pair = {k: v for k, v in gpt2ffn.load(fx("tiny_tanh.safetensors")).items() if k.startswith("h.0.mlp.")}
r = gpt2ffn.verify(TINY, dict(pair, **{"h.0.mlp.output": pair["h.0.mlp.out"]}))
check(r["unknown_tensors"] and r["unknown_tensors"][0].get("did_you_mean") == "h.0.mlp.out",
      "an unknown name is reported with the nearest: %s" % r["unknown_tensors"])
e = raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, pair, layers="1")
check(e is not None and "nothing was compared in the selected layers" in str(e), "nothing compared: %s" % e)
raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, {"h.0.mlp.output": pair["h.0.mlp.out"]},
       contains="no fixture tensors")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, {"h.0.mlp.in": np.zeros((2, 63), np.float32),
                                                     "h.0.mlp.out": np.zeros((2, 63), np.float32)}, contains="n_embd")
raises(TypeError, gpt2ffn.verify, TINY, {"h.0.mlp.in": np.zeros((2, 64), bool)}, contains="dtype bool")
# NaN never passes, in memory too
a = gpt2ffn.load(fx("tiny_tanh.safetensors"))
out = np.array(a["h.1.mlp.out"])
out[0, 0, 0] = np.nan
a["h.1.mlp.out"] = out
check(gpt2ffn.verify(TINY, a).exit_code == 1, "a NaN in memory fails")

# ---- the loss as a stage, in memory: llm.c's state as arrays -------------------------------------
raw = open(fx("llmc", "tiny_debug_state.bin"), "rb").read()
B, T, V = int(np.frombuffer(raw, np.int32, 1, 8)[0]), int(np.frombuffer(raw, np.int32, 1, 12)[0]), 96
state = {"input_ids": np.frombuffer(raw, np.int32, B * T, 1024).reshape(B, T),
         "targets": np.frombuffer(raw, np.int32, B * T, 1024 + 4 * B * T).reshape(B, T),
         "logits": np.frombuffer(raw, np.float32, B * T * V, 1024 + 8 * B * T).reshape(B, T, V),
         "loss": np.frombuffer(raw, np.float32, 1, 1024 + 8 * B * T + 4 * B * T * V).reshape(())}
r = gpt2ffn.verify(TINY, state)
check(r.passed and r["forward"]["loss"]["status"] == "pass", "the state's arrays pass: %s" % r.get("verdict"))
check(r["forward"]["loss"]["gradients_not_checked"] == 0, "no gradients in memory")
moved = dict(state, loss=state["loss"] + np.float32(1e-4))
r = gpt2ffn.verify(TINY, moved)
check(r.exit_code == 1 and r["forward"]["loss"]["status"] == "fail" and r["verdict"].startswith(
    "first divergence: loss"), "a moved loss fails at the loss: %s" % r.get("verdict"))
raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, dict(state, targets=state["targets"][:, :3]),
       contains="tensor 'targets': shape [4, 3], but input_ids' is [4, 16]")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.verify, TINY, dict(state, targets=state["targets"] + 90),
       contains="targets: token id")

# ---- hostile tensors through the C entry point itself ------------------------------------------
lib = _lib._load()


def raw_verify(tensors):
    arr = (_lib._Tensor * len(tensors))(*tensors)
    msg = ctypes.create_string_buffer(4096)
    jp, tp = ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.g2f_bind_verify(TINY.encode(), None, arr, len(tensors), None, 0, b"mem", None, ctypes.byref(jp),
                             ctypes.byref(tp), msg, 4096)
    check(rc != 2 or (not jp.value and not tp.value), "no report with exit 2")
    lib.g2f_bind_free(jp.value)
    lib.g2f_bind_free(tp.value)
    return rc, msg.value.decode()


buf = np.zeros((2, 6, 64), np.float32)
s3 = (ctypes.c_uint64 * 3)(2, 6, 64)
huge = (ctypes.c_uint64 * 3)(1 << 40, 1 << 40, 64)
nine = (ctypes.c_uint64 * 9)(*([1] * 9))
good = _lib._Tensor(b"h.0.mlp.in", b"F32", 3, s3, buf.ctypes.data, buf.nbytes)
out_t = _lib._Tensor(b"h.0.mlp.out", b"F32", 3, s3, buf.ctypes.data, buf.nbytes)
hostile = [
    ([_lib._Tensor(b"h.0.mlp.in", b"F32", 3, s3, buf.ctypes.data, buf.nbytes - 4), out_t], "'h.0.mlp.in'"),
    ([_lib._Tensor(b"h.0.mlp.in", b"F32", 3, huge, buf.ctypes.data, buf.nbytes), out_t], "overflows"),
    ([_lib._Tensor(b"h.0.mlp.in", b"F32", 9, nine, buf.ctypes.data, 4), out_t], "dimensions"),
    ([_lib._Tensor(b"h.0.mlp.in", b"Q8_0", 3, s3, buf.ctypes.data, buf.nbytes), out_t], "dtype 'Q8_0'"),
    ([_lib._Tensor(b"h.0.mlp.in", b"BOOL", 3, s3, buf.ctypes.data, buf.nbytes), out_t], "dtype 'BOOL'"),
    ([_lib._Tensor(None, b"F32", 3, s3, buf.ctypes.data, buf.nbytes), out_t], "tensor 0: a name"),
    ([_lib._Tensor(b"h.0.mlp.in", None, 3, s3, buf.ctypes.data, buf.nbytes), out_t], "dtype '(none)'"),
    ([_lib._Tensor(b"h.0.mlp.in", b"F32", 3, s3, None, buf.nbytes), out_t], "no data"),
    ([good, out_t, good], "'h.0.mlp.in' is given twice"),
    ([_lib._Tensor(b"x" * 1024, b"F32", 3, s3, buf.ctypes.data, buf.nbytes)], "a name of 1 to 1023"),
]
for tensors, want in hostile:
    rc, msg = raw_verify(tensors)
    check(rc == 2 and want in msg and msg.startswith("mem: "), "hostile %r: exit %d, %r" % (want, rc, msg))
rc, msg = raw_verify([good, out_t])
check(rc in (0, 1), "the well-formed pair is compared (exit %d: %s)" % (rc, msg))

# ---- a numpy port written as functions, recorded by wrapping them -------------------------------
W = numpy_gpt2.weights(fx("tiny", "model.safetensors"))
ids = [37, 11, 12, 8, 31, 73, 5, 0]


def record_port(gelu=None, block=None):
    rec = gpt2ffn.Recorder()
    saved = {k: getattr(numpy_gpt2, k) for k in ("gpt2", "block", "attention", "ffn", "gelu", "softmax")}
    if gelu:
        numpy_gpt2.gelu = gelu
    if block:
        numpy_gpt2.block = block
    try:
        numpy_gpt2.gpt2 = rec.wrap(numpy_gpt2.gpt2, args=["input_ids"], out="logits")
        numpy_gpt2.block = rec.wrap(numpy_gpt2.block, args=["in"], out="out")
        numpy_gpt2.attention = rec.wrap(numpy_gpt2.attention, args=["ln_1.out"], out="attn.out")
        numpy_gpt2.softmax = rec.wrap(numpy_gpt2.softmax, out="attn.probs")
        numpy_gpt2.ffn = rec.wrap(numpy_gpt2.ffn, args=["mlp.in"], out="mlp.out")
        numpy_gpt2.gelu = rec.wrap(numpy_gpt2.gelu, args=["mlp.pre"], out="mlp.act")
        numpy_gpt2.gpt2(ids, W, 4)
        numpy_gpt2.gpt2(ids[:3], W, 4)  # a second pass (generation): not recorded
    finally:
        for k, v in saved.items():
            setattr(numpy_gpt2, k, v)
    return rec


rec = record_port()
check(len(rec) == 2 + 4 * 9 and rec.repeated > 0 and rec.passes == 2, "%d tensors, %d repeated" % (len(rec), rec.repeated))
check(rec["input_ids"].dtype == np.int64 and rec["h.3.attn.probs"].shape == (4, 8, 8), "shapes and dtypes")
r = gpt2ffn.verify(TINY, rec)
check(r.passed, "the numpy port passes: %s" % r.get("verdict"))
check(r["fixtures"] == "(activations in memory)", "the default label: %s" % r["fixtures"])
stages = {(s["stage"], s["status"]) for L in r["layers"] for s in L.get("stages", [])}
check(("attn", "pass") in stages and ("mlp", "pass") in stages and ("ln_1", "pass") in stages,
      "every stage compared: %s" % sorted(stages))
check(r["model"] and all(L["status"] == "pass" for L in r["layers"]), "every layer passes")

# residuals added in place: each block's input array ends up holding its output; what was
# recorded is what the port computed at the time (it failed at embed with views kept, arguments
# taken after the call)
inplace = record_port(block=numpy_gpt2.block_inplace)
check(sorted(inplace) == sorted(rec) and all(np.array_equal(inplace[k], rec[k]) for k in rec),
      "the in-place port records what the plain one does: %s" %
      [k for k in rec if k in inplace and not np.array_equal(inplace[k], rec[k])][:4])
r = gpt2ffn.verify(TINY, inplace)
check(r.passed, "the in-place numpy port passes: %s" % r.get("verdict"))

bad = record_port(gelu=numpy_gpt2.gelu_erf)
r = gpt2ffn.verify(TINY, bad, label="erf port")
check(r.exit_code == 1 and r["fixtures"] == "erf port", "the erf port fails")
check("erf" in r["verdict"] and r["first_divergence"] == 0, "the cause is named: %s" % r["verdict"])

# the same recording saved in every format the CLI reads
with tempfile.TemporaryDirectory() as d:
    for name in ("ref.safetensors", "ref.npz", "ref_npy"):
        path = rec.save(os.path.join(d, name))
        rc, out, err = cli("verify", TINY, path)
        check(rc == 0, "%s: the CLI verifies the saved fixture (exit %d: %s%s)" % (name, rc, out[-200:], err))
        back = gpt2ffn.load(path)
        check(sorted(back) == sorted(rec) and all(np.array_equal(back[k], rec[k]) for k in rec), name + " reads back")
    raises(FileExistsError, rec.save, os.path.join(d, "ref_npy"))
    check(sorted(os.listdir(d)) == ["ref.npz", "ref.safetensors", "ref_npy"], "no temporary file is left")
    # a named pipe (as /dev/null) is written in place, never renamed over
    pipe, got = os.path.join(d, "pipe.safetensors"), []
    os.mkfifo(pipe)
    def drain():
        with open(pipe, "rb") as f:
            got.append(f.read())
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    rec.save(pipe)
    reader.join(30)
    check(stat.S_ISFIFO(os.stat(pipe).st_mode) and got and len(got[0]) > 8,
          "a named pipe gets the file and stays a pipe")

# ---- record by name: names and shapes checked at the line that records ------------------------------
rec = gpt2ffn.Recorder()
rec.record("input_ids", np.array([[1, 2, 3]]))
rec.record("mlp.in", np.zeros((1, 3, 64), np.float32), layer=0)
raises(ValueError, rec.record, "mlp.inn", np.zeros((1, 3, 64)), layer=0, contains="did you mean 'mlp.in'")
raises(ValueError, rec.record, "h.0.mlp.output", np.zeros((1, 3, 64)), contains="did you mean 'h.0.mlp.out'")
raises(ValueError, rec.record, "mlp.out", np.zeros((1, 3, 64)), contains="per layer")
raises(ValueError, rec.record, "logits", np.zeros((1, 3, 96)), layer=2, contains="model-level")
raises(ValueError, rec.record, "mlp.out", np.zeros((1, 3, 65), np.float32), layer=0,
       contains="'h.0.mlp.out' has n_embd 65 but 'h.0.mlp.in' has 64")
raises(ValueError, rec.record, "mlp.out", np.zeros((1, 4, 64), np.float32), layer=0, contains="positions 4")
raises(ValueError, rec.record, "mlp.out", np.zeros((2, 3, 64), np.float32), layer=0, contains="sequence dimensions")
raises(ValueError, rec.record, "mlp.in", np.zeros((1, 3, 64), np.float32), layer=0, contains="recorded twice")
check("h.0.mlp.out" not in rec, "a refused record is not kept")
rec.record("h.0.mlp.out", np.zeros((1, 3, 64), np.float32))
raises(ValueError, rec.wrap, lambda x: x, out="mlp.outt")

# ---- diff and run: the CLI's ---------------------------------------------------------------------
for b, opts in ((fx("formats2", "tiny.gguf"), {}), (fx("formats2", "tiny_q8.gguf"), {"accept": "weights_quantized"}),
                (fx("formats2", "tiny_llmc.bin"), {"only": "ffn"})):
    rc, want, _ = cli_json("diff", TINY, b, *cli_args(opts))
    got = gpt2ffn.diff(TINY, b, **opts)
    check(got.exit_code == rc and dict(got) == want, "diff %s %s: differs from the CLI's" % (b, opts))
raises(gpt2ffn.GPT2FFNError, gpt2ffn.diff, TINY, fx("tiny_tanh.safetensors"))
raises(gpt2ffn.GPT2FFNError, gpt2ffn.diff, TINY, TINY, only="attn", contains="--only 'attn'")

out = gpt2ffn.run(TINY, [[5, 17, 3, 42], [1, 2, 3, 4]], save="all")
with tempfile.TemporaryDirectory() as d:
    rc, _, err = cli("run", TINY, "--ids", "5,17,3,42;1,2,3,4", "-o", os.path.join(d, "c.safetensors"), "--save", "all")
    want = gpt2ffn.load(os.path.join(d, "c.safetensors"))
    check(rc == 0 and list(out) == list(want), "run writes the CLI's tensors")
    check(all(np.array_equal(out[k], want[k]) for k in want), "run's values are the CLI's, bit for bit")
    check(out.metadata["checkpoint_sha256"] == want.metadata["checkpoint_sha256"], "run's metadata")
check(out["logits"].shape == (2, 4, 96) and out["input_ids"].dtype == np.int64, "run's shapes")
check(gpt2ffn.verify(TINY, out).passed, "run's output verifies")
tl = gpt2ffn.run(TINY, np.array([5, 17, 3]), save=["mlp.in", "attn.qkv"], names="tl")
check("blocks.0.attn.hook_q" in tl and "blocks.3.ln2.hook_normalized" in tl, "run with TransformerLens names")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.run, TINY, [[5, 96]], contains="token id 96")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.run, TINY, [1.5], contains="integer")
raises(gpt2ffn.GPT2FFNError, gpt2ffn.run, TINY, [1], save="everything", contains="--save")
finish()
