"""The baseline: a bare Starlette + orjson endpoint, served exactly as `docshelf serve` serves
the real app (same ASGI server, same Server(...) / uvicorn.run(...) arguments).

GET /v1/orgs/{organizationId} answers the JSON object read from the file named by
BARE_PAYLOAD_FILE (the real response bytes fetched from Docshelf), GET /v1/spaces/{spaceId} the
one in BARE_SPACE_PAYLOAD_FILE, re-serialised with orjson on every request, as Docshelf's own
JSON response class does. No database, no auth, no middleware.

Run by load_orgs.py as: python bare_app.py --server granian|uvicorn --host H --port P
(with this directory on PYTHONPATH so that workers can import `bare_app:app`); load_reads.py
serves it as the floor: `uvicorn bare_app:app --loop uvloop --http httptools`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_PAYLOAD_FILE = os.environ.get("BARE_PAYLOAD_FILE")
PAYLOAD: Any = (
    orjson.loads(Path(_PAYLOAD_FILE).read_bytes()) if _PAYLOAD_FILE else {"object": "bare"}
)

_SPACE_FILE = os.environ.get("BARE_SPACE_PAYLOAD_FILE")
SPACE_PAYLOAD: Any = (
    orjson.loads(Path(_SPACE_FILE).read_bytes()) if _SPACE_FILE else {"object": "bare"}
)


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


async def organization(request: Request) -> JSON:
    return JSON(PAYLOAD)


async def space(request: Request) -> JSON:
    return JSON(SPACE_PAYLOAD)


app = Starlette(
    routes=[
        Route("/v1/orgs/{organizationId}", organization, methods=["GET"]),
        Route("/v1/spaces/{spaceId}", space, methods=["GET"]),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", choices=("granian", "uvicorn"), default="granian")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    # Mirrors docshelf.cli.serve.run_server so that only the application differs.
    if args.server == "granian":
        from granian.constants import Interfaces
        from granian.log import LogLevels
        from granian.server import Server

        Server(
            "bare_app:app",
            address=args.host,
            port=args.port,
            interface=Interfaces.ASGI,
            workers=args.workers,
            log_level=LogLevels(args.log_level),
        ).serve()
    else:
        import uvicorn

        uvicorn.run(
            "bare_app:app",
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=args.log_level,
        )


if __name__ == "__main__":
    main()
