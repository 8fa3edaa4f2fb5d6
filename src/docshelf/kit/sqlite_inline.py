"""SQLite units of work run inline on the event loop: the standard `sqlite3` driver behind
SQLAlchemy's asyncio API, without aiosqlite's thread.

aiosqlite runs every operation of a statement (cursor, execute, fetch, close) on a thread of
its own and hands the result back through the event loop: four thread hops and loop wake-ups
per statement, which dominated a simple GET. A read in WAL mode never waits for a writer, and an
indexed read costs tens of microseconds, less than one hop; so reads (`unit_of_work(write=False)`)
use this dialect, registered as `sqlite+docshelf_inline`. Writes use it too, once they hold
SQLite's write lock, which they take without waiting on the loop (`kit.db.InlineWrites`).

It declares itself async so that `AsyncEngine`/`AsyncConnection` accept it. A read unit of work
checks a connection out synchronously (the pool's overflow is unbounded, so a checkout never
waits) and wraps it in `InlineConnection`, whose `execute` calls the synchronous connection
directly: no greenlet, no thread, no loop iteration between the statement and its rows. Any
other `AsyncConnection` method (`run_sync`, `stream`) still goes through SQLAlchemy's greenlet,
which may insist that the statement awaits something: there, each execute awaits one coroutine
that is already done. Only public names of SQLAlchemy are used (tests/test_no_private_names.py).

A read that writes anyway (the one-time claim of an install-wide setting, `kit/instance.py`)
runs its single autocommitted statement inline too, waiting at most the reader's short busy
timeout for the write lock.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import pool
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine.url import URL
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.util import await_only
from sqlalchemy.util.concurrency import in_greenlet

DRIVER = "docshelf_inline"


class InlineSQLiteDialect(SQLiteDialect_pysqlite):
    driver = DRIVER
    is_async = True
    supports_statement_cache = True

    @classmethod
    def get_pool_class(cls, url: URL) -> type[pool.Pool]:
        return pool.AsyncAdaptedQueuePool

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        return sqlite3.connect(*cargs, **cparams)

    def do_execute(self, cursor: Any, statement: Any, parameters: Any, context: Any = None) -> None:
        _satisfy_greenlet()
        cursor.execute(statement, parameters)

    def do_execute_no_params(self, cursor: Any, statement: Any, context: Any = None) -> None:
        _satisfy_greenlet()
        cursor.execute(statement)

    def do_executemany(
        self, cursor: Any, statement: Any, parameters: Any, context: Any = None
    ) -> None:
        _satisfy_greenlet()
        cursor.executemany(statement, parameters)


class InlineConnection(AsyncConnection):
    """An `AsyncConnection` over a connection of this dialect whose statements (`execute`, and
    so `scalar` and `scalars`; `exec_driver_sql`) run synchronously on its `sync_connection`:
    an indexed SQLite read takes less time than a greenlet switch. The result is the
    synchronous `CursorResult`, which has the same API."""

    __slots__ = ()

    async def execute(
        self,
        statement: Any,
        parameters: Any = None,
        *,
        execution_options: Any = None,
    ) -> Any:
        return self.sync_connection.execute(  # type: ignore[union-attr]
            statement, parameters, execution_options=execution_options
        )

    async def exec_driver_sql(
        self,
        statement: str,
        parameters: Any = None,
        execution_options: Any = None,
    ) -> Any:
        return self.sync_connection.exec_driver_sql(  # type: ignore[union-attr]
            statement, parameters, execution_options=execution_options
        )


def _satisfy_greenlet() -> None:
    if in_greenlet():
        await_only(_done())


async def _done() -> None:
    return None


registry.register(f"sqlite.{DRIVER}", __name__, "InlineSQLiteDialect")
