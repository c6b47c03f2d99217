"""Fixtures of the service tests: one shared server (2 workers, the sleepy target)."""
from __future__ import annotations

import itertools

import pytest

from harness import ServiceProcess
from sample_files import ROOT

SAMPLE = ROOT / "ir_samples" / "row_softmax.kir"
_unique = itertools.count(1)


@pytest.fixture(scope="session")
def service(tmp_path_factory) -> ServiceProcess:
    server = ServiceProcess(tmp_path_factory.mktemp("service")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sample_source() -> str:
    return SAMPLE.read_text()


@pytest.fixture
def cold_request(sample_source):
    """A compile request no test has sent before: the same module, a fresh extent value."""
    def make(**overrides) -> dict:
        body = {"source": sample_source, "kernel": "row_softmax", "target": "kir",
                "specialization": {"extents": {"N": 1000 + next(_unique)}}}
        return {**body, **overrides}
    return make


@pytest.fixture
def distinct_request():
    """A compile request no test has sent before whose artifacts differ from every other's: an
    empty kernel with a fresh name."""
    def make() -> dict:
        kernel = f"distinct_{next(_unique)}"
        return {"source": f"kernel @{kernel}() {{\n}}\n", "kernel": kernel, "target": "kir"}
    return make
