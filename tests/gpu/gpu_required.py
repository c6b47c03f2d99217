"""GPU tests run only where a CUDA device answers; elsewhere they skip, saying why."""
import functools

import pytest


@functools.cache
def cuda_unavailable_reason() -> str | None:
    try:
        from intentc.runtime.cuda_driver import CudaError, default_device
    except ImportError as error:
        return f"intentc's CUDA runtime cannot be imported: {error}"
    try:
        default_device()
    except CudaError as error:
        return f"no usable CUDA device here ({error}); CI has no GPU — run these on the H200"
    return None


def requires_gpu():
    reason = cuda_unavailable_reason()
    return pytest.mark.skipif(reason is not None, reason=reason or "")
