"""`intentc serve`: run the compile service (FastAPI under uvicorn). See docs/service.md."""
from __future__ import annotations

import logging
from pathlib import Path

from .common import EXIT_OK, UsageError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP compile service (needs the `server` extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--cache-dir", type=Path, help="local cache folder (default ~/.cache/intentc/service)")
    p.add_argument("--cache-max-bytes", type=int, metavar="N", help="local cache size cap (default 1 GiB)")
    p.add_argument("--redis-url", metavar="URL", help="shared Redis store, e.g. redis://127.0.0.1:6379/0")
    p.add_argument("--workers", type=int, metavar="N", help="compile worker processes (default: CPU count)")
    p.add_argument("--max-queue", type=int, metavar="N", help="requests that may wait for a worker (default 64)")
    p.add_argument("--compile-timeout", type=float, metavar="S", dest="compile_timeout_s",
                   help="seconds before a compile is killed (default 60)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE in the server and its workers (extra targets register themselves)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        import uvicorn  # noqa: F401  (serve_app needs it)

        from intentc_server import ServiceSettings, create_app
    except ImportError as error:
        raise UsageError(f"the service needs the `server` extra: pip install 'intentc[server]' ({error})") from None
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    settings = ServiceSettings.from_env(
        cache_dir=args.cache_dir, cache_max_bytes=args.cache_max_bytes, redis_url=args.redis_url,
        workers=args.workers, max_queue=args.max_queue, compile_timeout_s=args.compile_timeout_s,
        plugins=tuple(args.plugin) or None)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app = create_app(settings)
    except ValueError as error:  # a setting out of range, e.g. a signing key too short
        raise UsageError(str(error)) from None
    serve_app(app, args.host, args.port, args.access_log)
    return EXIT_OK


def serve_app(app, host: str, port: int, access_log: bool = False) -> None:
    """Run an ASGI app as `intentc serve` runs the service (bench/service.py runs its baseline so)."""
    import uvicorn
    uvicorn.run(app, host=host, port=port, access_log=access_log, log_level="info", timeout_graceful_shutdown=10)
