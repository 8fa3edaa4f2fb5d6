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

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors

from docshelf.kit.sqlite_inline import InlineConnection

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
        return "sqlite", conn.sync_connection.connection.dbapi_connection  # type: ignore[union-attr]
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
        driver = _driver_connection(conn)
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
        )


@dataclass(frozen=True, slots=True)
class _Fused:
    form: _Form
    lead_keys: tuple[str, ...]
    follower_keys: tuple[str, ...]  # without the hit marker, the last column


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
        driver = _driver_connection(conn)
        # SQLite has no round trip to save, and the fused form cost it more than it saved
        # (3,200 req/s against 3,800 on benchmarks/load_reads.py).
        if driver is None or driver[0] == "sqlite":
            return _NOT_RUN
        fused = self.chain.form(conn.dialect)
        rows = await _fetch(driver, fused.form, {**self.params, **params}, one=True)
        if rows is None:
            return _NOT_RUN
        if not rows:
            return None
        values = fused.form.values(rows[0])
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
