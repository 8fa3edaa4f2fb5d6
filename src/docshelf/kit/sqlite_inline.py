"""SQLite reads run inline on the event loop: the standard `sqlite3` driver behind SQLAlchemy's
asyncio API, without aiosqlite's thread.

aiosqlite runs every operation of a statement (cursor, execute, fetch, close) on a thread of
its own and hands the result back through the event loop: four thread hops and loop wake-ups
per statement, which dominated a simple GET. A read in WAL mode never waits for a writer, and an
indexed read costs tens of microseconds, less than one hop; so reads (`unit_of_work(write=False)`)
use this dialect, registered as `sqlite+docshelf_inline`, and writes keep aiosqlite, where
waiting for the write lock must not stop the loop.

It declares itself async so that `AsyncEngine`/`AsyncConnection` accept it: SQLAlchemy runs
each statement in a greenlet and insists that it awaits something, so each execute awaits one
coroutine that is already done (two greenlet switches, no loop iteration). The pool is the
asyncio-aware queue pool, so a request that finds every connection checked out awaits one
instead of blocking the loop. A read that writes anyway (the one-time claim of an install-wide
setting, `kit/instance.py`) runs its single autocommitted statement inline too, waiting at most
the reader's short busy timeout for the write lock.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import pool
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine.url import URL
from sqlalchemy.util import await_only

DRIVER = "docshelf_inline"


class InlineSQLiteDialect(SQLiteDialect_pysqlite):
    driver = DRIVER
    is_async = True
    supports_statement_cache = True

    @classmethod
    def get_pool_class(cls, url: URL) -> type[pool.Pool]:
        return pool.AsyncAdaptedQueuePool

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        return sqlite3.connect(*cargs, factory=_Connection, **cparams)

    def do_execute(self, cursor: Any, statement: Any, parameters: Any, context: Any = None) -> None:
        await_only(_done())
        cursor.execute(statement, parameters)

    def do_execute_no_params(self, cursor: Any, statement: Any, context: Any = None) -> None:
        await_only(_done())
        cursor.execute(statement)

    def do_executemany(
        self, cursor: Any, statement: Any, parameters: Any, context: Any = None
    ) -> None:
        await_only(_done())
        cursor.executemany(statement, parameters)


async def _done() -> None:
    return None


class _Cursor(sqlite3.Cursor):
    async def _async_soft_close(self) -> None:
        """Called by SQLAlchemy's asyncio results; the rows stay readable synchronously."""


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)


registry.register(f"sqlite.{DRIVER}", __name__, "InlineSQLiteDialect")
