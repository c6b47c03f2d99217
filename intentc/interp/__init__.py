"""The reference interpreter: KIR's executable semantics, the oracle for every backend."""
from .launch import View, run_kernel

__all__ = ["View", "run_kernel"]
