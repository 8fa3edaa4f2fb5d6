"""The durable job runner. Jobs live in the `jobs` table; a runner claims one at a time with a
lease, runs it in its own transaction and retries failures with exponential backoff. A runner
that dies mid-job leaves a lease that expires, and the job is taken again.

The runner is shared by every organization, so it takes turns: the job claimed next is the
oldest due job of the organization served least recently (`job_tenants`), and every job runs
within its kind's time bound. One organization's long queue, or a job that would run for ever,
delays another organization's next job by at most one job's bound."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import traceback
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit import logs
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work, upsert_insert
from docshelf.models import job_tenants, jobs
from docshelf.worker import registry
from docshelf.worker.queue import enqueue

log = logging.getLogger("docshelf.worker")

BACKOFF_BASE = timedelta(seconds=5)
BACKOFF_MAX = timedelta(hours=1)
# How long a runner told to stop lets its current job go on before handing it back.
STOP_GRACE = 20.0
# The fair share's key for the install's own jobs (no organization).
_INSTALL = ""


class JobTimeout(Exception):
    """The job ran past its kind's bound and was stopped."""


def _without_request_id(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != logs.PAYLOAD_KEY}


def backoff(attempts: int) -> timedelta:
    delay: timedelta = BACKOFF_BASE * (2 ** max(attempts - 1, 0))
    return min(delay, BACKOFF_MAX)


def _tenant() -> sa.ColumnElement[str]:
    return sa.func.coalesce(jobs.c.organization_id, _INSTALL)


