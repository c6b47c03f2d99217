"""Top-level products of two whole views (passes/top_level_tiles.py), shared by the pass's
equivalence tests and the GPU differential tests."""
from __future__ import annotations

import numpy as np

_TEMPLATE = """
kernel @NAME(%a: view<IN, [%M, %K], in>, %b: view<IN, [%K, %N], in>, %c: view<OUT, [%M, %N], out>) {
  %ar = iota {axis = 0} : tensor<index, [%M, %K]>
  %ac = iota {axis = 1} : tensor<index, [%M, %K]>
  %av = read %a index(%ar, %ac) : tensor<IN, [%M, %K]>
  %br = iota {axis = 0} : tensor<index, [%K, %N]>
  %bc = iota {axis = 1} : tensor<index, [%K, %N]>
  %bv = read %b index(%br, %bc) : tensor<IN, [%K, %N]>
  %cv = matmul %av, %bv {acc = ACC} : tensor<ACC, [%M, %N]>
  %cr = iota {axis = 0} : tensor<index, [%M, %N]>
  %cc = iota {axis = 1} : tensor<index, [%M, %N]>
CAST  write %c, RESULT index(%cr, %cc)
}
"""


def _program(name: str, operand: str, acc: str, out: str) -> str:
    cast = f"  %h = cast %cv : tensor<{out}, [%M, %N]>\n" if out != acc else ""
    return (_TEMPLATE.replace("NAME", name).replace("IN", operand).replace("ACC", acc).replace("OUT", out)
            .replace("CAST", cast).replace("RESULT", "%h" if cast else "%cv"))


TILE_PROGRAMS = {
    "hgemm_f32": _program("hgemm_f32", "f16", "f32", "f32"),
    "hgemm_f16": _program("hgemm_f16", "f16", "f32", "f16"),
    "sgemm": _program("sgemm", "f32", "f32", "f32"),
    "bgemm_bf16": _program("bgemm_bf16", "bf16", "f32", "bf16"),
}


def tile_inputs(kernel: str, shape: tuple[int, int, int], rng) -> dict:
    """Small integers: every product and partial sum exact in f32, so any order of the sum
    gives the same bits."""
    import ml_dtypes
    m, k, n = shape
    dtype = {"sgemm": np.float32, "bgemm_bf16": ml_dtypes.bfloat16}.get(kernel, np.float16)
    return {"a": rng.integers(-4, 5, (m, k)).astype(dtype), "b": rng.integers(-4, 5, (k, n)).astype(dtype)}
