"""Whole-kernel plans with their own emitters, tried after the MMA mapping and before the
CTA mapping (docs/gpu.md): each recognizes its kernel shape symbolically and returns a plan
(data: `kind`, `threads`, `parallel`, `ctas_per_sm`, `shared_bytes`, `to_json()`,
`layouts(known)`) whose `emit(em)` lowers the kernel's `parallel`.

- `lane_dots.py` (`lane-dots`): an iteration that is a batch of independent dot products
  (decode attention's scores).
- `flash_attention.py` (`flash`): attention written as a `region_fold` over keys (causal
  attention), flash-attention tiles with the fold's state in registers.
- `quantized_rows.py`, `dot_rows.py` (`warp-rows`, frame `warp_rows.py`): an iteration that
  reduces whole rows to scalars, one row a warp (Q4_K x Q8_K rows; row-wise dot products).
"""
from __future__ import annotations


def kernel_plan(kernel, known: dict, arch: str):
    """The first whole-kernel plan that recognizes `kernel`, or None."""
    from .dot_rows import plan_dot_rows
    from .flash_attention import plan_flash
    from .lane_dots import plan_lane_dots
    from .quantized_rows import plan_quantized_rows
    for planner in (plan_lane_dots, plan_flash, plan_quantized_rows, plan_dot_rows):
        plan = planner(kernel, known)
        if plan is not None:
            return plan
    return None
