"""A known divergence, kept visible: generic_reduce with an identity that is not neutral for
every value (nan_max's maximum_num with -inf: maximum_num(-inf, NaN) = -inf). §6 makes
neutrality the author's precondition, so either answer is allowed, but the targets must
agree: the interpreter folds an all-NaN row from its first member (NaN), while the shared
lowering (cpu, and cuda's CTA partials) starts every fold from the identity (-inf). Strict:
this fails once the backends keep the identity out of non-empty folds (a presence flag, as
the CTA generic_scan has), and the xfail must then go."""
import numpy as np
import pytest

import intentc
from sample_paths import sample_text


@pytest.mark.xfail(strict=True, reason="cpu folds generic_reduce from the identity, the interpreter from the "
                                       "first member: they differ where the identity is not neutral")
def test_all_nan_row_of_nan_max_agrees_with_the_interpreter():
    x = np.full((2, 3), np.nan, dtype=np.float32)
    results = {}
    for target in ("interp", "cpu"):
        outs = {"relu_prop": np.zeros_like(x), "relu_num": np.zeros_like(x),
                "row_max": np.zeros(2, np.float32), "row_nanmax": np.zeros(2, np.float32)}
        intentc.load(sample_text("nan_max_vs_maximum_num"), "nan_max", target=target)(x=x, **outs)
        results[target] = outs["row_nanmax"]
    assert results["cpu"].tobytes() == results["interp"].tobytes(), results
