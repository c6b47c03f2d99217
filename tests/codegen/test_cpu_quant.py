"""Q8_K / Q4_K, scaled and sparse contract on the CPU against the interpreter, to the bit,
on the formats and edge inputs the samples do not reach: Q4_K quantization, Q8_K
decoding, blocks of zeros, constants, huge and tiny magnitudes, NaN scale codes, infinite
rhs under sparse zeros, and invalid metadata (R0401)."""
from __future__ import annotations

import numpy as np
import pytest

from conformance import SPARSE
from differential import assert_close, assert_same_bits, both
from intentc.api import run
from intentc.diagnostics import DiagnosticError
from intentc.runtime.cpu import compile_cpu


BYTES = {"q8_k": 292, "q4_k": 144}


def _codec(op: str, fmt: str) -> str:
    (src, s), (dst, t) = [("f32", 256), ("u8", BYTES[fmt])][::1 if op == "quantize" else -1]
    return f"""kernel @k(%x: view<{src}, [%B, {s}], in>, %y: view<{dst}, [%B, {t}], out>) {{
  %b = iota {{axis = 0}} : tensor<index, [%B, 1]>
  %s = iota : tensor<index, [{s}]>
  %t = iota : tensor<index, [{t}]>
  %v = read %x index(%b, %s) : tensor<{src}, [%B, {s}]>
  %r = {op} %v {{format = {fmt}}} : tensor<{dst}, [%B, {t}]>
  write %y, %r index(%b, %t)
}}"""


def _edge_rows(rng) -> np.ndarray:
    rows = [rng.standard_normal(256), np.zeros(256), np.full(256, 3.5), np.full(256, -2.0),
            rng.standard_normal(256) * 1e30, rng.standard_normal(256) * 1e-38, np.abs(rng.standard_normal(256)),
            -np.abs(rng.standard_normal(256)), np.where(rng.random(256) < 0.9, 0.0, rng.standard_normal(256))]
    spiky = rng.standard_normal(256)
    spiky[17] = -400.0
    rows.append(spiky)
    return np.array(rows, dtype=np.float32)


@pytest.mark.parametrize("fmt", ["q8_k", "q4_k"])
@pytest.mark.parametrize("seed", [3, 4])
def test_quantize_then_dequantize_matches_interpreter_bits(fmt, seed):
    nbytes = BYTES[fmt]
    rng = np.random.default_rng(seed)
    x = _edge_rows(rng)
    got, expected = both(_codec("quantize", fmt), "k", {"x": x, "y": np.zeros((len(x), nbytes), np.uint8)})
    assert_same_bits(got["y"], expected["y"], "records")
    records = expected["y"]
    got, expected = both(_codec("dequantize", fmt), "k",
                         {"x": records, "y": np.zeros((len(x), 256), np.float32)})
    assert_same_bits(got["y"], expected["y"], "values")
    assert np.isfinite(expected["y"][:4]).all() and np.abs(expected["y"][0] - x[0]).max() < 0.5


DOT = """kernel @k(%w: view<u8, [%NB, 144], in>, %x: view<u8, [%NB, 292], in>, %y: view<f32, [1], out>) {
  %b = iota {axis = 0} : tensor<index, [%NB, 1]>
  %wi = iota : tensor<index, [144]>
  %xi = iota : tensor<index, [292]>
  %wq = read %w index(%b, %wi) : tensor<u8, [%NB, 144]>
  %xq = read %x index(%b, %xi) : tensor<u8, [%NB, 292]>
  %d = quantized_dot %wq, %xq {lhs_format = q4_k, rhs_format = q8_k} : f32
  %zero = constant {value = 0} : index
  write %y, %d index(%zero)
}"""


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_quantized_dot_float_sequence_matches_interpreter_bits(seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 256, (7, 144)).astype(np.uint8)
    w[:, 0:4] = rng.standard_normal((7, 2)).astype(np.float16).view(np.uint8)
    x = _edge_rows(rng)[:7] * 7
    quantized = both(_codec("quantize", "q8_k"), "k", {"x": x, "y": np.zeros((7, 292), np.uint8)})[1]
    got, expected = both(DOT, "k", {"w": w, "x": quantized["y"], "y": np.zeros(1, np.float32)})
    assert_same_bits(got["y"], expected["y"], "dot")
    assert expected["y"][0] != 0


