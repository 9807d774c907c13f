#!/usr/bin/python3
"""Writes tests/corrupt/: small hostile or broken files, one failure mode each,
across every format gpt2ffn reads, and tests/corrupt/MANIFEST, which
tests/test_corrupt_corpus.c replays through the CLI (exit 2, one line on
stderr naming the file and the expected message, nothing on stdout).

    scripts/make_corrupt_corpus.py          # rewrites tests/corrupt/

Deterministic: every byte comes from this script (no timestamps, no random
data), so re-running it reproduces the committed files exactly.

MANIFEST line: PATH ROLE EXPECTED
  PATH      relative to tests/corrupt/ (a file or a folder)
  ROLE      checkpoint: `gpt2ffn inspect PATH`
            fixture:    `gpt2ffn verify <fixtures>/tiny PATH`
            llmc_state: PATH is a folder holding an llm.c checkpoint, checkpoint.bin,
                        and a debug state made for it, state.bin, whose fault only the
                        checkpoint's vocabulary and parameter count reveal: read with
                        them (g2f_llmc_state_open), as `gpt2ffn verify PATH/checkpoint.bin
                        PATH/state.bin` will once verify reads debug states
  EXPECTED  the rest of the line: a substring of the one stderr line
"""
import io
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "corrupt")
manifest = []


def put(rel, data, role, expected):
    """Writes data (bytes) at tests/corrupt/rel and records the case."""
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    manifest.append((rel, role, expected))


