"""How many CTAs a launch of a grid-strided kernel needs (docs/runtime.md, "Grid size").

Under the `cta` mapping, iteration `it` of the top-level `parallel` runs on CTA
`(it div iterations_per_cta) mod nctaid`; under `grid-stride`, on thread `it mod (nctaid *
ntid)` (`codegen/nvptx/hooks.py`). The code strides over whatever grid it is given, so any
number of CTAs computes the same; `launch.json`'s grid (`ctas_per_sm` x SMs) is the one
that fills the GPU. A launch whose `parallel` has fewer iterations than that grid has CTAs
(a vector add of 4096 elements: 4 blocks of 1024, against 32 x 132 CTAs) gets only the CTAs
that have work: the others would only start and stop, which costs the GPU microseconds.

The iterations are the product of the `parallel`'s extents, which the kernel's top-level
index arithmetic computes from its parameters (`%nblocks = (%N + 1023) floordiv 1024`):
evaluated here by the interpreter's ops, from the extents and scalars a launch binds, once
per binding (the fast paths keep the launch it chose). The passes keep a `parallel`'s
domain (they fold and fuse what it computes, not how many iterations it has), so the
source's extents are the compiled code's. Where an extent depends on anything else (a read,
an op with effects or regions), or the mapping is another (tensor cores, kernel plans,
staged programs), the launch keeps the full grid.
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen.nvptx.mapping import LaunchConfig
from ..interp.machine import Machine
from ..ir.nodes import Kernel, Module, Op
from ..ir.types import TensorType
from ..passes.ir_walk import is_pure_op

# Mappings whose CTAs stride over the `parallel`'s iterations (hooks.py), and what one CTA
# runs at once: `iterations_per_cta` iterations (cta), or one a thread (grid-stride).
STRIDED = ("cta", "grid-stride")


class GridFit:
    """The CTAs a launch of one kernel needs, from the extents and scalars it binds."""

    def __init__(self, module: Module, kernel: Kernel, config: LaunchConfig, resident: int | None = None):
        """`resident`: the CTAs the GPU runs at once (its SMs times the CTAs of this kernel
        an SM holds; None: the grid is not cut to whole waves of them)."""
        self._module = module
        self._extents: tuple[str, ...] = ()
        self._ops: list[Op] = []
        self._iterations_per_cta = config.iterations_per_cta
        self._per_thread = config.mapping == "grid-stride"
        strided = config.mapping in STRIDED and not config.plan and not config.mma and not config.stages
        # whole waves of the resident CTAs: a partial last wave's CTAs start only when others
        # end and then run alone (cumsum 32768 x 4096: 8 CTAs an SM asked, 6 fit; the grid of
        # 6 ran it 4.6% faster on the H200, bench/results/facts-20261202-s8-h200-r1/); a grid
        # of whole waves stays (softmax 8192 x 4096: 2 waves of 8 ran 6% faster than one)
        self._resident = resident if strided else None
        if strided:
            chain = _extent_chain(kernel)
            if chain is not None:
                self._extents, self._ops = chain

    def ctas(self, grid: int, threads: int, extents: dict, env: dict) -> int:
        """At most `grid` (whole waves of the resident CTAs), at least 1: the CTAs with work
        for a launch binding `extents` (name -> (value, source)) and scalars `env`."""
        if self._resident and grid > self._resident:
            grid -= grid % self._resident
        iterations = self._iterations(extents, env) if self._extents else None
        if iterations is None:
            return grid
        per_cta = threads if self._per_thread else self._iterations_per_cta
        return max(1, min(grid, -(-iterations // per_cta)))

    def _iterations(self, extents: dict, env: dict) -> int | None:
        machine = Machine(self._module)
        machine.env = {name: np.asarray(value, dtype=np.int64) for name, (value, _) in extents.items()}
        machine.env.update({name: value for name, value in env.items() if isinstance(value, np.ndarray)})
        try:
            for op in self._ops:
                machine.run_op(op)
            return math.prod(machine.extent(name) for name in self._extents)
        except Exception:       # any failure to compute them (a division by zero, ...): the full grid
            return None


def _extent_chain(kernel: Kernel) -> tuple[tuple[str, ...], list[Op]] | None:
    """(the top-level `parallel`'s extents, the top-level ops that compute them, in order),
    or None where they are not scalar arithmetic on parameters."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    parallel = parallels[0]
    before = kernel.body[:kernel.body.index(parallel)]
    needed, chain = set(parallel.operands), []
    for op in reversed(before):
        if not needed & set(op.results):
            continue
        if op.regions or not is_pure_op(op) or any(not isinstance(t, TensorType) or t.shape for t in op.result_types):
            return None
        chain.append(op)
        needed |= set(op.operands)
    bound = {p.name for p in kernel.params} | {e for p in kernel.params for e in getattr(p.type, "shape", ())
                                                if isinstance(e, str)}     # parameters and views' extents
    defined = {name for op in chain for name in op.results}
    if not needed <= bound | defined:
        return None
    return tuple(parallel.operands), list(reversed(chain))
