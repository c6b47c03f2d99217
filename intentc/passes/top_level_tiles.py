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

from ..ir.nodes import Helper, Kernel, Module, Op
from ..ir.ops.contraction import contraction_axes
from ..ir.optable import ops_where
from ..ir.types import TensorType, ViewType
from .base import Pass, PassContext, register_pass, verifies_replaced
from .ir_walk import map_bodies

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
    operand_dtype: str
    acc: str
    out_dtype: str
    m: object
    k: object
    n: object


def tiles_of(kernel: Kernel, module: Module) -> Kernel | None:
    """`kernel` (of `module`) in the tiled form, or None when it is not a whole-view product."""
    product = _product(kernel)
    if product is None:
        return None
    from ..parse import parse
    from ..printer import print_module
    header = print_module(Module(items=(kernel.model_copy(update={"body": (), "end_comments": ()}),)))
    text = header.rstrip().removesuffix("}") + _tiled_body(product, _names(kernel)) + "}\n"
    try:
        tiled = parse(text).items[0]
    except Exception:        # (a diagnostic: a form the template did not foresee)
        return None
    assert isinstance(tiled, Kernel)
    tiled = tiled.model_copy(update={"loc": kernel.loc, "comments": kernel.comments})
    return tiled if verifies_replaced(module, kernel, tiled) else None


def _product(kernel: Kernel) -> _Product | None:
    ops = [op for op in kernel.body if op.name != "yield"]
    if any(op.regions for op in ops):
        return None
    defs = {name: op for op in ops for name in op.results}
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
    a, b = (_whole_read(defs.get(name), defs, views) for name in product_op.operands)
    c = _whole_view(write.operands[0], write.group("index") or (), defs, views)
    used = {id(op) for op in (write, cast, product_op, defs[product_op.operands[0]], defs[product_op.operands[1]])
            if op is not None}
    used |= {id(defs[name]) for op in (write, defs[product_op.operands[0]], defs[product_op.operands[1]])
             for name in op.group("index") or ()}
    if a is None or b is None or c is None or any(id(op) not in used for op in ops):
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


def _names(kernel: Kernel) -> set[str]:
    return {p.name for p in kernel.params} | {r for op in kernel.body for r in op.results}