def put_dir(rel, files, role, expected):
    """A folder case: files maps names to bytes; PATH is the folder."""
    for name, data in files.items():
        path = os.path.join(ROOT, rel, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    manifest.append((rel, role, expected))


# ---- a tiny GPT-2 FFN: 1 layer, n_embd 4, n_inner 16 ------------------------
E, I = 4, 16


def ffn_arrays():
    r = np.arange(E * I, dtype=np.float32) / 64.0
    return {
        "h.0.mlp.c_fc.weight": r.reshape(E, I),
        "h.0.mlp.c_fc.bias": np.linspace(-1, 1, I, dtype=np.float32),
        "h.0.mlp.c_proj.weight": r[::-1].copy().reshape(I, E),
        "h.0.mlp.c_proj.bias": np.linspace(1, -1, E, dtype=np.float32),
    }


# ---- safetensors -----------------------------------------------------------
def st_raw(header_text, data=b"", length=None):
    h = header_text.encode() if isinstance(header_text, str) else header_text
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def st_file(entries, meta=None, pad=True):
    """entries: list of (name, dtype, shape, data bytes, (begin, end) or None)."""
    hdr, off, blob = {}, 0, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dtype, shape, data, offs in entries:
        b, e = offs if offs else (off, off + len(data))
        hdr[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [b, e]}
        off += len(data)
        blob += data
    text = json.dumps(hdr, separators=(",", ":"))
    if pad:
        text += " " * (-(8 + len(text)) % 8)
    return st_raw(text, blob)


def st_model():
    return st_file([(k, "F32", v.shape, v.tobytes(), None) for k, v in ffn_arrays().items()])


def safetensors_cases():
    ck = "checkpoint"
    d = "safetensors/"
    put(d + "short_length.safetensors", b"\x10\x00\x00", ck, "too short")
    put(d + "header_over_limit.safetensors", st_raw("{}", length=200_000_000), ck, "100000000")
    put(d + "header_past_end.safetensors", st_raw('{"a":1}', length=4096), ck, "past the end")
    put(d + "not_utf8.safetensors", st_raw(b'{"\xff\xfe":{}}  '), ck, "UTF-8")
    put(d + "control_byte.safetensors", st_raw(b'{"a\x01":{}}   '), ck, "(0x01)")
    put(d + "not_json.safetensors", st_raw('{"a":{"dtype":"F32",}}'), ck, "JSON")
    put(d + "trailing_json.safetensors", st_raw('{} {}   '), ck, "JSON")
    put(d + "metadata_not_strings.safetensors", st_raw('{"__metadata__":{"gelu":1}}'), ck, "__metadata__")
    one = np.zeros(4, np.float32).tobytes()
    put(d + "unknown_dtype.safetensors", st_file([("x", "F33", [4], one, None)]), ck, "F33")
    put(d + "too_many_dims.safetensors", st_file([("x", "F32", [1] * 9 + [4], one, None)]), ck, "dimensions")
    put(d + "negative_dim.safetensors", st_file([("x", "F32", [-4], one, None)]), ck, "shape")
    put(d + "offsets_reversed.safetensors", st_file([("x", "F32", [0], b"", (16, 0))]), ck, "data_offsets")
    put(d + "duplicate_name.safetensors",
        st_raw('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
               '"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', b"\0" * 8), ck, "twice")
    put(d + "size_mismatch.safetensors", st_file([("x", "F32", [3], one, None)]), ck, "needs 12 bytes")
    put(d + "offset_past_end.safetensors", st_file([("x", "F32", [4], one, (0, 16))])[:-8], ck, "past the data buffer")
    put(d + "overlap.safetensors",
        st_file([("a", "F32", [4], one, (0, 16)), ("b", "F32", [4], b"", (8, 24))]) + b"\0" * 8, ck, "overlap")
    put(d + "gap.safetensors",
        st_file([("a", "F32", [2], one[:8], (0, 8)), ("b", "F32", [1], one, (12, 16))]), ck, "gap")
    put(d + "trailing_bytes.safetensors", st_file([("a", "F32", [4], one, None)]) + b"\0" * 4, ck, "trailing")
    put(d + "int_above_2p53.safetensors", st_file([("x", "F32", [2 ** 60], one, (0, 16))]), ck, "below 2^53")
    put(d + "numel_overflow.safetensors",
        st_file([("x", "F32", [2 ** 40, 2 ** 40], one, (0, 16))]), ck, "overflow")


# ---- shard index -------------------------------------------------------------
def shard_cases():
    ck = "checkpoint"
    model = st_model()

    def idx(rel, index_text, expected, files=None):
        fs = {"model-00001-of-00001.safetensors": model, "model.safetensors.index.json": index_text.encode()}
        fs.update(files or {})
        put_dir(rel, fs, ck, expected)
        manifest[-1] = (rel + "/model.safetensors.index.json", ck, expected)

    wm = {k: "model-00001-of-00001.safetensors" for k in ffn_arrays()}
    idx("shard_index/not_an_index", "[1, 2, 3]", "weight_map")
    idx("shard_index/path_traversal",
        json.dumps({"weight_map": dict(wm, **{"h.0.mlp.c_fc.weight": "../../../etc/passwd"})}), "plain file name")
    idx("shard_index/tensor_not_in_shard",
        json.dumps({"weight_map": dict(wm, **{"h.0.mlp.c_fc.gamma": "model-00001-of-00001.safetensors"})}),
        "does not hold it")
    idx("shard_index/total_size_wrong", json.dumps({"metadata": {"total_size": 12345}, "weight_map": wm}),
        "total_size")
    idx("shard_index/missing_shard",
        json.dumps({"weight_map": dict(wm, **{"h.0.mlp.c_fc.bias": "model-00002-of-00002.safetensors"})}),
        "model-00002-of-00002.safetensors")


# ---- config.json -------------------------------------------------------------
def config_cases():
    ck = "checkpoint"
    model = st_model()
    for name, cfg, expected in [
        ("not_object", "[\"n_layer\", 1]", "not a JSON object"),
        ("truncated", '{"n_layer": 1, "n_embd": ', "not a JSON object"),
        ("n_layer_mismatch", '{"n_layer": 12}', "n_layer is 12"),
        ("n_embd_fraction", '{"n_embd": 4.5}', "positive integer"),
        ("activation_relu", '{"activation_function": "relu"}', "is not a GELU"),
        ("activation_not_string", '{"activation_function": 7}', "must be a string"),
    ]:
        put_dir("config/" + name, {"model.safetensors": model, "config.json": cfg.encode()}, ck, expected)


# ---- zip (the container of torch.save and .npz) -----------------------------
class Member:
    def __init__(self, name, data, method=0, flags=0, crc=None, size=None, csize=None, payload=None):
        self.name, self.data, self.method, self.flags = name.encode(), data, method, flags
        self.payload = payload if payload is not None else (zlib.compress(data)[2:-4] if method == 8 else data)
        self.crc = zlib.crc32(data) if crc is None else crc
        self.size = len(data) if size is None else size
        self.csize = len(self.payload) if csize is None else csize


def local_header(m, name=None):
    ln = name or m.name
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, m.flags, m.method, 0, 0, m.crc, m.csize, m.size,
                       len(ln), 0) + ln


