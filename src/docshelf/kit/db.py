"""Engine, portable column types and the unit of work.

Data access is SQLAlchemy Core on an AsyncConnection: statements return row mappings that
presenters turn into wire objects. No ORM identity map on the request path (docs/decisions/0001).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import MissingGreenlet
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util import greenlet_spawn

from docshelf.config import Settings
from docshelf.kit import sqlite_inline

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: SQLite has no time zones and PostgreSQL's
    timestamptz would otherwise round-trip through the session time zone."""

    impl = sa.DateTime(timezone=False)
    cache_ok = True

    @property
    def python_type(self) -> type[datetime]:
        return datetime

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


class Engine(AsyncEngine):
    """The app's engine. On SQLite it carries a second engine, `reader`, that runs read units
    of work inline on the event loop (`kit/sqlite_inline.py`); disposing one disposes both.
    `idle_readers` keeps a few of the reader's connections checked out between reads: an
    autocommitting `sqlite3` connection holds no state from one read to the next, and the
    pool's checkout and reset cost more than the statements of a simple GET. `writer` runs
    write units of work inline too, one at a time per process (`InlineWrites`). On PostgreSQL,
    `gate` admits units of work to the pool first come, first served (`Gate`), and
    `idle_readers` keeps a few autocommit connections of the pool itself checked out between
    reads (`LazyRead`), handed back to it when a unit of work would otherwise find it empty."""

    __slots__ = ("gate", "idle_loop", "idle_readers", "idle_stale", "reader", "writer")

    def __init__(
        self,
        engine: AsyncEngine,
        reader: AsyncEngine | None = None,
        *,
        gate: Gate | None = None,
        writer: InlineWrites | None = None,
    ) -> None:
        super().__init__(engine.sync_engine)
        self.reader = reader
        self.idle_readers: list[sa.Connection] = []
        # The event loop PostgreSQL's idle readers were opened on: asyncpg's connections
        # belong to one loop (tests run several loops over one engine).
        self.idle_loop: asyncio.AbstractEventLoop | None = None
        # Set when a statement finds the server gone: the pool then replaces each of its
        # connections as it is next checked out, and the idle readers must go through it too.
        self.idle_stale = False
        self.gate = gate
        self.writer = writer
        if gate is not None:
            event.listen(self.sync_engine, "handle_error", self._on_error)

    def _on_error(self, context: sa.engine.ExceptionContext) -> None:
        if context.is_disconnect:
            self.idle_stale = True

    async def dispose(self, close: bool = True) -> None:
        idle, self.idle_readers = self.idle_readers, []
        for conn in idle:
            conn.close()
        await super().dispose(close)
        if self.writer is not None:
            await self.writer.engine.dispose(close)
        if self.reader is not None:
            await self.reader.dispose(close)


class InlineWrites:
    """SQLite write units of work on the event loop, one at a time per process.

    Why: on aiosqlite each statement of a write is a hop to the connection's thread and back,
    and each way back waits for the event loop to come round, behind every request in flight:
    under the mix's read load a space's title PATCH took seconds (benchmarks/RESULTS.md,
    "The mix"). A write's statements are indexed look-ups and row changes of microseconds;
    what may take long is waiting for SQLite's write lock, and that must not stop the loop.
    So the writes of this process queue on an asyncio lock (first come, first served), and
    the one holding it takes SQLite's lock with `BEGIN IMMEDIATE` without waiting
    (busy_timeout 0): if another process (the job worker, the CLI, another server process)
    holds it, the attempt is retried after a short asynchronous sleep until the lock
    timeout, then the write answers 503 like any contention. Once the lock is held, a WAL
    write never waits: its statements and its COMMIT run inline."""

    __slots__ = ("_loop", "_mutex", "engine", "wait")

    def __init__(self, engine: AsyncEngine, wait: float) -> None:
        self.engine = engine
        self.wait = wait
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mutex = asyncio.Lock()

    def mutex(self) -> asyncio.Lock:
        # One per event loop: an engine may outlive the loop it was first used on (tests).
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._mutex = loop, asyncio.Lock()
        return self._mutex

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[AsyncConnection]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        mutex = self.mutex()
        try:
            async with asyncio.timeout(self.wait):
                await mutex.acquire()
        except TimeoutError as exc:
            raise sa.exc.TimeoutError(f"no database write lock within {self.wait:g} s") from exc
        try:
            sync_conn, transaction = await self._begin(loop, deadline)
            try:
                yield sqlite_inline.InlineConnection(self.engine, sync_conn)
                transaction.commit()
            except BaseException:
                if transaction.is_active:
                    transaction.rollback()
                raise
            finally:
                sync_conn.close()
        finally:
            mutex.release()

    async def _begin(
        self, loop: asyncio.AbstractEventLoop, deadline: float
    ) -> tuple[sa.Connection, sa.RootTransaction]:
        pause = 0.001
        while True:
            sync_engine = self.engine.sync_engine
            if sync_engine.pool.checkedin() > 0:  # type: ignore[attr-defined]
                sync_conn = sync_engine.connect()
            else:
                sync_conn = await greenlet_spawn(sync_engine.connect)
            sync_conn.execution_options(write=True)
            try:
                return sync_conn, sync_conn.begin()  # BEGIN IMMEDIATE (_configure_sqlite)
            except sa.exc.OperationalError as exc:
                sync_conn.close()
                if not is_busy_error(exc) or loop.time() + pause > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)


