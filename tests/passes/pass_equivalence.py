"""Shared by the equivalence tests: run a kernel before and after a pipeline on the same
inputs and seed, and compare outputs bit for bit or within the documented bounds
(docs/passes.md, "Numerics of the rewrites")."""
from __future__ import annotations

import numpy as np

from intentc.api import run
from intentc.ir.nodes import Module
from intentc.options import CompileOptions
from intentc.passes import Instrumentation, PassContext, parse_pipeline, run_pipeline
from intentc.verify import verify

# Outputs a kernel computes through a §5.3/§5.4 contract rewrite or a §5.6 online fold may
# move by a few roundings of the output dtype relative to the output's magnitude.
ROUNDINGS_ALLOWED = 16


def optimized(module: Module, pipeline: str, numerics: str = "source") -> tuple[Module, dict[str, int]]:
    """The module after `pipeline`, checked to verify after every pass that changed it."""
    ctx = PassContext(CompileOptions(numerics=numerics))
    result = run_pipeline(module, parse_pipeline(pipeline), ctx, Instrumentation(verify_each=True))
    assert verify(result.module) == [], "pass output does not verify"
    return result.module, ctx.statistics


def outputs(module: Module, kernel: str, inputs: dict, constexprs: dict, seed: int) -> dict[str, np.ndarray]:
    copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    return run(module, kernel, copies, constexprs, seed=seed)


def assert_bit_identical(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for name in before:
        a, b = np.asarray(before[name]), np.asarray(after[name])
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes() or _same_nan_positions_else_equal(a, b), f"output {name} changed bits"


def _same_nan_positions_else_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """NaN payloads are not observable (§5.2): NaN in the same places, all other bits equal."""
    if a.dtype.kind != "f" and "float" not in str(a.dtype):
        return False
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(wide_a)
    return bool(np.array_equal(nan, np.isnan(wide_b)) and a[~nan].tobytes() == b[~nan].tobytes())


def assert_within_rounding_bound(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for name in before:
        a, b = np.asarray(before[name]), np.asarray(after[name])
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if a.dtype.kind in "iub" or a.size == 0:
            assert np.array_equal(a, b), name
            continue
        wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
        assert np.array_equal(np.isnan(wide_a), np.isnan(wide_b)), f"{name}: NaN positions changed"
        finite = np.isfinite(wide_a)
        assert np.array_equal(wide_a[~finite & ~np.isnan(wide_a)], wide_b[~finite & ~np.isnan(wide_b)]), name
        scale = max(1.0, float(np.max(np.abs(wide_a[finite]), initial=0.0)))
        bound = ROUNDINGS_ALLOWED * float(np.finfo(np.float32 if a.dtype.itemsize >= 4 else np.float16).eps) * scale
        worst = float(np.max(np.abs(wide_a[finite] - wide_b[finite]), initial=0.0))
        assert worst <= bound, f"{name}: moved by {worst:g} > {bound:g}"
