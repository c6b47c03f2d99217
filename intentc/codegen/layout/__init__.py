"""Layouts: how a tensor value of a GPU-mapped region is distributed over CTAs, warps, lanes
and per-thread registers (docs/gpu.md, "Layouts")."""
