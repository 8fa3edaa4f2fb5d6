"""The OpenAPI document, completed in one place: every /v1 operation's error answers (one error
body, described once) and its authentication (one bearer scheme; the signed download link
needs none). A new route gets both by existing.

`/openapi.json` serves the document built in a short-lived process of its own: building it
(Pydantic's JSON schemas of every model, FastAPI's field maps) leaves ~12 MB in the process
that does it, which an API process serving requests need not keep for a document read once."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi

from docshelf.api import PUBLIC_PATHS
from docshelf.config import Settings

log = logging.getLogger("docshelf.ops")

SCHEME = "apiToken"
ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
    },
}
_WRITES = frozenset({"post", "put", "patch", "delete"})

ERRORS = {
    "400": "Invalid input (path, query or body); the message names the field and the rule",
    "401": "Missing, malformed, unknown or revoked API token",
    "403": "The caller may see this but not do this",
    "404": "Not found, or not visible to the caller",
    "409": "Conflicts with the current state or with a concurrent request",
    "413": "Request body larger than DOCSHELF_MAX_BODY_BYTES",
    "429": "Rate limit of the token exceeded; see Retry-After and X-RateLimit-*",
    "503": "Busy (a lock or connection was not free in time) or not ready; retry after Retry-After",
}


def _error(status: str) -> dict[str, Any]:
    return {"description": ERRORS[status], "content": {"application/json": {"schema": ERROR_REF}}}


def complete(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    # FastAPI's 422 is never sent: validation failures answer 400 with the error body.
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    document["components"]["securitySchemes"] = {
        SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`dsk_…`): `docshelf token create`, or the admin token "
            "written on first start",
        }
    }
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            if not path.startswith("/v1"):
                for status, answer in responses.items():
                    if status in ERRORS and "content" not in answer:
                        answer["content"] = {"application/json": {"schema": ERROR_REF}}
                op["security"] = []
                continue
            public = (method.upper(), path) in PUBLIC_PATHS
            statuses = ["400", "404", "503"]
            if not public:
                statuses += ["401", "403", "429"]
            if method in _WRITES:
                statuses.append("409")
            if "requestBody" in op:
                statuses.append("413")
            for status in sorted(statuses):
                responses.setdefault(status, _error(status))
            op["security"] = [] if public else [{SCHEME: []}]
    return document


def install(app: FastAPI, build: Callable[[str], bytes]) -> None:
    """`build(settings_json)` makes the document in a child process: a module-level function
    of the package that creates the app (a spawned child imports it by name)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    lock = asyncio.Lock()

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_json(request: Request) -> Response:
        state = request.app.state
        async with lock:  # one build, however many first requests
            if getattr(state, "openapi_json", None) is None:
                try:
                    state.openapi_json = await _build_elsewhere(build, state.settings)
                except Exception:
                    # The document is served whatever happened to the child, built here.
                    log.exception("openapi: building in a child process failed; built here")
                    state.openapi_json = orjson.dumps(request.app.openapi())
        return Response(state.openapi_json, media_type="application/json")


async def _build_elsewhere(build: Callable[[str], bytes], settings: Settings) -> bytes:
    # spawn: a fresh interpreter (a fork would copy this process's threads' locks), ended
    # as soon as the document is out.
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, build, settings.model_dump_json())
    finally:
        pool.shutdown(wait=False)  # the child exits by itself; the event loop never waits
