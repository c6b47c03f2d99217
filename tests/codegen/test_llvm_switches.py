"""LLVM's command-line options are process-wide: the NVPTX code generator's `-disable-lsr`
(`codegen/llvm_switches.py`) holds only for its own call, so a CPU object compiled after a
PTX compile is the same as one compiled before (LSR changes this kernel's x86 code)."""
from __future__ import annotations

from intentc.driver import compile_kernel


def test_nvptx_code_generator_switch_does_not_leak_into_cpu_objects(root):
    source = (root / "ir_samples" / "row_softmax.kir").read_text()
    before = compile_kernel(source, "row_softmax", "cpu").artifacts["kernel.o"]
    compile_kernel(source, "row_softmax", "ptx", "sm_90")
    after = compile_kernel(source, "row_softmax", "cpu").artifacts["kernel.o"]
    assert after == before
