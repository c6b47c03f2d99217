"""Registers (ptxas -v, sm_90) of a dynamic row's register-form entries, no GPU needed: each
entry of the eager module (`--eager-variants`: every slot above the previous bound masked)
beside the kernel specialized to that entry's bound and the lazy bucket variant of a row of
exactly the bound (no guard), and the bucket variant of a row one element shorter (only the
last group guarded) beside the kernel specialized to that length.
Fewer registers are more resident CTAs, more loads in flight (docs/gpu.md, "Variants for
dynamic extents").

    python3 bench/variant_registers.py [--only ID,...] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KERNELS = ("row_softmax:row_softmax", "layernorm:layernorm", "philox_dropout:dropout", "cumsum:row_cumsum",
           "row_sum:row_sum_f16")


def registers(ptx: str) -> dict[str, int]:
    """Registers of each entry of `ptx`, by entry name (ptxas -v)."""
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "k.ptx"
        source.write_text(ptx)
        report = subprocess.run(["ptxas", "-v", "-arch=sm_90", str(source), "-o", str(Path(directory) / "k.cubin")],
                                capture_output=True, text=True, check=True).stderr
    found, entry = {}, None
    for line in report.splitlines():
        named = re.search(r"Compiling entry function '(\w+)'", line)
        entry = named.group(1) if named else entry
        used = re.search(r"Used (\d+) registers", line)
        if used and entry:
            found[entry] = int(used.group(1))
    return found


def kernel_rows(spec) -> list[dict]:
    from bench.gpu_samples import view_params
    from intentc.codegen.nvptx.variants import VariantRule
    from intentc.driver import compile_kernel
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    views = view_params(text, spec.kernel)
    dynamic = spec.specialization(views, spec.dims, True)

    def compiled(specialization: dict) -> tuple[dict, dict]:
        artifacts = compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization=specialization).artifacts
        return json.loads(artifacts["launch.json"]), registers(artifacts["kernel.ptx"])
    launch, eager = compiled({**dynamic, "lazy_variants": False})
    rule = VariantRule(**compiled(dynamic)[0]["variant_rule"])
    rows = []
    for variant in launch["variants"]:
        bound = variant["max"] * rule.factor
        specialized = compiled(spec.specialization(views, {**spec.dims, rule.extent: variant["max"]}))[1]
        exact = compiled({**dynamic, "variant": rule.bucket(variant["max"])})[1]
        below = compiled({**dynamic, "variant": rule.bucket(variant["max"] - 1)})[1]
        specialized_below = compiled(spec.specialization(views, {**spec.dims, rule.extent: variant["max"] - 1}))[1]
        rows.append({"id": spec.id, "entry": variant["entry"], "elements": [variant["min"] * rule.factor, bound],
                     "block": variant["block"], "slots": variant["slots"], "eager": eager[variant["entry"]],
                     "specialized": min(specialized.values()), "bucket_exact": min(exact.values()),
                     "bucket_last_group_guarded": min(below.values()),
                     "specialized_one_less": min(specialized_below.values())})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(KERNELS))
    parser.add_argument("--out")
    args = parser.parse_args()
    specs = {spec.id: spec for spec in SPECS}
    rows = [row for ident in args.only.split(",") for row in kernel_rows(specs[ident])]
    if args.out:
        Path(args.out).write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                                              "command": "python3 bench/variant_registers.py", "rows": rows},
                                             indent=1) + "\n")


if __name__ == "__main__":
    main()
