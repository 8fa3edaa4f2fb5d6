"""create_app(): middleware, error handlers, routers, lifespan."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import ipaddress
import logging
import os
from collections.abc import AsyncIterator

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy import exc as sa_exc
from sqlalchemy.exc import IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docshelf import (
    __version__,
    datadir,
    features,
    tasks,  # registers every job kind
)
from docshelf.api import PUBLIC_PREFIXES, mount_v1
from docshelf.auth import site_token
from docshelf.auth.header import scope_bearer_token
from docshelf.blobs import open_blob_store
from docshelf.config import Settings, get_settings
from docshelf.fetch import Fetcher
from docshelf.gitsync.endpoints import mount_git
from docshelf.kit import lifeline, logs, metrics, offload
from docshelf.kit.admission import AdmissionMiddleware
from docshelf.kit.db import create_engine, is_busy_error
from docshelf.kit.errors import DocshelfError, error_body
from docshelf.kit.http import JSON
from docshelf.kit.observe import ObserveMiddleware, route_of
from docshelf.kit.pagination import load_cursor_key, use_cursor_key
from docshelf.kit.validation import (
    content_type_error,
    describe_validation_error,
    request_line_error,
)
from docshelf.ops import openapi as ops_openapi
from docshelf.ops.endpoints import mount_ops
from docshelf.ratelimit.service import RateLimiter, RedisStorage
from docshelf.reader.endpoints import ReaderMiddleware
from docshelf.worker.registry import JobEnv

log = logging.getLogger("docshelf")

_BUSY = "The server is busy with other writes; retry shortly"


def _as_dict(headers: list[tuple[bytes, bytes]]) -> dict[str, str] | None:
    return {k.decode(): v.decode() for k, v in headers} or None


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSON:
    return JSON(error_body(status, message), status_code=status, headers=headers)


class EdgeMiddleware:
    """Pure ASGI, before any routing: body size cap (413), the Authorization header (400 for two,
    401 for a malformed one), per-token rate limiting (429 and the X-RateLimit-* headers on every
    answer to a token-bearing request), control characters in the path or query (400), and the
    install's cursor-signing key for the request."""

    def __init__(self, app: ASGIApp, *, max_body: int, git_push_max: int) -> None:
        self.app = app
        self.max_body = max_body
        self.git_push_max = git_push_max

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        # A git push carries a pack of whole files (gitsync/): bounded apart.
        pushing = path.startswith("/git/") and path.endswith("/git-receive-pack")
        max_body = self.git_push_max if pushing else self.max_body
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and not length.isdigit():
            await _error(400, "Invalid Content-Length header")(scope, receive, send)
            return
        # Compare lengths first: int() of thousands of digits is refused by Python itself.
        if length is not None and (len(length) > 19 or int(length) > max_body):
            await _error(413, f"Request body exceeds {max_body} bytes")(scope, receive, send)
            return

        extra: list[tuple[bytes, bytes]] = []
        try:
            # The one reading of Authorization; authentication takes the same token from the
            # request's state, so the token counted here is the token that is authenticated.
            # Only /v1 takes API tokens; /metrics reads its own bearer token (ops.service).
            token = scope_bearer_token(scope) if scope["path"].startswith("/v1") else None
        except DocshelfError as exc:
            await _error(exc.status, exc.message, exc.headers)(scope, receive, send)
            return
        state = scope["app"].state
        limiter: RateLimiter = state.limiter
        if token is not None and limiter.limit > 0:
            # A site content token is shared by every visitor of a site that day: counted per
            # visitor's address, so that no one client spends everyone's budget.
            counted = token
            if site_token.looks_like_one(token):
                counted = f"{token}\0{_client_key(scope.get('client'))}"
            key = hashlib.sha256(counted.encode()).hexdigest()[:40]
            try:
                verdict = await limiter.enforce(key)
            except DocshelfError as exc:
                await _error(exc.status, exc.message, exc.headers)(scope, receive, send)
                return
            if verdict is not None:
                extra = verdict.raw_headers()
        path = scope["path"]
        if (token is None or path.startswith(PUBLIC_PREFIXES)) and _counts_as_anonymous(path):
            # Per client address: the reader's pages and searches cost the event loop more
            # than an API read, and no token names who asks (on the routes that take none, a
            # token sent anyway names nobody either: counted here too).
            anonymous: RateLimiter = state.anonymous_limiter
            if anonymous.limit > 0:
                try:
                    await anonymous.enforce(_client_key(scope.get("client")))
                except DocshelfError as exc:
                    await _error(exc.status, exc.message, exc.headers)(scope, receive, send)
                    return

        # The route templates only name the parameter in the message, on this rare path (the
        # one that builds the OpenAPI document in the API process, see ops.openapi).
        refused = request_line_error(scope, lambda: scope["app"].openapi()["paths"])
        if refused is not None:
            await _error(400, refused, _as_dict(extra))(scope, receive, send)
            return

        cursor_key = getattr(state, "cursor_key", None)
        # Only /v1 lists (and signs cursors); health probes must not need the database here.
        if cursor_key is None and scope["path"].startswith("/v1"):
            try:
                cursor_key = state.cursor_key = await load_cursor_key(state.engine)
            except Exception as exc:
                # Outside the app's exception handlers: answer in the error body here.
                if is_busy_error(exc):
                    status, message, headers = 503, _BUSY, {"Retry-After": "1"}
                else:
                    log.error("could not load the cursor key", exc_info=exc)
                    status, message, headers = 500, "Internal server error", {}
                await _error(status, message, {**headers, **(_as_dict(extra) or {})})(
                    scope, receive, send
                )
                return
        if cursor_key is not None:
            use_cursor_key(cursor_key)

        received = 0
        too_large = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_body:
                    # Bodies without Content-Length are counted as they stream; the app sees a
                    # disconnect and whatever it answers is replaced by the 413 below.
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if too_large:
                return
            if message["type"] == "http.response.start" and extra:
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not too_large:
                raise
        if too_large:
            await _error(413, f"Request body exceeds {max_body} bytes")(scope, receive, send)


