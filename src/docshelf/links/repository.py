"""The links index: one row per link in main's pages, stored grouped as the listing shows them,
with the target's existence in main's head (`status`) and per-space counts kept current here, so
a listing page is one index range and its counts one row."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import is_postgres, upsert_insert
from docshelf.links.extract import FoundLink, extract
from docshelf.models import page_link_stats, page_links

_BATCH = 500
_SORT_CHARS = 400
_ANCHOR_CHARS = 512


@dataclass(frozen=True, slots=True)
class Row:
    """A link as the listing groups it: "#part" in page P is a link to P's anchor "part"."""

    kind: str  # page, file, url, unresolved
    target: str
    anchor: str | None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.target}#{self.anchor or ''}"

    @property
    def group_hash(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:32]


def _grouped(page_id: str, link: FoundLink) -> Row:
    if link.kind == "anchor":
        return Row("page", page_id, link.target[:_ANCHOR_CHARS])
    anchor = link.anchor[:_ANCHOR_CHARS] if link.anchor else None
    return Row(link.kind, link.target, anchor)


def rows_for(page_id: str, markdown: str) -> list[Row]:
    return [_grouped(page_id, link) for link in extract(markdown)]


def _chunks(values: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), _BATCH):
        yield values[start : start + _BATCH]


async def _group_states(
    conn: AsyncConnection, space_id: str, hashes: Collection[str]
) -> dict[str, str]:
    """Each listed group that has rows, with its status (uniform within a group)."""
    states: dict[str, str] = {}
    for chunk in _chunks(sorted(hashes)):
        rows = await conn.execute(
            sa.select(page_links.c.group_hash, page_links.c.status)
            .where(page_links.c.space_id == space_id, page_links.c.group_hash.in_(chunk))
            .distinct()
        )
        states.update((r.group_hash, r.status) for r in rows)
    return states


async def _hashes_where(
    conn: AsyncConnection,
    space_id: str,
    column: sa.ColumnElement[str],
    values: Sequence[str],
    *also: sa.ColumnElement[bool],
) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(values):
        rows = await conn.execute(
            sa.select(page_links.c.group_hash)
            .where(page_links.c.space_id == space_id, column.in_(chunk), *also)
            .distinct()
        )
        found.update(rows.scalars())
    return found


async def _set_status(
    conn: AsyncConnection, space_id: str, kind: str, targets: Sequence[str], status: str
) -> None:
    for chunk in _chunks(targets):
        await conn.execute(
            sa.update(page_links)
            .where(
                page_links.c.space_id == space_id,
                page_links.c.kind == kind,
                page_links.c.target.in_(chunk),
            )
            .values(status=status)
        )


async def reindex(
    conn: AsyncConnection,
    space_id: str,
    pages: Mapping[str, list[Row] | None],
    *,
    existing: Mapping[str, Collection[str]],
    appeared: Mapping[str, Sequence[str]],
    gone: Mapping[str, Sequence[str]],
) -> None:
    """Replaces the links of each page (None: the page is gone), marks the links to pages and
    files that `appeared` in or are `gone` from main, and keeps the space's counts.

    `existing[kind]` holds which of the new rows' page and file targets exist in main."""
    ids = sorted(pages)
    touched: set[str] = await _hashes_where(conn, space_id, page_links.c.page_id, ids)
    for kind in ("page", "file"):
        targets = sorted({*appeared.get(kind, ()), *gone.get(kind, ())})
        if targets:
            touched |= await _hashes_where(
                conn, space_id, page_links.c.target, targets, page_links.c.kind == kind
            )
    new_rows = [(pid, i, row) for pid in ids for i, row in enumerate(pages[pid] or ())]
    touched |= {row.group_hash for _, _, row in new_rows}
    if not touched:
        return
    before = await _group_states(conn, space_id, touched)

    for chunk in _chunks(ids):
        await conn.execute(
            sa.delete(page_links).where(
                page_links.c.space_id == space_id, page_links.c.page_id.in_(chunk)
            )
        )
    for kind, found in appeared.items():
        await _set_status(conn, space_id, kind, sorted(found), "ok")
    for kind, lost in gone.items():
        await _set_status(conn, space_id, kind, sorted(lost), "broken")

    def status(row: Row) -> str:
        if row.kind in ("page", "file"):
            return "ok" if row.target in existing.get(row.kind, ()) else "broken"
        return "broken" if row.kind == "unresolved" else "ok"

    values = [
        {
            "space_id": space_id,
            "page_id": pid,
            "position": i,
            "kind": row.kind,
            "target": row.target,
            "anchor": row.anchor,
            "sort_key": row.key[:_SORT_CHARS],
            "group_hash": row.group_hash,
            "status": status(row),
        }
        for pid, i, row in new_rows
    ]
    for start in range(0, len(values), _BATCH):
        await conn.execute(sa.insert(page_links), values[start : start + _BATCH])

    after = await _group_states(conn, space_id, touched)
    total = len(after) - len(before)
    broken = sum(1 for s in after.values() if s == "broken") - sum(
        1 for s in before.values() if s == "broken"
    )
    if total or broken:
        await _add_stats(conn, space_id, total, broken)


