"""The MMA mapping for structured contractions (docs/gpu.md, "Structured contractions"):
the plan of MX `scaled_contract` and 2:4 / 1:2 `sparse_contract` tiles
(`structured_contraction.py`), and the MX emitter (the sparse one: `tile_sparse.py`).

sm_90 has no MX instruction, so each K step (one group of 32 elements) every thread loads
raw carrier bytes into registers (8 bytes of A, 8 of B, one scale; `register_staging.py`),
decodes them to f16 and stores them into a ring of two shared-memory slots in the dense
mapping's swizzled layout (`tile_matmul.py`), beside the group's scales;
`mma.sync.m16n8k16` (`mma_sync.py`) then multiplies each fragment's group from zero and
the sum is scaled into the accumulator.

Exactness (spec §7, the interpreter's `scaled_contract`: decoded element times its scale,
exact, converted to f32, products and sums in f32 in any order, FMA allowed):
- an e2m1 value times 2^-14 is an f16 whose bits are the code's sign at bit 15 and its
  magnitude at bits 9-11; one `mul.rn.f16x2` by 2^14 gives the value exactly (6 at most);
- a group's products are multiples of 1/4 below 36 and its sum is below 1152: the MMA's
  f32 accumulation of the group is exact, whatever its internal order;
- for scale codes a, b ≤ 252 with 130 ≤ a + b ≤ 371, every scaled element is an exact f32,
  every product a normal f32 and the group's sum times 2^(a+b-254) an exact f32 below
  2^128: the group contributes `fma(sum, 2^(a+b-254), acc)`, exactly the f32 sum of its
  products added to the accumulator — a summation order §6 allows;
- any other pair (NaN scale 255, huge or tiny scales) takes the interpreter's own path for
  that element and group: each element times its scale rounded to f32 (overflow to inf),
  products fused into an f32 partial sum in K order, then added to the accumulator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from ..llvm.types import F32, I32
from .asm_block import AsmBlock
from .register_staging import RegisterStaged, i32, load_or_zero, load_run, view_address, wide
from .tile_matmul import MmaPlan, _const, swizzled

GROUP = 32                    # K elements a step: one MX group
SAFE_SUM = (130, 371)         # scale-code sums whose group sums scale exactly (module docstring)
SAFE_CODE = 252               # the largest code whose scaled elements are all finite
NAN_CODE = 255


@dataclass(frozen=True)
class StructuredPlan(MmaPlan):
    """The dense plan's tile, warps and ring, with `extra_bytes` a stage after the operand
    tiles (scales, selection bits). Recorded in launch.json as `mma`, with what the steps
    decode and how a step's sum joins the accumulator."""
    contraction: Any              # a ScaledContraction or SparseContraction (structured_contraction.py)
    extra_bytes: int = 0
    rolled: bool = False          # the CUDA cores' K step as a rolled loop over its 16-byte chunks (`Simt`)
    # no SLSR and NaryReassociate in code generation: ptxas gets what it strength-reduces
    # itself, for a quarter less code generation (docs/gpu.md, "Compile pipeline"; the sparse
    # f32 plan keeps them)
    straight_line: bool = False

    @property
    def stage_bytes(self) -> int:
        return super().stage_bytes + self.extra_bytes

    def to_json(self) -> dict:
        c = self.contraction
        described = {"structured": c.kind, **({"format": c.element_format, "group_size": c.group_size,
                                                "combine": "fma(group sum, 2^(a+b-254), acc) for scale codes a, b "
                                                           "<= 252 with 130 <= a+b <= 371, else the element's f32 "
                                                           "products in K order"}
                                               if c.kind == "scaled" else
                                               {"pattern": c.pattern, "step_groups": c.step_groups,
                                                "combine": "acc + (the IR step's sum); a step whose B tile holds "
                                                           "inf or NaN sums only the selected products"})}
        return {**super().to_json(), **described, **({"k_step": "rolled over 16-byte chunks"} if self.rolled else {}),
                "staging": "registers: raw bytes loaded a step ahead, decoded (exactly) to dense "
                           f"{c.operand_dtype} {self.row_bytes}-byte swizzled rows; {self.extra_bytes} bytes beside"}


