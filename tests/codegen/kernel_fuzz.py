"""Differential checks of generated kernels (kernel_generator.py): the interpreter (the
oracle) against the CPU JIT on the same inputs, and every kernel through the NVPTX lowering
and `ptxas` for sm_90. `check(program)` returns the problems found (empty when the targets
agree); any exception other than an expected diagnostic is a problem too, with its traceback.

Outputs whose bits the spec fixes compare to the bit (NaN = NaN); those it only bounds (a
libm function, a reassociated float sum, docs/kir.md §4, §6) compare within `bounded`.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import traceback
from pathlib import Path

import ml_dtypes
import numpy as np

from intentc.api import run
from intentc.diagnostics import DiagnosticError
from intentc.parse import parse
from intentc.verify import verify
from intentc.runtime.cpu import compile_cpu

from differential import UNFUSED, assert_same_bits, ulp_distance
from kernel_generator import Program

# Libm results may differ by the spec's ULP bounds on each side; f16/bf16 are evaluated in
# f32 and rounded, so one more rounding apart.
LIBM_ULPS = 8


def check(program: Program, ptx: bool = True, target: str = "cpu") -> list[str]:
    """Problems of one program: the interpreter against `target` (cpu, or cuda: dynamic
    extents or, for half the programs, specialized to the launch's), then PTX and ptxas."""
    problems: list[str] = []
    module = parse(program.text, "generated.kir")
    invalid = verify(module, "generated.kir")
    if invalid:
        return ["the generator wrote an invalid program: " + "; ".join(d.message for d in invalid[:3])]
    try:
        expected = run(program.text, "k", program.inputs)
    except DiagnosticError as error:
        return [f"interpreter refused a generated program:\n{error}"]
    except Exception:
        return [f"interpreter crashed:\n{traceback.format_exc()}"]
    problems += compare(program, expected, lambda: compiled(program, target, module), target, fused=False)
    if target == "cpu":    # the default pipeline (FMA fusion allowed, §5.5) on the launch's extents
        extents = extents_of(module, program.inputs)
        problems += compare(program, expected, lambda: compile_cpu(program.text, "k", {"extents": extents}),
                            "cpu (default passes, static extents)", fused=True)
        problems += compare(program, expected, lambda: interpreted(optimized_module(module, extents)),
                            "interpreter after the default passes", fused=True)
    if ptx:
        problems += ptx_problems(program.text)
        problems += ptx_problems(program.text, extents=extents_of(module, program.inputs))
    return problems


def compare(program: Program, expected: dict, build, what: str, fused: bool) -> list[str]:
    """Run the kernel `build()` makes on the program's inputs against the interpreter's outputs;
    with `fused`, float outputs only within bounds (a fused multiply-add rounds once, §5.5)."""
    try:
        got = build()(program.inputs)
    except Exception:
        return [f"{what} failed:\n{traceback.format_exc()}"]
    problems = []
    for name, bound in program.outputs.items():
        if bound == "bits" and fused and is_float_array(expected[name]):
            bound = "ulps"
        try:
            if bound == "bits":
                assert_same_bits(got[name], expected[name], name)
            else:
                bounded(got[name], expected[name], name, sum_scale(program) if bound == "sum" else None)
        except AssertionError as error:
            problems.append(f"{what} differs from the interpreter on {name} ({bound}): {str(error)[:600]}")
    return problems


def is_float_array(array) -> bool:
    return np.asarray(array).dtype.kind == "f" or np.asarray(array).dtype.name in ("bfloat16", "float8_e5m2",
                                                                                  "float8_e4m3fn")


def optimized_module(module, extents: dict):
    """The module after the default pass pipeline for the launch's extents, verified."""
    from intentc.driver import front_end, optimized
    after = optimized(front_end(module, "k", "kir", specialization={"extents": extents}))
    problems = verify(after, "optimized.kir")
    assert not problems, "the default passes made a module that does not verify: " + problems[0].message
    return after


def interpreted(module):
    return lambda inputs: run(module, "k", inputs)


def compiled(program: Program, target: str, module):
    if target == "cpu":
        return compile_cpu(program.text, "k", None, UNFUSED)
    from intentc.runtime.cuda import compile_cuda
    specialize = sum(map(ord, program.text)) % 2 == 0     # a fixed choice per program
    extents = extents_of(module, program.inputs) if specialize else {}
    return compile_cuda(program.text, "k", {"extents": extents}, UNFUSED)


def extents_of(module, inputs: dict) -> dict[str, int]:
    """The launch's dynamic extents (what `intentc run --target cuda` specializes on)."""
    kernel = module.find("k")
    extents: dict[str, int] = {}
    for param in kernel.params:
        for axis, extent in enumerate(getattr(param.type, "shape", ()) or ()):
            if isinstance(extent, str) and param.name in inputs:
                extents[extent] = int(np.shape(inputs[param.name])[axis])
    return extents


def sum_scale(program: Program) -> float:
    """A bound on the terms of a reassociated sum: the largest element count times the largest
    finite magnitude among the program's float inputs (sums of sums may add up to that)."""
    count, largest = 1, 1.0
    for array in program.inputs.values():
        array = np.asarray(array)
        count = max(count, array.size)
        if is_float_array(array) and array.size:
            wide = np.abs(array.astype(np.float64))
            largest = max(largest, float(np.max(wide[np.isfinite(wide)], initial=0.0)))
    return count * largest


def bounded(got, expected, name: str = "", reassociated: float | None = None) -> None:
    """Same NaN/inf pattern; finite values within LIBM_ULPS or a relative 1e-3 of the
    largest magnitude. A reassociated sum (`reassociated` = the scale of its terms) may differ
    by n·eps of that scale, §6, and overflow in one order and not in another (inf against a
    finite value when the terms' scale nears the top of the range, or inf + -inf = NaN against an infinity)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(wide_got) & np.isfinite(wide_expected)
    special_same = (np.isnan(wide_got) == np.isnan(wide_expected)) & \
        ((wide_got == wide_expected) | finite | np.isnan(wide_got))
    info = ml_dtypes.finfo(got.dtype) if got.dtype.kind != "f" else np.finfo(got.dtype)
    if reassociated is not None:
        may_overflow = reassociated >= float(info.max) / 64    # partial sums can reach the top in some order
        special_same |= (~np.isfinite(wide_got) & ~np.isfinite(wide_expected)) | (~finite & may_overflow)
    assert special_same.all(), (name, got[~special_same][:5], expected[~special_same][:5])
    if not finite.any():
        return
    scale = np.max(np.abs(wide_expected[finite]))
    tolerance = 1e-3 * scale
    if reassociated is not None:
        tolerance = max(tolerance, reassociated * float(info.eps) * 4)
    close = (ulp_distance(got, expected) <= LIBM_ULPS) | (np.abs(wide_got - wide_expected) <= tolerance)
    assert (close | ~finite).all(), (name, got[~close & finite][:5], expected[~close & finite][:5])


def ptx_problems(text: str, arch: str = "sm_90", extents: dict | None = None) -> list[str]:
    """Lower for the GPU (the default pipeline; dynamic extents, or specialized to `extents`)
    and assemble with ptxas, where it is installed."""
    from intentc.driver import compile_kernel
    try:
        ptx = compile_kernel(text, "k", "ptx", arch, specialization={"extents": extents or {}}).artifacts["kernel.ptx"]
    except DiagnosticError as error:
        return [f"ptx lowering refused a verified program{f' (extents {extents})' if extents else ''}: {error}"]
    except Exception:
        return [f"ptx lowering crashed{f' (extents {extents})' if extents else ''}:\n{traceback.format_exc()}"]
    if shutil.which("ptxas") is None:
        return []
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "k.ptx"
        source.write_text(str(ptx))
        done = subprocess.run(["ptxas", f"-arch={arch}", str(source), "-o", str(Path(folder) / "k.cubin")],
                              capture_output=True, text=True)
    which = f" (extents {extents})" if extents else ""
    return [] if done.returncode == 0 else [f"ptxas rejected the PTX{which}: {done.stderr[:800]}"]
