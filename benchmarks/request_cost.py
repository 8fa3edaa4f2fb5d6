"""CPU time of one authenticated GET inside the app, without a server or a socket: the app is
called with ASGI messages, as a server would call it, on SQLite (the embedded default).

What it isolates: the request path's own Python (middleware, dispatch, authentication,
statements, presenter) from the server's and the kernel's share, which `load_reads.py` measures
together with it. Prints the best of `--rounds` runs of `--requests` GETs, in microseconds per
GET, for `GET /v1/orgs/{id}` and `GET /v1/spaces/{id}`.

    python benchmarks/request_cost.py --requests 5000 --rounds 7
    python benchmarks/request_cost.py --profile   # cProfile of one run, by own time
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_orgs import clean_env, cli_bootstrap


async def run(args: argparse.Namespace) -> None:
    from docshelf.app import create_app
    from docshelf.config import Settings

    data_dir = Path(tempfile.mkdtemp(prefix="docshelf-cost-"))
    token, _ = cli_bootstrap(clean_env(), data_dir)
    # As load_reads.py runs the server: the limiter on (never reached), no access log lines.
    settings = Settings(data_dir=data_dir, rate_limit=1_000_000_000, access_log=False)
    app = create_app(settings)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    def scope(method: str, path: str) -> dict[str, Any]:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1:8000"),
                (b"authorization", f"Bearer {token}".encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "app": app,
            "state": {},
        }

    async def call(method: str, path: str) -> tuple[int, bytes]:
        sent.clear()
        await app(scope(method, path), receive, send)
        status = sent[0]["status"]
        return status, b"".join(m.get("body", b"") for m in sent[1:])

    async with app.router.lifespan_context(app):
        status, body = await call("GET", "/v1/orgs")
        org_id = json.loads(body)["items"][0]["id"]
        # The space through the API itself: a POST with a JSON body.
        sent.clear()
        space_scope = scope("POST", f"/v1/orgs/{org_id}/spaces")
        space_scope["headers"] += [(b"content-type", b"application/json")]
        payload = json.dumps({"title": "Bench"}).encode()

        async def receive_body() -> dict[str, Any]:
            return {"type": "http.request", "body": payload, "more_body": False}

        await app(space_scope, receive_body, send)
        space_id = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["id"]
        for route, path in (("orgs", f"/v1/orgs/{org_id}"), ("spaces", f"/v1/spaces/{space_id}")):
            for _ in range(2000):  # warm: statement caches, first-use imports
                status, body = await call("GET", path)
            if status != 200:
                raise SystemExit(f"GET {path} answered {status}: {body[:300]!r}")
            if args.profile:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                profiler.enable()
                for _ in range(args.requests):
                    await call("GET", path)
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
                continue
            runs = []
            for _ in range(args.rounds):
                started = time.process_time()
                for _ in range(args.requests):
                    await call("GET", path)
                runs.append(time.process_time() - started)
            best = min(runs) / args.requests * 1e6
            runs_of = f"best of {args.rounds} runs of {args.requests}"
            print(f"{route:7} {best:7.1f} µs CPU a GET ({runs_of})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)
    os.environ.pop("DOCSHELF_DATABASE_URL", None)
    uvloop.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
