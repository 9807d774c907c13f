#!/usr/bin/env python3
"""Recomputes fixtures/tokenizer/vectors.tsv (and small_vectors.tsv) with a second,
independent reference: OpenAI's GPT-2 encoder (gpt-2/src/encoder.py) written out
below with Python's `regex` module, as encoder.py runs it, and Python's
bytes.decode("utf-8", "replace") for the invalid UTF-8 (the replacements counted
by an error handler). Exits 1 naming every case that differs.

    python3 scripts/check_tokenizer_vectors.py [fixtures/tokenizer]

Needs the `regex` module (Debian: python3-regex). Not run by the tests, which
need no Python (docs/tokenizer.md). The categories are this `regex` module's
Unicode version: the corpus holds only characters assigned by Unicode 14.
"""
import codecs
import json
import os
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Encoder:
    """encoder.py's algorithm: findall, byte-level characters, the BPE loop."""

    def __init__(self, encoder, merges):
        self.encoder = encoder
        self.ranks = dict(zip(merges, range(len(merges))))
        self.byte_encoder = bytes_to_unicode()
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for piece in PATTERN.findall(text):
            chars = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.bpe(chars))
        return ids


def load(vocab_path, merges_path):
    with open(vocab_path, encoding="utf-8") as f:
        encoder = json.load(f)
    with open(merges_path, encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f.read().split("\n")[1:-1]]
    return Encoder(encoder, merges)


replacements = [0]


def counting_replace(exc):
    replacements[0] += 1
    return ("\ufffd", exc.end)


codecs.register_error("g2f_count", counting_replace)


def rows(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                yield line.rstrip("\n").split("\t")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizer")
    full = load(os.path.join(d, "openai", "encoder.json"), os.path.join(d, "openai", "vocab.bpe"))
    small = load(os.path.join(d, "small_hf", "vocab.json"), os.path.join(d, "small_hf", "merges.txt"))
    small_ids = {r[0]: r[1] for r in rows(os.path.join(d, "small_vectors.tsv"))}
    bad = 0
    n = 0
    for r in rows(os.path.join(d, "vectors.tsv")):
        name, raw, text_hex, replaced, ids = r[0], bytes.fromhex(r[1]), r[2], int(r[3]), r[4]
        replacements[0] = 0
        text = raw.decode("utf-8", "g2f_count")
        got_text = text.encode("utf-8").hex() if text.encode("utf-8") != raw else "="
        got = " ".join(map(str, full.encode(text)))
        got_small = " ".join(map(str, small.encode(text)))
        for what, want, have in (("text", text_hex, got_text), ("replacements", replaced, replacements[0]),
                                 ("ids", ids, got), ("small ids", small_ids.get(name), got_small)):
            if want != have:
                print(f"{name}: {what} differ: vectors {str(want)[:80]!r}, encoder.py {str(have)[:80]!r}")
                bad += 1
        n += 1
    print(f"{n} cases, {bad} differences (regex {regex.__version__}, Python {sys.version.split()[0]})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
