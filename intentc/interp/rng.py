"""Philox4x32-10 random bits and uniform floats, exactly as spec §12 writes them."""
from __future__ import annotations

import numpy as np

from ..ir import errors
from .errors import check
from .machine import IMPLS

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
LOW = np.uint64(0xFFFFFFFF)


def _mul_wide(multiplier: np.uint64, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    product = multiplier * value.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), (product & LOW).astype(np.uint32)


def philox4x32_10(counter: tuple, key: tuple) -> tuple[np.ndarray, ...]:
    """Ten Philox rounds on counter words (c0..c3) and key words (k0, k1), all uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint32) for k in key)
    with np.errstate(over="ignore"):
        for _ in range(10):
            hi0, lo0 = _mul_wide(M0, c0)
            hi1, lo1 = _mul_wide(M1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            k0 = (k0 + W0).astype(np.uint32)
            k1 = (k1 + W1).astype(np.uint32)
    return c0, c1, c2, c3


def random_bits(seed, counter) -> np.ndarray:
    """The u32 word of Philox4x32-10 at `counter` for `seed` (block = counter // 4)."""
    counter = np.asarray(counter)
    if counter.dtype.kind == "i":
        check(counter < 0, errors.NEGATIVE_COUNTER, "random counter is negative")
    counter = counter.astype(np.uint64)
    seed = np.asarray(seed).astype(np.uint64)
    block, word = counter >> np.uint64(2), counter & np.uint64(3)
    zeros = np.zeros(counter.shape, dtype=np.uint32)
    words = philox4x32_10(
        ((block & LOW).astype(np.uint32), (block >> np.uint64(32)).astype(np.uint32), zeros, zeros),
        ((seed & LOW).astype(np.uint32), (seed >> np.uint64(32)).astype(np.uint32)))
    return np.choose(word.astype(np.int64), words).astype(np.uint32)


def uniform(seed, counter) -> np.ndarray:
    bits = random_bits(seed, counter)
    return ((bits >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float32)


@IMPLS.register("random_bits")
def _random_bits_op(machine, op):
    return random_bits(*machine.operands(op))


@IMPLS.register("uniform")
def _uniform_op(machine, op):
    return uniform(*machine.operands(op))
