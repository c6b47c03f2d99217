"""Every sample kernel's GPU mapping, read from its launch.json (no GPU needed): no kernel
may run on a single thread, and no iteration that holds tensors (a row, a tile) may run on
one thread (scalar iterations on one thread are right). Issue 13 is not finished: the
kernels that still do are listed in ONE_THREAD with what they need, so the test fails when
any other kernel falls back (a regression) and when a listed one is fixed (shrink the list).
`python tests/gpu/test_sample_mappings.py` prints the table."""
from __future__ import annotations

import functools
import json
import re

import pytest

from sample_paths import SAMPLES

# kernel -> why it still runs on one thread (mapping single-thread, or tensors in a
# grid-stride iteration); the bar of issue 13 is an empty table.
ONE_THREAD = {
}


def _kernels() -> list[tuple[str, str]]:
    return [(path.stem, name) for path in sorted(SAMPLES.glob("*.kir"))
            for name in re.findall(r"^kernel @(\w+)", path.read_text(), re.M)]


@functools.cache
def mapping_of(sample: str, kernel: str) -> tuple[str, bool]:
    """(mapping, whether a tensor value lies wholly on one thread)."""
    from intentc.driver import compile_kernel
    launch = json.loads(compile_kernel((SAMPLES / f"{sample}.kir").read_text(), kernel, "ptx", "sm_90")
                        .artifacts["launch.json"])
    layouts = launch["layouts"]
    one_thread = {name for name, text in layouts["encodings"].items()
                  if re.search(r"threadsPerWarp = \[1(, 1)*\]", text)}
    return launch["mapping"], any(layout in one_thread for layout in layouts["values"].values())


def runs_on_one_thread(sample: str, kernel: str) -> bool:
    mapping, tensors_on_one_thread = mapping_of(sample, kernel)
    return mapping == "single-thread" or tensors_on_one_thread


@pytest.mark.parametrize("sample,kernel", _kernels(), ids=[f"{s}:{k}" for s, k in _kernels()])
def test_no_kernel_or_tensor_iteration_runs_on_one_thread(sample, kernel):
    mapping, _ = mapping_of(sample, kernel)
    if kernel in ONE_THREAD:
        assert runs_on_one_thread(sample, kernel), f"@{kernel} ({mapping}) no longer runs on one thread: " \
                                                   "remove it from ONE_THREAD"
    else:
        assert not runs_on_one_thread(sample, kernel), f"@{kernel} runs on one thread ({mapping})"


def test_every_listed_kernel_exists():
    assert set(ONE_THREAD) <= {kernel for _, kernel in _kernels()}


if __name__ == "__main__":
    for sample, kernel in _kernels():
        mapping, tensors = mapping_of(sample, kernel)
        print(f"{sample:36s} {kernel:24s} {mapping:14s} {'TENSORS ON ONE THREAD' if tensors else ''}")
