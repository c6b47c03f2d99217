"""The MMA mapping without a GPU (docs/gpu.md, "MMA mapping"): which kernels the tiled-
contraction recognizer accepts and why it refuses the others, the plan and layouts recorded
in launch.json, the fragment layouts' coverage, and ptxas accepting the PTX of every arch."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import intentc
from intentc.codegen.layout.mma import Mma, accumulator_layout
from intentc.codegen.nvptx.tile_contraction import NoMatch, match_tile_contraction
from intentc.codegen.nvptx.tile_matmul import MmaPlan, plan_mma
from intentc.driver import compile_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from mma_cases import BASE, variant


def _kernel(text: str):
    module = intentc.parse(text, "t.kir")
    intentc.verify_or_raise(module)
    return module.find("matmul_tiled")


@pytest.mark.parametrize("operands,acc,out,transposed", [("f16", "f32", "f16", False), ("bf16", "f32", "bf16", False),
                                                         ("f16", "f16", "f16", False), ("f16", "f32", "f32", False),
                                                         ("f16", "f32", "f16", True)])
def test_recognizes_the_tiled_matmul_and_its_variants(operands, acc, out, transposed):
    found = match_tile_contraction(_kernel(variant(operands, acc, out, transposed)))
    assert (found.a, found.b, found.c, found.operand_dtype, found.acc_dtype) == ("a", "b", "c", operands, acc)
    assert found.ir_tile == (64, 64, 32) and found.init == 0.0
    assert found.b_axes == ((1, 0) if transposed else (0, 1))
    assert found.casts == (out,)


REFUSED = {
    "a mask that is not the view's bounds": ("%a_mask = and %row_ok_a, %ka_ok_b", "%a_mask = and %row_ok_a, %row_ok_a"),
    "a fill other than 0": ("read %a index(%rows, %ka) mask(%a_mask) fill(%zero_h)",
                            "read %a index(%rows, %ka) mask(%a_mask) fill(%one_h)"),
    "a K loop whose step is not the tile's K": ("loop %c0, %K, %c32", "loop %c0, %K, %c64"),
    "a K loop that does not start at 0": ("loop %c0, %K, %c32", "loop %c32, %K, %c32"),
    "a write at another tile": ("write %c, %out index(%rows, %cols)", "write %c, %out index(%cols_r, %cols)"),
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_refuses_kernels_that_compute_something_else(why):
    old, new = REFUSED[why]
    assert old in BASE
    text = BASE.replace(old, new).replace("%zero_h = constant {value = 0.0} : f16",
                                          "%zero_h = constant {value = 0.0} : f16\n  %one_h = constant {value = 1.0} : f16")
    text = text.replace("%cols = add %n0_b, %col_l : tensor<index, [64]>",
                        "%cols = add %n0_b, %col_l : tensor<index, [64]>\n    %n0_r = broadcast %n0 : tensor<index, [64, 1]>"
                        "\n    %cols_r = add %n0_r, %row_l : tensor<index, [64, 1]>")
    with pytest.raises(NoMatch):
        match_tile_contraction(_kernel(text))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_f32_operands_keep_the_cuda_cores(arch):
    """No TF32 (§5.3/§5.4): an f32 contraction runs as FMAs on register tiles, never on the
    tensor cores."""
    ptx, launch = _launch(variant("f32", "f32", "f32"), arch)
    assert launch["mma"]["instruction"] == "fma.f32.v4"
    assert launch["layouts"]["encodings"]["#layout0"].startswith("#blocked<{sizePerThread = [4, 4]")
    assert "fma.rn.f32" in ptx and "cp.async.cg.shared.global" in ptx
    assert "mma" not in ptx.replace("intentc_mma_stages", "") and "tf32" not in ptx


def _launch(text: str, arch: str) -> tuple[str, dict]:
    artifacts = compile_kernel(text, "matmul_tiled", "ptx", arch).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("arch,instruction,stages", [("sm_80", "mma.sync.m16n8k16", 3), ("sm_90", "mma.sync.m16n8k16", 3)])
def test_launch_json_records_the_plan(arch, instruction, stages):
    _, launch = _launch(BASE, arch)
    assert launch["mapping"] == "mma" and launch["block"] == [256, 1, 1] and launch["arch"] == arch
    plan = launch["mma"]
    assert plan["instruction"] == instruction and plan["block"] == [128, 128, 32] and plan["stages"] == stages
    ring = stages * 2 * 32 * 256
    assert plan["shared_bytes"] == ring and launch["shared_bytes"] == (ring if ring > 48 * 1024 else 0)
    layouts = launch["layouts"]
    assert layouts["encodings"]["#layout0"].startswith("#mma<{versionMajor = 2")
    assert layouts["values"]["acc"] == "#layout0" and layouts["values"]["a_tile"].startswith("#shared<{vec = 8")


def test_launch_json_records_the_warp_specialized_plan_and_its_fallback():
    """sm_90a: a producer warpgroup and two consumers (384 threads), one persistent CTA an
    SM, a ring of four 128 x 256 x 64 stages and its 2 x 4 mbarriers in dynamic shared
    memory; the tensor maps the runtime writes (which view axis is inner, the boxes) and
    the cp.async entry for views without a map."""
    ptx, launch = _launch(BASE, "sm_90a")
    assert launch["block"] == [384, 1, 1] and launch["grid"] == "ctas_per_sm:1"
    plan = launch["mma"]
    assert plan["instruction"] == "wgmma.m64n256k16" and plan["block"] == [128, 256, 64] and plan["stages"] == 4
    ring = 4 * 2 * 64 * (128 + 256)
    assert plan["shared_bytes"] == launch["shared_bytes"] == ring + 4 * 2 * 8 + 1024     # + room to align
    assert plan["warpgroups"] == {"producer": 1, "consumers": 2}
    tma = plan["tma"]
    assert tma["word"] == 21        # the maps' address: the word after 3 views of 7 words
    assert tma["maps"] == [{"view": "a", "inner_axis": 1, "outer_axis": 0, "box": [64, 128], "swizzle_bytes": 128},
                           {"view": "b", "inner_axis": 1, "outer_axis": 0, "box": [64, 64], "swizzle_bytes": 128}]
    fallback = plan["fallback"]
    assert fallback["entry"] == launch["kernel"] + "_fallback" and fallback["plan"]["block"] == [128, 128, 32]
    assert fallback["mapping"] == "mma" and fallback["threads"] == 256 and fallback["grid"] == "ctas_per_sm:8"
    assert fallback["dynamic_shared_bytes"] == 4 * 2 * 32 * 256 and fallback["plan"]["instruction"] == "wgmma.m64n128k16"
    assert f".entry {fallback['entry']}(" in ptx and f".entry {launch['kernel']}(" in ptx
    assert launch["layouts"]["encodings"]["#layout0"].startswith("#mma<{versionMajor = 3")


@pytest.mark.parametrize("operands,pair", [("f8e4m3fn", "e4m3x2"), ("f8e5m2", "e5m2x2")])
def test_8bit_floats_are_widened_to_f16_for_the_f16_wgmma(operands, pair):
    """Never Hopper's 8-bit wgmma (its accumulation keeps fewer bits than f32): the raw
    copies are widened exactly to f16 and the f16 wgmma accumulates in f32; without maps,
    the generic mapping; before sm_90a, the generic mapping."""
    ptx, launch = _launch(variant(operands, "f32", "f32"), "sm_90a")
    kernel = ptx.split(".entry")[1]
    assert f"cvt.rn.f16x2.{pair}" in kernel and "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in kernel
    assert "e4m3" not in kernel.replace("cvt.rn.f16x2.e4m3x2", "") and ".e5m2" not in kernel.replace(
        "cvt.rn.f16x2.e5m2x2", "")
    plan = launch["mma"]
    assert plan["stages"] == 3 and plan["shared_bytes"] <= 227 * 1024
    assert plan["tma"]["element_bytes"] == 1 and [m["swizzle_bytes"] for m in plan["tma"]["maps"]] == [0, 0]
    assert plan["fallback"]["mapping"] != "mma"
    assert _launch(variant(operands, "f32", "f32"), "sm_90")[1]["mapping"] != "mma"


def test_i8_uses_the_integer_wgmma_with_b_transposed_in_shared_memory():
    ptx, launch = _launch(variant("i8", "i32", "i32"), "sm_90a")
    kernel = ptx.split(".entry")[1]
    assert "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8" in kernel and "prmt.b32" in kernel
    plan = launch["mma"]
    assert plan["block"] == [128, 128, 128] and plan["acc"] == "i32" and plan["shared_bytes"] <= 227 * 1024
    assert [m["swizzle_bytes"] for m in plan["tma"]["maps"]] == [128, 0] and plan["fallback"]["mapping"] != "mma"
    assert _launch(variant("i8", "i32", "i32"), "sm_90")[1]["mapping"] != "mma"


@pytest.mark.parametrize("operands,unroll,chunk", [("f16", 4, 16), ("f8e4m3fn", 4, 16), ("f8e4m3fn", 8, 16),
                                                   ("f8e4m3fn", 16, 8), ("i8", 4, 16)])
def test_setmaxnreg_stays_within_the_registers_the_cta_starts_with(operands, unroll, chunk):
    """ptxas starts each of the 384 threads with 168 registers; an increase waits for the
    decreases to free enough, so the warpgroups' new counts must fit that pool (else: a hang)."""
    from intentc.codegen.nvptx.wgmma_tma import tma_plan
    kernel = _kernel(variant(operands, "i32" if operands == "i8" else "f32", "i32" if operands == "i8" else "f16"))
    plan = tma_plan(kernel, match_tile_contraction(kernel), None, widen_unroll=unroll, widen_bytes=chunk)
    producer, consumer = plan.registers
    assert producer % 8 == 0 and consumer % 8 == 0 and 24 <= producer <= consumer <= 256
    assert 128 * producer + 256 * consumer <= 168 * 384
    assert consumer >= 128 + 48     # the 128 accumulators (f32 or s32) and the consumer's other values


