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
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.kit.db import create_engine, unit_of_work


@pytest.fixture
def checkouts() -> Iterator[list[object]]:
    """The connections every pool of this process hands out while the test runs."""
    seen: list[object] = []

    def record(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        seen.append(dbapi_connection)

    event.listen(sa.pool.Pool, "checkout", record)
    yield seen
    event.remove(sa.pool.Pool, "checkout", record)


@pytest.fixture
async def small(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """An engine whose pool has two connections and gives up on a free one after a second."""
    engine = create_engine(settings.model_copy(update={"db_pool_size": 2, "lock_timeout": 1.0}))
    yield engine
    await engine.dispose()


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
    assert await asyncio.gather(_read(small, 0.05), _read(small, 0.05)) == [1, 1]
    assert len(checkouts) == 2

    async def write() -> None:
        async with unit_of_work(small) as conn:
            await conn.execute(sa.text("SELECT 1"))
            await asyncio.sleep(0.05)

    # Without the kept ones handed back, these would wait out the pool's one-second timeout
    # (sqlalchemy.exc.TimeoutError).
    async with asyncio.timeout(0.9):
        await asyncio.gather(write(), write())
    assert await asyncio.gather(_read(small), _read(small)) == [1, 1]


def _pg(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"
