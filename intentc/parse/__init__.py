"""Parsing KIR text into nodes."""
from .parser import parse, split_input

__all__ = ["parse", "split_input"]
