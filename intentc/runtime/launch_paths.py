"""Switches for the launch paths, all on (verified on the H200 in session 7's first round:
the runtime's GPU tests pass with each; docs/runtime.md, "Launch paths"). Naming one in the
environment variable `INTENTC_LAUNCH_OFF` (comma-separated, or `all`) turns it off, to tell
whether a launch problem is in it:

- `native`: the native fast path (`native_launch.c`): seen calls and new memory launched
  from C, staged kernels' stages included (off: the Python fast path alone);
- `fit_grid`: a CTA-mapped launch gets only the CTAs its iterations need (`grid_fit.py`;
  off: the grid the launch config sizes to the device);
- `resident_grid`: a CTA-mapped launch's grid is cut to whole waves of the CTAs the GPU
  runs at once (the SMs times the CTAs of the kernel an SM holds,
  `cuOccupancyMaxActiveBlocksPerMultiprocessor`; off: the launch config's grid; needs `fit_grid`);
- `tma_templates`: new memory for a kernel fed by tensor maps gets its maps encoded again
  from its layout's template instead of a full binding (`launch_template.TensorMaps`; off:
  bound in full).

Read where a kernel object is made and where a call is bound, never on the fast paths.
"""
from __future__ import annotations

import os

PATHS = ("native", "fit_grid", "resident_grid", "tma_templates")
VARIABLE = "INTENTC_LAUNCH_OFF"


def enabled(path: str) -> bool:
    """Whether `path` (one of `PATHS`) is on: `INTENTC_LAUNCH_OFF` names neither it nor `all`."""
    assert path in PATHS, path
    named = {part.strip() for part in os.environ.get(VARIABLE, "").split(",")}
    return path not in named and "all" not in named