def plan_structured(kernel, arch: str) -> StructuredPlan | None:
    """The plan of an MX or sparse tiled contraction, or None when `kernel` is neither."""
    from .structured_contraction import match_scaled_contraction, match_sparse_contraction
    from .tile_contraction import NoMatch
    from .tile_sparse import plan_sparse
    try:
        # without CodeGenPrepare: 1.5% faster on the H200 (docs/gpu.md, "Compile pipeline", session 11)
        return StructuredPlan(match_scaled_contraction(kernel), "mma.sync.m16n8k16", (128, 128, GROUP), (2, 4),
                              stages=2, resident=1, extra_bytes=256, codegen_prepare=False)
    except NoMatch:
        pass
    try:
        return plan_sparse(match_sparse_contraction(kernel))
    except NoMatch:
        return None


def emit_structured(em, plan: StructuredPlan) -> None:
    from .mma_sync import MmaSync
    from .simt_matmul import Simt
    from .sparse_mma import SparseMmaPlan, emit_sparse_mma
    from .tile_sparse import SparseEmitter
    if plan.contraction.kind == "scaled":
        ScaledEmitter(em, plan, MmaSync()).emit()
    elif isinstance(plan, SparseMmaPlan):
        emit_sparse_mma(em, plan)
    else:
        SparseEmitter(em, plan, Simt(plan.rolled) if plan.instruction == "fma.f32" else MmaSync()).emit()


# (bits of a carrier byte, where they go in its word of two f16): the low code's sign to
# bit 15 and magnitude to bits 9-11, the high code's to bits 31 and 25-27
E2M1_PLACES = ((0x08, 15 - 3), (0x07, 9), (0x80, 31 - 7), (0x70, 25 - 4))


def e2m1_fields(index: int) -> list:
    """(word, mask, left shift; negative: right) of each e2m1 field of carrier byte `index`
    (of a little-endian run of 32-bit words): masked where it lies in its word and shifted to
    its place in a word of two f16 of value · 2^-14 (low nibble in the low half)."""
    word, at = index // 4, 8 * (index % 4)
    return [(word, bits << at, shift - at) for bits, shift in E2M1_PLACES]


def e2m1_pair(block, words: list, index: int) -> str:
    """A register of `block` (an `AsmBlock`) holding carrier byte `index`'s two e2m1 codes
    as f16 bits of value · 2^-14 (`e2m1_fields`; 11 instructions: a byte extracted first,
    then each nibble, took 20)."""
    fields: list[str] = []
    for word, mask, shift in e2m1_fields(index):
        field = block.registers("b32", 1)[0]
        block.line(f"and.b32 {field}, {words[word]}, {mask:#010x};")
        if shift:
            block.line(f"{'shl.b32' if shift > 0 else 'shr.u32'} {field}, {field}, {abs(shift)};")
        if fields:
            block.line(f"or.b32 {fields[0]}, {fields[0]}, {field};")
        fields.append(field)
    return fields[0]


def _rescale(block, words: list) -> list:
    """Words of two f16 of value · 2^-14 times 2^14 (`mul.rn.f16x2`, exact): the e2m1 values."""
    scale = block.constant("b32", "0x74007400")         # f16 2^14, twice
    for word in words:
        block.line(f"mul.rn.f16x2 {word}, {word}, {scale};")
    return words


