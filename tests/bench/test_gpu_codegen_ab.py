"""`bench/gpu_codegen_ab.py` compiles each choice apart: session 8's rounds were served one
cached kernel for every choice (intentc.load's table of loaded kernels and the kernel cache
key the source, not a patched plan), so every pair ran "the same". Here each choice's PTX,
compiled through the kernel cache as `intentc.load` compiles, differs from the default's,
and a choice compiled twice gives its own PTX again."""
from __future__ import annotations

import pytest

from bench.compile import compile_args
from bench.gpu_codegen_ab import CHOICES, chosen_compiles
from bench.gpu_sample_specs import SPECS

# one sample a choice changes (the cheapest to compile)
SAMPLE_OF = {"no CodeGenPrepare": "tiled_matmul:matmul_tiled", "no InstCombine": "tiled_matmul:matmul_tiled",
             "CodeGenPrepare": "sparse_2of4_matmul:sparse24_matmul", "InstCombine": "sparse_2of4_matmul:sparse24_matmul",
             "codegen -O0": "tiled_matmul:matmul_tiled", "codegen -O0 no InstCombine": "tiled_matmul:matmul_tiled",
             "no InstCombine no CodeGenPrepare": "mxfp4_scaled_matmul:mxfp4_matmul",
             "unrolled K step": "sparse_1of2_matmul:sparse12_matmul",
             "straight-line passes": "sparse_2of4_matmul:sparse24_matmul",
             "no straight-line passes": "sparse_1of2_matmul:sparse12_matmul",
             "LSR": "dot_f16_f32acc:batched_dot_f16", "flash -O2": "attention_tensor_cores:causal_attention_f16",
             "flash no InstCombine": "attention_tensor_cores:causal_attention_f16",
             "flash -O0 no InstCombine": "attention_tensor_cores:causal_attention_f16",
             "flash -O2 InstCombine": "attention_tensor_cores:causal_attention_f16",
             "flash op by op": "attention_tensor_cores:causal_attention_f16",
             "flash steps rolled": "attention_tensor_cores:causal_attention_f16",
             "flash libdevice inlined": "attention_tensor_cores:causal_attention_f16",
             "flash no DAG combine": "attention_tensor_cores:causal_attention_f16",
             "flash masked reductions": "attention_region_fold:causal_attention",
             "flash 32-key tiles": "attention_tensor_cores:causal_attention_f16",
             "flash 48-key tiles": "attention_tensor_cores:causal_attention_f16"}
# choices that are today's plans for the first sample they change (the tensor-core flash plans',
# the lane-dots plan's)
TODAYS = {"flash -O0", "flash -O0 InstCombine", "flash DAG combine", "lane-dots no LSR"}


def cached_ptx(ident: str, choice: str) -> str:
    from intentc.driver import front_end
    from intentc.runtime.compilers import artifacts_of
    text, kernel, specialization = compile_args(next(s for s in SPECS if s.id == ident))
    with chosen_compiles(choice):
        return artifacts_of(front_end(text, kernel, "ptx", "sm_90", specialization=specialization), None) \
            .artifacts["kernel.ptx"]


def test_every_choice_but_the_default_is_tested():
    assert set(SAMPLE_OF) == set(CHOICES) - {"default"} - TODAYS
    assert all(ident in CHOICES[choice][1] for choice, ident in SAMPLE_OF.items())


@pytest.mark.parametrize("choice", sorted(TODAYS))
def test_a_choice_of_todays_plans_compiles_the_default(choice):
    ident = CHOICES[choice][1][0]
    assert cached_ptx(ident, choice) == cached_ptx(ident, "default")


@pytest.mark.parametrize("choice", SAMPLE_OF)
def test_a_choice_compiles_its_own_kernel(choice):
    ident = SAMPLE_OF[choice]
    default = cached_ptx(ident, "default")
    chosen = cached_ptx(ident, choice)
    assert chosen != default, f"{choice} gave {ident} the default's PTX"
    assert cached_ptx(ident, "default") == default
