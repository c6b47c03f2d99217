"""Run-time error codes: the illegal inputs and bad launches every executor reports alike.

The interpreter raises them, compiled code (CPU, GPU) reports them through its status word,
and the runtimes use them for bad launches, so one code means one thing whichever ran the
kernel. Ranges (docs/diagnostics.md): R01xx launch problems, R02xx illegal arithmetic and
conversions, R03xx illegal memory access, R04xx illegal operands of structured ops, R09xx
programs an executor cannot run.
"""

LAUNCH_MISSING_INPUT = "R0101"
LAUNCH_UNKNOWN_INPUT = "R0102"
LAUNCH_DTYPE = "R0103"
LAUNCH_RANK = "R0104"
LAUNCH_EXTENT = "R0105"
LAUNCH_CONSTEXPR = "R0106"
LAUNCH_NO_KERNEL = "R0107"
LAUNCH_LAYOUT = "R0108"
LAUNCH_NOALIAS = "R0109"

DIVISION_BY_ZERO = "R0201"
DIVISION_OVERFLOW = "R0202"
SHIFT_OUT_OF_RANGE = "R0203"
FLOAT_TO_INT = "R0204"
F8E4M3_OVERFLOW = "R0205"
NEGATIVE_EXTENT = "R0206"
NEGATIVE_COUNTER = "R0207"

OUT_OF_BOUNDS = "R0301"
UNWRITTEN_READ = "R0302"
WRITE_COLLISION = "R0303"
NOT_INJECTIVE = "R0304"
ASSUME_VIOLATED = "R0305"
WRONG_DIRECTION = "R0306"
DATA_RACE = "R0307"

SPARSE_METADATA = "R0401"
HISTOGRAM_RANGE = "R0402"
LOOP_STEP = "R0403"
SHAPE_MISMATCH = "R0404"
EMPTY_ARG_REDUCE = "R0405"

UNSUPPORTED = "R0901"
RESULT_TYPE = "R0902"
