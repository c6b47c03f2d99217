"""§12 Philox4x32-10: published Random123 known answers and the seed/counter mapping."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.interp.rng import philox4x32_10

KNOWN_ANSWERS = [  # Random123 kat_vectors: philox4x32 10 rounds
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    words = philox4x32_10(counter, key)
    assert [int(w) for w in words] == list(expected)


RANDOM_KERNEL = """kernel @bits(%seed: u64, %ctr: view<u64, [%N], in>, %bits: view<u32, [%N], out>, %u: view<f32, [%N], out>) {
  %c = iota : tensor<index, [%N]>
  %k = read %ctr index(%c) : tensor<u64, [%N]>
  %b = random_bits %seed, %k : tensor<u32, [%N]>
  %f = uniform %seed, %k : tensor<f32, [%N]>
  write %bits, %b index(%c)
  write %u, %f index(%c)
}
"""


def test_counter_and_seed_map_onto_philox_words():
    seed = 0x299F31D0A4093822            # k0 = low32, k1 = high32
    block = 0x05A308D3243F6A88           # c0 = low32(block), c1 = high32(block), c2 = c3 = 0
    counters = np.array([block * 4 + w for w in range(4)], dtype=np.uint64)
    out = run(RANDOM_KERNEL, "bits", {"seed": np.uint64(seed), "ctr": counters})
    expected = philox4x32_10((0x243F6A88, 0x05A308D3, 0, 0), (0xA4093822, 0x299F31D0))
    assert out["bits"].tolist() == [int(w) for w in expected]


def test_counter_zero_seed_zero_is_the_first_known_answer():
    out = run(RANDOM_KERNEL, "bits", {"seed": np.uint64(0), "ctr": np.arange(4, dtype=np.uint64)})
    assert out["bits"].tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert out["u"].tolist() == [np.float32((b >> 8) * 2.0 ** -24) for b in out["bits"].tolist()]
    assert out["u"][0] == np.float32(0x6627E8 / 2 ** 24)
