"""The GPU ABI (docs/gpu.md "GPU ABI"): the argument words are kernel parameters, one
`.param .u64` a word then the status pointer (a staged program's scratch pointer one word
more), read with `ld.param`; a kernel whose words do not fit the parameter space is E0081."""
from __future__ import annotations

import re

import pytest

from intentc.codegen.llvm.abi import layout, slot_count
from intentc.codegen.llvm.kernel import PARAMETER_BYTES
from intentc.diagnostics import DiagnosticError
from intentc.driver import compile_kernel
from intentc.parse import parse
from sample_paths import sample_text
from staged_programs import CUMSUM


def _entry_params(ptx: str, entry: str) -> list[str]:
    header = re.search(rf"\.entry {entry}\((.*?)\)", ptx, re.S)
    assert header, entry
    return re.findall(r"\.param \.u64[^,\n]*", header.group(1))


def _words(source: str, kernel: str) -> int:
    return slot_count(layout(parse(source).find(kernel)))


def test_every_argument_word_is_a_parameter_read_from_the_parameter_space():
    source = sample_text("row_softmax")
    ptx = compile_kernel(source, "row_softmax", "ptx", "sm_90").artifacts["kernel.ptx"]
    params = _entry_params(ptx, "intentc_kernel_row_softmax")
    assert len(params) == _words(source, "row_softmax") + 1 and ".ptr" in params[-1]     # status last
    assert "ld.param.b64" in ptx


def test_a_staged_program_takes_its_scratch_pointer_as_one_word_more():
    artifacts = compile_kernel(CUMSUM, "cumsum", "ptx", "sm_90").artifacts
    ptx = artifacts["kernel.ptx"]
    entries = re.findall(r"\.entry (\S+)\(", ptx)
    assert len(entries) > 1
    for entry in entries:
        assert len(_entry_params(ptx, entry)) == _words(CUMSUM, "cumsum") + 2


def test_too_many_argument_words_for_the_parameter_space_is_a_diagnostic():
    views = (PARAMETER_BYTES // 8) // 7 + 1                      # rank-2 views: 7 words each
    params = ", ".join(f"%v{i}: view<f32, [%M, %N], in>" for i in range(views))
    source = (f"kernel @many({params}, %y: view<f32, [%M, %N], out>) {{\n"
              "  %r = iota {axis = 0} : tensor<index, [%M, %N]>\n"
              "  %c = iota {axis = 1} : tensor<index, [%M, %N]>\n"
              "  %v = read %v0 index(%r, %c) : tensor<f32, [%M, %N]>\n"
              "  write %y, %v index(%r, %c)\n}\n")
    with pytest.raises(DiagnosticError) as error:
        compile_kernel(source, "many", "ptx", "sm_90")
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.code == "E0081" and "kernel parameters" in diagnostic.message and diagnostic.line == 1
