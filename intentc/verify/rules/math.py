"""Math functions and approximate modes (§5, §5.1): float operands of one type; the checks
are those of the pointwise ops, plus the approximate/flush_to_zero rules they include."""
from __future__ import annotations

from ...ir.optable import ops_where
from . import RULES
from .pointwise import binary, unary

RULES.add(ops_where(lambda op: op.family == "math" and len(op.operands) == 1), unary)
RULES.add(ops_where(lambda op: op.family == "math" and len(op.operands) == 2), binary)
