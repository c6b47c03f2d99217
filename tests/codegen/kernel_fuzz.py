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
    try:
        got = compiled(program, target, module)(program.inputs)
    except Exception:
        problems.append(f"{target} failed:\n{traceback.format_exc()}")
    else:
        for name, exact in program.outputs.items():
            try:
                (assert_same_bits if exact else bounded)(got[name], expected[name], name)
            except AssertionError as error:
                problems.append(f"{target} differs from the interpreter on {name} ({'bits' if exact else 'bound'}): "
                                f"{str(error)[:600]}")
    if ptx:
        problems += ptx_problems(program.text)
        problems += ptx_problems(program.text, extents=extents_of(module, program.inputs))
    return problems


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


def bounded(got, expected, name: str = "") -> None:
    """Same NaN/inf pattern; finite values within LIBM_ULPS or a relative 1e-3 of the
    largest magnitude (a reassociated sum's error grows with its terms, §6)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(wide_got) & np.isfinite(wide_expected)
    special_same = (np.isnan(wide_got) == np.isnan(wide_expected)) & \
        ((wide_got == wide_expected) | finite | np.isnan(wide_got))
    assert special_same.all(), (name, got[~special_same][:5], expected[~special_same][:5])
    if not finite.any():
        return
    scale = np.max(np.abs(wide_expected[finite]))
    close = (ulp_distance(got, expected) <= LIBM_ULPS) | (np.abs(wide_got - wide_expected) <= 1e-3 * scale)
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
