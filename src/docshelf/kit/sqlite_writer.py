"""SQLite writes on aiosqlite, one thread hop a statement.

SQLAlchemy's aiosqlite adapter awaits aiosqlite for each step of a statement: make a cursor,
execute, fetch the rows, close the cursor. Each is a hop to the connection's thread and back,
and each way back waits for the event loop to come round: behind every request in flight when
the API is loaded (~8 ms a turn at 64 connections), and for the GIL. A PATCH made during a
read load took 170-300 ms, nearly all of it in those waits (benchmarks/RESULTS.md). This
dialect, registered as `sqlite+docshelf_aiosqlite` and used for every write connection
(`kit.db.create_engine`), runs the four steps as one call on the connection's thread.
Everything else (transactions, errors, server-side cursors, the pool) is the adapter's own.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from threading import Thread
from typing import Any

from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.util import await_only

DRIVER = "docshelf_aiosqlite"


def _run(conn: sqlite3.Connection, operation: Any, parameters: Any) -> tuple[Any, ...]:
    """On the connection's thread: what the adapter's execute does in four hops."""
    cursor = conn.cursor()
    try:
        if parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        if cursor.description:
            return cursor.description, cursor.fetchall(), -1, -1
        return None, None, cursor.lastrowid, cursor.rowcount
    finally:
        cursor.close()


class _Cursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        try:
            aiosqlite_connection: Any = self._connection
            description, rows, lastrowid, rowcount = self.await_(
                aiosqlite_connection._execute(
                    _run, aiosqlite_connection._conn, operation, parameters
                )
            )
            self.description = description
            self.lastrowid = lastrowid
            self.rowcount = rowcount
            if description:
                self._rows = deque(rows)
        except Exception as error:
            self._adapt_connection._handle_exception(error)


class _Connection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()

    def cursor(self, server_side: bool = False) -> AsyncAdapt_aiosqlite_cursor:
        if server_side:
            return super().cursor(server_side=True)
        return _Cursor(self)


class _DBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        connection = self.aiosqlite.connect(*arg, **kw)
        # As the adapter does: the connection's thread must not keep the process alive (before
        # aiosqlite 0.22 the connection was the thread itself).
        thread = connection if isinstance(connection, Thread) else connection._thread
        thread.daemon = True
        return _Connection(self, await_only(connection))


class OneHopSQLiteDialect(SQLiteDialect_aiosqlite):
    driver = DRIVER
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> AsyncAdapt_aiosqlite_dbapi:
        return _DBAPI(__import__("aiosqlite"), __import__("sqlite3"))


registry.register(f"sqlite.{DRIVER}", __name__, "OneHopSQLiteDialect")
