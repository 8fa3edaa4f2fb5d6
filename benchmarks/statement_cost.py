"""CPU time of one statement, by layer: the raw driver, then SQLAlchemy around it, on SQLite
(the standard `sqlite3` module, and SQLAlchemy's synchronous engine as Docshelf's inline
dialect runs it) and on PostgreSQL (asyncpg, SQLAlchemy's asyncpg adapter in its greenlet, and
`AsyncConnection.execute`, as Docshelf's reads run it).

Why: on the mix (issue 31) the API process spends ~0.6 ms more CPU a request on PostgreSQL
than on SQLite; this shows how much of that each statement carries, whatever the statement.
One connection, one statement at a time (a primary-key read of a four-column row), the best of
`--rounds` runs of `--statements` each, in process CPU microseconds.

    python benchmarks/statement_cost.py                  # SQLite, and a throwaway PostgreSQL
    python benchmarks/statement_cost.py --database-url postgresql+asyncpg://...  # an empty database
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import uvloop
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.util import greenlet_spawn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_orgs import free_port, postgres_cluster

META = sa.MetaData()
ROWS = sa.Table(
    "statement_cost",
    META,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("title", sa.String(64)),
    sa.Column("position", sa.Integer),
    sa.Column("created_at", sa.DateTime(timezone=True)),
)
READ = sa.select(ROWS).where(ROWS.c.id == sa.bindparam("id"))
SEED = [{"id": f"k{i}", "title": "t" * 20, "position": i, "created_at": None} for i in range(100)]


def _best(rounds: int, n: int, run: Callable[[int], Any]) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for i in range(n):
            run(i)
        best = min(best, (time.process_time() - started) / n * 1e6)
    return best


async def _best_async(rounds: int, n: int, run: Callable[[int], Awaitable[Any]]) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for i in range(n):
            await run(i)
        best = min(best, (time.process_time() - started) / n * 1e6)
    return best


def sqlite_costs(rounds: int, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cost.db"
        engine = sa.create_engine(f"sqlite:///{path}")
        META.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(ROWS), SEED)
        raw = sqlite3.connect(path)
        sql = str(READ.compile(dialect=engine.dialect))
        out = {"sqlite3": _best(rounds, n, lambda i: raw.execute(sql, (f"k{i % 100}",)).fetchall())}
        with engine.connect() as conn:
            out["SQLAlchemy Connection.execute"] = _best(
                rounds, n, lambda i: conn.execute(READ, {"id": f"k{i % 100}"}).mappings().first()
            )
        raw.close()
        engine.dispose()
        return out


async def postgres_costs(url: str, rounds: int, n: int) -> dict[str, float]:
    engine = create_async_engine(url, pool_size=1)
    async with engine.begin() as conn:
        await conn.run_sync(META.drop_all)
        await conn.run_sync(META.create_all)
        await conn.execute(sa.insert(ROWS), SEED)
    sql = str(READ.compile(dialect=engine.dialect))
    out: dict[str, float] = {}
    async with engine.connect() as opened:
        conn = await opened.execution_options(isolation_level="AUTOCOMMIT")
        fairy = await conn.get_raw_connection()
        driver = fairy.driver_connection
        adapted = fairy.dbapi_connection
        assert driver is not None and adapted is not None
        prepared = await driver.prepare(sql)

        def cursor_read(i: int) -> None:
            cursor = adapted.cursor()
            cursor.execute(sql, (f"k{i % 100}",))
            cursor.fetchall()
            cursor.close()

        async def read(i: int) -> None:
            (await conn.execute(READ, {"id": f"k{i % 100}"})).mappings().first()

        out["asyncpg Connection.fetch"] = await _best_async(
            rounds, n, lambda i: driver.fetch(sql, f"k{i % 100}")
        )
        out["asyncpg PreparedStatement.fetch"] = await _best_async(
            rounds, n, lambda i: prepared.fetch(f"k{i % 100}")
        )
        out["SQLAlchemy's asyncpg cursor, in a greenlet"] = await _best_async(
            rounds, n, lambda i: greenlet_spawn(cursor_read, i)
        )
        out["SQLAlchemy AsyncConnection.execute"] = await _best_async(rounds, n, read)
        out["greenlet_spawn of nothing"] = await _best_async(
            rounds, n, lambda i: greenlet_spawn(lambda: None)
        )
        await conn.run_sync(META.drop_all)
    await engine.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="an empty PostgreSQL database")
    parser.add_argument("--statements", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    costs = {f"SQLite: {k}": v for k, v in sqlite_costs(args.rounds, args.statements).items()}
    with contextlib.ExitStack() as stack:
        url = args.database_url or stack.enter_context(postgres_cluster(free_port(), False))
        pg = uvloop.run(postgres_costs(url, args.rounds, args.statements))
    costs |= {f"PostgreSQL: {k}": v for k, v in pg.items()}
    print(f"CPU µs per statement (best of {args.rounds} x {args.statements}):")
    for name, us in costs.items():
        print(f"  {us:7.1f}  {name}")


if __name__ == "__main__":
    main()
