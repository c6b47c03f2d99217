"""A tiny op builder for passes that synthesize code: fresh names, one call per op."""
from __future__ import annotations

from ..ir.nodes import Keyword, Op, OperandGroup, Param, Region
from ..ir.types import DType, TensorType, Type
from .ir_walk import Namer


class Emitter:
    def __init__(self, namer: Namer, prefix: str):
        self.namer, self.prefix = namer, prefix
        self.ops: list[Op] = []

    def fresh(self, hint: str) -> str:
        return self.namer.fresh(f"{self.prefix}_{hint}")

    def op(self, name: str, operands=(), type_=None, hint: str = "", attrs=None, groups=None,
           regions=(), result: str | None = None) -> str:
        """Append `%r = name operands {attrs} : type_` and return `r` (a fresh name unless given)."""
        result = result or self.fresh(hint or name)
        self.ops.append(Op(name=name, results=(result,), operands=tuple(operands),
                           groups=tuple(OperandGroup(key=k, values=tuple(v)) for k, v in (groups or {}).items()),
                           attributes=dict(attrs or {}), result_types=(type_,), regions=tuple(regions)))
        return result

    def constant(self, value, dtype: DType, hint: str) -> str:
        return self.op("constant", type_=TensorType(dtype=dtype), hint=hint, attrs={"value": value})

    def record_get(self, record: str, field: str, type_) -> str:
        return self.op("record_get", [record], type_, hint=field, attrs={"field": Keyword(name=field)})

    def yield_(self, *values: str) -> None:
        self.ops.append(Op(name="yield", operands=tuple(values)))

    def region(self, label: str, args: list[tuple[str, Type]]) -> Region:
        return Region(label=label, args=tuple(Param(name=n, type=t) for n, t in args), ops=tuple(self.ops))