def test_sparse_unselected_positions_never_meet_the_rhs():
    """§7: no dense operand; an inf in rhs row 1, which no metadata selects, is not 0 * inf."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    meta = np.array([[0, 1, 0, 1]] * 3, np.uint8)
    b = rng.standard_normal((8, 5)).astype(np.float32)
    b[1, 2] = np.inf                        # group 0 always stores position 0: row 1 is never selected
    inputs = {"a": a, "meta": meta, "b": b, "c": np.zeros((3, 5), np.float32)}
    got, expected = both(SPARSE, "k", inputs)
    assert_close(got["c"], expected["c"], 1e-6, "c")      # f32 sums in different legal orders (§6)
    assert np.isfinite(expected["c"]).all() and np.isfinite(got["c"]).all()


@pytest.mark.parametrize("meta_value,k", [(2, 8), (0, 7)])
def test_invalid_sparse_metadata_is_the_interpreters_error(meta_value, k):
    meta = np.zeros((2, 4), np.uint8)
    meta[1, 3] = meta_value
    inputs = {"a": np.ones((2, 4), np.float32), "meta": meta, "b": np.ones((k, 3), np.float32),
              "c": np.zeros((2, 3), np.float32)}
    codes = []
    for runner in (lambda: compile_cpu(SPARSE, "k")(inputs), lambda: run(SPARSE, "k", inputs)):
        with pytest.raises(DiagnosticError) as error:
            runner()
        codes.append(error.value.diagnostics[0].code)
    assert codes == ["R0401", "R0401"]


SCALED = """kernel @k(%a: view<u8, [%M, %G, 4], in>, %as: view<u8, [%M, %G], in>, %b: view<u8, [%G, 4, %N], in>, %bs: view<u8, [%N, %G], in>, %c: view<f32, [%M, %N], out>) {
  %m = iota {axis = 0} : tensor<index, [%M, 1, 1]>
  %g = iota {axis = 0} : tensor<index, [%G, 1]>
  %e = iota : tensor<index, [4]>
  %g3 = iota {axis = 0} : tensor<index, [%G, 1, 1]>
  %e3 = iota {axis = 0} : tensor<index, [4, 1]>
  %n = iota : tensor<index, [%N]>
  %m2 = iota {axis = 0} : tensor<index, [%M, 1]>
  %n2 = iota {axis = 0} : tensor<index, [%N, 1]>
  %gs = iota : tensor<index, [%G]>
  %av = read %a index(%m, %g, %e) : tensor<u8, [%M, %G, 4]>
  %asv = read %as index(%m2, %gs) : tensor<u8, [%M, %G]>
  %bv = read %b index(%g3, %e3, %n) : tensor<u8, [%G, 4, %N]>
  %bsv = read %bs index(%n2, %gs) : tensor<u8, [%N, %G]>
  %cv = scaled_contract %av, %asv, %bv, %bsv {acc = f32, format = e4m3, group_size = 4} : tensor<f32, [%M, %N]>
  write %c, %cv index(%m2, %n)
}"""


def test_e4m3_scaled_contract_with_nan_scale_codes_matches_interpreter():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, (5, 3, 4)).astype(np.uint8)
    a[a == 0x7F] = 0      # keep e4m3 NaN codes out of all but one element
    a[a == 0xFF] = 0
    b = rng.integers(0, 128, (3, 4, 6)).astype(np.uint8)
    scales_a = rng.integers(110, 140, (5, 3)).astype(np.uint8)
    scales_a[2, 1] = 255  # a NaN scale poisons row 2
    scales_b = rng.integers(110, 140, (6, 3)).astype(np.uint8)
    inputs = {"a": a, "as": scales_a, "b": b, "bs": scales_b, "c": np.zeros((5, 6), np.float32)}
    got, expected = both(SCALED, "k", inputs)
    assert_same_bits(got["c"], expected["c"], "c")
    assert np.isnan(expected["c"][2]).all() and np.isfinite(expected["c"][[0, 1, 3, 4]]).all()
