"""The CTA mapping (docs/gpu.md): one iteration of the top-level `parallel` per CTA, the
iteration's tensor coordinates spread over the CTA's threads.

Every coordinate of the iteration's tensors belongs to one thread for every op of the
iteration (T, the CTA size, is a compile-time constant), so element-wise chains stay
thread-local and neighbouring threads touch neighbouring elements (coalesced). A full
reduction combines per-thread partials through warp butterflies (`shfl.sync.bfly`) and
shared memory, every thread receiving the same bits; a rank-0 write is made by thread 0. A
histogram counts in shared memory; a scatter_reduce of its counts merges them atomically.

Two forms, chosen per kernel (and specialization):
- **register** (every tensor of the iteration but histogram counts has one static shape of
  S elements, S ≤ MAX_REGISTER_SIZE): each thread owns K coordinates (see
  `CtaPlan.coordinate`), the loop over them is unrolled, and reads and costly values with
  several uses are tabulated once into K per-thread slots (registers after SROA). Reads are
  issued eagerly, all of an op's loads before any later store, so they overlap. Scans (rank
  1, forward) run as block scans, group by group.
- **dynamic** (anything else the mapping accepts): a block-stride loop per op and nothing
  materialized: costly values are recomputed and reads re-issued at each use (L1/L2 hits).

`cta_plan` decides when the mapping applies: every op of the iteration is one of those
above (no regions, no atomics, no buffers; scans only in the register form; scatters only
of histogram counts) and reads touch only read-only views, or an inout view whose one write
uses the read's own indices and mask and ends the iteration. Otherwise the kernel keeps the
grid-stride mapping.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Helper, Kernel, Op
from ...ir.optable import all_ops, ops_where
from ...ir.types import TensorType, ViewType
from ...options import Specialization
from ...passes.ir_walk import is_pure_tree
from ..layout.assign import elements
from ..layout.encodings import Blocked, row_blocked
from ..llvm.types import F32, F64, I1, I32, I64, LOW_FLOATS, register_type
from ..llvm.values import Body, Memory, Shape
from .coordinate_regions import coordinate_regions
from .cta_buffers import cta_buffers, launch_extents, sized_at_launch
from .cta_group_loop import shares_philox, trip_slots
from .cta_groups import GROUP_CTA_THREADS, group_width
from .cta_regions import (CTA_WIDE, ELEMENTWISE, chunk_scans_ok, nested_ops, region_op_ok, scans_last_axis,
                          staged_reductions)
from .cta_staging import staged_reads
from .cta_tiles import accepts, register_size
from .cta_transpose import transposed_reads
from .fact_vectors import proven_vectors

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from ..llvm.target import Combine

CONTRACTIONS = ops_where(lambda op: op.contraction)
SHUFFLED = {"f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index", "bool"}
SHARED_WORDS = 32          # one i64 per warp: 1024 threads at most
SHARED_BYTES = 32 * 1024   # a histogram's counts in shared memory (48 KiB static at most, partials too)
DYNAMIC_THREADS = 512      # the dynamic form's CTA size
# The dynamic form's scans walk chunks of T·SCAN_POSITIONS positions, SCAN_POSITIONS consecutive
# ones a thread: each thread folds its own in order and the CTA block-scans the threads'
# totals, so the block scan's combines (and barriers) serve that many positions
# (`cta_scan.chunked_for_each`; `CtaPlan.scan_positions`).
SCAN_POSITIONS = 4
# An iteration whose scans run the author's combine (a generic scan: dozens of instructions a
# combine, two exponentials in prefix_logsumexp's merge) takes CTAs of AUTHOR_SCAN_THREADS in
# the dynamic form, each thread AUTHOR_SCAN_POSITIONS positions of a chunk (a chunk as long as
# the others'): a thread's block-scan combines (5 warp steps, the first warp's log2(W) more),
# which wait on each other's shuffles, then serve 8 positions, not 4, and twice the CTAs share
# an SM; ptxas fits AUTHOR_SCAN_RESIDENT of them an SM (`.minnctapersm`; prefix_logsumexp
# needs 36 registers, no spills), and its code generation runs without Loop Strength
# Reduction (AUTHOR_SCAN_LSR: at 256 threads a row of 2048 is two trips of the summarizer's
# block-stride loop, on which LSR took 7.7 of prefix_logsumexp's 53 ms of LLVM passes, 1.8 at
# 512 threads; without it 984 SASS instructions, not 1,016, loops alike). On the H200
# (session 12 round 1, issue #13; `bench/results/s12-20261202-h200-r1/`) prefix_logsumexp ran
# 0.1989-0.1993 ms in this form, 0.2045-0.2054 at 256 x 8 with LSR and no residency ask, and
# 0.2146-0.2151 at 512 x 4 with LSR (session 9's unrolled chunks: 0.2034); its GPU tests pass.
AUTHOR_SCAN_THREADS = 256
AUTHOR_SCAN_POSITIONS = 8
AUTHOR_SCAN_RESIDENT = 6
AUTHOR_SCAN_LSR = False
# The dynamic form's block-stride loops visit this many of a thread's coordinates an
# iteration (unguarded while all lie below the end): a pass's loads issue together rather
# than one an iteration, each waited for before the next.
DYNAMIC_UNROLL = 4
# The register form's coordinates per thread: on the H200, softmax rows of 1024/4096/16384
# ran 10-30% faster at 16-32 a thread than at 8 (more loads in flight, fewer warps meeting
# at each barrier; bench/results/cta-sweep-20261129-h200.jsonl), but bodies that keep many
# tensors, or unroll Philox per coordinate, then need 150-255 registers and spill. So K is
# about SLOT_REGISTERS / (the tensors a thread keeps), between 8 and 32.
SLOT_REGISTERS = 96
KEPT_WEIGHT = {name: op.cta_registers for name, op in all_ops().items() if op.cta_registers is not None}
MIN_SLOTS, MAX_SLOTS = 8, 32
# The register form's largest S: 16 slots of the largest CTA. Past it, K would reach 32 at
# 1024 threads, an unrolled body of 32 slots for one CTA an SM or two; the dynamic form's
# block-stride loops (512 threads) ran `row_argmax` (S = 32768, 512 rows) 10 % faster on the
# H200 (0.0237 / 0.0263 ms) and compile in 484 PTX lines instead of 766 (issue #13, session
# 8 round 1, bench/results/ctime-20261202-s8-h200-r1/slot_cap_ab.json). It is also the
# largest row a dynamic row's variants serve (`variants.VARIANT_SIZES`).
MAX_REGISTER_SIZE = 16 * 1024
# An iteration of scatters without reductions (segment_sum) has no CTA-wide combine whose
# barrier many slots a thread would amortize: at most this many slots (segment_sum at 16:
# 0.0392 ms against 0.0410 at 32, 696 PTX lines against 1,006; the same round). Session 9:
# so does any iteration that combines nothing (`_combines_nothing`): rank1_update at 16
# slots 0.0443 ms against 0.0443 at 32, the same bits, 773 -> 469 PTX lines
# (bench/results/cscan-20261202-s9-h200-r1/).
SCATTER_SLOTS = 16
# An iteration of independent coordinates whose ops are cheap (a copy, vector add, saxpy)
# is memory-bound: on the H200 it ran as fast at 4 slots a thread (and 4x the threads) as at
# the 8-32 the kept-tensor rule gives (vector add 0.980 / 0.981 of Triton, saxpy 0.957 /
# 0.923 of torch, flip_rows 0.038 ms both), in a quarter of the unrolled body: vector add
# 59 -> 28 ms to PTX. Bodies with math functions or Philox ran 5-8% slower at 4 slots
# (bias_act, dropout), so they keep the kept-tensor rule
# (bench/results/pending-20261201-s7-h200-r1/ctime/slots_ab.json). Round 2, this rule against
# the kept-tensor one: vector add, flip_rows, pcg_hash equal, saxpy 4% and dequantize_e4m3 15%
# faster (bench/results/ctime-slots-ab-20261201-s7-h200-r2.json).
CHEAP_INDEPENDENT_SLOTS = 4
MIN_THREADS = 64
MAX_THREADS = 1024
# In an iteration with a scan, slots come in groups of VECTOR consecutive coordinates a
# thread: a block scan then serves V coordinates a thread instead of one, and reads and
# writes of 32-bit elements become one 16-byte access (`ld.v4`/`st.v4`) where aligned and
# contiguous. On the H200 (bench/results/vector-ab-20261129-h200.jsonl) that made cumsum
# 2.8x faster, but vector add and softmax 10-30% slower (more registers, a contiguity and
# alignment check a group), so other iterations keep one coordinate a slot group unless
# the layout facts remove those checks (fact_vectors.py, docs/gpu.md "Layout facts at launch").
VECTOR = 4
# The slot loops are unrolled at lowering (so the slots become registers) while the
# iteration's ops times K stays below this; larger bodies (a 1,000-op element-wise chain)
# get one rolled loop an op, its slots in local memory, which compiles in time linear in the
# body, not in body × K. (Emitting every op as a loop and letting LLVM unroll it
# (`llvm.loop.unroll.full`) halved lowering time but doubled LLVM's, and lost Philox's
# 32-bit multiplies: dropout 0.75 -> 0.67 of Triton on the H200,
# bench/results/gpu-bench-20261201-h200-round1.log.)
UNROLL_BUDGET = 4096


@dataclass(frozen=True)
class CtaPlan:
    parallel: Op               # the top-level `parallel`, one iteration per CTA
    lazy_views: frozenset      # views read at each use (dynamic form) or outside the iteration
    threads: int               # T, the CTA size the code is compiled for
    slots: int                 # K coordinates per thread (register form); 0 in the dynamic form
    size: int = 0              # S, the iteration's tensor size (register form)
    vector: int = 1            # V: a thread's slots come in groups of V consecutive coordinates
    unrolled: bool = True      # the slot loops are unrolled at lowering (registers); else rolled (local memory)
    grid: bool = False         # a top-level tensor program: coordinates spread over the whole grid
    masked: bool = False       # S is only a bound (a variant, nvptx/variants.py): the slots past
                               # `fewest` are guarded against the run-time element count of the iteration's shape
    fewest: int = 0            # masked: the fewest elements the iteration's shape has (the variant's lower
                               # bound): the groups below it are full, unguarded
    staged: frozenset = frozenset()   # values staged in shared memory (cta_staging.py)
    transposed: tuple = ()     # (staged read, axis order its staging visits): cta_transpose.py
    # a costly top-level value of the iteration's size, which every CTA computes once into its
    # threads' slots (kaiser's window): a smaller grid computes it fewer times
    costly_prologue: bool = False
    iterations: int = 1        # iterations a CTA runs at once, each on its own `width` threads (short rows)
    buffers: tuple = ()        # the iteration's buffers: (name, "shared" | "scratch"), cta_buffers.py
    trip_slots: int = 0        # U > 0: the iteration runs once per trip of a loop over its K / U groups of U slots
                               # (cta_group_loop.py); 0: its slots unroll
    scan_positions: int = SCAN_POSITIONS   # the dynamic form's scan chunks: consecutive positions a thread
    resident: int = 0          # CTAs an SM ptxas must fit (`.minnctapersm`), 0: no bound asked
    strength_reduce: bool = True   # the dynamic form's code generation runs Loop Strength Reduction

    @property
    def width(self) -> int:
        """The threads one iteration's tensors are spread over (the CTA's, unless several
        iterations share a CTA: then a group of at most a warp, see cta_groups.py)."""
        return self.threads // self.iterations
    shared_results: tuple = ()  # partial reductions' results in shared memory: (name, elements, by_block)

    @property
    def groups(self) -> int:
        return self.slots // self.vector

    @property
    def full_slots(self) -> int:
        """The slots of the groups that lie wholly below S (below `fewest` when S is a bound)."""
        return min(self.slots, self.present // (self.width * self.vector) * self.vector)

    @property
    def present(self) -> int:
        """The elements every run of the iteration has: S, or `fewest` when S is a bound."""
        return self.fewest if self.masked else self.size

    @cached_property
    def layout(self) -> Blocked:
        """The iteration's tensors' layout (over their row-major linearization): V
        consecutive coordinates a thread, T threads, the tile repeated K/V times (kept: every
        slot of every op asks it for its coordinate)."""
        return row_blocked(self.size or None, self.width, self.vector)

    def coordinate(self, slot: int) -> int:
        """The linear coordinate of `slot` for thread 0 (thread t adds t·V): group g = j // V
        covers coordinates g·T·V … (g+1)·T·V − 1, V consecutive ones a thread."""
        (linear,) = self.layout.coordinate(slot, 0)
        return linear

    def full(self, group: int) -> bool:
        """Whether every coordinate of `group` lies below S (no guard needed)."""
        return (group + 1) * self.width * self.vector <= self.present

    def holds(self, size: int | None) -> bool:
        """Whether a tensor of `size` elements (None: a run-time count) is one of the
        iteration's, kept in slots (other shapes, such as a histogram's bins, are not)."""
        return size is None if self.masked else size == self.size


def _views(kernel: Kernel) -> dict[str, str]:
    return {p.name: p.type.direction for p in kernel.params if isinstance(p.type, ViewType)}


def known_extents(kernel: Kernel, specialization: Specialization) -> dict[str, int]:
    """Extent names with a compile-time value: specialized ones, index constants and `dim`s
    of views whose extent is known."""
    known = dict(specialization.extents)
    shapes = {p.name: p.type.shape for p in kernel.params if isinstance(p.type, ViewType)}
    for op in kernel.body:
        if op.name == "constant" and op.result_types[0] == TensorType(dtype="index"):
            known[op.results[0]] = int(op.attributes["value"])
        elif op.name == "dim" and op.operands[0] in shapes:
            extent = shapes[op.operands[0]][op.attributes["axis"]]
            value = extent if isinstance(extent, int) else known.get(extent)
            if value is not None:
                known[op.results[0]] = value
    return known


def _body_ok(ops: Sequence[Op], views: dict[str, str], register_form: bool, known: dict[str, int],
             helpers: Mapping[str, Helper] | None = None, launch: frozenset[str] = frozenset()) -> bool:
    """Whether the CTA mapping lowers every op of `ops`; `launch`: the extents bound at
    launch, which a CTA's scratch in device memory may be sized by (cta_buffers.py)."""
    counts = {op.results[0] for op in ops if op.name == "histogram"}
    helpers = helpers or {}

    def block_ok(block):
        return _body_ok(block, views, register_form, known, helpers, launch)
    for position, op in enumerate(ops):
        nested = region_op_ok(op, helpers, block_ok)
        if nested is not None:
            if not nested:
                return False
            continue
        if accepts(op, list(ops), views, known, SHARED_BYTES, block_ok):
            continue
        if op.name == "quantize" and sized_at_launch(op.result_types[0], launch):   # records in CTA scratch
            continue
        if op.regions:
            return False
        if op.name == "histogram":
            if not _fits_shared(op.result_types[0], known):
                return False
            continue
        if op.name == "scatter_reduce":     # of a histogram's counts: atomics, one bin a thread
            if op.operands[1] not in counts or views.get(op.operands[0]) not in ("out", "inout"):
                return False
            continue
        if op.name in ELEMENTWISE:            # broadcasting along chosen axes reads any coordinate
            if op.name == "broadcast" and op.attributes.get("dims") is not None and register_form:
                return False
            continue
        if op.name == "reduce" or op.name in CONTRACTIONS:   # full reductions: a scalar per iteration
            allowed = SHUFFLED | set(LOW_FLOATS)   # low-precision floats live in f64 registers
            partial = op.result_types[0].shape     # the dynamic form stages reduce's in shared memory
            if (partial and (register_form or op.name != "reduce")) or op.result_types[0].dtype not in allowed:
                return False
            continue
        if op.name == "scan":                # along the last axis: block scans (cta_scan.py)
            if not scans_last_axis(op):
                return False
            continue
        if op.name == "write":
            target = op.operands[0]
            if target not in views or (views[target] == "inout" and not _read_then_write(ops, position, target)):
                return False
            continue
        if op.name == "read":
            if views.get(op.operands[0]) not in ("in", "inout", "buffer"):
                return False
            continue
        if op.name == "buffer":               # in shared memory when shared_buffers took it
            if views.get(op.results[0]) != "buffer":
                return False
            continue
        return False
    return True


