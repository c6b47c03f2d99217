"""Layouts of the MMA mapping (docs/gpu.md, "MMA mapping"), after Triton's encodings.

- `Mma`: the accumulator in the tensor-core instruction's fragment layout. `version = 2`
  is `mma.sync.m16n8k16` (a warp's tile is `repeats` m16n8 fragments; register r of
  fragment (i, j) of lane l holds row 16i + l/4 + 8(r/2), column 8j + 2(l%4) + r%2);
  `version = 3` is `wgmma.m64nN` (a warpgroup holds 64 rows: warp w of the group rows
  16w.., register r holds row l/4 + 8((r/2)%2), column 8(r/4) + 2(l%4) + r%2).
- `SwizzledShared`: an operand tile staged in shared memory, `vec` elements a 16-byte chunk,
  chunk c of row r at chunk c ^ ((r / per_phase) % max_phase) of its row (Triton's
  parameters; rows of 64 bytes: per_phase 2, max_phase 4; of 128 bytes: 1 and 8).
"""
from __future__ import annotations

from dataclasses import dataclass

from .assign import Assignment
from .encodings import WARP, Blocked, _list


@dataclass(frozen=True)
class Mma:
    version: int
    warps_per_cta: tuple          # warps (v2) or warps along M, N (v3: 4 warps a warpgroup along M)
    instr_shape: tuple            # (16, 8) or (64, N)
    repeats: tuple                # fragments a warp holds along M, N

    @property
    def warp_tile(self) -> tuple:
        if self.version == 2:
            return (16 * self.repeats[0], 8 * self.repeats[1])
        return (16, self.instr_shape[1])

    def coordinate(self, register: int, thread: int) -> tuple:
        lane, warp = thread % WARP, thread // WARP
        warp_m, warp_n = warp % self.warps_per_cta[0], warp // self.warps_per_cta[0]
        tile_m, tile_n = self.warp_tile
        if self.version == 2:
            fragment, r = divmod(register, 4)
            i, j = divmod(fragment, self.repeats[1])
            return (warp_m * tile_m + 16 * i + lane // 4 + 8 * (r // 2),
                    warp_n * tile_n + 8 * j + 2 * (lane % 4) + r % 2)
        return (warp_m * 16 + lane // 4 + 8 * ((register // 2) % 2), 8 * (register // 4) + 2 * (lane % 4) + register % 2)

    @property
    def registers(self) -> int:
        if self.version == 2:
            return 4 * self.repeats[0] * self.repeats[1]
        return self.instr_shape[1] // 2

    def __str__(self) -> str:
        return (f"#mma<{{versionMajor = {self.version}, warpsPerCTA = {_list(self.warps_per_cta)}, "
                f"instrShape = {_list(self.instr_shape)}}}>")


@dataclass(frozen=True)
class SwizzledShared:
    vec: int
    per_phase: int
    max_phase: int
    order: tuple

    def __str__(self) -> str:
        return (f"#shared<{{vec = {self.vec}, perPhase = {self.per_phase}, maxPhase = {self.max_phase}, "
                f"order = {_list(self.order)}}}>")


def accumulator_layout(plan) -> Mma | Blocked:
    if plan.instruction.startswith("fma.f32"):     # CUDA cores: 4 x 4 blocks, repeated in each quadrant
        return Blocked(plan.block[:2], (4, 4), (2, 16), (8, 1), (1, 0))
    if plan.instruction.startswith("wgmma"):
        return Mma(3, (4 * plan.warps[0], 1), (64, plan.block[1]), (1, plan.block[1] // 8))
    warp_m, warp_n = plan.warps
    return Mma(2, (warp_m, warp_n), (16, 8), (plan.block[0] // warp_m // 16, plan.block[1] // warp_n // 8))


def staged(plan) -> SwizzledShared:
    """The operand tiles' layout: rows of `row_bytes` (K-major A, N-major B blocks), chunk c
    of row r at c ^ ((r · row_bytes / 128) mod (row_bytes / 16))."""
    return SwizzledShared(8, 128 // plan.row_bytes, plan.row_bytes // 16, (1, 0))


def mma_assignment(plan, known: dict) -> Assignment:
    """The mapping's layouts: the accumulator (the loop's carried value and the
    contraction) in the MMA layout, the operand tiles in swizzled shared memory, the
    epilogue's casts in the accumulator's layout; index and mask tensors are folded into
    the staging and need none."""
    result = Assignment()
    accumulator = accumulator_layout(plan)
    for name, role in plan.contraction.values.items():
        result.values[name] = accumulator if role == "accumulator" else staged(plan)
    return result
