"""The event seam: services record what happened in their own transaction; the worker hands
each committed event to the subscribers (webhooks) afterwards.

An event row and its dispatch job are written by the transaction that makes the change, so a
rolled-back change leaves neither, and a committed one is dispatched even if the process dies
right after the commit (the job is durable). Subscribers register here from above
(`subscribe`), so this package imports no domain package."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.events import repository
from docshelf.events.event import TYPES, Event
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx
from docshelf.kit.ids import new_id
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

Subscriber = Callable[[AsyncConnection, Sequence[Event]], Awaitable[None]]

DISPATCH = "events.dispatch"
# Events handed out per dispatch job; more left: the job queues the next.
_BATCH = 200

_subscribers: list[Subscriber] = []


def subscribe(fn: Subscriber) -> Subscriber:
    """`fn(conn, events)` runs in the dispatch job's transaction, with the committed events of
    one batch, oldest first (again if the job is retried: what it writes must be idempotent per
    event)."""
    if fn not in _subscribers:
        _subscribers.append(fn)
    return fn


async def record(
    conn: AsyncConnection,
    type: str,
    *,
    organization: str | None = None,
    space: str | None = None,
    actor_id: str | None = None,
    actor_label: str | None = None,
    data: dict[str, Any] | None = None,
) -> str:
    """Writes the event in the caller's transaction. `organization`, or `space` (whose
    organization is read in the same statement), says whose event it is."""
    if type not in TYPES:
        raise ValueError(f"unknown event type {type!r}")
    if organization is None and space is None:
        raise ValueError("an event belongs to an organization or a space")
    event_id = new_id()
    await repository.insert(
        conn,
        id=event_id,
        type=type,
        organization=organization,
        space=space,
        actor_id=actor_id,
        actor_label=actor_label,
        data=data or {},
        now=utcnow(),
    )
    # One dispatch pending at a time serves every event committed before it runs.
    await enqueue(conn, DISPATCH, {}, dedupe_key=DISPATCH)
    return event_id


async def emit(
    ctx: Ctx,
    type: str,
    *,
    organization: str | None = None,
    space: str | None = None,
    data: dict[str, Any] | None = None,
) -> str:
    """`record` for a service acting for the request's caller."""
    return await record(
        ctx.conn,
        type,
        organization=organization,
        space=space,
        actor_id=ctx.actor.user_id,
        actor_label=ctx.actor.display_name,
        data=data,
    )


# The schedule is a backstop: on PostgreSQL an event committed while a dispatch runs, after its
# read, finds that dispatch's key still taken and queues none (SQLite serialises the two).
@task(DISPATCH, every=timedelta(minutes=5))
async def dispatch(conn: AsyncConnection, _payload: dict[str, Any], *, env: JobEnv) -> None:
    """Hands every undispatched event to the subscribers, oldest first."""
    rows = await repository.undispatched(conn, _BATCH)
    events = [Event.from_row(row) for row in rows]
    if events:
        for subscriber in _subscribers:
            await subscriber(conn, events)
    await repository.mark_dispatched(conn, [row["id"] for row in rows])
    if len(rows) == _BATCH:
        # More left: the next batch at once (this job still holds the dedupe key).
        await enqueue(conn, DISPATCH, {})


@task("events.prune", every=timedelta(hours=1))
async def prune(conn: AsyncConnection, _payload: dict[str, Any], *, env: JobEnv) -> None:
    """Events past the audit retention leave the log (their deliveries with them)."""
    days = env.settings.audit_retention_days
    await repository.prune(conn, utcnow() - timedelta(days=days))
