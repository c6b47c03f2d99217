"""Straight-line PTX of the tile generators as one inline asm (docs/gpu.md, "Compile
pipeline", session 10): a tensor-core K step (its `ldmatrix` loads, every fragment's MMA
chain and what joins each sum to its accumulator), a register-staged step's decoding and
shared-memory stores, with the intermediate values in the asm's own registers.

Built op by op in LLVM IR, each `ldmatrix` and MMA chain was an asm of its own whose result
struct LLVM extracted field by field, the accumulators (SROA's vectors of a register array)
were taken apart and rebuilt around every chain, and the decoding's shifts, masks and ors
were the most expensive instructions of the kernels for LLVM's InstCombine (its byte-swap
matcher walks every or-tree) and instruction selection (known-bits queries on each): mxfp4's
K step was 492 LLVM instructions, its decoding 275, together about half of its CPU time to
PTX. As one asm each is its inputs, one call and its results' extraction; ptxas gets the same
instructions in the same order and optimizes and allocates them as before.

Operands: the results come first (`result(r)`), those `tied` to an input read it as
`accumulator(r)` (the same register); values the text reads are `operand(value)`; the asm's
own registers come from `registers`."""
from __future__ import annotations

import re

from llvmlite import ir

from ..llvm.types import F32, I16, I32, I64
from .ptx_asm import asm, outputs

# an operand's inline-asm constraint by LLVM type
_CONSTRAINTS = {F32: "f", I16: "h", I32: "r", I64: "l"}
# the asm's own registers: PTX type -> name prefix (scoped to the asm's braces)
_PREFIXES = {"b32": "%sb", "b64": "%sd", "f32": "%sf", "pred": "%sp"}
NEWLINE = "\\0A\\09"


class AsmBlock:
    """Collects one asm's lines and operands; `emit` builds the call. `tied`: values whose
    registers the asm updates in place (results 0..); `results`: the types of further results."""

    def __init__(self, b: ir.IRBuilder, tied: tuple | list = (), results: tuple | list = ()):
        self.b = b
        self.tied = list(tied)
        self.types = [value.type for value in self.tied] + list(results)
        self.inputs: list = []
        self.positions: dict = {}
        self.lines: list[str] = []
        self.counts = dict.fromkeys(_PREFIXES, 0)
        self.constants: dict = {}

    def result(self, index: int) -> str:
        return f"${index}"

    def accumulator(self, index: int) -> str:
        """Tied value `index` before the asm (the register of result `index`)."""
        return f"${len(self.types) + index}"

    def operand(self, value: ir.Value) -> str:
        """The asm's name of an LLVM value it reads (one operand a value)."""
        if id(value) not in self.positions:
            self.positions[id(value)] = len(self.types) + len(self.tied) + len(self.inputs)
            self.inputs.append(value)
        return f"${self.positions[id(value)]}"

    def registers(self, kind: str, count: int) -> list[str]:
        """`count` fresh registers of the asm of PTX type `kind` ("b32", "b64", "f32", "pred")."""
        first = self.counts[kind]
        self.counts[kind] += count
        return [f"{_PREFIXES[kind]}{first + i}" for i in range(count)]

    def line(self, text: str) -> None:
        self.lines.append(text)

    def constant(self, kind: str, literal: str) -> str:
        """A register of the asm of PTX type `kind` holding `literal` (set once)."""
        if (kind, literal) not in self.constants:
            self.constants[kind, literal] = self.registers(kind, 1)[0]
            self.line(f"mov.{kind} {self.constants[kind, literal]}, {literal};")
        return self.constants[kind, literal]

    def zero(self) -> str:
        """An f32 register of the asm holding +0.0."""
        return self.constant("f32", "0f00000000")

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

    def store_shared(self, address: ir.Value, words: list[str]) -> None:
        """Four (or one) b32 registers to a 16-byte (4-byte) aligned shared address."""
        at = self.operand(address)
        if len(words) == 1:
            self.line(f"st.shared.b32 [{at}], {words[0]};")
        else:
            self.line(f"st.shared.v4.b32 [{at}], {{{', '.join(words)}}};")

    def emit(self) -> list:
        """The call; its results (none: an empty list)."""
        declared = [f".reg .{kind} {_PREFIXES[kind]}<{used}>;" for kind, used in self.counts.items() if used]
        # one instruction a line of the PTX (LLVM's escapes for a newline and a tab)
        instructions = [part for line in self.lines for part in re.split(r"(?<=;) ", line)]
        body = NEWLINE.join(["{", *declared, *instructions, "}"])
        count = len(self.types)
        constraints = ",".join([f"={_CONSTRAINTS[kind]}" for kind in self.types] + [str(i) for i in range(len(self.tied))]
                               + [_CONSTRAINTS[value.type] for value in self.inputs] + ["~{memory}"])
        result_type = ir.LiteralStructType(self.types) if count > 1 else self.types[0] if count else ir.VoidType()
        result = asm(self.b, body, constraints, result_type, [*self.tied, *self.inputs])
        return outputs(self.b, result, count) if count else []
