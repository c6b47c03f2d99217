"""Differential fuzzing of generated kernels: random well-typed KIR programs
(tests/codegen/kernel_generator.py) run on the reference interpreter and on the CPU JIT (or a
CUDA GPU), compared to the bit where the spec fixes the bits and within its bounds elsewhere,
and lowered to PTX and assembled by ptxas (tests/codegen/kernel_fuzz.py).

    python tools/fuzz_kernels.py --seconds 600 --out fuzz-out            # CPU + PTX
    python tools/fuzz_kernels.py --target cuda --seconds 40 --jobs 8 --out fuzz-out

Each failing program is saved as `seed-N.kir` under --out, its problems appended as comments
(re-run one with --seed N --count 1). Exits 1 when any program failed. A bounded run is part
of the test suite (tests/codegen/test_generated_kernels.py).
"""
from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "codegen")]

import kernel_fuzz  # noqa: E402
from kernel_generator import generate  # noqa: E402


def check_seed(seed: int, target: str, ptx: bool) -> tuple[int, list[str], str]:
    program = generate(random.Random(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy on special values
        problems = kernel_fuzz.check(program, ptx=ptx, target=target)
    return seed, problems, program.text


def run(seeds, seconds: float, target: str, ptx: bool, jobs: int, out: Path | None, log=sys.stderr) -> int:
    started, checked, failed = time.monotonic(), 0, 0
    arguments = ((seed, target, ptx) for seed in seeds)
    pool = multiprocessing.get_context("spawn").Pool(jobs) if jobs > 1 else None
    results = pool.imap_unordered(_star, arguments) if pool else map(_star, arguments)
    try:
        for seed, problems, text in results:
            checked += 1
            if problems:
                failed += 1
                print(f"seed {seed}: {problems[0].splitlines()[0][:300]}", file=log, flush=True)
                if out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    comments = "\n".join("// " + line for line in "\n".join(problems).splitlines())
                    (out / f"seed-{seed}.kir").write_text(text + "\n" + comments + "\n")
            if time.monotonic() - started > seconds:
                break
    finally:
        if pool:
            pool.terminate()
    print(f"{checked} programs on {target} in {time.monotonic() - started:.0f}s: {failed} failed", file=log, flush=True)
    return failed


def _star(arguments):
    return check_seed(*arguments)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed")
    parser.add_argument("--count", type=int, default=1_000_000, help="stop after this many programs")
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--no-ptx", action="store_true", help="skip the PTX lowering and ptxas")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="save failing programs here")
    args = parser.parse_args(argv)
    seeds = range(args.seed, args.seed + args.count)
    return 1 if run(seeds, args.seconds, args.target, not args.no_ptx, args.jobs, args.out) else 0


if __name__ == "__main__":
    sys.exit(main())
