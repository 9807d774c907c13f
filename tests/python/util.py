"""Shared by the Python package's tests (tests/python/test_*.py, run by
tests/python/run from ctest with the fixtures folder and the CLI as
arguments, GPT2FFN_LIB set to the build's libgpt2ffn.so)."""
import json
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

FIXTURES = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fixtures"))
CLI = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build", "gpt2ffn")
failures = []


def fx(*parts):
    return os.path.join(FIXTURES, *parts)


def check(cond, what):
    if not cond:
        frame = traceback.extract_stack()[-2]
        failures.append("%s:%d: %s" % (os.path.basename(frame.filename), frame.lineno, what))
        print("FAIL %s:%d: %s" % (os.path.basename(frame.filename), frame.lineno, what))
    return cond


def raises(exc, fn, *a, contains=None, **kw):
    """The exception fn(*a, **kw) raises, checked to be exc (and to say contains)."""
    try:
        fn(*a, **kw)
    except exc as e:
        if contains is not None:
            check(contains in str(e), "message %r lacks %r" % (str(e), contains))
        return e
    except Exception as e:  # noqa: BLE001
        check(False, "expected %s, got %s: %s" % (exc.__name__, type(e).__name__, e))
        return None
    check(False, "expected %s, nothing raised" % exc.__name__)
    return None


def cli(*args):
    """(exit code, stdout, stderr) of the CLI."""
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                       env=dict(os.environ, NO_COLOR="1"))
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    rc, out, err = cli(*args, "--json", "-")
    return rc, (json.loads(out) if out.strip() else None), err


def finish():
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("ok")
    sys.exit(0)
