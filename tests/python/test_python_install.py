"""`cmake --install` puts the Python package beside the shared library
(LIBDIR/gpt2ffn/python/gpt2ffn and LIBDIR/gpt2ffn/libgpt2ffn.so), and the
installed package, imported from there by a fresh Python without
GPT2FFN_LIB and outside the checkout, finds that library and verifies.
The build tree is the folder of the CLI (argv[2])."""
import os
import subprocess
import sys
import tempfile

from util import CLI, check, finish, fx

build = os.path.dirname(os.path.abspath(CLI))
with tempfile.TemporaryDirectory() as d:
    prefix = os.path.join(d, "prefix")
    p = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True)
    check(p.returncode == 0, "cmake --install: %s" % p.stderr[-500:])
    libdirs = [os.path.join(prefix, x) for x in os.listdir(prefix) if x.startswith("lib")]
    pkg = [os.path.join(l, "gpt2ffn", "python") for l in libdirs if os.path.isdir(os.path.join(l, "gpt2ffn", "python"))]
    check(len(pkg) == 1, "one installed package under %s" % libdirs)
    if pkg:
        lib = os.path.join(os.path.dirname(pkg[0]), "libgpt2ffn.so")
        check(os.path.isfile(lib), "libgpt2ffn.so beside the package")
        check(not os.path.exists(os.path.join(os.path.dirname(os.path.dirname(pkg[0])), "libgpt2ffn.so")),
              "not in LIBDIR itself (pkg-config's -lgpt2ffn would take it over the archive)")
        code = ("import gpt2ffn, sys; print(gpt2ffn.library_path()); "
                "r = gpt2ffn.verify(sys.argv[1], sys.argv[2]); print(r['status'])")
        env = {k: v for k, v in os.environ.items() if k not in ("GPT2FFN_LIB", "PYTHONPATH")}
        env["PYTHONPATH"] = pkg[0]
        p = subprocess.run([sys.executable, "-c", code, fx("tiny"), fx("tiny_tanh.safetensors")], cwd=d, env=env,
                           capture_output=True, text=True)
        out = p.stdout.split()
        check(p.returncode == 0 and out[:1] == [os.path.realpath(lib)] and out[1:] == ["pass"],
              "the installed package: %s %s" % (p.stdout, p.stderr[-500:]))
finish()
