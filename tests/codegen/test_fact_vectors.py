"""16-byte vector accesses from layout facts (`codegen/nvptx/fact_vectors.py`,
`codegen/llvm/memory._vector_ready`): with every view `aligned16` and `contiguous` (what
`intentc.load` infers at a call on dense, aligned arrays), vector add, the f32 row sum and
softmax move 4 consecutive coordinates a thread (the f16 row sum 8) as one
`ld.global.v4`/`st.global.v4` with no run-time alignment test, and cumsum's vector groups lose theirs; without the facts the
element-wise and reduction iterations keep one coordinate a group."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ptxas_report import ptxas_report

from intentc.driver import compile_kernel
from intentc.options import Specialization
from intentc.parse import parse

SAMPLES = Path(__file__).parents[2] / "ir_samples"
FACTS = ("aligned16", "contiguous")


def _row_sum_f32() -> str:
    text = (SAMPLES / "row_sum.kir").read_text()
    return text[text.index("kernel @row_sum_f16"):text.index("kernel @row_sum_i8")].replace("f16", "f32")


KERNELS = {   # name: (text, kernel, extents, (v4 loads, v4 stores) with the facts)
    "vector_add": ((SAMPLES / "vector_add.kir").read_text(), "vector_add", {}, (2, 1)),
    "row_sum_f32": (_row_sum_f32(), "row_sum_f32", {"N": 4096}, (8, 0)),
    "row_sum_f16": ((SAMPLES / "row_sum.kir").read_text(), "row_sum_f16", {"N": 2048}, (4, 0)),   # 8 halves a v4
    "softmax": ((SAMPLES / "row_softmax.kir").read_text(), "row_softmax", {"N": 1024}, (4, 4)),
    "cumsum": ((SAMPLES / "cumsum.kir").read_text(), "row_cumsum", {"N": 4096}, (4, 4)),
}


def _ptx(name: str, facts: tuple[str, ...]) -> str:
    text, kernel, extents, _ = KERNELS[name]
    views = [p.name for p in parse(text).find(kernel).params if getattr(p.type, "direction", None)]
    spec = Specialization(extents=extents, unit_stride=views, **dict.fromkeys(facts, views))
    return str(compile_kernel(text, kernel, "ptx", "sm_90", specialization=spec).artifacts["kernel.ptx"])


def _vectors(ptx: str) -> tuple[int, int]:
    return len(re.findall(r"ld\.global(?:\.nc)?\.v4\.b32", ptx)), len(re.findall(r"st\.global\.v4\.b32", ptx))


def _alignment_tests(ptx: str) -> int:
    """`and.b64 %rd, %rd, 15`: a vector group's run-time alignment test."""
    return len(re.findall(r"and\.b64\s+%rd\d+, %rd\d+, 15;", ptx))


@pytest.mark.parametrize("name", KERNELS)
def test_facts_make_every_group_a_checked_free_vector_access(name, tmp_path):
    ptx = _ptx(name, FACTS)
    assert _vectors(ptx) == KERNELS[name][3]
    assert _alignment_tests(ptx) == 0
    if shutil.which("ptxas"):
        ptxas_report(ptx, tmp_path)


@pytest.mark.parametrize("name", ["vector_add", "row_sum_f32", "row_sum_f16", "softmax"])
def test_without_facts_element_wise_and_reductions_keep_one_coordinate_a_group(name):
    assert _vectors(_ptx(name, ())) == (0, 0)


def test_without_facts_cumsum_tests_each_groups_alignment_at_run_time():
    ptx = _ptx("cumsum", ())
    assert _vectors(ptx) == (4, 4) and _alignment_tests(ptx) == 8
