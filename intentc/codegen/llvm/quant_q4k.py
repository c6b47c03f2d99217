"""Q4_K quantization: quantize_row_q4_K_ref with make_qkx2_quants(32, 15, x, w, L, &min,
Laux, -1, 0.1, 20, false), every f32 operation in the interpreter's order
(`intentc/interp/quant.py`): sums over the 32 members of a sub-block run left to right, and
numpy's where/maximum/clip become selects with the same NaN and signed-zero behaviour.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir

from .lowfloat import decode, encode, round_f64
from .quant import Q4_K_BYTES, Q4_QS, Q4_SCALES, QK_K, Slot, c64, count_loop, f32c, imin, nearest_int, put_le
from .types import F32, F64, I8, I32
from .values import Memory, Tensor

if TYPE_CHECKING:
    from .emitter import Emitter

NMAX, NSTEP = 15, 20
_F32 = np.float32
# (rmin + rdelta * step) + nmax in f32 for step = 0..nstep: the trial numerators
NUMERATORS = [float((_F32(-1.0) + _F32(_F32(0.1) * _F32(step))) + _F32(NMAX)) for step in range(NSTEP + 1)]


class Array:
    """A fixed-size scalar array in the entry block, indexed at run time."""

    def __init__(self, em: Emitter, type_: ir.Type, count: int):
        self.em = em
        self.ptr = em.entry.bitcast(em.entry.alloca(ir.ArrayType(type_, count)), type_.as_pointer())

    def address(self, i: int | ir.Value) -> ir.Value:
        return self.em.b.gep(self.ptr, [c64(i) if isinstance(i, int) else i], inbounds=True)

    def get(self, i: int | ir.Value) -> ir.Value:
        return self.em.b.load(self.address(i))

    def set(self, i: int | ir.Value, value: ir.Value) -> None:
        self.em.b.store(value, self.address(i))


def np_maximum(em: Emitter, a: ir.Value, b_: ir.Value) -> ir.Value:
    """numpy's maximum: a where a >= b or a is NaN, else b."""
    b = em.b
    return b.select(b.or_(b.fcmp_ordered(">=", a, b_), b.fcmp_unordered("uno", a, a)), a, b_)


def np_minimum(em: Emitter, a: ir.Value, b_: ir.Value) -> ir.Value:
    b = em.b
    return b.select(b.or_(b.fcmp_ordered("<=", a, b_), b.fcmp_unordered("uno", a, a)), a, b_)


def seq_sum(em: Emitter, term: Callable[[ir.Value], ir.Value], count: int = 32) -> ir.Value:
    """sum of term(l) for l = 0..count-1 in f32, left to right from 0."""
    total = Slot(em, F32, 0.0)
    count_loop(em, count, lambda l: total.set(em.b.fadd(total.get(), term(l))))
    return total.get()


def clip_level(em: Emitter, x: ir.Value) -> ir.Value:
    """np.clip(nearest_int(x), 0, nmax) as i32."""
    level = imin(em, nearest_int(em, x), NMAX)
    return em.b.select(em.b.icmp_signed("<", level, ir.Constant(I32, 0)), ir.Constant(I32, 0), level)