def zip_bytes(members, offsets=None, local_names=None, phantom=()):
    """A plain (non-ZIP64) archive; offsets overrides the central directory's
    local header offsets, local_names the names in the local headers;
    phantom: (member, offset) pairs listed in the directory only."""
    out, offs = b"", []
    for i, m in enumerate(members):
        offs.append(len(out))
        ln = local_names[i].encode() if local_names and i < len(local_names) and local_names[i] else m.name
        out += local_header(m, ln) + m.payload
    cd_start = len(out)
    members = list(members) + [m for m, _ in phantom]
    offs += [o for _, o in phantom]
    for i, m in enumerate(members):
        off = offsets[i] if offsets else offs[i]
        out += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, m.flags, m.method, 0, 0, m.crc, m.csize,
                           m.size, len(m.name), 0, 0, 0, 0, 0, off) + m.name
    cd_size = len(out) - cd_start
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), cd_size, cd_start, 0)
    return out


def torch_members(pkl, storages):
    ms = [Member("archive/data.pkl", pkl), Member("archive/byteorder", b"little")]
    ms += [Member("archive/data/%s" % k, v) for k, v in storages]
    return ms


def torch_pickle(entries):
    """data.pkl (protocol 2) of an OrderedDict of tensors, as torch.save writes
    it; entries: (name, storage key, numel, offset, shape)."""
    p = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01("
    for name, key, numel, off, shape in entries:
        p += b"X" + struct.pack("<I", len(name)) + name.encode()
        p += b"ctorch._utils\n_rebuild_tensor_v2\n("
        p += (b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX" + struct.pack("<I", len(key)) + key.encode() +
              b"X\x03\x00\x00\x00cpuJ" + struct.pack("<i", numel) + b"tQ")
        p += b"J" + struct.pack("<i", off)
        stride, acc = [], 1
        for d in reversed(shape):
            stride.insert(0, acc)
            acc *= d
        p += b"(" + b"".join(b"J" + struct.pack("<i", d) for d in shape) + b"t"
        p += b"(" + b"".join(b"J" + struct.pack("<i", s) for s in stride) + b"t"
        p += b"\x89ccollections\nOrderedDict\n)RtR"  # requires_grad False, hooks OrderedDict()
    p += b"u."
    return p


def torch_model_parts():
    arrs = ffn_arrays()
    entries, storages = [], []
    for i, (k, v) in enumerate(arrs.items()):
        entries.append((k, str(i), v.size, 0, list(v.shape)))
        storages.append((str(i), v.tobytes()))
    return entries, storages


def zip_cases():
    ck = "checkpoint"
    entries, storages = torch_model_parts()
    good = torch_members(torch_pickle(entries), storages)
    whole = zip_bytes(good)
    put("zip/truncated_half.pt", whole[: len(whole) // 2], ck, "zip")
    put("zip/no_end_record.pt", whole[:-22] + b"\0" * 22, ck, "end of central directory")
    bad = torch_members(torch_pickle(entries), storages)
    bad[2].crc ^= 0x1
    put("zip/bad_crc.pt", zip_bytes(bad), ck, "CRC-32")
    # a member hidden inside another one's data, listed in the directory
    hidden = Member("archive/extra", b"abcd")
    ov = torch_members(torch_pickle(entries), storages)
    ov[2] = Member(ov[2].name.decode(), storages[0][1] + local_header(hidden) + hidden.payload)
    start = _offsets(ov)[2] + 30 + len(ov[2].name) + len(storages[0][1])
    put("zip/overlapping_entries.pt", zip_bytes(ov, phantom=[(hidden, start)]), ck, "overlaps")
    enc = torch_members(torch_pickle(entries), storages)
    enc[0].flags = 1
    put("zip/encrypted_member.pt", zip_bytes(enc), ck, "encrypted")
    meth = torch_members(torch_pickle(entries), storages)
    meth[1].method = 12  # bzip2
    put("zip/unsupported_method.pt", zip_bytes(meth), ck, "method 12")
    dup = torch_members(torch_pickle(entries), storages)
    dup.append(Member("archive/data/0", storages[0][1]))
    put("zip/duplicate_member.pt", zip_bytes(dup), ck, "appears twice")
    put("zip/local_name_mismatch.pt", zip_bytes(good, local_names=[None, "archive/byteordex"]), ck,
        "local header names another file")
    st = torch_members(torch_pickle(entries), storages)
    st[3].size += 4
    put("zip/stored_size_mismatch.pt", zip_bytes(st), ck, "compressed size")
    many = zip_bytes(good)
    eocd = len(many) - 22
    many = many[:eocd + 8] + struct.pack("<HH", 60000, 60000) + many[eocd + 12:]
    put("zip/absurd_entry_count.pt", many, ck, "central directory")


def _offsets(members):
    offs, pos = [], 0
    for m in members:
        offs.append(pos)
        pos += 30 + len(m.name) + len(m.payload)
    return offs


# ---- torch.save: the pickle inside -------------------------------------------
def torch_cases():
    ck = "checkpoint"
    entries, storages = torch_model_parts()

    def pt(rel, pkl, expected, stor=storages):
        put(rel, zip_bytes(torch_members(pkl, stor)), ck, expected)

    pt("torch/global_os_system.pt", b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R.", "GLOBAL 'os system'")
    pt("torch/stack_global_builtins_eval.pt",
       b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93X\x01\x00\x00\x001\x85R.", "GLOBAL 'builtins eval'")
    pt("torch/forbidden_opcode_inst.pt", b"\x80\x02(ios\nsystem\n.", "INST")
    pt("torch/forbidden_opcode_newobj.pt", b"\x80\x02ccollections\nOrderedDict\n)\x81.", "NEWOBJ")
    pt("torch/memo_out_of_range.pt", b"\x80\x02}q\x00h\x07.", "memo index 7")
    pt("torch/memo_above_limit.pt", b"\x80\x02}r\xff\xff\xff\x7f.", "above the limit")
    pt("torch/nesting_too_deep.pt", b"\x80\x02" + b"]" * 100 + b"a" * 99 + b".", "nested deeper")
    pt("torch/bytes_after_stop.pt", b"\x80\x02}.junk", "after STOP")
    pt("torch/no_stop.pt", b"\x80\x02}", "without STOP")
    big = [(n, k, numel, 1000, shp) for (n, k, numel, _, shp) in entries]
    pt("torch/storage_offset_past_end.pt", torch_pickle(big), "storage")
    short = [(k, v[:-4]) for k, v in storages]
    pt("torch/storage_too_short.pt", torch_pickle(entries), "bytes", stor=short)
    pt("torch/missing_storage.pt", torch_pickle(entries), "data/3", stor=storages[:3])
    pt("torch/bad_persistent_id.pt",
       b"\x80\x02(X\x04\x00\x00\x00evilX\x01\x00\x00\x00xtQ.", "persistent id")
    put("torch/legacy_pickle.pt", b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", ck, "legacy")


# ---- npy / npz (fixtures) ----------------------------------------------------
def npy_bytes(arr, header=None, magic=b"\x93NUMPY", version=(1, 0)):
    buf = io.BytesIO()
    np.save(buf, arr)
    b = buf.getvalue()
    if header is None:
        return magic + b[6:]
    h = header.encode()
    h += b" " * (-(10 + len(h) + 1) % 64) + b"\n"
    return magic + bytes(version) + struct.pack("<H", len(h)) + h + arr.tobytes()


def fixture_arrays():
    x = (np.arange(2 * 64, dtype=np.float32) / 128.0).reshape(2, 64)
    return {"h.0.mlp.in": x, "h.0.mlp.out": x[::-1].copy()}


def npz(members):
    return zip_bytes([m if isinstance(m, Member) else Member(m[0], m[1]) for m in members])


def npy_cases():
    fx = "fixture"
    a = fixture_arrays()
    good_out = ("h.0.mlp.out.npy", npy_bytes(a["h.0.mlp.out"]))

    def case(rel, in_bytes, expected):
        put(rel, npz([("h.0.mlp.in.npy", in_bytes), good_out]), fx, expected)

    x = a["h.0.mlp.in"]
    case("npy/lying_header.npz", npy_bytes(x, "{'descr': '<f4', 'fortran_order': False, 'shape': (2000, 64), }"),
         "header")
    case("npy/bad_magic.npz", npy_bytes(x, magic=b"\x93NUMPZ"), "magic")
    case("npy/big_endian.npz", npy_bytes(x, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 64), }"),
         "'>f4' is not supported")
    case("npy/fortran_order.npz", npy_bytes(x, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 64), }"),
         "Fortran order")
    case("npy/object_dtype.npz", npy_bytes(x, "{'descr': '|O', 'fortran_order': False, 'shape': (2, 64), }"),
         "'|O' is not supported")
    case("npy/extra_key.npz",
         npy_bytes(x, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), 'evil': __import__('os'), }"),
         "header")
    case("npy/bad_version.npz", npy_bytes(x, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), }",
                                          version=(9, 0)), "version")
    case("npy/header_len_past_end.npz", b"\x93NUMPY\x01\x00\xff\xff{'descr'", "header")
    # npz-level failures
    put("npz/member_not_npy.npz", npz([("h.0.mlp.in.npy", npy_bytes(x)), ("payload.exe", b"MZ")]), fx,
        "not a torch.save checkpoint")
    # zip bomb: a deflated member declaring 4 GB from a few hundred bytes
    bomb = Member("h.0.mlp.in.npy", b"\0" * 100000, method=8)
    bomb.size = 0xFFFFFFFE
    put("npz/zip_bomb.npz", npz([bomb, good_out]), fx, "zip bomb")
    lie = Member("h.0.mlp.in.npy", npy_bytes(x) + b"\0" * 4096, method=8)
    lie.size = len(npy_bytes(x))
    put("npz/inflate_size_lie.npz", npz([lie, good_out]), fx, "declared")
    broken = Member("h.0.mlp.in.npy", npy_bytes(x), method=8)
    broken.payload = broken.payload[:20]
    broken.csize = 20
    put("npz/truncated_deflate.npz", npz([broken, good_out]), fx, "deflate")


# ---- GGUF ----------------------------------------------------------------------
def gg_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf(n_tensors=None, n_kv=None, kvs=(), tensors=(), version=3, align=32, data=b"", magic=b"GGUF"):
    body = b""
    for k, t, v in kvs:
        body += gg_str(k) + struct.pack("<I", t) + v
    for name, dims, typ, off in tensors:
        body += gg_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        body += struct.pack("<IQ", typ, off)
    hdr = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                              len(kvs) if n_kv is None else n_kv)
    out = hdr + body
    out += b"\0" * (-len(out) % align)
    return out + data


