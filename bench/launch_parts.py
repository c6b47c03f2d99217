"""Where the host time of one `intentc.load(...)(...)` launch goes: each step of the fast path
(`docs/runtime.md`) timed alone on CUDA torch tensors (vector add, as in bench/launch.py),
best of `repeats` rounds of `calls` calls. Steps that launch queue work on the GPU; the
stream is synchronized between rounds, outside the timing.

    python3 bench/launch_parts.py [--calls 2000] [--repeats 15] [--out FILE] [--profile]
"""
from __future__ import annotations

import argparse
import ctypes
import cProfile
import functools
import itertools
import pstats
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import intentc  # noqa: E402
from intentc.runtime.seen_calls import call_key  # noqa: E402

VECTOR_ADD = ROOT / "ir_samples" / "vector_add.kir"
MISSES = 500
NEW_SETS = 4096


def best_ns(step, calls: int, repeats: int) -> float:
    rounds = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter_ns()
        for _ in range(calls):
            step()
        rounds.append((time.perf_counter_ns() - start) / calls)
    torch.cuda.synchronize()
    return min(rounds)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top of new-pointer calls")
    args = parser.parse_args(argv)
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    z = torch.empty_like(x)
    kernel = intentc.load(VECTOR_ADD, "vector_add", target="cuda")
    arguments = {"x": x, "y": y, "z": z}
    kernel(**arguments)
    seen = kernel.runner.seen
    prepared = seen.find(arguments)
    check = seen._entries[call_key(arguments)[0]][0]
    stream = torch.cuda.current_stream().cuda_stream
    raw_stream = torch._C._cuda_getCurrentRawStream

    def keywords(**given):
        return given

    # The driver's older entry point with its 11 arguments converted by ctypes (the launch before
    # this fast path), and a ctypes call that does nothing (libc's labs), for what ctypes costs.
    launch_kernel = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    launch_kernel.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    launch_kernel.restype = ctypes.c_int
    shape = prepared.shape
    old_call = (shape.function, *shape.grid, *shape.block, 0, stream, None, prepared.extra)
    labs = ctypes.CDLL(None).labs
    labs.argtypes, labs.restype = [ctypes.c_long], ctypes.c_long
    # The same two entry points with nothing for ctypes to convert, the Ex one holding the GIL,
    # and the prepared launch on a stream of its own (not the legacy default stream).
    bare_kernel = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    bare_kernel.restype = ctypes.c_int
    bare_call = (ctypes.c_void_p(shape.function), *shape.grid, *shape.block, 0,
                 ctypes.c_void_p(stream) if stream else None, None, prepared.extra)
    bound = shape.by_stream[stream]
    gil_held = ctypes.PyDLL("libcuda.so.1").cuLaunchKernelEx
    gil_held.argtypes, gil_held.restype = [ctypes.c_void_p] * 4, ctypes.c_int
    gil_held_call = functools.partial(gil_held, *bound.args, prepared.extra)
    own_stream = torch.cuda.Stream().cuda_stream
    count = len(arguments)
    # Argument sets on memory of their own (views of one allocation), taken in turn: a call's
    # pointers are not the previous call's (template launches are not remembered as seen calls).
    memory = torch.randn(NEW_SETS, 3, 4096, device="cuda")
    next_new = itertools.cycle([dict(zip("xyz", views.unbind(0))) for views in memory.unbind(0)]).__next__
    template = seen._layouts[call_key(arguments)[0][:count]][0][-1]
    pointers = call_key(arguments)[0][count:]

    from bench.launch import python_path_only
    python_path = python_path_only(kernel)
    python_path(**arguments)
    steps = {
        "whole call: kernel(x=x, y=y, z=z)": lambda: kernel(x=x, y=y, z=z),
        "whole call, the Python fast path only": lambda: python_path(x=x, y=y, z=z),
        "new pointers: whole call, the Python fast path only": lambda: python_path(**next_new()),
        "a Python call with three keywords": lambda: keywords(x=x, y=y, z=z),
        "call_key (names, data pointers)": lambda: call_key(arguments),
        "layout check (3 tensors)": lambda: check(x, y, z),
        "SeenCalls.find (key, lookup, check)": lambda: seen.find(arguments),
        "torch's current stream": lambda: raw_stream(0),
        "prepared launch (ctypes + driver)": lambda: prepared(stream),
        "cuLaunchKernel, 11 ctypes arguments": lambda: launch_kernel(*old_call),
        "a ctypes call of labs(0)": lambda: labs(0),
        "cuLaunchKernel, prebuilt ctypes arguments": lambda: bare_kernel(*bare_call),
        "cuLaunchKernelEx holding the GIL (PyDLL)": gil_held_call,
        "prepared launch on a stream of its own": lambda: prepared(own_stream),
        "the returned dict": lambda: {name: arguments[name] for name in ("z",)},
        "new pointers: the template's launch set to them": lambda: template.launch(pointers),
        "new pointers: SeenCalls.find (key, miss, layout check, template)": lambda: seen.find(next_new()),
        "new pointers: whole call kernel(**new)": lambda: kernel(**next_new()),
        "seen pointers: whole call kernel(**same)": lambda: kernel(**arguments),
        "torch.add(x, y, out=z)": lambda: torch.add(x, y, out=z),
    }
    result = {"python": sys.version.split()[0], "torch": torch.__version__, "layouts": str(check),
              "ns": {name: best_ns(step, args.calls, args.repeats) for name, step in steps.items()}}
    # Calls on memory never passed before: from the template of their layout, and (the fast
    # paths' tables emptied first) bound and checked in full.
    fresh = [torch.randn(4096, device="cuda") for _ in range(2 * MISSES)]
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for tensor in fresh[:MISSES]:
        kernel(x=tensor, y=y, z=z)
    result["ns"]["a call with new pointers (from its layout's template)"] = (time.perf_counter_ns() - start) / MISSES
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for tensor in fresh[MISSES:]:
        seen.clear()
        kernel(x=tensor, y=y, z=z)
    result["ns"]["a call bound and checked in full"] = (time.perf_counter_ns() - start) / MISSES
    torch.cuda.synchronize()
    for name, ns in result["ns"].items():
        print(f"{name:40s} {ns / 1000:7.3f} µs")
    if args.profile:            # where a new-pointer call's Python time goes
        profile = cProfile.Profile()
        profile.runcall(lambda: [kernel(**next_new()) for _ in range(args.calls)])
        torch.cuda.synchronize()
        pstats.Stats(profile).sort_stats("tottime").print_stats(14)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
