"""2:4 sparse contractions (f16 / bf16) on the sparse tensor cores: `mma.sp.m16n8k32`
(docs/gpu.md, "Structured contractions").

A K step is the IR's (64 logical positions: 16 groups, 32 compressed values a row). Each
step a `stages`-deep ring slot receives, by `cp.async` (the dense mapping's copies,
`tile_matmul.py`), the compressed values of the CTA's 128 rows (64-byte swizzled rows: the
compressed 16 x 16 tile of an m16n8k32 is an ordinary ldmatrix.x4 A fragment) and the 64 B
rows of its 128 columns (128-byte swizzled rows, read by ldmatrix.x4.trans: an m16n8k32 B
fragment is two m16n8k16 ones). The metadata travels through registers one step ahead: a
thread loads its row's 8 bytes (one m16n8k32's groups), checks them (R7.27), re-encodes
them (`encode_groups`) and stores the 2-bit index pairs where `mma.sp` reads them.

Metadata re-encoding (PTX ISA, "Sparse matrix storage", m16n8k32 .f16/.bf16): a group's
two positions are the nibble `first | second << 2` (0b0100, 0b1000, 0b1001, 0b1100, 0b1101,
0b1110 for 0 <= first < second < 4: exactly the valid records), four groups (16 logical
positions) to 16 bits, lowest group lowest. With sparsity selector 0 the lane pair
T0, T1 of each quad supplies the metadata of rows g and g + 8 (g = lane / 4): lane T_c
(c = lane % 2) holds row g's 16 bits of positions 16c .. 16c + 15 in its low half and row
g + 8's in its high half (T2, T3 hold the same words and are not read).

Numerics (spec §7 sparse_contract: each kept value meets only the B row its metadata
selects; other positions are additive zeros): `mma.sp` reads, for each group, only the
two B rows the metadata names, so an unselected inf or NaN in B is never multiplied (the
dense decoding needed an exact path for it; `test_sparse_unselected_infinities_change_nothing`
checks it on the H200). Each IR step's sum starts from zero (two chained m16n8k32 MMAs, a
reassociation of the step's products, §6) and is then added to the accumulator, as the
IR's `add %acc, %part` says: no contract-add fusion (§5.3 covers ordinary contracts only).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...ir import errors
from ..llvm.emitter import CheckSite
from ..llvm.types import I32, I64
from .cta import barrier, sreg
from .mma_sync import MmaSync
from .ptx_asm import cp_async, cp_async_commit, cp_async_wait
from .register_staging import ADD_SUM, i32, load_run, wide
from .asm_block import AsmBlock
from .tile_matmul import COPY_BYTES, Operand, TileEmitter, _ceil, _const, _pieces, swizzled
from .tile_structured import StructuredPlan

VALUES_A_ROW = 32         # compressed values of a row a step (64 logical positions)
VALUE_ROW_BYTES = 64      # a staged row of them
GROUPS_A_MMA = 8          # groups of an m16n8k32 row
FRAGMENTS = 4             # m16n8 fragments a warp along M and along N (mma_sync.py's warp tile)
BYTES = 0x01010101        # a byte's value in every byte of a word


@dataclass(frozen=True)
class SparseMmaPlan(StructuredPlan):
    """A stage holds the compressed A tile, the B tile and the re-encoded metadata (4 bits
    a group)."""

    @property
    def value_bytes(self) -> int:
        return self.element_bytes * self.block[0] * VALUES_A_ROW

    @property
    def stage_bytes(self) -> int:
        _, bn, bk = self.block
        return self.value_bytes + self.element_bytes * bk * bn + self.extra_bytes

    def to_json(self) -> dict:
        c = self.contraction
        return {**super().to_json(),
                "combine": "acc + (the IR step's sum: two chained mma.sp from zero)",
                "metadata": "2-bit index pairs (first | second << 2), 16 positions a half word, "
                            "lanes T0/T1 of a quad: rows g, g + 8 (sparsity selector 0)",
                "staging": f"cp.async: compressed {c.operand_dtype} A in {VALUE_ROW_BYTES}-byte and B in "
                           f"{self.row_bytes}-byte swizzled rows; metadata through registers, a step ahead, "
                           f"checked and re-encoded ({self.extra_bytes} bytes a stage)"}


def plan_sparse_mma(contraction) -> SparseMmaPlan | None:
    """2:4 f16/bf16 with the IR's K step of 64 positions; None otherwise."""
    if contraction.pattern != "two_of_four" or contraction.operand_dtype not in ("f16", "bf16") or \
            contraction.group * contraction.step_groups != 64:
        return None
    # without InstCombine and CodeGenPrepare: as fast on the H200, less CPU to PTX (docs/gpu.md)
    return SparseMmaPlan(contraction, "mma.sp.m16n8k32", (128, 128, 64), (2, 4), stages=4, resident=1,
                         extra_bytes=128 * 16 // 2, instcombine=False, codegen_prepare=False)


def encode_groups(block, word: str, fields: tuple) -> tuple:
    """PTX in `block` (an `AsmBlock`) turning four metadata bytes in register `word` (one a
    group, lowest group in the low byte) into (a register holding mma.sp's 16 bits: nibble
    first | second << 2 a group, lowest group lowest; a register that is non-zero where some
    group is outside 0 <= first < second < 4). Each byte is a lane of the word: masks keep
    fields in it."""
    (shift_1, mask_1), (shift_2, mask_2) = fields
    first, second, low_first, low_second, invalid, ordered = block.registers("b32", 6)
    block.line(f"shr.u32 {first}, {word}, {shift_1}; "
               f"and.b32 {first}, {first}, {BYTES * ((0xFF if mask_1 is None else mask_1) & 0xFF >> shift_1):#x};")
    block.line(f"shr.u32 {second}, {word}, {shift_2}; "
               f"and.b32 {second}, {second}, {BYTES * ((0xFF if mask_2 is None else mask_2) & 0xFF >> shift_2):#x};")
    block.line(f"or.b32 {invalid}, {first}, {second}; and.b32 {invalid}, {invalid}, {BYTES * 0xFC:#x};")
    block.line(f"and.b32 {low_first}, {first}, {BYTES * 3:#x}; and.b32 {low_second}, {second}, {BYTES * 3:#x};")
    # 4 + second - first - 1 a byte (0 .. 6, no borrow): bit 2 is set exactly when first < second
    block.line(f"or.b32 {ordered}, {low_second}, {BYTES * 4:#x}; sub.u32 {ordered}, {ordered}, {low_first}; "
               f"sub.u32 {ordered}, {ordered}, {BYTES:#x}; not.b32 {ordered}, {ordered}; "
               f"and.b32 {ordered}, {ordered}, {BYTES * 4:#x}; or.b32 {invalid}, {invalid}, {ordered};")
    # nibbles first | second << 2, then a byte's nibble pair packed down to 16 bits
    block.line(f"shl.b32 {low_second}, {low_second}, 2; or.b32 {first}, {low_first}, {low_second}; "
               f"shr.u32 {second}, {first}, 4; or.b32 {first}, {first}, {second}; and.b32 {first}, {first}, 0x00ff00ff; "
               f"shr.u32 {second}, {first}, 8; or.b32 {first}, {first}, {second}; and.b32 {first}, {first}, 0xffff;")
    return first, invalid


def _mma_sp_text(operand: str):
    """One mma.sp.m16n8k32 for `AsmBlock.chain`: D = A·B + C on one warp, A 16 x 32 2:4-sparse
    (4 b32 of compressed values), B 32 x 8 (4 b32), C/D 4 f32, then the metadata from lanes
    T0, T1 of each quad (selector 0)."""
    def text(d: str, operands: list, c: str) -> str:
        return (f"mma.sp.sync.aligned.m16n8k32.row.col.f32.{operand}.{operand}.f32 {{{d}}}, "
                f"{{{', '.join(operands[:4])}}}, {{{', '.join(operands[4:8])}}}, {{{c}}}, {operands[8]}, 0x0;")
    return text


class SparseMmaEmitter(TileEmitter):
    """The dense mapping's tile walk, copies and epilogue; A is the compressed values view
    (K: its columns, 32 a step), B is staged as it is (K: its rows, 64 a step)."""
    plan: SparseMmaPlan

    def __init__(self, em, plan: SparseMmaPlan):
        c = plan.contraction
        self.em, self.plan, self.variant = em, plan, MmaSync()
        self.a = Operand(em.env[c.a], 0, 1)
        self.b_op = Operand(em.env[c.b], 0, 1)
        self.meta = em.env[c.meta]
        self.c_view = em.env[c.c]
        self.m, self.n = self.a.extent("row"), self.b_op.extent("column")
        from .tile_sparse import METADATA_MESSAGES     # (tile_sparse plans through this module)
        self.site = CheckSite(c.op, errors.SPARSE_METADATA, METADATA_MESSAGES[c.pattern])

    def k_extent(self, operand: Operand) -> ir.Value:
        return operand.extent("column" if operand is self.a else "row")

    def k_per_tile(self, operand: Operand) -> int:
        return VALUES_A_ROW if operand is self.a else self.plan.block[2]

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, _ = plan.block
        c = plan.contraction
        self.shared = self._shared_memory()
        self.tid = b.zext(sreg(em, "tid.x"), I64)
        # 16-byte copies where rows allow them, else element by element: the 8- and 4-byte
        # copies of the dense mapping would double the code of six copies a thread
        self.a.pieces = _pieces(b, self.a, plan.element_bytes)[:1]
        self.b_op.pieces = _pieces(b, self.b_op, plan.element_bytes)[:1]
        self.c_pairs = self._pairs()
        self.wide_meta = wide(em, self.meta, GROUPS_A_MMA)
        extent, step, scale = c.group_stop
        groups = b.mul(_ceil(b, em.extent(extent), step), _const(step * scale))
        self.k_tiles = b.sdiv(groups, _const(c.step_groups))
        self.raw_meta = [em.entry_alloca(I32) for _ in range(2)]
        tiles_m, tiles_n = _ceil(b, self.m, bm), _ceil(b, self.n, bn)
        self.acc = self.variant.accumulators(em, plan)
        start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)
        em.loop(start, b.mul(tiles_m, tiles_n), lambda tile: self._tile(tile, tiles_m, tiles_n), stride, name="tile")

    def stage_base(self, stage: ir.Value, operand: str) -> ir.Value:
        """Shared address of the stage's compressed A ("a"), B ("b") or metadata ("meta")."""
        b = self.em.b
        plan = self.plan
        base = b.add(self.shared, b.mul(stage, i32(plan.stage_bytes)))
        offset = {"a": 0, "b": plan.value_bytes, "meta": plan.stage_bytes - plan.extra_bytes}[operand]
        return b.add(base, i32(offset))

    # ---- the K loop: copies as the dense mapping's, metadata a step ahead in registers ----
    def _k_loop(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        copies = self._copies(self.tid)
        bm, bn, _ = plan.block
        self.tile_inside = b.and_(b.and_(b.icmp_signed("<=", b.add(self.m0, _const(bm)), self.m),
                                         b.icmp_signed("<=", b.add(self.n0, _const(bn)), self.n)),
                                  b.and_(self.a.pieces[0][1], self.b_op.pieces[0][1]))
        with b.if_then(b.icmp_signed(">", self.k_tiles, _const(0))):
            self._fetch_metadata(_const(0))
        # from -lookahead: the first trips only fill the ring, so the staging code is emitted once
        em.loop(_const(-plan.lookahead), self.k_tiles, lambda kt: self._k_step(kt, copies), name="ktile")
        cp_async_wait(b, 0)

    def _k_step(self, kt: ir.Value, copies: list) -> None:
        b = self.em.b
        cp_async_wait(b, self.plan.lookahead - 1)
        barrier(self.em)
        self._stage_in(b.add(kt, _const(self.plan.lookahead)), copies)
        with b.if_then(b.icmp_signed(">=", kt, _const(0))):
            self._compute(b.urem(b.trunc(kt, I32), i32(self.plan.stages)))

    def _stage_in(self, tile: ir.Value, copies: list) -> None:
        """K tile `tile` into its ring slot: the copies, and the metadata fetched a step ago
        (its latency is behind us) checked and re-encoded; then the next tile's metadata
        fetched. One commit group a call, empty past the last tile."""
        b = self.em.b
        with b.if_then(b.icmp_signed("<", tile, self.k_tiles)):
            slot = b.urem(b.trunc(tile, I32), i32(self.plan.stages))
            self._load(copies, tile, slot)
            self._deposit_metadata(slot)
            with b.if_then(b.icmp_signed("<", b.add(tile, _const(1)), self.k_tiles)):
                self._fetch_metadata(b.add(tile, _const(1)))
        cp_async_commit(b)

    def _load(self, copies: list, kt: ir.Value, stage: ir.Value) -> None:
        """K tile `kt`'s copies: whole 16-byte copies where the tile and its K step lie inside
        every view and the rows allow them (the steps of all but the edge tiles), else the
        dense mapping's clamped copies."""
        b = self.em.b
        inside = self.tile_inside
        for operand in (self.a, self.b_op):
            end = b.mul(b.add(kt, _const(1)), _const(self.k_per_tile(operand)))
            inside = b.and_(inside, b.icmp_signed("<=", end, self.k_extent(operand)))
        with b.if_else(inside) as (whole, edge):
            with whole:
                for operand, destination, source, _, _ in copies:
                    along = operand.column_axis if operand is self.a else operand.row_axis
                    step = b.mul(b.mul(kt, _const(self.k_per_tile(operand))), operand.view.strides[along])
                    target = b.add(self.stage_base(stage, "a" if operand is self.a else "b"), destination)
                    cp_async(b, target, b.gep(source, [step]), i32(COPY_BYTES))
            with edge:
                super()._load(copies, kt, stage)

    def _fetch_metadata(self, kt: ir.Value) -> None:
        """Thread t's 8 metadata bytes of step kt (row t / 2, groups 8·(t % 2) ..), the IR's
        fill where the read is masked (a row past M, a group past the view)."""
        em = self.em
        b = em.b
        c = self.plan.contraction
        row = b.add(self.m0, b.udiv(self.tid, _const(2)))
        first = b.add(b.mul(kt, _const(c.step_groups)), b.mul(b.urem(self.tid, _const(2)), _const(GROUPS_A_MMA)))
        left = b.sub(self.meta.shape[1], first)
        inside = b.icmp_signed("<", row, self.m)
        words = load_run(em, self.meta, (row, first), inside, left, GROUPS_A_MMA, self.wide_meta)
        # bytes past the view's groups or of a row past M take the fill
        kept = b.select(inside, b.select(b.icmp_signed("<", left, _const(0)), _const(0), left), _const(0))
        kept_bits = b.mul(b.select(b.icmp_signed(">", kept, _const(GROUPS_A_MMA)), _const(GROUPS_A_MMA), kept), _const(8))
        ones = ir.Constant(I64, -1)
        keep = b.select(b.icmp_signed("<", kept_bits, _const(64)), b.xor(b.shl(ones, kept_bits), ones), ones)
        both = b.or_(b.zext(words[0], I64), b.shl(b.zext(words[1], I64), _const(32)))
        fill = ir.Constant(I64, (BYTES | BYTES << 32) * c.meta_fill)
        both = b.or_(b.and_(both, keep), b.and_(fill, b.xor(keep, ones)))
        for slot, value in zip(self.raw_meta, (b.trunc(both, I32), b.trunc(b.lshr(both, _const(32)), I32))):
            b.store(value, slot)

    def _deposit_metadata(self, slot: ir.Value) -> None:
        """The fetched bytes checked and re-encoded into the slot: half word (row r, half h of
        its 16 bits of k32 block kk) at word ((kk·8 + r / 16)·2 + h)·8 + r % 8, the low half
        for rows r % 16 < 8: one 32-bit load gives a lane its register, the 16 words a warp
        reads in 16 banks."""
        em = self.em
        b = em.b
        tid = b.trunc(self.tid, I32)
        row, kk = b.udiv(tid, i32(2)), b.urem(tid, i32(2))
        fields = self.plan.contraction.fields
        block = AsmBlock(b, results=[I32])
        flags = block.registers("b32", 1)[0]
        block.line(f"mov.b32 {flags}, 0;")
        for half, slot_word in enumerate(self.raw_meta):
            bits, bad = encode_groups(block, block.operand(b.load(slot_word)), fields)
            block.line(f"or.b32 {flags}, {flags}, {bad};")
            word = b.add(b.mul(b.add(b.mul(b.add(b.mul(kk, i32(8)), b.udiv(row, i32(16))), i32(2)), i32(half)), i32(8)),
                         b.urem(row, i32(8)))
            address = b.add(b.add(self.stage_base(slot, "meta"), b.mul(word, i32(4))),
                            b.mul(b.udiv(b.urem(row, i32(16)), i32(8)), i32(2)))
            block.line(f"st.shared.b16 [{block.operand(address)}], {bits};")
        block.line(f"mov.b32 {block.result(0)}, {flags};")
        invalid = b.icmp_unsigned("!=", block.emit()[0], i32(0))
        em.check(self.site, invalid)

    # ---- a step: per 16-row block, two chained mma.sp a fragment from zero, then added ----
    def _compute(self, stage: ir.Value) -> None:
        """The step as one asm (`asm_block.py`): per 16-row block i, its metadata and compressed
        values loaded, then each fragment (i, j)'s sum of two chained mma.sp from zero added
        into its accumulator."""
        em = self.em
        b = em.b
        c = self.plan.contraction
        lanes = self.variant._lanes(em)
        warp_m, _, lane = lanes
        halves = self.plan.block[2] // 32
        slots = [self.variant._slot(b, self.acc, e) for e in range(FRAGMENTS * FRAGMENTS * 4)]
        step = AsmBlock(b, [b.load(slot) for slot in slots])
        b_starts = self.variant.b_addresses(self, stage, lanes)
        row_bytes = self.plan.row_bytes
        b_frags = [[first + second for first, second in zip(self.variant.b_fragments(step, b_starts, 2 * kk, row_bytes),
                                                             self.variant.b_fragments(step, b_starts, 2 * kk + 1, row_bytes))]
                   for kk in range(halves)]
        lane_word = b.add(b.udiv(lane, i32(4)), b.mul(b.urem(lane, i32(2)), i32(8)))
        # block i, k32 block kk: word kk·128 + (warp_m·FRAGMENTS + i)·16 past the warp's
        meta_base = step.operand(b.add(b.add(self.stage_base(stage, "meta"), b.mul(lane_word, i32(4))),
                                       b.mul(warp_m, i32(FRAGMENTS * 16 * 4))))
        text = _mma_sp_text(c.operand_dtype)
        a_starts = self._a_addresses(stage, lanes)
        for i in range(FRAGMENTS):
            a_frags, metadata = [], []
            for kk in range(halves):
                word = step.registers("b32", 1)[0]
                step.line(f"ld.shared.b32 {word}, [{meta_base}+{(kk * 8 * 16 + i * 16) * 4}];")
                metadata.append(word)
                a_frags.append(step.ldmatrix_x4(a_starts[kk], transpose=False, offset=16 * i * VALUE_ROW_BYTES))
            for j in range(FRAGMENTS):
                registers = range((i * FRAGMENTS + j) * 4, (i * FRAGMENTS + j + 1) * 4)
                sums = step.registers("f32", 4)
                step.chain(text, [[*a_frags[kk], *b_frags[kk][j], metadata[kk]] for kk in range(halves)], sums,
                           [step.zero()] * 4)
                for r, total in zip(registers, sums):
                    step.line(ADD_SUM.format(step.result(r), total, step.accumulator(r)))
        for slot, value in zip(slots, step.emit()):
            b.store(value, slot)

    def _a_addresses(self, stage: ir.Value, lanes: tuple) -> list:
        """The shared address of the warp's first compressed 16 x 16 block's `ldmatrix.x4` at
        each k32 block (row 16·i + r swizzles as row r: block i is an immediate offset)."""
        b = self.em.b
        warp_m, _, lane = lanes
        row = b.add(b.mul(warp_m, i32(16 * FRAGMENTS)), b.urem(lane, i32(16)))
        base = self.stage_base(stage, "a")
        return [b.add(base, swizzled(b, row, b.add(i32(2 * kk), b.udiv(lane, i32(16))), VALUE_ROW_BYTES))
                for kk in range(self.plan.block[2] // 32)]

    # ---- copies: the values' 4 chunks a row, B's 16 chunks a row ------------------------------
    def _geometry(self, tid: ir.Value) -> list:
        """(operand, row, column, destination) of each 16-byte copy of K tile 0."""
        b = self.em.b
        bm, bn, bk = self.plan.block
        threads, chunk = self.plan.threads, self.plan.chunk
        per_a, per_b = VALUES_A_ROW // chunk, bn // chunk
        copies = []
        for index in range(bm * per_a // threads):
            number = b.add(tid, _const(index * threads))
            row, column = b.udiv(number, _const(per_a)), b.urem(number, _const(per_a))
            destination = swizzled(b, b.trunc(row, I32), b.trunc(column, I32), VALUE_ROW_BYTES)
            copies.append((self.a, b.add(self.m0, row), b.mul(column, _const(chunk)), destination))
        for index in range(bk * per_b // threads):
            number = b.add(tid, _const(index * threads))
            row, column = b.udiv(number, _const(per_b)), b.urem(number, _const(per_b))
            block, within = b.udiv(column, _const(bk // chunk)), b.urem(column, _const(bk // chunk))
            destination = b.add(b.mul(b.trunc(block, I32), i32(bk * self.plan.row_bytes)),
                                swizzled(b, b.trunc(row, I32), b.trunc(within, I32), self.plan.row_bytes))
            copies.append((self.b_op, row, b.add(self.n0, b.mul(column, _const(chunk))), destination))
        return copies


def emit_sparse_mma(em, plan: SparseMmaPlan) -> None:
    SparseMmaEmitter(em, plan).emit()
