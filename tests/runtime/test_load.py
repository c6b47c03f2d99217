"""`intentc.load` on the host: in-place calls on numpy and DLPack arrays checked like the
interpreter's launches, the literal rules for scalars, shape variants, and the cache (in
process, on disk across processes, under threads), keyed as the compile service keys."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import intentc

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX_PATH = ROOT / "ir_samples" / "row_softmax.kir"
SOFTMAX = SOFTMAX_PATH.read_text()
NEGATE = """kernel @neg(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %r = neg %v : tensor<f32, [%N]>
  write %y, %r index(%i)
}
"""

def _softmax_reference(x, t):
    return intentc.run(SOFTMAX, "row_softmax", {"x": x, "t": np.float32(t)})["y"]


def _diagnostic(work):
    with pytest.raises(intentc.DiagnosticError) as error:
        work()
    return error.value.diagnostics[0]


class _DLPackOnly:
    """A host tensor seen only through the DLPack protocol (as torch or JAX CPU tensors are)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_numpy_in_place_matches_the_interpreter():
    x = np.random.default_rng(0).standard_normal((3, 37)).astype(np.float32)
    y = np.zeros_like(x)
    kernel = intentc.load(SOFTMAX_PATH, "row_softmax")
    returned = kernel(x=x, t=0.7, y=y)
    assert returned["y"] is y
    np.testing.assert_allclose(y, _softmax_reference(x, 0.7), rtol=2e-6, atol=1e-7)
    assert kernel.llvm and "intentc_kernel_row_softmax" in kernel.llvm and len(kernel.key) == 64


def test_strided_and_offset_views_are_written_where_they_lie():
    base = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    out = np.full(62, 9.0, np.float32)             # [::-2]: 31 elements, like base[3::2]
    kernel = intentc.load(NEGATE, "neg")
    kernel(x=base[3::2], y=out[::-2])
    expected = np.full(62, 9.0, np.float32)
    expected[::-2] = -base[3::2]
    np.testing.assert_array_equal(out, expected)


def test_dlpack_inputs_are_read_without_copies():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    intentc.load(NEGATE, "neg")(x=_DLPackOnly(x), y=_DLPackOnly(y))
    np.testing.assert_array_equal(y, -x)


_X = np.zeros((2, 4), np.float32)
_BAD_LAUNCHES = {"R0103": {"x": _X.astype(np.float64), "t": np.float32(1), "y": _X.copy()},
                 "R0105": {"x": _X, "t": np.float32(1), "y": np.zeros((2, 5), np.float32)},
                 "R0104": {"x": _X[0], "t": np.float32(1), "y": _X.copy()}}


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("code", sorted(_BAD_LAUNCHES))
def test_binding_checks_are_the_interpreters(target, code):
    inputs = _BAD_LAUNCHES[code]
    ours = _diagnostic(lambda: intentc.load(SOFTMAX, "row_softmax", target=target)(**inputs))
    reference = _diagnostic(lambda: intentc.run(SOFTMAX, "row_softmax", inputs))
    assert ours.code == code
    assert (ours.code, ours.message, ours.line, ours.col) == (reference.code, reference.message, reference.line,
                                                              reference.col)


def test_python_scalars_follow_the_literal_rules():
    x, y = np.ones((1, 3), np.float32), np.zeros((1, 3), np.float32)
    kernel = intentc.load(SOFTMAX, "row_softmax")
    kernel(x=x, t=2, y=y)                                   # an int exactly representable in f32
    np.testing.assert_allclose(y, _softmax_reference(x, 2.0))
    too_big = _diagnostic(lambda: kernel(x=x, t=1e300, y=y))
    assert too_big.code == "R0103" and "is not a f32 value" in too_big.message


def test_auto_specialization_compiles_one_variant_per_shape():
    kernel = intentc.load(SOFTMAX, "row_softmax", specialize="auto")
    for rows, cols in ((2, 8), (2, 8), (3, 5)):
        x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
        y = np.zeros_like(x)
        kernel(x=x, t=1.0, y=y)
        np.testing.assert_allclose(y, _softmax_reference(x, 1.0), rtol=2e-6, atol=1e-7)
    assert sorted(extents for extents, _ in kernel._variants) == [(("M", 2), ("N", 8)), (("M", 3), ("N", 5))]


