"""Views, logical buffers and indexed access (spec §8, §9, §10, §13).

Every access lane computes its coordinates (index tensors broadcast right-aligned to the
access shape), checks them against the logical extents — and, for views, the address
against the allocation, unless the view is proven dense and inside it (`ViewRef.in_allocation`)
— and touches memory only when it is active and in bounds. An
out-of-bounds active lane is reported (R0301) and makes no access.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from ...ir.ops.memory import UPDATE_COMBINE
from .affine_forms import difference, multiple_of
from .emitter import CheckSite, Emitter
from .lowfloat import to_register, to_storage
from .pointwise import binary
from .shape import broadcast_index, broadcast_to
from .types import I1, I8, I64, LOW_FLOATS, is_signed, register_type, storage_type
from .values import BufferRef, Coordinate, Derived, Lazy, Scalar, Tensor, ViewRef, coordinate_axes
from .lowering import LOWERINGS


def as_index(em: Emitter, value: ir.Value, dtype: str) -> ir.Value:
    if value.type == I64:
        return value
    return em.b.sext(value, I64) if is_signed(dtype) else em.b.zext(value, I64)


def element_at(em: Emitter, tensor: Tensor, idx: Coordinate) -> ir.Value:
    """Element of `tensor` at access coordinate `idx` (tensor broadcast right-aligned)."""
    return tensor.at(em, broadcast_index(tensor, idx))


class Lane(NamedTuple):
    # builds the lane's element pointer where it is asked for (`pointer`): a vector group
    # proven while building asks only its first lane's, so the others' are never built
    place: Callable[[], ir.Value]
    live: ir.Value                  # i1: active and in bounds
    written: ir.Value | None        # the buffer's written-mask byte, if it keeps one
    # a view's lane: its element's distance from element 0, in elements (what alignment
    # facts are about: `_vector_ready`)
    displacement: ir.Value | None = None

    @property
    def pointer(self) -> ir.Value:
        """The element's pointer, built in the block being built (the builder reuses one
        built before in that block)."""
        return self.place()


def _element_pointer(em: Emitter, view: ViewRef, displacement: ir.Value,
                     address: ir.Value | None) -> Callable[[], ir.Value]:
    """Builds the pointer to the view's element at `displacement` (`address`: the offset
    added, when already built) in the block being built when asked."""
    def place() -> ir.Value:
        b = em.b
        return b.gep(view.ptr, [address if address is not None else b.add(view.offset, displacement)])
    return place


class Access:
    """The lanes of one read/write/atomic on a view or buffer."""

    def __init__(self, em: Emitter, op: Op, resource: ViewRef | BufferRef, indices: list[Tensor],
                 mask: Tensor | None):
        self.em, self.op, self.resource, self.indices, self.mask = em, op, resource, indices, mask
        # whether a NaN read keeps its bits (False where no use observes them, nan_payloads.py)
        self.nan_bits = id(op) not in em.payload_free_reads
        # a read only stored as it is moves storage words (`storage_words`), not values
        self.copies_words = (id(op) in em.bit_copy_reads and isinstance(resource, ViewRef)
                             and resource.dtype in LOW_FLOATS)
        self.site = CheckSite(op, errors.OUT_OF_BOUNDS, "active access is outside the resource's extents "
                              "or allocation", "mask the lane off or clamp the index")

    def lane(self, idx: Coordinate) -> Lane:
        """The lane at `idx`: its pointer, whether it is active and in bounds, and (buffers
        with a written-mask) its mask byte."""
        em, b = self.em, self.em.b
        active = element_at(em, self.mask, idx) if self.mask is not None else ir.Constant(I1, 1)
        if em.lane_mask is not None:
            active = b.and_(active, em.lane_mask)
        coords = [as_index(em, element_at(em, t, idx), t.dtype) for t in self.indices]
        inside = ir.Constant(I1, 1)
        implied = em.masked_in_bounds.get(id(self.op), frozenset())    # active lanes lie inside along these
        for axis, (c, extent) in enumerate(zip(coords, self.resource.shape)):
            if axis not in implied and not em.known_below(c, extent):
                inside = b.and_(inside, b.icmp_unsigned("<", c, extent))
        resource = self.resource
        displacement = None
        if isinstance(resource, ViewRef):
            displacement = ir.Constant(I64, 0)
            for c, stride in zip(coords, resource.strides):
                displacement = b.add(displacement, b.mul(c, stride))
            address = None
            if not resource.in_allocation:
                address = b.add(resource.offset, displacement)
                inside = b.and_(inside, b.icmp_unsigned("<", address, resource.size))
            place, written = _element_pointer(em, resource, displacement, address), None
        else:
            pointer = resource.memory.address(em, coords)
            place = lambda: pointer    # built here: a buffer's address may span blocks
            written = resource.written.address(em, coords) if resource.written is not None else None
        em.check(self.site, b.and_(active, b.not_(inside)))
        return Lane(place, b.and_(active, inside), written, displacement)

    def check_written(self, lane: Lane) -> None:
        """A live lane reading a buffer element never written is an illegal input (§9)."""
        if lane.written is None:
            return
        b = self.em.b
        byte = self.em.when(lane.live, lambda: b.load(lane.written), ir.Constant(I8, 1))   # only live lanes are in bounds
        self.em.check(CheckSite(self.op, errors.UNWRITTEN_READ, "reads a buffer element that was never written",
                                "write the element first, or give the buffer an init"),
                      b.and_(lane.live, b.icmp_unsigned("==", byte, ir.Constant(I8, 0))))

    def mark_written(self, lane: Lane) -> None:
        if lane.written is not None:
            with self.em.b.if_then(lane.live):
                self.em.b.store(ir.Constant(I8, 1), lane.written)

    def load(self, pointer: ir.Value) -> ir.Value:
        return self.load_word(self.em.b.load(pointer))

    def load_word(self, value: ir.Value) -> ir.Value:
        """A loaded storage element as the read's register value."""
        return (to_register(self.em, value, self.resource.dtype, self.nan_bits) if isinstance(self.resource, ViewRef)
                else value)

    @property
    def _view_words(self) -> bool:
        """A view whose elements are stored as their register values: the target's masked
        accesses apply (buffers stay plain, so their temporaries can become registers)."""
        dtype = self.resource.dtype
        return isinstance(self.resource, ViewRef) and storage_type(dtype) == register_type(dtype)

    def _is_word(self, value: ir.Value) -> bool:
        """Whether `value` is already a storage word of the view (a copied read's)."""
        dtype = self.resource.dtype
        return (isinstance(self.resource, ViewRef) and value.type == storage_type(dtype)
                and storage_type(dtype) != register_type(dtype))

    def masked_load(self, lane: Lane, default: ir.Value) -> ir.Value:
        """The lane's element where it is live, else `default`. A view of low-precision
        floats loads its storage words the target's way too (a predicated load on the GPU,
        no branch: a row's loads stay in flight together) and decodes after, unless the
        read only copies them (`copies_words`)."""
        if self._view_words:
            staged = self.em.hooks.view_load(self.em, self.resource, lane.pointer, lane.live, default)
            if staged is not None:
                return staged
        if self._view_words or self._is_word(default):
            return self.em.hooks.masked_load(self.em, lane.pointer, lane.live, default)
        if isinstance(self.resource, ViewRef) and self.resource.dtype in LOW_FLOATS:
            word = self.em.hooks.masked_load(self.em, lane.pointer, lane.live, ir.Constant(lane.pointer.type.pointee, 0))
            return self.em.b.select(lane.live, to_register(self.em, word, self.resource.dtype, self.nan_bits), default)
        return self.em.when(lane.live, lambda: self.load(lane.pointer), default)

    def masked_store(self, lane: Lane, value: ir.Value) -> None:
        if self._view_words and self.em.hooks.view_store(self.em, self.resource, lane.pointer, value, lane.live):
            return
        if self._view_words or self._is_word(value):
            self.em.hooks.masked_store(self.em, lane.pointer, value, lane.live)
            return
        with self.em.b.if_then(lane.live):
            self.store(lane.pointer, value)

    def store(self, pointer: ir.Value, value: ir.Value) -> None:
        if isinstance(self.resource, ViewRef) and not self._is_word(value):
            value = to_storage(self.em, value, self.resource.dtype)
        self.em.b.store(value, pointer)


