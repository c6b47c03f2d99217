"""The FastAPI app: `create_app(settings)`; `intentc serve` runs it under uvicorn.

For another ASGI server: `uvicorn --factory intentc_server.app:create_app` (settings from
`INTENTC_*` environment variables).
"""
from __future__ import annotations

import asyncio
import importlib
import logging
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from intentc.cache import DiskStore, RecordSeal, TieredStore, toolchain
from intentc.version import __version__

from . import entries
from .auth import require_compile, require_read
from .errors import ServiceError
from .hot_path import BODY_DIGEST, FINGERPRINT, HotPath
from .limits import BodyLimit
from .metrics import ServiceMetrics
from .models import CompileRequest, CompileResponse, ErrorBody, InvalidRequest, Readiness, TargetInfo
from .pool import WorkerPool
from .service import CompileService
from .settings import ServiceSettings

log = logging.getLogger("intentc.service")
KEY_PATTERN = r"^[0-9a-f]{64}$"
JSON = "application/json"
_ERRORS = {status: {"model": ErrorBody} for status in (401, 404, 413, 500, 503, 504)}
# Every 422 the routes can answer, as declared in the OpenAPI document.
_COMPILE_422 = {"model": CompileResponse | InvalidRequest | ErrorBody,
                "description": "diagnostics (CompileResponse), a request off the schema (`invalid`) or over a "
                               "nesting limit (`limit`)"}
_ENTRY_422 = {"model": CompileResponse | InvalidRequest,
              "description": "the entry holds diagnostics (CompileResponse), or the key is not a sha256 hex digest"}
_PATH_422 = {"model": InvalidRequest, "description": "the key is not a sha256 hex digest"}


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    settings = settings or ServiceSettings.from_env()
    for plugin in settings.plugins:
        importlib.import_module(plugin)
    metrics = ServiceMetrics()
    sealer = _record_seal(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        store = TieredStore(DiskStore(settings.cache_dir, settings.cache_max_bytes, metrics, sealer),
                            _shared_store(settings, metrics, sealer), metrics)
        pool = WorkerPool(settings.workers, settings.max_queue, settings.compile_timeout_s, settings.plugins,
                          on_queue_wait=metrics.queue_wait.observe, on_busy_change=metrics.in_flight.inc)
        metrics.queue_depth.set_function(lambda: pool.waiting)
        await asyncio.gather(pool.start(), asyncio.to_thread(_hash_toolchains))
        app.state.service = CompileService(settings, store, pool, metrics)
        log.info("intentc service ready: %d workers, cache %s, redis %s", settings.workers, settings.cache_dir,
                 settings.redis_url or "off")
        try:
            yield
        finally:
            await pool.close()
            await store.close()

    app = FastAPI(title="intentc compile service", version=__version__, lifespan=lifespan,
                  description="Compiles KIR kernels; artifacts are cached by a key over everything the output "
                              "depends on. See docs/service.md.")
    app.state.settings = settings
    app.state.metrics = metrics
    app.add_middleware(HotPath, service=lambda: getattr(app.state, "service", None))
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, metrics=metrics)
    _add_error_handlers(app, metrics)
    _add_routes(app)
    return app


def _hash_toolchains() -> None:
    """Hash intentc's sources and ask every target for its toolchain facts before serving."""
    from intentc.driver import TARGETS
    for name in TARGETS:
        toolchain(name)


def _record_seal(settings: ServiceSettings) -> RecordSeal:
    key = settings.cache_signing_key
    return RecordSeal(key.encode("utf-8") if key else None)


def _shared_store(settings: ServiceSettings, metrics: ServiceMetrics, sealer: RecordSeal):
    if not settings.redis_url:
        return None
    from intentc.cache.redis_store import RedisStore
    return RedisStore(settings.redis_url, metrics, sealer=sealer, password=settings.redis_password)


def _add_error_handlers(app: FastAPI, metrics: ServiceMetrics) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, error: ServiceError):
        if error.http_status < 500 or error.http_status == 503:
            metrics.rejections.labels(error.error).inc()
        return JSONResponse(error.body(), error.http_status, headers=error.headers)

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, error: Exception):
        # A bug in the service: the server closes the connection after this answer (the error
        # propagates to it), so the answer says so instead of leaving a dead keep-alive.
        log.error("internal error answering %s %s", request.method, request.url.path, exc_info=error)
        return JSONResponse({"error": "internal", "detail": "internal server error"}, 500,
                            headers={"Connection": "close"})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError):
        metrics.rejections.labels("invalid").inc()
        return JSONResponse({"error": "invalid", "detail": "the request does not match the schema",
                             "problems": _json_safe(error.errors())}, 422)

    @app.exception_handler(HTTPException)
    async def framework_refusal(request: Request, error: HTTPException):
        if error.status_code == 400:  # FastAPI could not read the body (e.g. not UTF-8): off the schema too
            metrics.rejections.labels("invalid").inc()
            return JSONResponse({"error": "invalid", "detail": "the body is not UTF-8 JSON", "problems": [
                {"loc": ["body"], "msg": str(error.detail), "type": "json_invalid"}]}, 422)
        name = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return JSONResponse({"error": name, "detail": str(error.detail)}, error.status_code, headers=error.headers)