def gguf_cases():
    ck = "checkpoint"
    arch = ("general.architecture", 8, gg_str("gpt2"))
    t1 = [("blk.0.ffn_up.weight", [4, 16], 0, 0)]
    d1 = b"\0" * (4 * 16 * 4)
    put("gguf/absurd_tensor_count.gguf", gguf(n_tensors=2 ** 62, kvs=[arch]), ck, "number of tensors")
    put("gguf/absurd_kv_count.gguf", gguf(n_kv=99999, kvs=[arch]), ck, "key-value pairs is 99999")
    put("gguf/version_1.gguf", gguf(version=1, kvs=[arch]), ck, "version 1 is not supported")
    put("gguf/big_endian.gguf", gguf(version=3 << 24, kvs=[arch]), ck, "big-endian")
    put("gguf/string_past_end.gguf", gguf(kvs=[("general.architecture", 8, struct.pack("<Q", 2 ** 40) + b"gpt2")]),
        ck, "string value length")
    put("gguf/array_count_absurd.gguf", gguf(kvs=[arch, ("tokenizer.ggml.tokens", 9,
                                                        struct.pack("<IQ", 8, 2 ** 31))]), ck, "array count")
    put("gguf/array_of_arrays.gguf", gguf(kvs=[arch, ("x", 9, struct.pack("<IQ", 9, 1))]), ck, "array")
    put("gguf/unknown_value_type.gguf", gguf(kvs=[arch, ("x", 99, b"")]), ck, "type")
    put("gguf/bad_alignment.gguf", gguf(kvs=[arch, ("general.alignment", 4, struct.pack("<I", 3))]), ck,
        "alignment")
    put("gguf/duplicate_key.gguf", gguf(kvs=[arch, arch]), ck, "general.architecture")
    put("gguf/too_many_dims.gguf", gguf(kvs=[arch], tensors=[("t", [1] * 5, 0, 0)]), ck, "dimensions")
    put("gguf/unknown_tensor_type.gguf", gguf(kvs=[arch], tensors=[("t", [4], 4, 0)]), ck, "type")
    put("gguf/tensor_past_end.gguf", gguf(kvs=[arch], tensors=t1, data=d1[:100]), ck, "past the end")
    put("gguf/tensor_offset_unaligned.gguf", gguf(kvs=[arch], tensors=[("t", [4], 0, 4)], data=b"\0" * 32), ck,
        "align")
    put("gguf/overlapping_tensors.gguf",
        gguf(kvs=[arch], tensors=[("a", [16], 0, 0), ("b", [16], 0, 32)], data=b"\0" * 96), ck, "overlap")
    put("gguf/huge_dims_overflow.gguf", gguf(kvs=[arch], tensors=[("t", [2 ** 40, 2 ** 40], 0, 0)]), ck, "overflows")
    # Quantized FFN weights (n_embd 32, n_inner 128, Q8_0: 34-byte blocks of 32, an f16 scale first).
    up, down = b"\0" * (128 * 34), bytearray(32 * 4 * 34)
    down[5 * 34:5 * 34 + 2] = struct.pack("<H", 0x7E00)  # block 5's scale d: NaN
    q8 = [("blk.0.ffn_up.weight", [32, 128], 8, 0), ("blk.0.ffn_down.weight", [128, 32], 8, len(up))]
    put("gguf/quant_nan_scale.gguf", gguf(kvs=[arch], tensors=q8, data=up + bytes(down)), ck,
        "tensor 'blk.0.ffn_down.weight': Q8_0 block 5 (elements [160, 192)) has scale d = NaN")
    put("gguf/quant_row_not_whole_blocks.gguf",
        gguf(kvs=[arch], tensors=[("blk.0.ffn_up.weight", [48, 128], 8, 0)], data=b"\0" * 8192), ck,
        "ne[0] = 48 is not a multiple of the Q8_0 block size 32")
    q2k = [("blk.0.ffn_up.weight", [256, 1], 10, 0), ("blk.0.ffn_down.weight", [256, 1], 10, 96)]  # 84-byte blocks
    put("gguf/quant_unsupported_type.gguf", gguf(kvs=[arch], tensors=q2k, data=b"\0" * 192), ck,
        "dtype Q2_K is not F32, F16, BF16 or F64 nor a quantized type gpt2ffn reads")


