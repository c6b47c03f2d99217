"""Lower one verified kernel to an LLVM function (see `abi.py` for its signature)."""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...diagnostics import Diagnostic, DiagnosticError
from ...ir.nodes import Kernel, Module
from ...ir.types import ViewType
from ...options import Specialization
from .abi import ParamSlots, layout, slot_count
from .conversion import constant_value
from .emitter import CheckSite, Emitter
from .lowering import NotLowered, count_uses, lower_ops
from .mask_bounds import masked_in_bounds
from .nan_payloads import bit_copy_reads, payload_free_reads
from .printing import module_text
from .lowfloat import to_register
from .target import TargetHooks
from .types import F32, F64, I32, I64, is_low, register_type, storage_type
from .values import Scalar, ViewRef

NOT_LOWERED = "E0080"
ABI_UNSUPPORTED = "E0081"
# Kernel parameter bytes every CUDA driver takes (Volta+ with CUDA 12.1 take 32764).
PARAMETER_BYTES = 4096


@dataclass
class LoweredKernel:
    module: ir.Module
    function: str
    slots: list[ParamSlots]
    sites: list[CheckSite]

    def take_text(self) -> str:
        """The module's LLVM IR text, the IR itself let go: `module` becomes an empty module of
        the same name. A backend that hands LLVM the text needs the objects no more, and they are
        cyclic (an instruction points at its block), so only a collection frees them: let go
        before LLVM's long calls, a second thread can free them meanwhile
        (`codegen/collection.py`). Instruction results are numbered, not named (LLVM parses
        that faster; `printing._number_results`)."""
        text = module_text(self.module, numbered=True)
        self.module = ir.Module(self.module.name)
        return text


def function_name(kernel: str) -> str:
    return f"intentc_kernel_{kernel}"


def lower_kernel(module: Module, kernel_name: str, hooks: TargetHooks, specialization: Specialization | None = None,
                 file: str = "<input>", source: str | None = None, sites: list[CheckSite] | None = None) -> LoweredKernel:
    """LLVM IR for `kernel_name`; raises DiagnosticError for what cannot be lowered yet.
    `sites`: the check sites of another lowering of the kernel, whose ids this one keeps."""
    specialization = specialization or Specialization()
    kernel = module.find(kernel_name)
    assert isinstance(kernel, Kernel), kernel_name
    try:
        slots = layout(kernel)
    except ValueError as problem:
        raise _diagnostic(ABI_UNSUPPORTED, f"kernel @{kernel.name}: {problem}", kernel, file, source) from None
    words = slot_count(slots) + hooks.extra_argument_words
    if hooks.words_as_params and 8 * (words + 1) > PARAMETER_BYTES:
        raise _diagnostic(ABI_UNSUPPORTED, f"kernel @{kernel.name}: its {words} argument words do not fit the "
                          f"{PARAMETER_BYTES} bytes of kernel parameters", kernel, file, source,
                          "pass fewer or lower-rank views") from None
    llmod = ir.Module(name=kernel_name)
    if hooks.triple:
        llmod.triple = hooks.triple
    if hooks.data_layout:
        llmod.data_layout = hooks.data_layout
    function = _kernel_function(llmod, function_name(kernel.name), words, hooks)
    em = Emitter(llmod, function, function.args[-1], hooks)
    em.argument_word = _argument_words(em, function, hooks)
    em.kir_module = module
    em.defs = {}
    em.uses = count_uses(kernel.body, {})
    em.payload_free_reads = payload_free_reads(kernel.body)
    em.bit_copy_reads = bit_copy_reads(kernel.body, {param.name: param.type.dtype for param in kernel.params
                                                     if isinstance(param.type, ViewType)})
    em.masked_in_bounds = masked_in_bounds(kernel)
    if sites:
        em.number_sites_as(sites)
    _bind_params(em, kernel, slots, specialization)
    try:
        hooks.lower_top_level(em, list(kernel.body), lower_ops)
    except NotLowered as missing:
        op = missing.op
        reason = f" ({missing.reason})" if missing.reason else ""
        raise _diagnostic(NOT_LOWERED, f"op `{op.name}` is not yet lowered to LLVM{reason}", op, file, source,
                          "run it with --target interp") from None
    em.finish()
    return LoweredKernel(llmod, function.name, slots, em.sites)


def _diagnostic(code, message, node, file, source, hint="") -> DiagnosticError:
    line, col = (node.loc.line, node.loc.col) if node.loc else (1, 1)
    return DiagnosticError([Diagnostic(code, message, line, col, file, hint)], source)