def _scale_value(b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """2^(code - 127) as an f32 (code 0: the subnormal 2^-127; 255: NaN), exactly e8m0."""
    normal = b.shl(code, i32(23))
    bits = b.select(b.icmp_unsigned("==", code, i32(0)), i32(0x00400000), normal)
    bits = b.select(b.icmp_unsigned("==", code, i32(NAN_CODE)), i32(0x7FC00000), bits)
    return b.bitcast(bits, F32)


class ScaledEmitter(RegisterStaged):
    """MX groups staged through registers; each fragment's group sum scaled into the
    accumulator."""

    def __init__(self, em, plan: StructuredPlan, variant):
        c = plan.contraction
        self.a_view, self.as_view = em.env[c.a], em.env[c.a_scale]
        self.b_view, self.bs_view = em.env[c.b], em.env[c.b_scale]
        self.groups = self.a_view.shape[1]
        super().__init__(em, plan, variant, self.a_view.shape[0], self.b_view.shape[2])

    def prepare(self) -> None:
        self.wide_a, self.wide_b = wide(self.em, self.a_view, 8), wide(self.em, self.b_view, 8)
        self.raw = [self.em.entry_alloca(I32) for _ in range(5)]

    def steps(self) -> ir.Value:
        return self.groups

    def scales_base(self, stage: ir.Value) -> ir.Value:
        return self.extra_base(stage)

    # ---- raw bytes into registers ------------------------------------------------------------
    def fetch(self, g: ir.Value) -> None:
        """Group g's raw bytes into this thread's registers: A row tid/2, bytes 8·(tid%2)..;
        B carrier row tid/16, columns 8·(tid%16)..; one scale (A's rows for tid < BM, then
        B's columns), code 127 past the edge."""
        b = self.em.b
        bm, _, _ = self.plan.block
        tid = self.tid
        row, half = b.add(self.m0, b.udiv(tid, _const(2))), b.urem(tid, _const(2))
        a_raw = load_run(self.em, self.a_view, (row, g, b.mul(half, _const(8))), b.icmp_signed("<", row, self.m),
                              _const(8), 8, self.wide_a)
        carrier, column = b.udiv(tid, _const(16)), b.add(self.n0, b.mul(b.urem(tid, _const(16)), _const(8)))
        b_raw = load_run(self.em, self.b_view, (g, carrier, column), b.icmp_signed("<", column, self.n),
                              b.sub(self.n, column), 8, self.wide_b)
        is_a = b.icmp_unsigned("<", tid, _const(bm))
        line = b.select(is_a, b.add(self.m0, tid), b.add(self.n0, b.sub(tid, _const(bm))))
        scale = b.select(is_a, view_address(self.em, self.as_view, (line, g)), view_address(self.em, self.bs_view, (line, g)))
        inside = b.icmp_signed("<", line, b.select(is_a, self.m, self.n))
        code = b.select(inside, b.zext(load_or_zero(self.em, scale, inside), I32), i32(127))
        for slot, value in zip(self.raw, (*a_raw, *b_raw, code)):
            b.store(value, slot)

    # ---- decoded into the ring ---------------------------------------------------------------
    def deposit(self, stage: ir.Value) -> None:
        """The raw registers decoded and stored into the slot, one asm (`asm_block.py`): A's
        row tid/2, 8 carrier bytes as 16 f16 at chunks 2·(tid%2).. of its swizzled row; B's
        carrier row tid/16, 8 columns, as two K rows (the low and the high codes) of 8 f16;
        the scale code beside."""
        b = self.em.b
        row_bytes = self.plan.row_bytes
        tid = b.trunc(self.tid, I32)
        block = AsmBlock(b)
        raw = [block.operand(b.load(slot)) for slot in self.raw]
        a_words = _rescale(block, [e2m1_pair(block, raw[0:2], j) for j in range(8)])
        row, half = b.udiv(tid, i32(2)), b.urem(tid, i32(2))
        for piece in range(2):
            chunk = b.add(b.mul(half, i32(2)), i32(piece))
            block.store_shared(b.add(self.stage_base(stage, "a"), swizzled(b, row, chunk, row_bytes)),
                               a_words[4 * piece:4 * piece + 4])
        pairs = [e2m1_pair(block, raw[2:4], j) for j in range(8)]
        # each carrier byte's low codes (K row 2c) and high codes (K row 2c + 1), by column
        low, high = block.registers("b32", 4), block.registers("b32", 4)
        for j in range(4):
            block.line(f"prmt.b32 {low[j]}, {pairs[2 * j]}, {pairs[2 * j + 1]}, 0x5410;")
            block.line(f"prmt.b32 {high[j]}, {pairs[2 * j]}, {pairs[2 * j + 1]}, 0x7632;")
        carrier, column = b.udiv(tid, i32(16)), b.mul(b.urem(tid, i32(16)), i32(8))
        bk = self.plan.block[2]
        columns = b.mul(b.udiv(column, i32(bk)), i32(bk * row_bytes))
        within = b.udiv(b.urem(column, i32(bk)), i32(8))
        for parity, words in enumerate((low, high)):
            k = b.add(b.mul(carrier, i32(2)), i32(parity))
            block.store_shared(b.add(self.stage_base(stage, "b"), b.add(columns, swizzled(b, k, within, row_bytes))),
                               _rescale(block, words))
        block.line(f"st.shared.u8 [{block.operand(b.add(self.scales_base(stage), tid))}], {raw[4]};")
        block.emit()
        return None

    # ---- the group's MMAs, each fragment's sum scaled into the accumulator --------------------
    def compute(self, stage: ir.Value, step: ir.Value, flag) -> None:
        """The group's MMAs fragment by fragment, each fragment's exact group sum scaled into
        the accumulator at once, all in one asm (`asm_block.py`) that first checks the
        thread's scale codes and skips the MMAs unless every lane's are on the exact path
        (`vote.all`: one branch for the whole warp, as mma.sync needs every lane); then, when
        it skipped them, every register's contribution is computed from the staged elements
        instead (`_contribution`)."""
        em = self.em
        b = em.b
        lanes = self.variant._lanes(em)
        step, slots = self.variant.accumulating(self, [I32])
        base = self.scales_base(stage)
        # the thread's 8 rows (lines 16i + 8h) and 8 columns (lines 8j + r) of the tile, as
        # immediate offsets from its first row and column
        row, col = self.fragment_coordinates(lanes, 0)
        row_base = step.operand(b.add(base, row))
        col_base = step.operand(b.add(base, b.add(col, i32(self.plan.block[0]))))
        row_codes, col_codes = step.registers("b32", 8), step.registers("b32", 8)
        for number, (code_a, code_b) in enumerate(zip(row_codes, col_codes)):
            step.line(f"ld.shared.u8 {code_a}, [{row_base}+{8 * number}];")
            step.line(f"ld.shared.u8 {code_b}, [{col_base}+{8 * (number // 2) + number % 2}];")
        low_a, high_a, low_b, high_b = (_fold(step, codes, kind) for codes in (row_codes, col_codes)
                                        for kind in ("min", "max"))
        (safe,), (low, high) = step.registers("pred", 1), step.registers("b32", 2)
        step.line(f"add.u32 {low}, {low_a}, {low_b}; add.u32 {high}, {high_a}, {high_b};")
        step.line(f"setp.ge.u32 {safe}, {low}, {SAFE_SUM[0]}; setp.le.and.u32 {safe}, {high}, {SAFE_SUM[1]}, {safe};")
        step.line(f"setp.le.and.u32 {safe}, {high_a}, {SAFE_CODE}, {safe}; "
                  f"setp.le.and.u32 {safe}, {high_b}, {SAFE_CODE}, {safe};")
        flag = step.result(len(slots))
        step.line(f"vote.sync.all.pred {safe}, {safe}, 0xffffffff; selp.u32 {flag}, 1, 0, {safe}; @!{safe} bra careful;")
        # 2^(a+b-254) as f32 bits: (a << 23) + ((b - 127) << 23)
        for code in row_codes:
            step.line(f"shl.b32 {code}, {code}, 23;")
        for code in col_codes:
            step.line(f"sub.u32 {code}, {code}, 127; shl.b32 {code}, {code}, 23;")

        def factor(step, index):
            fragment, register = divmod(index, 4)
            i, j = 2 * (fragment // 4) + register // 2, 2 * (fragment % 4) + register % 2
            bits = step.registers("b32", 1)[0]
            step.line(f"add.s32 {bits}, {row_codes[i]}, {col_codes[j]};")
            return [bits]
        self.variant.fragment_lines(step, self, stage, lanes, "fma.rn.f32 {0}, {1}, {3}, {2};", factor)
        step.line("careful:")
        all_safe = b.icmp_unsigned("!=", self.variant.accumulated(step, slots)[0], i32(0))
        with b.if_then(b.not_(all_safe)):
            # rare: each register's contribution in a rolled loop, then added
            contributions = self.per_register(64, lambda index, slot: self._contribution(stage, lanes, index, slot),
                                              "careful")
            self.add_local(64, contributions)

    def _contribution(self, stage, lanes, index, slot) -> None:
        """What the group adds to register `index`: its exact sum of unscaled products times
        2^(a+b-254) (an exact f32) where the scale pair is on the exact path, else the
        interpreter's sum of scaled products."""
        b = self.em.b
        row, col = self.fragment_coordinates(lanes, index)
        base = self.scales_base(stage)
        code_a = self.staged_byte(b.add(base, row))
        code_b = self.staged_byte(b.add(base, b.add(col, i32(self.plan.block[0]))))
        safe = _pair_safe(b, code_a, code_b)
        unit = i32(127)
        exact = self._exact_group(stage, row, col, b.select(safe, unit, code_a), b.select(safe, unit, code_b))
        factor = b.bitcast(b.shl(b.sub(b.add(code_a, code_b), unit), i32(23)), F32)
        b.store(b.select(safe, b.fmul(exact, factor), exact), slot)

    def _exact_group(self, stage, row, col, code_a, code_b) -> ir.Value:
        """Σ_k f32(a_k · 2^(a-127)) · f32(b_k · 2^(b-127)), products fused in K order."""
        em = self.em
        b = em.b
        scale_a, scale_b = _scale_value(b, code_a), _scale_value(b, code_b)
        partial = em.entry_alloca(F32)
        b.store(ir.Constant(F32, 0.0), partial)
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])

        def step(k64):
            k = b.trunc(k64, I32)
            a = b.fmul(self.staged_a(stage, row, k), scale_a)
            value = b.fmul(self.staged_b(stage, k, col), scale_b)
            b.store(b.call(fma, [a, value, b.load(partial)]), partial)
        em.loop(_const(0), _const(self.plan.block[2]), step, name="exact")
        return b.load(partial)


def _fold(step, registers: list, kind: str) -> str:
    """A fresh register of `step` holding the "min" or "max" of unsigned b32 `registers`."""
    result = step.registers("b32", 1)[0]
    step.line(f"{kind}.u32 {result}, {registers[0]}, {registers[1]};")
    for register in registers[2:]:
        step.line(f"{kind}.u32 {result}, {result}, {register};")
    return result


def _safe_sum(b: ir.IRBuilder, low: ir.Value, high: ir.Value) -> ir.Value:
    return b.and_(b.icmp_unsigned(">=", low, i32(SAFE_SUM[0])), b.icmp_unsigned("<=", high, i32(SAFE_SUM[1])))


def _pair_safe(b: ir.IRBuilder, code_a: ir.Value, code_b: ir.Value) -> ir.Value:
    """The pair's group sum scales exactly (module docstring)."""
    total = b.add(code_a, code_b)
    return b.and_(_safe_sum(b, total, total), b.and_(b.icmp_unsigned("<=", code_a, i32(SAFE_CODE)),
                                                     b.icmp_unsigned("<=", code_b, i32(SAFE_CODE))))
