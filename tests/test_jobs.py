"""The durable job runner, against the real database."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.config import Settings
from docshelf.kit import instance, offload
from docshelf.kit.clock import clock
from docshelf.kit.db import create_engine, unit_of_work
from docshelf.models import jobs
from docshelf.worker import registry
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.offload_work import sleep_then

_failures_left: dict[str, int] = {}


@task("test.record")
async def record(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    """Writes a marker row; fails first as often as the test asked."""
    key = payload["key"]
    if _failures_left.get(key, 0) > 0:
        _failures_left[key] -= 1
        raise RuntimeError(f"planned failure for {key}")
    await instance.claim(conn, key, "done")


async def _job(db: AsyncEngine, job_id: str) -> sa.RowMapping:
    async with db.connect() as conn:
        row = (await conn.execute(sa.select(jobs).where(jobs.c.id == job_id))).mappings().one()
    return row


async def _marker(db: AsyncEngine, key: str) -> str | None:
    async with db.connect() as conn:
        return await instance.get(conn, key)


async def test_job_survives_restart(db: AsyncEngine, settings: Settings, job_env: JobEnv) -> None:
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.record", {"key": "restart"})
    assert job_id is not None
    await db.dispose()  # the process that enqueued it is gone

    engine = create_engine(settings)
    try:
        runner = JobRunner(engine, job_env)
        assert await runner.run_once() is True
        assert await runner.run_once() is False
    finally:
        await engine.dispose()
    assert await _marker(db, "restart") == "done"
    row = await _job(db, job_id)
    assert (row["status"], row["attempts"], row["dedupe_key"]) == ("done", 1, None)


async def test_job_of_a_crashed_runner_is_taken_again_after_its_lease(
    db: AsyncEngine, job_env: JobEnv
) -> None:
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.record", {"key": "crash"})
    crashed = JobRunner(db, job_env, worker_id="crashed", lease=timedelta(minutes=5))
    assert await crashed.claim() is not None  # claimed, then the process died
    survivor = JobRunner(db, job_env, worker_id="survivor")
    assert await survivor.run_once() is False  # the lease still holds
    clock.advance(timedelta(minutes=6))
    assert await survivor.run_once() is True
    row = await _job(db, job_id)
    assert (row["status"], row["attempts"], row["locked_by"]) == ("done", 2, "survivor")


async def test_failures_retry_with_backoff_then_fail(db: AsyncEngine, job_env: JobEnv) -> None:
    _failures_left["retry"] = 2
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.record", {"key": "retry"}, max_attempts=5)
    runner = JobRunner(db, job_env)
    assert await runner.run_once() is True
    row = await _job(db, job_id)
    assert (row["status"], row["attempts"]) == ("queued", 1)
    assert row["last_error"] == "RuntimeError: planned failure for retry"
    assert row["run_at"] == clock.now() + timedelta(seconds=5)
    assert await runner.run_once() is False  # not due yet
    clock.advance(timedelta(seconds=5))
    assert await runner.run_once() is True
    assert (await _job(db, job_id))["run_at"] == clock.now() + timedelta(seconds=10)
    clock.advance(timedelta(seconds=10))
    assert await runner.run_once() is True
    assert (await _job(db, job_id))["status"] == "done"
    assert await _marker(db, "retry") == "done"

    _failures_left["doomed"] = 99
    async with unit_of_work(db) as conn:
        doomed = await enqueue(conn, "test.record", {"key": "doomed"}, max_attempts=2)
    assert doomed is not None
    await runner.run_once()
    clock.advance(timedelta(seconds=5))
    await runner.run_once()
    row = await _job(db, doomed)
    assert (row["status"], row["attempts"]) == ("failed", 2)
    assert await _marker(db, "doomed") is None


async def test_enqueue_is_part_of_the_callers_transaction(db: AsyncEngine, job_env: JobEnv) -> None:
    try:
        async with unit_of_work(db) as conn:
            await enqueue(conn, "test.record", {"key": "rolled-back"})
            raise RuntimeError("request failed")
    except RuntimeError:
        pass
    assert await JobRunner(db, job_env).run_once() is False


async def test_dedupe_key_allows_one_pending_job(db: AsyncEngine, job_env: JobEnv) -> None:
    async with unit_of_work(db) as conn:
        first = await enqueue(conn, "test.record", {"key": "d1"}, dedupe_key="once")
        second = await enqueue(conn, "test.record", {"key": "d2"}, dedupe_key="once")
    assert first is not None and second is None
    await JobRunner(db, job_env).drain()
    async with unit_of_work(db) as conn:
        assert await enqueue(conn, "test.record", {"key": "d3"}, dedupe_key="once") is not None


async def test_schedules_and_maintenance_purge(db: AsyncEngine, job_env: JobEnv) -> None:
    from docshelf.worker import tasks  # noqa: F401

    finished = {"kind": "test.old", "payload": {}, "status": "done"}
    async with unit_of_work(db) as conn:
        for job_id, age in (("old", timedelta(days=8)), ("fresh", timedelta(days=6))):
            at = clock.now() - age
            await conn.execute(
                sa.insert(jobs).values(
                    id=job_id, run_at=at, created_at=at, finished_at=at, **finished
                )
            )
    runner = JobRunner(db, job_env)
    await runner.ensure_schedules()
    await runner.ensure_schedules()  # idempotent
    assert await runner.drain() == 0  # the first run is one period away
    clock.advance(timedelta(minutes=10))
    # The purge, and any other kind scheduled every 10 minutes (the OpenAPI refresh sweep).
    due = [s for s in registry.schedules() if s.every <= timedelta(minutes=10)]
    assert await runner.drain() == len(due)
    await runner.ensure_schedules()
    assert await runner.drain() == 0  # and the next one too
    async with db.connect() as conn:
        kinds = (
            await conn.execute(
                sa.select(jobs.c.kind, jobs.c.status).where(
                    jobs.c.kind.in_(("maintenance.purge", "test.old"))
                )
            )
        ).all()
    # The job finished 8 days ago is gone, the one finished 6 days ago stays (a week's retention).
    assert sorted(kinds) == [
        ("maintenance.purge", "done"),
        ("maintenance.purge", "queued"),
        ("test.old", "done"),
    ]
    async with db.connect() as conn:
        left = (await conn.execute(sa.select(jobs.c.id).where(jobs.c.kind == "test.old"))).all()
    assert [r.id for r in left] == ["fresh"]


async def test_a_starting_runner_queues_a_kind_s_first_run_closer(
    db: AsyncEngine, job_env: JobEnv
) -> None:
    from docshelf.content.listing import stored as stored_listing
    from docshelf.worker import tasks  # noqa: F401

    async def pending() -> dict[str, Any]:
        async with db.connect() as conn:
            rows = await conn.execute(
                sa.select(jobs.c.kind, jobs.c.run_at).where(jobs.c.status == "queued")
            )
            return {kind: run_at - clock.now() for kind, run_at in rows}

    runner = JobRunner(db, job_env)
    await runner.ensure_schedules(starting=True)
    await runner.ensure_schedules(starting=True)  # a restart brings none closer
    await runner.ensure_schedules()
    assert await pending() == {
        s.kind: s.first if s.first is not None else s.every for s in registry.schedules()
    }
    assert (await pending())[stored_listing.SWEEP_LISTINGS] == timedelta(minutes=1)
    clock.advance(timedelta(minutes=1))
    assert await runner.drain() == 1  # the sweep (no large space: it queues nothing)
    await runner.ensure_schedules()
    assert (await pending())[stored_listing.SWEEP_LISTINGS] == timedelta(hours=6)


# -- fair shares, time bounds, stopping --------------------------------------------------------

_order: list[str] = []
# The events of the running test (an event belongs to the loop that first waits on it).
_hold: dict[str, asyncio.Event] = {}


@task("test.order")
async def in_order(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    _order.append(payload["name"])


async def test_the_runner_takes_turns_between_organizations(
    db: AsyncEngine, job_env: JobEnv
) -> None:
    """Organization A queued three jobs before B queued one and the install one of its own:
    B's and the install's are taken after A's first, not after all of A's."""
    _order.clear()
    for name, org in (("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("install", None)):
        async with unit_of_work(db) as conn:
            await enqueue(conn, "test.order", {"name": name}, organization=org)
        clock.advance(timedelta(seconds=1))
    runner = JobRunner(db, job_env)
    while await runner.run_once():
        clock.advance(timedelta(seconds=1))
    assert _order == ["a1", "b1", "install", "a2", "a3"]
    # B, served longest ago now, goes ahead of A's next job however old A's is.
    _order.clear()
    for name, org in (("a4", "A"), ("b2", "B")):
        async with unit_of_work(db) as conn:
            await enqueue(conn, "test.order", {"name": name}, organization=org)
        clock.advance(timedelta(seconds=1))
    await runner.drain()
    assert _order == ["b2", "a4"]


async def test_a_space_s_job_is_its_organization_s(
    db: AsyncEngine, client: httpx.AsyncClient
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    async with unit_of_work(db) as conn:
        mine = await enqueue(conn, "test.order", {"name": "s"}, space=space["id"])
        install = await enqueue(conn, "test.order", {"name": "i"})
    assert mine is not None and install is not None
    assert (
        (await _job(db, mine))["organization_id"],
        (await _job(db, install))["organization_id"],
    ) == (
        org_id,
        None,
    )


async def _forever(engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv) -> None:
    # Work offloaded to a lane that would hold its only worker for an hour.
    await offload.run(sleep_then, 3600.0, "never", seconds=3600, lane="convert")


@task("test.forever", prepare=_forever, seconds=1)
async def forever(
    conn: AsyncConnection, payload: dict[str, Any], _prepared: Any, *, env: JobEnv
) -> None:
    raise AssertionError("never reached")


async def test_a_job_past_its_bound_is_stopped_and_frees_its_lane(
    db: AsyncEngine, job_env: JobEnv
) -> None:
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.forever", {}, max_attempts=2)
    assert job_id is not None
    try:
        # The bound is the kind's; wait_for only keeps a regression from hanging the suite.
        assert await asyncio.wait_for(JobRunner(db, job_env).run_once(), 120) is True
        row = await _job(db, job_id)
        assert (row["status"], row["attempts"], row["last_error"]) == (
            "queued",
            1,
            "docshelf.worker.runner.JobTimeout: the job ran longer than 1 s and was stopped",
        )
        # Its offloaded work was killed with it: the lane's one worker is free again.
        free = offload.run(sleep_then, 0.0, "free", seconds=30, lane="convert")
        assert await asyncio.wait_for(free, 120) == "free"
    finally:
        offload.shutdown()


@task("test.hold")
async def hold(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    _hold["started"].set()
    await _hold["release"].wait()
    await instance.claim(conn, payload["key"], "done")


@pytest.mark.parametrize("now", [False, True], ids=["within-grace", "now"])
async def test_a_stopping_runner_finishes_or_hands_back_its_job(
    db: AsyncEngine, now: bool, job_env: JobEnv
) -> None:
    _hold.update(started=asyncio.Event(), release=asyncio.Event())
    key = f"hold-{now}"
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.hold", {"key": key})
    runner = JobRunner(db, job_env, poll_interval=0.05, grace=3600)
    running = asyncio.create_task(runner.run_forever())
    await asyncio.wait_for(_hold["started"].wait(), 60)
    runner.stop(now=now)
    if not now:
        _hold["release"].set()  # the job finishes within the grace, and the runner then stops
    await asyncio.wait_for(running, 60)
    row = await _job(db, job_id)
    if now:
        # Handed back as it was: due at once, its attempt not counted, no lease to wait out.
        assert (row["status"], row["attempts"], row["lease_until"], row["locked_by"]) == (
            "queued",
            0,
            None,
            None,
        )
        assert row["run_at"] == clock.now() and await _marker(db, key) is None
        _hold["release"].set()
        assert await JobRunner(db, job_env).run_once() is True
    assert (await _job(db, job_id))["status"] == "done"
    assert await _marker(db, key) == "done"


async def test_a_finished_job_is_never_queued_again(db: AsyncEngine, job_env: JobEnv) -> None:
    """A deadline or a stop that lands as a job's commit completes hands back or fails a job
    that is already done: neither may touch it."""
    async with unit_of_work(db) as conn:
        job_id = await enqueue(conn, "test.record", {"key": "finished-once"})
    runner = JobRunner(db, job_env)
    job = await runner.claim()
    assert job is not None and job["id"] == job_id
    await runner._execute(job)
    assert (await _job(db, job_id))["status"] == "done"
    await runner._hand_back(runner.mine(job))
    await runner._failed(job, registry.kind_of("test.record"), runner.mine(job), RuntimeError("x"))
    row = await _job(db, job_id)
    assert (row["status"], row["attempts"]) == ("done", 1)