# ---- llm.c ---------------------------------------------------------------------
def llmc(maxT=1, V=1, L=1, NH=1, C=4, Vp=1, version=3, magic=20240326, extra=0, cut=0, body_bytes=None):
    n = Vp * C + maxT * C + L * (C + C + 3 * C * C + 3 * C + C * C + C + C + C + 4 * C * C + 4 * C + 4 * C * C + C) \
        + C + C
    hdr = [0] * 256
    hdr[:8] = [magic, version, maxT, V, L, NH, C, Vp]
    size = 4 if version == 3 else 2
    body = b"\0" * (n * size + extra if body_bytes is None else body_bytes)
    out = struct.pack("<256i", *hdr) + body
    return out[: len(out) - cut] if cut else out


def llmc_cases():
    ck = "checkpoint"
    # not 20240327, which is llm.c's debug state (below)
    put("llmc/wrong_magic.bin", llmc(magic=20240325), ck, "exceeds the limit")
    put("llmc/bad_version.bin", llmc(version=4), ck, "version")
    put("llmc/short_header.bin", llmc()[:600], ck, "1024")
    put("llmc/truncated_params.bin", llmc(cut=8), ck, "truncated")
    put("llmc/trailing_bytes.bin", llmc(extra=64), ck, "trailing bytes")
    put("llmc/sizes_past_file.bin", llmc(C=65536, L=1024, maxT=1 << 20, V=1 << 24, Vp=1 << 24, body_bytes=4096), ck, "implies 215782647137280 bytes")
    put("llmc/heads_not_dividing.bin", llmc(NH=3), ck, "does not divide")
    put("llmc/zero_layers.bin", llmc(L=0), ck, "num_layers is 0")
    put("llmc/padded_vocab_smaller.bin", llmc(V=8, Vp=4), ck, "padded_vocab_size")


