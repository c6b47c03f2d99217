"""Launch paths that await verification on a GPU (docs/runtime.md, "Paths awaiting the GPU").

Each is off unless named in the environment variable `INTENTC_LAUNCH` (comma-separated, or
`all`); without them a launch takes the paths the H200 verified:

- `native`: the native fast path (`native_launch.c`): seen calls and new memory launched
  from C, staged kernels' stages included;
- `fit_grid`: a CTA-mapped launch gets only the CTAs its iterations need (`grid_fit.py`);
- `tma_templates`: new memory for a kernel fed by tensor maps gets its maps encoded again
  from its layout's template instead of a full binding (`launch_template.TensorMaps`).

Read where a kernel object is made and where a call is bound, never on the fast paths.
"""
from __future__ import annotations

import os

PATHS = ("native", "fit_grid", "tma_templates")
VARIABLE = "INTENTC_LAUNCH"


def enabled(path: str) -> bool:
    """Whether `INTENTC_LAUNCH` names `path` (one of `PATHS`) or `all`."""
    assert path in PATHS, path
    named = {part.strip() for part in os.environ.get(VARIABLE, "").split(",")}
    return path in named or "all" in named
