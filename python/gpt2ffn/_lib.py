"""verify, diff and run through libgpt2ffn.so (ctypes over src/bind/g2f_bind.h).

The library is looked for, in this order: the environment's GPT2FFN_LIB;
beside the package as `cmake --install` puts them (LIBDIR/gpt2ffn/
libgpt2ffn.so, the package in LIBDIR/gpt2ffn/python/gpt2ffn); the
checkout's build/libgpt2ffn.so (the package in python/gpt2ffn).
"""
import ctypes
import json
import os
import shutil
import tempfile

import numpy as np

from ._arrays import Activations, read_safetensors, to_numpy


class GPT2FFNError(Exception):
    """What the CLI reports with exit code 2: a usage error or bad input (the
    message names the file, tensor or option, as the CLI's one line does)."""


class Report(dict):
    """A verify or diff report: the JSON report as a dict (the schema of
    `gpt2ffn verify --json`), with .exit_code (0 pass / equivalent, 1
    mismatch / different, the CLI's), .passed and .text (the text report)."""

    def __init__(self, data, exit_code, text):
        super().__init__(data)
        self.exit_code = exit_code
        self.passed = exit_code == 0
        self.text = text

    def __repr__(self):
        return "<Report %s: %s>" % (self.get("status"), self.get("verdict", self.get("summary", "")))


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_uint64)), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


class _VerifyOpts(ctypes.Structure):
    _fields_ = [(k, ctypes.c_char_p) for k in ("config", "gelu", "layers", "accept", "rtol", "atol", "threads",
                                               "n_head", "tl_normalized")]


class _RunOpts(ctypes.Structure):
    _fields_ = [(k, ctypes.c_char_p) for k in ("config", "gelu", "save", "names", "threads", "n_head")]


_lib = None
_MSG = 4096


def library_path():
    """The libgpt2ffn.so this package uses (GPT2FFNError when none is found)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("GPT2FFN_LIB")
    cands = [env] if env else [os.path.join(here, "..", "..", "libgpt2ffn.so"),
                               os.path.join(here, "..", "..", "build", "libgpt2ffn.so")]
    for c in cands:
        if os.path.isfile(c):
            return os.path.realpath(c)
    raise GPT2FFNError("libgpt2ffn.so not found (%s): build it (scripts/build build, CMake option GPT2FFN_SHARED) "
                       "or set GPT2FFN_LIB to its path" % ", ".join(cands))


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())
        P, S, I = ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
        out = ctypes.POINTER(ctypes.c_void_p)
        lib.g2f_bind_verify.argtypes = [P, P, ctypes.POINTER(_Tensor), S, ctypes.POINTER(P), S, P,
                                        ctypes.POINTER(_VerifyOpts), out, out, ctypes.c_char_p, S]
        lib.g2f_bind_verify.restype = I
        lib.g2f_bind_diff.argtypes = [P, P, P, P, out, out, ctypes.c_char_p, S]
        lib.g2f_bind_diff.restype = I
        lib.g2f_bind_run.argtypes = [P, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_uint64), S, S,
                                     ctypes.POINTER(_RunOpts), P, ctypes.c_char_p, S]
        lib.g2f_bind_run.restype = I
        lib.g2f_bind_version.restype = P
        lib.g2f_bind_free.argtypes = [ctypes.c_void_p]
        _lib = lib
    return _lib


def version():
    return _load().g2f_bind_version().decode()


def _enc(v):
    return None if v is None else os.fsencode(v) if isinstance(v, os.PathLike) else str(v).encode("utf-8")


def _str_opt(name, v):
    """An option's value as the CLI's string: lists joined by ',', numbers by repr."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise TypeError("%s: expected a value, not %r" % (name, v))
    if isinstance(v, (list, tuple, set, range)):
        return b",".join(_enc(x) for x in v)
    if isinstance(v, float):
        return repr(v).encode()
    return _enc(v)


def _take(p):
    """A malloc'd C string returned by the library, decoded and freed."""
    if not p.value:
        return None
    s = ctypes.string_at(p.value).decode("utf-8", "replace")
    _load().g2f_bind_free(p.value)
    return s


def _report(rc, jp, tp, msg):
    j, t = _take(jp), _take(tp)
    if rc not in (0, 1):
        raise GPT2FFNError(msg.value.decode("utf-8", "replace"))
    if j is None:
        raise GPT2FFNError("the library returned no report (out of memory)")
    return Report(json.loads(j), rc, t)


def _tensors(acts):
    """The activations as g2f_bind_tensor entries (and what keeps their bytes alive)."""
    raw = acts.raw if isinstance(acts, Activations) else (lambda n: to_numpy(acts[n]))
    names = list(acts)
    arr = (_Tensor * max(len(names), 1))()
    keep = []
    for i, n in enumerate(names):
        a, dt = raw(n)
        shape = (ctypes.c_uint64 * max(a.ndim, 1))(*a.shape)
        keep += [a, shape]
        arr[i] = _Tensor(_enc(n), dt.encode(), a.ndim, shape, a.ctypes.data if a.nbytes else None, a.nbytes)
    return arr, len(names), keep


