"""Top-level programs over rows of one leading axis (passes/top_level_rows.py), shared by the
pass's equivalence tests and the GPU differential tests: each written with whole tensors,
reduced or scanned along the other axis."""
from __future__ import annotations

import numpy as np

_PROLOGUE = """  %r = iota {axis = 0} : tensor<index, [%M, %N]>
  %c = iota {axis = 1} : tensor<index, [%M, %N]>
"""

ROW_PROGRAMS = {
    # a softmax of each row, and each row's maximum
    "softmax_rows": """
kernel @softmax_rows(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>, %mx: view<f32, [%M], out>) {
""" + _PROLOGUE + """  %v = read %x index(%r, %c) : tensor<f32, [%M, %N]>
  %m = reduce %v {axes = [1], kind = max} : tensor<f32, [%M]>
  %m2 = reshape %m : tensor<f32, [%M, 1]>
  %mb = broadcast %m2 : tensor<f32, [%M, %N]>
  %d = sub %v, %mb : tensor<f32, [%M, %N]>
  %e = exp %d : tensor<f32, [%M, %N]>
  %s = reduce %e {axes = [1], kind = sum} : tensor<f32, [%M]>
  %s2 = reshape %s : tensor<f32, [%M, 1]>
  %sb = broadcast %s2 : tensor<f32, [%M, %N]>
  %o = div %e, %sb : tensor<f32, [%M, %N]>
  write %y, %o index(%r, %c)
  %i = iota : tensor<index, [%M]>
  write %mx, %m index(%i)
}
""",
    # RMS normalization of bf16 rows by a weight, in f32 (a scalar parameter beside the rows)
    "rms_rows": """
kernel @rms_rows(%x: view<bf16, [%M, %N], in>, %w: view<bf16, [%N], in>, %y: view<bf16, [%M, %N], out>, %eps: f32) {
""" + _PROLOGUE + """  %v = read %x index(%r, %c) : tensor<bf16, [%M, %N]>
  %wv = read %w index(%c) : tensor<bf16, [%M, %N]>
  %f = cast %v : tensor<f32, [%M, %N]>
  %sq = mul %f, %f : tensor<f32, [%M, %N]>
  %ss = reduce %sq {axes = [1], kind = sum} : tensor<f32, [%M]>
  %n = cast %N : f32
  %nb = broadcast %n : tensor<f32, [%M]>
  %mean = div %ss, %nb : tensor<f32, [%M]>
  %eb = broadcast %eps : tensor<f32, [%M]>
  %me = add %mean, %eb : tensor<f32, [%M]>
  %inv = rsqrt %me : tensor<f32, [%M]>
  %inv2 = reshape %inv : tensor<f32, [%M, 1]>
  %ib = broadcast %inv2 : tensor<f32, [%M, %N]>
  %o = mul %f, %ib : tensor<f32, [%M, %N]>
  %wf = cast %wv : tensor<f32, [%M, %N]>
  %ow = mul %o, %wf : tensor<f32, [%M, %N]>
  %ob = cast %ow : tensor<bf16, [%M, %N]>
  write %y, %ob index(%r, %c)
}
""",
    # each row's first maximum and its position, and the row's suffix sums (exclusive)
    "argmax_suffix_rows": """
kernel @argmax_suffix_rows(%x: view<i32, [%M, %N], in>, %v: view<i32, [%M], out>, %k: view<index, [%M], out>, %sfx: view<i64, [%M, %N], out>) {
""" + _PROLOGUE + """  %x0 = read %x index(%r, %c) : tensor<i32, [%M, %N]>
  %m, %p = arg_reduce %x0 {kind = max, axis = 1} : tensor<i32, [%M]>, tensor<index, [%M]>
  %s = scan %x0 {acc = i64, axis = 1, kind = sum, exclusive = true, reverse = true} : tensor<i64, [%M, %N]>
  %i = iota : tensor<index, [%M]>
  write %v, %m index(%i)
  write %k, %p index(%i)
  write %sfx, %s index(%r, %c)
}
""",
}


def row_inputs(kernel: str, shape: tuple[int, int], rng) -> dict:
    n = shape[1]
    return {"softmax_rows": lambda: {"x": rng.uniform(-4, 4, shape).astype(np.float32)},
            "rms_rows": lambda: {"x": rng.standard_normal(shape).astype(np.float32).astype(_bf16()),
                                 "w": rng.standard_normal(n).astype(np.float32).astype(_bf16()), "eps": 1e-5},
            "argmax_suffix_rows": lambda: {"x": rng.integers(-20, 20, shape).astype(np.int32)}}[kernel]()


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16
