import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sample_files import ROOT


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
