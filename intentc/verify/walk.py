"""The one walk over a module: items, ops and regions, dispatching each op to its rule."""
from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import Diagnostic
from ..ir.nodes import Helper, Kernel, Module, Op, Region
from ..ir.optable import lookup, ops_where
from ..ir.types import EnumType
from .context import NO_DEPS, Context, Frame, Value, is_resource
from .rules import RULES, Args
from .scope import check_module_names, check_type, declare_params
from .structure import check_structure

# The only ops that may take an enum operand (§2): same-enum comparison and plumbing.
_ENUM_OPS = ops_where(lambda op: op.enum_operands)
# Ops that may look at a view or buffer inside a pure region: they only read its shape.
_SHAPE_ONLY = frozenset({"dim"})


class Verifier(Context):
    def run(self, module: Module) -> None:
        check_module_names(self, module)
        for item in module.items:
            if isinstance(item, Kernel):
                self._kernel(item)
            elif isinstance(item, Helper):
                self._helper(item)
        self._check_recursion(module)

    # ---- items -----------------------------------------------------------------------
    def _kernel(self, kernel: Kernel) -> None:
        self.begin_item(kernel.name)
        self.push(Frame("kernel"))
        declare_params(self, kernel.params, abi=True)
        self.walk_ops(kernel.body, yield_ok=False)
        self.pop()

    def _helper(self, helper: Helper) -> None:
        from .rules.control import check_helper_body
        self.begin_item(helper.name)
        self.push(Frame("helper", pure=True))
        declare_params(self, helper.params, abi=False)
        for type_ in helper.result_types:
            check_type(self, type_, helper)
        terminator = self.walk_ops(helper.body, yield_ok=True)
        check_helper_body(self, helper, terminator)
        self.pop()

    def _check_recursion(self, module: Module) -> None:
        from .rules.control import report_recursion
        report_recursion(self, module)

    # ---- blocks and regions ----------------------------------------------------------
    def walk_ops(self, ops: Sequence[Op], yield_ok: bool) -> tuple[Op, list[Value | None]] | None:
        """Verify a block; return its terminating yield and the values it yields."""
        last = len(ops) - 1
        terminator = None
        for position, op in enumerate(ops):
            self.verify_op(op)
            if op.name == "yield" and op.registered:
                if not yield_ok or position != last:
                    where = "here" if not yield_ok else "before the end of its region"
                    self.error("E0055", op, f"`yield` is not allowed {where}",
                               "only the last op of a region that passes values out is a `yield`; "
                               "kernel bodies and parallel bodies have none")
                else:
                    terminator = (op, [self.values.get(v) for v in op.operands])
        return terminator

    def walk_region(self, region: Region, frame: Frame,
                    facts: list[dict] | None = None) -> tuple[Op, list[Value | None]] | None:
        """Open a region: define its arguments (with optional facts), walk it, close it."""
        self.push(frame)
        for position, arg in enumerate(region.args):
            check_type(self, arg.type, arg)
            extra = facts[position] if facts and position < len(facts) else {}
            self.define(arg.name, Value(arg.type, **extra), arg)
        terminator = self.walk_ops(region.ops, yield_ok=frame.kind != "parallel")
        self.pop()
        return terminator

    # ---- ops -------------------------------------------------------------------------
    def verify_op(self, op: Op) -> None:
        opdef = lookup(op.name) if op.registered else None
        if opdef is None:
            self._unregistered(op)
            return
        shaped = check_structure(self, op, opdef)
        for type_ in op.result_types:
            check_type(self, type_, op)
        operands = [self.lookup(name, op) for name in op.operands]
        groups = {g.key: [self.lookup(name, op) for name in g.values] for g in op.groups} if op.groups else {}
        complete = None not in operands and all(None not in values for values in groups.values())
        captured = self._check_context(op, opdef, operands, groups)
        results = None
        if shaped and complete and not captured and self._enum_ok(op, operands):
            results = RULES.get(op.name)(self, op, Args(operands, groups))
        elif op.regions:
            self._walk_loose(op)
        self._define_results(op, results, operands, groups)

    def _check_context(self, op: Op, opdef, operands, groups) -> bool:
        """Effects and captures inside pure regions; True when a view/buffer is captured."""
        pure = self.in_pure
        if pure is None:
            return False
        if opdef.effects:
            where = "a helper" if pure.kind == "helper" else f"a `{pure.kind}` region"
            self.error("E507", op, f"`{op.name}` has effects ({', '.join(opdef.effects)}) inside {where}",
                       "combine/summarize/emit regions and helpers are pure: move memory access and "
                       "atomics out of them")
        self._check_segment_extent(op, operands)
        if op.name in _SHAPE_ONLY:
            return False
        for value in operands + [v for values in groups.values() for v in values]:
            if value is not None and is_resource(value.type):
                self.error("E508", op, f"`{op.name}` inside a pure region uses a view or buffer",
                           "pure regions capture values only; read the data outside and pass the values in")
                return True
        return False

    def _check_segment_extent(self, op: Op, operands) -> None:
        """§6: a region summarizer/emitter may not observe the compiler-chosen segment extent."""
        observed = any(v is not None and v.role == "segment_len" for v in operands)
        if not observed and op.name == "dim" and operands and operands[0] is not None:
            observed = operands[0].role == f"slice:{op.attributes.get('axis')}"
        if observed:
            self.error("E509", op, f"`{op.name}` observes the segment extent chosen by the compiler",
                       "use the absolute coordinates `%pos` for positions; the slice length may only "
                       "appear in types")

    def _enum_ok(self, op: Op, operands) -> bool:
        if op.name in _ENUM_OPS:
            return True
        for value in operands:
            if type(value.type) is EnumType:
                break
        else:
            return True
        self.error("E112", op, f"`{op.name}` cannot take an enum operand",
                   "enums are constexpr-only: compare them with `eq`/`ne` against the same enum and "
                   "branch on the result; no arithmetic, cast or bitcast")
        return False

    def _unregistered(self, op: Op) -> None:
        if op.name.startswith("assume"):
            self.error("E912", op, f"`{op.name}` is not a constraint of the language",
                       "the only typed input constraints are `assume_in_bounds` and the view's "
                       "noalias flag; there is no assume of an arbitrary bool")
        else:
            self.error("E0030", op, f"`{op.name}` is not in the op table",
                       "the generic quoted form parses and prints, but only table ops verify; "
                       "see the op reference in docs/kir.md")
        for name in op.operands:
            self.lookup(name, op)
        self._walk_loose(op)
        self._define_results(op, None, [], {})

    def _walk_loose(self, op: Op) -> None:
        """Walk the regions of an op whose rule did not run, to report what is inside."""
        for region in op.regions:
            self.walk_region(region, Frame(f"{op.name} region", pure=self.in_pure is not None))

    def _define_results(self, op: Op, results, operands, groups) -> None:
        if not op.results:
            return
        deps = NO_DEPS
        for value in operands:
            if value is not None:
                deps = deps | value.deps
        for values in groups.values():
            for value in values:
                if value is not None:
                    deps = deps | value.deps
        if op.regions:
            deps = deps | self._all_parallel_vars()
        for position, name in enumerate(op.results):
            if position < len(op.result_types):
                value = results[position] if results and position < len(results) else \
                    Value(op.result_types[position])
                value.deps = value.deps | deps
                self.define(name, value, op)

    def _all_parallel_vars(self) -> frozenset:
        names = [name for _, frame in self.parallel_frames() for name, _ in frame.parallel_vars]
        return frozenset(names)


def verify_module(module: Module, file: str) -> list[Diagnostic]:
    verifier = Verifier(module, file)
    verifier.run(module)
    return verifier.diagnostics
