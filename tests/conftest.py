import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sample_files import ROOT


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir(tmp_path_factory):
    """`intentc.load` (and `intentc.run --target cpu`) cache on disk: never in the user's home."""
    import os
    path = tmp_path_factory.mktemp("intentc-cache")
    previous = os.environ.get("INTENTC_CACHE_DIR")
    os.environ["INTENTC_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("INTENTC_CACHE_DIR", None)
    else:
        os.environ["INTENTC_CACHE_DIR"] = previous
