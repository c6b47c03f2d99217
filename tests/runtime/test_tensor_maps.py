"""Which launches of the warp-specialized MMA mapping get tensor maps (runtime/tensor_maps.py):
the map parameters read from the argument words, and the views the copy engine cannot
describe (those launches take the cp.async fallback entry). Encoding itself needs the
driver: tests/gpu/test_mma_contraction.py."""
from __future__ import annotations

import numpy as np

from intentc.runtime.tensor_maps import MapRequest, map_requests

TMA = {"word": 24, "element_bytes": 2,
       "maps": [{"view": "a", "inner_axis": 1, "outer_axis": 0, "box": [64, 128], "swizzle_bytes": 128},
                {"view": "b", "inner_axis": 1, "outer_axis": 0, "box": [64, 64], "swizzle_bytes": 128}]}
VIEWS = {"a": 0, "b": 7, "c": 14}


def _words(a: tuple, b: tuple, base=0x7000_0000_0000) -> np.ndarray:
    """Argument words of a, b (and c) as (offset, strides, extents) each, rank 2."""
    words = np.zeros(21, dtype=np.int64)
    for start, (offset, strides, extents) in ((0, a), (7, b), (14, (0, (1, 1), (1, 1)))):
        words[start:start + 7] = [base + start * (1 << 24), offset, 0, *strides, *extents]
    return words


def test_row_major_operands_get_maps_with_their_pitch_and_box():
    m, n, k = 300, 520, 200
    requests = map_requests(TMA, VIEWS, _words((0, (k, 1), (m, k)), (0, (n, 1), (k, n))))
    assert requests == [MapRequest(0x7000_0000_0000, (k, m), 2 * k, (64, 128), 2, 128),
                        MapRequest(0x7000_0000_0000 + 7 * (1 << 24), (n, k), 2 * n, (64, 64), 2, 128)]


def test_a_view_offset_moves_the_map_start():
    requests = map_requests(TMA, VIEWS, _words((8, (64, 1), (10, 64)), (0, (64, 1), (64, 64))))
    assert requests is not None and requests[0].address == 0x7000_0000_0000 + 16


def test_views_the_copy_engine_cannot_describe_have_no_maps():
    aligned_b = (0, (64, 1), (64, 64))
    assert map_requests(TMA, VIEWS, _words((0, (70, 1), (10, 70)), aligned_b)) is None       # 140-byte rows
    assert map_requests(TMA, VIEWS, _words((1, (64, 1), (10, 64)), aligned_b)) is None       # start 2 bytes in
    assert map_requests(TMA, VIEWS, _words((0, (1, 64), (10, 64)), aligned_b)) is None       # transposed
    assert map_requests(TMA, VIEWS, _words((0, (-64, 1), (10, 64)), aligned_b)) is None      # reversed rows


def test_an_empty_view_needs_no_map():
    requests = map_requests(TMA, VIEWS, _words((0, (1, 1), (5, 0)), (0, (1, 1), (0, 7))))
    assert requests == [None, None]
