"""Paths every test suite shares (a plain module: `conftest` names collide across folders)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "ir_samples").glob("*.kir"))
