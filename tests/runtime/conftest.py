from __future__ import annotations

import pytest
from fake_cuda import install_driver, install_torch


@pytest.fixture
def fake_driver(monkeypatch):
    """The CUDA runtime on a fake driver (`fake_cuda.install_driver`)."""
    return install_driver(monkeypatch)


@pytest.fixture
def fake_torch(monkeypatch):
    """`fake_cuda.FakeTensor`s taken for torch tensors."""
    install_torch(monkeypatch)
