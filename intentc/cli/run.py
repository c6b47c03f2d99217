"""`intentc run`: run a kernel on a target: the reference interpreter, the host CPU or a CUDA GPU."""
from __future__ import annotations

import sys

import numpy as np

from ..diagnostics import DiagnosticError
from .common import EXIT_INPUT_ERROR, EXIT_OK, UsageError, Chunk, load, read_text, report
from .specialize import parse_define, parse_extents

TARGETS = ("interp", "cpu", "cuda")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a kernel (reference interpreter)")
    p.add_argument("file", metavar="FILE", help="a .kir file (- for stdin)")
    p.add_argument("--kernel", required=True, metavar="NAME", help="the kernel to run (without @)")
    p.add_argument("--target", default="interp", choices=TARGETS, help="where to run it (default interp)")
    p.add_argument("--inputs", metavar="IN.npz", help="arrays named by kernel parameter")
    p.add_argument("--outputs", metavar="OUT.npz", help="write the out/inout views here (else print them)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr parameter value (int, float, true/false or an enum member)")
    p.add_argument("--extent", action="append", default=[], metavar="NAME=N",
                   help="compile (cpu, cuda) specialized to this dynamic extent; launches must match it")
    p.add_argument("--dynamic-extents", action="store_true",
                   help="cuda: keep extents dynamic (by default they are specialized to the inputs' shapes)")
    p.add_argument("--seed", type=int, default=0, help="seed of the parallel iteration order (default 0)")
    p.set_defaults(run=run)


def _load_inputs(path: str | None) -> dict[str, np.ndarray]:
    if path is None:
        return {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read {path} as .npz: {error}") from None


def _input_extents(module, kernel: str, inputs: dict, file: str, text: str) -> dict[str, int]:
    from ..ir.nodes import Kernel
    from ..runtime.extents import input_extents
    found = module.find(kernel)
    return input_extents(module, found, inputs, file, text) if isinstance(found, Kernel) else {}


def run(args) -> int:
    text = read_text(args.file)
    constexprs = dict(parse_define(d) for d in args.defines)
    inputs = _load_inputs(args.inputs)
    specialization = {"constexprs": constexprs, "extents": parse_extents(args.extent)}
    try:
        module = load(Chunk(args.file, text))
        if args.target == "cpu":
            from ..runtime.cpu import compile_cpu
            outputs = compile_cpu(module, args.kernel, specialization, file=args.file, source=text)(inputs, constexprs)
        elif args.target == "cuda":
            from ..runtime.cuda import compile_cuda
            if not args.dynamic_extents:      # one launch: compile for its shapes (docs/gpu.md)
                specialization["extents"] = {**_input_extents(module, args.kernel, inputs, args.file, text),
                                             **specialization["extents"]}
            outputs = compile_cuda(module, args.kernel, specialization, file=args.file, source=text)(inputs, constexprs)
        else:
            from ..interp.launch import run_kernel
            outputs = run_kernel(module, args.kernel, inputs, constexprs, args.seed, args.file, text)
    except DiagnosticError as error:
        report(error)
        return EXIT_INPUT_ERROR
    if args.outputs:
        np.savez(args.outputs, **outputs)
    else:
        with np.printoptions(threshold=64, edgeitems=4):
            for name, array in outputs.items():
                sys.stdout.write(f"%{name}: {array.dtype}{list(array.shape)}\n{array}\n")
    return EXIT_OK
