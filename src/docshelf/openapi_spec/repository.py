from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import openapi_spec_contents, openapi_spec_versions, openapi_specs

_NO_ERRORS: dict[str, Any] = {"items": [], "count": 0}
# Everything but the source text, which only the processing job reads.
SPEC_COLUMNS = [c for c in openapi_specs.c if c.name != "source_text"]


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(*SPEC_COLUMNS).where(openapi_specs.c.organization_id == org_id)


async def get_by_slug(conn: AsyncConnection, org_id: str, slug: str) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(openapi_specs.c.slug == slug)
    return (await conn.execute(stmt)).mappings().first()


async def get(conn: AsyncConnection, spec_id: str) -> sa.RowMapping | None:
    stmt = sa.select(*SPEC_COLUMNS).where(openapi_specs.c.id == spec_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(
    conn: AsyncConnection,
    *,
    spec_id: str,
    org_id: str,
    slug: str,
    source_url: str | None,
    source_text: str | None,
    now: datetime,
) -> None:
    await conn.execute(
        sa.insert(openapi_specs).values(
            id=spec_id,
            organization_id=org_id,
            slug=slug,
            source_url=source_url,
            source_text=source_text,
            generation=1,
            processing_state="pending",
            last_process_errors=_NO_ERRORS,
            created_at=now,
            updated_at=now,
        )
    )


async def set_source(
    conn: AsyncConnection,
    spec_id: str,
    *,
    source_url: str | None,
    source_text: str | None,
    now: datetime,
) -> int:
    """The new source, pending processing; returns its generation."""
    stmt = (
        sa.update(openapi_specs)
        .where(openapi_specs.c.id == spec_id)
        .values(
            source_url=source_url,
            source_text=source_text,
            generation=openapi_specs.c.generation + 1,
            processing_state="pending",
            updated_at=now,
        )
        .returning(openapi_specs.c.generation)
    )
    return int((await conn.execute(stmt)).scalar_one())


async def delete(conn: AsyncConnection, spec_id: str) -> None:
    await conn.execute(sa.delete(openapi_specs).where(openapi_specs.c.id == spec_id))


# -- versions ---------------------------------------------------------------------------------


def versions_of(spec_id: str) -> sa.Select[Any]:
    return sa.select(openapi_spec_versions).where(openapi_spec_versions.c.spec_id == spec_id)


async def get_version(conn: AsyncConnection, spec_id: str, version_id: str) -> sa.RowMapping | None:
    stmt = versions_of(spec_id).where(openapi_spec_versions.c.id == version_id)
    return (await conn.execute(stmt)).mappings().first()


async def latest_version(conn: AsyncConnection, spec_id: str) -> sa.RowMapping | None:
    stmt = versions_of(spec_id).order_by(openapi_spec_versions.c.number.desc()).limit(1)
    return (await conn.execute(stmt)).mappings().first()


async def content(conn: AsyncConnection, spec_id: str, digest: str) -> bytes:
    stmt = sa.select(openapi_spec_contents.c.data).where(
        openapi_spec_contents.c.spec_id == spec_id, openapi_spec_contents.c.digest == digest
    )
    return bytes((await conn.execute(stmt)).scalar_one())


# -- processing -------------------------------------------------------------------------------


def _current(spec_id: str, generation: int) -> sa.ColumnElement[bool]:
    return sa.and_(openapi_specs.c.id == spec_id, openapi_specs.c.generation == generation)


async def start(conn: AsyncConnection, spec_id: str, generation: int) -> sa.RowMapping | None:
    """Marks the spec in progress and returns its source, or None when the spec is gone or its
    source changed since the job was queued (a newer job processes that one)."""
    result = await conn.execute(
        sa.update(openapi_specs)
        .where(_current(spec_id, generation))
        .values(processing_state="progress")
    )
    if result.rowcount != 1:
        return None
    stmt = sa.select(openapi_specs.c.source_url, openapi_specs.c.source_text).where(
        openapi_specs.c.id == spec_id
    )
    return (await conn.execute(stmt)).mappings().first()


async def lock_current(conn: AsyncConnection, spec_id: str, generation: int) -> bool:
    """Locks the spec row (PostgreSQL; SQLite writers are serial) if its source is still the
    one processed."""
    stmt = sa.select(openapi_specs.c.id).where(_current(spec_id, generation)).with_for_update()
    return (await conn.execute(stmt)).first() is not None


async def add_version(
    conn: AsyncConnection,
    spec_id: str,
    *,
    version_id: str,
    number: int,
    digest: str,
    data: bytes,
    source_url: str | None,
    now: datetime,
) -> None:
    await conn.execute(
        upsert_insert(conn, openapi_spec_contents)
        .values(spec_id=spec_id, digest=digest, data=data)
        .on_conflict_do_nothing()
    )
    await conn.execute(
        sa.insert(openapi_spec_versions).values(
            id=version_id,
            spec_id=spec_id,
            number=number,
            digest=digest,
            source_url=source_url,
            created_at=now,
        )
    )


async def finish(
    conn: AsyncConnection,
    spec_id: str,
    *,
    now: datetime,
    last_version_id: str | None = None,
    error_code: str | None = None,
    errors: list[dict[str, str]] | None = None,
    error_count: int = 0,
) -> None:
    values: dict[str, Any] = {
        "processing_state": "complete",
        "last_processed_at": now,
        "last_process_error_code": error_code,
        "last_process_errors": {"items": errors or [], "count": error_count},
    }
    if last_version_id is not None:
        values["last_version_id"] = last_version_id
    await conn.execute(
        sa.update(openapi_specs).where(openapi_specs.c.id == spec_id).values(**values)
    )


async def due_for_refresh(
    conn: AsyncConnection, processed_before: datetime, limit: int
) -> list[tuple[str, int, str]]:
    """URL specs processed before the time given, marked pending; (id, generation,
    organization) of each."""
    stmt = (
        sa.select(openapi_specs.c.id, openapi_specs.c.generation, openapi_specs.c.organization_id)
        .where(
            openapi_specs.c.processing_state == "complete",
            openapi_specs.c.last_processed_at < processed_before,
            openapi_specs.c.source_url.is_not(None),
        )
        .order_by(openapi_specs.c.last_processed_at, openapi_specs.c.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    due = [
        (row.id, row.generation, row.organization_id) for row in (await conn.execute(stmt)).all()
    ]
    if due:
        await conn.execute(
            sa.update(openapi_specs)
            .where(openapi_specs.c.id.in_([spec_id for spec_id, _, _ in due]))
            .values(processing_state="pending")
        )
    return due
