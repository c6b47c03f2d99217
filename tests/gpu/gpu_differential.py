"""Running one kernel on the GPU and on the reference interpreter (the CPU suite's
comparisons, `differential.py`, decide bits vs bounds)."""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from intentc.api import run
from intentc.parse import parse
from intentc.runtime.binding import call_facts
from intentc.runtime.cuda import compile_cuda

ROOT = Path(__file__).resolve().parents[2]


def on_gpu_and_interp(source: str, kernel: str, inputs: dict, constexprs: dict | None = None, options=None,
                      extents: dict | None = None, facts: bool = True):
    """(gpu outputs, interpreter outputs) of one launch on the same inputs; `extents`
    specializes dynamic extents at compile time (the CTA mapping's register form); `facts`:
    compiled for the layout facts the inputs hold (`binding.call_facts`), as `intentc.load`
    compiles a call's kernel (a dense host array's device copy starts its allocation)."""
    held = call_facts(parse(source).find(kernel), inputs) if facts and isinstance(source, str) else {}
    compiled = compile_cuda(source, kernel, {"constexprs": dict(constexprs or {}), "extents": dict(extents or {}),
                                             **held}, options)
    return compiled(inputs, constexprs), run(source, kernel, inputs, constexprs)


@functools.cache
def load_test_module(relative: str, name: str):
    """A test module of another suite, by path (its cases and tables, not its tests)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
