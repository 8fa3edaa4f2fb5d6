"""Cost of the observe middleware (kit/observe.py) per request: request id, the two request
metrics and one JSON access line (to a discarded stream), measured around a trivial ASGI app so
nothing else is in the figure.

    PYTHONPATH=src python benchmarks/observe.py
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from typing import Any

from fastapi.routing import APIRoute

from docshelf.kit import logs
from docshelf.kit.observe import ObserveMiddleware

N = 20_000
ROUNDS = 7
ROUTE = APIRoute("/orgs/{organizationId}", lambda: None)
START = {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
BODY = {"type": "http.response.body", "body": b"{}"}


async def trivial(scope: dict[str, Any], _receive: Any, send: Any) -> None:
    scope["route"] = ROUTE  # what routing leaves in the scope
    await send(dict(START))
    await send(BODY)


async def _drive(app: Any, n: int, request_id: bytes | None) -> float:
    headers = [(b"host", b"bench"), (b"user-agent", b"bench"), (b"accept", b"*/*")]
    if request_id is not None:
        headers.append((b"x-request-id", request_id))
    scope = {"type": "http", "method": "GET", "path": "/v1/orgs/abc", "headers": headers}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(_message: dict[str, Any]) -> None:
        return None

    started = time.perf_counter()
    for _ in range(n):
        await app(dict(scope), receive, send)
    return (time.perf_counter() - started) / n


async def main() -> None:
    logs.configure("info", "json", io.StringIO())
    cases = {
        "bare app": (trivial, None),
        "observe, id generated": (ObserveMiddleware(trivial), None),
        "observe, id given": (ObserveMiddleware(trivial), b"req-123"),
        "observe, access log off": (ObserveMiddleware(trivial, access_log_enabled=False), None),
    }
    best: dict[str, float] = {}
    for _ in range(ROUNDS):  # interleaved, best of each: the machine may be shared
        for label, (app, rid) in cases.items():
            cost = await _drive(app, N, rid)
            best[label] = min(best.get(label, cost), cost)
    for label, cost in best.items():
        extra = cost - best["bare app"]
        print(f"{label:26} {cost * 1e6:6.1f} µs  (+{extra * 1e6:5.1f} µs)")
    logging.getLogger().handlers.clear()


if __name__ == "__main__":
    asyncio.run(main())