async def _add_stats(conn: AsyncConnection, space_id: str, total: int, broken: int) -> None:
    stmt = upsert_insert(conn, page_link_stats).values(
        space_id=space_id, total=total, broken=broken
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[page_link_stats.c.space_id],
        set_={
            "total": page_link_stats.c.total + total,
            "broken": page_link_stats.c.broken + broken,
        },
    )
    await conn.execute(stmt)


# The listing's reads, built once (per filter and page shape) with their cache keys: building
# a statement and walking it for its key cost more than running it.
_STATS = sa.select(page_link_stats.c.total, page_link_stats.c.broken).where(
    page_link_stats.c.space_id == sa.bindparam("sid")
)


async def stats(conn: AsyncConnection, space_id: str) -> tuple[int, int]:
    row = (await conn.execute(_STATS, {"sid": space_id})).first()
    return (0, 0) if row is None else (int(row.total), int(row.broken))


async def copy_space(conn: AsyncConnection, source: str, target: str) -> None:
    """A duplicated space's links and counts: the source's, whose main the copy starts from."""
    names = [c.name for c in page_links.c if c.name != "space_id"]
    await conn.execute(
        sa.insert(page_links).from_select(
            ["space_id", *names],
            sa.select(sa.literal(target), *[page_links.c[n] for n in names]).where(
                page_links.c.space_id == source
            ),
        )
    )
    await conn.execute(
        sa.insert(page_link_stats).from_select(
            ["space_id", "total", "broken"],
            sa.select(sa.literal(target), page_link_stats.c.total, page_link_stats.c.broken).where(
                page_link_stats.c.space_id == source
            ),
        )
    )


# Reading


def in_app(*, binary: bool = False) -> sa.ColumnElement[bool]:
    """URL links into this install (decided when read: the base URL is configuration, bound
    as `base` with in_app_values). `binary`: text compares byte by byte (SQLite), so a range
    holds exactly the targets that start with the base, and the (space, kind, target) index
    finds them instead of every URL link of the space being tested. Linguistic collations
    (PostgreSQL's usual) give no such guarantee, so there only the prefix test decides."""
    base = sa.bindparam("base", type_=sa.Text())
    length = sa.bindparam("base_len", type_=sa.Integer)
    prefix = sa.func.substr(page_links.c.target, 1, length) == base
    if not binary:
        return sa.and_(page_links.c.kind == "url", prefix)
    return sa.and_(
        page_links.c.kind == "url",
        page_links.c.target >= base,
        page_links.c.target < sa.bindparam("base_upper", type_=sa.Text()),
        prefix,
    )


def in_app_values(base: str) -> dict[str, Any]:
    upper = base[:-1] + chr(ord(base[-1]) + 1) if base else ""
    return {"base": base, "base_len": len(base), "base_upper": upper}


@functools.lru_cache(maxsize=16)
def _filtered(status: str | None, binary: bool) -> list[sa.ColumnElement[bool]]:
    where = [page_links.c.space_id == sa.bindparam("sid")]
    if status == "broken":
        where.append(page_links.c.status == "broken")
    elif status == "ok":
        where += [page_links.c.status == "ok", sa.not_(in_app())]
    elif status == "in-app":
        where.append(in_app(binary=binary))
    return where


def _where(
    conn: AsyncConnection, space_id: str, status: str | None, base: str
) -> tuple[tuple[str | None, bool], dict[str, Any]]:
    """The shape of a listing's filter and its parameters."""
    # An empty base (every URL) has no range: only the prefix test.
    binary = status == "in-app" and bool(base) and not is_postgres(conn)
    return (status, binary), {
        "sid": space_id,
        **in_app_values(base),
    }


