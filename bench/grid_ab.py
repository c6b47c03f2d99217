"""The CTA mapping's grid (session 11, docs/gpu.md "Layout facts at launch") sample by sample
on the GPU: each sample compiled as `bench/gpu_samples.py` runs it with a CTA an iteration for
every CTA iteration (`mapping.ITERATION_CTAS_PER_SM` CTAs an SM asked, the default only for
register-form scans since session 11) and with one wave of CTAs striding over the
iterations (`ITERATION_CTAS_PER_SM` 0: the grid before), launched on the same device data, the
outputs compared bit for bit (`gpu_codegen_ab`'s poisoned outputs, a reset where the case has
one), then timed A B A B (each the median of CUDA-event times, `gpu_samples.timing`; the
better of its two kept); one line a sample: the milliseconds of each, their ratio, the CTAs an
SM each grid asks (the launch cuts them to the iterations, `grid_fit.py`). Samples not mapped
`cta` are skipped. Each sample compiles once a grid (the PTX is the same; the launch differs).
Written for session 11's round 2, which did not run: no result yet.

    python3 bench/grid_ab.py --only SAMPLE:KERNEL,... [--budget-s 0.05] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import attributes  # noqa: E402  (after the path insert)
from bench.gpu_codegen_ab import _bits, _bits_view, fresh_compiles, out_views  # noqa: E402


def every_iteration():
    """A CTA an iteration for every CTA iteration but a costly prologue's (which keeps its
    smaller grid), not only for register-form scans."""
    from intentc.codegen.nvptx import mapping
    return attributes(mapping, iteration_ctas_per_sm=lambda plan: mapping.ITERATION_CTAS_PER_SM)


def launched(spec, text: str, case, one_wave: bool):
    """(the launch, its Launcher, its outputs' bits after one launch) under the grid chosen."""
    from bench.gpu_samples import Launcher, view_params
    from intentc.codegen.nvptx import mapping
    dims = spec.sized(spec.dims[spec.scaled])
    grid = attributes(mapping, ITERATION_CTAS_PER_SM=0) if one_wave else every_iteration()
    with fresh_compiles(grid):      # a fresh cache (its key does not name the grid); the first launch
        launcher = Launcher(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                            f"ir_samples/{spec.sample}.kir")     # too: a call may compile a variant
        launch = launcher.bind(case.values)
        if case.reset:
            case.reset()
        for name in out_views(text, spec.kernel):   # poisoned: a launch that wrote nothing cannot pass
            _bits_view(case.values[name]).fill_(0xFF)
        launch()
    launcher.check_status()
    return launch, launcher, {name: _bits(case.values[name]) for name in out_views(text, spec.kernel)}


def grid_row(spec, budget_s: float) -> dict | None:
    import torch

    from bench.gpu_samples import timing
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    case = spec.build(spec.sized(spec.dims[spec.scaled]), "cuda")
    default, launcher, bits = launched(spec, text, case, one_wave=False)
    if launcher.mapping["mapping"] != "cta":
        return None
    wave, wave_launcher, wave_bits = launched(spec, text, case, one_wave=True)
    row: dict = {"id": spec.id, "same_bits": all(torch.equal(bits[name], wave_bits[name]) for name in bits),
                 "grids": [launcher.mapping["ctas_per_sm"], wave_launcher.mapping["ctas_per_sm"]]}
    times: dict[str, list[float]] = {"every iteration": [], "one wave": []}
    for _ in range(2):
        for name, launch in (("every iteration", default), ("one wave", wave)):
            if case.reset:
                case.reset()
            times[name].append(timing(launch, budget_s, case).get("ms", float("nan")))
    row.update({name: min(ms) for name, ms in times.items()})
    row["one wave / every iteration"] = round(row["one wave"] / row["every iteration"], 3)
    return row


def main(argv=None) -> int:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="comma-separated sample:kernel ids")
    parser.add_argument("--budget-s", type=float, default=0.05)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    by_id = {spec.id: spec for spec in SPECS}
    rows = []
    for ident in args.only.split(","):
        try:
            row = grid_row(by_id[ident], args.budget_s)
        except Exception as error:
            row = {"id": ident, "error": f"{type(error).__name__}: {str(error)[:200]}"}
        if row is None:
            continue
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
