"""Schemathesis against the running server's own /openapi.json: every operation, with random
inputs and with real ids from a small populated install, must never answer 5xx and must match
the schema it documents. Deterministic (derandomized) and bounded, so it fits CI and never
flakes; the number of cases run is printed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck
from schemathesis.checks import not_a_server_error, response_schema_conformance
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories

EXAMPLES = int(os.environ.get("DOCSHELF_FUZZ_EXAMPLES", "12"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(settings: Settings, db: AsyncEngine, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "DOCSHELF_DATA_DIR": str(tmp_path),
        "DOCSHELF_DATABASE_URL": settings.resolved_database_url,
        "DOCSHELF_SERVER": "uvicorn",
        "DOCSHELF_RUN_JOBS_IN_SERVER": "false",
        "DOCSHELF_RATE_LIMIT": "0",
        "DOCSHELF_BASE_URL": f"http://127.0.0.1:{port}",
        "DOCSHELF_LOG_LEVEL": "warning",
    }
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()"]
    process = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def _world(base: str, headers: dict[str, str], org_id: str, user_id: str) -> dict[str, str]:
    """Real ids for path parameters, so generated requests reach past the 404s."""
    with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
        space = c.post(f"/v1/orgs/{org_id}/spaces", json={"title": "Fuzz"}).json()
        collection = c.post(f"/v1/orgs/{org_id}/collections", json={"title": "Fuzz"}).json()
        cr = c.post(f"/v1/spaces/{space['id']}/change-requests", json={"subject": "Fuzz"}).json()
        c.post(
            f"/v1/spaces/{space['id']}/change-requests/{cr['id']}/content",
            json={
                "changes": [
                    {"operation": "insert_page", "title": "P", "document": {"markdown": "x"}}
                ]
            },
        )
        pages = c.get(f"/v1/spaces/{space['id']}/change-requests/{cr['id']}/content/pages").json()
        team = c.put(f"/v1/orgs/{org_id}/teams", json={"title": "Fuzzers"}).json()
        comments = {}
        for thread, comment_key, reply_key in (
            (f"/v1/spaces/{space['id']}", "commentId", "commentReplyId"),
            (
                f"/v1/spaces/{space['id']}/change-requests/{cr['id']}",
                "changeRequestCommentId",
                "changeRequestCommentReplyId",
            ),
        ):
            body = {"body": {"markdown": "Fuzz"}}
            comment = c.post(f"{thread}/comments", json=body).json()
            reply = c.post(f"{thread}/comments/{comment['id']}/replies", json=body).json()
            comments.update({comment_key: comment["id"], reply_key: reply["id"]})
    return {
        **comments,
        "organizationId": org_id,
        "userId": user_id,
        "spaceId": space["id"],
        "collectionId": collection["id"],
        "changeRequestId": cr["id"],
        "revisionId": cr["revision"],
        "pageId": pages["pages"][0]["id"],
        "teamId": team["id"],
    }


async def test_every_operation_survives_fuzzing(
    db: AsyncEngine, server: str, request: pytest.FixtureRequest
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    headers = admin.headers
    world = _world(server, headers, org_id, admin.id)
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    session = requests.Session()
    request.addfinalizer(session.close)
    failures: list[str] = []
    cases = 0

    def check(case: Any) -> None:
        nonlocal cases
        cases += 1
        response = case.call(base_url=server, session=session, headers=headers, timeout=60)
        try:
            case.validate_response(
                response, checks=[not_a_server_error, response_schema_conformance]
            )
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(
                f"{case.operation.label}: {response.status_code} {response.text[:300]}\n"
                f"  {type(exc).__name__}: {str(exc)[:500]}\n  {case.as_curl_command()[:500]}"
            )

    settings = hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        names = {p.name for p in operation.path_parameters}
        real = {n: world[n] for n in names if n in world}
        strategies = [operation.as_strategy()]
        if real:
            strategies.append(operation.as_strategy(path_parameters=real))
        for strategy in strategies:

            def run(case: Any) -> None:
                check(case)

            hypothesis.given(case=strategy)(settings(run))()
    print(f"\nschemathesis: {cases} cases over {operations} operations, {len(failures)} failures")
    assert not failures, "\n".join(failures[:30])
