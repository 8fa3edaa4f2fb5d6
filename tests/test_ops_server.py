"""Operations on the real server: two API processes (granian workers) add up into one /metrics
(prometheus-client's multiprocess mode, set up by `docshelf serve`), and every request is one
JSON line on the server's output carrying the caller's request id; the image's health check
command reports the server's state."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories
from tests.server import Server

REQUESTS = 40


@pytest.fixture
def server(settings: Settings, db: AsyncEngine, tmp_path: Path) -> Iterator[Server]:
    s = Server(
        settings,
        tmp_path,
        DOCSHELF_WORKERS="2",
        DOCSHELF_LOG_LEVEL="info",
        DOCSHELF_LOG_FORMAT="json",
    )
    try:
        yield s
    finally:
        s.stop()


def _healthcheck(port: int) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()", "healthcheck"]
    return subprocess.run(
        [*command, "--port", str(port)], capture_output=True, timeout=60, check=False
    )


def _count(body: str, route: str) -> float:
    pattern = rf'docshelf_http_requests_total\{{method="GET",route="{re.escape(route)}",'
    pattern += r'status="200"\} ([0-9.e+]+)'
    return sum(float(m) for m in re.findall(pattern, body))


async def test_metrics_and_logs_of_several_processes(
    server: Server, db: AsyncEngine, settings: Settings
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    server.start()
    ids = [f"probe-{n}" for n in range(REQUESTS)]
    for rid in ids:
        # A new connection each time, so both processes get some of them.
        async with httpx.AsyncClient(base_url=server.base, timeout=30) as c:
            r = await c.get(f"/v1/orgs/{org_id}", headers={**admin.headers, "X-Request-Id": rid})
            assert r.status_code == 200 and r.headers["x-request-id"] == rid
    async with httpx.AsyncClient(base_url=server.base, timeout=30) as c:
        body = (await c.get("/metrics")).text
    assert _count(body, "/v1/orgs/{organizationId}") == REQUESTS
    # Two live processes wrote their pool sizes into the shared directory.
    per_process = 4 if settings.is_sqlite else settings.db_pool_size
    assert f'docshelf_db_pool_size{{pool="main"}} {2 * per_process}.0' in body

    # The container's HEALTHCHECK command, against this server, then against nothing.
    done = _healthcheck(server.port)
    assert (done.returncode, done.stdout) == (0, b"ok\n"), done.stderr
    server.stop()
    done = _healthcheck(server.port)
    assert done.returncode == 1
    assert f"http://127.0.0.1:{server.port}/healthz did not answer 200".encode() in done.stderr

    lines = [orjson.loads(x) for x in server.log.read_bytes().splitlines() if x.startswith(b"{")]
    access = [x for x in lines if x.get("logger") == "docshelf.access"]
    ours = {x["request_id"]: x for x in access if x["request_id"] in ids}
    assert set(ours) == set(ids)
    assert {(x["route"], x["status"], x["user_id"]) for x in ours.values()} == {
        ("/v1/orgs/{organizationId}", 200, admin.id)
    }
    assert admin.token.encode() not in server.log.read_bytes()
