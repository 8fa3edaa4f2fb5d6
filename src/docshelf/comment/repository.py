from __future__ import annotations

import functools
from collections.abc import Collection
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import (
    change_requests,
    comment_reactions,
    comment_replies,
    comments,
    members,
    spaces,
    users,
)

_poster = users.alias("poster")
_resolver = users.alias("resolver")


def _user_columns(alias: Any, prefix: str) -> tuple[Any, ...]:
    return (
        alias.c.email.label(f"{prefix}email"),
        alias.c.display_name.label(f"{prefix}display_name"),
        alias.c.photo_url.label(f"{prefix}photo_url"),
    )


def in_thread(
    space_id: str | sa.BindParameter[str], change_request_id: str | sa.BindParameter[str] | None
) -> sa.Select[Any]:
    """The comments of main (no change request) or of one change request, with their poster and
    resolver."""
    cr = (
        comments.c.change_request_id.is_(None)
        if change_request_id is None
        else comments.c.change_request_id == change_request_id
    )
    return (
        sa.select(
            *comments.c,
            *_user_columns(_poster, "poster_"),
            *_user_columns(_resolver, "resolver_"),
        )
        .outerjoin(_poster, _poster.c.id == comments.c.posted_by)
        .outerjoin(_resolver, _resolver.c.id == comments.c.resolved_by)
        .where(comments.c.space_id == space_id, cr)
    )


def listing(
    space_id: str,
    change_request_id: str | None,
    *,
    status: str | None,
    target_page: str | None,
    authors: list[str],
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """A thread's comments, filtered (no filter for what is None or empty), and the
    statement's parameters: built once per kind of thread and of filter."""
    values = {
        "sid": space_id,
        "crid": change_request_id,
        "status": status,
        "target_page": target_page,
        "authors": authors,
    }
    shape = (change_request_id is None, status is None, target_page is None, not authors)
    return _listing(*shape), values


@functools.lru_cache(maxsize=16)
def _listing(main: bool, any_status: bool, any_page: bool, any_author: bool) -> sa.Select[Any]:
    stmt = in_thread(sa.bindparam("sid"), None if main else sa.bindparam("crid"))
    if not any_status:
        stmt = stmt.where(comments.c.status == sa.bindparam("status"))
    if not any_page:
        stmt = stmt.where(comments.c.target_page == sa.bindparam("target_page"))
    if not any_author:
        stmt = stmt.where(comments.c.posted_by.in_(sa.bindparam("authors", expanding=True)))
    return stmt


# A comment's routes, and its replies', read it: built once per kind of thread, with their
# cache keys.
_IN_MAIN = in_thread(sa.bindparam("sid"), None).where(comments.c.id == sa.bindparam("cid"))
_IN_CHANGE_REQUEST = in_thread(sa.bindparam("sid"), sa.bindparam("crid")).where(
    comments.c.id == sa.bindparam("cid")
)


async def get(
    conn: AsyncConnection, space_id: str, change_request_id: str | None, comment_id: str
) -> sa.RowMapping | None:
    values = {"sid": space_id, "crid": change_request_id, "cid": comment_id}
    stmt = _IN_MAIN if change_request_id is None else _IN_CHANGE_REQUEST
    return (await conn.execute(stmt, values)).mappings().first()


# A comment's replies, oldest first when paged (built once, with its cache key), and one reply.
REPLIES = (
    sa.select(*comment_replies.c, *_user_columns(_poster, "poster_"))
    .outerjoin(_poster, _poster.c.id == comment_replies.c.posted_by)
    .where(comment_replies.c.comment_id == sa.bindparam("comment_id"))
)
_REPLY = REPLIES.where(comment_replies.c.id == sa.bindparam("reply_id"))


async def get_reply(conn: AsyncConnection, comment_id: str, reply_id: str) -> sa.RowMapping | None:
    values = {"comment_id": comment_id, "reply_id": reply_id}
    return (await conn.execute(_REPLY, values)).mappings().first()


async def _count_open(
    conn: AsyncConnection, space_id: str, change_request_id: str | None, delta: int
) -> None:
    """One atomic increment in the comment's transaction: concurrent writers queue on the row
    (PostgreSQL) or the write lock (SQLite), so the count never drifts."""
    if change_request_id is None:
        stmt = (
            sa.update(spaces)
            .where(spaces.c.id == space_id)
            .values(comments_open=spaces.c.comments_open + delta)
        )
    else:
        stmt = (
            sa.update(change_requests)
            .where(change_requests.c.id == change_request_id)
            .values(comments_open=change_requests.c.comments_open + delta)
        )
    await conn.execute(stmt)


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(comments).values(**values))
    await _count_open(conn, values["space_id"], values["change_request_id"], +1)


async def set_text(
    conn: AsyncConnection, table: sa.Table, row_id: str, text: str, now: datetime
) -> None:
    await conn.execute(
        sa.update(table).where(table.c.id == row_id).values(markdown=text, edited_at=now)
    )


