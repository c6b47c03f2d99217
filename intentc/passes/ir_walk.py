"""Small tools every pass uses on frozen KIR nodes: use counts, renaming, block rewriting
and fresh names.

SSA names are unique within a kernel or helper, and a value may be used three ways: as an
operand, inside an operand group, and as a dynamic extent inside a type (`tensor<f32,
[%n]>`). Every tool here treats all three as uses, so that removing or renaming a value
never leaves a type naming something that no longer exists.

Rewrites keep object identity when nothing changes: a function that rebuilds nothing
returns its input, so `after is before` means "unchanged" everywhere in the pass manager.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from ..ir.nodes import Helper, Kernel, Module, Op, OperandGroup, Param, Region
from ..ir.types import BufferType, ConstexprType, RecordField, RecordType, TensorType, TupleType, Type, ViewType

Block = tuple[Op, ...]


# ---- reading ----------------------------------------------------------------------------------
def type_names(type_) -> Iterator[str]:
    """Dynamic extents named inside a type."""
    if isinstance(type_, (TensorType, ViewType, BufferType)):
        yield from (e for e in type_.shape if isinstance(e, str))
    elif isinstance(type_, TupleType):
        for element in type_.elements:
            yield from type_names(element)
    elif isinstance(type_, RecordType):
        for f in type_.fields:
            yield from type_names(f.type)
    elif isinstance(type_, ConstexprType):
        yield from type_names(type_.inner)


def direct_uses(op: Op) -> Iterator[str]:
    """Names the op itself uses (not its regions): operands, groups, extents in its types."""
    yield from op.operands
    for group in op.groups:
        yield from group.values
    for type_ in op.result_types:
        yield from type_names(type_)
    for value in op.attributes.values():
        if isinstance(value, (TensorType, TupleType, RecordType)):
            yield from type_names(value)


def all_uses(op: Op) -> Iterator[str]:
    """Names the op uses, its regions included (argument types and nested ops)."""
    yield from direct_uses(op)
    for region in op.regions:
        for arg in region.args:
            yield from type_names(arg.type)
        for inner in region.ops:
            yield from all_uses(inner)


def use_counts(ops: Iterable[Op]) -> Counter:
    names: list[str] = []
    for op in ops:
        _collect_uses(op, names)
    return Counter(names)


def _collect_uses(op: Op, names: list[str]) -> None:
    names.extend(op.operands)
    for group in op.groups:
        names.extend(group.values)
    for type_ in op.result_types:
        if type_.kind == "tensor":
            names.extend(e for e in type_.shape if e.__class__ is str)
        else:
            names.extend(type_names(type_))
    if op.attributes:
        for value in op.attributes.values():
            if isinstance(value, (TensorType, TupleType, RecordType)):
                names.extend(type_names(value))
    for region in op.regions:
        for arg in region.args:
            names.extend(type_names(arg.type))
        for inner in region.ops:
            _collect_uses(inner, names)


def walk(ops: Iterable[Op]) -> Iterator[Op]:
    """Every op of a block and of the regions below it, in program order."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from walk(region.ops)


def defined_names(item: Kernel | Helper) -> set[str]:
    names = {p.name for p in item.params}
    for p in item.params:
        names.update(type_names(p.type))
    for op in walk(item.body):
        names.update(op.results)
        for region in op.regions:
            names.update(a.name for a in region.args)
    return names


_PURE: dict[str, bool] = {}


def is_pure_op(op: Op) -> bool:
    """The op's table entry has no effects (unknown ops count as impure)."""
    if not op.registered:
        return False
    pure = _PURE.get(op.name)
    if pure is None:
        from ..ir.optable import lookup
        opdef = lookup(op.name)
        pure = _PURE[op.name] = opdef is not None and opdef.is_pure
    return pure


def is_pure_tree(op: Op) -> bool:
    """An op whose table entry and every nested op have no effects (yield counts as pure)."""
    if not is_pure_op(op):
        return False
    return all(is_pure_tree(inner) for region in op.regions for inner in region.ops)


