"""Compile a kernel for the GPU once, launch it many times (through the CUDA driver API).

    kernel = compile_cuda(source_or_module, "row_softmax")
    outputs = kernel({"x": x, "t": 0.7})     # like intentc.run: inputs copied in, outputs back

Arrays bind exactly as on the CPU (`binding.bind_copied`: the interpreter's launch checks,
strides, offsets, aliasing); each distinct allocation is copied to the device once, the
kernel's argument slots point at the device copies, and out/inout allocations come back.
Illegal inputs raise the interpreter's `DiagnosticError`; every CUDA or ptxas failure is a
`DiagnosticError` (code E0090) saying what failed.
"""
from __future__ import annotations

import time

import numpy as np

from ..codegen.nvptx.compile import PtxKernel, assemble_cubin, compile_ptx
from ..codegen.nvptx.hooks import STATUS_OUT_OF_HEAP
from ..codegen.nvptx.machine import ARCHS
from ..diagnostics import Diagnostic, DiagnosticError
from ..interp.errors import launch_error
from ..ir.errors import LAUNCH_NO_KERNEL
from ..interp.launch import Launch
from ..ir.nodes import Kernel, Module
from ..options import CompileOptions, Specialization
from .binding import bind_copied
from .extents import check_extents, extent_params
from .cuda_driver import CudaError, DeviceBuffer, default_device, launch

CUDA_FAILED = "E0090"
HEAP_BYTES = 4 << 30   # device malloc heap for dynamic temporaries


def cuda_error(error: Exception, file: str = "<cuda>") -> DiagnosticError:
    text = str(error)
    hint = ("the context may be unusable after a fault inside a kernel; restart the process"
            if "ILLEGAL" in text or "LAUNCH_FAILED" in text else "")
    return DiagnosticError([Diagnostic(CUDA_FAILED, f"CUDA: {text}", 1, 1, file, hint)])


def compile_arch(device_arch: str) -> str:
    """The newest supported arch whose cubin runs on the device (same major, minor ≤)."""
    major, minor = int(device_arch[3:-1]), int(device_arch[-1])
    fitting = [a for a in ARCHS if int(a[3:-1]) == major and int(a[-1]) <= minor]
    if not fitting:
        raise CudaError(f"no cubin arch for {device_arch} (intentc targets {', '.join(ARCHS)})")
    return fitting[-1]


class CudaKernel:
    def __init__(self, module: Module, kernel: Kernel, compiled: PtxKernel, cubin: bytes, file: str,
                 source: str | None, specialization: Specialization, timings: dict[str, float]):
        self.module, self.kernel, self.compiled, self.cubin = module, kernel, compiled, cubin
        self.file, self.source, self.specialization, self.timings = file, source, specialization, timings
        self._extent_params = extent_params(kernel)
        try:
            self.device = default_device()
            if "malloc" in compiled.ptx:
                self.device.ensure_heap(HEAP_BYTES)
            self._module = self.device.load(cubin)
            self._function = self._module.function(compiled.launch.kernel)
            limit = self._module.max_threads(self._function)
        except CudaError as error:
            raise cuda_error(error, file) from None
        self.block = (_block_threads(compiled.launch, limit, file), 1, 1)

    @property
    def ptx(self) -> str:
        return self.compiled.ptx

    def grid(self) -> tuple[int, int, int]:
        config = self.compiled.launch
        if config.mapping in ("grid-stride", "cta"):
            return (config.ctas_per_sm * self.device.sm_count, 1, 1)
        return (1, 1, 1)

    def __call__(self, inputs: dict | None = None, constexprs: dict | None = None) -> dict[str, np.ndarray]:
        launch_ = Launch(self.module, self.kernel, self.file, self.source, self.specialization.extents)
        constexprs = {**self.specialization.constexprs, **(constexprs or {})}
        env, slots, keep = bind_copied(launch_, self.compiled.lowered.slots, inputs or {}, constexprs)
        outputs = [p.name for p in self.kernel.params if getattr(p.type, "direction", None) in ("out", "inout")]
        check_extents(self._extent_params, env, self.file, self.source)
        try:
            status = self._run(env, slots, outputs)
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        del keep
        if status:
            raise self._illegal_input(status)
        return {name: env[name].logical() for name in outputs}

    def _run(self, env: dict, slots: np.ndarray, outputs: list[str]) -> int:
        buffers: dict[int, tuple[np.ndarray, DeviceBuffer]] = {}
        try:
            for entry in self.compiled.lowered.slots:
                if entry.kind != "view":
                    continue
                base = env[entry.name].base
                if id(base) not in buffers:
                    buffers[id(base)] = (base, DeviceBuffer.from_array(base) if base.size else DeviceBuffer(16))
                slots[entry.start] = np.int64(np.uint64(buffers[id(base)][1].address).view(np.int64))
            arguments = DeviceBuffer.from_array(slots)
            status = DeviceBuffer.from_array(np.zeros(1, dtype=np.int64))
            try:
                launch(self._function, self.grid(), self.block,
                       [np.uint64(arguments.address), np.uint64(status.address)])
                self.device.synchronize()
                word = int(status.download(np.zeros(1, dtype=np.int64))[0])
                for name in outputs:
                    base, buffer = buffers[id(env[name].base)]
                    if base.size:
                        _download_into(buffer, base)
            finally:
                arguments.free()
                status.free()
            return word
        finally:
            for _, buffer in buffers.values():
                buffer.free()

    def launch_device(self, words: list[int], status_address: int) -> None:
        """Launch on device-resident memory (benchmarks): `words` are the argument slots with
        device addresses already in them; asynchronous, on the default stream."""
        array = np.array([w if w < 2 ** 63 else w - 2 ** 64 for w in words] or [0], dtype=np.int64)
        if not hasattr(self, "_raw_args") or self._raw_words != words:
            self._raw_args, self._raw_words = DeviceBuffer.from_array(array), list(words)
        launch(self._function, self.grid(), self.block,
               [np.uint64(self._raw_args.address), np.uint64(status_address)])

    def _illegal_input(self, ident: int) -> DiagnosticError:
        if ident == STATUS_OUT_OF_HEAP:
            return DiagnosticError([Diagnostic(CUDA_FAILED, "CUDA: the device heap is exhausted by the kernel's "
                                               "dynamic temporaries", 1, 1, self.file,
                                               f"temporaries come from device malloc ({HEAP_BYTES >> 20} MiB)")],
                                   self.source)
        site = self.compiled.lowered.sites[ident - 1]
        op = site.op
        line, col = (op.loc.line, op.loc.col) if op.loc else (1, 1)
        return DiagnosticError([Diagnostic(site.code, f"`{op.name}`: {site.message}", line, col, self.file,
                                           site.hint)], self.source)


