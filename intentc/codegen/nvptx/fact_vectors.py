"""Vector groups from layout facts (docs/gpu.md, "Layout facts at launch").

The register form gives a thread V consecutive coordinates a slot group: 4 in an iteration
with a scan always (a block scan then serves V coordinates a thread; 4-byte elements move as
one 16-byte access where aligned), and in any other iteration where the launch proves every
group one 16-byte access — every tensor access of the iteration is to a view of 4-byte
elements (V = 4) or of 2-byte floats (V = 8) the specialization proves 16-byte
aligned and dense (`aligned16`, `contiguous`: facts `intentc.load` infers at each call, as
Triton specializes its pointers), at a last index that steps by one along the iteration's
coordinate and other indices the same for all of it. Such a group's alignment and
contiguity fold at compile time (`codegen/llvm/memory._vector_ready`), so it is a plain
`ld.global.v4`/`st.global.v4`. Without the facts, those checks a group made vector add and
softmax 10-30% slower on the H200 (bench/results/vector-ab-20261129-h200.jsonl), so such
iterations keep one coordinate a group.
"""
from __future__ import annotations

from ...ir.nodes import Kernel, Op
from ...ir.optable import all_ops
from ...ir.types import TensorType, ViewType
from ...options import Specialization
from ..llvm.memory import VECTOR_BYTES, VECTOR_DTYPES
from .cta_tiles import every_op
from .cta_transpose import varying


def proven_vectors(kernel: Kernel, ops: list[Op], specialization: Specialization) -> int:
    """V where every tensor access of the iteration `ops` is one 16-byte vector access a
    group of V consecutive coordinates (above): 4 for 4-byte elements, 8 for 2-byte ones
    (f16, bf16); 0 where one is not, or there is none."""
    views = {p.name: p.type for p in kernel.params if isinstance(p.type, ViewType)}
    proven = set(specialization.aligned16) & set(specialization.contiguous)
    defs = {name: op for op in every_op(kernel.body) for name in op.results}
    table = all_ops()
    accesses = [op for op in every_op(ops) if op.name in table and table[op.name].accesses
                and op.operands[0] in views and _rank(_accessed(op, defs)) > 0]
    widths = {VECTOR_DTYPES.get(views[op.operands[0]].dtype) for op in accesses}
    if len(widths) != 1 or None in widths or not all(
            (op.name == "read" or op.name == "write") and op.operands[0] in proven and _rank(_accessed(op, defs)) == 1
            and _steps_by_one(list(op.group("index") or ())[-1:], defs)
            and all(_uniform(name, defs) for name in list(op.group("index") or ())[:-1]) for op in accesses):
        return 0
    (width,) = widths
    return VECTOR_BYTES // width if width else 0


def _accessed(op: Op, defs: dict[str, Op]):
    """The tensor type an access moves: a read's result, a write's value."""
    if op.results:
        return op.result_types[0]
    source = defs.get(op.operands[1])
    return source.result_types[0] if source is not None else None


def _rank(type_) -> int:
    return len(type_.shape) if isinstance(type_, TensorType) else 0


def _uniform(name: str, defs: dict[str, Op]) -> bool:
    """The value is the same at every coordinate (`cta_transpose.varying`: it varies along
    no axis)."""
    return varying(name, defs, {}) == frozenset()


def _steps_by_one(names: list[str], defs: dict[str, Op]) -> bool:
    """The (rank-1) index is the coordinate plus a uniform value: `iota`, or `add` of such an
    index and a uniform one."""
    if len(names) != 1:
        return False
    op = defs.get(names[0])
    if op is None:
        return False
    if op.name == "iota":
        return True
    if op.name == "add" and len(op.operands) == 2:
        first, second = op.operands
        return ((_steps_by_one([first], defs) and _uniform(second, defs))
                or (_uniform(first, defs) and _steps_by_one([second], defs)))
    return False
