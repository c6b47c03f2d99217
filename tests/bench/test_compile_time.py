"""Every sample kernel compiles to PTX within a generous bound in a warm process (issue #13:
compile time within Triton's; `bench/compile.py` measures the real numbers). The bound is
CPU time of this process (LLVM runs in it), so the load of other processes on a shared CI
machine does not count against it. A kernel over the bound is timed again, warm (its
libdevice functions already cut out and optimized), before it fails."""
from __future__ import annotations

import time

import pytest

from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.driver import compile_kernel

# The slowest sample (kaiser_frames) took 0.19-0.32 s of CPU on the loaded 2-core dev VM
# (2026-12-01); the others at most 0.2 s.
BOUND_SECONDS = 0.4
# (The flash attention kernels had bounds of their own, 1.0 s, until session 8; they are also
# held relative to the reference below.)


def cpu_seconds_to_ptx(text: str, kernel: str, specialization) -> float:
    start = time.process_time()
    compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
    return time.process_time() - start


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.id)
def test_sample_compiles_to_ptx_within_bound(spec):
    text, kernel, specialization = compile_args(spec)
    bound = BOUND_SECONDS
    seconds = cpu_seconds_to_ptx(text, kernel, specialization)
    if seconds >= bound:     # the first compile may have cut its libdevice functions out
        seconds = min(seconds, cpu_seconds_to_ptx(text, kernel, specialization))
    assert seconds < bound, f"{spec.id} took {seconds * 1e3:.0f} ms of CPU to PTX (bound {bound * 1e3:.0f} ms)"


# CPU time to PTX as a multiple of a trivial kernel's (`periodic_wrap`: a few index ops a
# coordinate) in the same process, so the bound holds on any machine and load; per (sample,
# Specialization.independent_slots). Measured on the loaded dev VM (2026-12-01, min of 5,
# twice; session 7): by default vector add 0.57-0.88x (2.5-3.1x before cheap independent
# iterations took 4 slots and its masked accesses their bounds checks), saxpy 0.75-0.82x,
# flip_rows 0.65-0.68x, pcg_hash 0.94x, row_sum_f16 1.1-1.9x, softmax 1.9-2.7x, bias_act
# 3.0-4.4x, dropout 3.8-5.3x (session 6: layernorm 2.5-2.6x, cumsum 3.2-4.5x); with 4
# independent slots bias_act 1.3-1.8x, dropout 2.3-2.6x. Single measurements varied by up to
# 1.6x (saxpy once 1.31x under a load of 10 on 2 cores), so the bounds are about 1.5x the
# larger, the cheap iterations' 2x: they catch vector add, flip_rows and pcg_hash growing
# back towards the kept-tensor rule's size (2.5-3.4x), the row sums and layernorm going back
# to their allocation compares, not every smaller regression.
# Flash attention (session 8, #13: rolled K steps and writes, loop-carried state, the combine
# and the after-fold ops once; -O2 code generation on the tensor cores, -O0 on the CUDA cores):
# f16 and bf16 4.1-7.1x, f32 2.7-3.9x on the loaded dev VM (2026-12-02), where main before the
# session took 19x, 19x and 10.6x: the bounds catch the unrolled fragments and slots coming back.
# Session 9 (the proven views' element staging not emitted, fragment addresses once): at -O0
# without InstCombine f16 3.6-4.6x, bf16 4.5-4.7x, f32 2.9-3.5x under a load of 7 on 2 cores,
# where main took 5.4-6.7x, 6.1-6.2x and 4.4x; the H200 then ran those choices 2-25% slower, so
# the tensor cores keep -O2 and every flash plan InstCombine, and the 16-bit bounds stay at
# session 8's measure's 1.4x (10x) and f32's at 1.5x the -O0 measure.
REFERENCE = "floordiv_mod_i32:periodic_wrap"
RELATIVE_BOUNDS = {("row_sum:row_sum_f16", 0): 2.4, ("row_softmax:row_softmax", 0): 3.6,
                   ("layernorm:layernorm", 0): 4.0, ("philox_dropout:dropout", 0): 6.5,
                   ("cumsum:row_cumsum", 0): 6.5, ("vector_add:vector_add", 0): 2.0, ("saxpy:saxpy", 0): 2.0,
                   ("reverse_copy_negative_stride:flip_rows", 0): 2.0, ("integer_hash_u32:pcg_hash", 0): 2.0,
                   ("activation_enum:bias_act", 0): 5.0, ("activation_enum:bias_act", 4): 2.6,
                   ("philox_dropout:dropout", 4): 4.0,
                   ("attention_tensor_cores:causal_attention_f16", 0): 10.0,
                   ("attention_tensor_cores:causal_attention_bf16", 0): 10.0,
                   ("attention_region_fold:causal_attention", 0): 5.0}
# The samples that took over 100 ms to PTX on the H200 host in session 7's final round
# (issue #13), after session 8's cuts, measured like the above (loaded dev VM, min of 5,
# 2026-12-02, load 3-7 on 2 cores): nan_max 3.0-3.5x, row_argmax 2.5-3.2x, the f8 quantizers
# 2.3-3.2x / 3.1-3.7x, segment_sum 2.7-4.1x, ema_rows 6.4x, special_math 5.8x and
# prefix_logsumexp 5.1-5.6x (these three not cut enough yet); bounds about 1.4x the larger.
# Session 10 (the rolled scan chunks and warp scans, lane rows' refills and LSR; load 6-9):
# ema_rows 1.9-2.2x, prefix_logsumexp 3.4-4.3x.
RELATIVE_BOUNDS.update({("nan_max_vs_maximum_num:nan_max", 0): 5.0, ("row_argmax:row_argmax", 0): 4.5,
                        ("f8_rowwise_quant:quantize_e4m3_rowwise", 0): 4.5,
                        ("f8_rowwise_quant:quantize_e5m2_rowwise", 0): 5.2,
                        ("segment_sum_scatter_reduce:segment_sum", 0): 5.5, ("ema_row_buffer:ema_rows", 0): 3.5,
                        ("special_math:special_math", 0): 8.0,
                        ("prefix_logsumexp_region_scan:prefix_logsumexp", 0): 6.0})
SPEC_BY_ID = {spec.id: spec for spec in SPECS}


def least_cpu_seconds(ident: str, runs: int = 5, independent_slots: int = 0) -> float:
    """The fewest CPU seconds of `runs` warm compiles of the sample to PTX."""
    text, kernel, specialization = compile_args(SPEC_BY_ID[ident])
    specialization = specialization.model_copy(update={"independent_slots": independent_slots})
    compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
    return min(cpu_seconds_to_ptx(text, kernel, specialization) for _ in range(runs))


@pytest.fixture(scope="module")
def reference_seconds() -> float:
    return least_cpu_seconds(REFERENCE)


@pytest.mark.parametrize("ident,slots", RELATIVE_BOUNDS, ids=[f"{i}-k{k}" for i, k in RELATIVE_BOUNDS])
def test_compile_time_relative_to_a_trivial_kernel(ident, slots, reference_seconds):
    ratio = least_cpu_seconds(ident, independent_slots=slots) / reference_seconds
    bound = RELATIVE_BOUNDS[ident, slots]
    if ratio >= bound:     # the reference was timed once, at the module's start: time both again, side by side
        ratio = min(ratio, least_cpu_seconds(ident, independent_slots=slots) / least_cpu_seconds(REFERENCE))
    assert ratio < bound, f"{ident} (independent_slots {slots}) took {ratio:.2f}x {REFERENCE}'s CPU time to PTX " \
                          f"(bound {bound}x)"
