"""Philox4x32-10 random bits and uniform floats, exactly as spec §12 writes them."""
from __future__ import annotations

from llvmlite import ir

from ...ir import errors
from .affine_forms import affine_form
from .emitter import CheckSite, Emitter
from .pointwise import elementwise
from .types import F32, I32, I64, is_signed
from .lowering import LOWERINGS

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85


def _block_source(counter: ir.Value) -> ir.Value | None:
    """For a counter `x | k` with a constant k < 4 (how a target numbers a thread's 4
    consecutive coordinates, nvptx/staged.py), x: `x >> 2` is the counter's block, which the
    4 share; else None."""
    if isinstance(counter, ir.Instruction) and counter.opname == "or":
        x, k = counter.operands
        if isinstance(k, ir.Constant) and 0 <= int(k.constant) < 4 and isinstance(x, ir.Instruction):
            return x
    return None


def philox_block(em: Emitter, seed: ir.Value, counter: ir.Value) -> tuple[ir.Value, ...]:
    """The 4 words of Philox4x32-10 block `counter >> 2` under `seed` (both i64). Counters
    `x | k` under a seed of the prologue share one computation of it, placed right after x
    (which dominates them all, guarded or not), so the 10 rounds run once for 4 consecutive
    counters."""
    source = _block_source(counter)
    if source is None or not (isinstance(seed, ir.Constant) or id(seed) in em.invariant):
        return _philox_rounds(em, seed, counter)    # (a seed computed in the body may come after x)
    key = ("philox", id(seed), id(source))
    memo = em.element_memo.get(key)
    if memo is None:
        here = em.b
        em.b = ir.IRBuilder(source.parent)
        em.b.position_after(source)
        try:
            memo = em.element_memo[key] = _philox_rounds(em, seed, source)
        finally:
            em.b = here
        if here.block is source.parent:   # inserted before the builder's own position: append again
            here.position_at_end(here.block)
    return memo


def _philox_rounds(em: Emitter, seed: ir.Value, source: ir.Value) -> tuple[ir.Value, ...]:
    b = em.b

    def low(x):
        return b.trunc(x, I32)

    def high(x):
        return b.trunc(b.lshr(x, ir.Constant(I64, 32)), I32)

    block = b.lshr(source, ir.Constant(I64, 2))
    c0, c1, c2, c3 = low(block), high(block), ir.Constant(I32, 0), ir.Constant(I32, 0)
    k0, k1 = low(seed), high(seed)
    m0, m1 = ir.Constant(I32, M0), ir.Constant(I32, M1)
    for _ in range(10):
        hi0, lo0 = em.hooks.mul_wide_u32(em, m0, c0)
        hi1, lo1 = em.hooks.mul_wide_u32(em, m1, c2)
        c0, c1, c2, c3 = b.xor(b.xor(hi1, c1), k0), lo1, b.xor(b.xor(hi0, c3), k1), lo0
        k0 = b.add(k0, ir.Constant(I32, W0))
        k1 = b.add(k1, ir.Constant(I32, W1))
    return c0, c1, c2, c3


def philox_word(em: Emitter, seed: ir.Value, counter: ir.Value) -> ir.Value:
    """The u32 word `counter % 4` of Philox4x32-10 block `counter // 4` under `seed` (both i64)."""
    key, shared = _word_of_neighbour(em, seed, counter)
    if shared is not None:
        return shared
    b = em.b
    words = philox_block(em, seed, counter)
    if key is not None:                  # a first counter, for its neighbours to come
        em.element_memo[key] = {"block": b.block, "constant": affine_form(counter)[1], "counter": counter,
                                "words": words, "next": None}
    return _pick(b, b.and_(counter, ir.Constant(I64, 3)), words)


def _pick(b: ir.IRBuilder, index: ir.Value, words: tuple[ir.Value, ...]) -> ir.Value:
    """words[index] (an i64 index below len(words))."""
    *others, pick = words
    for number in range(len(others) - 1, -1, -1):
        pick = b.select(b.icmp_unsigned("==", index, ir.Constant(I64, number)), others[number], pick)
    return pick


def _word_of_neighbour(em: Emitter, seed: ir.Value, counter: ir.Value) -> tuple[tuple | None, ir.Value | None]:
    """(memo key, word): the word of a counter 1 to 3 above a first one drawn earlier in this
    block under the same invariant seed (a thread's consecutive coordinates: `counter` =
    first + k whatever the terms of both are, `affine_forms`), from the first's Philox block
    and the next; else no word (and the key under which `counter` becomes a first one, None
    for a seed computed in the body). A group of 4 consecutive counters thus computes 2
    blocks (10 rounds each) instead of 4, whatever the first's offset; a target that draws
    one counter a block computes nothing more."""
    if not (isinstance(seed, ir.Constant) or id(seed) in em.invariant):
        return None, None
    terms, constant = affine_form(counter)
    key = ("philox neighbours", id(seed), frozenset((term, factor) for term, (_, factor) in terms.items()))
    first = em.element_memo.get(key)
    b = em.b
    if first is None or first["block"] is not b.block or not 0 < constant - first["constant"] < 4:
        return key, None
    if first["next"] is None:          # the block after the first counter's
        first["next"] = _philox_rounds(em, seed, b.add(first["counter"], ir.Constant(I64, 4)))
    lane = b.add(b.and_(first["counter"], ir.Constant(I64, 3)), ir.Constant(I64, constant - first["constant"]))
    return key, _pick(b, lane, first["words"] + first["next"])


def _bits(em, op, seed, counter):
    def element(e, v):
        value = v[1]
        if is_signed(counter.dtype):
            e.check(CheckSite(op, errors.NEGATIVE_COUNTER, "random counter is negative"),
                    e.b.icmp_signed("<", value, ir.Constant(value.type, 0)))
        wide = value if value.type == I64 else (e.b.sext(value, I64) if is_signed(counter.dtype) else
                                                 e.b.zext(value, I64))
        return philox_word(e, v[0], wide)
    return element


@LOWERINGS.register("random_bits")
def _random_bits_op(em, op):
    seed, counter = (em.env[n] for n in op.operands)
    return elementwise(em, op, [seed, counter], _bits(em, op, seed, counter), "u32", costly=True)


@LOWERINGS.register("uniform")
def _uniform_op(em, op):
    seed, counter = (em.env[n] for n in op.operands)
    bits = _bits(em, op, seed, counter)

    def element(e, v):
        word = bits(e, v)
        return e.b.fmul(e.b.uitofp(e.b.lshr(word, ir.Constant(I32, 8)), F32), ir.Constant(F32, 2.0 ** -24))
    return elementwise(em, op, [seed, counter], element, "f32", costly=True)
