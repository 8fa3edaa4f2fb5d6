"""Install-wide values (kit.instance): read from the database once per engine once committed,
and never kept from a transaction that claimed them and then rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.kit import instance
from docshelf.kit.db import create_engine, unit_of_work
from docshelf.models import instance_settings


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """The SQL every engine of this process runs while the test does."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(sa.Engine, "before_cursor_execute", record)
    yield seen
    event.remove(sa.Engine, "before_cursor_execute", record)


def _reads(statements: list[str]) -> list[str]:
    return [s for s in statements if "instance_settings" in s and s.lstrip().startswith("SELECT")]


async def test_a_committed_value_is_read_once(db: AsyncEngine, statements: list[str]) -> None:
    async with unit_of_work(db) as conn:
        assert await instance.get_or_create(conn, "test_key", lambda: "first") == "first"
    # A write keeps nothing (it may see its own claim, uncommitted): it reads before and after.
    assert len(_reads(statements)) == 2
    statements.clear()
    for _ in range(3):
        async with unit_of_work(db, write=False) as conn:
            assert await instance.get_or_create(conn, "test_key", lambda: "second") == "first"
    assert len(_reads(statements)) == 1


async def test_each_engine_keeps_its_own(db: AsyncEngine, settings: Settings) -> None:
    async with unit_of_work(db, write=False) as conn:
        assert await instance.get_or_create(conn, "test_own", lambda: "first") == "first"
    async with unit_of_work(db) as conn:
        await conn.execute(instance_settings.delete())
    # Another install on the same database (a test's next app): nothing of the first is kept.
    other = create_engine(settings)
    try:
        async with unit_of_work(other, write=False) as conn:
            assert await instance.get_or_create(conn, "test_own", lambda: "fresh") == "fresh"
    finally:
        await other.dispose()


async def test_a_rolled_back_claim_is_not_kept(db: AsyncEngine, settings: Settings) -> None:
    with pytest.raises(RuntimeError):
        async with unit_of_work(db) as conn:
            assert await instance.get_or_create(conn, "test_lost", lambda: "lost") == "lost"
            # Its own transaction sees the claim, not committed: not kept.
            assert await instance.get_or_create(conn, "test_lost", lambda: "other") == "lost"
            raise RuntimeError("the request failed after it claimed the value")
    async with unit_of_work(db) as conn:
        assert await instance.get_or_create(conn, "test_lost", lambda: "kept") == "kept"
    other = create_engine(settings)  # another process of the install agrees
    try:
        async with unit_of_work(other, write=False) as conn:
            assert await instance.get(conn, "test_lost") == "kept"
    finally:
        await other.dispose()


async def test_a_transaction_that_only_reads_keeps_nothing(db: AsyncEngine) -> None:
    # Only a read unit of work's autocommitting connection keeps values: a transaction of
    # any other kind (here one begun on the engine by hand) may roll its claim back.
    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            assert await instance.get_or_create(conn, "test_plain", lambda: "lost") == "lost"
            assert await instance.get_or_create(conn, "test_plain", lambda: "other") == "lost"
            raise RuntimeError("rolled back")
    async with unit_of_work(db, write=False) as conn:
        assert await instance.get_or_create(conn, "test_plain", lambda: "kept") == "kept"
