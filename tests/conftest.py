from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "ir_samples").glob("*.kir"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
