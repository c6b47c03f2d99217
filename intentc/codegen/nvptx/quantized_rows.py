"""The warp-rows mapping of a quantized matrix-vector product (docs/gpu.md, "Quantized
rows"): `y[r] = quantized_dot(w[r], x)` with Q4_K rows and a Q8_K vector
(`q4k_q8k_matvec.kir`), a group of lanes a row (the plan; `quantized_lanes.py` emits it).

The recognizer proves the shape symbolically: a top-level read of the whole Q8_K view, a
`parallel` over the rows of the Q4_K view whose iteration reads its whole row, takes the
`quantized_dot` of the two and writes it at the row (the same extent names: one launch
binds them to one value).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...ir.nodes import Kernel, Op
from ..layout.assign import Assignment
from ..layout.encodings import Blocked, Shared, Slice, Split, Uniform
from .quantized_lanes import LANES, PAIRS, LaneGroupRows, lane_group_resident, lane_groups_scatter, staged_blocks
from .structured_contraction import _access, _SymbolicShapes
from .tile_contraction import Affine, IndexTensor, NoMatch, _broadcast
from .warp_rows import WARPS, RowsPlanData

Q4K_BYTES, Q8K_BYTES = 144, 292
Q4K_QS, Q8K_QS, Q8K_BSUMS = 16, 4, 260          # where a block's quants (and Q8_K's bsums) start


@dataclass(frozen=True)
class QuantizedRows(RowsPlanData):
    parallel: Op
    w: str                                # Q4_K rows [R, NB, 144]
    x: str                                # the Q8_K vector [NB, 292]
    y: str                                # [R] f32
    values: dict = field(default_factory=dict, compare=False)
    lanes: int = LANES                    # lanes a row: 1, 2 or 4
    blocks: int | str = 0                 # the extent of blocks a row (NB)
    staged_blocks: int = 0                # Q8_K blocks a CTA stages in shared memory (quantized_lanes.py)
    scatter: bool = False                 # a lane group reduce-scatters aux32 (quantized_lanes.py)

    @property
    def resident(self) -> int:
        return lane_group_resident(self.staged_blocks > 0)

    def to_json(self) -> dict:
        lanes = self.lanes
        return {"rows_per_cta": WARPS * 32 // lanes, "lanes_per_row": lanes,
                "row": f"{lanes} lanes: lane L owns the sub-block pairs L % {lanes}, + {lanes}, ... of each block",
                "staged_x_blocks": self.staged_blocks,
                "integers": "prmt transposes, dp4a, " + ("a reduce-scatter" if self.scatter else "butterflies") +
                            " over the row's lanes (exact)", "floats": "the reference's order, no FMA"}

    def layouts(self, known: dict | None = None) -> Assignment:
        """Each value over the `lanes` lanes of its row (`quantized_lanes.py`): of a Q4_K
        block, the 16 header bytes in every lane and the quants in 32-byte pairs, lane L
        pairs L, L + lanes, ...; of a Q8_K block, staged in shared memory where the plan
        stages it, else d in every lane and a lane its pairs' quants (64 bytes) and bsums
        (8 bytes); the dot, in every lane of the row."""
        result = Assignment()
        blocks = self.blocks if isinstance(self.blocks, int) else (known or {}).get(self.blocks)
        w = Split(1, (Q4K_QS,), (self._copies(blocks, Q4K_QS), self._pairs(blocks, Q4K_BYTES - Q4K_QS)))
        x = Shared((1, 0)) if self.staged_blocks else \
            Split(1, (Q8K_QS, Q8K_BSUMS), (self._copies(blocks, Q8K_QS), self._pairs(blocks, Q8K_BSUMS - Q8K_QS),
                                           self._pairs(blocks, Q8K_BYTES - Q8K_BSUMS)))
        for name, role in self.values.items():
            result.values[name] = {"w": w, "x": x, "dot": Uniform()}[role]
        return result

    def _pairs(self, blocks: int | None, extent: int) -> Blocked:
        """`extent` bytes of each block in PAIRS chunks, lane L of the row's lanes chunks L,
        L + lanes, ..."""
        return Blocked((blocks, extent), (1, extent // PAIRS), (1, self.lanes), (1, 1), (1, 0))

    def _copies(self, blocks: int | None, extent: int) -> Slice:
        """`extent` bytes of each block in every lane of the row's lanes."""
        return Slice(Blocked((blocks, extent, self.lanes), (1, extent, 1), (1, 1, self.lanes), (1, 1, 1), (2, 1, 0)), 2)

    def emit(self, em) -> None:
        LaneGroupRows(em, self).emit()