def _fits_shared(type_: TensorType, known: dict[str, int]) -> bool:
    """Static bins of a register-width count dtype within SHARED_BYTES."""
    (extent,) = type_.shape
    bins = extent if isinstance(extent, int) else known.get(extent)
    width = {"i32": 4, "u32": 4, "i64": 8, "u64": 8}.get(type_.dtype)
    return bins is not None and width is not None and bins * width <= SHARED_BYTES


def _read_then_write(ops: list[Op], position: int, view: str) -> bool:
    """An inout view written once, by the iteration's last op, at exactly the lanes (index
    and mask operands) of every read of it: each element is read, then written, by its
    own thread."""
    write = ops[position]
    if position != len(ops) - 1:
        return False
    reads = [op for op in ops if op.name == "read" and op.operands[0] == view]
    writes = [op for op in ops if op.name == "write" and op.operands[0] == view]
    lanes = (tuple(write.group("index") or ()), tuple(write.group("mask") or ()))
    return len(writes) == 1 and all((tuple(r.group("index") or ()), tuple(r.group("mask") or ())) == lanes
                                    for r in reads)


def _independent(kernel: Kernel, ops: list[Op]) -> bool:
    """Whether every op of the iteration is per coordinate (loops and ifs too where they
    run per coordinate): no reduction, scan or barrier for a thread's slots to meet at."""
    return all(_per_coordinate(op) for op in _outside_regions(ops, per_coordinate_regions(kernel)))


