from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "ir_samples"


def sample_text(name: str) -> str:
    return (SAMPLES / f"{name}.kir").read_text()
