"""ptxas and libdevice, from the `nvidia-cuda-nvcc` wheel (extra `ptx`) or a CUDA install.

Located once per process; their sha256 identify them in the cache key (brief §5).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class ToolchainError(Exception):
    """A tool is missing or refused its input; the message says which and how to fix it."""


def _wheel_root() -> Path | None:
    try:
        import nvidia.cuda_nvcc as wheel  # type: ignore[import-not-found]
    except ImportError:
        return None
    locations = list(getattr(wheel, "__path__", []))
    return Path(locations[0]) if locations else None


def _candidates(relative: str, env_var: str) -> list[Path]:
    found = []
    if os.environ.get(env_var):
        found.append(Path(os.environ[env_var]))
    root = _wheel_root()
    if root is not None:
        found.append(root / relative)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            found.append(Path(home) / relative)
    return found


@functools.cache
def ptxas_path() -> Path:
    for candidate in _candidates("bin/ptxas", "INTENTC_PTXAS"):
        if candidate.is_file():
            return candidate
    on_path = shutil.which("ptxas")
    if on_path:
        return Path(on_path)
    raise ToolchainError("ptxas not found: install the `ptx` extra (pip install 'intentc[ptx]'), "
                         "set INTENTC_PTXAS, or put a CUDA toolkit's bin on PATH")


@functools.cache
def libdevice_path() -> Path:
    for candidate in _candidates("nvvm/libdevice/libdevice.10.bc", "INTENTC_LIBDEVICE"):
        if candidate.is_file():
            return candidate
    raise ToolchainError("libdevice.10.bc not found: install the `ptx` extra (pip install 'intentc[ptx]') "
                         "or set INTENTC_LIBDEVICE")


@functools.cache
def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assemble(ptx: str, arch: str, timeout_s: float = 60.0) -> bytes:
    """PTX text → cubin bytes through ptxas; a rejection raises ToolchainError with its log."""
    with tempfile.TemporaryDirectory(prefix="intentc-ptxas-") as work:
        source, cubin = Path(work) / "kernel.ptx", Path(work) / "kernel.cubin"
        source.write_text(ptx)
        try:
            done = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-O3", str(source), "-o", str(cubin)],
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"ptxas took longer than {timeout_s:.0f} s") from None
        if done.returncode != 0:
            raise ToolchainError(f"ptxas rejected the PTX for {arch}:\n{done.stderr.strip()}")
        return cubin.read_bytes()


def toolchain_facts() -> dict[str, str]:
    """What the cubin depends on besides the PTX: the ptxas and libdevice binaries."""
    facts = {}
    for name, locate in (("ptxas", ptxas_path), ("libdevice", libdevice_path)):
        try:
            facts[f"{name}_sha256"] = file_digest(locate())
        except ToolchainError:
            facts[f"{name}_sha256"] = "missing"
    return facts
