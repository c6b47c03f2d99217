"""A test-only target, loaded into the server with `--plugin sleepy_target`.

`test-sleep` writes `<control>/<kernel>.pid` (its worker's pid) and then blocks until the test
creates `<control>/<kernel>.release` (or 30 s pass), so tests decide when a compile ends and
know which worker process runs it. `<control>` is $INTENTC_TEST_CONTROL_DIR.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from intentc.driver import Target, register_target
from intentc.printer import print_module

CONTROL_ENVIRONMENT = "INTENTC_TEST_CONTROL_DIR"
MAX_BLOCK_S = 30.0


def _lower(module, kernel, arch, options, specialization, timings):
    control = Path(os.environ[CONTROL_ENVIRONMENT])
    pid_file = control / f"{kernel}.pid"
    pid_file.with_suffix(".tmp").write_text(str(os.getpid()))
    pid_file.with_suffix(".tmp").replace(pid_file)
    deadline = time.monotonic() + MAX_BLOCK_S
    while not (control / f"{kernel}.release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"kernel.kir": print_module(module)}


register_target(Target("test-sleep", "blocks until the test releases it (tests only)", _lower))
