"""How KIR values exist while a kernel is being lowered.

A tensor (a scalar is a rank-0 tensor) is known by its dtype, its extents (i64 LLVM values)
and a way to produce the register value of one element at a coordinate:

- `Scalar`: one SSA value;
- `Lazy`: an element expression re-emitted wherever an element is needed (iota, full,
  ...), so chains of element-wise ops fuse into one loop; `Derived`, the lazy form of
  element-wise ops and broadcasts, names its operands so that each element is emitted once
  per coordinate (`elements.py`);
- `Memory`: elements in a temporary (register-typed, any strides in elements);
- `Registers`: the elements a target's mapping gives this thread, one slot each of a
  per-thread array (registers once the slot loops are unrolled and SROA runs).

Views and buffers are resources, not values: `ViewRef` and `BufferRef`. Tuples are Python
tuples of values, records `RecordVal`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llvmlite import ir

from .types import I64

if TYPE_CHECKING:
    from .emitter import Emitter

# The vocabulary of the lowering's signatures: extents and coordinates are i64 values.
Shape = Sequence[ir.Value]
Coordinate = list[ir.Value]
Body = Callable[[Coordinate], None]              # work at one coordinate
ElementAt = Callable[[Coordinate], ir.Value]     # the register value of one element
# A vector form over consecutive coordinates: group(coordinates, visit) gives one value a lane
# (or none when it only has effects); visit(k) makes lane k current (see TargetHooks.for_each).
Group = Callable[[list[Coordinate], Callable[[int], None]], list[ir.Value] | None]


@dataclass
class Tensor(ABC):
    dtype: str
    shape: tuple[ir.Value, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @abstractmethod
    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        """The register value of the element at coordinate `idx`."""


@dataclass
class Scalar(Tensor):
    value: ir.Value = None
    shape: tuple[ir.Value, ...] = ()

    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        return self.value


@dataclass
class Lazy(Tensor):
    fn: Callable = None
    # Whether producing an element costs more than a few instructions (math calls, reads):
    # such a value is materialized when it has more than one use.
    costly: bool = False

    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        return self.fn(em, idx)


@dataclass
class Derived(Lazy):
    """Element = combine(em, [operand i's element at index_maps[i](idx)]) (the identity map
    where index_maps is empty); evaluated by `elements.evaluate`."""
    combine: Callable = None
    operands: tuple = ()
    index_maps: tuple = ()

    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        from .elements import evaluate
        return evaluate(em, self, idx)


@dataclass
class Memory(Tensor):
    ptr: ir.Value = None              # register-typed element pointer
    strides: tuple[ir.Value, ...] = ()
    row_major: bool = True            # strides are the row-major strides of shape

    def address(self, em: Emitter, idx: Coordinate) -> ir.Value:
        b = em.b
        offset = None
        for c, s in zip(idx, self.strides):
            term = b.mul(c, s)
            offset = term if offset is None else b.add(offset, term)
        return b.gep(self.ptr, [offset if offset is not None else ir.Constant(I64, 0)], inbounds=True)

    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        return em.b.load(self.address(em, idx))


@dataclass
class Registers(Tensor):
    """A tensor spread over threads (the NVPTX CTA mapping's register form): this thread's
    coordinates, one slot each of an entry-block array (registers once the slot loop is
    unrolled and SROA runs). Elements are read only at the coordinate the mapping is
    visiting, `em.hooks.current_slot` (an int, or the i64 index of a loop over the slots)."""
    array: ir.Value = None

    def slot(self, em: Emitter, number: int | ir.Value) -> ir.Value:
        """The pointer to slot `number` (an int or an i64 value)."""
        index = ir.Constant(I64, number) if isinstance(number, int) else number
        return em.b.gep(self.array, [ir.Constant(I64, 0), index], inbounds=True)

    def at(self, em: Emitter, idx: Coordinate) -> ir.Value:
        return em.b.load(self.slot(em, em.hooks.current_slot))


@dataclass
class ViewRef:
    """An external view: storage pointer to element 0 of the allocation, element offset,
    allocation size in elements, strides and extents (all i64)."""
    name: str
    dtype: str
    direction: str
    ptr: ir.Value
    offset: ir.Value
    size: ir.Value
    strides: tuple[ir.Value, ...]
    shape: tuple[ir.Value, ...]
    # every address within the extents lies in the allocation (a view the specialization
    # proves dense row-major: the runtime refuses one that reaches past its allocation), so
    # an access checks its coordinates against the extents only
    in_allocation: bool = False
    # element 0 lies at a 16-byte aligned address (`Specialization.aligned16`, checked at launch)
    aligned16: bool = False


@dataclass
class BufferRef:
    """A kernel-local logical buffer: register-typed, row-major, with a written-mask (one
    byte an element, §9: reading an element never written is an illegal input) unless an
    `init` wrote every element."""
    dtype: str
    memory: Memory
    written: Memory | None = None
    shared: bool = False       # in memory all the iteration's threads share: accesses meet at barriers

    @property
    def shape(self) -> tuple[ir.Value, ...]:
        return self.memory.shape


@dataclass
class RecordVal:
    fields: dict = field(default_factory=dict)


def coordinate_axes(shape: Sequence[ir.Value]) -> tuple[Lazy, ...]:
    """The coordinate's components as index tensors of `shape`: the operands of a `Derived`
    whose element is a function of its coordinate (`combine` gets the coordinate), so that
    it is emitted once per coordinate and basic block (elements.py)."""
    return tuple(Lazy("index", tuple(shape), lambda e, idx, a=a: idx[a]) for a in range(len(shape)))


def scalar(dtype: str, value: ir.Value) -> Scalar:
    return Scalar(dtype, (), value)
