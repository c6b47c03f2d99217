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

import functools
import json
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..codegen.nvptx.hooks import STATUS_OUT_OF_HEAP
from ..codegen.nvptx.machine import ARCHS
from ..codegen.nvptx.mapping import LaunchConfig
from ..codegen.nvptx.variants import VariantRule
from ..diagnostics import Diagnostic, DiagnosticError
from ..driver import Request, compile_request, front_end
from ..driver.specialization import extent_names
from ..driver.variants import variant_rule
from ..interp.values import np_dtype
from ..ir.nodes import Module
from ..options import CompileOptions, Specialization
from .binding import bind_copied, bind_in_place
from .compiled import CompiledKernel
from .extents import check_extents
from .grid_fit import GridFit
from .launch_paths import enabled
from .interop import cuda_device
from .seen_calls import SeenCalls
from .status import illegal_input
from .compilers import Compiler, artifacts_of
from .variants import Entry, EntryTable, LazyVariants, extent_sources
from .cuda_driver import CudaError, DeviceBuffer, LaunchShape, PreparedLaunch, default_device, stream_synchronize
from .cuda_stages import LaunchSequence, StagedEntries, launch_grid
from .launch_template import LaunchTemplate, TemplateView, TensorMaps
from .tensor_maps import encoded_maps

if TYPE_CHECKING:
    from .dynamic_rows import DynamicRowKernel

CUDA_FAILED = "E0090"
HEAP_BYTES = 4 << 30   # device malloc heap for dynamic temporaries
# Launches (and layout templates) a kernel keeps for calls seen before.
SEEN_CALLS = 1024
# A dynamic row's kernel compiles its own entry when a launch needs it (`DynamicRowKernel`);
# False compiles it at load, each variant still on first use (session 5's runtime path).
DEFER_OWN_ENTRY = True


def cuda_error(error: Exception, file: str = "<cuda>") -> DiagnosticError:
    text = str(error)
    hint = ("the context may be unusable after a fault inside a kernel; restart the process"
            if "ILLEGAL" in text or "LAUNCH_FAILED" in text else "")
    return DiagnosticError([Diagnostic(CUDA_FAILED, f"CUDA: {text}", 1, 1, file, hint)])


def _arch_version(arch: str) -> tuple[int, int, bool]:
    """sm_90a -> (9, 0, True): major, minor, arch-specific (runs only on exactly that arch)."""
    digits = arch[3:].rstrip("a")
    return int(digits[:-1]), int(digits[-1]), arch.endswith("a")


def compile_arch(device_arch: str) -> str:
    """The newest supported arch whose cubin runs on the device (same major, minor ≤),
    preferring the arch-specific variant (sm_90a: wgmma) on exactly its arch."""
    major, minor, _ = _arch_version(device_arch)
    fitting = [a for a in ARCHS if _arch_version(a)[0] == major and _arch_version(a)[1] <= minor
               and (not _arch_version(a)[2] or _arch_version(a)[1] == minor)]
    if not fitting:
        raise CudaError(f"no cubin arch for {device_arch} (intentc targets {', '.join(ARCHS)})")
    return max(fitting, key=_arch_version)