def _slots_wanted(kernel: Kernel, ops: list[Op], independent: int = 0, unrolled: bool = True) -> int:
    """K for the iteration `ops` of `kernel`: `independent` (Specialization.independent_slots,
    when not 0) where every op is per coordinate (loops and ifs too where they run per
    coordinate), else from the tensors a thread keeps. An iteration of independent
    coordinates meets no barrier, where many slots a thread pay off (above): its slots only
    make the unrolled body, and LLVM's and ptxas' time, K times longer (issue #13: vector add
    at 16 slots, 755 PTX lines; at 4, 214), while T·K stays S (fewer loads in flight a thread,
    more threads). Without `independent`, such an iteration of cheap ops
    (`_cheap_coordinates`) takes CHEAP_INDEPENDENT_SLOTS. An iteration that combines nothing
    takes at most SCATTER_SLOTS where its slots unroll (`unrolled`: a rolled loop's code
    does not grow with K)."""
    if _independent(kernel, ops):
        if independent:
            return independent
        if _cheap_coordinates(kernel, ops):
            return CHEAP_INDEPENDENT_SLOTS
    if _scatters_without_reductions(kernel, ops) or (unrolled and _combines_nothing(kernel, ops)):
        return min(SCATTER_SLOTS, _slots_for_kept(kernel, ops))
    return _slots_for_kept(kernel, ops)


