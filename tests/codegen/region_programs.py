"""Kernels whose loops and ifs run per coordinate (codegen/llvm/coordinate_region.py), shared
by the CPU lowering tests and the GPU differential tests."""
from __future__ import annotations

import numpy as np

# A top-level loop carrying two u32 tensors, with an `if` on a scalar inside (integer ops:
# every target gives the interpreter's bits).
MIX = """
kernel @mix(%x: view<u32, [%N], in>, %R: constexpr<i32>, %y: view<u32, [%N], out>, %z: view<u32, [%N], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %c2 = constant {value = 2} : index
  %r = cast %R : index
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<u32, [%N]>
  %s13 = full {value = 13} : tensor<u32, [%N]>
  %s17 = full {value = 17} : tensor<u32, [%N]>
  %h, %g = loop %c0, %r, %c1 iter(%v, %v) : tensor<u32, [%N]>, tensor<u32, [%N]> {
  ^step(%k: index, %a: tensor<u32, [%N]>, %acc: tensor<u32, [%N]>):
    %b = shl %a, %s13 : tensor<u32, [%N]>
    %c = xor %a, %b : tensor<u32, [%N]>
    %d = shr %c, %s17 : tensor<u32, [%N]>
    %e = xor %c, %d : tensor<u32, [%N]>
    %parity = mod %k, %c2 : index
    %odd = eq %parity, %c1 : bool
    %kk = cast %k : u32
    %kb = broadcast %kk : tensor<u32, [%N]>
    %f = if %odd : tensor<u32, [%N]> {
    ^then:
      %p = add %e, %kb : tensor<u32, [%N]>
      yield %p
    } {
    ^else:
      %m = mul %e, %v : tensor<u32, [%N]>
      yield %m
    }
    %acc2 = add %acc, %f : tensor<u32, [%N]>
    yield %f, %acc2
  }
  write %y, %h index(%i)
  write %z, %g index(%i)
}
"""

# The same shape with an effect in the loop: an ordered loop that must not run per coordinate.
WRITES_IN_LOOP = """
kernel @writes(%x: view<f32, [%N], in>, %y: view<f32, [%N], inout>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %c3 = constant {value = 3} : index
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %out = loop %c0, %c3, %c1 iter(%v) : tensor<f32, [%N]> {
  ^step(%k: index, %a: tensor<f32, [%N]>):
    %b = add %a, %a : tensor<f32, [%N]>
    write %y, %b index(%i)
    yield %b
  }
  write %y, %out index(%i)
}
"""


def mix_inputs(n: int, rng) -> dict:
    return {"x": rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)}
