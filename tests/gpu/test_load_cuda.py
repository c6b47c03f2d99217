"""`intentc.load(..., target="cuda")` on GPU tensors: zero-copy torch and CuPy arguments
(strided and offset views included) checked as the interpreter checks a launch, launches on
the caller's stream, illegal inputs reported at the next synchronize, and a cache hit in a
fresh process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_required import requires_gpu

import intentc
from staged_programs import CUMSUM

pytestmark = requires_gpu()
torch = pytest.importorskip("torch", reason="the CUDA API tests pass torch tensors")

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "ir_samples" / "vector_add.kir"
SOFTMAX = ROOT / "ir_samples" / "row_softmax.kir"
NEGATE = """kernel @neg(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %r = neg %v : tensor<f32, [%N]>
  write %y, %r index(%i)
}
"""
DIVIDE = """kernel @div(%a: view<i32, [%N], in>, %b: view<i32, [%N], in>, %y: view<i32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %u = read %a index(%i) : tensor<i32, [%N]>
  %v = read %b index(%i) : tensor<i32, [%N]>
  %r = floordiv %u, %v : tensor<i32, [%N]>
  write %y, %r index(%i)
}
"""

ACCUMULATE = (ROOT / "tests" / "runtime" / "accumulate.kir").read_text()      # y += x, y noalias


def _interpreted(source: Path | str, kernel: str, inputs: dict) -> dict:
    host = {name: value.cpu().numpy() if hasattr(value, "cpu") else value for name, value in inputs.items()}
    return intentc.run(source.read_text() if isinstance(source, Path) else source, kernel, host)


def test_torch_tensors_in_place_match_the_interpreter():
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    z = torch.empty_like(x)
    kernel = intentc.load(VECTOR_ADD, "vector_add", target="cuda")
    assert kernel(x=x, y=y, z=z)["z"] is z
    kernel.synchronize()
    np.testing.assert_array_equal(z.cpu().numpy(), _interpreted(VECTOR_ADD, "vector_add", {"x": x, "y": y})["z"])
    assert kernel.ptx.startswith("//") and kernel.launch_config.mapping in ("cta", "grid-stride")


def test_strided_and_offset_views_without_copies():
    base = torch.randn(4001, device="cuda")
    out = torch.full((4000,), 7.0, device="cuda")
    kernel = intentc.load(NEGATE, "neg", target="cuda")
    kernel(x=base[1::2], y=out[1::2])           # (torch.flip copies: torch has no negative strides)
    kernel.synchronize()
    expected = torch.full((4000,), 7.0, device="cuda")
    expected[1::2] = -base[1::2]
    assert torch.equal(out, expected) and not torch.equal(out, torch.full_like(out, 7.0))


def test_softmax_specialized_automatically_per_shape():
    kernel = intentc.load(SOFTMAX, "row_softmax", target="cuda", specialize="auto")
    for rows, cols in ((64, 256), (3, 1000)):
        x = torch.randn(rows, cols, device="cuda")
        y = torch.empty_like(x)
        kernel(x=x, t=0.5, y=y)
        kernel.synchronize()
        reference = _interpreted(SOFTMAX, "row_softmax", {"x": x, "t": np.float32(0.5)})["y"]
        np.testing.assert_allclose(y.cpu().numpy(), reference, rtol=1e-5, atol=1e-7)
    assert len(kernel._variants) == 2


def test_cupy_arrays_pass_by_device_pointer():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.zeros(1000, dtype=cupy.float32)
    kernel = intentc.load(NEGATE, "neg", target="cuda")
    kernel(x=x, y=y, stream=cupy.cuda.get_current_stream())
    kernel.synchronize(cupy.cuda.get_current_stream())
    assert bool((y == -x).all())


def test_launches_go_on_the_callers_stream():
    kernel = intentc.load(NEGATE, "neg", target="cuda")
    x = torch.randn(1 << 20, device="cuda")
    y = torch.zeros_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kernel(x=x, y=y)                  # torch's current stream: `stream`
        copied = y.clone()                # ordered after the kernel on the same stream
    stream.synchronize()
    assert torch.equal(copied, -x)


def test_binding_checks_are_the_interpreters():
    kernel = intentc.load(VECTOR_ADD, "vector_add", target="cuda")
    x = torch.zeros(8, device="cuda")
    for inputs in ({"x": x.double(), "y": x, "z": x.clone()}, {"x": x, "y": x[:4], "z": x.clone()}):
        with pytest.raises(intentc.DiagnosticError) as ours:
            kernel(**inputs)
        with pytest.raises(intentc.DiagnosticError) as reference:
            _interpreted(VECTOR_ADD, "vector_add", inputs)
        assert ours.value.diagnostics[0].message == reference.value.diagnostics[0].message
    with pytest.raises(intentc.DiagnosticError) as host:
        kernel(x=np.zeros(8, np.float32), y=x, z=x.clone())
    assert host.value.diagnostics[0].code == "R0108" and "cpu memory" in host.value.diagnostics[0].message


def test_an_illegal_input_is_reported_at_the_next_synchronize():
    kernel = intentc.load(DIVIDE, "div", target="cuda")
    a = torch.arange(16, dtype=torch.int32, device="cuda")
    b = torch.ones(16, dtype=torch.int32, device="cuda")
    b[5] = 0
    kernel(a=a, b=b, y=torch.empty_like(a))        # asynchronous: nothing raised here
    with pytest.raises(intentc.DiagnosticError) as error:
        kernel.synchronize()
    assert error.value.diagnostics[0].code == "R0201"
    kernel.synchronize()                            # reported once


def test_a_fresh_process_loads_from_the_disk_cache(tmp_path):
    script = ("import json, sys, intentc; k = intentc.load(sys.argv[1], 'neg', target='cuda'); "
              "print(json.dumps({'source': k.compiled.source, 'key': k.key}))")
    env = {**os.environ, "INTENTC_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script, NEGATE], env=env, capture_output=True,
                                      text=True, check=True, timeout=300).stdout) for _ in range(2)]
    assert [r["source"] for r in runs] == ["compiled", "disk"] and runs[0]["key"] == runs[1]["key"]


def _counting_binds(kernel) -> list:
    """The calls that were bound and checked in full (the rest took the fast path)."""
    binds: list = []
    prepare = kernel.runner.prepare
    kernel.runner.prepare = lambda arrays, constexprs: binds.append(sorted(arrays)) or prepare(arrays, constexprs)
    return binds


def _code(work) -> str:
    with pytest.raises(intentc.DiagnosticError) as error:
        work()
    return error.value.diagnostics[0].code


def test_a_call_seen_before_binds_nothing_and_any_change_it_was_checked_for_is_checked_again():
    """The fast path reuses a launch only for a call equal to the one bound and checked: new
    tensor objects on the same memory reuse it; a change of shape, dtype, strides, offset
    (aliasing a noalias view), device or torch's negation bit is bound and checked again. (One
    compile serves every layout: without launch facts, which give the strided call a variant.)"""
    kernel = intentc.load(ACCUMULATE, "acc", target="cuda", launch_facts=False)
    binds = _counting_binds(kernel)
    base = torch.zeros(64, device="cuda")
    base[0:16] = torch.arange(1, 17, dtype=torch.float32, device="cuda")
    expected = base.clone()
    for _ in range(3):
        kernel(x=base[0:8], y=base[32:40])         # new view objects each time, same memory and layout
        expected[32:40] += expected[0:8]
    kernel.synchronize()
    assert torch.equal(base, expected) and len(binds) == 1
    assert _code(lambda: kernel(x=base[0:8], y=base[4:12])) == "R0109"        # offset: now overlapping
    assert _code(lambda: kernel(x=base[0:8], y=base[32:39])) == "R0105"       # shape
    assert _code(lambda: kernel(x=base[0:8].double(), y=base[32:40])) == "R0103"   # dtype
    assert _code(lambda: kernel(x=base[0:8].cpu(), y=base[32:40])) == "R0108"      # device
    negated = torch.zeros(8, dtype=torch.cfloat, device="cuda").conj().imag
    assert _code(lambda: kernel(x=negated, y=base[32:40])) == "R0108"              # negation bit
    kernel(x=base[0:16:2], y=base[32:40])          # strides: legal, and read with the new strides
    expected[32:40] += expected[0:16:2]
    assert len(binds) == 7
    kernel(x=base[0:8], y=base[32:40])             # the same pointers as the strided call, other strides:
    expected[32:40] += expected[0:8]               # not that call's launch, the first layout's template
    kernel.synchronize()
    assert torch.equal(base, expected) and len(binds) == 7



def test_calls_on_new_memory_with_a_seen_layout_bind_nothing_and_match_the_interpreter():
    """New-pointer calls (`launch_template.py`): fresh tensors at every call, laid out as a
    call bound before, are launched from its template; each result is the interpreter's. (One
    compile serves every layout: without launch facts, which give the offset and strided
    views variants; `test_launch_facts_cuda.py` runs the paths with them.)"""
    kernel = intentc.load(NEGATE, "neg", target="cuda", launch_facts=False)
    binds = _counting_binds(kernel)
    # an offset view has the contiguous one's layout (its data pointer says where it starts)
    layouts = {"contiguous": lambda t: t[0:3000], "offset": lambda t: t[7:3007], "strided": lambda t: t[1::2][:3000]}
    for name, layout in layouts.items():
        for _ in range(4):
            x, y = layout(torch.randn(6100, device="cuda")), layout(torch.full((6100,), 3.0, device="cuda"))
            kernel(x=x, y=y)
            kernel.synchronize()
            np.testing.assert_array_equal(y.cpu().numpy(), _interpreted(NEGATE, "neg", {"x": x})["y"], name)
    assert len(binds) == 2


def test_a_staged_call_on_two_streams_at_once_gives_each_stream_its_scratch():
    """The same staged call (same tensors) queued on two streams at once: each stream's
    launches use scratch memory of their own, so both write the interpreter's prefix sums."""
    kernel = intentc.load(CUMSUM, "cumsum", target="cuda")
    assert kernel.launch_config.stages
    x = torch.randint(-8, 8, (1 << 20,), device="cuda").float()      # sums exact in any order
    y = torch.zeros_like(x)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream())
    for _ in range(8):
        for stream in streams:
            kernel(x=x, y=y, stream=stream)
    torch.cuda.synchronize()
    kernel.synchronize()
    sequence = kernel.runner.seen.find({"x": x, "y": y})
    assert sorted(sequence._scratch) == sorted(s.cuda_stream for s in streams)
    np.testing.assert_array_equal(y.cpu().numpy(), _interpreted(CUMSUM, "cumsum", {"x": x})["y"])



