"""ptxas over generated PTX, for tests that check what the assembler makes of a kernel
(accepted, registers, spills) without a GPU."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path


def ptxas_report(ptx: str, folder: Path, arch: str = "sm_90") -> str:
    """Assemble `ptx` with `ptxas -v` in `folder`; fails the test unless ptxas accepts it;
    returns ptxas's report (registers, spill bytes, shared memory)."""
    source = folder / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(source), "-o", str(folder / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stderr


def spill_store_bytes(report: str) -> list[int]:
    """The spill-store bytes of each function in a ptxas -v report."""
    return [int(n) for n in re.findall(r"(\d+) bytes spill stores", report)]
