"""The warp-specialized sm_90a form of the MMA mapping (docs/gpu.md, "MMA mapping"): the copy
engine (TMA) stages the operands, `wgmma` consumes them, and mbarriers hand ring slots
between the two.

A CTA is 1 + C warpgroups (`TmaPlan`): warpgroup 0 is the producer, whose thread 0 issues
`cp.async.bulk.tensor` copies of each K tile — A as one box of BK x BM, B as BN / 64 boxes
of 64 x BK — into a `stages`-deep ring of 128-byte-swizzled tiles (the layouts `wgmma.py`
describes, rows of BK = 64 elements), expecting the ring slot's bytes on its `full`
barrier; the other C warpgroups are consumers, each 64 rows of the BM x BN tile, which wait
on `full`, run the slot's wgmmas, wait for them (`wgmma.wait_group 0`, so no instruction
touches the accumulators while a group is in flight: ptxas keeps the wgmmas asynchronous)
and arrive on the slot's `empty` barrier, which the producer waits on before refilling it.
The copy engine zero-fills what lies outside the views: M, N and K tails and K = 0 need
nothing else. `setmaxnreg` moves registers from the producer to the consumers' accumulators.
CTAs are persistent (one an SM): CTA c takes tiles c, c + nctaid, ..., and producer and
consumers walk the same tiles and K tiles, counting ring uses to find each slot's phase.

The tensor maps (one per operand, 128 bytes each) are encoded by the runtime from the
views' pointers, extents and strides (`launch.json` `mma.tma`) and written after the
kernel's argument words, 64-byte aligned; a launch whose views a map cannot describe (an
unaligned row, a transposed view) runs the module's fallback entry instead: the cp.async
form, or for 8-bit floats (which only this form widens) the generic mapping.

8-bit float operands (`convert`) are copied raw into a second ring (rows of BK bytes,
unswizzled) completing on a `raw` barrier; producer warps 1-3 then widen each slot to f16
(exactly: every e4m3 and e5m2 value is an f16) into the f16 ring's swizzled layout,
publish it to the async proxy and arrive on `full`; the consumers run the f16 wgmma. Hopper's
own 8-bit wgmma is not used: its accumulation keeps fewer bits than f32, and the spec's
accumulator is the declared dtype (issue #14).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..llvm.abi import layout, slot_count
from ..llvm.types import I32, I64
from .cta import barrier, sreg
from .ptx_asm import opaque, wgmma_commit, wgmma_fence, wgmma_m64, wgmma_wait
from .tile_matmul import MmaPlan, TileEmitter, _ceil, _const
from .ptx_asm import fence_proxy_async
from .tma_asm import (F8_PAIRS, f16_pair_of_f8_pair, fence_barrier_init, load_shared_pair, mbarrier_arrive,
                      mbarrier_expect_bytes, mbarrier_init, mbarrier_wait, setmaxnreg, store_shared_quad, tma_load_2d)
from .wgmma import INSTRUCTION_M, Wgmma, descriptor

WARPGROUP = 128
BOX_COLUMNS = 64            # B's box: 64 N columns (128 bytes, the widest swizzled row) by BK rows
MAP_BYTES = 128             # a CUtensorMap
RING_ALIGN = 1024
BARRIER_BYTES = 8
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232
CONVERTERS = 96             # producer threads 32..127: the 8-bit operands' conversion to f16
RAW_ROW = 64                # bytes of an 8-bit staged row (BK elements), unswizzled
FALLBACK_SUFFIX = "_fallback"
BARRIERS = ("full", "empty", "raw")     # raw: an 8-bit slot's copies have landed (converted next)


@dataclass(frozen=True)
class TmaPlan(MmaPlan):
    maps_word: int = 0      # argument word where the runtime writes the tensor maps
    fallback: MmaPlan | None = None     # the cp.async plan for views without a map (None: the generic mapping)
    convert: str = ""       # an 8-bit float operand dtype, copied raw and converted to f16 in shared memory

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.warps[0])

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def raw_stage_bytes(self) -> int:
        """An 8-bit operand slot as copied (A then B's blocks, rows of BK bytes), or 0."""
        bm, bn, bk = self.block
        return (bm + bn) * bk if self.convert else 0

    @property
    def barriers(self) -> tuple:
        return BARRIERS if self.convert else BARRIERS[:2]

    @property
    def dynamic_shared_bytes(self) -> int:
        """The rings, their barriers, and room to align the ring to 1024 bytes (the 128-byte
        swizzle's period, which TMA and the wgmma descriptors assume)."""
        ring = self.ring_bytes + self.stages * self.raw_stage_bytes
        return ring + len(self.barriers) * self.stages * BARRIER_BYTES + RING_ALIGN

    @property
    def ctas_per_sm(self) -> int:
        return 1

    @property
    def mma_dtype(self) -> str:
        """The wgmma's operand type: f16 for converted 8-bit floats."""
        return "f16" if self.convert else self.contraction.operand_dtype

    def to_json(self) -> dict:
        bm, _, bk = self.block
        c = self.contraction
        data = super().to_json()
        data.update(shared_bytes=self.dynamic_shared_bytes, warpgroups={"producer": 1, "consumers": self.warps[0]},
                    staging=f"TMA boxes, {self.row_bytes}-byte swizzle, mbarrier ring (full/empty)")
        if self.convert:
            data["convert"] = f"{self.convert} -> f16 exactly (cvt.rn.f16x2.{F8_PAIRS[self.convert]}) by " \
                              f"{CONVERTERS} producer threads, then the f16 wgmma"
        data["tma"] = {"word": self.maps_word, "element_bytes": 1 if self.convert else self.element_bytes,
                       "swizzle_bytes": 0 if self.convert else self.row_bytes,
                       "maps": [{"view": c.a, "inner_axis": c.a_axes[1], "outer_axis": c.a_axes[0], "box": [bk, bm]},
                                {"view": c.b, "inner_axis": c.b_axes[1], "outer_axis": c.b_axes[0],
                                 "box": [BOX_COLUMNS, bk]}]}
        return data


    def fallback_mapping(self, mapping):
        """The cp.async fallback's mapping (its own entry in the module, `FALLBACK_SUFFIX`)."""
        from dataclasses import replace
        assert self.fallback is not None
        return replace(mapping, threads=self.fallback.threads, mma=self.fallback)


def tma_plan(kernel, contraction, fallback: MmaPlan | None, columns: int = 256, stages: int = 4) -> TmaPlan:
    """128 x `columns` tiles of BK = 64 (the 128-byte swizzle), two consumer warpgroups of
    m64n<columns>k16, `stages` ring slots (4 of 48 KiB for 256 columns; 8-bit operands keep
    3, beside their raw ring); the maps start at the first 64-byte aligned word after the
    kernel's own."""
    aligned = 64 // 8
    words = slot_count(layout(kernel))
    convert = contraction.operand_dtype if contraction.operand_dtype in F8_PAIRS else ""
    return TmaPlan(contraction, f"wgmma.m64n{columns}k16", (128, columns, 64), (2, 1),
                   stages=min(stages, 3) if convert else stages, resident=1,
                   maps_word=-(-words // aligned) * aligned, fallback=fallback, convert=convert)


class TmaEmitter(TileEmitter):
    plan: TmaPlan

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, bk = plan.block
        unaligned = self._shared_memory()
        self.shared = b.and_(b.add(unaligned, ir.Constant(I32, RING_ALIGN - 1)), ir.Constant(I32, -RING_ALIGN))
        thread = sreg(em, "tid.x")
        self.tid = b.zext(thread, I64)
        self.c_pairs = self._pairs()
        self.tiles = (_ceil(b, self.m, bm), _ceil(b, self.n, bn))
        self.k_tiles = _ceil(b, self.k, bk)
        self.wgmma = Wgmma()
        self.acc = self.wgmma.accumulators(em, plan)
        self.uses = em.entry_alloca(I64, _const(0))     # ring slots used so far by this thread's role
        # arrivals a phase: full, the copies' one expect_tx (or every converter); empty, one a
        # consumer warpgroup; raw, the copies' expect_tx
        arrivals = {"full": CONVERTERS if plan.convert else 1, "empty": plan.warps[0], "raw": 1}
        with b.if_then(b.icmp_unsigned("==", thread, ir.Constant(I32, 0))):
            for stage in range(plan.stages):
                for kind in plan.barriers:
                    mbarrier_init(b, self._barrier(kind, ir.Constant(I32, stage)), arrivals[kind])
            fence_barrier_init(b)
        barrier(em)
        warpgroup = b.udiv(thread, ir.Constant(I32, WARPGROUP))
        em.if_then(b.icmp_unsigned("==", warpgroup, ir.Constant(I32, 0)), lambda: self._producer(thread),
                   lambda: self._consumer(thread))

    def _barrier(self, kind: str, stage: ir.Value) -> ir.Value:
        """Shared address of ring slot `stage`'s barrier of `kind` (after the rings)."""
        b = self.em.b
        plan = self.plan
        first = plan.ring_bytes + plan.stages * (plan.raw_stage_bytes + BARRIER_BYTES * plan.barriers.index(kind))
        return b.add(self.shared, b.add(ir.Constant(I32, first), b.mul(stage, ir.Constant(I32, BARRIER_BYTES))))

    def _raw_base(self, stage: ir.Value) -> ir.Value:
        """Shared address of ring slot `stage` of the 8-bit operands as copied."""
        b = self.em.b
        offset = b.mul(stage, ir.Constant(I32, self.plan.raw_stage_bytes))
        return b.add(self.shared, b.add(ir.Constant(I32, self.plan.ring_bytes), offset))

    def _each_tile(self, body) -> None:
        em = self.em
        b = em.b
        tiles_m, tiles_n = self.tiles

        def tile(index):
            self.place(index, tiles_m, tiles_n)
            body()
        em.loop(b.zext(sreg(em, "ctaid.x"), I64), b.mul(tiles_m, tiles_n), tile, b.zext(sreg(em, "nctaid.x"), I64),
                name="tile")

    def _each_k_tile(self, body) -> None:
        """body(k tile, ring slot (i32), the slot's phase parity (i32)) for each K tile."""
        em = self.em
        b = em.b
        stages = _const(self.plan.stages)

        def step(kt):
            used = b.load(self.uses)
            slot = b.trunc(b.urem(used, stages), I32)
            parity = b.trunc(b.and_(b.udiv(used, stages), _const(1)), I32)
            body(kt, slot, parity)
            b.store(b.add(used, _const(1)), self.uses)
        em.loop(_const(0), self.k_tiles, step, name="ktile")

    # ---- producer ----------------------------------------------------------------------------
    def _producer(self, thread: ir.Value) -> None:
        em = self.em
        b = em.b
        setmaxnreg(b, PRODUCER_REGISTERS, increase=False)
        args = em.function.args[0]
        word = self.plan.maps_word
        maps = [b.ptrtoint(b.gep(args, [_const(word + index * MAP_BYTES // 8)], inbounds=True), I64)
                for index in range(2)]
        is_copier = b.icmp_unsigned("==", thread, ir.Constant(I32, 0))
        if not self.plan.convert:
            with b.if_then(is_copier):
                self._each_tile(lambda: self._each_k_tile(lambda kt, slot, parity: self._fill(maps, kt, slot, parity)))
            return
        # 8-bit operands: thread 0 copies, warps 1-3 convert (warp 0's other lanes idle)
        first = WARPGROUP - CONVERTERS
        converter = b.sub(thread, ir.Constant(I32, first))

        def convert():
            with b.if_then(b.icmp_unsigned(">=", thread, ir.Constant(I32, first))):
                self._converting(converter)
        em.if_then(is_copier,
                   lambda: self._each_tile(lambda: self._each_k_tile(
                       lambda kt, slot, parity: self._fill(maps, kt, slot, parity))), convert)

    def _fill(self, maps: list, kt: ir.Value, slot: ir.Value, parity: ir.Value) -> None:
        """Wait until the consumers released ring slot `slot`, then copy K tile `kt` into it
        (8-bit operands: into the raw ring's slot, completing on its `raw` barrier)."""
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, bk = plan.block
        mbarrier_wait(em, self._barrier("empty", slot), b.xor(parity, ir.Constant(I32, 1)))
        if plan.convert:
            landed, a_base, row_bytes = self._barrier("raw", slot), self._raw_base(slot), RAW_ROW
            b_base = b.add(a_base, ir.Constant(I32, bm * RAW_ROW))
            mbarrier_expect_bytes(b, landed, plan.raw_stage_bytes)
        else:
            landed, a_base, row_bytes = self._barrier("full", slot), self.stage_base(slot, "a"), plan.row_bytes
            b_base = self.stage_base(slot, "b")
            mbarrier_expect_bytes(b, landed, plan.stage_bytes)
        k0 = b.trunc(b.mul(kt, _const(bk)), I32)
        tma_load_2d(b, a_base, maps[0], k0, b.trunc(self.m0, I32), landed)
        n0 = b.trunc(self.n0, I32)
        for block in range(bn // BOX_COLUMNS):
            destination = b.add(b_base, ir.Constant(I32, block * bk * row_bytes))
            tma_load_2d(b, destination, maps[1], b.add(n0, ir.Constant(I32, block * BOX_COLUMNS)), k0, landed)

    def _converting(self, converter: ir.Value) -> None:
        """Converter `converter` (0..CONVERTERS-1): for each K tile, once its raw copies have
        landed, its share of the slot's rows of BK bytes into f16 rows of 128 bytes at their
        swizzled chunks (A's rows, then B's blocks: both staged as rows of BK), published to
        the tensor cores (`fence.proxy.async`) and announced on the slot's `full` barrier."""
        em, plan = self.em, self.plan
        b = em.b
        rows = plan.block[0] + plan.block[1]
        chunks = rows * RAW_ROW // 8          # 8 raw bytes -> one 16-byte chunk of f16
        unrolled = 4                          # chunks a trip: loads in flight, within 40 registers

        def convert(slot, parity):
            mbarrier_wait(em, self._barrier("raw", slot), parity)
            raw, staged = self._raw_base(slot), self.stage_base(slot, "a")

            def trip(first):
                for lane in range(unrolled):
                    chunk = b.add(b.trunc(first, I32), b.add(converter, ir.Constant(I32, lane * CONVERTERS)))
                    self._convert_chunk(raw, staged, chunk)
            em.loop(_const(0), opaque(b, _const(chunks // (CONVERTERS * unrolled))),
                    lambda i: trip(b.mul(i, _const(CONVERTERS * unrolled))), name="convert")
            fence_proxy_async(b)
            mbarrier_arrive(b, self._barrier("full", slot))
        self._each_tile(lambda: self._each_k_tile(lambda kt, slot, parity: convert(slot, parity)))

    def _convert_chunk(self, raw: ir.Value, staged: ir.Value, chunk: ir.Value) -> None:
        """Eight 8-bit elements (chunk c of row r: bytes 8c.. of the raw row) as the f16 chunk
        c ^ (r mod 8) of staged row r (the 128-byte swizzle)."""
        b = self.em.b
        row, column = b.udiv(chunk, ir.Constant(I32, 8)), b.urem(chunk, ir.Constant(I32, 8))
        words = load_shared_pair(b, b.add(raw, b.add(b.mul(row, ir.Constant(I32, RAW_ROW)),
                                                         b.mul(column, ir.Constant(I32, 8)))))
        halves = [b.trunc(b.lshr(word, ir.Constant(I32, shift)), ir.IntType(16)) for word in words for shift in (0, 16)]
        converted = [f16_pair_of_f8_pair(b, half, self.plan.convert) for half in halves]
        swizzled = b.shl(b.xor(column, b.and_(row, ir.Constant(I32, 7))), ir.Constant(I32, 4))
        store_shared_quad(b, b.add(staged, b.add(b.mul(row, ir.Constant(I32, 2 * RAW_ROW)), swizzled)), converted)

    # ---- consumers ---------------------------------------------------------------------------
    def _consumer(self, thread: ir.Value) -> None:
        b = self.em.b
        setmaxnreg(b, CONSUMER_REGISTERS, increase=True)
        self.consumer_thread = b.sub(thread, ir.Constant(I32, WARPGROUP))
        leader = b.icmp_unsigned("==", b.urem(thread, ir.Constant(I32, WARPGROUP)), ir.Constant(I32, 0))

        def tile():
            self.wgmma.reset(self.em, self.acc, self.plan.contraction)
            self._each_k_tile(lambda kt, slot, parity: self._consume(slot, parity, leader))
            self.wgmma.epilogue(self)
        self._each_tile(tile)

    def _consume(self, slot: ir.Value, parity: ir.Value, leader: ir.Value) -> None:
        """This warpgroup's 64 rows of ring slot `slot`: wgmmas over its BK, waited for, then
        the slot released (one arrival a warpgroup)."""
        em, plan = self.em, self.plan
        b = em.b
        c = plan.contraction
        _, bn, bk = plan.block
        mbarrier_wait(em, self._barrier("full", slot), parity)
        group = b.udiv(self.consumer_thread, ir.Constant(I32, WARPGROUP))
        row_bytes = plan.row_bytes
        a_base = b.add(self.stage_base(slot, "a"), b.mul(group, ir.Constant(I32, INSTRUCTION_M * row_bytes)))
        b_base = self.stage_base(slot, "b")
        slots = [b.gep(self.acc, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True)
                 for i in range(self.acc.type.pointee.count)]
        acc = [b.load(s) for s in slots]
        wgmma_fence(b)
        for kk in range(bk // 16):
            a_desc = descriptor(b, b.add(a_base, ir.Constant(I32, 32 * kk)), 16, 8 * row_bytes, row_bytes)
            b_desc = descriptor(b, b.add(b_base, ir.Constant(I32, 16 * kk * row_bytes)), bk * row_bytes,
                                8 * row_bytes, row_bytes)
            acc = wgmma_m64(b, bn, plan.mma_dtype, c.acc_dtype, a_desc, b_desc, acc, transpose_b=True)
        wgmma_commit(b)
        for s, value in zip(slots, wgmma_wait(b, 0, acc)):
            b.store(value, s)
        with b.if_then(leader):
            mbarrier_arrive(b, self._barrier("empty", slot))

    def epilogue_thread(self) -> ir.Value:
        """The consumer's index among the consumers (the accumulator layout's thread)."""
        return opaque(self.em.b, self.em.b.zext(self.consumer_thread, I64))
