"""`intentc opt`: run a pass pipeline on KIR and print the result (mlir-opt style).

Exit codes as everywhere: 0 ok, 1 the input has errors, 2 bad usage (a pipeline string
that does not parse is one), 3 a pass failed (a reproducer is written and named).
"""
from __future__ import annotations

import argparse
import sys

from ..diagnostics import DiagnosticError
from ..options import CompileOptions, Specialization
from ..passes import (
    DEFAULT_PIPELINE, Instrumentation, PassContext, PassFailure, PipelineError, parse_pipeline,
    print_pipeline, run_pipeline, timing_table,
)
from ..passes.reproducer import read_reproducer
from ..verify import verify
from .common import (
    EXIT_INPUT_ERROR, EXIT_INTERNAL, EXIT_OK, UsageError, canonical, chunks, join_chunks, load,
    read_text, report, report_one,
)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("opt", help="run a pass pipeline on KIR and print the result")
    p.add_argument("file", nargs="?", metavar="FILE", help="KIR file (- for stdin)")
    p.add_argument("--pass-pipeline", metavar="PIPELINE",
                   help=f"passes to run, e.g. 'cse,dce' (default: the compile pipeline, {DEFAULT_PIPELINE})")
    p.add_argument("--print-pipeline", action="store_true",
                   help="print the pipeline (the default one unless --pass-pipeline) with all options and exit")
    p.add_argument("--verify-each", action=argparse.BooleanOptionalAction, default=True,
                   help="verify the IR after every pass that changed it (default on; --no-verify-each)")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--print-ir-after-change", action="store_true",
                   help="print the IR after every pass that changed it (stderr)")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                   help="print the IR after each run of pass NAME (stderr); repeatable")
    p.add_argument("--timing", action="store_true", help="print a per-pass time table (stderr)")
    p.add_argument("--numerics", choices=("source", "relaxed_normalization"), default="source",
                   help="numerics mode of the compile (§5.6); default source")
    p.add_argument("--online-reduction", action=argparse.BooleanOptionalAction, default=True,
                   help="allow the online-reduction rewrite (default on; --no-online-reduction)")
    p.add_argument("--extent", action="append", default=[], metavar="NAME=VALUE",
                   help="specialize a dynamic extent (e.g. N=1024); repeatable")
    p.add_argument("--contiguous", action="append", default=[], metavar="PARAM",
                   help="specialization fact: view PARAM is dense row-major; repeatable")
    p.add_argument("--unit-stride", action="append", default=[], metavar="PARAM",
                   help="specialization fact: view PARAM has innermost stride 1; repeatable")
    p.add_argument("--run-reproducer", metavar="REPRODUCER",
                   help="replay a crash reproducer written by a failing pass")
    p.add_argument("--crash-reproducer", metavar="PATH",
                   help="where to write the reproducer if a pass fails (default: a new temporary directory)")
    p.add_argument("--split-input-file", action="store_true", help="run on each `// -----` piece alone")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.run_reproducer:
        return _replay(args)
    pipeline_text = args.pass_pipeline if args.pass_pipeline is not None else DEFAULT_PIPELINE
    passes = _parse_pipeline(pipeline_text)
    if args.print_pipeline:
        print(print_pipeline(passes))
        if args.file is None:
            return EXIT_OK
    if args.file is None:
        raise UsageError("opt needs a FILE (or --print-pipeline / --run-reproducer)")
    options = CompileOptions(numerics=args.numerics, online_reduction=args.online_reduction, pipeline=pipeline_text)
    ctx = PassContext(options, _specialization(args))
    text = read_text(args.file)
    return _optimize(args, passes, ctx, chunks(args.file, text, args.split_input_file), args.verify_each)


def _specialization(args) -> Specialization:
    extents = {}
    for item in args.extent:
        name, _, value = item.partition("=")
        if not name or not value.lstrip("-").isdigit() or int(value) < 0:
            raise UsageError(f"--extent wants NAME=VALUE with a non-negative integer, got `{item}`")
        extents[name.lstrip("%")] = int(value)
    return Specialization(extents=extents, contiguous=tuple(args.contiguous), unit_stride=tuple(args.unit_stride))


def _parse_pipeline(text: str):
    try:
        return parse_pipeline(text)
    except PipelineError as error:
        report(error)
        raise UsageError("the pass pipeline does not parse") from None


def _optimize(args, passes, ctx: PassContext, inputs, verify_each: bool) -> int:
    instrumentation = Instrumentation(
        verify_each=verify_each, print_ir_after_all=args.print_ir_after_all,
        print_ir_after_change=args.print_ir_after_change, print_ir_after=frozenset(args.print_ir_after),
        reproducer_path=args.crash_reproducer)
    outputs, status, timings = [], EXIT_OK, []
    for chunk in inputs:
        try:
            module = load(chunk)
        except DiagnosticError as error:
            report(error)
            status = EXIT_INPUT_ERROR
            continue
        problems = verify(module, chunk.file)
        if problems:
            for problem in problems:
                report_one(problem, chunk.text)
            status = EXIT_INPUT_ERROR
            continue
        try:
            result = run_pipeline(module, passes, ctx, instrumentation)
        except PassFailure as failure:
            print(f"intentc opt: {failure}", file=sys.stderr)
            return EXIT_INTERNAL
        outputs.append(canonical(result.module))
        timings.extend(result.timings)
    if outputs:
        sys.stdout.write(join_chunks(outputs))
    if args.timing:
        sys.stderr.write(timing_table(timings))
    return status


def _replay(args) -> int:
    text = read_text(args.run_reproducer)
    try:
        reproducer = read_reproducer(text)
    except ValueError as error:
        raise UsageError(f"{args.run_reproducer}: {error}") from None
    passes = _parse_pipeline(reproducer.pipeline)
    chunk = chunks(args.run_reproducer, text, False)
    return _optimize(args, passes, reproducer.context, chunk, reproducer.verify_each and args.verify_each)
