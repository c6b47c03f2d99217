"""The compile driver: text → verified module → target artifacts, one registry of targets."""
from .compile import CompileResult, compile_kernel
from .targets import TARGETS, Target, register_target

from ..codegen import targets as _codegen_targets  # noqa: E402,F401  (registers `llvm` and `cpu`)

__all__ = ["TARGETS", "CompileResult", "Target", "compile_kernel", "register_target"]