def _tiled_body(p: _Product, taken: set[str]) -> str:
    """The tiled form's body (tiled_matmul.kir's shape), its values named clear of `taken`."""
    prefix = "tile_"
    while any(name.startswith(prefix) for name in taken):
        prefix = "t" + prefix

    def extent(value) -> str:
        return f"%{value}" if isinstance(value, str) else f"%{prefix}e{value}"
    constants = "".join(f"  %{prefix}e{v} = constant {{value = {v}}} : index\n"
                        for v in sorted({e for e in (p.m, p.k, p.n) if isinstance(e, int)}))
    zero = "0.0" if p.operand_dtype.startswith(("f", "bf")) else "0"
    m, k, n = extent(p.m), extent(p.k), extent(p.n)
    out = f"%{prefix}out = cast %{prefix}acc : tensor<{p.out_dtype}, [64, 64]>" if p.out_dtype != p.acc else None
    result = f"%{prefix}out" if out else f"%{prefix}acc"
    x = prefix
    return f"""
{constants}  %{x}c0 = constant {{value = 0}} : index
  %{x}c32 = constant {{value = 32}} : index
  %{x}c63 = constant {{value = 63}} : index
  %{x}c64 = constant {{value = 64}} : index
  %{x}zero = constant {{value = {zero}}} : {p.operand_dtype}
  %{x}m_pad = add {m}, %{x}c63 : index
  %{x}tiles_m = floordiv %{x}m_pad, %{x}c64 : index
  %{x}n_pad = add {n}, %{x}c63 : index
  %{x}tiles_n = floordiv %{x}n_pad, %{x}c64 : index
  parallel %{x}tiles_m, %{x}tiles_n {{
  ^tile(%{x}ti: index, %{x}tj: index):
    %{x}m0 = mul %{x}ti, %{x}c64 : index
    %{x}n0 = mul %{x}tj, %{x}c64 : index
    %{x}row_l = iota {{axis = 0}} : tensor<index, [64, 1]>
    %{x}m0_b = broadcast %{x}m0 : tensor<index, [64, 1]>
    %{x}rows = add %{x}m0_b, %{x}row_l : tensor<index, [64, 1]>
    %{x}col_l = iota : tensor<index, [64]>
    %{x}n0_b = broadcast %{x}n0 : tensor<index, [64]>
    %{x}cols = add %{x}n0_b, %{x}col_l : tensor<index, [64]>
    %{x}m_b = broadcast {m} : tensor<index, [64, 1]>
    %{x}row_ok = lt %{x}rows, %{x}m_b : tensor<bool, [64, 1]>
    %{x}n_b = broadcast {n} : tensor<index, [64]>
    %{x}col_ok = lt %{x}cols, %{x}n_b : tensor<bool, [64]>
    %{x}row_ok_a = broadcast %{x}row_ok : tensor<bool, [64, 32]>
    %{x}col_ok_b = broadcast %{x}col_ok : tensor<bool, [32, 64]>
    %{x}ka_l = iota : tensor<index, [32]>
    %{x}kb_l = iota {{axis = 0}} : tensor<index, [32, 1]>
    %{x}k_a = broadcast {k} : tensor<index, [32]>
    %{x}k_b = broadcast {k} : tensor<index, [32, 1]>
    %{x}acc0 = full {{value = 0}} : tensor<{p.acc}, [64, 64]>
    %{x}acc = loop %{x}c0, {k}, %{x}c32 iter(%{x}acc0) : tensor<{p.acc}, [64, 64]> {{
    ^ktile(%{x}k0: index, %{x}acc_in: tensor<{p.acc}, [64, 64]>):
      %{x}k0_a = broadcast %{x}k0 : tensor<index, [32]>
      %{x}ka = add %{x}k0_a, %{x}ka_l : tensor<index, [32]>
      %{x}ka_ok = lt %{x}ka, %{x}k_a : tensor<bool, [32]>
      %{x}ka_ok_b = broadcast %{x}ka_ok : tensor<bool, [64, 32]>
      %{x}a_mask = and %{x}row_ok_a, %{x}ka_ok_b : tensor<bool, [64, 32]>
      %{x}a_tile = read %{p.a} index(%{x}rows, %{x}ka) mask(%{x}a_mask) fill(%{x}zero) : tensor<{p.operand_dtype}, [64, 32]>
      %{x}k0_b = broadcast %{x}k0 : tensor<index, [32, 1]>
      %{x}kb = add %{x}k0_b, %{x}kb_l : tensor<index, [32, 1]>
      %{x}kb_ok = lt %{x}kb, %{x}k_b : tensor<bool, [32, 1]>
      %{x}kb_ok_b = broadcast %{x}kb_ok : tensor<bool, [32, 64]>
      %{x}b_mask = and %{x}kb_ok_b, %{x}col_ok_b : tensor<bool, [32, 64]>
      %{x}b_tile = read %{p.b} index(%{x}kb, %{x}cols) mask(%{x}b_mask) fill(%{x}zero) : tensor<{p.operand_dtype}, [32, 64]>
      %{x}acc_next = matmul %{x}a_tile, %{x}b_tile init(%{x}acc_in) {{acc = {p.acc}}} : tensor<{p.acc}, [64, 64]>
      yield %{x}acc_next
    }}
    {out or ""}
    %{x}row_ok_c = broadcast %{x}row_ok : tensor<bool, [64, 64]>
    %{x}col_ok_c = broadcast %{x}col_ok : tensor<bool, [64, 64]>
    %{x}c_mask = and %{x}row_ok_c, %{x}col_ok_c : tensor<bool, [64, 64]>
    write %{p.c}, {result} index(%{x}rows, %{x}cols) mask(%{x}c_mask)
  }}
"""
