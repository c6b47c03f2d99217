"""scaled_contract and sparse_contract (spec §7), as the interpreter computes them.

Both become an ordinary `contract`:

- scaled: every decoded element times its e8m0 scale, an exact f64 (e2m1 / e4m3 values
  times a power of two), decoded once into a temporary, then converted into the
  accumulator and summed there;
- sparse: no dense operand (§7): the compressed lhs [M, C] contracts with the rhs rows its
  metadata selects, gathered as [M, C, N] (row m batch-paired), so an unselected position
  of the rhs never takes part — an inf there is not multiplied by a zero. Invalid metadata
  or group relations are illegal inputs (R0401); positions are taken modulo the group so
  an invalid one reads inside the rhs, and a wrong group relation contracts nothing.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir import errors
from .contraction import _settled, contract
from .conversion import decode_e2m1, decode_e8m0
from .emitter import CheckSite
from .lowfloat import decode
from .memory import as_index
from .types import F64, I1, I64
from .values import Lazy, RecordVal
from .lowering import LOWERINGS


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _any(em, conditions) -> ir.Value:
    bad = ir.Constant(I1, 0)
    for condition in conditions:
        bad = em.b.or_(bad, condition)
    return bad


# ---- scaled contract -----------------------------------------------------------------------------
def _element(em, byte, k, fmt):
    """Logical element `k` of a group's carrier byte `byte` as an exact f64."""
    b = em.b
    if fmt == "e4m3":
        return decode(em, byte, "f8e4m3fn")
    shift = b.trunc(b.shl(b.and_(k, _i64(1)), _i64(2)), byte.type)
    return b.fpext(decode_e2m1(em, b.lshr(byte, shift)), F64)


@LOWERINGS.register("scaled_contract")
def _scaled_contract_op(em, op):
    lhs, lhs_scale, rhs, rhs_scale = (_settled(em, em.env[n]) for n in op.operands)
    attrs = op.attributes
    fmt, group, acc = attrs["format"].name, int(attrs["group_size"]), attrs["acc"].dtype
    per = 2 if fmt == "e2m1" else 1
    b = em.b
    m, groups, carriers = lhs.shape
    n = rhs.shape[2]
    site = CheckSite(op, errors.SHAPE_MISMATCH, f"scaled_contract operand shapes do not fit group_size {group} "
                     f"of {fmt}")
    em.check(site, _any(em, [b.icmp_unsigned("!=", b.mul(carriers, _i64(per)), _i64(group)),
                             b.icmp_unsigned("!=", rhs.shape[0], groups),
                             b.icmp_unsigned("!=", rhs.shape[1], carriers)]))
    width = _i64(group)

    def carrier_at(k):
        return b.udiv(k, _i64(per)) if per > 1 else k

    def scale(code):
        return em.b.fpext(decode_e8m0(em, code), F64)

    def a_at(e, idx):
        row, g, k = idx
        element = _element(e, lhs.at(e, [row, g, carrier_at(k)]), k, fmt)
        return e.b.fmul(element, scale(lhs_scale.at(e, [row, g])))

    def b_at(e, idx):
        g, k, col = idx
        element = _element(e, rhs.at(e, [g, carrier_at(k), col]), k, fmt)
        return e.b.fmul(element, scale(rhs_scale.at(e, [col, g])))
    # decode each operand once (an element is used by every row / column of the other)
    a = em.materialize(Lazy("f64", (m, groups, width), a_at))
    bb = em.materialize(Lazy("f64", (groups, width, n), b_at))
    return contract(em, op, a, bb, acc, [1, 2], [0, 1])


# ---- sparse contract -----------------------------------------------------------------------------
@LOWERINGS.register("sparse_contract")
def _sparse_contract_op(em, op):
    lhs, metadata, rhs = (em.env[n] for n in op.operands)
    lhs, rhs = _settled(em, lhs), _settled(em, rhs)
    pattern, acc = op.attributes["pattern"].name, op.attributes["acc"].dtype
    group, kept = (2, 1) if pattern == "one_of_two" else (4, 2)
    fields = [metadata] if pattern == "one_of_two" else [metadata.fields[f] for f in ("first", "second")] \
        if isinstance(metadata, RecordVal) else list(metadata)
    fields = [_settled(em, f) for f in fields]
    b = em.b
    m, compressed = lhs.shape
    k = rhs.shape[0]
    shape_site = CheckSite(op, errors.SPARSE_METADATA, f"{pattern}: K and the compressed extent do not match "
                           f"groups of {group}")
    bad_shape = _any(em, [b.icmp_unsigned("!=", b.urem(k, _i64(group)), _i64(0)),
                          b.icmp_unsigned("!=", b.mul(compressed, _i64(group)), b.mul(k, _i64(kept)))] +
                     [b.icmp_unsigned("!=", b.mul(f.shape[1], _i64(group)), k) for f in fields])
    em.check(shape_site, bad_shape)
    depth = b.select(bad_shape, _i64(0), compressed)
    _check_metadata(em, op, pattern, fields)
    n = rhs.shape[1]

    def position(e, row, c):
        """The logical K coordinate of compressed value c of `row` (its group start + metadata)."""
        g, slot = e.b.udiv(c, _i64(kept)), e.b.urem(c, _i64(kept))
        within = as_index(e, fields[0].at(e, [row, g]), fields[0].dtype)
        if kept == 2:
            second = as_index(e, fields[1].at(e, [row, g]), fields[1].dtype)
            within = e.b.select(e.b.icmp_unsigned("==", slot, _i64(1)), second, within)
        return e.b.add(e.b.mul(g, _i64(group)), e.b.urem(within, _i64(group)))

    def selected_rhs(e, idx):
        row, c, col = idx
        return rhs.at(e, [position(e, row, c), col])
    values = Lazy(lhs.dtype, (m, depth), lambda e, idx: lhs.at(e, idx))
    gathered = Lazy(rhs.dtype, (m, depth, n), selected_rhs)
    return contract(em, op, values, gathered, acc, [1], [1], [0], [0])


def _check_metadata(em, op, pattern, fields):
    site = CheckSite(op, errors.SPARSE_METADATA, "one_of_two metadata outside {0, 1}" if pattern == "one_of_two"
                     else "two_of_four metadata must satisfy 0 <= first < second < 4")

    def check(idx):
        b = em.b
        values = [as_index(em, f.at(em, idx), f.dtype) for f in fields]
        if pattern == "one_of_two":
            em.check(site, b.icmp_unsigned(">", values[0], _i64(1)))
            return
        first, second = values
        em.check(site, _any(em, [b.icmp_signed("<", first, _i64(0)), b.icmp_signed(">=", first, second),
                                 b.icmp_signed(">=", second, _i64(4))]))
    em.for_each(fields[0].shape, check)
