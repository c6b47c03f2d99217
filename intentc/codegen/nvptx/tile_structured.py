"""The MMA mapping for structured contractions (docs/gpu.md, "Structured contractions"):
an MX `scaled_contract` (`structured_contraction.py`) on the tensor cores.

sm_90 has no MX instruction, so each K step (one group of 32 elements) every thread loads
raw carrier bytes into registers (8 bytes of A, 8 of B, one scale), decodes them to f16 in
registers and stores them into a shared-memory ring of two slots in the dense mapping's
swizzled layout (`tile_matmul.py`), beside the group's scales; `mma.sync.m16n8k16`
(`mma_sync.py`) then multiplies the group into a fresh f32 fragment. The next group's bytes
are loaded before the MMAs, so their latency hides behind them.

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

from llvmlite import ir

from ..llvm.types import F32, I8, I16, I32, I64
from .cta import barrier, sreg
from .ptx_asm import asm, mma_m16n8k16
from .tile_matmul import MmaPlan, TileEmitter, _ceil, _const, swizzled

GROUP = 32                    # K elements a step: one MX group
SAFE_SUM = (130, 371)         # scale-code sums whose group sums scale exactly (module docstring)
SAFE_CODE = 252               # the largest code whose scaled elements are all finite
NAN_CODE = 255


@dataclass(frozen=True)
class StructuredPlan(MmaPlan):
    """The dense plan's tile, warps and ring, plus the per-stage scales after the operand
    tiles. Recorded in launch.json as `mma`, with what the steps decode."""

    @property
    def scale_bytes(self) -> int:
        return self.block[0] + self.block[1]

    @property
    def stage_bytes(self) -> int:
        return MmaPlan.stage_bytes.fget(self) + self.scale_bytes

    def to_json(self) -> dict:
        c = self.contraction
        return {**super().to_json(), "structured": c.kind, "format": c.element_format, "group_size": c.group_size,
                "staging": "registers: raw bytes loaded a group ahead, decoded to f16 (exact), stored to "
                           f"{self.row_bytes}-byte swizzled rows; scales beside them",
                "combine": "fma(group sum, 2^(a+b-254), acc) for scale codes a, b <= 252 with 130 <= a+b <= 371, "
                           "else the element's f32 products in K order"}


def plan_structured(kernel, arch: str) -> StructuredPlan | None:
    """The tensor-core plan of an MX contraction, or None when `kernel` is not one."""
    from .structured_contraction import match_scaled_contraction
    from .tile_contraction import NoMatch
    try:
        contraction = match_scaled_contraction(kernel)
    except NoMatch:
        return None
    return StructuredPlan(contraction, "mma.sync.m16n8k16", (128, 128, GROUP), (2, 4), stages=2, resident=1)


def emit_structured(em, plan: StructuredPlan) -> None:
    from .mma_sync import MmaSync
    ScaledEmitter(em, plan, MmaSync()).emit()


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _store_shared_v4(b: ir.IRBuilder, address: ir.Value, words: list) -> None:
    asm(b, "st.shared.v4.b32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r,~{memory}", ir.VoidType(), [address, *words])


def _shared_pointer(b: ir.IRBuilder, address: ir.Value, type_: ir.Type) -> ir.Value:
    return b.inttoptr(address, type_.as_pointer(3))


def _e2m1_pair(b: ir.IRBuilder, byte: ir.Value) -> ir.Value:
    """An i32 holding a carrier byte's two e2m1 codes as f16 bits of value · 2^-14 (low
    nibble in the low half): sign to bit 15, magnitude to bits 9-11."""
    def half(nibble):
        return b.or_(b.shl(b.and_(nibble, _i32(8)), _i32(12)), b.shl(b.and_(nibble, _i32(7)), _i32(9)))
    return b.or_(half(b.and_(byte, _i32(15))), b.shl(half(b.lshr(byte, _i32(4))), _i32(16)))


def _rescale(b: ir.IRBuilder, word: ir.Value) -> ir.Value:
    """Two f16 of value · 2^-14 times 2^14 (`mul.rn.f16x2`, exact): the e2m1 values."""
    pair = ir.VectorType(ir.HalfType(), 2)
    scale = ir.Constant(pair, [ir.Constant(ir.HalfType(), 16384.0)] * 2)
    return b.bitcast(b.fmul(b.bitcast(word, pair), scale), I32)


def _byte(b: ir.IRBuilder, raw: ir.Value, index: int) -> ir.Value:
    return b.and_(b.trunc(b.lshr(raw, ir.Constant(I64, 8 * index)), I32), _i32(255))


def _scale_value(b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """2^(code - 127) as an f32 (code 0: the subnormal 2^-127; 255: NaN), exactly e8m0."""
    normal = b.shl(code, _i32(23))
    bits = b.select(b.icmp_unsigned("==", code, _i32(0)), _i32(0x00400000), normal)
    bits = b.select(b.icmp_unsigned("==", code, _i32(NAN_CODE)), _i32(0x7FC00000), bits)
    return b.bitcast(bits, F32)


class ScaledEmitter(TileEmitter):
    """The dense emitter's tile walk and epilogue around a K loop of decoded MX groups."""

    def __init__(self, em, plan: StructuredPlan, variant):
        self.em, self.plan, self.variant = em, plan, variant
        c = plan.contraction
        self.a_view, self.as_view = em.env[c.a], em.env[c.a_scale]
        self.b_view, self.bs_view = em.env[c.b], em.env[c.b_scale]
        self.c_view = em.env[c.c]
        self.m, self.groups, self.n = self.a_view.shape[0], self.a_view.shape[1], self.b_view.shape[2]

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, _ = plan.block
        self.shared = self._shared_memory()
        self.tid = b.zext(sreg(em, "tid.x"), I64)
        self.c_pairs = self._pairs()
        self.wide_a, self.wide_b = self._wide(self.a_view), self._wide(self.b_view)
        tiles_m, tiles_n = _ceil(b, self.m, bm), _ceil(b, self.n, bn)
        self.acc = self.variant.accumulators(em, plan)
        self.raw = [em.entry_alloca(I64), em.entry_alloca(I64), em.entry_alloca(I32)]
        start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)
        em.loop(start, b.mul(tiles_m, tiles_n), lambda tile: self._tile(tile, tiles_m, tiles_n), stride, name="tile")

    def scales_base(self, stage: ir.Value) -> ir.Value:
        b = self.em.b
        base = b.add(self.shared, b.mul(stage, _i32(self.plan.stage_bytes)))
        return b.add(base, _i32(self.plan.stage_bytes - self.plan.scale_bytes))

    # ---- the K loop: one MX group a step -----------------------------------------------------
    def _k_loop(self) -> None:
        em = self.em
        b = em.b
        with b.if_then(b.icmp_signed(">", self.groups, _const(0))):
            self._fetch(_const(0))
        em.loop(_const(0), self.groups, self._group, name="group")

    def _group(self, g: ir.Value) -> None:
        em = self.em
        b = em.b
        stage = b.urem(b.trunc(g, I32), _i32(self.plan.stages))
        self._deposit(stage)
        barrier(em)
        with b.if_then(b.icmp_signed("<", b.add(g, _const(1)), self.groups)):
            self._fetch(b.add(g, _const(1)))
        self._multiply_and_combine(stage)

    # ---- raw bytes into registers ------------------------------------------------------------
    def _wide(self, view) -> ir.Value:
        """The view's bytes along its last axis are contiguous and every 8-byte run a thread
        loads is 8-byte aligned (start, strides): one 64-bit load instead of eight."""
        b = self.em.b
        start = b.add(b.ptrtoint(view.ptr, I64), view.offset)
        misaligned = start
        for stride in view.strides[:-1]:
            misaligned = b.or_(misaligned, stride)
        aligned = b.icmp_unsigned("==", b.and_(misaligned, _const(7)), _const(0))
        return b.and_(aligned, b.icmp_signed("==", view.strides[-1], _const(1)))

    def _load8(self, view, coordinates: tuple, inside: ir.Value, count: ir.Value, wide: ir.Value) -> ir.Value:
        """Eight consecutive bytes along the view's last axis from `coordinates` as an i64 (byte
        j at bits 8j..), 0 where `inside` fails; only the first `count` bytes are read."""
        b = self.em.b
        before = b.block
        with b.if_then(inside):
            with b.if_else(b.and_(wide, b.icmp_signed(">=", count, _const(8)))) as (fast, slow):
                with fast:
                    pointer = b.addrspacecast(b.bitcast(self._address(view, coordinates), I64.as_pointer()),
                                              I64.as_pointer(1))
                    word = b.load(pointer, align=8)
                    fast_block = b.block
                with slow:
                    word_slow = ir.Constant(I64, 0)
                    *lead, last = coordinates
                    for j in range(8):
                        here = self._address(view, (*lead, b.add(last, _const(j))))
                        byte = self._byte_or_zero(here, b.icmp_signed("<", _const(j), count))
                        word_slow = b.or_(word_slow, b.shl(b.zext(byte, I64), ir.Constant(I64, 8 * j)))
                    slow_block = b.block
            loaded = b.phi(I64)
            loaded.add_incoming(word, fast_block)
            loaded.add_incoming(word_slow, slow_block)
            inside_block = b.block
        result = b.phi(I64)
        result.add_incoming(ir.Constant(I64, 0), before)
        result.add_incoming(loaded, inside_block)
        return result

    def _byte_or_zero(self, pointer: ir.Value, inside: ir.Value) -> ir.Value:
        b = self.em.b
        before = b.block
        with b.if_then(inside):
            loaded = b.load(pointer)
            then = b.block
        merged = b.phi(I8)
        merged.add_incoming(ir.Constant(I8, 0), before)
        merged.add_incoming(loaded, then)
        return merged

    def _address(self, view, coordinates: tuple) -> ir.Value:
        b = self.em.b
        offset = view.offset
        for coordinate, stride in zip(coordinates, view.strides):
            offset = b.add(offset, b.mul(coordinate, stride))
        return b.gep(view.ptr, [offset])

    def _fetch(self, g: ir.Value) -> None:
        """Group g's raw bytes into this thread's registers: A row tid/2, bytes 8·(tid%2)..;
        B carrier row tid/16, columns 8·(tid%16)..; one scale (A's rows for tid < BM, then
        B's columns), code 127 past the edge."""
        b = self.em.b
        bm, _, _ = self.plan.block
        tid = self.tid
        row, half = b.add(self.m0, b.udiv(tid, _const(2))), b.urem(tid, _const(2))
        a_raw = self._load8(self.a_view, (row, g, b.mul(half, _const(8))), b.icmp_signed("<", row, self.m),
                            _const(8), self.wide_a)
        carrier, column = b.udiv(tid, _const(16)), b.add(self.n0, b.mul(b.urem(tid, _const(16)), _const(8)))
        b_raw = self._load8(self.b_view, (g, carrier, column), b.icmp_signed("<", column, self.n),
                            b.sub(self.n, column), self.wide_b)
        is_a = b.icmp_unsigned("<", tid, _const(bm))
        line = b.select(is_a, b.add(self.m0, tid), b.add(self.n0, b.sub(tid, _const(bm))))
        scale_a = self._address(self.as_view, (line, g))
        scale_b = self._address(self.bs_view, (line, g))
        inside = b.icmp_signed("<", line, b.select(is_a, self.m, self.n))
        code = self._byte_or_zero(b.select(is_a, scale_a, scale_b), inside)
        code = b.select(inside, b.zext(code, I32), _i32(127))
        for slot, value in zip(self.raw, (a_raw, b_raw, code)):
            b.store(value, slot)

    # ---- decoded into the ring ---------------------------------------------------------------
    def _deposit(self, stage: ir.Value) -> None:
        b = self.em.b
        row_bytes = self.plan.row_bytes
        tid = b.trunc(self.tid, I32)
        a_raw, b_raw, code = (b.load(slot) for slot in self.raw)
        a_words = [_rescale(b, _e2m1_pair(b, _byte(b, a_raw, j))) for j in range(8)]
        row, half = b.udiv(tid, _i32(2)), b.urem(tid, _i32(2))
        for piece in range(2):
            chunk = b.add(b.mul(half, _i32(2)), _i32(piece))
            address = b.add(self.stage_base(stage, "a"), swizzled(b, row, chunk, row_bytes))
            _store_shared_v4(b, address, a_words[4 * piece:4 * piece + 4])
        pairs = [_e2m1_pair(b, _byte(b, b_raw, j)) for j in range(8)]
        low = [b.or_(b.and_(pairs[j], _i32(0xFFFF)), b.shl(pairs[j + 1], _i32(16))) for j in range(0, 8, 2)]
        high = [b.or_(b.lshr(pairs[j], _i32(16)), b.and_(pairs[j + 1], _i32(0xFFFF0000 - (1 << 32))))
                for j in range(0, 8, 2)]
        carrier, column = b.udiv(tid, _i32(16)), b.mul(b.urem(tid, _i32(16)), _i32(8))
        bk = self.plan.block[2]
        block = b.mul(b.udiv(column, _i32(bk)), _i32(bk * row_bytes))
        within = b.udiv(b.urem(column, _i32(bk)), _i32(8))
        for parity, words in enumerate((low, high)):
            k = b.add(b.mul(carrier, _i32(2)), _i32(parity))
            address = b.add(self.stage_base(stage, "b"), b.add(block, swizzled(b, k, within, row_bytes)))
            _store_shared_v4(b, address, [_rescale(b, w) for w in words])
        b.store(b.trunc(code, I8), _shared_pointer(b, b.add(self.scales_base(stage), tid), I8))

    # ---- the group's MMAs, each fragment's sum scaled into the accumulator --------------------
    def _fragment_lines(self, lanes: tuple) -> tuple:
        """(rows, columns) of the tile a thread's accumulator registers cover (mma.sync's
        m16n8 fragments: row 16i + lane/4 + 8h, column 8j + 2(lane%4) + r), as the lines
        2i + h and 2j + r."""
        b = self.em.b
        warp_m, warp_n, lane = lanes
        row0 = b.add(b.mul(warp_m, _i32(64)), b.udiv(lane, _i32(4)))
        col0 = b.add(b.mul(warp_n, _i32(32)), b.mul(b.urem(lane, _i32(4)), _i32(2)))
        rows = [b.add(row0, _i32(16 * i + 8 * h)) for i in range(4) for h in range(2)]
        cols = [b.add(col0, _i32(8 * j + r)) for j in range(4) for r in range(2)]
        return rows, cols

    def _multiply_and_combine(self, stage: ir.Value) -> None:
        """The group's MMAs fragment by fragment, each fragment's exact group sum scaled into
        the accumulator at once (fewer registers than a second accumulator); when some
        scale pair of the thread's elements is off the exact path, their contributions are
        computed first, the interpreter's way (`_corrections`)."""
        em = self.em
        b = em.b
        lanes = self.variant._lanes(em)
        rows, cols = self._fragment_lines(lanes)
        base = self.scales_base(stage)
        row_codes = [self._code(base, r) for r in rows]
        col_codes = [self._code(base, b.add(c, _i32(self.plan.block[0]))) for c in cols]
        low_a, high_a, low_b, high_b = (_fold(b, codes, kind) for codes in (row_codes, col_codes)
                                        for kind in ("<", ">"))
        all_safe = b.and_(_safe_sum(b, b.add(low_a, low_b), b.add(high_a, high_b)),
                          b.and_(b.icmp_unsigned("<=", high_a, _i32(SAFE_CODE)),
                                 b.icmp_unsigned("<=", high_b, _i32(SAFE_CODE))))
        # 2^(a+b-254) as f32 bits: (a << 23) + ((b - 127) << 23), one add an element
        row_bits = [b.shl(code, _i32(23)) for code in row_codes]
        col_bits = [b.shl(b.sub(code, _i32(127)), _i32(23)) for code in col_codes]
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])

        def scaled(i, j, value, total, index):
            return b.call(fma, [value, b.bitcast(b.add(row_bits[i], col_bits[j]), F32), total])
        with b.if_else(all_safe) as (fast, careful):
            with fast:
                self._fragments(stage, lanes, scaled)
            with careful:
                corrections = self._corrections(stage, lanes)

                def either(i, j, value, total, index):
                    safe = _pair_safe(b, row_codes[i], col_codes[j])
                    exact = b.fadd(total, b.load(b.gep(corrections, [_i32(0), _i32(index)], inbounds=True)))
                    return b.select(safe, scaled(i, j, value, total, index), exact)
                self._fragments(stage, lanes, either)

    def _code(self, base: ir.Value, line: ir.Value) -> ir.Value:
        b = self.em.b
        return b.zext(b.load(_shared_pointer(b, b.add(base, line), I8)), I32)

    def _fragments(self, stage, lanes, combine) -> None:
        """Each m16n8 fragment's K16 MMAs from zero, then acc = combine(row line, column line,
        group sum, acc, register index) for its four registers."""
        b = self.em.b
        variant, c = self.variant, self.plan.contraction
        steps = self.plan.block[2] // 16
        b_frags = [variant.b_fragments(self, stage, kk, lanes) for kk in range(steps)]
        zero = [ir.Constant(F32, 0.0)] * 4
        for i in range(4):
            a_frags = [variant.a_fragment(self, stage, kk, i, lanes) for kk in range(steps)]
            for j in range(4):
                part = zero
                for kk in range(steps):
                    part = mma_m16n8k16(b, c.operand_dtype, "f32", a_frags[kk], b_frags[kk][j], part)
                for register in range(4):
                    index = (i * 4 + j) * 4 + register
                    slot = b.gep(self.acc, [_i32(0), _i32(index)], inbounds=True)
                    row_line, col_line = 2 * i + register // 2, 2 * j + register % 2
                    b.store(combine(row_line, col_line, part[register], b.load(slot), index), slot)

    def _corrections(self, stage, lanes) -> ir.Value:
        """Per accumulator register, the interpreter's contribution of the group where the
        element's scale pair is off the exact path (a rolled loop over the registers into a
        local array: this path is rare)."""
        em = self.em
        b = em.b
        warp_m, warp_n, lane = lanes
        corrections = em.entry_alloca(ir.ArrayType(F32, 64))
        base = self.scales_base(stage)

        def element(index64):
            index = b.trunc(index64, I32)
            fragment, register = b.udiv(index, _i32(4)), b.urem(index, _i32(4))
            i, j = b.udiv(fragment, _i32(4)), b.urem(fragment, _i32(4))
            row = b.add(b.add(b.mul(warp_m, _i32(64)), b.udiv(lane, _i32(4))),
                        b.add(b.mul(i, _i32(16)), b.mul(b.udiv(register, _i32(2)), _i32(8))))
            col = b.add(b.add(b.mul(warp_n, _i32(32)), b.mul(b.urem(lane, _i32(4)), _i32(2))),
                        b.add(b.mul(j, _i32(8)), b.urem(register, _i32(2))))
            code_a, code_b = self._code(base, row), self._code(base, b.add(col, _i32(self.plan.block[0])))
            with b.if_then(b.not_(_pair_safe(b, code_a, code_b))):
                b.store(self._exact_group(stage, row, col, code_a, code_b),
                        b.gep(corrections, [_i32(0), index], inbounds=True))
        em.loop(_const(0), _const(64), element, name="careful")
        return corrections

    def _exact_group(self, stage, row, col, code_a, code_b) -> ir.Value:
        """Σ_k f32(a_k · 2^(a-127)) · f32(b_k · 2^(b-127)), products fused in K order."""
        em = self.em
        b = em.b
        bk, row_bytes = self.plan.block[2], self.plan.row_bytes
        scale_a, scale_b = _scale_value(b, code_a), _scale_value(b, code_b)
        partial = em.entry_alloca(F32)
        b.store(ir.Constant(F32, 0.0), partial)
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])
        block = b.mul(b.udiv(col, _i32(bk)), _i32(bk * row_bytes))
        within = b.urem(col, _i32(bk))

        def step(k64):
            k = b.trunc(k64, I32)
            a_at = b.add(swizzled(b, row, b.udiv(k, _i32(8)), row_bytes), b.mul(b.urem(k, _i32(8)), _i32(2)))
            b_at = b.add(block, b.add(swizzled(b, k, b.udiv(within, _i32(8)), row_bytes),
                                      b.mul(b.urem(within, _i32(8)), _i32(2))))
            a = b.fmul(self._half(b.add(self.stage_base(stage, "a"), a_at)), scale_a)
            value = b.fmul(self._half(b.add(self.stage_base(stage, "b"), b_at)), scale_b)
            b.store(b.call(fma, [a, value, b.load(partial)]), partial)
        em.loop(_const(0), _const(bk), step, name="exact")
        return b.load(partial)

    def _half(self, address: ir.Value) -> ir.Value:
        b = self.em.b
        bits = b.load(_shared_pointer(b, address, I16))
        return b.fpext(b.bitcast(bits, ir.HalfType()), F32)


def _fold(b: ir.IRBuilder, values: list, kind: str) -> ir.Value:
    """The minimum ("<") or maximum (">") of unsigned i32 values."""
    result = values[0]
    for value in values[1:]:
        result = b.select(b.icmp_unsigned(kind, value, result), value, result)
    return result


def _safe_sum(b: ir.IRBuilder, low: ir.Value, high: ir.Value) -> ir.Value:
    return b.and_(b.icmp_unsigned(">=", low, _i32(SAFE_SUM[0])), b.icmp_unsigned("<=", high, _i32(SAFE_SUM[1])))


def _pair_safe(b: ir.IRBuilder, code_a: ir.Value, code_b: ir.Value) -> ir.Value:
    """The pair's group sum scales exactly (module docstring)."""
    total = b.add(code_a, code_b)
    return b.and_(_safe_sum(b, total, total), b.and_(b.icmp_unsigned("<=", code_a, _i32(SAFE_CODE)),
                                                     b.icmp_unsigned("<=", code_b, _i32(SAFE_CODE))))
