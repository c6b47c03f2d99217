"""top-level-tiles: a top-level matrix product of two whole views, written as the tiled form
the tensor-core mappings run (docs/passes.md, "top-level-tiles").

A kernel without `parallel` that reads two row-major views whole (`read %a index(%r, %k)`
with iotas along the axes of `[%M, %K]`, no mask), multiplies them (`matmul`, or `contract`
pairing A's axis 1 with B's axis 0), optionally casts the product, and writes it whole to a
third view is `C = cast(A @ B)`; `parallel` over 64 x 64 output tiles, each an ordered loop
over K tiles of 32 accumulating `matmul ... init(...)` with the tails masked and read as 0,
computes the same sum of the same products (a contraction may sum in any order, §5.3) and
is the shape `codegen/nvptx/tile_contraction.py` recognizes. Any other program is left as it
is, and so is a rewritten kernel the verifier would not accept.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module, Op, OperandGroup
from ..ir.ops.contraction import contraction_axes
from ..ir.optable import ops_where
from ..ir.types import DType, TensorType, ViewType
from .base import Pass, PassContext, register_pass, verifies_replaced
from .emit import Emitter
from .ir_walk import Namer, defined_names, definitions, map_bodies

CONTRACTIONS = ops_where(lambda op: op.contraction)
# Operand dtypes whose tiled form the GPU's tensor-core and CUDA-core plans run and the GPU
# tests check (tests/gpu/test_mma_contraction.py, test_top_level_rows_cuda.py); the
# others keep their program.
TILED_DTYPES = frozenset({"f16", "bf16", "f32"})


@register_pass
@dataclass(frozen=True)
class TopLevelTiles(Pass):
    name = "top-level-tiles"
    summary = "write a top-level product of two whole views as a parallel over output tiles with a K loop"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper):
            if isinstance(item, Kernel) and (tiles := tiles_of(item, module)) is not None:
                ctx.count("top-level-tiles.kernels")
                return tiles.body
            return item.body
        return map_bodies(module, body)


@dataclass(frozen=True)
class _Product:
    """What the program computes: C = cast(A @ B) over views of [M, K], [K, N] and [M, N]."""
    a: str
    b: str
    c: str
    operand_dtype: DType
    acc: DType
    out_dtype: DType
    m: object
    k: object
    n: object


def tiles_of(kernel: Kernel, module: Module) -> Kernel | None:
    """`kernel` (of `module`) in the tiled form, or None when it is not a whole-view product."""
    product = _product(kernel)
    if product is None:
        return None
    tiled = kernel.model_copy(update={"body": _tiled_body(product, Namer(defined_names(kernel)))})
    return tiled if verifies_replaced(module, kernel, tiled) else None


def _product(kernel: Kernel) -> _Product | None:
    ops = kernel.body
    if any(op.regions for op in ops):
        return None
    defs = definitions(kernel)
    writes = [op for op in ops if op.name == "write"]
    if len(writes) != 1 or writes[0].group("mask"):
        return None
    (write,) = writes
    value = defs.get(write.operands[1])
    cast = value if value is not None and value.name == "cast" else None
    product_op = defs.get(cast.operands[0]) if cast is not None else value
    if product_op is None or product_op.name not in CONTRACTIONS or product_op.group("init"):
        return None
    if contraction_axes(product_op) != ([1], [0], [], []):
        return None
    views = {p.name: p.type for p in kernel.params}
    reads = [defs.get(name) for name in product_op.operands]
    a, b = (_whole_read(read, defs, views) for read in reads)
    c = _whole_view(write.operands[0], write.group("index") or (), defs, views)
    if a is None or b is None or c is None:
        return None
    # nothing else: the product's ops and the iotas indexing its accesses
    accesses = [write, *(read for read in reads if read is not None)]
    needed = [*accesses, product_op, *([cast] if cast else []),
              *(defs[name] for access in accesses for name in access.group("index") or ())]
    if {id(op) for op in ops} != {id(op) for op in needed}:
        return None
    (a_view, (m, k)), (b_view, (k_b, n)), (c_view, (m_c, n_c)) = a, b, c
    result = product_op.result_types[0]
    out = views[c_view]
    if k != k_b or (m, n) != (m_c, n_c) or not isinstance(result, TensorType) or not isinstance(out, ViewType):
        return None
    operand = views[a_view]
    assert isinstance(operand, ViewType)
    if operand.dtype not in TILED_DTYPES:
        return None
    return _Product(a_view, b_view, c_view, operand.dtype, result.dtype, out.dtype, m, k, n)


def _whole_read(op: Op | None, defs: dict, views: dict):
    """(view, its two extents) of an unmasked read of a whole rank-2 view, else None."""
    if op is None or op.name != "read" or op.group("mask"):
        return None
    return _whole_view(op.operands[0], op.group("index") or (), defs, views)


def _whole_view(view: str, index: tuple[str, ...], defs: dict, views: dict):
    """(view, its extents) when `index` is the iotas along both axes of the view's shape."""
    type_ = views.get(view)
    if not isinstance(type_, ViewType) or len(type_.shape) != 2 or len(index) != 2:
        return None
    for axis, name in enumerate(index):
        iota = defs.get(name)
        if iota is None or iota.name != "iota" or iota.int_attr("axis", 0) != axis:
            return None
        shape = iota.result_types[0]
        if not isinstance(shape, TensorType) or shape.shape != type_.shape:
            return None
    return view, tuple(type_.shape)


INDEX = TensorType(dtype="index")


def _tensor(dtype: DType, *shape: int) -> TensorType:
    return TensorType(dtype=dtype, shape=shape)


