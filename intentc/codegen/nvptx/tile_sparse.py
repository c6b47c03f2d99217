"""2:4 and 1:2 sparse contractions (`structured_contraction.SparseContraction`) on the MMA
mapping (docs/gpu.md, "Structured contractions"): compressed A values and their metadata
decoded in registers into dense A tiles (`register_staging.py`), B staged as it is;
f16/bf16 on `mma.sync.m16n8k16` with K steps of the IR's (32 or 64 logical positions),
f32 on the CUDA cores (`simt_matmul.py`, no TF32) with K steps of 16, four a 64-position
IR step.

Exactness (spec §7 sparse_contract: each kept value meets only the B row its metadata
selects; the IR adds each step's sum to the carried one):
- each IR step's sum starts from zero and is then added to the accumulator (the IR's
  `add %acc, %part`), so no rounding crosses the IR's own boundary;
- a dense A tile is the compressed values at their positions and zeros elsewhere; where a
  step's B tile holds no inf or NaN, the zeros add nothing (0 · finite = 0), and the
  tensor cores' sum is a reassociation of the selected products (§6);
- a step whose B tile holds an inf or NaN anywhere (the CTA ors a flag at the step's
  barrier) sums, for each output, only its selected products (fused, in K order) from the
  staged tiles and the positions' selection bits: an unselected inf never meets a zero;
- metadata outside the pattern (R7.27: 0 <= first < second < 4; one_of_two in {0, 1}) is
  the run-time check the interpreter makes; masked metadata reads the IR's fill.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir import errors
from ..llvm.emitter import CheckSite
from ..llvm.types import I32
from .register_staging import (ADD_SUM, RegisterStaged, byte_of, i32, load_run, shared_pointer,
                               wide)
from .asm_block import AsmBlock
from .simt_matmul import Simt
from .sparse_mma import plan_sparse_mma
from .tile_matmul import _ceil, _const, swizzled
from .tile_structured import StructuredPlan

TILE = 128
ELEMENT_BITS = {"f16": 16, "bf16": 16, "f32": 32}
SELECTION_BYTES = 4 * 2 * TILE        # a selection word per half row of a stage's A tile
METADATA_MESSAGES = {"one_of_two": "one_of_two metadata outside {0, 1}",
                     "two_of_four": "two_of_four metadata must satisfy 0 <= first < second < 4"}


def plan_sparse(contraction) -> StructuredPlan | None:
    """2:4 f16/bf16 with 64-position IR steps on mma.sp (`sparse_mma.py`); other f16/bf16
    (1:2, 2:4 with 32-position steps) decoded onto mma.sync, a K step the IR's (32 or 64
    positions); f32 decoded onto the CUDA cores, K steps of 16; None for other dtypes and IR steps."""
    on_sparse_cores = plan_sparse_mma(contraction)
    if on_sparse_cores is not None:
        return on_sparse_cores
    step = contraction.group * contraction.step_groups
    if contraction.group * ELEMENT_BITS.get(contraction.operand_dtype, 128) > 64:
        return None                     # (a group's dense elements are decoded in one 64-bit word)
    if contraction.operand_dtype in ("f16", "bf16") and step in (32, 64):
        return StructuredPlan(contraction, "mma.sync.m16n8k16", (TILE, TILE, step), (2, 4), stages=2, resident=1,
                              extra_bytes=SELECTION_BYTES)
    if contraction.operand_dtype == "f32" and step % 16 == 0:
        # without InstCombine: 5% faster on the H200 and less CPU to PTX; without CodeGenPrepare
        # 2% faster; with SLSR, without which it ran 3.5% slower (docs/gpu.md, "Compile pipeline")
        return StructuredPlan(contraction, "fma.f32", (TILE, TILE, 16), (8, 1), stages=2, resident=1,
                              extra_bytes=SELECTION_BYTES, rolled=True, instcombine=False, codegen_prepare=False,
                              straight_line=True)
    return None


class SparseEmitter(RegisterStaged):
    def __init__(self, em, plan: StructuredPlan, variant):
        c = plan.contraction
        self.values, self.meta, self.b_view = em.env[c.a], em.env[c.meta], em.env[c.b]
        super().__init__(em, plan, variant, self.values.shape[0], self.b_view.shape[1])
        bk = plan.block[2]
        self.half_positions = bk // 2                      # logical K a thread decodes a step
        self.half_groups = self.half_positions // c.group
        self.half_values = self.half_groups * c.kept
        self.run = 16 // plan.element_bytes                # B elements a 16-byte run
        self.runs = bk * TILE // self.run // plan.threads  # B runs a thread a step
        self.per_ir_step = c.group * c.step_groups // bk   # steps an IR step spans

    def prepare(self) -> None:
        c, eb = self.plan.contraction, self.plan.element_bytes
        self.wide_values = wide(self.em, self.values, min(16, self.half_values * eb))
        self.wide_meta = wide(self.em, self.meta, self.half_groups)
        self.wide_b = wide(self.em, self.b_view, 16)
        self.k = self.b_view.shape[0]
        extent, step, scale = c.group_stop
        self.groups_end = self.em.b.mul(_ceil(self.em.b, self.em.extent(extent), step), _const(step * scale))
        words = self.half_values * eb // 4 + max(1, self.half_groups // 4) + self.runs * 4
        self.raw = [self.em.entry_alloca(I32) for _ in range(words)]
        if self.per_ir_step > 1:
            self.step_acc = self.variant.accumulators(self.em, self.plan)
        self.site = CheckSite(c.op, errors.SPARSE_METADATA, METADATA_MESSAGES[c.pattern])

    def steps(self) -> ir.Value:
        b = self.em.b
        return b.sdiv(self.groups_end, _const(self.plan.block[2] // self.plan.contraction.group))

    # ---- raw values, metadata and B rows into registers ----------------------------------------
    def fetch(self, step: ir.Value) -> None:
        b = self.em.b
        c = self.plan.contraction
        bk = self.plan.block[2]
        tid = self.tid
        row, half = b.add(self.m0, b.udiv(tid, _const(2))), b.urem(tid, _const(2))
        inside = b.icmp_signed("<", row, self.m)
        first_group = b.add(b.mul(step, _const(bk // c.group)), b.mul(half, _const(self.half_groups)))
        first_value = b.mul(first_group, _const(c.kept))
        values = load_run(self.em, self.values, (row, first_value), inside, b.sub(self.values.shape[1], first_value),
                               self.half_values, self.wide_values)
        groups = self.meta.shape[1]
        meta = load_run(self.em, self.meta, (row, first_group), inside, b.sub(groups, first_group), self.half_groups,
                             self.wide_meta)
        meta = self._filled(meta, b.and_(inside, b.icmp_signed("<", first_group, groups)),
                            b.sub(groups, first_group))
        rows_per = TILE // self.run
        b_words = []
        for p in range(self.runs):
            run = b.add(tid, _const(p * self.plan.threads))
            k = b.add(b.mul(step, _const(bk)), b.udiv(run, _const(rows_per)))
            col = b.add(self.n0, b.mul(b.urem(run, _const(rows_per)), _const(self.run)))
            b_words += load_run(self.em, self.b_view, (k, col), b.and_(b.icmp_signed("<", k, self.k),
                                                                    b.icmp_signed("<", col, self.n)),
                                     b.sub(self.n, col), self.run, self.wide_b)
        for slot, value in zip(self.raw, (*values, *meta, *b_words)):
            b.store(value, slot)

    def _filled(self, words: list, inside: ir.Value, left: ir.Value) -> list:
        """Metadata bytes past the view (or of a row past M) replaced by the IR's fill."""
        b = self.em.b
        fill = i32(self.plan.contraction.meta_fill)
        filled = [i32(0)] * len(words)
        for j in range(self.half_groups):
            real = b.and_(inside, b.icmp_signed("<", _const(j), left))
            byte = b.select(real, byte_of(b, words, j), fill)
            filled[j // 4] = b.or_(filled[j // 4], b.shl(byte, i32(8 * (j % 4))))
        return filled

    # ---- decoded into the ring ---------------------------------------------------------------
    def deposit(self, stage: ir.Value) -> ir.Value:
        """The registers decoded and stored into the slot, one asm (`asm_block.py`): each
        group's kept values placed at their positions in a dense word of the group (an
        invalid position selects nothing, the first of two equal positions wins), the
        positions' selection bits, and B's runs; the metadata check's flag reported, and
        whether some B element is inf or NaN returned."""
        b = self.em.b
        plan, c = self.plan, self.plan.contraction
        eb = plan.element_bytes
        block = AsmBlock(b, results=[I32, I32])
        raw = [block.operand(b.load(slot)) for slot in self.raw]
        value_words = self.half_values * eb // 4
        meta_words = max(1, self.half_groups // 4)
        values, meta, b_words = raw[:value_words], raw[value_words:value_words + meta_words], \
            raw[value_words + meta_words:]
        dense_kind = "b64" if 8 * eb * c.group == 64 else "b32"
        (invalid, inside, bad), (selected,) = block.registers("pred", 3), block.registers("b32", 1)
        block.line(f"mov.pred {invalid}, 0; mov.b32 {selected}, 0;")
        words = []
        for group in range(self.half_groups):
            byte = block.registers("b32", 1)[0]
            block.line(f"bfe.u32 {byte}, {meta[group // 4]}, {8 * (group % 4)}, 8;")
            positions = block.registers("b32", len(c.fields))
            for position, (shift, mask) in zip(positions, c.fields):
                block.line(f"bfe.u32 {position}, {byte}, {shift}, 8; and.b32 {position}, {position}, "
                           f"{0xFF if mask is None else mask};")
            block.line(_invalid(bad, positions, c.pattern) + f" or.pred {invalid}, {invalid}, {bad};")
            dense = block.registers(dense_kind, 1)[0]
            block.line(f"mov.{dense_kind} {dense}, 0;")
            for slot, position in enumerate(positions):
                (value, held), (shift, bit) = block.registers(dense_kind, 2), block.registers("b32", 2)
                block.line(self._element(value, values, group * c.kept + slot, dense_kind))
                # free: no earlier value at the position; inside: a position of the group
                block.line(f"mul.lo.u32 {shift}, {position}, {8 * eb}; shr.{dense_kind} {held}, {dense}, {shift}; "
                           f"and.{dense_kind} {held}, {held}, {(1 << 8 * eb) - 1}; "
                           f"setp.eq.{dense_kind} {inside}, {held}, 0; setp.lt.and.u32 {inside}, {position}, "
                           f"{c.group}, {inside};")
                block.line(f"shl.{dense_kind} {value}, {value}, {shift}; @{inside} or.{dense_kind} {dense}, {dense}, "
                           f"{value}; add.u32 {bit}, {position}, {group * c.group}; shl.b32 {bit}, 1, {bit}; "
                           f"@{inside} or.b32 {selected}, {selected}, {bit};")
            if dense_kind == "b32":
                words.append(dense)
                continue
            low, high = block.registers("b32", 2)
            block.line(f"mov.b64 {{{low}, {high}}}, {dense};")
            words += [low, high]
        block.line(f"selp.u32 {block.result(0)}, 1, 0, {invalid};")
        tid = b.trunc(self.tid, I32)
        row, half = b.udiv(tid, i32(2)), b.urem(tid, i32(2))
        chunks = len(words) // 4
        for piece in range(chunks):
            chunk = b.add(b.mul(half, i32(chunks)), i32(piece))
            block.store_shared(b.add(self.stage_base(stage, "a"), swizzled(b, row, chunk, plan.row_bytes)),
                               words[4 * piece:4 * piece + 4])
        block.store_shared(b.add(self.extra_base(stage), b.mul(tid, i32(4))), [selected])
        self._deposit_b(stage, block, b_words)
        invalid_flag, nonfinite = block.emit()
        self.em.check(self.site, b.icmp_unsigned("!=", invalid_flag, i32(0)))
        return b.icmp_unsigned("!=", nonfinite, i32(0))

    def _element(self, register: str, words: list, index: int, kind: str) -> str:
        """PTX setting `register` (of `kind`) to compressed value `index` of the thread's run."""
        word = words[index] if self.plan.element_bytes == 4 else words[index // 2]
        widened = f"cvt.u64.u32 {register}, {word};" if kind == "b64" else f"mov.b32 {register}, {word};"
        if self.plan.element_bytes == 4:
            return widened
        return f"{widened} bfe.u{kind[1:]} {register}, {register}, {16 * (index % 2)}, 16;"

    def _deposit_b(self, stage: ir.Value, block: AsmBlock, words: list) -> None:
        """B's runs into the stage (in `block`); result 1: whether any of them holds an inf or NaN."""
        b = self.em.b
        plan = self.plan
        bk, row_bytes, chunk = plan.block[2], plan.row_bytes, plan.chunk
        tid = b.trunc(self.tid, I32)
        rows_per = TILE // self.run
        exponent, unit = EXPONENTS[plan.contraction.operand_dtype]
        (carries, carry), (nonfinite,) = block.registers("b32", 2), block.registers("pred", 1)
        block.line(f"mov.b32 {carries}, 0;")
        for p in range(self.runs):
            run = b.add(tid, i32(p * plan.threads))
            k, col = b.udiv(run, i32(rows_per)), b.mul(b.urem(run, i32(rows_per)), i32(self.run))
            columns = b.mul(b.udiv(col, i32(bk)), i32(bk * row_bytes))
            block.store_shared(b.add(self.stage_base(stage, "b"),
                                     b.add(columns, swizzled(b, k, b.udiv(b.urem(col, i32(bk)), i32(chunk)), row_bytes))),
                               words[4 * p:4 * p + 4])
            # an element's exponent bits all set (inf, NaN) carry into its sign bit
            for word in words[4 * p:4 * p + 4]:
                block.line(f"and.b32 {carry}, {word}, {exponent:#x}; add.u32 {carry}, {carry}, {unit:#x}; "
                           f"or.b32 {carries}, {carries}, {carry};")
        block.line(f"and.b32 {carries}, {carries}, {SIGNS[plan.element_bytes]:#x}; "
                   f"setp.ne.u32 {nonfinite}, {carries}, 0; selp.u32 {block.result(1)}, 1, 0, {nonfinite};")

    # ---- a step's sum into the accumulator ---------------------------------------------------
    def compute(self, stage: ir.Value, step: ir.Value, special: ir.Value) -> None:
        if self.per_ir_step == 1:
            self._mma_step(stage, special)
        else:
            self._simt_step(stage, step, special)

    def _mma_step(self, stage, special) -> None:
        b = self.em.b
        lanes = self.variant._lanes(self.em)
        with b.if_else(special) as (exact, fast):
            with fast:
                self.fragments(stage, lanes, ADD_SUM)
            with exact:
                sums = self.per_register(64, lambda index, slot: b.store(
                    self._selected_sum(stage, *self.fragment_coordinates(lanes, index)), slot), "exact")
                self.add_local(64, sums)

    def _simt_step(self, stage, step, special) -> None:
        """The CUDA cores' K step into the IR step's own sum, added to the accumulator at the
        IR step's last K step."""
        em = self.em
        b = em.b
        position = b.srem(step, _const(self.per_ir_step))
        with b.if_then(b.icmp_signed("==", position, _const(0))):
            self.variant.reset(em, self.step_acc, self.plan.contraction)
        count = self.step_acc.type.pointee.count
        with b.if_else(special) as (exact, fast):
            with fast:
                self.acc, total = self.step_acc, self.acc
                self.variant.compute(self, stage)
                self.acc = total
            with exact:
                sums = self.per_register(count, lambda index, slot: b.store(
                    self._selected_sum(stage, *self._simt_coordinates(index)), slot), "exact")
                self.add_registers(count, sums, self.step_acc)
        with b.if_then(b.icmp_signed("==", position, _const(self.per_ir_step - 1))):
            # one add a register: with four-lane adds here ptxas made 53 more moves (SASS)
            self.add_registers(count, self.step_acc, lanes=1)

    def _simt_coordinates(self, index: ir.Value) -> tuple:
        """(row, column) of the CUDA-core accumulator register `index` (row i, column j of
        the thread's 8 x 8: `Simt._offsets`)."""
        b = self.em.b
        rows, columns = Simt._offsets(b.trunc(self.tid, I32), b)
        i, j = b.udiv(index, i32(8)), b.urem(index, i32(8))
        return _pick(b, rows, i), _pick(b, columns, j)

    def _selected_sum(self, stage, row, col) -> ir.Value:
        """Σ over the stage's K of the selected products only, fused in K order."""
        em = self.em
        b = em.b
        half_positions = self.half_positions
        partial = em.entry_alloca(ir.FloatType())
        b.store(ir.Constant(ir.FloatType(), 0.0), partial)
        fma = em.declare("llvm.fma.f32", ir.FloatType(), [ir.FloatType()] * 3)
        base = self.extra_base(stage)

        def step(k64):
            k = b.trunc(k64, I32)
            word = b.add(base, b.mul(b.add(b.mul(row, i32(2)), b.udiv(k, i32(half_positions))), i32(4)))
            bits = b.load(shared_pointer(b, word, I32))
            chosen = b.icmp_unsigned("!=", b.and_(b.lshr(bits, b.urem(k, i32(half_positions))), i32(1)), i32(0))
            with b.if_then(chosen):
                product = [self.staged_a(stage, row, k), self.staged_b(stage, k, col), b.load(partial)]
                b.store(b.call(fma, product), partial)
        em.loop(_const(0), _const(self.plan.block[2]), step, name="selected")
        return b.load(partial)


def _invalid(bad: str, positions: list, pattern: str) -> str:
    """PTX setting predicate `bad` where the positions are outside the pattern (R7.27)."""
    if pattern == "one_of_two":
        return f"setp.gt.u32 {bad}, {positions[0]}, 1;"
    first, second = positions
    return f"setp.ge.u32 {bad}, {first}, {second}; setp.ge.or.u32 {bad}, {second}, 4, {bad};"


# A word's exponent bits (all ones: inf or NaN) and the unit of each element's exponent: the
# sum carries into the element's sign bit exactly when its exponent bits are all set.
EXPONENTS = {"f32": (0x7F800000, 0x00800000), "f16": (0x7C007C00, 0x04000400), "bf16": (0x7F807F80, 0x00800080)}
SIGNS = {2: 0x80008000, 4: 0x80000000}    # element bytes -> a word's sign bits


def _pick(b: ir.IRBuilder, values: list, index: ir.Value) -> ir.Value:
    result = values[0]
    for position, value in enumerate(values[1:], start=1):
        result = b.select(b.icmp_unsigned("==", index, i32(position)), value, result)
    return result
