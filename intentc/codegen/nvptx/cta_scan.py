"""Scans in CTA-mapped iterations (docs/gpu.md): builtin and generic, forward and reverse,
with static extents (the register form) and dynamic ones (the dynamic form), along the
last axis of a tensor of any rank (its lines scanned as one segmented scan).

A scan's *order* is its source order, reversed for `reverse`: scan position p is
coordinate p, or n-1-p. Every combine takes the operand earlier in that order first and
only ever joins adjacent runs (§6: a parenthesization that keeps source order; a generic
combine is only associative). A scan value is a list of registers (generic_scan's
components); `neutral` is a value that `combine` leaves unchanged on either side, so
padding past the end and "no carry yet" join no prefix: the -0.0 of a float sum, a
builtin's identity, or for generic scans a presence flag in front of the components
(`Scan.with_presence`), since the author's init need not be neutral. Lines of an N-D
tensor are segments of one scan over its row-major order: a head flag in front marks each
line's first position, and the segmented combine restarts there (`Scan.segmented`).

- `block_scan`: the scan over the CTA's threads in rank order (rank = tid, or T-1-tid
  reversed): a warp scan (`shfl.sync.up`, `.down` reversed), the warps' totals through
  shared memory scanned by every warp, then the carry of the earlier chunks in front.
- register form (`scan_slots`): each thread folds its V consecutive coordinates of a group,
  the CTA scans the threads' totals after the earlier groups' carry; groups and lanes go
  last to first when reversed.
- dynamic form (`ChunkScan`): the scan is recomputed wherever it is used: the consumer's
  loop over the coordinates (`chunked_for_each`) walks chunks of 4·T scan positions in
  order, every thread in every chunk, and before each chunk's body computes the chunk's prefixes
  of every scan the consumer reads (`prime`), its carry kept across chunks in registers.
  Nothing is stored per row.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I1, I32, I64, register_type
from ..llvm.values import Body, Registers, Shape, Tensor
from .cta import (CtaPlan, _shuffle, _warp_totals, in_tensor, slot_coordinate, sreg, thread_index, unravel,
                  within_row)
from .lane_steps import rolled_steps
from .ptx_asm import opaque

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

Values = list[ir.Value]
Combine = Callable[[Values, Values], Values]
Elements = Callable[[list[ir.Value]], Values]   # the scan's components at a coordinate
# The register form exchanges every group's warp totals in one barrier pair
# (`_scan_groups_at_once`), rather than a pair a group, for builtin combines.
EXCHANGE_GROUPS_AT_ONCE = True


@dataclass(frozen=True)
class Scan:
    """A scan along the last axis of `shape`: its components at a coordinate (`elements`),
    `combine`, a `neutral` value, the component dtypes and the first exclusive output."""
    shape: Shape
    elements: Elements
    combine: Combine
    neutral: Values
    dtypes: list[str]
    exclusive: bool
    reverse: bool
    first_exclusive: Values
    rolled: bool = False          # the combine runs the author's region: warp steps in loops (`lane_steps.py`)

    def starts_line(self, em: Emitter, idx: list[ir.Value]) -> ir.Value:
        """Whether coordinate idx is the first of its line in scan order."""
        first = em.b.sub(self.shape[-1], ir.Constant(I64, 1)) if self.reverse else ir.Constant(I64, 0)
        return em.b.icmp_signed("==", idx[-1], first)

    def exclusive_at(self, em: Emitter, idx: list[ir.Value], before: Values) -> Values:
        return _select(em, self.starts_line(em, idx), self.first_exclusive, before)

    def led_by(self, flag: Callable[[list[ir.Value]], ir.Value], combine: Combine) -> Scan:
        """This scan with a bool component in front: flag(idx) at each coordinate, false in
        the neutral value and the first exclusive output, `combine` over the whole."""
        false = ir.Constant(I1, 0)
        return Scan(self.shape, lambda idx: [flag(idx), *self.elements(idx)], combine, [false, *self.neutral],
                    ["bool", *self.dtypes], self.exclusive, self.reverse, [false, *self.first_exclusive],
                    self.rolled)

    def with_presence(self, em: Emitter) -> Scan:
        """A generic scan (no neutral value; `neutral` holds the inits): absent values join
        nothing, and the author's combine runs only where both operands are present."""
        def present(first: Values, second: Values) -> Values:
            b = em.b
            for absent, other in ((first, second), (second, first)):
                if isinstance(absent[0], ir.Constant) and absent[0].constant == 0:
                    return other          # an absent operand joins nothing (no combine emitted)
            slots = [em.entry_alloca(v.type) for v in first[1:]]
            for slot, a, c in zip(slots, first[1:], second[1:]):
                b.store(b.select(first[0], a, c), slot)
            with b.if_then(b.and_(first[0], second[0])):
                for slot, value in zip(slots, self.combine(first[1:], second[1:])):
                    b.store(value, slot)
            return [b.or_(first[0], second[0]), *(b.load(slot) for slot in slots)]
        return replace(self.led_by(lambda idx: ir.Constant(I1, 1), present), rolled=True)

    def segmented(self, em: Emitter) -> Scan:
        """The lines of a tensor of rank > 1 as segments of one scan in row-major order: a
        head flag marks each line's first position, and a combine whose later operand
        starts a line takes that operand alone."""
        if len(self.shape) == 1:
            return self

        def restart(first: Values, second: Values) -> Values:
            b = em.b
            joined = _select(em, second[0], second[1:], self.combine(first[1:], second[1:]))
            return [b.or_(first[0], second[0]), *joined]
        return self.led_by(lambda idx: self.starts_line(em, idx), restart)


