"""parallel, loop, if and call (spec §10; domains and `parallel` from docs/kir.md).

`parallel` runs its iterations one at a time in a seeded random order, so a program whose
result depends on iteration order gives different results for different seeds.
"""
from __future__ import annotations

import numpy as np

from ..ir.nodes import Helper
from ..ir import errors
from .errors import InterpError
from .machine import IMPLS


@IMPLS.register("parallel")
def _parallel_op(machine, op):
    extents = [int(np.asarray(e)) for e in machine.operands(op)]
    if any(e < 0 for e in extents):
        raise InterpError(errors.NEGATIVE_EXTENT, f"parallel domain {extents} has a negative extent")
    total = int(np.prod(extents, dtype=np.int64))
    region = op.regions[0]
    order = machine.rng.permutation(total)
    coordinates = np.unravel_index(order, extents) if extents else ()
    invocation = machine.races.new_invocation()
    machine.iterations.append((region.label, ()))
    machine.races.path.append((invocation, region.label, ()))
    try:
        for n in range(total):
            point = tuple(int(c[n]) for c in coordinates)
            machine.iterations[-1] = (region.label, point)
            machine.races.path[-1] = (invocation, region.label, point)
            machine.run_region(region, [np.asarray(c, dtype=np.int64) for c in point])
    finally:
        machine.iterations.pop()
        machine.races.path.pop()


@IMPLS.register("loop")
def _loop_op(machine, op):
    lower, upper, step = (int(np.asarray(v)) for v in machine.operands(op))
    if step <= 0:
        raise InterpError(errors.LOOP_STEP, f"loop step {step} is not positive")
    carried = list(machine.group(op, "iter") or [])
    region = op.regions[0]
    for k in range(lower, upper, step):
        carried = machine.run_region(region, [np.asarray(k, dtype=np.int64), *carried]) or []
    return carried


@IMPLS.register("if")
def _if_op(machine, op):
    (cond,) = machine.operands(op)
    if bool(np.asarray(cond)):
        return machine.run_region(op.regions[0], []) or []
    if len(op.regions) > 1:
        return machine.run_region(op.regions[1], []) or []
    return []


@IMPLS.register("call")
def _call_op(machine, op):
    name = op.attributes["callee"].name
    helper = machine.module.find(name)
    if not isinstance(helper, Helper):
        raise InterpError(errors.UNSUPPORTED, f"@{name} is not a helper of this module")
    return machine.call_helper(helper, machine.operands(op))
