"""The flash mapping's tensor-core form without a GPU (docs/gpu.md, "Flash attention"): the
f16 / bf16 region_fold attention recognized with 16-bit operands, the plan in launch.json,
the PTX's MMAs, ldmatrix reads and packed weight conversions, ptxas accepting it."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import intentc
from intentc.codegen.nvptx import flash_attention
from intentc.codegen.nvptx.dead_slices import dead_slices_are_identity
from intentc.codegen.nvptx.fold_attention import match_fold_attention
from intentc.driver import compile_kernel

SAMPLE = (Path(__file__).resolve().parents[2] / "ir_samples" / "attention_tensor_cores.kir").read_text()


def _kernel(name: str, text: str = SAMPLE):
    module = intentc.parse(text, "t.kir")
    intentc.verify_or_raise(module)
    return module.find(name)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_recognized_with_16bit_operands(dtype):
    found = match_fold_attention(_kernel(f"causal_attention_{dtype}"))
    assert found.operand_dtype == dtype
    assert found.kinds["wn"] == found.kinds["w"] == "keys" and found.kinds["outn"] == "cols"
    # the weights' cast keeps a dead slice's zeros: the causal tiles are still skipped
    assert dead_slices_are_identity(found.prologue, found.fold, found.parallel.regions[0].args[0].name)


def _compile(dtype: str, extents: dict, arch: str = "sm_90"):
    result = compile_kernel(SAMPLE, f"causal_attention_{dtype}", "ptx", arch,
                            specialization={"extents": extents} if extents else None)
    return json.loads(result.artifacts["launch.json"]), result.artifacts["kernel.ptx"]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("extents,columns,qk_chunk", [({}, 128, 64), ({"D": 64}, 64, 64), ({"D": 128}, 128, 128),
                                                      ({"D": 40}, 64, 64), ({"D": 200}, 128, 64)])
def test_launch_json_and_ptx(dtype, extents, columns, qk_chunk, tmp_path):
    launch, ptx = _compile(dtype, extents)
    assert launch["mapping"] == "flash" and launch["block"] == [256, 1, 1]
    plan = launch["plan"]
    # two row warps and four key groups; dynamic shared memory for their Q, K and V buffers
    assert (plan["row_warps"], plan["key_groups"], plan["block"]["query_rows"]) == (2, 4, 32)
    assert launch["shared_bytes"] == plan["shared_bytes"] == 4 * 2 * (32 * qk_chunk + 64 * qk_chunk + 64 * columns)
    assert ".extern .shared" in ptx
    assert (plan["block"]["columns"], plan["block"]["qk_chunk"]) == (columns, qk_chunk)
    assert f"m16n8k16.row.col.f32.{dtype}.{dtype}.f32" in plan["instruction"]
    assert "skipped" in plan["slices"] and launch["lazy_views"] == ["k", "v"]
    assert all("mma" in text for text in launch["layouts"]["encodings"].values())
    mmas = re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(\w+)\.(\w+)\.f32", ptx)
    # QK^T and PV: 8 key fragments and D/8 column fragments for each 16-wide K step
    assert mmas and set(mmas) == {(dtype, dtype)}
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and "ldmatrix.sync.aligned.m8n8.x4.trans" in ptx
    assert f"cvt.rn.{dtype}x2.f32" in ptx           # the IR's cast of the weights, two at a time
    assert ".tf32" not in ptx and "malloc" not in ptx and "shfl.sync.bfly.b32" in ptx
    assert all("ex2.approx.ftz.f32" in line for line in ptx.splitlines() if ".ftz" in line)
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        done = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("step_asm,rolled", [(True, True), (False, True), (False, False)])
def test_mma_counts_follow_the_tiles(step_asm, rolled, monkeypatch):
    """A tile: QKᵀ 4 K steps x 8 key fragments, PV 4 key steps x 8 column fragments (the key
    groups run one loop body); by default each contraction's steps are one inline asm (the
    steps unrolled in its text); rolled, each is one step's asm in a loop of 4 trips; else
    unrolled, an asm a step."""
    chosen = flash_attention.plan_flash
    monkeypatch.setattr(flash_attention, "plan_flash", lambda kernel, known: dataclasses.replace(
        chosen(kernel, known), rolled=rolled, step_asm=step_asm))
    launch, ptx = _compile("f16", {"D": 64})
    assert launch["plan"]["k_steps"] == ("one asm" if step_asm else "rolled" if rolled else "unrolled")
    steps = 1 if rolled and not step_asm else 4
    assert len(re.findall(r"mma\.sync\.aligned", ptx)) == steps * 8 + steps * 8
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans", ptx)) == steps * 4
    asms = [text for text in ptx.split("// begin inline asm")[1:] if "mma.sync" in text.split("// end inline asm")[0]]
    assert len(asms) == (2 if step_asm or rolled else 8)      # an asm a contraction or a step


@pytest.mark.parametrize("vector_columns", [True, False])
def test_columns_as_vectors(vector_columns, monkeypatch, tmp_path):
    """The summarizer's exponentials are there once a key slot (32) besides the combine's own 4
    (el and er of 2 rows). A row's [D] columns as one LLVM vector leave the key groups'
    exchange 16-byte vector accesses. Either choice is PTX that ptxas takes."""
    chosen = flash_attention.plan_flash
    monkeypatch.setattr(flash_attention, "plan_flash", lambda kernel, known: dataclasses.replace(
        chosen(kernel, known), vector_columns=vector_columns))
    launch, ptx = _compile("f16", {"D": 64})
    plan = launch["plan"]
    assert plan["column_vectors"] == ("an LLVM vector a row" if vector_columns else "a value a slot")
    assert len(re.findall(r"ex2\.approx", ptx)) == 32 + 4
    vector_words = len(re.findall(r"st\.shared\.v4\.b32", ptx))
    assert (vector_words > 0) == vector_columns
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        done = subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
