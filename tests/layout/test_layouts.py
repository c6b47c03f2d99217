"""Layouts (docs/gpu.md, "Layouts"): the encodings' maps from (register, thread) to a
logical coordinate, and the assignment recorded in launch.json. No GPU needed."""
from __future__ import annotations

import itertools
import json

import pytest

from intentc.codegen.layout.assign import dump
from intentc.codegen.layout.encodings import Blocked, Slice, row_blocked
from intentc.driver import compile_kernel
from intentc.options import Specialization
from sample_files import ROOT


def _owners(layout: Blocked) -> dict:
    """logical coordinate -> the (register, thread) pairs holding it, within the extent."""
    owners: dict = {}
    for register, thread in itertools.product(range(layout.registers), range(layout.threads)):
        coordinate = layout.coordinate(register, thread)
        if all(c < extent for c, extent in zip(coordinate, layout.shape)):
            owners.setdefault(coordinate, []).append((register, thread))
    return owners


@pytest.mark.parametrize("extent,threads,vector", [(1024, 64, 1), (1000, 64, 1), (4096, 256, 4), (33, 64, 1),
                                                   (5000, 512, 4)])
def test_the_row_form_holds_every_element_exactly_once(extent, threads, vector):
    layout = row_blocked(extent, threads, vector)
    owners = _owners(layout)
    assert sorted(owners) == [(e,) for e in range(extent)]
    assert all(len(pairs) == 1 for pairs in owners.values())


def test_the_row_form_is_the_cta_mappings_slot_rule():
    """Slot j of thread t is coordinate (j div V)·T·V + t·V + (j mod V) (cta.py)."""
    layout = row_blocked(4096, 256, 4)
    for register, thread in itertools.product(range(layout.registers), (0, 1, 31, 32, 255)):
        assert layout.coordinate(register, thread) == ((register // 4) * 256 * 4 + thread * 4 + register % 4,)


def test_a_2d_tile_is_covered_once_with_consecutive_elements_along_the_fast_axis():
    layout = Blocked((64, 64), (1, 4), (8, 4), (4, 1), (1, 0))
    owners = _owners(layout)
    assert len(owners) == 64 * 64 and all(len(pairs) == 1 for pairs in owners.values())
    assert [layout.coordinate(r, 0) for r in range(4)] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert layout.coordinate(0, 1) == (0, 4)          # the next lane: the next 4 columns


def test_a_slice_drops_the_reduced_axis():
    parent = Blocked((64, 64), (1, 4), (8, 4), (4, 1), (1, 0))
    row_layout = Slice(parent, 1)
    assert row_layout.coordinate(0, 1) == (0,) and row_layout.coordinate(0, 4) == (1,)
    assert str(row_layout).startswith("#slice<{dim = 1, parent = #blocked<")


def _launch(sample: str, kernel: str, extents=None, text: str | None = None) -> dict:
    text = text or (ROOT / "ir_samples" / f"{sample}.kir").read_text()
    result = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents or {}))
    return json.loads(result.artifacts["launch.json"])


def test_launch_json_records_the_softmax_layouts_and_conversions():
    launch = _launch("row_softmax", "row_softmax", {"N": 1024})
    layouts = launch["layouts"]
    assert layouts["encodings"] == {"#layout0": str(row_blocked(1024, launch["block"][0]))}
    values = layouts["values"]
    assert values["raw"] == values["e"] == values["p"] == "#layout0"      # element-wise: the same layout
    assert values["m"] == values["s"] == "#uniform"                       # full reductions
    converted = {(c["value"], c["from"], c["to"], c["through"]) for c in layouts["conversions"]}
    assert ("m", "#uniform", "#layout0", "registers") in converted
    assert "%p : #layout0" in dump(layouts)


def test_an_iteration_on_one_thread_shows_in_its_layouts():
    # a buffer without init (a written-mask to keep) still runs a row a thread
    text = (ROOT / "ir_samples" / "ema_row_buffer.kir").read_text().replace(" init(%zeros)", "")
    launch = _launch("ema_row_buffer", "ema_rows", text=text)
    assert launch["mapping"] == "grid-stride"
    assert launch["layouts"]["encodings"]["#layout0"].startswith("#blocked<{sizePerThread = [%T], threadsPerWarp = [1]")
