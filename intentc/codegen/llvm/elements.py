"""Element evaluation of `Derived` tensors: each (tensor, coordinate) is computed once per
basic block, without recursion.

A `Derived` element is a function of its operands' elements, so a chain of element-wise ops
is a DAG whose nodes may be used many times (`%b = mul %a, %a`). Expanding it as a tree
re-emits a shared node once per path to it, exponential in the chain's length, and a
recursive walk dies on long chains. Here the walk keeps its own stack and remembers every
element it emitted, keyed by the node, the coordinate's LLVM values and the register
slot being visited. A remembered element is reused only in the basic block where it ended,
the one place it surely dominates: an element emitted inside a guarded slot or a masked
lane is not reused after the guard. The memo lives for one op's lowering
(`Emitter.element_memo`, reset by `lower_op`), so no element is reused across the effects
(stores) of another op.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .values import Coordinate, Derived

if TYPE_CHECKING:
    from .emitter import Emitter

# A node being evaluated: the node, its coordinate and the operand values gathered so far.
Frame = tuple[Derived, Coordinate, list[ir.Value]]


def _key(em, node, idx) -> tuple:
    return (id(node), getattr(em.hooks, "current_slot", 0), *idx)


def _remembered(em, node, idx):
    entry = em.element_memo.get(_key(em, node, idx))
    if entry is not None and entry[1] is em.b.block:
        return entry[0]
    return None


def evaluate(em: Emitter, root: Derived, idx: Coordinate) -> ir.Value:
    """The register value of `root` at coordinate `idx`."""
    hit = _remembered(em, root, idx)
    if hit is not None:
        return hit
    frames: list[Frame] = [(root, list(idx), [])]
    while True:
        node, at, values = frames[-1]
        if len(values) == len(node.operands):
            value = node.combine(em, values)
            # the node is kept in the entry, so its id is not reused while the key lives
            em.element_memo[_key(em, node, at)] = (value, em.b.block, node)
            frames.pop()
            if not frames:
                return value
            frames[-1][2].append(value)
            continue
        position = len(values)
        operand = node.operands[position]
        mapping = node.index_maps[position] if node.index_maps else None
        operand_idx = mapping(at) if mapping is not None else at
        if not isinstance(operand, Derived):
            values.append(operand.at(em, operand_idx))
            continue
        hit = _remembered(em, operand, operand_idx)
        if hit is not None:
            values.append(hit)
        else:
            frames.append((operand, list(operand_idx), []))
