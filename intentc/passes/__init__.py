"""The pass pipeline between verification and lowering (docs/passes.md).

    from intentc.passes import optimize
    result = optimize(module, CompileOptions(numerics="relaxed_normalization"))
    result.module, result.timings
"""
from __future__ import annotations

from ..ir.nodes import Module
from ..options import CompileOptions, Specialization
from .base import Pass, PassContext, lookup_pass, pass_names, register_pass
from .manager import Instrumentation, PassFailure, PipelineRun, run_pipeline, timing_table
from .pipeline import PipelineError, parse_pipeline, print_pipeline

# What `compile` runs when CompileOptions.pipeline is None; `intentc opt --print-pipeline`
# prints it with every option spelled out.
DEFAULT_PIPELINE = "canonicalize,cse,fusion-legality,online-reduction,dce,address-width"

__all__ = [
    "DEFAULT_PIPELINE", "Instrumentation", "Pass", "PassContext", "PassFailure", "PipelineError",
    "PipelineRun", "lookup_pass", "optimize", "parse_pipeline", "pass_names", "pipeline_for",
    "print_pipeline", "register_pass", "run_pipeline", "timing_table",
]


def pipeline_for(options: CompileOptions) -> list[Pass]:
    """The passes a compile with these options runs (raises PipelineError for a bad string)."""
    return parse_pipeline(options.pipeline if options.pipeline is not None else DEFAULT_PIPELINE)


def optimize(module: Module, options: CompileOptions | None = None,
             specialization: Specialization | None = None,
             instrumentation: Instrumentation | None = None) -> PipelineRun:
    """Run the pipeline of `options` (the default one unless it names another) on a verified module."""
    options = options or CompileOptions()
    ctx = PassContext(options, specialization or Specialization())
    return run_pipeline(module, pipeline_for(options), ctx, instrumentation)
