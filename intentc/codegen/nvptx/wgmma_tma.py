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
unaligned row, a transposed view) runs the cp.async form instead (`fallback`).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..llvm.abi import layout, slot_count
from ..llvm.types import I32, I64
from .cta import barrier, sreg
from .mapping import RESIDENT_THREADS
from .ptx_asm import opaque, wgmma_commit, wgmma_fence, wgmma_m64, wgmma_wait
from .tile_matmul import MmaPlan, TileEmitter, _ceil, _const
from .tma_asm import (fence_barrier_init, mbarrier_arrive, mbarrier_expect_bytes, mbarrier_init, mbarrier_wait,
                      setmaxnreg, tma_load_2d)
from .wgmma import INSTRUCTION_M, Wgmma, descriptor

WARPGROUP = 128
BOX_COLUMNS = 64            # B's box: 64 N columns (128 bytes, the widest swizzled row) by BK rows
MAP_BYTES = 128             # a CUtensorMap
RING_ALIGN = 1024
BARRIER_BYTES = 8
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232


FALLBACK_SUFFIX = "_cp_async"


@dataclass(frozen=True)
class TmaPlan(MmaPlan):
    maps_word: int = 0      # argument word where the runtime writes the tensor maps
    fallback: MmaPlan | None = None     # the cp.async plan of launches whose views have no tensor map

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.warps[0])

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def dynamic_shared_bytes(self) -> int:
        """The ring, its barriers, and room to align the ring to 1024 bytes (the 128-byte
        swizzle's period, which TMA and the wgmma descriptors assume)."""
        return self.ring_bytes + 2 * self.stages * BARRIER_BYTES + RING_ALIGN

    @property
    def ctas_per_sm(self) -> int:
        return 1

    def to_json(self) -> dict:
        bm, _, bk = self.block
        c = self.contraction
        data = super().to_json()
        data.update(shared_bytes=self.dynamic_shared_bytes, warpgroups={"producer": 1, "consumers": self.warps[0]},
                    staging=f"TMA boxes, {self.row_bytes}-byte swizzle, mbarrier ring (full/empty)")
        data["tma"] = {"word": self.maps_word, "element_bytes": self.element_bytes, "swizzle_bytes": self.row_bytes,
                       "maps": [{"view": c.a, "inner_axis": c.a_axes[1], "outer_axis": c.a_axes[0], "box": [bk, bm]},
                                {"view": c.b, "inner_axis": c.b_axes[1], "outer_axis": c.b_axes[0],
                                 "box": [BOX_COLUMNS, bk]}]}
        if self.fallback is not None:
            data["fallback"] = {**self.fallback.to_json(), "threads": self.fallback.threads,
                                "ctas_per_sm": RESIDENT_THREADS // self.fallback.threads,
                                "dynamic_shared_bytes": self.fallback.dynamic_shared_bytes}
        return data

    def fallback_mapping(self, mapping):
        """The fallback's mapping (its own entry in the module, `FALLBACK_SUFFIX`)."""
        from dataclasses import replace
        assert self.fallback is not None
        return replace(mapping, threads=self.fallback.threads, mma=self.fallback)


def tma_plan(kernel, fallback: MmaPlan, columns: int = 256, stages: int = 4) -> TmaPlan:
    """128 x `columns` tiles of BK = 64 (the 128-byte swizzle), two consumer warpgroups of
    m64n<columns>k16, `stages` ring slots (4 of 48 KiB for 256 columns); the maps start at the first 64-byte
    aligned word after the kernel's own."""
    aligned = 64 // 8
    words = slot_count(layout(kernel))
    return TmaPlan(fallback.contraction, f"wgmma.m64n{columns}k16", (128, columns, 64), (2, 1), stages=stages,
                   resident=1, maps_word=-(-words // aligned) * aligned, fallback=fallback)


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
        with b.if_then(b.icmp_unsigned("==", thread, ir.Constant(I32, 0))):
            for stage in range(plan.stages):
                mbarrier_init(b, self._barrier("full", ir.Constant(I32, stage)), 1)
                mbarrier_init(b, self._barrier("empty", ir.Constant(I32, stage)), plan.warps[0])
            fence_barrier_init(b)
        barrier(em)
        warpgroup = b.udiv(thread, ir.Constant(I32, WARPGROUP))
        em.if_then(b.icmp_unsigned("==", warpgroup, ir.Constant(I32, 0)), lambda: self._producer(thread),
                   lambda: self._consumer(thread))

    def _barrier(self, kind: str, stage: ir.Value) -> ir.Value:
        b = self.em.b
        first = self.plan.ring_bytes + (0 if kind == "full" else self.plan.stages * BARRIER_BYTES)
        return b.add(self.shared, b.add(ir.Constant(I32, first), b.mul(stage, ir.Constant(I32, BARRIER_BYTES))))

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
        with b.if_then(b.icmp_unsigned("==", thread, ir.Constant(I32, 0))):
            self._each_tile(lambda: self._each_k_tile(lambda kt, slot, parity: self._fill(maps, kt, slot, parity)))

    def _fill(self, maps: list, kt: ir.Value, slot: ir.Value, parity: ir.Value) -> None:
        """Wait until the consumers released ring slot `slot`, then copy K tile `kt` into it."""
        em, plan = self.em, self.plan
        b = em.b
        _, bn, bk = plan.block
        mbarrier_wait(em, self._barrier("empty", slot), b.xor(parity, ir.Constant(I32, 1)))
        full = self._barrier("full", slot)
        mbarrier_expect_bytes(b, full, plan.stage_bytes)
        k0 = b.trunc(b.mul(kt, _const(bk)), I32)
        tma_load_2d(b, self.stage_base(slot, "a"), maps[0], k0, b.trunc(self.m0, I32), full)
        b_base, n0 = self.stage_base(slot, "b"), b.trunc(self.n0, I32)
        for block in range(bn // BOX_COLUMNS):
            destination = b.add(b_base, ir.Constant(I32, block * bk * plan.row_bytes))
            tma_load_2d(b, destination, maps[1], b.add(n0, ir.Constant(I32, block * BOX_COLUMNS)), k0, full)

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
            acc = wgmma_m64(b, bn, c.operand_dtype, c.acc_dtype, a_desc, b_desc, acc, transpose_b=True)
        wgmma_commit(b)
        for s, value in zip(slots, wgmma_wait(b, 0, acc)):
            b.store(value, s)
        with b.if_then(leader):
            mbarrier_arrive(b, self._barrier("empty", slot))

    def epilogue_thread(self) -> ir.Value:
        """The consumer's index among the consumers (the accumulator layout's thread)."""
        return opaque(self.em.b, self.em.b.zext(self.consumer_thread, I64))
