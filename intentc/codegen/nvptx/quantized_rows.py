"""The warp-rows mapping of a quantized matrix-vector product (docs/gpu.md, "Quantized
rows"): `y[r] = quantized_dot(w[r], x)` with Q4_K rows and a Q8_K vector
(`q4k_q8k_matvec.kir`): a group of lanes a row (`quantized_lanes.py`, the plan's default
`lanes`), or one row a warp (`_Rows` below, `lanes` = WARP_A_ROW).

The recognizer proves the shape symbolically: a top-level read of the whole Q8_K view, a
`parallel` over the rows of the Q4_K view whose iteration reads its whole row, takes the
`quantized_dot` of the two and writes it at the row (the same extent names: one launch
binds them to one value).

Each warp walks its row's blocks in order. In a block, lane L owns 4 nibble bytes (the
block's qs bytes 4L..4L+3: sub-blocks 2(L/8) and 2(L/8)+1, members 4(L%8)..+3, i.e. the
`l = member % 8` lanes 4(L%2)..+3 of ggml's aux32), loaded as one 32-bit word, with the
matching Q8_K quants; its integer products times the sub-block scales are summed over
the lanes of its parity by butterflies (exact integers: any order), and the mins' sum
`sumi` over 16 lanes likewise. The float sequence is then the reference's, in the
interpreter's order, on every lane (each holds the 4 `sums` of its parity): d = d4·d8,
dmin = dmin4·d8, sums[l] += d·aux32[l], sumf -= dmin·sumi a block, then sumf + sums[0..7]
in lane order — separate f32 roundings, no FMA across them (§5.5).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import pairwise

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ..layout.assign import Assignment
from ..layout.encodings import Blocked, Uniform
from ..llvm.types import F32, I32, I64
from .ptx_asm import opaque
from .register_staging import i32, load_run, vector_run, view_address, wide
from .q4k_words import half, scale_min, signed_byte
from .quantized_lanes import LANES, LaneGroupRows, lane_group_resident, lane_groups_scatter, staged_blocks
from .structured_contraction import _access, _SymbolicShapes
from .tile_contraction import Affine, IndexTensor, NoMatch, _broadcast
from .warp_rows import WARPS, RowsPlanData, RowWalk

AHEAD = 3                 # blocks loaded ahead of the one accumulated (AHEAD + 1 in flight)
WORDS = 9                 # 32-bit words a lane loads of a block (`_Rows._load`)
RESIDENT = 2              # CTAs an SM must fit (`.minnctapersm`: 128 registers; capped at 64 or 85 ptxas spilled)
WARP_A_ROW = 32           # `QuantizedRows.lanes` of the one-row-a-warp walk (`_Rows`)
Q4K_BYTES, Q8K_BYTES = 144, 292


@dataclass(frozen=True)
class QuantizedRows(RowsPlanData):
    parallel: Op
    w: str                                # Q4_K rows [R, NB, 144]
    x: str                                # the Q8_K vector [NB, 292]
    y: str                                # [R] f32
    values: dict = field(default_factory=dict, compare=False)
    lanes: int = LANES                    # lanes a row: 1, 2, 4 (quantized_lanes.py) or WARP_A_ROW
    blocks: int | str = 0                 # the extent of blocks a row (NB)
    staged_blocks: int = 0                # Q8_K blocks a CTA stages in shared memory (quantized_lanes.py)
    scatter: bool = False                 # a lane group reduce-scatters aux32 (quantized_lanes.py)

    @property
    def resident(self) -> int:
        return RESIDENT if self.lanes == WARP_A_ROW else lane_group_resident(self.staged_blocks > 0)

    def to_json(self) -> dict:
        if self.lanes == WARP_A_ROW:
            row, integers = "one warp: lane L owns qs bytes 4L..4L+3 of each block", "butterflies over lanes (exact)"
        else:
            row = f"{self.lanes} lanes: lane L owns the sub-block pairs L % {self.lanes}, + {self.lanes}, ... of each block"
            integers = "prmt transposes, dp4a, " + ("a reduce-scatter" if self.scatter else "butterflies") + \
                " over the row's lanes (exact)"
        return {"rows_per_cta": WARPS * WARP_A_ROW // self.lanes, "lanes_per_row": self.lanes, "row": row,
                "staged_x_blocks": self.staged_blocks, "integers": integers, "floats": "the reference's order, no FMA"}

    def layouts(self, known: dict | None = None) -> Assignment:
        result = Assignment()
        for name, role in self.values.items():
            result.values[name] = Uniform() if role == "dot" else \
                Blocked((None, Q4K_BYTES if role == "w" else Q8K_BYTES), (1, 4), (1, 32), (1, 1), (1, 0))
        return result

    def emit(self, em) -> None:
        if self.lanes == WARP_A_ROW:
            _Rows(em, self).emit()
        else:
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
    if plan.lanes == WARP_A_ROW:
        return plan
    return replace(plan, staged_blocks=staged_blocks(plan.blocks, known), scatter=lane_groups_scatter())


# ---- emission -----------------------------------------------------------------------------------
class _Rows(RowWalk):
    def __init__(self, em, plan: QuantizedRows):
        super().__init__(em)
        self.plan = plan
        self.w, self.x, self.y = em.env[plan.w], em.env[plan.x], em.env[plan.y]

    def emit(self) -> None:
        em = self.em
        self.wide_w, self.wide_x = wide(em, self.w, 4), wide(em, self.x, 4)
        self.sums = [em.entry_alloca(F32) for _ in range(4)]
        self.sumf = em.entry_alloca(F32)
        self.walk(self.w.shape[0], self._row)

    def _row(self, row: ir.Value) -> None:
        """The row's blocks in order, software-pipelined in a rolled loop: a trip loads
        block t + AHEAD, then accumulates block t from the words an earlier trip loaded
        (carried in registers), so a lane has AHEAD + 1 blocks' loads in flight (one block
        at a time, a warp waited for each block's loads: latency-bound) while the loads and
        the arithmetic are emitted once a loop; trips t < 0 only load. Plain vector loads
        where both views are contiguous and aligned (a uniform branch before the loop),
        else `load_run`'s guarded ones."""
        em = self.em
        b = em.b
        zero = ir.Constant(F32, 0.0)
        for slot in (*self.sums, self.sumf):
            b.store(zero, slot)
        blocks = self.w.shape[1]
        queue = [[em.entry_alloca(I32) for _ in range(WORDS)] for _ in range(AHEAD + 1)]

        def trip(block, guarded: bool):
            ahead = b.add(block, ir.Constant(I64, AHEAD))
            with b.if_then(b.icmp_signed("<", ahead, blocks)):
                for slot, word in zip(queue[AHEAD], _flat(self._load(row, ahead, guarded))):
                    b.store(word, slot)
            with b.if_then(b.icmp_signed(">=", block, ir.Constant(I64, 0))):
                self._accumulate(_unflat([b.load(slot) for slot in queue[0]]))
            for older, newer in pairwise(queue):
                for slot, source in zip(older, newer):
                    b.store(b.load(source), slot)
        with b.if_else(b.and_(self.wide_w, self.wide_x)) as (vectors, any_view):
            for branch, guarded in ((vectors, False), (any_view, True)):
                with branch:
                    em.loop(ir.Constant(I64, -AHEAD), blocks, lambda block, g=guarded: trip(block, g), name="block")
        # sumf + sums[0..7] in lane order: the odd lanes hold sums[4..7]
        sums = [b.load(slot) for slot in self.sums]
        odd = [self.from_next_lane(value) for value in sums]
        total = b.load(self.sumf)
        for value in (*sums, *odd):
            total = b.fadd(total, value)
        with b.if_then(b.icmp_unsigned("==", self.lane, i32(0))):
            b.store(total, view_address(em, self.y, (row,)))

    def _load(self, row: ir.Value, block: ir.Value, guarded: bool) -> dict:
        """The lane's 32-bit words of a block: d and dmin, the 12 scale bytes, its 4 nibble
        bytes, its Q8_K quants of sub-blocks 2(L/8) and 2(L/8)+1, the bsums pair of lane
        L/2 and the Q8_K d (`guarded`: through `load_run`, any view; else vector loads)."""
        b = self.em.b
        # the lane, opaque to LLVM: its offsets recomputed here rather than hoisted out of
        # the row's loop into long-lived registers (ptxas spilled them)
        lane = b.trunc(opaque(b, b.zext(self.lane, I64)), I32)
        within = b.mul(b.urem(lane, i32(8)), i32(4))
        j_low = b.mul(b.udiv(lane, i32(8)), i32(2))

        def word(view, coordinates, wide_flag):
            if not guarded:
                return vector_run(self.em, view, coordinates, 4)[0]
            return load_run(self.em, view, coordinates, ir.Constant(ir.IntType(1), 1), ir.Constant(I64, 4), 4,
                            wide_flag)[0]

        def w_at(offset):
            return word(self.w, (row, block, b.zext(offset, I64)), self.wide_w)

        def x_at(offset):
            return word(self.x, (block, b.zext(offset, I64)), self.wide_x)
        return {"header": [w_at(i32(4 * k)) for k in range(4)],
                "nibbles": w_at(b.add(i32(16), b.mul(lane, i32(4)))),
                "quants": [x_at(b.add(i32(4), b.add(b.mul(j, i32(32)), within))) for j in (j_low, b.add(j_low, i32(1)))],
                "bsums": x_at(b.add(i32(4 + 256), b.mul(b.udiv(lane, i32(2)), i32(4)))),
                "d8": x_at(i32(0))}

    def _accumulate(self, words: dict) -> None:
        """One block's contribution, in the reference's order (module docstring)."""
        b = self.em.b
        lane = self.lane
        j_low = b.mul(b.udiv(lane, i32(8)), i32(2))
        header, nibbles, quants = words["header"], words["nibbles"], words["quants"]
        scales = header[1:4]
        sc_low, _ = scale_min(b, scales, j_low)
        sc_high, _ = scale_min(b, scales, b.add(j_low, i32(1)))
        partials = []
        for t in range(4):
            byte = b.and_(b.lshr(nibbles, i32(8 * t)), i32(255))
            low, high = b.and_(byte, i32(15)), b.lshr(byte, i32(4))
            q_low, q_high = (signed_byte(b, word, t) for word in quants)
            partials.append(b.add(b.mul(sc_low, b.mul(low, q_low)), b.mul(sc_high, b.mul(high, q_high))))
        aux = [self.butterfly_sum(value, (2, 4, 8, 16), b.add) for value in partials]
        # sumi: lane L < 16 takes bsums[L] times the min of sub-block L/2
        bsum = b.ashr(b.shl(b.lshr(words["bsums"], b.mul(b.urem(lane, i32(2)), i32(16))), i32(16)), i32(16))
        _, minimum = scale_min(b, scales, b.udiv(lane, i32(2)))
        sumi = self.butterfly_sum(b.select(b.icmp_unsigned("<", lane, i32(16)), b.mul(bsum, minimum), i32(0)),
                                  (1, 2, 4, 8, 16), b.add)
        d8 = b.bitcast(words["d8"], F32)
        d, dmin = b.fmul(half(b, header[0], 0), d8), b.fmul(half(b, header[0], 1), d8)
        for slot, value in zip(self.sums, aux):
            b.store(b.fadd(b.load(slot), b.fmul(d, b.sitofp(value, F32))), slot)
        b.store(b.fsub(b.load(self.sumf), b.fmul(dmin, b.sitofp(sumi, F32))), self.sumf)


def _flat(words: dict) -> list:
    return [*words["header"], words["nibbles"], *words["quants"], words["bsums"], words["d8"]]


def _unflat(flat: list) -> dict:
    return {"header": flat[0:4], "nibbles": flat[4], "quants": flat[5:7], "bsums": flat[7], "d8": flat[8]}
