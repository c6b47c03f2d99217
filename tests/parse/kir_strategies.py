"""Hypothesis strategies that build random KIR modules directly as nodes."""
from __future__ import annotations

from hypothesis import strategies as st

from intentc.ir.nodes import (
    EnumDecl, EnumMember, Helper, Kernel, Keyword, Module, Op, OperandGroup, Param, Region,
    SymbolRef,
)
from intentc.ir.optable import all_ops
from intentc.ir.types import (
    DTYPES, BufferType, ConstexprType, EnumType, RecordField, RecordType, TensorType,
    TupleType, ViewType,
)

# Words that the grammar reads as something other than a keyword attribute value.
_RESERVED = set(DTYPES) | {"true", "false", "inf", "nan", "tensor", "view", "buffer", "tuple",
                           "record", "enum", "constexpr", "kernel", "helper"}

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda s: s not in _RESERVED)
ssa_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.$]{0,5}", fullmatch=True)
symbols = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.$]{0,6}", fullmatch=True)
comments = st.lists(
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20).map(str.strip),
    max_size=2,
).map(tuple)
dtypes = st.sampled_from(DTYPES)
extents = st.one_of(st.integers(0, 2 ** 20), ssa_names)
shapes = st.lists(extents, max_size=3).map(tuple)

shaped_types = st.one_of(
    st.builds(TensorType, dtype=dtypes, shape=shapes),
    st.builds(ViewType, dtype=dtypes, shape=shapes, direction=st.sampled_from(["in", "out", "inout"]),
              noalias=st.booleans()),
    st.builds(BufferType, dtype=dtypes, shape=shapes),
    st.builds(EnumType, name=symbols),
)
types = st.recursive(
    shaped_types,
    lambda inner: st.one_of(
        st.builds(TupleType, elements=st.lists(inner, max_size=3).map(tuple)),
        st.builds(RecordType, fields=st.lists(st.builds(RecordField, name=identifiers, type=inner),
                                              max_size=3, unique_by=lambda f: f.name).map(tuple)),
        st.builds(ConstexprType, inner=inner),
    ),
    max_leaves=4,
)
attr_values = st.recursive(
    st.one_of(
        st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8), st.builds(Keyword, name=identifiers), st.builds(SymbolRef, name=symbols), types,
    ),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)
attributes = st.dictionaries(identifiers, attr_values, max_size=3)
params = st.lists(st.builds(Param, name=ssa_names, type=types, comments=st.just(())), max_size=3).map(tuple)
op_names = st.one_of(
    st.sampled_from(sorted(all_ops())).map(lambda n: (n, True)),
    st.text(min_size=1, max_size=10).map(lambda n: (n, False)),
)


@st.composite
def ops(draw, depth: int = 2) -> Op:
    name, registered = draw(op_names)
    regions = ()
    if depth > 0:
        regions = tuple(draw(st.lists(regions_at(depth - 1), max_size=2)))
    return Op(
        name=name, registered=registered,
        results=tuple(draw(st.lists(ssa_names, max_size=2))),
        operands=tuple(draw(st.lists(ssa_names, max_size=3))),
        groups=tuple(draw(st.lists(st.builds(OperandGroup, key=identifiers,
                                             values=st.lists(ssa_names, max_size=2).map(tuple)), max_size=2))),
        attributes=draw(attributes),
        result_types=tuple(draw(st.lists(types, max_size=2))),
        regions=regions,
        comments=draw(comments),
    )


def regions_at(depth: int):
    return st.builds(Region, label=ssa_names, args=params,
                     ops=st.lists(ops(depth), max_size=3).map(tuple), comments=comments, end_comments=comments)


kernels = st.builds(Kernel, name=symbols, params=params, body=st.lists(ops(), max_size=4).map(tuple),
                    comments=comments, end_comments=comments)
helpers = st.builds(Helper, name=symbols, params=params, result_types=st.lists(types, max_size=2).map(tuple),
                    body=st.lists(ops(1), max_size=3).map(tuple), comments=comments, end_comments=comments)
enums = st.builds(EnumDecl, name=symbols, comments=comments,
                  members=st.lists(st.builds(EnumMember, name=identifiers),
                                   min_size=1, max_size=3).map(tuple))
modules = st.builds(Module, items=st.lists(st.one_of(kernels, helpers, enums), max_size=3).map(tuple),
                    end_comments=comments)
