from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import is_postgres, upsert_insert
from docshelf.models import (
    change_request_contributors,
    change_request_reviewers,
    change_requests,
    spaces,
    users,
)

_merger = users.alias("merger")

COLUMNS = (
    *change_requests.c,
    spaces.c.revision_id.label("space_revision"),
    spaces.c.organization_id,
    users.c.email.label("creator_email"),
    users.c.display_name.label("creator_display_name"),
    users.c.photo_url.label("creator_photo_url"),
    _merger.c.email.label("merger_email"),
    _merger.c.display_name.label("merger_display_name"),
    _merger.c.photo_url.label("merger_photo_url"),
)


def in_space(space_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return (
        sa.select(*COLUMNS)
        .join(spaces, spaces.c.id == change_requests.c.space_id)
        .outerjoin(users, users.c.id == change_requests.c.created_by)
        .outerjoin(_merger, _merger.c.id == change_requests.c.merged_by)
        .where(change_requests.c.space_id == space_id)
    )


# Every route of a change request reads it: built once, with their cache keys.
_BY_ID = in_space(sa.bindparam("sid")).where(change_requests.c.id == sa.bindparam("ref"))
_BY_NUMBER = in_space(sa.bindparam("sid")).where(change_requests.c.number == sa.bindparam("ref"))


async def get(conn: AsyncConnection, space_id: str, ref: str) -> sa.RowMapping | None:
    """By id, or by number in the space when `ref` is all digits."""
    if ref.isascii() and ref.isdigit() and not ref.startswith("0") and len(ref) < 10:
        stmt, values = _BY_NUMBER, {"sid": space_id, "ref": int(ref)}
    else:
        stmt, values = _BY_ID, {"sid": space_id, "ref": ref}
    return (await conn.execute(stmt, values)).mappings().first()


async def next_number(conn: AsyncConnection, space_id: str) -> int:
    """One atomic increment: concurrent creators queue on the space row and never share a
    number (unlike max(number) + 1, which two transactions can read alike)."""
    stmt = (
        sa.update(spaces)
        .where(spaces.c.id == space_id)
        .values(change_request_seq=spaces.c.change_request_seq + 1)
        .returning(spaces.c.change_request_seq)
    )
    return int((await conn.execute(stmt)).scalar_one())


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(change_requests).values(**values))
    await count_status_change(conn, values["space_id"], None, values["status"])
    await conn.execute(
        sa.insert(change_request_contributors).values(
            change_request_id=values["id"], user_id=values["created_by"]
        )
    )


async def update(conn: AsyncConnection, cr_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(change_requests).where(change_requests.c.id == cr_id).values(**values)
    )


def listing(
    space_id: str, status: str, *, contributor: str | None, requested_reviewer: str | None
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """A space's change requests of one status, filtered to those a user contributed to and
    those a review is asked of a user for (GitBook's `requestedReviewer`, 0.202), with the
    statement's parameters: built once per kind of filter."""
    values = {
        "sid": space_id,
        "status": status,
        "contributor": contributor,
        "reviewer": requested_reviewer,
    }
    return _listing(contributor is not None, requested_reviewer is not None), values


@functools.lru_cache(maxsize=4)
def _listing(contributed: bool, reviewed: bool) -> sa.Select[Any]:
    stmt = in_space(sa.bindparam("sid")).where(change_requests.c.status == sa.bindparam("status"))
    if contributed:
        stmt = stmt.where(
            change_requests.c.id.in_(
                sa.select(change_request_contributors.c.change_request_id).where(
                    change_request_contributors.c.user_id == sa.bindparam("contributor")
                )
            )
        )
    if reviewed:
        stmt = stmt.where(
            change_requests.c.id.in_(
                sa.select(change_request_reviewers.c.change_request_id).where(
                    change_request_reviewers.c.user_id == sa.bindparam("reviewer")
                )
            )
        )
    return stmt


_COUNTED = {"open": spaces.c.change_requests_open, "draft": spaces.c.change_requests_draft}


async def count_status_change(
    conn: AsyncConnection, space_id: str, old: str | None, new: str
) -> None:
    """Keeps the space's counters in step with a change request that appears (old None) or
    changes status."""
    values: dict[Any, Any] = {}
    if old is None:
        values[spaces.c.change_requests_total] = spaces.c.change_requests_total + 1
    if old in _COUNTED and old != new:
        values[_COUNTED[old]] = _COUNTED[old] - 1
    if new in _COUNTED and old != new:
        values[_COUNTED[new]] = _COUNTED[new] + 1
    if values:
        await conn.execute(sa.update(spaces).where(spaces.c.id == space_id).values(values))


async def add_contributor(conn: AsyncConnection, cr_id: str, user_id: str) -> None:
    stmt = upsert_insert(conn, change_request_contributors).on_conflict_do_nothing()
    await conn.execute(stmt, {"change_request_id": cr_id, "user_id": user_id})


async def lock(conn: AsyncConnection, cr_id: str) -> sa.RowMapping:
    """The change request, its row locked until commit (PostgreSQL; SQLite writers hold the
    database lock already)."""
    stmt = sa.select(change_requests).where(change_requests.c.id == cr_id)
    if is_postgres(conn):
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).mappings().one()