def _block_threads(launch, limit: int, file: str) -> int:
    """The CTA size: exactly the compiled one for the CTA mapping (its code is specialized
    to it, and `.maxntid` makes ptxas fit it); otherwise as large as the configuration asks
    or the kernel's registers allow."""
    threads = launch.block[0]
    if launch.mapping == "cta":
        if limit < threads:
            raise DiagnosticError([Diagnostic(CUDA_FAILED, f"CUDA: the kernel fits {limit} threads a CTA, "
                                              f"but was compiled for {threads}", 1, 1, file)])
        return threads
    return max(32, min(threads, limit // 32 * 32)) if threads > 1 else 1


def _download_into(buffer: DeviceBuffer, base: np.ndarray) -> None:
    if base.flags.c_contiguous and base.flags.writeable:
        buffer.download(base)
    else:
        base[...] = buffer.download(np.empty(base.shape, base.dtype))


def compile_cuda(module_or_text: Module | str, kernel: str, specialization: Specialization | dict | None = None,
                 options: CompileOptions | None = None, file: str = "<input>", source: str | None = None,
                 arch: str | None = None) -> CudaKernel:
    """Parse (when given text), verify and compile `kernel` to a cubin for this machine's GPU."""
    from ..parse import parse
    from ..verify import verify
    from .cpu import _run_passes, _specialization_value
    timings: dict[str, float] = {}
    source = module_or_text if isinstance(module_or_text, str) else source
    module = parse(module_or_text, file) if isinstance(module_or_text, str) else module_or_text
    diagnostics = verify(module, file)
    if diagnostics:
        raise DiagnosticError(diagnostics, source)
    if not isinstance(module.find(kernel), Kernel):
        raise launch_error(LAUNCH_NO_KERNEL, f"no kernel @{kernel} in the module", file, 1, 1, source)
    if isinstance(specialization, dict):
        specialization = Specialization(**{**specialization, "constexprs": {
            name: _specialization_value(value) for name, value in specialization.get("constexprs", {}).items()}})
    specialization = specialization or Specialization()
    mark = time.perf_counter()
    module = _run_passes(module, options or CompileOptions(), specialization)
    timings["passes"] = time.perf_counter() - mark
    try:
        arch = arch or compile_arch(default_device().arch)
    except CudaError as error:
        raise cuda_error(error, file) from None
    compiled = compile_ptx(module, kernel, arch, specialization, timings, file, source)
    cubin = assemble_cubin(compiled.ptx, arch, timings)
    return CudaKernel(module, module.find(kernel), compiled, cubin, file, source, specialization, timings)
