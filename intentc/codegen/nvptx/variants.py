"""Variants of a CTA-mapped kernel whose row length is known only at launch (docs/gpu.md,
"Variants for dynamic extents").

The register form needs S, the iteration's element count, at compile time. When S is the
product of static extents and ONE dynamic extent (a view's extent or an `index`
parameter), a row of S elements runs a register-form variant compiled for its bucket
(`VariantRule.bucket`: the plan a static S gets, only its last group guarded). By default
(`Specialization.lazy_variants`) a compile emits none: `launch.json` records the
`variant_rule` and each variant is compiled on first use (`Specialization.variant`), by the
runtime or through the compile service. The eager module (`lazy_variants` False) holds one
variant per bound of VARIANT_SIZES beside the kernel's own entry, each guarding the slots
above the previous bound; `launch.json` lists them (`variants`: entry, extent, min, max,
block, slots, ctas_per_sm) in increasing `max`, and the runtime launches the first whose
`max` is at least the bound extent's value (`runtime/variants.py`), else the kernel's own
entry (the dynamic form, or grid-stride), which serves the rows longer than the largest.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import llvmlite.binding as llvm

from ...diagnostics import Diagnostic, DiagnosticError
from ...ir.nodes import Kernel
from ...ir.types import TensorType, ViewType
from ...options import Specialization
from ..llvm.kernel import function_name
from .cta import MAX_THREADS, CtaPlan, iteration, known_extents, masked_plan, register_bucket, row_slots
from .mapping import Mapping, cta_mapping, iteration_ctas_per_sm

# The row lengths (S) compiled for, like Triton's power-of-two blocks: each gets the plan a
# static S of that length gets (T and K), so a row of exactly that length runs as fast as
# specialized and shorter ones mask their tail. Each variant costs a lowering, LLVM and
# ptxas time (about as much as a specialized compile), so the set stops at 16384 (longer
# rows take the kernel's own entry) and below at 1024 (shorter rows take that variant).
VARIANT_SIZES = (1024, 2048, 4096, 8192, 16384)
BAD_VARIANT = "E0066"


@dataclass(frozen=True)
class Variant:
    """One register-form entry: it serves launches where `extent` ≤ `max`."""
    entry: str
    extent: str          # the kernel's dynamic extent (or index parameter) that selects it
    min: int             # the smallest value of `extent` it serves (its slots below it are unguarded)
    max: int             # the largest value of `extent` it serves
    block: int           # its CTA size (exact: the code is compiled for it)
    slots: int           # coordinates a thread keeps in registers
    ctas_per_sm: int

    def to_json(self) -> dict:
        return asdict(self)


def row_extent(kernel: Kernel, known: dict[str, int]) -> tuple[str, int] | None:
    """(extent, factor) when every tensor of the iteration (but histogram counts) has
    factor × extent elements, `extent` a dynamic extent or `index` parameter of the kernel
    and the other axes static; None otherwise."""
    found = iteration(kernel)
    if found is None:
        return None
    _, ops = found
    shapes = {tuple(type_.shape) for op in ops if op.name != "histogram"
              for type_ in op.result_types if isinstance(type_, TensorType) and type_.shape}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    names = _extent_names(kernel)
    factor, dynamic = 1, []
    for extent in shape:
        if isinstance(extent, int):
            factor *= extent
        elif extent in known:
            factor *= known[extent]
        else:
            dynamic.append(names.get(extent))
    if len(dynamic) != 1 or dynamic[0] is None or factor == 0:
        return None
    return dynamic[0], factor


def _extent_names(kernel: Kernel) -> dict[str, str]:
    """Names a shape may use for a kernel-level extent → that extent: the views' declared
    extents, `index` parameters, and `dim`s of views along a declared extent."""
    names: dict[str, str] = {}
    shapes = {p.name: p.type.shape for p in kernel.params if isinstance(p.type, ViewType)}
    for shape in shapes.values():
        names.update((e, e) for e in shape if isinstance(e, str))
    names.update((p.name, p.name) for p in kernel.params
                 if isinstance(p.type, TensorType) and not p.type.shape and p.type.dtype == "index")
    for op in kernel.body:
        if op.name == "dim" and op.operands[0] in shapes:
            declared = shapes[op.operands[0]][op.int_attr("axis")]
            if isinstance(declared, str):
                names[op.results[0]] = declared
    return names


@dataclass(frozen=True)
class VariantRule:
    """How a launch's row length picks its register-form variant (launch.json `variant_rule`):
    the iteration has `factor` × `extent` elements; a row of S ≤ `largest` elements runs the
    variant of `register_bucket(S, slots, vector)`, compiled on first use where the compile
    was lazy (`Specialization.lazy_variants`)."""
    extent: str
    factor: int
    slots: int           # K the body wants (short rows get fewer)
    vector: int
    largest: int         # the most elements a variant serves (K × the largest CTA)

    def to_json(self) -> dict:
        return asdict(self)

    def bucket(self, value: int) -> tuple[int, int] | None:
        """(fewest, most) elements of the variant for a launch binding `extent` to `value`;
        None past `largest` or for an empty row (the kernel's own entry serves those)."""
        elements = value * self.factor
        if not 0 < elements <= self.largest:
            return None
        return register_bucket(elements, self.slots, self.vector)


def variant_rule(kernel: Kernel, base: Mapping, specialization: Specialization | None) -> VariantRule | None:
    """The rule of a kernel whose own mapping is not the register form; None when its row
    length is static or not one dynamic extent, or its body does not fit the register form."""
    if base.mma is not None or base.plan is not None or (base.cta is not None and (base.cta.slots or base.cta.grid)):
        return None     # (the tensor-core mapping and the kernel plans serve every extent themselves)
    known = known_extents(kernel, specialization or Specialization())
    row = row_extent(kernel, known)
    form = row_slots(kernel, known, specialization or Specialization()) if row is not None else None
    if row is None or form is None:
        return None
    (extent, factor), (slots, vector) = row, form
    return VariantRule(extent, factor, slots, vector, slots * MAX_THREADS)


def check_variant(kernel: Kernel, rule: VariantRule | None, variant: tuple[int, ...], file: str,
                  source: str | None) -> tuple[int, int]:
    """`variant` (Specialization.variant: fewest, most elements) when it is a bucket of the
    kernel's `rule`; otherwise a BAD_VARIANT diagnostic at the kernel."""
    if rule is not None and len(variant) == 2 and 0 < variant[1] <= rule.largest \
            and register_bucket(variant[1], rule.slots, rule.vector) == tuple(variant):
        return variant[0], variant[1]
    line, col = (kernel.loc.line, kernel.loc.col) if kernel.loc else (1, 1)
    hint = (f"buckets come from launch.json's variant_rule: VariantRule.bucket(row length), rows up to "
            f"{rule.largest} elements" if rule else "only a CTA-mapped row of one dynamic extent has variants")
    raise DiagnosticError([Diagnostic(BAD_VARIANT, f"specialization `variant` {tuple(variant)} is not a register-form "
                                      f"variant of kernel @{kernel.name}", line, col, file, hint)], source)


def variant_mapping(kernel: Kernel, base: Mapping, specialization: Specialization | None, fewest: int,
                    most: int) -> Mapping:
    """The mapping of the register-form variant serving rows of `fewest`..`most` elements."""
    known = known_extents(kernel, specialization or Specialization())
    return cta_mapping(kernel, masked_plan(kernel, known, fewest, most, specialization or Specialization()), known,
                       base.coordinate_regions)


def eager_variants(kernel: Kernel, base: Mapping, rule: VariantRule,
                   specialization: Specialization | None) -> list[tuple[Variant, Mapping]]:
    """The variants an eager compile emits into the kernel's module: one a bound of
    VARIANT_SIZES that the register form holds, each serving the rows above the previous."""
    fewest, found = 1, []
    for most in (size for size in VARIANT_SIZES if size <= rule.largest):
        mapping = variant_mapping(kernel, base, specialization, fewest, most)
        assert mapping.cta is not None
        found.append((_variant(kernel.name, mapping.cta, rule), mapping))
        fewest = most + 1
    return found


def exact_row(specialization: Specialization, rule: VariantRule, fewest: int, most: int) -> Specialization:
    """The specialization a variant is lowered with: a bucket of one row length (fewest =
    most, `register_bucket`'s groups filling S exactly, as the power-of-two rows do) is only
    launched with `rule.extent` bound to that length, so it is lowered as the kernel
    specialized to it (constant strides and extents: a vector group's alignment and every
    bound fold as the code is built, not in LLVM). The request keeps its specialization:
    the variant's cache key and argument words stay those of the dynamic kernel."""
    if fewest != most or most % rule.factor:
        return specialization
    return specialization.model_copy(update={"extents": {**specialization.extents, rule.extent: most // rule.factor}})


def served_launches(kernel: str, mapping: Mapping, rule: VariantRule) -> Variant:
    """The record of a variant compiled alone (`launch.json` `serves`): the kernel's own entry
    serving the launches that bind `rule.extent` to `min` … `max`."""
    assert mapping.cta is not None
    return replace(_variant(kernel, mapping.cta, rule), entry=function_name(kernel))


def _variant(kernel: str, plan: CtaPlan, rule: VariantRule) -> Variant:
    return Variant(f"{function_name(kernel)}_s{plan.size}", rule.extent, -(-plan.fewest // rule.factor),
                   plan.size // rule.factor, plan.threads, plan.slots, iteration_ctas_per_sm(plan))


def link_variant(module: llvm.ModuleRef, text: str, function: str, entry: str,
                 context: llvm.ContextRef | None = None) -> None:
    """Links a variant's lowered module (LLVM IR `text`, entry `function`) into `module` as
    `entry`; its other definitions become internal so they cannot clash. `context`:
    `module`'s, where it is not the global one (`machine.context`)."""
    variant = llvm.parse_assembly(text, context)
    for defined in variant.functions:
        if defined.is_declaration:
            continue
        if defined.name == function:
            defined.name = entry
        else:
            defined.linkage = llvm.Linkage.internal
    module.link_in(variant)
