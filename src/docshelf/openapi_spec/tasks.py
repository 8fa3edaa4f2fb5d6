"""The OpenAPI spec jobs: processing a source into a version, and the refresh of URL sources."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.events import event, outbox
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.kit.ids import new_id
from docshelf.openapi_spec import processing, repository
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

PROCESS = "openapi.process"
REFRESH = "openapi.refresh"
# How often the sweep looks for URL sources due (DOCSHELF_OPENAPI_REFRESH_HOURS after their last
# processing): the period is fixed when the job kinds are registered, the interval is a setting.
REFRESH_SWEEP = timedelta(minutes=10)
REFRESH_BATCH = 100


async def queue_processing(
    conn: AsyncConnection, spec_id: str, generation: int, org_id: str
) -> None:
    """In the caller's transaction: the job exists only if the change of source commits."""
    await enqueue(conn, PROCESS, {"spec": spec_id, "generation": generation}, organization=org_id)


async def _prepare(
    engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv
) -> processing.Outcome | None:
    # A short transaction of its own, so the spec shows `progress` while the work runs.
    async with unit_of_work(engine) as conn:
        source = await repository.start(conn, payload["spec"], payload["generation"])
    if source is None:
        return None
    return await processing.process(env.settings, source["source_url"], source["source_text"])


async def _give_up(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    if await repository.lock_current(conn, payload["spec"], payload["generation"]):
        await repository.finish(
            conn,
            payload["spec"],
            now=utcnow(),
            error_code="PARSE_ERROR",
            errors=[{"message": "Processing failed repeatedly and was given up"}],
            error_count=1,
        )


@task(PROCESS, prepare=_prepare, on_give_up=_give_up)
async def process(
    conn: AsyncConnection, payload: dict[str, Any], outcome: Any, *, env: JobEnv
) -> None:
    spec_id = payload["spec"]
    if outcome is None or not await repository.lock_current(conn, spec_id, payload["generation"]):
        return  # deleted, or its source changed meanwhile: the newer job records that one
    now = utcnow()
    if outcome.digest is None or outcome.data is None:
        await repository.finish(
            conn,
            spec_id,
            now=now,
            error_code=outcome.error_code,
            errors=outcome.errors,
            error_count=outcome.error_count,
        )
        await _processed(conn, spec_id, {"result": "failed", "errorCode": outcome.error_code})
        return
    latest = await repository.latest_version(conn, spec_id)
    version_id = None
    if latest is None or latest["digest"] != outcome.digest:
        # A new version only when the content changed: re-fetching an unchanged source (the
        # schedule, a PUT of the same URL) adds nothing.
        version_id = new_id()
        spec = await repository.get(conn, spec_id)
        assert spec is not None
        await repository.add_version(
            conn,
            spec_id,
            version_id=version_id,
            number=1 if latest is None else latest["number"] + 1,
            digest=outcome.digest,
            data=outcome.data,
            source_url=spec["source_url"],
            now=now,
        )
    await repository.finish(conn, spec_id, now=now, last_version_id=version_id)
    await _processed(conn, spec_id, {"result": "processed", "versionId": version_id})


async def _processed(conn: AsyncConnection, spec_id: str, data: dict[str, Any]) -> None:
    """Recorded with the outcome; the work is the install's own (no actor): whoever changed the
    source was recorded when they did."""
    spec = await repository.get(conn, spec_id)
    if spec is not None:
        data = {"specId": spec_id, "slug": spec["slug"], **data}
        await outbox.record(
            conn, event.OPENAPI_SPEC_PROCESSED, organization=spec["organization_id"], data=data
        )


@task(REFRESH, every=REFRESH_SWEEP)
async def refresh(conn: AsyncConnection, _payload: dict[str, Any], *, env: JobEnv) -> None:
    """Queues the processing of URL sources last processed more than the interval ago."""
    interval = timedelta(hours=env.settings.openapi_refresh_hours)
    due = await repository.due_for_refresh(conn, utcnow() - interval, REFRESH_BATCH)
    for spec_id, generation, org_id in due:
        await queue_processing(conn, spec_id, generation, org_id)
