"""Top-level whole-tensor programs that session 12 moved off one GPU thread: onto staged
launches (docs/gpu.md, "staged programs": a dot product's L2 normalization, an argmax, a
two-component generic_reduce, 2^24 f32), onto the row mappings (docs/passes.md,
"top-level-rows": a softmax and an RMS norm of rows written with whole tensors, 16384 rows)
and onto the tensor cores ("top-level-tiles": a product of two whole f16 views, 4096^3),
each beside torch's closest equivalent on the same device data, timed in one process (CUDA
events, the median of 3 timed batches after a warm-up), with the torch/intentc time ratio.

    python3 bench/gpu_toplevel.py [--n 16777216] [--out FILE.json] [--tuple-slots K]
"""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))


def _ms(run, reps: int = 50) -> float:
    import torch
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return statistics.median(times)


def main() -> int:
    import torch

    import intentc
    from row_programs import ROW_PROGRAMS
    from tile_programs import TILE_PROGRAMS
    from staged_programs import ARGMAX, L2_NORMALIZE, RANGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--out")
    parser.add_argument("--tuple-slots", type=int, help="another `stages.TUPLE_SLOTS` (give the process its "
                        "own INTENTC_CACHE_DIR: the kernel cache does not know it)")
    args = parser.parse_args()
    if args.tuple_slots:
        from intentc.codegen.nvptx import stages
        stages.TUPLE_SLOTS = args.tuple_slots
    n = args.n
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    scalar = torch.empty((), device="cuda")
    position = torch.empty((), dtype=torch.int64, device="cuda")
    low = torch.empty((), device="cuda")
    m, width = 16384, 1024
    x2 = torch.randn(m, width, device="cuda")
    y2, row_max = torch.empty_like(x2), torch.empty(m, device="cuda")
    h, weight = x2.to(torch.bfloat16), torch.randn(width, device="cuda").to(torch.bfloat16)
    h_out = torch.empty_like(h)
    side = 4096
    ha, hb = (torch.randn(side, side, device="cuda").to(torch.float16) for _ in range(2))
    hc = torch.empty(side, side, device="cuda", dtype=torch.float16)
    # name: (intentc's launch, torch's, the program, what torch computes, elements, bytes moved)
    cases = {
        "l2_normalize": (lambda k: k(x=x, y=y, ss=scalar), lambda: torch.div(x, torch.linalg.vector_norm(x), out=y),
                         L2_NORMALIZE, "torch x / vector_norm(x)", n, 8 * n),
        "vec_argmax": (lambda k: k(x=x, v=scalar, k=position, y=y),
                       lambda: torch.sub(x, torch.max(x, 0).values, out=y), ARGMAX, "torch x - max(x, 0)", n, 8 * n),
        "range_of": (lambda k: k(x=x, hi=scalar, lo=low), lambda: torch.aminmax(x), RANGE, "torch aminmax", n, 4 * n),
        "softmax_rows": (lambda k: k(x=x2, y=y2, mx=row_max), lambda: torch.softmax(x2, 1),
                         ROW_PROGRAMS["softmax_rows"], "torch softmax(x, 1)", m * width, 8 * m * width),
        "rms_rows": (lambda k: k(x=h, w=weight, y=h_out, eps=1e-5),
                     lambda: torch.nn.functional.rms_norm(h, (width,), weight, 1e-5),
                     ROW_PROGRAMS["rms_rows"], "torch rms_norm (bf16)", m * width, 4 * m * width),
        "hgemm_f16": (lambda k: k(a=ha, b=hb, c=hc), lambda: torch.matmul(ha, hb), TILE_PROGRAMS["hgemm_f16"],
                      "torch matmul (f16, cuBLAS)", side ** 2, 6 * side ** 2),
    }
    rows = []
    for name, (mine, theirs, text, baseline, elements, traffic) in cases.items():
        kernel = intentc.load(text, name, target="cuda")
        ours, torch_ms = _ms(functools.partial(mine, kernel)), _ms(theirs)
        row = {"kernel": name, "elements": elements, "bytes": traffic, "intentc_ms": round(ours, 4),
               "baseline": baseline, "baseline_ms": round(torch_ms, 4), "ratio": round(torch_ms / ours, 3),
               "intentc_GB/s": round(traffic / ours / 1e6, 1)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                                              "device": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