async def set_resolved(
    conn: AsyncConnection, row: sa.RowMapping, resolved: bool, user_id: str, now: datetime
) -> None:
    """Moves the status only if it is not there yet, judged by the UPDATE itself (which waits
    for any concurrent one on PostgreSQL), so two resolutions count once."""
    old, new = ("open", "resolved") if resolved else ("resolved", "open")
    values: dict[str, Any] = {"status": new, "resolved_at": None, "resolved_by": None}
    if resolved:
        values.update(resolved_at=now, resolved_by=user_id)
    result = await conn.execute(
        sa.update(comments)
        .where(comments.c.id == row["id"], comments.c.status == old)
        .values(**values)
    )
    if result.rowcount:
        await _count_open(conn, row["space_id"], row["change_request_id"], -1 if resolved else +1)


async def delete(conn: AsyncConnection, row: sa.RowMapping) -> None:
    # Explicit, though the foreign keys cascade: the reactions of replies name the reply only.
    await conn.execute(
        sa.delete(comment_reactions).where(comment_reactions.c.comment_id == row["id"])
    )
    await conn.execute(sa.delete(comment_replies).where(comment_replies.c.comment_id == row["id"]))
    status = (
        await conn.execute(
            sa.delete(comments).where(comments.c.id == row["id"]).returning(comments.c.status)
        )
    ).scalar_one_or_none()
    if status == "open":
        await _count_open(conn, row["space_id"], row["change_request_id"], -1)


async def insert_reply(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(comment_replies).values(**values))


async def delete_reply(conn: AsyncConnection, reply_id: str) -> None:
    await conn.execute(
        sa.delete(comment_reactions).where(comment_reactions.c.subject_id == reply_id)
    )
    await conn.execute(sa.delete(comment_replies).where(comment_replies.c.id == reply_id))


async def add_reactions(
    conn: AsyncConnection,
    *,
    comment_id: str,
    subject_id: str,
    user_id: str,
    emojis: Collection[str],
    now: datetime,
) -> None:
    """Idempotent: a reaction the user already gave keeps its first time."""
    if not emojis:
        return
    stmt = upsert_insert(conn, comment_reactions).on_conflict_do_nothing()
    await conn.execute(
        stmt,
        [
            {
                "subject_id": subject_id,
                "emoji": e,
                "user_id": user_id,
                "comment_id": comment_id,
                "reacted_at": now,
            }
            for e in emojis
        ],
    )


async def remove_reactions(
    conn: AsyncConnection, *, subject_id: str, user_id: str, emojis: Collection[str]
) -> None:
    if emojis:
        await conn.execute(
            sa.delete(comment_reactions).where(
                comment_reactions.c.subject_id == subject_id,
                comment_reactions.c.user_id == user_id,
                comment_reactions.c.emoji.in_(list(emojis)),
            )
        )


async def distinct_emojis(conn: AsyncConnection, subject_id: str) -> int:
    stmt = sa.select(sa.func.count(sa.distinct(comment_reactions.c.emoji))).where(
        comment_reactions.c.subject_id == subject_id
    )
    return int((await conn.execute(stmt)).scalar_one())


# Every listing of comments or replies runs both: built once, with their cache keys.
_REACTIONS = (
    sa.select(
        comment_reactions.c.subject_id,
        comment_reactions.c.emoji,
        comment_reactions.c.user_id,
        comment_reactions.c.reacted_at,
        *_user_columns(users, ""),
    )
    .join(users, users.c.id == comment_reactions.c.user_id)
    .where(comment_reactions.c.subject_id.in_(sa.bindparam("ids", expanding=True)))
)
_REPLIERS = (
    sa.select(
        comment_replies.c.comment_id,
        comment_replies.c.posted_by,
        sa.func.count().label("count"),
        sa.func.max(comment_replies.c.posted_at).label("updated_at"),
        *_user_columns(_poster, "poster_"),
    )
    .outerjoin(_poster, _poster.c.id == comment_replies.c.posted_by)
    .where(comment_replies.c.comment_id.in_(sa.bindparam("ids", expanding=True)))
    .group_by(
        comment_replies.c.comment_id,
        comment_replies.c.posted_by,
        _poster.c.email,
        _poster.c.display_name,
        _poster.c.photo_url,
    )
    .order_by(comment_replies.c.comment_id, sa.func.min(comment_replies.c.posted_at))
)


async def reactions(conn: AsyncConnection, subject_ids: Collection[str]) -> list[sa.RowMapping]:
    """Every reaction to these comments or replies, with its user."""
    if not subject_ids:
        return []
    return list((await conn.execute(_REACTIONS, {"ids": list(subject_ids)})).mappings().all())


async def repliers(conn: AsyncConnection, comment_ids: Collection[str]) -> list[sa.RowMapping]:
    """Per comment and replier: how many replies and the latest one's time (a deleted user's
    replies count under a null id)."""
    if not comment_ids:
        return []
    return list((await conn.execute(_REPLIERS, {"ids": list(comment_ids)})).mappings().all())


def commenters(space_id: str, change_request_id: str | None) -> sa.ColumnElement[bool]:
    """Members who posted a comment or a reply in the thread."""
    thread = sa.select(comments.c.id, comments.c.posted_by).where(
        comments.c.space_id == space_id,
        comments.c.change_request_id.is_(None)
        if change_request_id is None
        else comments.c.change_request_id == change_request_id,
    )
    in_thread = thread.subquery()
    replied = sa.select(comment_replies.c.posted_by).join(
        in_thread, in_thread.c.id == comment_replies.c.comment_id
    )
    posted = sa.select(in_thread.c.posted_by)
    return members.c.user_id.in_(sa.union(posted, replied))
