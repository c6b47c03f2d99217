"""The pass manager: runs a pipeline with instrumentation (verify-each, IR printing, timing)
and turns a failing pass into a crash reproducer.

`run_pipeline(module, passes, ctx, instrumentation)` returns a `PipelineRun` with the final
module and the time each pass took. When a pass raises, or its output does not verify under
`verify_each`, a reproducer holding the pass's input IR and the pipeline from that pass on
is written (see `reproducer.py`) and `PassFailure` is raised naming it.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from ..ir.nodes import Module
from ..printer import print_module
from ..verify import verify
from .base import Pass, PassContext
from .pipeline import print_pipeline


@dataclass
class Instrumentation:
    verify_each: bool = True
    print_ir_after_all: bool = False
    print_ir_after_change: bool = False
    print_ir_after: frozenset[str] = frozenset()
    # Where IR dumps go (stderr by default, as mlir-opt does).
    dump: TextIO | None = None
    # Where a crash reproducer is written; None means a fresh temporary directory.
    reproducer_path: str | None = None


@dataclass
class PipelineRun:
    module: Module
    timings: list[tuple[str, float]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


class PassFailure(Exception):
    """A pass raised or produced IR that does not verify: a compiler bug, with a reproducer."""

    def __init__(self, pass_name: str, reason: str, reproducer: str | None):
        self.pass_name, self.reason, self.reproducer = pass_name, reason, reproducer
        where = f"; reproducer: {reproducer}" if reproducer else ""
        super().__init__(f"pass `{pass_name}` failed: {reason}{where}")


def run_pipeline(module: Module, passes: list[Pass], ctx: PassContext | None = None,
                 instrumentation: Instrumentation | None = None) -> PipelineRun:
    ctx = ctx or PassContext()
    instr = instrumentation or Instrumentation()
    run = PipelineRun(module)
    for position, current in enumerate(passes):
        before = run.module
        start = time.perf_counter()
        try:
            after = current.run(before, ctx)
        except Exception as error:
            raise _failure(current, f"{type(error).__name__}: {error}", before, passes[position:], ctx, instr) \
                from error
        run.timings.append((current.name, time.perf_counter() - start))
        changed = after is not before
        if changed:
            run.changed.append(current.name)
        if instr.verify_each and changed:
            problems = verify(after)
            if problems:
                reason = "its output does not verify:\n" + "\n".join(p.render(print_module(after)) for p in problems)
                raise _failure(current, reason, before, passes[position:], ctx, instr)
        _maybe_dump(current, after, changed, instr)
        run.module = after
    return run


def _maybe_dump(current: Pass, module: Module, changed: bool, instr: Instrumentation) -> None:
    wanted = (instr.print_ir_after_all or current.name in instr.print_ir_after
              or (instr.print_ir_after_change and changed))
    if not wanted:
        return
    stream = instr.dump or sys.stderr
    stream.write(f"// -----// IR Dump After {current.name} //----- //\n")
    stream.write(print_module(module))


def _failure(current: Pass, reason: str, module: Module, remaining: list[Pass], ctx: PassContext,
             instr: Instrumentation) -> PassFailure:
    from .reproducer import write_reproducer
    path = write_reproducer(module, print_pipeline(remaining), ctx, instr.verify_each, reason,
                            instr.reproducer_path)
    return PassFailure(current.name, reason, str(path))


def timing_table(timings: list[tuple[str, float]]) -> str:
    """A per-pass wall-time table (milliseconds and share of the total), as `--timing` prints."""
    total = sum(seconds for _, seconds in timings) or 1e-12
    lines = ["===-------------------------------------------------------------------------===",
             "                         intentc pass execution timing",
             "===-------------------------------------------------------------------------===",
             f"  {'wall (ms)':>10}  {'share':>7}  pass"]
    for name, seconds in timings:
        lines.append(f"  {seconds * 1e3:10.3f}  {seconds / total:7.1%}  {name}")
    lines.append(f"  {total * 1e3:10.3f}  {1:7.1%}  total")
    return "\n".join(lines) + "\n"


