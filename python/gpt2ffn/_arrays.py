"""Named activations as numpy arrays, and their files: safetensors (written
and read here in pure Python), NumPy .npz, or a folder of .npy files, the
formats `gpt2ffn verify` reads."""
import collections.abc
import json
import os
import stat
import struct

import numpy as np

# numpy dtype -> safetensors dtype (the ones gpt2ffn's fixtures hold)
_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
           np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}
_NUMPY = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32, "I64": np.int64,
          "BF16": np.uint16}


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def to_numpy(x):
    """x (a numpy array, a torch tensor on any device, a list) as a
    C-ordered little-endian array and its safetensors dtype; bfloat16 is
    kept as its 16 bits (dtype "BF16"), so no rounding is hidden from the
    tolerances. Integers become I64 (token ids); other dtypes are refused.
    Always a copy: a port that adds its residual in place (x += attn(...))
    rewrites the tensor it recorded a moment before, and a view would then
    hold the later value (a correct port failed at embed)."""
    if _is_torch(x):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return np.array(t.contiguous().view(torch.int16).numpy().view(np.uint16), order="C"), "BF16"
        x = t.numpy()
    a = np.asarray(x)
    if a.dtype.kind in "iu" and a.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        a = a.astype(np.int64)
    key = a.dtype.newbyteorder("=") if a.dtype.byteorder not in "=|" else a.dtype
    if key not in _DTYPES:
        raise TypeError("dtype %s: gpt2ffn reads float32, float16, bfloat16, float64 activations and int32 / int64 "
                        "token ids" % a.dtype)
    return np.array(a, dtype=np.dtype(key).newbyteorder("<"), order="C"), _DTYPES[key]


class Activations(collections.abc.MutableMapping):
    """Activations by stage name ("h.0.mlp.in", "logits", ...), in the order
    recorded. a[name] is a numpy array (bfloat16 widened to float32, exactly;
    a.dtype_of(name) says "BF16"); metadata is written as the file's
    __metadata__ (all strings); notes say what a capture could not record."""

    def __init__(self, arrays=None, metadata=None):
        self._raw = {}
        self.metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
        self.notes = []
        for k, v in (arrays or {}).items():
            self[k] = v

    def put(self, name, value):
        self._raw[str(name)] = to_numpy(value)

    def __setitem__(self, name, value):
        self.put(name, value)

    def __getitem__(self, name):
        a, dt = self._raw[name]
        return (a.astype(np.uint32) << 16).view(np.float32) if dt == "BF16" else a

    def __delitem__(self, name):
        del self._raw[name]

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)

    def __repr__(self):
        return "<%s: %d tensors%s>" % (type(self).__name__, len(self), (", " + "; ".join(self.notes)) if self.notes else "")

    def dtype_of(self, name):
        return self._raw[name][1]

    def raw(self, name):
        """(array, dtype): the bytes as they are written and verified."""
        return self._raw[name]

    def save(self, path):
        """Writes the activations to path for `gpt2ffn verify CHECKPOINT path`:
        safetensors when it ends in .safetensors, NumPy .npz when in .npz,
        else a new folder of NAME.npy files. Atomic: written under a
        temporary name, renamed when complete. Returns path."""
        path = os.fspath(path)
        if not self._raw:
            raise ValueError("nothing to save: no activations were recorded")
        if path.endswith(".safetensors"):
            _atomic(path, lambda f: write_safetensors(f, self._raw, self.metadata))
        elif path.endswith(".npz"):
            self._no_bf16("an .npz")
            _atomic(path, lambda f: _write_npz(f, self._raw, self.metadata))
        else:
            self._no_bf16("a folder of .npy files")
            _write_npy_folder(path, self._raw)
        return path

    def _no_bf16(self, what):
        bf = [n for n, (_, dt) in self._raw.items() if dt == "BF16"]
        if bf:
            raise ValueError("'%s' is bfloat16, which %s cannot hold: save as .safetensors" % (bf[0], what))


def _atomic(path, write):
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        special = False
    if special:  # /dev/null, a pipe: written in place (a rename would replace it by a regular file)
        with open(path, "wb") as f:
            write(f)
        return
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_safetensors(f, raw, metadata):
    """raw: name -> (array, dtype). The header is padded with spaces to a
    multiple of 8 bytes; tensors follow back to back in the given order."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, (a, dt) in raw.items():
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for a, _ in raw.values():
        f.write(a.tobytes())


def _write_npz(f, raw, metadata):
    arrays = {name: a for name, (a, _) in raw.items()}
    if metadata:
        arrays["__metadata__"] = np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)
    np.savez(f, **arrays)


def _write_npy_folder(path, raw):
    if os.path.exists(path):
        raise FileExistsError("%s exists: a folder of .npy files is written new" % path)
    tmp = "%s.tmp-%d" % (path.rstrip("/"), os.getpid())
    os.mkdir(tmp)
    try:
        for name, (a, _) in raw.items():
            np.save(os.path.join(tmp, name + ".npy"), a)
        os.rename(tmp, path)
    finally:
        if os.path.isdir(tmp):
            for e in os.listdir(tmp):
                os.unlink(os.path.join(tmp, e))
            os.rmdir(tmp)


def read_safetensors(path):
    """The tensors and metadata of a safetensors file, as Activations
    (copies). Offsets and sizes are checked against the file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: shorter than a safetensors header" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("%s: header of %d bytes in a file of %d" % (path, n, len(data)))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    out = Activations(metadata=header.pop("__metadata__", None))
    for name, e in header.items():
        dt, shape, (a, b) = e["dtype"], e["shape"], e["data_offsets"]
        if dt not in _NUMPY or not 0 <= a <= b <= len(body):
            raise ValueError("%s: tensor '%s': dtype %s, offsets %d..%d of %d" % (path, name, dt, a, b, len(body)))
        arr = np.frombuffer(body[a:b], dtype=np.dtype(_NUMPY[dt]).newbyteorder("<")).reshape(shape).copy()
        out._raw[name] = (arr, dt)
    return out


def load(path):
    """Activations from a file gpt2ffn reads as a fixture: safetensors, .npz
    (its __metadata__ member as metadata), or a folder of .npy files."""
    path = os.fspath(path)
    if os.path.isdir(path):
        out = Activations()
        for e in sorted(os.listdir(path)):
            if e.endswith(".npy"):
                out[e[:-4]] = np.load(os.path.join(path, e), allow_pickle=False)
        return out
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(z["__metadata__"].tobytes()) if "__metadata__" in z.files else None
            return Activations({k: z[k] for k in z.files if k != "__metadata__"}, meta)
    return read_safetensors(path)
