"""Kept answers (kit.routing.Answers): on SQLite the hottest GETs send a caller's last answer for
a path again while nothing at all was committed since it was read (`sqlite_inline.seen`). They
must keep every promise a fresh read keeps: each change below is made, then every caller's
answer for every path is compared with the answer of an app that reads every time."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import revoke_token
from docshelf.config import Settings
from docshelf.kit import sqlite_inline
from docshelf.kit.db import Engine, create_engine, unit_of_work
from docshelf.kit.errors import Unauthorized
from docshelf.kit.migrate import upgrade
from tests import factories
from tests.conftest import BASE
from tests.helpers import error, second_app

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


def _reused() -> float:
    return REGISTRY.get_sample_value("docshelf_answers_reused_total") or 0.0


async def _answer(client: httpx.AsyncClient, path: str, who: factories.Who | None) -> Answer:
    headers = {"X-Request-Id": "same", **(who.headers if who else {})}
    r = await client.get(path, headers=headers)
    return r.status_code, r.headers.raw, r.content


async def test_an_unchanged_answer_is_sent_again_byte_for_byte(
    client: httpx.AsyncClient, db: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    org_id, (admin, reader) = await factories.org_with_members(db, "read")
    space = await factories.api_space(client, org_id, admin, visibility="public")
    kept = 1 if db.dialect.name == "sqlite" else 0  # PostgreSQL reads every time
    for path in (f"/v1/orgs/{org_id}", f"/v1/spaces/{space['id']}"):
        for who in (admin, reader):
            first = await _answer(client, path, who)
            assert first[0] == 200
            before = _reused()
            caplog.clear()
            with caplog.at_level("INFO", logger="docshelf.access"):
                assert await _answer(client, path, who) == first
            assert _reused() - before == kept
            # The access line names the caller of a kept answer as of a read one.
            (line,) = [r for r in caplog.records if r.name == "docshelf.access"]
            assert (line.user_id, line.status) == (who.id, 200)  # type: ignore[attr-defined]


async def test_refusals_are_read_every_time(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    outsider = await factories.user(db)
    cases = [
        (f"/v1/orgs/{org_id}", outsider, 404, "Organization not found"),
        ("/v1/spaces/missing", admin, 404, "Space not found"),
        (f"/v1/orgs/{org_id}", None, 401, Unauthorized.default_message),
    ]
    before = _reused()
    for path, who, status, message in cases:
        for _ in range(2):
            r = await client.get(path, headers=who.headers if who else {})
            assert (r.status_code, r.json()) == (status, error(status, message))
    assert _reused() == before


async def test_kept_answers_carry_this_request_s_limit_and_id(
    settings: Settings, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    path = f"/v1/orgs/{org_id}"
    limited = {"rate_limit": 3, "rate_limit_window": 3600}
    async with (
        second_app(settings, **limited) as kept,
        second_app(settings, **limited, answer_cache_mb=0) as fresh,
    ):
        statuses = []
        for i in range(4):
            headers = {**admin.headers, "X-Request-Id": f"request-{i}"}
            got = await kept.get(path, headers=headers)
            want = await fresh.get(path, headers=headers)
            assert (got.status_code, got.headers.raw, got.content) == (
                want.status_code,
                want.headers.raw,
                want.content,
            )
            assert got.headers["X-Request-Id"] == f"request-{i}"
            statuses.append((got.status_code, got.headers["X-RateLimit-Remaining"]))
    assert statuses == [(200, "2"), (200, "1"), (200, "0"), (429, "0")]


async def test_a_locked_database_is_a_503_with_kept_answers_as_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What SQLite raises to a read that waited out its busy timeout (WAL recovery, a non-WAL
    database: kit/db.py), on every statement of the read connections, before and after an
    answer is kept. On its own SQLite install, whatever the suite's engine."""
    own = Settings(data_dir=tmp_path, database_url="", base_url=BASE, rate_limit=0)
    await asyncio.to_thread(upgrade, own)  # migrations run their own event loop
    async with second_app(own) as kept, second_app(own, answer_cache_mb=0) as fresh:
        db = create_engine(own)
        try:
            org_id, (admin,) = await factories.org_with_members(db)
        finally:
            await db.dispose()
        path = f"/v1/orgs/{org_id}"
        assert (await kept.get(path, headers=admin.headers)).status_code == 200

        def locked(*_: object, **__: object) -> object:
            raise sqlite3.OperationalError("database is locked")

        with monkeypatch.context() as patched:
            patched.setattr(sqlite_inline._Connection, "execute", locked)
            patched.setattr(sqlite_inline._Cursor, "execute", locked)
            for client in (fresh, kept):
                r = await client.get(path, headers=admin.headers)
                assert (r.status_code, r.headers["Retry-After"], r.json()) == (
                    503,
                    "1",
                    error(503, "The server is busy with other writes; retry shortly"),
                )
        assert (await kept.get(path, headers=admin.headers)).status_code == 200


