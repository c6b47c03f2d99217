"""Verifier state for one walk: values in scope, extent identities, region frames, diagnostics."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..diagnostics import Diagnostic
from ..ir.nodes import EnumDecl, Helper, Module, Op
from ..ir.types import BufferType, Extent, ViewType
from .codes import CODES

NO_DEPS: frozenset[str] = frozenset()


@dataclass(slots=True)
class Value:
    """What the verifier knows about one SSA value."""
    type: object
    depth: int = 0
    # A known constant scalar (from `constant`, or a splat of one).
    const: object = None
    # Parallel induction variables this value depends on (through data flow).
    deps: frozenset = NO_DEPS
    # Affine index fact (affine.py) for the injectivity proof of unique_store.
    fact: tuple | None = None
    # True when every lane holds the same value (a scalar or a broadcast of one).
    splat: bool = False
    # Region argument roles: "segment_len" for the %len of region_fold/scan regions.
    role: str = ""


@dataclass(slots=True)
class Frame:
    """One open region (or the item body)."""
    kind: str                       # "kernel", "helper", "parallel", "loop", "if", "combine", ...
    pure: bool = False
    parallel_vars: tuple = ()       # ((name, extent), ...) of this parallel body
    accesses: list = field(default_factory=list)   # plain accesses of shared resources (effects.py)
    control: frozenset = NO_DEPS    # parallel vars the execution of this region depends on
    defined: list = field(default_factory=list)


class Context:
    def __init__(self, module: Module, file: str):
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self.helpers: dict[str, Helper] = {}
        self.enums: dict[str, EnumDecl] = {}
        self.values: dict[str, Value] = {}
        self.extent_alias: dict[str, Extent] = {}
        self.frames: list[Frame] = []
        self.in_pure: Frame | None = None
        self.calls: dict[str, dict[str, Op]] = {}   # item -> callee -> the first call op
        self.current_item: str = ""
        for item in module.items:
            if isinstance(item, Helper):
                self.helpers.setdefault(item.name, item)
            elif isinstance(item, EnumDecl):
                self.enums.setdefault(item.name, item)

    # ---- diagnostics -----------------------------------------------------------------
    def error(self, code: str, node: object, message: str, hint: str, section: str | None = None) -> None:
        """Report `code` at `node`'s location (any node with a `loc`; line 1 when it has none)."""
        loc = getattr(node, "loc", None)
        line, col = (loc.line, loc.col) if loc is not None else (1, 1)
        section = section or CODES[code].section
        self.diagnostics.append(Diagnostic(code, f"{message} ({_cite(section)})", line, col, self.file, hint))

    # ---- items and frames ------------------------------------------------------------
    def begin_item(self, name: str) -> None:
        self.values = {}
        self.extent_alias = {}
        self.frames = []
        self.in_pure = None  # the outermost open pure frame
        self.current_item = name

    def push(self, frame: Frame) -> None:
        self.frames.append(frame)
        if frame.pure and self.in_pure is None:
            self.in_pure = frame

    def pop(self) -> None:
        frame = self.frames.pop()
        if frame is self.in_pure:
            self.in_pure = None
        for name in frame.defined:
            self.values.pop(name, None)

    @property
    def depth(self) -> int:
        return len(self.frames)

    def control_deps(self) -> frozenset:
        deps = NO_DEPS
        for frame in self.frames:
            deps = deps | frame.control
        return deps

    def parallel_frames(self) -> list[tuple[int, Frame]]:
        return [(i + 1, f) for i, f in enumerate(self.frames) if f.parallel_vars]

    # ---- values ----------------------------------------------------------------------
    def define(self, name: str, value: Value, node: object) -> None:
        if name in self.values:
            self.error("E0051", node, f"`%{name}` is already defined",
                       "give every SSA value its own name")
        value.depth = self.depth
        self.values[name] = value
        if self.frames:
            self.frames[-1].defined.append(name)

    def lookup(self, name: str, node: object) -> Value | None:
        value = self.values.get(name)
        if value is None:
            self.error("E0050", node, f"`%{name}` is not defined here",
                       "define the value before this op, in this region or one enclosing it")
        return value

    # ---- extents (§2) ----------------------------------------------------------------
    def canon(self, extent: Extent) -> Extent:
        while isinstance(extent, str) and extent in self.extent_alias:
            extent = self.extent_alias[extent]
        return extent

    def same_extent(self, a: Extent, b: Extent) -> bool:
        return a == b or self.canon(a) == self.canon(b)

    def same_shape(self, a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(x == y or self.canon(x) == self.canon(y) for x, y in zip(a, b))


def _cite(section: str) -> str:
    if section.startswith("§"):
        return "spec " + section
    if section.startswith("docs"):
        return "docs/kir.md" + section[4:]
    return "op table"


def is_resource(type_: object) -> bool:
    return isinstance(type_, (ViewType, BufferType))
