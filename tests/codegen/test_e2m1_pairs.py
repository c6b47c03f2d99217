"""The MX staging's e2m1 decode (`tile_structured.e2m1_fields`, which `e2m1_pair` writes as
PTX: each field of a carrier byte masked where it lies in its 32-bit word and shifted to its
place in a word of two f16) must equal the decode the module docstring states (low code in
the low half: sign to bit 15, magnitude to bits 9-11), for every byte value at every byte
position, and so must the PTX of those fields, run on the host (`ptx_eval`). Host only (the
GPU tests run the decoded values through the MMAs)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir

import ptx_eval
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


def cases(seed: int):
    """(byte, position, two random words holding the byte at that position) for every byte
    value at every position of the run."""
    rng = np.random.default_rng(seed)
    for position in range(8):
        for byte in range(256):
            words = [int(w) for w in rng.integers(0, 1 << 32, 2, dtype=np.uint64)]
            word, shift = position // 4, 8 * (position % 4)
            words[word] = (words[word] & ~(0xFF << shift) & 0xFFFFFFFF) | (byte << shift)
            yield byte, position, words


def test_every_byte_at_every_position_decodes_as_the_docstring_says():
    for byte, position, words in cases(7):
        assert decoded(words, position) == reference(byte), (position, byte)


def test_the_ptx_decodes_every_byte_at_every_position():
    """`e2m1_pair`'s PTX run on the host (`ptx_eval`)."""
    function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    block = AsmBlock(ir.IRBuilder(function.append_basic_block()))
    pairs = [e2m1_pair(block, ["%w0", "%w1"], position) for position in range(8)]
    for byte, position, words in cases(11):
        values = ptx_eval.run(block.lines, {"%w0": words[0], "%w1": words[1]})
        assert values[pairs[position]] == reference(byte), (position, byte)
