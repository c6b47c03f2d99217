import sys
from pathlib import Path

# The interpreter's sample cases (inputs builders) live in tests/interp/test_samples.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interp"))