# ---- llm.c debug state (train_gpt2.py write_state) ------------------------------
# The folder cases' checkpoint: maxT 2, V 3, L 1, NH 1, C 4, Vp 8: 292 parameters.
ST_V, ST_VP, ST_P = 3, 8, 8 * 4 + 2 * 4 + (12 * 16 + 13 * 4) + 2 * 4


def llmc_state(B=1, T=2, version=2, magic=20240327, x=None, y=None, Vl=ST_V, P=ST_P, extra=0, cut=0, n=None):
    """header, x and y int32 (B, T), logits float32 (B, T, Vl), loss, P gradient floats
    (n tokens instead of B T when given)."""
    hdr = [0] * 256
    hdr[:4] = [magic, version, B, T]
    n = max(B, 0) * max(T, 0) if n is None else n
    x = [i % ST_V for i in range(n)] if x is None else x
    y = [(i + 1) % ST_V for i in range(n)] if y is None else y
    logits = np.linspace(-1, 1, n * Vl, dtype=np.float32).tobytes()
    out = struct.pack("<256i", *hdr) + struct.pack("<%di" % n, *x) + struct.pack("<%di" % n, *y) + logits
    out += struct.pack("<f", 1.25) + b"\0" * (4 * P) + b"\0" * extra
    return out[: len(out) - cut] if cut else out


