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
views' pointers, extents and strides (`launch.json` `mma.tma`) into device memory of their
own, whose address is one argument word past the kernel's own (`maps_word`: the kernel's
words are parameters, and a map must sit in global memory, 64-byte aligned, for the copy
engine to read it); a launch whose views a map cannot describe (an
unaligned row, a transposed view) runs the module's fallback entry instead: the cp.async
form, or for 8-bit operands (which only this form rewrites) the generic mapping.

8-bit operands (`convert`) are copied raw into a second ring (rows of BK bytes, unswizzled)
completing on a `raw` barrier; producer warps 1-3 then rewrite each slot for the wgmma, publish
it to the async proxy (`fence.proxy.async`) and arrive on `full`. 8-bit floats are widened to
f16 (exactly: every e4m3 and e5m2 value is an f16; `f8_widening.py`) into the f16 ring's
swizzled layout for the f16 wgmma — Hopper's own 8-bit float wgmma is not used: its
accumulation keeps fewer bits than f32, and the spec's accumulator is the declared dtype
(issue #14). Options not yet verified on a GPU (off by default; docs/gpu.md) decouple the raw
ring (`raw_stages` slots released on `raw_free` by their readers, so the copies run ahead of
the consumers), widen with all four producer warps (thread 0 copying between its widening),
widen A in the consumers' registers, widen by integer operations, or issue a converter
trip's loads before its stores (`loads_first`: verified on the H200, 0.54x torch._scaled_mm
at e4m3 4096³). For i8, A lands in place and B is transposed to the K-major rows the integer
wgmma (s8 x s8 -> s32, exact) reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ..llvm.abi import layout, slot_count
from ..llvm.types import I32, I64
from .cta import barrier, sreg
from .f8_widening import WIDENINGS, a_fragments, f16_pairs_of_f8_words, permuted_k_row
from .ptx_asm import fence_proxy_async, opaque, store_shared, wgmma_commit, wgmma_fence, wgmma_m64, wgmma_wait
from .tile_matmul import MmaPlan, TileEmitter, _ceil, _const
from .tma_asm import (F8_PAIRS, byte_permute, fence_barrier_init, load_shared_word, load_shared_words,
                      mbarrier_arrive, mbarrier_expect_bytes, mbarrier_init, mbarrier_wait, setmaxnreg,
                      store_shared_quad, tma_load_2d, warp_sync)
from .wgmma import INSTRUCTION_M, Wgmma, descriptor

WARPGROUP = 128
BOX_COLUMNS = 64            # B's box: 64 N columns (128 bytes, the widest swizzled row) by BK rows
MAP_BYTES = 128             # a CUtensorMap
RING_ALIGN = 1024
BARRIER_BYTES = 8
SM_REGISTERS = 65536
CONSUMER_REGISTERS = 232    # 128 f32 accumulators a thread and the rest (setmaxnreg: a multiple of 8)
CONVERTERS = 96             # producer threads 32..127: the 8-bit operands' conversion to f16
RAW_ROW = 64                # bytes of an 8-bit float row as copied (BK elements), unswizzled
STEP_BYTES = 32             # K bytes one wgmma reads of each row
FALLBACK_SUFFIX = "_fallback"
# raw: an 8-bit slot's copies have landed (converted next); raw_free: its readers have read it
# (decoupled rings only)
BARRIERS = ("full", "empty", "raw", "raw_free")
RAW_KINDS = ("raw", "raw_free")     # barriers of the raw ring's slots, the others the wgmma ring's


