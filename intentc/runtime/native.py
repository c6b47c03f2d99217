"""The native fast path (`native_launch.c`): built with the machine's C compiler on first use,
kept in the kernel cache's directory, imported as an extension module.

It does what the Python fast path does for calls on torch tensors and Python numbers,
without Python frames (docs/runtime.md). Kernels use it unless `INTENTC_LAUNCH_OFF=native`
(`launch_paths.py`). Where it cannot be built (no C compiler or no Python headers),
`fast_call()` is None and launches take the Python path alone; `unavailable()` says why.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from .kernel_cache import cache_dir

SOURCE = Path(__file__).with_name("native_launch.c")
MODULE = "intentc_native_launch"
_problem: list[str] = []


@functools.cache
def fast_call() -> Callable | None:
    """`native_launch.c`'s `fast_call(state, arguments, stream)`, or None (see `unavailable`)."""
    try:
        return _imported(_built()).fast_call
    except (OSError, subprocess.CalledProcessError, ImportError) as error:
        _problem.append(f"{type(error).__name__}: {error}")
        return None


def unavailable() -> str | None:
    """Why it could not be built (None: it was, or it was not asked for yet)."""
    return _problem[-1] if _problem else None


def _built() -> Path:
    """The extension for this source and this Python, compiled unless the cache holds it
    (another process compiling it at once publishes the same file: the rename is atomic)."""
    source = SOURCE.read_bytes()
    include = sysconfig.get_paths()["include"]
    tag = hashlib.sha256(source + sys.version.encode() + include.encode()).hexdigest()[:16]
    target = cache_dir() / "native" / f"launch-{tag}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    configured = (sysconfig.get_config_var("CC") or "").split()
    compiler = shutil.which(configured[0]) if configured else None
    compiler = compiler or shutil.which("cc") or "gcc"     # Python's own compiler, else the machine's
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(built)],
                       check=True, capture_output=True, timeout=120)
        os.replace(built, target)
    return target


def _imported(path: Path):
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
