"""`intentc run`: run a kernel on a target: the reference interpreter, the host CPU or a CUDA GPU."""
from __future__ import annotations

import argparse
import io
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..diagnostics import DiagnosticError
from ..verify import verify_or_raise
from .common import EXIT_INPUT_ERROR, EXIT_OK, UsageError, Chunk, load, only_kernel, read_text, report, write_file
from .specialize import parse_define, parse_extents

TARGETS = ("interp", "cpu", "cuda")
# What numpy raises for a file that is not a readable .npz (empty, truncated, corrupt).
_UNREADABLE = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a kernel (reference interpreter)")
    p.add_argument("file", metavar="FILE", help="a .kir file (- for stdin)")
    p.add_argument("--kernel", metavar="NAME", help="the kernel to run (without @); optional when the file has one")
    p.add_argument("--target", default="interp", choices=TARGETS, help="where to run it (default interp)")
    p.add_argument("--inputs", metavar="IN.npz", help="arrays named by kernel parameter (np.savez)")
    p.add_argument("--outputs", metavar="OUT",
                   help="write the out/inout views to OUT (a .npz), or to DIR/KERNEL.npz when OUT is a directory "
                        "(else print them)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr parameter value (int, float, true/false or an enum member)")
    p.add_argument("--extent", action="append", default=[], metavar="NAME=N",
                   help="compile (cpu, cuda) specialized to this dynamic extent; launches must match it")
    p.add_argument("--dynamic-extents", action="store_true",
                   help="cuda: keep extents dynamic (by default they are specialized to the inputs' shapes)")
    p.add_argument("--seed", type=_non_negative, default=0, help="seed of the parallel iteration order (default 0)")
    p.set_defaults(run=run)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def _load_inputs(path: str | None) -> dict[str, np.ndarray]:
    if path is None:
        return {}
    data = _read_bytes(path)
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise UsageError(f"{path} holds one array (.npy); --inputs wants a .npz archive of arrays named by "
                             "kernel parameter (np.savez(path, x=..., y=...))")
        with loaded:
            return {name: loaded[name] for name in loaded.files}
    except _UNREADABLE as error:
        reason = str(error) or type(error).__name__
        raise UsageError(f"cannot read {path} as .npz ({reason}); write it with np.savez") from None


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None


def _outputs_path(output: str, kernel: str) -> Path:
    """OUT itself, or DIR/KERNEL.npz for a directory; a missing directory is a usage error
    (checked before the kernel runs)."""
    path = Path(output)
    if path.is_dir():
        return path / f"{kernel}.npz"
    if output.endswith(("/", "\\")):
        raise UsageError(f"--outputs: no such directory: {output}")
    if not path.parent.is_dir():
        raise UsageError(f"--outputs: no such directory: {path.parent} (for {output})")
    return path


def _save_outputs(path: Path, outputs: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **outputs)        # to a buffer: numpy would append `.npz` to a path without it
    write_file(path, buffer.getvalue())


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
        kernel = args.kernel or only_kernel(module, args.file, "run")
        outputs_path = _outputs_path(args.outputs, kernel) if args.outputs else None
        verify_or_raise(module, args.file, text)   # static errors with their own codes, before any run
        outputs = _execute(args, module, kernel, text, inputs, constexprs, specialization)
    except DiagnosticError as error:
        report(error)
        return EXIT_INPUT_ERROR
    if outputs_path is not None:
        _save_outputs(outputs_path, outputs)
    else:
        with np.printoptions(threshold=64, edgeitems=4):
            for name, array in outputs.items():
                sys.stdout.write(f"%{name}: {array.dtype}{list(array.shape)}\n{array}\n")
    return EXIT_OK


def _execute(args, module, kernel: str, text: str, inputs: dict, constexprs: dict, specialization: dict) -> dict:
    if args.target == "cpu":
        from ..runtime.cpu import compile_cpu
        return compile_cpu(module, kernel, specialization, file=args.file, source=text)(inputs, constexprs)
    if args.target == "cuda":
        from ..runtime.cuda import compile_cuda
        if not args.dynamic_extents:      # one launch: compile for its shapes (docs/gpu.md)
            specialization["extents"] = {**_input_extents(module, kernel, inputs, args.file, text),
                                         **specialization["extents"]}
        return compile_cuda(module, kernel, specialization, file=args.file, source=text)(inputs, constexprs)
    from ..interp.launch import run_kernel
    return run_kernel(module, kernel, inputs, constexprs, args.seed, args.file, text)
