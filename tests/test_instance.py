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


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """The SQL every engine of this process runs while the test does."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(sa.Engine, "before_cursor_execute", count)
    yield seen
    event.remove(sa.Engine, "before_cursor_execute", count)


async def test_a_committed_value_is_read_once(db: AsyncEngine, statements: list[str]) -> None:
    async with unit_of_work(db) as conn:
        assert await instance.get_or_create(conn, "test_key", lambda: "first") == "first"
    for _ in range(3):
        async with unit_of_work(db, write=False) as conn:
            assert await instance.get_or_create(conn, "test_key", lambda: "second") == "first"
    reads = [s for s in statements if "instance_settings" in s and s.lstrip().startswith("SELECT")]
    # The write's two reads (before and after its claim: a write keeps nothing, it may see
    # its own uncommitted claim), then the first read's: never one per call.
    assert len(reads) <= 3, reads


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
