"""An artifact is a function of its inputs alone: compiling other kernels first, in the same
process, must not change a kernel's PTX (the service's cache key relies on it)."""
import pytest

from intentc import parse
from intentc.ir.nodes import Kernel
from sample_files import SAMPLES


# row_softmax makes no calls (its PTX comes from the arch's cached target machine);
# exclusive_offsets calls malloc and free (a fresh machine numbers its call sequences).
@pytest.mark.parametrize("sample,kernel", [("row_softmax", "row_softmax"), ("cumsum", "exclusive_offsets")])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_does_not_depend_on_what_the_process_compiled_before(arch, sample, kernel):
    from intentc.driver import compile_kernel

    source = next(p for p in SAMPLES if p.name == f"{sample}.kir").read_text()
    first = compile_kernel(source, kernel, "ptx", arch).artifacts["kernel.ptx"]
    for other in ("layernorm", "vector_add", "histogram_masked", "row_argmax", "attention_region_fold"):
        text = next(p for p in SAMPLES if p.name == f"{other}.kir").read_text()
        module = parse(text)
        for item in module.items:
            if isinstance(item, Kernel):
                compile_kernel(module, item.name, "ptx", arch)
    again = compile_kernel(source, kernel, "ptx", arch).artifacts["kernel.ptx"]
    assert again == first
