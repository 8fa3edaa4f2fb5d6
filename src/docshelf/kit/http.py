"""Responses: orjson bytes straight from presenter dicts, no second validation pass."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def ok(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSON:
    return JSON(content, status_code=status, headers=headers)


def empty(status: int = 204) -> Response:
    return Response(status_code=status)
