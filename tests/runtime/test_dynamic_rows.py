"""A dynamic row's kernel compiles launch by launch (`runtime/dynamic_rows.py`): loading it
plans the mapping only, a launch compiles its bucket's variant (one compile), and the own
entry waits for a launch no variant serves or for a look at what was built. Without a GPU:
the CUDA runtime on the fake driver (`fake_cuda`), compiles through a recording compiler."""
from __future__ import annotations

import json

import numpy as np
import pytest
from fake_cuda import FakeTensor, install_driver

import intentc
from intentc.driver import compile_kernel, front_end
from intentc.runtime.cuda import deferred_rule
from intentc.runtime.kernel_cache import CACHE
from sample_files import ROOT


class RecordingCompiler:
    """The kernel cache, remembering the specialization of each request it was asked for."""

    def __init__(self):
        self.asked = []

    def artifacts(self, request):
        self.asked.append(request.specialization)
        return CACHE.artifacts(request)


def _text(sample: str) -> str:
    return (ROOT / "ir_samples" / f"{sample}.kir").read_text()


@pytest.mark.parametrize("sample,kernel", [("row_softmax", "row_softmax"), ("layernorm", "layernorm"),
                                           ("philox_dropout", "dropout"), ("cumsum", "row_cumsum"),
                                           ("row_sum", "row_sum_f16"), ("vector_add", "vector_add"),
                                           ("tiled_matmul", "matmul_tiled")])
def test_the_planned_rule_is_the_one_the_compile_records(sample, kernel):
    request = front_end(_text(sample), kernel, "cubin", "sm_90")
    rule = deferred_rule(request)
    launch = json.loads(compile_kernel(_text(sample), kernel, "ptx", "sm_90").artifacts["launch.json"])
    assert (rule.to_json() if rule else {}) == launch["variant_rule"]
    if sample in ("row_softmax", "layernorm", "philox_dropout", "cumsum", "row_sum"):
        assert rule is not None, "a dynamic row of the register form has variants"


def test_no_rule_where_the_compile_is_not_lazy_or_asks_for_one_variant():
    text = _text("row_softmax")
    for specialization in ({"lazy_variants": False}, {"variant": (961, 1023)}, {"extents": {"N": 1000}}):
        assert deferred_rule(front_end(text, "row_softmax", "cubin", "sm_90", specialization=specialization)) is None


def test_loading_compiles_nothing_and_a_first_launch_one_variant(monkeypatch):
    fake = install_driver(monkeypatch)
    compiler = RecordingCompiler()
    kernel = intentc.load(ROOT / "ir_samples" / "row_softmax.kir", "row_softmax", target="cuda", arch="sm_90",
                          compiler=compiler)
    assert compiler.asked == []
    for cols in (1000, 1000, 1024):     # arrays with shapes, as torch's: the variant is picked before binding
        x, y = (FakeTensor(np.zeros((2, cols), np.float32)) for _ in range(2))
        kernel(x=x, t=0.5, y=y)
    assert [s.variant for s in compiler.asked] == [(769, 1023), (1024, 1024)]
    assert len(fake.launches) == 3
    assert kernel.ptx.count(".entry ") == 1 and len(kernel.key) == 64     # what was built: the own entry, now
    assert [s.variant for s in compiler.asked] == [(769, 1023), (1024, 1024), ()]
    kernel(x=FakeTensor(np.zeros((2, 0), np.float32)), t=0.5, y=FakeTensor(np.zeros((2, 0), np.float32)))
    assert len(compiler.asked) == 3 and fake.launches[-1][1][0] == kernel.launch_config.block[0]


def test_an_illegal_call_gets_the_interpreters_diagnostic_from_the_variant(monkeypatch):
    install_driver(monkeypatch)
    kernel = intentc.load(ROOT / "ir_samples" / "row_softmax.kir", "row_softmax", target="cuda", arch="sm_90",
                          compiler=RecordingCompiler())
    with pytest.raises(intentc.DiagnosticError) as error:
        kernel(x=FakeTensor(np.zeros((2, 1000), np.float32)), t=0.5, y=FakeTensor(np.zeros((3, 1000), np.float32)))
    assert error.value.diagnostics[0].code.startswith("R")


def test_the_own_entry_is_compiled_at_load_when_deferral_is_off(monkeypatch):
    from intentc.runtime import cuda
    install_driver(monkeypatch)
    monkeypatch.setattr(cuda, "DEFER_OWN_ENTRY", False)
    compiler = RecordingCompiler()
    kernel = intentc.load(ROOT / "ir_samples" / "row_softmax.kir", "row_softmax", target="cuda", arch="sm_90",
                          compiler=compiler)
    assert isinstance(kernel.runner, cuda.CudaKernel) and [s.variant for s in compiler.asked] == [()]
    kernel(x=FakeTensor(np.zeros((2, 1000), np.float32)), t=0.5, y=FakeTensor(np.zeros((2, 1000), np.float32)))
    assert [s.variant for s in compiler.asked] == [(), (769, 1023)]
