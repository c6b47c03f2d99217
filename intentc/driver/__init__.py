"""The compile driver: text → verified module → target artifacts, one registry of targets."""
from .compile import CompileResult, Request, compile_kernel, compile_request, front_end, optimized
from .targets import TARGETS, Target, register_target

__all__ = ["TARGETS", "CompileResult", "Request", "Target", "compile_kernel", "compile_request", "front_end",
           "optimized", "register_target"]
