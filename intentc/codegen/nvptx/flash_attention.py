"""The flash mapping (docs/gpu.md, "Flash attention"): attention written as a `region_fold`
over keys (`fold_attention.py`) runs a block of BM query rows per CTA, key tiles of BN
streamed through shared memory, the fold's state in registers.

For each block of D columns (one when D <= DB), every key tile of the axis is one slice of
the fold (§6: slicing is the compiler's choice): the CTA computes the tile's scores
(`matvec`: Q and K chunks of DK columns staged in shared memory, each thread R rows x K
keys of `fma.rn.f32`, the contraction's fused f32 accumulation, in D order), the ops
before the fold and the summarizer op by op on its rows and keys (`fold_values.py`), the
summarizer's `vecmat` as P (the weights, 0 for keys past the axis) through shared memory
times V chunks of VK keys (each thread R rows x C columns, in key order), then the combine
with the running state — the first slice's summary is the state itself, as the
interpreter's fold starts from the first slice, never the init (the init is the result
only for an empty axis, which has no rows to write). After the last tile the ops after the
fold run on the state and the thread writes its rows' columns. No temporaries: the state
and the tile's values are a thread's registers, the tiles shared memory.

f32 operands only (f32 contractions get no TF32, §5.3/§5.4: CUDA cores). Key tiles wholly
past a row block are skipped when `dead_slices.py` proves that such a slice summarizes to
the init (the combine's identity, §6: the causal half) and V's rows there are finite, which
the CTA checks at run time for each pass (else it folds them: 0 · inf is NaN in the
interpreter's fold too).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llvmlite import ir

from ..layout.assign import Assignment
from ..layout.encodings import Blocked
from ...ir.types import RecordType
from ..llvm.lowfloat import to_storage
from ..llvm.types import F32, F64, I1, I32, I64, register_type
from .cta import barrier, shared_array, sreg
from .lane_dots import global_vector
from .ptx_asm import asm, cp_async_wait, opaque, shared_address
from .carried_loops import joined
from .dead_slices import dead_slices_are_identity, identity_past_axis
from .fold_attention import FoldAttention
from .fold_values import ROW_LANES, FoldValues, PerThread, rebuild, record_leaves

if TYPE_CHECKING:
    from .flash_mma import FlashMmaPlan

THREADS = 256                        # a CTA: thread row ty (of threads / 16) holds rows ty + (threads / 16) r
ROWS = 2                             # query rows a thread (BM = 32; a plan may choose others)
KEYS = 8                             # keys a thread of a tile (BN = 128: on the H200 0.71 ms against 0.78
                                     # for BN = 64 at T = 4096, D = 128, attention-20261201-s5-h200-r2.json)
DK = 32                              # D columns of a Q / K chunk
VK = 16                              # keys of a V chunk
VECTOR = 4                           # f32 elements of one ld.shared.v4
PAD = VECTOR                         # staged rows padded by one vector: 16-byte aligned, banks apart
MAX_COLUMNS = 128                    # DB for a dynamic or large D
KEY_GROUPS = 2                       # groups of 256 threads (128 registers each: one CTA an SM); H200, T = 4096,
                                     # D = 64 / 128: 1.49x / 0.78x torch f32 (s7 round 1); one group with 2 CTAs
                                     # an SM (`groups=1, resident=2`, bench/gpu_attention.py --sweep): 1.00x / 0.53x
WORD = 8                             # bytes of a state value in the key groups' exchange (cta.to_word)
CHUNK_LANES = 4                      # lanes of a vector's 16-byte chunk in the exchange
# LLVM's code generation level for the flash kernels on the CUDA cores: at 0 the same float
# instructions (every rounding explicit in the IR) for a third of -O2's code generation time, and
# on the H200 the same run time (f32, T = 4096, D = 128: 0.490 ms, 0.494 at -O2;
# bench/results/cflash-20261202-s8-h200-r2*; with InstCombine 0.4800-0.4802 at -O0, 0.4827-0.4829 at
# -O2, bench/results/flash-plan-ab-20261202-s9-h200/). The tensor cores keep -O2: flash_mma.CODEGEN.
CODEGEN = 0
# Whether the LLVM pipeline (the lean one, `machine._lean_pipeline`) runs InstCombine on the flash
# kernels: yes. Session 9's round 1 had found no difference, but bench/gpu_codegen_ab.py then served
# every choice one cached kernel; with each choice compiled apart (bench/results/
# flash-plan-ab-20261202-s9-h200/, T = 4096, D = 128, interleaved, the same output bits) f32 ran
# 0.4827-0.4829 ms with it at -O2 and 0.4902 without, f16 on the tensor cores 0.0764 against 0.0951.
INSTCOMBINE = True
# Whether LLVM's code generator runs the SelectionDAG combiner on the flash kernels: yes. At -O0 it
# is about a quarter of instruction selection (without it each flash kernel compiled about 5 ms
# faster, CPU time on the dev VM: bf16 75 -> 70 ms, f16 76 -> 70, f32 61 -> 58), but the H200 ran
# them slower without it (session 11 round 1, T = 4096, D = 128, each choice compiled apart, the
# same output bits; bench/results/dflash-20261202-s11-h200-r1/): f16 0.0908 ms against 0.0713,
# bf16 0.0899 against 0.0697, f32 0.4869 against 0.4713.
DAG_COMBINE = True


def state_words(attention: FoldAttention, rows: int, columns: int) -> int:
    """The values of the fold's state a thread holds: a scalar each row, `columns` of a [D]
    vector each row."""
    def leaves(type_) -> list:
        return [leaf for f in type_.fields for leaf in leaves(f.type)] if isinstance(type_, RecordType) else [type_]
    return sum(rows * (columns if leaf.shape else 1) for type_ in attention.fold.result_types
               for leaf in leaves(type_))


def exchange_bytes(attention: FoldAttention, rows: int, columns: int, groups: int, group_threads: int) -> int:
    """Shared memory for the key groups' states but group 0's (and a flag each)."""
    return (groups - 1) * (state_words(attention, rows, columns) + 1) * group_threads * WORD


class KeyGroupPlan(ABC):
    """What the flash plans share: a CTA of key groups (each folds a contiguous run of a row
    block's key tiles) whose buffers, then states, live in dynamic shared memory."""
    attention: FoldAttention
    groups: int
    resident: int
    rows: int

    kind = "flash"

    @property
    @abstractmethod
    def group_threads(self) -> int:
        """A key group's threads."""

    @property
    @abstractmethod
    def group_bytes(self) -> int:
        """A key group's buffers."""

    @property
    @abstractmethod
    def state_columns(self) -> int:
        """The columns of a [D] vector a thread holds."""

    @property
    def threads(self) -> int:
        return self.group_threads * self.groups

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory: the groups' buffers, reused for their states at the end."""
        return max(self.groups * self.group_bytes,
                   exchange_bytes(self.attention, self.rows, self.state_columns, self.groups, self.group_threads))

    @property
    def ctas_per_sm(self) -> int:
        return self.resident

    @property
    def parallel(self):
        return self.attention.parallel


@dataclass(frozen=True)
class FlashPlan(KeyGroupPlan):
    attention: FoldAttention
    columns: int                     # DB: D columns a pass keeps in registers (16 · C)
    skip_dead: bool = False          # key tiles past a row block summarize to the init (dead_slices.py)
    identity_past_axis: frozenset = frozenset()   # reductions combining their operand unmasked (dead_slices.py)
    rows: int = ROWS                 # query rows a thread
    keys: int = KEYS                 # keys a thread of a tile
    resident: int = 1                # CTAs an SM (`.minnctapersm`) and the grid's CTAs an SM
    threads_a_group: int = THREADS   # a key group's threads
    groups: int = KEY_GROUPS         # key groups: each folds a contiguous run of a row block's tiles
    codegen: int = CODEGEN           # LLVM's code generation level
    rolled: bool = True              # the rank-one steps over a staged chunk as a loop (ptxas unrolls it)
    instcombine: bool = INSTCOMBINE  # InstCombine in the LLVM pipeline
    dag_combine: bool = DAG_COMBINE  # the SelectionDAG combiner in code generation

    @property
    def group_threads(self) -> int:
        return self.threads_a_group

    @property
    def group_bytes(self) -> int:
        """A key group's Q and K chunks, P and V chunk (f32)."""
        bm, bn, db, dk = self.block
        return 4 * (bm * (dk + PAD) + bn * (dk + PAD) + bm * (bn + PAD) + VK * db)

    @property
    def state_columns(self) -> int:
        return self.columns // ROW_LANES

    @property
    def shared_bytes(self) -> int:
        """One group (a plan `--sweep` times) keeps its buffers in static shared memory."""
        return super().shared_bytes if self.groups > 1 else 0

    @property
    def block(self) -> tuple:
        return (self.row_groups * self.rows, ROW_LANES * self.keys, self.columns, DK)

    @property
    def row_groups(self) -> int:
        """Thread rows: thread row ty holds query rows ty + row_groups · r of the block."""
        return self.group_threads // ROW_LANES

    def emit(self, em) -> None:
        FlashEmitter(em, self).emit()

    def to_json(self) -> dict:
        bm, bn, db, dk = self.block
        return {"block": {"query_rows": bm, "keys": bn, "columns": db, "qk_chunk": dk, "v_chunk": VK},
                "per_thread": {"rows": self.rows, "keys": self.keys, "columns": self.columns // ROW_LANES},
                "resident": self.resident, "key_groups": self.groups, "shared_bytes": self.shared_bytes,
                "codegen": f"-O{self.codegen}", "instcombine": self.instcombine, "dag_combine": self.dag_combine,
                "unmasked_reductions": sorted(self.identity_past_axis),
                "steps": "rolled" if self.rolled else "unrolled",
                "instruction": "fma.rn.f32 (f32 operands: no TF32)", "order": "row blocks heaviest first",
                "slices": slices_text(self.groups, self.skip_dead),
                "state": "registers", "staging": "Q/K chunks, P and V chunks "
                + ("a key group in dynamic" if self.groups > 1 else "in static") + " shared memory"}

    def layouts(self, known: dict) -> Assignment:
        """The iteration's [T] and [D] vectors as the CTA holds them, over (the block's query
        rows, keys or columns): lane bits 0..3 along the vector, bit 4 and the warps along
        the rows, the tile repeating (a thread's rows ty + 16r, keys tx + 16n, columns four
        consecutive ones a lane in groups of 64 where it holds a multiple of four)."""
        result = Assignment()
        keys = Blocked((None, None), (1, 1), (2, ROW_LANES), (self.group_threads // 32, 1), (1, 0))
        per_lane = VECTOR if (self.columns // ROW_LANES) % VECTOR == 0 else 1
        cols = Blocked((None, None), (1, per_lane), (2, ROW_LANES), (self.group_threads // 32, 1), (1, 0))
        for name, kind in self.attention.kinds.items():
            if kind in ("keys", "cols"):
                result.values[name] = keys if kind == "keys" else cols
        return result


def slices_text(groups: int, skip_dead: bool) -> str:
    """launch.json's account of the fold's slices."""
    text = "key tiles in order; the first summary starts the state"
    if groups > 1:
        text = ("key tiles in order, a contiguous run of a row block's tiles a key group; the first summary "
                f"starts a group's state; the {groups} groups' states combined in key order")
    return text + ("; tiles past the row block skipped where V's rows there are finite" if skip_dead else "")


def plan_flash(kernel, known: dict) -> FlashPlan | FlashMmaPlan | None:
    """The flash plan of `kernel`, or None. f32 operands run on the CUDA cores in key groups;
    16-bit ones on the tensor cores (`flash_mma.py`)."""
    from .fold_attention import match_fold_attention
    from .tile_contraction import NoMatch
    try:
        attention = match_fold_attention(kernel)
    except NoMatch:
        return None
    if attention.operand_dtype != "f32":     # 16-bit operands run on the tensor cores
        from .flash_mma import plan_flash_mma
        return plan_flash_mma(attention, known)
    depth = attention.depth if isinstance(attention.depth, int) else known.get(attention.depth)
    columns = MAX_COLUMNS if not depth else max(ROW_LANES, min(MAX_COLUMNS, 1 << (depth - 1).bit_length()))
    coordinate = attention.parallel.regions[0].args[0].name
    return FlashPlan(attention, columns, dead_slices_are_identity(attention.prologue, attention.fold, coordinate),
                     identity_past_axis=identity_past_axis(attention.prologue, attention.fold, coordinate))


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _shared_access(type_: ir.Type) -> tuple:
    """(PTX type, inline asm constraint, register type) of a state value in the exchange: an
    integer narrower than 32 bits travels as a b32."""
    if type_ == F32:
        return "f32", "f", F32
    if type_ == F64:
        return "f64", "d", F64
    return ("b64", "l", I64) if type_.width == 64 else ("b32", "r", I32)


def _flat(leaves: list) -> list:
    return [value for leaf in leaves for row in leaf.values for value in row]


def _unflat(values: list, leaves: list, rows: int) -> list:
    """The fold's leaves ((dtype, kind, slots a row) each, `rows` rows) from their flat values."""
    flat = iter(values)
    return [PerThread(kind, dtype, [[next(flat) for _ in range(slots)] for _ in range(rows)])
            for dtype, kind, slots in leaves]


class FlashEmitter:
    def __init__(self, em, plan):            # a FlashPlan, or flash_mma.py's FlashMmaPlan
        self.em, self.plan = em, plan
        a = plan.attention
        self.q, self.k, self.v, self.o = (em.env[name] for name in (a.q, a.k, a.v, a.o))
        self.rows_extent, self.depth = self.q.shape
        self.cols = plan.columns // ROW_LANES
        self.rows, self.keys = plan.rows, plan.keys
        self.element_bytes = 4           # of Q, K and V

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, _, db, _ = plan.block
        self._setup()
        self.values.run(plan.attention.prologue)
        blocks = b.sdiv(b.add(self.rows_extent, _i64(bm - 1)), _i64(bm))
        start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)

        def row_block(linear):
            i0 = b.mul(b.sub(b.sub(blocks, _i64(1)), linear), _i64(bm))    # heaviest (last) blocks first
            known_depth = self.depth if isinstance(self.depth, ir.Constant) else None
            if known_depth is not None and known_depth.constant <= db:
                self._pass(i0, _i64(0))
            else:
                em.loop(_i64(0), self.depth, lambda c0: self._pass(i0, c0), _i64(db), name="dblock")
        em.loop(start, blocks, row_block, stride, name="rowblock")

    def _setup(self) -> None:
        """The thread's coordinates, the shared arrays and the op-by-op lowering."""
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, db, _ = plan.block
        tid, thread = self._thread_coordinates()
        self.tx, self.ty = b.zext(b.urem(thread, _i32(ROW_LANES)), I64), b.zext(b.udiv(thread, _i32(ROW_LANES)), I64)
        self._thread_indices(tid, thread)
        counts = (bm * (DK + PAD), bn * (DK + PAD), bm * (bn + PAD), VK * db)
        if plan.groups == 1:
            arrays = [shared_array(em, "f32", count, 16).ptr for count in counts]
        else:
            group = b.gep(self._shared_memory(), [b.mul(self.key_group, _i32(plan.group_bytes))])
            offsets = [4 * sum(counts[:index]) for index in range(len(counts))]
            arrays = [b.bitcast(b.gep(group, [_i32(offset)]), F32.as_pointer(3)) for offset in offsets]
        self.q_shared, self.k_shared, self.p_shared, self.v_shared = arrays
        self.values = FoldValues(em, self.rows, {"rows": 1, "keys": self.keys, "cols": self.cols}, plan.attention.depth,
                                 self._contract)
        self.values.lane = self.lane
        self.values.identity_past_axis = plan.identity_past_axis
        self.vectors = self._vector_checks()

    def _thread_coordinates(self) -> tuple:
        """The lane and the key group (i32); returns tid and the thread within its group (i32)."""
        em, plan = self.em, self.plan
        b = em.b
        tid = sreg(em, "tid.x")
        self.lane = b.urem(tid, _i32(32))
        if plan.groups == 1:
            self.key_group = _i32(0)
            return tid, tid
        self.key_group = b.udiv(tid, _i32(plan.group_threads))
        return tid, b.urem(tid, _i32(plan.group_threads))

    def _thread_indices(self, tid: ir.Value, thread: ir.Value) -> None:
        """tid and the thread within its group as i64."""
        self.tid = self.em.b.zext(tid, I64)
        self.group_tid = self.tid if self.plan.groups == 1 else self.em.b.zext(thread, I64)

    def _shared_memory(self) -> ir.Value:
        """The launch's dynamic shared memory (an external, unsized shared array of bytes);
        `self.shared` its shared-window address."""
        array = ir.GlobalVariable(self.em.module, ir.ArrayType(ir.IntType(8), 0), "intentc_flash_shared",
                                  addrspace=3)
        array.align = 128
        zero = ir.Constant(I32, 0)
        pointer = self.em.b.gep(array, [zero, zero], inbounds=True)
        self.shared = shared_address(self.em.b, pointer)
        self.shared_pointer = pointer
        return pointer

    def _group_barrier(self) -> None:
        """The key group's named barrier (1 + g, its threads); the CTA's with one group."""
        b = self.em.b
        if self.plan.groups == 1:
            barrier(self.em)
            return
        asm(b, "bar.sync $0, $1;", "r,r,~{memory}", ir.VoidType(),
            [b.add(self.key_group, _i32(1)), _i32(self.plan.group_threads)])

    def query_rows(self, i0: ir.Value) -> list:
        """The thread's query rows of the block from row i0."""
        b = self.em.b
        return [b.add(i0, b.add(self.ty, _i64(self.plan.row_groups * r))) for r in range(self.rows)]

    def key_slots(self) -> tuple:
        """The thread's key slots within the current tile: (its first key, an i64, each slot's
        distance from it): keys tx + 16n."""
        return self.tx, [ROW_LANES * n for n in range(self.keys)]

    # ---- one pass: the fold over every key tile for a block of rows and columns -------------
    def _pass(self, i0: ir.Value, c0: ir.Value) -> None:
        em, plan = self.em, self.plan
        b = em.b
        a = plan.attention
        self.i0, self.c0 = i0, c0
        values = self.values
        region = a.parallel.regions[0]
        rows = self.query_rows(i0)
        values.env[region.args[0].name] = PerThread("rows", "index", [[row] for row in rows])
        ops = [op for op in region.ops if op.name != "yield"]
        fold_at = ops.index(a.fold)
        types = a.fold.result_types
        leaves = [leaf for t in types for leaf in self._leaf_types(t)]
        bn = plan.block[1]

        def tile(j0, started) -> tuple:
            """(the tile's summary, whether it combines with the state, started)."""
            self.j0 = j0
            return _flat(self._summarize(a.fold, ops[1:fold_at])), started, ir.Constant(I1, 1)

        def trip(j0, carried):
            """The trip's summary combined into the state (the first one is the state)."""
            state, started = carried[:-1], carried[-1]
            if plan.groups == 1:
                summary, combines, started = tile(j0, started)
            else:
                with b.if_else(b.icmp_signed("<", j0, stop)) as (tiles, merges):
                    with tiles:
                        from_tile = (*tile(j0, started), b.block)
                    with merges:
                        from_group = (*self._take_group(j0, tiles_end, state, started), b.block)
                summary, combines, started = self._joined(from_tile, from_group)
            combined = _flat(self._combine(a.fold, _unflat(state, leaves, self.rows), _unflat(summary, leaves, self.rows)))
            return [b.select(combines, x, y) for x, y in zip(combined, summary)] + [started]
        start, stop = self._key_range(self._keys_end(i0, c0))
        tiles_end = self._tiles_end(start, stop)
        # the state is defined before the first trip's combine (whose result the first trip drops)
        initial = [value for dtype, kind, _ in leaves for _ in range(self.rows)
                   for value in values.row_of(kind, ir.Constant(register_type(dtype), 0))]
        *state, started = em.loop(start, self._trips_end(tiles_end), trip, _i64(bn), "keytile",
                                  carried=[*initial, ir.Constant(I1, 0)])
        self._give_state(state, started)
        results = _unflat(state, leaves, self.rows)
        for name, type_ in zip(a.fold.results, list(types)):
            values.env[name] = rebuild(type_, list(results))
        after = ops[fold_at + 1:-1]
        if values.slotwise(after):
            self._write(ops[-1], rows, after)
            return
        if values.column_vector:         # the ops after the fold op by op, on the columns' slots
            values.column_vector, values.slots["cols"] = 0, self.cols
            results = [self._slots_of(leaf) for leaf in results]
            for name, type_ in zip(a.fold.results, list(types)):
                values.env[name] = rebuild(type_, results)
        values.run(after)
        self._write(ops[-1], rows)

    def _slots_of(self, leaf: PerThread) -> PerThread:
        """A leaf with its columns' vectors as their slots' values."""
        if leaf.kind != "cols" or not isinstance(leaf.values[0][0].type, ir.VectorType):
            return leaf
        b = self.em.b
        return PerThread(leaf.kind, leaf.dtype, [[b.extract_element(row[0], _i32(m)) for m in range(self.cols)]
                                                 for row in leaf.values])

    def _joined(self, *incoming) -> tuple:
        """(summary, combines, started) where a tile's and a group's trip meet."""
        joined_values = joined(self.em.b, [([*summary, combines, started], block)
                                           for summary, combines, started, block in incoming])
        return joined_values[:-2], joined_values[-2], joined_values[-1]

    # ---- the key groups: group 0 takes the others' states in as the last trips of its loop -----
    # Each key group folds its run of the block's tiles; the other groups then leave their states
    # in shared memory (`_give_state`), and group 0's loop runs G - 1 trips more whose summaries
    # are those states, in key order: the combine's code is emitted once, in the loop's body.
    def _tiles_end(self, start: ir.Value, stop: ir.Value) -> ir.Value:
        """Where the key tile trips of [start, stop) end: the first trip past them."""
        b = self.em.b
        bn = self.plan.block[1]
        tiles = b.sdiv(b.add(b.sub(stop, start), _i64(bn - 1)), _i64(bn))
        return b.add(start, b.mul(b.select(b.icmp_signed(">", tiles, _i64(0)), tiles, _i64(0)), _i64(bn)))

    def _trips_end(self, tiles_end: ir.Value) -> ir.Value:
        """The loop's end: group 0 takes the other groups' states in G - 1 trips past its tiles."""
        b = self.em.b
        if self.plan.groups == 1:
            return tiles_end
        merges = b.select(b.icmp_unsigned("==", self.key_group, _i32(0)), _i64(self.plan.groups - 1), _i64(0))
        return b.add(tiles_end, b.mul(merges, _i64(self.plan.block[1])))

    def _exchange(self, group: ir.Value, types: list) -> list:
        """Where this thread's state values of group `group` (i32, counted from group 1) lie in
        shared memory, one a type of `types`: a scalar word i (of the state's words, a
        vector taking one a lane) is (base, offset): the shared address and an immediate offset
        of the access (as LLVM values, the many `base + constant` sums sent its straight-line
        strength reduction through every pair of them: a third of flash on tensor cores' code
        generation); a vector of C lanes (a multiple of four) is a pointer to the thread's
        first 16-byte chunk of it in the group's C words' rows: chunk k lies k · threads chunks
        on, the group's threads' chunks side by side (one bank conflict-free 16-byte access a
        chunk; with each thread's C lanes contiguous, a warp's accesses were 8-way conflicts)."""
        b = self.em.b
        threads = self.plan.group_threads
        widths = [type_.count if isinstance(type_, ir.VectorType) else 1 for type_ in types]
        tid = b.trunc(self.group_tid, I32)
        slot = b.add(b.mul(group, _i32(sum(widths) * threads)), tid)
        base = b.add(self.shared, b.mul(slot, _i32(WORD)))
        places, word = [], 0
        for type_, width in zip(types, widths):
            if width == 1:
                places.append((base, word * threads * WORD))
            else:
                start = b.add(b.mul(group, _i32(sum(widths) * threads * WORD)),
                              b.add(b.mul(tid, _i32(4 * CHUNK_LANES)), _i32(word * threads * WORD)))
                chunk = ir.VectorType(type_.element, CHUNK_LANES)
                places.append(b.bitcast(b.gep(self.shared_pointer, [start]), chunk.as_pointer(3)))
            word += width
        return places

    def _store_word(self, place, value: ir.Value) -> None:
        """`value` to its exchange place (`_exchange`)."""
        b = self.em.b
        if isinstance(value.type, ir.VectorType):
            threads = self.plan.group_threads
            for k in range(value.type.count // CHUNK_LANES):
                lanes = ir.Constant(ir.VectorType(I32, CHUNK_LANES), list(range(CHUNK_LANES * k, CHUNK_LANES * (k + 1))))
                b.store(b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined), lanes),
                        b.gep(place, [_i32(k * threads)]), align=16)
            return
        base, offset = place
        kind, constraint, register = _shared_access(value.type)
        stored = b.zext(value, register) if value.type != register else value
        asm(b, f"st.shared.{kind} [$0+{offset}], $1;", f"r,{constraint},~{{memory}}", ir.VoidType(), [base, stored])

    def _give_state(self, state: list, started: ir.Value) -> None:
        """Groups 1.. leave their states (and whether they folded a tile) in shared memory, each
        thread at the place of the same rows and columns in its group; every group's buffers
        are free first (the words overlay them), and no group stages again before group 0
        took them in."""
        em = self.em
        b = em.b
        if self.plan.groups == 1:
            return
        with b.if_then(b.icmp_unsigned("!=", self.key_group, _i32(0))):
            cp_async_wait(b, 0)          # a group's copies in flight land before its buffers are reused
            barrier(em)                  # every group is done with its buffers (group 0: in `_take_group`)
            words = [*state, started]
            for place, value in zip(self._exchange(b.sub(self.key_group, _i32(1)), [w.type for w in words]), words):
                self._store_word(place, value)
            barrier(em)                  # the states are there (group 0: in `_take_group`)
        barrier(em)                      # the exchange is read before any group stages again

    def _shared_load(self, place, type_: ir.Type) -> ir.Value:
        """A value of `type_` from its exchange place, as `_give_state` stored it."""
        b = self.em.b
        if isinstance(type_, ir.VectorType):
            threads = self.plan.group_threads
            chunks = [b.load(b.gep(place, [_i32(k * threads)]), align=16) for k in range(type_.count // CHUNK_LANES)]
            while len(chunks) > 1:       # concatenated pairwise
                width = chunks[0].type.count
                both = ir.Constant(ir.VectorType(I32, 2 * width), list(range(2 * width)))
                chunks = [b.shuffle_vector(chunks[i], chunks[i + 1], both) for i in range(0, len(chunks), 2)]
            return chunks[0]
        base, offset = place
        kind, constraint, register = _shared_access(type_)
        loaded = asm(b, f"ld.shared.{kind} $0, [$1+{offset}];", f"={constraint},r,~{{memory}}", register, [base])
        return b.trunc(loaded, type_) if type_ != register else loaded

    def _take_group(self, j0: ir.Value, tiles_end: ir.Value, state: list, started: ir.Value) -> tuple:
        """Group 0's trip past its tiles: group 1 + (j0 - tiles_end) / BN's state is the summary
        (whether it combines with the state, started); a group that folded no tile leaves the
        state as it is."""
        em = self.em
        b = em.b
        with b.if_then(b.icmp_signed("==", j0, tiles_end)):
            cp_async_wait(b, 0)
            barrier(em)                  # the other groups are done with their buffers
            barrier(em)                  # and have left their states
        types = [value.type for value in [*state, started]]
        places = self._exchange(b.trunc(b.sdiv(b.sub(j0, tiles_end), _i64(self.plan.block[1])), I32), types)
        *other, other_has = [self._shared_load(place, type_) for place, type_ in zip(places, types)]
        summary = [b.select(other_has, theirs, mine) for theirs, mine in zip(other, state)]
        return summary, b.and_(started, other_has), b.or_(started, other_has)

    def _key_range(self, keys_end: ir.Value) -> tuple:
        """The key group's run of the block's tiles, [start, stop): tiles [g n / G, (g + 1) n / G)
        of n (also `self.keys_end`)."""
        b = self.em.b
        bn = self.plan.block[1]
        if self.plan.groups == 1:
            self.keys_end = keys_end
            return _i64(0), keys_end
        tiles = b.sdiv(b.add(keys_end, _i64(bn - 1)), _i64(bn))
        group = b.zext(self.key_group, I64)

        def boundary(g):
            return b.mul(b.sdiv(b.mul(tiles, g), _i64(self.plan.groups)), _i64(bn))
        start, stop = boundary(group), boundary(b.add(group, _i64(1)))
        self.keys_end = b.select(b.icmp_signed("<", stop, keys_end), stop, keys_end)
        return start, self.keys_end

    def _keys_end(self, i0: ir.Value, c0: ir.Value) -> ir.Value:
        """Where the fold's key tiles end for rows [i0, i0 + BM): T, or, where the plan skips
        dead tiles, the first tile past the block's last row when V's rows from there on
        (this pass's columns) are all finite — the CTA decides together (`bar.red.or`)."""
        em = self.em
        b = em.b
        bm, bn, _, _ = self.plan.block
        if not self.plan.skip_dead:
            return self.rows_extent
        past = b.add(i0, _i64(bm))
        live_end = b.select(b.icmp_signed("<", past, self.rows_extent), past, self.rows_extent)
        skip_start = b.mul(b.sdiv(b.add(live_end, _i64(bn - 1)), _i64(bn)), _i64(bn))
        vote = em.declare("llvm.nvvm.barrier0.or", I32, [I32])
        seen = self._values_not_finite(skip_start, c0)
        any_not_finite = b.icmp_unsigned("!=", b.call(vote, [b.zext(seen, I32)]), _i32(0))
        return b.select(any_not_finite, self.rows_extent, skip_start)

    def _values_not_finite(self, first_row: ir.Value, c0: ir.Value) -> ir.Value:
        """Whether this thread's share of V's rows from `first_row` on (this pass's columns)
        holds an inf or NaN (i1)."""
        em = self.em
        b = em.b
        db = self.plan.block[2]
        seen = em.entry_alloca(I1)
        b.store(ir.Constant(I1, 0), seen)
        count = b.mul(b.sub(self.rows_extent, first_row), _i64(db))

        def element(linear):
            value = self._element(self.v, b.add(first_row, b.udiv(linear, _i64(db))),
                                  b.add(c0, b.urem(linear, _i64(db))))
            finite = b.fcmp_ordered("<", em.call_intrinsic("fabs", value), ir.Constant(F32, float("inf")))
            b.store(b.or_(b.load(seen), b.not_(finite)), seen)
        em.loop(opaque(b, self.tid), count, element, _i64(self.plan.threads), name="vcheck")
        return b.load(seen)

    def _leaf_types(self, type_) -> list:
        """(dtype, kind, slots) of each leaf of a fold result: scalars and [D] vectors."""
        if isinstance(type_, RecordType):
            return [leaf for f in type_.fields for leaf in self._leaf_types(f.type)]
        return [(type_.dtype, "rows", 1)] if not type_.shape else [(type_.dtype, "cols", self.values.slots["cols"])]

    def _summarize(self, fold, prologue: list) -> list:
        """The ops between the scores and the fold (`prologue`), then the summarizer on the
        current tile: len, the keys' positions, the tile's scores."""
        b = self.em.b
        values = self.values
        lane_key, distances = self.key_slots()
        first = b.add(self.j0, lane_key)
        keys = [b.add(first, _i64(distance)) if distance else first for distance in distances]
        values.key_exists = [b.icmp_signed("<", key, self.rows_extent) for key in keys]
        values.run(prologue)
        length, positions, scores, tile = (arg.name for arg in fold.regions[0].args)
        values.env[length] = self._tile_length()
        values.env[positions] = PerThread("keys", "index", [list(keys) for _ in range(self.rows)])
        values.env[scores] = values.env[fold.operands[0]]
        values.env[tile] = "values"
        yielded = values.run(fold.regions[0].ops)
        return [leaf for value, t in zip(yielded, fold.result_types) for leaf in record_leaves(value, t)]

    def _tile_length(self) -> PerThread:
        """The summarizer's `len`: the current tile's keys inside the axis."""
        b = self.em.b
        bn = self.plan.block[1]
        left = b.sub(self.rows_extent, self.j0)
        return self.values.uniform("index", b.select(b.icmp_signed("<", left, _i64(bn)), left, _i64(bn)))

    def _combine(self, fold, previous: list, summary: list) -> list:
        values = self.values
        combine = fold.regions[1]
        count = len(fold.results)
        types = fold.result_types
        left, right = list(previous), list(summary)
        for arg, type_ in zip(combine.args[:count], types):
            values.env[arg.name] = rebuild(type_, left)
        for arg, type_ in zip(combine.args[count:], types):
            values.env[arg.name] = rebuild(type_, right)
        yielded = values.run(combine.ops)
        return [leaf for value, t in zip(yielded, types) for leaf in record_leaves(value, t)]

    # ---- contractions ------------------------------------------------------------------------
    def _contract(self, op, env) -> PerThread:
        if op.name == "matvec":
            return self._scores()
        return self._weighted_values(env[op.operands[0]])

    def _scores(self) -> PerThread:
        """S[r][n] = sum_d q[row r, d] · k[key n, d]: Q and K chunks of DK columns staged
        (zero past the view), then fma in d order."""
        b = self.em.b
        bm, bn, _, _ = self.plan.block

        def chunk(d0, acc):
            self._group_barrier()
            self._stage(self.q, self.q_shared, self.i0, d0, bm, DK, DK + PAD)
            self._stage(self.k, self.k_shared, self.j0, d0, bn, DK, DK + PAD)
            self._group_barrier()
            def columns(dd, acc):                # four columns of each row and key at once
                qs = [self._vector(self.q_shared, self._at(b.add(self.ty, _i64(self.plan.row_groups * r)), DK + PAD, dd))
                      for r in range(self.rows)]
                ks = [self._vector(self.k_shared, self._at(b.add(self.tx, _i64(ROW_LANES * n)), DK + PAD, dd))
                      for n in range(self.keys)]
                for step in range(VECTOR):
                    acc = self._rank_one(acc, [q[step] for q in qs], [k[step] for k in ks])
                return acc
            return self._steps(DK, acc, columns, "dstep")
        return PerThread("keys", "f32", self._accumulated(_i64(0), self.depth, _i64(DK), self.keys, chunk, "dchunk"))

    def _weighted_values(self, weights: PerThread) -> PerThread:
        """sum_j w[r][j] · v[j, column]: P (0 for keys past the axis) through shared memory,
        V chunks of VK keys, fma in key order."""
        b = self.em.b
        _, bn, db, _ = self.plan.block
        self._group_barrier()         # the previous tile's readers of P are done
        for r in range(self.rows):
            row = b.add(self.ty, _i64(self.plan.row_groups * r))
            for n in range(self.keys):
                weight = b.select(self.values.key_exists[n], weights.values[r][n], ir.Constant(F32, 0.0))
                b.store(weight, b.gep(self.p_shared, [self._at(row, bn + PAD, b.add(self.tx, _i64(ROW_LANES * n)))]))

        def chunk(jv, acc):
            self._group_barrier()
            self._stage(self.v, self.v_shared, b.add(self.j0, jv), self.c0, VK, db, db)
            self._group_barrier()
            def keys(kk, acc):                   # four keys' weights of each row at once
                ps = [self._vector(self.p_shared, self._at(b.add(self.ty, _i64(self.plan.row_groups * r)), bn + PAD,
                                                           b.add(jv, kk))) for r in range(self.rows)]
                for step in range(VECTOR):
                    acc = self._rank_one(acc, [p[step] for p in ps], self._value_row(b.add(kk, _i64(step))))
                return acc
            return self._steps(VK, acc, keys, "kstep")
        return PerThread("cols", "f32", self._accumulated(_i64(0), _i64(bn), _i64(VK), self.cols, chunk, "vchunk"))

    def _steps(self, count: int, acc: list, step, name: str) -> list:
        """acc through `step(i, acc) -> acc` for i = 0, 4, .., count - 4: a loop whose trips
        read shared memory at i (ptxas unrolls it), or unrolled here (the plan's `rolled`)."""
        if not self.plan.rolled:
            for index in range(0, count, VECTOR):
                acc = step(_i64(index), acc)
            return acc
        slots = len(acc[0])

        def trip(index, flat):
            stepped = step(index, [flat[r * slots:(r + 1) * slots] for r in range(self.rows)])
            return [value for row in stepped for value in row]
        final = self.em.loop(_i64(0), _i64(count), trip, _i64(VECTOR), name, carried=[v for row in acc for v in row])
        return [final[r * slots:(r + 1) * slots] for r in range(self.rows)]

    def _accumulated(self, start, stop, step, slots: int, chunk, name: str) -> list:
        """f32 accumulators ([row][slot], `slots` a row, from 0) through a loop whose trips
        `chunk(i, acc) -> acc` add to them."""
        def trip(index, flat):
            acc = chunk(index, [flat[r * slots:(r + 1) * slots] for r in range(self.rows)])
            return [value for row in acc for value in row]
        final = self.em.loop(start, stop, trip, step, name, carried=[ir.Constant(F32, 0.0)] * (self.rows * slots))
        return [final[r * slots:(r + 1) * slots] for r in range(self.rows)]

    def _rank_one(self, acc: list, lefts: list, rights: list) -> list:
        """acc[r][n] + lefts[r] · rights[n] (one `fma` each): one step of a contraction."""
        em = self.em
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])
        return [[em.b.call(fma, [left, right, value]) for right, value in zip(rights, row)]
                for left, row in zip(lefts, acc)]

    def column(self, m: int) -> ir.Value:
        """The thread's column slot m within the block: four consecutive columns a lane
        where the slots come in fours (one vector load of V each), else tx + 16m."""
        if self.cols % VECTOR:
            return self.em.b.add(self.tx, _i64(ROW_LANES * m))
        group, within = divmod(m, VECTOR)
        return self.em.b.add(self.em.b.mul(self.tx, _i64(VECTOR)), _i64(ROW_LANES * VECTOR * group + within))

    def _value_row(self, kk: ir.Value) -> list:
        """The thread's columns of staged V row kk."""
        db = self.plan.columns
        if self.cols % VECTOR:
            b = self.em.b
            return [b.load(b.gep(self.v_shared, [self._at(kk, db, self.column(m))])) for m in range(self.cols)]
        return [value for group in range(0, self.cols, VECTOR)
                for value in self._vector(self.v_shared, self._at(kk, db, self.column(group)))]

    def _vector(self, shared, index: ir.Value) -> list:
        """Four f32 of shared memory from `index` (a multiple of 4): one ld.shared.v4."""
        b = self.em.b
        vector = ir.VectorType(F32, VECTOR)
        pointer = b.bitcast(b.gep(shared, [index]), vector.as_pointer(shared.type.addrspace))
        loaded = b.load(pointer, align=16)
        return [b.extract_element(loaded, _i32(i)) for i in range(VECTOR)]

    def _at(self, row, pitch: int, column) -> ir.Value:
        """Element (row, column) of a shared array of rows of `pitch` elements."""
        b = self.em.b
        column = column if isinstance(column, ir.Value) else _i64(column)
        return b.add(b.mul(row, _i64(pitch)), column)

    def _stage(self, view, shared, first_row, first_column, rows: int, columns: int, pitch: int) -> None:
        """view[first_row + i, first_column + j] (0 outside the view) into shared[i · pitch + j]:
        16-byte vectors where the view's rows allow them (a uniform branch), else elements."""
        b = self.em.b

        def elements():
            threads = self.plan.group_threads
            for e in range(-(-rows * columns // threads)):
                linear = b.add(opaque(b, self.group_tid), _i64(e * threads))
                i, j = b.udiv(linear, _i64(columns)), b.urem(linear, _i64(columns))
                with b.if_then(b.icmp_signed("<", linear, _i64(rows * columns))):
                    value = self._element(view, b.add(first_row, i), b.add(first_column, j))
                    b.store(value, b.gep(shared, [self._at(i, pitch, j)]))
        self._by_vectors(view, lambda: self._stage_vectors(view, shared, first_row, first_column, rows, columns, pitch),
                         elements)

    def _stage_vectors(self, view, shared, first_row, first_column, rows: int, columns: int, pitch: int) -> None:
        """Each thread its vectors of four columns: one predicated `ld.global.v4` (zeros past
        the view: D is a multiple of four here, so a vector is wholly in or out) and one
        `st.shared.v4`."""
        b = self.em.b
        count = rows * columns // VECTOR
        vector = ir.VectorType(F32, VECTOR)
        threads = self.plan.group_threads
        for e in range(-(-count // threads)):
            linear = b.add(opaque(b, self.group_tid), _i64(e * threads))
            i, j = b.udiv(linear, _i64(columns // VECTOR)), b.mul(b.urem(linear, _i64(columns // VECTOR)), _i64(VECTOR))
            row, column = b.add(first_row, i), b.add(first_column, j)
            inside = b.and_(b.icmp_signed("<", row, view.shape[0]), b.icmp_signed("<", column, view.shape[1]))
            with b.if_then(b.icmp_signed("<", linear, _i64(count))):
                offset = b.add(view.offset, b.add(b.mul(row, view.strides[0]), column))
                words = global_vector(b, b.gep(view.ptr, [offset]), VECTOR, inside)
                packed = ir.Constant(vector, None)
                for lane, word in enumerate(words):
                    packed = b.insert_element(packed, b.bitcast(word, F32), _i32(lane))
                target = b.bitcast(b.gep(shared, [self._at(i, pitch, j)]), vector.as_pointer(shared.type.addrspace))
                b.store(packed, target, align=16)

    def _vectors_fit(self, view) -> ir.Value:
        """Rows of `view` load as 16-byte vectors: unit column stride, the start and the row
        stride 16-byte aligned, D a multiple of a vector's elements (uniform, checked once)."""
        b = self.em.b
        element = self.element_bytes
        start = b.add(b.ptrtoint(view.ptr, I64), b.mul(view.offset, _i64(element)))
        fits = b.and_(b.icmp_signed("==", view.strides[1], _i64(1)),
                      b.icmp_unsigned("==", b.and_(start, _i64(15)), _i64(0)))
        fits = b.and_(fits, b.icmp_signed("==", b.srem(view.strides[0], _i64(16 // element)), _i64(0)))
        return b.and_(fits, b.icmp_signed("==", b.srem(view.shape[1], _i64(16 // element)), _i64(0)))

    def _vector_checks(self) -> dict:
        """`_vectors_fit` of Q, K and V where `_vectors_known` does not decide it (name -> i1)."""
        return {view.name: self._vectors_fit(view) for view in (self.q, self.k, self.v)
                if self._vectors_known(view) is None}

    def _vectors_known(self, view) -> bool | None:
        """`_vectors_fit` decided at compile time: for a view the specialization proves 16-byte
        aligned and dense (`aligned16`, `contiguous`: constant strides) with D fixed; else None."""
        if not view.aligned16 or not all(isinstance(value, ir.Constant) for value in (*view.strides, view.shape[1])):
            return None
        per_vector = 16 // self.element_bytes
        stride, unit, depth = (value.constant for value in (view.strides[0], view.strides[1], view.shape[1]))
        return unit == 1 and stride % per_vector == 0 and depth % per_vector == 0

    def _by_vectors(self, view, vectors: Callable[[], None], elements: Callable[[], None]) -> None:
        """`vectors()` where `view`'s rows load as 16-byte vectors, else `elements()`: a uniform
        branch, or only the path the launch takes where `_vectors_known` decides it (the
        other was a third of the CUDA-core flash's staging code)."""
        known = self._vectors_known(view)
        if known is not None:
            (vectors if known else elements)()
            return
        with self.em.b.if_else(self.vectors[view.name]) as (vector_path, element_path):
            with vector_path:
                vectors()
            with element_path:
                elements()

    def _element(self, view, row, column) -> ir.Value:
        """view[row, column], or 0 outside [0, T) x [0, D)."""
        b = self.em.b
        inside = b.and_(b.icmp_signed("<", row, view.shape[0]), b.icmp_signed("<", column, view.shape[1]))
        before = b.block
        with b.if_then(inside):
            offset = b.add(view.offset, b.add(b.mul(row, view.strides[0]), b.mul(column, view.strides[1])))
            loaded = b.load(b.gep(view.ptr, [offset]))
            loaded_block = b.block
        merged = b.phi(F32)
        merged.add_incoming(ir.Constant(F32, 0.0), before)
        merged.add_incoming(loaded, loaded_block)
        return merged

    def _write(self, write, rows: list, after: list | None = None) -> None:
        """Group 0 writes its rows' columns (the other groups' states are in its own); `after`:
        the ops between the fold and the write, to run on each column slot in the write's
        loop (`FoldValues.slotwise`)."""
        b = self.em.b
        if self.plan.groups == 1:
            self._write_rows(write, rows, after)
            return
        with b.if_then(b.icmp_unsigned("==", self.key_group, _i32(0))):
            self._write_rows(write, rows, after)

    def _write_rows(self, write, rows: list, after: list | None) -> None:
        """The thread's rows' columns, in one rolled loop over its column slots: the values a
        slot's write needs go into a thread-local array first (the slot a loop counter
        indexes), so that the encoding into the view's dtype, the bounds checks and the ops
        after the fold (`after`) are emitted once, not once a value (64 times on the tensor
        cores: a third of the kernel's code)."""
        em = self.em
        b = em.b
        after = after or []
        names = FoldValues.inputs([*after, write])
        kept = {id(leaf): self._kept(leaf) for leaf in self.values.varying(names)}
        o = self.o

        def read(leaf: PerThread, m: ir.Value) -> PerThread:
            """Slot m of a varying leaf, from its array."""
            array = kept[id(leaf)]
            return PerThread(leaf.kind, leaf.dtype, [[b.load(b.gep(array, [_i64(0), b.add(m, _i64(r * self.cols))],
                                                                   inbounds=True))] for r in range(self.rows)])

        def slot(m):
            column = b.add(self.c0, self.column_at(m))
            value = self.values.at_slot(after, names, lambda leaf: read(leaf, m))[write.operands[1]]
            for r, row in enumerate(rows):
                inside = b.and_(b.icmp_signed("<", row, o.shape[0]), b.icmp_signed("<", column, o.shape[1]))
                with b.if_then(inside):
                    offset = b.add(o.offset, b.add(b.mul(row, o.strides[0]), b.mul(column, o.strides[1])))
                    b.store(to_storage(em, value.values[r][0], value.dtype), b.gep(o.ptr, [offset]))
        em.loop(_i64(0), _i64(self.cols), slot, name="write")

    def _kept(self, value: PerThread) -> ir.Value:
        """A thread-local array of `value`'s slots, row by row."""
        em = self.em
        b = em.b
        vector = value.values[0][0].type if isinstance(value.values[0][0].type, ir.VectorType) else None
        array = em.entry_alloca(ir.ArrayType(vector.element if vector else value.values[0][0].type, self.rows * self.cols))
        for r, row_values in enumerate(value.values):
            if vector:                   # the row's columns at once
                first = b.gep(array, [_i32(0), _i32(r * self.cols)], inbounds=True)
                b.store(row_values[0], b.bitcast(first, vector.as_pointer()), align=4)
                continue
            for m, element in enumerate(row_values):
                b.store(element, b.gep(array, [_i32(0), _i32(r * self.cols + m)], inbounds=True))
        return array

    def column_at(self, m: ir.Value) -> ir.Value:
        """`column` of a slot the code computes (i64)."""
        b = self.em.b
        if self.cols % VECTOR:
            return b.add(self.tx, b.mul(m, _i64(ROW_LANES)))
        group, within = b.udiv(m, _i64(VECTOR)), b.urem(m, _i64(VECTOR))
        return b.add(b.mul(self.tx, _i64(VECTOR)), b.add(b.mul(group, _i64(ROW_LANES * VECTOR)), within))
