"""KIR dtypes as LLVM types.

Every dtype has a *register* type (how a value lives in SSA and in compiler temporaries) and
a *storage* type (how an element lives in a view). They differ for bool (i1 / one byte) and
for the low-precision floats: f16, bf16 and the f8 formats compute as exact f64 images of
their values (every op rounds once into the format, as the interpreter does) and are stored
as their bit patterns (i16 / i8), converted in software (`lowfloat.py`); a NaN's sign and
payload ride at the top of the f64 fraction, so copies and bitcasts keep its bits.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...ir.dtypes import is_float, is_signed  # noqa: F401  (re-exported for the lowering)
from ...ir.types import BIT_WIDTH

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()
LOW_FLOATS = ("f16", "bf16", "f8e4m3fn", "f8e5m2")


@dataclass(frozen=True)
class LowFormat:
    """A float format narrower than f32, decoded to and rounded from f64 in software."""
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max_finite: float
    has_inf: bool = True

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def min_exponent(self) -> int:
        return 1 - self.bias

    @property
    def precision(self) -> int:
        return self.mantissa_bits + 1


LOW_FORMATS = {
    "f16": LowFormat(5, 10, 15, 65504.0),
    "bf16": LowFormat(8, 7, 127, 3.3895313892515355e38),
    "f8e4m3fn": LowFormat(4, 3, 7, 448.0, has_inf=False),
    "f8e5m2": LowFormat(5, 2, 15, 57344.0),
}


def is_low(dtype: str) -> bool:
    return dtype in LOW_FLOATS


def register_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I1
    if dtype == "f32":
        return F32
    if dtype == "f64" or dtype in LOW_FLOATS:
        return F64
    if dtype == "enum":
        return I64
    return ir.IntType(BIT_WIDTH[dtype])


def storage_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I8
    if dtype in LOW_FLOATS:
        return ir.IntType(BIT_WIDTH[dtype])
    return register_type(dtype)


def const(dtype: str, value: float) -> ir.Constant:
    """A register-typed constant; `value` is already representable in `dtype`."""
    type_ = register_type(dtype)
    if isinstance(type_, ir.IntType):
        bits = type_.width
        value = int(value) & ((1 << bits) - 1) if bits > 1 else int(bool(value))
        return ir.Constant(type_, value)
    return ir.Constant(type_, float(value))


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, int(value))


def ir_int(bits: int) -> ir.IntType:
    return ir.IntType(bits)
