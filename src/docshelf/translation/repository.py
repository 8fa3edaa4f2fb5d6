from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import translation_settings


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(translation_settings).where(translation_settings.c.organization_id == org_id)


async def get(conn: AsyncConnection, org_id: str, settings_id: str) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(translation_settings.c.id == settings_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(
    conn: AsyncConnection,
    *,
    settings_id: str,
    org_id: str,
    title: str,
    languages: list[str],
    now: datetime,
) -> None:
    await conn.execute(
        sa.insert(translation_settings).values(
            id=settings_id,
            organization_id=org_id,
            title=title,
            languages=languages,
            created_at=now,
            updated_at=now,
        )
    )


async def replace(
    conn: AsyncConnection, settings_id: str, *, title: str, languages: list[str], now: datetime
) -> None:
    await conn.execute(
        sa.update(translation_settings)
        .where(translation_settings.c.id == settings_id)
        .values(title=title, languages=languages, updated_at=now)
    )


async def delete(conn: AsyncConnection, settings_id: str) -> None:
    await conn.execute(
        sa.delete(translation_settings).where(translation_settings.c.id == settings_id)
    )
