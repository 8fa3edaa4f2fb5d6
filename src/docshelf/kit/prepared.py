"""The few statements every request runs (the token, the organization or space joined to the
caller's membership), compiled once per dialect and run on the driver's own connection.

SQLAlchemy's `execute` spends ~100-150 µs of Python per statement on the read path (cache key
of the statement, compiled-cache look-up, execution context, result metadata, row processing)
against ~20 µs of SQLite work or one asyncpg round trip. A `Prepared` statement is still the
repository's SQLAlchemy Core statement: it is compiled by SQLAlchemy for the connection's
dialect on first use, its bind parameters put in the compiled order, and its result columns
processed by the very type processors SQLAlchemy would apply (UTCDateTime, JSON, Boolean).
Only the per-call bookkeeping is skipped.

The shortcut is taken only on a read unit of work (`kit.db.unit_of_work(write=False)`):
SQLite's inline reader (a plain `sqlite3` connection in autocommit) or an autocommitting
asyncpg connection, where no transaction state lives in SQLAlchemy's adapter that a statement
on the bare driver could bypass. Inside a writing transaction the statement goes through
SQLAlchemy as usual. A driver error on the shortcut is not interpreted here: the statement is
run again through SQLAlchemy (a read changes nothing), which raises its own error, so the error
handlers (503 for contention) and connection invalidation behave exactly as elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors

from docshelf.kit import sqlite_inline
from docshelf.kit.db import started
from docshelf.kit.metrics import COALESCED_READS
from docshelf.kit.sqlite_inline import InlineConnection

log = logging.getLogger("docshelf")

# Keys are result column names; `Any` so that a RowMapping (keyed by columns too) is one.
Row = Mapping[Any, Any]


@dataclass(frozen=True, slots=True)
class _Form:
    """The statement compiled for one dialect."""

    sql: str
    names: tuple[str, ...]  # bind parameter names in positional order
    defaults: dict[str, Any]  # values bound in the statement itself (literals)
    binders: tuple[Callable[[Any], Any] | None, ...]
    keys: tuple[str, ...]  # result column names, as a RowMapping names them
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for name, bind in zip(self.names, self.binders, strict=True):
            value = params[name] if name in params else self.defaults[name]
            values.append(value if bind is None else bind(value))
        return values

    def values(self, row: Any) -> list[Any]:
        values = list(row)
        for index, process in self.processors:
            values[index] = process(values[index])
        return values

    def mapping(self, row: Any) -> dict[str, Any]:
        return dict(zip(self.keys, self.values(row), strict=True))


def _compile(stmt: sa.Select[Any], dialect: sa.Dialect) -> _Form:
    compiled = stmt.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ())
    if "POSTCOMPILE" in compiled.string:
        # Expanding IN lists need SQLAlchemy's per-call rendering.
        raise ValueError("a Prepared statement takes no expanding parameters")
    binds = compiled.binds
    keys: list[str] = []
    processors: list[tuple[int, Callable[[Any], Any]]] = []
    for index, column in enumerate(compiled._result_columns):
        keys.append(column.keyname)
        process = column.type.dialect_impl(dialect).result_processor(dialect, None)
        if process is not None:
            processors.append((index, process))
    return _Form(
        sql=compiled.string,
        names=names,
        defaults={n: binds[n].effective_value for n in names if not binds[n].required},
        binders=tuple(binds[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names),
        keys=tuple(keys),
        processors=tuple(processors),
    )


def _driver_connection(conn: AsyncConnection) -> tuple[str, Any] | None:
    """The bare driver connection of a read unit of work, or None."""
    if isinstance(conn, InlineConnection):
        return "sqlite", sqlite_inline.driver_connection(conn)
    if conn.dialect.name != "postgresql":
        return None
    adapted = conn.sync_connection.connection.dbapi_connection  # type: ignore[union-attr]
    if not getattr(adapted, "autocommit", False):
        return None
    return "asyncpg", adapted._connection  # type: ignore[union-attr]


class Prepared:
    """A repository's hot SELECT, run as described in the module docstring. `first` and `all`
    answer what `.mappings().first()` and `.mappings().all()` of `conn.execute` would: rows
    as mappings from the result column names to processed values."""

    __slots__ = ("_forms", "stmt")

    def __init__(self, stmt: sa.Select[Any]) -> None:
        self.stmt = stmt
        self._forms: dict[str, _Form] = {}

    def _form(self, dialect: sa.Dialect) -> _Form:
        form = self._forms.get(dialect.name)
        if form is None:
            form = self._forms[dialect.name] = _compile(self.stmt, dialect)
        return form

    async def first(self, conn: AsyncConnection, params: Mapping[str, Any]) -> Row | None:
        plan = _AHEAD.get()
        if plan is not None:
            if plan.chain.follower is self:
                if plan.read_for(params):
                    return plan.take()
            elif plan.chain.lead is self and not plan.ran:
                lead: Row | None = await plan.run(conn, params)
                if lead is not _NOT_RUN:
                    return lead
        rows = await self._on_driver(conn, params, one=True)
        if rows is not None:
            return rows[0] if rows else None
        result = await conn.execute(self.stmt, dict(params))
        return result.mappings().first()

    async def all(self, conn: AsyncConnection, params: Mapping[str, Any]) -> list[Row]:
        rows = await self._on_driver(conn, params, one=False)
        if rows is not None:
            return list(rows)
        result = await conn.execute(self.stmt, dict(params))
        return list(result.mappings().all())

    async def _on_driver(
        self, conn: AsyncConnection, params: Mapping[str, Any], *, one: bool
    ) -> list[dict[str, Any]] | None:
        """The rows (at most one with `one`) read on the bare driver; None when the shortcut
        does not apply or the driver refused, for SQLAlchemy to run the statement instead."""
        driver = _driver_connection(await started(conn))
        if driver is None:
            return None
        form = self._form(conn.dialect)
        rows = await _fetch(driver, form, params, one=one)
        if rows is None:
            return None
        return [form.mapping(row) for row in rows]


async def _fetch(
    driver: tuple[str, Any], form: _Form, params: Mapping[str, Any], *, one: bool
) -> list[Any] | None:
    """Raw rows of the statement on the bare driver; None if the driver refused it."""
    try:
        args = form.args(params)
        if driver[0] == "sqlite":
            cursor = driver[1].execute(form.sql, args)
            rows: list[Any] = cursor.fetchmany(1) if one else cursor.fetchall()
            return rows
        if one:
            found = await driver[1].fetchrow(form.sql, *args)
            return [] if found is None else [found]
        return list(await driver[1].fetch(form.sql, *args))
    except Exception:
        return None


# -- two dependent reads in one round trip ----------------------------------------------------

_HIT = "_docshelf_follower_hit"
_NOT_RUN: Any = object()


@dataclass(eq=False)
class Chain:
    """`lead`, then `follower` with its bind parameter `link` set to the lead's result column
    `column`, as one statement: on the request path, the token and then the organization or
    space joined to the caller, one round trip on PostgreSQL instead of two. Each statement
    still reads what it reads alone, from one snapshot. SQLite runs them one by one."""

    lead: Prepared
    follower: Prepared
    link: str
    column: str
    _forms: dict[str, _Fused] = field(default_factory=dict, repr=False)
    _coalescer: _Coalescer | None = field(default=None, repr=False)

    def coalescer(self) -> _Coalescer:
        # One per event loop: state left by a loop that closed mid-read must not hold the next.
        loop = asyncio.get_running_loop()
        if self._coalescer is None or self._coalescer.loop is not loop:
            self._coalescer = _Coalescer(loop)
        return self._coalescer

    def form(self, dialect: sa.Dialect) -> _Fused:
        found = self._forms.get(dialect.name)
        if found is None:
            found = self._forms[dialect.name] = self._fuse(dialect)
        return found

    def _fuse(self, dialect: sa.Dialect) -> _Fused:
        # The lead as a CTE, and the follower's parameter as a scalar subquery of it: one form
        # for both engines (SQLite has no LATERAL).
        lead = self.lead.stmt.cte("lead")
        linked = sa.select(lead.c[self.column]).scalar_subquery()

        def bind_to_lead(element: Any, **_: Any) -> Any:
            if isinstance(element, sa.BindParameter) and element.key == self.link:
                return linked
            return None

        follower_stmt = cast(
            "sa.Select[Any]", visitors.replacement_traverse(self.follower.stmt, {}, bind_to_lead)
        )
        follower = (
            follower_stmt.add_columns(sa.literal_column("1").label(_HIT)).limit(1).subquery("f")
        )
        fused = sa.select(
            *(c.label(f"l{i}") for i, c in enumerate(lead.c)),
            *(c.label(f"f{i}") for i, c in enumerate(follower.c)),
        ).select_from(lead.outerjoin(follower, sa.true()))
        form = _compile(fused, dialect)
        lead_names = set(self.lead._form(dialect).names)
        follower_names = set(self.follower._form(dialect).names) - {self.link}
        if self.link in form.names or lead_names & follower_names:
            raise ValueError("the chained statements' parameters must be distinct")
        return _Fused(
            form=form,
            # Named as each statement's rows are when it runs alone.
            lead_keys=self.lead._form(dialect).keys,
            follower_keys=self.follower._form(dialect).keys,
            batch=_batch_or_none(fused, form, dialect),
        )


@dataclass(frozen=True, slots=True)
class _Batch:
    """The fused statement for many requests at once (PostgreSQL): each request's parameters
    an element of one array per parameter, the fused statement run once per element as a
    LATERAL subquery, its rows tagged with the element's position. The parameters every
    request binds to the same literal (`_Form.defaults`) stay scalar."""

    sql: str
    varying: tuple[int, ...]  # positions, in the fused form's arguments, of the arrays
    constant: tuple[int, ...]  # positions of the scalar parameters after them

    def args(self, each: list[list[Any]]) -> list[Any]:
        return [[args[i] for args in each] for i in self.varying] + [
            each[0][i] for i in self.constant
        ]


def _batch_or_none(fused: sa.Select[Any], form: _Form, dialect: sa.Dialect) -> _Batch | None:
    """The batched form on PostgreSQL; None (each request reads on its own) elsewhere, or for
    a statement shape `_batch` does not take apart."""
    if dialect.name != "postgresql":
        return None
    try:
        return _batch(fused, form, dialect)
    except ValueError:
        log.warning("no coalesced form for %r; its reads run one by one", form.sql[:200])
        return None


def _batch(fused: sa.Select[Any], form: _Form, dialect: sa.Dialect) -> _Batch:
    binds = fused.compile(dialect=dialect).binds
    casts = [_cast(binds[name].type, dialect) for name in form.names]
    varying = tuple(i for i, name in enumerate(form.names) if name not in form.defaults)
    constant = tuple(i for i, name in enumerate(form.names) if name in form.defaults)
    placeholder = {
        **{i + 1: f"b.p{k}" for k, i in enumerate(varying)},
        **{i + 1: f"${len(varying) + k + 1}" for k, i in enumerate(constant)},
    }
    seen: list[int] = []

    def renumber(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if not match.string.startswith(casts[number - 1], match.end()):
            raise ValueError(f"unexpected parameter ${number} in {form.sql!r}")
        seen.append(number)
        return placeholder[number]

    inner = re.sub(r"\$(\d+)(?=::)", renumber, form.sql)
    if set(seen) != set(range(1, len(form.names) + 1)):
        raise ValueError(f"parameters of {form.sql!r} not all rendered with their cast")
    arrays = ", ".join(f"${k + 1}{casts[i]}[]" for k, i in enumerate(varying))
    columns = ", ".join([*(f"p{k}" for k in range(len(varying))), "n"])
    return _Batch(
        sql=(
            f"SELECT b.n, x.* FROM unnest({arrays}) WITH ORDINALITY AS b({columns}) "
            f"CROSS JOIN LATERAL ({inner}) AS x"
        ),
        varying=varying,
        constant=constant,
    )


def _cast(type_: Any, dialect: sa.Dialect) -> str:
    """The cast SQLAlchemy renders after a positional parameter of this type, as `::VARCHAR`."""
    sql = sa.select(sa.bindparam("v", type_=type_)).compile(dialect=dialect).string
    found = re.search(r"\$1(::[^\n]*?) AS ", sql)
    if found is None:
        raise ValueError(f"no cast rendered for {type_!r}")
    return found.group(1)


@dataclass(frozen=True, slots=True)
class _Fused:
    form: _Form
    lead_keys: tuple[str, ...]
    follower_keys: tuple[str, ...]  # without the hit marker, the last column
    batch: _Batch | None


_LEAD: Any = object()


class _Coalescer:
    """Concurrent requests' fused reads of one chain, as one statement (PostgreSQL).

    Why: on PostgreSQL the request path's own Python was the bound (the API process at 100 %
    of a core, the database server at a few per cent), and a quarter of it was asyncpg
    sending, awaiting and parsing one statement per request. One read is in flight per
    process and chain; requests that arrive meanwhile wait, and the first of them then reads
    for all of them, on its own connection, in one statement (`_Batch`). A request alone
    reads at once, with the plain fused statement. Every request's read still starts after
    the request arrived, so it sees everything committed before (a revoked token, a removed
    member). If the statement fails, each waiting request reads on its own, as without a
    chain (`_NOT_RUN`)."""

    __slots__ = ("busy", "loop", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.busy = False
        self.waiting: deque[tuple[list[Any], asyncio.Future[Any]]] = deque()

    async def fetch(self, conn: AsyncConnection, fused: _Fused, args: list[Any]) -> Any:
        """The raw fused row of these arguments, None if there is none, or _NOT_RUN. `conn`
        is started (a connection taken) only if this request reads."""
        if self.busy:
            entry = (args, self.loop.create_future())
            self.waiting.append(entry)
            try:
                outcome = await entry[1]
            except BaseException:  # cancelled, or closed with the loop: hand on what it holds
                if entry in self.waiting:
                    self.waiting.remove(entry)
                elif entry[1].done() and not entry[1].cancelled() and entry[1].result() is _LEAD:
                    self._hand_on()
                raise
            if outcome is not _LEAD:
                return outcome
        self.busy = True
        group, self.waiting = [(args, None), *self.waiting], deque()
        rows: dict[int, tuple[Any, ...]] | None = None
        busy: sa.exc.TimeoutError | None = None
        try:
            try:
                await conn.start()
            except sa.exc.TimeoutError as exc:
                # No connection within the pool timeout: a 503 for all of them now, rather
                # than each waiting its own turn for one again.
                busy = exc
                raise
            driver = _driver_connection(conn)
            if driver is None:
                raise RuntimeError("not an autocommitting asyncpg connection")
            connection = driver[1]
            if len(group) == 1 or fused.batch is None:
                found = await connection.fetchrow(fused.form.sql, *args)
                rows = {} if found is None else {1: tuple(found)}
            else:
                records = await connection.fetch(
                    fused.batch.sql, *fused.batch.args([each for each, _ in group])
                )
                rows = {record[0]: tuple(record)[1:] for record in records}
                COALESCED_READS.inc(len(group) - 1)
        except Exception:
            if busy is not None:
                raise
            rows = None  # each request reads on its own instead (the module docstring)
        finally:
            # Also when this request is cancelled: those it read for then read on their own.
            self._hand_on()
            for position, (_, future) in enumerate(group[1:], start=2):
                if future is None or future.done():
                    continue
                if busy is not None:
                    future.set_exception(sa.exc.TimeoutError(str(busy)))
                else:
                    future.set_result(_NOT_RUN if rows is None else rows.get(position))
        return _NOT_RUN if rows is None else rows.get(1)

    def _hand_on(self) -> None:
        """The read is done: the first waiting request reads next, for all who wait then."""
        while self.waiting:
            _, future = self.waiting.popleft()
            if not future.done():
                future.set_result(_LEAD)
                return
        self.busy = False


class _Plan:
    """One request's chain: the follower's own parameters, then, once the lead ran fused, the
    follower's row, handed out once to the follower's read with exactly those parameters."""

    __slots__ = ("chain", "follower_params", "params", "ran", "row", "taken")

    def __init__(self, chain: Chain, params: Mapping[str, Any]) -> None:
        self.chain = chain
        self.params = dict(params)
        self.ran = False
        self.follower_params: dict[str, Any] | None = None
        self.row: Row | None = None
        self.taken = False

    def read_for(self, params: Mapping[str, Any]) -> bool:
        return (
            not self.taken and self.follower_params is not None and params == self.follower_params
        )

    def take(self) -> Row | None:
        self.taken = True
        return self.row

    async def run(self, conn: AsyncConnection, params: Mapping[str, Any]) -> Any:
        """The lead's row (or None), read fused with the follower; _NOT_RUN if the fused read
        does not apply here (SQLite, a writing transaction) or the driver refused it."""
        self.ran = True
        if conn.sync_connection is None:
            # A read that holds no connection yet (kit.db.LazyRead): it may wait for another
            # request to read for it, and takes one only if it reads for the others.
            fused = self.chain.form(conn.dialect)
            if fused.batch is None:
                return _NOT_RUN
            try:
                args = fused.form.args({**self.params, **params})
            except Exception:
                return _NOT_RUN
            found = await self.chain.coalescer().fetch(conn, fused, args)
        else:
            # Holding a connection, it reads alone: waiting for a request that might wait for
            # this connection could deadlock.
            driver = _driver_connection(conn)
            # SQLite has no round trip to save, and the fused form cost it more than it saved
            # (3,200 req/s against 3,800 on benchmarks/load_reads.py).
            if driver is None or driver[0] == "sqlite":
                return _NOT_RUN
            fused = self.chain.form(conn.dialect)
            rows = await _fetch(driver, fused.form, {**self.params, **params}, one=True)
            if rows is None:
                return _NOT_RUN
            found = rows[0] if rows else None
        if found is _NOT_RUN or found is None:
            return found
        values = fused.form.values(found)
        split = len(fused.lead_keys)
        lead = dict(zip(fused.lead_keys, values[:split], strict=True))
        if values[-1] is not None:
            self.row = dict(zip(fused.follower_keys, values[split:-1], strict=True))
        self.follower_params = {**self.params, self.chain.link: lead[self.chain.column]}
        return lead


_AHEAD: ContextVar[_Plan | None] = ContextVar("docshelf_prepared_plan", default=None)


@contextmanager
def ahead(chain: Chain, params: Mapping[str, Any]) -> Iterator[_Plan]:
    """For the current request: when `chain.lead` runs, run the follower with `params` in the
    same statement, and answer the follower's next read with those parameters from it."""
    plan = _Plan(chain, params)
    token = _AHEAD.set(plan)
    try:
        yield plan
    finally:
        _AHEAD.reset(token)


@dataclass(frozen=True, slots=True)
class Ahead:
    """A route's chain, the follower's parameter `path` taking the route's path value."""

    chain: Chain
    path: str

    def plan(self, value: str) -> Any:
        return ahead(self.chain, {self.path: value})
