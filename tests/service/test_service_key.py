"""The cache key: what it covers, what it ignores, and its version sentinel."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from intentc import parse, print_module
from intentc.cache import KEY_SCHEMA_VERSION, KeyInputs, compute_key, key_text, toolchain
from intentc.cache.key import canonical_json, intentc_source_sha256, schema_fingerprint
from intentc.options import CompileOptions, Specialization

HISTORY = Path(__file__).with_name("key_schema_history.json")


def key_of(source: str, **fields) -> str:
    defaults = {"kernel": "row_softmax", "target": "kir", "arch": None, "options": CompileOptions(),
                "specialization": Specialization()}
    values = {**defaults, **fields}
    return compute_key(KeyInputs(source_form="canonical", kir=key_text(print_module(parse(source))),
                                 toolchain=toolchain(values["target"]), **values))


def test_key_schema_change_needs_a_version_bump():
    history = json.loads(HISTORY.read_text())
    recorded = history.get(str(KEY_SCHEMA_VERSION))
    assert recorded == schema_fingerprint(), (
        "the cache key's inputs changed shape: bump KEY_SCHEMA_VERSION in intentc/cache/key.py and add "
        f'"{KEY_SCHEMA_VERSION + 1}": "{schema_fingerprint()}" to {HISTORY.name}')


def test_every_recorded_schema_version_has_its_own_fingerprint():
    fingerprints = [value for name, value in json.loads(HISTORY.read_text()).items() if name.isdigit()]
    assert len(set(fingerprints)) == len(fingerprints)


def test_whitespace_and_comments_do_not_change_the_key(sample_source):
    respaced = sample_source.replace("  ", "    ").replace(", ", " ,  ")
    recommented = "// a new first line\n" + sample_source.replace("// ", "// edited: ")
    assert parse(respaced) == parse(sample_source)
    assert key_of(respaced) == key_of(recommented) == key_of(sample_source)


@pytest.mark.parametrize("change", [
    {"kernel": "other"}, {"target": "other"}, {"arch": "sm_90"},
    {"options": CompileOptions(opt_level=3)}, {"options": CompileOptions(numerics="relaxed_normalization")},
    {"specialization": Specialization(extents={"N": 1024})},
    {"specialization": Specialization(constexprs={"block": 128})},
    {"specialization": Specialization(unit_stride=("x",))},
    {"specialization": Specialization(lazy_variants=False)}, {"specialization": Specialization(variant=(961, 1023))},
])
def test_each_input_changes_the_key(sample_source, change):
    assert key_of(sample_source, **change) != key_of(sample_source)


def test_a_code_change_changes_the_key(sample_source):
    assert key_of(sample_source.replace("kind = max", "kind = min")) != key_of(sample_source)


def test_fact_sets_are_order_free(sample_source):
    one = Specialization(unit_stride=("x", "y"), aligned16=("y", "x", "x"))
    other = Specialization(unit_stride=("y", "x"), aligned16=("x", "y"))
    assert key_of(sample_source, specialization=one) == key_of(sample_source, specialization=other)


def test_the_toolchain_is_in_the_key():
    facts = toolchain("kir")
    document = json.loads(canonical_json(KeyInputs(
        source_form="canonical", kir="", kernel="k", target="kir", arch=None, options=CompileOptions(),
        specialization=Specialization(), toolchain=facts)))
    assert document["toolchain"]["intentc_source_sha256"] == intentc_source_sha256()
    assert document["key_schema"] == KEY_SCHEMA_VERSION
    bumped = facts.model_copy(update={"target_facts": {"llvm": "18.1"}})
    inputs = {"source_form": "canonical", "kir": "", "kernel": "k", "target": "kir", "arch": None,
              "options": CompileOptions(), "specialization": Specialization()}
    assert compute_key(KeyInputs(**inputs, toolchain=facts)) != compute_key(KeyInputs(**inputs, toolchain=bumped))


ENUM_KERNEL = """enum @Mode {{ fast{a}, exact{b} }}
kernel @k(%m: constexpr<enum<@Mode>>, %y: view<f32, [1], out>) {{
  %f = constant {{value = @Mode.fast}} : enum<@Mode>
  %is_fast = eq %m, %f : bool
}}"""


def test_enum_member_integers_are_not_in_canonical_text_or_key():
    """§2: the integer behind an enum member is no canonical fact; members are names."""
    plain = ENUM_KERNEL.format(a="", b="")
    numbered = ENUM_KERNEL.format(a=" = 0", b=" = 1")
    renumbered = ENUM_KERNEL.format(a=" = 5", b=" = 2")
    assert print_module(parse(numbered)) == print_module(parse(plain))
    assert "enum @Mode { fast, exact }" in print_module(parse(renumbered))
    keys = {key_of(source, kernel="k") for source in (plain, numbered, renumbered)}
    assert len(keys) == 1
