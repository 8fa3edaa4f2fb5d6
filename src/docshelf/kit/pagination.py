"""One keyset pagination helper for every list.

`page` is an opaque cursor holding the sort values of the last item served and the listing's
count (taken on the first page), so page N is one index range scan, cheaper than page 1.
`limit` defaults to DEFAULT_LIMIT.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

import orjson
import sqlalchemy as sa
from fastapi import Depends, Query
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BindParameter

from docshelf.kit import instance
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest
from docshelf.kit.lru import SizedLRU, counted

DEFAULT_LIMIT = 50
_BAD_CURSOR = "Invalid query parameter 'page': not a cursor returned by this listing"
MAX_LIMIT = 1000


@dataclass(frozen=True)
class PageParams:
    limit: int
    page: str | None


async def page_params(
    page: Annotated[
        str | None, Query(max_length=2048, description="Opaque cursor from `next.page`")
    ] = None,
    limit: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_LIMIT,
            description=f"Items per page, 0..{MAX_LIMIT} (default {DEFAULT_LIMIT})",
        ),
    ] = None,
) -> PageParams:
    return PageParams(limit=DEFAULT_LIMIT if limit is None else limit, page=page)


@dataclass(frozen=True)
class SortKey:
    column: sa.ColumnElement[Any]
    # Name under which the value is selected (label in the statement).
    name: str


@dataclass
class Page:
    rows: Sequence[sa.RowMapping]
    count: int
    next_page: str | None

    def render(self, present: Callable[[sa.RowMapping], Any]) -> dict[str, Any]:
        return self.with_items([present(r) for r in self.rows])

    def with_items(self, items: list[Any]) -> dict[str, Any]:
        """The list body around items presented elsewhere (e.g. in one batch per page)."""
        body: dict[str, Any] = {"items": items, "count": self.count}
        if self.next_page is not None:
            body["next"] = {"page": self.next_page}
        return body


def _encode_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"t": value.isoformat()}
    return value


# Cursors are signed, so a forged one is refused wholesale; the values are still checked
# against what encode_value can produce, so a bug in signing could not turn into a 500 either.
_MAX_INT = 2**63 - 1
_MAX_TEXT = 1024
_MAC_BYTES = 16


def _decode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool | float):
        raise ValueError("not a sort value")
    if isinstance(value, int):
        if not -_MAX_INT - 1 <= value <= _MAX_INT:
            raise ValueError("integer out of range")
        return value
    if isinstance(value, str):
        # Only NUL, which no database text can hold: a signed cursor may carry a display name
        # stored before control characters were refused, and must still page past it.
        if len(value) > _MAX_TEXT or "\x00" in value:
            raise ValueError("bad text")
        return value
    if isinstance(value, dict) and set(value) == {"t"} and isinstance(value["t"], str):
        moment = datetime.fromisoformat(value["t"])
        if moment.utcoffset() != timedelta(0):
            raise ValueError("not a UTC time")
        return moment
    raise ValueError("bad cursor value")


def _fingerprint(keys: Sequence[SortKey], descending: bool) -> str:
    spec = ",".join(k.name for k in keys) + (":d" if descending else ":a")
    return hashlib.sha256(spec.encode()).hexdigest()[:8]


def _python_type(column: sa.ColumnElement[Any]) -> type:
    try:
        return column.type.python_type
    except NotImplementedError:
        return object


_KEY_SETTING = "cursor_hmac_key"
# The install-wide key of this request (set by app.EdgeMiddleware). The default, a key of this
# process, only serves code running outside a request (CLI): its cursors die with it.
_PROCESS_KEY = secrets.token_bytes(32)
_signing_key: ContextVar[bytes] = ContextVar("cursor_signing_key", default=_PROCESS_KEY)


async def load_cursor_key(engine: AsyncEngine) -> bytes:
    """The install-wide cursor key, created by the first process that asks: every process of
    the install then accepts the cursors of every other. Read without a write lock; only the
    very first request of an install writes it."""
    async with unit_of_work(engine, write=False) as conn:
        value = await instance.get(conn, _KEY_SETTING)
    if value is None:
        async with unit_of_work(engine) as conn:
            value = await instance.get_or_create(
                conn, _KEY_SETTING, lambda: secrets.token_urlsafe(32)
            )
    return value.encode()


def use_cursor_key(key: bytes) -> None:
    _signing_key.set(key)


def _mac(raw: bytes) -> bytes:
    return hmac.digest(_signing_key.get(), raw, "sha256")[:_MAC_BYTES]


def encode_cursor(values: Sequence[Any], fingerprint: str) -> str:
    raw = orjson.dumps({"f": fingerprint, "v": [_encode_value(v) for v in values]})
    return base64.urlsafe_b64encode(raw + _mac(raw)).rstrip(b"=").decode()


def decode_cursor(page: str, fingerprint: str, size: int) -> list[Any]:
    try:
        signed = base64.urlsafe_b64decode(page + "=" * (-len(page) % 4))
        raw, mac = signed[:-_MAC_BYTES], signed[-_MAC_BYTES:]
        if len(signed) <= _MAC_BYTES or not hmac.compare_digest(mac, _mac(raw)):
            raise ValueError("not signed by this install")
        data = orjson.loads(raw)
        if not isinstance(data, dict) or data.get("f") != fingerprint:
            raise ValueError("cursor from another listing")
        values = data["v"]
        if not isinstance(values, list) or len(values) != size:
            raise ValueError("bad cursor shape")
        return [_decode_value(v) for v in values]
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
        raise BadRequest(_BAD_CURSOR) from exc


def _part(element: Any) -> Any:
    # Only what reads the same in every process (a cursor is taken to any API process): never
    # an anonymous label's name, which holds an object id.
    if isinstance(element, BindParameter):
        return element.effective_value
    if isinstance(element, sa.Column):
        # A table's or a named alias's name (an anonymous alias's holds an object id, and its
        # type is a subclass of str).
        name = getattr(element.table, "name", None)
        return f"{name}.{element.key}" if type(name) is str else element.key
    if isinstance(element, sa.FunctionElement):
        return f"{element.name}()"
    if isinstance(element, sa.TextClause):
        return element.text
    operator = getattr(element, "operator", None)
    if operator is not None:
        return getattr(operator, "opstring", None) or getattr(operator, "__name__", "op")
    return type(element).__name__


def _listing_identity(stmt: sa.Select[Any], values: Mapping[str, Any] | None) -> str:
    """What the listing selects (its filter values: the space, the status asked for...), so a
    cursor, which carries the first page's count, only continues the listing it came from."""
    # The bound values and the shape in statement order: a walk of the expression, where
    # compiling the statement cost ~200 us on every listing request. The shape tells apart
    # filters that bind nothing (`x IS NULL`, a boolean column, their negations).
    bound: list[Any] = [_part(e) for e in visitors.iterate(stmt)]
    if values:
        # A statement built once takes its values as parameters: they are its identity.
        bound.append(sorted(values.items()))
    return hashlib.sha256(orjson.dumps(bound, default=str)).hexdigest()[:8]


