"""Webhook deliveries, in the worker: the fan-out of each committed event to the hooks that
hear it, queued in jobs of BATCH deliveries whose POSTs overlap; a retry is a job of its own.

An attempt's POST runs in the job's `prepare` step, with no transaction open, through the
SSRF-guarded fetcher (every hop checked, the connection pinned to the checked address, one
deadline); its outcome is then written in a short transaction. Failed attempts are retried
on RETRY_DELAYS (exponential, each with jitter), about a day in all; an event whose every
attempt failed counts against its hook, which DISABLE_AFTER such events in a row disable.

Each POST is signed per Standard Webhooks (`standardwebhooks`): `webhook-id` is the delivery's
id (the same on every retry, so a receiver can drop duplicates), `webhook-timestamp` the
send time, `webhook-signature` `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from standardwebhooks import Webhook

from docshelf.config import Settings
from docshelf.events.event import Event
from docshelf.fetch.client import Fetcher
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id
from docshelf.webhooks import repository
from docshelf.worker.queue import Queued, enqueue, enqueue_many
from docshelf.worker.registry import JobEnv, task

DELIVER = "webhooks.deliver"
# Waits before the 2nd, 3rd... attempt: 11 attempts over ~24 hours.
RETRY_DELAYS: tuple[timedelta, ...] = tuple(
    timedelta(seconds=s) for s in (5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 28800)
)
# Events in a row whose every attempt failed before the hook is disabled.
DISABLE_AFTER = 5
# The error text kept on a delivery.
_MAX_ERROR = 500


def _fetcher(settings: Settings) -> Fetcher:
    return Fetcher.from_settings(settings, timeout=settings.webhook_timeout)


def _delay(attempts: int) -> timedelta:
    """Before attempt `attempts + 1`: the schedule's wait, give or take a quarter, so hooks
    that failed together do not retry together."""
    return RETRY_DELAYS[attempts - 1] * random.uniform(0.75, 1.25)


# Deliveries sent by one job, at once: a batch's POSTs overlap, so a burst of events is sent
# at the pace of the slowest receiver of each batch, not one after another.
BATCH = 16


async def fan_out(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """A delivery for every hook that hears each event, queued in jobs of BATCH deliveries of
    one organization."""
    hooks = await repository.subscribed(conn, (event.organization_id for event in events))
    wanted = [
        (new_id(), hook["id"], event) for event in events for hook in hooks if _hears(hook, event)
    ]
    if not wanted:
        return
    added = await repository.add_deliveries(
        conn, [(d, hook_id, event.id) for d, hook_id, event in wanted], now=utcnow()
    )
    queued: dict[str, list[str]] = {}
    for delivery_id, _, event in wanted:  # in the events' order (RETURNING's is not set)
        if delivery_id in added:
            queued.setdefault(event.organization_id, []).append(delivery_id)
    jobs = [
        Queued({"deliveries": ids[start : start + BATCH], "organization": org}, organization=org)
        for org, ids in queued.items()
        for start in range(0, len(ids), BATCH)
    ]
    await enqueue_many(conn, DELIVER, jobs)


def _hears(hook: Any, event: Event) -> bool:
    if hook["organization_id"] != event.organization_id:
        return False
    # A hook of one space hears that space's events only; one of none hears them all.
    if hook["space_id"] is not None and hook["space_id"] != event.space_id:
        return False
    return not hook["events"] or event.type in hook["events"]


async def send_again(conn: AsyncConnection, org_id: str, delivery_id: str) -> None:
    """A manual redelivery: a new round of attempts, starting now."""
    now = utcnow()
    await repository.update_delivery(
        conn,
        delivery_id,
        {"status": "pending", "attempts": 0, "next_attempt_at": now, "delivered_at": None},
    )
    payload = {"delivery": delivery_id, "organization": org_id}
    await enqueue(conn, DELIVER, payload, organization=org_id)


@dataclass(frozen=True, slots=True)
class Attempt:
    webhook_id: str
    # The delivery's attempts before this one: the row is only updated if still there.
    attempts: int
    # None: the hook is disabled, nothing was sent.
    status_code: int | None = None
    duration_ms: int | None = None
    error: str | None = None
    sent: bool = True

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def signed(delivery_id: str, secret: str, body: bytes, at: datetime) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": delivery_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(delivery_id, at, body.decode()),
    }


def _ids(payload: dict[str, Any]) -> list[str]:
    # One delivery (a retry, a redelivery) or a batch (a fan-out).
    ids = payload.get("deliveries")
    return list(ids) if ids is not None else [payload["delivery"]]


async def _attempt_one(row: Any, fetcher: Fetcher) -> Attempt | None:
    if row is None or row["delivery_status"] != "pending":
        return None
    if not row["active"]:
        return Attempt(
            row["webhook_id"], row["delivery_attempts"], sent=False, error="the webhook is disabled"
        )
    body = orjson.dumps(Event.from_row(row).body())
    # The receiver checks the timestamp against its own clock: the wall clock's, always.
    headers = signed(row["delivery_id"], row["secret"], body, datetime.now(UTC))
    started = time.monotonic()
    try:
        answer = await fetcher.post(row["url"], body, headers)
        status: int | None = answer.status
        error = (
            None if 200 <= answer.status < 300 else f"the receiver answered HTTP {answer.status}"
        )
    except BadRequest as exc:
        status, error = None, exc.message
    duration = round((time.monotonic() - started) * 1000)
    return Attempt(
        row["webhook_id"], row["delivery_attempts"], status, duration, error and error[:_MAX_ERROR]
    )


async def _attempt(
    engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv
) -> dict[str, Attempt | None]:
    """Each delivery's attempt, their POSTs at once, with no transaction open."""
    ids = _ids(payload)
    async with unit_of_work(engine, write=False) as conn:
        rows = await repository.for_sending(conn, ids)
    fetcher = _fetcher(env.settings)
    attempts = await asyncio.gather(*(_attempt_one(rows.get(i), fetcher) for i in ids))
    return dict(zip(ids, attempts, strict=True))


