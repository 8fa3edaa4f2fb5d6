"""Operations: health and readiness, metrics, request ids and access logs, the OpenAPI
document's errors and auth, the offline explorer."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.api import PUBLIC_PATHS
from docshelf.app import create_app
from docshelf.config import Settings
from docshelf.kit import logs
from docshelf.kit.clock import clock
from docshelf.models import jobs
from docshelf.worker.registry import JobEnv, task
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.helpers import error, second_app

_seen: list[str | None] = []


@task("test.ops.log")
async def _log_job(_conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    _seen.append(logs.request_id.get())
    assert logs.PAYLOAD_KEY not in payload
    logging.getLogger("docshelf.test").info("job ran")


_GLOBALS = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put back what logs.configure changes, for the tests that follow."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    saved = {name: getattr(logging, name) for name in _GLOBALS}
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for name, value in saved.items():
        setattr(logging, name, value)


@pytest.fixture
def log_lines(restore_logging: None) -> io.StringIO:
    """The root logger as `serve` configures it (JSON), writing to a buffer for the test."""
    stream = io.StringIO()
    logs.configure("info", "json", stream)
    return stream


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines() if line]


async def test_healthz_touches_nothing(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


async def test_readyz(client: httpx.AsyncClient) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "blobs": "ok"},
        # This machine has what every feature needs (.ci/run installs it; tests/test_features.py
        # takes it away).
        "features": {"pdf": {"status": "ok"}, "sso": {"status": "ok"}},
    }


def test_readyz_reads_the_heads_alembic_reads() -> None:
    """/readyz reads the shipped migrations' heads without importing Alembic: the same set."""
    from alembic.script import ScriptDirectory

    from docshelf.kit.migrate import alembic_config
    from docshelf.ops.service import migration_heads

    script = ScriptDirectory.from_config(alembic_config(Settings()))
    assert migration_heads() == frozenset(script.get_heads())


async def test_readyz_refuses_old_migrations(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    async with db.begin() as conn:
        (head,) = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).one()
        await conn.execute(sa.text("UPDATE alembic_version SET version_num = '0001'"))
    try:
        r = await client.get("/readyz")
    finally:
        async with db.begin() as conn:
            await conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    assert r.status_code == 503
    message = r.json()["error"]["message"]
    assert message.startswith("Not ready: migrations not at head (database ['0001']")
    assert "docshelf db upgrade" in message


async def test_readyz_refuses_unwritable_blob_store(settings: Settings, tmp_path: Any) -> None:
    blobs = tmp_path / "blobs"
    async with second_app(settings, blob_dir=blobs) as c:
        blobs.rmdir()
        blobs.write_bytes(b"")  # a file where the directory was: nothing can be written
        r = await c.get("/readyz")
    assert (r.status_code, r.json()) == (503, error(503, "Not ready: blob store not writable"))


async def test_readyz_refuses_unreachable_database(settings: Settings, tmp_path: Any) -> None:
    url = "postgresql+asyncpg://nobody@127.0.0.1:1/none"
    async with second_app(settings, database_url=url) as c:
        r = await c.get("/readyz")
    assert (r.status_code, r.json()) == (503, error(503, "Not ready: database unreachable"))