def _combines_nothing(kernel: Kernel, ops: list[Op]) -> bool:
    """Whether no op of the iteration (nested ones included) is a reduction (of the
    reduction family, or a contraction to a sum): no CTA-wide combine."""
    table = all_ops()
    return not any(op.name in table and (table[op.name].family == "reduction" or table[op.name].contraction)
                   for op in nested_ops(ops, {}))


def _scatters_without_reductions(kernel: Kernel, ops: list[Op]) -> bool:
    """Whether the iteration scatters (`scatter_reduce`) and combines nothing over the CTA
    (no op of the reduction family, nested ones included)."""
    table = all_ops()
    nested = list(nested_ops(ops, {}))
    return any(op.name in table and "scatter_reduce" in table[op.name].effects for op in nested) and \
        not any(op.name in table and table[op.name].family == "reduction" for op in nested)


def _cheap_coordinates(kernel: Kernel, ops: list[Op]) -> bool:
    """Whether no op of the iteration (its per-coordinate regions too) nor a top-level op
    with a tensor result (a value the iteration may read) calls a math function, divides,
    keeps several registers a coordinate (Philox) or calls a helper: a coordinate is then a
    few loads, stores and arithmetic, which more slots a thread do not speed up."""
    table = all_ops()
    prologue = [op for op in kernel.body if op.result_types and isinstance(op.result_types[0], TensorType)
                and op.result_types[0].shape]
    return all(op.name in table and not (table[op.name].libm or table[op.name].costly
                                         or (table[op.name].cta_registers or 0) > 1 or op.attributes.get("callee"))
               for op in nested_ops([*prologue, *ops], {}))


