from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import (
    change_request_reviewers,
    change_request_reviews,
    change_requests,
    organizations,
    revisions,
    spaces,
    users,
)

reviews = change_request_reviews
reviewers = change_request_reviewers

_REVIEWER = users.alias("reviewer")
_REQUESTER = users.alias("requester")


def _user_columns(alias: sa.FromClause, prefix: str) -> list[sa.Label[Any]]:
    return [
        alias.c.id.label(f"{prefix}id"),
        alias.c.email.label(f"{prefix}email"),
        alias.c.display_name.label(f"{prefix}display_name"),
        alias.c.photo_url.label(f"{prefix}photo_url"),
    ]


# Outdated: superseded by the reviewer's newer review or a new request for their review, or made
# on a revision the change request has since moved past. Computed where read, so an edit to the
# change request never has to touch its reviews.
OUTDATED = sa.or_(reviews.c.superseded, reviews.c.revision_id != change_requests.c.revision_id)


def reviews_of(cr_id: str) -> sa.Select[Any]:
    return (
        sa.select(
            *reviews.c,
            OUTDATED.label("outdated"),
            change_requests.c.space_id,
            *_user_columns(_REVIEWER, "rv_"),
            *_user_columns(_REQUESTER, "rq_"),
        )
        .join(change_requests, change_requests.c.id == reviews.c.change_request_id)
        .outerjoin(_REVIEWER, _REVIEWER.c.id == reviews.c.reviewer_id)
        .outerjoin(_REQUESTER, _REQUESTER.c.id == reviews.c.requested_by)
        .where(reviews.c.change_request_id == cr_id)
    )


async def get_review(conn: AsyncConnection, cr_id: str, review_id: str) -> sa.RowMapping | None:
    stmt = reviews_of(cr_id).where(reviews.c.id == review_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert_review(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(reviews).values(**values))


async def supersede(conn: AsyncConnection, cr_id: str, reviewer_ids: Collection[str]) -> None:
    """The reviewers' standing reviews give way to what comes next (a newer review, a new
    request); their `updatedAt` stays when they were written."""
    await conn.execute(
        sa.update(reviews)
        .where(
            reviews.c.change_request_id == cr_id,
            reviews.c.reviewer_id.in_(list(reviewer_ids)),
            reviews.c.superseded.is_(False),
        )
        .values(superseded=True)
    )


async def standing_reviews(conn: AsyncConnection, cr_id: str) -> list[sa.RowMapping]:
    """What the merge rules read: every review's reviewer, status and whether it is outdated."""
    stmt = (
        sa.select(reviews.c.reviewer_id, reviews.c.status, OUTDATED.label("outdated"))
        .join(change_requests, change_requests.c.id == reviews.c.change_request_id)
        .where(reviews.c.change_request_id == cr_id)
    )
    return list((await conn.execute(stmt)).mappings().all())


def reviewers_of(cr_id: str) -> sa.Select[Any]:
    return (
        sa.select(
            *reviewers.c,
            *_user_columns(_REVIEWER, "u_"),
            *_user_columns(_REQUESTER, "rq_"),
        )
        .join(_REVIEWER, _REVIEWER.c.id == reviewers.c.user_id)
        .outerjoin(_REQUESTER, _REQUESTER.c.id == reviewers.c.requested_by)
        .where(reviewers.c.change_request_id == cr_id)
    )


async def requested(conn: AsyncConnection, cr_id: str, user_id: str) -> sa.RowMapping | None:
    stmt = reviewers_of(cr_id).where(reviewers.c.user_id == user_id)
    return (await conn.execute(stmt)).mappings().first()


async def put_requests(
    conn: AsyncConnection,
    cr_id: str,
    user_ids: Collection[str],
    *,
    requested_by: str,
    revision_id: str,
    now: datetime,
) -> None:
    """Asks the users for a review; asking again renews the request (who, when, revision)."""
    rows = [
        {
            "change_request_id": cr_id,
            "user_id": uid,
            "requested_by": requested_by,
            "revision_id": revision_id,
            "created_at": now,
        }
        for uid in user_ids
    ]
    stmt = upsert_insert(conn, reviewers)
    stmt = stmt.on_conflict_do_update(
        index_elements=[reviewers.c.change_request_id, reviewers.c.user_id],
        set_={
            "requested_by": stmt.excluded.requested_by,
            "revision_id": stmt.excluded.revision_id,
            "created_at": stmt.excluded.created_at,
        },
    )
    await conn.execute(stmt, rows)


async def requests_of(
    conn: AsyncConnection, cr_id: str, user_ids: Collection[str]
) -> list[sa.RowMapping]:
    stmt = reviewers_of(cr_id).where(reviewers.c.user_id.in_(list(user_ids)))
    return list((await conn.execute(stmt)).mappings().all())


async def remove_request(conn: AsyncConnection, cr_id: str, user_id: str) -> bool:
    result = await conn.execute(
        sa.delete(reviewers).where(
            reviewers.c.change_request_id == cr_id, reviewers.c.user_id == user_id
        )
    )
    return bool(result.rowcount)


def contributors_of(cr_id: str) -> sa.Select[Any]:
    """Authors of the change request's edits, with how many and the latest (merges and updates
    from main are not contributions)."""
    edits = (
        sa.select(
            revisions.c.author_id,
            sa.func.count().label("count"),
            sa.func.max(revisions.c.created_at).label("updated_at"),
        )
        .where(revisions.c.change_request_id == cr_id, revisions.c.type == "edits")
        .group_by(revisions.c.author_id)
        .subquery()
    )
    return sa.select(edits.c.count, edits.c.updated_at, *_user_columns(users, "user_")).join(
        users, users.c.id == edits.c.author_id
    )


async def merge_rules(conn: AsyncConnection, space_id: str) -> tuple[Any, Any]:
    """The space's and its organization's merge rule configurations, in one read."""
    row = (
        await conn.execute(
            sa.select(spaces.c.merge_rules, organizations.c.merge_rules.label("org_rules"))
            .join(organizations, organizations.c.id == spaces.c.organization_id)
            .where(spaces.c.id == space_id)
        )
    ).one()
    return row.merge_rules, row.org_rules


async def contributors(conn: AsyncConnection, cr_id: str) -> list[sa.RowMapping]:
    return list((await conn.execute(contributors_of(cr_id))).mappings().all())
