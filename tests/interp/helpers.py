"""Shared helpers: run one op on given operands through a tiny generated kernel."""
from __future__ import annotations

import numpy as np

from intentc.api import run
from intentc.interp.values import KIR_DTYPE


def kir_dtype(array: np.ndarray) -> str:
    return KIR_DTYPE[np.asarray(array).dtype]


def _shape(array) -> str:
    return "[" + ", ".join(str(n) for n in np.shape(array)) + "]"


def run_op(op: str, operands: list[np.ndarray], result_dtype: str, attrs: str = "", seed: int = 0,
           result_shape=None) -> np.ndarray:
    """Evaluate `%r = op %a0, %a1 ... {attrs} : tensor<result_dtype, shape>` on 1-d arrays."""
    operands = [np.atleast_1d(np.asarray(o)) for o in operands]
    n = operands[0].shape[0]
    params = ", ".join(f"%a{i}: view<{kir_dtype(o)}, [{n}], in>" for i, o in enumerate(operands))
    shape = f"[{n}]" if result_shape is None else result_shape
    reads = "\n".join(f"  %v{i} = read %a{i} index(%c) : tensor<{kir_dtype(o)}, [{n}]>"
                      for i, o in enumerate(operands))
    names = ", ".join(f"%v{i}" for i in range(len(operands)))
    text = f"""kernel @k({params}, %out: view<{result_dtype}, {shape}, out>) {{
  %c = iota : tensor<index, [{n}]>
{reads}
  %r = {op} {names} {attrs} : tensor<{result_dtype}, {shape}>
  write %out, %r index(%c)
}}
"""
    return run(text, "k", {f"a{i}": o for i, o in enumerate(operands)}, seed=seed)["out"]
