"""f32 libdevice functions as inline PTX templates (`nvptx/ptx_math.py`, docs/gpu.md "Flash
attention", session 10): LLVM's own code for the function, its registers in a scope of their
own; functions whose body branches or reads memory have none; the tensor-core flash kernel's
and the CTA mapping's exponentials are the template, and ptxas takes it."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from intentc.codegen.nvptx import ptx_math


def test_expf_template_is_llvms_straight_line_code():
    text = ptx_math.template("__nv_expf", "sm_90")
    assert text is not None and text.startswith("{ .reg ") and text.endswith(" }")
    assert "mov.b32 %mr1, $1;" in text and re.search(r"mov\.b32 \$0, %mr\d+; }$", text)
    assert "ex2.approx.ftz.f32" in text and "fma.rm.f32" in text      # libdevice's expf, FTZ only in ex2
    assert not re.search(r"%r\d", text)                               # every register renamed into the scope
    assert "param" not in text and "ret;" not in text


@pytest.mark.parametrize("name", ["__nv_sinf", "__nv_powf"])
def test_functions_that_branch_or_read_memory_have_no_template(name):
    assert ptx_math.template(name, "sm_90") is None


def test_flash_on_tensor_cores_calls_the_template(tmp_path):
    from pathlib import Path

    from intentc.driver import compile_kernel
    source = (Path(__file__).resolve().parents[2] / "ir_samples" / "attention_tensor_cores.kir").read_text()
    ptx = compile_kernel(source, "causal_attention_f16", "ptx", "sm_90",
                         specialization={"extents": {"D": 64}}).artifacts["kernel.ptx"]
    assert len(re.findall(r"mov\.b32 %mr1, %r\d+;", ptx)) == ptx.count("ex2.approx.ftz.f32") > 0   # each exp a template
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        done = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_cta_mapping_calls_the_template(monkeypatch):
    """The CTA mapping's exponentials are the template too where `ptx_math.TEMPLATE_KINDS`
    names it (the default since session 12's GPU round), as `launch.json` records; builtin scans
    call no math and keep their code."""
    from pathlib import Path

    from intentc.codegen.nvptx import ptx_math
    from intentc.driver import compile_kernel
    monkeypatch.setattr(ptx_math, "TEMPLATE_KINDS", frozenset({"cta"}))
    samples = Path(__file__).resolve().parents[2] / "ir_samples"
    artifacts = compile_kernel((samples / "row_softmax.kir").read_text(), "row_softmax", "ptx", "sm_90",
                               specialization={"extents": {"N": 1024}}).artifacts
    ptx = artifacts["kernel.ptx"]
    assert '"math_templates": true' in artifacts["launch.json"]
    assert len(re.findall(r"mov\.b32 %mr1, %r\d+;", ptx)) == ptx.count("ex2.approx.ftz.f32") > 0