@dataclass(frozen=True)
class TmaPlan(MmaPlan):
    maps_word: int = 0      # the argument word holding the tensor maps' device address
    extra_argument_words: ClassVar[int] = 1     # that word, past the kernel's own
    fallback: MmaPlan | None = None     # the cp.async plan for views without a map (None: the generic mapping)
    # 8-bit operands copied raw and rewritten in shared memory before the wgmma: "f8e4m3fn" /
    # "f8e5m2" widened to f16 (A and B), "i8" B transposed to K-major (the integer wgmma's)
    convert: str = ""
    widen_unroll: int = 4   # 8-bit float chunks a converter has in flight (more: registers from the consumers)
    raw_stages: int = 0     # slots of the raw ring (8-bit operands; as many as the wgmma ring's unless decoupled)
    # 8-bit operands: the raw ring's slots are released by their readers (`raw_free`), not
    # with the wgmma ring's (`empty`), so the copies run ahead of the consumers (awaits the GPU)
    decoupled_rings: bool = False
    widening: str = "cvt"   # how 8-bit floats become f16 (`f8_widening.WIDENINGS`)
    widen_bytes: int = 8    # raw bytes of an 8-bit float chunk a converter widens at once (8 or 16)
    # 8-bit floats: the whole producer warpgroup widens and its thread 0 issues each K tile's
    # copies raw_stages - 1 steps ahead between its conversions (else warp 0 only copies)
    inline_copies: bool = False
    # 8-bit floats: the consumers widen their rows of A from the raw ring into the register
    # operand of the wgmma (`f8_widening.a_fragments`); the converters widen only B
    registers_a: bool = False
    # 8-bit operands: a warp arrives once on `full` and `raw_free` (its lane 0, after
    # `bar.warp.sync`), not every thread
    warp_arrivals: bool = False
    # 8-bit floats: a converter issues the shared loads of all `widen_unroll` chunks of a trip
    # before it widens and stores any, so they are in flight together (ptxas keeps a shared
    # load after a shared store it cannot tell apart from it: chunk by chunk, each load's
    # latency is paid alone)
    loads_first: bool = False

    @property
    def converters(self) -> int:
        return WARPGROUP if self.inline_copies else CONVERTERS

    @property
    def stage_bytes(self) -> int:
        """A ring slot: A and B tiles, or only B's when A comes from registers."""
        bm, bn, bk = self.block
        return self.element_bytes * bk * (bn if self.registers_a else bm + bn)

    @property
    def registers(self) -> tuple:
        """setmaxnreg's (producer, consumer) registers a thread, within the pool the CTA
        starts with (ptxas gives each thread the SM's registers / 384, a multiple of 8: 168;
        a warpgroup's increase waits until the others' decreases free enough, so asking for
        more than the pool hangs): the consumers keep their accumulators; converters widening
        more chunks at once take 8 registers a chunk (and 16 more when a trip's loads come
        first: `loads_first`)."""
        pool = SM_REGISTERS // self.threads // 8 * 8 * self.threads
        in_flight = self.widen_unroll * self.widen_bytes // 8 + (2 if self.loads_first else 0)
        consumer = CONSUMER_REGISTERS - (in_flight - 4) * 4 if self.widens else CONSUMER_REGISTERS
        consumers = self.warps[0] * WARPGROUP
        return (pool - consumers * consumer) // WARPGROUP // 8 * 8, consumer

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.warps[0])

    @property
    def widens(self) -> bool:
        return self.convert in F8_PAIRS

    @property
    def transposes(self) -> bool:
        return self.convert == "i8"

    @property
    def b_k_major(self) -> bool:
        """B staged K-major (N rows of BK): i8 after its transposition, or a 16-bit B view whose
        contiguous axis is K (a transposed view, x @ W^T), copied so by the copy engine."""
        return self.transposes or (not self.convert and self.contraction.b_axes[0] == 1)

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def raw_stage_bytes(self) -> int:
        """A slot of the operands copied raw (8-bit floats: A then B's blocks; i8: B's
        blocks), rows of BK bytes; 0 when the copies land where the wgmma reads them."""
        bm, bn, bk = self.block
        return (bm + bn) * bk if self.widens else bn * bk if self.transposes else 0

    @property
    def barriers(self) -> tuple:
        return BARRIERS if self.decoupled_rings else BARRIERS[:3] if self.convert else BARRIERS[:2]

    @property
    def dynamic_shared_bytes(self) -> int:
        """The rings, their barriers, and room to align the ring to 1024 bytes (the 128-byte
        swizzle's period, which TMA and the wgmma descriptors assume)."""
        ring = self.ring_bytes + self.raw_stages * self.raw_stage_bytes
        slots = sum(self.raw_stages if kind in RAW_KINDS else self.stages for kind in self.barriers)
        return ring + slots * BARRIER_BYTES + RING_ALIGN

    @property
    def ctas_per_sm(self) -> int:
        return 1

    @property
    def mma_dtype(self) -> str:
        """The wgmma's operand type: f16 for widened 8-bit floats, s8 for i8."""
        return "f16" if self.widens else "s8" if self.transposes else self.contraction.operand_dtype

    @property
    def copied_bytes(self) -> int:
        """Bytes of a copy element: 8-bit operands are copied as they are."""
        return 1 if self.convert else self.element_bytes

    def to_json(self) -> dict:
        bm, _, bk = self.block
        c = self.contraction
        data = super().to_json()
        data.update(shared_bytes=self.dynamic_shared_bytes, warpgroups={"producer": 1, "consumers": self.warps[0]},
                    staging=f"TMA boxes, {self.row_bytes}-byte swizzle, mbarrier ring (full/empty)")
        if self.convert:
            data["raw_stages"] = self.raw_stages
        if self.widens:
            data["widen"] = {"widening": self.widening, "chunk_bytes": self.widen_bytes, "unroll": self.widen_unroll,
                             "converters": self.converters, "decoupled_rings": self.decoupled_rings,
                             "inline_copies": self.inline_copies,
                             "registers_a": self.registers_a, "warp_arrivals": self.warp_arrivals,
                             "loads_first": self.loads_first}
            how = {"cvt": f"cvt.rn.f16x2.{F8_PAIRS[self.convert]}", "bits": "integer bit operations",
                   "mixed": "cvt and integer bit operations, alternate words"}[self.widening]
            data["convert"] = f"{self.convert} -> f16 exactly ({how}, {self.widen_bytes}-byte chunks) by " \
                              f"{self.converters} producer threads, then the f16 wgmma"
            if self.registers_a:
                data["convert"] += " (A widened by the consumers into its register operand; K permuted within a tile)"
        if self.transposes:
            data["convert"] = f"B transposed to K-major (prmt 4x4 byte blocks) by {CONVERTERS} producer threads, " \
                              "then the s8 wgmma accumulating in s32"
        a_swizzle = 0 if self.widens else self.row_bytes
        data["tma"] = {"word": self.maps_word, "element_bytes": self.copied_bytes,
                       "maps": [{"view": c.a, "inner_axis": c.a_axes[1], "outer_axis": c.a_axes[0], "box": [bk, bm],
                                 "swizzle_bytes": a_swizzle},
                                self._b_map()]}
        return data

    def _b_map(self) -> dict:
        """B's boxes: 64 N columns by BK rows, or for a K-contiguous B view BK by 64 N rows."""
        c, bk = self.contraction, self.block[2]
        swizzle = 0 if self.convert else self.row_bytes
        if self.b_k_major and not self.transposes:
            return {"view": c.b, "inner_axis": c.b_axes[0], "outer_axis": c.b_axes[1], "box": [bk, BOX_COLUMNS],
                    "swizzle_bytes": swizzle}
        return {"view": c.b, "inner_axis": c.b_axes[1], "outer_axis": c.b_axes[0], "box": [BOX_COLUMNS, bk],
                "swizzle_bytes": swizzle}

    def fallback_mapping(self, mapping):
        """The cp.async fallback's mapping (its own entry in the module, `FALLBACK_SUFFIX`)."""
        from dataclasses import replace
        assert self.fallback is not None
        return replace(mapping, threads=self.fallback.threads, mma=self.fallback)


