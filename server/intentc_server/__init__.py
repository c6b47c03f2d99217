"""The intentc compile service (FastAPI): `create_app`, and `intentc serve` to run it."""
from .app import create_app
from .settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]
