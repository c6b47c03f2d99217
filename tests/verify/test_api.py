"""The package API of the README (issue 17: `intentc.verify` was shadowed by its submodule)."""
import importlib

import intentc


def test_verify_stays_the_function_after_its_submodule_is_imported():
    module = intentc.parse("kernel @k(%a: f32) {\n  %r = exp %a : f32\n}\n")
    assert intentc.verify(module) == []
    importlib.import_module("intentc.verify")
    importlib.import_module("intentc.verify.walk")
    assert intentc.verify(module) == []
    assert intentc.verify_or_raise(module) is module
    from intentc import verify
    assert callable(verify)
