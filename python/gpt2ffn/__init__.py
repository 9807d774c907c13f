"""gpt2ffn for Python: capture a GPT-2 port's activations under the tool's
stage names and verify them against a checkpoint, in memory.

    import gpt2ffn
    with gpt2ffn.capture(model) as cap:     # HF, nanoGPT, minGPT, TransformerLens
        model(ids)
    report = gpt2ffn.verify("gpt2/", cap)   # the JSON report as a dict; report.passed

Ports written as functions record by name (Recorder.record) or by wrapping
their functions (Recorder.wrap); a capture or a Recorder saves itself as a
fixture file (.save: safetensors, .npz or a folder of .npy) that
`gpt2ffn verify` reads. diff() and run() are the CLI's diff and run.

Pure Python over numpy and the shared library libgpt2ffn.so (ctypes);
torch is imported only by what records a torch model. See docs/ports.md.
"""
from ._arrays import Activations, load
from ._capture import capture
from ._lib import GPT2FFNError, Report, diff, library_path, run, verify, version
from ._record import Recorder
from ._stages import known_names, name as stage_name, parse as parse_name

__all__ = ["Activations", "GPT2FFNError", "Recorder", "Report", "capture", "diff", "known_names", "library_path",
           "load", "parse_name", "run", "stage_name", "verify", "version"]
