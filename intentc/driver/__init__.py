"""The compile driver: text → verified module → target artifacts, one registry of targets."""
from .compile import CompileResult, compile_kernel
from .targets import TARGETS, Target, register_target

__all__ = ["TARGETS", "CompileResult", "Target", "compile_kernel", "register_target"]