def _select(em: Emitter, condition: ir.Value, then: Values, otherwise: Values) -> Values:
    return [em.b.select(condition, a, c) for a, c in zip(then, otherwise)]


def _warp_scan(em: Emitter, values: Values, rank: ir.Value, combine: Combine, reverse: bool,
               ranks_read: int = 32) -> Values:
    """Inclusive scan over the warp's lanes in rank order (lane, or 31 - lane reversed),
    right in the lanes of rank below `ranks_read` (the steps stop below it)."""
    b = em.b
    for lanes in (1, 2, 4, 8, 16)[:max(ranks_read - 1, 0).bit_length()]:
        earlier = [_shuffle(em, "down" if reverse else "up", v, lanes, 31 if reverse else 0) for v in values]
        values = _select(em, b.icmp_unsigned(">=", rank, ir.Constant(I32, lanes)), combine(earlier, values), values)
    return values


def _rolled_warp_scans(em: Emitter, plan: CtaPlan, ranks: Ranks, values: Values, neutral: Values, combine: Combine,
                       reverse: bool) -> tuple[Values, Values]:
    """(the warp's inclusive scan of `values`; in lane r the scan of the totals of the warps
    of ranks 0..r) for a combine that runs the author's region: both warp scans as one rolled
    loop of ten shuffle steps (`lane_steps.py`), whose sixth trip first trades the warp scan
    for the warps' totals through shared memory, so the combine is emitted once for both
    (issue #13). A step shuffles by lane index: from lane - 2^k (from lane + 2^k in a
    reversed warp scan); what a lane of rank below 2^k gets is not used."""
    b = em.b
    inclusive = [em.entry_alloca(v.type) for v in values]
    exchanged = [em.entry_alloca(v.type) for v in values]

    def step(index: ir.Value, current: Values) -> Values:
        for slot, value in zip(exchanged, current):
            b.store(value, slot)
        with b.if_then(b.icmp_unsigned("==", index, ir.Constant(I32, 5))):     # the warp scan is done
            for slot, value in zip(inclusive, current):
                b.store(value, slot)
            for slot, value in zip(exchanged, _warp_totals(em, plan, current, 0 if reverse else 31, neutral, reverse)):
                b.store(value, slot)
        current = [b.load(slot) for slot in exchanged]
        totals = b.icmp_unsigned(">=", index, ir.Constant(I32, 5))
        lanes = b.shl(ir.Constant(I32, 1), b.select(totals, b.sub(index, ir.Constant(I32, 5)), index))
        earlier_lane = b.sub(ranks.lane, lanes)
        if reverse:
            earlier_lane = b.select(totals, earlier_lane, b.add(ranks.lane, lanes))
        earlier = [_shuffle(em, "idx", v, earlier_lane, 31) for v in current]
        rank = b.select(totals, ranks.lane, ranks.lane_rank)
        return _select(em, b.icmp_unsigned(">=", rank, lanes), combine(earlier, current), current)
    scanned_totals = rolled_steps(em, values, 10, step)
    return [b.load(slot) for slot in inclusive], scanned_totals