@dataclass(frozen=True, slots=True)
class Group:
    sort_key: str
    group_hash: str
    row: Row
    status: str


async def groups(
    conn: AsyncConnection,
    space_id: str,
    *,
    status: str | None,
    base: str,
    after: tuple[str, str] | None,
    limit: int,
) -> list[Group]:
    """One page of a space's listing groups in (sort_key, group_hash) order: an index range,
    grouped as it is read."""
    shape, values = _where(conn, space_id, status, base)
    values["limit"] = limit
    if after is not None:
        values.update(after_key=after[0], after_hash=after[1])
    rows = await conn.execute(_groups(*shape, after is not None), values)
    return [
        Group(r.sort_key, r.group_hash, Row(r.kind, r.target, r.anchor), r.status) for r in rows
    ]


@functools.lru_cache(maxsize=16)
def _groups(status: str | None, binary: bool, after: bool) -> sa.Select[Any]:
    where = list(_filtered(status, binary))
    order = (page_links.c.sort_key, page_links.c.group_hash)
    if after:
        where.append(
            sa.tuple_(*order)
            > sa.tuple_(
                sa.bindparam("after_key", type_=sa.Text()),
                sa.bindparam("after_hash", type_=sa.Text()),
            )
        )
    return (
        sa.select(
            page_links.c.sort_key,
            page_links.c.group_hash,
            sa.func.min(page_links.c.kind).label("kind"),
            sa.func.min(page_links.c.target).label("target"),
            sa.func.min(page_links.c.anchor).label("anchor"),
            sa.func.min(page_links.c.status).label("status"),
        )
        .where(*where)
        .group_by(*order)
        .order_by(*order)
        .limit(sa.bindparam("limit", type_=sa.BigInteger))
    )


async def count_groups(conn: AsyncConnection, space_id: str, *, status: str, base: str) -> int:
    shape, values = _where(conn, space_id, status, base)
    return int((await conn.execute(_count_groups(*shape), values)).scalar_one())


@functools.lru_cache(maxsize=16)
def _count_groups(status: str | None, binary: bool) -> sa.Select[Any]:
    return sa.select(sa.func.count(sa.distinct(page_links.c.group_hash))).where(
        *_filtered(status, binary)
    )


_OF_PAGE = sa.select(page_links).where(
    page_links.c.space_id == sa.bindparam("sid"), page_links.c.page_id == sa.bindparam("pid")
)


async def groups_of_page(conn: AsyncConnection, space_id: str, page_id: str) -> list[Group]:
    """Every listing group of one page's links, in listing order."""
    rows = await conn.execute(_OF_PAGE, {"sid": space_id, "pid": page_id})
    found = {
        (r.sort_key, r.group_hash): Group(
            r.sort_key, r.group_hash, Row(r.kind, r.target, r.anchor), r.status
        )
        for r in rows
    }
    return [found[k] for k in sorted(found)]


# No ORDER BY or DISTINCT in SQL: with them the planner walks the space's whole link index in
# page order instead of looking each group up (measured: O(space) at 10,000 pages).
_HOLDERS = sa.select(page_links.c.group_hash, page_links.c.page_id).where(
    page_links.c.space_id == sa.bindparam("sid"),
    page_links.c.group_hash.in_(sa.bindparam("hashes", expanding=True)),
)


async def pages_of_groups(
    conn: AsyncConnection, space_id: str, hashes: Sequence[str]
) -> dict[str, list[str]]:
    """The pages holding each group's links, by page id."""
    found: dict[str, set[str]] = {h: set() for h in hashes}
    if not hashes:
        return {}
    for r in await conn.execute(_HOLDERS, {"sid": space_id, "hashes": list(hashes)}):
        found[r.group_hash].add(r.page_id)
    return {h: sorted(pages) for h, pages in found.items()}


async def pages_linking_to(
    conn: AsyncConnection, space_id: str, kind: str, target: str
) -> list[str]:
    # Sorted here, not in SQL (see pages_of_groups): the target index finds the rows.
    stmt = sa.select(page_links.c.page_id).where(
        page_links.c.space_id == space_id,
        page_links.c.kind == kind,
        page_links.c.target == target,
    )
    return sorted(set((await conn.execute(stmt)).scalars()))
