"""The heavy generators emit each piece of code once (issue #13, compile time): the MMA
mapping's staging (its look-ahead prologue is the K loop's first trips) and compute, the
epilogue's pair stores (unconditional for a tile inside C, one rolled loop of masked stores
for edge tiles), the i0 special function as one helper called from every slot, flash
attention's staging copies on tensor cores as rolled loops, a region scan's merges in rolled
loops; the tile generators' kernels take the lean LLVM pipeline. Checked on the PTX of the samples as
`bench/compile.py` compiles them (no GPU needed)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from intentc.codegen.nvptx import machine
from intentc.driver import compile_kernel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _ptx(sample_id: str, arch: str = "sm_90", aligned: bool = True) -> tuple[str, dict]:
    """`aligned`: with the benchmark's 16-byte alignment facts (`aligned16`), else without."""
    import json

    from bench.compile import compile_args
    from bench.gpu_sample_specs import SPECS
    spec = next(s for s in SPECS if s.id == sample_id)
    text, kernel, specialization = compile_args(spec)
    if not aligned:
        specialization = specialization.model_copy(update={"aligned16": ()})
    result = compile_kernel(text, kernel, "ptx", arch, specialization=specialization)
    return result.artifacts["kernel.ptx"], json.loads(result.artifacts["launch.json"])


