#!/usr/bin/env python3
"""One-operator mutation sweep of the readers' bounds (SECURITY.md, Bounds
tests): each <, <=, >, >= in a condition (not in a for loop) of the readers
is flipped in turn (> to >=, < to <=, and back), the bounds tests of that
file are rebuilt and run, and every mutant no test kills is printed.

    scripts/mutate_bounds.py [--asan] [FILE ...]     (default: every reader)

Works on a copy of HEAD (git archive) in a temporary folder, never on the
tree; one line per mutant on stdout ("killed" or "SURVIVED"). With --asan
the copy is built with -DGPT2FFN_SANITIZE=ON, which also kills the mutants
that read one byte too far without changing any result. Slow: a few seconds
per mutant, about 200 mutants."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

TESTS = {
    "formats/g2f_safetensors.c": ["test_bounds_safetensors"],
    "formats/g2f_gguf.c": ["test_bounds_gguf"],
    "formats/g2f_zip.c": ["test_bounds_zip", "test_bounds_torch", "test_bounds_npy"],
    "formats/g2f_pickle.c": ["test_bounds_pickle", "test_bounds_torch"],
    "formats/g2f_torch.c": ["test_bounds_torch"],
    "formats/g2f_npy.c": ["test_bounds_npy"],
    "formats/g2f_llmc.c": ["test_bounds_llmc"],
    "formats/g2f_source.c": ["test_bounds_index"],
    "src/load/g2f_model.c": ["test_bounds_model"],
    "src/load/g2f_fixture.c": ["test_bounds_model"],
    "src/base/g2f_file.c": ["test_bounds_index", "test_bounds_model"],
}
FLIP = {">": ">=", ">=": ">", "<": "<=", "<=": "<"}
OP = re.compile(r"(?<=[\w\)\] ])\s(>=|<=|>|<)\s(?=[\w\(\-!~*])")


def code_only(line):
    """line with comments and string / char literals blanked out."""
    out, quote, i = list(line), None, 0
    while i < len(line):
        c = line[i]
        if quote:
            out[i] = " "
            if c == "\\" and i + 1 < len(line):
                out[i + 1] = " "
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote, out[i] = c, " "
        elif line.startswith("/*", i) or line.startswith("//", i):
            out[i:] = " " * (len(line) - i)
            break
        i += 1
    return "".join(out)


def comparisons(text):
    """(line index, column, operator) of each comparison in a condition."""
    in_comment = False
    for n, line in enumerate(text.split("\n")):
        s = line.strip()
        if in_comment:
            in_comment = "*/" not in s
            continue
        if s.startswith("/*") and "*/" not in s:
            in_comment = True
            continue
        if s.startswith(("*", "#")) or "for (" in s:
            continue
        for m in OP.finditer(code_only(line)):
            yield n, m.start(1), m.group(1)


def main():
    args = sys.argv[1:]
    asan = "--asan" in args
    files = [a for a in args if a != "--asan"] or list(TESTS)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="g2f_mutants_") as tmp:
        src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
        os.mkdir(src)
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=root, check=True, stdout=subprocess.PIPE).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        flags = ["-DGPT2FFN_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=Debug"] if asan else []
        subprocess.run(["cmake", "-S", src, "-B", build] + flags, check=True, stdout=subprocess.DEVNULL)
        quiet = {"cwd": build, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", TMPDIR=tmp)
        survivors = 0
        for path in files:
            tests = TESTS[path]
            full = os.path.join(src, path)
            original = open(full).read()
            lines = original.split("\n")
            for n, col, op in list(comparisons(original)):
                mutant = lines[:]
                mutant[n] = lines[n][:col] + FLIP[op] + lines[n][col + len(op):]
                open(full, "w").write("\n".join(mutant))
                try:
                    if subprocess.run(["cmake", "--build", ".", "-j2", "--target"] + tests, **quiet).returncode:
                        result = "BUILD-FAIL"
                    else:
                        result = "SURVIVED"
                        for t in tests:
                            try:
                                rc = subprocess.run([os.path.join("tests", t), os.path.join(src, "fixtures")],
                                                    timeout=600, env=env, **quiet).returncode
                            except subprocess.TimeoutExpired:
                                rc = -1
                            if rc != 0:
                                result = "killed"
                                break
                finally:
                    open(full, "w").write(original)
                    # scratch folders of tests a mutant crashed before their cleanup
                    for d in glob.glob("/dev/shm/g2f_bounds_*") + glob.glob(os.path.join(tmp, "g2f_bounds_*")):
                        shutil.rmtree(d, ignore_errors=True)
                survivors += result == "SURVIVED"
                print(f"{result:10} {path}:{n + 1}: '{op}' -> '{FLIP[op]}': {lines[n].strip()}", flush=True)
        print(f"{survivors} mutants survived", flush=True)


if __name__ == "__main__":
    main()