async def test_no_budget_keeps_nothing(
    settings: Settings, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    async with second_app(settings, answer_cache_mb=0) as off:
        before = _reused()
        for _ in range(3):
            assert (await off.get(f"/v1/orgs/{org_id}", headers=admin.headers)).status_code == 200
        assert _reused() == before


async def test_every_change_is_obeyed_on_the_next_request(
    settings: Settings, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, reader, guest) = await factories.org_with_members(db, "read", None)
    outsider = await factories.user(db)
    public = await factories.api_space(client, org_id, admin, visibility="public")
    private = await factories.api_space(client, org_id, admin)
    callers = (admin, reader, guest, outsider)
    paths = (f"/v1/orgs/{org_id}", *(f"/v1/spaces/{s['id']}" for s in (public, private)))

    async def api(method: str, path: str, body: object, status: int) -> None:
        r = await client.request(method, path, json=body, headers=admin.headers)
        assert r.status_code == status, r.text

    async def elsewhere(sql: str) -> None:
        # Another engine: its own connections, as another process or the CLI would write.
        other = create_engine(settings)
        try:
            async with unit_of_work(other) as conn:
                await conn.execute(sa.text(sql), {"org": org_id})
        finally:
            await other.dispose()

    async def revoke() -> None:
        async with unit_of_work(db) as conn:
            await revoke_token(conn, guest.token)

    grants = f"/v1/spaces/{private['id']}/permissions"
    member = f"{paths[0]}/members/{reader.id}"
    renamed = "UPDATE organizations SET title = 'Else' WHERE id = :org"
    changes: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("org renamed", lambda: api("PATCH", paths[0], {"title": "Renamed"}, 200)),
        ("space renamed", lambda: api("PATCH", paths[2], {"title": "Private 2"}, 200)),
        ("grant given", lambda: api("POST", grants, {"users": [guest.id], "role": "edit"}, 204)),
        ("role raised", lambda: api("PATCH", member, {"role": "admin"}, 200)),
        ("role lowered", lambda: api("PATCH", member, {"role": "read"}, 200)),
        ("written elsewhere", lambda: elsewhere(renamed)),
        ("grant removed", lambda: api("POST", grants, {"users": [guest.id], "role": None}, 204)),
        ("space made private", lambda: api("PATCH", paths[1], {"visibility": "private"}, 200)),
        ("member removed", lambda: api("DELETE", member, None, 204)),
        ("token revoked", revoke),
        ("space deleted", lambda: api("DELETE", paths[2], None, 205)),
    ]  # fmt: skip
    kept = 1 if db.dialect.name == "sqlite" else 0  # PostgreSQL reads every time
    async with second_app(settings, answer_cache_mb=0) as fresh:
        for name, change in changes:
            for who in callers:  # the read before each change is a kept answer where kept
                for path in paths:
                    first = await _answer(client, path, who)
                    before = _reused()
                    assert await _answer(client, path, who) == first
                    assert _reused() - before == (kept if first[0] == 200 else 0), name
            await change()
            for who in callers:
                for path in paths:
                    got = await _answer(client, path, who)
                    assert got == await _answer(fresh, path, who), (name, who, path)


async def test_what_a_read_connection_sees_moves_with_every_commit(
    tmp_path: Path, db: AsyncEngine
) -> None:
    async with unit_of_work(db, write=False) as conn:
        assert (sqlite_inline.seen(conn) is None) == (db.dialect.name != "sqlite")
    engine = create_engine(Settings(data_dir=tmp_path, database_url=""))
    try:
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))

        async def seen() -> tuple[object, int, int]:
            async with unit_of_work(engine, write=False) as conn:
                found = sqlite_inline.seen(conn)
                assert found is not None
                return found

        def moved(before: tuple[object, int, int], after: tuple[object, int, int]) -> bool:
            assert after[0] is before[0]  # one read connection, kept between reads
            return after[1:] != before[1:]

        first = await seen()
        assert not moved(first, await seen())  # nothing committed: the same
        async with unit_of_work(engine) as conn:  # this process's writer
            await conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        second = await seen()
        assert moved(first, second)
        write = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        write += "c.execute('INSERT INTO t VALUES (2)'); c.commit()"
        database = str(tmp_path / "docshelf.db")
        other = await asyncio.create_subprocess_exec(sys.executable, "-c", write, database)
        assert await other.wait() == 0  # another process
        third = await seen()
        assert moved(second, third)
        async with unit_of_work(engine, write=False) as conn:  # the read connection's own write
            await conn.execute(sa.text("INSERT INTO t VALUES (3)"))
            fourth = sqlite_inline.seen(conn)
            assert fourth is not None and moved(third, fourth)
        assert not moved(fourth, await seen())

        # Two connections count on their own: one opened after a commit can show the very
        # numbers another showed before it, so the connection is part of what was seen.
        assert isinstance(engine, Engine) and engine.reader is not None
        for idle in engine.idle_readers:  # only new connections from here on
            idle.close()
        engine.idle_readers.clear()
        await engine.reader.dispose()
        async with unit_of_work(engine, write=False) as held:
            before = sqlite_inline.seen(held)
            async with unit_of_work(engine) as conn:
                await conn.execute(sa.text("INSERT INTO t VALUES (5)"))
            async with unit_of_work(engine, write=False) as opened:
                after = sqlite_inline.seen(opened)
        assert before is not None and after is not None
        assert after[1:] == before[1:]
        assert after != before
    finally:
        await engine.dispose()