def _kernel_function(llmod: ir.Module, name: str, words: int, hooks: TargetHooks) -> ir.Function:
    """`void kernel(i64 *args, i64 *status)`, or with the `words` argument words as parameters
    (`hooks.words_as_params`): `void kernel(i64 w0, ..., i64 wN-1, i64 *status)` (`abi.py`)."""
    pointer = I64.as_pointer()
    if not hooks.words_as_params:
        function = ir.Function(llmod, ir.FunctionType(ir.VoidType(), [pointer, pointer]), name)
        function.args[0].name = "args"
    else:
        function = ir.Function(llmod, ir.FunctionType(ir.VoidType(), [I64] * words + [pointer]), name)
        for index, word in enumerate(function.args[:-1]):
            word.name = f"w{index}"
    function.args[-1].name = "status"
    return function


def _argument_words(em, function: ir.Function, hooks: TargetHooks):
    """argument_word(index): the kernel's argument word `index` (read in the prologue)."""
    if hooks.words_as_params:
        em.invariant.update(id(word) for word in function.args[:-1])
        return function.args.__getitem__
    b, args = em.prologue, function.args[0]

    def load(index: int) -> ir.Value:
        value = b.load(b.gep(args, [ir.Constant(I64, index)], inbounds=True))
        em.invariant.add(id(value))
        return value
    return load


def _bind_params(em, kernel: Kernel, slots: list[ParamSlots], specialization: Specialization) -> None:
    b = em.prologue
    slot = em.argument_word

    def remember(value):
        em.invariant.add(id(value))
        return value

    types = {p.name: p.type for p in kernel.params}
    for entry in slots:
        type_ = types[entry.name]
        if entry.kind == "view":
            _bind_view(em, entry, type_, slot, remember, specialization)
        elif entry.kind == "constexpr" and entry.name in specialization.constexprs:
            value = specialization.constexprs[entry.name]
            if entry.dtype == "enum":
                from ...ir.nodes import SymbolRef
                member = str(value).rsplit(".", 1)[-1]
                value = SymbolRef(name=f"{type_.inner.name}.{member}")
            em.env[entry.name] = Scalar(entry.dtype, (), constant_value(em, value, entry.dtype))
        else:
            em.env[entry.name] = Scalar(entry.dtype, (), remember(_scalar_from_slot(em, b, slot(entry.start),
                                                                                    entry.dtype)))
    for name, extent in specialization.extents.items():
        if name in em.env or any(name in getattr(t, "shape", ()) for t in types.values()):
            em.env[name] = Scalar("index", (), ir.Constant(I64, int(extent)))


def _scalar_from_slot(em, b, word, dtype):
    saved, em.b = em.b, b
    try:
        if dtype in ("enum", "index", "i64", "u64"):
            return word
        if dtype == "f64":
            return b.bitcast(word, F64)
        if dtype == "f32":
            return b.bitcast(b.trunc(word, I32), F32)
        if is_low(dtype):
            return to_register(em, b.trunc(word, storage_type(dtype)), dtype)
        if dtype == "bool":
            return b.icmp_unsigned("!=", word, ir.Constant(I64, 0))
        return b.trunc(word, register_type(dtype))
    finally:
        em.b = saved


def _bind_view(em, entry: ParamSlots, type_: ViewType, slot, remember, specialization) -> None:
    b = em.prologue
    rank = entry.rank
    pointer = remember(b.inttoptr(slot(entry.start), storage_type(type_.dtype).as_pointer()))
    offset, size = slot(entry.start + 1), slot(entry.start + 2)
    strides = [slot(entry.start + 3 + a) for a in range(rank)]
    if entry.name in specialization.unit_stride and rank:
        strides[-1] = ir.Constant(I64, 1)
    extents = []
    for axis, declared in enumerate(type_.shape):
        if isinstance(declared, int):
            extents.append(ir.Constant(I64, declared))
        elif declared in specialization.extents:
            extents.append(ir.Constant(I64, int(specialization.extents[declared])))
        elif isinstance(em.env.get(declared), Scalar):
            # the launch binds one value to an extent name (R0105): every view's axis of that
            # name is one SSA value, so a guard on one's extent also covers the others' checks
            extents.append(em.env[declared].value)
        else:
            extents.append(slot(entry.start + 3 + rank + axis))
        if isinstance(declared, str) and declared not in em.env:
            em.env[declared] = Scalar("index", (), extents[-1])
    if entry.name in specialization.contiguous:
        strides = _dense_strides(b, extents)
    em.env[entry.name] = ViewRef(entry.name, type_.dtype, type_.direction, pointer, offset, size,
                                 tuple(strides), tuple(extents), entry.name in specialization.contiguous,
                                 entry.name in specialization.aligned16)


def _dense_strides(b, extents: list) -> list:
    """A dense row-major view's strides: each the product of the extents after it (constants
    where the extents are; the launch proved the layout, `Specialization.contiguous`), so
    address arithmetic folds and a vector group's alignment is known at compile time."""
    strides, step = [], ir.Constant(I64, 1)
    for extent in reversed(extents):
        strides.append(step)
        step = (ir.Constant(I64, step.constant * extent.constant)
                if isinstance(step, ir.Constant) and isinstance(extent, ir.Constant) else b.mul(step, extent))
    return strides[::-1]