# ---- renaming ----------------------------------------------------------------------------------
def rename_type(type_, mapping: dict[str, str]):
    if isinstance(type_, (TensorType, ViewType, BufferType)):
        shape = tuple(mapping.get(e, e) if isinstance(e, str) else e for e in type_.shape)
        return type_ if shape == type_.shape else type_.model_copy(update={"shape": shape})
    if isinstance(type_, TupleType):
        elements = tuple(rename_type(t, mapping) for t in type_.elements)
        return type_ if elements == type_.elements else type_.model_copy(update={"elements": elements})
    if isinstance(type_, RecordType):
        fields = tuple(RecordField(name=f.name, type=rename_type(f.type, mapping)) for f in type_.fields)
        return type_ if fields == type_.fields else type_.model_copy(update={"fields": fields})
    if isinstance(type_, ConstexprType):
        inner = rename_type(type_.inner, mapping)
        return type_ if inner == type_.inner else type_.model_copy(update={"inner": inner})
    return type_


def rename_op(op: Op, mapping: dict[str, str]) -> Op:
    """The op with every use (operands, groups, type extents, nested regions) renamed."""
    if not mapping or (not op.regions and mapping.keys().isdisjoint(direct_uses(op))):
        return op
    update: dict = {}
    operands = tuple(mapping.get(v, v) for v in op.operands)
    if operands != op.operands:
        update["operands"] = operands
    groups = tuple(OperandGroup(key=g.key, values=tuple(mapping.get(v, v) for v in g.values)) for g in op.groups)
    if groups != op.groups:
        update["groups"] = groups
    result_types = tuple(rename_type(t, mapping) for t in op.result_types)
    if result_types != op.result_types:
        update["result_types"] = result_types
    attributes = {k: rename_type(v, mapping) for k, v in op.attributes.items()}
    if any(attributes[k] is not op.attributes[k] for k in attributes):
        update["attributes"] = attributes
    regions = tuple(_rename_region(r, mapping) for r in op.regions)
    if any(a is not b for a, b in zip(regions, op.regions)):
        update["regions"] = regions
    return op.model_copy(update=update) if update else op


def _rename_region(region: Region, mapping: dict[str, str]) -> Region:
    args = tuple(Param(name=a.name, type=rename_type(a.type, mapping), loc=a.loc) if
                 set(type_names(a.type)) & mapping.keys() else a for a in region.args)
    ops = tuple(rename_op(op, mapping) for op in region.ops)
    if all(a is b for a, b in zip(args, region.args)) and all(a is b for a, b in zip(ops, region.ops)):
        return region
    return region.model_copy(update={"args": args, "ops": ops})


# ---- rebuilding -----------------------------------------------------------------------------------
def map_bodies(module: Module, body_of: Callable[[Kernel | Helper], Block]) -> Module:
    """Rebuild each kernel/helper whose new body (from `body_of`) is a different object."""
    items, changed = [], False
    for item in module.items:
        if isinstance(item, (Kernel, Helper)):
            body = body_of(item)
            if body is not item.body:
                item, changed = item.model_copy(update={"body": tuple(body)}), True
        items.append(item)
    return module.model_copy(update={"items": tuple(items)}) if changed else module


class Namer:
    """Fresh SSA names for one kernel or helper: `base`, `base_1`, `base_2`, ..."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def definitions(item: Kernel | Helper) -> dict[str, Op]:
    """The op defining each op result of a kernel or helper (parameters and block args excluded)."""
    return {name: op for op in walk(item.body) for name in op.results}


def value_types(item: Kernel | Helper) -> dict[str, Type]:
    """The type of every value of a kernel or helper: parameters, block arguments, results."""
    types: dict[str, Type] = {p.name: p.type for p in item.params}
    for op in walk(item.body):
        types.update(zip(op.results, op.result_types))
        for region in op.regions:
            types.update((a.name, a.type) for a in region.args)
    return types
