"""The sm_90a widening of 8-bit floats to f16 without a GPU (`nvptx/f8_widening.py`; the GPU
test of every code is tests/gpu/test_f8_widening.py): the integer widening (its byte
permutes emulated, its other operations run on the host) is exact for all 256 codes of
e4m3 and e5m2; the
K permutation that lets the consumers read A's register operand is one; and each plan's
PTX has the instructions it promises, which ptxas accepts."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import intentc
from intentc.codegen.nvptx import f8_widening
from intentc.codegen.nvptx.tma_asm import F8_PAIRS
from intentc.driver import compile_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from mma_cases import tma_plan_under, variant

CODES = np.arange(256, dtype=np.uint32)


def _permuted(words: np.ndarray, selector: int) -> np.ndarray:
    """prmt.b32 with a zero second operand: byte i of the result is byte (selector >> 4i) & 7."""
    out = np.zeros_like(words)
    for i in range(4):
        source = (selector >> (4 * i)) & 7
        byte = (words >> (8 * source)) & 0xFF if source < 4 else 0
        out |= byte << (8 * i)
    return out


def _halves(words: np.ndarray) -> np.ndarray:
    return np.stack([words & 0xFFFF, words >> 16], axis=-1).astype(np.uint16).view(np.float16)


@pytest.mark.parametrize("dtype", ["f8e4m3fn", "f8e5m2"])
def test_integer_widening_is_exact_for_every_code(dtype):
    """Four codes a word (every code in each byte position), widened as the PTX does (the
    byte permutes emulated, e4m3's integer operations as emitted); e4m3's multiply by 2^8 is
    exact in f16 (no flush: subnormal inputs stay)."""
    words = np.concatenate([CODES << (8 * position) for position in range(4)])
    pairs = [_permuted(words, selector) for selector in (f8_widening.LOW_PAIR, f8_widening.HIGH_PAIR)]
    if dtype == "f8e4m3fn":     # the emitted integer part, run on the host, then mul.rn.f16x2 by 2^8
        scaled_down = _host_function(f8_widening.e4m3_pair_scaled_down)
        for index, pair in enumerate(pairs):
            halves = _halves(np.array([scaled_down(int(word)) for word in pair], np.uint32))
            scaled = (halves * np.float16(2.0 ** 8)).view(np.uint16).astype(np.uint32)
            pairs[index] = scaled[:, 0] | scaled[:, 1] << 16
    got = np.stack([_halves(pair) for pair in pairs], axis=1).reshape(len(words), 4)
    numpy_dtype = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[dtype]
    expected = words.view(np.uint8).reshape(len(words), 4).view(numpy_dtype).astype(np.float16)
    assert np.array_equal(np.isnan(got), np.isnan(expected)) and np.isnan(expected).any()
    finite = ~np.isnan(expected)
    assert np.array_equal(got[finite].view(np.uint16), expected[finite].view(np.uint16))     # signed zeros too


def _host_function(build):
    """The i32 -> i32 function `build(builder, argument)` emits, compiled for this host."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir

    from intentc.codegen.llvm.types import I32
    module = ir.Module()
    function = ir.Function(module, ir.FunctionType(I32, [I32]), "f")
    builder = ir.IRBuilder(function.append_basic_block())
    builder.ret(build(builder, function.args[0]))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(module))
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    compiled = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)(engine.get_function_address("f"))
    return lambda value, engine=engine: compiled(value)


def test_k_permutation_gives_each_lane_its_register_slots():
    """Raw K element 16t + 4s + q is B's staged row 16s + (slot of lane t: 2t, 2t + 1,
    2t + 8, 2t + 9 for q = 0..3), a permutation of the tile's 64 K rows (the emitted IR, run
    on the host)."""
    permuted = _host_function(f8_widening.permuted_k_row)
    rows = [permuted(k) for k in range(64)]
    assert sorted(rows) == list(range(64))
    for t in range(4):
        for step in range(4):
            assert [rows[16 * t + 4 * step + q] for q in range(4)] == [16 * step + s for s in
                                                                       (2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9)]


def _planned_ptx(dtype: str, plan: dict, acc: str = "f32") -> tuple:
    with tma_plan_under(plan):
        artifacts = compile_kernel(variant(dtype, acc, "f16"), "matmul_tiled", "ptx", "sm_90a").artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


