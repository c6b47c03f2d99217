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

from ..llvm.types import F32, I8, I32
from .register_staging import (RegisterStaged, i32, load_or_zero, load_run, shared_pointer,
                               store_shared_words, view_address, wide)
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
        return StructuredPlan(match_scaled_contraction(kernel), "mma.sync.m16n8k16", (128, 128, GROUP), (2, 4),
                              stages=2, resident=1, extra_bytes=256)
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


def e2m1_pair(b: ir.IRBuilder, words: list, index: int) -> ir.Value:
    """An i32 holding carrier byte `index` (of a little-endian run of i32 words)'s two e2m1
    codes as f16 bits of value · 2^-14 (low nibble in the low half): each field masked where
    it lies in its word and shifted to its place, 11 instructions (a byte extracted first,
    then each nibble, took 20)."""
    word, at = words[index // 4], 8 * (index % 4)
    pair = None
    for bits, shift in E2M1_PLACES:
        field = b.and_(word, _i32_bits(bits << at))
        placed = b.shl(field, i32(shift - at)) if shift >= at else b.lshr(field, i32(at - shift))
        pair = placed if pair is None else b.or_(pair, placed)
    return pair


def _i32_bits(bits: int) -> ir.Constant:
    """The i32 constant with these 32 bits (written signed, as LLVM's parser takes it)."""
    return i32(bits - (1 << 32) if bits >= 1 << 31 else bits)


def _rescale(b: ir.IRBuilder, word: ir.Value) -> ir.Value:
    """Two f16 of value · 2^-14 times 2^14 (`mul.rn.f16x2`, exact): the e2m1 values."""
    pair = ir.VectorType(ir.HalfType(), 2)
    scale = ir.Constant(pair, [ir.Constant(ir.HalfType(), 16384.0)] * 2)
    return b.bitcast(b.fmul(b.bitcast(word, pair), scale), I32)


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
        b = self.em.b
        row_bytes = self.plan.row_bytes
        tid = b.trunc(self.tid, I32)
        raw = [b.load(slot) for slot in self.raw]
        a_words = [_rescale(b, e2m1_pair(b, raw[0:2], j)) for j in range(8)]
        row, half = b.udiv(tid, i32(2)), b.urem(tid, i32(2))
        for piece in range(2):
            chunk = b.add(b.mul(half, i32(2)), i32(piece))
            address = b.add(self.stage_base(stage, "a"), swizzled(b, row, chunk, row_bytes))
            store_shared_words(b, address, a_words[4 * piece:4 * piece + 4])
        pairs = [e2m1_pair(b, raw[2:4], j) for j in range(8)]
        low = [b.or_(b.and_(pairs[j], i32(0xFFFF)), b.shl(pairs[j + 1], i32(16))) for j in range(0, 8, 2)]
        high = [b.or_(b.lshr(pairs[j], i32(16)), b.and_(pairs[j + 1], i32(0xFFFF0000 - (1 << 32))))
                for j in range(0, 8, 2)]
        carrier, column = b.udiv(tid, i32(16)), b.mul(b.urem(tid, i32(16)), i32(8))
        bk = self.plan.block[2]
        block = b.mul(b.udiv(column, i32(bk)), i32(bk * row_bytes))
        within = b.udiv(b.urem(column, i32(bk)), i32(8))
        for parity, words in enumerate((low, high)):
            k = b.add(b.mul(carrier, i32(2)), i32(parity))
            address = b.add(self.stage_base(stage, "b"), b.add(block, swizzled(b, k, within, row_bytes)))
            store_shared_words(b, address, [_rescale(b, w) for w in words])
        b.store(b.trunc(raw[4], I8), shared_pointer(b, b.add(self.scales_base(stage), tid), I8))
        return None

    # ---- the group's MMAs, each fragment's sum scaled into the accumulator --------------------
    def compute(self, stage: ir.Value, step: ir.Value, flag) -> None:
        """The group's MMAs fragment by fragment, each fragment's exact group sum scaled into
        the accumulator at once; when some scale pair of the thread's elements is off the
        exact path, every register's contribution is computed from the staged elements
        instead (`_contribution`), without the MMAs."""
        em = self.em
        b = em.b
        lanes = self.variant._lanes(em)
        base = self.scales_base(stage)
        # the thread's 8 rows (lines 2i + h) and 8 columns (lines 2j + r) of the tile
        rows = [self.fragment_coordinates(lanes, 16 * i + 2 * h)[0] for i in range(4) for h in range(2)]
        cols = [self.fragment_coordinates(lanes, 4 * j + r)[1] for j in range(4) for r in range(2)]
        row_codes = [self.staged_byte(b.add(base, r)) for r in rows]
        col_codes = [self.staged_byte(b.add(base, b.add(c, i32(self.plan.block[0])))) for c in cols]
        low_a, high_a, low_b, high_b = (_fold(b, codes, kind) for codes in (row_codes, col_codes)
                                        for kind in ("<", ">"))
        thread_safe = b.and_(_safe_sum(b, b.add(low_a, low_b), b.add(high_a, high_b)),
                             b.and_(b.icmp_unsigned("<=", high_a, i32(SAFE_CODE)),
                                    b.icmp_unsigned("<=", high_b, i32(SAFE_CODE))))
        # one branch for the whole warp: the fast path's mma.sync needs every lane
        vote = em.declare("llvm.nvvm.vote.all.sync", ir.IntType(1), [I32, ir.IntType(1)])
        all_safe = b.call(vote, [i32(-1), thread_safe])
        row_terms, col_terms = _scale_terms(b, row_codes, col_codes)

        def factor(step, index):        # 2^(a+b-254) as f32 bits, added in the step's asm
            fragment, register = divmod(index, 4)
            i, j = 2 * (fragment // 4) + register // 2, 2 * (fragment % 4) + register % 2
            bits = step.registers("b32", 1)[0]
            step.line(f"add.s32 {bits}, {step.operand(row_terms[i])}, {step.operand(col_terms[j])};")
            return [bits]
        with b.if_else(all_safe) as (fast, careful):
            with fast:
                self.fragments(stage, lanes, "fma.rn.f32 {0}, {1}, {3}, {2};", factor)  # acc + sum · 2^(a+b-254)
            with careful:       # rare: each register's contribution in a rolled loop, then added
                contributions = self.per_register(64, lambda index, slot: self._contribution(stage, lanes, index, slot),
                                                  "careful")
                self.add_registers(64, contributions)

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


def _scale_terms(b: ir.IRBuilder, row_codes: list, col_codes: list) -> tuple:
    """(a << 23 for each row code a, (b - 127) << 23 for each column code b): the f32 bits of
    2^(a+b-254) are their sum, one `add.s32` a register inside the step's asm (64 adds; built
    in LLVM, each was a candidate of its straight-line strength reduction, which compared
    every pair through SCEV)."""
    return ([b.shl(code, i32(23)) for code in row_codes],
            [b.shl(b.sub(code, i32(127)), i32(23)) for code in col_codes])


def _fold(b: ir.IRBuilder, values: list, kind: str) -> ir.Value:
    """The minimum ("<") or maximum (">") of unsigned i32 values."""
    result = values[0]
    for value in values[1:]:
        result = b.select(b.icmp_unsigned(kind, value, result), value, result)
    return result


def _safe_sum(b: ir.IRBuilder, low: ir.Value, high: ir.Value) -> ir.Value:
    return b.and_(b.icmp_unsigned(">=", low, i32(SAFE_SUM[0])), b.icmp_unsigned("<=", high, i32(SAFE_SUM[1])))


def _pair_safe(b: ir.IRBuilder, code_a: ir.Value, code_b: ir.Value) -> ir.Value:
    """The pair's group sum scales exactly (module docstring)."""
    total = b.add(code_a, code_b)
    return b.and_(_safe_sum(b, total, total), b.and_(b.icmp_unsigned("<=", code_a, i32(SAFE_CODE)),
                                                     b.icmp_unsigned("<=", code_b, i32(SAFE_CODE))))
