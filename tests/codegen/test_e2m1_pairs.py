"""The MX staging's e2m1 decode (`tile_structured.e2m1_pair`): each field of a carrier byte
masked where it lies in its 32-bit word and shifted to its place in a word of two f16 must
equal the decode the module docstring states (low code in the low half: sign to bit 15,
magnitude to bits 9-11), for every byte value at every byte position. Run on the host CPU
(the decode is integer arithmetic only; no GPU needed)."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from intentc.codegen.llvm.builder import LoweringBuilder
from intentc.codegen.nvptx.tile_structured import e2m1_pair

I32 = ir.IntType(32)


def reference(byte: int) -> int:
    def half(code: int) -> int:
        return ((code & 8) << 12) | ((code & 7) << 9)
    return half(byte & 15) | (half(byte >> 4) << 16)


def compiled_decoder():
    """decode(low word, high word, index) -> e2m1_pair of byte `index` (0..7), JIT-compiled."""
    module = ir.Module()
    function = ir.Function(module, ir.FunctionType(I32, [I32, I32, I32]), "decode")
    b = LoweringBuilder(function.append_basic_block())
    low, high, index = function.args
    results = [e2m1_pair(b, [low, high], j) for j in range(8)]
    chosen = results[0]
    for j in range(1, 8):
        chosen = b.select(b.icmp_unsigned("==", index, ir.Constant(I32, j)), results[j], chosen)
    b.ret(chosen)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(str(module))
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    decode = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32)(
        engine.get_function_address("decode"))
    return decode, engine


def test_every_byte_at_every_position_decodes_as_the_docstring_says():
    decode, _engine = compiled_decoder()
    rng = np.random.default_rng(7)
    for position in range(8):
        for byte in range(256):
            words = [int(w) for w in rng.integers(0, 1 << 32, 2, dtype=np.uint64)]
            word, shift = position // 4, 8 * (position % 4)
            words[word] = (words[word] & ~(0xFF << shift) & 0xFFFFFFFF) | (byte << shift)
            assert decode(words[0], words[1], position) == reference(byte), (position, byte)