async def paginate(
    conn: AsyncConnection,
    stmt: sa.Select[Any],
    *,
    keys: Sequence[SortKey],
    params: PageParams,
    descending: bool = False,
    values: Mapping[str, Any] | None = None,
) -> Page:
    """`stmt` selects the visible rows, unordered; `keys` end with a unique column so the order
    is total. The count is of every row `stmt` selects: counted when the first page is read and
    carried in the cursor, so later pages cost one index range scan each (a listing that changes
    while it is paged shows the count it had when paging began). A first page that holds the
    whole listing counts it itself: only a longer one, or a page of none, is counted by a
    statement of its own.

    `values`: the parameters of a `stmt` built once with named ones (kept by its module), whose
    page and count statements are then built once too."""
    columns = [k.column for k in keys]
    after: list[Any] | None = None
    count: int | None = None
    if params.page is not None:
        fingerprint = _fingerprint(keys, descending) + _listing_identity(stmt, values)
        *after, count = decode_cursor(params.page, fingerprint, len(keys) + 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise BadRequest(_BAD_CURSOR)
        for value, column in zip(after, columns, strict=True):
            if not isinstance(value, _python_type(column)):
                raise BadRequest(_BAD_CURSOR)
    if params.limit == 0:
        if count is None:
            count = await _count(conn, stmt, values)
        return Page(rows=[], count=count, next_page=None)

    def page_of() -> sa.Select[Any]:
        page_stmt = stmt
        if after is not None:
            left = sa.tuple_(*columns)
            right = sa.tuple_(
                *[sa.bindparam(f"{_AFTER}{i}", type_=c.type) for i, c in enumerate(columns)]
            )
            page_stmt = page_stmt.where(left < right if descending else left > right)
        order = [c.desc() if descending else c.asc() for c in columns]
        return page_stmt.order_by(*order).limit(sa.bindparam(_LIMIT, type_=sa.BigInteger))

    shape = ("page", *(k.name for k in keys), descending, after is not None)
    page_stmt = _derived(stmt, shape, page_of, kept=values is not None)
    run = {**(values or {}), _LIMIT: params.limit + 1}
    run.update({f"{_AFTER}{i}": v for i, v in enumerate(after or ())})
    rows = (await conn.execute(page_stmt, run)).mappings().all()
    if count is None:
        count = len(rows) if len(rows) <= params.limit else await _count(conn, stmt, values)
    next_page = None
    if len(rows) > params.limit:
        rows = rows[: params.limit]
        last = rows[-1]
        # Only a listing with a next page or asked with a cursor walks its statement for it.
        fingerprint = _fingerprint(keys, descending) + _listing_identity(stmt, values)
        next_page = encode_cursor([*(last[k.name] for k in keys), count], fingerprint)
    return Page(rows=rows, count=count, next_page=next_page)


async def _count(
    conn: AsyncConnection, stmt: sa.Select[Any], values: Mapping[str, Any] | None
) -> int:
    count_stmt = _derived(
        stmt,
        ("count",),
        lambda: sa.select(sa.func.count()).select_from(stmt.order_by(None).subquery()),
        kept=values is not None,
    )
    return int((await conn.execute(count_stmt, values)).scalar_one())


# The page's parameters, named apart from any a listing's statement has.
_LIMIT = "docshelf_page_limit"
_AFTER = "docshelf_page_after_"
# A kept listing statement's page and count statements, by the statement (held, so its id is not
# reused while here) and the page's shape: its sort, and whether a cursor bounds it.
_DERIVED: SizedLRU[tuple[Any, ...], tuple[sa.Select[Any], sa.Select[Any]]] = counted(512)


def _derived(
    stmt: sa.Select[Any], shape: tuple[Any, ...], build: Callable[[], sa.Select[Any]], *, kept: bool
) -> sa.Select[Any]:
    if not kept:
        return build()
    key = (id(stmt), *shape)
    entry = _DERIVED.get(key)
    if entry is None or entry[0] is not stmt:
        entry = (stmt, build())
        _DERIVED.put(key, entry)
    return entry[1]


Paging = Annotated[PageParams, Depends(page_params)]


def page_in_memory(
    items: Sequence[Any], *, key: Callable[[Any], str], params: PageParams, listing: str
) -> tuple[list[Any], int, str | None]:
    """For listings computed in Python (e.g. resolved permissions): the same opaque cursor and
    limits, over items sorted by a unique string key in Python's order (never the database's
    collation, which may differ)."""
    ordered = sorted(items, key=key)
    start = 0
    if params.page is not None:
        (after,) = decode_cursor(params.page, listing, 1)
        if not isinstance(after, str):
            raise BadRequest(_BAD_CURSOR)
        start = next((i for i, item in enumerate(ordered) if key(item) > after), len(ordered))
    chunk = ordered[start : start + params.limit] if params.limit else []
    more = bool(params.limit) and start + params.limit < len(ordered)
    return chunk, len(ordered), encode_cursor([key(chunk[-1])], listing) if more else None
