"""The op table is each op's definition: the verifier, the interpreter and the LLVM lowering
all register their implementation of every op, from their module of the op's family."""
import subprocess
import sys

import pytest

from intentc.codegen.llvm.lowering import LOWERINGS
from intentc.interp.machine import IMPLS
from intentc.ir.optable import all_ops
from intentc.ir.registry import Registry, families
from intentc.verify.rules import RULES

STAGES = [RULES, IMPLS, LOWERINGS]


@pytest.mark.parametrize("registry", STAGES, ids=lambda registry: registry.stage)
def test_every_op_has_an_implementation_in_every_stage(registry):
    assert registry.missing() == []


def test_ops_without_an_implementation_are_declared_in_their_definition():
    for name, op in all_ops().items():
        assert name in RULES, name
        assert (name in IMPLS) != op.terminator, name
        assert (name in LOWERINGS) != (op.terminator or bool(op.no_lowering)), name


def test_every_family_of_the_table_is_a_module_of_every_stage():
    table_families = {op.family for op in all_ops().values()}
    assert table_families == set(families())
    for registry in STAGES:
        registry.load()      # imports <package>.<family> for each family, or fails


def test_the_registry_rejects_unknown_ops_duplicates_and_foreign_families():
    with pytest.raises(KeyError, match="not in the op table"):
        IMPLS.add(["no_such_op"], print)
    with pytest.raises(ValueError, match="registered twice"):
        IMPLS.add(["add"], print)
    fresh = Registry("test", "intentc.interp")
    with pytest.raises(ValueError, match="registered from"):
        fresh.add(["add"], print)           # not from intentc.interp.pointwise



def test_threads_asking_while_the_lowerings_load_find_every_op():
    """The service compiles in threads: the first lowerings may be asked for by several at once."""
    probe = """if True:
        import threading
        from intentc.codegen.llvm.lowering import LOWERINGS
        from intentc.ir.optable import all_ops
        wanted = [name for name, op in all_ops().items() if not op.terminator]
        found = []
        threads = [threading.Thread(target=lambda: found.append(all(LOWERINGS.get(n) for n in wanted)))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(found.count(True))
    """
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["8"]
