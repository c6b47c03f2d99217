"""An artifact is a function of its inputs alone: compiling other kernels first, in the same
process, must not change a kernel's PTX (the service's cache key relies on it)."""
import pytest

from intentc import parse
from intentc.ir.nodes import Kernel
from sample_files import SAMPLES


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_does_not_depend_on_what_the_process_compiled_before(arch):
    from intentc.driver import compile_kernel

    softmax = next(p for p in SAMPLES if p.name == "row_softmax.kir").read_text()
    first = compile_kernel(softmax, "row_softmax", "ptx", arch).artifacts["kernel.ptx"]
    for other in ("layernorm", "vector_add", "histogram_masked"):
        text = next(p for p in SAMPLES if p.name == f"{other}.kir").read_text()
        module = parse(text)
        for item in module.items:
            if isinstance(item, Kernel):
                compile_kernel(module, item.name, "ptx", arch)
    again = compile_kernel(softmax, "row_softmax", "ptx", arch).artifacts["kernel.ptx"]
    assert again == first
