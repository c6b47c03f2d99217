"""Which reads drop their NaN bits and which copy storage words (`codegen/llvm/nan_payloads.py`),
and on the CPU backend that a copied row gives back every bit pattern, fills included."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from differential import both
from intentc import parse
from intentc.codegen.llvm.nan_payloads import bit_copy_reads, payload_free_reads
from intentc.ir.types import ViewType

KERNELS = """
kernel @k(%x: view<f16, [%N], in>, %h: view<bf16, [%N], in>, %y: view<f16, [%N], out>, %z: view<f32, [%N], out>,
          %s: view<f32, [1], out>) {
  parallel %N {
  ^i(%i: index):
    %summed = read %x index(%i) : f16
    %copied = read %x index(%i) : f16
    %both = read %x index(%i) : f16
    %same = read %x index(%i) : f16
    %other = read %h index(%i) : bf16
    %w = cast %summed : f32
    %u = add %w, %w : f32
    write %z, %u index(%i)
    write %y, %copied index(%i)
    %v = cast %both : f32
    write %z, %v index(%i)
    write %y, %both index(%i)
    %again = cast %same : f16
    write %y, %again index(%i)
    %o = cast %other : f16
    write %y, %o index(%i)
  }
}
"""


def _reads() -> tuple[dict, set[int], set[int]]:
    kernel = parse(KERNELS, "k.kir").find("k")
    body = list(kernel.body)
    views = {p.name: p.type.dtype for p in kernel.params if isinstance(p.type, ViewType)}
    reads = {}

    def walk(ops):
        for op in ops:
            if op.name == "read":
                reads[op.results[0]] = id(op)
            for region in op.regions:
                walk(region.ops)
    walk(body)
    return reads, payload_free_reads(body), bit_copy_reads(body, views)


def test_nan_bits_are_dropped_only_where_no_use_sees_them():
    reads, free, _ = _reads()
    assert {name for name, ident in reads.items() if ident in free} == {"summed", "other"}


def test_only_reads_stored_as_they_are_copy_words():
    reads, _, copies = _reads()
    # %other is stored after a conversion; %both is also cast; %same through a same-type cast
    assert {name for name, ident in reads.items() if ident in copies} == {"copied"}


COPY = """
kernel @copy(%x: view<{t}, [%M, %N], in>, %y: view<{t}, [%M, %N], out>, %fill: {t}, %limit: index) {{
  parallel %M {{
  ^row(%r: index):
    %cols = iota : tensor<index, [%N]>
    %limits = broadcast %limit : tensor<index, [%N]>
    %keep = lt %cols, %limits : tensor<bool, [%N]>
    %v = read %x index(%r, %cols) mask(%keep) fill(%fill) : tensor<{t}, [%N]>
    write %y, %v index(%r, %cols)
  }}
}}
"""
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
         "f8e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("dtype", sorted(NUMPY))
def test_a_copied_row_keeps_every_pattern_and_the_fill(dtype):
    width = np.dtype(NUMPY[dtype]).itemsize * 8
    x = np.arange(1 << width, dtype=f"u{width // 8}").view(NUMPY[dtype]).reshape(-1, 256)
    fill = np.array(-1.5, dtype=NUMPY[dtype])
    inputs = {"x": x, "y": np.zeros_like(x), "fill": fill, "limit": np.int64(200)}
    got, expected = both(COPY.format(t=dtype), "copy", inputs)
    bits = f"u{width // 8}"
    assert np.array_equal(got["y"].view(bits), expected["y"].view(bits))
    assert np.array_equal(got["y"][:, :200].view(bits), x[:, :200].view(bits))
