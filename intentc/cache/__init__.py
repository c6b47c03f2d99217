"""The compile cache: the key (`key.py`), sealed records, and the stores: local disk,
shared Redis, and the tiered store the service uses."""
from .disk import DiskStore
from .events import StoreEvents
from .key import KEY_SCHEMA_VERSION, KeyInputs, Toolchain, compute_key, key_text, toolchain
from .record import IntegrityError, RecordSeal, record_name
from .tiered import TieredStore

__all__ = [
    "KEY_SCHEMA_VERSION", "DiskStore", "IntegrityError", "KeyInputs", "RecordSeal", "StoreEvents", "TieredStore",
    "Toolchain", "compute_key", "key_text", "record_name", "toolchain",
]
