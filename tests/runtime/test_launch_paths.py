"""The launch paths' switch (docs/runtime.md, "Launch paths"): every path is on unless
`INTENTC_LAUNCH_OFF` names it (comma-separated, spaces allowed) or says `all`."""
from __future__ import annotations

from intentc.runtime.launch_paths import PATHS, VARIABLE, enabled


def test_every_path_is_on_unless_named_off(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert [path for path in PATHS if enabled(path)] == ["native", "fit_grid", "resident_grid", "tma_templates"]
    monkeypatch.setenv(VARIABLE, " fit_grid , native")
    assert [path for path in PATHS if enabled(path)] == ["resident_grid", "tma_templates"]
    monkeypatch.setenv(VARIABLE, "all")
    assert not any(enabled(path) for path in PATHS)