def _is_unique_violation(exc: IntegrityError) -> bool:
    # asyncpg reports SQLSTATE 23505; SQLite says so in its message.
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None) or getattr(
        getattr(orig, "__cause__", None), "sqlstate", None
    )
    return sqlstate == "23505" or "UNIQUE constraint failed" in str(orig)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DocshelfError)
    async def _docshelf_error(_request: Request, exc: DocshelfError) -> JSON:
        return _error(exc.status, exc.message, exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSON:
        errors = exc.errors()
        wrong_type = content_type_error(request.headers.get("content-type"), errors, exc.body)
        return _error(400, wrong_type or describe_validation_error(errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSON:
        messages = {404: "Not found", 405: "Method not allowed"}
        message = messages.get(exc.status_code) or str(exc.detail)
        return _error(exc.status_code, message, dict(exc.headers or {}) or None)

    @app.exception_handler(IntegrityError)
    async def _integrity_error(request: Request, exc: IntegrityError) -> JSON:
        # Two requests raced to create the same unique thing; the loser's work is rolled back.
        # Any other integrity failure is a bug and goes out as the logged 500.
        if not _is_unique_violation(exc):
            return await _unexpected(request, exc)
        log.info("unique violation answered as 409: %s", exc.orig)
        return _error(409, "Conflict: a concurrent request already created or changed this")

    @app.exception_handler(sa_exc.DBAPIError)
    @app.exception_handler(sa_exc.TimeoutError)
    async def _busy(request: Request, exc: Exception) -> JSON:
        # Lock or pool contention: not the caller's fault and nothing was written.
        if not is_busy_error(exc):
            return await _unexpected(request, exc)
        log.warning("busy on %s %s: %s", request.method, route_of(request.scope), exc)
        return _error(503, _BUSY, {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSON:
        # The route's template: a path can hold a credential (a download link's token).
        route = route_of(request.scope)
        log.error("unhandled error on %s %s", request.method, route, exc_info=exc)
        return _error(500, "Internal server error")


def _rate_limiter(settings: Settings, limit: int) -> RateLimiter:
    url = settings.rate_limit_redis_url
    return RateLimiter(
        limit=limit,
        window_seconds=settings.rate_limit_window,
        processes=settings.resolved_rate_limit_processes,
        shared=RedisStorage(url) if url and limit > 0 else None,
    )


# What a browser fetches by the dozen with every page (the reader's assets, a page's images),
# and what probes and scrapers ask: never counted against a client's anonymous budget.
_UNCOUNTED = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs")


def _counts_as_anonymous(path: str) -> bool:
    return not (path.startswith(_UNCOUNTED) or "/~reader/static/" in path or "/~files/" in path)


def _client_key(client: tuple[str, int] | None) -> str:
    """The budget a client address counts against: an IPv6 client has a /64 to itself."""
    host = client[0] if client else "-"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"ip:{host}"
    if address.version == 6:
        return f"ip:{ipaddress.ip_network(f'{address}/64', strict=False)}"
    return f"ip:{address}"


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API. Jobs never run on its event loop: `docshelf serve` starts the job runner in a
    process of its own (cli/serve.py), or `docshelf worker` runs it elsewhere."""
    settings = settings or get_settings()
    offload.configure(
        workers=settings.offload_workers, memory_bytes=settings.offload_memory_mb * 1024 * 1024
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        offload.start()
        # The ~200 000 objects of a started app (modules, routes, models) never become
        # garbage; frozen, a full collection no longer walks them, which took 100-350 ms
        # and stalled every request in flight (the p99 of the read path, benchmarks/).
        gc.freeze()
        try:
            yield
        finally:
            offload.shutdown()
            await app.state.limiter.aclose()
            await app.state.anonymous_limiter.aclose()
            await app.state.engine.dispose()

    app = FastAPI(
        title="Docshelf API",
        version=__version__,
        description="Self-hosted docs platform; wire-compatible with GitBook's API v1.",
        lifespan=lifespan,
        openapi_url=None,  # served by ops.openapi, built outside the API process
        docs_url=None,  # served offline by ops.endpoints
        redoc_url=None,
        # FastAPI's own OpenTelemetry hooks asked the global providers (environment look-ups)
        # on every request to learn they were unset: ~5 µs of each GET. Docshelf reports
        # through its access log and Prometheus metrics instead (README, "Operations").
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    datadir.prepare(settings)  # also when an ASGI server loads the app without `docshelf serve`
    engine = create_engine(settings)
    app.state.settings = settings
    app.state.engine = engine
    metrics.watch_pools(engine)
    app.state.base_url = settings.resolved_base_url
    app.state.blobs = open_blob_store(settings)
    # What the jobs of a runner serving this app are handed (the tests' runners, the served
    # worker opening its own from the same settings).
    app.state.job_env = JobEnv(app.state.blobs, settings)
    tasks.configure(settings)
    app.state.fetcher = Fetcher.from_settings(settings)
    app.state.limiter = _rate_limiter(settings, settings.rate_limit)
    app.state.anonymous_limiter = _rate_limiter(settings, settings.anonymous_rate_limit)
    app.state.features = features.detect()
    _install_error_handlers(app)
    # Inside the edge (size caps, rate limits): published pages under DOCSHELF_PUBLIC_URL.
    app.add_middleware(ReaderMiddleware)
    app.add_middleware(
        EdgeMiddleware,
        max_body=settings.max_body_bytes,
        git_push_max=settings.git_push_max_bytes,
    )
    app.add_middleware(
        AdmissionMiddleware,
        per_turn=settings.reads_per_turn,
        in_flight=settings.reads_in_flight,
    )
    # Outermost (added last): it sees every answer, the edge's refusals included.
    app.add_middleware(ObserveMiddleware, access_log_enabled=settings.access_log)
    mount_v1(app)
    mount_ops(app)
    mount_git(app)
    ops_openapi.install(app, openapi_document)
    return app


def factory() -> FastAPI:
    """Entry point for ASGI servers (`docshelf.app:factory`): each server process configures
    its own logging, as it imports the app afresh."""
    settings = get_settings()
    logs.configure(settings.log_level, settings.log_format)
    serve_pid = os.environ.get(lifeline.SERVE_PID, "")
    if serve_pid.isdigit() and os.getppid() == int(serve_pid):
        # An API process `docshelf serve` started (granian's workers, uvicorn's): it ends with
        # `serve`, which a SIGKILL or the OOM killer gives no chance to stop it. A server run
        # in `serve`'s own process has another parent, and no lifeline.
        lifeline.exit_with_parent(int(serve_pid))
    return create_app(settings)


def openapi_document(settings_json: str) -> bytes:
    """The completed OpenAPI document of the app these settings make, encoded: run in a child
    process (ops.openapi), so the API process never holds the building's memory."""
    return orjson.dumps(create_app(Settings.model_validate_json(settings_json)).openapi())
