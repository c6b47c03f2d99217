"""The flash mapping's key vectors on the tensor cores as rolled loops over key fragments
(docs/gpu.md, "Flash attention", session 10).

A thread holds R rows x 2F key slots of each [len] vector of a tile (F fragments of the MMA
accumulator, two keys of a row each). Op by op (`fold_values.py`) every element op on them is
emitted 2RF times a tile: the online softmax's 32 libdevice `expf` alone were a third of the
kernel's LLVM instructions. Here the element ops on key vectors are not lowered where they
appear. Each reduction of a key vector and the `vecmat`'s weights are computed by a loop of F
trips, one a key fragment, which evaluates on the fragment's slots the element ops they need,
from the key vectors computed before (the scores, which rotate through the loop's carried
values as PV's weight words do), the keys' positions and the rows' scalars. Reductions whose
operands need another reduction's result run in a later loop (the online softmax: the max
and `any` first, then the exponentials, their sum and the weights), which evaluates the
element ops it needs again: the same ops on the same operands, the same bits. A reduction
adds a thread's slots in slot order and ends in the butterfly, as `FoldValues._reduce`
does, so the bits are the op-by-op lowering's. ptxas unrolls the loops (F = 8 trips).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import all_ops
from ..llvm.types import I32, I64
from .fold_values import FoldValues, PerThread, reduction_identity

POSITIONS = "positions"       # a key vector the trip computes: the keys' positions


class KeyPhases:
    """Runs a tile's ops (the prologue after the scores' `matvec`, then the summarizer) with
    the key vectors' element ops in rolled loops. `kinds`: each value's kind (`FoldAttention.
    kinds`); `fragments`: F; `trip_keys(f)`: the i64 offsets within the tile of fragment f's
    two key slots; `weight_words(values, weights, name)`: a `vecmat`'s weight words ([row][one
    word]) on one fragment's slots; `product(op, words)`: the `vecmat` from all its words
    ([row][fragment])."""

    def __init__(self, emitter, kinds: dict, fragments: int, trip_keys: Callable, weight_words: Callable,
                 product: Callable):
        self.emitter, self.values, self.em = emitter, emitter.values, emitter.em
        self.kinds, self.fragments = kinds, fragments
        self.trip_keys, self.weight_words, self.product = trip_keys, weight_words, product
        self.lazy: dict = {}      # key vector -> its op, the name it aliases, or POSITIONS
        self.batch: list = []     # reductions and vecmats waiting for their loop
        self.pending: set = set()

    @staticmethod
    def supported(ops, kinds: dict, bound: set) -> bool:
        """Whether every op that reads a key vector is a key element op, a reduction or a
        contraction: then no key vector is needed outside the loops. `bound`: the key
        vectors that are region arguments (positions, scores)."""
        keys = set(bound) | {name for name, kind in kinds.items() if kind == "keys"}
        for op in ops:
            if op.name == "yield" and keys & set(op.operands):
                return False
            reads_keys = bool(keys & set(op.operands))
            definition = all_ops()[op.name]
            if reads_keys and not (definition.contraction or op.name == "reduce" or KeyPhases._element(op, kinds)):
                return False
        return True

    @staticmethod
    def _element(op: Op, kinds: dict) -> bool:
        """A key element op: a key vector computed slot by slot."""
        return bool(op.results) and kinds.get(op.results[0]) == "keys" and not all_ops()[op.name].contraction \
            and op.name != "reduce"

    def bind(self, name: str, target: str) -> None:
        """The region argument `name` is the key vector `target` (or POSITIONS)."""
        self.lazy[name] = target

    def run(self, ops) -> list:
        """Evaluates `ops`; returns the yielded values, if any."""
        for op in ops:
            if op.name == "yield":
                self._flush()
                return [self.values.env[name] for name in op.operands]
            if self._element(op, self.kinds):
                if self.pending & set(op.operands):
                    self._flush()      # a scalar it reads comes from a reduction not yet run
                self.lazy[op.results[0]] = op
            elif op.name == "reduce" or (all_ops()[op.name].contraction and op.operands[0] in self.lazy):
                self.batch.append(op)
                self.pending.add(op.results[0])
            else:
                if self.pending & set(op.operands):
                    self._flush()
                self.values.op(op)
        self._flush()
        return []

    def _needed(self) -> tuple:
        """(the key vectors the batch's loop evaluates, in order; the stored ones among them)."""
        needed: set = set()
        stored: list = []

        def visit(name: str) -> None:
            if name in needed:
                return
            entry = self.lazy.get(name)
            if entry is None:
                if self.kinds.get(name) == "keys" and name in self.values.env:
                    needed.add(name)
                    stored.append(name)
                return
            needed.add(name)
            for operand in (entry.operands if isinstance(entry, Op) else [entry] if entry != POSITIONS else []):
                visit(operand)
        for op in self.batch:
            visit(op.operands[0])
        return [name for name in self.lazy if name in needed], stored

    def _flush(self) -> None:
        """One loop over the key fragments for the batch, then each reduction's butterfly and
        each vecmat."""
        if not self.batch:
            return
        rows, fragments = self.values.rows, self.fragments
        order, stored = self._needed()
        reductions = [op for op in self.batch if op.name == "reduce"]
        products = [op for op in self.batch if op.name != "reduce"]
        dtypes = {op.results[0]: self._dtype(op.operands[0]) for op in reductions}
        # carried: each stored key vector's queue (fragment by fragment: rows x 2 slots), each
        # reduction's row totals, each vecmat's words (a fragment's row words pushed at the back)
        queues = [[self.values.env[name].values[r][2 * f + e] for f in range(fragments) for r in range(rows)
                   for e in range(2)] for name in stored]
        totals = [[reduction_identity(op, dtypes[op.results[0]])] * rows for op in reductions]
        words = [[ir.Constant(I32, 0)] * (rows * fragments) for _ in products]
        sizes = [len(group) for group in (*queues, *totals, *words)]
        first_word = len(stored) + len(reductions)

        def trip(f, values):
            groups = _split(values, sizes)
            queues, totals, words = groups[:len(stored)], groups[len(stored):first_word], groups[first_word:]
            one = self._trip_values(f, order, stored, [queue[:2 * rows] for queue in queues])
            queues = [queue[2 * rows:] + queue[:2 * rows] for queue in queues]
            totals = [[one.thread_keys(op, total, one.env[op.operands[0]].values[r], dtypes[op.results[0]])
                       for r, total in enumerate(row_totals)] for op, row_totals in zip(reductions, totals)]
            words = [queue[rows:] + [row[0] for row in self.weight_words(one, one.env.get(op.operands[0]), op.operands[0])]
                     for op, queue in zip(products, words)]
            return [value for group in (*queues, *totals, *words) for value in group]
        final = _split(self.em.loop(ir.Constant(I64, 0), ir.Constant(I64, fragments), trip, name="keyfrag",
                                    carried=[value for group in (*queues, *totals, *words) for value in group]), sizes)
        for op, row_totals in zip(reductions, final[len(stored):first_word]):
            dtype = dtypes[op.results[0]]
            self._define(op, self.values.rows_result(op, [self.values.across_lanes(op, total, dtype)
                                                          for total in row_totals], dtype))
        for op, queue in zip(products, final[first_word:]):
            self._define(op, self.product(op, [[queue[f * rows + r] for f in range(fragments)] for r in range(rows)]))
        self.batch, self.pending = [], set()

    def _define(self, op: Op, value: PerThread) -> None:
        self.values.env[op.results[0]] = value
        self.values.defs[op.results[0]] = op

    def _dtype(self, name: str) -> str:
        """The element dtype of a key vector (evaluated or not)."""
        entry = self.lazy.get(name)
        if entry is None:
            return self.values.env[name].dtype
        if isinstance(entry, Op):
            type_: Any = entry.result_types[0]
            return type_.dtype
        return "index" if entry == POSITIONS else self._dtype(entry)

    def _trip_values(self, f: ir.Value, order: list, stored: list, heads: list) -> FoldValues:
        """The ops of `order` on fragment f's slots: a FoldValues of two key slots a row whose
        stored key vectors are `heads` (each rows x 2 slots)."""
        em, outer, rows = self.em, self.values, self.values.rows
        b = em.b
        one = FoldValues(em, rows, {**outer.slots, "keys": 2}, outer.depth, outer.contract, outer.row_lanes)
        one.lane, one.unlowered = outer.lane, outer.unlowered
        one.env, one.defs = dict(outer.env), dict(outer.defs)
        j0, extent = self.emitter.j0, self.emitter.rows_extent
        positions = [b.add(j0, offset) for offset in self.trip_keys(f)]
        one.key_exists = [b.icmp_signed("<", position, extent) for position in positions]
        for name, head in zip(stored, heads):
            one.env[name] = PerThread("keys", outer.env[name].dtype, [head[2 * r:2 * r + 2] for r in range(rows)])
        for name in order:
            entry = self.lazy[name]
            if isinstance(entry, Op):
                one.op(entry)
            elif entry == POSITIONS:
                one.env[name] = PerThread("keys", "index", [list(positions) for _ in range(rows)])
            elif name not in stored:
                one.env[name] = one.env[entry]
        return one


def _split(values: list, sizes: list) -> list:
    """`values` cut into consecutive groups of `sizes`."""
    groups, start = [], 0
    for size in sizes:
        groups.append(values[start:start + size])
        start += size
    return groups