def llmc_state_cases():
    fx, ck, st = "fixture", "checkpoint", "llmc_state"
    # the header's faults, found before the checkpoint's sizes are needed
    put("llmc_state/bad_version.bin", llmc_state(version=1), fx, "header[1] version is 1, expected 2")
    put("llmc_state/short_header.bin", llmc_state()[:600], fx, "too short for the 1024-byte llm.c state header")
    put("llmc_state/zero_batch.bin", llmc_state(B=0), fx, "header[2] batch_size is 0")
    put("llmc_state/seq_len_past_limit.bin", llmc_state(T=1 << 21, n=2), fx,
        "header[3] seq_len is 2097152 but must be in [1, 1048576]")
    # a debug state is no checkpoint: its logits need one
    put("llmc_state/not_a_checkpoint.bin", llmc_state(), ck, "is read with its checkpoint")
    model = llmc(maxT=2, V=ST_V, L=1, NH=1, C=4, Vp=ST_VP)

    def case(name, expected, **kw):
        put_dir("llmc_state/" + name, {"checkpoint.bin": model, "state.bin": llmc_state(**kw)}, st, expected)

    case("truncated", "truncated", cut=4)
    case("trailing_bytes", "trailing bytes", Vl=ST_VP, extra=4)  # past even the padded logits' size
    case("gradients_missing",
         "file is 1068 bytes but B=1, T=2 with the checkpoint's V=3 and 292 gradient floats imply 2236 bytes", P=0)
    case("logits_width_neither", "imply 2236 bytes (1024 + x, y (B, T) int32 + logits (B, T, V) + loss + "
         "gradients) (or 2276 with logits (B, T, Vp=8)): more than V's logits and less than Vp's", Vl=ST_V + 1)
    case("target_outside_vocab", "targets (y) [0, 1] is token id 3, outside the vocabulary 0..2", y=[0, 3])
    case("input_negative", "input_ids (x) [0, 0] is token id -1", x=[-1, 0])