@dataclass(frozen=True)
class Ranks:
    """A thread's place in a block scan's rank order (tid, or T-1-tid reversed)."""
    lane: ir.Value              # tid mod 32
    lane_rank: ir.Value         # its rank within the warp
    warp_rank: ir.Value
    first_lane: ir.Value        # lane rank 0

    def first(self, em: Emitter) -> ir.Value:
        """Whether the thread has rank 0 in the CTA."""
        return em.b.and_(self.first_lane, em.b.icmp_unsigned("==", self.warp_rank, ir.Constant(I32, 0)))


def thread_ranks(em: Emitter, reverse: bool, plan: CtaPlan) -> Ranks:
    b = em.b
    tid = sreg(em, "tid.x")
    lane, warp = b.and_(tid, ir.Constant(I32, 31)), b.lshr(tid, ir.Constant(I32, 5))
    if reverse:
        warps = -(-plan.threads // 32)
        lane_rank, warp_rank = b.sub(ir.Constant(I32, 31), lane), b.sub(ir.Constant(I32, warps - 1), warp)
    else:
        lane_rank, warp_rank = lane, warp
    return Ranks(lane, lane_rank, warp_rank, b.icmp_unsigned("==", lane_rank, ir.Constant(I32, 0)))


def block_scan(em: Emitter, plan: CtaPlan, values: Values, carry: Values, neutral: Values, combine: Combine,
               reverse: bool, rolled: bool = False) -> tuple[Values, Values]:
    """(the prefix before this thread, the chunk's total), both after `carry`, over the CTA's
    threads in rank order (`rolled`: the warp scans' steps in a loop)."""
    ranks = thread_ranks(em, reverse, plan)
    before_warp, shifted, total = block_parts(em, plan, ranks, values, carry, neutral, combine, reverse, rolled)
    return _select(em, ranks.first_lane, before_warp, combine(before_warp, shifted)), total


def block_parts(em: Emitter, plan: CtaPlan, ranks: Ranks, values: Values, carry: Values | None, neutral: Values,
                combine: Combine, reverse: bool, rolled: bool) -> tuple[Values, Values, Values]:
    """The pieces of a block scan of `values`: the prefix before this thread's warp, the
    warp's inclusive prefix through the lane of rank one less (meaningless in the first lane)
    and the total, the first and the last after `carry` (None: the value of the thread of
    rank 0 holds it already)."""
    if rolled:
        inclusive, totals = _rolled_warp_scans(em, plan, ranks, values, neutral, combine, reverse)
    else:
        inclusive = _warp_scan(em, values, ranks.lane_rank, combine, reverse)
        totals = _scanned_totals(em, plan, ranks, _warp_totals(em, plan, inclusive, 0 if reverse else 31, neutral,
                                                               reverse), combine)
    return _prefix_parts(em, plan, ranks, inclusive, totals, carry, neutral, combine, reverse)


def _warps(plan: CtaPlan) -> int:
    return -(-plan.threads // 32)


def _scanned_totals(em: Emitter, plan: CtaPlan, ranks: Ranks, totals: Values, combine: Combine) -> Values:
    """Lane r of every warp: the totals of the warps of ranks 0..r combined, from lane r's
    total of the warp of rank r (`_warp_totals`). Only the lanes below the warp count are
    read, so the scan's steps stop below it (3 steps for 8 warps, not 5)."""
    return _warp_scan(em, totals, ranks.lane, combine, False, _warps(plan))


def _prefix_parts(em: Emitter, plan: CtaPlan, ranks: Ranks, inclusive: Values, totals: Values, carry: Values | None,
                  neutral: Values, combine: Combine, reverse: bool) -> tuple[Values, Values, Values]:
    """`block_parts`' pieces from the warp's inclusive scan and the scanned totals."""
    b = em.b
    has_earlier = b.icmp_unsigned(">", ranks.warp_rank, ir.Constant(I32, 0))
    earlier_rank = b.select(has_earlier, b.sub(ranks.warp_rank, ir.Constant(I32, 1)), ir.Constant(I32, 0))
    earlier_warps = _select(em, has_earlier, [_shuffle(em, "idx", t, earlier_rank, 31) for t in totals], neutral)
    after_carry = (lambda later: later) if carry is None else partial(combine, carry)
    earlier_warps = after_carry(earlier_warps)
    total = after_carry([_shuffle(em, "idx", t, _warps(plan) - 1, 31) for t in totals])
    shifted = [_shuffle(em, "down" if reverse else "up", v, 1, 31 if reverse else 0) for v in inclusive]
    return earlier_warps, shifted, total


# ---- the register form ---------------------------------------------------------------------------
def scan_slots(em: Emitter, hooks, scan: Scan) -> list[Registers]:
    """`scan` of a tensor of S = plan.size coordinates in the register form, one K-slot
    array a component (`hooks.current_slot` set as slots are visited)."""
    plan = hooks.plan
    arrays = slot_arrays(em, plan, scan)
    groups = range(plan.groups)
    numbers = list(reversed(groups) if scan.reverse else groups)
    if scan.rolled or not EXCHANGE_GROUPS_AT_ONCE:
        carry = scan.neutral
        for number in numbers:
            order, prefixes, running = fold_group(em, hooks, scan, number)
            before, carry = block_scan(em, plan, running, carry, scan.neutral, scan.combine, scan.reverse,
                                       scan.rolled)
            store_group(em, plan, scan, arrays, order, prefixes, before)
    else:
        _scan_groups_at_once(em, hooks, scan, arrays, numbers)
    return arrays


def _scan_groups_at_once(em: Emitter, hooks, scan: Scan, arrays: list[Registers], numbers: list[int]) -> None:
    """The register form's groups with one exchange of warp totals for all of them: every
    group's fold and warp scan, every warp's totals of every group through shared memory in
    one barrier pair, then group by group the scan of its warps' totals after the carry of
    the groups before it, and its results. The same combines of the same operands as a block
    scan a group (`block_scan`), so the same bits, with 1 barrier pair instead of G and the
    groups' shuffle chains independent of each other (Triton's scan takes the same shape)."""
    plan, width = hooks.plan, len(scan.neutral)
    ranks = thread_ranks(em, scan.reverse, plan)
    folds = [fold_group(em, hooks, scan, number) for number in numbers]
    inclusives = [_warp_scan(em, running, ranks.lane_rank, scan.combine, scan.reverse) for _, _, running in folds]
    exchanged = _warp_totals(em, plan, [v for inclusive in inclusives for v in inclusive], 0 if scan.reverse else 31,
                             scan.neutral * len(numbers), scan.reverse)
    carry = scan.neutral
    for position, ((order, prefixes, _), inclusive) in enumerate(zip(folds, inclusives)):
        totals = _scanned_totals(em, plan, ranks, exchanged[position * width:(position + 1) * width], scan.combine)
        before_warp, shifted, carry = _prefix_parts(em, plan, ranks, inclusive, totals, carry, scan.neutral,
                                                    scan.combine, scan.reverse)
        before = _select(em, ranks.first_lane, before_warp, scan.combine(before_warp, shifted))
        store_group(em, plan, scan, arrays, order, prefixes, before)


def slot_arrays(em: Emitter, plan: CtaPlan, scan: Scan) -> list[Registers]:
    return [Registers(d, tuple(scan.shape), em.entry_alloca(ir.ArrayType(register_type(d), plan.slots)))
            for d in scan.dtypes]


def fold_group(em: Emitter, hooks, scan: Scan, number: int) -> tuple[list[int], dict, Values]:
    """Group `number`'s slots in scan order, this thread's prefix through each, and its total."""
    plan = hooks.plan
    group = list(range(number * plan.vector, (number + 1) * plan.vector))
    order = list(reversed(group)) if scan.reverse else group
    prefixes, running = {}, scan.neutral
    for slot in order:
        hooks.current_slot = slot
        running = scan.combine(running, _element_or(em, plan, scan, slot))
        prefixes[slot] = running
    return order, prefixes, running


def store_group(em: Emitter, plan: CtaPlan, scan: Scan, arrays: list[Registers], order: list[int], prefixes: dict,
                before: Values) -> None:
    """The scan's results at a group's slots: `before` (what precedes this thread's first
    slot of the group) joined with the thread's prefixes (exclusive: the one before)."""
    for position, slot in enumerate(order):
        if not scan.exclusive:
            result = scan.combine(before, prefixes[slot])
        else:
            earlier = scan.combine(before, prefixes[order[position - 1]]) if position else before
            idx = unravel(em, slot_coordinate(em, plan, slot), scan.shape)
            result = scan.exclusive_at(em, idx, earlier)
        for array, value in zip(arrays, result):
            em.b.store(value, array.slot(em, slot))


def _element_or(em: Emitter, plan: CtaPlan, scan: Scan, slot: int) -> Values:
    """The components at this thread's coordinate of `slot`, or the neutral value past S."""
    linear = slot_coordinate(em, plan, slot)
    if plan.full(slot // plan.vector):
        with within_row(em, plan, linear, scan.shape):
            return scan.elements(unravel(em, linear, scan.shape))
    return _when(em, in_tensor(em, plan, slot, linear, scan.shape), lambda: scan.elements(unravel(em, linear, scan.shape)),
                 scan.neutral)


def _when(em: Emitter, live: ir.Value, compute: Callable[[], Values], default: Values) -> Values:
    slots = [em.entry_alloca(v.type) for v in default]
    for slot, value in zip(slots, default):
        em.b.store(value, slot)
    with em.b.if_then(live):
        for slot, value in zip(slots, compute()):
            em.b.store(value, slot)
    return [em.b.load(slot) for slot in slots]


def _inside(em: Emitter, position: ir.Value, count: ir.Value, compute: Callable[[], Values]) -> Callable[[], Values]:
    """compute, run knowing that scan `position` lies below `count` (where a guard says so):
    its accesses check no bound of it."""
    def known() -> Values:
        with em.knowing_below(position, count):
            return compute()
    return known


# ---- the dynamic form ----------------------------------------------------------------------------
# A chunk is T·CHUNK_VECTOR positions, CHUNK_VECTOR consecutive ones a thread: each thread folds
# its own in order and the CTA block-scans the threads' totals, so the block scan's combines
# (and barriers) serve four positions, as in the register form's groups.
CHUNK_VECTOR = 4


@dataclass(eq=False)
class ScanState:
    """A dynamic-form scan: its carry across chunks and this thread's prefixes in the
    current chunk, all in registers; `lane` is the one being visited."""
    scan: Scan
    count: ir.Value                         # the positions: the elements of scan.shape
    carry: list = field(default_factory=list)
    current: list = field(default_factory=list)     # a list of components per lane (one when rolled)
    lane: int = 0
    running: list = field(default_factory=list)     # a rolled chunk's prefix before the lane visited
    joined: list = field(default_factory=list)      # and the warp's lanes before this one (`prime_rolled`)

    def reset(self, em: Emitter, rolled: bool) -> None:
        """Registers for a walk of the chunks (`rolled`: see `_rolled_chunk`)."""
        self.carry = [em.entry_alloca(v.type) for v in self.scan.neutral]
        self.current = [[em.entry_alloca(v.type) for v in self.scan.neutral] for _ in range(1 if rolled else CHUNK_VECTOR)]
        self.running = [em.entry_alloca(v.type) for v in self.scan.neutral] if rolled else []
        self.joined = [em.entry_alloca(v.type) for v in self.scan.neutral] if rolled else []
        self.lane = 0
        for slot, value in zip(self.carry, self.scan.neutral):
            em.b.store(value, slot)

    def prime(self, em: Emitter, plan: CtaPlan, positions: list[ir.Value], live: list[ir.Value]) -> None:
        """This thread's prefixes at its scan `positions` (consecutive, of the chunk all
        threads are in)."""
        b, scan = em.b, self.scan
        idxs = [self.coordinate(em, position) for position in positions]
        running, prefixes = scan.neutral, []
        for position, idx, lane_live in zip(positions, idxs, live):
            running = scan.combine(running, _when(em, lane_live, _inside(em, position, self.count,
                                                                          partial(scan.elements, idx)), scan.neutral))
            prefixes.append(running)
        carry = [b.load(slot) for slot in self.carry]
        # positions run in thread order within a chunk, whichever the direction
        before, total = block_scan(em, plan, running, carry, scan.neutral, scan.combine, False, scan.rolled)
        for lane, idx in enumerate(idxs):
            if not scan.exclusive:
                result = scan.combine(before, prefixes[lane])
            else:
                result = scan.exclusive_at(em, idx, scan.combine(before, prefixes[lane - 1]) if lane else before)
            for slot, value in zip(self.current[lane], result):
                b.store(value, slot)
        for slot, value in zip(self.carry, total):
            b.store(value, slot)

    def prime_rolled(self, em: Emitter, plan: CtaPlan, first: ir.Value) -> None:
        """A scan whose combine runs the author's region: the pieces of this thread's prefix
        before its positions first, first + 1, ... of the chunk, its positions folded in a
        rolled loop (the carry in front of rank 0's, no combine of its own); `advance` then
        joins the warp's prefix before this lane (lane -1), then each position's element,
        as the chunk's body visits them."""
        b, scan = em.b, self.scan
        ranks = thread_ranks(em, False, plan)       # positions run in thread order within a chunk
        carry, rank0 = [b.load(slot) for slot in self.carry], ranks.first(em)
        folded = rolled_steps(em, _select(em, rank0, carry, scan.neutral), CHUNK_VECTOR,
                              lambda lane, running: scan.combine(running, self._element(em, first, lane)))
        earlier, shifted, total = block_parts(em, plan, ranks, folded, None, scan.neutral, scan.combine, False,
                                              scan.rolled)
        for slots, values in ((self.running, _select(em, rank0, carry, earlier)),
                              (self.joined, _select(em, ranks.first_lane, scan.neutral, shifted)),
                              (self.carry, total)):
            for slot, value in zip(slots, values):
                b.store(value, slot)

    def advance(self, em: Emitter, first: ir.Value, lane: ir.Value) -> None:
        """The scan's result at position first + lane of a rolled chunk (`prime_rolled`): the
        running prefix before it joined with its element (exclusive: the running prefix);
        lane -1 joins the lanes before this one in its warp."""
        b, scan = em.b, self.scan
        before = [b.load(slot) for slot in self.running]
        joined = _select(em, b.icmp_signed("<", lane, ir.Constant(I64, 0)), [b.load(slot) for slot in self.joined],
                         self._element(em, first, lane))
        through = scan.combine(before, joined)
        result = scan.exclusive_at(em, self.coordinate(em, b.add(first, lane)), before) if scan.exclusive \
            else through
        for slots, values in ((self.current[0], result), (self.running, through)):
            for slot, value in zip(slots, values):
                b.store(value, slot)

    def _element(self, em: Emitter, first: ir.Value, lane: ir.Value) -> Values:
        """The scan's components at position first + lane (`lane` an i32, or an i64 from
        -1), or the neutral value past the end and at lane -1."""
        b = em.b
        position = b.add(first, b.zext(lane, I64) if lane.type == I32 else lane)
        live = b.icmp_unsigned("<", position, self.count)
        if lane.type == I64:
            live = b.and_(live, b.icmp_signed(">=", lane, ir.Constant(I64, 0)))
        return _when(em, live, _inside(em, position, self.count, partial(self.scan.elements,
                                                                       self.coordinate(em, position))),
                     self.scan.neutral)

    def coordinate(self, em: Emitter, position: ir.Value) -> list[ir.Value]:
        """The coordinate of scan `position`: row-major order, from the end when reversed."""
        b = em.b
        linear = b.sub(b.sub(self.count, ir.Constant(I64, 1)), position) if self.scan.reverse else position
        return unravel(em, linear, self.scan.shape)


@dataclass
class ChunkScan(Tensor):
    """One component of a dynamic-form scan: readable only inside `chunked_for_each`, at
    the coordinate being visited."""
    state: ScanState | None = None
    component: int = 0

    def at(self, em: Emitter, idx: list[ir.Value]) -> ir.Value:
        if self.state is None or not self.state.current:
            raise RuntimeError("a dynamic-form scan read outside its consumer's chunked loop")
        return em.b.load(self.state.current[self.state.lane][self.component])


def chunked_for_each(em: Emitter, plan: CtaPlan, shape: Shape, body: Body, states: list[ScanState]) -> None:
    """body(idx) for every coordinate of `shape` (the scans' shape), chunk by chunk of
    T·CHUNK_VECTOR scan positions (all of `states` share a direction), each chunk's prefixes
    primed first."""
    b = em.b
    count = em.element_count(shape)
    span = ir.Constant(I64, plan.threads * CHUNK_VECTOR)
    chunks = b.udiv(b.add(count, ir.Constant(I64, plan.threads * CHUNK_VECTOR - 1)), span)
    rolled = rolls_chunks(states)
    for state in states:
        state.reset(em, rolled)

    def chunk(number):
        first = b.add(b.mul(number, span), b.mul(thread_index(em, plan), ir.Constant(I64, CHUNK_VECTOR)))
        if rolled:
            _rolled_chunk(em, plan, first, count, body, states)
            return
        positions = [b.add(first, ir.Constant(I64, lane)) for lane in range(CHUNK_VECTOR)]
        live = [b.icmp_unsigned("<", position, count) for position in positions]
        for state in states:
            state.prime(em, plan, positions, live)
        for lane, (position, lane_live) in enumerate(zip(positions, live)):
            for state in states:
                state.lane = lane
            with b.if_then(lane_live), em.knowing_below(position, count):
                body(states[0].coordinate(em, position))
    em.loop(ir.Constant(I64, 0), chunks, chunk, name="chunk")
    for state in states:
        state.current = []


def rolls_chunks(states: list[ScanState]) -> bool:
    """Whether the chunks of `states` walk their positions in rolled loops (`_rolled_chunk`):
    where a scan's combine runs the author's region."""
    return any(state.scan.rolled for state in states)


def _rolled_chunk(em: Emitter, plan: CtaPlan, first: ir.Value, count: ir.Value, body: Body,
                  states: list[ScanState]) -> None:
    """A chunk of scans one of which runs the author's combine (`Scan.rolled`: dozens of
    instructions, two exponentials in a log-sum-exp merge): the thread's positions first ..
    first + CHUNK_VECTOR - 1 in two rolled loops, one folding them (after the carry, in the
    thread of rank 0) before the block scan's warp steps, and one visiting them: its trip
    -1 joins the earlier warps' prefix with the earlier lanes' of this warp, each later
    trip joins the running prefix with its position's element and runs the body. So the
    combine is emitted four times (fold, the two warp scans, visit) instead of once a
    position and thrice more in the block scan, and the body once (issue #13). The prefixes
    keep source order: ((w . l) . e0) . e1 where the unrolled chunk joins (w . l) . (e0 . e1)
    (§6)."""
    b = em.b
    for state in states:
        state.prime_rolled(em, plan, first)

    def visit(lane: ir.Value) -> None:
        for state in states:
            state.advance(em, first, lane)
        position = b.add(first, lane)
        with b.if_then(b.and_(b.icmp_signed(">=", lane, ir.Constant(I64, 0)), b.icmp_unsigned("<", position, count))), \
                em.knowing_below(position, count):
            body(states[0].coordinate(em, position))
    em.loop(ir.Constant(I64, -1), opaque(b, ir.Constant(I64, CHUNK_VECTOR)), visit, name="visit")


def scans_read(value: object, found: list[ScanState] | None = None) -> list[ScanState]:
    """The dynamic-form scans a lowered value reads (through element-wise `Derived` operands)."""
    found = [] if found is None else found
    state = value.state if isinstance(value, ChunkScan) else None
    if state is not None and state not in found:
        found.append(state)
    for operand in getattr(value, "operands", ()) or ():
        scans_read(operand, found)
    return found


def chunk_scan(em: Emitter, scan: Scan) -> list[ChunkScan]:
    state = ScanState(scan, em.element_count(scan.shape))
    return [ChunkScan(d, tuple(scan.shape), state, k) for k, d in enumerate(scan.dtypes)]