def _ptxas_accepts(ptx: str, folder: Path, spills: bool = True) -> None:
    """ptxas (where installed) compiles the kernel for sm_90a keeping its wgmmas asynchronous
    (no warning C7514), and with `spills` False spills nothing."""
    if not shutil.which("ptxas"):
        return
    source = folder / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(source), "-o", str(folder / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "C7514" not in done.stderr, done.stderr
    if not spills:
        assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr.split("Function properties for")[-1]


@pytest.mark.parametrize("dtype,plan,present,absent,acc", [
    ("f8e4m3fn", {"widening": "bits"}, ["prmt.b32", "mul.rn.f16x2"], ["cvt.rn.f16x2.e4m3x2"], "f32"),
    ("f8e5m2", {"widening": "bits"}, ["prmt.b32"], ["cvt.rn.f16x2.e5m2x2", "mul.rn.f16x2"], "f32"),
    ("f8e4m3fn", {"widen_bytes": 16, "widen_unroll": 2}, ["ld.shared.v4.b32", "cvt.rn.f16x2.e4m3x2"], [], "f32"),
    ("f8e4m3fn", {"registers_a": True}, ["f32.f16.f16 {", "}, {%r"], [], "f32"),
    ("f8e4m3fn", {"registers_a": True, "inline_copies": True}, ["f16.f16.f16 {", "}, {%r"], [], "f16"),
    ("f8e4m3fn", {"widening": "mixed"}, ["cvt.rn.f16x2.e4m3x2", "mul.rn.f16x2"], [], "f32"),
])
def test_plan_ptx_has_its_instructions(dtype, plan, present, absent, acc, tmp_path):
    """Each option's instructions, and ptxas accepting its kernel (f32 or f16 accumulator)."""
    ptx, launch = _planned_ptx(dtype, plan, acc)
    kernel = ptx.split(".entry")[1]
    for text in present:
        assert text in kernel, text
    for text in absent:
        assert text not in kernel, text
    assert launch["mma"]["shared_bytes"] <= 227 * 1024
    _ptxas_accepts(ptx, tmp_path)


@pytest.mark.parametrize("dtype", ["f8e4m3fn", "f8e5m2"])
def test_default_is_the_form_verified_on_the_gpu(dtype):
    """The default is the form the H200 measured fastest (session 7 round 2): the raw ring
    shares the wgmma ring's slots and `empty` barrier (no `raw_free`), 96 converters widen
    by cvt, 16 bytes a chunk, 4 chunks in flight with each trip's loads first, and the
    consumers read A from shared memory; the options still unverified or slower are off."""
    ptx, launch = _planned_ptx(dtype, {})
    plan = launch["mma"]
    assert plan["widen"] == {"widening": "cvt", "chunk_bytes": 16, "unroll": 4, "converters": 96,
                             "decoupled_rings": False, "inline_copies": False, "registers_a": False,
                             "warp_arrivals": False, "loads_first": True}
    assert plan["stages"] == plan["raw_stages"] == 3
    kernel = ptx.split(".entry")[1]
    # three barriers a slot (full, empty, raw): the copies' one, the converters' 96, the consumers' 2
    assert sorted(re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", kernel), key=int) == \
        ["1"] * 3 + ["2"] * 3 + ["96"] * 3
    assert "mul.rn.f16x2" not in kernel and "bar.warp.sync" not in kernel


@pytest.mark.parametrize("plan,slots,arrivals", [
    ({"decoupled_rings": True}, (3, 3), {"full": 96, "raw_free": 96}),
    ({"inline_copies": True}, (3, 3), {"full": 128, "raw_free": 128}),
    ({"registers_a": True}, (4, 4), {"full": 96, "raw_free": 96 + 256}),
    ({"registers_a": True, "inline_copies": True, "warp_arrivals": True}, (4, 4), {"full": 4, "raw_free": 4 + 8}),
    ({"stages": 2, "raw_stages": 4}, (2, 4), {"full": 96, "raw_free": 96}),
])
def test_decoupled_rings_have_their_own_release_barrier(plan, slots, arrivals):
    """With the rings decoupled each raw slot has a `raw_free` barrier, counting every reader
    of the raw slot (or each reading warp), beside the wgmma ring's full / empty and raw."""
    ptx, launch = _planned_ptx("f8e4m3fn", plan)
    stages, raw_stages = slots
    assert (launch["mma"]["stages"], launch["mma"]["raw_stages"]) == slots and launch["mma"]["widen"]["decoupled_rings"]
    counts = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", ptx.split(".entry")[1])
    expected = [1] * raw_stages + [2] * stages + [arrivals["full"]] * stages + [arrivals["raw_free"]] * raw_stages
    assert sorted(map(int, counts)) == sorted(expected)


@pytest.mark.parametrize("plan", [{"widen_unroll": 8}, {"widen_bytes": 16, "widen_unroll": 4}, {"registers_a": True},
                                  {"inline_copies": True, "widen_bytes": 16, "widen_unroll": 2},
                                  {"loads_first": True, "widen_unroll": 8},
                                  {"loads_first": True, "widen_bytes": 16, "widen_unroll": 4}])
def test_setmaxnreg_fits_the_pool_under_each_option(plan):
    """Converters keeping more bytes in flight take registers from the consumers, within the
    pool of 168 x 384 the CTA starts with (more would hang), the consumers keeping room for
    their 128 accumulators."""
    from intentc.codegen.nvptx.tile_contraction import match_tile_contraction
    from intentc.codegen.nvptx.wgmma_tma import tma_plan
    module = intentc.parse(variant("f8e4m3fn", "f32", "f16"), "t.kir")
    kernel = module.find("matmul_tiled")
    producer, consumer = tma_plan(kernel, match_tile_contraction(kernel), None, **plan).registers
    assert producer % 8 == 0 and consumer % 8 == 0 and 24 <= producer <= consumer
    assert 128 * producer + 256 * consumer <= 168 * 384 and consumer >= 128 + 48


def test_raw_ring_is_recorded_and_fits():
    """The raw ring's depth is launch.json data; A from registers leaves room for 4 B slots."""
    _, launch = _planned_ptx("f8e4m3fn", {"registers_a": True})
    plan = launch["mma"]
    assert plan["stages"] == 4 and plan["raw_stages"] == 4 and "register operand" in plan["convert"]
    ring = 4 * 64 * 256 * 2 + 4 * 64 * (128 + 256)
    assert ring < plan["shared_bytes"] <= 227 * 1024


def _widening_order(kernel: str, dtype: str) -> str:
    """The kernel's shared loads (L), conversions (C) and 16-byte shared stores (S), in order."""
    tokens = {"ld.shared.v": "L", f"cvt.rn.f16x2.{F8_PAIRS[dtype]}": "C", "st.shared.v4": "S"}
    found = re.findall("|".join(re.escape(text) for text in tokens), kernel)
    return "".join(tokens[text] for text in found)


def _barrier_counts(kernel: str) -> list:
    return sorted(map(int, re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", kernel)))


@pytest.mark.parametrize("dtype,plan,trip", [
    ("f8e4m3fn", {"loads_first": False, "widen_bytes": 8}, "(LC{4}S){4}"),     # chunk by chunk: one load in flight
    ("f8e4m3fn", {"loads_first": True, "widen_bytes": 8}, "L{4}(C{4}S){4}"),
    ("f8e5m2", {"loads_first": True, "widen_unroll": 8, "widen_bytes": 8}, "L{8}(C{4}S){8}"),
    ("f8e4m3fn", {}, "L{4}(C{8}SS){4}"),    # the default: 16-byte chunks, 4 in flight, loads first
    ("f8e4m3fn", {"loads_first": True, "widen_bytes": 16, "widen_unroll": 4}, "L{4}(C{8}SS){4}"),
    ("f8e4m3fn", {"loads_first": True, "widen_unroll": 8, "widen_bytes": 8, "decoupled_rings": True}, "L{8}(C{4}S){8}"),
])
def test_loads_first_puts_a_trips_loads_in_flight_together(dtype, plan, trip, tmp_path):
    """`loads_first`: a converter's trip issues all its chunks' shared loads before the first
    conversion or store (ptxas does not move a shared load above a shared store it cannot
    tell apart), the producer gets the registers they need (setmaxnreg; ptxas spills
    nothing), and the rings and barriers are the plan's without it; ptxas accepts the kernel."""
    ptx, launch = _planned_ptx(dtype, plan)
    kernel = ptx.split(".entry")[1]
    order = _widening_order(kernel, dtype)
    assert re.fullmatch(trip, order), order
    assert launch["mma"]["widen"]["loads_first"] == plan.get("loads_first", True)
    producer, consumer = (int(value) for value in
                          re.findall(r"setmaxnreg\.(?:dec|inc)\.sync\.aligned\.u32 (\d+);", kernel))
    assert 128 * producer + 256 * consumer <= 168 * 384 and consumer >= 128 + 48
    without_ptx, without = _planned_ptx(dtype, {**plan, "loads_first": False})
    assert launch["mma"]["shared_bytes"] == without["mma"]["shared_bytes"]
    assert _barrier_counts(kernel) == _barrier_counts(without_ptx.split(".entry")[1])
    _ptxas_accepts(ptx, tmp_path, spills=False)
