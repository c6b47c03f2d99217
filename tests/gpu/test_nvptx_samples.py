"""CI, no GPU needed: every ir_samples/ kernel that the CPU backend lowers also compiles to
PTX for sm_80 and sm_90 through the same lowering, and ptxas accepts it. Kernels the shared
lowering does not handle yet fail with the same E0080 diagnostic on both targets."""
from __future__ import annotations

import json

import pytest

from intentc.codegen.nvptx.variants import VariantRule
from intentc.diagnostics import DiagnosticError
from intentc.ir.nodes import Kernel
from intentc.options import CompileOptions, Specialization
from intentc.parse import parse
from intentc.passes import Instrumentation, optimize
from sample_paths import SAMPLES

KERNELS = []
for path in sorted(SAMPLES.glob("*.kir")):
    for item in parse(path.read_text(), str(path)).items:
        if isinstance(item, Kernel):
            KERNELS.append((path.stem, item.name))


def _optimized(sample: str):
    module = parse((SAMPLES / f"{sample}.kir").read_text(), sample)
    return optimize(module, CompileOptions(), Specialization(), Instrumentation(verify_each=False)).module


def _cpu_lowers(module, kernel) -> bool:
    from intentc.codegen.cpu.host import lower_for_host
    try:
        lower_for_host(module, kernel)
    except DiagnosticError:
        return False
    return True


@pytest.mark.parametrize("sample,kernel", KERNELS, ids=[f"{s}:{k}" for s, k in KERNELS])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_sample_compiles_to_ptx_that_ptxas_accepts(sample, kernel, arch):
    from intentc.codegen.nvptx.compile import compile_ptx
    from intentc.toolchain.nvidia import ToolchainError, assemble, ptxas_path
    module = _optimized(sample)
    if not _cpu_lowers(module, kernel):
        with pytest.raises(DiagnosticError) as error:
            compile_ptx(module, kernel, arch)
        assert error.value.diagnostics[0].code == "E0080"
        return
    # lazily, as the runtime compiles: the kernel's own entry, then one register-form variant
    # for a dynamic row length (each variant is its own compile; the eager module holding
    # them all took 5x the time, test_nvptx_variants.py covers it)
    compiled = compile_ptx(module, kernel, arch, Specialization(lazy_variants=True))
    assert f".target {arch}" in compiled.ptx and f".entry {compiled.launch.kernel}" in compiled.ptx
    assert "__nvvm_reflect" not in compiled.ptx
    assert json.loads(compiled.launch_json())["mapping"] in ("cta", "grid", "mma", "grid-stride", "staged",
                                                             "single-thread", "lane-dots", "flash", "warp-rows")
    compiled_ptx = [compiled.ptx]
    if compiled.launch.variant_rule:
        bucket = VariantRule(**compiled.launch.variant_rule).bucket(1000)
        variant = compile_ptx(module, kernel, arch, Specialization(variant=bucket))
        assert variant.launch.mapping == "cta" and variant.launch.slots > 0
        compiled_ptx.append(variant.ptx)
    try:
        ptxas_path()
    except ToolchainError as missing:
        pytest.skip(f"PTX made, but ptxas is not installed here to assemble it ({missing})")
    for ptx in compiled_ptx:
        assert assemble(ptx, arch)[:4] == b"\x7fELF"


def test_ptx_and_cubin_targets_through_the_driver():
    from intentc.driver import compile_kernel
    text = (SAMPLES / "row_softmax.kir").read_text()
    ptx = compile_kernel(text, "row_softmax", "ptx", "sm_80").artifacts
    assert set(ptx) == {"kernel.ptx", "launch.json"} and "div.rn.f32" in ptx["kernel.ptx"]
    assert "__nv_exp" not in ptx["kernel.ptx"]           # libdevice linked, internalized and inlined
    assert json.loads(ptx["launch.json"])["mapping"] == "cta"
    with pytest.raises(DiagnosticError) as error:
        compile_kernel(text, "row_softmax", "ptx", "sm_70")
    assert error.value.diagnostics[0].code == "E0062"


def test_mapping_is_single_thread_when_effects_lie_outside_parallel():
    from intentc.codegen.nvptx.mapping import grid_parallel
    from intentc.parse import parse
    effect = parse("kernel @k(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>, %z: view<f32, [], out>) {\n"
                   "  %c = constant {value = 1.0} : f32\n  write %z, %c\n  parallel %N {\n  ^i(%i: index):\n"
                   "    %v = read %x index(%i) : f32\n    write %y, %v index(%i)\n  }\n}\n")
    assert grid_parallel(effect.find("k")) is None
    module = _optimized("layernorm")        # its prologue only reads views: re-read where used
    kernel = next(i for i in module.items if isinstance(i, Kernel))
    assert grid_parallel(kernel).name == "parallel"
    module = _optimized("vector_add")
    assert grid_parallel(module.find("vector_add")).name == "parallel"


def test_no_fma_without_fusion_legality():
    """Without the fusion-legality pass nothing carries `contract`: mul then add stay two
    IEEE-rounded instructions (§5.5), as the interpreter computes them."""
    from differential import UNFUSED
    from intentc.codegen.nvptx.compile import compile_ptx
    text = """kernel @k(%a: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %a index(%i) : tensor<f32, [%N]>
  %m = mul %v, %v : tensor<f32, [%N]>
  %s = add %m, %v : tensor<f32, [%N]>
  %q = div %s, %v : tensor<f32, [%N]>
  %r = sqrt %q : tensor<f32, [%N]>
  write %y, %r index(%i)
}"""
    module = optimize(parse(text), UNFUSED, Specialization(), Instrumentation(verify_each=False)).module
    ptx = compile_ptx(module, "k", "sm_90").ptx
    assert "fma.rn.f32" not in ptx and "mul.rn.f32" in ptx and "add.rn.f32" in ptx
    assert "div.rn.f32" in ptx and "sqrt.rn.f32" in ptx and "approx" not in ptx