class Gate:
    """First come, first served admission to a pool of `size` connections, waiting at most
    `wait` seconds (then `sqlalchemy.exc.TimeoutError`, a 503 like any pool timeout).

    Why: SQLAlchemy's asyncio pool hands a connection returned to it to whoever asks next,
    before the unit of work that was woken for it runs; the woken one finds the queue empty
    and queues again at the back. Under load, new requests kept overtaking the waiting ones:
    p99 of a loaded GET on PostgreSQL was 108-114 ms at a mean of 24 ms, and a write could
    wait out its pool timeout behind reads. asyncio's semaphore hands a released permit to
    its longest waiter; with as many permits as the pool has connections, an admitted unit
    of work finds one idle, or an idle reader that no one holds a permit for, which it hands
    back to the pool first (`_take_from_pool`)."""

    __slots__ = ("_loop", "_semaphore", "size", "wait")

    def __init__(self, size: int, wait: float) -> None:
        self.size = size
        self.wait = wait
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore = asyncio.Semaphore(size)

    def semaphore(self) -> asyncio.Semaphore:
        # One per event loop: an engine may outlive the loop it was first used on (tests).
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._semaphore = loop, asyncio.Semaphore(self.size)
        return self._semaphore

    async def enter(self) -> asyncio.Semaphore:
        semaphore = self.semaphore()
        if not semaphore.locked():
            await semaphore.acquire()  # returns at once, without suspending
            return semaphore
        try:
            async with asyncio.timeout(self.wait):
                await semaphore.acquire()
        except TimeoutError as exc:
            raise sa.exc.TimeoutError(
                f"no database connection free within {self.wait:g} s"
            ) from exc
        return semaphore


# A read that meets a lock (only WAL recovery or a non-WAL database make readers wait), or the
# rare read that claims an install-wide setting, stops the event loop while it waits: briefly,
# then it is a 503 like any contention.
_READER_BUSY_MS = 200
_READER_CACHE_KB = 256
# Read connections kept checked out between reads (Engine.idle_readers); more concurrent reads
# (those that await between statements) use the pool as before.
_IDLE_READERS = 4


# The execution option that marks a read unit of work's autocommitting connection (SQLite's
# reader, PostgreSQL's LazyRead): each of its statements commits on its own, so what it reads
# (its own claims included) is committed.
_AUTOCOMMIT_READ = {"autocommit_read": True}


