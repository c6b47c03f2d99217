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


def _held(layout, lanes: int) -> list[set]:
    """The coordinates each of a row's `lanes` lanes holds (a static layout)."""
    return [{layout.coordinate(register, lane) for register in range(layout.registers)} for lane in range(lanes)]


@pytest.mark.parametrize("staged", [False, True])
def test_the_quantized_rows_layouts_are_what_a_lane_group_loads(staged):
    """q4k_q8k_matvec on 4 lanes a row (quantized_lanes.py): every lane holds each Q4_K
    block's 16 header bytes and its pairs' 32 quant bytes (lane L: pairs L, L + 4, ...);
    the Q8_K vector is staged in shared memory, or a lane holds d and its pairs' quants
    (64 bytes) and bsums (8 bytes); the dot is every lane's."""
    from intentc.codegen.nvptx.quantized_rows import plan_quantized_rows
    from intentc.parse import parse
    kernel = parse((ROOT / "ir_samples" / "q4k_q8k_matvec.kir").read_text()).find("q4k_q8k_matvec")
    plan = plan_quantized_rows(kernel, {"NB": 2} if staged else {})
    assert plan.lanes == 4 and bool(plan.staged_blocks) == staged
    values = plan.layouts({"NB": 2}).values
    roles = {role: values[name] for name, role in plan.values.items()}
    for lane, held in enumerate(_held(roles["w"], plan.lanes)):
        assert held == {(block, byte) for block in range(2) for byte in range(16)} | \
            {(block, 16 + 32 * lane + byte) for block in range(2) for byte in range(32)}
    if staged:
        assert str(roles["x"]) == "#shared<{order = [1, 0]}>"
    else:
        for lane, held in enumerate(_held(roles["x"], plan.lanes)):
            assert held == {(block, byte) for block in range(2) for byte in
                            [*range(4), *range(4 + 64 * lane, 68 + 64 * lane), *range(260 + 8 * lane, 268 + 8 * lane)]}
    assert str(roles["dot"]) == "#uniform"
    launch = _launch("q4k_q8k_matvec", "q4k_q8k_matvec")
    assert launch["layouts"]["encodings"]["#layout0"].startswith("#split<{axis = 1, at = [16], parts = [#slice")
