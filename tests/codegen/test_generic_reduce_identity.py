"""generic_reduce with an identity that is not neutral for every value (nan_max's
maximum_num with -inf: maximum_num(-inf, NaN) = -inf). §6 makes neutrality the author's
precondition, but the targets must still agree: every fold starts from its first member,
never from the identity, so an all-NaN row is NaN on the interpreter and on cpu alike (and
cuda's CTA partials, tests/gpu/test_cta_reductions.py)."""
import numpy as np

import intentc
from sample_paths import sample_text


def test_all_nan_row_of_nan_max_agrees_with_the_interpreter():
    x = np.full((2, 3), np.nan, dtype=np.float32)
    results = {}
    for target in ("interp", "cpu"):
        outs = {"relu_prop": np.zeros_like(x), "relu_num": np.zeros_like(x),
                "row_max": np.zeros(2, np.float32), "row_nanmax": np.zeros(2, np.float32)}
        intentc.load(sample_text("nan_max_vs_maximum_num"), "nan_max", target=target)(x=x, **outs)
        results[target] = outs["row_nanmax"]
    assert results["cpu"].tobytes() == results["interp"].tobytes(), results