def tma_plan(kernel, contraction, fallback: MmaPlan | None, columns: int = 256, stages: int = 4,
             widen_unroll: int = 4, raw_stages: int = 0, widening: str = "cvt", widen_bytes: int = 16,
             inline_copies: bool = False, registers_a: bool = False, warp_arrivals: bool = False,
             decoupled_rings: bool = False, loads_first: bool = True) -> TmaPlan:
    """128 x `columns` tiles of 128-byte K rows (BK = 64 16-bit elements: the 128-byte
    swizzle), two consumer warpgroups of m64n<columns>, `stages` ring slots (4 of 48 KiB for
    256 columns; 8-bit floats keep 3 beside their raw ring; i8 takes 128 columns, BK = 128,
    4 slots; A from registers leaves room for 4 slots of B); the raw ring as deep as the
    wgmma's unless `raw_stages` says; the maps' address is the word after the kernel's own.
    8-bit floats are widened by default as the H200 measured fastest (docs/gpu.md, session 7
    round 2): 16-byte chunks, 4 in flight a converter, each trip's loads first; the other
    8-bit options are off unless asked for, and the ones that read or refill the raw ring on
    their own (`inline_copies`, `registers_a`, another `raw_stages`) decouple the rings."""
    assert widening in WIDENINGS and widen_bytes in (8, 16), (widening, widen_bytes)
    words = slot_count(layout(kernel))
    operands = contraction.operand_dtype
    convert = operands if operands in F8_PAIRS or operands == "i8" else ""
    if operands == "i8":
        columns, depth = 128, 128
    else:
        depth, stages = 64, min(stages, 4 if registers_a else 3) if convert else stages
    shape = f"m64n{columns}k{32 if operands == 'i8' else 16}"
    return TmaPlan(contraction, f"wgmma.{shape}", (128, columns, depth), (2, 1), stages=stages, resident=1,
                   maps_word=words, fallback=fallback, convert=convert,
                   widen_unroll=widen_unroll, raw_stages=(raw_stages or stages) if convert else 0,
                   decoupled_rings=bool(convert) and (decoupled_rings or inline_copies or registers_a or bool(raw_stages)),
                   widening=widening, widen_bytes=widen_bytes, inline_copies=inline_copies and convert != "i8",
                   registers_a=registers_a and convert in F8_PAIRS, warp_arrivals=warp_arrivals,
                   loads_first=loads_first and convert in F8_PAIRS)


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
        # raw_free: every converter, and every consumer thread when A is read from the raw ring
        # (or each warp's lane 0: `warp_arrivals`)
        consumers_reading = plan.warps[0] * WARPGROUP if plan.registers_a else 0
        per_arrival = 32 if plan.warp_arrivals else 1
        arrivals = {"full": plan.converters // per_arrival if plan.convert else 1, "empty": plan.warps[0], "raw": 1,
                    "raw_free": (plan.converters + consumers_reading) // per_arrival}
        with b.if_then(b.icmp_unsigned("==", thread, ir.Constant(I32, 0))):
            for stage in range(max(plan.stages, plan.raw_stages)):
                for kind in plan.barriers:
                    if stage < (plan.raw_stages if kind in RAW_KINDS else plan.stages):
                        mbarrier_init(b, self._barrier(kind, ir.Constant(I32, stage)), arrivals[kind])
            fence_barrier_init(b)
        barrier(em)
        warpgroup = b.udiv(thread, ir.Constant(I32, WARPGROUP))
        em.if_then(b.icmp_unsigned("==", warpgroup, ir.Constant(I32, 0)), lambda: self._producer(thread),
                   lambda: self._consumer(thread))

    def _barrier(self, kind: str, stage: ir.Value) -> ir.Value:
        """Shared address of ring slot `stage`'s barrier of `kind` (after the rings; the raw
        ring's kinds have a barrier a raw slot)."""
        b = self.em.b
        plan = self.plan
        kinds = plan.barriers[:plan.barriers.index(kind)]
        before = sum(plan.raw_stages if other in RAW_KINDS else plan.stages for other in kinds)
        first = plan.ring_bytes + plan.raw_stages * plan.raw_stage_bytes + BARRIER_BYTES * before
        return b.add(self.shared, b.add(ir.Constant(I32, first), b.mul(stage, ir.Constant(I32, BARRIER_BYTES))))

    def stage_base(self, stage: ir.Value, operand: str) -> ir.Value:
        """As the tile emitter's, but with A from registers a slot holds only B."""
        if self.plan.registers_a and operand == "b":
            return super().stage_base(stage, "a")
        return super().stage_base(stage, operand)

    def _raw_base(self, stage: ir.Value) -> ir.Value:
        """Shared address of raw ring slot `stage` (the 8-bit operands as copied)."""
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

    def _phase(self, used: ir.Value, stages: int) -> tuple:
        """(slot, phase parity) (i32) of a ring of `stages` slots after `used` uses."""
        b = self.em.b
        return b.trunc(b.urem(used, _const(stages)), I32), b.trunc(b.and_(b.udiv(used, _const(stages)), _const(1)), I32)

    def _each_k_tile(self, body, raw: bool = False) -> None:
        """body(k tile, ring slot (i32), the slot's phase parity (i32)) for each K tile; with
        `raw`, body(k tile, (slot, parity), (raw slot, its parity), steps before this one)."""
        em = self.em
        b = em.b

        def step(kt):
            used = b.load(self.uses)
            if raw:
                body(kt, self._phase(used, self.plan.stages), self._phase(used, self.plan.raw_stages), used)
            else:
                body(kt, *self._phase(used, self.plan.stages))
            b.store(b.add(used, _const(1)), self.uses)
        em.loop(_const(0), self.k_tiles, step, name="ktile")

    # ---- producer ----------------------------------------------------------------------------
    def _producer(self, thread: ir.Value) -> None:
        em = self.em
        b = em.b
        setmaxnreg(b, self.plan.registers[0], increase=False)
        base = em.argument_word(self.plan.maps_word)
        maps = [b.add(base, _const(index * MAP_BYTES)) for index in range(2)]
        is_copier = b.icmp_unsigned("==", thread, ir.Constant(I32, 0))
        if not self.plan.convert:
            with b.if_then(is_copier):
                self._each_tile(lambda: self._each_k_tile(lambda kt, slot, parity: self._fill(maps, kt, slot, parity)))
            return
        if self.plan.inline_copies:
            self._converting(thread, lambda step: self._copy_step(maps, step, is_copier))
            return
        # 8-bit operands: thread 0 copies, warps 1-3 convert (warp 0's other lanes idle)
        first = WARPGROUP - CONVERTERS
        converter = b.sub(thread, ir.Constant(I32, first))

        def convert():
            with b.if_then(b.icmp_unsigned(">=", thread, ir.Constant(I32, first))):
                self._converting(converter)
        em.if_then(is_copier,
                   lambda: self._each_tile(lambda: self._each_k_tile(
                       lambda kt, ring, raw, _: self._fill(maps, kt, ring[0], ring[1], raw), raw=True)), convert)

    def _copy_step(self, maps: list, step: ir.Value, is_copier: ir.Value) -> None:
        """`inline_copies`: the copier's copies of this role's step `step` (i64; K tile
        step mod K tiles of the CTA's tile number step / K tiles), if the CTA has it."""
        b = self.em.b
        with b.if_then(is_copier):
            some_k = b.icmp_signed(">", self.k_tiles, _const(0))
            k_tiles = b.select(some_k, self.k_tiles, _const(1))
            tiles_m, tiles_n = self.tiles
            tile = b.add(b.zext(sreg(self.em, "ctaid.x"), I64),
                         b.mul(b.udiv(step, k_tiles), b.zext(sreg(self.em, "nctaid.x"), I64)))
            with b.if_then(b.and_(some_k, b.icmp_signed("<", tile, b.mul(tiles_m, tiles_n)))):
                self.place(tile, tiles_m, tiles_n)
                self._fill(maps, b.urem(step, k_tiles), None, None, self._phase(step, self.plan.raw_stages))

    def _fill(self, maps: list, kt: ir.Value, slot, parity, raw: tuple = ()) -> None:
        """Copy K tile `kt` where the wgmma reads it (ring slot `slot`, once the consumers
        released it; announced on `full`), or the operands to rewrite into raw ring slot
        `raw` = (slot, parity), once the converters released it (announced on `raw`: 8-bit
        floats both, i8 B while A lands in place)."""
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, bk = plan.block
        if not (plan.widens and plan.decoupled_rings):
            mbarrier_wait(em, self._barrier("empty", slot), b.xor(parity, ir.Constant(I32, 1)))
        if plan.decoupled_rings:
            mbarrier_wait(em, self._barrier("raw_free", raw[0]), b.xor(raw[1], ir.Constant(I32, 1)))
        raw_base = self._raw_base(raw[0]) if plan.convert else None
        a_base = raw_base if plan.widens else self.stage_base(slot, "a")
        b_base = b.add(raw_base, ir.Constant(I32, bm * bk)) if plan.widens else raw_base if plan.transposes else \
            self.stage_base(slot, "b")
        landed = self._barrier("raw", raw[0]) if plan.convert else self._barrier("full", slot)
        a_bytes = 0 if plan.widens else bm * bk * plan.copied_bytes
        mbarrier_expect_bytes(b, landed, plan.raw_stage_bytes + a_bytes if plan.convert else plan.stage_bytes)
        k0 = b.trunc(b.mul(kt, _const(bk)), I32)
        tma_load_2d(b, a_base, maps[0], k0, b.trunc(self.m0, I32), landed)
        n0 = b.trunc(self.n0, I32)
        for block in range(bn // BOX_COLUMNS):
            destination = b.add(b_base, ir.Constant(I32, block * bk * BOX_COLUMNS * plan.copied_bytes))
            columns = b.add(n0, ir.Constant(I32, block * BOX_COLUMNS))
            inner, outer = (k0, columns) if plan.b_k_major and not plan.transposes else (columns, k0)
            tma_load_2d(b, destination, maps[1], inner, outer, landed)

    def _converting(self, converter: ir.Value, copy_step=None) -> None:
        """Converter `converter` (0..converters-1): for each K tile, once its raw copies have
        landed, its share of the slot rewritten for the wgmma (`_widen_chunk`,
        `_transpose_block`), published to the tensor cores (`fence.proxy.async`) and announced
        on the slot's `full` barrier. `copy_step(step)` (inline copies): the copies of a
        step, issued raw_stages - 1 steps ahead (the first ones before the first step)."""
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, bk = plan.block
        rows = bn if plan.registers_a else bm + bn      # A's rows then B's blocks (B's alone)
        if plan.widens:         # `widen_bytes` raw bytes -> 16-byte chunks of f16
            items, unrolled, rewrite = rows * bk // plan.widen_bytes, plan.widen_unroll, self._widen_chunk
        else:                   # 4 x 4 bytes of B
            items, unrolled, rewrite = (bn // 4) * (bk // 4), 1, self._transpose_block
        converters = plan.converters
        per_trip = converters * unrolled

        def convert(ring, raw_ring, used):
            (slot, parity), (raw_slot, raw_parity) = ring, raw_ring
            if copy_step:
                copy_step(b.add(used, _const(plan.raw_stages - 1)))
            mbarrier_wait(em, self._barrier("raw", raw_slot), raw_parity)
            if plan.widens and plan.decoupled_rings:    # the copier does not wait for the consumers
                mbarrier_wait(em, self._barrier("empty", slot), b.xor(parity, ir.Constant(I32, 1)))
            raw, staged = self._raw_base(raw_slot), self.stage_base(slot, "a")
            if plan.registers_a:
                raw = b.add(raw, ir.Constant(I32, bm * bk))

            def trip(first):
                if plan.loads_first:
                    self._widen_loads_first(raw, staged, first, converter, items)
                    return
                for lane in range(unrolled):
                    item = b.add(b.trunc(first, I32), b.add(converter, ir.Constant(I32, lane * converters)))
                    if items % per_trip:
                        with b.if_then(b.icmp_unsigned("<", item, ir.Constant(I32, items))):
                            rewrite(raw, staged, item)
                    else:
                        rewrite(raw, staged, item)
            # a rolled loop (its trip count hidden from the unroller), `unrolled` items a trip:
            # loads in flight within the producer's registers
            em.loop(_const(0), opaque(b, _const(-(-items // per_trip))), lambda i: trip(b.mul(i, _const(per_trip))),
                    name="convert")
            fence_proxy_async(b)
            if plan.decoupled_rings:
                self._arrive(["raw_free", "full"], [raw_slot, slot])
            else:
                self._arrive(["full"], [slot])
        for step in range(plan.raw_stages - 1 if copy_step else 0):
            copy_step(_const(step))
        self._each_tile(lambda: self._each_k_tile(lambda kt, ring, raw_ring, used: convert(ring, raw_ring, used),
                                                  raw=True))

    def _transpose_block(self, raw: ir.Value, staged: ir.Value, item: ir.Value) -> None:
        """i8 B: the 4 x 4 bytes at K rows 4k.., N columns 4n.. of the raw blocks (rows of
        64 N bytes) into K-major rows n.. of BK bytes at their 128-byte-swizzled chunks."""
        b = self.em.b
        bm, bn, bk = self.plan.block
        columns4 = ir.Constant(I32, bn // 4)
        n4, k4 = b.urem(item, columns4), b.udiv(item, columns4)
        column = b.mul(n4, ir.Constant(I32, 4))
        block, within = b.udiv(column, ir.Constant(I32, BOX_COLUMNS)), b.urem(column, ir.Constant(I32, BOX_COLUMNS))
        first = b.add(raw, b.add(b.mul(block, ir.Constant(I32, bk * BOX_COLUMNS)),
                                 b.add(b.mul(k4, ir.Constant(I32, 4 * BOX_COLUMNS)), within)))
        rows = [load_shared_word(b, b.add(first, ir.Constant(I32, i * BOX_COLUMNS))) for i in range(4)]
        # byte j of row i -> byte i of column j (prmt: pairs of rows interleaved, then pairs of pairs)
        low = [byte_permute(b, rows[i], rows[i + 1], 0x5140) for i in (0, 2)]
        high = [byte_permute(b, rows[i], rows[i + 1], 0x7362) for i in (0, 2)]
        columns = [byte_permute(b, pair[0], pair[1], selector) for pair in (low, high) for selector in (0x5410, 0x7632)]
        k = b.mul(k4, ir.Constant(I32, 4))
        b_tile = b.add(staged, ir.Constant(I32, bm * self.plan.row_bytes))
        for j, word in enumerate(columns):
            n = b.add(column, ir.Constant(I32, j))
            chunk = b.xor(b.lshr(k, ir.Constant(I32, 4)), b.and_(n, ir.Constant(I32, 7)))
            offset = b.add(b.mul(n, ir.Constant(I32, self.plan.row_bytes)),
                           b.add(b.shl(chunk, ir.Constant(I32, 4)), b.and_(k, ir.Constant(I32, 15))))
            store_shared(b, b.add(b_tile, offset), word)

    def _widen_chunk(self, raw: ir.Value, staged: ir.Value, item: ir.Value) -> None:
        """w = `widen_bytes` 8-bit floats (item (64 / w) r + c: bytes wc.. of raw row r) as the
        f16 chunks of staged row r they make, each chunk j at j ^ (r mod 8) (the 128-byte swizzle)."""
        b = self.em.b
        row, column = self._row_and_column(item)
        words = load_shared_words(b, b.add(raw, b.add(b.mul(row, ir.Constant(I32, RAW_ROW)),
                                                         b.mul(column, ir.Constant(I32, self.plan.widen_bytes)))),
                                 self.plan.widen_bytes // 4)
        self._store_widened(staged, row, column, words)

    def _widen_loads_first(self, raw: ir.Value, staged: ir.Value, first: ir.Value, converter: ir.Value,
                           items: int) -> None:
        """`loads_first`: a trip's `widen_unroll` chunks (items `first` + `converter` +
        `converters` l) loaded, then each widened and stored. A raw row is `RAW_ROW / w`
        chunks, so chunk i lies at byte w i of the raw slot, and as the converters are a
        multiple of a row's chunks, chunk l of the trip is in the first one's column,
        `converters` w / RAW_ROW rows further on. Past the last item (a partial trip) a chunk
        loads the last item's bytes and stores nothing."""
        b = self.em.b
        plan = self.plan
        width = plan.widen_bytes
        per_row = RAW_ROW // width
        assert plan.converters % per_row == 0, (plan.converters, per_row)
        item = b.add(b.trunc(first, I32), converter)
        row, column = self._row_and_column(item)
        address = b.add(raw, b.mul(item, ir.Constant(I32, width)))
        partial = items % (plan.converters * plan.widen_unroll)
        chunks = []
        for lane in range(plan.widen_unroll):
            inside = b.icmp_unsigned("<", b.add(item, ir.Constant(I32, lane * plan.converters)), ir.Constant(I32, items))
            loaded = b.add(address, ir.Constant(I32, lane * plan.converters * width))
            if partial:
                loaded = b.select(inside, loaded, b.add(raw, ir.Constant(I32, (items - 1) * width)))
            words = load_shared_words(b, loaded, width // 4)
            chunks.append((b.add(row, ir.Constant(I32, lane * plan.converters // per_row)), inside, words))
        for lane_row, inside, words in chunks:
            if partial:
                with b.if_then(inside):
                    self._store_widened(staged, lane_row, column, words)
            else:
                self._store_widened(staged, lane_row, column, words)

    def _row_and_column(self, item: ir.Value) -> tuple:
        """The raw row and the column (in chunks) of chunk `item` (`_widen_chunk`)."""
        b = self.em.b
        per_row = ir.Constant(I32, RAW_ROW // self.plan.widen_bytes)
        return b.udiv(item, per_row), b.urem(item, per_row)

    def _store_widened(self, staged: ir.Value, row: ir.Value, column: ir.Value, words: list) -> None:
        """The raw `words` of raw row `row`, column `column` widened into their staged row at
        their swizzled chunks (`_widen_chunk`)."""
        b = self.em.b
        plan = self.plan
        converted = f16_pairs_of_f8_words(b, words, plan.convert, plan.widening)
        if plan.registers_a:    # B's K rows (64 a block) in the slots the A registers have
            row = b.add(b.and_(row, ir.Constant(I32, -RAW_ROW)), permuted_k_row(b, b.and_(row, ir.Constant(I32, 63))))
        first_chunk = b.mul(column, ir.Constant(I32, plan.widen_bytes // 8))
        for j in range(plan.widen_bytes // 8):
            chunk = b.add(first_chunk, ir.Constant(I32, j)) if j else first_chunk
            swizzled = b.shl(b.xor(chunk, b.and_(row, ir.Constant(I32, 7))), ir.Constant(I32, 4))
            store_shared_quad(b, b.add(staged, b.add(b.mul(row, ir.Constant(I32, 2 * RAW_ROW)), swizzled)),
                              converted[4 * j:4 * j + 4])

    # ---- consumers ---------------------------------------------------------------------------
    def _consumer(self, thread: ir.Value) -> None:
        b = self.em.b
        setmaxnreg(b, self.plan.registers[1], increase=True)
        self.consumer_thread = b.sub(thread, ir.Constant(I32, WARPGROUP))
        leader = b.icmp_unsigned("==", b.urem(thread, ir.Constant(I32, WARPGROUP)), ir.Constant(I32, 0))

        def tile():
            self.wgmma.reset(self.em, self.acc, self.plan.contraction)
            if self.plan.registers_a:
                self._each_k_tile(lambda kt, ring, raw, _: self._consume(ring[0], ring[1], leader, self._raw_a(raw)),
                                  raw=True)
            else:
                self._each_k_tile(lambda kt, slot, parity: self._consume(slot, parity, leader))
            self.wgmma.epilogue(self)
        self._each_tile(tile)

    def _raw_a(self, raw: tuple) -> list:
        """`registers_a`: once raw ring slot `raw` = (slot, parity) has landed, this thread's
        A operands of its four k16 steps (its 16 raw bytes of rows g and g + 8, widened), the
        raw slot released."""
        em, plan = self.em, self.plan
        b = em.b
        mbarrier_wait(em, self._barrier("raw", raw[0]), raw[1])
        thread = self.consumer_thread
        lane = b.urem(thread, ir.Constant(I32, 32))
        row = b.add(b.mul(b.udiv(thread, ir.Constant(I32, 32)), ir.Constant(I32, 16)), b.lshr(lane, ir.Constant(I32, 2)))
        first = b.add(self._raw_base(raw[0]), b.add(b.mul(row, ir.Constant(I32, RAW_ROW)),
                                                    b.shl(b.and_(lane, ir.Constant(I32, 3)), ir.Constant(I32, 4))))
        rows = [load_shared_words(b, b.add(first, ir.Constant(I32, 8 * RAW_ROW * i)), 4) for i in range(2)]
        self._arrive(["raw_free"], [raw[0]])
        return a_fragments(b, rows, plan.convert, plan.widening)

    def _arrive(self, kinds: list, slots: list) -> None:
        """This thread's arrival on each barrier, or (`warp_arrivals`) its warp's, once all
        of the warp's threads are here."""
        b = self.em.b
        if not self.plan.warp_arrivals:
            for kind, slot in zip(kinds, slots):
                mbarrier_arrive(b, self._barrier(kind, slot))
            return
        warp_sync(b)
        lane = b.urem(sreg(self.em, "tid.x"), ir.Constant(I32, 32))
        with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, 0))):
            for kind, slot in zip(kinds, slots):
                mbarrier_arrive(b, self._barrier(kind, slot))

    def _consume(self, slot: ir.Value, parity: ir.Value, leader: ir.Value, a_registers: list | None = None) -> None:
        """This warpgroup's 64 rows of ring slot `slot`: wgmmas over its BK (A from
        `a_registers`, one list a k16 step, where given), waited for, then the slot released
        (one arrival a warpgroup)."""
        em, plan = self.em, self.plan
        b = em.b
        c = plan.contraction
        _, bn, bk = plan.block
        mbarrier_wait(em, self._barrier("full", slot), parity)
        group = b.udiv(self.consumer_thread, ir.Constant(I32, WARPGROUP))
        row_bytes = plan.row_bytes
        a_base = b.add(self.stage_base(slot, "a"), b.mul(group, ir.Constant(I32, INSTRUCTION_M * row_bytes)))
        b_base = self.stage_base(slot, "b")
        slots = self._accumulator_slots()
        acc = [b.load(s) for s in slots]
        wgmma_fence(b)
        for kk in range(row_bytes // STEP_BYTES):     # each wgmma takes 32 bytes of K (k16 f16, k32 s8)
            a_operand = a_registers[kk] if a_registers else \
                descriptor(b, b.add(a_base, ir.Constant(I32, STEP_BYTES * kk)), 16, 8 * row_bytes, row_bytes)
            if plan.b_k_major:      # like A
                b_desc = descriptor(b, b.add(b_base, ir.Constant(I32, STEP_BYTES * kk)), 16, 8 * row_bytes, row_bytes)
            else:                   # B MN-major: 16 K rows a step
                b_desc = descriptor(b, b.add(b_base, ir.Constant(I32, 16 * kk * row_bytes)), bk * row_bytes,
                                    8 * row_bytes, row_bytes)
            acc = wgmma_m64(b, bn, plan.mma_dtype, c.acc_dtype, a_operand, b_desc, acc, transpose_b=not plan.b_k_major)
        wgmma_commit(b)
        for s, value in zip(slots, wgmma_wait(b, 0, acc)):
            b.store(value, s)
        with b.if_then(leader):
            mbarrier_arrive(b, self._barrier("empty", slot))

    def _accumulator_slots(self) -> list:
        b = self.em.b
        return [b.gep(self.acc, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True)
                for i in range(self.acc.type.pointee.count)]

    def epilogue_thread(self) -> ir.Value:
        """The consumer's index among the consumers (the accumulator layout's thread)."""
        return opaque(self.em.b, self.em.b.zext(self.consumer_thread, I64))