def match_quantized_rows(kernel: Kernel) -> QuantizedRows:
    """The kernel as rows of a Q4_K x Q8_K quantized dot, or NoMatch saying why not."""
    evaluator = _SymbolicShapes(kernel)
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        raise NoMatch("not one top-level parallel")
    parallel = parallels[0]
    whole_reads = {}
    for op in kernel.body:
        if op is parallel or op.name == "yield":
            continue
        if op.name == "read":
            _access(evaluator, op, evaluator.shape(op.result_types[0]), {})
            whole_reads[op.results[0]] = op.operands[0]
        else:
            evaluator.tensor_op(op)      # (scalars go on to scalar_op)
    region = parallel.regions[0]
    if len(parallel.operands) != 1 or len(region.args) != 1:
        raise NoMatch("not a parallel over rows")
    row = region.args[0].name
    evaluator.env[row] = Affine.of(row)
    ops = [op for op in region.ops if op.name != "yield"]
    if len(ops) != 3 or ops[0].name != "read" or ops[1].name != "quantized_dot" or ops[2].name != "write":
        raise NoMatch("an iteration other than read, quantized_dot, write")
    read, dot, write = ops
    attrs = dot.attributes
    if (getattr(attrs.get("lhs_format"), "name", None), getattr(attrs.get("rhs_format"), "name", None)) != \
            ("q4_k", "q8_k") or dot.operands != (read.results[0], dot.operands[1]) or \
            dot.operands[1] not in whole_reads:
        raise NoMatch("not a Q4_K row against the whole Q8_K vector")
    w, x = read.operands[0], whole_reads[dot.operands[1]]
    w_view, x_view, y_view = (evaluator.views.get(name) for name in (w, x, write.operands[0]))
    if w_view is None or x_view is None or y_view is None or len(w_view.shape) != 3:
        raise NoMatch("views of other ranks")
    _row_read(evaluator, read, w_view, row)
    rows = w_view.shape[0]
    if list(w_view.shape[1:]) != [x_view.shape[0], Q4K_BYTES] or list(x_view.shape[1:]) != [Q8K_BYTES] or \
            not isinstance(rows, str) or evaluator.env.get(parallel.operands[0]) != Affine.of(rows):
        raise NoMatch("views that are not Q4_K rows and a Q8_K vector of the same blocks")
    if write.operands[1] != dot.results[0] or write.group("mask") or list(y_view.shape) != [w_view.shape[0]] or \
            evaluator.env.get((write.group("index") or ("",))[0]) != Affine.of(row) or y_view.dtype != "f32":
        raise NoMatch("the dot is not written at its row")
    values = {read.results[0]: "w", dot.operands[1]: "x", dot.results[0]: "dot"}
    return QuantizedRows(parallel, w, x, write.operands[0], values, LANES, x_view.shape[0])


def _row_read(evaluator, read: Op, view, row: str) -> None:
    """`read` is view[row] whole: index (row, iota over axis 1, iota over axis 2), no mask."""
    indices = read.group("index") or ()
    shape = evaluator.shape(read.result_types[0])
    if len(indices) != 3 or read.group("mask") or list(shape) != list(view.shape[1:]):
        raise NoMatch("a read that is not the whole row")
    if evaluator.env.get(indices[0]) != Affine.of(row):
        raise NoMatch("a read at another row")
    for axis, name in enumerate(indices[1:]):
        index = _broadcast(evaluator.env.get(name), shape)
        expected = tuple(1 if a == axis and shape[a] != 1 else 0 for a in range(2))
        if not isinstance(index, IndexTensor) or index.axes != expected or index.base != Affine():
            raise NoMatch("a row read along other coordinates")


def plan_quantized_rows(kernel: Kernel, known: dict | None = None) -> QuantizedRows | None:
    try:
        plan = match_quantized_rows(kernel)
    except NoMatch:
        return None
    return replace(plan, staged_blocks=staged_blocks(plan.blocks, known), scatter=lane_groups_scatter())
