"""`-D NAME=VALUE` and `--extent NAME=N` as Python values. Only their form is checked here:
whether the kernel has the name and the value fits is the driver's (`driver/specialization.py`),
the same check for every entry point."""
from __future__ import annotations

from .common import UsageError


def parse_define(text: str, option: str = "-D") -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"{option} needs NAME=VALUE, got {text!r}")
    return name.lstrip("%"), _literal(value)


def parse_extents(texts: list[str], option: str = "--extent") -> dict[str, int]:
    extents = {}
    for text in texts:
        name, value = parse_define(text, option)
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{option} needs NAME=N with N an integer, got {text!r}")
        extents[name] = value
    return extents


def _literal(value: str):
    if value in ("true", "false"):
        return value == "true"
    for convert in (lambda v: int(v, 0), float):
        try:
            return convert(value)
        except ValueError:
            pass
    return value