def create_engine(settings: Settings) -> AsyncEngine:
    url = settings.resolved_database_url
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        # Few connections: SQLite has one writer anyway, and every aiosqlite connection is a
        # thread contending for the GIL (4 measured 40 % faster than 16 under load).
        writer = create_async_engine(
            url, pool_size=4, max_overflow=0, pool_timeout=settings.lock_timeout
        )
        _configure_sqlite(writer, busy_ms=int(settings.lock_timeout * 1000))
        if sa.make_url(url).database in (None, "", ":memory:"):
            return Engine(writer)  # a second connection would open another, empty database
        inline = sa.make_url(url).set(drivername=f"sqlite+{sqlite_inline.DRIVER}")
        # A read holds its connection for its whole request, awaits included: under the mix's
        # 64 concurrent requests a pool of 8 opened and closed a connection (and parsed the
        # schema again) for most reads, ~6 % of the process.
        reader = create_async_engine(inline, pool_size=32, max_overflow=-1)
        _configure_sqlite_reader(reader)
        # One write at a time per process (InlineWrites): one connection, two for safety.
        inline_writer = create_async_engine(inline, pool_size=2, max_overflow=-1)
        _configure_sqlite(inline_writer, busy_ms=0)
        writes = InlineWrites(inline_writer, settings.lock_timeout)
        return Engine(writer, reader, writer=writes)
    engine = create_async_engine(
        url,
        pool_size=settings.db_pool_size,
        # No overflow: under load an overflow connection was closed as soon as the full pool
        # refused it back and reopened for the next request (a new server process each time:
        # half the CPU of a loaded read benchmark, and its multi-second p99). Requests beyond
        # the pool wait in its queue, bounded by pool_timeout.
        max_overflow=0,
        pool_timeout=settings.lock_timeout,
        pool_pre_ping=False,
        # Set once per connection, so it costs no round trip per transaction: a write that
        # waits longer than this for a row lock fails (SQLSTATE 55P03) and answers 503.
        connect_args={"server_settings": {"lock_timeout": str(int(settings.lock_timeout * 1000))}},
    )
    return Engine(engine, gate=Gate(settings.db_pool_size, settings.lock_timeout))


