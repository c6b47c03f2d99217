"""Top-level tensor programs on the H200 (the `grid` mapping, docs/gpu.md) beside torch on
the same device-resident data, in one process: 2^26 f32 elements each.

    python3 bench/gpu_grid.py [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu import Intentc, sample, timed

N = 1 << 26


def rows():
    x, s = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = [torch.empty_like(x) for _ in range(2)]
    bits = torch.empty(N, dtype=torch.uint8, device="cuda")
    sign = Intentc(sample("float_sign_bitcast"), "sign_ops")
    yield ("sign_ops (copysign, neg, signbit)", 8 * N + 9 * N, sign, sign(mag=x, sgn=s, copysign=out[0], negated=out[1],
                                                                            signbit=bits),
           lambda: (torch.copysign(x, s, out=out[0]), torch.neg(x, out=out[1]), torch.signbit(x)),
           lambda: torch.equal(out[0], torch.copysign(x, s)) and torch.equal(out[1], -x))
    act = Intentc(sample("fast_activations_approx"), "fast_silu_gelu")
    yield ("fast_silu_gelu", 4 * N + 8 * N, act, act(x=x, silu=out[0], gelu=out[1]),
           lambda: (torch.nn.functional.silu(x), torch.nn.functional.gelu(x, approximate="tanh")),
           lambda: torch.allclose(out[0], torch.nn.functional.silu(x), atol=1e-3))
    bf = torch.empty(N, dtype=torch.bfloat16, device="cuda")
    sr = Intentc(sample("stochastic_rounding_bf16"), "stochastic_round_bf16")
    yield ("stochastic_round_bf16", 4 * N + 2 * N, sr, sr(x=x, seed=9, y=bf), lambda: x.to(torch.bfloat16),
           lambda: torch.allclose(bf.float(), x, rtol=1e-2, atol=1e-2))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    results = []
    for name, nbytes, kernel, launch, reference, check in rows():
        ours, theirs = timed(launch, 20), timed(reference, 20)
        row = {"bench": f"{name} n={N}", "bytes": nbytes, "mapping": kernel.kernel.launch_config.mapping,
               "intentc": {"ms": ours * 1e3, "GB/s": nbytes / ours / 1e9},
               "torch": {"ms": theirs * 1e3, "GB/s": nbytes / theirs / 1e9},
               "intentc_correct": bool(kernel.ok() and check()), "intentc/torch": theirs / ours}
        print(json.dumps(row), flush=True)
        results.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
