"""A K step's fragment work on the tensor cores as one inline asm (docs/gpu.md, "Compile
pipeline", session 10): the step's `ldmatrix` loads, every fragment's MMA chain and what
joins each sum to its accumulator, with the fragments in the asm's own registers.

Built op by op, each `ldmatrix` and MMA chain was an asm of its own whose result struct
LLVM extracted field by field, and the accumulators (SROA's vectors of a register array)
were taken apart and rebuilt around every chain: mxfp4's K step was 492 LLVM instructions,
of which 320 extracted or inserted values, and LLVM's instruction selection of them was
the largest part of these kernels' code generation. As one asm the step is its addresses,
one call and the accumulators' extraction; ptxas gets the same instructions (the
`ldmatrix`, `mma` and finishing instructions in the order they were built) and allocates
the registers itself as before.

Operands: the results are the accumulators (`result(r)`), each tied to its input
(`accumulator(r)`: the same register); values the text reads are `operand(value)`; the
asm's own registers come from `registers`."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .ptx_asm import asm, outputs

# an operand's inline-asm constraint by LLVM type
_CONSTRAINTS = {F32: "f", I32: "r", I64: "l"}
# the asm's own registers: PTX type -> name prefix (scoped to the asm's braces)
_PREFIXES = {"b32": "%sb", "f32": "%sf"}


class StepAsm:
    """Collects one asm's lines and operands; `emit` builds the call."""

    def __init__(self, b: ir.IRBuilder, accumulators: list):
        self.b = b
        self.accumulators = accumulators
        self.inputs: list = []
        self.positions: dict = {}
        self.lines: list[str] = []
        self.counts = dict.fromkeys(_PREFIXES, 0)
        self.zero_register: str | None = None

    def result(self, register: int) -> str:
        return f"${register}"

    def accumulator(self, register: int) -> str:
        """Accumulator register `register`'s value before the asm (tied to its result)."""
        return f"${len(self.accumulators) + register}"

    def operand(self, value: ir.Value) -> str:
        """The asm's name of an LLVM value it reads (one operand a value)."""
        if id(value) not in self.positions:
            self.positions[id(value)] = 2 * len(self.accumulators) + len(self.inputs)
            self.inputs.append(value)
        return f"${self.positions[id(value)]}"

    def registers(self, kind: str, count: int) -> list[str]:
        """`count` fresh registers of the asm of PTX type `kind` ("b32", "f32")."""
        first = self.counts[kind]
        self.counts[kind] += count
        return [f"{_PREFIXES[kind]}{first + i}" for i in range(count)]

    def line(self, text: str) -> None:
        self.lines.append(text)

    def zero(self) -> str:
        """An f32 register of the asm holding +0.0 (set once)."""
        if self.zero_register is None:
            self.zero_register = self.registers("f32", 1)[0]
            self.line(f"mov.f32 {self.zero_register}, 0f00000000;")
        return self.zero_register

    def chain(self, text, steps: list, into: list, start: list) -> None:
        """MMAs chained from registers `start` into registers `into` (each one's D the next
        one's C): `text(d, operands, c)` is one MMA's PTX (`ptx_asm.mma_m16n8k16_text`), `steps`
        each MMA's operand registers."""
        for operands in steps:
            self.line(text(", ".join(into), operands, ", ".join(start)))
            start = into

    def ldmatrix_x4(self, address: ir.Value, transpose: bool, offset: int = 0) -> list[str]:
        """Four 8x8 b16 matrices (`ptx_asm.ldmatrix_x4`'s instruction) into fresh registers."""
        words = self.registers("b32", 4)
        suffix = ".trans" if transpose else ""
        at = self.operand(address) + (f"+{offset}" if offset else "")
        self.line(f"ldmatrix.sync.aligned.m8n8.x4{suffix}.shared.b16 {{{', '.join(words)}}}, [{at}];")
        return words

    def emit(self) -> list:
        """The call; the accumulators after it."""
        count = len(self.accumulators)
        kind = self.accumulators[0].type
        declared = " ".join(f".reg .{name} {_PREFIXES[name]}<{used}>;" for name, used in self.counts.items() if used)
        body = f"{{ {declared} {' '.join(self.lines)} }}"
        constraints = ",".join([f"={_CONSTRAINTS[kind]}"] * count + [str(i) for i in range(count)]
                               + [_CONSTRAINTS[value.type] for value in self.inputs] + ["~{memory}"])
        result = asm(self.b, body, constraints, ir.LiteralStructType([kind] * count),
                     [*self.accumulators, *self.inputs])
        return outputs(self.b, result, count)
