"""Op families, one module each; importing this package registers them all."""
from . import (  # noqa: F401
    aggregate, atomics, contraction, control, conversion, math, memory, pointwise, quant,
    reduction, rng, shape, structured,
)