def _count(pattern: str, ptx: str) -> int:
    return len(re.findall(pattern, ptx, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def tiled():
    return _ptx("tiled_matmul:matmul_tiled")


def _copies(launch: dict) -> int:
    """16-byte copies of f16 a thread makes a K tile."""
    bm, bn, bk = launch["mma"]["block"]
    return (bm + bn) * bk * 2 // 16 // launch["block"][0]


def test_mma_staging_is_emitted_once():
    ptx, launch = _ptx("tiled_matmul:matmul_tiled", aligned=False)
    copies = _copies(launch)
    assert launch["mma"]["instruction"] == "mma.sync.m16n8k16"
    assert _count(r"^\s*cp\.async\.cg\.shared\.global", ptx) == copies
    # rows only 8- or 4-byte aligned: a copy's two 8-byte pieces unrolled from the address
    # it keeps, its four 4-byte pieces one rolled loop
    assert _count(r"^\s*cp\.async\.ca\.shared\.global", ptx) == copies * 2 + copies


def test_aligned_views_stage_by_whole_copies_only(tiled):
    """Views proven 16-byte aligned with constant strides fit 16-byte copies by construction:
    no narrower piece and no element copy is built (`tile_matmul.known`)."""
    ptx, launch = tiled
    assert _count(r"^\s*cp\.async\.cg\.shared\.global", ptx) == _copies(launch)
    assert _count(r"^\s*cp\.async\.ca\.shared\.global", ptx) == 0
    assert _count(r"^\s*st\.shared\.b16", ptx) == 0


def test_mma_compute_is_emitted_once(tiled):
    ptx, launch = tiled
    bm, bn, bk = launch["mma"]["block"]
    warps = launch["block"][0] // 32
    # (a fragment's MMAs over the K tile are one asm line: ptx_asm.mma_chain)
    assert _count(r"\bmma\.sync\.aligned\.m16n8k16", ptx) == (bm * bn * bk) // (16 * 8 * 16) // warps


def test_mma_epilogue_edge_stores_are_one_loop(tiled):
    ptx, _ = tiled
    # the edge path's masked stores: one two-element store and one store per element, once
    assert _count(r"^\s*st(\.global)?\.v2\.b16", ptx) == 1
    assert _count(r"^\s*st(\.global)?\.b16", ptx) == 2
    # the inside path: the thread's 32 pairs of f16, each one 4-byte store
    assert _count(r"^\s*st(\.global)?\.b32", ptx) == 32


def test_i0_is_one_helper_called_from_every_slot():
    ptx, launch = _ptx("kaiser_window_i0:kaiser_frames")
    assert _count(r"^\.func\s.*\bintentc_i0$", ptx) == 1
    # the numerator's i0 in each of the thread's slots and the denominator's once
    assert _count(r"^\s*call\.uni \(retval0\), intentc_i0,", ptx) == launch["slots"] + 1


I0_ROWS = """
kernel @i0_rows(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>) {
  %n = iota : tensor<index, [%N]>
  parallel %M {
  ^row(%r: index):
    %v = read %x index(%r, %n) : tensor<f32, [%N]>
    %w = i0 %v : tensor<f32, [%N]>
    write %y, %w index(%r, %n)
  }
}
"""


def test_i0_inside_a_loop_stays_inline():
    """An i0 evaluated in every iteration is not a call in the loop's body."""
    result = compile_kernel(I0_ROWS, "i0_rows", "ptx", "sm_90")
    ptx = result.artifacts["kernel.ptx"]
    assert "intentc_i0" not in ptx and _count(r"^\s*fma\.rn\.f64", ptx) > 0


def test_flash_mma_staging_copies_are_one_loop_each():
    """Q, K and V tiles go to shared memory through one rolled cp.async loop a staging site
    (Q and K at a pass's start, V a tile, the next tile's K), not one copy a 16-byte chunk."""
    ptx, launch = _ptx("attention_tensor_cores:causal_attention_f16")
    assert launch["mapping"] == "flash" and launch["plan"]["instruction"].startswith("mma.sync")
    assert _count(r"^\s*cp\.async\.cg\.shared\.global", ptx) == 4


@pytest.mark.parametrize("sample_id", ["attention_tensor_cores:causal_attention_f16", "attention_region_fold:causal_attention"])
def test_flash_code_is_emitted_once(sample_id):
    """Flash attention's pieces that ran once a value or a group (session 8): the combine once
    (in the key tile loop, whose last trips take the other key groups' states in), the ops
    after the fold once a row (on one column slot a trip of the write's loop: one IEEE
    division a row), each exchange word at an immediate offset of one base address."""
    ptx, launch = _ptx(sample_id)
    rows = launch["plan"]["per_thread"]["rows"]
    assert launch["plan"]["key_groups"] > 1
    assert _count(r"^\s*div\.rn\.f32", ptx) == rows
    words = _count(r"^\s*st\.shared\.\w+\s+\[%r\d+\+\d+\]", ptx)
    assert words > 0 and words == _count(r"^\s*ld\.shared\.\w+\s+%\w+, \[%r\d+\+\d+\]", ptx)


def test_flash_proven_views_stage_by_vectors_only():
    """Views the specialization proves 16-byte aligned and dense, with D fixed (as the
    benchmarks launch them), stage Q, K and V by 16-byte vectors only: the element path and its
    run-time choice are not emitted (session 9); without the alignment fact both paths stay."""
    from bench.compile import compile_args
    from bench.gpu_sample_specs import SPECS
    spec = next(s for s in SPECS if s.id == "attention_region_fold:causal_attention")
    text, kernel, proven = compile_args(spec)
    scalar_loads = r"^\s*(?:@%p\d+ )?ld(?:\.global)?\.(?:f32|b32)\s"
    counts = {}
    for label, specialization in (("proven", proven), ("unproven", proven.model_copy(update={"aligned16": ()}))):
        ptx = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts["kernel.ptx"]
        counts[label] = _count(scalar_loads, ptx)
    assert counts["proven"] <= 4 < 16 <= counts["unproven"], counts


def test_flash_rank_one_steps_are_one_loop():
    """The CUDA-core flash's rank-one steps over a staged chunk (four columns of Q and K, four
    keys of P and V a step) are a loop's body each: the scores' and the weighted values' fma
    once a step, not once for each of the chunk's steps."""
    ptx, launch = _ptx("attention_region_fold:causal_attention")
    per_thread = launch["plan"]["per_thread"]
    assert launch["plan"]["steps"] == "rolled"
    scores = per_thread["rows"] * per_thread["keys"] * 4
    values = per_thread["rows"] * per_thread["columns"] * 4
    assert scores + values <= _count(r"^\s*fma\.rn\.f32", ptx) < 2 * (scores + values)


@pytest.mark.parametrize("sample_id,arch,lean,combine", [
    ("tiled_matmul:matmul_tiled", "sm_90", True, True),            # mma.sync tiles
    ("tiled_matmul:matmul_tiled", "sm_90a", False, True),          # warp-specialized wgmma keeps O1
    ("sparse_1of2_matmul:sparse12_matmul", "sm_90", True, False),  # on the CUDA cores: faster without InstCombine
    ("sparse_2of4_matmul:sparse24_matmul", "sm_90", True, False),  # mma.sp: as fast without it
    ("mxfp4_scaled_matmul:mxfp4_matmul", "sm_90", True, True),     # 7% slower without it (session 9)
    ("attention_region_fold:causal_attention", "sm_90", True, True),   # flash: 2-25% slower without it (session 9)
    ("attention_tensor_cores:causal_attention_f16", "sm_90", True, True),
    ("row_softmax:row_softmax", "sm_90", False, True),             # the CTA mapping keeps O1
])
def test_lean_pipeline_for_the_tile_generators(monkeypatch, sample_id, arch, lean, combine):
    chosen = []
    optimize = machine.optimize

    def recorded(module, arch_, lean_=False, combine_=True):
        chosen.append((lean_, combine_))
        optimize(module, arch_, lean_, combine_)
    monkeypatch.setattr(machine, "optimize", recorded)
    _ptx(sample_id, arch)
    assert chosen == [(lean, combine)]


@pytest.mark.parametrize("option,sample_id,arch,chosen", [
    ("codegen_prepare", "sparse_2of4_matmul:sparse24_matmul", "sm_90", False),  # mma.sp: as fast without it
    ("codegen_prepare", "mxfp4_scaled_matmul:mxfp4_matmul", "sm_90", False),    # 1.5% faster without it (session 11)
    ("codegen_prepare", "sparse_1of2_matmul:sparse12_matmul", "sm_90", False),  # 2% faster without it (session 11)
    ("codegen_prepare", "tiled_matmul:matmul_tiled", "sm_90a", True),  # the wgmma entry keeps it beside its fallback
    ("codegen_prepare", "row_softmax:row_softmax", "sm_90", True),
    # SLSR and NaryReassociate (session 11): the same cubin without them for the mma.sync tiles
    ("straight_line", "tiled_matmul:matmul_tiled", "sm_90", False),
    ("straight_line", "sparse_1of2_matmul:sparse12_matmul", "sm_90", True),     # 3.5% slower without SLSR
    ("straight_line", "sparse_2of4_matmul:sparse24_matmul", "sm_90", False),    # structured contractions
    ("straight_line", "mxfp4_scaled_matmul:mxfp4_matmul", "sm_90", False),
    ("straight_line", "tiled_matmul:matmul_tiled", "sm_90a", True),  # the wgmma entry keeps them beside its fallback
    ("straight_line", "row_softmax:row_softmax", "sm_90", True),
])
def test_code_generator_passes_are_the_plans(monkeypatch, option, sample_id, arch, chosen):
    """CodeGenPrepare and the straight-line passes as the plans say (launch.json `mma`)."""
    emitted, launch = _code_generation(monkeypatch, sample_id, arch)
    assert [options[option] for options in emitted] == [chosen]
    assert launch.get("mma", {}).get(option, True) == chosen


@pytest.mark.parametrize("sample_id,arch,level", [
    ("tiled_matmul:matmul_tiled", "sm_90", 2),               # mma.sync tiles: -O0 ran slower (session 8)
    ("sparse_1of2_matmul:sparse12_matmul", "sm_90", 2),      # structured contractions
    ("mxfp4_scaled_matmul:mxfp4_matmul", "sm_90", 2),
    ("attention_region_fold:causal_attention", "sm_90", 0),  # flash on the CUDA cores: its plan's level
    ("attention_tensor_cores:causal_attention_f16", "sm_90", 0),  # on the tensor cores too since session 10 (+1.8 %, a fifth less compile)
    ("row_softmax:row_softmax", "sm_90", 2),
])
def test_code_generator_level_is_the_mappings(monkeypatch, sample_id, arch, level):
    emitted, _ = _code_generation(monkeypatch, sample_id, arch)
    assert [chosen["level"] for chosen in emitted] == [level]


def _code_generation(monkeypatch, sample_id: str, arch: str) -> tuple[list, dict]:
    """The code generator's options for each module the sample compiles (`machine.emit_ptx`'s
    arguments, and whether the module's context runs the straight-line passes), and its
    launch.json."""
    _ptx(sample_id, arch)      # the process's one-off compiles first (ptx_math's templates for the arch)
    emitted, contexts = [], [True]      # a module parsed without `machine.context`: the global one
    emit, context = machine.emit_ptx, machine.context

    def recorded(module, arch_, strength_reduce=True, level=2, prepare=True, collect=False, dag_combine=True):
        emitted.append({"level": level, "codegen_prepare": prepare, "dag_combine": dag_combine,
                        "straight_line": contexts[-1]})
        return emit(module, arch_, strength_reduce, level, prepare, collect, dag_combine)

    def chosen(straight_line=True):     # the context the module was parsed into
        contexts.append(straight_line)
        return context(straight_line)
    monkeypatch.setattr(machine, "emit_ptx", recorded)
    monkeypatch.setattr(machine, "context", chosen)
    _, launch = _ptx(sample_id, arch)
    return emitted, launch


def test_sparse_f32_k_step_is_one_rolled_chunk():
    """The CUDA cores' K step of 16 f32 elements: a rolled loop over its four 16-byte chunks,
    one chunk's 4 x 64 FMAs emitted (plus the exact path's one), each row's A chunk one
    ld.shared.v4; the tile's pairs stored with constant offsets from one pointer a row."""
    ptx, launch = _ptx("sparse_1of2_matmul:sparse12_matmul")
    assert launch["mma"]["instruction"] == "fma.f32" and launch["mma"]["k_step"] == "rolled over 16-byte chunks"
    assert _count(r"^\s*fma\.rn\.f32", ptx) == 4 * 64 + 1
    assert _count(r"^\s*ld\.shared\.v4\.(b32|f32)", ptx) == 8 + 4 * 2


def test_prefix_logsumexp_merges_in_few_places():
    """`prefix_logsumexp`'s log-sum-exp merge (two exponentials) is emitted in three places of
    its scan (the rolled fold, the rolled warp scans, the rolled visit: cta_scan._rolled_chunk),
    beside the summarizer's four unrolled exponentials and the final state's and the emit's
    one each: 12 `ex2.approx`, where session 9's kernel had 29."""
    ptx, launch = _ptx("prefix_logsumexp_region_scan:prefix_logsumexp")
    assert launch["mapping"] == "cta" and launch["slots"] == 0
    assert _count(r"\bex2\.approx", ptx) <= 12
