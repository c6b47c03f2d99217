"""`intentc convert`: KIR text ↔ JSON, the input format taken from its extension."""
from __future__ import annotations

import sys
from pathlib import Path

from ..diagnostics import DiagnosticError
from ..serialize import to_json
from .common import EXIT_INPUT_ERROR, EXIT_OK, UsageError, Chunk, canonical, load, read_text, report, write_file

_FORMATS = {".kir": "kir", ".json": "json"}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("convert", help="convert between KIR text and JSON")
    p.add_argument("input", metavar="IN", help="a .kir or .json file")
    p.add_argument("--to", required=True, choices=("kir", "json"), help="output format")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    p.set_defaults(run=run)


def run(args) -> int:
    source_format = _FORMATS.get(Path(args.input).suffix)
    if source_format is None:
        raise UsageError(f"cannot tell the format of {args.input}: name it .kir or .json")
    text = read_text(args.input)
    try:
        module = load(Chunk(args.input, text), source_format)
    except DiagnosticError as error:
        report(error)
        return EXIT_INPUT_ERROR
    output = to_json(module) if args.to == "json" else canonical(module)
    if args.output:
        write_file(Path(args.output), output)
    else:
        sys.stdout.write(output)
    return EXIT_OK
