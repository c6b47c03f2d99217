"""Affine forms of built integer values (`codegen/llvm/affine_forms.py`) and what they
decide while lowering: a register-form vector group of a 16-byte aligned, contiguous view
whose lanes are consecutive by construction builds its one vector access and no scalar
path (LLVM removed that branch before; now it is never built)."""
from __future__ import annotations

from pathlib import Path

from llvmlite import ir

from intentc.codegen.llvm.affine_forms import difference, multiple_of
from intentc.driver import compile_kernel
from intentc.options import Specialization
from intentc.parse import parse

SAMPLES = Path(__file__).parents[2] / "ir_samples"
I64 = ir.IntType(64)


def _builder():
    module = ir.Module()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64]), "f")
    return ir.IRBuilder(function.append_basic_block()), function.args


def test_difference_sees_through_sums_scales_and_shifts():
    b, (row, tid) = _builder()
    base = b.add(b.mul(row, ir.Constant(I64, 2048)), b.shl(tid, ir.Constant(I64, 2)))
    lane0 = b.add(base, ir.Constant(I64, 768))
    lane3 = b.add(b.add(b.mul(row, ir.Constant(I64, 2048)), b.mul(ir.Constant(I64, 4), tid)), ir.Constant(I64, 771))
    assert difference(lane3, lane0) == 3
    assert difference(b.sub(lane3, tid), lane0) is None      # a term left over
    assert difference(lane0, b.add(lane0, ir.Constant(I64, -1))) == 1


def test_an_integer_instruction_built_twice_is_one_term():
    b, (row, tid) = _builder()
    lane0 = b.add(b.mul(row, tid), ir.Constant(I64, 5))
    lane1 = b.add(b.mul(row, tid), ir.Constant(I64, 6))          # the product built again
    assert difference(lane1, lane0) == 1
    loaded = b.load(b.inttoptr(row, I64.as_pointer()))
    again = b.load(b.inttoptr(row, I64.as_pointer()))            # two loads: two terms
    assert difference(b.add(again, ir.Constant(I64, 1)), loaded) is None


def test_multiple_of_needs_every_coefficient_and_the_constant():
    b, (row, tid) = _builder()
    aligned = b.add(b.mul(row, ir.Constant(I64, 2048)), b.add(b.mul(tid, ir.Constant(I64, 4)), ir.Constant(I64, 768)))
    assert multiple_of(aligned, 4)
    assert not multiple_of(b.add(aligned, ir.Constant(I64, 2)), 4)
    assert not multiple_of(b.add(aligned, tid), 4)           # tid's coefficient 5
    assert not multiple_of(b.udiv(aligned, ir.Constant(I64, 2)), 4)   # an opaque term


def _pre_pipeline_ir(name: str, kernel: str, extents: dict, variant: tuple[int, int] | tuple[()] = ()) -> str:
    from intentc.codegen.llvm.kernel import LoweredKernel
    text = (SAMPLES / f"{name}.kir").read_text()
    views = [p.name for p in parse(text).find(kernel).params if getattr(p.type, "direction", None)]
    spec = Specialization(extents=extents, unit_stride=views, aligned16=views, contiguous=views, variant=variant)
    captured = []
    original = LoweredKernel.take_text

    def capture(lowered):
        captured.append(original(lowered))
        return captured[-1]
    LoweredKernel.take_text = capture
    try:
        compile_kernel(text, kernel, "ptx", "sm_90", specialization=spec)
    finally:
        LoweredKernel.take_text = original
    return captured[0]


def test_proven_groups_build_no_scalar_path():
    # nan_max's row (N = 2048, no mask): every group of its read and two writes is one
    # vector access known at compile time, so no predicated scalar access is built
    text = _pre_pipeline_ir("nan_max_vs_maximum_num", "nan_max", {"N": 2048})
    assert text.count("load <4 x float>") == 8 and text.count("store <4 x float>") == 16
    assert "ld.global.f32" not in text
    assert text.count("st.global.f32") == 2     # thread 0's two rank-0 row results


def test_softmax_groups_are_their_vector_accesses_alone():
    """Softmax at N = 1024: 4 vector loads and 4 vector stores a thread and row, no alignment
    test, no predicated scalar access, no bounds compare."""
    text = _pre_pipeline_ir("row_softmax", "row_softmax", {"N": 1024})
    assert text.count("load <4 x float>") == 4 and text.count("store <4 x float>") == 4
    assert "ld.global.f32" not in text and "st.global.f32" not in text
    assert ", 15\n" not in text and "icmp ult i64" not in text


def test_an_unproven_group_keeps_its_test():
    """Softmax's variant for rows of 769-1023 elements: the row's stride is read at run time,
    so each full group tests its alignment and keeps its predicated scalar accesses beside
    the vector one (3 full groups; the last one, partial, is scalar)."""
    text = _pre_pipeline_ir("row_softmax", "row_softmax", {}, (769, 1023))
    assert text.count("load <4 x float>") == 3 and text.count("store <4 x float>") == 3
    assert text.count(", 15\n") == 6
    assert text.count("ld.global.f32") == 16 and text.count("st.global.f32") == 16