async def test_request_id_is_echoed_or_generated(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz", headers={"X-Request-Id": "abc-123.x:y_z"})
    assert r.headers["x-request-id"] == "abc-123.x:y_z"
    generated = (await client.get("/healthz")).headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    for unsafe in ["a b", 'a"b', "x" * 129, "", "é"]:
        r = await client.get("/healthz", headers={"X-Request-Id": unsafe.encode()})
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"]), unsafe


async def test_one_json_line_per_request_without_secrets(
    client: httpx.AsyncClient, db: AsyncEngine, log_lines: io.StringIO
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    r = await client.get(
        f"/v1/orgs/{org_id}?share=secretkey", headers={**admin.headers, "X-Request-Id": "req-1"}
    )
    assert r.status_code == 200
    await client.get("/v1/orgs/nope", headers=admin.headers)
    await client.get("/no/such/path?key=secretkey")
    await client.get("/v1/orgs", headers={"Authorization": "Bearer dsk_wrong"})
    space = await factories.api_space(client, org_id, admin)
    r = await client.get(
        f"/v1/spaces/{space['id']}/content/path/a/b/c?token=secretkey", headers=admin.headers
    )
    assert r.status_code == 404
    access = [line for line in _lines(log_lines) if line["logger"] == "docshelf.access"]
    assert len(access) == 6
    first = access[0]
    assert set(first) == {
        "time", "level", "logger", "message", "request_id", "method", "route", "status",
        "duration_ms", "user_id",
    }  # fmt: skip
    assert (first["request_id"], first["method"], first["route"], first["status"]) == (
        "req-1",
        "GET",
        "/v1/orgs/{organizationId}",
        200,
    )
    assert first["user_id"] == admin.id
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*", first["time"])
    assert [(a["route"], a["status"]) for a in access[1:]] == [
        ("/v1/orgs/{organizationId}", 404),
        ("<unmatched>", 404),
        ("<unmatched>", 401),  # refused before routing, by the edge middleware
        ("/v1/orgs/{organizationId}/spaces", 201),
        ("/v1/spaces/{spaceId}/content/path/{pagePath}", 404),
    ]
    text = log_lines.getvalue()
    assert "secretkey" not in text and admin.token not in text and "dsk_wrong" not in text


async def test_text_format_for_terminals(restore_logging: None) -> None:
    stream = io.StringIO()
    logs.configure("info", "text", stream)
    token = logs.request_id.set("rid-7")
    logging.getLogger("docshelf.access").info("request", extra={"status": 200})
    logs.request_id.reset(token)
    line = stream.getvalue()
    assert line.endswith(" INFO docshelf.access request status=200 request_id=rid-7\n")
    assert logs.resolve_format("auto", io.StringIO()) == "json"  # not a terminal


async def test_jobs_carry_the_request_id(
    client: httpx.AsyncClient, db: AsyncEngine, log_lines: io.StringIO, job_env: JobEnv
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, title="Doomed")
    r = await client.delete(
        f"/v1/spaces/{space['id']}", headers={**admin.headers, "X-Request-Id": "del-42"}
    )
    assert r.status_code == 205
    async with db.connect() as conn:
        payloads = (await conn.execute(sa.select(jobs.c.kind, jobs.c.payload))).all()
    assert [(k, p[logs.PAYLOAD_KEY]) for k, p in payloads if k == "space.purge"] == [
        ("space.purge", "del-42")
    ]

    # A job's handler runs with its request's id, and its log lines carry it.
    from docshelf.kit.db import unit_of_work
    from docshelf.worker.queue import enqueue

    token = logs.request_id.set("req-job-9")
    try:
        async with unit_of_work(db) as conn:
            await enqueue(conn, "test.ops.log", {"x": 1})
    finally:
        logs.request_id.reset(token)
    _seen.clear()
    clock.advance(timedelta(seconds=1))
    await JobRunner(db, job_env).drain()
    assert _seen == ["req-job-9"]
    ran = [line for line in _lines(log_lines) if line["message"] == "job ran"]
    assert [line["request_id"] for line in ran] == ["req-job-9"]


async def test_metrics_on_loopback(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    await client.get(f"/v1/orgs/{org_id}", headers=admin.headers)
    r = await client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")
    body = r.text
    assert (
        'docshelf_http_requests_total{method="GET",route="/v1/orgs/{organizationId}",status="200"}'
        in body
    )
    assert "docshelf_http_request_duration_seconds_bucket{" in body
    assert 'docshelf_db_pool_connections_in_use{pool="main"}' in body
    assert "docshelf_rate_limit_refusals_total" in body
    assert "docshelf_listing_builds_total" in body
    assert 'docshelf_blob_bytes_total{op="put"}' in body or "docshelf_blob_bytes" in body
    assert "# TYPE docshelf_jobs gauge" in body
    assert org_id not in body


async def test_metrics_count_queued_jobs(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    await client.delete(f"/v1/spaces/{space['id']}", headers=admin.headers)
    body = (await client.get("/metrics")).text
    assert 'docshelf_jobs{kind="space.purge",status="queued"} 1.0' in body
    async with db.begin() as conn:
        await conn.execute(sa.update(jobs).values(last_error="boom"))
    body = (await client.get("/metrics")).text
    assert 'docshelf_jobs{kind="space.purge",status="queued"} 1.0' in body
    assert 'docshelf_jobs_retrying{kind="space.purge"} 1.0' in body


async def test_metrics_elsewhere_need_the_token(settings: Settings) -> None:
    async def get(update: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        application = create_app(settings.model_copy(update=update))
        transport = httpx.ASGITransport(
            app=application, raise_app_exceptions=False, client=("10.1.2.3", 4000)
        )
        try:
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
                return await c.get("/metrics", headers=headers)
        finally:
            await application.state.engine.dispose()

    refusal = (
        "Metrics are served to loopback addresses (not through a proxy), or with the bearer "
        "token set in DOCSHELF_METRICS_TOKEN"
    )
    r = await get({}, {})
    assert (r.status_code, r.json()) == (403, error(403, refusal))
    r = await get({"metrics_token": "s3cret-scraper"}, {"Authorization": "Bearer wrong"})
    assert (r.status_code, r.json()) == (403, error(403, refusal))
    r = await get({"metrics_token": "s3cret-scraper"}, {"Authorization": "Bearer s3cret-scraper"})
    assert r.status_code == 200 and "docshelf_http_requests_total" in r.text
    async with second_app(settings, metrics_enabled=False) as c:
        r = await c.get("/metrics")
    assert (r.status_code, r.json()) == (404, error(404, "Not found"))


async def test_metrics_through_a_reverse_proxy_on_the_same_host(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A proxy on this host connects from loopback on everyone's behalf: what it forwards is
    not a local scrape (README, Operations)."""
    refusal = error(
        403,
        "Metrics are served to loopback addresses (not through a proxy), or with the bearer "
        "token set in DOCSHELF_METRICS_TOKEN",
    )
    for header in (
        {"X-Forwarded-For": "203.0.113.9"},
        {"Forwarded": "for=203.0.113.9;proto=https"},
        {"X-Real-IP": "203.0.113.9"},
        {"X-Forwarded-Host": "docs.example.com"},
    ):
        r = await client.get("/metrics", headers=header)
        assert (r.status_code, r.json()) == (403, refusal), header
    assert (await client.get("/metrics")).status_code == 200


async def test_openapi_documents_errors_and_auth(app: FastAPI) -> None:
    doc = app.openapi()
    assert doc["components"]["securitySchemes"] == {
        "apiToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`dsk_…`): `docshelf token create`, or the admin token "
            "written on first start",
        }
    }
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    checked = 0
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            responses = op["responses"]
            assert "422" not in responses, (method, path)
            if not path.startswith("/v1"):
                assert op["security"] == [], path
                continue
            checked += 1
            public = (method.upper(), path) in PUBLIC_PATHS
            expected = {"400", "404", "503"} | (set() if public else {"401", "403", "429"})
            if method in {"post", "put", "patch", "delete"}:
                expected.add("409")
            if "requestBody" in op:
                expected.add("413")
            errors = {s for s in responses if s.startswith(("4", "5"))}
            assert errors == expected, (method, path, errors)
            for status in errors:
                assert responses[status]["content"] == error_ref
            assert op["security"] == ([] if public else [{"apiToken": []}]), (method, path)
    assert checked >= 30
    assert set(doc["paths"]) >= {"/healthz", "/readyz", "/metrics"}
    assert doc["paths"]["/readyz"]["get"]["responses"]["503"]["content"] == error_ref


async def test_openapi_json_is_the_document_built_elsewhere(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    # Built in a child process (the API process keeps the bytes only): the same document.
    r = await client.get("/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == app.openapi()


async def test_error_schema_matches_what_is_sent(client: httpx.AsyncClient, app: FastAPI) -> None:
    from openapi_schema_validator import OAS30Validator

    schema = app.openapi()["components"]["schemas"]["Error"]
    r = await client.get("/v1/orgs")
    assert r.status_code == 401
    OAS30Validator(schema).validate(r.json())


async def test_api_explorer_works_offline(client: httpx.AsyncClient) -> None:
    r = await client.get("/docs")
    assert r.status_code == 200
    page = r.text
    assert re.findall(r"https?://", page) == []
    sources = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page)
    assert sources, page
    assert "/openapi.json" in page
    for source in sources:
        assert source.startswith("/docs/assets/"), source
        asset = await client.get(source)
        assert asset.status_code == 200, source
        assert len(asset.content) > 500


def test_an_operators_metrics_directory_loses_only_stale_values(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docshelf.cli.main import _multiprocess_metrics

    (tmp_path / "counter_123.db").write_bytes(b"old")
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    _multiprocess_metrics()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