def _tiled_body(p: _Product, namer: Namer) -> tuple[Op, ...]:
    """The tiled form's body (tiled_matmul.kir's shape), its values named `tile_*`."""
    top = Emitter(namer, "tile")
    extents: dict[object, str] = {}

    def extent(value) -> str:
        if isinstance(value, str):
            return value
        if value not in extents:
            extents[value] = top.constant(value, "index", f"e{value}")
        return extents[value]
    m, k, n = extent(p.m), extent(p.k), extent(p.n)
    c0, c32, c63, c64 = (top.constant(v, "index", f"c{v}") for v in (0, 32, 63, 64))
    zero = top.constant(0.0, p.operand_dtype, "zero")
    tiles_m = top.op("floordiv", [top.op("add", [m, c63], INDEX, "m_pad"), c64], INDEX, "tiles_m")
    tiles_n = top.op("floordiv", [top.op("add", [n, c63], INDEX, "n_pad"), c64], INDEX, "tiles_n")
    tile = Emitter(namer, "tile")
    ti, tj = tile.fresh("ti"), tile.fresh("tj")
    m0, n0 = tile.op("mul", [ti, c64], INDEX, "m0"), tile.op("mul", [tj, c64], INDEX, "n0")
    row_l = tile.op("iota", [], _tensor("index", 64, 1), "row_l", attrs={"axis": 0})
    m0_b = tile.op("broadcast", [m0], _tensor("index", 64, 1), "m0_b")
    rows = tile.op("add", [m0_b, row_l], _tensor("index", 64, 1), "rows")
    col_l = tile.op("iota", [], _tensor("index", 64), "col_l")
    n0_b = tile.op("broadcast", [n0], _tensor("index", 64), "n0_b")
    cols = tile.op("add", [n0_b, col_l], _tensor("index", 64), "cols")
    m_b = tile.op("broadcast", [m], _tensor("index", 64, 1), "m_b")
    row_ok = tile.op("lt", [rows, m_b], _tensor("bool", 64, 1), "row_ok")
    n_b = tile.op("broadcast", [n], _tensor("index", 64), "n_b")
    col_ok = tile.op("lt", [cols, n_b], _tensor("bool", 64), "col_ok")
    row_ok_a = tile.op("broadcast", [row_ok], _tensor("bool", 64, 32), "row_ok_a")
    col_ok_b = tile.op("broadcast", [col_ok], _tensor("bool", 32, 64), "col_ok_b")
    ka_l = tile.op("iota", [], _tensor("index", 32), "ka_l")
    kb_l = tile.op("iota", [], _tensor("index", 32, 1), "kb_l", attrs={"axis": 0})
    k_a = tile.op("broadcast", [k], _tensor("index", 32), "k_a")
    k_b = tile.op("broadcast", [k], _tensor("index", 32, 1), "k_b")
    acc_type = _tensor(p.acc, 64, 64)
    acc0 = tile.op("full", [], acc_type, "acc0", attrs={"value": 0})
    step = Emitter(namer, "tile")
    k0, acc_in = step.fresh("k0"), step.fresh("acc_in")
    k0_a = step.op("broadcast", [k0], _tensor("index", 32), "k0_a")
    ka = step.op("add", [k0_a, ka_l], _tensor("index", 32), "ka")
    ka_ok = step.op("lt", [ka, k_a], _tensor("bool", 32), "ka_ok")
    ka_ok_b = step.op("broadcast", [ka_ok], _tensor("bool", 64, 32), "ka_ok_b")
    a_mask = step.op("and", [row_ok_a, ka_ok_b], _tensor("bool", 64, 32), "a_mask")
    a_tile = step.op("read", [p.a], _tensor(p.operand_dtype, 64, 32), "a_tile",
                     groups={"index": [rows, ka], "mask": [a_mask], "fill": [zero]})
    k0_b = step.op("broadcast", [k0], _tensor("index", 32, 1), "k0_b")
    kb = step.op("add", [k0_b, kb_l], _tensor("index", 32, 1), "kb")
    kb_ok = step.op("lt", [kb, k_b], _tensor("bool", 32, 1), "kb_ok")
    kb_ok_b = step.op("broadcast", [kb_ok], _tensor("bool", 32, 64), "kb_ok_b")
    b_mask = step.op("and", [kb_ok_b, col_ok_b], _tensor("bool", 32, 64), "b_mask")
    b_tile = step.op("read", [p.b], _tensor(p.operand_dtype, 32, 64), "b_tile",
                     groups={"index": [kb, cols], "mask": [b_mask], "fill": [zero]})
    step.yield_(step.op("matmul", [a_tile, b_tile], acc_type, "acc_next", groups={"init": [acc_in]},
                        attrs={"acc": TensorType(dtype=p.acc)}))
    acc = tile.op("loop", [c0, k, c32], acc_type, "acc", groups={"iter": [acc0]},
                  regions=[step.region("ktile", [(k0, INDEX), (acc_in, acc_type)])])
    out = tile.op("cast", [acc], _tensor(p.out_dtype, 64, 64), "out") if p.out_dtype != p.acc else acc
    row_ok_c = tile.op("broadcast", [row_ok], _tensor("bool", 64, 64), "row_ok_c")
    col_ok_c = tile.op("broadcast", [col_ok], _tensor("bool", 64, 64), "col_ok_c")
    c_mask = tile.op("and", [row_ok_c, col_ok_c], _tensor("bool", 64, 64), "c_mask")
    tile.ops.append(Op(name="write", operands=(p.c, out), groups=(OperandGroup(key="index", values=(rows, cols)),
                                                                   OperandGroup(key="mask", values=(c_mask,)))))
    return (*top.ops, Op(name="parallel", operands=(tiles_m, tiles_n),
                         regions=(tile.region("tile", [(ti, INDEX), (tj, INDEX)]),)))