class CudaKernel(CompiledKernel):
    """A kernel compiled to a cubin (the driver's `cubin` target), loaded on the first GPU."""

    def __init__(self, request: Request, artifacts: dict[str, str | bytes], timings: dict[str, float],
                 seen: SeenCalls | None = None, compiler: Compiler | None = None,
                 variants: LazyVariants | None = None):
        super().__init__(request, artifacts, timings)
        self.launch_config = LaunchConfig.from_json(json.loads(artifacts["launch.json"]))
        try:
            self.device = default_device()
            if "malloc" in self.ptx:
                self.device.ensure_heap(HEAP_BYTES)
            self._module = self.device.load(artifacts["kernel.cubin"])
            self._function = self._module.function(self.launch_config.kernel)
            limit = self._module.max_threads(self._function)
            self._stages = (StagedEntries(self.launch_config, self._module, self.device.sm_count)
                            if self.launch_config.stages else None)
            if self._stages:
                limit = min(self._module.max_threads(f) for f in self._stages.functions)
            if self.launch_config.shared_bytes:
                self._module.allow_shared(self._function, self.launch_config.shared_bytes)
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        self.block = (_block_threads(self.launch_config.mapping, self.launch_config.block[0], limit, self.file,
                                     bool(self.launch_config.plan)), 1, 1)
        self._entries = self._entry_table()
        self._grid_fit = (GridFit(request.module, self.kernel, self.launch_config, self._resident())
                          if enabled("fit_grid") else None)
        self._shapes: dict[tuple, LaunchShape] = {}
        # Launches prepared for calls seen before (`seen`: shared with the other shape variants
        # of one `LoadedKernel`); `LoadedKernel` looks calls up here first.
        self.seen = seen if seen is not None else SeenCalls(SEEN_CALLS)
        self._noalias = {p.name: bool(getattr(p.type, "noalias", False)) for p in self.kernel.params}
        self._status = DeviceBuffer.from_array(np.zeros(1, dtype=np.int64))
        # a lazy compile's register-form variants, each a kernel of its own compiled on first use
        # (`variants`: those of the `DynamicRowKernel` that deferred this entry, shared)
        self._lazy = variants if variants is not None else self._lazy_variants(request, compiler)

    def _lazy_variants(self, request: Request, compiler: Compiler | None) -> LazyVariants | None:
        rule = self.launch_config.variant_rule
        if not rule or self.launch_config.variants:
            return None
        build = functools.partial(variant_kernel, request, seen=self.seen, compiler=compiler)
        return LazyVariants(VariantRule(**rule), build, extent_sources(self.kernel.params, rule["extent"]))

    def _lazy_variant(self, binding, env: dict) -> CudaKernel | None:
        return self._lazy.pick(binding.extents, env) if self._lazy is not None else None

    @property
    def ptx(self) -> str:
        return str(self.artifacts["kernel.ptx"])

    def _resident(self) -> int | None:
        """The CTAs of the kernel's own entry the GPU runs at once (None with
        `INTENTC_LAUNCH_OFF=resident_grid`)."""
        if not enabled("resident_grid"):
            return None
        try:
            per_sm = self._module.resident_ctas(self._function, self.block[0], self.launch_config.shared_bytes)
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        return per_sm * self.device.sm_count if per_sm > 0 else None

    def grid(self) -> tuple[int, int, int]:
        config = self.launch_config
        if config.grid.startswith("ctas_per_sm"):
            return (config.ctas_per_sm * self.device.sm_count, 1, 1)
        return (1, 1, 1)

    def _entry_table(self) -> EntryTable:
        """The kernel's entry and its register-form variants (`launch.json` `variants`)."""
        default = Entry(self._function, self.grid(), self.block, self.launch_config.shared_bytes)
        variants = self.launch_config.variants
        try:
            functions = [self._module.function(variant["entry"]) for variant in variants]
            limits = [self._module.max_threads(function) for function in functions]
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        return EntryTable(default, variants[0]["extent"] if variants else None, [
            (variant["max"], Entry(function, (variant["ctas_per_sm"] * self.device.sm_count, 1, 1),
                                   (_exact_block(variant["block"], limit, self.file), 1, 1)))
            for variant, function, limit in zip(variants, functions, limits)], self._fallback_entry())

    def _fallback_entry(self) -> Entry | None:
        """The MMA mapping's cp.async entry, for launches whose views have no tensor map."""
        fallback = self.launch_config.mma.get("fallback")
        if not fallback:
            return None
        try:
            function = self._module.function(fallback["entry"])
            if fallback["dynamic_shared_bytes"]:
                self._module.allow_shared(function, fallback["dynamic_shared_bytes"])
            limit = self._module.max_threads(function)
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        return Entry(function, launch_grid(fallback["grid"], self.device.sm_count),
                     (_block_threads(fallback["mapping"], fallback["threads"], limit, self.file), 1, 1),
                     fallback["dynamic_shared_bytes"])

    def __call__(self, inputs: dict | None = None, constexprs: dict | None = None) -> dict[str, np.ndarray]:
        variant = self._lazy.pick_unbound(inputs or {}) if self._lazy is not None else None
        if variant is not None:             # it binds (copies) and checks the inputs itself
            return variant(inputs, constexprs)
        binding = self._launch()
        env, slots, keep = bind_copied(binding, self.abi.slots, inputs or {}, self._constexprs(constexprs),
                                          self.specialization)
        check_extents(self._extent_params, env, self.file, self.source)
        variant = self._lazy_variant(binding, env)
        if variant is not None:
            return variant(inputs, constexprs)
        try:
            status = self._run(self._entry(binding, env), env, slots, self._outputs)
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        del keep
        if status:
            raise self._illegal_input(status)
        return {name: env[name].logical() for name in self._outputs}

    def _entry(self, binding, env: dict) -> Entry:
        """The entry a launch binding `env` runs, its grid no larger than its iterations need
        (`grid_fit.py`, unless `INTENTC_LAUNCH_OFF=fit_grid`; the kernel's own entry: its
        variants and fallback keep theirs)."""
        entry = self._entries.pick(binding.extents, env)
        if entry is not self._entries.default or self._grid_fit is None:
            return entry
        ctas = self._grid_fit.ctas(entry.grid[0], entry.block[0], binding.extents, env)
        return entry if ctas == entry.grid[0] else replace(entry, grid=(ctas, 1, 1))

    def _stage_shapes(self, chosen: Entry) -> list[LaunchShape]:
        """The shape of each launch one kernel launch makes, in order: the chosen entry, or a
        staged kernel's stages."""
        if self._stages is None:
            return [self._shape(chosen.function, chosen.grid, chosen.block, chosen.shared_bytes)]
        return [self._shape(function, grid, self.block, chosen.shared_bytes)
                for function, grid in zip(self._stages.functions, self._stages.grids)]

    def _shape(self, function, grid: tuple, block: tuple, shared_bytes: int) -> LaunchShape:
        """One `LaunchShape` an entry (its launch configurations are made once per stream)."""
        key = (int(function), grid, block, shared_bytes)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = LaunchShape(function, grid, block, shared_bytes)
        return shape

    def _with_scratch(self, slots: np.ndarray) -> tuple[np.ndarray, DeviceBuffer | None]:
        return (slots, None) if self._stages is None else self._stages.with_scratch(slots)

    def _run(self, chosen: Entry, env: dict, slots: np.ndarray, outputs: list[str]) -> int:
        buffers: dict[int, tuple[np.ndarray, DeviceBuffer]] = {}
        try:
            for entry in self.abi.slots:
                if entry.kind != "view":
                    continue
                base = env[entry.name].base
                if id(base) not in buffers:
                    buffers[id(base)] = (base, DeviceBuffer.from_array(base) if base.size else DeviceBuffer(16))
                slots[entry.start] = np.int64(np.uint64(buffers[id(base)][1].address).view(np.int64))
            words, scratch = self._with_scratch(slots)
            words, chosen, maps = self._with_tensor_maps(words, chosen)
            status = DeviceBuffer.from_array(np.zeros(1, dtype=np.int64))
            try:
                for shape in self._stage_shapes(chosen):
                    PreparedLaunch.of(shape, [*_unsigned(words), status.address])()
                self.device.synchronize()
                word = int(status.download(np.zeros(1, dtype=np.int64))[0])
                for name in outputs:
                    base, buffer = buffers[id(env[name].base)]
                    if base.size:
                        _download_into(buffer, base)
            finally:
                status.free()
                for memory in (scratch, maps):
                    if memory is not None:
                        memory.free()
            return word
        finally:
            for _, buffer in buffers.values():
                buffer.free()

    def launch_in_place(self, arrays: dict, constexprs: dict | None = None, stream: int = 0,
                        call: dict | None = None) -> None:
        """Launch on the caller's GPU arrays (`__cuda_array_interface__`: torch, CuPy), asynchronously
        on `stream`; illegal inputs are reported by `synchronize`. A launch prepared before for
        an equal call (`call`: the arguments as given, constexprs included), or made from the
        template of a call with the same layout, is reused."""
        call = call if call is not None else {**arrays, **(constexprs or {})}
        prepared = self.seen.find(call)
        if prepared is None:
            prepared, template = self.prepare(arrays, constexprs)
            self.seen.remember(call, prepared, template)
        try:
            prepared(stream)
        except CudaError as error:
            raise self.diagnostic(error) from None

    def prepare(self, arrays: dict, constexprs: dict | None = None
                ) -> tuple[PreparedLaunch | LaunchSequence, LaunchTemplate | None]:
        """Bind and check the arguments as the interpreter checks a launch: the launch of their
        argument words, and its template for calls that differ in data pointers only (None for
        a staged kernel's with `INTENTC_LAUNCH_OFF=native`, a tensor-map kernel's with
        `INTENTC_LAUNCH_OFF=tma_templates`, and a launch of its fallback entry). A lazily compiled variant picked from the arguments' shapes
        binds them itself."""
        variant = self._lazy.pick_unbound(arrays) if self._lazy is not None else None
        if variant is not None:
            return variant.prepare(arrays, constexprs)
        binding = self._launch()
        env, slots, _ = bind_in_place(binding, self.abi.slots, arrays, self._constexprs(constexprs),
                                      cuda_device(self.device.ordinal), self.specialization)
        check_extents(self._extent_params, env, self.file, self.source)
        variant = self._lazy_variant(binding, env)
        if variant is not None:
            return variant.prepare(arrays, constexprs)
        entry = self._entry(binding, env)
        if self._stages is not None:
            sequence = LaunchSequence(self._stage_shapes(entry), slots, self._status.address, self._stages)
            if not enabled("native"):       # a staged kernel's template is launched by the native path only
                return sequence, None
            words = [*_unsigned(slots), 0, self._status.address]       # 0: the scratch word, set per stream
            return sequence, LaunchTemplate(sequence, words, self._template_views(env))
        mapped, entry, maps = self._with_tensor_maps(slots, entry)
        words = [*_unsigned(mapped), self._status.address]
        shape = self._stage_shapes(entry)[0]
        tma = self.launch_config.mma.get("tma")
        if tma and maps is None:        # the fallback entry: a template would serve aligned views with it too
            return PreparedLaunch.of(shape, words), None
        if tma and not enabled("tma_templates"):      # new memory: bound in full (maps and all)
            return PreparedLaunch.of(shape, words, maps), None
        tensor_maps = TensorMaps(tma, self._view_words(), len(slots)) if tma else None
        return (PreparedLaunch.of(shape, words, maps),
                LaunchTemplate(shape, words, self._template_views(env), tensor_maps))

    def _template_views(self, env: dict) -> list[TemplateView]:
        """The bound views (`binding.DirectView`s) as a launch template records them."""
        views = []
        for entry in self.abi.slots:
            if entry.kind != "view":
                continue
            view, itemsize = env[entry.name], np_dtype(entry.dtype).itemsize
            low, high = view.span(itemsize)
            views.append(TemplateView(entry.name, entry.start, view.address, (low, high),
                                      view.address + view.offset * itemsize, self._noalias[entry.name],
                                      entry.name in self.specialization.aligned16, high == low))
        return views

    def diagnostic(self, error: CudaError) -> DiagnosticError:
        return cuda_error(error, self.file)

    def _with_tensor_maps(self, words: np.ndarray, entry: Entry) -> tuple[np.ndarray, Entry, DeviceBuffer | None]:
        """The argument words with the address of the copy engine's tensor maps appended
        (`mma.tma`; the maps in device memory of their own, returned to keep), or, for views
        no map describes, the words as they are and the cp.async fallback entry."""
        tma = self.launch_config.mma.get("tma")
        if not tma:
            return words, entry, None
        maps = encoded_maps(tma, self._view_words(), words)
        if maps is not None:
            buffer = DeviceBuffer.from_array(maps)
            return np.append(words, np.int64(np.uint64(buffer.address).view(np.int64))), entry, buffer
        if self._entries.fallback is None:
            raise CudaError("a view of this launch has no tensor map (unaligned or transposed) and the kernel "
                            "has no fallback entry")
        return words, self._entries.fallback, None

    def _view_words(self) -> dict[str, int]:
        """Each view's first argument word."""
        return {s.name: s.start for s in self.abi.slots if s.kind == "view"}

    def synchronize(self, stream: int = 0) -> None:
        """Wait for `stream`; raise the first illegal input an asynchronous launch reported
        (by this kernel's entries or its lazily compiled variants)."""
        for variant in self._lazy.built.values() if self._lazy is not None else ():
            variant.synchronize(stream)
        try:
            stream_synchronize(stream)
            word = int(self._status.download(np.zeros(1, dtype=np.int64))[0])
            if word:
                self._status.upload(np.zeros(1, dtype=np.int64))
        except CudaError as error:
            raise cuda_error(error, self.file) from None
        if word:
            raise self._illegal_input(word)

    def _illegal_input(self, ident: int) -> DiagnosticError:
        if ident == STATUS_OUT_OF_HEAP:
            return DiagnosticError([Diagnostic(CUDA_FAILED, "CUDA: the device heap is exhausted by the kernel's "
                                               "dynamic temporaries", 1, 1, self.file,
                                               f"temporaries come from device malloc ({HEAP_BYTES >> 20} MiB)")],
                                   self.source)
        return illegal_input(self.abi, ident, self.file, self.source)


