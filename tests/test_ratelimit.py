"""The rate limiter without database writes: Redis shared by API processes (a real redis-server),
each process's share in memory without it, and the fall back to that share when Redis is down.
Two `create_app` instances on one settings object stand for two API processes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.app import create_app
from docshelf.auth import tokens
from docshelf.config import Settings
from docshelf.kit.clock import clock
from docshelf.ratelimit.service import RateLimiter
from tests import factories
from tests.conftest import BASE, RedisServer
from tests.helpers import error

WINDOW = 60


def _window_end() -> int:
    return (int(clock.now().timestamp()) // WINDOW + 1) * WINDOW


def _refused(limit: int) -> dict[str, Any]:
    retry = _window_end() - int(clock.now().timestamp())
    return error(429, f"Rate limit of {limit} requests per {WINDOW}s exceeded; retry in {retry}s")


@asynccontextmanager
async def _processes(
    settings: Settings, n: int, **update: Any
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """n API processes on the same settings, each behind its own client."""
    s = settings.model_copy(update={"rate_limit_window": WINDOW, **update})
    apps = [create_app(s) for _ in range(n)]
    clients = [
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=a, raise_app_exceptions=False), base_url=BASE
        )
        for a in apps
    ]
    try:
        yield clients
    finally:
        for c in clients:
            await c.aclose()
        for a in apps:
            await a.state.limiter.aclose()
            await a.state.engine.dispose()


def _app(client: httpx.AsyncClient) -> FastAPI:
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    app = transport.app
    assert isinstance(app, FastAPI)
    return app


def _limiter(client: httpx.AsyncClient) -> RateLimiter:
    limiter: RateLimiter = _app(client).state.limiter
    return limiter


def _headers(r: httpx.Response) -> tuple[int, str, str, str]:
    h = r.headers
    return r.status_code, h["x-ratelimit-limit"], h["x-ratelimit-remaining"], h["x-ratelimit-reset"]


# -- Redis: one exact budget per token across processes ---------------------------------------


async def test_redis_limit_is_exact_across_two_processes(
    settings: Settings, db: AsyncEngine, redis_url: str
) -> None:
    me = await factories.user(db)
    async with _processes(settings, 2, rate_limit=10, rate_limit_redis_url=redis_url) as clients:
        results = await asyncio.gather(
            *(clients[i % 2].get("/v1/user", headers=me.headers) for i in range(16))
        )
    assert sorted(r.status_code for r in results) == [200] * 10 + [429] * 6
    served = [r for r in results if r.status_code == 200]
    assert sorted(int(r.headers["x-ratelimit-remaining"]) for r in served) == list(range(10))
    for r in results:
        assert (r.headers["x-ratelimit-limit"], r.headers["x-ratelimit-reset"]) == (
            "10",
            str(_window_end()),
        )
        if r.status_code == 429:
            assert r.json() == _refused(10)
            assert r.headers["x-ratelimit-remaining"] == "0"
            assert r.headers["retry-after"] == str(_window_end() - int(clock.now().timestamp()))


async def test_redis_headers_429_and_window_reset_alternating_processes(
    settings: Settings, db: AsyncEngine, redis_url: str
) -> None:
    me = await factories.user(db)
    other = await factories.user(db)
    async with _processes(settings, 2, rate_limit=3, rate_limit_redis_url=redis_url) as (a, b):
        end = str(_window_end())
        assert _headers(await a.get("/v1/user", headers=me.headers)) == (200, "3", "2", end)
        assert _headers(await b.get("/v1/user", headers=me.headers)) == (200, "3", "1", end)
        assert _headers(await a.get("/v1/user", headers=me.headers)) == (200, "3", "0", end)
        for client in (b, a):
            r = await client.get("/v1/user", headers=me.headers)
            assert _headers(r) == (429, "3", "0", end)
            assert r.json() == _refused(3)
            assert r.headers["retry-after"] == str(int(end) - int(clock.now().timestamp()))
        # Another token has its own budget on both processes.
        assert _headers(await b.get("/v1/user", headers=other.headers)) == (200, "3", "2", end)
        # The next window starts afresh everywhere.
        clock.advance(timedelta(seconds=WINDOW))
        end = str(_window_end())
        assert _headers(await b.get("/v1/user", headers=me.headers)) == (200, "3", "2", end)
        assert _headers(await a.get("/v1/user", headers=me.headers)) == (200, "3", "1", end)


async def test_redis_counters_expire_and_hold_no_token(
    settings: Settings, db: AsyncEngine, redis_url: str
) -> None:
    me = await factories.user(db)
    async with _processes(settings, 1, rate_limit=3, rate_limit_redis_url=redis_url) as [c]:
        assert (await c.get("/v1/user", headers=me.headers)).status_code == 200
    with redis.Redis.from_url(redis_url) as client:
        keys = client.keys("*")
        assert len(keys) == 1
        assert me.token.encode() not in keys[0]
        assert 0 < client.ttl(keys[0]) <= 2 * WINDOW


# -- without Redis: each process enforces its share -------------------------------------------


async def test_each_process_enforces_its_share_without_redis(
    settings: Settings, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    # 5 requests shared by 2 processes: each allows ceil(5 / 2) = 3, and says so.
    async with _processes(settings, 2, rate_limit=5, rate_limit_processes=2) as (a, b):
        end = str(_window_end())
        for client in (a, b):
            for remaining in ("2", "1", "0"):
                r = await client.get("/v1/user", headers=me.headers)
                assert _headers(r) == (200, "3", remaining, end)
            r = await client.get("/v1/user", headers=me.headers)
            assert _headers(r) == (429, "3", "0", end)
            assert r.json() == _refused(3)


async def test_the_share_follows_the_workers_unless_set(settings: Settings) -> None:
    def share(**update: Any) -> int:
        app = create_app(settings.model_copy(update={"rate_limit": 1200, **update}))
        limiter: RateLimiter = app.state.limiter
        return limiter.share

    assert share() == 1200
    assert share(workers=4) == 300
    assert share(workers=4, rate_limit_processes=7) == 172  # rounded up: never below the limit
    assert share(rate_limit_processes=3) == 400


def test_the_redis_url_must_name_redis() -> None:
    for bad in ("http://127.0.0.1:6379", "127.0.0.1:6379", "postgresql://x"):
        with pytest.raises(ValidationError, match="redis://, rediss:// or unix://"):
            Settings(rate_limit_redis_url=bad)
    for good in ("redis://127.0.0.1:6379/0", "rediss://h:6380", "unix:///run/redis.sock"):
        assert Settings(rate_limit_redis_url=good).rate_limit_redis_url == good


async def test_rate_limit_zero_counts_nothing_even_with_redis(
    settings: Settings, db: AsyncEngine, redis_url: str
) -> None:
    me = await factories.user(db)
    async with _processes(settings, 1, rate_limit=0, rate_limit_redis_url=redis_url) as [c]:
        r = await c.get("/v1/user", headers=me.headers)
        assert r.status_code == 200
        assert "x-ratelimit-limit" not in r.headers
    with redis.Redis.from_url(redis_url) as client:
        assert client.dbsize() == 0


# -- Redis down: fail open to the share ---------------------------------------------------------


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis this test may stop and start again."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


def _messages(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    return lambda: [r.getMessage() for r in caplog.records if r.name == "docshelf.ratelimit"]


async def test_redis_down_serves_with_the_share_then_counts_in_redis_again(
    settings: Settings,
    db: AsyncEngine,
    own_redis: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    me = await factories.user(db)
    logged = _messages(caplog)
    update = {"rate_limit": 4, "rate_limit_processes": 2, "rate_limit_redis_url": own_redis.url}
    with caplog.at_level(logging.INFO, logger="docshelf.ratelimit"):
        async with _processes(settings, 1, **update) as [c]:
            end = str(_window_end())
            assert _headers(await c.get("/v1/user", headers=me.headers)) == (200, "4", "3", end)
            own_redis.stop()
            # Served, held to this process's share ceil(4 / 2) = 2, counted in memory.
            r = await c.get("/v1/user", headers=me.headers)
            assert (_headers(r), r.json()["id"]) == ((200, "2", "1", end), me.id)
            assert _headers(await c.get("/v1/user", headers=me.headers)) == (200, "2", "0", end)
            r = await c.get("/v1/user", headers=me.headers)
            assert (_headers(r), r.json()) == ((429, "2", "0", end), _refused(2))
            warnings = [m for m in logged() if "unreachable" in m]
            assert len(warnings) == 1, logged()
            assert "each process enforces its share of 2 requests per 60s" in warnings[0]

            # Back (empty: it keeps nothing on disk); the next try counts there again.
            own_redis.start()
            _limiter(c).retry_shared_after = 0
            assert _headers(await c.get("/v1/user", headers=me.headers)) == (200, "4", "3", end)
            assert logged()[-1] == "rate-limit store reachable again; counting there"


async def test_redis_unreachable_from_the_start_fails_open(
    settings: Settings, db: AsyncEngine, tmp_path: Path
) -> None:
    me = await factories.user(db)
    nowhere = RedisServer(tmp_path)  # a free port nobody listens on
    update = {"rate_limit": 3, "rate_limit_processes": 3, "rate_limit_redis_url": nowhere.url}
    async with _processes(settings, 1, **update) as [c]:
        end = str(_window_end())
        assert _headers(await c.get("/v1/user", headers=me.headers)) == (200, "1", "0", end)
        r = await c.get("/v1/user", headers=me.headers)
        assert (_headers(r), r.json()) == ((429, "1", "0", end), _refused(1))


# -- requests without a token: per client address ---------------------------------------------


async def test_anonymous_readers_are_limited_per_address(
    settings: Settings, db: AsyncEngine
) -> None:
    """One visitor hammering published pages (or posting SAML responses) cannot take the event
    loop from the others: requests without a token count per client address."""
    org, (admin,) = await factories.org_with_members(db)
    s = settings.model_copy(update={"rate_limit_window": WINDOW, "anonymous_rate_limit": 3})
    app = create_app(s)

    def client_at(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(address, 5000))
        return httpx.AsyncClient(transport=transport, base_url=BASE)

    try:
        async with client_at("203.0.113.7") as flood, client_at("203.0.113.8") as other:
            for _ in range(3):
                r = await flood.get(f"/{org}/nope/")
                assert r.status_code == 404
                assert "x-ratelimit-limit" not in r.headers
            for path in (f"/{org}/nope/", "/sso/saml/nope/acs", "/v1/urls/published?url=x"):
                r = await flood.request("POST" if "acs" in path else "GET", path)
                assert r.status_code == 429, path
                assert r.json() == _refused(3)
                assert r.headers["retry-after"] == str(_window_end() - int(clock.timestamp()))
            # A token sent to a route that takes none names nobody: still this address's.
            fake = {"Authorization": f"Bearer {tokens.generate()}"}  # well formed, nobody's
            r = await flood.get("/v1/urls/published?url=x", headers=fake)
            assert r.status_code == 429
            # Health probes, the reader's own assets and a page's images are never counted;
            # nor is another address, nor a caller with a token on the API (its own budget).
            assert (await flood.get("/healthz")).status_code == 200
            assert (await flood.get("/~reader/static/missing.css")).status_code == 404
            assert (await flood.get(f"/{org}/nope/page/~files/nope")).status_code == 404
            assert (await other.get(f"/{org}/nope/")).status_code == 404
            r = await flood.get(f"/v1/orgs/{org}", headers=admin.headers)
            assert r.status_code == 200
            clock.advance(timedelta(seconds=WINDOW))
            assert (await flood.get(f"/{org}/nope/")).status_code == 404
    finally:
        await app.state.limiter.aclose()
        await app.state.anonymous_limiter.aclose()
        await app.state.engine.dispose()


def test_an_ipv6_client_counts_by_its_64() -> None:
    from docshelf.app import _client_key

    assert _client_key(("2001:db8:1:2:aaaa::1", 1)) == _client_key(("2001:db8:1:2:bbbb::9", 2))
    assert _client_key(("2001:db8:1:2::1", 1)) != _client_key(("2001:db8:1:3::1", 1))
    assert _client_key(("203.0.113.7", 1)) == "ip:203.0.113.7"
