"""The flash mapping without a GPU (docs/gpu.md, "Flash attention"): the region_fold attention
recognizer's per-thread kinds and refusals, the plan recorded in launch.json, and ptxas
accepting the PTX with no device malloc."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxas_report import ptxas_report

import intentc
from intentc.codegen.nvptx.fold_attention import match_fold_attention
from intentc.codegen.nvptx.tile_contraction import NoMatch
from intentc.driver import compile_kernel

SAMPLE = (Path(__file__).resolve().parents[2] / "ir_samples" / "attention_region_fold.kir").read_text()


def _kernel(text: str):
    module = intentc.parse(text, "t.kir")
    intentc.verify_or_raise(module)
    return module.find("causal_attention")


def test_recognizes_causal_attention():
    found = match_fold_attention(_kernel(SAMPLE))
    assert (found.q, found.k, found.v, found.o, found.rows, found.depth) == ("q", "k", "v", "o", "T", "D")
    kinds = found.kinds
    assert kinds["scores"] == kinds["w"] == kinds["pos"] == "keys"
    assert kinds["wacc"] == kinds["acc"] == kinds["out"] == "cols"
    assert kinds["mx"] == kinds["wsum"] == kinds["m"] == kinds["i"] == "rows"


@pytest.mark.parametrize("old,new,proved", [
    ("", "", True),                                                       # the causal mask
    ("%live = le %pos, %i_b", "%live = ge %pos, %i_b", False),            # anti-causal: later keys live
    ("%mref = select %any, %mx, %zero", "%mref = select %any, %mx, %mx", False),   # max -inf: exp(nan)
])
def test_dead_slices_proof(old, new, proved):
    from intentc.codegen.nvptx.dead_slices import dead_slices_are_identity
    found = match_fold_attention(_kernel(SAMPLE.replace(old, new) if old else SAMPLE))
    assert dead_slices_are_identity(found.prologue, found.fold, found.parallel.regions[0].args[0].name) is proved


@pytest.mark.parametrize("old,new,unmasked", [
    ("", "", {"any", "mx"}),                                               # live false, masked -inf there
    ("%live = le %pos, %i_b", "%live = ge %pos, %i_b", set()),             # anti-causal: later keys live
    ("%ninf = full {value = -inf}", "%ninf = full {value = 0.0}", {"any"}),  # 0 is not max's identity
])
def test_reductions_unmasked_past_the_axis(old, new, unmasked):
    """A key past the axis lies past every row: a reduction whose operand is its identity there
    (to the bit) combines it as it is; the others select the identity for such keys."""
    from intentc.codegen.nvptx.dead_slices import identity_past_axis
    found = match_fold_attention(_kernel(SAMPLE.replace(old, new) if old else SAMPLE))
    assert identity_past_axis(found.prologue, found.fold, found.parallel.regions[0].args[0].name) == unmasked


REFUSED = {
    "a reduction outside the summarizer": ("    %summary = region_fold",
                                           "    %top = reduce %scores {axes = [0], kind = max} : f32\n"
                                           "    %summary = region_fold"),
    "a second write": ("    write %o, %out index(%i, %dcols)\n",
                       "    write %o, %out index(%i, %dcols)\n    write %o, %zacc index(%i, %dcols)\n"),
    "a reduction along D": ("%fs = record_get %summary {field = sum} : f32",
                            "%fs = reduce %zacc {axes = [0], kind = sum} : f32"),
    "the query row used outside the matvec": ("%normed = div %fa, %fs_b", "%normed = div %qi, %fs_b"),
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_refuses(why):
    old, new = REFUSED[why]
    assert old in SAMPLE
    kernel = _kernel(SAMPLE.replace(old, new))
    with pytest.raises(NoMatch):
        match_fold_attention(kernel)


@pytest.mark.parametrize("extents,columns", [({}, 128), ({"D": 64}, 64), ({"D": 40}, 64)])
def test_launch_json_and_ptxas(extents, columns, tmp_path):
    result = compile_kernel(SAMPLE, "causal_attention", "ptx", "sm_90",
                            specialization={"extents": extents} if extents else None)
    launch = json.loads(result.artifacts["launch.json"])
    assert launch["mapping"] == "flash" and launch["plan"]["key_groups"] == 2
    assert launch["lazy_views"] == ["k", "v"]      # the K and V tiles stay lazy: the plan stages them
    assert launch["plan"]["block"]["columns"] == columns
    assert "skipped" in launch["plan"]["slices"] and "bar.red.or" in result.artifacts["kernel.ptx"]
    assert not any("threadsPerWarp = [1" in text for text in launch["layouts"]["encodings"].values())
    ptx = result.artifacts["kernel.ptx"]
    assert "malloc" not in ptx and "bar.sync" in ptx and "shfl.sync.bfly.b32" in ptx
    assert ".tf32" not in ptx
    # the only flushing instruction is libdevice expf's ex2 on a reduced, never subnormal argument
    assert all("ex2.approx.ftz.f32" in line for line in ptx.splitlines() if ".ftz" in line)
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        done = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_one_group_plan_keeps_static_shared_memory(monkeypatch):
    """One group of 256 threads, 2 CTAs an SM (the plan before key groups, bench/gpu_attention.py
    --sweep's): its buffers in static shared memory, the CTA's barrier only."""
    import dataclasses

    from intentc.codegen.nvptx import flash_attention
    chosen = flash_attention.plan_flash
    monkeypatch.setattr(flash_attention, "plan_flash", lambda kernel, known: dataclasses.replace(
        chosen(kernel, known), groups=1, resident=2))
    result = compile_kernel(SAMPLE, "causal_attention", "ptx", "sm_90", specialization={"extents": {"D": 64}})
    launch = json.loads(result.artifacts["launch.json"])
    assert launch["block"] == [256, 1, 1] and launch["ctas_per_sm"] == 2 and launch["plan"]["key_groups"] == 1
    assert launch["shared_bytes"] == 0 and ".extern" not in result.artifacts["kernel.ptx"]


@pytest.mark.parametrize("extents", [{}, {"D": 128}])
def test_key_groups(extents, tmp_path):
    """By default two key groups of 256 threads, each with its buffers in dynamic shared memory
    and its own named barrier; group 0 writes."""
    result = compile_kernel(SAMPLE, "causal_attention", "ptx", "sm_90",
                            specialization={"extents": extents} if extents else None)
    launch = json.loads(result.artifacts["launch.json"])
    plan = launch["plan"]
    assert launch["block"] == [512, 1, 1] and launch["ctas_per_sm"] == 1 and plan["key_groups"] == 2
    assert launch["shared_bytes"] == plan["shared_bytes"] >= 2 * 4 * (32 * 36 + 128 * 36 + 32 * 132 + 16 * 128)
    assert "key group" in plan["slices"] and "dynamic" in plan["staging"]
    ptx = result.artifacts["kernel.ptx"]
    assert ".extern .shared" in ptx and "bar.red.or" in ptx
    assert re.search(r"bar\.sync\s+%r\d+, %r\d+;", ptx)          # a group's named barrier
    # the groups' states meet in shared memory (each value in its own type, at immediate offsets)
    assert re.search(r"st\.shared\.f32 \[%r\d+\+\d+\]", ptx) and re.search(r"ld\.shared\.f32 %\w+, \[%r\d+\+\d+\]", ptx)
    if shutil.which("ptxas"):
        assert "0 bytes spill stores" in ptxas_report(ptx, tmp_path)
