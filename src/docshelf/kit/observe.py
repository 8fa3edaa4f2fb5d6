"""The outermost middleware (pure ASGI): the request id, one access-log line and the request
metrics per request. It reads what routing left in the scope once the answer is out (the
matched route's template, the authenticated actor), so nothing is resolved twice and no path,
query string or header value (tokens, share keys) ever reaches a log line or a label."""

from __future__ import annotations

import logging
import time

from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docshelf.kit import logs, metrics

access_log = logging.getLogger("docshelf.access")

# Paths no route matched share one label: a scanner's random paths must not grow the metrics.
UNMATCHED = "<unmatched>"


# The matched route's full template, per route object. FastAPI keeps an included router's routes
# under their own path ("/orgs/{organizationId}") and matches the prefix apart; the prefix is
# the request path's leading segments that the template's segment count leaves over (no route
# a `:path` parameter holds is discounted), worked out on a route's first request only.
_templates: dict[int, tuple[object, str]] = {}


def route_of(scope: Scope) -> str:
    """The matched route's template, never the path: paths can hold download tokens."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    known = _templates.get(id(route))
    if known is not None and known[0] is route:
        return known[1]
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED
    template = path
    if isinstance(route, APIRoute):
        params = scope.get("path_params", {}).values()
        slashes = sum(v.count("/") for v in params if isinstance(v, str))
        extra = scope["path"].count("/") - path.count("/") - slashes
        if extra > 0:
            template = "/".join(scope["path"].split("/")[: extra + 1]) + path
    _templates[id(route)] = (route, template)
    return template


class ObserveMiddleware:
    def __init__(self, app: ASGIApp, *, access_log_enabled: bool = True) -> None:
        self.app = app
        self.access_log_enabled = access_log_enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        incoming = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                incoming = value
                break
        rid = logs.from_header(incoming)
        token = logs.request_id.set(rid)
        rid_header = (b"x-request-id", rid.encode("ascii"))
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), rid_header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"]
            route = route_of(scope)
            metrics.observe_request(method, route, status, seconds)
            if status == 429:
                metrics.RATE_LIMITED.inc()
            if self.access_log_enabled and access_log.isEnabledFor(logging.INFO):
                actor = scope.get("state", {}).get("actor")
                access_log.info(
                    "request",
                    extra={
                        "request_id": rid,
                        "method": method,
                        "route": route,
                        "status": status,
                        "duration_ms": round(seconds * 1000, 3),
                        "user_id": getattr(actor, "user_id", None),
                    },
                )
            logs.request_id.reset(token)
