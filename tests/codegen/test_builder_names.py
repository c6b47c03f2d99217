"""`LoweringBuilder`'s name scope registers the names llvmlite's would, in one call."""
from __future__ import annotations

import pytest
from llvmlite import ir
from llvmlite.ir import _utils

from intentc.codegen.llvm.builder import LoweringBuilder, _Names

NAMES = ["", "x", "", "x", ".1", "x.1", "", "x", "y", ".5", "", "", "", ""]


def test_same_names_as_llvmlites():
    theirs, ours = _utils.NameScope(), _Names()
    assert [ours.register(name, deduplicate=True) for name in NAMES] == \
        [theirs.register(name, deduplicate=True) for name in NAMES]
    assert ours._basenamemap == theirs._basenamemap and ours._useset == theirs._useset


def test_a_taken_name_without_deduplication_is_an_error():
    scope = _Names()
    scope.register("x")
    with pytest.raises(_utils.DuplicatedNameError):
        scope.register("x")


def test_the_builder_switches_its_functions_scope_in_place():
    module = ir.Module()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), "f")
    early = function.append_basic_block("early")
    builder = LoweringBuilder(function.append_basic_block("entry"))
    assert type(function.scope) is _Names and early.scope is function.scope
    values = [builder.add(function.args[0], function.args[0]) for _ in range(3)]
    assert len({value.name for value in values}) == 1        # reused within the block
    other = LoweringBuilder(early)
    assert other.mul(function.args[0], function.args[0]).name not in {values[0].name}