@task(DELIVER, prepare=_attempt, seconds=90)
async def deliver(
    conn: AsyncConnection,
    payload: dict[str, Any],
    attempts: dict[str, Attempt | None],
    *,
    env: JobEnv,
) -> None:
    for delivery_id, attempt in attempts.items():
        if attempt is not None:
            await _record(conn, payload.get("organization"), delivery_id, attempt)


async def _record(
    conn: AsyncConnection, org: str | None, delivery_id: str, attempt: Attempt
) -> None:
    now = utcnow()
    if not attempt.sent:
        await repository.update_delivery(
            conn,
            delivery_id,
            {"status": "failed", "next_attempt_at": None, "error": attempt.error},
            attempts=attempt.attempts,
        )
        return
    attempts = attempt.attempts + 1
    values: dict[str, Any] = {
        "attempts": attempts,
        "status_code": attempt.status_code,
        "duration_ms": attempt.duration_ms,
        "error": attempt.error,
        "last_attempt_at": now,
    }
    hook_id = attempt.webhook_id
    if attempt.delivered:
        values.update(status="delivered", delivered_at=now, next_attempt_at=None)
        if await repository.update_delivery(conn, delivery_id, values, attempts=attempt.attempts):
            await repository.reset_failures(conn, hook_id)
        return
    if attempts <= len(RETRY_DELAYS):
        run_at = now + _delay(attempts)
        values["next_attempt_at"] = run_at
        if await repository.update_delivery(conn, delivery_id, values, attempts=attempt.attempts):
            retry = {"delivery": delivery_id, "organization": org}
            await enqueue(conn, DELIVER, retry, run_at=run_at, organization=org)
        return
    values.update(status="failed", next_attempt_at=None)
    ended = await repository.update_delivery(conn, delivery_id, values, attempts=attempt.attempts)
    if ended and await repository.count_failure(conn, hook_id) >= DISABLE_AFTER:
        await repository.disable(conn, hook_id, now)
