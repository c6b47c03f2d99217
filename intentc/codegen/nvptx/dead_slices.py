"""Which key slices the flash mapping may leave out of a region_fold (docs/gpu.md, "Flash
attention"): a proof, by constant evaluation of the summarizer, that a slice all of whose
positions lie past the query row summarizes to the fold's init.

§6 makes the init an identity of the combine (combine(x, identity) == x), so folding such a
slice changes nothing and the mapping may skip it — the causal half of attention. The
summarizer is evaluated on abstract values: a known constant (the same at every element of
a vector), FINITE (some finite number, as every value of V must be: the mapping checks the
skipped rows of V at run time and folds them when one is not), or UNKNOWN. Positions
compared with the row's coordinate give constants (every position is greater); `select`
on a constant picks a side; element-wise ops and reductions of constants fold (f32, numpy);
`vecmat` of a zero weight vector with finite values is zero; a float cast keeps 0 and inf. The proof holds when every leaf
of the summary is the init's constant.
"""
from __future__ import annotations

import numpy as np

from ...ir.nodes import Op
from ...ir.optable import all_ops

FINITE = "finite"
UNKNOWN = "unknown"
POSITIONS = "positions"
ROW = "row"
# comparisons of a position with the row (position first): every position is greater
PAST_ROW = {"lt": False, "le": False, "eq": False, "ne": True, "gt": True, "ge": True}
MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}   # the row first
FOLDS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
         "minimum": np.minimum}
FLOATS = {"f64", "f32", "f16", "bf16"}
REDUCE = {"max": max, "min": min, "any": any, "all": all}


def _exact_in_every_float(value) -> bool:
    """0 and ±inf: a float cast keeps them (the P tile's dead weights cast to f16 / bf16)."""
    return _const(value) and isinstance(value, float | np.floating) and (value == 0 or np.isinf(value))


def _const(value) -> bool:
    return not isinstance(value, str)


def _f32(value):
    return np.float32(value) if isinstance(value, float | np.floating) else value


class _Abstract:
    def __init__(self, env: dict):
        self.env = env

    def run(self, ops) -> list:
        for op in ops:
            if op.name == "yield":
                return [self.env.get(name, UNKNOWN) for name in op.operands]
            self.env[op.results[0]] = self.op(op)
        return []

    def op(self, op: Op):
        args = [self.env.get(name, UNKNOWN) for name in op.operands]
        name = op.name
        if "value" in op.attributes and not op.operands:      # constant, full
            return _f32(op.attributes["value"])
        if all_ops()[name].rearranges and len(args) == 1:     # broadcast: a splat stays a splat
            return args[0]
        if name in PAST_ROW and args[0] in (POSITIONS, ROW) and args[1] in (POSITIONS, ROW) and args[0] != args[1]:
            return PAST_ROW[name] if args[0] == POSITIONS else PAST_ROW[MIRRORED[name]]
        if name == "select" and isinstance(args[0], bool | np.bool_):
            return args[1] if args[0] else args[2]
        if name == "record":
            return tuple(args)
        if name == "reduce" and _const(args[0]):
            return self._reduce(op.keyword_attr("kind"), args[0])
        if name == "vecmat" and _const(args[0]) and args[0] == 0 and args[1] == FINITE:
            return np.float32(0.0)
        if name == "cast" and _exact_in_every_float(args[0]) and op.result_types[0].dtype in FLOATS:
            return args[0]
        if name == "exp" and _const(args[0]):
            with np.errstate(all="ignore"):
                return np.exp(np.float32(args[0]))
        if name in FOLDS and all(map(_const, args)):
            with np.errstate(all="ignore"):
                return FOLDS[name](np.float32(args[0]), np.float32(args[1]))
        return UNKNOWN

    @staticmethod
    def _reduce(kind: str, value):
        """A (non-empty) vector of one constant."""
        if kind in REDUCE:
            return REDUCE[kind]([value])
        return value if kind == "sum" and value == 0 else UNKNOWN


def dead_slices_are_identity(prologue, fold: Op, coordinate: str) -> bool:
    """Whether a slice whose positions all exceed `coordinate` summarizes to the fold's init,
    provided its values are finite (the top-level constants known to the summarizer)."""
    constants = _Abstract({})
    constants.run(prologue)
    init = [constants.env.get(name, UNKNOWN) for name in fold.group("init") or ()]
    length, positions, scores, values = (arg.name for arg in fold.regions[0].args)
    env = {**constants.env, coordinate: ROW, positions: POSITIONS, scores: UNKNOWN, values: FINITE, length: UNKNOWN}
    summary = _Abstract(env).run(fold.regions[0].ops)
    return len(summary) == len(init) and all(_equal(s, i) for s, i in zip(summary, init))


class _AtOneKey(_Abstract):
    """The summarizer's values at one key past the row, the tile's other keys unknown: what
    combines the keys (reductions, contractions) or moves values between them (rearranging
    ops but a scalar's broadcast) is UNKNOWN."""

    def op(self, op: Op):
        spec = all_ops()[op.name]
        if op.name == "reduce" or spec.contraction or (spec.rearranges and op.name != "broadcast"):
            return UNKNOWN
        return super().op(op)


def identity_past_axis(prologue, fold: Op, coordinate: str) -> frozenset:
    """The summarizer's reductions (their results' names) whose operand is, at a key past the
    row `coordinate`, their combine's identity to the bit. A key past the keys' axis lies past
    every row of it, so the flash mappings combine such an operand there as it is instead of
    selecting the identity for the keys outside the axis: the same operand bits either way
    (rows past the axis compute nothing they write)."""
    constants = _Abstract({})
    constants.run(prologue)
    length, positions, scores, values = (arg.name for arg in fold.regions[0].args)
    one_key = _AtOneKey({**constants.env, coordinate: ROW, positions: POSITIONS, scores: UNKNOWN, values: FINITE,
                         length: UNKNOWN})
    found = set()
    for op in fold.regions[0].ops:
        if op.name == "yield":
            break
        if op.name == "reduce" and _is_identity(one_key.env.get(op.operands[0], UNKNOWN), op.keyword_attr("kind")):
            found.add(op.results[0])
        one_key.env[op.results[0]] = one_key.op(op)
    return frozenset(found)


def _is_identity(value, kind: str) -> bool:
    """`value` (abstract) is the identity of a `kind` reduction's combine, to the bit."""
    if not _const(value) or isinstance(value, tuple):
        return False
    if isinstance(value, bool | np.bool_):
        return kind in ("any", "all") and bool(value) == (kind == "all")
    if isinstance(value, np.floating):
        identity = {"sum": -0.0, "max": -np.inf, "min": np.inf}.get(kind)
        return identity is not None and np.float32(value).tobytes() == np.float32(identity).tobytes()
    return False


def _equal(summary, init) -> bool:
    if isinstance(init, tuple):
        return isinstance(summary, tuple) and len(summary) == len(init) and all(map(_equal, summary, init))
    return _const(summary) and _const(init) and not isinstance(summary, tuple) and bool(summary == init)