def _configure_sqlite(engine: AsyncEngine, *, busy_ms: int) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the driver so that BEGIN is ours (see _begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        # A deferred transaction that later writes fails at once with SQLITE_BUSY when another
        # writer got there first; a writing unit of work takes the write lock up front and waits.
        options = conn.get_execution_options()
        if options.get("write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif not options.get("read_only"):
            conn.exec_driver_sql("BEGIN")


def _configure_sqlite_reader(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Autocommit: each statement reads its own snapshot and no transaction stays open.
        dbapi_connection.isolation_level = None
        dbapi_connection.execute(f"PRAGMA busy_timeout={_READER_BUSY_MS}")
        # A small page cache each (SQLite's default is 2 MB a connection): the pool keeps 8 or
        # more, whose caches held ~13 MB of the API process under the memory benchmark's
        # reads, while the operating system's file cache serves the same pages to all of them.
        dbapi_connection.execute(f"PRAGMA cache_size=-{_READER_CACHE_KB}")


@asynccontextmanager
async def unit_of_work(
    engine: AsyncEngine, *, write: bool = True
) -> AsyncIterator[AsyncConnection]:
    """One transaction: committed when the block ends cleanly, rolled back on any error.
    Services never commit; they run inside one of these.

    `write=False` is for requests that only read (GET): their statements run without BEGIN and
    COMMIT, which halves the round trips of a typical read on PostgreSQL and saves thread hops
    on SQLite, where they also run inline on the event loop (`Engine.reader`). Each statement
    then reads its own snapshot, which is all a read needs."""
    if not write and isinstance(engine, Engine) and engine.reader is not None:
        sync_engine = engine.reader.sync_engine
        # An idle pooled connection is checked out synchronously (the pool never waits: its
        # overflow is unbounded); opening a new one runs first-connect hooks that need the
        # greenlet.
        pool = sync_engine.pool
        _settle_idle(engine)
        if engine.idle_readers:
            sync_conn = engine.idle_readers.pop()
        else:
            if pool.checkedin() > 0:  # type: ignore[attr-defined]
                sync_conn = sync_engine.connect()
            else:
                sync_conn = await greenlet_spawn(sync_engine.connect)
            sync_conn.execution_options(**_AUTOCOMMIT_READ)
        clean = False
        try:
            yield sqlite_inline.InlineConnection(engine.reader, sync_conn)
            clean = True
        finally:
            if not (clean and _keep_idle(engine, sync_conn, pool)):
                if sync_engine.pool is not pool:
                    sync_conn.invalidate()  # closes it: its disposed pool no longer would
                sync_conn.close()
        return
    if write and isinstance(engine, Engine) and engine.writer is not None:
        async with engine.writer.unit() as conn:
            yield conn
        return
    gate = engine.gate if isinstance(engine, Engine) else None
    if not write and is_postgres(engine):
        read = LazyRead(engine, gate)
        clean = False
        try:
            yield read
            clean = True
        finally:
            await read.finish(keep=clean)
        return
    admitted = None if gate is None else await gate.enter()
    try:
        if isinstance(engine, Engine) and gate is not None:
            _take_from_pool(engine)
        async with engine.connect() as conn:
            if write:
                conn = await conn.execution_options(write=True)
            else:
                conn = await conn.execution_options(read_only=True)
            async with conn.begin():
                yield conn
    finally:
        if admitted is not None:
            admitted.release()


async def started(conn: AsyncConnection) -> AsyncConnection:
    """The connection, checked out if it is a `LazyRead` that has not read yet."""
    if conn.sync_connection is None:
        await conn.start()
    return conn


def _starting(method: Callable[..., Awaitable[Any]]) -> Any:
    """`method` of a `LazyRead`, taking its connection first."""

    async def run(self: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        await started(self)
        return await method(self, *args, **kwargs)

    return run


class LazyRead(AsyncConnection):
    """A PostgreSQL read unit of work: autocommit, so no BEGIN or COMMIT reaches the server,
    and its connection is taken from the pool (through the engine's `Gate`) only when its
    first statement runs.

    Checking an idle connection out, switching it to autocommit and handing it back involve
    no I/O with asyncpg (its adapter begins transactions lazily, and a queued idle connection
    is taken without awaiting), so they run here directly instead of in one greenlet each. A
    checkout that must connect, and the close of a connection that ends (invalidated, or one
    the full pool does not keep), go through SQLAlchemy's greenlet.

    Statements (`execute`, `exec_driver_sql`, `scalar`, `scalars`, `run_sync`) start it; what
    reads the connection's own state (`info`, `in_transaction`, `stream`) needs `started()`
    first, as `search.engine.custom_plans` does."""

    def __init__(self, engine: AsyncEngine, gate: Gate | None) -> None:
        super().__init__(engine)
        self._gate = gate
        self._admitted: asyncio.Semaphore | None = None
        self._finished = False
        self._pool: sa.Pool | None = None

    @property  # type: ignore[misc]
    def dialect(self) -> sa.Dialect:
        return self.engine.dialect

    async def start(self, is_ctxmanager: bool = False) -> AsyncConnection:
        if self.sync_connection is not None:
            return self
        if self._finished:
            # A connection taken now would never be handed back.
            raise sa.exc.InvalidRequestError("this read unit of work has ended")
        admitted = None if self._gate is None else await self._gate.enter()
        engine = self.engine if isinstance(self.engine, Engine) else None
        self._pool = self.sync_engine.pool
        if engine is not None:
            _settle_idle(engine)
        if engine is not None and engine.idle_readers:
            # Already autocommit, and admitted: the gate's permit stands for it as for any.
            self._admitted = admitted
            self.sync_connection = engine.idle_readers.pop()
            return self
        try:
            sync_engine = self.sync_engine
            sync_conn: sa.Connection | None = None
            if sync_engine.pool.checkedin() > 0:  # type: ignore[attr-defined]
                try:
                    sync_conn = sync_engine.connect()
                except MissingGreenlet:
                    sync_conn = None  # an invalidated pooled connection reconnects: below
            if sync_conn is None:
                sync_conn = await greenlet_spawn(sync_engine.connect)
            sync_conn.execution_options(isolation_level="AUTOCOMMIT", **_AUTOCOMMIT_READ)
        except BaseException:
            if admitted is not None:
                admitted.release()
            raise
        self._admitted = admitted
        self.sync_connection = sync_conn
        return self

    async def finish(self, *, keep: bool = False) -> None:
        """Hands the connection back, if one was taken: to the engine's idle readers when
        `keep` (the read ended without an error) and they have room, else to the pool."""
        self._finished = True
        sync_conn, self.sync_connection = self.sync_connection, None
        admitted, self._admitted = self._admitted, None
        engine = self.engine if isinstance(self.engine, Engine) else None
        try:
            if sync_conn is not None and not (
                keep and engine is not None and _keep_idle(engine, sync_conn, self._pool)
            ):
                pool = self.sync_engine.pool
                if pool is not self._pool:
                    # The engine disposed of its pool meanwhile (the app's shutdown): the
                    # connection would be left open in the old one.
                    await greenlet_spawn(sync_conn.invalidate)
                    sync_conn.close()
                # An invalidated connection, or one the full pool will not take back: I/O.
                elif sync_conn.invalidated or pool.checkedin() >= pool.size():  # type: ignore[attr-defined]
                    await greenlet_spawn(sync_conn.close)
                else:
                    sync_conn.close()
        finally:
            if admitted is not None:
                admitted.release()

    execute = _starting(AsyncConnection.execute)
    exec_driver_sql = _starting(AsyncConnection.exec_driver_sql)
    scalar = _starting(AsyncConnection.scalar)
    scalars = _starting(AsyncConnection.scalars)
    run_sync = _starting(AsyncConnection.run_sync)


def _settle_idle(engine: Engine) -> None:
    """Hands the idle readers back to the pool when they cannot serve the next read: opened
    on another event loop (asyncpg's connections work on their own loop only), or opened
    before the server went away (the pool replaces such connections as it hands them out)."""
    loop = asyncio.get_running_loop()
    if engine.idle_loop is not loop or engine.idle_stale:
        idle, engine.idle_readers = engine.idle_readers, []
        for conn in idle:
            conn.close()
        engine.idle_loop, engine.idle_stale = loop, False


def _keep_idle(engine: Engine, sync_conn: sa.Connection, taken_from: sa.Pool | None) -> bool:
    """Keeps the connection of a read that ended without an error for the next read, when it
    can serve one and there is room; whether it did. Both engines' reads hand theirs back here."""
    if (
        sync_conn.invalidated
        or engine.idle_stale
        # Its engine disposed of the pool it came from (the app's shutdown).
        or sync_conn.engine.pool is not taken_from
        or engine.idle_loop is not asyncio.get_running_loop()
        or len(engine.idle_readers) >= _IDLE_READERS
    ):
        return False
    if sync_conn.in_transaction():
        sync_conn.rollback()  # SQLAlchemy's bookkeeping; autocommit has none open
    engine.idle_readers.append(sync_conn)
    return True


def _take_from_pool(engine: Engine) -> None:
    """Readies the pool for a unit of work the gate admitted that needs a connection of it (a
    write): hands an idle reader back when the pool has none to give at once. Otherwise the
    unit would wait out the pool's timeout behind a connection that no one is using (all
    opened), or open one more: under load a new connection's handshake and set-up waited for
    the event loop's turn at each round trip, and writes took up to 1.4 s instead of 30 ms."""
    _settle_idle(engine)
    if engine.idle_readers and engine.sync_engine.pool.checkedin() == 0:  # type: ignore[attr-defined]
        engine.idle_readers.pop().close()


# SQLSTATEs that mean "not now" rather than "wrong": lock_not_available (lock_timeout),
# deadlock_detected, serialization_failure, query_canceled (statement_timeout).
_BUSY_SQLSTATES = frozenset({"55P03", "40P01", "40001", "57014"})


def is_busy_error(exc: BaseException) -> bool:
    """Lock or pool contention: the request may succeed if retried, so it answers 503."""
    if isinstance(exc, sa.exc.TimeoutError):  # no pooled connection within pool_timeout
        return True
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None) or getattr(
        getattr(orig, "__cause__", None), "sqlstate", None
    )
    if sqlstate in _BUSY_SQLSTATES:
        return True
    message = str(orig)
    return "database is locked" in message or "database table is locked" in message


class HasDialect(Protocol):
    """A connection or engine, sync or async: what names the database it talks to."""

    @property
    def dialect(self) -> sa.Dialect: ...


def reads_committed(conn: AsyncConnection) -> bool:
    """Whether the connection is an autocommitting read's, whose statements see only committed
    rows: what it reads may be kept between requests. Any other connection's may be its own,
    uncommitted (a write's, or a transaction's that may still roll back)."""
    sync = conn.sync_connection
    return sync is not None and sync.get_execution_options().get("autocommit_read") is True


def is_postgres(conn: HasDialect) -> bool:
    return conn.dialect.name == "postgresql"


def upsert_insert(conn: HasDialect, table: sa.Table) -> Any:
    """The dialect's INSERT, which has ON CONFLICT DO NOTHING / DO UPDATE on both engines."""
    insert = postgresql.insert if is_postgres(conn) else sqlite.insert
    return insert(table)
