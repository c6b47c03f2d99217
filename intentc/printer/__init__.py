"""Printing KIR nodes as canonical text."""
from .printer import attr_text, print_module, print_op, type_text

__all__ = ["attr_text", "print_module", "print_op", "type_text"]
