"""Top-level programs with whole-tensor reductions and scans (nvptx/stages.py), shared by the
mapping tests and the GPU differential tests."""
from __future__ import annotations

import numpy as np

# Normalize by the sum: one reduction (depth 1) then element-wise use of its value.
NORMALIZE = """
kernel @normalize(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>, %total: view<f32, [], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %s = reduce %v {axes = [0], kind = sum} : f32
  %sb = broadcast %s : tensor<f32, [%N]>
  %q = div %v, %sb : tensor<f32, [%N]>
  write %y, %q index(%i)
  write %total, %s
}
"""

# Integers, two depths: the maximum, then an inclusive scan of the distances to it, and a
# min scan beside it (every result exact).
SPREAD = """
kernel @spread(%x: view<i32, [%N], in>, %m: view<i32, [], out>, %c: view<i64, [%N], out>, %lo: view<i32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<i32, [%N]>
  %mx = reduce %v {axes = [0], kind = max} : i32
  %mb = broadcast %mx : tensor<i32, [%N]>
  %d = sub %mb, %v : tensor<i32, [%N]>
  %cs = scan %d {acc = i64, axis = 0, kind = sum} : tensor<i64, [%N]>
  %mins = scan %v {axis = 0, kind = min} : tensor<i32, [%N]>
  write %m, %mx
  write %c, %cs index(%i)
  write %lo, %mins index(%i)
}
"""

# A float prefix sum (a scan keeps source order; its parenthesization is the compiler's, §6).
CUMSUM = """
kernel @cumsum(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %c = scan %v {axis = 0, kind = sum} : tensor<f32, [%N]>
  write %y, %c index(%i)
}
"""


# A 2-D domain: the maximum magnitude of a matrix, then every element scaled by it.
SCALE_2D = """
kernel @scale2d(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>, %peak: view<f32, [], out>) {
  %r = iota {axis = 0} : tensor<index, [%M, %N]>
  %c = iota {axis = 1} : tensor<index, [%M, %N]>
  %v = read %x index(%r, %c) : tensor<f32, [%M, %N]>
  %a = abs %v : tensor<f32, [%M, %N]>
  %m = reduce %a {axes = [0, 1], kind = max} : f32
  %mb = broadcast %m : tensor<f32, [%M, %N]>
  %q = div %v, %mb : tensor<f32, [%M, %N]>
  write %y, %q index(%r, %c)
  write %peak, %m
}
"""

# A dot product (the canonical form of a `reduce sum` of a `mul`: `contract`), then every
# element scaled by its reciprocal square root.
L2_NORMALIZE = """
kernel @l2_normalize(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>, %ss: view<f32, [], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %sq = mul %v, %v : tensor<f32, [%N]>
  %s = reduce %sq {axes = [0], kind = sum} : f32
  %r = rsqrt %s : f32
  %rb = broadcast %r : tensor<f32, [%N]>
  %o = mul %v, %rb : tensor<f32, [%N]>
  write %y, %o index(%i)
  write %ss, %s
}
"""

# A `dot` into an f64 accumulator from a start value (`init`: one more member of the sum).
DOT_INIT = """
kernel @dot_init(%a: view<f32, [%N], in>, %b: view<f32, [%N], in>, %start: f64, %out: view<f64, [], out>) {
  %i = iota : tensor<index, [%N]>
  %x = read %a index(%i) : tensor<f32, [%N]>
  %y = read %b index(%i) : tensor<f32, [%N]>
  %d = dot %x, %y init(%start) {acc = f64} : f64
  write %out, %d
}
"""

# An integer dot product (i8 operands, i32 accumulator: exact, wrapping in 32 bits) over a
# 2-D domain, every axis paired with itself.
IDOT_2D = """
kernel @idot2d(%a: view<i8, [%M, %N], in>, %b: view<i8, [%M, %N], in>, %out: view<i32, [], out>) {
  %r = iota {axis = 0} : tensor<index, [%M, %N]>
  %c = iota {axis = 1} : tensor<index, [%M, %N]>
  %x = read %a index(%r, %c) : tensor<i8, [%M, %N]>
  %y = read %b index(%r, %c) : tensor<i8, [%M, %N]>
  %d = contract %x, %y {acc = i32, lhs_contract = [0, 1], rhs_contract = [0, 1]} : i32
  write %out, %d
}
"""

# The first position of the maximum (NaN propagates: the first NaN's), then every element's
# distance below it.
ARGMAX = """
kernel @vec_argmax(%x: view<f32, [%N], in>, %v: view<f32, [], out>, %k: view<index, [], out>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %x0 = read %x index(%i) : tensor<f32, [%N]>
  %m, %p = arg_reduce %x0 {kind = max, axis = 0} : f32, index
  %mb = broadcast %m : tensor<f32, [%N]>
  %d = sub %x0, %mb : tensor<f32, [%N]>
  write %v, %m
  write %k, %p
  write %y, %d index(%i)
}
"""

# Two components from an author's combine, from identities that are not neutral (0.0): every
# fold starts from its first member, so only an empty domain gives them (§6).
RANGE = """
kernel @range_of(%x: view<f32, [%N], in>, %hi: view<f32, [], out>, %lo: view<f32, [], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %z = constant {value = 0.0} : f32
  %h, %l = generic_reduce %v, %v init(%z, %z) {axes = [0]} : f32, f32 {
  ^combine(%a0: f32, %a1: f32, %x0: f32, %x1: f32):
    %nh = maximum %a0, %x0 : f32
    %nl = minimum %a1, %x1 : f32
    yield %nh, %nl
  }
  write %hi, %h
  write %lo, %l
}
"""


def staged_inputs(kernel: str, n: int, rng) -> dict:
    return {"normalize": lambda: {"x": rng.uniform(0.5, 2.0, n).astype(np.float32)},
            "spread": lambda: {"x": rng.integers(-2 ** 20, 2 ** 20, n).astype(np.int32)},
            "cumsum": lambda: {"x": rng.uniform(-1, 1, n).astype(np.float32)},
            "vec_argmax": lambda: {"x": _ties_and_nans(rng, n)},
            "range_of": lambda: {"x": rng.uniform(-3.0, -1.0, n).astype(np.float32)},
            "l2_normalize": lambda: {"x": rng.uniform(-2.0, 2.0, n).astype(np.float32)},
            "dot_init": lambda: {"a": rng.standard_normal(n).astype(np.float32),
                                 "b": rng.standard_normal(n).astype(np.float32), "start": float(rng.standard_normal())},
            "exclusive_offsets": lambda: {"counts": rng.integers(0, 60000, n).astype(np.uint16)}}[kernel]()


def _ties_and_nans(rng, n: int) -> np.ndarray:
    """Few distinct values (the maximum occurs many times: the first position wins), and in
    larger inputs a NaN or two past the first chunk (the first NaN wins)."""
    x = rng.integers(-50, 50, n).astype(np.float32)
    if n > 2000:
        x[rng.integers(1500, n, 2)] = np.nan
    return x
