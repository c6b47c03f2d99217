"""A host evaluator of the 32-bit integer PTX the tile generators write in asm blocks
(`nvptx/asm_block.py`): enough of the ISA (mov, and, or, xor, not, shl, shr.u32, add, sub,
bfe.u32, prmt.b32) to run a block's lines on given register values in tests, without a GPU.
Shift amounts past 31 give 0 (PTX clamps them to the width)."""
from __future__ import annotations

import re

MASK = 0xFFFFFFFF


def _prmt(a: int, b: int, selector: int) -> int:
    source = a | b << 32
    result = 0
    for lane in range(4):
        byte = source >> 8 * (selector >> 4 * lane & 7) & 0xFF
        if selector >> 4 * lane & 8:        # sign replication of the selected byte
            byte = 0xFF if byte & 0x80 else 0
        result |= byte << 8 * lane
    return result


_OPERATIONS = {
    "mov": lambda a: a, "not": lambda a: ~a & MASK,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "shl": lambda a, b: a << b & MASK if b < 32 else 0, "shr": lambda a, b: a >> b if b < 32 else 0,
    "add": lambda a, b: (a + b) & MASK, "sub": lambda a, b: (a - b) & MASK,
    "bfe": lambda a, b, c: a >> b & ((1 << c) - 1) if b < 32 else 0, "prmt": _prmt,
}


def run(lines: list, registers: dict) -> dict:
    """`registers` (name -> int) after the instructions of `lines` (each line one or more
    instructions separated by `;`)."""
    values = dict(registers)
    for line in lines:
        for instruction in filter(None, (part.strip() for part in line.split(";"))):
            opcode, *operands = re.split(r"[ ,]+", instruction)
            kind = opcode.split(".")[0]
            if kind == "shr":
                assert opcode == "shr.u32", opcode        # (arithmetic shifts are not written)
            arguments = [values[op] if op in values else int(op, 0) for op in operands[1:]]
            values[operands[0]] = _OPERATIONS[kind](*arguments)
    return values
