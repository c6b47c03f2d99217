"""Generates large synthetic KIR modules for the benchmarks (deterministic for a seed)."""
from __future__ import annotations

import random

# A fixed mix of ops, not a property of ops (so not an op-table query): the generated
# workload stays the same as the op table grows, and timings stay comparable across commits.
_BINARY = ("add", "sub", "mul", "maximum", "minimum")
_UNARY = ("exp", "neg", "abs", "sqrt", "tanh")


def generated_module(lines: int, seed: int = 0) -> str:
    """A module of kernels with SSA-style pointwise chains, reads, reductions and writes."""
    rng = random.Random(seed)
    out: list[str] = []
    kernel = 0
    while len(out) < lines:
        out += _kernel(kernel, min(96, max(8, lines - len(out) - 8)), rng)
        out.append("")
        kernel += 1
    return "\n".join(out[:lines]).rstrip() + "\n" if len(out) > lines else "\n".join(out)


def _kernel(number: int, body_ops: int, rng: random.Random) -> list[str]:
    out = [f"// generated kernel {number}",
           f"kernel @k{number}(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>) {{",
           "  parallel %M {", "  ^row(%i: index):",
           "    %cols = iota : tensor<index, [%N]>",
           "    %v0 = read %x index(%i, %cols) : tensor<f32, [%N]>"]
    live = ["v0"]
    for n in range(1, body_ops):
        if rng.random() < 0.6:
            a, b = rng.choice(live), rng.choice(live)
            out.append(f"    %v{n} = {rng.choice(_BINARY)} %{a}, %{b} : tensor<f32, [%N]>")
        else:
            out.append(f"    %v{n} = {rng.choice(_UNARY)} %{rng.choice(live)} : tensor<f32, [%N]>")
        live.append(f"v{n}")
    out += [f"    write %y, %v{body_ops - 1} index(%i, %cols)", "  }", "}"]
    return out