def make_qkx2_quants(em: Emitter, xs: Array, ws: Array, levels: Array, base: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Scale and -min of one sub-block (xs, ws: Arrays of 32); levels[base + l] get its levels."""
    b = em.b
    low, high = Slot(em, F32, xs.get(0)), Slot(em, F32, xs.get(0))

    def extremes(l):
        low.set(np_minimum(em, low.get(), xs.get(l)))
        high.set(np_maximum(em, high.get(), xs.get(l)))
    count_loop(em, 32, extremes)
    sum_w = seq_sum(em, ws.get)
    sum_x = seq_sum(em, lambda l: b.fmul(ws.get(l), xs.get(l)))
    low_v = np_minimum(em, low.get(), f32c(0.0))
    high_v = high.get()
    flat = b.fcmp_ordered("==", high_v, low_v)
    span = b.fsub(high_v, low_v)
    iscale = b.fdiv(f32c(NMAX), span)
    scale = b.fdiv(f32c(1.0), iscale)

    def shifted(l):
        return b.fsub(xs.get(l), low_v)

    def first_level(l):
        level = clip_level(em, b.fmul(iscale, shifted(l)))
        levels.set(b.add(base, l), b.trunc(level, I8))
        return level

    def first_error(l):
        diff = b.fsub(b.fadd(b.fmul(scale, b.sitofp(first_level(l), F32)), low_v), xs.get(l))
        return b.fmul(ws.get(l), b.fmul(diff, diff))
    best = Slot(em, F32, seq_sum(em, first_error))
    best_scale, best_min = Slot(em, F32, scale), Slot(em, F32, low_v)
    trial = Array(em, I8, 32)
    table = _numerators(em)

    def step(s):
        trial_iscale = b.fdiv(b.load(b.gep(table, [c64(0), s], inbounds=True)), span)

        def trial_level(l):
            level = b.trunc(clip_level(em, b.fmul(trial_iscale, shifted(l))), I8)
            trial.set(l, level)
            return b.uitofp(level, F32)
        sum_l = Slot(em, F32, 0.0)
        sum_l2, sum_xl = Slot(em, F32, 0.0), Slot(em, F32, 0.0)

        def sums(l):
            lf = trial_level(l)
            wl = b.fmul(ws.get(l), lf)
            sum_l.set(b.fadd(sum_l.get(), wl))
            sum_l2.set(b.fadd(sum_l2.get(), b.fmul(wl, lf)))
            sum_xl.set(b.fadd(sum_xl.get(), b.fmul(wl, xs.get(l))))
        count_loop(em, 32, sums)
        sl, sl2, sxl = sum_l.get(), sum_l2.get(), sum_xl.get()
        det = b.fsub(b.fmul(sum_w, sl2), b.fmul(sl, sl))
        this_scale = b.fdiv(b.fsub(b.fmul(sum_w, sxl), b.fmul(sum_x, sl)), det)
        this_min = b.fdiv(b.fsub(b.fmul(sl2, sum_x), b.fmul(sl, sxl)), det)
        positive = b.fcmp_ordered(">", this_min, f32c(0.0))
        this_scale = b.select(positive, b.fdiv(sxl, sl2), this_scale)
        this_min = b.select(positive, f32c(0.0), this_min)

        def error(l):
            diff = b.fsub(b.fadd(b.fmul(this_scale, b.uitofp(trial.get(l), F32)), this_min), xs.get(l))
            return b.fmul(ws.get(l), b.fmul(diff, diff))
        mad = seq_sum(em, error)
        better = b.and_(b.fcmp_ordered(">", det, f32c(0.0)), b.fcmp_ordered("<", mad, best.get()))
        with b.if_then(better):
            best.set(mad)
            best_scale.set(this_scale)
            best_min.set(this_min)
            count_loop(em, 32, lambda l: levels.set(b.add(base, l), trial.get(l)))
    em.loop(c64(0), c64(NSTEP + 1), step)
    with b.if_then(flat):
        count_loop(em, 32, lambda l: levels.set(b.add(base, l), ir.Constant(I8, 0)))
    final_scale = b.select(flat, f32c(0.0), best_scale.get())
    final_min = b.select(flat, low_v, best_min.get())
    return final_scale, b.fneg(final_min)


def _numerators(em):
    table = em.module.globals.get("intentc.q4k.numerators")
    if table is None:
        array = ir.ArrayType(F32, len(NUMERATORS))
        table = ir.GlobalVariable(em.module, array, "intentc.q4k.numerators")
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(array, [ir.Constant(F32, v) for v in NUMERATORS])
    return table


def _to_f16_bits(em, value):
    return encode(em, round_f64(em, em.b.fpext(value, F64), "f16")[0], "f16")


def _six_bits(em, inverse, value):
    """min(63, uint8(nearest_int(inverse * value))) as i8."""
    b = em.b
    level = b.trunc(nearest_int(em, b.fmul(inverse, value)), I8)
    return b.select(b.icmp_unsigned("<", level, ir.Constant(I8, 63)), level, ir.Constant(I8, 63))


def quantize_q4_k(em: Emitter, x: Tensor, blocks: ir.Value) -> Memory:
    out, finish = em.hooks.shared_temporary(em, "u8", (blocks, c64(Q4_K_BYTES)))
    b = em.b
    xs, ws = Array(em, F32, 32), Array(em, F32, 32)
    scales, mins = Array(em, F32, 8), Array(em, F32, 8)
    ls, lm = Array(em, I8, 8), Array(em, I8, 8)
    levels = Array(em, I8, QK_K)

    def block(blk):
        def sub_block(j):
            base = b.mul(j, c64(32))
            count_loop(em, 32, lambda l: xs.set(l, x.at(em, [blk, b.add(base, l)])))
            sum_x2 = seq_sum(em, lambda l: b.fmul(xs.get(l), xs.get(l)))
            av_x = em.call_intrinsic("sqrt", b.fdiv(sum_x2, f32c(32.0)))
            count_loop(em, 32, lambda l: ws.set(l, b.fadd(av_x, em.call_intrinsic("fabs", xs.get(l)))))
            scale, minimum = make_qkx2_quants(em, xs, ws, levels, base)
            scales.set(j, scale)
            mins.set(j, minimum)
        count_loop(em, 8, sub_block)
        max_scale, max_min = Slot(em, F32, 0.0), Slot(em, F32, 0.0)

        def peaks(j):
            max_scale.set(np_maximum(em, max_scale.get(), np_maximum(em, scales.get(j), f32c(0.0))))
            max_min.set(np_maximum(em, max_min.get(), np_maximum(em, mins.get(j), f32c(0.0))))
        count_loop(em, 8, peaks)
        top_scale, top_min = max_scale.get(), max_min.get()
        inv_scale = b.select(b.fcmp_ordered(">", top_scale, f32c(0.0)), b.fdiv(f32c(63.0), top_scale), f32c(0.0))
        inv_min = b.select(b.fcmp_ordered(">", top_min, f32c(0.0)), b.fdiv(f32c(63.0), top_min), f32c(0.0))
        d16 = _to_f16_bits(em, b.fdiv(top_scale, f32c(63.0)))
        dmin16 = _to_f16_bits(em, b.fdiv(top_min, f32c(63.0)))
        put_le(em, out, blk, 0, d16)
        put_le(em, out, blk, 2, dmin16)
        d, dmin = (b.fptrunc(decode(em, bits, "f16"), F32) for bits in (d16, dmin16))   # exact

        def six_bit_pair(j):
            ls.set(j, _six_bits(em, inv_scale, scales.get(j)))
            lm.set(j, _six_bits(em, inv_min, mins.get(j)))
        count_loop(em, 8, six_bit_pair)
        _pack_scales(em, out, blk, ls, lm)

        def final_levels(j):
            sub_d = b.fmul(d, b.uitofp(ls.get(j), F32))
            sub_dm = b.fmul(dmin, b.uitofp(lm.get(j), F32))
            keep = b.fcmp_ordered("==", sub_d, f32c(0.0))

            def member(l):
                i = b.add(b.mul(j, c64(32)), l)
                level = clip_level(em, b.fdiv(b.fadd(x.at(em, [blk, i]), sub_dm), sub_d))
                levels.set(i, b.select(keep, levels.get(i), b.trunc(level, I8)))
            count_loop(em, 32, member)
        count_loop(em, 8, final_levels)

        def pack(i):
            chunk, l = b.udiv(i, c64(32)), b.urem(i, c64(32))
            low = levels.get(b.add(b.mul(chunk, c64(64)), l))
            high = levels.get(b.add(b.add(b.mul(chunk, c64(64)), c64(32)), l))
            b.store(b.or_(low, b.shl(high, ir.Constant(I8, 4))), out.address(em, [blk, b.add(i, c64(Q4_QS))]))
        count_loop(em, QK_K // 2, pack)
    em.for_each((blocks,), lambda idx: block(idx[0]))
    finish()
    return out


def _pack_scales(em, out, blk, ls, lm):
    """The 12-byte get_scale_min_k4 layout of 8 six-bit scales and mins."""
    b = em.b
    i8c = lambda v: ir.Constant(I8, v)
    for j in range(4):
        high_s, high_m = b.lshr(ls.get(j + 4), i8c(4)), b.lshr(lm.get(j + 4), i8c(4))
        b.store(b.or_(ls.get(j), b.shl(high_s, i8c(6))), out.address(em, [blk, c64(Q4_SCALES + j)]))
        b.store(b.or_(lm.get(j), b.shl(high_m, i8c(6))), out.address(em, [blk, c64(Q4_SCALES + 4 + j)]))
        low = b.or_(b.and_(ls.get(j + 4), i8c(15)), b.shl(b.and_(lm.get(j + 4), i8c(15)), i8c(4)))
        b.store(low, out.address(em, [blk, c64(Q4_SCALES + 8 + j)]))