_VERIFY_KEYS = ("config", "gelu", "layers", "accept", "rtol", "atol", "threads", "n_head", "tl_normalized")


def verify(checkpoint, activations, label=None, **options):
    """gpt2ffn verify CHECKPOINT ACTIVATIONS, returning the report (a dict
    with the JSON report's schema, see Report). activations: a capture, a
    Recorder, any mapping of stage name -> array (numpy, torch, lists),
    verified in memory without a file, or the path of a fixture file.
    label names in-memory activations in the report ("fixtures").
    options, as the CLI's: gelu="erf", layers="0,2-5" or [0, 2], accept=
    "weights_f16_rounded" or a list, rtol=, atol=, threads=, n_head=,
    config="config.json", tl_normalized="after" | "before" | "auto". Raises GPT2FFNError for what the CLI refuses
    (exit 2), TypeError for an unknown option."""
    bad = set(options) - set(_VERIFY_KEYS)
    if bad:
        raise TypeError("verify: unknown option %s (known: %s)" % (", ".join(sorted(bad)), ", ".join(_VERIFY_KEYS)))
    lib = _load()
    opts = _VerifyOpts(*[_str_opt(k, options.get(k)) for k in _VERIFY_KEYS])
    jp, tp, msg = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.create_string_buffer(_MSG)
    if isinstance(activations, (str, bytes, os.PathLike)):
        rc = lib.g2f_bind_verify(_enc(checkpoint), _enc(activations), None, 0, None, 0, None, ctypes.byref(opts),
                                 ctypes.byref(jp), ctypes.byref(tp), msg, _MSG)
        return _report(rc, jp, tp, msg)
    arr, n, keep = _tensors(activations)
    meta = getattr(activations, "metadata", None) or {}
    pairs = [_enc(x) for kv in meta.items() for x in kv]
    cmeta = (ctypes.c_char_p * max(len(pairs), 1))(*pairs)
    rc = lib.g2f_bind_verify(_enc(checkpoint), None, arr, n, cmeta, len(meta), _enc(label), ctypes.byref(opts),
                             ctypes.byref(jp), ctypes.byref(tp), msg, _MSG)
    del keep
    return _report(rc, jp, tp, msg)


def diff(a, b, accept=None, only=None):
    """gpt2ffn diff A B [--accept LIST] [--only ffn|block]: the report as a
    dict (the JSON report's schema), .exit_code 0 when equivalent."""
    lib = _load()
    jp, tp, msg = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.create_string_buffer(_MSG)
    rc = lib.g2f_bind_diff(_enc(a), _enc(b), _str_opt("accept", accept), _str_opt("only", only), ctypes.byref(jp),
                           ctypes.byref(tp), msg, _MSG)
    return _report(rc, jp, tp, msg)


_RUN_KEYS = ("config", "gelu", "save", "names", "threads", "n_head")


def run(checkpoint, ids, **options):
    """gpt2ffn run CHECKPOINT --ids ...: the whole forward of token ids
    ([..., T], any integer array), as Activations (input_ids, logits, and
    the stages save= names: "all" or a list of run's --save words).
    options: save, names ("hf" / "tl"), gelu, n_head, threads, config.
    The library writes its output file (atomically) into a private
    temporary folder, read back and removed here."""
    bad = set(options) - set(_RUN_KEYS)
    if bad:
        raise TypeError("run: unknown option %s (known: %s)" % (", ".join(sorted(bad)), ", ".join(_RUN_KEYS)))
    lib = _load()
    a = np.asarray(ids)
    if a.dtype.kind not in "iu" or a.ndim < 1 or a.size == 0:
        raise GPT2FFNError("run: ids must be a non-empty integer array [..., T], got %s %s" % (a.dtype, list(a.shape)))
    a = np.ascontiguousarray(a, dtype=np.int64)
    lead = (ctypes.c_uint64 * max(a.ndim - 1, 1))(*a.shape[:-1])
    opts = _RunOpts(*[_str_opt(k, options.get(k)) for k in _RUN_KEYS])
    msg = ctypes.create_string_buffer(_MSG)
    tmp = tempfile.mkdtemp(prefix="gpt2ffn-run-")
    try:
        out = os.path.join(tmp, "run.safetensors")
        rc = lib.g2f_bind_run(_enc(checkpoint), a.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), lead, a.ndim - 1,
                              a.shape[-1], ctypes.byref(opts), _enc(out), msg, _MSG)
        if rc != 0:
            raise GPT2FFNError(msg.value.decode("utf-8", "replace"))
        return read_safetensors(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
