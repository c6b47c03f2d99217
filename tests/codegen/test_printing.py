"""`codegen/llvm/printing.module_text` gives exactly llvmlite's text of a lowered module (it
only formats the common instructions faster): every sample kernel lowered for the GPU (the
mapping a dynamic extent gets) and the register form of a few, and the CPU lowering."""
from __future__ import annotations

import pytest

from intentc import parse
from intentc.cli.common import kernel_names
from intentc.codegen.llvm.kernel import lower_kernel
from intentc.codegen.llvm.printing import module_text
from intentc.codegen.cpu.hooks import HostHooks
from intentc.codegen.nvptx.hooks import NvptxHooks
from intentc.codegen.nvptx.mapping import plan_mapping
from intentc.options import Specialization
from sample_paths import SAMPLES

CASES = [(path.stem, kernel, {}) for path in sorted(SAMPLES.glob("*.kir"))
         for kernel in kernel_names(parse(path.read_text(), path.name))]
REGISTER_FORM = [("vector_add", "vector_add", {"N": 1 << 20}), ("row_softmax", "row_softmax", {"N": 1024}),
                 ("nan_max_vs_maximum_num", "nan_max", {"N": 2048}), ("row_sum", "row_sum_f16", {"N": 2048})]


def _lowered_twice(sample: str, kernel: str, extents: dict, gpu: bool):
    module = parse((SAMPLES / f"{sample}.kir").read_text(), sample)
    specialization = Specialization(extents=extents)
    return [lower_kernel(module, kernel, NvptxHooks(plan_mapping(module.find(kernel), specialization, module,
                                                                 "sm_90")) if gpu else HostHooks(),
                         specialization).module for _ in range(2)]


@pytest.mark.parametrize("sample, kernel, extents", CASES + REGISTER_FORM, ids=lambda case: str(case))
def test_gpu_text_is_llvmlites(sample, kernel, extents):
    theirs, ours = _lowered_twice(sample, kernel, extents, gpu=True)
    assert module_text(ours) == str(theirs)


@pytest.mark.parametrize("sample, kernel", [("row_softmax", "row_softmax"), ("layernorm", "layernorm")])
def test_cpu_text_is_llvmlites(sample, kernel):
    theirs, ours = _lowered_twice(sample, kernel, {}, gpu=False)
    assert module_text(ours) == str(theirs)


def test_constant_operands_are_llvmlites():
    """Integer and float constants are formatted by the printer itself (`printing._ref`):
    signed zeros, infinities, NaNs, every float width, i1 from ints and bools, an int given
    to a float type, each the text llvmlite gives."""
    from llvmlite import ir
    module = ir.Module("constants")
    floats = [ir.HalfType(), ir.FloatType(), ir.DoubleType()]
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [*floats, ir.IntType(64)]), "f")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    for type_, argument in zip(floats, function.args):
        for value in (0.0, -0.0, 1.5, -2.25, 1e-40, float("inf"), float("-inf"), float("nan"), 3, 0.1):
            builder.fadd(argument, ir.Constant(type_, value))
    for value in (0, -1, 1 << 62, -(1 << 63)):
        builder.add(function.args[-1], ir.Constant(ir.IntType(64), value))
    for value in (0, 1, True, False):
        builder.and_(builder.icmp_signed("<", function.args[-1], function.args[-1]), ir.Constant(ir.IntType(1), value))
    builder.ret_void()
    assert module_text(module) == str(module)


@pytest.mark.parametrize("sample, kernel, extents", CASES + REGISTER_FORM, ids=lambda case: str(case))
def test_numbered_text_is_the_named_module_without_names(sample, kernel, extents):
    """`numbered` (what the GPU compile hands LLVM): LLVM parses it into the module of the
    named text, each instruction result unnamed."""
    import llvmlite.binding as llvm
    named, numbered = _lowered_twice(sample, kernel, extents, gpu=True)
    expected = llvm.parse_assembly(module_text(named))
    for function in expected.functions:
        for block in function.blocks:
            for instruction in block.instructions:
                instruction.name = ""
    assert str(llvm.parse_assembly(module_text(numbered, numbered=True))) == str(expected)