def _slots_for_kept(kernel: Kernel, ops: list[Op]) -> int:
    """K = about SLOT_REGISTERS / (the tensors a thread keeps: reads, the prologue's too, as
    they are re-read in the iteration; scans; Philox, unrolled per coordinate; values with
    several uses other than index and bool tensors, which stay lazy), a power of two in
    [MIN_SLOTS, MAX_SLOTS]."""
    wanted = max(1, SLOT_REGISTERS // max(_kept(kernel, ops), 1))
    return min(MAX_SLOTS, max(MIN_SLOTS, 1 << (wanted.bit_length() - 1)))


def _kept(kernel: Kernel, ops: list[Op], staged: frozenset[str] = frozenset()) -> int:
    """The tensors a thread keeps in its slots for the iteration `ops` (see `_slots_for_kept`),
    the reads `staged` in shared memory left out."""
    uses: dict[str, int] = {}
    for op in ops:
        for name in list(op.operands) + [v for g in op.groups for v in g.values]:
            uses[name] = uses.get(name, 0) + 1
    kept = sum(KEPT_WEIGHT.get(op.name, 0) for op in ops if not (op.results and op.results[0] in staged))
    kept += sum(op.name == "read" for op in kernel.body)
    kept += sum(1 for op in ops if op.name not in KEPT_WEIGHT for name, type_ in zip(op.results, op.result_types)
                if uses.get(name, 0) > 1 and isinstance(type_, TensorType) and type_.shape and type_.dtype not in ("index", "bool"))
    return kept


def _rolls_slots(kernel: Kernel, ops: list[Op], staged: frozenset[str]) -> bool:
    """Whether the register form runs its slots as one rolled loop although they would
    unroll: when the iteration keeps nothing in them (every read staged in shared memory,
    each value computed where its one use needs it, no op with a region), as
    dequantize_q4_k. Unrolled, such slots gain no loads in flight, only K copies of the
    code and of each loop-invariant address, which LLVM hoists into registers across the
    iteration loop (K = 32: 154 registers a thread, one CTA of 256 an SM); rolled, 30."""
    return not any(op.regions for op in ops) and _kept(kernel, ops, staged) == 0


def _costly_prologue(body: list[Op], size: int, known: dict[str, int]) -> bool:
    """Whether the top level computes a costly value (math calls) of the iteration's size."""
    return any(all_ops()[op.name].costly or all_ops()[op.name].libm for op in body
               if op.name in all_ops() and op.result_types and isinstance(op.result_types[0], TensorType)
               and op.result_types[0].shape and elements(op.result_types[0], known) == size)


def _threads_for(size: int, slots: int) -> int:
    """T for S coordinates at about `slots` a thread, a power of two in [64, 1024]."""
    wanted = max(1, -(-size // slots))
    return min(MAX_THREADS, max(MIN_THREADS, 1 << (wanted - 1).bit_length()))


def iteration(kernel: Kernel) -> tuple[Op, list[Op]] | None:
    """The top-level `parallel` and its body's ops, when the rest of the top level is pure
    ops and reads of `in` views (what the CTA mapping needs outside the iteration)."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    views = _views(kernel)
    for op in kernel.body:
        if op is parallels[0] or op.name == "yield" or is_pure_tree(op):
            continue
        if op.name == "read" and views.get(op.operands[0]) == "in":
            continue
        return None
    return parallels[0], [op for op in parallels[0].regions[0].ops if op.name != "yield"]


def _register_plan(kernel: Kernel, parallel: Op, ops: list[Op], threads: int, size: int,
                   specialization: Specialization, masked: bool = False) -> CtaPlan:
    """The register form of S = `size` coordinates (a bound when `masked`) on T = `threads`."""
    read_only = frozenset(name for name, direction in _views(kernel).items() if direction == "in")
    vector = _vector(kernel, ops, specialization)
    vector = vector if -(-size // threads) >= vector else 1
    slots = vector * -(-size // (threads * vector))
    return CtaPlan(parallel, read_only, threads, slots, size, vector, len(ops) * slots <= UNROLL_BUDGET,
                   masked=masked)


def _vector(kernel: Kernel, ops: list[Op], specialization: Specialization) -> int:
    """V for the iteration `ops`: VECTOR with a scan, else as many as make every group one
    16-byte access where the layout facts prove it (`fact_vectors.py`), else 1."""
    if any(op.name == "scan" for op in ops):
        return VECTOR
    return proven_vectors(kernel, ops, specialization) or 1


def row_slots(kernel: Kernel, known: dict[str, int], specialization: Specialization) -> tuple[int, int] | None:
    """(K, V) the register form gives an iteration whose S is known only at launch: the
    slots a thread wants for the body (K, at most; fewer for short rows) and the vector
    width; None when the body does not fit the register form or K slots would not unroll
    (a rolled loop needs S's full slots at compile time)."""
    found = iteration(kernel)
    if found is None or not _body_ok(_outside_regions(found[1], per_coordinate_regions(kernel)), _views(kernel), True,
                                     known):
        return None
    ops = found[1]
    wanted = _slots_wanted(kernel, ops)
    if len(ops) * wanted > UNROLL_BUDGET:
        return None
    return wanted, _vector(kernel, ops, specialization)


def register_bucket(size: int, wanted: int, vector: int) -> tuple[int, int]:
    """(fewest, most): the element counts whose register form gets the T and the slots a
    static S = `size` gets (`_register_plan`) and whose last group of V·T coordinates is
    partial, so a variant guarding only that group serves them all; or (S, S) where the
    groups fill S exactly (then no slot needs a guard: the specialized code)."""
    threads = _threads_for(size, wanted)
    if -(-size // threads) < vector:         # too few slots for groups of V: one coordinate a group
        vector = 1
    group = threads * vector
    most = -(-size // group) * group
    if size == most:
        return most, most
    # with V > 1 the rows of at most T·(V - 1) elements get groups of one (above)
    return max(1, most - group + 1, threads * (vector - 1) + 1 if vector > 1 else 1), most - 1


def masked_plan(kernel: Kernel, known: dict[str, int], fewest: int, most: int,
                specialization: Specialization) -> CtaPlan:
    """The register form serving every S in [fewest, most] known only at launch: the plan a
    static S = `most` gets (its T and K), the slots of the groups past `fewest` guarded
    against the run-time S (none when fewest = most). Where `known` fixes S (a bucket of one
    row length lowered as the kernel specialized to it, `variants.exact_row`), S is no bound:
    the plan is the static one."""
    parallel, ops = iteration(kernel) or (None, [])
    assert parallel is not None, kernel.name
    plan = _register_plan(kernel, parallel, ops, _threads_for(most, _slots_wanted(kernel, ops)), most,
                          specialization, masked=register_size(kernel.body, ops, known) != most)
    return replace(plan, fewest=fewest)


def cta_plan(kernel: Kernel, specialization: Specialization | None = None,
             helpers: Mapping[str, Helper] | None = None) -> CtaPlan | None:
    """The CTA mapping of `kernel` (calling `helpers` by name), or None when it does not apply."""
    specialization = specialization or Specialization()
    helpers = helpers or {}
    found = iteration(kernel)
    if found is None:
        return None
    parallel, ops = found
    flat = _outside_regions(ops, per_coordinate_regions(kernel))   # regions per coordinate: like element-wise ops
    known = known_extents(kernel, specialization)
    launch = launch_extents(kernel)
    buffers = cta_buffers(ops, known, launch)
    views = {**_views(kernel), **dict.fromkeys(buffers, "buffer")}     # the CTA's buffers are accessed like views
    read_only = frozenset(name for name, direction in views.items() if direction == "in")
    size = register_size(kernel.body, ops, known)
    if size and size <= MAX_REGISTER_SIZE and _body_ok(flat, views, True, known, helpers, launch):
        # several iterations a CTA only where every combine is a group's butterfly
        whole_cta = any(op.name in CTA_WIDE for op in nested_ops(ops, helpers))
        width = None if whole_cta else group_width(size, ops, MIN_SLOTS)
        if width is not None:              # short rows: several iterations a CTA (cta_groups.py)
            slots = -(-size // width)
            return CtaPlan(parallel, read_only, GROUP_CTA_THREADS, slots, size, 1,
                           len(ops) * slots <= UNROLL_BUDGET, iterations=GROUP_CTA_THREADS // width,
                           buffers=tuple(sorted(buffers.items())))
        transposed = transposed_reads(kernel.body, ops)
        staged = staged_reads(ops, size, known, transposed)
        rolled = _rolls_slots(kernel, ops, staged)
        wanted = _slots_wanted(kernel, ops, specialization.independent_slots, unrolled=not rolled)
        plan = _register_plan(kernel, parallel, ops, _threads_for(size, wanted), size, specialization)
        plan = replace(plan, staged=staged, buffers=tuple(sorted(buffers.items())),
                       transposed=tuple((name, order) for name, order in transposed.items() if name in staged),
                       costly_prologue=_costly_prologue(kernel.body, size, known),
                       unrolled=plan.unrolled and not rolled)
        # cheap coordinates keep their few unrolled slots: their loads in flight are their speed
        if _cheap_coordinates(kernel, ops):
            return plan
        if plan.vector == 1 and plan.slots % VECTOR == 0 and shares_philox(nested_ops(ops, helpers)) and \
                trip_slots(ops, flat, plan, helpers, known, _per_coordinate, rolled=True):
            # groups of 4 consecutive coordinates: their counters share Philox blocks (rng.philox_word)
            plan = replace(plan, vector=VECTOR)
        return replace(plan, trip_slots=trip_slots(ops, flat, plan, helpers, known, _per_coordinate))
    author_scans = any(op.name == "generic_scan" for op in nested_ops(ops, helpers))
    threads = AUTHOR_SCAN_THREADS if author_scans else DYNAMIC_THREADS
    shared_results = staged_reductions(nested_ops(ops, helpers), known, threads)
    if not (_body_ok(flat, views, False, known, helpers, launch) and chunk_scans_ok(ops, helpers)
            and shared_results is not None):
        return None
    inout_read = frozenset(op.operands[0] for op in ops if op.name == "read" and views[op.operands[0]] == "inout")
    plan = CtaPlan(parallel, read_only | inout_read, threads, 0, shared_results=shared_results,
                   buffers=tuple(sorted(buffers.items())))
    return replace(plan, scan_positions=AUTHOR_SCAN_POSITIONS, resident=AUTHOR_SCAN_RESIDENT,
                   strength_reduce=AUTHOR_SCAN_LSR) if author_scans else plan

GRID_THREADS = 256         # the grid form's CTA size


def per_coordinate_regions(kernel: Kernel) -> frozenset[str]:
    """The loops and ifs of `kernel` that run per coordinate (`coordinate_regions.py`): their
    bodies hold element-wise ops and reads of `in` views."""
    views = _views(kernel)

    def allowed(op: Op) -> bool:
        if op.name == "read":
            return views.get(op.operands[0]) == "in"
        return op.name in ELEMENTWISE and _body_ok([op], views, False, {})
    return coordinate_regions(kernel.body, allowed)


def _outside_regions(ops: list[Op], regions: frozenset[str]) -> list[Op]:
    """`ops` without the regions that run per coordinate (lazy tensors, like element-wise ops)."""
    return [op for op in ops if not (op.results and op.results[0] in regions)]


def _per_coordinate(op: Op) -> bool:
    """Whether every coordinate of `op`'s result needs only the same coordinate of its
    operands (a reduction, scan or histogram would need a grid-wide second level)."""
    return op.name in ELEMENTWISE or op.name == "read" or op.name == "write"


def grid_plan(kernel: Kernel) -> CtaPlan | None:
    """The grid form of a kernel without `parallel` whose top level is an element-wise tensor
    program: reads of `in` views (or an inout view read then written at the same lanes),
    element-wise ops, loops and ifs that run per coordinate (`coordinate_regions.py`) and writes of
    every view at most once. Each coordinate of every tensor
    belongs to one thread of the grid (linear e ≡ global thread id mod grid size), so every
    element is read, computed and written by its own thread."""
    views = _views(kernel)
    ops = _outside_regions([op for op in kernel.body if op.name != "yield"], per_coordinate_regions(kernel))
    writes = [op.operands[0] for op in ops if op.name == "write"]
    if (not writes or len(writes) != len(set(writes)) or not all(_per_coordinate(op) for op in ops)
            or not _body_ok(ops, views, False, {}, {})):
        return None
    read_only = frozenset(name for name, direction in views.items() if direction == "in")
    inout_read = frozenset(op.operands[0] for op in ops if op.name == "read" and views[op.operands[0]] == "inout")
    return CtaPlan(None, read_only | inout_read, GRID_THREADS, 0, grid=True)


# ---- code ------------------------------------------------------------------------------------------
def sreg(em: Emitter, name: str) -> ir.Value:
    return em.b.call(em.declare(f"llvm.nvvm.read.ptx.sreg.{name}", I32, []), [])


def barrier(em: Emitter) -> None:
    em.b.call(em.declare("llvm.nvvm.barrier0", ir.VoidType(), []), [])


def thread_index(em: Emitter, plan: CtaPlan) -> ir.Value:
    """The thread's index among its iteration's threads as i64: tid.x, known to LLVM to lie
    below T (`!range`), so coordinates tid + j·T of full chunks need no bounds compare; with
    several iterations a CTA, tid.x mod the group width."""
    return em.once_per_block(("thread_index", plan.threads, plan.iterations, plan.width),
                             lambda: _thread_index(em, plan))


def _thread_index(em: Emitter, plan: CtaPlan) -> ir.Value:
    tid = sreg(em, "tid.x")
    tid.set_metadata("range", em.module.add_metadata([ir.Constant(I32, 0), ir.Constant(I32, plan.threads)]))
    if plan.iterations > 1:
        tid = em.b.and_(tid, ir.Constant(I32, plan.width - 1))
    return em.b.zext(tid, I64)


def unravel(em: Emitter, linear: ir.Value, shape: Shape) -> list[ir.Value]:
    """Row-major coordinates of `linear` in `shape`."""
    idx, rest = [], linear
    for extent in reversed(shape[1:]):
        idx.append(em.b.urem(rest, extent))
        rest = em.b.udiv(rest, extent)
    idx.append(rest)
    return list(reversed(idx))


def block_stride(em: Emitter, plan: CtaPlan, shape: Shape, body: Body) -> None:
    """body(idx) for the coordinates of `shape` this thread owns: linear e ≡ tid mod T, or in
    the grid form e ≡ ctaid·T + tid mod nctaid·T. The dynamic form visits DYNAMIC_UNROLL of
    them an iteration while they all lie below the end, then the rest one by one."""
    b = em.b
    total = em.element_count(shape)
    start, step = thread_index(em, plan), ir.Constant(I64, plan.width)

    def visit(linear):    # each loop below visits only coordinates below the end (its bound's proof)
        with full_slot(em, linear, shape):
            body(unravel(em, linear, shape))
    if plan.grid:
        start = b.add(b.mul(b.zext(sreg(em, "ctaid.x"), I64), step), start)
        step = b.mul(b.zext(sreg(em, "nctaid.x"), I64), step)
    elif isinstance(total, ir.Constant) and int(total.constant) <= plan.width:
        # at most one coordinate a thread (quantize_q8_k's 64 blocks on 512 threads): no loop,
        # so no unrolled copies that never run
        with em.b.if_then(b.icmp_unsigned("<", start, total)):
            visit(start)
        return
    if plan.grid or plan.slots or DYNAMIC_UNROLL == 1:
        em.loop(start, total, visit, step, name="lane")
        return
    owned = b.udiv(b.add(b.sub(total, start), ir.Constant(I64, plan.width - 1)), step)   # start < T
    chunk = ir.Constant(I64, plan.width * DYNAMIC_UNROLL)
    unrolled_end = b.add(start, b.mul(b.udiv(owned, ir.Constant(I64, DYNAMIC_UNROLL)), chunk))

    def visit_chunk(linear):
        for k in range(DYNAMIC_UNROLL):
            visit(b.add(linear, ir.Constant(I64, k * plan.width)))
    em.loop(start, unrolled_end, visit_chunk, chunk, name="lanes")
    if not (isinstance(total, ir.Constant) and int(total.constant) % (plan.width * DYNAMIC_UNROLL) == 0):
        em.loop(unrolled_end, total, visit, step, name="lane")      # (else no thread has a rest)


def slot_coordinate(em: Emitter, plan: CtaPlan, slot: int | ir.Value, start: ir.Value | None = None) -> ir.Value:
    """This thread's linear coordinate of `slot`, an int or an i64 value (see
    CtaPlan.coordinate), `start` further on (a trip's first coordinate, cta_group_loop.py)."""
    b = em.b
    base = thread_index(em, plan)
    if plan.vector > 1:
        base = b.mul(base, ir.Constant(I64, plan.vector))
    if start is not None:
        base = b.add(base, start)
    if isinstance(slot, int):
        return b.add(base, ir.Constant(I64, plan.coordinate(slot)))
    vector = ir.Constant(I64, plan.vector)
    group_start = b.mul(b.udiv(slot, vector), ir.Constant(I64, plan.width * plan.vector))
    return b.add(b.add(base, group_start), b.urem(slot, vector))


def in_tensor(em: Emitter, plan: CtaPlan, slot: int, linear: ir.Value, shape: Shape) -> ir.Value:
    """Whether this thread's coordinate `linear` of `slot` lies below S. A masked plan
    compares the run-time S − tid·V, one value a thread, with the slot's constant offset:
    comparing each slot's coordinate kept K 64-bit coordinates live across the iteration
    loop (LLVM hoists them), up to 64 more registers."""
    b = em.b
    if not plan.masked:
        return b.icmp_unsigned("<", linear, ir.Constant(I64, plan.size))
    base = thread_index(em, plan)
    if plan.vector > 1:
        base = b.mul(base, ir.Constant(I64, plan.vector))
    remaining = b.sub(em.element_count(shape), base)
    return b.icmp_signed(">", remaining, ir.Constant(I64, plan.coordinate(slot)))


@contextmanager
def guarded_slot(em: Emitter, plan: CtaPlan, slot: int, linear: ir.Value, shape: Shape,
                 lane_safe: bool = False) -> Iterator[None]:
    """Code within runs only where `slot`'s coordinate lies below S: in a branch, as the
    specialized kernel guards its one partial group, or, for a `lane_safe` body
    (TargetHooks.for_each) of a plan guarding several groups (an eager variant's), straight
    with the lanes past S masked (`Emitter.masked_lanes`), so the slots' math interleaves
    rather than waiting at a branch a slot. (One guarded group masked instead ran f16 row
    sums at 0.57 of specialized on the H200: LLVM then put each load's widening right
    after it, where the branch kept all the loads ahead of the math,
    bench/results/dynamic-20261201-s5-h200-r1.json.)"""
    live = in_tensor(em, plan, slot, linear, shape)
    masked = lane_safe and plan.groups - plan.full_slots // plan.vector > 1
    with em.masked_lanes(live) if masked else em.b.if_then(live), within_row(em, plan, linear, shape):
        yield


@contextmanager
def within_row(em: Emitter, plan: CtaPlan, linear: ir.Value, shape: Shape) -> Iterator[None]:
    """Code within runs at a coordinate known to lie below S (a full slot, or a guarded one
    on its live lanes). In a masked plan's rows the emitter then knows the coordinate lies
    below the row's run-time extent, so accesses at it check no extent (the plan did)."""
    if plan.masked and len(shape) == 1:
        with em.knowing_below(linear, shape[0]):
            yield
    else:
        yield


def block_slots(em: Emitter, plan: CtaPlan, shape: Shape, body: Body,
                on_slot: Callable[[int | ir.Value], None], lane_safe: bool = False,
                start: ir.Value | None = None) -> None:
    """The register form's block_stride: body(idx) for slot j = 0..K-1; on_slot(j) names
    the slot first. Unrolled here when the plan says so; otherwise the slots of full groups
    are one loop, emitted once (its slots in local memory). The slots of the group that
    reaches past S, if any, follow one by one, each guarded. A full slot's coordinate lies
    below S by construction, so accesses at it (a row's) check no extent. `start`: the
    coordinates of a trip of the group loop (cta_group_loop.py), whose slots are all full."""
    full = plan.full_slots

    def visit(slot):
        on_slot(slot)
        linear = slot_coordinate(em, plan, slot, start)
        with full_slot(em, linear, shape):
            body(unravel(em, linear, shape))
    if plan.unrolled:
        for slot in range(full):
            visit(slot)
    elif full:
        em.loop(ir.Constant(I64, 0), ir.Constant(I64, full), visit, name="slot")
    for slot in range(full, plan.slots):
        linear = slot_coordinate(em, plan, slot)
        on_slot(slot)
        with guarded_slot(em, plan, slot, linear, shape, lane_safe):
            body(unravel(em, linear, shape))


def full_slot(em: Emitter, linear: ir.Value, shape: Shape):
    """Within: a full slot's (or full group's) coordinate `linear` of a row is known to lie
    below the row's extent (below S by construction), so accesses at it check no extent."""
    return em.knowing_below(linear, shape[0]) if len(shape) == 1 else nullcontext()


def on_thread_zero(em: Emitter, plan: CtaPlan, body: Callable[[], None]) -> None:
    """body() on thread 0 of the iteration's threads (of the grid, in the grid form)."""
    b = em.b
    first = b.icmp_unsigned("==", thread_index(em, plan), ir.Constant(I64, 0))
    if plan.grid:
        first = b.and_(first, b.icmp_unsigned("==", sreg(em, "ctaid.x"), ir.Constant(I32, 0)))
    with b.if_then(first):
        body()


def to_word(em, value: ir.Value) -> ir.Value:
    b = em.b
    if value.type == F64:
        return b.bitcast(value, I64)
    if value.type == F32:
        return b.zext(b.bitcast(value, I32), I64)
    return value if value.type == I64 else b.zext(value, I64)


def from_word(em, word: ir.Value, type_: ir.Type) -> ir.Value:
    b = em.b
    if type_ == F64:
        return b.bitcast(word, F64)
    if type_ == F32:
        return b.bitcast(b.trunc(word, I32), F32)
    return word if type_ == I64 else b.trunc(word, type_)


def _shuffle(em, mode: str, value: ir.Value, lanes, clamp: int, mask: ir.Value | None = None) -> ir.Value:
    """shfl.sync.<mode> of any value up to 64 bits (two 32-bit shuffles for 64); `lanes`:
    the lane delta or (idx) source lane, an int or an i32 value; `mask`: the lanes taking
    part (the whole warp unless given)."""
    b = em.b
    mask, clamp_ = mask or ir.Constant(I32, -1), ir.Constant(I32, clamp)
    offset = ir.Constant(I32, lanes) if isinstance(lanes, int) else lanes
    if value.type in (I32, F32):     # the value itself (the f32 intrinsic: no bitcasts to build either way)
        kind = "i32" if value.type == I32 else "f32"
        own = em.declare(f"llvm.nvvm.shfl.sync.{mode}.{kind}", value.type, [I32, value.type, I32, I32])
        return b.call(own, [mask, value, offset, clamp_])
    shfl = em.declare(f"llvm.nvvm.shfl.sync.{mode}.i32", I32, [I32, I32, I32, I32])
    word = to_word(em, value)
    low = b.call(shfl, [mask, b.trunc(word, I32), offset, clamp_])
    if value.type in (I64, F64):
        high = b.call(shfl, [mask, b.trunc(b.lshr(word, ir.Constant(I64, 32)), I32), offset, clamp_])
        word = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
    else:
        word = b.zext(low, I64)
    return from_word(em, word, value.type)


def shared_array(em: Emitter, dtype: str, count: int, align: int | None = None) -> Memory:
    """A fresh `count`-element array of `dtype` registers in the CTA's shared memory
    (`align`: bytes, for vector accesses)."""
    element = register_type(dtype)
    name = f"intentc_cta_shared{sum(1 for g in em.module.globals if g.startswith('intentc_cta_shared'))}"
    array = ir.GlobalVariable(em.module, ir.ArrayType(element, count), name, addrspace=3)
    if align:
        array.align = align
    array.linkage = "internal"
    array.initializer = ir.Constant(ir.ArrayType(element, count), None)
    zero = ir.Constant(I32, 0)
    pointer = em.b.gep(array, [zero, zero], inbounds=True)
    return Memory(dtype, (ir.Constant(I64, count),), pointer, (ir.Constant(I64, 1),))


def _shared(em, components: int = 1, kind: str = "intentc_cta_partials") -> ir.Value:
    """The CTA's partials (or another `kind` of words a warp): a row of SHARED_WORDS i64
    words (one a warp) per component."""
    name = kind if components == 1 else f"{kind}{components}"
    existing = em.module.globals.get(name)
    if existing is None:
        type_ = ir.ArrayType(ir.ArrayType(I64, SHARED_WORDS), components)
        existing = ir.GlobalVariable(em.module, type_, name, addrspace=3)
        existing.linkage = "internal"
        existing.initializer = ir.Constant(type_, None)
    return existing


def _warp_totals(em, plan: CtaPlan, values: list[ir.Value], last_lane: int, identities: list[ir.Value],
                 reverse: bool = False, cyclic: bool = False) -> list[ir.Value]:
    """Lane l of every warp gets warp l's `values` at lane `last_lane` (warp W-1-l's when
    `reverse`; the identities past the last warp), through shared memory: one barrier pair
    for every component. `cyclic` (W a power of two): lane l gets warp l mod W's, so every
    aligned group of W lanes holds all the totals and no identity joins them."""
    b = em.b
    tid = sreg(em, "tid.x")
    shared, zero = _shared(em, len(values)), ir.Constant(I32, 0)
    lane = b.and_(tid, ir.Constant(I32, 31))
    with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, last_lane))):
        for row, value in enumerate(values):
            warp_slot = b.gep(shared, [zero, ir.Constant(I32, row), b.lshr(tid, ir.Constant(I32, 5))], inbounds=True)
            b.store(to_word(em, value), warp_slot)
    barrier(em)
    warps = ir.Constant(I32, -(-plan.width // 32))
    if cyclic:
        present, source = ir.Constant(I1, 1), b.and_(lane, b.sub(warps, ir.Constant(I32, 1)))
    else:
        present = b.icmp_unsigned("<", lane, warps)
        source = b.select(present, b.sub(b.sub(warps, ir.Constant(I32, 1)), lane) if reverse else lane, zero)
    totals = [b.select(present, from_word(em, b.load(b.gep(shared, [zero, ir.Constant(I32, row), source],
                                                               inbounds=True)), value.type), identity)
              for row, (value, identity) in enumerate(zip(values, identities))]
    barrier(em)          # the partials may be overwritten by the next reduction or scan only now
    return totals


def _butterfly(em, value: ir.Value, combine, width: int = 32, mask: ir.Value | None = None) -> ir.Value:
    """The combination of `value` over aligned groups of `width` lanes (the warp by default),
    the same bits in every lane: lanes i and i^k combine the same two operands at each
    step, and combine is commutative."""
    lanes = width // 2
    while lanes:
        value = combine(value, _shuffle(em, "bfly", value, lanes, 31, mask))
        lanes //= 2
    return value


def block_combine(em: Emitter, plan: CtaPlan, value: ir.Value, identity: ir.Value, combine: Combine) -> ir.Value:
    """The combination of every thread's `value` over the iteration's threads (each thread
    gets it): a butterfly within each warp, then a butterfly over the warps' results in
    every warp; a group of at most a warp (several iterations a CTA) needs only its own
    lanes' butterfly."""
    if plan.width <= 32:
        return _butterfly(em, value, combine, plan.width, group_lanes(em, plan))
    (total,) = _warp_totals(em, plan, [_butterfly(em, value, combine)], 0, [identity])
    return _butterfly(em, total, combine)


def group_lanes(em: Emitter, plan: CtaPlan) -> ir.Value | None:
    """The shuffle member mask of this thread's group of `width` lanes (None: the warp)."""
    if plan.width >= 32:
        return None
    b = em.b
    first = b.and_(sreg(em, "tid.x"), ir.Constant(I32, 32 - plan.width))
    return b.shl(ir.Constant(I32, (1 << plan.width) - 1), first)
