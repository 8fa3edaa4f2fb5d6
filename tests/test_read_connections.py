"""Read units of work keep a few connections between reads (kit.db: `Engine.idle_readers`),
on SQLite's reader and PostgreSQL's pool alike, and never at the cost of a unit of work that
needs one from the pool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from docshelf.config import Settings
from docshelf.kit.db import Engine, create_engine, unit_of_work


@pytest.fixture
async def small(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """An engine whose pool has two connections and gives up on a free one after a second."""
    engine = create_engine(settings.model_copy(update={"db_pool_size": 2, "lock_timeout": 1.0}))
    yield engine
    await engine.dispose()


@pytest.fixture
def checkouts(small: AsyncEngine) -> Iterator[list[object]]:
    """The connections the small engine's pools hand out while the test runs (its reader's
    too, on SQLite)."""
    seen: list[object] = []

    def record(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        seen.append(dbapi_connection)

    reader = getattr(small, "reader", None)
    pools = [e.sync_engine.pool for e in (small, reader) if e is not None]
    for pool in pools:
        event.listen(pool, "checkout", record)
    yield seen
    for pool in pools:
        event.remove(pool, "checkout", record)


async def _read(engine: AsyncEngine, pause: float = 0.0) -> int:
    async with unit_of_work(engine, write=False) as conn:
        value = (await conn.execute(sa.text("SELECT 1"))).scalar_one()
        await asyncio.sleep(pause)
        return int(value)


async def test_reads_one_after_another_take_one_connection(
    small: AsyncEngine, checkouts: list[object]
) -> None:
    for _ in range(3):
        assert await _read(small) == 1
    assert len(checkouts) == 1


async def test_a_read_that_failed_leaves_its_connection_to_the_pool(
    small: AsyncEngine, checkouts: list[object]
) -> None:
    with pytest.raises(sa.exc.ProgrammingError if _pg(small) else sa.exc.OperationalError):
        async with unit_of_work(small, write=False) as conn:
            await conn.execute(sa.text("SELECT nothing FROM nowhere"))
    assert await _read(small) == 1
    # The failed read's connection went back to the pool (and came out of it again); a kept
    # one would have served the second read without a checkout.
    assert len(checkouts) == 2


async def test_writes_get_connections_that_idle_reads_keep(
    small: AsyncEngine, checkouts: list[object]
) -> None:
    # Two reads at once take both of the pool's connections, and both are kept when they end.
    assert list(await asyncio.gather(_read(small, 0.05), _read(small, 0.05))) == [1, 1]
    assert len(checkouts) == 2

    async def write() -> None:
        async with unit_of_work(small) as conn:
            await conn.execute(sa.text("SELECT 1"))
            await asyncio.sleep(0.05)

    # Without the kept ones handed back, these would wait out the pool's one-second timeout
    # (sqlalchemy.exc.TimeoutError).
    async with asyncio.timeout(0.9):
        await asyncio.gather(write(), write())
    assert list(await asyncio.gather(_read(small), _read(small))) == [1, 1]


async def test_a_write_takes_an_idle_read_connection_rather_than_open_one(
    settings: Settings,
) -> None:
    if settings.is_sqlite:
        pytest.skip("SQLite's writes have a connection of their own (kit.db.InlineWrites)")
    engine = create_engine(settings.model_copy(update={"db_pool_size": 4}))
    opened: list[object] = []
    event.listen(engine.sync_engine.pool, "connect", lambda conn, _rec: opened.append(conn))
    try:
        assert list(await asyncio.gather(_read(engine, 0.05), _read(engine, 0.05))) == [1, 1]
        assert len(opened) == 2
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.text("SELECT 1"))
        assert await _read(engine) == 1
        assert len(opened) == 2
    finally:
        await engine.dispose()


async def test_a_read_that_outlives_its_engines_pool_keeps_nothing(small: AsyncEngine) -> None:
    assert await _read(small) == 1
    reading = asyncio.create_task(_read(small, 0.2))
    await asyncio.sleep(0.05)
    # What the app's shutdown does while a read is still running.
    await small.dispose()
    assert await reading == 1
    assert isinstance(small, Engine)
    assert small.idle_readers == []


async def test_reads_go_on_after_the_server_dropped_the_kept_connections(
    small: AsyncEngine,
) -> None:
    if not _pg(small):
        pytest.skip("a PostgreSQL server's connections; SQLite has no server to lose them")

    async def backend(pause: float) -> int:
        async with unit_of_work(small, write=False) as conn:
            pid = (await conn.execute(sa.text("SELECT pg_backend_pid()"))).scalar_one()
            await asyncio.sleep(pause)
            return int(pid)

    kept = set(await asyncio.gather(backend(0.05), backend(0.05)))
    assert len(kept) == 2
    # What a server restart does to them.
    other = create_async_engine(small.url)
    try:
        async with other.connect() as conn:
            for pid in kept:
                await conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await other.dispose()
    # The first read meets a dropped connection, as a pooled one would after a restart; the
    # other kept one is not used again: the next read gets a new connection.
    with pytest.raises(sa.exc.DBAPIError):
        await _read(small)
    assert await backend(0) not in kept
    assert await backend(0) not in kept


def _pg(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"
