"""Compile latency in a warm process: intentc KIR → PTX (and → cubin) against Triton's
compile of the same kernels (a fresh Triton cache each time, so it really compiles; Triton
goes to cubin, and the PTX-only part is its total minus its ptxas step, which is not
separable from outside, so both are reported as measured).

    python3 bench/compile.py [--reps 5] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def intentc_times(name, kernel, reps, extents=None):
    """Median seconds to PTX and to cubin; `extents` specializes as bench/gpu.py does (the
    register form, as Triton's BLOCK=1024 specializes its kernel), else the extents stay dynamic."""
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    text = (ROOT / "ir_samples" / f"{name}.kir").read_text()
    spec = Specialization(extents=extents or {})
    compile_kernel(text, kernel, "ptx", "sm_90", specialization=spec)   # warm: libdevice parsed, pipelines built
    ptx, cubin, timings = [], [], {}
    for _ in range(reps):
        start = time.perf_counter()
        timings = compile_kernel(text, kernel, "ptx", "sm_90", specialization=spec).timings
        ptx.append(time.perf_counter() - start)
        start = time.perf_counter()
        compile_kernel(text, kernel, "cubin", "sm_90", specialization=spec)
        cubin.append(time.perf_counter() - start)
    stages = {k: round(v * 1e3, 1) for k, v in timings.items() if not k.startswith("pass:") and k != "lower"}
    return {"to_ptx_s": statistics.median(ptx), "to_cubin_s": statistics.median(cubin), "last_ptx_stages_ms": stages}


def triton_times(name, reps):
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        sys.path.insert(0, str(ROOT / "bench"))
        import gpu
    except Exception as error:
        return {"error": f"triton unavailable: {error}"}
    fn, signature, constexprs = {
        "row_softmax": (gpu.t_softmax, {"x": "*fp32", "y": "*fp32", "n": "i32", "inv_t": "fp32"}, {"BLOCK": 1024}),
        "vector_add": (gpu.t_add, {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": "i32"}, {"BLOCK": 1024}),
    }[name]
    times = []
    try:
        for i in range(reps + 1):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                start = time.perf_counter()
                source = triton.compiler.ASTSource(fn=fn, signature={**signature, **dict.fromkeys(constexprs, "constexpr")},
                                                   constexprs={(list(fn.arg_names).index(k),): v
                                                               for k, v in constexprs.items()})
                compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
                if i:
                    times.append(time.perf_counter() - start)
        assert "ptx" in compiled.asm
    except Exception as error:
        return {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    return {"to_cubin_s": statistics.median(times)}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rows = []
    for name, kernel, extents in (("row_softmax", "row_softmax", None), ("row_softmax", "row_softmax", {"N": 1024}),
                                  ("vector_add", "vector_add", None)):
        row = {"kernel": name + (f" {extents}" if extents else " (dynamic extents)" if name == "row_softmax" else ""),
               "intentc": intentc_times(name, kernel, args.reps, extents), "triton": triton_times(name, args.reps)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(f"{'kernel':36s}{'intentc to PTX':>16s}{'intentc to cubin':>18s}{'triton to cubin':>17s}")
    for row in rows:
        triton_s = row["triton"].get("to_cubin_s")
        print(f"{row['kernel']:36s}{row['intentc']['to_ptx_s'] * 1e3:14.1f}ms{row['intentc']['to_cubin_s'] * 1e3:16.1f}ms"
              + (f"{triton_s * 1e3:15.1f}ms" if triton_s else f"{'-':>17s}"))
    if args.out:
        Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "results": rows}, indent=2))


if __name__ == "__main__":
    main()
