"""The flash mapping on tensor cores (docs/gpu.md, "Flash attention"): the region_fold attention
of `fold_attention.py` with f16 or bf16 Q, K and V runs QKᵀ and PV on
`mma.sync.aligned.m16n8k16` (f16/bf16 operands, f32 accumulators, the IR's `acc = f32`).

A CTA takes a block of BM = 16 · W query rows (W row warps, warp w rows 16w .. 16w + 15) with
G key groups of W warps: key tiles of BN = 64 keys are the fold's slices (§6), as in the
CUDA-core flash mapping whose pass, fold, combine, causal skipping and writes this emitter
inherits (`flash_attention.py`), and group g folds the g-th of G contiguous runs of the
block's tiles, so the heaviest (last) row blocks' keys are split G ways instead of running
alone on one SM. The groups' states meet in shared memory and group 0 combines them in key
order (the fold's combine: reassociation, §6; a group without tiles is left out) before
the ops after the fold and the write. Each group has its own Q, K and V buffers and named
barrier, so the groups run their tile loops independently.
The per-thread layout is the MMA accumulator's: lane l holds rows l/4 and l/4 + 8 of its
warp's 16 and, of every 8-wide fragment, the two keys (or D columns) 2(l%4), 2(l%4) + 1 — so
a row's keys are shared by the 4 lanes of a quad and the reductions end in a 2-step butterfly.

Q, K and V are staged by predicated 16-byte loads (elements where the rows do not allow
them) into shared memory in rows of 64 elements (128 bytes), 16-byte chunks swizzled by the
row (chunk ^ row % 8), so `ldmatrix` reads are conflict free: Q and K as A and B (`.x4`),
V as B through `ldmatrix.trans`. The scores' fragments are the summarizer's [len] vectors
in place; the weights enter PV as the A operand straight from those registers (FA2's
register reuse), in the operand type the IR casts them to (`cvt.rn.{f16,bf16}x2.f32` of
the cast's f32 source: the cast's own rounding, two at once); a weight of a key past the
axis is 0. A fixed D up to 128 keeps Q (padded to 64-column chunks) in shared memory for
the whole pass and stages K whole a tile; any other D runs passes of 128 output columns,
the scores from 64-column chunks of Q and K.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..layout.assign import Assignment
from ..layout.mma import Mma
from ..llvm.lowfloat import is_finite, to_register, to_storage
from ..llvm.types import F32, I1, I16, I32, I64
from .fold_attention import FoldAttention
from .fold_values import FoldValues, PerThread
from .flash_attention import DAG_COMBINE, INSTCOMBINE, FlashEmitter, KeyGroupPlan, slices_text
from .dead_slices import dead_slices_are_identity, identity_past_axis
from .lane_dots import global_vector
from .asm_block import AsmBlock
from .ptx_asm import asm, cp_async, cp_async_commit, cp_async_wait, mma_m16n8k16_text, opaque
from .tile_matmul import swizzled

ROW_WARPS = 2                        # W: BM = 16 W query rows (at T = 4096, 128 row blocks for 132 SMs)
GROUPS = 4                           # G: key groups (8 warps a CTA; 255 registers a thread fit once an SM)
BLOCK_KEYS = 64                      # BN
CHUNK = 64                           # elements of a staged row (128 bytes: the swizzle's row)
ROW_BYTES = 2 * CHUNK
VECTOR = 8                           # 16-bit elements of a 16-byte load
MAX_COLUMNS = 128                    # DB: output columns a pass keeps in registers
QUAD = 4                             # lanes sharing a row's keys
RESIDENT = 1
# LLVM's code generation level on the tensor cores: -O0 since session 10. Session 9 measured -O0
# 16 % slower (f16 0.0889 against 0.0764 ms; bench/results/flash-plan-ab-20261202-s9-h200/); with
# each tile's K steps one inline asm (`step_asm`) and the columns as vectors, LLVM's -O2 adds little
# that ptxas does not: f16 0.0779-0.0785 ms against 0.0767-0.0768 at -O2 (+1.8 %), bf16
# 0.0773-0.0776 against 0.0755-0.0757 (+2.5 %), the same output bits
# (bench/results/flash-O0-ab-20261202-s10-h200/, interleaved, each compiled apart), for about a
# fifth less time to PTX (f16 on the dev VM, medians of 5: 75-89 ms -> 58-67): issue #13's 100 ms
# bar, which these two samples alone still missed at -O2 on slow moments of the H200 host.
CODEGEN = 0
# QKᵀ's and PV's K steps (all of a tile's) as one inline asm each (`mma_steps`): the unrolled
# instructions ptxas made of the loops below, with no loop-carried accumulators in LLVM's IR.
STEP_ASM = True
# Else QKᵀ's and PV's K steps as loops in the PTX: each step is the same code at other shared
# addresses (and, in PV, the next four weight words, which rotate through the loop's
# registers), so LLVM and our lowering see one step instead of 8 and 4 — a third of the
# kernel's instructions. ptxas unrolls the loops itself (constant trip counts).
ROLLED = True
# A row's columns of the fold's [D] vectors (the state's and the summary's accumulators) as one
# LLVM vector of its C slots, so the combine, the state's loop, the key groups' exchange and the
# write's staging are a few vector instructions, not one instruction a slot (LLVM's code
# generator splits them into the same scalar instructions).
VECTOR_COLUMNS = True
# f32 libdevice functions (the summarizer's and the combine's expf: 36 a tile) as inline PTX
# templates of LLVM's own code for them (`ptx_math.py`): one LLVM instruction a call instead of
# twelve, the same PTX instructions for ptxas.
MATH_ASM = True


@dataclass(frozen=True)
class FlashMmaPlan(KeyGroupPlan):
    attention: FoldAttention
    columns: int                     # DB: the output columns of a pass (a multiple of 64)
    resident_depth: int              # D padded to 64 where Q stays staged a pass (D fixed, <= 128); else 0
    skip_dead: bool = False
    identity_past_axis: frozenset = frozenset()   # reductions combining their operand unmasked (dead_slices.py)
    row_warps: int = ROW_WARPS
    groups: int = GROUPS
    resident: int = RESIDENT
    rolled: bool = ROLLED            # the K steps of QKᵀ and PV as loops (ptxas unrolls them), not unrolled here
    step_asm: bool = STEP_ASM        # a tile's K steps of QKᵀ and of PV as one inline asm each (before `rolled`)
    vector_columns: bool = VECTOR_COLUMNS   # a row's [D] columns as one LLVM vector
    math_asm: bool = MATH_ASM        # f32 libdevice functions as inline PTX templates (ptx_math.py)
    codegen: int = CODEGEN           # LLVM's code generation level
    instcombine: bool = INSTCOMBINE  # InstCombine in the LLVM pipeline
    dag_combine: bool = DAG_COMBINE  # the SelectionDAG combiner in code generation

    block_keys: int = BLOCK_KEYS     # BN: the keys of a tile (a slice of the fold)

    rows = 2                         # query rows a thread: l/4, l/4 + 8

    @property
    def keys(self) -> int:
        """Keys a thread of a tile."""
        return self.block_keys // QUAD

    @property
    def group_threads(self) -> int:
        return 32 * self.row_warps

    @property
    def group_bytes(self) -> int:
        """A group's Q, K and V buffers."""
        bm, bn, db, dk = self.block
        return 2 * (bm * dk + bn * dk + bn * db)

    @property
    def state_columns(self) -> int:
        return self.columns // QUAD

    @property
    def qk_chunk(self) -> int:
        """D columns of Q and K staged at once."""
        return self.resident_depth or CHUNK

    @property
    def block(self) -> tuple:
        return (16 * self.row_warps, self.block_keys, self.columns, self.qk_chunk)

    def emit(self, em) -> None:
        FlashMmaEmitter(em, self).emit()

    def to_json(self) -> dict:
        bm, bn, db, dk = self.block
        operand = self.attention.operand_dtype
        return {"block": {"query_rows": bm, "keys": bn, "columns": db, "qk_chunk": dk, "v_chunk": bn},
                "per_thread": {"rows": self.rows, "keys": self.keys, "columns": db // QUAD},
                "resident": self.resident, "row_warps": self.row_warps, "key_groups": self.groups,
                "shared_bytes": self.shared_bytes, "k_steps": "one asm" if self.step_asm else "rolled" if self.rolled else "unrolled",
                "column_vectors": "an LLVM vector a row" if self.vector_columns else "a value a slot",
                "math": "inline PTX of LLVM's code for libdevice" if self.math_asm else "libdevice inlined",
                "codegen": f"-O{self.codegen}", "instcombine": self.instcombine, "dag_combine": self.dag_combine,
                "unmasked_reductions": sorted(self.identity_past_axis),
                "instruction": f"mma.sync.aligned.m16n8k16.row.col.f32.{operand}.{operand}.f32 (ldmatrix, "
                               "128-byte swizzled shared rows)",
                "order": "row blocks heaviest first",
                "slices": slices_text(self.groups, self.skip_dead),
                "state": "registers (the MMA accumulator layout)",
                "staging": "Q " + ("once a pass" if self.resident_depth else "and K chunks a tile")
                + ", K and V tiles a key group in dynamic shared memory; P from the scores' registers"}

    def layouts(self, known: dict) -> Assignment:
        """The iteration's [T] and [D] vectors over (the block's query rows, keys or columns)
        in the m16n8 accumulator layout: warp w rows 16w.., lane l rows l/4, l/4 + 8."""
        result = Assignment()
        keys = Mma(2, (self.row_warps, 1), (16, 8), (1, self.block_keys // 8))
        cols = Mma(2, (self.row_warps, 1), (16, 8), (1, self.columns // 8))
        for name, kind in self.attention.kinds.items():
            if kind in ("keys", "cols"):
                result.values[name] = keys if kind == "keys" else cols
        return result


def plan_flash_mma(attention: FoldAttention, known: dict) -> FlashMmaPlan:
    depth = attention.depth if isinstance(attention.depth, int) else known.get(attention.depth)
    padded = -(-depth // CHUNK) * CHUNK if depth else 0
    resident = padded if padded and padded <= MAX_COLUMNS else 0
    coordinate = attention.parallel.regions[0].args[0].name
    return FlashMmaPlan(attention, resident or MAX_COLUMNS, resident,
                        dead_slices_are_identity(attention.prologue, attention.fold, coordinate),
                        identity_past_axis=identity_past_axis(attention.prologue, attention.fold, coordinate))


def _weights_cast_from_f32(summarizer) -> set:
    """The summarizer's weights for PV when they are a cast of f32 values that nothing else
    reads: `_weight_words` converts the cast's f32 source pairwise itself, so the cast's own
    results are never lowered (32 conversions a tile that only DCE removed)."""
    types = {name: type_ for op in summarizer.ops for name, type_ in zip(op.results, op.result_types)}
    types.update((arg.name, arg.type) for arg in summarizer.args)
    defs = {name: op for op in summarizer.ops for name in op.results}
    unlowered = set()
    for op in summarizer.ops:
        if op.name != "vecmat":
            continue
        weights = op.operands[0]
        cast = defs.get(weights)
        readers = [user for user in summarizer.ops if weights in user.operands]
        if cast is not None and cast.name == "cast" and readers == [op] \
                and getattr(types.get(cast.operands[0]), "dtype", None) == "f32":
            unlowered.add(weights)
    return unlowered


def mma_steps(b: ir.IRBuilder, operand: str, steps: list, acc: list) -> list:
    """acc[j] += A_s · B_sj (`mma.sync.m16n8k16`, f32 accumulators) for every fragment j of each
    K step s of `steps`, in order, as one inline asm (`asm_block.AsmBlock`) with the steps'
    `ldmatrix.x4` loads. A step is (A, loads): A the A fragment (four b32 values) or a load of
    it, `loads` [(shared address, immediate offset, transposed)], load p giving fragments 2p and
    2p + 1 their B words (its first and last two). The accumulators are updated in place (tied
    registers), or, where they are all 0.0, the first step's MMAs add to the asm's zero register.
    One asm, not a load and two MMAs a pair whose result structs LLVM takes apart, nor a loop
    whose trips carry the accumulators: ptxas gets the instructions it unrolled the loops into."""
    values = [value for fragment in acc for value in fragment]
    zero = all(isinstance(value, ir.Constant) and value.constant == 0.0 for value in values)
    block = AsmBlock(b, [] if zero else values, [F32] * len(values) if zero else [])
    mma = mma_m16n8k16_text(operand, "f32")
    for s, (a, loads) in enumerate(steps):
        fetched = [block.ldmatrix_x4(address, transposed, offset)
                   for address, offset, transposed in ([] if isinstance(a, list) else [a]) + list(loads)]
        a_words = [block.operand(value) for value in a] if isinstance(a, list) else fetched.pop(0)
        for j in range(len(acc)):
            d = ", ".join(block.result(4 * j + i) for i in range(4))
            c = ", ".join([block.zero()] * 4) if zero and s == 0 else d
            block.line(mma(d, [*a_words, *fetched[j // 2][2 * (j % 2):2 * (j % 2) + 2]], c))
    values = block.emit()
    return [values[4 * j:4 * j + 4] for j in range(len(acc))]


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


class FlashMmaEmitter(FlashEmitter):
    """FlashEmitter with the MMA layout: the thread coordinates, staging and contractions."""

    def __init__(self, em, plan: FlashMmaPlan):
        self.em, self.plan = em, plan
        a = plan.attention
        self.q, self.k, self.v, self.o = (em.env[name] for name in (a.q, a.k, a.v, a.o))
        self.rows_extent, self.depth = self.q.shape
        self.cols = plan.columns // QUAD
        self.rows, self.keys = plan.rows, plan.keys
        self.operand = a.operand_dtype
        self.element_bytes = 2

    def _setup(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, _, dk = plan.block
        self._thread_indices(*self._thread_coordinates())
        self.warp = b.trunc(b.udiv(self.group_tid, _i64(32)), I32)        # the row warp
        self.group = b.zext(b.udiv(self.lane, _i32(QUAD)), I64)
        self.quad = b.zext(b.urem(self.lane, _i32(QUAD)), I64)
        self._shared_memory()
        self.q_shared = b.add(self.shared, b.mul(self.key_group, _i32(plan.group_bytes)))
        self.k_shared = b.add(self.q_shared, _i32(2 * bm * dk))
        self.v_shared = b.add(self.k_shared, _i32(2 * bn * dk))
        self.values = FoldValues(em, self.rows, {"rows": 1, "keys": self.keys, "cols": 1 if plan.vector_columns else self.cols},
                                 plan.attention.depth, self._contract, row_lanes=QUAD)
        self.values.column_vector = self.cols if plan.vector_columns else 0
        self.values.lane = self.lane
        self.values.identity_past_axis = plan.identity_past_axis
        self.values.unlowered = _weights_cast_from_f32(self.plan.attention.fold.regions[0])
        self.vectors = self._vector_checks()
        self._fragment_addresses()

    def _fragment_addresses(self) -> None:
        """What a thread's `ldmatrix` addresses of a K step owe to its lane alone, computed
        once here, not in every trip of the K step loops: the row's start and the chunk's part
        of the swizzle (for Q and K, whose chunk is 2 kk + c: (2 kk + c) ^ phase =
        (2 kk mod 8) ^ (c ^ phase), their bits disjoint), and V's whole addresses at kk = 0
        (its rows 16 kk + r keep the phase of r). At -O0 no LLVM pass hoists these, and
        ptxas did not share them between the steps it unrolls (95 more LOP3 in the key loop)."""
        b = self.em.b
        lane = self.lane
        half = b.udiv(lane, _i32(16))
        a_row = b.add(b.mul(self.warp, _i32(16)), b.urem(lane, _i32(16)))
        b_row = b.add(b.urem(lane, _i32(8)), b.mul(_i32(8), half))
        self.q_lane = self._lane_part(self.q_shared, a_row, half)
        self.k_lane = self._lane_part(self.k_shared, b_row, b.urem(b.udiv(lane, _i32(8)), _i32(2)))
        v_row = b.add(b.urem(lane, _i32(8)), b.mul(_i32(8), b.urem(b.udiv(lane, _i32(8)), _i32(2))))
        pairs = min(CHUNK // VECTOR // 2, self.plan.columns // 16)
        self.v_lane = [self._address(self.v_shared, self.plan.block_keys, v_row, b.add(_i32(2 * pair), half))
                       for pair in range(pairs)]

    def _lane_part(self, base: ir.Value, row: ir.Value, chunk: ir.Value) -> tuple:
        """(the shared address of `row`, its first `chunk`'s swizzle bits) of 128-byte rows."""
        b = self.em.b
        return b.add(base, b.mul(row, _i32(ROW_BYTES))), b.xor(chunk, b.and_(row, _i32(CHUNK // VECTOR - 1)))

    def _stepped(self, lane_part: tuple, rows: int, kk: ir.Value) -> ir.Value:
        """The address of chunk 2 kk + c of the row `lane_part` holds (of `rows` rows a
        64-column block): `_address`'s, with the lane's part computed once."""
        b = self.em.b
        start, swizzle = lane_part
        block = b.mul(b.lshr(kk, _i32(2)), _i32(rows * ROW_BYTES))
        within = b.shl(b.xor(b.and_(b.shl(kk, _i32(1)), _i32(CHUNK // VECTOR - 1)), swizzle), _i32(4))
        return b.add(start, b.add(block, within))

    def query_rows(self, i0: ir.Value) -> list:
        b = self.em.b
        first = b.add(i0, b.add(b.zext(b.mul(self.warp, _i32(16)), I64), self.group))
        return [b.add(first, _i64(8 * r)) for r in range(self.rows)]

    def key_slots(self) -> tuple:
        """Key slot n = 2j + e: key 8j + 2(l%4) + e of the tile (register e of fragment j)."""
        return self.em.b.mul(self.quad, _i64(2)), [8 * (n // 2) + n % 2 for n in range(self.keys)]

    def column_at(self, m: ir.Value) -> ir.Value:
        """Slot m = 2j + e: column 8j + 2(l%4) + e."""
        b = self.em.b
        return b.add(b.mul(self.quad, _i64(2)), b.add(b.mul(b.udiv(m, _i64(2)), _i64(8)), b.urem(m, _i64(2))))

    def _key_range(self, keys_end: ir.Value) -> tuple:
        start, stop = super()._key_range(keys_end)
        if self.plan.resident_depth:
            # Q stays staged for the pass, and the first K tile is on its way: the group read
            # the previous pass's Q and K before its last V barrier, the exchange is over
            # (`_merged`); the first tile's K barrier orders them
            self._stage_tile(self.q, self.q_shared, self.i0, _i64(0), self.plan.block[0], self.plan.resident_depth)
            self._stage_tile(self.k, self.k_shared, start, _i64(0), self.plan.block_keys, self.plan.resident_depth)
        return start, stop

    # ---- contractions ----------------------------------------------------------------------
    def _scores(self) -> PerThread:
        """S = Q Kᵀ for the warp's 16 rows and the tile's keys: 8 m16n8 fragments, K steps of 16."""
        em = self.em
        b = em.b
        plan = self.plan
        fragments = self.plan.block_keys // 8
        if plan.resident_depth:
            self._arrived()                 # K (fetched during the previous tile's PV)
            # V's tile comes during the scores and the summarizer: every warp read the
            # previous one before the barrier above
            self._stage_tile(self.v, self.v_shared, self.j0, self.c0, self.plan.block_keys, plan.columns)
            acc = self._mma_steps([[ir.Constant(F32, 0.0)] * 4 for _ in range(fragments)], plan.resident_depth // 16)
        else:
            slots = [[em.entry_alloca(F32) for _ in range(4)] for _ in range(fragments)]
            for fragment in slots:
                for slot in fragment:
                    b.store(ir.Constant(F32, 0.0), slot)

            def chunk(d0):
                self._group_barrier()
                self._stage_tile(self.q, self.q_shared, self.i0, d0, self.plan.block[0], CHUNK)
                self._stage_tile(self.k, self.k_shared, self.j0, d0, self.plan.block_keys, CHUNK)
                self._arrived()
                summed = self._mma_steps([[b.load(s) for s in fragment] for fragment in slots], CHUNK // 16)
                for fragment, values in zip(slots, summed):
                    for slot, value in zip(fragment, values):
                        b.store(value, slot)
            em.loop(_i64(0), self.depth, chunk, _i64(CHUNK), name="dchunk")
            acc = [[b.load(s) for s in fragment] for fragment in slots]
        return PerThread("keys", "f32", [[acc[j][2 * r + e] for j in range(fragments) for e in range(2)]
                                         for r in range(self.rows)])

    def _mma_steps(self, acc: list, steps: int) -> list:
        """`steps` K steps of 16 of the staged Q and K chunks into the fragments `acc`."""
        if self.plan.step_asm:
            q_at, k_at = self._step_addresses(self.q_lane, self.plan.block[0]), self._step_addresses(self.k_lane, self.plan.block_keys)
            return mma_steps(self.em.b, self.operand, [
                ((*q_at(kk), False), [(k_at(kk)[0], k_at(kk)[1] + 16 * pair * ROW_BYTES, False)
                                      for pair in range(len(acc) // 2)]) for kk in range(steps)], acc)
        if self.plan.rolled:
            return self._rolled(acc, [], steps, lambda kk, fragments, _: (self._mma_step(fragments, kk), []))
        for kk in range(steps):
            acc = self._mma_step(acc, _i32(kk))
        return acc

    def _mma_step(self, acc: list, kk: ir.Value) -> list:
        """K step `kk` (i32) of QKᵀ: the warp's A fragment, then each pair of key fragments."""
        b = self.em.b
        a_load = (self._stepped(self.q_lane, self.plan.block[0], kk), 0, False)
        # key rows 16 apart have the same swizzle: one address, the pairs at immediate offsets
        address = self._stepped(self.k_lane, self.plan.block_keys, kk)
        return mma_steps(b, self.operand, [(a_load, [(address, 16 * pair * ROW_BYTES, False)
                                                     for pair in range(len(acc) // 2)])], acc)

    def _step_addresses(self, lane_part: tuple, rows: int):
        """kk -> (register, immediate offset): `_stepped`'s address of K step kk (an int), its
        lane's part of each of the four swizzled chunk columns computed once."""
        b = self.em.b
        start, swizzle = lane_part
        columns: dict = {}

        def at(kk: int) -> tuple:
            chunk = (2 * kk) & (CHUNK // VECTOR - 1)
            if chunk not in columns:
                columns[chunk] = b.add(start, b.shl(b.xor(swizzle, _i32(chunk)), _i32(4)))
            return columns[chunk], (kk >> 2) * rows * ROW_BYTES
        return at

    def _rolled(self, acc: list, queue: list, steps: int, step) -> list:
        """`steps` trips of `step(kk, fragments, queue) -> (fragments, queue)` as one loop whose
        accumulator fragments and `queue` (values the trips take in turn) are loop-carried;
        returns the final fragments."""
        b = self.em.b
        count = sum(map(len, acc))

        def fragments(values: list) -> list:
            return [values[4 * j:4 * j + 4] for j in range(len(acc))]

        def trip(kk, values):
            stepped, rest = step(b.trunc(kk, I32), fragments(values[:count]), values[count:])
            return [value for fragment in stepped for value in fragment] + rest
        final = self.em.loop(_i64(0), _i64(steps), trip, _i64(1), "kstep", carried=[v for f in acc for v in f] + queue)
        return fragments(final[:count])

    def _values_by_weights(self, words: list) -> PerThread:
        """O = P V: P the weights' words ([row][key fragment], `_weight_words`) as A fragments,
        V staged and read transposed."""
        fragments = self.plan.columns // 8
        if self.plan.resident_depth:
            self._arrived()
            self._prefetch_keys()
        else:
            self._group_barrier()    # the group is done with the previous tile's V (and this one's K)
            self._stage_tile(self.v, self.v_shared, self.j0, self.c0, self.plan.block_keys, self.plan.columns)
            self._arrived()
        acc = [[ir.Constant(F32, 0.0)] * 4 for _ in range(fragments)]
        # A of step kk: rows g and g + 8 of keys 16kk + 2(l%4).. (fragment 2kk) and 16kk + 8 + .. (2kk + 1)
        queue = [words[r][2 * kk + half] for kk in range(self.plan.block_keys // 16) for half in range(2) for r in range(self.rows)]
        if self.plan.step_asm:
            per_block = CHUNK // VECTOR // 2
            acc = mma_steps(self.em.b, self.operand, [
                (queue[4 * kk:4 * kk + 4], [(self.v_lane[pair % per_block],
                                             kk * 16 * ROW_BYTES + pair // per_block * self.plan.block_keys * ROW_BYTES, True)
                                            for pair in range(fragments // 2)]) for kk in range(self.plan.block_keys // 16)], acc)
        elif self.plan.rolled:
            # each trip takes the first four words and rotates them to the back
            acc = self._rolled(acc, queue, self.plan.block_keys // 16,
                               lambda kk, fragments, words: (self._pv_step(fragments, words[:4], kk), words[4:] + words[:4]))
        else:
            for kk in range(self.plan.block_keys // 16):
                acc = self._pv_step(acc, queue[4 * kk:4 * kk + 4], _i32(kk))
        rows = [[acc[j][2 * r + e] for j in range(fragments) for e in range(2)] for r in range(self.rows)]
        return PerThread("cols", "f32", [[self._packed(row)] for row in rows] if self.values.column_vector else rows)

    def _packed(self, slots: list) -> ir.Value:
        """A row's column slots as one vector."""
        b = self.em.b
        vector = ir.Constant(ir.VectorType(slots[0].type, len(slots)), ir.Undefined)
        for m, value in enumerate(slots):
            vector = b.insert_element(vector, value, _i32(m))
        return vector

    def _pv_step(self, acc: list, a_frag: list, kk: ir.Value) -> list:
        """K step `kk` (i32) of PV: the weights' A fragment times each pair of V's column fragments."""
        b = self.em.b
        # column chunks 8 apart (the next 64-column block) have the same swizzle: an immediate
        # offset; the step's 16 rows start 16 kk rows on, with the same swizzle
        per_block = CHUNK // VECTOR // 2
        rows = b.mul(kk, _i32(16 * ROW_BYTES))
        addresses = [b.add(start, rows) for start in self.v_lane]
        loads = []
        for pair in range(len(acc) // 2):
            block, within = divmod(pair, per_block)
            loads.append((addresses[within], block * self.plan.block_keys * ROW_BYTES, True))
        return mma_steps(b, self.operand, [(a_frag, loads)], acc)

    def _weight_words(self, values: FoldValues, weights: PerThread | None, name: str) -> list:
        """[row][fragment] b32 words of the weights in the operand type (of `values`' key
        slots), (low, high) = keys (2(l%4), 2(l%4) + 1) of the fragment; 0 for keys past the
        axis. Where the IR casts f32 weights, the f32 values convert pairwise (`cvt.rn`, the
        cast's rounding)."""
        b = self.em.b
        cast = values.defs.get(name)
        source = values.env[cast.operands[0]] if cast is not None and cast.name == "cast" else None
        if source is not None and source.dtype != "f32":
            source = None
        exists = values.key_exists
        result = []
        for r in range(self.rows):
            row = []
            for j in range(len(exists) // 2):
                if source is not None:
                    low, high = (b.select(exists[2 * j + e], source.values[r][2 * j + e], ir.Constant(F32, 0.0))
                                 for e in range(2))
                    row.append(asm(b, f"cvt.rn.{self.operand}x2.f32 $0, $1, $2;", "=r,f,f", I32, [high, low]))
                else:
                    assert weights is not None, "weights left unlowered without an f32 source"
                    halves = [b.select(exists[2 * j + e], to_storage(self.em, weights.values[r][2 * j + e], weights.dtype),
                                       ir.Constant(I16, 0)) for e in range(2)]
                    row.append(b.or_(b.zext(halves[0], I32), b.shl(b.zext(halves[1], I32), _i32(16))))
            result.append(row)
        return result

    def _contract(self, op, env) -> PerThread:
        if op.name == "matvec":
            return self._scores()
        return self._values_by_weights(self._weight_words(self.values, env.get(op.operands[0]), op.operands[0]))

    # ---- staging -------------------------------------------------------------------------
    def _arrived(self) -> None:
        """This thread's copies landed (`cp.async.wait_group 0`), then the group's (its barrier)."""
        cp_async_wait(self.em.b, 0)
        self._group_barrier()


    def _prefetch_keys(self) -> None:
        """The next tile's K, while this tile's PV runs: every warp read this tile's K (its
        scores) before the V barrier just passed."""
        b = self.em.b
        following = b.add(self.j0, _i64(self.plan.block_keys))
        with b.if_then(b.icmp_signed("<", following, self.keys_end)):
            self._stage_tile(self.k, self.k_shared, following, _i64(0), self.plan.block_keys, self.plan.resident_depth)

    def _address(self, base: ir.Value, rows: int, row: ir.Value, chunk: ir.Value) -> ir.Value:
        """Shared address of 16-byte `chunk` (i32, of the staged columns) of `row` (i32): 64-column
        blocks of `rows` rows of 128 bytes, chunks swizzled by the row."""
        b = self.em.b
        block = b.mul(b.udiv(chunk, _i32(CHUNK // VECTOR)), _i32(rows * ROW_BYTES))
        return b.add(base, b.add(block, swizzled(b, row, b.urem(chunk, _i32(CHUNK // VECTOR)), ROW_BYTES)))

    def _stage_tile(self, view, base, first_row, first_column, rows: int, columns: int) -> None:
        """view[first_row + i, first_column + j] (0 outside the view) into the swizzled rows:
        16-byte vectors where the view's rows allow them (a uniform branch, or only the path
        `_vectors_known` decides: since session 10's loops over key fragments ptxas takes 237
        registers and spills nothing with the vector path alone, f16, D = 128; in session 9 it
        took 255 and spilled 12-28 bytes, so both paths stayed)."""
        self._by_vectors(view, lambda: self._stage_tile_vectors(view, base, first_row, first_column, rows, columns),
                         lambda: self._stage_tile_elements(view, base, first_row, first_column, rows, columns))

    def _stage_tile_vectors(self, view, base, first_row, first_column, rows: int, columns: int) -> None:
        """`cp.async` of each 16-byte chunk (zero-filled past the view: D is a multiple of
        eight here, so a chunk is wholly in or out), one commit group; `_arrived` waits."""
        b = self.em.b
        per_row = columns // VECTOR
        threads = self.plan.group_threads
        tid = opaque(b, self.group_tid)

        def copy(e):
            linear = b.add(tid, b.mul(e, _i64(threads)))
            i, c = b.udiv(linear, _i64(per_row)), b.urem(linear, _i64(per_row))
            row, column = b.add(first_row, i), b.add(first_column, b.mul(c, _i64(VECTOR)))
            inside = b.and_(b.icmp_signed("<", row, view.shape[0]), b.icmp_signed("<", column, view.shape[1]))
            # a chunk past the view reads nothing: its address is clamped to the view's start
            offset = b.select(inside, b.add(view.offset, b.add(b.mul(row, view.strides[0]), column)), view.offset)
            address = self._address(base, rows, b.trunc(i, I32), b.trunc(c, I32))
            cp_async(b, address, b.gep(view.ptr, [offset]), b.select(inside, _i32(16), _i32(0)))
        self.em.loop(_i64(0), _i64(rows * per_row // threads), copy, name="copy")
        cp_async_commit(b)

    def _stage_tile_elements(self, view, base, first_row, first_column, rows: int, columns: int) -> None:
        em = self.em
        b = em.b

        def element(linear):
            i, j = b.udiv(linear, _i64(columns)), b.urem(linear, _i64(columns))
            row, column = b.add(first_row, i), b.add(first_column, j)
            inside = b.and_(b.icmp_signed("<", row, view.shape[0]), b.icmp_signed("<", column, view.shape[1]))
            bits = self._raw(view, row, column, inside)
            chunk = b.trunc(b.udiv(j, _i64(VECTOR)), I32)
            address = b.add(self._address(base, rows, b.trunc(i, I32), chunk),
                            b.trunc(b.mul(b.urem(j, _i64(VECTOR)), _i64(2)), I32))
            asm(b, "st.shared.b16 [$0], $1;", "r,h,~{memory}", ir.VoidType(), [address, bits])
        em.loop(opaque(b, self.group_tid), _i64(rows * columns), element, _i64(self.plan.group_threads), name="stage")

    def _raw(self, view, row, column, inside) -> ir.Value:
        """The 16 bits of view[row, column], 0 where `inside` is false."""
        b = self.em.b
        before = b.block
        with b.if_then(inside):
            offset = b.add(view.offset, b.add(b.mul(row, view.strides[0]), b.mul(column, view.strides[1])))
            loaded = b.load(b.gep(view.ptr, [offset]))
            loaded_block = b.block
        merged = b.phi(loaded.type)
        merged.add_incoming(ir.Constant(loaded.type, 0), before)
        merged.add_incoming(loaded, loaded_block)
        return merged

    def _values_not_finite(self, first_row: ir.Value, c0: ir.Value) -> ir.Value:
        """Whether the thread's share of V's rows from `first_row` (all D columns: a pass's
        skip covers whole rows) holds an inf or NaN: 16-byte vectors where the rows allow
        them (a 16-bit pattern is not finite when its exponent bits are all ones), else
        element by element."""
        em = self.em
        b = em.b
        seen = em.entry_alloca(I1)
        b.store(ir.Constant(I1, 0), seen)
        v = self.v
        exponent = {"f16": 0x7C00, "bf16": 0x7F80}[self.operand]
        def vectors():
            per_row = b.udiv(v.shape[1], _i64(VECTOR))

            def vector(linear):
                row, chunk = b.add(first_row, b.udiv(linear, per_row)), b.urem(linear, per_row)
                offset = b.add(v.offset, b.add(b.mul(row, v.strides[0]), b.mul(chunk, _i64(VECTOR))))
                for word in global_vector(b, b.gep(v.ptr, [offset]), 4, ir.Constant(I1, 1)):
                    for half in range(2):
                        mask = _i32(exponent << (16 * half))
                        b.store(b.or_(b.load(seen), b.icmp_unsigned("==", b.and_(word, mask), mask)), seen)
            em.loop(opaque(b, self.tid), b.mul(b.sub(self.rows_extent, first_row), per_row), vector,
                    _i64(self.plan.threads), name="vcheck")

        def elements():
            def element(linear):
                row, column = b.add(first_row, b.udiv(linear, v.shape[1])), b.urem(linear, v.shape[1])
                value = to_register(em, self._raw(v, row, column, ir.Constant(I1, 1)), self.operand)
                b.store(b.or_(b.load(seen), b.not_(is_finite(em, value))), seen)
            em.loop(opaque(b, self.tid), b.mul(b.sub(self.rows_extent, first_row), v.shape[1]), element,
                    _i64(self.plan.threads), name="vcheck")
        self._by_vectors(v, vectors, elements)
        return b.load(seen)
