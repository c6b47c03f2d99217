"""Every sample to PTX with the compile's garbage collected on a second thread while LLVM
emits (`codegen/collection.py`, the default) against collected at the compile's end only
(the collection patched out of the code generator's call: the driver's end-of-compile
collection then frees it all, as before), in one process, A B B A per sample; wall and
CPU time, medians.

    python3 bench/collection_ab.py [--reps 2] [--only SAMPLE:KERNEL,...] [--out FILE] [--time-limit-s S]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHOICES = ("meanwhile", "at the end")


def main(argv=None) -> None:
    from bench.compile import compile_args
    from bench.gpu_sample_specs import SPECS
    from intentc.codegen.nvptx import machine
    from intentc.driver import compile_kernel
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--only", help="comma-separated sample:kernel ids")
    parser.add_argument("--out")
    parser.add_argument("--time-limit-s", type=float, default=0.0, help="stop after the sample that passes it")
    args = parser.parse_args(argv)
    specs = [spec for spec in SPECS if not args.only or spec.id in args.only.split(",")]
    meanwhile = machine.collecting_meanwhile
    start, rows = time.perf_counter(), []
    for spec in specs:
        text, kernel, specialization = compile_args(spec)
        times: dict[str, list[tuple[float, float]]] = {choice: [] for choice in CHOICES}
        compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
        for _ in range(args.reps):
            for choice in (*CHOICES, *reversed(CHOICES)):
                machine.collecting_meanwhile = meanwhile if choice == CHOICES[0] else contextlib.nullcontext
                wall, cpu = time.perf_counter(), time.process_time()
                compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
                times[choice].append((time.perf_counter() - wall, time.process_time() - cpu))
        machine.collecting_meanwhile = meanwhile
        row = {"id": spec.id, **{f"{choice} {kind}_ms": round(1e3 * statistics.median(t[i] for t in times[choice]), 2)
                                  for choice in CHOICES for i, kind in enumerate(("wall", "cpu"))}}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.time_limit_s and time.perf_counter() - start > args.time_limit_s:
            break
    totals = {key: round(sum(row[key] for row in rows), 1) for key in rows[0] if key != "id"}
    print(json.dumps({"samples": len(rows), "sums": totals}))
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "sums": totals}, indent=1) + "\n")


if __name__ == "__main__":
    main()