# Element types a vector access moves as they are stored, and their bytes: a group of lanes
# is one access where it makes exactly 16 bytes (4 lanes of 4 bytes, 8 of 2).
VECTOR_DTYPES = {"f32": 4, "i32": 4, "u32": 4, "f16": 2, "bf16": 2}
VECTOR_BYTES = 16


def _vector_ready(em, acc, lanes) -> ir.Value:
    """i1: every lane active and in bounds, their addresses consecutive and the first one
    aligned to the whole vector, so one vector access may replace them. Of a view whose
    element 0 is 16-byte aligned (`ViewRef.aligned16`), the first lane's alignment is its
    displacement's: with constant strides (a `contiguous` view of known extents) LLVM folds
    that test, and a full group of such a view needs no run-time check at all."""
    b = em.b
    width = VECTOR_DTYPES[acc.resource.dtype]
    placed = _placed_by_construction(acc, lanes, width)
    ready: ir.Value = ir.Constant(I1, 1)
    if not placed:
        start = (b.mul(lanes[0].displacement, ir.Constant(I64, width)) if acc.resource.aligned16
                 else b.ptrtoint(lanes[0].pointer, I64))
        ready = b.icmp_unsigned("==", b.and_(start, ir.Constant(I64, VECTOR_BYTES - 1)), ir.Constant(I64, 0))
    for number, lane in enumerate(lanes):
        ready = b.and_(ready, lane.live)
        if number and not placed:
            ready = b.and_(ready, _next_to(em, lanes[0], lane, number, width))
    return ready


