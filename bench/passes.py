"""Times the default pass pipeline (what `compile` runs) per ir_samples file and on a
generated 100-line kernel (goal: <= 5 ms). Verification between passes is off, as in
compile.

    .venv/bin/python -m bench.passes

Prints a table and writes bench/results/passes-<date>-<hostname>.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import median_seconds, print_table, write_results  # noqa: E402
from bench.gen import generated_module  # noqa: E402
from intentc.parse import parse  # noqa: E402
from intentc.passes import DEFAULT_PIPELINE, Instrumentation, PassContext, parse_pipeline, run_pipeline  # noqa: E402

GOAL_MS = 5.0
NO_VERIFY = Instrumentation(verify_each=False)


def pipeline_ms(module, repeat: int) -> tuple[float, dict[str, float]]:
    passes = parse_pipeline(DEFAULT_PIPELINE)
    seconds = median_seconds(lambda: run_pipeline(module, passes, PassContext(), NO_VERIFY), repeat)
    per_pass = {name: t * 1e3 for name, t in run_pipeline(module, passes, PassContext(), NO_VERIFY).timings}
    return seconds * 1e3, per_pass


def main(repeat: int = 20) -> dict:
    rows, records = [], []
    for path in sorted((ROOT / "ir_samples").glob("*.kir")):
        text = path.read_text()
        total, per_pass = pipeline_ms(parse(text), repeat)
        lines = text.count("\n")
        rows.append([path.stem, lines, total])
        records.append({"case": path.stem, "lines": lines, "median_ms": total, "per_pass_ms": per_pass})
    generated = generated_module(100, seed=0)
    total, per_pass = pipeline_ms(parse(generated), repeat)
    rows.append(["generated 100-line kernel", generated.count("\n"), total])
    records.append({"case": "generated-100", "lines": generated.count("\n"), "median_ms": total,
                    "per_pass_ms": per_pass})
    print_table(["case", "lines", "median ms"], rows)
    verdict = "meets" if total <= GOAL_MS else "misses"
    print(f"\ngenerated 100-line kernel: {total:.3f} ms ({verdict} the {GOAL_MS} ms goal)")
    payload = {"pipeline": DEFAULT_PIPELINE, "goal": f"generated 100-line kernel <= {GOAL_MS} ms",
               "generated_100_ms": total, "results": records}
    path = write_results("passes", payload)
    print(f"wrote {path.relative_to(ROOT)}")
    return payload


if __name__ == "__main__":
    main()
