"""Rate limiter: the cost of counting one request, per storage, in this process.

    .venv/bin/python benchmarks/ratelimit.py
    .venv/bin/python benchmarks/ratelimit.py --calls 20000 --redis-url redis://127.0.0.1:6379/0 \
        --database-url postgresql+asyncpg://user@127.0.0.1:5432/db

`RateLimiter.check` is called `--calls` times, one after another, over 100 tokens (what the
edge middleware does for each token-bearing request). Storages:

- memory: this process's counters (no Redis configured);
- redis: limits' INCR+EXPIRE script on a redis-server (started here on a free loopback port from
  the Debian binary unless --redis-url is given);
- redis down: Redis configured but unreachable, after the first failure (requests count in
  memory until the retry interval passes);
- database (before): the upsert the limiter used to run per request, on a scratch table in
  SQLite (a temporary file) and, with --database-url, PostgreSQL. For comparison only.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import redis
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from docshelf.config import Settings
from docshelf.kit.db import create_engine, unit_of_work
from docshelf.ratelimit.service import RateLimiter, RedisStorage

KEYS = [f"{i:040x}" for i in range(100)]


async def _time(check: Callable[[str], Awaitable[object]], calls: int) -> float:
    """Microseconds per call, after a warm-up of 1,000 calls."""
    for i in range(1000):
        await check(KEYS[i % len(KEYS)])
    start = time.perf_counter()
    for i in range(calls):
        await check(KEYS[i % len(KEYS)])
    return (time.perf_counter() - start) / calls * 1e6


def _limiter(shared: RedisStorage | None = None) -> RateLimiter:
    # A limit no run reaches, so every call is an allowed request with its headers.
    return RateLimiter(limit=10**9, window_seconds=60, shared=shared)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server not found: apt-get install redis-server, or pass --redis-url")
    port = _free_port()
    args = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*args, "--dir", str(directory)], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.close()
    return proc, url


async def _database(url: str, data_dir: Path, calls: int) -> float:
    """The per-request upsert of the former database storage (same engine set-up, one unit of
    work per request), on a scratch table."""
    engine = create_engine(Settings(data_dir=data_dir, database_url=url))
    table = sa.Table(
        "bench_rate_limit_counters",
        sa.MetaData(),
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("window", sa.BigInteger(), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert
    stmt = (
        insert(table)
        .values(key=sa.bindparam("k"), window=sa.bindparam("w"), count=1)
        .on_conflict_do_update(index_elements=["key", "window"], set_={"count": table.c.count + 1})
        .returning(table.c.count)
    )
    async with engine.begin() as conn:
        await conn.run_sync(table.drop, checkfirst=True)
        await conn.run_sync(table.create)

    async def hit(key: str) -> int:
        window = int(time.time()) // 60 * 60
        async with unit_of_work(engine) as conn:
            return int((await conn.execute(stmt, {"k": key, "w": window})).scalar_one())

    try:
        return await _time(hit, calls)
    finally:
        async with engine.begin() as conn:
            await conn.run_sync(table.drop)
        await engine.dispose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--database-url", default="", help="PostgreSQL, for the 'before' figure")
    args = parser.parse_args()

    rows: list[tuple[str, float]] = []
    rows.append(("memory", await _time(_limiter().check, args.calls)))

    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        url = args.redis_url
        if not url:
            proc, url = _start_redis(Path(tmp))
        try:
            storage = RedisStorage(url)
            limiter = _limiter(shared=storage)
            rows.append(("redis", await _time(limiter.check, args.calls)))
            await storage.aclose()
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()

        down = RedisStorage(f"redis://127.0.0.1:{_free_port()}/0")
        limiter = _limiter(shared=down)
        rows.append(("redis down (failed open)", await _time(limiter.check, args.calls)))
        await down.aclose()

        sqlite_url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        sqlite = await _database(sqlite_url, Path(tmp), args.calls)
        rows.append(("database, SQLite (before)", sqlite))
        if args.database_url:
            pg = await _database(args.database_url, Path(tmp), args.calls)
            rows.append(("database, PostgreSQL (before)", pg))

    print(f"{args.calls} RateLimiter.check calls over {len(KEYS)} tokens, one at a time\n")
    print("| storage | µs per call | calls/s |")
    print("| --- | ---: | ---: |")
    for name, us in rows:
        print(f"| {name} | {us:,.1f} | {1e6 / us:,.0f} |")


if __name__ == "__main__":
    asyncio.run(main())