def _placed_by_construction(acc, lanes, width: int) -> bool:
    """Whether the lanes' displacements are consecutive and the first a multiple of the
    vector (of a view whose element 0 is 16-byte aligned) whatever the run-time values are
    (`affine_forms`): a register-form group's coordinates of a contiguous view of known
    extents. Then only the lanes' liveness is tested, at run time or not at all."""
    first = lanes[0].displacement
    return (acc.resource.aligned16 and first is not None and multiple_of(first, VECTOR_BYTES // width)
            and all(lane.displacement is not None and difference(lane.displacement, first) == number
                    for number, lane in enumerate(lanes)))


def _whole_vector(acc, lanes) -> bool:
    """Whether the group's lanes make one 16-byte access."""
    return VECTOR_DTYPES[acc.resource.dtype] * len(lanes) == VECTOR_BYTES


def _next_to(em, first: Lane, lane: Lane, number: int, width: int) -> ir.Value:
    """i1: `lane` lies `number` elements past `first`. Lanes of one view compare their
    displacements (the same pointer and offset), which LLVM folds where the coordinates are
    affine in the lane; other lanes compare addresses."""
    b = em.b
    if first.displacement is not None and lane.displacement is not None:
        return b.icmp_unsigned("==", lane.displacement, b.add(first.displacement, ir.Constant(I64, number)))
    expected = b.add(b.ptrtoint(first.pointer, I64), ir.Constant(I64, width * number))
    return b.icmp_unsigned("==", b.ptrtoint(lane.pointer, I64), expected)


def _vector_pointer(em, pointer, count):
    return em.b.bitcast(pointer, ir.VectorType(pointer.type.pointee, count).as_pointer())


def _group_lanes(acc, idxs, visit, value_at):
    """The access lanes of a vector group, and value_at(idx) at each lane's coordinate (the
    lane visited first, so tensors held per coordinate read that lane's element)."""
    lanes = [acc.lane(idx) for idx in idxs]
    values = []
    for lane, idx in enumerate(idxs):
        visit(lane)
        values.append(value_at(idx))
    return lanes, values


def _vector_load(em, acc, lanes, defaults) -> list:
    """One vector load where the lanes allow it (`_vector_ready`), else a masked load a lane
    (a branch between the two: predicating both instead, no branch, measured slower on the
    H200: docs/gpu.md)."""
    b = em.b
    if not _whole_vector(acc, lanes):
        return [acc.masked_load(lane, default) for lane, default in zip(lanes, defaults)]
    ready = _vector_ready(em, acc, lanes)
    if _always(ready):
        return _whole_load(em, acc, lanes)
    with b.if_else(ready, likely=True) as (vector, scalar):
        with vector:
            fast = _whole_load(em, acc, lanes)
            fast_block = b.block
        with scalar:
            slow = [acc.masked_load(lane, default) for lane, default in zip(lanes, defaults)]
            slow_block = b.block
    results = []
    for fast_value, slow_value in zip(fast, slow):
        merged = b.phi(fast_value.type)
        merged.add_incoming(fast_value, fast_block)
        merged.add_incoming(slow_value, slow_block)
        results.append(merged)
    return results


def _always(ready: ir.Value) -> bool:
    """A group known at compile time to be one whole vector access (no scalar path built)."""
    return isinstance(ready, ir.Constant) and ready.constant == 1


def _whole_load(em, acc, lanes) -> list:
    b = em.b
    loaded = b.load(_vector_pointer(em, lanes[0].pointer, len(lanes)), align=VECTOR_BYTES)
    words = [b.extract_element(loaded, ir.Constant(ir.IntType(32), k)) for k in range(len(lanes))]
    # a low float's storage words as the lane's masked load gives them: decoded, or kept as
    # words where the read only copies them
    return [word if acc.copies_words else acc.load_word(word) for word in words]


def _whole_store(em, acc, lanes, values) -> None:
    b = em.b
    words = [new if acc._is_word(new) else to_storage(em, new, acc.resource.dtype) for new in values]
    packed = ir.Constant(ir.VectorType(words[0].type, len(words)), None)
    for number, word in enumerate(words):
        packed = b.insert_element(packed, word, ir.Constant(ir.IntType(32), number))
    b.store(packed, _vector_pointer(em, lanes[0].pointer, len(lanes)), align=VECTOR_BYTES)


def _vector_store(em, acc, lanes, values) -> None:
    b = em.b
    if not _whole_vector(acc, lanes):
        for lane, new in zip(lanes, values):
            acc.masked_store(lane, new)
        return
    ready = _vector_ready(em, acc, lanes)
    if _always(ready):
        _whole_store(em, acc, lanes, values)
        return
    with b.if_else(ready, likely=True) as (vector, scalar):
        with vector:
            _whole_store(em, acc, lanes, values)
        with scalar:
            for lane, new in zip(lanes, values):
                acc.masked_store(lane, new)


def storage_word_dtype(dtype: str) -> str:
    """The unsigned integer dtype of a low float's storage words (a copied read's values)."""
    return f"u{storage_type(dtype).width}"


def access(em: Emitter, op: Op) -> Access:
    resource = em.env[op.operands[0]]
    if isinstance(resource, BufferRef):
        em.hooks.before_buffer_access(em, resource)
    indices = [em.env[n] for n in (op.group("index") or ())]
    mask = op.group("mask")
    return Access(em, op, resource, indices, em.env[mask[0]] if mask else None)


def guarded(em: Emitter, condition: ir.Value, then: Callable[[], None]) -> None:
    """then() under `condition`; returns nothing."""
    with em.b.if_then(condition):
        then()


@LOWERINGS.register("read")
def _read_op(em, op):
    acc = access(em, op)
    type_ = op.result_types[0]
    shape = em.shape_of(type_)
    fill_names = op.group("fill")
    fill = em.env[fill_names[0]] if fill_names else None
    dtype = storage_word_dtype(type_.dtype) if acc.copies_words else type_.dtype
    zero = ir.Constant(register_type(dtype), 0 if isinstance(register_type(dtype), ir.IntType) else 0.0)

    def default(idx):
        if fill is None:
            return zero
        value = element_at(em, fill, idx)
        return to_storage(em, value, type_.dtype) if acc.copies_words else value

    def element(idx):
        lane = acc.lane(idx)
        acc.check_written(lane)
        return acc.masked_load(lane, default(idx))

    def group(idxs, visit):
        return _vector_load(em, acc, *_group_lanes(acc, idxs, visit, default))

    if not shape:
        return Scalar(dtype, (), element([]))
    if em.hooks.lazy_read(em, acc.resource, op):
        # a Derived of the coordinate: each element is loaded once per coordinate and basic
        # block (elements.py), not once per use
        return Derived(dtype, shape, costly=not em.hooks.read_at_each_use(em, acc.resource),
                       combine=lambda e, coordinate: element(list(coordinate)), operands=coordinate_axes(shape))
    vectorizable = isinstance(acc.resource, ViewRef) and type_.dtype in VECTOR_DTYPES
    return em.tabulate(dtype, shape, element, group if vectorizable else None)


def _store_each(em, op, combine=None, kind=None):
    acc = access(em, op)
    value = em.env[op.operands[1]]
    shape = value.shape

    def element(idx):
        lane = acc.lane(idx)
        new = value.at(em, idx)
        if combine is None:
            acc.masked_store(lane, new)
            acc.mark_written(lane)
            return
        acc.check_written(lane)
        if em.hooks.masked_scatter(em, acc, lane.pointer, new, lane.live, kind):
            return
        with em.b.if_then(lane.live):
            em.hooks.scatter_update(em, op, acc, lane.pointer, new, kind, combine)

    def group(idxs, visit):
        lanes, values = _group_lanes(acc, idxs, visit, lambda idx: value.at(em, idx))
        _vector_store(em, acc, lanes, values)

    vectorizable = combine is None and isinstance(acc.resource, ViewRef) and acc.resource.dtype in VECTOR_DTYPES
    em.for_each(shape, element, group if vectorizable else None, lane_safe=isinstance(acc.resource, ViewRef))


@LOWERINGS.register("write", "unique_store")
def _write_op(em, op):
    _store_each(em, op)


@LOWERINGS.register("scatter_reduce")
def _scatter_reduce_op(em, op):
    kind = None
    if op.regions:
        region = op.regions[0]

        def combine(old, new):
            from .control import run_region
            dtype = em.env[op.operands[1]].dtype
            (result,) = run_region(em, region, [Scalar(dtype, (), old), Scalar(dtype, (), new)])
            return result.value
    else:
        kind = op.attributes["kind"].name
        name = UPDATE_COMBINE[kind]
        dtype = em.env[op.operands[1]].dtype

        def combine(old, new):
            return binary(em, op, name, old, new, dtype)
    _store_each(em, op, combine, kind)


@LOWERINGS.register("buffer")
def _buffer_op(em, op):
    type_ = op.result_types[0]
    shape = em.shape_of(type_)
    shared = em.hooks.buffer_memory(em, op, type_.dtype, shape)
    memory = shared or em.alloc(type_.dtype, shape)
    init = op.group("init")
    if init:
        em.store_into(memory, broadcast_to(em, em.env[init[0]], memory.shape))
        return BufferRef(type_.dtype, memory, shared=shared is not None)
    written = em.alloc("u8", memory.shape)
    em.store_into(written, Lazy("u8", memory.shape, lambda e, idx: ir.Constant(I8, 0)))
    return BufferRef(type_.dtype, memory, written)


@LOWERINGS.register("assume_in_bounds")
def _assume_in_bounds_op(em, op):
    index, resource = (em.env[n] for n in op.operands)
    extent = resource.shape[op.attributes["axis"]]
    site = CheckSite(op, errors.ASSUME_VIOLATED, f"index is outside axis {op.attributes['axis']} of the resource, "
                     "which the program assumes it is not")

    def check(idx):
        coordinate = as_index(em, index.at(em, idx), index.dtype)
        em.check(site, em.b.icmp_unsigned(">=", coordinate, extent))
    em.for_each(index.shape, check)
