"""§6 reductions and scans: identities, empty inputs, NaN propagation, ties, generic and region forms."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.interp.reduction import identity_array, reduce_builtin, scan_builtin


def _reduce_kernel(kind, dtype, acc, n):
    acc_attr = f", acc = {acc}" if acc else ""
    result = acc or dtype
    return f"""kernel @k(%x: view<{dtype}, [{n}], in>, %out: view<{result}, [1], out>) {{
  %c = iota : tensor<index, [{n}]>
  %z = constant {{value = 0}} : index
  %v = read %x index(%c) : tensor<{dtype}, [{n}]>
  %r = reduce %v {{axes = [0], kind = {kind}{acc_attr}}} : {result}
  write %out, %r index(%z)
}}
"""


@pytest.mark.parametrize("kind,dtype,expected", [
    ("sum", "f32", 0.0), ("prod", "f32", 1.0), ("max", "f32", -np.inf), ("min", "f32", np.inf),
    ("max", "f8e4m3fn", -448.0), ("min", "f8e4m3fn", 448.0), ("max", "i8", -128), ("min", "u16", 65535),
    ("max", "u32", 0), ("any", "bool", False), ("all", "bool", True), ("sum", "i64", 0),
])
def test_empty_reduce_gives_identity(kind, dtype, expected):
    out = run(_reduce_kernel(kind, dtype, None, 0), "k", {"x": np.zeros(0, dtype=identity_array("sum", dtype).dtype
                                                                            if dtype != "bool" else bool)})
    assert out["out"].astype(np.float64).tolist() == [float(expected)]


def test_sum_widens_small_integers_and_wraps():
    x = np.full(300, 100, dtype=np.int8)
    assert reduce_builtin(x, "sum", [0], "i32") == 30000
    assert run(_reduce_kernel("sum", "i8", "i32", 300), "k", {"x": x})["out"].tolist() == [30000]
    wrapping = np.full(3, 2 ** 31 - 1, dtype=np.int32)
    assert reduce_builtin(wrapping, "sum", [0], "i32") == np.int32(2 ** 31 - 3)


def test_f16_sum_accumulates_in_f32():
    x = np.full(4096, 1.0, dtype=np.float16)   # 4096 > 2048: an f16 accumulator would stall
    out = run(_reduce_kernel("sum", "f16", "f32", 4096), "k", {"x": x})["out"]
    assert out.tolist() == [4096.0]


def test_max_and_min_propagate_nan():
    x = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    assert np.isnan(reduce_builtin(x, "max", [0], "f32"))
    assert np.isnan(reduce_builtin(x, "min", [0], "f32"))


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16"])
def test_max_and_min_order_zeros_as_maximum_and_minimum_do(dtype):
    """The kinds combine with `maximum`/`minimum` (IEEE 754-2019: -0 below +0), so a
    reduction or scan over mixed zeros does not depend on which zero comes first."""
    import ml_dtypes
    numpy_dtype = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}[dtype]
    for order in ([-0.0, 0.0, -0.0], [0.0, -0.0, -0.0]):
        x = np.array(order, dtype=numpy_dtype)
        assert not np.signbit(reduce_builtin(x, "max", [0], dtype))
        assert np.signbit(reduce_builtin(x, "min", [0], dtype))
    prefix = scan_builtin(np.array([-0.0, 0.0, -0.0], dtype=numpy_dtype), "max", 0, dtype, False, False)
    assert np.signbit(prefix.astype(np.float64)).tolist() == [True, False, False]
    suffix = scan_builtin(np.array([-0.0, 0.0, -0.0], dtype=numpy_dtype), "min", 0, dtype, False, True)
    assert np.signbit(suffix.astype(np.float64)).tolist() == [True, True, True]


def test_scan_variants():
    x = np.array([1, 2, 3, 4], dtype=np.int32)
    assert scan_builtin(x, "sum", 0, "i32", False, False).tolist() == [1, 3, 6, 10]
    assert scan_builtin(x, "sum", 0, "i32", True, False).tolist() == [0, 1, 3, 6]
    assert scan_builtin(x, "sum", 0, "i32", False, True).tolist() == [10, 9, 7, 4]
    assert scan_builtin(x, "sum", 0, "i32", True, True).tolist() == [9, 7, 4, 0]
    assert scan_builtin(x, "max", 0, "i32", True, False).tolist() == [-2 ** 31, 1, 2, 3]
    nan = np.array([1.0, np.nan, 0.0], dtype=np.float32)
    assert np.isnan(scan_builtin(nan, "max", 0, "f32", False, False)[1:]).all()
    assert scan_builtin(np.zeros(0, np.float32), "sum", 0, "f32", False, False).shape == (0,)


def test_bf16_scan_rounds_every_step():
    x = np.array([256.0, 1.0, 1.0, 1.0], dtype=np.float32)
    import ml_dtypes
    got = scan_builtin(x.astype(ml_dtypes.bfloat16), "sum", 0, "bf16", False, False).astype(np.float64)
    assert got[0] == 256.0 and got[1] == 256.0   # 257 is not a bf16 value: ties to even 256


ARG = """kernel @k(%x: view<f32, [%N], in>, %v: view<f32, [1], out>, %i: view<index, [1], out>) {
  %c = iota : tensor<index, [%N]>
  %z = constant {value = 0} : index
  %row = read %x index(%c) : tensor<f32, [%N]>
  %m, %at = arg_reduce %row {axis = 0, kind = max} : f32, index
  write %v, %m index(%z)
  write %i, %at index(%z)
}
"""


@pytest.mark.parametrize("values,value,index", [
    ([1.0, 5.0, 5.0, 2.0], 5.0, 1), ([np.nan, 5.0, np.nan], np.nan, 0), ([1.0, 2.0, np.nan, 9.0], np.nan, 2),
    ([-0.0, 0.0], 0.0, 0), ([3.0], 3.0, 0),
])
def test_arg_reduce_lowest_index_and_nan(values, value, index):
    out = run(ARG, "k", {"x": np.array(values, dtype=np.float32)})
    assert out["i"].tolist() == [index]
    assert np.array_equal(out["v"], np.array([value], np.float32), equal_nan=True)


WELFORD_LIKE = """kernel @k(%x: view<f32, [%N], in>, %out: view<f32, [2], out>) {
  %c = iota : tensor<index, [%N]>
  %row = read %x index(%c) : tensor<f32, [%N]>
  %ninf = constant {value = -inf} : f32
  %zero = constant {value = 0.0} : f32
  %m, %s = generic_reduce %row, %row init(%ninf, %zero) {axes = [0]} : f32, f32 {
  ^combine(%am: f32, %as: f32, %bm: f32, %bs: f32):
    %mm = maximum %am, %bm : f32
    %ss = add %as, %bs : f32
    yield %mm, %ss
  }
  %both = join %m, %s : tensor<f32, [2]>
  %i2 = iota : tensor<index, [2]>
  write %out, %both index(%i2)
}
"""


@pytest.mark.parametrize("n", [0, 1, 7, 64])
def test_generic_reduce_two_components(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = run(WELFORD_LIKE, "k", {"x": x})["out"]
    assert out[0] == (x.max() if n else -np.inf)
    assert np.isclose(out[1], x.sum(dtype=np.float64), atol=1e-5)


GSCAN = """kernel @k(%x: view<i32, [%N], in>, %out: view<i32, [%N], out>) {
  %c = iota : tensor<index, [%N]>
  %row = read %x index(%c) : tensor<i32, [%N]>
  %zero = constant {value = 0} : i32
  %r = generic_scan %row init(%zero) {axis = 0, exclusive = true} : tensor<i32, [%N]> {
  ^combine(%a: i32, %b: i32):
    %s = add %a, %b : i32
    yield %s
  }
  write %out, %r index(%c)
}
"""


def test_generic_scan_exclusive():
    x = np.arange(1, 11, dtype=np.int32)
    assert run(GSCAN, "k", {"x": x})["out"].tolist() == [0, 1, 3, 6, 10, 15, 21, 28, 36, 45]


REGION_FOLD = """kernel @k(%x: view<f32, [%N], in>, %out: view<f32, [1], out>, %first: view<index, [1], out>) {
  %c = iota : tensor<index, [%N]>
  %z = constant {value = 0} : index
  %row = read %x index(%c) : tensor<f32, [%N]>
  %zero = constant {value = 0.0} : f32
  %big = constant {value = 9223372036854775807} : index
  %s, %p = region_fold %row init(%zero, %big) {axis = 0} : f32, index {
  ^summarize(%len: index, %pos: tensor<index, [%len]>, %slice: tensor<f32, [%len]>):
    %t = reduce %slice {axes = [0], kind = sum} : f32
    %lo = reduce %pos {axes = [0], kind = min} : index
    yield %t, %lo
  } {
  ^combine(%a: f32, %ap: index, %b: f32, %bp: index):
    %u = add %a, %b : f32
    %q = minimum %ap, %bp : index
    yield %u, %q
  }
  write %out, %s index(%z)
  write %first, %p index(%z)
}
"""


@pytest.mark.parametrize("seed", range(5))
def test_region_fold_segments_and_absolute_positions(seed):
    x = np.arange(10, dtype=np.float32)
    out = run(REGION_FOLD, "k", {"x": x}, seed=seed)
    assert out["out"].tolist() == [45.0] and out["first"].tolist() == [0]
    empty = run(REGION_FOLD, "k", {"x": np.zeros(0, np.float32)}, seed=seed)
    assert empty["out"].tolist() == [0.0] and empty["first"].tolist() == [2 ** 63 - 1]
