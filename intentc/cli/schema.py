"""`intentc schema`: print the JSON Schema of KIR JSON documents."""
from __future__ import annotations

import sys

from ..serialize import json_schema
from .common import EXIT_OK


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("schema", help="print the JSON Schema of KIR JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    sys.stdout.write(json_schema())
    return EXIT_OK
