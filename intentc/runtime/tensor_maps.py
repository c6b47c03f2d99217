"""Tensor maps for the copy engine (TMA) of the warp-specialized MMA mapping (docs/gpu.md,
"MMA mapping"; `codegen/nvptx/wgmma_tma.py`).

`launch.json`'s `mma.tma` names, for each map, the view, which of its axes is the
contiguous (inner) one and which the outer, the box the kernel copies and its swizzle. At launch the
views' device addresses, extents and strides are in the argument words; each map is
encoded there (`cuTensorMapEncodeTiled`: 2-D, the element's size as an unsigned integer
type, the swizzle of the staged rows, zero fill outside the view) into device memory of the
launch's own, 16 words a map, whose address is argument word `mma.tma.word` (past the
kernel's own words).

A view the copy engine cannot describe — its inner stride is not 1, its start or its row
pitch is not a multiple of 16 bytes — has no map: such a launch runs the kernel's
`fallback` entry (the cp.async form), which reads any view.
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

MAP_WORDS = 16
ALIGN = 16                          # bytes: a map's global address and its row pitch
DATA_TYPE = {1: 0, 2: 1, 4: 2}      # CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32, by element bytes
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}    # CU_TENSOR_MAP_SWIZZLE_NONE / 32B / 64B / 128B
L2_PROMOTION_128B = 2
MAX_EXTENT = 1 << 32


@dataclass(frozen=True)
class MapRequest:
    """One 2-D tensor map: the view's first element's address, (inner, outer) extents,
    the outer stride in bytes, the box, and the element size and swizzle."""
    address: int
    extents: tuple[int, int]
    pitch: int
    box: tuple[int, int]
    element_bytes: int
    swizzle_bytes: int


def map_requests(tma: dict, views: dict, words: np.ndarray) -> list[MapRequest | None] | None:
    """The maps of `tma` (launch.json) for a launch whose argument words are `words`
    (`views`: view name -> first argument word of its slots, rank 2; an empty view's is
    None), or None when a view is one the copy engine cannot describe."""
    requests: list[MapRequest | None] = []
    element = tma["element_bytes"]
    for spec in tma["maps"]:
        start = views[spec["view"]]
        pointer, offset = int(np.uint64(words[start])), int(words[start + 1])
        strides, extents = words[start + 3:start + 5], words[start + 5:start + 7]
        inner, outer = spec["inner_axis"], spec["outer_axis"]
        address, pitch = pointer + offset * element, int(strides[outer]) * element
        sizes = (int(extents[inner]), int(extents[outer]))
        if not min(sizes):      # an empty view: the kernel copies nothing from it, any map will do
            requests.append(None)
            continue
        if int(strides[inner]) != 1 or address % ALIGN or pitch <= 0 or pitch % ALIGN or \
                max(sizes) >= MAX_EXTENT or pitch >= 1 << 40:
            return None
        requests.append(MapRequest(address, sizes, pitch, tuple(spec["box"]), element, spec["swizzle_bytes"]))
    return requests


def encoded_maps(tma: dict, views: dict, words: np.ndarray) -> np.ndarray | None:
    """The maps of a launch whose argument words are `words`, encoded one after another
    (16 words each; an empty view's left zero), or None (no maps for these views)."""
    requests = map_requests(tma, views, words)
    if requests is None:
        return None
    maps = np.zeros(MAP_WORDS * len(requests), dtype=np.int64)
    for index, request in enumerate(requests):
        if request is not None:
            maps[MAP_WORDS * index:MAP_WORDS * (index + 1)] = np.frombuffer(encode(request), dtype=np.int64)
    return maps


@functools.cache
def _encoder():
    function = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                         ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                         ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                         ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return function


def encode(request: MapRequest) -> bytes:
    """The 128 bytes of the CUtensorMap (the driver's encoding)."""
    from .cuda_driver import failure
    storage = ctypes.create_string_buffer(2 * MAP_WORDS * 8)
    aligned = -(-ctypes.addressof(storage) // 64) * 64      # a CUtensorMap is 64-byte aligned
    dims = (ctypes.c_uint64 * 2)(*request.extents)
    pitch = (ctypes.c_uint64 * 1)(request.pitch)
    box = (ctypes.c_uint32 * 2)(*request.box)
    unit = (ctypes.c_uint32 * 2)(1, 1)
    status = _encoder()(aligned, DATA_TYPE[request.element_bytes], 2, request.address, dims, pitch, box, unit, 0,
                        SWIZZLE[request.swizzle_bytes], L2_PROMOTION_128B, 0)
    if status:
        raise failure(status, "cuTensorMapEncodeTiled")
    return ctypes.string_at(aligned, MAP_WORDS * 8)
