"""The physical mapping of a kernel onto the GPU grid (docs/gpu.md).

A kernel whose top level is one `parallel` op and otherwise pure ops runs on the whole
grid: every thread evaluates the pure prologue (identical values, no effects) and the
flattened parallel domain is walked by a grid-stride loop, so any extent (0, 1, odd,
larger than the grid) is covered exactly once. Any other kernel (effects outside
`parallel`, or several top-level `parallel` ops that would need a grid-wide barrier
between them) runs on one thread, in order: slow but correct. Nested `parallel` ops are
plain loops inside their iteration. Kernels whose iteration body the CTA mapping handles
(`cta.py`) run one iteration per CTA instead.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ...ir.nodes import Kernel, Op
from ...passes.ir_walk import is_pure_tree
from .cta import cta_parallel

BLOCK_THREADS = 256
CTAS_PER_SM = 8          # 2048 resident threads per SM on sm_80/sm_90 at 256 a CTA
CTA_THREADS = 512        # the CTA mapping: threads sharing one iteration's tensor coordinates
CTA_CTAS_PER_SM = 4


@dataclass(frozen=True)
class LaunchConfig:
    """How the runtime launches the kernel; stored beside the PTX/cubin as JSON."""
    kernel: str                  # the PTX entry name
    mapping: str                 # "cta" | "grid-stride" | "single-thread"
    block: tuple[int, int, int]
    grid: str                    # "ctas_per_sm:N" (sized to the device) | "fixed:1"
    ctas_per_sm: int
    arch: str
    abi: str = "void kernel(i64 *args, i64 *status): args and status in global memory"

    def to_json(self) -> dict:
        return asdict(self)


def grid_parallel(kernel: Kernel) -> Op | None:
    """The top-level `parallel` op to spread over the grid, or None for one thread."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    others = [op for op in kernel.body if op is not parallels[0] and op.name != "yield"]
    return parallels[0] if all(is_pure_tree(op) for op in others) else None


def launch_config(kernel: Kernel, entry: str, arch: str) -> LaunchConfig:
    if cta_parallel(kernel) is not None:
        return LaunchConfig(entry, "cta", (CTA_THREADS, 1, 1), f"ctas_per_sm:{CTA_CTAS_PER_SM}", CTA_CTAS_PER_SM,
                            arch)
    if grid_parallel(kernel) is not None:
        return LaunchConfig(entry, "grid-stride", (BLOCK_THREADS, 1, 1), f"ctas_per_sm:{CTAS_PER_SM}", CTAS_PER_SM,
                            arch)
    return LaunchConfig(entry, "single-thread", (1, 1, 1), "fixed:1", 0, arch)
