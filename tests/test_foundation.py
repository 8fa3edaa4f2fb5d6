from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, second_app, user_body


async def test_api_information(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    me = await factories.user(db)
    r = await client.get("/v1/", headers=me.headers)
    assert r.json() == {"version": "0.1.0", "build": "dev"}


async def test_users(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    _, (admin, colleague) = await factories.org_with_members(db, "read")
    stranger = await factories.user(db)
    assert (await client.get("/v1/user", headers=admin.headers)).json() == user_body(admin)
    r = await client.get(f"/v1/users/{colleague.id}", headers=admin.headers)
    assert r.json() == user_body(colleague)
    r = await client.get(f"/v1/users/{stranger.id}", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, error(404, "User not found"))
    assert (
        await client.get(f"/v1/users/{stranger.id}", headers=stranger.headers)
    ).status_code == 200


async def test_unknown_path_and_wrong_method(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    me = await factories.user(db)
    r = await client.get("/v1/nothing/here", headers=me.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Not found"))
    r = await client.delete("/v1/orgs", headers=me.headers)
    assert (r.status_code, r.json()) == (405, error(405, "Method not allowed"))


async def test_malformed_and_missing_bodies(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    me = await factories.user(db)
    h = {**me.headers, "Content-Type": "application/json"}
    r = await client.post("/v1/orgs", content=b"{not json", headers=h)
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith("Malformed JSON body")
    r = await client.post("/v1/orgs", headers=me.headers)
    assert (r.status_code, r.json()) == (400, error(400, "Request body is required"))
    r = await client.post("/v1/orgs", json={"title": "x"}, headers=me.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'title': String should have at least 2 characters"),
    )


async def test_oversize_body_is_413(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    me = await factories.user(db)
    big = b'{"title": "' + b"a" * settings.max_body_bytes + b'"}'
    r = await client.post(
        "/v1/orgs", content=big, headers={**me.headers, "Content-Type": "application/json"}
    )
    assert (r.status_code, r.json()) == (
        413,
        error(413, f"Request body exceeds {settings.max_body_bytes} bytes"),
    )

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"title": "'
        for _ in range(settings.max_body_bytes // 65536 + 1):
            yield b"a" * 65536
        yield b'"}'

    r = await client.post(
        "/v1/orgs", content=chunks(), headers={**me.headers, "Content-Type": "application/json"}
    )
    assert (r.status_code, r.json()) == (
        413,
        error(413, f"Request body exceeds {settings.max_body_bytes} bytes"),
    )


async def test_unexpected_error_is_logged_500_without_internals(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    async def boom() -> None:
        raise RuntimeError("secret internals")

    app.add_api_route("/v1/test-boom", boom)
    with caplog.at_level(logging.ERROR, logger="docshelf"):
        r = await client.get("/v1/test-boom")
    assert (r.status_code, r.json()) == (500, error(500, "Internal server error"))
    assert "secret internals" not in r.text
    assert any("secret internals" in str(rec.exc_info) for rec in caplog.records)


@pytest.fixture(params=["memory", "redis"])
async def limited_client(
    request: pytest.FixtureRequest, settings: Settings
) -> AsyncIterator[httpx.AsyncClient]:
    redis_url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    async with second_app(
        settings, rate_limit=3, rate_limit_window=60, rate_limit_redis_url=redis_url
    ) as c:
        yield c


async def test_rate_limit(limited_client: httpx.AsyncClient, db: AsyncEngine) -> None:
    me = await factories.user(db)
    other = await factories.user(db)
    window_end = (int(clock.now().timestamp()) // 60 + 1) * 60
    for remaining in (2, 1, 0):
        r = await limited_client.get("/v1/user", headers=me.headers)
        assert r.status_code == 200
        assert (r.headers["x-ratelimit-limit"], r.headers["x-ratelimit-remaining"]) == (
            "3",
            str(remaining),
        )
        assert r.headers["x-ratelimit-reset"] == str(window_end)
    r = await limited_client.get("/v1/user", headers=me.headers)
    assert r.status_code == 429
    assert r.headers["retry-after"] == str(window_end - int(clock.now().timestamp()))
    assert r.json() == error(
        429, f"Rate limit of 3 requests per 60s exceeded; retry in {r.headers['retry-after']}s"
    )
    # Another token has its own budget, and the next window starts afresh.
    assert (await limited_client.get("/v1/user", headers=other.headers)).status_code == 200
    clock.advance(timedelta(seconds=60))
    r = await limited_client.get("/v1/user", headers=me.headers)
    assert (r.status_code, r.headers["x-ratelimit-remaining"]) == (200, "2")


async def test_absurd_content_length_is_413(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    me = await factories.user(db)
    r = await client.post(
        "/v1/orgs", content=b"{}", headers={**me.headers, "Content-Length": "9" * 5000}
    )
    assert r.status_code == 413


async def test_migrations_match_the_models(settings: Settings, db: AsyncEngine) -> None:
    """The database the migrations built holds exactly what the table definitions describe."""
    from alembic import command

    from docshelf.kit.migrate import alembic_config

    await asyncio.to_thread(command.check, alembic_config(settings))
