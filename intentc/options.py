"""Compile options (spec §5.6) and specialization values: what a compile call may choose.

Both are frozen pydantic models so that they validate user input (CLI flags, HTTP bodies)
and serialize canonically into the cache key.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Numerics = Literal["source", "relaxed_normalization"]


class CompileOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    # §5.6: `source` keeps every ordinary contract; `relaxed_normalization` additionally allows
    # the segmented online form of normalized summaries.
    numerics: Numerics = "source"
    # §5.6: enables (never forces) the online-reduction rewrite; disabling it changes no meaning.
    online_reduction: bool = True
    # A pass pipeline string (`canonicalize,cse,...`); None means the target's default.
    pipeline: str | None = None
    opt_level: int = Field(default=2, ge=0, le=3)


ConstexprValue = bool | int | float | str


class Specialization(BaseModel):
    """Values the output depends on beyond the text: constexprs, static extents, proven facts."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    constexprs: dict[str, ConstexprValue] = Field(default_factory=dict)
    # Dynamic extents fixed at compile time (`{"N": 1024}`); others stay dynamic.
    extents: dict[str, int] = Field(default_factory=dict)
    # Facts the runtime proved per view parameter: unit innermost stride, 16-byte alignment.
    unit_stride: tuple[str, ...] = ()
    aligned16: tuple[str, ...] = ()
    # Views the runtime proved dense row-major (each stride is the product of the extents
    # after it) and inside their allocation; with known extents this bounds every address
    # (the address-width pass, §2), and an access checks only the extents (not the allocation).
    contiguous: tuple[str, ...] = ()
    # GPU register-form variants for a row length known only at launch (nvptx/variants.py):
    # `lazy_variants` (the default, every entry point) leaves them out of the compile
    # (launch.json's `variant_rule` says which to ask for: the runtime compiles, or asks the
    # service for, each on first use); False emits the eager module for a consumer that
    # cannot compile; `variant` = (fewest, most) elements compiles only the variant serving
    # rows of that many elements (docs/gpu.md, "Variants for dynamic extents").
    lazy_variants: bool = True
    variant: tuple[int, int] | tuple[()] = ()
    # GPU register form: the coordinates a thread owns in an iteration of independent
    # coordinates (reads, element-wise ops, writes), e.g. 4 for compile time (docs/gpu.md);
    # 0 keeps the kept-tensor rule, the form the H200 verified. Awaits GPU verification.
    independent_slots: int = Field(default=0, ge=0, le=32)

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_of_a_variant(cls, fields):
        """A variant's compile holds no other variant: `lazy_variants` says nothing there, so
        it takes one value (one cache key for one compile, whoever asks)."""
        if isinstance(fields, dict) and fields.get("variant"):
            return {**fields, "lazy_variants": True}
        return fields