def _add_routes(app: FastAPI) -> None:
    @app.post("/v1/compile", response_model=CompileResponse, dependencies=[Depends(require_compile)],
              responses={422: _COMPILE_422, **_ERRORS})
    async def compile_kernel(body: CompileRequest, request: Request):
        """Compile one kernel, or answer from the cache (`status`: hit, miss or coalesced)."""
        state = request.scope.get("state", {})
        status, content = await request.app.state.service.compile(body, state.get(BODY_DIGEST),
                                                                  state.get(FINGERPRINT))
        return Response(content, status, media_type=JSON)

    @app.get("/v1/artifacts/{key}", response_model=CompileResponse, dependencies=[Depends(require_read)],
             responses={422: _ENTRY_422, **_ERRORS})
    async def get_entry(request: Request, key: str = Path(pattern=KEY_PATTERN)):
        """The cached entry for a key: its artifacts (or its diagnostics, with 422)."""
        entry = await _entry_or_404(request, key)
        return Response(entries.response_body(key, "hit", entry, {}), entries.http_status(entry), media_type=JSON)

    @app.head("/v1/artifacts/{key}", dependencies=[Depends(require_read)], responses={422: _ENTRY_422, **_ERRORS})
    async def has_entry(request: Request, key: str = Path(pattern=KEY_PATTERN)):
        """200 when the key is cached (422 when its entry holds diagnostics), else 404."""
        entry = await _entry_or_404(request, key)
        return Response(status_code=entries.http_status(entry))

    @app.get("/v1/artifacts/{key}/{name}", dependencies=[Depends(require_read)],
             responses={200: {"content": {"application/octet-stream": {}}, "description": "the artifact's bytes"},
                        422: _PATH_422, **_ERRORS}, response_class=Response)
    async def get_artifact(request: Request, name: str, key: str = Path(pattern=KEY_PATTERN)):
        """One artifact's raw bytes."""
        artifact = (await _entry_or_404(request, key))["artifacts"].get(name)
        if artifact is None:
            raise ServiceError(404, "not_found", f"entry {key} has no artifact {name!r}")
        return Response(entries.decode_artifact(artifact), media_type="application/octet-stream")

    @app.get("/v1/targets", response_model=list[TargetInfo])
    async def targets():
        """The targets this server compiles for."""
        from intentc.driver import TARGETS
        return [TargetInfo(name=t.name, summary=t.summary, archs=list(t.archs)) for t in TARGETS.values()]

    @app.get("/healthz")
    async def healthz():
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", response_model=Readiness,
             responses={503: {"model": Readiness, "description": "no compile worker is up"}})
    async def readyz(request: Request):
        """Readiness: compile workers are up. Redis being down does not make the service unready."""
        service = getattr(request.app.state, "service", None)
        workers = service.pool.live_workers if service else 0
        redis = await service.store.shared_reachable() if service else None
        body = {"ready": workers > 0, "workers": workers, "redis": redis}
        return JSONResponse(body, 200 if workers > 0 else 503)

    @app.get("/metrics", response_class=Response)
    async def metrics(request: Request):
        """Prometheus metrics."""
        return Response(request.app.state.metrics.render(), media_type="text/plain; version=0.0.4")


async def _entry_or_404(request: Request, key: str) -> dict:
    entry = await request.app.state.service.artifact_entry(key)
    if entry is None:
        raise ServiceError(404, "not_found", f"no entry for key {key}")
    return entry


def _json_safe(problems: list[dict]) -> list[dict]:
    """Validation problems without their inputs, every text encodable (a lone surrogate in a field
    name would otherwise fail the response's UTF-8 encoding)."""
    return [{"loc": [_encodable(part) for part in p.get("loc", ())], "msg": _encodable(p.get("msg", "")),
             "type": _encodable(p.get("type", ""))} for p in problems]


def _encodable(part) -> str | int:
    if isinstance(part, int):
        return part
    return str(part).encode("utf-8", "backslashreplace").decode("utf-8")
