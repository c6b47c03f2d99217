import sys
from pathlib import Path

# The interpreter's sample cases (inputs builders) live in tests/interp/test_samples.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interp"))
# Programs shared with the GPU differential tests (row_programs.py) live in tests/codegen.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
