"""SQLite's write connections run each statement in one hop to aiosqlite's thread
(kit/sqlite_writer.py), with the adapter's results and errors. On a SQLite install of its own,
whatever the suite's engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiosqlite
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docshelf.config import Settings
from docshelf.kit import sqlite_writer
from docshelf.kit.db import create_engine, unit_of_work


async def test_each_statement_is_one_hop_with_the_adapter_s_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(Settings(data_dir=tmp_path, database_url=""))
    assert engine.url.drivername == f"sqlite+{sqlite_writer.DRIVER}"
    hops: list[str] = []
    hop = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await hop(self, fn, *args, **kwargs)

    try:
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT UNIQUE)"))
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        async with unit_of_work(engine) as conn:
            hops.clear()
            inserted = await conn.execute(sa.text("INSERT INTO t (x) VALUES ('a'), ('b')"))
            assert (inserted.rowcount, hops) == (2, ["_run"])
            hops.clear()
            one = await conn.execute(sa.text("INSERT INTO t (x) VALUES ('c')"))
            assert (one.lastrowid, hops) == (3, ["_run"])
            hops.clear()
            changed = await conn.execute(sa.text("UPDATE t SET x = x || '!' WHERE id > 1"))
            assert (changed.rowcount, hops) == (2, ["_run"])
            hops.clear()
            rows = await conn.execute(sa.text("SELECT id, x FROM t ORDER BY id"))
            assert list(rows.keys()) == ["id", "x"]
            assert (rows.all(), hops) == ([(1, "a"), (2, "b!"), (3, "c!")], ["_run"])
            hops.clear()
            none = await conn.execute(sa.text("SELECT id FROM t WHERE id > 9"))
            assert (none.all(), hops) == ([], ["_run"])
    finally:
        monkeypatch.undo()
        await engine.dispose()


async def test_errors_are_the_adapter_s(tmp_path: Path) -> None:
    engine = create_engine(Settings(data_dir=tmp_path, database_url=""))
    try:
        async with unit_of_work(engine) as conn:
            await conn.execute(sa.text("CREATE TABLE t (x TEXT UNIQUE)"))
            await conn.execute(sa.text("INSERT INTO t VALUES ('a')"))
        with pytest.raises(sa_exc.IntegrityError, match="UNIQUE constraint failed"):
            async with unit_of_work(engine) as conn:
                await conn.execute(sa.text("INSERT INTO t VALUES ('b')"))
                await conn.execute(sa.text("INSERT INTO t VALUES ('a')"))
        with pytest.raises(sa_exc.OperationalError, match="syntax error"):
            async with unit_of_work(engine) as conn:
                await conn.execute(sa.text("SELEKT 1"))
        async with unit_of_work(engine) as conn:  # the failed unit of work kept nothing
            assert (await conn.execute(sa.text("SELECT x FROM t"))).all() == [("a",)]
    finally:
        await engine.dispose()
