"""The direct dispatch of the hottest reads (kit.routing.DirectGets) answers exactly what
FastAPI's routing answers: two app instances on one database, one with it and one without,
compared byte for byte (status, every header in order, body) on successes, refusals and odd
paths; and the hot statements run on the driver (kit.prepared) read what SQLAlchemy reads."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.api import DIRECT_GETS
from docshelf.app import create_app
from docshelf.auth import repository as auth_repository
from docshelf.auth.service import revoke_token
from docshelf.auth.tokens import hash_token
from docshelf.authz.content import ContentScope
from docshelf.config import Settings
from docshelf.kit import prepared
from docshelf.kit.db import Gate, unit_of_work
from docshelf.kit.routing import DirectGets, install_direct_gets
from docshelf.organization import policy as organization_policy
from docshelf.organization.endpoints import list_organizations
from docshelf.space import repository as space_repository
from tests import factories
from tests.conftest import BASE

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


@asynccontextmanager
async def _client(
    settings: Settings, *, direct: bool, limit: int = 100_000
) -> AsyncIterator[httpx.AsyncClient]:
    # The limiter on, so its headers are compared too; each app counts the same requests.
    app = create_app(
        settings.model_copy(update={"rate_limit": limit, "rate_limit_window": 3600}),
        direct_gets=direct,
    )
    assert isinstance(app.router.middleware_stack, DirectGets) is direct
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
            yield c
    finally:
        await app.state.limiter.aclose()
        await app.state.engine.dispose()


async def _answer(client: httpx.AsyncClient, path: str, headers: list[tuple[str, str]]) -> Answer:
    r = await client.get(path, headers=[("X-Request-Id", "compare"), *headers])
    return r.status_code, r.headers.raw, r.content


async def test_direct_and_routed_answers_are_byte_identical(
    settings: Settings,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    org_id, (admin, reader, guest) = await factories.org_with_members(db, "read", None)
    outsider = await factories.user(db)
    revoked = await factories.user(db)
    await factories.member(db, org=org_id, who=revoked, role="admin")
    public = await factories.api_space(client, org_id, admin, visibility="public")
    private = await factories.api_space(client, org_id, admin)
    granted = await factories.api_space(client, org_id, admin)
    gone = await factories.api_space(client, org_id, admin)
    r = await client.post(
        f"/v1/spaces/{granted['id']}/permissions",
        json={"users": [guest.id], "role": "edit"},
        headers=admin.headers,
    )
    assert r.status_code == 204, r.text
    assert (
        await client.delete(f"/v1/spaces/{gone['id']}", headers=admin.headers)
    ).status_code == 205
    async with unit_of_work(db) as conn:
        await revoke_token(conn, revoked.token)
    async with _client(settings, direct=True) as direct, _client(settings, direct=False) as routed:

        def auth(who: factories.Who) -> list[tuple[str, str]]:
            return [("Authorization", f"Bearer {who.token}")]

        orgs, spaces = f"/v1/orgs/{org_id}", "/v1/spaces/"
        cases: list[tuple[str, list[tuple[str, str]]]] = [
            (orgs, auth(admin)),
            (orgs, auth(reader)),
            (orgs, auth(guest)),
            (orgs, auth(outsider)),
            (orgs, auth(revoked)),
            (orgs, []),
            (orgs, [("Authorization", "Bearer not-a-token")]),
            (orgs, [("Authorization", "Basic eDp5")]),
            (orgs, [*auth(admin), *auth(reader)]),
            (orgs + "?unknown=1", auth(admin)),
            (orgs + "/", auth(admin)),
            (spaces + public["id"], auth(admin)),
            (spaces + public["id"], auth(reader)),
            (spaces + public["id"], auth(outsider)),
            (spaces + private["id"], auth(admin)),
            (spaces + private["id"], auth(reader)),
            (spaces + granted["id"], auth(guest)),
            (spaces + granted["id"], auth(reader)),
            (spaces + gone["id"], auth(admin)),
            (spaces + gone["id"], auth(reader)),
            (spaces + public["id"], auth(revoked)),
            (spaces + public["id"], []),
            (spaces + public["id"] + "?shareKey=" + "k" * 129, auth(reader)),
        ]
        for bad in ("missing", "%E2%9C%93", "x" * 600, "..", "%20", "a%00b", "'; --", "%2F"):
            cases += [(f"/v1/orgs/{bad}", auth(admin)), (f"/v1/spaces/{bad}", auth(admin))]
        seen: set[int] = set()
        with caplog.at_level(logging.INFO, logger="docshelf.access"):
            for path, headers in cases:
                caplog.clear()
                answers = [await _answer(c, path, headers) for c in (direct, routed)]
                assert answers[0] == answers[1], path
                lines = [(r.route, r.status, r.user_id) for r in caplog.records]  # type: ignore[attr-defined]
                assert len(lines) == 2 and lines[0] == lines[1], (path, lines)
                seen.add(answers[0][0])
        assert seen == {200, 307, 400, 401, 404}
    # The direct path read the caller and the organization or space in one statement on
    # PostgreSQL (kit.prepared.Chain), and never tried to on SQLite.
    fused = {name for a in DIRECT_GETS.values() if a is not None for name in a.chain._forms}
    assert fused == ({"postgresql"} if db.dialect.name == "postgresql" else set())


async def test_a_rate_limited_read_is_refused_alike(settings: Settings, db: AsyncEngine) -> None:
    """GET of an organization or a space has no 403 (no view right is a 404); the refusals
    before the dispatch, like 429, must come out the same too."""
    org_id, (admin,) = await factories.org_with_members(db)
    headers = [("Authorization", f"Bearer {admin.token}")]
    async with (
        _client(settings, direct=True, limit=1) as direct,
        _client(settings, direct=False, limit=1) as routed,
    ):
        for _ in range(2):
            answers = [await _answer(c, f"/v1/orgs/{org_id}", headers) for c in (direct, routed)]
            assert answers[0] == answers[1]
        assert answers[0][0] == 429


def test_only_routes_it_can_serve_exactly_are_taken() -> None:
    app = FastAPI()
    app.get("/v1/orgs")(list_organizations)
    with pytest.raises(RuntimeError, match="not a route DirectGets can serve exactly"):
        install_direct_gets(app, {list_organizations: None})

    async def absent() -> None: ...

    with pytest.raises(RuntimeError, match="no GET route"):
        install_direct_gets(app, {absent: None})


async def _both(db: AsyncEngine, read: Callable[[Any], Any]) -> list[Any]:
    """The same repository read on a read unit of work (the driver) and a writing one
    (SQLAlchemy's own execution)."""
    results = []
    for write in (False, True):
        async with unit_of_work(db, write=write) as conn:
            results.append(await read(conn))
    return results


async def test_prepared_statements_read_what_sqlalchemy_reads(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    space = await factories.api_space(client, org_id, admin, emoji="1f600")
    r = await client.post(
        f"/v1/spaces/{space['id']}/permissions",
        json={"users": [guest.id], "role": "comment"},
        headers=admin.headers,
    )
    assert r.status_code == 204, r.text

    async def token(conn: Any) -> Any:
        return dict(await auth_repository.find_active_token(conn, hash_token(admin.token)) or {})

    async def org(conn: Any) -> Any:
        access = await organization_policy.load_for(conn, admin.id, org_id)
        return dict(access.org), access.role, access.owns_team

    async def space_row(conn: Any) -> Any:
        return dict(await space_repository.get_with_membership(conn, space["id"], guest.id) or {})

    async def grants(conn: Any) -> Any:
        scope = await ContentScope.near_known(
            conn, org_id, guest.id, None, is_member=True, org_role=None
        )
        return scope.grants

    for read in (token, org, space_row, grants):
        on_driver, on_sqlalchemy = await _both(db, read)
        assert on_driver == on_sqlalchemy
        assert on_driver  # not vacuous
    row = (await _both(db, space_row))[0]
    assert row["created_at"].tzinfo is not None and row["caller_member"] == guest.id


async def test_chained_reads_read_what_each_reads_alone(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The token and the organization or space read in one statement (kit.prepared.Chain)
    give each read exactly its own rows: a member, a non-member, an unknown or a revoked
    token, a missing organization or space."""
    org_id, (admin, guest) = await factories.org_with_members(db, None)
    other_org, (stranger,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    gone = await factories.user(db)
    async with unit_of_work(db) as conn:
        await revoke_token(conn, gone.token)
    org_chain = auth_repository.caller_then(organization_policy.VISIBLE, user="uid")
    space_chain = auth_repository.caller_then(space_repository.WITH_MEMBERSHIP, user="uid")

    async def reads(token: str, chain: Any, param: str, target: str) -> Any:
        async with unit_of_work(db, write=False) as conn:
            caller = await auth_repository.find_active_token(conn, hash_token(token))
            if caller is None:
                return None, None
            if chain is org_chain:
                row = await organization_policy.VISIBLE.first(
                    conn, {"oid": target, "uid": caller["user_id"]}
                )
            else:
                row = await space_repository.get_with_membership(conn, target, caller["user_id"])
            return dict(caller), None if row is None else dict(row)

    cases = [
        (admin.token, org_chain, "oid", org_id),
        (stranger.token, org_chain, "oid", org_id),
        (admin.token, org_chain, "oid", other_org),
        (admin.token, org_chain, "oid", "missing"),
        (gone.token, org_chain, "oid", org_id),
        ("gb_api_unknown", org_chain, "oid", org_id),
        (guest.token, space_chain, "sid", space["id"]),
        (stranger.token, space_chain, "sid", space["id"]),
        (admin.token, space_chain, "sid", "missing"),
        (gone.token, space_chain, "sid", space["id"]),
    ]
    found = []
    for token, chain, param, target in cases:
        alone = await reads(token, chain, param, target)
        with prepared.ahead(chain, {param: target}) as plan:
            together = await reads(token, chain, param, target)
        assert together == alone, (token, target)
        # On PostgreSQL the follower was answered from the fused statement whenever the token
        # was found; on SQLite never.
        assert plan.taken is (db.dialect.name == "postgresql" and alone[0] is not None)
        found.append(alone[1] is not None)
    assert found == [True, False, False, False, False, False, True, True, False, False]


def _coalesced() -> float:
    return REGISTRY.get_sample_value("docshelf_db_coalesced_reads_total") or 0.0


async def test_concurrent_reads_answer_each_caller_exactly(
    settings: Settings, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """Many GETs at once, from different callers for different organizations and spaces: on
    PostgreSQL one request's statement reads the caller and the organization or space for
    those waiting meanwhile (kit.prepared's coalesced reads), and each still gets exactly its
    own answer, refusals included. Some are cancelled half-way (a client gone): the others
    still get theirs, and no connection or admission is left taken."""
    org_id, (admin, reader, guest) = await factories.org_with_members(db, "read", None)
    other_org, (stranger,) = await factories.org_with_members(db)
    revoked = await factories.user(db)
    await factories.member(db, org=org_id, who=revoked, role="admin")
    public = await factories.api_space(client, org_id, admin, visibility="public")
    private = await factories.api_space(client, org_id, admin)
    theirs = await factories.api_space(client, other_org, stranger)
    async with unit_of_work(db) as conn:
        await revoke_token(conn, revoked.token)

    cases = [
        (f"/v1/orgs/{org_id}", admin.headers),
        (f"/v1/orgs/{org_id}", reader.headers),
        (f"/v1/orgs/{org_id}", stranger.headers),
        (f"/v1/orgs/{other_org}", stranger.headers),
        (f"/v1/orgs/{other_org}", admin.headers),
        (f"/v1/orgs/{org_id}", revoked.headers),
        (f"/v1/orgs/{org_id}", {"Authorization": "Bearer gb_api_unknown"}),
        ("/v1/orgs/missing", admin.headers),
        (f"/v1/spaces/{public['id']}", reader.headers),
        (f"/v1/spaces/{public['id']}", stranger.headers),
        (f"/v1/spaces/{private['id']}", guest.headers),
        (f"/v1/spaces/{private['id']}", admin.headers),
        (f"/v1/spaces/{theirs['id']}", stranger.headers),
        (f"/v1/spaces/{theirs['id']}", admin.headers),
        (f"/v1/spaces/{public['id']}", revoked.headers),
    ]
    # Fewer connections than requests in flight: the rest wait for one, first come first served.
    async with _client(settings.model_copy(update={"db_pool_size": 2}), direct=True) as c:

        async def answer(path: str, headers: dict[str, str]) -> tuple[int, bytes]:
            r = await c.get(path, headers=headers)
            return r.status_code, r.content

        alone = [await answer(path, headers) for path, headers in cases]
        assert sorted({status for status, _ in alone}) == [200, 401, 404]
        # A lost hand-over would leave the waiting requests waiting forever: bounded here.
        async with asyncio.timeout(60):
            engine = c._transport.app.state.engine  # type: ignore[attr-defined]
            checkouts: list[object] = []
            event.listen(engine.sync_engine.pool, "checkout", lambda *_: checkouts.append(1))
            before = _coalesced()
            together = await asyncio.gather(*(answer(p, h) for p, h in cases * 6))
            assert together == alone * 6
            if db.dialect.name == "postgresql":
                # A request read for by another's statement takes a connection only if it
                # reads more (a member's grants): far fewer checkouts than requests.
                assert _coalesced() > before
                assert len(checkouts) < len(together) // 2
            else:
                assert _coalesced() == before

            for cut in range(1, 8):
                tasks = [asyncio.ensure_future(answer(p, h)) for p, h in cases * 2]
                for _ in range(cut):
                    await asyncio.sleep(0)
                for task in tasks[::3]:
                    task.cancel()
                done = await asyncio.gather(*tasks, return_exceptions=True)
                for got, want in zip(done, alone * 2, strict=True):
                    assert isinstance(got, asyncio.CancelledError) or got == want
            assert await asyncio.gather(*(answer(p, h) for p, h in cases)) == alone

            # A token revoked while reads are in flight: every request sent after the revoke
            # is refused, whichever statement reads it.
            org_path, victim = f"/v1/orgs/{org_id}", reader.headers
            before_revoke = [asyncio.ensure_future(answer(org_path, victim)) for _ in range(20)]
            await asyncio.sleep(0)
            async with unit_of_work(db) as conn:
                await revoke_token(conn, reader.token)
            after_revoke = await asyncio.gather(*(answer(org_path, victim) for _ in range(20)))
            assert {status for status, _ in after_revoke} == {401}
            assert {status for status, _ in await asyncio.gather(*before_revoke)} <= {200, 401}
            assert engine.sync_engine.pool.checkedout() == 0
            gate = getattr(engine, "gate", None)
            if gate is not None:
                assert gate.semaphore()._value == 2


async def test_the_gate_admits_first_come_first_served() -> None:
    """A released admission goes to the longest waiter, not to whoever asks next; a wait
    longer than the pool timeout is a TimeoutError (answered 503)."""
    gate = Gate(1, wait=5)
    held = await gate.enter()
    order: list[str] = []

    async def take(name: str) -> None:
        admitted = await gate.enter()
        order.append(name)
        await asyncio.sleep(0)
        admitted.release()

    waiting = [asyncio.ensure_future(take(name)) for name in ("first", "second")]
    await asyncio.sleep(0)
    assert order == []
    # Scheduled before the release, so it asks before the woken waiter runs: an unfair gate
    # (a free permit to whoever asks first, as the pool did) would let it in first.
    late = asyncio.ensure_future(take("late"))
    held.release()
    await asyncio.gather(*waiting, late)
    assert order == ["first", "second", "late"]

    slow = Gate(1, wait=0.05)
    held = await slow.enter()
    with pytest.raises(sa_exc.TimeoutError):
        await slow.enter()
    held.release()
    (await slow.enter()).release()


async def test_reads_past_a_full_pool_answer_503_or_read_inline(
    settings: Settings, db: AsyncEngine
) -> None:
    """With every connection taken for longer than the pool timeout, GETs waiting to be read
    for answer 503 with Retry-After (PostgreSQL; the request that would read for them waited
    its turn and timed out), and nothing stays taken. SQLite's reads run inline on their own
    connections and never wait for a writer."""
    org_id, (admin,) = await factories.org_with_members(db)
    tight = settings.model_copy(update={"db_pool_size": 1, "lock_timeout": 0.2})
    async with _client(tight, direct=True) as c:
        engine = c._transport.app.state.engine  # type: ignore[attr-defined]
        path, headers = f"/v1/orgs/{org_id}", {"Authorization": f"Bearer {admin.token}"}
        # The install's first /v1 request writes its cursor key: done before the hold.
        assert (await c.get(path, headers=headers)).status_code == 200
        async with asyncio.timeout(60):
            async with unit_of_work(engine):  # holds the only connection
                answers = await asyncio.gather(*(c.get(path, headers=headers) for _ in range(8)))
            if db.dialect.name == "postgresql":
                assert {r.status_code for r in answers} == {503}
                assert all(r.headers["retry-after"] == "1" for r in answers)
                assert answers[0].json() == {
                    "error": {
                        "code": 503,
                        "message": "The server is busy with other writes; retry shortly",
                    }
                }
            else:
                assert {r.status_code for r in answers} == {200}, answers[0].text
            assert (await c.get(path, headers=headers)).status_code == 200
        assert engine.sync_engine.pool.checkedout() == 0
