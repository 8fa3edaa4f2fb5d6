from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import events, spaces, webhook_deliveries, webhooks


async def insert(conn: AsyncConnection, **values: Any) -> None:
    await conn.execute(sa.insert(webhooks).values(**values))


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(webhooks).where(webhooks.c.organization_id == org_id)


async def get(conn: AsyncConnection, org_id: str, webhook_id: str) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(webhooks.c.id == webhook_id)
    return (await conn.execute(stmt)).mappings().first()


async def update(conn: AsyncConnection, webhook_id: str, values: dict[str, Any]) -> None:
    await conn.execute(sa.update(webhooks).where(webhooks.c.id == webhook_id).values(**values))


async def delete(conn: AsyncConnection, webhook_id: str) -> None:
    await conn.execute(sa.delete(webhooks).where(webhooks.c.id == webhook_id))


async def space_in_organization(conn: AsyncConnection, org_id: str, space_id: str) -> bool:
    stmt = sa.select(spaces.c.id).where(
        spaces.c.id == space_id,
        spaces.c.organization_id == org_id,
        spaces.c.deleted_at.is_(None),
    )
    return (await conn.execute(stmt)).first() is not None


def deliveries_of(webhook_id: str) -> sa.Select[Any]:
    return (
        sa.select(webhook_deliveries, events.c.type.label("event_type"))
        .join(events, events.c.id == webhook_deliveries.c.event_id)
        .where(webhook_deliveries.c.webhook_id == webhook_id)
    )


async def get_delivery(
    conn: AsyncConnection, webhook_id: str, delivery_id: str
) -> sa.RowMapping | None:
    stmt = deliveries_of(webhook_id).where(webhook_deliveries.c.id == delivery_id)
    return (await conn.execute(stmt)).mappings().first()


async def update_delivery(
    conn: AsyncConnection, delivery_id: str, values: dict[str, Any], *, attempts: int | None = None
) -> bool:
    """With `attempts`: only if the delivery is still pending at that attempt (a redelivery or
    another runner may have moved it on meanwhile)."""
    stmt = sa.update(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id)
    if attempts is not None:
        stmt = stmt.where(
            webhook_deliveries.c.status == "pending", webhook_deliveries.c.attempts == attempts
        )
    result = await conn.execute(stmt.values(**values))
    return bool(result.rowcount)


# -- the worker's side --


async def subscribed(conn: AsyncConnection, org_ids: Iterable[str]) -> Sequence[Any]:
    """The active hooks of these organizations, with what they hear (their events, their
    space or none for every space)."""
    stmt = sa.select(
        webhooks.c.id, webhooks.c.organization_id, webhooks.c.space_id, webhooks.c.events
    ).where(webhooks.c.organization_id.in_(sorted(set(org_ids))), webhooks.c.active == sa.true())
    return (await conn.execute(stmt)).mappings().all()


# Rows of one INSERT at most: 7 parameters each, well under both engines' limits (32,766).
_ROWS_PER_INSERT = 1000


async def add_deliveries(
    conn: AsyncConnection, deliveries: Sequence[tuple[str, str, str]], *, now: datetime
) -> set[str]:
    """Pending deliveries (id, hook, event), in one statement per _ROWS_PER_INSERT; the ids of
    those added (a hook that already has a delivery of the event gets none: a dispatch run
    again)."""
    added: set[str] = set()
    for start in range(0, len(deliveries), _ROWS_PER_INSERT):
        rows = [
            {
                "id": delivery_id,
                "webhook_id": webhook_id,
                "event_id": event_id,
                "status": "pending",
                "attempts": 0,
                "created_at": now,
                "next_attempt_at": now,
            }
            for delivery_id, webhook_id, event_id in deliveries[start : start + _ROWS_PER_INSERT]
        ]
        stmt = (
            upsert_insert(conn, webhook_deliveries)
            .values(rows)
            .on_conflict_do_nothing()
            .returning(webhook_deliveries.c.id)
        )
        added.update((await conn.execute(stmt)).scalars())
    return added


async def for_sending(conn: AsyncConnection, delivery_ids: Sequence[str]) -> dict[str, Any]:
    """The deliveries, each with its hook's address and secret and its event, by id."""
    stmt = (
        sa.select(
            webhook_deliveries.c.id.label("delivery_id"),
            webhook_deliveries.c.status.label("delivery_status"),
            webhook_deliveries.c.attempts.label("delivery_attempts"),
            webhooks.c.id.label("webhook_id"),
            webhooks.c.url,
            webhooks.c.secret,
            webhooks.c.active,
            events,
        )
        .select_from(
            webhook_deliveries.join(
                webhooks, webhooks.c.id == webhook_deliveries.c.webhook_id
            ).join(events, events.c.id == webhook_deliveries.c.event_id)
        )
        .where(webhook_deliveries.c.id.in_(delivery_ids))
    )
    return {row["delivery_id"]: row for row in (await conn.execute(stmt)).mappings()}


async def reset_failures(conn: AsyncConnection, webhook_id: str) -> None:
    # Written only when there is a run to end: most deliveries succeed after a success.
    await conn.execute(
        sa.update(webhooks)
        .where(webhooks.c.id == webhook_id, webhooks.c.failures != 0)
        .values(failures=0)
    )


async def count_failure(conn: AsyncConnection, webhook_id: str) -> int:
    """One more event whose every attempt failed; the hook's run of them."""
    stmt = (
        sa.update(webhooks)
        .where(webhooks.c.id == webhook_id)
        .values(failures=webhooks.c.failures + 1)
        .returning(webhooks.c.failures)
    )
    return int((await conn.execute(stmt)).scalar() or 0)


async def disable(conn: AsyncConnection, webhook_id: str, now: datetime) -> None:
    await update(conn, webhook_id, {"active": False, "disabled_at": now, "updated_at": now})
    # What was still waiting is not sent (redelivery sends it after re-enabling).
    await conn.execute(
        sa.update(webhook_deliveries)
        .where(
            webhook_deliveries.c.webhook_id == webhook_id,
            webhook_deliveries.c.status == "pending",
        )
        .values(status="failed", next_attempt_at=None, error="the webhook was disabled")
    )
