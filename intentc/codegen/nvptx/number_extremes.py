"""maximum_num / minimum_num of f32 in one instruction: PTX `max.f32` / `min.f32`.

IEEE 754-2019 maximumNumber / minimumNumber (spec §5.2): a NaN operand gives the other one,
-0 < +0. The PTX instructions are exactly that (the same comparison as `max.NaN.f32`,
which the `maximum` hook uses, with NaN mode off: one NaN input gives the other input, two
give a NaN, whose bits the spec leaves free). The shared code takes seven instructions
(a compare and select, an equal-bits select for -0 < +0, two NaN tests and their selects);
a `generic_reduce` whose combine is `maximum_num` (`nan_max`) runs it once a slot.

`llvm.nvvm.fmax.f` / `llvm.nvvm.fmin.f` are the PTX instructions as LLVM intrinsics; unlike
`llvm.maxnum`, whose result for (+0, -0) LLVM may pick either way, their folding keeps
PTX's semantics."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import F32

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

INTRINSICS = {"maximum_num": "llvm.nvvm.fmax.f", "minimum_num": "llvm.nvvm.fmin.f"}


def number_extreme(em: Emitter, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """`name` (maximum_num or minimum_num) of two f32 values."""
    return em.b.call(em.declare(INTRINSICS[name], F32, [F32, F32]), [a, b])