class JobRunner:
    def __init__(
        self,
        engine: AsyncEngine,
        env: registry.JobEnv,
        *,
        worker_id: str | None = None,
        lease: timedelta = timedelta(minutes=5),
        poll_interval: float = 1.0,
        grace: float = STOP_GRACE,
    ) -> None:
        self.engine = engine
        self.env = env
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease = lease
        self.poll_interval = poll_interval
        self.grace = grace
        self._stop = asyncio.Event()
        self._now = asyncio.Event()

    def _claim_stmt(self) -> sa.Update:
        now = utcnow()
        due = sa.or_(
            sa.and_(jobs.c.status == "queued", jobs.c.run_at <= now),
            sa.and_(jobs.c.status == "running", jobs.c.lease_until < now),
        )
        # The organization served longest ago (never: first) goes next, then the oldest due job
        # within it. SKIP LOCKED lets PostgreSQL workers pass each other; SQLite renders no lock
        # clause and relies on BEGIN IMMEDIATE serialising the claim.
        candidate = (
            sa.select(jobs.c.id)
            .select_from(jobs.outerjoin(job_tenants, job_tenants.c.tenant == _tenant()))
            .where(due)
            .order_by(job_tenants.c.served_at.nulls_first(), jobs.c.run_at, jobs.c.id)
            .limit(1)
            .with_for_update(skip_locked=True, of=jobs)
            .scalar_subquery()
        )
        return (
            sa.update(jobs)
            .where(jobs.c.id == candidate, due)
            .values(
                status="running",
                attempts=jobs.c.attempts + 1,
                lease_until=now + self.lease,
                locked_by=self.worker_id,
            )
            .returning(
                jobs.c.id,
                jobs.c.kind,
                jobs.c.payload,
                jobs.c.attempts,
                jobs.c.max_attempts,
                jobs.c.organization_id,
            )
        )

    async def claim(self) -> sa.RowMapping | None:
        async with unit_of_work(self.engine) as conn:
            job = (await conn.execute(self._claim_stmt())).mappings().first()
            if job is not None:
                served = {"tenant": job["organization_id"] or _INSTALL, "served_at": utcnow()}
                stmt = upsert_insert(conn, job_tenants).values(**served)
                await conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=[job_tenants.c.tenant],
                        set_={"served_at": stmt.excluded.served_at},
                    )
                )
            return job

    async def run_once(self) -> bool:
        """Runs at most one due job; False when none was due."""
        job = await self.claim()
        if job is None:
            return False
        await self._execute(job)
        return True

    async def _execute(self, job: sa.RowMapping) -> None:
        token = logs.request_id.set(job["payload"].get(logs.PAYLOAD_KEY))
        try:
            await self._execute_job(job)
        finally:
            logs.request_id.reset(token)

    def mine(self, job: sa.RowMapping) -> sa.ColumnElement[bool]:
        """The job's row while it still runs under this runner's lock: a deadline or a stop
        that lands as the job's own commit (status done) completes must not queue it again."""
        return sa.and_(
            jobs.c.id == job["id"],
            jobs.c.locked_by == self.worker_id,
            jobs.c.status == "running",
        )

    async def _execute_job(self, job: sa.RowMapping) -> None:
        mine = self.mine(job)
        kind = registry.kind_of(job["kind"])
        try:
            if kind is None:
                raise LookupError(f"no handler for job kind {job['kind']!r}")
            try:
                async with asyncio.timeout(kind.seconds):
                    await self._run(kind, job, mine)
            except TimeoutError:
                raise JobTimeout(
                    f"the job ran longer than {kind.seconds:g} s and was stopped"
                ) from None
        except asyncio.CancelledError:
            # The runner is stopping: the job goes back to the queue as it was, to be taken
            # again at once by the next runner, not after its lease.
            await self._hand_back(mine)
            raise
        except Exception as exc:
            await self._failed(job, kind, mine, exc)

    async def _run(self, kind: registry.Kind, job: sa.RowMapping, mine: Any) -> None:
        payload = _without_request_id(job["payload"])
        args: tuple[Any, ...] = ()
        if kind.prepare is not None:
            args = (await kind.prepare(self.engine, payload, env=self.env),)
        async with unit_of_work(self.engine) as conn:
            await kind.handler(conn, payload, *args, env=self.env)
            await conn.execute(
                sa.update(jobs)
                .where(mine)
                .values(status="done", finished_at=utcnow(), lease_until=None, dedupe_key=None)
            )

    async def _hand_back(self, mine: Any) -> None:
        try:
            async with unit_of_work(self.engine) as conn:
                await conn.execute(
                    sa.update(jobs)
                    .where(mine)
                    .values(
                        status="queued",
                        attempts=jobs.c.attempts - 1,
                        run_at=utcnow(),
                        lease_until=None,
                        locked_by=None,
                    )
                )
        except Exception:
            log.warning("could not hand a job back; its lease will free it", exc_info=True)

    async def _failed(
        self, job: sa.RowMapping, kind: registry.Kind | None, mine: Any, exc: Exception
    ) -> None:
        final = job["attempts"] >= job["max_attempts"]
        log.warning(
            "job %s (%s) failed on attempt %s: %s", job["id"], job["kind"], job["attempts"], exc
        )
        values: dict[str, Any] = {
            "last_error": "".join(traceback.format_exception_only(exc)).strip()[:4000],
            "lease_until": None,
            "locked_by": None,
        }
        if final:
            values.update(status="failed", finished_at=utcnow(), dedupe_key=None)
        else:
            values.update(status="queued", run_at=utcnow() + backoff(job["attempts"]))
        give_up = kind.on_give_up if final and kind is not None else None
        if give_up is not None:
            try:
                async with unit_of_work(self.engine) as conn:
                    await give_up(conn, _without_request_id(job["payload"]), env=self.env)
                    await conn.execute(sa.update(jobs).where(mine).values(**values))
                return
            except Exception as cleanup_exc:
                log.warning("job %s (%s): cleanup failed: %s", job["id"], job["kind"], cleanup_exc)
        async with unit_of_work(self.engine) as conn:
            await conn.execute(sa.update(jobs).where(mine).values(**values))

    async def ensure_schedules(self, *, starting: bool = False) -> None:
        async with unit_of_work(self.engine) as conn:
            for schedule in registry.schedules():
                # The next run is one period away (a kind's `first` when the runner starts);
                # the dedupe key keeps one pending at a time, so a restart brings none closer.
                wait = schedule.every
                if starting and schedule.first is not None:
                    wait = schedule.first
                await enqueue(
                    conn,
                    schedule.kind,
                    {},
                    run_at=utcnow() + wait,
                    dedupe_key=registry.schedule_key(schedule.kind),
                )

    async def drain(self, max_jobs: int = 1000) -> int:
        """Runs due jobs until none is left (tests and one-shot maintenance)."""
        done = 0
        while done < max_jobs and await self.run_once():
            done += 1
        return done

    def stop(self, *, now: bool = False) -> None:
        """Stops claiming jobs. The current job may finish within the grace period unless
        `now`; past it, it is cancelled and handed back to the queue."""
        self._stop.set()
        if now:
            self._now.set()

    async def _loop(self) -> None:
        starting = True
        while not self._stop.is_set():
            try:
                await self.ensure_schedules(starting=starting)
                starting = False
                while not self._stop.is_set() and await self.run_once():
                    pass
            except Exception:
                # The database may be briefly unreachable; the runner outlives that.
                log.exception("job runner loop error")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.poll_interval)

    async def run_forever(self) -> None:
        log.info("job runner %s started", self.worker_id)
        work = asyncio.create_task(self._loop())
        stopping = asyncio.create_task(self._stop.wait())
        hurry = asyncio.create_task(self._now.wait())
        try:
            await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                await asyncio.wait({work, hurry}, timeout=self.grace, return_when="FIRST_COMPLETED")
            if not work.done():
                work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
        finally:
            for task in (work, stopping, hurry):
                task.cancel()
        log.info("job runner %s stopped", self.worker_id)
