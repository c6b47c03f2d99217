"""The quantized rows' layouts side by side on the GPU (docs/gpu.md, "Quantized rows"), in
one process on the same data: `q4k_q8k_matvec` in lane groups of 4 (the default), 2 and 1
lanes a row, their sums reduce-scattered or butterflied, with the Q8_K vector staged in
shared memory or read from global memory, 1 or 2 blocks' weights loaded ahead and the
register caps of 2 to 4 resident CTAs an SM; beside torch's f16 matvec of the dequantized
weights. Every variant's output is compared bit for bit with the default's (which the GPU
tests check against the interpreter), and each is timed twice, in the order given and then
reversed. (Round 2 of session 7 also timed the one-row-a-warp layout that lane groups
replaced: bench/results/q4k-20261201-s7-h200-r2/.)

    python3 bench/q4k_ab.py [--out FILE] [--sizes R:NB,...] [--reps 50] [--only VARIANT,...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name -> the layout constants it overrides (quantized_rows: LANES, lanes a row;
# quantized_lanes: RESIDENT_STAGED, CTAs an SM; AHEAD, blocks of weights loaded
# ahead; STAGED_BYTES, 0: the Q8_K vector read from global memory, never staged; SCATTER,
# False: every lane of a group sums all 8 of aux32's members and keeps their float sums)
VARIANTS = {"lanes4": {}, "lanes4-butterfly": {"SCATTER": False},
            "lanes4-global": {"STAGED_BYTES": 0},
            "lanes4-r3": {"RESIDENT_STAGED": 3}, "lanes4-ahead2-r3": {"AHEAD": 2, "RESIDENT_STAGED": 3},
            "lanes2-r3": {"LANES": 2, "RESIDENT_STAGED": 3}, "lanes1-r2": {"LANES": 1, "RESIDENT_STAGED": 2}}
ID = "q4k_q8k_matvec:q4k_q8k_matvec"


def compiled(spec, dims: dict, overrides: dict):
    """The kernel compiled with the layout constants `overrides` sets (where the compiler
    reads each: LANES in quantized_rows, the others in quantized_lanes)."""
    from bench.common import compiled_sample
    from intentc.codegen.nvptx import quantized_lanes, quantized_rows
    owners = {name: quantized_rows if name == "LANES" else quantized_lanes for name in overrides}
    saved = {name: getattr(owners[name], name) for name in overrides}
    for name, value in overrides.items():
        setattr(owners[name], name, value)
    try:
        return compiled_sample(spec, dims)
    finally:
        for name, value in saved.items():
            setattr(owners[name], name, value)


def measured(spec, dims: dict, names: list, reps: int, row: dict, save) -> None:
    """`row` filled in as it comes (`save()` after each variant: a run cut short keeps what
    it measured); a variant that fails to compile or run is an `error` entry."""
    import torch

    from bench.gpu import timed
    case = spec.build(dims, "cuda")
    row.update({"id": spec.id, "size": spec.label(dims), "bytes": case.bytes})
    launches, reference = {}, None
    for label in names:
        try:
            kernel, compile_s = compiled(spec, dims, VARIANTS[label])
            launch = lambda kernel=kernel: kernel.launch_in_place(case.values, spec.constexprs)
            case.values["y"].fill_(float("nan"))
            launch()
            kernel.synchronize()
        except Exception as error:
            row[label] = {"error": f"{type(error).__name__}: {error}"[:800]}
            save()
            continue
        y = case.values["y"].clone()
        if reference is None:
            reference = y
        row[label] = {"plan": kernel.launch_config.plan, "compile_s": round(compile_s, 3),
                      "correct": case.check() is True, "same_bits_as_first": bool(torch.equal(
                          y.view(torch.int32), reference.view(torch.int32))), "ms": []}
        launches[label] = launch
        save()
    for name, baseline in case.baselines.items():
        row[name] = {"ms": round(timed(baseline, reps) * 1e3, 4)}
    for label in list(launches) + list(launches)[::-1]:
        row[label]["ms"].append(round(timed(launches[label], reps) * 1e3, 4))
        ms = min(row[label]["ms"])
        row[label]["GB/s"] = round(case.bytes / ms * 1e-6, 1)
        for name in case.baselines:
            row[label][f"ratio_{name}"] = round(row[name]["ms"] / ms, 3)
        save()


def main(argv=None) -> None:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--sizes", default="32768:16,16384:56,4096:16")
    parser.add_argument("--only", default=",".join(VARIANTS))
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args(argv)
    spec = next(s for s in SPECS if s.id == ID)
    names = args.only.split(",")
    rows: list = []

    def save() -> None:
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    for size in args.sizes.split(","):
        r, nb = (int(v) for v in size.split(":"))
        row: dict = {}
        rows.append(row)
        try:
            measured(spec, {**spec.dims, "R": r, "NB": nb}, names, args.reps, row, save)
        except Exception as error:            # one failing size is a row, not the end of the run
            row.update({"id": ID, "size": size, "error": f"{type(error).__name__}: {error}"[:800]})
        print(json.dumps(row), flush=True)
        save()


if __name__ == "__main__":
    main()
