"""The CTA mapping's dynamic form visits a shape whose static size fits the CTA (at most one
coordinate a thread: quantize_q8_k's 64 blocks on 512 threads) with one guarded visit, not
a block-stride loop with its DYNAMIC_UNROLL copies that never run (issue #13: LLVM still
optimized them before deleting them). No GPU needed: the lowered IR."""
from __future__ import annotations

from bench.common import attributes
from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.codegen.llvm.kernel import LoweredKernel
from intentc.codegen.nvptx.compile import compile_ptx
from intentc.driver import front_end
from intentc.options import CompileOptions
from intentc.passes import Instrumentation, optimize


def _lowered(ident: str, extents: dict | None = None):
    """(launch config, the lowered LLVM IR's text as compile_ptx hands it to LLVM)."""
    text, kernel, specialization = compile_args(next(spec for spec in SPECS if spec.id == ident))
    if extents is not None:
        specialization = specialization.model_copy(update={"extents": extents})
    request = front_end(text, kernel, "ptx", "sm_90", specialization=specialization)
    module = optimize(request.module, CompileOptions(), request.specialization,
                      Instrumentation(verify_each=False)).module
    texts = []
    taken = LoweredKernel.take_text

    def take_text(self):
        texts.append(taken(self))
        return texts[-1]
    with attributes(LoweredKernel, take_text=take_text):
        compiled = compile_ptx(module, kernel, "sm_90", request.specialization)
    return compiled.launch, texts[0]


def test_blocks_that_fit_the_cta_are_one_guarded_visit():
    launch, ir = _lowered("quantize_q8_k:quantize_q8_k")          # NB = 64 blocks, 512 threads
    assert launch.mapping == "cta" and launch.slots == 0 and launch.block[0] == 512
    # one block-stride loop pair left: the copy of the 64 x 292 record bytes out
    assert ir.count("\nlanes.head") == ir.count("\nlane.head") == 1


def test_blocks_past_the_cta_keep_the_block_stride_loops():
    launch, ir = _lowered("quantize_q8_k:quantize_q8_k", {"NB": 1024})
    assert launch.slots == 0 and ir.count("\nlanes.head") == 2      # the blocks' loop and the copy-out's
