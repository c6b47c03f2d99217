"""The host work of a launch's fast paths without a GPU: the native path (`native_launch.c`)
against the Python path, per call pattern, with the driver's launch replaced by a C function
that does nothing (libm's `feclearexcept`: it takes the four pointers and returns 0) and the
kernels built on the fake driver of `tests/runtime/fake_cuda.py`.

What this leaves out, and so is not a launch's time: the driver's `cuLaunchKernelEx` (about
3.5-4 µs on the H200, docs/runtime.md), torch's `data_ptr` and `TensorGuards` (stood in for
by `operator.index` on an int subclass and a layout check that always passes, the same on
both paths). What it measures:
everything else a call does on either path, on this machine. Best of `repeats` rounds.

    python3 bench/launch_host.py [--calls 20000] [--repeats 5] [--out FILE]
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import itertools
import json
import operator
import os
import platform
import sys
import timeit
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "runtime"))
import intentc  # noqa: E402
from fake_cuda import FakeTensor, install_driver, install_torch  # noqa: E402
from intentc.runtime import cuda_driver, native, seen_calls  # noqa: E402

SAMPLES = ROOT / "ir_samples"


class BenchTensor(int, FakeTensor):
    """A fake tensor whose data pointer is read by a C call that refuses anything else, as
    torch's `data_ptr` is: it is an int (its address), read by `operator.index`."""

    def __new__(cls, array: np.ndarray):
        return super().__new__(cls, array.ctypes.data)

    def __init__(self, array: np.ndarray):
        FakeTensor.__init__(self, array)


class _Passes:
    """A layout check that always passes (both paths call it the same way)."""

    def __init__(self, *tensors):
        pass

    @staticmethod
    def check(*tensors) -> bool:
        return True


def _no_op_driver(patch: pytest.MonkeyPatch) -> None:
    noop = ctypes.CDLL("libm.so.6").feclearexcept
    noop.restype = ctypes.c_int
    patch.setattr(cuda_driver, "_raw_launch", lambda: noop)
    patch.setattr(cuda_driver, "launch_address", lambda: ctypes.cast(noop, ctypes.c_void_p).value)
    patch.setattr(seen_calls, "_data_ptr", operator.index)
    patch.setattr(seen_calls, "_tensor_type", lambda: BenchTensor)
    patch.setattr(seen_calls, "_tensor_layouts", lambda: _Passes)


def _patterns(n: int) -> dict:
    """{name: (kernel, the next call's arguments)}: each kernel bound once before timing."""
    vector_add = intentc.load(SAMPLES / "vector_add.kir", "vector_add", target="cuda", arch="sm_90")
    saxpy = intentc.load(SAMPLES / "saxpy.kir", "saxpy", target="cuda", arch="sm_90")
    same = {name: BenchTensor(np.zeros(n, np.float32)) for name in "xyz"}
    fresh = itertools.cycle([{name: BenchTensor(np.zeros(n, np.float32)) for name in "xyz"} for _ in range(4096)])
    scalar = {"a": 2.0, "x": same["x"], "y": same["y"]}
    for kernel, arguments in ((vector_add, same), (saxpy, scalar)):
        kernel(**arguments)
    return {"same tensors (vector add)": (vector_add, lambda: same),
            "new tensors (vector add)": (vector_add, fresh.__next__),
            "a scalar and tensors (saxpy)": (saxpy, lambda: scalar)}


def _call(kernel, arguments) -> None:
    kernel(**arguments())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    patch = pytest.MonkeyPatch()
    install_torch(patch)
    install_driver(patch)
    _no_op_driver(patch)
    patch.delenv("INTENTC_LAUNCH_OFF", raising=False)
    if native.fast_call() is None:
        raise SystemExit(f"the native fast path cannot be built here: {native.unavailable()}")
    result: dict = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                    "python": sys.version.split()[0], "calls": args.calls, "repeats": args.repeats,
                    "load_average": os.getloadavg(), "us_per_call": {}}
    for name, (kernel, arguments) in _patterns(4096).items():
        native_state = kernel._native
        for path, state in (("native", native_state), ("python", None)):
            kernel._native = state
            call = functools.partial(_call, kernel, arguments)
            seconds = min(timeit.repeat(call, number=args.calls, repeat=args.repeats))
            result["us_per_call"][f"{name}: {path}"] = seconds / args.calls * 1e6
        kernel._native = native_state
    for name, us in result["us_per_call"].items():
        print(f"{name:50s} {us:7.3f} µs")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    patch.undo()


if __name__ == "__main__":
    main()
