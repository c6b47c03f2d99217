"""The MX staging's e2m1 decode (`tile_structured.e2m1_fields`, which `e2m1_pair` writes as
PTX: each field of a carrier byte masked where it lies in its 32-bit word and shifted to its
place in a word of two f16) must equal the decode the module docstring states (low code in
the low half: sign to bit 15, magnitude to bits 9-11), for every byte value at every byte
position; and the PTX must be those fields' instructions. Host only (integer arithmetic; the
GPU tests run the decoded values through the MMAs)."""
from __future__ import annotations

import re

import numpy as np
from llvmlite import ir

from intentc.codegen.nvptx.asm_block import AsmBlock
from intentc.codegen.nvptx.tile_structured import e2m1_fields, e2m1_pair


def reference(byte: int) -> int:
    def half(code: int) -> int:
        return ((code & 8) << 12) | ((code & 7) << 9)
    return half(byte & 15) | (half(byte >> 4) << 16)


def decoded(words: list, index: int) -> int:
    pair = 0
    for word, mask, shift in e2m1_fields(index):
        field = words[word] & mask
        pair |= (field << shift if shift >= 0 else field >> -shift) & 0xFFFFFFFF
    return pair


def test_every_byte_at_every_position_decodes_as_the_docstring_says():
    rng = np.random.default_rng(7)
    for position in range(8):
        for byte in range(256):
            words = [int(w) for w in rng.integers(0, 1 << 32, 2, dtype=np.uint64)]
            word, shift = position // 4, 8 * (position % 4)
            words[word] = (words[word] & ~(0xFF << shift) & 0xFFFFFFFF) | (byte << shift)
            assert decoded(words, position) == reference(byte), (position, byte)


def test_the_ptx_is_the_fields_instructions():
    function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    block = AsmBlock(ir.IRBuilder(function.append_basic_block()))
    for position in range(8):
        block.lines.clear()
        register = e2m1_pair(block, ["%w0", "%w1"], position)
        expected = []
        for number, (word, mask, shift) in enumerate(e2m1_fields(position)):
            expected.append(("and.b32", f"%w{word}", mask))
            if shift:
                expected.append(("shl.b32" if shift > 0 else "shr.u32", abs(shift)))
            if number:
                expected.append(("or.b32", register))
        parsed = []
        for line in block.lines:
            op, *args = re.split(r"[ ,;]+", line.strip(" ;"))
            if op == "and.b32":
                parsed.append((op, args[1], int(args[2], 16)))
            elif op == "or.b32":
                assert args[0] == args[1] == register
                parsed.append((op, register))
            else:
                assert args[0] == args[1]
                parsed.append((op, int(args[2])))
        assert parsed == expected, position