class _OnlyProtocol:
    """A torch CUDA tensor seen through one protocol only: DLPack (as JAX GPU arrays are) or
    `__cuda_array_interface__` (as Numba and other libraries' arrays are)."""

    def __init__(self, tensor, protocol: str):
        self._tensor, self._protocol = tensor, protocol

    def __getattr__(self, name: str):
        if name.startswith("__dlpack") and self._protocol == "dlpack":
            return getattr(self._tensor, name)
        if name == "__cuda_array_interface__" and self._protocol == "cai":
            return self._tensor.__cuda_array_interface__
        raise AttributeError(name)


@pytest.mark.parametrize("protocol", ["dlpack", "cai"])
def test_arrays_of_any_library_pass_by_device_pointer(protocol):
    kernel = intentc.load(NEGATE, "neg", target="cuda")
    base, out = torch.randn(3001, device="cuda"), torch.zeros(3000, device="cuda")
    x, y = base[1::2], out[::2]                    # strided and offset
    kernel(x=_OnlyProtocol(x, protocol), y=_OnlyProtocol(y, protocol))
    kernel.synchronize()
    assert torch.equal(out[::2], -x) and not out[1::2].any()


def test_threads_launching_on_their_own_streams_with_new_memory():
    """Four threads, each on a stream of its own, call one kernel on fresh tensors: the fast
    paths' shared tables under threads; every result is the interpreter's."""
    from concurrent.futures import ThreadPoolExecutor
    kernel = intentc.load(NEGATE, "neg", target="cuda")

    def work(seed: int) -> bool:
        stream = torch.cuda.Stream()
        generator = torch.Generator(device="cuda").manual_seed(seed)
        with torch.cuda.stream(stream):
            pairs = []
            for _ in range(50):
                x = torch.randn(2048, device="cuda", generator=generator)
                y = torch.empty_like(x)
                kernel(x=x, y=y)
                pairs.append((x, y))
            stream.synchronize()
            return all(torch.equal(y, -x) for x, y in pairs)
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))
    kernel.synchronize()


def test_the_readme_gpu_example_runs_and_matches_the_interpreter(monkeypatch, capsys):
    from readme_snippets import from_python_examples, run_example
    names = run_example(from_python_examples()[0], monkeypatch)
    rows = names["x"][:32]
    expected = _interpreted(SOFTMAX, "row_softmax", {"x": rows, "t": np.float32(0.5)})["y"]
    np.testing.assert_allclose(names["y"][:32].cpu().numpy(), expected, rtol=1e-5, atol=1e-7)
    assert names["softmax"].key in capsys.readouterr().out