# ---- fixtures (safetensors) ------------------------------------------------------
def fixture_cases():
    fx = "fixture"
    x = np.zeros((2, 64), np.float32).tobytes()

    def f(rel, ents, expected, meta=None):
        put(rel, st_file([(n, dt, sh, d, None) for n, dt, sh, d in ents], meta=meta), fx, expected)

    f("fixture/layer_beyond_model.safetensors",
      [("h.9.mlp.in", "F32", [2, 64], x), ("h.9.mlp.out", "F32", [2, 64], x)], "layer 9")
    f("fixture/layer_index_absurd.safetensors",
      [("h.99999999999999999999.mlp.in", "F32", [2, 64], x), ("h.0.mlp.out", "F32", [2, 64], x)], "layer index")
    f("fixture/wrong_last_dim.safetensors",
      [("h.0.mlp.in", "F32", [2, 64], x), ("h.0.mlp.out", "F32", [4, 32], x)], "last dimension")
    f("fixture/integer_dtype.safetensors",
      [("h.0.mlp.in", "I32", [2, 64], x), ("h.0.mlp.out", "F32", [2, 64], x)], "dtype I32")
    f("fixture/missing_out.safetensors", [("h.0.mlp.in", "F32", [2, 64], x)], "h.0.mlp.out")
    f("fixture/token_mismatch.safetensors",
      [("h.0.mlp.in", "F32", [2, 64], x), ("h.0.mlp.out", "F32", [1, 64], x[:256])], "tokens")
    f("fixture/no_fixture_tensors.safetensors", [("h.0.mlp.c_fc.weight", "F32", [2, 64], x)], "no fixture tensors")
    # a name with a newline and a terminal escape: the message stays one line
    f("fixture/newline_in_name.safetensors",
      [("h.77777.mlp.in\n\x1b[2J", "F32", [2, 64], x), ("h.0.mlp.out", "F32", [2, 64], x)],
      r"'h.77777.mlp.in\x0a\x1b[2J': layer index")


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    for gen in (safetensors_cases, shard_cases, config_cases, zip_cases, torch_cases, npy_cases, gguf_cases,
                llmc_cases, llmc_state_cases, fixture_cases):
        gen()
    with open(os.path.join(ROOT, "MANIFEST"), "w") as f:
        f.write("# PATH ROLE EXPECTED-SUBSTRING (written by scripts/make_corrupt_corpus.py; see there)\n")
        for rel, role, exp in manifest:
            f.write("%s %s %s\n" % (rel, role, exp))
    print("%d cases in %s" % (len(manifest), os.path.normpath(ROOT)))


if __name__ == "__main__":
    sys.exit(main())