def _block_threads(mapping: str, threads: int, limit: int, file: str, planned: bool = False) -> int:
    """The CTA size: exactly the compiled one for the CTA and MMA mappings (their code is specialized
    to it, and `.maxntid` makes ptxas fit it); otherwise as large as the configuration asks
    or the kernel's registers allow."""
    if mapping in ("cta", "grid", "staged", "mma") or planned:
        return _exact_block(threads, limit, file)
    return max(32, min(threads, limit // 32 * 32)) if threads > 1 else 1


def _exact_block(threads: int, limit: int, file: str) -> int:
    """The CTA size code compiled for `threads` runs with, if its registers fit it."""
    if limit < threads:
        raise DiagnosticError([Diagnostic(CUDA_FAILED, f"CUDA: the kernel fits {limit} threads a CTA, "
                                          f"but was compiled for {threads}", 1, 1, file)])
    return threads


def _unsigned(words: np.ndarray) -> list[int]:
    return words.view(np.uint64).tolist()


def _download_into(buffer: DeviceBuffer, base: np.ndarray) -> None:
    if base.flags.c_contiguous and base.flags.writeable:
        buffer.download(base)
    else:
        base[...] = buffer.download(np.empty(base.shape, base.dtype))


def device_arch() -> str:
    """The arch to compile for this machine's first GPU."""
    try:
        return compile_arch(default_device().arch)
    except CudaError as error:
        raise cuda_error(error) from None


def variant_kernel(request: Request, bucket: tuple[int, int], seen: SeenCalls | None = None,
                   compiler: Compiler | None = None) -> CudaKernel:
    """The register-form variant of `request`'s kernel serving rows of `bucket` elements, from
    `compiler` (the kernel cache, compiling on a miss, or the compile service); it shares
    `seen`, the calls seen before of the kernel it serves."""
    specialization = Specialization(**{**request.specialization.model_dump(), "variant": bucket})
    variant = replace(request, specialization=specialization, timings={})
    compiled = artifacts_of(variant, compiler)
    return CudaKernel(variant, compiled.artifacts, compiled.timings, seen, compiler)


def deferred_rule(request: Request) -> VariantRule | None:
    """The variant rule of a `cubin` request for a dynamic row whose variants are lazy: its
    own entry can wait for a launch that needs it (`DynamicRowKernel`); None otherwise."""
    specialization = request.specialization
    if not DEFER_OWN_ENTRY or not specialization.lazy_variants or specialization.variant or request.arch is None:
        return None
    if all(name in specialization.extents for name in extent_names(request.kernel)):
        return None     # every extent static: no row length to vary (and no mapping planned twice)
    return variant_rule(request)


def compile_cuda(module_or_text: Module | str, kernel: str, specialization: Specialization | dict | None = None,
                 options: CompileOptions | None = None, file: str = "<input>", source: str | None = None,
                 arch: str | None = None, compiler: Compiler | None = None) -> CudaKernel | DynamicRowKernel:
    """Parse (when given text), verify and compile `kernel` to a cubin for this machine's GPU
    (the driver's `cubin` target). For a dynamic row length only the mapping is planned here:
    each launch compiles its register-form variant on first use, and the kernel's own entry
    only when a launch needs it (`DynamicRowKernel`), unless `specialization` sets
    `lazy_variants` False. `compiler` (say a `ServiceCompiler`) compiles the kernel and its
    variants instead of this process."""
    request = front_end(module_or_text, kernel, "cubin", arch or device_arch(), options, specialization, file,
                        source)
    rule = deferred_rule(request)
    if rule is not None:
        from .dynamic_rows import DynamicRowKernel
        return DynamicRowKernel(request, rule, compiler)
    if compiler is None:
        result = compile_request(request)
        return CudaKernel(request, result.artifacts, result.timings)
    compiled = compiler.artifacts(request)
    return CudaKernel(request, compiled.artifacts, compiled.timings, compiler=compiler)
