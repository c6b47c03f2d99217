"""Structured contractions (§7): scaled_contract's positional schema, sparse_contract's
metadata and compressed axis."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import is_float, is_int
from ...ir.nodes import Op
from ...ir.types import RecordType, TensorType
from ..typesys import fmt
from . import Args, rule
from .common import Results, expect_result, tensor_of
from .contraction import accumulator

if TYPE_CHECKING:
    from ..walk import Verifier

_ELEMENTS_PER_CARRIER = {"e2m1": 2, "e4m3": 1}


def _u8_ranks(ctx, op, types, ranks, names) -> bool:
    for type_, rank, name in zip(types, ranks, names):
        if type_.dtype != "u8" or type_.rank != rank:
            ctx.error("E601", op, f"`{op.name}` {name} must be a rank-{rank} u8 carrier tensor, got `{fmt(type_)}`",
                      "lhs [M,G,C] / lhs_scale [M,G], rhs [G,C,N] / rhs_scale [N,G], all u8")
            return False
    return True


@rule("scaled_contract")
def scaled_contract(ctx: Verifier, op: Op, args: Args) -> Results:
    names = ("lhs", "lhs_scale", "rhs", "rhs_scale")
    found = [tensor_of(ctx, op, v, n) for v, n in zip(args.operands, names)]
    types = [t for t in found if t is not None]
    acc = accumulator(ctx, op)
    if len(types) < len(found) or acc is None or not _u8_ranks(ctx, op, types, (3, 2, 3, 2), names):
        return None
    carrier = _carrier_extent(ctx, op)
    if carrier is None:
        return None
    a, a_scale, b, b_scale = (t.shape for t in types)
    relations = (
        ("M", [a[0], a_scale[0]]), ("G", [a[1], a_scale[1], b[0], b_scale[1]]),
        ("N", [b[2], b_scale[0]]), ("C", [a[2], b[1], carrier]),
    )
    for letter, extents in relations:
        if not all(ctx.same_extent(e, extents[0]) for e in extents):
            shown = ", ".join(str(e) if isinstance(e, int) else f"%{e}" for e in extents)
            ctx.error("E603", op, f"`{letter}` differs across the scaled_contract operands ({shown})",
                      "one G on both sides; C_lhs = C_rhs = group_size / elements per carrier "
                      f"(= {carrier} here); M and N as in the schema")
            return None
    if not is_float(acc):
        ctx.error("E206", op, f"`acc = {acc}` must be a float dtype for decoded microscaling values",
                  "use `acc = f32`")
        return None
    expect_result(ctx, op, acc, (a[0], b[2]), "E207", "scaled_contract yields tensor<acc, [M, N]>")
    return None


def _carrier_extent(ctx, op) -> int | None:
    group = op.attributes["group_size"]
    per_carrier = _ELEMENTS_PER_CARRIER[op.attributes["format"].name]
    if group <= 0 or group % per_carrier:
        ctx.error("E602", op, f"`group_size = {group}` must be a positive multiple of {per_carrier} for "
                  f"`{op.attributes['format'].name}`", "group_size is a positive logical index; e2m1 packs two "
                  "elements per u8")
        return None
    return group // per_carrier


@rule("sparse_contract")
def sparse_contract(ctx: Verifier, op: Op, args: Args) -> Results:
    lhs, rhs = tensor_of(ctx, op, args[0], "lhs"), tensor_of(ctx, op, args[2], "rhs")
    acc = accumulator(ctx, op)
    if lhs is None or rhs is None or acc is None:
        return None
    if lhs.rank != 2 or rhs.rank != 2 or "bool" in (lhs.dtype, rhs.dtype):
        ctx.error("E610", op, f"`sparse_contract` takes numeric lhs [M, K/2] and rhs [K, N], got "
                  f"`{fmt(lhs)}` and `{fmt(rhs)}`", "normalize the operands to rank 2 first")
        return None
    pattern = op.keyword_attr("pattern")
    group = 2 if pattern == "one_of_two" else 4
    extents = _compressed_extents(ctx, op, rhs.shape[0], group)
    if extents is None:
        return None
    values_extent, meta_extent = extents
    if values_extent is not None and not ctx.same_extent(lhs.shape[1], values_extent):
        ctx.error("E610", op, f"compressed lhs axis is {lhs.shape[1]}, expected K/2 = {values_extent}",
                  f"{pattern} stores {group // 2} value(s) per group of {group}")
        return None
    if not _metadata(ctx, op, args[1].type, pattern, lhs.shape[0], meta_extent):
        return None
    expect_result(ctx, op, acc, (lhs.shape[0], rhs.shape[1]), "E207", "sparse_contract yields tensor<acc, [M, N]>")
    return None


def _compressed_extents(ctx, op, k, group: int):
    """(K/2, K/group) for a static K divisible by the group; (None, None) for a dynamic K."""
    if not isinstance(ctx.canon(k), int):
        return None, None
    k = ctx.canon(k)
    if k % group:
        ctx.error("E611", op, f"the compression axis K = {k} is not divisible by {group}",
                  f"pad K to a multiple of {group}")
        return None
    return k // 2, k // group


def _metadata(ctx, op, meta, pattern: str, m, meta_extent) -> bool:
    """one_of_two: tensor<I, [M, K/2]>; two_of_four: record<first, second> of tensor<I, [M, K/4]>."""
    if pattern == "one_of_two":
        components = [meta]
        wanted = "tensor<I, [M, K/2]> with I index or an integer dtype"
    else:
        named = isinstance(meta, RecordType) and [f.name for f in meta.fields] == ["first", "second"]
        components = [f.type for f in meta.fields] if named else []
        wanted = "record<first: tensor<I, [M, K/4]>, second: tensor<I, [M, K/4]>>"
    if components and all(_meta_component(ctx, c, m, meta_extent) for c in components):
        return True
    ctx.error("E612", op, f"{pattern} metadata must be {wanted}, got `{fmt(meta)}`",
              "metadata holds logical positions inside each group, not a packed instruction layout")
    return False


def _meta_component(ctx, type_, m, extent) -> bool:
    if not isinstance(type_, TensorType) or type_.rank != 2 or not (is_int(type_.dtype)):
        return False
    return ctx.same_extent(type_.shape[0], m) and (extent is None or ctx.same_extent(type_.shape[1], extent))
