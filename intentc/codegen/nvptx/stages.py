"""Top-level tensor programs with whole-tensor reductions and scans, as several launches
(docs/gpu.md, "Staged programs").

A kernel without `parallel` whose top level is a tensor program over one shape (the
domain: every tensor of the program has it, or is a scalar) may hold grid-wide ops: full
`reduce`s, `arg_reduce`s, `generic_reduce`s and contractions (dot products) to scalars and
rank-1 forward `scan`s of builtin kinds. Each needs every
coordinate before its result exists, so the program runs as stages, all in one PTX module
and launched in order on one stream (a launch boundary is the grid-wide barrier):

- the domain is cut into chunks of T·K consecutive coordinates (K a thread, T
  threads); chunk c runs on CTA c mod nctaid, which owns it for every op of a stage;
- a grid-wide op's depth is 1 + the largest depth of the grid-wide ops it depends on.
  For each depth d: a `partials` launch writes every chunk's partial of each depth-d op
  (a reduction's CTA combination, a scan's chunk total in source order) to scratch memory,
  then a `combine` launch (one CTA) folds them: a reduction's result, a scan's exclusive
  prefix of the chunk totals (each chunk's carry);
- the `final` launch evaluates the program again with every grid-wide value resolved (a
  reduction read back, a scan as a block scan of the chunk after its carry) and makes the
  writes. Values before a grid-wide op are recomputed per stage rather than stored.

Scratch: one i64 word per chunk and grid-wide op, which the runtime allocates (its size
follows the domain: `launch.json`'s `scratch`). A chunk's partial comes from a fixed
combination order, so results do not depend on the GPU's size or the launch's timing.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.nodes import Kernel, Keyword, Op
from ...ir.optable import ops_where
from ...ir.ops.contraction import contraction_axes
from ...ir.ops.reduction import COMBINE, accumulator
from ...ir.types import TensorType, ViewType
from ...options import Specialization
from .cta import SHUFFLED, UNROLL_BUDGET, _body_ok, _per_coordinate, _outside_regions, _views, per_coordinate_regions
from .cta_tiles import every_op

SCAN_KINDS = {"sum", "prod", "max", "min"}   # builtin scans with a neutral element: block-scannable
THREADS = 256         # T, every stage's CTA size
# K coordinates a thread in a chunk: SLOTS in a staged program, GRID_SLOTS in an
# element-wise one (no grid-wide op); with SPLIT_FULL_CHUNKS every chunk but the last would
# run a copy of the program without per-slot guards. Measured on the H200 side by side
# (bench/results/grid-chunks-ab-20261201-h200-toplevel-r2.json, ratios to torch/Triton,
# 2^24 elements): K = 8 with the split was fastest for element-wise programs (murmur3 0.88,
# fast_silu_gelu 1.20, newton 0.85; K = 4 without it 0.71, 1.10, 0.83; K = 1 0.50, 0.73,
# 0.63; the loop an op 0.39, 0.54, 0.70), but costs 4-8x the compile time of K = 4 and up
# to 230 registers (special_math 1.1 s to a cubin); for exclusive_offsets K = 4 without the
# split was best (0.97 against 0.81 at K = 8 with it: 212 registers in its final stage).
SLOTS = 4
GRID_SLOTS = 4
# Measured and rejected (session 8, bench/results/ctime-20261202-s8-h200-r2/grid_ab.json): 2
# coordinates a thread for programs calling math functions, which halves special_math's
# inlined libdevice code (1,953 -> 1,049 PTX lines) but ran it 8 % slower (0.0585 / 0.0540
# ms; fast_silu_gelu 5 % faster).
SPLIT_FULL_CHUNKS = False
# K in a staged program with a tuple reduction (arg_reduce, generic_reduce): each chunk's
# partial takes an ordered CTA-wide combine of several values (the author's region rolled),
# so a chunk of 256 x 16 spreads it over 4x the elements. H200, 2^24 f32, ms at K = 4 / 16
# (bench/gpu_toplevel.py --tuple-slots, bench/results/s12-20261202-h200-r4/):
# argmax then x - max 0.1046-0.1054 / 0.0732-0.0734 (torch 0.080), a (max, min)
# generic_reduce 0.0658-0.0666 / 0.0312-0.0319 (torch.aminmax 0.024); their GPU tests pass at both.
TUPLE_SLOTS = 16
# Element-wise programs calling libdevice's math functions inline take 2 coordinates a thread
# (session 10, issue #13: each slot inlined every function's body; special_math to PTX in
# 3.0x vector add's CPU time at K = 4, 2.0x at K = 2, its run-time cost measured beside it:
# docs/gpu.md, "Compile pipeline").
MATH_GRID_SLOTS = 2


@dataclass(frozen=True)
class GridWide:
    """A grid-wide op: its first result, op name ("reduce", "scan", a contraction's or a
    tuple reduction's), depth, first scratch row and rows (a tuple reduction's partial is
    several words: arg_reduce's value and position, generic_reduce's components and presence)."""
    name: str
    op: str
    depth: int
    row: int
    words: int = 1


@dataclass(frozen=True)
class Stage:
    role: str        # "partials" | "combine" | "final"
    depth: int       # the depth of the grid-wide ops it serves (the final stage: one past the deepest)

    def entry(self, kernel_entry: str, number: int) -> str:
        return f"{kernel_entry}_stage{number}_{self.role}"


@dataclass(frozen=True)
class StagePlan:
    grid_wide: tuple[GridWide, ...]
    stages: tuple[Stage, ...]
    domain: tuple            # the domain's extents: ints or extent names
    slots: int = SLOTS       # K coordinates a thread in a chunk
    split: bool = True       # full chunks run without per-slot guards (a second copy of the program)
    philox: bool = False     # the program draws Philox words (random_bits, uniform)
    # LLVM's Loop Strength Reduction in the code generator (`machine.emit_ptx`). Without it
    # (session 9) special_math's LLVM time was 15 % less and ptxas -v gave as many or fewer
    # registers, but the H200 ran the staged programs slower (each choice compiled apart,
    # bench/results/cta-choices-ab-20261202-s9-h200/): exclusive_offsets 0.0905 ms against
    # 0.0860-0.0872 with it, special_math 0.0577 against 0.0570-0.0572.
    strength_reduce: bool = True

    @property
    def chunk(self) -> int:
        return THREADS * self.slots

    @property
    def vector(self) -> int:
        """V: a scan's chunk wants each thread's K slots consecutive (one block scan a chunk),
        and so does a program drawing Philox words (one Philox4x32 block gives the words of 4
        consecutive counters: computed once for a thread's 4 slots, `rng.philox_block`);
        otherwise slot j of every thread is one coalesced row of T coordinates."""
        return self.slots if self.philox or any(g.op == "scan" for g in self.grid_wide) else 1

    def by_name(self, name: str) -> GridWide | None:
        return next((g for g in self.grid_wide if g.name == name), None)

    def to_json(self) -> dict:
        return {"chunk": self.chunk, "words_per_chunk": sum(g.words for g in self.grid_wide),
                "grid_wide": [{"value": g.name, "op": g.op, "depth": g.depth} for g in self.grid_wide]}


# Ops drawing Philox4x32 words (spec §12): 4 consecutive counters share a block.
PHILOX = ops_where(lambda op: op.family == "rng")
LIBM = ops_where(lambda op: op.libm)
CONTRACTIONS = ops_where(lambda op: op.contraction)
TUPLE_REDUCTIONS = ops_where(lambda op: op.tuple_partials)


def _grid_wide(op: Op) -> bool:
    """A full builtin reduction to a scalar, a full contraction to a scalar (a dot product:
    the canonical form of a `reduce sum` of a `mul`), or a rank-1 forward builtin scan, of a
    dtype the warp shuffles carry."""
    result = op.result_types[0] if op.result_types else None
    if not isinstance(result, TensorType) or result.dtype not in SHUFFLED:
        return False
    if op.name == "reduce":
        return not result.shape and kind_of(op) in COMBINE
    if op.name in CONTRACTIONS:
        return not result.shape and _pairs_coordinates(op)
    if op.name in TUPLE_REDUCTIONS:
        return _tuple_reduction_to_scalars(op)
    return (op.name == "scan" and result.rank == 1 and kind_of(op) in SCAN_KINDS
            and not op.attributes.get("reverse", False))


def _tuple_reduction_to_scalars(op: Op) -> bool:
    """An arg_reduce of a rank-1 tensor, or a generic_reduce over every axis whose combine
    reads nothing but its own arguments (the combine launch runs it alone): scalars of
    dtypes the warp shuffles carry, a word each in scratch memory."""
    if not all(isinstance(t, TensorType) and not t.shape and t.dtype in SHUFFLED for t in op.result_types):
        return False                    # (an arg_reduce's results are scalars where its source is rank 1)
    return op.name == "arg_reduce" or not _captures(op)


def _captures(op: Op) -> set[str]:
    """The names `op`'s regions read from outside them (neither its operands nor defined inside)."""
    inner = [nested for region in op.regions for nested in every_op(region.ops)]
    defined = {arg.name for region in op.regions for arg in region.args}
    defined |= {name for nested in inner for name in nested.results}
    return set(_uses(op)) - defined - set(op.operands) - set(op.group("init") or ())


def _pairs_coordinates(op: Op) -> bool:
    """Whether a full contraction multiplies its operands' elements at the same coordinate
    (every axis contracted with the same axis of the other): a thread's slots of both are
    the products it sums."""
    lhs_contract, rhs_contract, lhs_batch, _ = contraction_axes(op)
    return not lhs_batch and lhs_contract == rhs_contract == sorted(lhs_contract)


def kind_of(op: Op) -> str:
    """The builtin kind of a reduction or scan; a contraction sums its products."""
    if op.name in CONTRACTIONS:
        return "sum"
    kind = op.attributes.get("kind")
    return kind.name if isinstance(kind, Keyword) else ""


def stage_plan(kernel: Kernel, specialization: Specialization | None = None) -> StagePlan | None:
    """The stages of `kernel`, or None when it is not a tensor program over one domain. A
    program without grid-wide ops is one `final` stage: an element-wise grid program."""
    ops = [op for op in kernel.body if op.name != "yield"]
    if any(op.name == "parallel" for op in ops):
        return None
    views = _views(kernel)
    grid_wide = [op for op in ops if _grid_wide(op)]
    rest = _outside_regions([op for op in ops if op not in grid_wide], per_coordinate_regions(kernel))
    writes = [op.operands[0] for op in rest if op.name == "write"]
    if not writes or len(writes) != len(set(writes)) or not _body_ok(rest, views, False, {}):
        return None
    if not all(_per_coordinate(op) for op in rest):
        return None
    domain = _domain(ops)
    tuples = any(op.name in TUPLE_REDUCTIONS for op in grid_wide)
    slots = TUPLE_SLOTS if tuples else SLOTS if grid_wide else MATH_GRID_SLOTS if _calls_math(ops) else GRID_SLOTS
    split = SPLIT_FULL_CHUNKS
    if domain is None or (not grid_wide and len(ops) * (1 + split) * slots > UNROLL_BUDGET):
        return None       # a long element-wise program keeps the grid form's loop an op (compact code)
    depths: dict[str, int] = {}
    depth_of: dict[str, int] = {}       # every value: the deepest grid-wide op it depends on
    for op in ops:
        depth = max((depth_of.get(name, 0) for name in _uses(op)), default=0) + (op in grid_wide)
        if op in grid_wide:
            depths[op.results[0]] = depth
        for name in op.results:
            depth_of[name] = depth
    deepest = max(depths.values(), default=0)
    found, row = [], 0
    for op in grid_wide:
        words = _partial_words(op)
        found.append(GridWide(op.results[0], op.name, depths[op.results[0]], row, words))
        row += words
    stages = (*(Stage(role, d) for d in range(1, deepest + 1) for role in ("partials", "combine")),
              Stage("final", deepest + 1))
    extents = specialization.extents if specialization else {}
    return StagePlan(tuple(found), stages, tuple(extents.get(e, e) if isinstance(e, str) else e for e in domain),
                     slots, split, any(op.name in PHILOX for op in ops),
                     strength_reduce=bool(found) or not _calls_math(ops))


def _partial_words(op: Op) -> int:
    """Scratch words of a chunk's partial of grid-wide `op`."""
    if op.name == "arg_reduce":
        return 2
    return len(op.results) + 1 if op.name == "generic_reduce" else 1


def _calls_math(ops: list[Op]) -> bool:
    """Whether a program calls libdevice's math functions inline (not their `approximate`
    instructions): its K copies of each were a third of its code generation's time with
    Loop Strength Reduction (special_math; session 10: without it, the H200 ran it as fast)."""
    return any(op.name in LIBM and not op.attributes.get("approximate") for op in every_op(ops))


def _uses(op: Op) -> list[str]:
    from ...passes.ir_walk import all_uses
    return list(all_uses(op))


def _domain(ops: list[Op]) -> tuple | None:
    """The one shape of every non-scalar tensor the program computes, or None."""
    shapes = {type_.shape for op in ops for type_ in op.result_types
              if isinstance(type_, TensorType) and type_.shape}
    return shapes.pop() if len(shapes) == 1 else None


def accumulator_of(op: Op, operand_dtype: str) -> str:
    """The accumulator dtype of a grid-wide op (a contraction's is its `acc`)."""
    return accumulator(kind_of(op), operand_dtype, op.attributes.get("acc"))


def domain_slots(plan: StagePlan, kernel: Kernel, slots) -> list:
    """Each domain extent as an int, or as ["slot", i]: the ABI slot (`abi.layout`) that
    carries it at launch (a view's extent, or an index scalar parameter)."""
    out: list = []
    for extent in plan.domain:
        if isinstance(extent, int):
            out.append(extent)
            continue
        out.append(["slot", _slot_of(extent, kernel, slots)])
    return out


def _slot_of(extent: str, kernel: Kernel, slots) -> int:
    types = {p.name: p.type for p in kernel.params}
    for entry in slots:
        type_ = types[entry.name]
        if isinstance(type_, ViewType) and extent in type_.shape:
            return entry.start + 3 + entry.rank + type_.shape.index(extent)
        if entry.name == extent:
            return entry.start
    raise ValueError(f"extent %{extent} is carried by no parameter")