def test_a_transposed_b_view_is_copied_k_major():
    """B declared [N, K] (K contiguous): its map's inner axis is K, boxes of 64 K by 64 N, and
    the wgmma reads B K-major (imm-trans-b 0)."""
    ptx, launch = _launch(variant(b_transposed=True), "sm_90a")
    assert launch["mma"]["tma"]["maps"][1] == {"view": "b", "inner_axis": 1, "outer_axis": 0, "box": [64, 64],
                                               "swizzle_bytes": 128}
    kernel = ptx.split(".entry")[1]
    assert re.findall(r"wgmma\.mma_async[^{]*\{[^}]*\}, %rd\d+, %rd\d+, p, 1, 1, 0, (\d)", kernel) == ["0"] * 4


def test_warp_specialized_kernel_uses_the_copy_engine_and_mbarriers():
    ptx, _ = _launch(BASE, "sm_90a")
    kernel = ptx.split(".entry")[1]     # the TMA entry comes first
    assert kernel.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == 5
    for instruction in ("mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
                        "setmaxnreg.dec.sync.aligned.u32 40", "setmaxnreg.inc.sync.aligned.u32 232",
                        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", "wgmma.wait_group.sync.aligned 0"):
        assert instruction in kernel, instruction
    assert "cp.async.cg" not in kernel and "bar.sync" in kernel     # one barrier: after the mbarriers' init


@pytest.mark.parametrize("arch,instruction", [("sm_80", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
                                              ("sm_90a", "wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16")])
def test_f16_accumulator_uses_the_f16_accumulating_mma(arch, instruction):
    ptx, _ = _launch(variant("f16", "f16", "f16"), arch)
    assert instruction in ptx and ".f32.f16.f16" not in ptx


def test_bf16_operands_use_the_bf16_mma():
    ptx, _ = _launch(variant("bf16", "f32", "bf16"), "sm_80")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx and "cvt.rn.bf16.f32" in ptx


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("arch,operands", [("sm_80", "f16"), ("sm_90", "f16"), ("sm_90a", "f16"),
                                           ("sm_90a", "f8e4m3fn"), ("sm_90a", "i8")])
def test_ptxas_accepts_the_mma_kernel_with_at_most_small_spills(arch, operands, tmp_path):
    """Spills of every MMA entry (the 8-bit operands' generic fallback keeps its tiles on the stack)."""
    ptx, launch = _launch(variant(operands, "i32", "i32") if operands == "i8" else variant(operands, "f32", "f16"),
                          arch)
    source = tmp_path / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(source), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    generic = launch["mma"].get("fallback", {}).get("mapping") not in (None, "mma")
    spilled = [int(n) for entry, n in re.findall(r"Function properties for (\w+)\n\s+\d+ bytes stack frame, (\d+) "
                                                 r"bytes spill stores", done.stderr)
               if not (generic and entry.endswith("_fallback"))]
    assert spilled and max(spilled) <= 128, done.stderr
    # C7514: ptxas serializes wgmmas when other instructions read their accumulators while
    # a group is in flight; C7508: it ignores setmaxnreg
    assert "C7514" not in done.stderr and "C7508" not in done.stderr, done.stderr


@pytest.mark.parametrize("instruction,warps,block", [("mma.sync.m16n8k16", (2, 4), (128, 128, 32)),
                                                     ("wgmma.m64n128k16", (2, 1), (128, 128, 32)),
                                                     ("wgmma.m64n256k16", (2, 1), (128, 256, 64))])
def test_accumulator_layout_covers_the_tile_once(instruction, warps, block):
    """Every element of the tile in exactly one register of one (consumer) thread."""
    plan = MmaPlan(plan_mma(_kernel(BASE), "sm_90a").contraction, instruction, block, warps, 3)
    layout = accumulator_layout(plan)
    assert isinstance(layout, Mma)
    owners = {}
    for thread in range(plan.threads):
        for register in range(layout.registers):
            row, column = layout.coordinate(register, thread)
            owners.setdefault((row, column), []).append((thread, register))
    assert sorted(owners) == [(r, c) for r in range(block[0]) for c in range(block[1])]
    assert all(len(v) == 1 for v in owners.values())


def test_a_hopper_launch_picks_sm_90a():
    from intentc.runtime.cuda import compile_arch
    assert compile_arch("sm_90") == "sm_90a" and compile_arch("sm_86") == "sm_80"
