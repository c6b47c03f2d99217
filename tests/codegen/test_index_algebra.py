"""What the lowering proves about index values as it builds them
(`codegen/llvm/index_algebra.py`): multiples of a power of two and constant differences,
and that a vector group proven so is built as its vector access alone (no run-time test,
no branch, no scalar copy of its accesses for LLVM to fold away)."""
from __future__ import annotations

from pathlib import Path

from llvmlite import ir

from intentc.codegen.llvm.builder import LoweringBuilder
from intentc.codegen.llvm.index_algebra import constant_difference, known_multiple
from intentc.driver import compile_kernel
from intentc.options import Specialization

SAMPLES = Path(__file__).parents[2] / "ir_samples"
I64 = ir.IntType(64)


def _builder() -> tuple[LoweringBuilder, list[ir.Argument]]:
    function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [I64, I64, ir.IntType(32)]), "f")
    return LoweringBuilder(function.append_basic_block()), list(function.args)


def test_multiples():
    b, (x, y, narrow) = _builder()
    four = ir.Constant(I64, 4)
    lane = b.mul(b.zext(narrow, I64), four)                 # tid · V
    row = b.mul(x, ir.Constant(I64, 1024))                  # row · S
    assert known_multiple(b.add(row, b.add(lane, ir.Constant(I64, 256))), 4)
    assert known_multiple(b.shl(x, ir.Constant(I64, 3)), 8)
    assert known_multiple(b.sub(row, lane), 4)
    assert not known_multiple(b.add(row, b.add(lane, ir.Constant(I64, 1))), 4)   # a lane past the first
    assert not known_multiple(b.add(row, x), 4)             # a run-time term
    assert not known_multiple(b.mul(x, y), 2)
    assert not known_multiple(b.mul(x, ir.Constant(I64, 1022)), 4)


def test_constant_differences():
    b, (x, y, _) = _builder()
    base = b.mul(x, ir.Constant(I64, 4))
    first = b.add(b.mul(y, ir.Constant(I64, 1024)), base)
    assert constant_difference(base, base) == 0
    assert constant_difference(b.add(base, ir.Constant(I64, 3)), base) == 3
    third = b.add(b.mul(y, ir.Constant(I64, 1024)), b.add(base, ir.Constant(I64, 2)))   # the same row, 2 lanes on
    assert constant_difference(third, first) == 2
    assert constant_difference(first, third) == (-2) & ((1 << 64) - 1)        # modulo 2^64, as the compare
    assert constant_difference(b.add(x, y), x) is None
    assert constant_difference(b.add(y, ir.Constant(I64, 1)), b.add(x, ir.Constant(I64, 1))) is None


def _softmax_ir(**specialization) -> str:
    """The LLVM IR the NVPTX lowering builds for softmax with the launch facts (before LLVM's
    passes)."""
    import intentc.codegen.nvptx.compile as nvptx
    built: list[str] = []
    printed = nvptx.module_text

    def keep(module):
        built.append(printed(module))
        return built[-1]
    nvptx.module_text = keep
    views = ("x", "y")
    try:
        compile_kernel((SAMPLES / "row_softmax.kir").read_text(), "row_softmax", "ptx", "sm_90",
                       specialization=Specialization(unit_stride=views, aligned16=views, contiguous=views,
                                                     **specialization))
    finally:
        nvptx.module_text = printed
    return built[0]


def test_a_proven_group_is_only_its_vector_access():
    """N = 1024: 4 vector loads and 4 vector stores a thread and row, no alignment test, no
    predicated scalar access, no bounds compare."""
    text = _softmax_ir(extents={"N": 1024})
    assert text.count("load <4 x float>") == 4 and text.count("store <4 x float>") == 4
    assert "ld.global.f32" not in text and "st.global.f32" not in text
    assert ", 15\n" not in text and "icmp ult i64" not in text


def test_an_unproven_group_keeps_its_test():
    """The variant for rows of 769-1023 elements: the row's stride is read at run time, so
    each full group tests its alignment and keeps its predicated scalar accesses beside the
    vector one (3 full groups; the last one, partial, is scalar)."""
    text = _softmax_ir(variant=(769, 1023))
    assert text.count("load <4 x float>") == 3 and text.count("store <4 x float>") == 3
    assert text.count(", 15\n") == 6
    assert text.count("ld.global.f32") == 16 and text.count("st.global.f32") == 16
