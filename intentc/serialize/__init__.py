"""KIR ↔ JSON through the pydantic models, and the JSON Schema for other tools."""
from .json_io import from_json, json_schema, to_json

__all__ = ["from_json", "json_schema", "to_json"]
