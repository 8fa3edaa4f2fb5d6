"""The floor of benchmarks/mix.py: a bare Starlette app that answers every URL of the mix, for
each caller, with the very bytes (status, content type, body) Docshelf answered it with.

The answers are read from the JSON file named by MIX_FLOOR_FILE: {"<path?query> <token>":
[status, content type, base64 body]}. No database, no authentication, no middleware.

    MIX_FLOOR_FILE=answers.json uvicorn mix_floor:app --loop uvloop --http httptools
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

_FILE = os.environ.get("MIX_FLOOR_FILE")
ANSWERS: dict[str, tuple[int, str, bytes]] = {
    key: (status, media, base64.b64decode(body))
    for key, (status, media, body) in (json.loads(Path(_FILE).read_text()) if _FILE else {}).items()
}


async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
    if scope["type"] != "http":
        return
    request = Request(scope)
    target = request.url.path
    if request.url.query:
        target += "?" + request.url.query
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    found = ANSWERS.get(f"{target} {token}")
    if found is None:
        response = Response(b"not in the mix", status_code=404)
    else:
        status, media, body = found
        response = Response(body, status_code=status, media_type=media)
    await response(scope, receive, send)  # type: ignore[arg-type]