def test_a_load_is_cached_in_process_and_its_key_is_the_services():
    sys.path.insert(0, str(ROOT / "server"))
    from intentc_server.models import CompileRequest
    from intentc_server.service import _key_inputs

    from intentc.cache import compute_key, key_text
    kernel = intentc.load(SOFTMAX, "row_softmax", extents={"N": 16})
    assert intentc.load(SOFTMAX, "row_softmax", extents={"N": 16}) is kernel
    canonical = key_text(intentc.print_module(intentc.parse(SOFTMAX)))
    dense = {fact: ["x", "y"] for fact in ("unit_stride", "aligned16", "contiguous")}   # what launch facts assume
    request = CompileRequest(source=SOFTMAX, kernel="row_softmax", target="cpu",
                             specialization={"extents": {"N": 16}, **dense})
    assert kernel.key == compute_key(_key_inputs(request, "canonical", canonical))
    plain = intentc.load(SOFTMAX, "row_softmax", extents={"N": 16}, launch_facts=False)
    request = CompileRequest(source=SOFTMAX, kernel="row_softmax", target="cpu", specialization={"extents": {"N": 16}})
    assert plain.key == compute_key(_key_inputs(request, "canonical", canonical))


def test_bad_requests_are_the_front_ends_diagnostics():
    assert _diagnostic(lambda: intentc.load(SOFTMAX, "row_softmax", extents={"N": -1})).code == "E0065"
    assert _diagnostic(lambda: intentc.load(SOFTMAX, "nope")).code == "E0060"


def test_concurrent_loads_in_threads_compile_once(tmp_path, monkeypatch):
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path))
    text = NEGATE.replace("@neg", "@neg_threads")
    with ThreadPoolExecutor(4) as pool:
        kernels = list(pool.map(lambda _: intentc.load(text, "neg_threads"), range(4)))
    assert all(k is kernels[0] for k in kernels) and kernels[0].compiled.source == "compiled"


_CHILD = textwrap.dedent("""
    import json, sys, intentc
    kernel = intentc.load(sys.argv[1], "neg_processes")
    print(json.dumps({"source": kernel.compiled.source, "key": kernel.key}))
""")


def _children(text: str, cache: Path, count: int) -> list[dict]:
    env = {**os.environ, "INTENTC_CACHE_DIR": str(cache)}
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, text], env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(count)]
    return [json.loads(child.communicate(timeout=300)[0]) for child in children]


def test_concurrent_processes_compile_once_and_a_new_process_hits_the_disk(tmp_path):
    text = NEGATE.replace("@neg", "@neg_processes")
    first = _children(text, tmp_path, 2)
    assert sorted(r["source"] for r in first) == ["compiled", "disk"]
    assert _children(text, tmp_path, 1)[0] == {"source": "disk", "key": first[0]["key"]}


def test_layout_facts_are_checked_at_every_call():
    kernel = intentc.load(NEGATE, "neg", facts={"unit_stride": ["x", "y"]})
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    kernel(x=x, y=y)
    np.testing.assert_array_equal(y, -x)
    broken = _diagnostic(lambda: kernel(x=x[::2], y=y[:8]))
    assert broken.code == "R0108" and "unit innermost stride" in broken.message


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_noalias_is_checked_like_the_interpreter(target):
    copy = NEGATE.replace("%y: view<f32, [%N], out>", "%y: view<f32, [%N], out, noalias>")
    memory = np.arange(12, dtype=np.float32)
    ours = _diagnostic(lambda: intentc.load(copy, "neg", target=target)(x=memory[:8], y=memory[4:]))
    reference = _diagnostic(lambda: intentc.run(copy, "neg", {"x": memory[:8], "y": memory[4:]}))
    assert ours.code == "R0109" and (ours.message, ours.line, ours.col) == (reference.message, reference.line,
                                                                           reference.col)
