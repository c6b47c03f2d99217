"""`intentc compile`: compile kernels for a target (llvm: LLVM IR text; cpu: an object file; ...).

Where the artifacts go: text to stdout unless `-o`; `-o -` is stdout too. With one kernel,
`-o FILE` gets the main artifact and each companion lands beside it as FILE's stem plus the
companion's name (`-o out/k.ptx` also writes `out/k.launch.json`). Without `--kernel` every
kernel of the file is compiled; several kernels need `-o DIR`, which gets KERNEL.EXT and
KERNEL.launch.json for each.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..codegen.layout.assign import dump
from ..diagnostics import DiagnosticError
from ..options import CompileOptions, Specialization
from .common import (
    EXIT_INPUT_ERROR, EXIT_OK, UsageError, Chunk, kernel_names, load, read_text, report, write_file,
)
from .specialize import parse_define, parse_extents


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("compile", help="compile kernels for a target (llvm, cpu, ...)")
    p.add_argument("file", metavar="FILE", help="a .kir file (- for stdin)")
    p.add_argument("--kernel", metavar="NAME", help="the kernel to compile (without @); default: every kernel")
    p.add_argument("--target", default="llvm", metavar="TARGET",
                   help="kir, llvm (IR text, default), cpu (object), ptx (with launch.json) or cubin")
    p.add_argument("--arch", default=None,
                   help="target architecture, for targets that have several (default: the newest supported)")
    p.add_argument("-o", dest="output", metavar="OUT",
                   help="write the artifact to OUT (- for stdout; a directory gets KERNEL.EXT files); "
                        "companions such as launch.json go beside it")
    p.add_argument("-O", dest="opt_level", type=int, default=2, choices=range(4), help="LLVM optimization level")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="specialize a constexpr parameter")
    p.add_argument("--extent", action="append", default=[], metavar="NAME=N", help="specialize a dynamic extent")
    p.add_argument("--variant-for", metavar="NAME=N",
                   help="ptx, cubin: only the register-form variant serving launches where the dynamic extent NAME "
                        "is N (launch.json's `serves` says which launches it serves; docs/gpu.md)")
    p.add_argument("--eager-variants", action="store_true",
                   help="ptx, cubin: put the register-form variants for a dynamic row length in the module, for a "
                        "consumer that cannot compile (default: launch.json's variant_rule names the variant a "
                        "launch needs, compiled on first use; docs/gpu.md)")
    p.add_argument("--timings", action="store_true", help="print the time of each stage to stderr")
    p.add_argument("--print-layouts", action="store_true",
                   help="print the GPU mapping and every tensor value's layout to stderr (ptx, cubin)")
    p.set_defaults(run=run)


def _specialization(args) -> Specialization:
    return Specialization(constexprs=dict(parse_define(d) for d in args.defines), extents=parse_extents(args.extent),
                          lazy_variants=not args.eager_variants)


def default_arch(target: str) -> str | None:
    """The newest arch a target supports (the registry lists them oldest first)."""
    from ..driver import TARGETS
    known = TARGETS.get(target)
    return known.archs[-1] if known is not None and known.archs else None


def _compile(text: str, kernel: str, arch: str | None, options: CompileOptions, specialization: Specialization,
             args):
    from ..driver import compile_request, front_end
    from ..driver.variants import variant_request
    request = front_end(text, kernel, args.target, arch, options, specialization, file=args.file)
    if args.variant_for:
        ((name, value),) = parse_extents([args.variant_for], "--variant-for").items()
        request = variant_request(request, name, value)
    return compile_request(request)


def run(args) -> int:
    text = read_text(args.file)
    arch = args.arch or default_arch(args.target)
    specialization = _specialization(args)
    options = CompileOptions(opt_level=args.opt_level)
    try:
        kernels = [args.kernel] if args.kernel else kernel_names(load(Chunk(args.file, text)))
        if not kernels:
            raise UsageError(f"{args.file} has no kernel to compile")
        results = {kernel: _compile(text, kernel, arch, options, specialization, args) for kernel in kernels}
    except DiagnosticError as error:
        report(error)
        return EXIT_INPUT_ERROR
    artifacts = {kernel: result.artifacts for kernel, result in results.items()}
    if args.output in (None, "-"):
        _to_stdout(artifacts, args.target, explicit=args.output == "-")
    else:
        _to_files(Path(args.output), artifacts, args.output.endswith(("/", "\\")))
    if args.print_layouts:
        for kernel, result in results.items():
            _print_layouts(kernel, result.artifacts)
    if args.timings:
        for kernel, result in results.items():
            for stage, seconds in result.timings.items():
                print(f"{kernel:>16} {stage:>24}: {seconds * 1e3:8.2f} ms", file=sys.stderr)
    return EXIT_OK


def _print_layouts(kernel: str, artifacts: dict) -> None:
    """The GPU mapping and the layout dump of launch.json (docs/gpu.md, "Layouts")."""
    if "launch.json" not in artifacts:
        return
    launch = json.loads(artifacts["launch.json"])
    print(f"// @{kernel}: mapping {launch['mapping']}, block {launch['block'][0]}, slots {launch['slots']}",
          file=sys.stderr)
    if launch.get("variant_rule") and not launch.get("variants"):    # compiled on first use
        rule = launch["variant_rule"]
        print(f"//   variant rule: {rule['extent']} × {rule['factor']} elements up to {rule['largest']}, "
              f"{rule['slots']} slots, vector {rule['vector']}", file=sys.stderr)
    if launch.get("serves"):                        # one variant compiled alone (--variant-for)
        serves = launch["serves"]
        print(f"//   serves {serves['extent']} in [{serves['min']}, {serves['max']}]", file=sys.stderr)
    for variant in launch.get("variants", []):      # register-form variants for a dynamic row length
        print(f"//   variant {variant['entry']}: {variant['extent']} in [{variant['min']}, {variant['max']}], "
              f"block {variant['block']}, slots {variant['slots']}", file=sys.stderr)
    sys.stderr.write(dump(launch["layouts"]))


def _to_stdout(artifacts: dict[str, dict], target: str, explicit: bool) -> None:
    """The main artifact of the one kernel (companions need -o)."""
    if len(artifacts) > 1:
        names = ", ".join(f"@{k}" for k in artifacts)
        raise UsageError(f"the file has {len(artifacts)} kernels ({names}): write them with -o DIR, "
                         "or choose one with --kernel NAME")
    (main_name, artifact), *_ = next(iter(artifacts.values())).items()
    if isinstance(artifact, bytes):
        if not explicit:
            raise UsageError(f"target `{target}` produces a binary {main_name}; write it with -o OUT (or -o - for stdout)")
        sys.stdout.flush()
        sys.stdout.buffer.write(artifact)
    else:
        sys.stdout.write(artifact if artifact.endswith("\n") else artifact + "\n")


def _to_files(output: Path, artifacts: dict[str, dict], names_a_directory: bool) -> None:
    if len(artifacts) == 1 and not output.is_dir() and not names_a_directory:
        (_, files), = artifacts.items()
        _write_set(files, output, output.with_suffix("").name if output.suffix else output.name, output.parent)
        return
    if not output.is_dir():
        try:
            output.mkdir()
        except OSError as error:
            raise UsageError(f"cannot create the directory {output}: {error.strerror or error}") from None
    for kernel, files in artifacts.items():
        main_name = next(iter(files))
        _write_set(files, output / f"{kernel}{Path(main_name).suffix}", kernel, output)


def _write_set(files: dict[str, str | bytes], main_path: Path, stem: str, directory: Path) -> None:
    """The main artifact to `main_path`, each companion to DIRECTORY/STEM.NAME."""
    (_, main), *companions = files.items()
    write_file(main_path, main)
    for name, data in companions:
        write_file(directory / f"{stem}.{name}", data)
