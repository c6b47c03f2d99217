"""A `loop` or `if` whose body is element-wise per coordinate, lowered as lazy tensors: the
element of a result at coordinate e runs the region on the scalars at e (a loop's carried
values in registers), its body lowered there for that coordinate. A target asks for it
(`TargetHooks.per_coordinate`, after checking the body: `nvptx/coordinate_regions.py`)
when it spreads a tensor's coordinates over threads, so each thread runs the region for its
own elements instead of materializing whole tensors in every thread.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.types import TensorType
from ...passes.ir_walk import all_uses, walk
from .types import I64, register_type
from .values import Coordinate, Derived, Lazy, Scalar, Tensor, coordinate_axes

if TYPE_CHECKING:
    from .emitter import Emitter

# run(em, idx, slots): emits the region at coordinate idx, leaving its results in slots
Runner = Callable[["Emitter", Coordinate, list[ir.Value]], None]


def per_coordinate_loop(em: Emitter, op: Op, lower: ir.Value, upper: ir.Value, step: ir.Value) -> list[Tensor]:
    """The loop's results as lazy tensors (`lower`, `upper`, `step`: the checked bounds)."""
    inits = [_tensor(em.env[name]) for name in op.group("iter") or ()]
    dtypes = [_result(op, r).dtype for r in range(len(op.results))]
    shape = inits[0].shape

    def run(em: Emitter, idx: Coordinate, slots: list[ir.Value]) -> None:
        for slot, init in zip(slots, inits):
            em.b.store(init.at(em, idx), slot)

        def body(k: ir.Value) -> None:
            carried = [Lazy(dtype, shape, lambda e, _, slot=slot: e.b.load(slot)) for dtype, slot in zip(dtypes, slots)]
            _yield_into(em, op.regions[0], [Scalar("index", (), k), *carried], idx, slots)
        em.loop(lower, upper, body, step, name="k")
    return _lazy_results(em, op, shape, run)


def per_coordinate_if(em: Emitter, op: Op, condition: ir.Value) -> list[Tensor]:
    """The if's results as lazy tensors (`condition`: the scalar i1)."""
    shape = tuple(ir.Constant(I64, e) if isinstance(e, int) else _tensor(em.env[e]).at(em, [])
                  for e in _result(op, 0).shape)

    def run(em: Emitter, idx: Coordinate, slots: list[ir.Value]) -> None:
        def branch(region):
            return lambda: _yield_into(em, region, [], idx, slots)
        em.if_then(condition, branch(op.regions[0]), branch(op.regions[1]))
    return _lazy_results(em, op, shape, run)


def _yield_into(em: Emitter, region, args: list, idx: Coordinate, slots: list[ir.Value]) -> None:
    """Lower `region` with `args`, then store its yielded values at `idx` into `slots` (every
    value is emitted before any slot changes: a loop's yield may read the carried slots)."""
    from .control import run_region
    em.at_one_coordinate += 1            # the body's values stay lazy: only this coordinate is needed
    try:
        with em.scope():
            values = [value.at(em, idx) for value in run_region(em, region, args)]
            for slot, value in zip(slots, values):
                em.b.store(value, slot)
    finally:
        em.at_one_coordinate -= 1


def _lazy_results(em: Emitter, op: Op, shape, run: Runner) -> list[Tensor]:
    """One lazy tensor a result: its element at idx runs the region there (a Derived element
    is emitted once per coordinate and basic block, elements.py, so a reused result runs it
    once; two results used at one coordinate run it twice). Tensors from outside the region
    that its body uses are evaluated at idx before it (loop-invariant), the body's ops are
    lowered at idx, and the caller's element memo survives them."""
    inside = {name for nested in walk([op]) for name in nested.results}
    inside |= {arg.name for nested in walk([op]) for region in nested.regions for arg in region.args}
    outer = {name: value for name in dict.fromkeys(all_uses(op)) if name not in inside
             for value in [em.env.get(name)] if isinstance(value, Tensor) and value.shape}
    dtypes = [_result(op, r).dtype for r in range(len(op.results))]

    def element(em: Emitter, idx: Coordinate, result: int) -> ir.Value:
        slots = [em.entry_alloca(register_type(dtype)) for dtype in dtypes]
        invariant = {name: _element(value, value.at(em, idx)) for name, value in outer.items()}
        memo, saved = em.element_memo, {name: em.env[name] for name in invariant}
        em.env.update(invariant)
        try:
            run(em, idx, slots)
        finally:
            em.env.update(saved)
            em.element_memo = memo
        return em.b.load(slots[result])

    return [Derived(dtype, shape, combine=lambda e, idx, r=r: element(e, list(idx), r),
                    operands=coordinate_axes(shape), costly=True) for r, dtype in enumerate(dtypes)]


def _tensor(value: object) -> Tensor:
    assert isinstance(value, Tensor), value
    return value


def _result(op: Op, number: int) -> TensorType:
    type_ = op.result_types[number]
    assert isinstance(type_, TensorType), type_
    return type_


def _element(tensor: Tensor, value: ir.Value) -> Lazy:
    """`tensor` whose element at the region's coordinate is the already emitted `value`."""
    return Lazy(tensor.dtype, tensor.shape, lambda e, _: value)
