"""Record names: a namespace and a sha256 hex digest (`entry` by cache key, `alias` by request digest)."""
from __future__ import annotations

import re
from typing import Literal

Namespace = Literal["entry", "alias"]
NAMESPACES: tuple[Namespace, ...] = ("entry", "alias")
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def is_digest(text: str) -> bool:
    return HEX_DIGEST.fullmatch(text) is not None


def check_name(namespace: str, digest: str) -> None:
    if namespace not in NAMESPACES or not is_digest(digest):
        raise ValueError(f"bad record name {namespace}/{digest!r}")
