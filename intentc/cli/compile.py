"""`intentc compile`: compile one kernel for a target (llvm: LLVM IR text; cpu: an object file)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..codegen.layout.assign import dump
from ..diagnostics import DiagnosticError
from ..options import CompileOptions, Specialization
from .common import EXIT_INPUT_ERROR, EXIT_OK, UsageError, read_text, report
from .specialize import parse_define, parse_extents


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("compile", help="compile a kernel for a target (llvm, cpu, ...)")
    p.add_argument("file", metavar="FILE", help="a .kir file (- for stdin)")
    p.add_argument("--kernel", required=True, metavar="NAME", help="the kernel to compile (without @)")
    p.add_argument("--target", default="llvm", metavar="TARGET",
                   help="kir, llvm (IR text, default), cpu (object), ptx (with launch.json) or cubin")
    p.add_argument("--arch", default=None, help="target architecture, for targets that have several")
    p.add_argument("-o", dest="output", metavar="OUT", help="write the artifact here (default: stdout for text)")
    p.add_argument("-O", dest="opt_level", type=int, default=2, choices=range(4), help="LLVM optimization level")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="specialize a constexpr parameter")
    p.add_argument("--extent", action="append", default=[], metavar="NAME=N", help="specialize a dynamic extent")
    p.add_argument("--timings", action="store_true", help="print the time of each stage to stderr")
    p.add_argument("--print-layouts", action="store_true",
                   help="print the GPU mapping and every tensor value's layout to stderr (ptx, cubin)")
    p.set_defaults(run=run)


def _specialization(args) -> Specialization:
    return Specialization(constexprs=dict(parse_define(d) for d in args.defines), extents=parse_extents(args.extent))


def run(args) -> int:
    from ..driver import compile_kernel
    text = read_text(args.file)
    try:
        result = compile_kernel(text, args.kernel, args.target, args.arch, CompileOptions(opt_level=args.opt_level),
                                _specialization(args), file=args.file)
    except DiagnosticError as error:
        report(error)
        return EXIT_INPUT_ERROR
    (name, artifact), *_ = result.artifacts.items()
    if args.output:
        Path(args.output).write_bytes(artifact if isinstance(artifact, bytes) else artifact.encode())
    elif isinstance(artifact, bytes):
        raise UsageError(f"target `{args.target}` produces a binary {name}; write it with -o OUT")
    else:
        sys.stdout.write(artifact if artifact.endswith("\n") else artifact + "\n")
    if args.print_layouts and "launch.json" in result.artifacts:
        launch = json.loads(result.artifacts["launch.json"])
        print(f"// mapping {launch['mapping']}, block {launch['block'][0]}, slots {launch['slots']}", file=sys.stderr)
        sys.stderr.write(dump(launch["layouts"]))
    if args.timings:
        for stage, seconds in result.timings.items():
            print(f"{stage:>24}: {seconds * 1e3:8.2f} ms", file=sys.stderr)
    return EXIT_OK
